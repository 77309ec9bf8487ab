"""The ONNX reductions ember writes in other graph ops (ReduceL1, L2,
SumSquare, LogSum, LogSumExp, Min): each with axes as the attribute (opset
13) and as an input (18), keepdims both ways and no axes, against
onnxruntime; LogSumExp on values whose exp overflows float32."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember import runtime as rt

ort = pytest.importorskip("onnxruntime")

OPS = [
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMin",
]


def model(op: str, opset: int, axes, keepdims: int, shape=(3, 4, 5)):
    inputs, inits, attrs = ["x"], [], {"keepdims": keepdims}
    if axes is not None:
        if opset >= 18:
            inputs.append("axes")
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        else:
            attrs["axes"] = axes
    node = helper.make_node(op, inputs, ["y"], **attrs)
    reduced = {
        a % len(shape) for a in (axes if axes is not None else range(len(shape)))
    }
    out = [
        1 if i in reduced else n
        for i, n in enumerate(shape)
        if keepdims or i not in reduced
    ]
    g = helper.make_graph(
        [node],
        "reduce",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset < 18 else 9
    onnx.checker.check_model(m)
    return m


def run_both(m, x):
    session = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, {"x": x})
    gm = rt.GraphModule(ember.compile_model(m)["default"](rt.cpu()))
    (got,) = gm(x=x)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize(("axes", "keepdims"), [([1], 1), ([0, -1], 0), (None, 1)])
def test_against_onnxruntime(op, opset, axes, keepdims):
    x = np.random.default_rng(0).uniform(0.5, 2.0, (3, 4, 5)).astype(np.float32)
    if op in ("ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceMin"):
        x -= 1.25  # signs matter to these
    run_both(model(op, opset, axes, keepdims), x)


def test_log_sum_exp_does_not_overflow():
    x = np.array([[100.0, 101.0, 99.0], [-50.0, 0.0, 88.0]], np.float32)
    run_both(model("ReduceLogSumExp", 18, [1], 0, shape=(2, 3)), x)
