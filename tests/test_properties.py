"""Properties over random shapes: compiled kernels agree with numpy."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import te

shapes = st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple)
SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

ELEMENTWISE = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub-mul": (lambda a, b: (a - b) * a, lambda a, b: (a - b) * a),
    "max": (lambda a, b: te.max(a, b), np.maximum),
    "div": (lambda a, b: a / (b * b + 1.0), lambda a, b: a / (b * b + 1.0)),
}


@SETTINGS
@given(shape=shapes, op=st.sampled_from(sorted(ELEMENTWISE)), seed=st.integers(0, 99))
def test_elementwise_on_random_shapes(shape, op, seed):
    expr, reference = ELEMENTWISE[op]
    A = te.placeholder(shape, name="A")
    B = te.placeholder(shape, name="B")
    C = te.compute(shape, lambda *i: expr(A[i], B[i]), name="C")
    mod = ember.build(te.create_schedule(C.op), [A, B, C], name="f")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype("float32")
    b = rng.standard_normal(shape).astype("float32")
    c = np.empty(shape, "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, reference(a, b), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(
    shape=st.lists(st.integers(1, 12), min_size=2, max_size=3).map(tuple),
    combiner=st.sampled_from(["sum", "max", "min"]),
    seed=st.integers(0, 99),
)
def test_reduction_over_last_axis(shape, combiner, seed):
    *outer, inner = shape
    A = te.placeholder(shape, name="A")
    r = te.reduce_axis((0, inner), name="r")
    fn = {"sum": te.sum, "max": te.max, "min": te.min}[combiner]
    R = te.compute(outer, lambda *i: fn(A[(*i, r)], axis=r), name="R")
    mod = ember.build(te.create_schedule(R.op), [A, R], name="reduce")
    a = np.random.default_rng(seed).standard_normal(shape).astype("float32")
    out = np.empty(outer, "float32")
    mod(a, out)
    expected = getattr(a, combiner)(axis=-1)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@SETTINGS
@given(
    n=st.integers(1, 17),
    m=st.integers(1, 17),
    k=st.integers(1, 17),
    seed=st.integers(0, 99),
)
def test_matmul_on_random_shapes(n, m, k, seed):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    mod = ember.build(te.create_schedule(C.op), [A, B, C], name="matmul")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal((k, m)).astype("float32")
    c = np.empty((n, m), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)
