"""Strategies of the dtype ops (`dialects/graph_dtype.py`): comparisons,
logic and bitwise ops, shifts, where, sign, mod, cast and bitcast as scalar
forms on every dtype they are defined for, so each joins an injective group or
an anchor's epilogue like any elementwise op.

    graph.greater(x, y)      x > y                     (bool)
    graph.mod {fmod}(x, y)   topi.logic.mod(x, y, c_fmod=True)
    graph.cast(x) to bool    topi.logic.cast(x, "bool")
"""

from __future__ import annotations

from collections.abc import Callable

from ember import te
from ember.dialects import graph_dtype as gd
from ember.dialects.graph_base import dtype_of
from ember.strategy.registry import (
    ALL_DTYPES,
    INTEGERS,
    NUMBERS,
    Value,
    scalar_strategy,
)
from ember.te import Expr
from ember.topi import logic

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

BITWISE: dict[type, Callable[[Expr, Expr], Expr]] = {
    gd.BitwiseAndOp: lambda a, b: a & b,
    gd.BitwiseOrOp: lambda a, b: a | b,
    gd.BitwiseXorOp: lambda a, b: a ^ b,
}


def _expr(value: Value, like: Value) -> Expr:
    """A number as a constant of the other operand's dtype."""
    if isinstance(value, Expr):
        return value
    dtype = like.dtype if isinstance(like, Expr) else "float32"
    return te.const(value, dtype)


def _pair(args: list[Value]) -> tuple[Expr, Expr]:
    """Both operands as expressions, a number taking the other's dtype."""
    a, b = args
    a = _expr(a, b)
    return a, _expr(b, a)


@scalar_strategy(*COMPARE, *LOGIC, dtypes=ALL_DTYPES)
def _binary_form(op, args: list[Value]) -> Expr:
    a, b = args
    fn = COMPARE.get(type(op)) or LOGIC[type(op)]
    return fn(_expr(a, b), b)


@scalar_strategy(*BITWISE, dtypes=INTEGERS)
def _bitwise_form(op, args: list[Value]) -> Expr:
    return BITWISE[type(op)](*_pair(args))


@scalar_strategy(gd.BitwiseNotOp, dtypes=INTEGERS)
def _bitwise_not_form(op, args: list[Value]) -> Expr:
    return ~_expr(args[0], args[0])


@scalar_strategy(gd.LeftShiftOp, gd.RightShiftOp, dtypes=INTEGERS)
def _shift_form(op, args: list[Value]) -> Expr:
    x, y = args
    x = _expr(x, y)
    return logic.shift(x, _expr(y, x), left=isinstance(op, gd.LeftShiftOp))


@scalar_strategy(gd.LogicalNotOp, dtypes=("bool",))
def _not_form(op, args: list[Value]) -> Expr:
    return ~_expr(args[0], args[0])


@scalar_strategy(gd.WhereOp, dtypes=ALL_DTYPES)
def _where_form(op, args: list[Value]) -> Expr:
    cond, x, y = args
    return te.select(_expr(cond, cond), x, y)


@scalar_strategy(gd.SignOp, dtypes=NUMBERS)
def _sign_form(op, args: list[Value]) -> Expr:
    return logic.sign(_expr(args[0], args[0]))


@scalar_strategy(gd.ModOp, dtypes=(*NUMBERS, "float64"))
def _mod_form(op: gd.ModOp, args: list[Value]) -> Expr:
    return logic.mod(*_pair(args), c_fmod=op.config["fmod"])


@scalar_strategy(gd.CastOp, dtypes=ALL_DTYPES)
def _cast_form(op: gd.CastOp, args: list[Value]) -> Expr:
    to = dtype_of(op.result.type.element_type)  # type: ignore[attr-defined]
    return logic.cast(_expr(args[0], args[0]), to)


@scalar_strategy(gd.BitcastOp, dtypes=ALL_DTYPES)
def _bitcast_form(op: gd.BitcastOp, args: list[Value]) -> Expr:
    to = dtype_of(op.result.type.element_type)  # type: ignore[attr-defined]
    source = dtype_of(op.input.type.element_type)  # type: ignore[attr-defined]
    return logic.bitcast(_expr(args[0], args[0]), source, to)
