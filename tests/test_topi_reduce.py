"""topi reductions, softmax and layer norm against numpy (float64 references):
every axis pattern (innermost kept or reduced, several axes, all axes),
keepdims, rows that 16 lanes do not divide, NaN/inf, large softmax inputs, a
computed input (the imported layer-norm pattern), and the schedules' shape."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from topi_util import close, rand, run_kernel

import ember
from ember import te
from ember.topi import elementwise as ew
from ember.topi import reduce as rd

NUMPY = {"sum": np.sum, "mean": np.mean, "max": np.max}


@pytest.mark.parametrize("kind", ["sum", "mean", "max"])
@pytest.mark.parametrize(
    ("shape", "axes", "keepdims"),
    [
        ((4, 64, 64), [-1], True),  # the innermost axis, a multiple of 16
        ((3, 37), [1], False),  # 37 = 2 x 16 + 5: guarded lanes
        ((2, 3, 5, 7), [1], False),  # innermost kept
        ((2, 3, 5, 7), [0, 2], True),
        ((2, 3, 5, 7), [2, 3], True),  # spatial, as global pooling
        ((2, 3, 5, 37), [1, 3], False),  # innermost and another
        ((3, 5), None, False),  # everything: a scalar
        ((2, 3, 4), [], True),  # [] is every axis, as graph.reduce_* says
        ((6,), [0], True),
        ((2, 1030), [-1], False),  # a long row: 64 partials, 6 guarded
    ],
)
def test_reduce_matches_numpy(kind, shape, axes, keepdims):
    a = rand(*shape)
    x = te.placeholder(shape, name="x")
    k = rd.reduce(x, kind, axes, keepdims)
    axis = tuple(axes) if axes else None
    expected = NUMPY[kind](a.astype("float64"), axis=axis, keepdims=keepdims)
    assert k.output.shape == expected.shape
    # a float32 sum of terms that cancel is exact up to the size of the terms
    scale = NUMPY[kind](np.abs(a).astype("float64"), axis=axis, keepdims=keepdims)
    error = np.abs(run_kernel(k, a) - expected)
    assert np.all(error <= 1e-6 + (0 if kind == "max" else 4e-6 * scale))


def test_reduce_max_propagates_nan_and_keeps_inf():
    a = rand(3, 40)
    a[0, 17] = np.nan
    a[1, 39] = np.inf
    a[2, :] = -np.inf
    x = te.placeholder(a.shape, name="x")
    got = run_kernel(rd.reduce(x, "max", [1], False), a)
    np.testing.assert_array_equal(got, np.max(a, axis=1))


def test_reduce_with_computed_input_the_layer_norm_pattern():
    # reduce_mean(pow(x - mean, 2)) as imported, mean a kernel input
    a = rand(2, 8, 48)
    m = a.mean(axis=-1, keepdims=True).astype("float32")
    x, mean = te.placeholder(a.shape, name="x"), te.placeholder(m.shape, name="m")
    sq = ew.power(ew.sub(x, mean), 2.0)
    k = rd.reduce(sq, "mean", [-1], True, placeholders=[x, mean])
    text = str(
        ember.passes.run(
            ember.lower(k.schedule(), k.args, name="f", emit="te"), "convert-te-to-loop"
        )
    )
    assert not re.search(r"loop.alloc .*memref<2x8x48xf32>", text)  # inlined
    close(run_kernel(k, a, m), ((a - m) ** 2).mean(axis=-1, keepdims=True))
    with pytest.raises(ValueError, match="pass the kernel's placeholders"):
        rd.reduce(sq, "mean", [-1])


@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((4, 64, 64), -1),
        ((2, 10, 3, 3), 1),
        ((3, 37), 1),
        ((5, 4), 0),
        ((2, 1500), -1),
        ((37,), 0),
    ],
)
def test_softmax_matches_numpy(shape, axis):
    a = rand(*shape) * 10
    x = te.placeholder(shape, name="x")
    ref = np.exp(a - a.max(axis=axis, keepdims=True).astype("float64"))
    ref /= ref.sum(axis=axis, keepdims=True)
    close(run_kernel(rd.softmax(x, axis), a), ref)


def test_softmax_of_large_values_is_stable():
    a = np.array(
        [[1000.0, 1001.0, 1002.0], [-1e30, 0.0, 1e30], [88.0, 89.0, 90.0]], "float32"
    )
    a = np.concatenate([a, np.zeros((3, 13), "float32") - np.inf], axis=1)
    x = te.placeholder(a.shape, name="x")
    got = run_kernel(rd.softmax(x, -1), a)
    ref = np.exp(a - a.max(axis=-1, keepdims=True))
    ref /= ref.sum(axis=-1, keepdims=True)
    assert np.isfinite(got).all()
    close(got, ref)


def test_softmax_of_masked_scores_has_zeros_not_subnormals():
    # BERT's additive mask (-10000) and a causal -1e9: numpy's exponentials of
    # those are 0 or subnormal; the kernel's are 0 (no slow subnormal arithmetic)
    a = rand(3, 40)
    a[0, 20:] -= 10000.0
    a[1, 5:] = -1e9
    a[2, :] = np.linspace(-100.0, 0.0, 40)  # e^-100 .. e^-87: numpy's subnormals
    x = te.placeholder(a.shape, name="x")
    got = run_kernel(rd.softmax(x, -1), a)
    ref = np.exp(a.astype("float64") - a.max(axis=-1, keepdims=True))
    ref /= ref.sum(axis=-1, keepdims=True)
    close(got, ref)
    assert ((got == 0) | (got >= np.finfo("float32").tiny)).all()
    assert (got[0, 20:] == 0).all() and (got[1, 5:] == 0).all()


def test_softmax_rows_of_minus_inf_are_nan_like_numpy():
    a = np.full((2, 5), -np.inf, "float32")
    a[1] = [1, 2, 3, 4, np.nan]
    x = te.placeholder(a.shape, name="x")
    got = run_kernel(rd.softmax(x, -1), a)
    assert np.isnan(got).all()  # numpy: exp(-inf - -inf) is NaN; NaN spreads


def test_softmax_schedule_computes_rows_inside_the_parallel_loop():
    x = te.placeholder((4, 64, 64), name="x")
    k = rd.softmax(x, -1)
    text = str(ember.lower(k.schedule(), k.args, name="f", emit="te"))
    assert text.count("te.compute_at") == 5  # max, its partials, exp, sum, its partials
    assert "te.parallel" in text


def test_layer_norm_matches_numpy():
    a, g, b = rand(2, 5, 72), rand(72), rand(72)
    x = te.placeholder(a.shape, name="x")
    gamma, beta = te.placeholder((72,), name="g"), te.placeholder((72,), name="b")
    k = rd.layer_norm(x, gamma, beta, epsilon=1e-5)
    ref = (a - a.mean(-1, keepdims=True)) / np.sqrt(
        a.var(-1, keepdims=True) + 1e-5
    ) * g + b
    close(run_kernel(k, a, g, b), ref)
    close(
        run_kernel(rd.layer_norm(x), a),
        (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5),
    )


def test_bad_axes_are_named():
    x = te.placeholder((2, 3), name="x")
    with pytest.raises(
        ValueError, match=r"expected distinct axes in \[-2, 2\), got \[2\]"
    ):
        rd.reduce(x, "sum", [2])
    with pytest.raises(ValueError, match="expected sum, mean, max or prod, got 'min'"):
        rd.reduce(x, "min", [0])


@st.composite
def reduce_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 40), min_size=1, max_size=4)))
    axes = draw(
        st.lists(
            st.integers(-len(shape), len(shape) - 1),
            unique_by=lambda a: a % len(shape),
            max_size=len(shape),
        )
    )
    return shape, axes, draw(st.booleans()), draw(st.sampled_from(sorted(NUMPY)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reduce_cases(), st.integers(0, 2**32 - 1))
def test_property_reductions_match_numpy(case, seed):
    shape, axes, keepdims, kind = case
    # Data from the drawn seed, so a failing example replays exactly.
    a = np.random.default_rng(seed).uniform(-2, 2, shape).astype("float32")
    x = te.placeholder(shape, name="x")
    axis = tuple(axes) if axes else None
    expected = NUMPY[kind](a.astype("float64"), axis=axis, keepdims=keepdims)
    got = run_kernel(rd.reduce(x, kind, axes, keepdims), a)
    # A float32 sum of terms that cancel is exact only up to the size of the
    # terms: the bound is relative to the same reduction of |a|, not to the result.
    scale = NUMPY[kind](np.abs(a).astype("float64"), axis=axis, keepdims=keepdims)
    bound = 1e-6 if kind == "max" else 4e-6 * scale
    assert np.all(np.abs(got - expected) <= bound), (shape, axes, kind)
