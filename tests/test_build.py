"""End to end: TE → te IR → loops → llvm → machine code, checked against numpy."""

import numpy as np
import pytest

import ember
from ember import te
from ember.runtime import EmberError


def build(outputs, args, name):
    return ember.build(te.create_schedule([t.op for t in outputs]), args, name=name)


@pytest.fixture(scope="module")
def vecadd():
    A = te.placeholder((1024,), name="A")
    B = te.placeholder((1024,), name="B")
    C = te.compute((1024,), lambda i: A[i] + B[i], name="C")
    return build([C], [A, B, C], "vecadd")


def test_vecadd_matches_numpy(vecadd):
    a = np.random.rand(1024).astype("float32")
    b = np.random.rand(1024).astype("float32")
    c = np.zeros(1024, "float32")
    vecadd(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    d = ember.runtime.empty((1024,), "float32")
    vecadd["vecadd"](ember.runtime.array(a), ember.runtime.array(b), d)
    np.testing.assert_allclose(d.numpy(), a + b, rtol=1e-6)


def test_matmul_matches_numpy():
    n, m, k = 33, 17, 29
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    mod = build([C], [A, B, C], "matmul")
    a = np.random.randn(n, k).astype("float32")
    b = np.random.randn(k, m).astype("float32")
    c = np.empty((n, m), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("combiner", ["max", "min"])
def test_rowwise_max_and_min(combiner):
    A = te.placeholder((37, 53), name="A")
    r = te.reduce_axis((0, 53), name="r")
    fn = te.max if combiner == "max" else te.min
    M = te.compute((37,), lambda i: fn(A[i, r], axis=r), name="M")
    mod = build([M], [A, M], "row" + combiner)
    a = np.random.randn(37, 53).astype("float32")
    out = np.empty(37, "float32")
    mod(a, out)
    np.testing.assert_array_equal(out, getattr(a, combiner)(axis=1))


def test_multi_stage_softmax_numerator():
    X = te.placeholder((8, 16), name="X")
    r = te.reduce_axis((0, 16), name="r")
    M = te.compute((8,), lambda i: te.max(X[i, r], axis=r), name="M")
    E = te.compute((8, 16), lambda i, j: te.exp(X[i, j] - M[i]), name="E")
    mod = build([E], [X, E], "softmax_exp")
    x = np.random.randn(8, 16).astype("float32")
    out = np.empty((8, 16), "float32")
    mod(x, out)
    np.testing.assert_allclose(out, np.exp(x - x.max(1, keepdims=True)), rtol=1e-5)


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "int32", "int64", "int8", "float16"]
)
def test_elementwise_dtypes(dtype):
    A = te.placeholder((64,), dtype=dtype, name="A")
    B = te.placeholder((64,), dtype=dtype, name="B")
    C = te.compute((64,), lambda i: A[i] * B[i] + A[i] - 3, name="C")
    mod = build([C], [A, B, C], "f_" + dtype)
    rng = np.random.default_rng(1)
    if dtype.startswith("int"):
        a = rng.integers(-10, 10, 64).astype(dtype)
        b = rng.integers(-10, 10, 64).astype(dtype)
    else:
        a = rng.standard_normal(64).astype(dtype)
        b = rng.standard_normal(64).astype(dtype)
    c = np.empty(64, dtype)
    mod(a, b, c)
    expected = (a * b + a - np.array(3, dtype)).astype(dtype)
    tol = 1e-2 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol)


def test_integer_floordiv_and_mod_follow_python():
    A = te.placeholder((16,), dtype="int32", name="A")
    Q = te.compute((16,), lambda i: A[i] // 3, name="Q")
    R = te.compute((16,), lambda i: A[i] % 3, name="R")
    a = np.arange(-8, 8, dtype="int32")
    q, r = np.empty(16, "int32"), np.empty(16, "int32")
    build([Q], [A, Q], "fdiv")(a, q)
    build([R], [A, R], "fmod")(a, r)
    np.testing.assert_array_equal(q, a // 3)
    np.testing.assert_array_equal(r, a % 3)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_division_edge_cases_match_numpy_and_never_trap(dtype):
    """Division by 0 gives 0 and MIN // -1 wraps, as in numpy; the hardware would
    raise SIGFPE on both."""
    A = te.placeholder((8,), dtype=dtype, name="A")
    B = te.placeholder((8,), dtype=dtype, name="B")
    low = np.iinfo(dtype).min
    a = np.array([7, -7, low, low, 5, 0, -1, 3], dtype)
    b = np.array([0, 0, -1, 1, -1, 0, -3, 2], dtype)
    for op, reference in [("//", np.floor_divide), ("%", np.remainder)]:
        fn = (lambda x, y: x // y) if op == "//" else (lambda x, y: x % y)
        C = te.compute((8,), lambda i, fn=fn: fn(A[i], B[i]), name="C")
        c = np.empty(8, dtype)
        build([C], [A, B, C], "div")(a, b, c)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(c, reference(a, b), err_msg=op)


def test_wrong_shape_names_the_argument(vecadd):
    a = np.zeros(1024, "float32")
    with pytest.raises(EmberError, match=r"argument 1 \(B\).*1024.*got.*\(64,\)"):
        vecadd(a, np.zeros(64, "float32"), a.copy())


def test_wrong_dtype_names_the_argument(vecadd):
    a = np.zeros(1024, "float32")
    with pytest.raises(EmberError, match=r"argument 0 \(A\).*float32.*got.*float64"):
        vecadd(np.zeros(1024, "float64"), a, a.copy())


def test_wrong_argument_count(vecadd):
    a = np.zeros(1024, "float32")
    with pytest.raises(EmberError, match="3 arguments"):
        vecadd(a, a)


def test_wrong_ndim(vecadd):
    a = np.zeros(1024, "float32")
    with pytest.raises(EmberError, match=r"argument 2 \(C\)"):
        vecadd(a, a, np.zeros((32, 32), "float32"))
    # the process survives and the function still works
    c = np.empty(1024, "float32")
    vecadd(a + 1, a + 2, c)
    assert (c == 3).all()


def test_module_sources(vecadd):
    assert "define" in vecadd.get_source("ll")
    assert vecadd.get_source("asm").strip()


def test_build_text_ir():
    text = """
    func.func @double(%A: tensor<8xf32>) -> tensor<8xf32> {
      %B = te.compute "B" (%i) -> tensor<8xf32> {
        %a = te.read %A[%i] : tensor<8xf32>
        %b = arith.addf %a, %a : f32
        te.yield %b : f32
      }
      func.return %B : tensor<8xf32>
    }
    """
    with pytest.raises(
        ValueError, match="no function @triple in the IR; it defines @double"
    ):
        ember.build(text, name="triple")
    mod = ember.build(text, name="double")
    a = np.arange(8, dtype="float32")
    b = np.empty(8, "float32")
    mod["double"](a, b)
    np.testing.assert_array_equal(b, 2 * a)


ALL_DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "bool"]
COMPARE = {
    "lt": (lambda a, b: a < b, np.less),
    "le": (lambda a, b: a <= b, np.less_equal),
    "gt": (lambda a, b: a > b, np.greater),
    "ge": (lambda a, b: a >= b, np.greater_equal),
    "eq": (lambda a, b: a == b, np.equal),
    "ne": (lambda a, b: a != b, np.not_equal),
}


def sample(dtype, shape, rng, nan=False):
    """Values with many ties (so == and != both happen), NaN in float inputs."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    values = rng.integers(-3, 4, shape).astype(dtype)
    if nan and dtype.startswith("float"):
        values[rng.random(shape) < 0.2] = np.nan
    return values


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_comparisons_match_numpy_nan_included(dtype):
    A = te.placeholder((64,), dtype=dtype, name="A")
    B = te.placeholder((64,), dtype=dtype, name="B")
    outs = [
        te.compute((64,), lambda i, fn=fn: fn(A[i], B[i]), name=op)
        for op, (fn, _) in COMPARE.items()
    ]
    mod = build(outs, [A, B, *outs], "cmp_" + dtype)
    rng = np.random.default_rng(3)
    a, b = sample(dtype, 64, rng, nan=True), sample(dtype, 64, rng, nan=True)
    results = [np.empty(64, bool) for _ in outs]
    mod(a, b, *results)
    for (op, (_, reference)), got in zip(COMPARE.items(), results, strict=True):
        np.testing.assert_array_equal(got, reference(a, b), err_msg=op)


def test_logic_on_bools_and_bitwise_on_integers():
    F = te.placeholder((32,), dtype="bool", name="F")
    G = te.placeholder((32,), dtype="bool", name="G")
    N = te.placeholder((32,), dtype="int8", name="N")
    M = te.placeholder((32,), dtype="int32", name="M")
    logic = te.compute(
        (32,),
        lambda i: te.any(te.all(F[i], ~G[i]), te.logical_not(F[i]) ^ G[i]),
        name="L",
    )
    bits8 = te.compute((32,), lambda i: (N[i] & 0x5A) | ~N[i] ^ 3, name="B8")
    bits32 = te.compute((32,), lambda i: M[i] & (M[i] | 12) ^ ~M[i], name="B32")
    mod = build([logic, bits8, bits32], [F, G, N, M, logic, bits8, bits32], "logic")
    rng = np.random.default_rng(4)
    f, g = rng.integers(0, 2, (2, 32)).astype(bool)
    n = rng.integers(-128, 128, 32).astype("int8")
    m = rng.integers(-(2**31), 2**31, 32).astype("int32")
    out = np.empty(32, bool), np.empty(32, "int8"), np.empty(32, "int32")
    mod(f, g, n, m, *out)
    np.testing.assert_array_equal(out[0], (f & ~g) | (np.logical_not(f) ^ g))
    np.testing.assert_array_equal(out[1], (n & 0x5A) | ~n ^ np.int8(3))
    np.testing.assert_array_equal(out[2], m & (m | 12) ^ ~m)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int64"])
def test_padding_with_if_then_else(dtype):
    n, m, pad = 5, 7, 2
    A = te.placeholder((n, m), dtype=dtype, name="A")
    P = te.compute(
        (n + 2 * pad, m + 2 * pad),
        lambda i, j: te.if_then_else(
            te.all(i >= pad, i < n + pad, j >= pad, j < m + pad),
            A[i - pad, j - pad],
            te.const(-1, dtype),
        ),
        name="P",
    )
    mod = build([P], [A, P], "pad_" + dtype)
    a = np.arange(n * m).reshape(n, m).astype(dtype)
    out = np.empty((n + 2 * pad, m + 2 * pad), dtype)
    mod(a, out)
    np.testing.assert_array_equal(out, np.pad(a, pad, constant_values=-1))


def test_padding_never_reads_outside_the_input():
    """The input sits between two inaccessible pages: a read one element before
    or after it would fault, killing the child process."""
    script = """
import ctypes, mmap
import numpy as np
import ember
from ember import te
page = mmap.PAGESIZE
n = page // 4
buf = mmap.mmap(-1, 3 * page)
base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
libc = ctypes.CDLL(None)
for at in (base, base + 2 * page):
    assert libc.mprotect(ctypes.c_void_p(at), ctypes.c_size_t(page), 0) == 0
a = np.frombuffer(buf, "float32", count=n, offset=page)
a[:] = np.arange(n)
A = te.placeholder((n,), name="A")
P = te.compute((n + 6,), lambda i: te.if_then_else(
    te.all(i >= 3, i < n + 3), A[i - 3], 0.0), name="P")
mod = ember.build(te.create_schedule(P.op), [A, P], name="pad")
out = np.empty(n + 6, "float32")
mod(a, out)
assert (out == np.pad(np.arange(n, dtype="float32"), 3)).all()
print("ok")
"""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_zero_padded_box_filter_reduces_over_guarded_reads():
    n, m = 6, 9
    A = te.placeholder((n, m), name="A")
    di = te.reduce_axis((-1, 2), name="di")
    dj = te.reduce_axis((-1, 2), name="dj")

    def box(i, j):
        y, x = i + di, j + dj
        inside = te.all(y >= 0, y < n, x >= 0, x < m)
        return te.sum(te.if_then_else(inside, A[y, x], 0.0), axis=[di, dj])

    B = te.compute((n, m), box, name="B")
    mod = build([B], [A, B], "box")
    a = np.random.default_rng(5).standard_normal((n, m)).astype("float32")
    out = np.empty((n, m), "float32")
    mod(a, out)
    padded = np.pad(a, 1)
    expected = sum(
        padded[1 + dy : 1 + dy + n, 1 + dx : 1 + dx + m]
        for dy in (-1, 0, 1)
        for dx in (-1, 0, 1)
    )
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_select_evaluates_both_sides_and_matches_where():
    A = te.placeholder((64,), name="A")
    S = te.compute((64,), lambda i: te.select(A[i] > 0, te.sqrt(A[i]), -A[i]), name="S")
    T = te.compute(
        (64,),
        lambda i: te.if_then_else(
            i % 2 == 0, A[i] * 2.0, te.if_then_else(i < 32, 1.0, A[i])
        ),
        name="T",
    )
    mod = build([S, T], [A, S, T], "select")
    a = np.random.default_rng(6).standard_normal(64).astype("float32")
    s, t = np.empty(64, "float32"), np.empty(64, "float32")
    mod(a, s, t)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(s, np.where(a > 0, np.sqrt(a), -a))
    i = np.arange(64)
    np.testing.assert_array_equal(
        t, np.where(i % 2 == 0, a * 2, np.where(i < 32, 1, a))
    )


def test_triangular_sum_guards_inside_the_reduction():
    n = 12
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    L = te.compute(
        (n,), lambda i: te.sum(te.if_then_else(k <= i, A[i, k], 0.0), axis=k), name="L"
    )
    mod = build([L], [A, L], "tril_sum")
    a = np.random.default_rng(7).standard_normal((n, n)).astype("float32")
    out = np.empty(n, "float32")
    mod(a, out)
    np.testing.assert_allclose(out, np.tril(a).sum(1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8"])
def test_comm_reducer_product(dtype):
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    A = te.placeholder((5, 9), dtype=dtype, name="A")
    k = te.reduce_axis((2, 9), name="k")
    P = te.compute((5,), lambda i: prod(A[i, k], axis=k), name="P")
    mod = build([P], [A, P], "prod_" + dtype)
    rng = np.random.default_rng(8)
    if dtype.startswith("int"):
        a = rng.integers(-9, 10, (5, 9)).astype(dtype)  # int8 products wrap
    else:
        a = (rng.random((5, 9)) + 0.5).astype(dtype)
    out = np.empty(5, dtype)
    mod(a, out)
    expected = np.prod(a[:, 2:], axis=1, dtype=dtype)
    if dtype.startswith("int"):
        np.testing.assert_array_equal(out, expected)
    else:
        np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int32"])
def test_comm_reducer_absmax_over_two_axes(dtype):
    absmax = te.comm_reducer(
        lambda x, y: te.max(te.max(x, -x), te.max(y, -y)),
        lambda t: 0,
        name="absmax",
    )
    A = te.placeholder((4, 3, 5), dtype=dtype, name="A")
    r = te.reduce_axis((0, 3), name="r")
    s = te.reduce_axis((0, 5), name="s")
    M = te.compute((4,), lambda i: absmax(A[i, r, s], axis=[r, s]), name="M")
    mod = build([M], [A, M], "absmax_" + dtype)
    a = np.random.default_rng(9).integers(-50, 50, (4, 3, 5)).astype(dtype)
    out = np.empty(4, dtype)
    mod(a, out)
    np.testing.assert_array_equal(out, np.abs(a).max(axis=(1, 2)))


def test_comm_reducer_on_bools_counts_with_a_wider_sum():
    odd = te.comm_reducer(lambda x, y: x ^ y, lambda t: False, name="parity")
    A = te.placeholder((6, 10), dtype="int32", name="A")
    k = te.reduce_axis((0, 10), name="k")
    P = te.compute((6,), lambda i: odd(A[i, k] % 2 == 1, axis=k), name="P")
    C = te.compute(
        (6,), lambda i: te.sum((A[i, k] > 0).astype("int32"), axis=k), name="C"
    )
    mod = build([P, C], [A, P, C], "parity")
    a = np.random.default_rng(10).integers(-5, 6, (6, 10)).astype("int32")
    p, c = np.empty(6, bool), np.empty(6, "int32")
    mod(a, p, c)
    np.testing.assert_array_equal(p, (a % 2 == 1).sum(1) % 2 == 1)
    np.testing.assert_array_equal(c, (a > 0).sum(1))


@pytest.mark.parametrize("fn", ["exp", "log", "sqrt", "tanh", "abs"])
def test_float16_math_is_computed_in_float32_like_numpy(fn):
    A = te.placeholder((256,), dtype="float16", name="A")
    B = te.compute((256,), lambda i: getattr(te, fn)(A[i]), name="B")
    mod = build([B], [A, B], "f16_" + fn)
    a = np.random.default_rng(11).uniform(0.01, 8, 256).astype("float16")
    if fn in ("tanh", "abs"):
        a[::2] *= -1
    out = np.empty(256, "float16")
    mod(a, out)
    # numpy computes float16 math in float32 and rounds once, as LLVM does here
    np.testing.assert_array_max_ulp(out, getattr(np, fn)(a), maxulp=1)


def test_float16_math_calls_the_float32_routine():
    A = te.placeholder((16,), dtype="float16", name="A")
    B = te.compute((16,), lambda i: te.exp(A[i]), name="B")
    asm = build([B], [A, B], "f16_exp").get_source("asm")
    assert "expf" in asm


@pytest.mark.parametrize("combiner", ["sum", "max", "min"])
def test_float16_reductions(combiner):
    n, k = 6, 96
    A = te.placeholder((n, k), dtype="float16", name="A")
    r = te.reduce_axis((0, k), name="r")
    fn = {"sum": te.sum, "max": te.max, "min": te.min}[combiner]
    R = te.compute((n,), lambda i: fn(A[i, r], axis=r), name="R")
    mod = build([R], [A, R], "f16_" + combiner)
    a = np.random.default_rng(12).standard_normal((n, k)).astype("float16")
    out = np.empty(n, "float16")
    mod(a, out)
    if combiner != "sum":
        np.testing.assert_array_equal(out, getattr(a, combiner)(axis=1))
        return
    # ember's float16 sum rounds to float16 after every addition, exactly like
    # numpy's reduction along a strided axis...
    np.testing.assert_array_equal(out, np.add.reduce(np.ascontiguousarray(a.T), 0))
    # ...while numpy's contiguous sum adds pairwise in float32: the two differ by
    # about k rounding errors of the float16 partial sums.
    bound = k * np.finfo("float16").eps * np.abs(a).astype("float32").sum(1)
    assert (np.abs(out - a.sum(axis=1).astype("float32")) <= bound).all()


def test_float16_sum_accumulated_in_float32_matches_numpy():
    n, k = 4, 4096
    A = te.placeholder((n, k), dtype="float16", name="A")
    r = te.reduce_axis((0, k), name="r")
    S32 = te.compute(
        (n,), lambda i: te.sum(A[i, r].astype("float32"), axis=r), name="S32"
    )
    S = te.compute((n,), lambda i: S32[i].astype("float16"), name="S")
    mod = build([S], [A, S], "f16_sum32")
    a = np.random.default_rng(13).random((n, k)).astype("float16")
    out = np.empty(n, "float16")
    mod(a, out)
    np.testing.assert_array_max_ulp(out, a.sum(axis=1), maxulp=1)


def test_int8_wraps_and_converts_like_numpy():
    A = te.placeholder((64,), dtype="int8", name="A")
    B = te.placeholder((64,), dtype="int8", name="B")
    X = te.placeholder((64,), dtype="float32", name="X")
    W = te.compute((64,), lambda i: A[i] * B[i] + A[i] - B[i] * 7, name="W")
    F = te.compute((64,), lambda i: A[i].astype("float32") * 0.5, name="F")
    T = te.compute((64,), lambda i: X[i].astype("int8"), name="T")
    G = te.compute(
        (64,),
        lambda i: (A[i] > B[i]).astype("int8") - (X[i] < 0).astype("int8"),
        name="G",
    )
    H = te.compute((64,), lambda i: (A[i] == 0).astype("float16"), name="H")
    k = te.reduce_axis((0, 64), name="k")
    S = te.compute((1,), lambda i: te.sum(A[k] * B[k], axis=k), name="S")
    outs = [W, F, T, G, H, S]
    mod = build(outs, [A, B, X, *outs], "int8")
    rng = np.random.default_rng(14)
    a = rng.integers(-128, 128, 64).astype("int8")
    b = rng.integers(-128, 128, 64).astype("int8")
    a[:8] = 0
    x = rng.uniform(-127.9, 127.9, 64).astype("float32")
    w, f, t, g, h, s = (np.empty(o.shape, o.dtype) for o in outs)
    mod(a, b, x, w, f, t, g, h, s)
    np.testing.assert_array_equal(w, a * b + a - b * np.int8(7))
    np.testing.assert_array_equal(f, a.astype("float32") * 0.5)
    np.testing.assert_array_equal(t, x.astype("int8"))
    np.testing.assert_array_equal(g, (a > b).astype("int8") - (x < 0).astype("int8"))
    np.testing.assert_array_equal(h, (a == 0).astype("float16"))
    np.testing.assert_array_equal(s, [np.sum(a * b, dtype="int8")])
