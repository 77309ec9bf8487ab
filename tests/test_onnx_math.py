"""ONNX unary math (`graph_math`), ArgMax / ArgMin (`graph.argmax`,
`graph.argmin`) and RMSNormalization (written in graph ops) against
onnxruntime: every function on its domain, attributes, NaN and infinities,
ties with select_last_index, a chain fused into one kernel, float16 and
float64."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ember
from ember import runtime as rt
from ember.frontends.onnx import from_onnx
from ember.passes.graph_fuse_ops import fuse_ops

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(0)
TYPES = {
    np.float32: TensorProto.FLOAT,
    np.float16: TensorProto.FLOAT16,
    np.float64: TensorProto.DOUBLE,
    np.int64: TensorProto.INT64,
    np.int32: TensorProto.INT32,
    np.bool_: TensorProto.BOOL,
}


def model(nodes, x, out_shape, out_type, opset=17, extra=()):
    inputs = [helper.make_tensor_value_info("x", TYPES[x.dtype.type], x.shape)]
    inputs += [
        helper.make_tensor_value_info(n, TYPES[v.dtype.type], v.shape) for n, v in extra
    ]
    g = helper.make_graph(
        nodes,
        "math",
        inputs,
        [helper.make_tensor_value_info("y", out_type, out_shape)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    onnx.checker.check_model(m)
    return m


def run_both(m, feeds, rtol=1e-5, atol=1e-6):
    session = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(m)["default"](rt.cpu()))
    (got,) = gm(**feeds)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    return got


DOMAINS = {
    "Sin": (-10, 10),
    "Cos": (-10, 10),
    "Tan": (-1.5, 1.5),
    "Asin": (-1, 1),
    "Acos": (-1, 1),
    "Atan": (-20, 20),
    "Sinh": (-10, 10),
    "Cosh": (-10, 10),
    "Asinh": (-1e3, 1e3),
    "Acosh": (1, 1e3),
    "Atanh": (-0.999, 0.999),
    "Floor": (-5, 5),
    "Ceil": (-5, 5),
    "Reciprocal": (0.1, 10),
    "Softsign": (-30, 30),
    "Celu": (-5, 5),
}


NUMPY = {
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Asin": np.arcsin,
    "Acos": np.arccos,
    "Atan": np.arctan,
    "Sinh": np.sinh,
    "Cosh": np.cosh,
    "Asinh": np.arcsinh,
    "Acosh": np.arccosh,
    "Atanh": np.arctanh,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Reciprocal": np.reciprocal,
    "Softsign": lambda x: x / (1 + np.abs(x)),
    "Celu": lambda x: np.maximum(x, 0) + np.minimum(0, np.expm1(x)),
}


@pytest.mark.parametrize("op", sorted(DOMAINS))
def test_unary_math_on_its_domain(op):
    lo, hi = DOMAINS[op]
    x = RNG.uniform(lo, hi, (3, 33)).astype(np.float32)
    m = model([helper.make_node(op, ["x"], ["y"])], x, x.shape, TensorProto.FLOAT)
    run_both(m, {"x": x})


@pytest.mark.parametrize("op", sorted(DOMAINS))
def test_float64_against_numpy(op):
    """onnxruntime has no float64 kernel for most of these."""
    lo, hi = DOMAINS[op]
    x = RNG.uniform(lo, hi, (2, 9))
    m = model([helper.make_node(op, ["x"], ["y"])], x, x.shape, TensorProto.DOUBLE)
    (got,) = rt.GraphModule(ember.compile_model(m)["default"](rt.cpu()))(x=x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, NUMPY[op](x), rtol=1e-13, atol=1e-15)


def test_round_is_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.7, 1e8, np.nan])
    x = x.astype(np.float32)
    m = model([helper.make_node("Round", ["x"], ["y"])], x, x.shape, TensorProto.FLOAT)
    np.testing.assert_array_equal(run_both(m, {"x": x})[:6], [-2, -2, -0, 0, 2, 2])


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("ThresholdedRelu", {}),
        ("ThresholdedRelu", {"alpha": 0.5}),
        ("Shrink", {}),
        ("Shrink", {"bias": 1.5, "lambd": 1.0}),
        ("Celu", {}),
        ("Celu", {"alpha": 2.0}),
    ],
)
def test_activations_with_attributes(op, attrs):
    x = RNG.uniform(-4, 4, (2, 3, 17)).astype(np.float32)
    m = model(
        [helper.make_node(op, ["x"], ["y"], **attrs)], x, x.shape, TensorProto.FLOAT
    )
    run_both(m, {"x": x})


@pytest.mark.parametrize(
    "attrs",
    [{}, {"detect_negative": 0}, {"detect_positive": 0}],
)
@pytest.mark.parametrize("op", ["IsInf", "IsNaN"])
def test_float_tests_find_nan_and_infinities(op, attrs):
    x = np.array([[np.inf, -np.inf, np.nan, 0.0, -1.0, 3e38]], np.float32)
    node = helper.make_node(op, ["x"], ["y"], **(attrs if op == "IsInf" else {}))
    run_both(model([node], x, x.shape, TensorProto.BOOL), {"x": x})


def test_float16_rounds_once():
    x = RNG.uniform(-3, 3, (4, 16)).astype(np.float16)
    nodes = [helper.make_node("Sinh", ["x"], ["y"])]
    run_both(model(nodes, x, x.shape, TensorProto.FLOAT16), {"x": x}, 1e-3, 1e-3)


def test_a_chain_fuses_into_one_kernel():
    x = RNG.uniform(-2, 2, (8, 64)).astype(np.float32)
    nodes = [
        helper.make_node("Sin", ["x"], ["a"]),
        helper.make_node("Softsign", ["a"], ["b"]),
        helper.make_node("Atan", ["b"], ["c"]),
        helper.make_node("Shrink", ["c"], ["y"], lambd=0.1),
    ]
    m = model(nodes, x, x.shape, TensorProto.FLOAT)
    run_both(m, {"x": x})
    assert len(fuse_ops(from_onnx(m)[0])) == 1


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reductions_with_ties(op, axis, keepdims, last):
    x = RNG.integers(-3, 3, (4, 5, 6)).astype(np.float32)  # many ties
    node = helper.make_node(
        op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=last
    )
    shape = list(x.shape)
    if keepdims:
        shape[axis] = 1
    else:
        del shape[axis]
    run_both(model([node], x, shape, TensorProto.INT64, opset=13), {"x": x})


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_argmax_of_other_dtypes_on_a_vector(dtype):
    x = RNG.integers(-100, 100, (37,)).astype(dtype)
    node = helper.make_node("ArgMax", ["x"], ["y"], keepdims=0)
    run_both(model([node], x, [], TensorProto.INT64, opset=13), {"x": x})


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_rms_normalization(axis):
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    scale = RNG.standard_normal(x.shape[axis % 3 :]).astype(np.float32)
    node = helper.make_node(
        "RMSNormalization", ["x", "scale"], ["y"], axis=axis, epsilon=1e-3
    )
    m = model([node], x, x.shape, TensorProto.FLOAT, 23, [("scale", scale)])
    run_both(m, {"x": x, "scale": scale})


def test_rms_normalization_of_float16_in_float32():
    x = RNG.standard_normal((4, 16)).astype(np.float16)
    scale = RNG.standard_normal((16,)).astype(np.float16)
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"])
    m = model([node], x, x.shape, TensorProto.FLOAT16, 23, [("scale", scale)])
    run_both(m, {"x": x, "scale": scale}, 2e-3, 2e-3)
