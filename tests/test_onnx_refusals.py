"""Cases ONNX conformance once refused without naming an op: each now computes
(against onnxruntime) or is refused naming the op, its node and what is at
fault (a domain, a dtype, a zero-size tensor); well-formed models ember cannot
hold (an unknown element type, no outputs, 1000 dimensions, a 10^12-element
array made at import) are refused in one line, ember-compile's status 1."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx_util import check, single

import ember
from ember.dialects.graph_base import MAX_FOLDED_BYTES
from ember.frontends.onnx import (
    MAX_RANK,
    OnnxImportError,
    UnsupportedOperatorError,
    from_onnx,
)
from ember.passes.graph_fold_constants import fold_constants
from ember.tools.ember_compile import main as ember_compile

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


# -- well-formed models ember cannot hold (issue 24, defect 6) ------------------------


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def _tensor(name, dims, shape=("n",)):
    return helper.make_tensor_value_info(name, dims, list(shape))


def _unknown_type(name):
    return onnx.TensorProto(name=name, data_type=999, dims=[2], raw_data=bytes(8))


def _relu(input_type=TensorProto.FLOAT, shape=(2,), outputs=True):
    return _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [_tensor("x", input_type, shape)],
        [_tensor("y", TensorProto.FLOAT, shape)] if outputs else [],
    )


def _int64(value):
    return np.asarray(value, np.int64)


FLOAT_Y = [_tensor("y", TensorProto.FLOAT)]
TOO_LARGE = f"of at most {MAX_FOLDED_BYTES >> 30} GiB (ember's limit on arrays made"

REFUSED = {
    "an input of an unknown type": (
        _relu(input_type=999),
        "input 'x' (read by Relu): expected a dtype among float32, "
        "float16, float64, int8, int16, int32, int64, uint8, uint16, uint32, "
        "uint64, bool, got unknown type 999",
    ),
    "an initializer of an unknown type": (
        _model(
            [helper.make_node("Add", ["x", "c"], ["y"])],
            [_tensor("x", TensorProto.FLOAT, [2])],
            FLOAT_Y,
            [_unknown_type("c")],
        ),
        "initializer 'c': cannot read its data (unknown type 999, dims [2])",
    ),
    "an attribute of an unknown type": (
        single("ConstantOfShape", {}, {"s": _int64([2])}, value=_unknown_type("v")),
        "ConstantOfShape node '#0 (output 'y0')': attribute 'value': cannot "
        "read its data (unknown type 999",
    ),
    "a cast to an unknown type": (
        single("Cast", {"x": np.ones(2, np.float32)}, to=999),
        "Cast (to=unknown type 999): 1 (#0 (output 'y0'))",
    ),
    "a window of an unknown type": (
        single("HannWindow", {}, {"s": _int64(4)}, output_datatype=999),
        "expected output_datatype among float32, float16, float64, int8, "
        "int16, int32, int64, uint8, uint16, uint32, uint64, bool, got unknown "
        "type 999",
    ),
    "no outputs": (
        _relu(outputs=False),
        "expected at least one graph output, got none",
    ),
    "an input of 1000 dimensions": (
        _relu(shape=[1] * 1000),
        f"input 'x': expected at most {MAX_RANK} dimensions, got 1000",
    ),
    "a result of 100 dimensions": (
        single(
            "Reshape", {"x": np.ones(6, np.float32)}, {"s": _int64([2, 3] + [1] * 98)}
        ),
        "Reshape node '#0 (output 'y0')': expected tensors of at most "
        f"{MAX_RANK} dimensions, got output 'y0' of 100",
    ),
    "a ConstantOfShape of 10^12 elements": (
        single("ConstantOfShape", {}, {"s": _int64([10**6, 10**6])}),
        f"ConstantOfShape node '#0 (output 'y0')': expected the filled tensor "
        f"{TOO_LARGE} at import), got float32 [1000000, 1000000]: "
        "4000000000000 bytes",
    ),
    "a Range of 10^12 elements": (
        single("Range", {}, {"a": _int64(0), "b": _int64(10**12), "c": _int64(1)}),
        f"Range node '#0 (output 'y0')': expected the range {TOO_LARGE}",
    ),
    "a OneHot of depth 10^12": (
        single(
            "OneHot",
            {"i": _int64([1, 2])},
            {"d": _int64(10**12), "v": np.array([0, 1], np.float32)},
        ),
        f"OneHot node '#0 (output 'y0')': expected the positions {TOO_LARGE}",
    ),
    "a window of 10^12 elements": (
        single("HannWindow", {}, {"s": _int64(10**12)}),
        f"HannWindow node '#0 (output 'y0')': expected the window {TOO_LARGE}",
    ),
    "a folded sum broadcast to 10^12 elements": (
        single(
            "Add",
            {},
            {"a": np.zeros((10**6, 1), np.int64), "b": np.zeros((1, 10**6), np.int64)},
        ),
        f"Add node '#0 (output 'y0')': expected the result {TOO_LARGE}",
    ),
    "a Range of step 0": (
        single("Range", {}, {"a": _int64(0), "b": _int64(5), "c": _int64(0)}),
        "Range node '#0 (output 'y0')': expected a non-zero delta, got 0",
    ),
    "a folded Gather out of range": (
        single("Gather", {}, {"d": _int64([1, 2, 3]), "i": _int64([7])}),
        "Gather node '#0 (output 'y0')': cannot fold it with numpy: index 7 is "
        "out of bounds",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_models_ember_cannot_hold_are_refused_naming_what(case):
    model, message = REFUSED[case]
    with pytest.raises(OnnxImportError) as error:
        from_onnx(model)
    assert message in str(error.value)


@pytest.mark.parametrize(
    "case", ["an input of an unknown type", "no outputs", "an input of 1000 dimensions"]
)
def test_ember_compile_refuses_them_in_one_line(tmp_path, capsys, case):
    model, message = REFUSED[case]
    onnx.save(model, tmp_path / "m.onnx")
    argv = [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.so"), "-q"]
    assert ember_compile(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("ember-compile: error: ") and err.count("\n") == 1
    assert message in err


def test_an_unread_dropout_mask_of_a_huge_input_compiles():
    """The mask is an op, not a 10^12-element array made at import."""
    model = single("Dropout", {"x": np.ones((2, 3), np.float32)}, outputs=2)
    model.graph.input[0].CopyFrom(_tensor("x", TensorProto.FLOAT, [10**6, 10**6]))
    del model.graph.output[1]
    assert ember.compile_model(model).compile_stats.params_bytes < 1024


def test_a_dropout_mask_read_still_computes():
    x = RNG.standard_normal((2, 3), np.float32)
    check(single("Dropout", {"x": x}, outputs=2), {"x": x})


def test_constant_folding_leaves_a_result_past_the_cap_to_a_kernel():
    shape = {"s": _int64([10**6, 10**6])}
    model = single("Expand", {}, {"x": np.ones(1, np.float32), **shape})
    module, params = from_onnx(model)
    fold_constants(module, params)
    assert [op for op in module.walk() if op.name == "graph.broadcast_to"]
