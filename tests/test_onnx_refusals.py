"""Cases ONNX conformance once refused without naming an op: each now computes
(against onnxruntime) or is refused naming the op, its node and what is at
fault (a domain, a dtype, a zero-size tensor)."""

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_util import check, single

import ember
from ember.frontends.onnx import OnnxImportError, UnsupportedOperatorError, from_onnx

RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("op", "dtype", "axes", "keepdims"),
    [
        ("ReduceMax", np.bool_, [1], 1),
        ("ReduceMin", np.bool_, [0, 2], 0),
        ("ReduceMax", np.int32, [2], 0),
        ("ReduceMin", np.int8, None, 1),
    ],
)
def test_max_min_of_bool_and_integers(op, dtype, axes, keepdims):
    if dtype == np.bool_:
        x = RNG.random((3, 4, 5)) < 0.3
    else:
        info = np.iinfo(dtype)
        x = RNG.integers(info.min, info.max, (3, 4, 5), endpoint=True).astype(dtype)
    consts = {} if axes is None else {"axes": np.array(axes, np.int64)}
    check(single(op, {"x": x}, consts, keepdims=keepdims), {"x": x})


def test_max_of_int64_refused_naming_the_dtype():
    x = np.zeros((2, 3), np.int64)
    with pytest.raises(OnnxImportError, match=r"ReduceMax node .*got int64"):
        from_onnx(single("ReduceMax", {"x": x}))


@pytest.mark.parametrize(("a", "b"), [((7,), (7,)), ((5,), (5, 3))])
def test_matmul_of_vectors(a, b):
    feeds = {"a": RNG.standard_normal(a, np.float32)}
    feeds["b"] = RNG.standard_normal(b, np.float32)
    check(single("MatMul", feeds), feeds)


def test_other_domains_named_with_their_ops():
    node = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml")
    graph = helper.make_graph(
        [node],
        "ml",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 3)]
    )
    with pytest.raises(UnsupportedOperatorError) as error:
        from_onnx(model)
    assert error.value.unsupported == {"ai.onnx.ml.Binarizer": ["#0 (output 'y')"]}


def _refusal(model) -> str:
    with pytest.raises(OnnxImportError) as error:
        ember.compile_model(model)
    return str(error.value)


def test_zero_size_input_refused_naming_the_node():
    model = single("Trilu", {"x": np.zeros((0, 5), np.float32)})
    message = _refusal(model)
    assert "Trilu node '#0 (output 'y0')'" in message
    assert "zero-size input 'x' (0x5)" in message


def test_zero_size_result_refused_naming_the_node():
    x = np.zeros((2, 3), np.float32)
    repeats = {"repeats": np.array([0, 1], np.int64)}
    message = _refusal(single("Tile", {"x": x}, repeats))
    assert "Tile node" in message and "positive repeats, got [0, 1]" in message


def test_zero_size_folded_output_refused_naming_the_node():
    shape = np.array([0], np.int64)
    message = _refusal(single("ConstantOfShape", {}, {"shape": shape}))
    assert "ConstantOfShape node" in message
    assert "zero-size tensor 'y0' (0)" in message


def test_empty_folded_arrays_on_the_way_still_compute():
    # Resize's roi and scales are empty arrays that never reach a kernel
    x = RNG.standard_normal((1, 1, 2, 3), np.float32)
    consts = {
        "roi": np.zeros(0, np.float32),
        "scales": np.zeros(0, np.float32),
        "sizes": np.array([1, 1, 4, 6], np.int64),
    }
    check(single("Resize", {"x": x}, consts, mode="nearest"), {"x": x})


def test_zero_size_input_only_typed_from_still_computes():
    # CastLike reads only the dtype of `like`: no kernel touches it
    feeds = {
        "x": RNG.standard_normal((2, 3), np.float32),
        "like": np.zeros(0, np.float64),
    }
    check(single("CastLike", feeds), feeds)
