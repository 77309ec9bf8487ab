"""fp32 matmul C = A @ B on a GPU: ember (cuda, opencl) next to torch.matmul.

    .venv/bin/python benchmarks/gpu_matmul.py              # 4096 x 4096 x 4096 on CUDA
    .venv/bin/python benchmarks/gpu_matmul.py --size 512 --device opencl

ember runs TVM's classic shared-memory GEMM schedule, written in ember's
schedule language (`matmul_schedule`): each block of `threads` x `threads`
threads computes a (tile*threads)² block of C, each thread a tile x tile
register tile (`cache_write(C, "local")`); every `kstep` columns of A and rows
of B are first copied into shared memory by all threads of the block together
(`cache_read(..., "shared")`, the copy's loops bound to the thread axes), with
the barriers the code generator inserts. No tensor cores, no double buffering:
it measures the code generator, not a hand-written kernel.

torch.matmul is cuBLAS: with TF32 off (PyTorch's default for fp32 matmul) and,
as a second row, with TF32 on. Every row is checked against torch's result
before it is timed; times are the median of CUDA-event-timed runs (torch) or
`time_evaluator` with device synchronisation (ember).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


def matmul_schedule(n: int, tile: int = 8, threads: int = 16, kstep: int = 8):
    """The schedule and arguments of C = A @ B (n x n, float32) for a GPU."""
    from ember import te

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = te.create_schedule(c.op)
    aa = s.cache_read(a, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    cc = s.cache_write(c, "local")
    block = tile * threads
    by, yi = s[c].split(c.op.axis[0], factor=block)
    bx, xi = s[c].split(c.op.axis[1], factor=block)
    ty, yi = s[c].split(yi, nparts=threads)
    tx, xi = s[c].split(xi, nparts=threads)
    s[c].reorder(by, bx, ty, tx, yi, xi)
    s[c].bind(by, te.thread_axis("blockIdx.y"))
    s[c].bind(bx, te.thread_axis("blockIdx.x"))
    s[c].bind(ty, te.thread_axis("threadIdx.y"))
    s[c].bind(tx, te.thread_axis("threadIdx.x"))
    s[c].unroll(yi)  # C_local's indices constant: it stays in registers
    s[c].unroll(xi)
    s[cc].compute_at(s[c], tx)
    yo, xo = s[cc].op.axis
    ko, ki = s[cc].split(s[cc].op.reduce_axis[0], factor=kstep)
    s[cc].reorder(ko, ki, yo, xo)
    s[cc].unroll(yo)
    s[cc].unroll(xo)
    for load in (aa, bb):
        s[load].compute_at(s[cc], ko)
        fused = s[load].fuse(*s[load].op.axis)
        ly, rest = s[load].split(fused, nparts=threads)
        lx, _ = s[load].split(rest, nparts=threads)
        s[load].bind(ly, te.thread_axis("threadIdx.y"))
        s[load].bind(lx, te.thread_axis("threadIdx.x"))
    return s, [a, b, c]


def _ember(n: int, kind: str, a: np.ndarray, b: np.ndarray, repeat: int):
    import ember
    from ember import runtime

    s, args = matmul_schedule(n)
    start = time.perf_counter()
    mod = ember.build(s, args, target=kind, name="matmul")
    built = time.perf_counter() - start
    dev = runtime.cuda(0) if kind == "cuda" else runtime.opencl(0)
    da, db = runtime.array(a, device=dev), runtime.array(b, device=dev)
    dc = runtime.empty((n, n), "float32", device=dev)
    mod(da, db, dc)
    result = dc.numpy()
    timer = mod.time_evaluator("matmul", dev, number=3, repeat=repeat)
    return result, timer(da, db, dc).median, built


def _torch(n: int, a: np.ndarray, b: np.ndarray, repeat: int, tf32: bool):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = tf32
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    tc = torch.matmul(ta, tb)
    times = []
    for _ in range(repeat):
        begin, end = (
            torch.cuda.Event(enable_timing=True),
            torch.cuda.Event(enable_timing=True),
        )
        begin.record()
        for _ in range(3):
            torch.matmul(ta, tb, out=tc)
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) / 3 / 1e3)
    return tc.cpu().numpy(), statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--device", choices=("cuda", "opencl"), default="cuda")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    n = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    flops = 2.0 * n**3
    rows: list[tuple[str, float | None, str]] = []
    reference = None
    if args.device == "cuda":
        for tf32 in (False, True):
            name = f"torch.matmul ({'TF32' if tf32 else 'fp32'})"
            try:
                result, seconds = _torch(n, a, b, args.repeat, tf32)
            except Exception as e:  # noqa: BLE001 - one broken row never hides another
                rows.append((name, None, f"failed: {e}"))
                continue
            if not tf32:
                reference = result
            rows.append((name, seconds, ""))
    if reference is None:
        reference = a.astype(np.float64) @ b.astype(np.float64)
    try:
        result, seconds, built = _ember(n, args.device, a, b, args.repeat)
        error = float(np.max(np.abs(result - reference)) / np.max(np.abs(reference)))
        ok = error < 1e-4
        rows.append(
            (
                f"ember {args.device}",
                seconds if ok else None,
                f"built in {built:.1f} s"
                if ok
                else f"WRONG (max rel error {error:.2e})",
            )
        )
    except Exception as e:  # noqa: BLE001
        rows.append((f"ember {args.device}", None, f"failed: {e}"))
    base = next((t for name, t, _ in rows if t is not None), None)
    print(f"fp32 matmul {n}x{n}x{n} on {args.device}")
    print(f"{'implementation':<24}{'ms':>10}{'TFLOP/s':>10}{'x first':>9}  note")
    for name, seconds, note in rows:
        if seconds is None:
            print(f"{name:<24}{'-':>10}{'-':>10}{'-':>9}  {note}")
            continue
        ratio = seconds / base if base else float("nan")
        print(
            f"{name:<24}{seconds * 1e3:>10.3f}{flops / seconds / 1e12:>10.2f}"
            f"{ratio:>9.2f}  {note}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
