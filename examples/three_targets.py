"""One vector add, three targets: this CPU, an AVX-512 server and an NVIDIA GPU.

    .venv/bin/python examples/three_targets.py

The computation is written once; each target gets the schedule that suits it
(a CPU splits the loop into vectors and threads, a GPU binds it to blocks and
threads: a bound loop on a CPU is an error). Code for this CPU runs here; code
for another CPU (`-mcpu=skylake-avx512` where this machine lacks AVX-512) is
compiled and printed, not run; the CUDA C is compiled to PTX by NVRTC and runs
wherever there is an NVIDIA GPU.
"""

import numpy as np

import ember
from ember import te
from ember.backends.llvm.target import Target

N = 1 << 16


def vecadd():
    A = te.placeholder((N,), name="A")
    B = te.placeholder((N,), name="B")
    C = te.compute((N,), lambda i: A[i] + B[i], name="C")
    return te.create_schedule(C.op), A, B, C


def cpu(target: str):
    s, A, B, C = vecadd()
    outer, inner = s[C].split(C.op.axis[0], factor=64)
    s[C].vectorize(inner)
    s[C].parallel(outer)
    return ember.build(s, [A, B, C], target=target, name="vecadd")


def gpu(target: str):
    s, A, B, C = vecadd()
    bx, tx = s[C].split(C.op.axis[0], factor=256)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return ember.build(s, [A, B, C], target=target, name="vecadd")


def first_lines(text: str, marker: str, count: int = 12) -> str:
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if marker in line), 0)
    return "\n".join(lines[start : start + count])


def main() -> None:
    a = np.random.default_rng(0).random(N, dtype=np.float32)
    b = np.random.default_rng(1).random(N, dtype=np.float32)

    print("== llvm (this CPU): LLVM IR ==")
    host = cpu("llvm")
    print(first_lines(host.get_source("ll"), "fadd", 6))
    c = np.zeros(N, np.float32)
    host(a, b, c)
    print("runs here:", "ok" if np.allclose(c, a + b) else "MISMATCH")

    avx512 = "llvm -mcpu=skylake-avx512"
    print(f"\n== {avx512}: assembly ==")
    server = cpu(avx512)
    print(first_lines(server.get_source("asm"), "zmm", 8))
    if Target(avx512).is_host:
        c = np.zeros(N, np.float32)
        server(a, b, c)
        print("runs here:", "ok" if np.allclose(c, a + b) else "MISMATCH")
    else:
        print("built only: this machine has no AVX-512")

    print("\n== cuda -arch=sm_80: CUDA C (compiled to PTX by NVRTC) ==")
    device = gpu("cuda -arch=sm_80")
    print(first_lines(device.get_source(), "__global__", 10))
    print(first_lines(device.get_source("ptx"), ".target", 1))
    try:
        c = np.zeros(N, np.float32)
        device(a, b, c)
        print("runs on the GPU:", "ok" if np.allclose(c, a + b) else "MISMATCH")
    except ember.runtime.EmberError as error:
        print(f"not run: {str(error).splitlines()[0]}")


if __name__ == "__main__":
    main()
