"""ONNX ops about element types on computed tensors: comparisons (Equal, Less,
LessOrEqual, Greater, GreaterOrEqual), And, Or, Xor, Not, BitwiseAnd,
BitwiseOr, BitwiseXor, BitwiseNot, BitShift, Where, Mod, Sign, Cast, CastLike
and BitCast (`dialects/graph_dtype.py`). A cast to a dtype graph tensors do
not hold (bfloat16, float8, int4, string, ...) is refused naming it; the
converters register with `onnx_ops.converter`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType

from ember.dialects import graph_dtype as gd
from ember.dialects.graph_base import NUMPY_TYPES, dtype_of
from ember.frontends.onnx_fold import dtype_name, symbolic
from ember.frontends.onnx_ops import CHECKS, ConversionError, NodeContext, converter

_COMPARE = {
    "Equal": gd.EqualOp,
    "Less": gd.LessOp,
    "LessOrEqual": gd.LessEqualOp,
    "Greater": gd.GreaterOp,
    "GreaterOrEqual": gd.GreaterEqualOp,
    "And": gd.LogicalAndOp,
    "Or": gd.LogicalOrOp,
    "Xor": gd.LogicalXorOp,
}


def _cast_target(attrs: dict[str, Any], _opset: int) -> list[str]:
    to = dtype_name(attrs.get("to", 0))
    return [] if to in NUMPY_TYPES else [f"to={to}"]


CHECKS["Cast"] = CHECKS["BitCast"] = _cast_target


def _direction(attrs: dict[str, Any], _opset: int) -> list[str]:
    direction = attrs.get("direction")
    return [] if direction in ("LEFT", "RIGHT") else [f"direction={direction!r}"]


CHECKS["BitShift"] = _direction

_BITWISE = {
    "BitwiseAnd": gd.BitwiseAndOp,
    "BitwiseOr": gd.BitwiseOrOp,
    "BitwiseXor": gd.BitwiseXorOp,
}


@converter(*_COMPARE)
def _compare(c: NodeContext):
    return [c.emit(_COMPARE[c.node.op_type], c.value(0), c.value(1))]


@converter("Not")
def _not(c: NodeContext):
    return [c.emit(gd.LogicalNotOp, c.value(0))]


@converter(*_BITWISE)
def _bitwise(c: NodeContext):
    return [c.emit(_BITWISE[c.node.op_type], c.value(0), c.value(1))]


@converter("BitwiseNot")
def _bitwise_not(c: NodeContext):
    return [c.emit(gd.BitwiseNotOp, c.value(0))]


@converter("BitShift")
def _bit_shift(c: NodeContext):
    op = gd.LeftShiftOp if c.attr("direction") == "LEFT" else gd.RightShiftOp
    return [c.emit(op, c.value(0), c.value(1))]


@converter("Sign")
def _sign(c: NodeContext):
    return [c.emit(gd.SignOp, c.value(0))]


@converter("Where")
def _where(c: NodeContext):
    return [c.emit(gd.WhereOp, c.value(0), c.value(1), c.value(2))]


@converter("Mod")
def _mod(c: NodeContext):
    return [c.emit(gd.ModOp, c.value(0), c.value(1), fmod=bool(c.attr("fmod", 0)))]


def _cast_to(c: NodeContext, to: str):
    if to not in NUMPY_TYPES:
        raise ConversionError(
            f"expected a cast to one of {', '.join(NUMPY_TYPES)}, got {to}"
        )
    if c.is_const(0) and not symbolic(c.const(0, "the input")):
        return [c.const(0, "the input").astype(to)]
    x = c.value(0)
    assert isinstance(x.type, TensorType)
    if dtype_of(x.type.element_type) == to:
        return [x]
    return [c.emit_op(gd.CastOp.build_inferred(x, to=to))]


@converter("Cast")
def _cast(c: NodeContext):
    return _cast_to(c, dtype_name(c.attr("to")))


@converter("BitCast")
def _bitcast(c: NodeContext):
    to = dtype_name(c.attr("to"))
    if c.is_const(0):
        return [np.ascontiguousarray(c.const(0, "the input")).view(to)]
    x = c.value(0)
    assert isinstance(x.type, TensorType)
    if dtype_of(x.type.element_type) == to:
        return [x]
    return [c.emit_op(gd.BitcastOp.build_inferred(x, to=to))]


@converter("CastLike")
def _cast_like(c: NodeContext):
    like = c.inputs[1]
    if isinstance(like, np.ndarray):
        return _cast_to(c, like.dtype.name)
    assert like is not None and isinstance(like.type, TensorType)
    return _cast_to(c, dtype_of(like.type.element_type))
