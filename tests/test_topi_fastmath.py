"""The polynomial exp/sigmoid/tanh/erf/gelu of `ember.topi.fastmath` swept
over the float32 range against float64 references: the accuracy its docstring
states, and numpy's special values (overflow, subnormals, inf, NaN)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from topi_util import run_kernel

from ember import te
from ember.topi import elementwise as ew
from ember.topi import fastmath

ERF = np.vectorize(math.erf, otypes=[np.float64])
ERFC = np.vectorize(math.erfc, otypes=[np.float64])
REFERENCES = {
    "exp": np.exp,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "erf": ERF,
    "gelu": lambda x: 0.5 * x * ERFC(-x / np.sqrt(2)),
}
# Largest relative error allowed, in float32 ulps of 1 (2^-23 = 1.19e-7).
ULPS = {"exp": 2, "sigmoid": 3, "tanh": 3, "erf": 3, "gelu": 8}


def sweep() -> np.ndarray:
    """Both signs of magnitudes from 1e-30 to 120, dense where the functions
    change their formula (|x| ~ 0.35, 0.625, 1, 4, 88)."""
    mags = np.concatenate(
        [
            np.geomspace(1e-30, 1e-3, 400),
            np.linspace(1e-3, 12, 6000),
            np.linspace(12, 120, 800),
        ]
    )
    return np.concatenate([mags, -mags, [0.0]]).astype("float32")


def evaluate(fn, a: np.ndarray) -> np.ndarray:
    x = te.placeholder(a.shape, name="x")
    k = ew.injective(te.compute(a.shape, lambda i: fn(x[i]), name="f"), [x])
    return run_kernel(k, a)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_accuracy_over_the_float32_range(name):
    a = sweep()
    got = evaluate(getattr(fastmath, name), a).astype("float64")
    with np.errstate(over="ignore"):
        ref = REFERENCES[name](a.astype("float64"))
    representable = (np.abs(ref) < 3.4e38) & (np.abs(ref) > 1.2e-38)
    rel = np.abs(got - ref)[representable] / np.abs(ref[representable])
    ulps = np.full(a.shape, float(ULPS[name]))
    if name == "gelu":  # e^(-x^2/2) in the tail: x^2/2 rounded costs x^2/2 ulp
        ulps += np.where(a < 0, 0.5 * a.astype("float64") ** 2, 0.0)
    excess = rel / (ulps[representable] * 2.0**-23)
    worst = excess.argmax()
    assert excess[worst] <= 1.0, (name, rel[worst], a[representable][worst])


def test_exp_overflows_and_reaches_subnormals_like_numpy():
    a = np.array([88.7, 88.8, 100.0, -87.0, -95.0, -103.0, -104.0, -200.0], "float32")
    got = evaluate(fastmath.exp, a)
    with np.errstate(over="ignore"):
        expected = np.exp(a)
    assert np.isinf(got[1:3]).all() and np.isinf(expected[1:3]).all()
    np.testing.assert_allclose(got[[0, 3]], expected[[0, 3]], rtol=3e-7)
    # subnormals keep their few bits of precision, then flush to 0 as numpy
    np.testing.assert_allclose(got[4:], expected[4:], rtol=1e-2, atol=0)
    assert got[-1] == 0.0


def test_exp_flush_gives_zero_not_subnormals():
    a = np.array([-86.9, -87.5, -95.0, -200.0, -np.inf, 0.0, -1.0, np.nan], "float32")
    got = evaluate(lambda v: fastmath.exp(v, flush=True), a)
    np.testing.assert_allclose(got[[0, 5, 6]], np.exp(a[[0, 5, 6]]), rtol=3e-7)
    np.testing.assert_array_equal(got[1:5], 0.0)
    assert np.isnan(got[-1])
    normal = got[got != 0]
    assert (np.abs(normal[~np.isnan(normal)]) >= np.finfo("float32").tiny).all()


def test_exp_of_nonpositive_arguments_is_the_same_bits():
    """A softmax's exp(x - max): one scale 2^n instead of two, no upper clamp."""
    a = np.concatenate(
        [
            -np.geomspace(1e-8, 120, 4001, dtype="float32"),
            np.array([0.0, -0.0, -np.inf, np.nan], "float32"),
        ]
    )
    full = evaluate(lambda v: fastmath.exp(v, flush=True), a)
    short = evaluate(lambda v: fastmath.exp(v, flush=True, nonpositive=True), a)
    np.testing.assert_array_equal(short.view("uint32"), full.view("uint32"))
    with pytest.raises(ValueError, match="nonpositive needs flush"):
        fastmath.exp(te.const(-1.0), nonpositive=True)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_special_values(name):
    a = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], "float32")
    got = evaluate(getattr(fastmath, name), a)
    with np.errstate(all="ignore"):
        expected = REFERENCES[name](a.astype("float64")).astype("float32")
    np.testing.assert_array_equal(got, expected)


def test_horner_is_the_polynomial():
    a = np.linspace(-2, 2, 33, dtype="float32")
    got = evaluate(lambda v: fastmath.horner(v, (1.0, -2.0, 0.5, 3.0)), a)
    np.testing.assert_allclose(
        got, 1 - 2 * a + 0.5 * a**2 + 3 * a**3, rtol=1e-6, atol=1e-6
    )


def test_reinterpret_reads_the_bits():
    # te.reinterpret (arith.bitcast) is how exp builds 2^n in the exponent bits
    a = np.array([1.0, -2.5, 0.0, np.inf], "float32")
    x = te.placeholder(a.shape, name="x")
    bits = te.compute(
        a.shape, lambda i: te.reinterpret("int32", x[i]) + (1 << 23), name="b"
    )
    k = ew.injective(
        te.compute(a.shape, lambda i: te.reinterpret("float32", bits[i]), name="f"), [x]
    )
    np.testing.assert_array_equal(
        run_kernel(k, a), (a.view("int32") + (1 << 23)).view("float32")
    )
    with pytest.raises(TypeError, match="expected float32 and int64 of one bit width"):
        te.reinterpret("int64", x[0])
