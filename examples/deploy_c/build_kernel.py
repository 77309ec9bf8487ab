"""Build the kernel that main.c runs: a scheduled float32 matmul, exported as a
shared library that needs no Python to run.

    .venv/bin/python examples/deploy_c/build_kernel.py matmul.so [--m 64 --k 48 --n 32]
    .venv/bin/python examples/deploy_c/build_kernel.py matmul.so \
        --target "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72" --cc aarch64-linux-gnu-gcc

The schedule tiles C into 8 x 16 blocks, vectorizes the inner columns and runs the
row blocks in parallel (libgomp), so the library exercises everything a C host
has to provide: DLTensors, the packed call and, for parallel loops, libgomp.
"""

import argparse

import numpy as np

import ember
from ember import te


def matmul(m: int, k: int, n: int, name: str = "matmul", target: str = "llvm"):
    """A compiled `C[m, n] = A[m, k] @ B[k, n]` (float32) with a CPU schedule.

    Args:
        m, k, n: the static extents.
        name: the function's name in the library.
        target: where the library runs ("llvm": this machine).

    Returns:
        The compiled module (an ``LLVMModule``).
    """
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    mo, _, _, ni = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[C].vectorize(ni)
    s[C].parallel(mo)
    return ember.build(s, [A, B, C], target=target, name=name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", nargs="?", default="matmul.so")
    parser.add_argument("--m", type=int, default=64)
    parser.add_argument("--k", type=int, default=48)
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--target", default="llvm", help="another machine's target")
    parser.add_argument("--cc", help="its C compiler (aarch64-linux-gnu-gcc)")
    opts = parser.parse_args()
    mod = matmul(opts.m, opts.k, opts.n, target=opts.target)
    if mod.target.is_host:  # checked in this process before it ships
        a = np.random.rand(opts.m, opts.k).astype("float32")
        b = np.random.rand(opts.k, opts.n).astype("float32")
        c = np.empty((opts.m, opts.n), "float32")
        mod(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    # The C compiler links the object with libgomp, which parallel loops call,
    # so a C host needs nothing but dlopen.
    mod.export_library(opts.output, cc=opts.cc)
    print(f"exported {opts.output} ({opts.m}x{opts.k} @ {opts.k}x{opts.n})")


if __name__ == "__main__":
    main()
