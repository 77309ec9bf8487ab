"""ember's demo: compile real kernels from tensor expressions, run them, check them
against numpy and time both.

    make demo        (or: .venv/bin/python examples/demo.py)
"""

import time

import numpy as np

import ember
from ember import te


def best_of(fn, repeat: int = 20) -> float:
    """The fastest of `repeat` runs of fn(), in seconds."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def vecadd(n: int):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    mod = ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")
    a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
    c = np.empty(n, "float32")
    return mod, (a, b, c), c, lambda: a + b


def matmul(n: int, m: int, k: int):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    mod = ember.build(te.create_schedule(C.op), [A, B, C], name="matmul")
    a = np.random.rand(n, k).astype("float32")
    b = np.random.rand(k, m).astype("float32")
    c = np.empty((n, m), "float32")
    return mod, (a, b, c), c, lambda: a @ b


def rowmax(n: int, m: int):
    A = te.placeholder((n, m), name="A")
    r = te.reduce_axis((0, m), name="r")
    M = te.compute((n,), lambda i: te.max(A[i, r], axis=r), name="M")
    mod = ember.build(te.create_schedule(M.op), [A, M], name="rowmax")
    a = np.random.randn(n, m).astype("float32")
    out = np.empty(n, "float32")
    return mod, (a, out), out, lambda: a.max(axis=1)


def softmax_exp(n: int, m: int):
    """The two-stage numerator of a softmax: exp(x - rowmax(x))."""
    X = te.placeholder((n, m), name="X")
    r = te.reduce_axis((0, m), name="r")
    M = te.compute((n,), lambda i: te.max(X[i, r], axis=r), name="M")
    E = te.compute((n, m), lambda i, j: te.exp(X[i, j] - M[i]), name="E")
    mod = ember.build(te.create_schedule(E.op), [X, E], name="softmax_exp")
    x = np.random.randn(n, m).astype("float32")
    out = np.empty((n, m), "float32")
    return mod, (x, out), out, lambda: np.exp(x - x.max(axis=1, keepdims=True))


def main() -> None:
    np.random.seed(0)
    kernels = {
        "vecadd n=1M": lambda: vecadd(1 << 20),
        "matmul 256x256x256": lambda: matmul(256, 256, 256),
        "rowmax 1024x1024": lambda: rowmax(1024, 1024),
        "exp(x - rowmax) 512x512": lambda: softmax_exp(512, 512),
    }
    target = ember.Target("llvm")
    print(f"ember {ember.__version__}, target llvm: {target.triple}, cpu {target.cpu}")
    print(
        f"{'kernel':26} {'compile':>9} {'ember':>10} {'numpy':>10} {'ratio':>7}  check"
    )
    for label, make in kernels.items():
        start = time.perf_counter()
        mod, args, out, reference = make()
        compile_s = time.perf_counter() - start
        mod(*args)
        expected = reference()
        ok = np.allclose(out, expected, rtol=1e-4, atol=1e-4)
        err = np.abs(out - expected).max()
        t_ember = best_of(lambda mod=mod, args=args: mod(*args))
        t_numpy = best_of(reference)
        print(
            f"{label:26} {compile_s * 1e3:7.0f}ms {t_ember * 1e6:8.1f}us "
            f"{t_numpy * 1e6:8.1f}us {t_numpy / t_ember:6.2f}x  "
            f"{'ok' if ok else 'MISMATCH'} (max |err| {err:.1e})"
        )
        if not ok:
            raise SystemExit(f"{label}: ember's result differs from numpy's")
    print("ratio = numpy time / ember time (above 1: ember is faster).")
    print(
        "Kernels use te's default (naive) schedules; examples/matmul_schedule.py "
        "and examples/conv2d_schedule.py schedule them (make bench compares)."
    )


if __name__ == "__main__":
    main()
