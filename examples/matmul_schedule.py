"""How to optimize a matmul on a CPU with ember's schedules, step by step.

    .venv/bin/python examples/matmul_schedule.py

This follows TVM's tutorial "How to optimize GEMM on CPU". The computation,
C[i, j] = sum_k A[i, k] * B[k, j], is written once as a tensor expression; each
step below only changes its *schedule*: the order and shape of the loops that
compute it. The result never changes (every step is checked against numpy); the
time does.

1. naive. The default schedule is the loop nest as written: for i, for j, for k.
   The innermost loop walks B down a column, one cache line per element.

2. blocking. `tile` splits i and j into 32 x 32 blocks and `split` cuts k in
   chunks of 4; the reorder (mo, no, ko, ki, mi, ni) works on one block of C
   with a block of A and B that stay in the cache, and makes the innermost loop
   walk along rows of B and C.

3. vectorize. The innermost loop, ni, runs over 32 consecutive elements of a
   row: `vectorize` turns it into SIMD operations (AVX-512: 16 floats each).

4. pack. B's block columns are still 32 floats out of a row of N, so each k
   touches a new cache line and a new page. `packedB[x, y, z] = B[y, x*32 + z]`
   lays each 32-wide column panel of B out contiguously (N/32, K, 32): the kernel
   then reads B sequentially. Packing costs O(K*N), the matmul O(M*N*K).

5. write cache. The block of C is still loaded and stored for every k.
   `cache_write(C, "local")` makes a small local tile of accumulators computed at
   C's column-block loop; its loops (k, mc, nc), with the 8 rows unrolled and the
   32 columns vectorized, keep the 8 x 32 tile in registers for the whole k loop
   and write C once. This is the register-blocked micro-kernel of every BLAS.

6. parallel. The row blocks of C are independent: `parallel` on the outer loop
   (and on the packing's outer loop) runs them on all cores.

benchmarks/matmul.py runs step 6 at 1024^3 beside numpy, onnxruntime, PyTorch and
apache-tvm with the same schedule.
"""

import statistics
import time

import numpy as np

import ember
from ember import te

M = N = K = 512
BN = 32  # columns of a block of C, and the width of B's packed panels
MR = 8  # rows of the register tile in step 5


def compute(packed: bool):
    """The matmul as a tensor expression: over B itself, or over packed B."""
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    if not packed:
        C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        return A, B, None, C
    packedB = te.compute(
        (N // BN, K, BN), lambda x, y, z: B[y, x * BN + z], name="packedB"
    )
    C = te.compute(
        (M, N),
        lambda i, j: te.sum(A[i, k] * packedB[j // BN, k, j % BN], axis=k),
        name="C",
    )
    return A, B, packedB, C


def naive():
    A, B, _, C = compute(packed=False)
    return te.create_schedule(C.op), [A, B, C]


def blocking(vectorize: bool = False):
    A, B, _, C = compute(packed=False)
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(mo, no, ko, ki, mi, ni)
    if vectorize:
        s[C].vectorize(ni)
    return s, [A, B, C]


def vectorized():
    return blocking(vectorize=True)


def pack():
    A, B, packedB, C = compute(packed=True)
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(mo, no, ko, ki, mi, ni)
    s[C].vectorize(ni)
    s[packedB].vectorize(s[packedB].op.axis[2])
    return s, [A, B, C]


def write_cache(parallel: bool = False):
    A, B, packedB, C = compute(packed=True)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], MR, BN)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    s[CC].reorder(k, mc, nc)
    s[CC].unroll(mc)
    s[CC].vectorize(nc)
    s[C].unroll(mi)
    s[C].vectorize(ni)
    x, _, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    if parallel:
        s[C].parallel(mo)
        s[packedB].parallel(x)
    return s, [A, B, C]


def parallel():
    return write_cache(parallel=True)


STEPS = [
    ("1 naive", naive),
    ("2 blocking", blocking),
    ("3 vectorize", vectorized),
    ("4 pack", pack),
    ("5 write cache", write_cache),
    ("6 parallel", parallel),
]


def median_time(fn, repeat: int = 5) -> float:
    """The median of `repeat` timed calls of fn(), after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    expected = a @ b
    flops = 2.0 * M * N * K
    print(f"matmul {M} x {N} x {K}, fp32; numpy: ", end="")
    print(f"{flops / median_time(lambda: a @ b) / 1e9:.1f} GFLOPS")
    print(f"{'step':16} {'compile':>8} {'time':>10} {'GFLOPS':>8}  check")
    failed = []
    for label, make in STEPS:
        try:
            start = time.perf_counter()
            s, args = make()
            mod = ember.build(s, args, name="matmul")
            compile_s = time.perf_counter() - start
            c = np.zeros((M, N), np.float32)
            mod(a, b, c)
        except Exception as exc:
            print(f"{label:16} failed: {type(exc).__name__}: {exc}")
            failed.append(label)
            continue
        if not np.allclose(c, expected, rtol=1e-4, atol=1e-4):
            print(f"{label:16} WRONG: max |error| {np.abs(c - expected).max():.3g}")
            failed.append(label)
            continue
        seconds = median_time(lambda mod=mod, c=c: mod(a, b, c))
        print(
            f"{label:16} {compile_s:7.2f}s {seconds * 1e3:8.2f}ms "
            f"{flops / seconds / 1e9:8.1f}  ok"
        )
    if failed:
        raise SystemExit(f"steps that did not run right: {', '.join(failed)}")


if __name__ == "__main__":
    main()
