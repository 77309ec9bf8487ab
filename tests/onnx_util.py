"""One-node ONNX models and their check against onnxruntime, shared by the op
test files (tests/test_onnx_quant.py, test_onnx_resize_grid.py,
test_onnx_tensor_ops.py)."""

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ember
from ember import runtime as rt

ort = pytest.importorskip("onnxruntime")


def single(op, feeds, consts=None, outputs=1, opset=21, **attrs):
    """A model of one `op` node reading `feeds` (graph inputs) then `consts`
    (initializers), in that order unless `order` names them ("" for an
    absent input); outputs are typed by shape inference, or as float32 of
    unknown shape where it cannot type them."""
    consts = consts or {}
    order = attrs.pop("order", [*feeds, *consts])
    names = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, order, names, **attrs)
    graph = helper.make_graph(
        [node],
        op.lower(),
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape
            )
            for n, v in feeds.items()
        ],
        [onnx.ValueInfoProto(name=n) for n in names],
        [numpy_helper.from_array(v, n) for n, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset < 21 else 10
    model = onnx.shape_inference.infer_shapes(model)
    for output in model.graph.output:
        if not output.type.HasField("tensor_type"):
            output.CopyFrom(helper.make_tensor_value_info(output.name, 1, ["n"]))
    return model


def check(model, feeds, rtol=1e-5, atol=1e-6):
    """ember's outputs equal onnxruntime's: dtype and shape exactly, integers
    and booleans exactly, floats within `rtol` and `atol`."""
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(model)["default"](rt.cpu()))
    got = gm(**feeds)
    got = got if isinstance(got, list | tuple) else [got]
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape
        if e.dtype.kind in "iub":
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def export_classic(module, args, names, axes) -> onnx.ModelProto:
    """`module` exported by torch's classic (TorchScript) ONNX exporter, with
    `dynamic_axes` `axes` (`{"x": {0: "batch"}}`) and the output named "y"."""
    import io
    import warnings

    import torch

    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's deprecation, tracing
        torch.onnx.export(
            module.eval(),
            args,
            f,
            dynamo=False,
            input_names=names,
            output_names=["y"],
            dynamic_axes=axes,
            opset_version=17,
        )
    return onnx.load_from_string(f.getvalue())
