"""Vectorizable float32 approximations of exp, sigmoid, tanh, erf and gelu as te
expressions.

LLVM has no vector versions of these functions without a vector math library:
`llvm.exp.v16f32` becomes sixteen scalar `expf` calls, `math.erf` one `erff` call
per lane, and glibc's `tanhf` is slow. Written as polynomials in te, they become
straight-line SIMD code (FMAs after `contract`) that `loop-vectorize` widens like
any other arithmetic. Measured on 200,704 float32 elements on this 2-core Zen 5,
vectorized, serial: libm `exp` 560 us, this `exp` 20 us; libm `tanh` 7.3 ms,
this `tanh` 25 us (see `benchmarks/layers_misc.py`).

Accuracy (float32, against float64 references, whole float range swept in
`tests/test_topi_fastmath.py`): `exp` <= 2 ulp (relative 2.4e-7), `sigmoid`,
`tanh` and `erf` <= 3 ulp, `gelu` <= 8 ulp plus x^2/2 ulp for negative x (its
tail e^(-x^2/2) is computed directly, not as a cancelling 1 + erf, so it stays
accurate to 4e-6 down to the smallest floats). Edge cases follow numpy:
exp overflows to inf above 88.72 and underflows through the subnormals to 0,
NaN in gives NaN out, tanh/erf(+-inf) = +-1, sigmoid(-inf) = 0.

The polynomial coefficients are ours: near-minimax fits (weighted least squares
on Chebyshev nodes in float64, reweighted toward the largest relative error)
of the reduced function on the interval named beside each table; the fit's
own error is far below float32's rounding.
"""

from __future__ import annotations

from collections.abc import Sequence

from ember import te
from ember.runtime.errors import EmberValueError
from ember.te import Expr, ExprLike
from ember.te.expr import as_expr

LOG2E = 1.4426950408889634
LN2_HI = 0.693359375  # few mantissa bits: n * LN2_HI is exact for |n| < 2^15
LN2_LO = -2.1219444005469057e-4
ROUND = 12582912.0  # 1.5 * 2^23: (t + ROUND) - ROUND rounds t to an integer

EXP_LO, EXP_HI = -104.0, 89.0
"""exp(-104) is below the smallest subnormal and exp(89) above the largest
float32, so clamping there keeps 2^n in range and changes no result."""

EXP_NORMAL_LO = -87.0
"""e^-87 = 1.6e-38, just above float32's smallest normal (1.18e-38): `exp`
with `flush` returns 0 below it instead of a subnormal."""

# e^r = 1 + r + r^2 q(r) on |r| <= ln2/2; the fit's relative error is 3.1e-9.
EXP_Q = (
    0.4999999345147261,
    0.1666652068756308,
    0.0416683874085627,
    0.008368710035311307,
    0.0013814611000354336,
)
# tanh(x) = x + x^3 q(x^2) on |x| <= 0.625; relative error 4.4e-9.
TANH_SMALL = 0.625
TANH_Q = (
    -0.3333328194277454,
    0.13331442214837597,
    -0.05373971626555921,
    0.02063909061789104,
    -0.005704990370491025,
)
# erf(x) = x p(x^2) on |x| <= 1; relative error 1.2e-9.
ERF_P = (
    1.1283791657322946,
    -0.37612625839605923,
    0.11283585269688293,
    -0.02685381603219225,
    0.005188334439675424,
    -0.000801024716479054,
    7.854024820924677e-05,
)
# erf(x) = x P(x^2) / Q(x^2) on |x| <= 3.92 (beyond, erf is +-1 in float32 to
# an ulp); relative error 5.2e-8 (a linearized least-squares fit, reweighted).
ERF_RATIONAL_CLAMP = 3.92
ERF_RATIONAL_P = (
    1.1283791065216064,
    0.19991010427474976,
    0.050571393221616745,
    0.0037009494844824076,
    0.00014183102757669985,
    -1.957695076271193e-06,
    1.992350107116181e-08,
)
ERF_RATIONAL_Q = (
    1.0,
    0.5104973912239075,
    0.1149924173951149,
    0.014351931400597095,
    0.0009558663005009294,
)
# erfc(x) e^(x^2) = g(1/x) on 1 <= x <= 10; relative error 1.4e-8. erf rounds to
# +-1 beyond 4; gelu's tail needs g up to 10, where e^(-x^2) leaves the floats.
ERF_MID, ERF_CLAMP = 1.0, 10.0
ERF_G = (
    -3.301295701115944e-06,
    0.5643277294116129,
    -0.0024867991429938785,
    -0.25670751305493617,
    -0.162729801714996,
    1.102862415303468,
    -1.8215988115805097,
    1.7134274131275247,
    -0.9900198789834391,
    0.32877326445762367,
    -0.04826113435122549,
)
SQRT1_2 = 0.7071067811865476


def horner(t: Expr, coefficients: Sequence[float]) -> Expr:
    """`c0 + c1 t + c2 t^2 + ...` evaluated as nested multiply-adds."""
    acc = t * coefficients[-1] + coefficients[-2]
    for c in reversed(coefficients[:-2]):
        acc = acc * t + c
    return acc


def _pow2(n: Expr) -> Expr:
    """2^n for an int32 n in [-126, 127], built in the exponent bits."""
    return te.reinterpret("float32", (n + 127) * (1 << 23))


def _is_nan(x: Expr) -> Expr:
    return te.not_equal(x, x)


def exp(x: ExprLike, flush: bool = False, nonpositive: bool = False) -> Expr:
    """e^x: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite), e^r by a polynomial,
    2^n split in two factors so results reach the subnormals and overflow to inf
    as numpy's do.

    With `flush`, 0 below e^`EXP_NORMAL_LO` instead of a subnormal: where the
    result only adds to or scales sums of order 1 (softmax's exponentials), a
    subnormal changes nothing but the time. Arithmetic producing subnormals
    takes a microcode assist on x86: a masked row of scores (BERT's -10000,
    a causal -inf) made softmax 2.1x slower on Zen 5 (22.4 against 10.6 us).

    With `nonpositive` (and `flush`), the caller knows x <= 0 or NaN (a
    softmax's x - max): no upper clamp, and 2^n one factor (n >= -126), five
    operations fewer, the same bits (ViT-B/16's 12 x 197 x 197 softmax 78.9
    -> 70.6 us on Zen 5).
    """
    x = as_expr(x, "float32")
    lo = EXP_NORMAL_LO if flush else EXP_LO
    if nonpositive and not flush:
        raise EmberValueError("fastmath.exp: nonpositive needs flush (n >= -126)")
    clamped = te.select(x > lo, x, lo)
    if not nonpositive:
        clamped = te.select(clamped < EXP_HI, clamped, EXP_HI)
    nf = (clamped * LOG2E + ROUND) - ROUND
    r = clamped - nf * LN2_HI
    r = r - nf * LN2_LO
    p = 1.0 + r + r * r * horner(r, EXP_Q)
    n = nf.astype("int32")
    if nonpositive:
        result = p * _pow2(n)
    else:
        half = n // 2
        result = p * _pow2(half) * _pow2(n - half)
    if flush:
        result = te.select(x < lo, 0.0, result)
    return te.select(_is_nan(x), x, result)


def sigmoid(x: ExprLike) -> Expr:
    """1 / (1 + e^-x); 0 toward -inf (e^-x overflows to inf), 1 toward +inf."""
    x = as_expr(x, "float32")
    return 1.0 / (1.0 + exp(0.0 - x))


def tanh(x: ExprLike) -> Expr:
    """An odd polynomial near 0 (no cancellation), 1 - 2 / (e^2|x| + 1) with
    x's sign elsewhere."""
    x = as_expr(x, "float32")
    a = te.abs(x)
    x2 = x * x
    small = x + x * x2 * horner(x2, TANH_Q)
    large = 1.0 - 2.0 / (exp(a * 2.0) + 1.0)
    large = te.select(x < 0.0, 0.0 - large, large)
    return te.select(a < TANH_SMALL, small, large)


def _erf_parts(x: Expr, x2: Expr | None = None) -> tuple[Expr, Expr, Expr]:
    """(|x|, x p(x^2), e^(-x^2) g(1/|x|)): erf(x) is the second for |x| < 1,
    else +-(1 - the third) with x's sign. `x2` is x^2 when the caller has it
    more exactly."""
    a = te.abs(x)
    x2 = x * x if x2 is None else x2
    small = x * horner(x2, ERF_P)
    ac = te.select(a > ERF_CLAMP, ERF_CLAMP, a)  # NaN stays NaN
    tail = exp(0.0 - x2) * horner(1.0 / ac, ERF_G)
    return a, small, tail


def erf(x: ExprLike) -> Expr:
    """x P(x^2) / Q(x^2), x clamped to +-3.92, +-1 beyond: 13 multiply-adds
    and a division where the series near 0 and the e^(-x^2) tail beyond 1
    (as `gelu` still computes, for its negative tail) took 40 operations;
    a GELU epilogue on a 128 x 256 x 1024 matmul cost 24 us more than the
    matmul, now 13 (Zen 5)."""
    x = as_expr(x, "float32")
    big = x > ERF_RATIONAL_CLAMP
    small = x < -ERF_RATIONAL_CLAMP  # NaN is neither: it stays NaN
    xc = te.select(big, ERF_RATIONAL_CLAMP, te.select(small, -ERF_RATIONAL_CLAMP, x))
    s = xc * xc
    r = xc * horner(s, ERF_RATIONAL_P) / horner(s, ERF_RATIONAL_Q)
    return te.select(big, 1.0, te.select(small, -1.0, r))


def gelu(x: ExprLike) -> Expr:
    """x/2 (1 + erf(x / sqrt 2)), ONNX's Gelu. Below x = -sqrt 2, 1 + erf is
    the tail e^(-z^2) g itself, so the result keeps its relative accuracy
    (about z^2 ulp, from rounding z^2 = x^2 / 2) where the formula evaluated
    as written would cancel to 0."""
    x = as_expr(x, "float32")
    z = x * SQRT1_2
    a, small, tail = _erf_parts(z, x * x * 0.5)
    outer = te.select(z < 0.0, tail, 2.0 - tail)
    return 0.5 * x * te.select(a < ERF_MID, 1.0 + small, outer)
