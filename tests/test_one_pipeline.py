"""One pipeline: `compile_model` and `ember-opt -p ember-model` run the same
passes and give the same library. Random chains of graph ops with random shapes
(hypothesis) are compiled both ways, as ONNX models: `compile_model`, and
`ember-opt model.onnx --emit=obj` (which runs `ember-model` with the model's
params bound and links the kernels' objects and the params into one object)
loaded by `load_module`. The two agree bit for bit, and with onnxruntime.
`tests/test_model_zoo.py` does the same for every model of the zoo."""

import os
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import ember
from ember import runtime as rt
from ember.tools.ember_opt import main as ember_opt

ort = pytest.importorskip("onnxruntime")


def through_ember_opt(model: onnx.ModelProto) -> rt.Module:
    """`model` compiled by `ember-opt model.onnx --emit=obj`, loaded."""
    with tempfile.TemporaryDirectory() as tmp:
        path, obj = Path(tmp, "model.onnx"), Path(tmp, "model.o")
        onnx.save(model, path)
        assert ember_opt([str(path), "--emit=obj", "-o", str(obj)]) == 0
        return rt.load_module(obj)


def run_both_ways(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    """The outputs of `compile_model`'s library, checked bit for bit against
    those of the library `ember-opt -p ember-model` makes."""
    outputs = []
    for lib in (ember.compile_model(model), through_ember_opt(model)):
        gm = rt.GraphModule(lib["default"](rt.cpu()))
        outputs.append([np.array(o) for o in gm(**feeds)])
    for a, b in zip(*outputs, strict=True):
        np.testing.assert_array_equal(a, b)
    return outputs[0]


# --------------------------------------------------------- random chains of ops

UNARY = ("Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Sqrt", "Softplus")


@st.composite
def chains(draw):
    """A random chain of ONNX ops over an NCHW tensor: (nodes, initializers,
    input shape, output shape)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    shape = [1, *(draw(st.integers(1, 12)) for _ in range(3))]
    in_shape = list(shape)
    nodes, inits = [], []
    value = "x"

    def fresh(kind: str) -> str:
        return f"{kind}{len(nodes)}"

    def weight(*dims) -> str:
        name = f"w{len(inits)}"
        inits.append(
            numpy_helper.from_array(rng.uniform(-1, 1, dims).astype("float32"), name)
        )
        return name

    for _ in range(draw(st.integers(1, 5))):
        n, c, h, w = shape
        kind = draw(
            st.sampled_from(
                ("unary", "conv", "add", "mul", "pool", "softmax", "transpose")
            )
        )
        out = fresh(kind)
        if kind == "unary":
            op = draw(st.sampled_from(UNARY))
            src = value
            if op == "Sqrt":  # of a non-negative value
                nodes.append(helper.make_node("Abs", [value], [out + "a"]))
                src = out + "a"
            nodes.append(helper.make_node(op, [src], [out]))
        elif kind == "conv":
            k = draw(st.sampled_from((1, 3)))
            pad = draw(st.integers(0, k // 2))
            stride = draw(st.integers(1, 2))
            if h + 2 * pad < k or w + 2 * pad < k:
                continue
            groups = draw(st.sampled_from((1, c)))
            f = c if groups == c else draw(st.integers(1, 12))
            inputs = [value, weight(f, c // groups, k, k)]
            if draw(st.booleans()):
                inputs.append(weight(f))
            nodes.append(
                helper.make_node(
                    "Conv",
                    inputs,
                    [out],
                    pads=[pad] * 4,
                    strides=[stride] * 2,
                    group=groups,
                )
            )
            shape = [
                n,
                f,
                (h + 2 * pad - k) // stride + 1,
                (w + 2 * pad - k) // stride + 1,
            ]
        elif kind in ("add", "mul"):
            other = weight(*draw(st.sampled_from(([c, 1, 1], [1, c, h, w], [w]))))
            nodes.append(helper.make_node(kind.capitalize(), [value, other], [out]))
        elif kind == "pool":
            op = draw(st.sampled_from(("MaxPool", "AveragePool", "GlobalAveragePool")))
            if op == "GlobalAveragePool":
                nodes.append(helper.make_node(op, [value], [out]))
                shape = [n, c, 1, 1]
            else:
                if h < 2 or w < 2:
                    continue
                nodes.append(helper.make_node(op, [value], [out], kernel_shape=[2, 2]))
                shape = [n, c, h - 1, w - 1]
        elif kind == "softmax":
            nodes.append(helper.make_node("Softmax", [value], [out], axis=-1))
        else:
            perm = [0, *draw(st.permutations([1, 2, 3]))]
            nodes.append(helper.make_node("Transpose", [value], [out], perm=perm))
            shape = [shape[p] for p in perm]
        value = out
    if not nodes:
        nodes.append(helper.make_node("Relu", [value], ["relu"]))
        value = "relu"
    nodes[-1].output[0] = "y"
    return nodes, inits, in_shape, shape


def _model(nodes, inits, in_shape, out_shape) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@settings(
    max_examples=int(os.environ.get("EMBER_PIPELINE_EXAMPLES", 6)),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(chain=chains())
def test_random_chains_compile_the_same_both_ways(chain):
    nodes, inits, in_shape, out_shape = chain
    model = _model(nodes, inits, in_shape, out_shape)
    x = np.random.default_rng(0).uniform(-2, 2, in_shape).astype("float32")
    want = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"x": x})[0]
    (got,) = run_both_ways(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_issues_sigmoid_model_compiles_the_same_both_ways():
    """A graph whose only op is a sigmoid on a 1x12x10x12 tensor: ember-opt
    failed verification after loop-vectorize where compile_model ran it."""
    shape = [1, 12, 10, 12]
    model = _model([helper.make_node("Sigmoid", ["x"], ["y"])], [], shape, shape)
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    (got,) = run_both_ways(model, {"x": x})
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "dynamo",
    [False, pytest.param(True, marks=pytest.mark.slow)],
    ids=["classic", "dynamo"],
)
def test_models_torch_exports_compile_the_same_both_ways(dynamo):
    """Graphs another tool wrote: torch's classic and dynamo ONNX exporters, on
    a MobileNetV2 at an odd size and a transformer block at an odd length."""
    import io
    import sys

    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import torch_models

    cases = [
        (torch_models.mobilenet_v2(num_classes=10, width=0.35), (1, 3, 33, 31)),
        (torch_models.transformer_block(d=16, heads=2), (1, 7, 16)),
    ]
    for model, shape in cases:
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
        f = io.BytesIO()
        torch.onnx.export(model.eval(), (x,), f, dynamo=dynamo, input_names=["x"])
        proto = onnx.load_from_string(f.getvalue())
        feeds = {proto.graph.input[0].name: x.numpy()}
        want = ort.InferenceSession(
            proto.SerializeToString(), providers=["CPUExecutionProvider"]
        ).run(None, feeds)[0]
        got = run_both_ways(proto, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
