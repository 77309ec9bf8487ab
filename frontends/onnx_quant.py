"""ONNX quantization ops written in the graph ops they compose: QuantizeLinear,
DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, MatMulInteger,
QLinearConv and ConvInteger, on uint8, int8, uint16 and int16 (int32 too as
DequantizeLinear's input).

Quantizing is onnxruntime's arithmetic in float32: round(x / scale) half to
even, plus the zero point, clipped to the type's range, then cast; the quotient
is rounded to float16 first where the scale (or `precision`) is float16.
Dequantizing subtracts the zero point in int32, then scales in float32. A
scale and zero point are one value, one per entry of `axis`, or one per
`block_size` entries along it (gathered out to the input's shape).

The integer products sum exactly though graph.matmul and graph.conv2d compute
float32: the operands minus their zero points are integers, and a float32 sum
of integer products is exact while it stays within 2^24. Where the summed
length times the operands' bounds could pass that, an operand is split into
base-16 digits (x = 16 hi + lo, lo in [0, 15]), each pair of digits multiplied
alone and the partial products combined in int32. The requantization is
onnxruntime's: the int32 accumulator in float32 times a_scale * b_scale /
y_scale, rounded half to even, plus the zero point, clipped. float8, int4 and
int2 types are refused, naming the type.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from onnx import TensorProto
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects import graph_dtype as gd
from ember.dialects import graph_math as gm
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_nn import GROUPED_TERMS
from ember.frontends.onnx_fold import shape_of
from ember.frontends.onnx_im2col import _conv_im2col
from ember.frontends.onnx_ops import (
    _AUTO_PAD,
    CHECKS,
    ConversionError,
    NodeContext,
    _all,
    _one_of,
    _same_padding,
    converter,
)

RANGES = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "uint16": (0, 65535),
    "int16": (-32768, 32767),
}
_ONNX_TYPES = {
    TensorProto.UINT8: "uint8",
    TensorProto.INT8: "int8",
    TensorProto.UINT16: "uint16",
    TensorProto.INT16: "int16",
}
# A float32 sum of integers is exact while every partial sum stays within 2^24.
EXACT = 2**24

CHECKS.update(
    {
        "QuantizeLinear": _all(
            _one_of("output_dtype", [0, *_ONNX_TYPES], 0),
            _one_of("precision", [0, TensorProto.FLOAT, TensorProto.FLOAT16], 0),
        ),
        "DequantizeLinear": _one_of(
            "output_dtype", [0, TensorProto.FLOAT, TensorProto.FLOAT16], 0
        ),
        "QLinearConv": _AUTO_PAD,
        "ConvInteger": _AUTO_PAD,
    }
)


def _dtype(x: SSAValue) -> str:
    return dtype_of(x.type.element_type)  # type: ignore[attr-defined]


def _input_dtype(c: NodeContext, i: int) -> str:
    value = c.inputs[i]
    if isinstance(value, np.ndarray):
        return value.dtype.name
    assert value is not None
    return _dtype(value)


def _cast(c: NodeContext, x: SSAValue, to: str) -> SSAValue:
    return x if _dtype(x) == to else c.emit(G.CastOp, x, to=to)


def _scalar(c: NodeContext, value: float, dtype: str = "float32") -> SSAValue:
    return c.emit_op(G.ConstantOp.from_numpy(np.asarray(value, dtype)))


def _quantized(c: NodeContext, i: int, what: str) -> str:
    dtype = _input_dtype(c, i)
    if dtype not in RANGES:
        raise ConversionError(
            f"expected {what} of {', '.join(RANGES)}, got {dtype} "
            f"({c.node.op_type} takes no float8, int4 or int2 here)"
        )
    return dtype


def _along(
    c: NodeContext, i: int, x_shape: tuple[int, ...], axis: int, block: int
) -> SSAValue:
    """Input `i` (a scale or zero point) shaped to broadcast against x: one
    value, one per entry of `axis`, or one per `block` entries along it."""
    value = c.value(i)
    shape, rank = shape_of(value), len(x_shape)
    name = c.node.input[i]
    if math.prod(shape) == 1:
        return c.emit(G.ReshapeOp, value, shape=[1] * rank)
    if not -rank <= axis < rank:
        raise ConversionError(f"expected axis in [{-rank}, {rank}), got {axis}")
    axis %= rank
    n = x_shape[axis]
    if block <= 0:
        if shape != (n,):
            raise ConversionError(
                f"expected '{name}' of one value or shape ({n},) (axis {axis}), "
                f"got shape {shape}"
            )
        return c.emit(
            G.ReshapeOp, value, shape=[n if d == axis else 1 for d in range(rank)]
        )
    blocks = -(-n // block)
    want = (*x_shape[:axis], blocks, *x_shape[axis + 1 :])
    if shape != want:
        raise ConversionError(
            f"expected '{name}' of shape {want} (block_size {block} on axis "
            f"{axis}), got shape {shape}"
        )
    index = c.array(np.arange(n, dtype=np.int64) // block, f"{name}.blocks")
    return c.emit(G.GatherOp, value, index, axis=axis)


def _requantize(
    c: NodeContext, y: SSAValue, zero: SSAValue | None, dtype: str
) -> SSAValue:
    """round(y) half to even, plus the zero point, clipped to `dtype`'s range,
    as `dtype` (y float32)."""
    y = c.emit(gm.RoundOp, y)
    if zero is not None:
        y = c.emit(G.AddOp, y, _cast(c, zero, "float32"))
    lo, hi = RANGES[dtype]
    return _cast(c, c.emit(G.ClipOp, y, min=float(lo), max=float(hi)), dtype)


@converter("QuantizeLinear")
def _quantize(c: NodeContext):
    x = c.value(0)
    shape = shape_of(x)
    axis, block = c.attr("axis", 1), c.attr("block_size", 0)
    if c.has(2):
        dtype = _quantized(c, 2, "a zero point")
    else:
        dtype = _ONNX_TYPES.get(c.attr("output_dtype", 0), "uint8")
    scale = _along(c, 1, shape, axis, block)
    precision = {TensorProto.FLOAT: "float32", TensorProto.FLOAT16: "float16"}.get(
        c.attr("precision", 0), _dtype(scale)
    )
    if precision not in ("float32", "float16"):
        raise ConversionError(f"expected a float32 or float16 scale, got {precision}")
    y = c.emit(G.DivOp, _cast(c, x, "float32"), _cast(c, scale, "float32"))
    if precision == "float16":  # the quotient as the scale's type computes it
        y = _cast(c, _cast(c, y, "float16"), "float32")
    zero = _along(c, 2, shape, axis, block) if c.has(2) else None
    return [_requantize(c, y, zero, dtype)]


@converter("DequantizeLinear")
def _dequantize(c: NodeContext):
    x = c.value(0)
    shape = shape_of(x)
    dtype = _input_dtype(c, 0)
    if dtype not in (*RANGES, "int32"):
        raise ConversionError(
            f"expected x of {', '.join(RANGES)} or int32, got {dtype} "
            "(DequantizeLinear takes no float8, int4 or int2 here)"
        )
    axis, block = c.attr("axis", 1), c.attr("block_size", 0)
    scale = _along(c, 1, shape, axis, block)
    if c.has(2):
        zero = _cast(c, _along(c, 2, shape, axis, block), "int32")
        x = c.emit(G.SubOp, _cast(c, x, "int32"), zero)
    y = c.emit(G.MulOp, _cast(c, x, "float32"), _cast(c, scale, "float32"))
    out = {TensorProto.FLOAT: "float32", TensorProto.FLOAT16: "float16"}.get(
        c.attr("output_dtype", 0), _dtype(scale)
    )
    return [_cast(c, y, out)]


@converter("DynamicQuantizeLinear")
def _dynamic_quantize(c: NodeContext):
    """uint8 over the range of x widened to hold 0, as onnxruntime computes it
    (a scale of 1 where that range is empty)."""
    x = c.value(0)
    if _dtype(x) != "float32":
        raise ConversionError(f"expected float32 x, got {_dtype(x)}")
    axes = list(range(len(shape_of(x))))
    zero = _scalar(c, 0.0)
    top = c.emit(G.ReduceMaxOp, x, axes=axes, keepdims=False)
    top = c.emit(G.MaximumOp, top, zero)
    low = c.emit(G.ReduceMaxOp, c.emit(G.NegOp, x), axes=axes, keepdims=False)
    low = c.emit(G.NegOp, c.emit(G.MaximumOp, low, zero))
    width = c.emit(G.SubOp, top, low)
    empty = c.emit(gd.EqualOp, width, zero)
    scale = c.emit(G.DivOp, width, _scalar(c, 255.0))
    scale = c.emit(gd.WhereOp, empty, _scalar(c, 1.0), scale)
    point = c.emit(G.NegOp, c.emit(G.DivOp, low, scale))
    point = c.emit(gm.RoundOp, c.emit(G.ClipOp, point, min=0.0, max=255.0))
    y = _requantize(c, c.emit(G.DivOp, x, scale), point, "uint8")
    return [y, scale, _cast(c, point, "uint8")]


# -- integer products -----------------------------------------------------------------


def _shape(c: NodeContext, i: int) -> tuple[int, ...]:
    value = c.inputs[i]
    return value.shape if isinstance(value, np.ndarray) else shape_of(c.value(i))


def _reshape(c: NodeContext, i: int, shape: list[int]) -> None:
    """Input `i` reshaped in place (at import time when it is known)."""
    value = c.inputs[i]
    if isinstance(value, np.ndarray):
        c.inputs[i] = value.reshape(shape)
    else:
        c.inputs[i] = c.emit(G.ReshapeOp, c.value(i), shape=shape)


Integers = SSAValue | np.ndarray


def _shifted(c: NodeContext, i: int, zero: int, what: str):
    """Input `i` minus the zero point input `zero` as float32 integers (an
    array when both are known at import time), and a bound on their
    magnitude (from the values where they are known)."""
    dtype = _quantized(c, i, what)
    if dtype not in ("uint8", "int8"):
        raise ConversionError(f"expected {what} of uint8 or int8, got {dtype}")
    has_zero = c.has(zero)
    if c.is_const(i) and (not has_zero or c.is_const(zero)):
        x = c.const(i, what).astype(np.float32)
        if has_zero:
            x = x - c.const(zero, "a zero point").astype(np.float32)
        return x, int(np.max(np.abs(x), initial=0))
    lo, hi = RANGES[dtype]
    points = np.asarray([lo, hi] if has_zero else [0])
    if has_zero and c.is_const(zero):
        points = c.const(zero, "a zero point").astype(np.int64)
    x = _cast(c, c.value(i), "float32")
    if has_zero:
        x = c.emit(G.SubOp, x, _cast(c, c.value(zero), "float32"))
    bound = int(max(np.max(np.abs(points - lo)), np.max(np.abs(points - hi))))
    return x, bound


def _digits(c: NodeContext, x: Integers, split: bool) -> list[tuple[Integers, int]]:
    """x as [(digit, weight)]: itself, or 16 floor(x / 16) + the rest."""
    if not split:
        return [(x, 1)]
    if isinstance(x, np.ndarray):
        hi = np.floor(x / 16)
        return [(x - 16 * hi, 1), (hi, 16)]
    sixteen = _scalar(c, 16.0)
    hi = c.emit(gm.FloorOp, c.emit(G.DivOp, x, sixteen))
    return [(c.emit(G.SubOp, x, c.emit(G.MulOp, hi, sixteen)), 1), (hi, 16)]


def _value(c: NodeContext, x: Integers, what: str) -> SSAValue:
    return c.array(x, what) if isinstance(x, np.ndarray) else x


def _exact(
    c: NodeContext,
    product: Callable[[SSAValue, SSAValue], SSAValue],
    a: tuple[Integers, int],
    b: tuple[Integers, int],
    length: int,
) -> SSAValue:
    """product(a, b) as int32, exact: a and b are float32 integers within
    their bounds and each output sums `length` of their products. An operand
    whose products could pass 2^24 is split into base-16 digits (lo within
    15, hi within ceil(bound / 16))."""
    (x, xb), (w, wb) = a, b
    digit = max(15, -(-max(xb, wb) // 16))
    for split_x, split_w in ((False, False), (xb < wb, xb >= wb), (True, True)):
        if length * (digit if split_x else xb) * (digit if split_w else wb) <= EXACT:
            break
    else:
        raise ConversionError(
            f"expected at most {EXACT // digit**2} products summed per output "
            f"(an exact float32 sum of base-16 digits), got {length}"
        )
    xs = [(_value(c, d, f"a{i}"), k) for i, (d, k) in enumerate(_digits(c, x, split_x))]
    ws = [(_value(c, d, f"b{i}"), k) for i, (d, k) in enumerate(_digits(c, w, split_w))]
    total = None
    for xd, xw in xs:
        for wd, ww in ws:
            part = _cast(c, product(xd, wd), "int32")
            if xw * ww != 1:
                part = c.emit(G.MulOp, part, _scalar(c, xw * ww, "int32"))
            total = part if total is None else c.emit(G.AddOp, total, part)
    assert total is not None
    return total


def _per_row(c: NodeContext, i: int, rank: int) -> None:
    """A 1-D per-row scale or zero point of a (M,) as a column (M, 1)."""
    shape = _shape(c, i) if c.has(i) else ()
    if len(shape) == 1 and shape[0] != 1 and rank >= 2:
        _reshape(c, i, [shape[0], 1])


def _matmul_int(c: NodeContext, a: int, a_zero: int, b: int, b_zero: int):
    _per_row(c, a_zero, len(_shape(c, a)))
    x = _shifted(c, a, a_zero, "a")
    w = _shifted(c, b, b_zero, "b")
    length = _shape(c, a)[-1]
    return _exact(c, lambda p, q: c.emit(G.MatmulOp, p, q), x, w, length)


def _output(c: NodeContext, acc: SSAValue, scales: list[int], y_scale: int, y_zero):
    """The int32 accumulator requantized: acc * (s0 * s1 / y_scale), rounded,
    plus y's zero point, clipped to its type (or `y_zero`'s default)."""
    multiplier = _cast(c, c.value(scales[0]), "float32")
    multiplier = c.emit(G.MulOp, multiplier, _cast(c, c.value(scales[1]), "float32"))
    multiplier = c.emit(G.DivOp, multiplier, _cast(c, c.value(y_scale), "float32"))
    y = c.emit(G.MulOp, _cast(c, acc, "float32"), multiplier)
    zero, dtype = y_zero
    return _requantize(c, y, zero, dtype)


@converter("MatMulInteger")
def _matmul_integer(c: NodeContext):
    return [_matmul_int(c, 0, 2, 1, 3)]


def _qdense(
    c: NodeContext,
    x: SSAValue,
    w: np.ndarray,
    scales: tuple[np.ndarray, np.ndarray, np.ndarray],
    zeros: tuple[np.ndarray, np.ndarray],
    bias: np.ndarray | None,
) -> SSAValue:
    """`graph.qdense` of data (..., K) (flattened to rows and back) by an
    int8 weight (N, K): scale x_scale * w_scale / y_scale, the output of
    y_zero's type."""
    n, k = w.shape
    x_scale, w_scale, y_scale = (np.asarray(v, np.float32) for v in scales)
    x_zero, y_zero = zeros
    scale = x_scale.reshape(()) * np.broadcast_to(w_scale.reshape(-1), (n,))
    scale = (scale / y_scale.reshape(())).astype(np.float32)
    lead = list(shape_of(x)[:-1])
    rows = x if len(lead) == 1 else c.emit(G.ReshapeOp, x, shape=[-1, k])
    y_dtype = y_zero.dtype.name
    y = c.emit(
        G.QDenseOp,
        rows,
        c.array(w, "weight"),
        c.array(np.zeros(n, np.int32) if bias is None else bias, "bias"),
        c.array(scale, "scale"),
        x_zero=int(x_zero.reshape(())),
        y_zero=int(y_zero.reshape(())),
        clip=list(RANGES[y_dtype]),
        signed=y_dtype == "int8",
    )
    return y if len(lead) == 1 else c.emit(G.ReshapeOp, y, shape=[*lead, n])


@converter("ai.ember.QLinearDense")
def _qlinear_dense(c: NodeContext):
    """QLinearDense(x, x_scale, x_zero, w (N, K), w_scale, y_scale, y_zero,
    [bias]): what `onnx_qdq.fuse_qdq` makes of a QDQ MatMul or Gemm."""
    w = c.const(3, "w")
    scales = (c.const(1, "x_scale"), c.const(4, "w_scale"), c.const(5, "y_scale"))
    zeros = (c.const(2, "x_zero"), c.const(6, "y_zero"))
    bias = c.const(7, "bias") if c.has(7) else None
    return [_qdense(c, c.value(0), w, scales, zeros, bias)]


def _integer_matmul(c: NodeContext) -> SSAValue | None:
    """QLinearMatMul by a 2-D weight known at import time whose values less
    their zero points fit int8 (`signed_weight`), every scale and zero
    point known (the weight's may be per column): `graph.qdense`. None
    otherwise."""
    if not all(c.is_const(i) for i in range(1, 8)):
        return None
    b, x_dtype = c.const(3, "b"), _input_dtype(c, 0)
    scales = [c.const(i, "a scale") for i in (1, 4, 6)]
    zeros = [c.const(i, "a zero point") for i in (2, 5, 7)]
    if b.ndim != 2 or (b := signed_weight(b, zeros[1], axis=1)) is None:
        return None
    if x_dtype not in ("uint8", "int8") or zeros[2].dtype.name not in ("uint8", "int8"):
        return None
    if scales[0].size != 1 or scales[2].size != 1 or zeros[0].size != 1:
        return None
    if scales[1].size not in (1, b.shape[1]) or zeros[2].size != 1:
        return None
    if len(_shape(c, 0)) < 2:
        return None
    weight = np.ascontiguousarray(b.T)
    return _qdense(
        c,
        c.value(0),
        weight,
        (scales[0], scales[1], scales[2]),
        (zeros[0], zeros[2]),
        None,
    )


@converter("QLinearMatMul")
def _qlinear_matmul(c: NodeContext):
    fused = _integer_matmul(c)
    if fused is not None:
        return [fused]
    _per_row(c, 1, len(shape_of(c.value(0))))
    acc = _matmul_int(c, 0, 2, 3, 5)
    dtype = _quantized(c, 7, "y's zero point")
    return [_output(c, acc, [1, 4], 6, (c.value(7), dtype))]


def _conv_int(c: NodeContext, x: int, x_zero: int, w: int, w_zero: int):
    """The convolution's int32 accumulator: graph.conv2d for 2-D data and a
    weight known at import time (it packs its weight when compiling), else
    onnx_im2col's slices and matmul."""
    x_shape, w_shape = _shape(c, x), _shape(c, w)
    has_zero = c.has(w_zero)
    if len(x_shape) < 3 or len(w_shape) != len(x_shape):
        raise ConversionError(
            f"expected (N, C, ...) data and a weight of its rank, got shapes "
            f"{x_shape} and {w_shape}"
        )
    if has_zero and math.prod(_shape(c, w_zero)) != 1:
        _reshape(c, w_zero, [-1] + [1] * (len(w_shape) - 1))
    packed = c.is_const(w) and (not has_zero or c.is_const(w_zero))
    a = _shifted(c, x, x_zero, "x")
    b = _shifted(c, w, w_zero, "w")
    length = math.prod(w_shape[1:])
    if packed and len(x_shape) == 4:
        kernel = c.attr("kernel_shape") or w_shape[2:]
        attrs: dict[str, Any] = dict(
            strides=c.attr("strides", [1, 1]),
            padding=_same_padding(c, x_shape[2:], kernel),
            dilation=c.attr("dilations", [1, 1]),
            groups=c.attr("group", 1),
        )
        return _exact(c, lambda p, q: c.emit(G.Conv2DOp, p, q, **attrs), a, b, length)

    def im2col(p: SSAValue, q: SSAValue) -> SSAValue:
        operands = NodeContext(c.node, c.opset, [p, q], c.block, c._materialize)
        return _conv_im2col(operands)

    return _exact(c, im2col, a, b, length)


@converter("ConvInteger")
def _conv_integer(c: NodeContext):
    return [_conv_int(c, 0, 2, 1, 3)]


def signed_weight(w: np.ndarray, zero: np.ndarray, axis: int) -> np.ndarray | None:
    """The integer weight less its zero point (one, or one per index of
    `axis`) as int8 (`w` itself where it is int8 with zero points of 0);
    None where the difference does not fit int8."""
    if w.dtype == np.int8 and not np.any(zero):
        return w
    if w.dtype.name not in ("int8", "uint8") or zero.size not in (1, w.shape[axis]):
        return None
    shape = [1] * w.ndim
    shape[axis] = -1
    shifted = w.astype(np.int16) - zero.astype(np.int16).reshape(
        shape if zero.size > 1 else ()
    )
    if shifted.min(initial=0) < -128 or shifted.max(initial=0) > 127:
        return None
    return shifted.astype(np.int8)


def _integer_conv(c: NodeContext) -> SSAValue | None:
    """QLinearConv as `graph.qconv2d` (byte dot products, requantized in the
    kernel), where its form allows: 2-D (grouped ones of at most
    `GROUPED_TERMS` products per output), a uint8 or int8 input, a weight
    known at import time whose values less their zero points fit int8
    (`signed_weight`: int8 with zero points of 0, uint8 around 128), and
    every scale and zero point known (one per tensor; the weight's may be
    per channel).
    None otherwise: the exact decomposition below computes it."""
    x_shape, w_shape = _shape(c, 0), _shape(c, 3)
    if len(x_shape) != 4 or len(w_shape) != 4:
        return None
    groups = c.attr("group", 1)
    if groups > 1 and math.prod(w_shape[1:]) > GROUPED_TERMS:
        return None
    if not all(c.is_const(i) for i in (1, 2, 3, 4, 5, 6, 7)):
        return None
    if c.has(8) and not c.is_const(8):
        return None
    x_dtype, stored = _input_dtype(c, 0), c.const(3, "w")
    scales = [c.const(i, "a scale").astype(np.float32) for i in (1, 4, 6)]
    zeros = [c.const(i, "a zero point") for i in (2, 5, 7)]
    o = w_shape[0]
    w = signed_weight(stored, zeros[1], axis=0)
    if x_dtype not in ("uint8", "int8") or w is None:
        return None
    if zeros[2].dtype.name not in ("uint8", "int8"):
        return None
    if scales[0].size != 1 or scales[2].size != 1 or scales[1].size not in (1, o):
        return None
    if zeros[0].size != 1 or zeros[2].size != 1:
        return None
    x_scale, w_scale, y_scale = scales
    scale = x_scale.reshape(()) * np.broadcast_to(w_scale.reshape(-1), (o,))
    scale = (scale / y_scale.reshape(())).astype(np.float32)
    bias = c.const(8, "B").astype(np.int32) if c.has(8) else np.zeros(o, np.int32)
    y_dtype = zeros[2].dtype.name
    kernel = c.attr("kernel_shape") or w_shape[2:]
    return c.emit(
        G.QConv2DOp,
        c.value(0),
        c.value(3) if w is stored else c.array(w, "weight"),
        c.array(bias.reshape(o), "bias"),
        c.array(scale, "scale"),
        strides=c.attr("strides", [1, 1]),
        padding=_same_padding(c, x_shape[2:], kernel),
        dilation=c.attr("dilations", [1, 1]),
        groups=groups,
        x_zero=int(zeros[0].reshape(())),
        y_zero=int(zeros[2].reshape(())),
        clip=list(RANGES[y_dtype]),
        signed=y_dtype == "int8",
    )


@converter("QLinearConv")
def _qlinear_conv(c: NodeContext):
    fused = _integer_conv(c)
    if fused is not None:
        return [fused]
    acc = _conv_int(c, 0, 2, 3, 5)
    if c.has(8):
        bias = _cast(c, c.value(8), "int32")
        channels = [-1] + [1] * (len(_shape(c, 0)) - 2)
        acc = c.emit(G.AddOp, acc, c.emit(G.ReshapeOp, bias, shape=channels))
    if math.prod(_shape(c, 4)) != 1:
        _reshape(c, 4, [-1] + [1] * (len(_shape(c, 0)) - 2))
    dtype = _quantized(c, 7, "y's zero point")
    return [_output(c, acc, [1, 4], 6, (c.value(7), dtype))]
