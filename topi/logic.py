"""The dtype ops' scalar computations (`dialects/graph_dtype.py`) that are more
than one te operator: shifts, sign, mod, cast and bitcast
(`strategy/logic.py` registers them, and the comparisons, logic and bitwise
ops that te's operators are).

    mod(x, y, fmod=False)    x % y (numpy's), x - trunc(x / y) * y with fmod (C's)
    cast(x, "bool")          x != 0 (NaN is true, as numpy and onnxruntime)
"""

from __future__ import annotations

import math

import numpy as np

from ember import te
from ember.te import Expr


def shift(x: Expr, y: Expr, left: bool) -> Expr:
    """x << y or x >> y, where a shift outside [0, bits) (LLVM's poison) is
    what ONNX's BitShift says: the sign fill of a right shift, else 0."""
    bits = np.iinfo(x.dtype).bits
    unsigned = x.dtype in te.UNSIGNED_DTYPES
    inside = (y < bits) if unsigned else (y >= 0) & (y < bits)
    amount = te.select(inside, y, 0)
    if left:
        return te.select(inside, x << amount, 0)
    fill = te.const(0, x.dtype) if unsigned else x >> (bits - 1)
    return te.select(inside, x >> amount, fill)


def sign(x: Expr) -> Expr:
    """-1, 0 or 1 by the sign of x (0 and NaN stay)."""
    if x.dtype in te.UNSIGNED_DTYPES:
        return te.select(x > 0, 1, x)
    return te.select(x > 0, 1, te.select(x < 0, -1, x))


def mod(a: Expr, b: Expr, c_fmod: bool) -> Expr:
    """numpy's mod (the divisor's sign), or with `c_fmod` C's fmod (the
    dividend's sign; unsigned integers have one)."""
    if a.dtype in te.INT_DTYPES:
        if not c_fmod or a.dtype in te.UNSIGNED_DTYPES:
            return a % b
        return a - (a / b) * b  # `/` truncates
    r = fmod(a, b)
    if c_fmod:
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


def cast(x: Expr, to: str) -> Expr:
    """x converted to dtype `to`; to bool, x != 0 (NaN is true)."""
    if to == "bool" and x.dtype != "bool":
        return te.not_equal(x, 0)
    if (x.dtype, to) == ("float64", "float16"):
        return _narrow_to_half(x)
    return x.astype(to)


def bitcast(x: Expr, source: str, to: str) -> Expr:
    """x, of dtype `source`, reinterpreted as `to`: integers (and bools, a
    byte) of one width are one signless value; a float's bits are
    reinterpreted."""
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
