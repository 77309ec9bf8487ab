"""Activations past relu, sigmoid and tanh, as scalar forms (te expression to
te expression) of the graph ops of `dialects/graph_activation.py`
(`strategy/elementwise.py` registers them): each joins an anchor's epilogue
(conv2d + hard_swish is one kernel) or an injective group like any elementwise
op.

    y = te.compute(x.shape, lambda *i: hard_swish(x[i]), name="hard_swish")

Exponentials come from `fastmath` (polynomials that vectorize); only softplus
calls libm's log.
"""

from __future__ import annotations

from ember import te
from ember.dialects.graph_activation import GELU_TANH_SCALE
from ember.te import Expr
from ember.topi import fastmath
from ember.topi.elementwise import clip_expr

Value = Expr | float

SOFTPLUS_TAIL = 16.0
"""Past |x| = 16, log(1 + e^-|x|) is e^-|x| to float32 precision, and the sum
1 + e^-|x| would round the small term away."""


def leaky_relu(x: Expr, alpha: float) -> Expr:
    """x, or alpha * x below 0 (NaN stays NaN)."""
    return te.select(x < 0.0, x * float(alpha), x)


def prelu(x: Expr, slope: Value) -> Expr:
    """x, or slope * x below 0, the slope read per element (per channel)."""
    return te.select(x < 0.0, x * slope, x)


def elu(x: Expr, alpha: float) -> Expr:
    """x, or alpha (e^x - 1) below 0."""
    return te.select(x < 0.0, (fastmath.exp(x) - 1.0) * float(alpha), x)


def selu(x: Expr, alpha: float, gamma: float) -> Expr:
    """gamma x above 0, gamma alpha (e^x - 1) otherwise."""
    negative = (fastmath.exp(x) - 1.0) * float(alpha)
    return te.select(x > 0.0, x, negative) * float(gamma)


def hard_sigmoid(x: Expr, alpha: float, beta: float) -> Expr:
    """alpha x + beta clipped to [0, 1] (NaN stays NaN)."""
    return clip_expr(x * float(alpha) + float(beta), 0.0, 1.0)


def hard_swish(x: Expr) -> Expr:
    """x hard_sigmoid(x) with ONNX's alpha 1/6 and beta 1/2."""
    return x * hard_sigmoid(x, 1 / 6, 0.5)


def softplus(x: Expr) -> Expr:
    """log(1 + e^x) as max(x, 0) + log(1 + e^-|x|), which neither overflows
    nor loses the small term."""
    a = te.abs(x)
    small = fastmath.exp(0.0 - a)
    tail = te.select(a > SOFTPLUS_TAIL, small, te.log(small + 1.0))
    return te.select(x > 0.0, x, 0.0) + tail


def mish(x: Expr) -> Expr:
    """x tanh(softplus(x)) without a log: with n = e^x (e^x + 2),
    tanh(log(1 + e^x)) = n / (n + 2); past x = 20 it is 1 in float32 (and n
    would overflow)."""
    e = fastmath.exp(te.select(x > 20.0, 20.0, x))
    n = e * (e + 2.0)
    return te.select(x > 20.0, x, x * n / (n + 2.0))


def gelu_tanh(x: Expr) -> Expr:
    """x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), Gelu approximate='tanh'."""
    inner = (x + x * x * x * 0.044715) * GELU_TANH_SCALE
    return x * 0.5 * (fastmath.tanh(inner) + 1.0)
