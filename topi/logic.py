"""Scalar forms of the dtype ops (`dialects/graph_dtype.py`): comparisons,
logical and bitwise ops, shifts, where, sign, mod and cast, so each joins an
injective group or an anchor's epilogue like any elementwise op.

    graph.greater(x, y)      x > y                     (bool)
    graph.mod {fmod}(x, y)   x % y (numpy's), x - trunc(x / y) * y (C's fmod)
    graph.cast(x) to bool    x != 0 (NaN is true, as numpy and onnxruntime)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ember import te
from ember.dialects import graph_dtype as gd
from ember.dialects.graph_base import dtype_of
from ember.strategy import ALL_DTYPES, INTEGERS, NUMBERS, scalar_strategy
from ember.te import Expr

Value = Expr | float

COMPARE: dict[type, Callable[[Expr, Value], Expr]] = {
    gd.EqualOp: te.equal,
    gd.LessOp: lambda a, b: a < b,
    gd.LessEqualOp: lambda a, b: a <= b,
    gd.GreaterOp: lambda a, b: a > b,
    gd.GreaterEqualOp: lambda a, b: a >= b,
}

LOGIC: dict[type, Callable[[Expr, Value], Expr]] = {
    gd.LogicalAndOp: lambda a, b: a & b,
    gd.LogicalOrOp: lambda a, b: a | b,
    gd.LogicalXorOp: lambda a, b: a ^ b,
}


def _expr(value: Value, like: Value) -> Expr:
    """A number as a constant of the other operand's dtype."""
    if isinstance(value, Expr):
        return value
    dtype = like.dtype if isinstance(like, Expr) else "float32"
    return te.const(value, dtype)


@scalar_strategy(*COMPARE, *LOGIC, dtypes=ALL_DTYPES)
def _binary_form(op, args: list[Value]) -> Expr:
    a, b = args
    fn = COMPARE.get(type(op)) or LOGIC[type(op)]
    return fn(_expr(a, b), b)


BITWISE: dict[type, Callable[[Expr, Expr], Expr]] = {
    gd.BitwiseAndOp: lambda a, b: a & b,
    gd.BitwiseOrOp: lambda a, b: a | b,
    gd.BitwiseXorOp: lambda a, b: a ^ b,
}


@scalar_strategy(*BITWISE, dtypes=INTEGERS)
def _bitwise_form(op, args: list[Value]) -> Expr:
    a, b = args
    a = _expr(a, b)
    return BITWISE[type(op)](a, _expr(b, a))


@scalar_strategy(gd.BitwiseNotOp, dtypes=INTEGERS)
def _bitwise_not_form(op, args: list[Value]) -> Expr:
    return ~_expr(args[0], args[0])


@scalar_strategy(gd.LeftShiftOp, gd.RightShiftOp, dtypes=INTEGERS)
def _shift_form(op, args: list[Value]) -> Expr:
    """x << y or x >> y, where a shift outside [0, bits) (LLVM's poison) is
    what ONNX's BitShift says: the sign fill of a right shift, else 0."""
    x, y = args
    x = _expr(x, y)
    y = _expr(y, x)
    bits = np.iinfo(x.dtype).bits
    unsigned = x.dtype in te.UNSIGNED_DTYPES
    inside = (y < bits) if unsigned else (y >= 0) & (y < bits)
    amount = te.select(inside, y, 0)
    if isinstance(op, gd.LeftShiftOp):
        return te.select(inside, x << amount, 0)
    fill = te.const(0, x.dtype) if unsigned else x >> (bits - 1)
    return te.select(inside, x >> amount, fill)


@scalar_strategy(gd.LogicalNotOp, dtypes=("bool",))
def _not_form(op, args: list[Value]) -> Expr:
    return ~_expr(args[0], args[0])


@scalar_strategy(gd.WhereOp, dtypes=ALL_DTYPES)
def _where_form(op, args: list[Value]) -> Expr:
    cond, x, y = args
    return te.select(_expr(cond, cond), x, y)


@scalar_strategy(gd.SignOp, dtypes=NUMBERS)
def _sign_form(op, args: list[Value]) -> Expr:
    x = _expr(args[0], args[0])
    if x.dtype in te.UNSIGNED_DTYPES:
        return te.select(x > 0, 1, x)
    return te.select(x > 0, 1, te.select(x < 0, -1, x))  # 0 and NaN stay


@scalar_strategy(gd.ModOp, dtypes=(*NUMBERS, "float64"))
def _mod_form(op: gd.ModOp, args: list[Value]) -> Expr:
    a, b = args
    a = _expr(a, b)
    b = _expr(b, a)
    if a.dtype in te.INT_DTYPES:
        if not op.config["fmod"] or a.dtype in te.UNSIGNED_DTYPES:
            return a % b  # the divisor's sign, as numpy
        return a - (a / b) * b  # `/` truncates: the dividend's sign, as C
    r = fmod(a, b)
    if op.config["fmod"]:
        return r
    # numpy's mod: a nonzero remainder takes the divisor's sign
    return te.select(te.not_equal(r, 0.0) & ((r < 0.0) != (b < 0.0)), r + b, r)


def fmod(x: Expr, y: Expr) -> Expr:
    """C's fmod of float32 values: x - trunc(x / y) * y in float64, exact while
    |x / y| < 2**29 (the product of the truncated quotient and y then fits
    float64's mantissa); NaN for y = 0 or an infinite x, x for an infinite y.
    float64 values take the same formula, exact while the product fits 53 bits
    (integral values, short quotients), else within an ulp of it."""
    wide_x, wide_y = x.astype("float64"), y.astype("float64")
    q = wide_x / wide_y
    whole = te.select(te.abs(q) < 2.0**62, q, 0.0).astype("int64").astype("float64")
    r = (wide_x - whole * wide_y).astype(x.dtype)
    undefined = te.not_equal(y, y) | (y == 0.0) | (te.abs(x) == math.inf)
    r = te.select(te.abs(y) == math.inf, x, r)
    return te.select(undefined | te.not_equal(x, x), math.nan, r)


@scalar_strategy(gd.CastOp, dtypes=ALL_DTYPES)
def _cast_form(op: gd.CastOp, args: list[Value]) -> Expr:
    to = dtype_of(op.result.type.element_type)  # type: ignore[attr-defined]
    x = _expr(args[0], args[0])
    if to == "bool" and x.dtype != "bool":
        return te.not_equal(x, 0)  # NaN is true
    if (x.dtype, to) == ("float64", "float16"):
        return _narrow_to_half(x)
    return x.astype(to)


@scalar_strategy(gd.BitcastOp, dtypes=ALL_DTYPES)
def _bitcast_form(op: gd.BitcastOp, args: list[Value]) -> Expr:
    """Integers (and bools, a byte) of one width are one signless value; a
    float's bits are reinterpreted."""
    to = dtype_of(op.result.type.element_type)  # type: ignore[attr-defined]
    x = _expr(args[0], args[0])
    source = dtype_of(op.input.type.element_type)  # type: ignore[attr-defined]
    if x.dtype != source:  # float16 held in float32 (exactly): its own bits
        x = x.astype(source)
    if x.dtype in te.FLOAT_DTYPES or to in te.FLOAT_DTYPES:
        return te.reinterpret(to, x)
    return x.astype(to)


def _narrow_to_half(x: Expr) -> Expr:
    """float64 to float16 rounded once, to nearest even, without the libgcc
    helper LLVM calls for it (`__truncdfhf2`): x rounded to float32 toward zero
    with a sticky last bit ("round to odd") keeps enough bits that rounding
    that to float16 is x's correct rounding."""
    r = x.astype("float32")
    back = r.astype("float64")
    bits = te.reinterpret("int32", r)
    bits = te.select(te.abs(back) > te.abs(x), bits - 1, bits)
    bits = te.select(te.not_equal(back, x), bits | 1, bits)
    return te.reinterpret("float32", bits).astype("float16")
