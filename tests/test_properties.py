"""Properties over random shapes: compiled kernels agree with numpy."""

import functools

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


# Random elementwise expressions over two inputs, drawn as trees and read twice:
# as a te expression and as the numpy computation it must equal. Inputs are small
# integers (and NaN in floats), so float arithmetic rounds as numpy's does and
# comparisons never hinge on an ulp.
ARITHMETIC = {
    "add": (lambda x, y: x + y, np.add),
    "sub": (lambda x, y: x - y, np.subtract),
    "mul": (lambda x, y: x * y, np.multiply),
    "max": (te.max, np.maximum),
    "min": (te.min, np.minimum),
}
RELATIONS = {
    "lt": (lambda x, y: x < y, np.less),
    "le": (lambda x, y: x <= y, np.less_equal),
    "gt": (lambda x, y: x > y, np.greater),
    "ge": (lambda x, y: x >= y, np.greater_equal),
    "eq": (lambda x, y: x == y, np.equal),
    "ne": (te.not_equal, np.not_equal),
}


@functools.cache
def _values(depth):
    """Value trees of at most `depth` levels: leaves A, B and constants; arithmetic,
    select / if_then_else on a condition, a condition cast to the dtype."""
    leaves = st.one_of(
        st.just(("A",)), st.just(("B",)), st.integers(-3, 3).map(lambda c: ("c", c))
    )
    if depth == 0:
        return leaves
    inner, conditions = _values(depth - 1), _conditions(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(st.sampled_from(sorted(ARITHMETIC)), inner, inner),
        st.tuples(st.sampled_from(["select", "if"]), conditions, inner, inner),
        st.tuples(st.just("astype"), conditions),
    )


@functools.cache
def _conditions(depth):
    """Condition trees: comparisons of values, te.all / te.any / ~ of conditions."""
    relations = st.tuples(
        st.sampled_from(sorted(RELATIONS)), _values(depth), _values(depth)
    )
    if depth == 0:
        return relations
    inner = _conditions(depth - 1)
    return st.one_of(
        relations,
        st.tuples(st.sampled_from(["all", "any"]), inner, inner),
        st.tuples(st.just("not"), inner),
    )


def _te(tree, A, B, i, dtype):
    kind, *args = tree
    sub = [_te(a, A, B, i, dtype) if isinstance(a, tuple) else a for a in args]
    if kind in ("A", "B"):
        return (A if kind == "A" else B)[i]
    if kind == "c":
        return te.const(args[0], dtype)
    if kind in ARITHMETIC:
        return ARITHMETIC[kind][0](*sub)
    if kind in RELATIONS:
        return RELATIONS[kind][0](*sub)
    if kind in ("all", "any"):
        return getattr(te, kind)(*sub)
    if kind == "not":
        return ~sub[0]
    if kind == "astype":
        return sub[0].astype(dtype)
    return (te.select if kind == "select" else te.if_then_else)(*sub)


def _numpy(tree, a, b, dtype):
    kind, *args = tree
    sub = [_numpy(x, a, b, dtype) if isinstance(x, tuple) else x for x in args]
    if kind in ("A", "B"):
        return a if kind == "A" else b
    if kind == "c":
        return np.array(args[0], dtype)
    if kind in ARITHMETIC:
        return ARITHMETIC[kind][1](*sub)
    if kind in RELATIONS:
        return RELATIONS[kind][1](*sub)
    if kind in ("all", "any"):
        return (np.logical_and if kind == "all" else np.logical_or)(*sub)
    if kind == "not":
        return np.logical_not(sub[0])
    if kind == "astype":
        return sub[0].astype(dtype)
    return np.where(*sub)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    tree=_values(3),
    dtype=st.sampled_from(["float32", "float16", "int8", "int32"]),
    shape=shapes,
    seed=st.integers(0, 99),
)
def test_random_expressions_with_comparisons_and_selects(tree, dtype, shape, seed):
    A = te.placeholder(shape, dtype=dtype, name="A")
    B = te.placeholder(shape, dtype=dtype, name="B")
    C = te.compute(shape, lambda *i: _te(tree, A, B, i, dtype), name="C", dtype=dtype)
    mod = ember.build(te.create_schedule(C.op), [A, B, C], name="f")
    rng = np.random.default_rng(seed)
    a, b = rng.integers(-3, 4, (2, *shape)).astype(dtype)
    if dtype.startswith("float"):
        a[rng.random(shape) < 0.15] = np.nan
        b[rng.random(shape) < 0.15] = np.nan
    c = np.empty(shape, dtype)
    mod(a, b, c)
    with np.errstate(all="ignore"):
        expected = np.broadcast_to(_numpy(tree, a, b, dtype), shape).astype(dtype)
    np.testing.assert_array_equal(c, expected, err_msg=repr(tree))
