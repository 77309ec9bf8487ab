"""Unary math as scalar forms (te expression to te expression) of the graph ops
of `dialects/graph_math.py` (`strategy/elementwise.py` registers them, with
te's own `te.asinh`, `te.floor`, ...): each joins an anchor's epilogue or an
injective group like any elementwise op.

    y = te.compute(x.shape, lambda *i: te.asinh(x[i]), name="asinh")

The trigonometric and hyperbolic functions are the `math` dialect's (LLVM's
intrinsics or libm; the C-family printer's libm names), rounding is
`math.floor` / `math.ceil` / `math.roundeven` (ONNX's Round is half to even).
They compute float64 too; Celu's exponential is `fastmath.exp` below float64.
"""

from __future__ import annotations

import math

from ember import te
from ember.te import Expr
from ember.topi import fastmath


def reciprocal(x: Expr) -> Expr:
    """1 / x."""
    return te.const(1.0, x.dtype) / x


def softsign(x: Expr) -> Expr:
    """x / (1 + |x|)."""
    return x / (te.abs(x) + 1.0)


def thresholded_relu(x: Expr, alpha: float) -> Expr:
    """x above alpha, 0 otherwise (NaN gives 0, as onnxruntime)."""
    return te.select(x > float(alpha), x, 0.0)


def shrink(x: Expr, bias: float, lambd: float) -> Expr:
    """x - bias above lambd, x + bias below -lambd, 0 between."""
    inner = te.select(x > float(lambd), x - float(bias), 0.0)
    return te.select(x < -float(lambd), x + float(bias), inner)


def celu(x: Expr, alpha: float) -> Expr:
    """max(0, x) + min(0, alpha (e^(x / alpha) - 1))."""
    exp = te.exp if x.dtype == "float64" else fastmath.exp
    negative = (exp(x * (1.0 / float(alpha))) - 1.0) * float(alpha)
    return te.select(x > 0.0, x, 0.0) + te.select(negative < 0.0, negative, 0.0)


def is_inf(x: Expr, negative: bool, positive: bool) -> Expr:
    """Whether x is an infinity of the signs asked for."""
    if negative and positive:
        return te.equal(te.abs(x), math.inf)
    if positive or negative:
        return te.equal(x, math.inf if positive else -math.inf)
    return te.not_equal(x, x) & te.equal(x, x)  # false, in x's shape
