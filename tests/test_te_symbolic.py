"""te kernels over symbolic sizes (issue 25): a `te.var` in shapes, reduce
axes and bodies compiles once, and the library runs at every size its callers
give, matching numpy; a schedule's splits, tails, vectorized and parallel
loops, attached stages and intermediates of symbolic shape included. What a
schedule cannot do with a symbolic loop, and calls whose shapes disagree, are
refused with messages naming the loop or the argument."""

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.utils.exceptions import PassFailedException

import ember
from ember import te
from ember.runtime import EmberError

SIZES = [(1, 1), (7, 13), (8, 16), (13, 3), (32, 24), (0, 5), (3, 0)]
"""(n, m) pairs: ones, primes, multiples of the split factors (4 and 8), and
empty tensors on either side."""


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def row_sums_and_reverse(n, m):
    """A (n, m), its row sums S, and R[i, j] = A[n - 1 - i, j] + S[i]."""
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="S")
    R = te.compute((n, m), lambda i, j: A[n - 1 - i, j] + S[i], name="R")
    return A, S, R


def reverse_reference(a: np.ndarray) -> np.ndarray:
    return a[::-1] + a.sum(axis=1, keepdims=True)


@functools.cache
def reverse_kernel(attach: str | None):
    """The two-symbol kernel, R tiled 4 x 8 with a parallel outer and a
    vectorized inner loop; S attached at `attach` of R ('i.outer',
    'i.inner') or left at the root (a heap buffer of n floats)."""
    n, m = te.var("n"), te.var("m")
    A, S, R = row_sums_and_reverse(n, m)
    s = te.create_schedule(R.op)
    io, ii = s[R].split(R.op.axis[0], factor=4)
    jo, ji = s[R].split(R.op.axis[1], factor=8)
    s[R].reorder(io, ii, jo, ji)
    s[R].parallel(io)
    s[R].vectorize(ji)
    if attach is not None:
        s[S].compute_at(s[R], {"i.outer": io, "i.inner": ii}[attach])
    return ember.build(s, [A, R])


@pytest.mark.parametrize("attach", [None, "i.outer", "i.inner"])
@pytest.mark.parametrize("n, m", SIZES)
def test_two_symbols_a_reversed_read_and_a_reduction(attach, n, m):
    """One library per schedule runs every (n, m): S at the root is a heap
    buffer of symbolic size read by the outlined parallel loop; attached, it
    is a small stack buffer per iteration of a symbolic loop."""
    f = reverse_kernel(attach)
    a, r = rand(n, m, seed=n * 31 + m), np.full((n, m), np.nan, "float32")
    f(a, r)
    np.testing.assert_allclose(r, reverse_reference(a), rtol=1e-5, atol=1e-5)


@functools.cache
def elementwise_kernel():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    jo, ji = s[B].split(B.op.axis[1], factor=8)
    s[B].reorder(io, jo, ii, ji)
    s[B].parallel(io)
    s[B].vectorize(ji)
    return ember.build(s, [A, B])


@pytest.mark.parametrize("n, m", SIZES)
def test_elementwise_with_split_tails(n, m):
    """Splits by 4 and 8 that divide neither size guard their tails; the
    vectorized loop keeps its masked (scalar) tail."""
    a, b = rand(n, m, seed=n + m), np.full((n, m), np.nan, "float32")
    elementwise_kernel()(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


@functools.cache
def reduction_kernel():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="S")
    M = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="M")
    s = te.create_schedule([S.op, M.op])
    ko, ki = s[S].split(S.op.reduce_axis[0], factor=4)
    s[S].reorder(ko, S.op.axis[0], ki)
    return ember.build(s, [A, S, M])


@pytest.mark.parametrize("n, m", [(1, 1), (7, 13), (8, 16), (13, 3), (0, 5)])
def test_reduction_over_a_symbolic_axis(n, m):
    """The reduce axis is split by 4 with a guarded tail and moved outside
    the spatial loop."""
    a = rand(n, m, seed=m)
    s, mx = np.empty(n, "float32"), np.empty(n, "float32")
    reduction_kernel()(a, s, mx)
    np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(mx, a.max(axis=1, initial=-np.inf))


def test_a_reduction_over_nothing_is_its_identity():
    s, mx = np.full(3, np.nan, "float32"), np.full(3, np.nan, "float32")
    reduction_kernel()(np.empty((3, 0), "float32"), s, mx)
    np.testing.assert_array_equal(s, 0)
    np.testing.assert_array_equal(mx, -np.inf)


K, M = 24, 20


@functools.cache
def matmul_kernel():
    """(n, 24) x (24, 20), n symbolic, tiled 4 x 8 (20 is no multiple of 8)
    with k split by 4, the outer tile loop parallel, the inner vectorized."""
    n = te.var("n")
    A = te.placeholder((n, K), name="A")
    B = te.placeholder((K, M), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((n, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 8)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].parallel(io)
    s[C].vectorize(ji)
    return ember.build(s, [A, B, C])


@pytest.mark.parametrize("n", [1, 7, 8, 13, 64, 0])
def test_tiled_matmul_with_a_symbolic_row_count(n):
    a, b = rand(n, K, seed=n), rand(K, M, seed=1)
    c = np.full((n, M), np.nan, "float32")
    matmul_kernel()(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@functools.cache
def chain_kernel():
    """Two intermediates of symbolic shape at the root, one of an expression
    (`n + 2` rows: a padded copy), read by a vectorized and a parallel loop."""
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    P = te.compute(
        (n + 2, 8),
        lambda i, j: te.if_then_else(
            te.all(i >= 1, i <= n), A[te.min(te.max(i - 1, 0), n - 1), j], 0.0
        ),
        name="P",
    )
    T = te.compute((n, 8), lambda i, j: P[i, j] + P[i + 1, j] + P[i + 2, j], name="T")
    B = te.compute((n, 8), lambda i, j: T[i, j] * 0.5, name="B")
    s = te.create_schedule(B.op)
    s[T].vectorize(T.op.axis[1])
    s[B].parallel(B.op.axis[0])
    return ember.build(s, [A, B])


@pytest.mark.parametrize("n", [1, 2, 5, 16, 0])
def test_symbolic_intermediates_at_the_root(n):
    a, b = rand(n, 8, seed=n), np.full((n, 8), np.nan, "float32")
    chain_kernel()(a, b)
    p = np.pad(a, ((1, 1), (0, 0)))
    np.testing.assert_allclose(b, (p[:-2] + p[1:-1] + p[2:]) * 0.5, rtol=1e-5)


@functools.cache
def fused_kernel():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] - 1.0, name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(B.op.axis[0], B.op.axis[1])
    s[B].parallel(fused)
    return ember.build(s, [A, B])


@pytest.mark.parametrize("n, m", [(1, 1), (7, 13), (0, 4), (5, 0)])
def test_a_fuse_of_two_symbolic_loops(n, m):
    """One loop over n * m, its indices recovered by dividing by m."""
    a, b = rand(n, m), np.full((n, m), np.nan, "float32")
    fused_kernel()(a, b)
    np.testing.assert_array_equal(b, a - 1)


# --- schedules drawn at random ---------------------------------------------------


@functools.cache
def drawn_kernel(fi: int, fj: int, order: tuple[int, ...], attach: int, vector: bool):
    n, m = te.var("n"), te.var("m")
    A, S, R = row_sums_and_reverse(n, m)
    s = te.create_schedule(R.op)
    io, ii = s[R].split(R.op.axis[0], factor=fi)
    jo, ji = s[R].split(R.op.axis[1], factor=fj)
    loops = [io, ii, jo, ji]
    s[R].reorder(*(loops[k] for k in order))
    if vector and order[-1] == 3:
        s[R].vectorize(ji)
    if attach < 2:
        s[S].compute_at(s[R], [io, ii][attach])
    return ember.build(s, [A, R])


orders = st.permutations(range(4)).map(tuple).filter(lambda o: o.index(0) < o.index(1))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fi=st.sampled_from([1, 3, 4]),
    fj=st.sampled_from([2, 8]),
    order=orders,
    attach=st.integers(0, 2),
    vector=st.booleans(),
    sizes=st.lists(st.tuples(st.integers(0, 19), st.integers(0, 19)), min_size=3),
)
def test_random_schedules_match_numpy_at_random_sizes(
    fi, fj, order, attach, vector, sizes
):
    """Splits, orders, attach points (io, ii or the root) and vectorizing
    change how the kernel runs, never what it computes, at any size."""
    f = drawn_kernel(fi, fj, order, attach, vector)
    for n, m in sizes[:4]:
        a, r = rand(n, m, seed=n * 20 + m), np.full((n, m), np.nan, "float32")
        f(a, r)
        np.testing.assert_allclose(r, reverse_reference(a), rtol=1e-5, atol=1e-5)


# --- refusals --------------------------------------------------------------------


def test_a_wrong_shape_names_the_argument_and_its_symbolic_shape():
    f = elementwise_kernel()
    with pytest.raises(
        EmberError,
        match=r"argument 1 \(B\): expected float32 tensor of shape \(n, m\); "
        r"got float32 tensor of shape \(3, 5\)",
    ):
        f(np.zeros((3, 4), "float32"), np.zeros((3, 5), "float32"))


def test_a_symbol_two_arguments_disagree_on_is_refused():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    C = te.placeholder((m, 4), name="C")
    D = te.compute((n, m), lambda i, j: A[i, j] + C[j, 0], name="D")
    f = ember.build(te.create_schedule(D.op), [A, C, D])
    a, d = np.zeros((3, 4), "float32"), np.zeros((3, 4), "float32")
    with pytest.raises(
        EmberError, match=r"argument 1 \(C\): expected float32 tensor of shape \(m, 4\)"
    ):
        f(a, np.zeros((5, 4), "float32"), d)


def _symbolic_copy():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    return A, B, te.create_schedule(B.op)


def test_unrolling_a_symbolic_loop_is_refused():
    A, B, s = _symbolic_copy()
    s[B].unroll(B.op.axis[0])
    with pytest.raises(
        PassFailedException,
        match="te.unroll: loop 'i' of stage 'B' has the symbolic extent n; split "
        "it by a factor",
    ):
        ember.build(s, [A, B])


def test_a_split_into_parts_of_a_symbolic_loop_is_refused():
    A, B, s = _symbolic_copy()
    s[B].split(B.op.axis[0], nparts=4)
    with pytest.raises(
        PassFailedException,
        match=r"te.split of 'i' of stage 'B' makes a loop of symbolic extent "
        r"\(n \+ 3\) // 4 that others step by",
    ):
        ember.build(s, [A, B])


def test_an_attached_stage_spanning_a_symbolic_extent_gets_a_row_buffer():
    """Attached at row `i`, T's region is a row of `m` columns: a local
    buffer of symbolic size, one heap buffer per function reused by every
    row (and per thread when the rows run in parallel)."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    T = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="T")
    B = te.compute((n, m), lambda i, j: T[i, m - 1 - j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[T].compute_at(s[B], B.op.axis[0])
    s[B].parallel(B.op.axis[0])
    assert "loop.alloc local(%m)" in str(ember.lower(s, [A, B]))
    f = ember.build(s, [A, B])
    for shape in [(1, 1), (3, 7), (17, 64), (4, 0)]:
        a = np.random.default_rng(0).random(shape, np.float32)
        b = np.empty_like(a)
        f(a, b)
        np.testing.assert_array_equal(b, a[:, ::-1] * 2 + 1)


@pytest.mark.parametrize(
    "target, message",
    [
        ("c", "c: @default_function has buffers of symbolic sizes"),
        ("cuda", r"cuda: @default_function has buffers of symbolic sizes \(memref<\?"),
        ("opencl", "opencl: @default_function has buffers of symbolic sizes"),
    ],
)
def test_source_targets_refuse_symbolic_buffers(target, message):
    """C and GPU sources have no place for a size known only at run time
    (the intermediate is a `loop.alloc(%n)`); they say so and name 'llvm'."""
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    T = te.compute((n, 8), lambda i, j: A[i, j] * 2.0, name="T")
    B = te.compute((n, 8), lambda i, j: T[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    if target != "c":
        s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
        s[T].bind(T.op.axis[0], te.thread_axis("blockIdx.x"))
    with pytest.raises(ValueError, match=message + ".*build it for 'llvm'"):
        ember.build(s, [A, B], target=target)


# --- static kernels --------------------------------------------------------------


def test_a_static_kernel_lowers_as_before():
    """Symbolic support adds nothing to a static kernel's loops: no dims, no
    symbols, constant bounds, static buffers."""
    A, S, R = row_sums_and_reverse(12, 16)
    s = te.create_schedule(R.op)
    io, ii = s[R].split(R.op.axis[0], factor=4)
    s[R].parallel(io)
    text = str(ember.lower(s, [A, R]))
    for absent in ("ember.dims", "ember.symbol", "?x", "<?", "loop.alloc("):
        assert absent not in text
    assert "loop.alloc : memref<12xf32>" in text
