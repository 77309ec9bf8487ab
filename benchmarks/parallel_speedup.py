"""Speedup of parallel loops (loop-outline-parallel, libgomp) with N threads over 1.

Each kernel is loop IR whose outer loop is `parallel`; it is built once per thread
count (EMBER_NUM_THREADS is read when a module is built), checked against numpy,
and timed (median of repeated calls).

    .venv/bin/python benchmarks/parallel_speedup.py [--threads 2] [--quick]
"""

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

import ember

N = 1 << 24
ROWS, COLS = 4096, 4096
M = 512


def elementwise(n: int) -> str:
    """B[i] = exp(A[i]) * 2 + 1: compute-bound enough to scale."""
    return f"""
    func.func @ew(%A: memref<{n}xf32> {{ember.name = "A"}},
                  %B: memref<{n}xf32> {{ember.name = "B", ember.output}}) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant {n} : index
      %one = arith.constant 1.0 : f32
      %two = arith.constant 2.0 : f32
      loop.for %i = %c0 to %n step %c1 parallel {{
        %a = memref.load %A[%i] : memref<{n}xf32>
        %e = math.exp %a : f32
        %b = arith.mulf %e, %two : f32
        %c = arith.addf %b, %one : f32
        memref.store %c, %B[%i] : memref<{n}xf32>
      }}
      func.return
    }}
    """


def rowsum(rows: int, cols: int) -> str:
    """C[i] = sum_j A[i, j]: parallel rows, a serial reduction (memory-bound)."""
    t = f"memref<{rows}x{cols}xf32>"
    return f"""
    func.func @rowsum(%A: {t} {{ember.name = "A"}},
                      %C: memref<{rows}xf32> {{ember.name = "C", ember.output}}) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %rows = arith.constant {rows} : index
      %cols = arith.constant {cols} : index
      %zero = arith.constant 0.0 : f32
      loop.for %i = %c0 to %rows step %c1 parallel {{
        memref.store %zero, %C[%i] : memref<{rows}xf32>
        loop.for %j = %c0 to %cols step %c1 {{
          %a = memref.load %A[%i, %j] : {t}
          %s = memref.load %C[%i] : memref<{rows}xf32>
          %u = arith.addf %s, %a : f32
          memref.store %u, %C[%i] : memref<{rows}xf32>
        }}
      }}
      func.return
    }}
    """


def matmul(m: int) -> str:
    """C = A @ B, naive i-k-j order with a parallel i loop (compute-bound)."""
    t = f"memref<{m}x{m}xf32>"
    return f"""
    func.func @mm(%A: {t} {{ember.name = "A"}}, %B: {t} {{ember.name = "B"}},
                  %C: {t} {{ember.name = "C", ember.output}}) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %m = arith.constant {m} : index
      %zero = arith.constant 0.0 : f32
      loop.for %i = %c0 to %m step %c1 parallel {{
        loop.for %j = %c0 to %m step %c1 {{
          memref.store %zero, %C[%i, %j] : {t}
        }}
        loop.for %k = %c0 to %m step %c1 {{
          %a = memref.load %A[%i, %k] : {t}
          loop.for %j = %c0 to %m step %c1 {{
            %b = memref.load %B[%k, %j] : {t}
            %c = memref.load %C[%i, %j] : {t}
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %c, %p : f32
            memref.store %s, %C[%i, %j] : {t}
          }}
        }}
      }}
      func.return
    }}
    """


def median_time(run: Callable[[], object], repeat: int) -> float:
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args()
    scale = 16 if args.quick else 1
    rng = np.random.default_rng(0)
    n, rows, m = N // scale, ROWS // scale, M // (4 if args.quick else 1)
    a1 = rng.standard_normal(n).astype(np.float32)
    a2 = rng.standard_normal((rows, COLS)).astype(np.float32)
    ma, mb = (rng.standard_normal((m, m)).astype(np.float32) for _ in range(2))
    kernels = [
        (
            f"elementwise exp, {n} f32",
            elementwise(n),
            "ew",
            [a1, np.empty_like(a1)],
            np.exp(a1) * 2 + 1,
        ),
        (
            f"row sums, {rows}x{COLS} f32",
            rowsum(rows, COLS),
            "rowsum",
            [a2, np.empty(rows, np.float32)],
            a2.sum(axis=1),
        ),
        (
            f"matmul, {m}^3 f32",
            matmul(m),
            "mm",
            [ma, mb, np.empty((m, m), np.float32)],
            ma @ mb,
        ),
    ]
    print(f"{'kernel':34} {'1 thread':>12} {f'{args.threads} threads':>12} speedup")
    for label, ir, name, arrays, want in kernels:
        times = []
        for threads in (1, args.threads):
            os.environ["EMBER_NUM_THREADS"] = str(threads)
            mod = ember.build(ir, name=name)
            mod(*arrays)
            np.testing.assert_allclose(arrays[-1], want, rtol=1e-3, atol=1e-3)
            times.append(median_time(lambda mod=mod, arrays=arrays: mod(*arrays), 7))
        print(
            f"{label:34} {times[0] * 1e3:10.2f}ms {times[1] * 1e3:10.2f}ms "
            f"{times[0] / times[1]:6.2f}x"
        )


if __name__ == "__main__":
    main()
