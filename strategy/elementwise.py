"""Strategies of the elementwise ops: arithmetic (`dialects/graph_tensor.py`),
activations (`graph_activation.py`) and unary math (`graph_math.py`) as scalar
forms, each joining an anchor's epilogue or an injective group; batch_norm, when
it was not folded, as a tensor form.

    graph.add(x, y)          x + y
    graph.sigmoid(x)         topi.fastmath.sigmoid(x)
    graph.hard_swish(x)      topi.activation.hard_swish(x)
    graph.asinh(x)           te.asinh(x), float64 too
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation

from ember import te
from ember.dialects import graph
from ember.dialects import graph_math as gm
from ember.strategy.registry import (
    FLOATS,
    NUMBERS,
    Value,
    as_expr,
    injective_strategy,
    scalar_strategy,
    tensor_operand,
)
from ember.te import Expr
from ember.topi import activation, elementwise
from ember.topi import math as topi_math

UNARY: dict[type[Operation], Callable[[Expr], Expr]] = {
    graph.ReluOp: elementwise.UNARY["relu"],
    graph.SigmoidOp: elementwise.UNARY["sigmoid"],
    graph.TanhOp: elementwise.UNARY["tanh"],
    graph.ExpOp: elementwise.UNARY["exp"],
    graph.ErfOp: elementwise.UNARY["erf"],
    graph.GeluOp: elementwise.UNARY["gelu"],
    graph.SqrtOp: elementwise.UNARY["sqrt"],
    graph.LogOp: elementwise.UNARY["log"],
    graph.AbsOp: elementwise.UNARY["abs"],
    graph.NegOp: elementwise.UNARY["neg"],
}
"""Scalar forms of the unary graph ops, by op class: a new unary op is one line
here (a te function or topi's), besides its dialect class and frontend
mapping."""

BINARY: dict[type[Operation], Callable[[Expr, Value], Expr]] = {
    graph.AddOp: elementwise.BINARY["add"],
    graph.SubOp: elementwise.BINARY["sub"],
    graph.MulOp: elementwise.BINARY["mul"],
    graph.DivOp: elementwise.BINARY["div"],
    graph.MaximumOp: elementwise.BINARY["maximum"],
    graph.MinimumOp: elementwise.BINARY["minimum"],
    graph.PowOp: elementwise.BINARY["pow"],
}
"""Scalar forms of the binary graph ops; the right operand may be a number,
which `pow` specializes (2 -> x * x, 0.5 -> sqrt)."""

ON_INTEGERS = (
    graph.AddOp,
    graph.SubOp,
    graph.MulOp,
    graph.DivOp,
    graph.MaximumOp,
    graph.MinimumOp,
    graph.NegOp,
    graph.AbsOp,
    graph.ReluOp,
)
"""The ops whose scalar forms also compute int8, int32, int64 (integer
division truncates toward zero, as ONNX's Div) and float64 (exact operations,
unlike the float32 polynomials of `fastmath`)."""


@scalar_strategy(*UNARY)
def _unary_form(op: Operation, args: list[Value]) -> Expr:
    return UNARY[type(op)](as_expr(args[0]))


@scalar_strategy(*BINARY)
def _binary_form(op: Operation, args: list[Value]) -> Expr:
    return BINARY[type(op)](as_expr(args[0]), args[1])


for _op in ON_INTEGERS:
    _form = _unary_form if _op in UNARY else _binary_form
    scalar_strategy(_op, dtypes=(*NUMBERS, "float64"))(_form)


@scalar_strategy(graph.ExpOp, graph.LogOp, dtypes=(*FLOATS, "float64"))
def _exp_log_form(op: Operation, args: list[Value]) -> Expr:
    """exp and log; float64 takes libm's (fastmath's polynomials are float32's)."""
    x = as_expr(args[0])
    if x.dtype == "float64":
        return (te.exp if isinstance(op, graph.ExpOp) else te.log)(x)
    return UNARY[type(op)](x)


@scalar_strategy(graph.ClipOp)
def _clip_form(op: graph.ClipOp, args: list[Value]) -> Expr:
    return elementwise.clip_expr(as_expr(args[0]), op.config["min"], op.config["max"])


@injective_strategy(graph.BatchNormOp)
def _batch_norm_form(op: graph.BatchNormOp, args: list, name: str) -> te.Tensor:
    x, gamma, beta, mean, var = (tensor_operand(a, op) for a in args)
    return elementwise.batch_norm(x, gamma, beta, mean, var, op.config["epsilon"], name)


# --- activations ----------------------------------------------------------


@scalar_strategy(graph.LeakyReluOp)
def _leaky_relu_form(op: graph.LeakyReluOp, args: list[Value]) -> Expr:
    return activation.leaky_relu(as_expr(args[0]), op.config["alpha"])


@scalar_strategy(graph.PReluOp)
def _prelu_form(op: graph.PReluOp, args: list[Value]) -> Expr:
    return activation.prelu(as_expr(args[0]), args[1])


@scalar_strategy(graph.EluOp)
def _elu_form(op: graph.EluOp, args: list[Value]) -> Expr:
    return activation.elu(as_expr(args[0]), op.config["alpha"])


@scalar_strategy(graph.SeluOp)
def _selu_form(op: graph.SeluOp, args: list[Value]) -> Expr:
    cfg = op.config
    return activation.selu(as_expr(args[0]), cfg["alpha"], cfg["gamma"])


@scalar_strategy(graph.HardSigmoidOp)
def _hard_sigmoid_form(op: graph.HardSigmoidOp, args: list[Value]) -> Expr:
    cfg = op.config
    return activation.hard_sigmoid(as_expr(args[0]), cfg["alpha"], cfg["beta"])


_PLAIN: dict[type[Operation], Callable[[Expr], Expr]] = {
    graph.HardSwishOp: activation.hard_swish,
    graph.SoftplusOp: activation.softplus,
    graph.MishOp: activation.mish,
    graph.GeluTanhOp: activation.gelu_tanh,
}


@scalar_strategy(*_PLAIN)
def _plain_form(op: Operation, args: list[Value]) -> Expr:
    return _PLAIN[type(op)](as_expr(args[0]))


# --- unary math: float64 too ----------------------------------------------

WIDE = (*FLOATS, "float64")

MATH: dict[type[Operation], Callable[[Expr], Expr]] = {
    gm.SinOp: te.sin,
    gm.CosOp: te.cos,
    gm.TanOp: te.tan,
    gm.AsinOp: te.asin,
    gm.AcosOp: te.acos,
    gm.AtanOp: te.atan,
    gm.SinhOp: te.sinh,
    gm.CoshOp: te.cosh,
    gm.AsinhOp: te.asinh,
    gm.AcoshOp: te.acosh,
    gm.AtanhOp: te.atanh,
    gm.FloorOp: te.floor,
    gm.CeilOp: te.ceil,
    gm.RoundOp: te.roundeven,
    gm.ReciprocalOp: topi_math.reciprocal,
    gm.SoftsignOp: topi_math.softsign,
}
"""Scalar forms of the unary math ops, by op class: a new one is one line here,
besides its dialect class and frontend mapping."""


@scalar_strategy(*MATH, dtypes=WIDE)
def _math_form(op: Operation, args: list[Value]) -> Expr:
    return MATH[type(op)](as_expr(args[0]))


@scalar_strategy(gm.ThresholdedReluOp, dtypes=WIDE)
def _thresholded_relu_form(op: gm.ThresholdedReluOp, args: list[Value]) -> Expr:
    return topi_math.thresholded_relu(as_expr(args[0]), op.config["alpha"])


@scalar_strategy(gm.ShrinkOp, dtypes=WIDE)
def _shrink_form(op: gm.ShrinkOp, args: list[Value]) -> Expr:
    cfg = op.config
    return topi_math.shrink(as_expr(args[0]), cfg["bias"], cfg["lambd"])


@scalar_strategy(gm.CeluOp, dtypes=WIDE)
def _celu_form(op: gm.CeluOp, args: list[Value]) -> Expr:
    return topi_math.celu(as_expr(args[0]), op.config["alpha"])


@scalar_strategy(gm.IsNaNOp, gm.IsInfOp, dtypes=(*WIDE, "bool"))
def _float_test_form(op, args: list[Value]) -> Expr:
    x = as_expr(args[0])
    if isinstance(op, gm.IsNaNOp):
        return te.not_equal(x, x)
    cfg = op.config
    return topi_math.is_inf(x, cfg["detect_negative"], cfg["detect_positive"])
