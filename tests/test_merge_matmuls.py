"""`graph-merge-matmuls`: projections of one input by several weights run as
one GEMM and slices, with onnxruntime's results; unknown weights, another
input or a symbolic shape leave the matmuls apart."""

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ember
from ember import runtime as rt
from ember.compiler.model import lower_to_te
from ember.dialects import graph

ort = pytest.importorskip("onnxruntime")


def _model(rows, widths=(16, 16, 8), second_input=False):
    rng = np.random.default_rng(sum(widths))
    inits = [numpy_helper.from_array(rng.standard_normal(4).astype("f"), "b0")]
    nodes, outputs = [], []
    for i, n in enumerate(widths):
        w = (rng.standard_normal((32, n)) * 0.2).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        source = "z" if second_input and i == len(widths) - 1 else "x"
        nodes.append(helper.make_node("MatMul", [source, f"w{i}"], [f"y{i}"]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", 1, [rows, 8, n]))
    # the first projection's bias, then its heads apart: a slice joins them
    nodes.append(helper.make_node("Relu", ["y0"], ["r0"]))
    outputs[0] = helper.make_tensor_value_info("r0", 1, [rows, 8, widths[0]])
    inputs = [helper.make_tensor_value_info("x", 1, [rows, 8, 32])]
    if second_input:
        inputs.append(helper.make_tensor_value_info("z", 1, [rows, 8, 32]))
    model = helper.make_model(
        helper.make_graph(nodes, "proj", inputs, outputs, inits),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    return model


def _matmul_calls(model) -> int:
    module, _ = lower_to_te(model)
    return sum(
        "matmul" in op.callee.string_value()
        for op in module.walk()
        if isinstance(op, graph.CallKernelOp)
    )


def _check(model, rows=2):
    rng = np.random.default_rng(1)
    names = [i.name for i in model.graph.input]
    feeds = {n: rng.standard_normal((rows, 8, 32)).astype(np.float32) for n in names}
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = rt.GraphModule(ember.compile_model(model)["default"](rt.cpu()))(**feeds)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_projections_of_one_input_are_one_gemm():
    model = _model(2)
    assert _matmul_calls(model) == 1
    _check(model)


def test_another_input_keeps_its_own_gemm():
    model = _model(2, second_input=True)
    assert _matmul_calls(model) == 2
    _check(model)


def test_symbolic_shapes_are_left_apart():
    model = _model(2)
    for value in [*model.graph.input, *model.graph.output]:
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.checker.check_model(model)
    assert _matmul_calls(model) == 3
    _check(model, rows=3)
