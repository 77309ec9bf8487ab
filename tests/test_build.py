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
