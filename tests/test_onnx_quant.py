"""ONNX quantization ops against onnxruntime: QuantizeLinear (per tensor, per
axis, blocked, every integer type, ties rounded to even, float16),
DequantizeLinear (int32, per axis, blocked, float16 scales),
DynamicQuantizeLinear (an empty range too), QLinearMatMul and MatMulInteger
(per-row and per-column zero points, summed lengths that need one or two
operands split into digits to stay exact), QLinearConv and ConvInteger
(padding, strides, groups, per-channel weights, bias); integer results are
compared exactly. And the refusals of what ember does not take."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember import runtime as rt
from ember.frontends.onnx import UnsupportedOperatorError, from_onnx

ort = pytest.importorskip("onnxruntime")

from onnx_util import check, single  # noqa: E402

RNG = np.random.default_rng(0)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def ints(dtype, *shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def f32(*values):
    return np.asarray(values, np.float32)


# -- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear -------------------------


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16"])
def test_quantize_per_tensor_rounds_ties_to_even_and_saturates(dtype):
    """x / 0.5 lands on every half: 0.5, 1.5, 2.5 round to 0, 2, 2; the
    ends of the range saturate."""
    x = np.concatenate([np.arange(-6, 6, 0.25), f32(-1e6, 1e6)]).astype(np.float32)
    zero = np.asarray([3], dtype)
    m = single("QuantizeLinear", {"x": x}, {"s": f32(0.5), "z": zero})
    check(m, {"x": x})


def test_quantize_per_axis_with_computed_scales():
    x, s = rand(2, 3, 4, scale=4.0), f32(0.1, 0.2, 0.3)
    z = np.asarray([0, 100, 255], np.uint8)
    check(single("QuantizeLinear", {"x": x, "s": s, "z": z}), {"x": x, "s": s, "z": z})


def test_quantize_blocked_on_a_negative_axis_with_a_short_last_block():
    """block_size 3 over 7 columns: blocks of 3, 3 and 1."""
    x = rand(4, 7, scale=3.0)
    s = RNG.uniform(0.01, 0.1, (4, 3)).astype(np.float32)
    z = ints(np.int8, 4, 3)
    m = single("QuantizeLinear", {"x": x}, {"s": s, "z": z}, axis=-1, block_size=3)
    check(m, {"x": x})


def test_quantize_output_dtype_without_zero_point():
    x = rand(3, 5, scale=100.0)
    m = single("QuantizeLinear", {"x": x}, {"s": f32(0.7)},
               output_dtype=TensorProto.INT16)  # fmt: skip
    check(m, {"x": x})


def test_quantize_float16():
    x = rand(20, scale=10.0).astype(np.float16)
    s = np.asarray(0.3, np.float16)
    check(single("QuantizeLinear", {"x": x}, {"s": s}), {"x": x})


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32"])
def test_dequantize_per_axis(dtype):
    x = ints(dtype, 2, 4, 3)
    s = f32(0.5, 0.25, 2.0, 1e-3)
    z = ints(dtype, 4)
    m = single("DequantizeLinear", {"x": x, "z": z}, {"s": s}, axis=1,
               order=["x", "s", "z"])  # fmt: skip
    check(m, {"x": x, "z": z})


def test_dequantize_blocked_float16_scale():
    x = ints(np.int8, 5, 4)
    s = RNG.uniform(0.01, 1.0, (2, 4)).astype(np.float16)
    z = ints(np.int8, 2, 4)
    m = single("DequantizeLinear", {"x": x}, {"s": s, "z": z}, axis=0, block_size=3)
    check(m, {"x": x}, rtol=1e-3)


@pytest.mark.parametrize(
    "x", [rand(3, 5), np.abs(rand(8)) + 0.5, np.zeros(4, np.float32)],
    ids=["mixed", "positive", "zeros"],
)  # fmt: skip
def test_dynamic_quantize(x):
    check(single("DynamicQuantizeLinear", {"x": x}, outputs=3), {"x": x})


# -- integer products -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "k"), [("uint8", 6), ("int8", 700), ("uint8", 5000)]
)  # fmt: skip
def test_qlinear_matmul_batched_with_per_column_weights(dtype, k):
    """k = 700 and 5000 pass 2^24 in one float32 sum: the weight, then both
    operands, are split into digits."""
    a, b = ints(dtype, 2, 3, k), ints(dtype, k, 4)
    consts = {
        "as": f32(0.02), "az": ints(dtype, 1), "b": b,
        "bs": RNG.uniform(0.001, 0.01, 4).astype(np.float32), "bz": ints(dtype, 4),
        "ys": f32(0.05 * np.sqrt(k)), "yz": ints(dtype, 1),
    }  # fmt: skip
    m = single("QLinearMatMul", {"a": a}, consts, opset=21,
               order=["a", "as", "az", "b", "bs", "bz", "ys", "yz"])  # fmt: skip
    check(m, {"a": a})


def test_matmul_integer_computed_operands_and_zero_points():
    """Both operands and zero points read at run time: the bounds are the
    type's, so 300 products already split."""
    a, b = ints(np.uint8, 5, 300), ints(np.uint8, 300, 2)
    az, bz = ints(np.uint8, 1), ints(np.uint8, 2)
    feeds = {"a": a, "b": b, "az": az, "bz": bz}
    m = single("MatMulInteger", feeds, order=["a", "b", "az", "bz"], opset=13)
    check(m, feeds)


def test_matmul_integer_per_row_zero_point_against_numpy():
    """A per-row zero point of a, which neither onnxruntime's kernel nor
    onnx's reference takes."""
    a, b = ints(np.int8, 4, 6), ints(np.int8, 6, 3)
    az, bz = ints(np.int8, 4), ints(np.int8, 3)
    m = single("MatMulInteger", {"a": a}, {"b": b, "az": az, "bz": bz}, opset=13)
    expected = (a - az[:, None].astype(np.int32)) @ (b - bz.astype(np.int32))
    gm = rt.GraphModule(ember.compile_model(m)["default"](rt.cpu()))
    np.testing.assert_array_equal(gm(a=a)[0], expected)


@pytest.mark.parametrize("k", [1000, 20000])
def test_matmul_integer_long_sums_are_exact(k):
    """Sums past 2^24 (about 255 * 255 * k / 2 each): a float32 matmul of the
    raw operands would lose their low bits."""
    a = RNG.integers(200, 256, (3, k)).astype(np.uint8)
    b = RNG.integers(0, 256, (k, 5)).astype(np.uint8)
    consts = {"b": b, "az": np.asarray(0, np.uint8), "bz": np.asarray(1, np.uint8)}
    m = single("MatMulInteger", {"a": a}, consts, opset=13)
    check(m, {"a": a})


def test_matmul_integer_without_zero_points():
    a, b = ints(np.int8, 3, 4), ints(np.int8, 4, 5)
    check(single("MatMulInteger", {"a": a}, {"b": b}, opset=13), {"a": a})


def test_qlinear_conv_per_channel_with_bias_padding_and_groups():
    x = ints(np.uint8, 1, 4, 7, 6)
    w = ints(np.int8, 6, 2, 3, 3)
    consts = {
        "xs": f32(0.05), "xz": np.asarray(120, np.uint8), "w": w,
        "ws": RNG.uniform(0.001, 0.01, 6).astype(np.float32),
        "wz": np.zeros(6, np.int8), "ys": f32(0.1), "yz": np.asarray(128, np.uint8),
        "bias": RNG.integers(-2000, 2000, 6).astype(np.int32),
    }  # fmt: skip
    m = single("QLinearConv", {"x": x}, consts, opset=13, pads=[1, 0, 1, 2],
               strides=[2, 1], dilations=[1, 2], group=2,
               order=["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"])  # fmt: skip
    check(m, {"x": x})


def test_conv_integer_strided_same_lower_with_weight_zero_point():
    x = ints(np.uint8, 2, 3, 6, 6)
    w = ints(np.uint8, 4, 3, 3, 3)
    consts = {"xz": np.asarray(7, np.uint8), "w": w, "wz": np.asarray(130, np.uint8)}
    m = single("ConvInteger", {"x": x}, consts, opset=13, auto_pad="SAME_LOWER",
               strides=[2, 2], order=["x", "w", "xz", "wz"])  # fmt: skip
    check(m, {"x": x})


# -- refusals -------------------------------------------------------------------------


def _refusal(model) -> str:
    with pytest.raises(Exception) as info:
        from_onnx(model)
    return str(info.value)


def test_int4_output_dtype_is_refused_before_building():
    x = rand(4)
    m = single("QuantizeLinear", {"x": x}, {"s": f32(0.1)},
               output_dtype=TensorProto.INT4)  # fmt: skip
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(m)
    assert "QuantizeLinear" in str(info.value)
    assert f"output_dtype={TensorProto.INT4}" in str(info.value)


def test_bfloat16_precision_is_refused():
    x = rand(4)
    m = single("QuantizeLinear", {"x": x}, {"s": f32(0.1)}, opset=23,
               precision=TensorProto.BFLOAT16)  # fmt: skip
    message = _refusal(m)
    assert "QuantizeLinear" in message and "precision" in message


def test_unknown_auto_pad_is_refused():
    x = ints(np.uint8, 1, 1, 4, 4)
    m = single("ConvInteger", {"x": x}, {"w": ints(np.uint8, 1, 1, 2, 2)}, opset=13,
               auto_pad="XYZ")  # fmt: skip
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(m)
    assert "ConvInteger" in str(info.value) and "auto_pad='XYZ'" in str(info.value)


def test_too_long_a_sum_is_refused():
    a, b = ints(np.uint8, 1, 70000), ints(np.uint8, 70000, 1)
    message = _refusal(single("MatMulInteger", {"a": a, "b": b}, opset=13))
    assert "MatMulInteger" in message and "got 70000" in message


def test_int32_zero_point_of_quantize_is_refused():
    x = rand(4)
    m = single("QuantizeLinear", {"x": x}, {"s": f32(0.1), "z": np.zeros(1, np.int32)},
               opset=13)  # fmt: skip
    message = _refusal(m)
    assert "QuantizeLinear" in message and "got int32" in message


def test_conv_integer_computed_weight_1d_grouped():
    """A weight read at run time takes the im2col route (any rank); 1-D data,
    two groups, zero points read at run time too."""
    x, w = ints(np.uint8, 2, 4, 9), ints(np.uint8, 6, 2, 3)
    xz, wz = ints(np.uint8, 1).reshape(()), ints(np.uint8, 1)
    feeds = {"x": x, "w": w, "xz": xz, "wz": wz}
    m = single("ConvInteger", feeds, opset=13, group=2, pads=[2, 1], strides=[2])
    check(m, feeds)


def test_qdq_conv_model_folds_its_weight():
    """A QDQ model as quantizers write them: the activation quantized and
    dequantized, the int8 weight dequantized per output channel into a float
    Conv; the weight's dequantization folds into a param."""
    x = rand(1, 3, 8, 8)
    w = ints(np.int8, 4, 3, 3, 3)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"], axis=0),
        helper.make_node("Conv", ["xd", "wd"], ["y"], pads=[1, 1, 1, 1]),
    ]
    consts = {
        "xs": f32(0.02), "xz": np.asarray(128, np.uint8), "w": w,
        "ws": RNG.uniform(0.001, 0.01, 4).astype(np.float32),
    }  # fmt: skip
    graph = helper.make_graph(
        nodes, "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 4, 8, 8))],
        [numpy_helper.from_array(v, n) for n, v in consts.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    check(model, {"x": x}, rtol=1e-5)
