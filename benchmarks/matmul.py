"""fp32 matmul C = A @ B side by side: numpy, onnxruntime, PyTorch, apache-tvm, ember.

    .venv/bin/python benchmarks/matmul.py                 # 1024 x 1024 x 1024
    .venv/bin/python benchmarks/matmul.py --quick         # 256, a quick check
    .venv/bin/python benchmarks/matmul.py --mr 4 --bn 64  # tune the register tile
    .venv/bin/python benchmarks/matmul.py --mcpu haswell --mcpu x86-64   # more rows

The reference is numpy (OpenBLAS). Every row is checked against numpy before it is
timed. ember and apache-tvm run the *same* schedule, TVM's "How to optimize GEMM on
CPU" written for a register-blocked micro-kernel:

    packedB[x, y, z] = B[y, x*bn + z]            (N/bn, K, bn): B in column panels,
                                                 outer loop parallel, inner vectorized
    C[i, j] = sum_k A[i, k] * packedB[j/bn, k, j%bn]
    CC = cache_write(C, "local")                 an MR x bn tile of accumulators
    C:  mo, no, mi, ni = tile(i, j, MR, bn)      mo parallel, mi unrolled, ni vectorized
    CC: computed at no, loops (k, mc, nc)        mc unrolled, nc vectorized: the MR x bn
                                                 accumulators stay in registers for all k

The tile comes from the target's facts unless --mr/--bn say otherwise: bn is two
vectors of float32 lanes, MR the rows whose accumulators fit in three quarters of
the vector registers (AVX-512: bn 32, MR 12 -> 8, the largest power of two that
divides the size; AVX2: bn 16, MR 6 -> 4). Each `--mcpu` (default haswell) adds
ember and apache-tvm rows built for that CPU, with its own tile, run here.
The targets ember's team works to: ember scheduled >= 0.6 x numpy, and not slower
than TVM with the same schedule.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np
from common import (
    Impl,
    Prepared,
    add_timing_options,
    check_target,
    cores,
    describe_machine,
    ember_threads,
    openblas_threads,
    run_all,
    threads_note,
    timing_options,
    tvm_target,
)

REFERENCE = "numpy"
EMBER_SCHEDULED = "ember scheduled"
TVM_SCHEDULED = "apache-tvm same schedule"


def ember_naive(m: int, n: int, k: int):
    """ember's default schedule: the i, j, k loop nest as written."""
    from ember import te

    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_schedule(C.op), [A, B, C]


def ember_scheduled(m: int, n: int, k: int, mr: int, bn: int):
    """The register-blocked micro-kernel over a packed B (see the module docstring)."""
    from ember import te

    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    packedB = te.compute(
        (n // bn, k, bn), lambda x, y, z: B[y, x * bn + z], name="packedB"
    )
    r = te.reduce_axis((0, k), name="k")
    C = te.compute(
        (m, n),
        lambda i, j: te.sum(A[i, r] * packedB[j // bn, r, j % bn], axis=r),
        name="C",
    )
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], mr, bn)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    (kc,) = s[CC].op.reduce_axis
    s[CC].reorder(kc, mc, nc)
    s[CC].unroll(mc)
    s[CC].vectorize(nc)
    s[C].unroll(mi)
    s[C].vectorize(ni)
    s[C].parallel(mo)
    x, _, z = s[packedB].op.axis
    s[packedB].parallel(x)
    s[packedB].vectorize(z)
    return s, [A, B, C]


def tvm_scheduled(m: int, n: int, k: int, mr: int, bn: int):
    """The same schedule in apache-tvm 0.27: te.create_prim_func + s_tir.Schedule.

    TIR's cache_write returns the copy-out block, so it is tiled and the
    computing block is attached to it with compute_at, as ember's CC is to C.
    The reduction's init is split off last (decompose_reduction), after the
    loops are annotated, as s_tir requires."""
    import tvm
    from tvm import te

    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    packedB = te.compute(
        (n // bn, k, bn), lambda x, y, z: B[y, x * bn + z], name="packedB"
    )
    r = te.reduce_axis((0, k), name="k")
    C = te.compute(
        (m, n),
        lambda i, j: te.sum(
            A[i, r] * packedB[j // bn, r, tvm.tirx.indexmod(j, bn)], axis=r
        ),
        name="C",
    )
    sch = tvm.s_tir.Schedule(te.create_prim_func([A, B, C]))
    compute = sch.get_sblock("C")
    copy_out = sch.cache_write(compute, 0, "local")
    i, j = sch.get_loops(copy_out)
    mo, mi = sch.split(i, [None, mr])
    no, ni = sch.split(j, [None, bn])
    sch.reorder(mo, no, mi, ni)
    sch.compute_at(compute, no)
    mc, nc, kc = sch.get_loops(compute)[-3:]
    sch.reorder(kc, mc, nc)
    sch.unroll(mc)
    sch.vectorize(nc)
    sch.unroll(mi)
    sch.vectorize(ni)
    sch.parallel(mo)
    x, _, z = sch.get_loops(sch.get_sblock("packedB"))
    sch.parallel(x)
    sch.vectorize(z)
    sch.decompose_reduction(compute, kc)
    return sch.mod


def register_tile(target: str, size: int) -> tuple[int, int]:
    """(MR, bn) for `target`: bn two float32 vectors, MR the rows of
    accumulators that fit the target's register budget, both dividing `size`."""
    from ember.backends.llvm import Target
    from ember.topi.kernel import accumulator_registers

    t = Target(target)
    lanes = t.vector_lanes("float32")
    bn = _divisor(size, 2 * lanes)
    mr = _divisor(size, max(1, accumulator_registers(t) // max(1, bn // lanes)))
    return mr, bn


def _divisor(size: int, limit: int) -> int:
    """The largest power of two <= limit that divides size."""
    d = 1
    while d * 2 <= limit and size % (d * 2) == 0:
        d *= 2
    return d


def implementations(
    a: np.ndarray, b: np.ndarray, tiles: dict[str, tuple[int, int]]
) -> list[Impl]:
    """numpy, onnxruntime, torch, then ember and apache-tvm per target; `tiles`
    maps each target string to its (MR, bn)."""
    m, k = a.shape
    n = b.shape[1]

    def numpy_setup() -> Prepared:
        c = np.empty((m, n), np.float32)
        return Prepared(lambda: np.matmul(a, b, out=c), lambda: c, "np.matmul(out=)")

    def ort_setup() -> Prepared:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            [helper.make_node("MatMul", ["A", "B"], ["C"])],
            "matmul",
            [
                helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k]),
                helper.make_tensor_value_info("B", TensorProto.FLOAT, [k, n]),
            ],
            [helper.make_tensor_value_info("C", TensorProto.FLOAT, [m, n])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        c = np.empty((m, n), np.float32)
        binding = session.io_binding()
        binding.bind_cpu_input("A", a)
        binding.bind_cpu_input("B", b)
        binding.bind_output("C", "cpu", 0, np.float32, [m, n], c.ctypes.data)
        return Prepared(
            lambda: session.run_with_iobinding(binding),
            lambda: c,
            f"onnxruntime {ort.__version__}, MatMul, io binding",
        )

    def torch_setup() -> Prepared:
        import torch

        torch.set_num_threads(cores())
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        c = np.empty((m, n), np.float32)
        tc = torch.from_numpy(c)
        return Prepared(
            lambda: torch.matmul(ta, tb, out=tc),
            lambda: c,
            f"torch {torch.__version__}, torch.matmul(out=)",
        )

    def torch_threads() -> str:
        import torch

        return str(torch.get_num_threads())

    def tvm_setup(target: str) -> Prepared:
        import tvm

        mr, bn = tiles[target]
        tvm_tgt = tvm_target(target)
        start = time.perf_counter()
        lib = tvm.compile(tvm_scheduled(m, n, k, mr, bn), target=tvm_tgt)
        compile_s = time.perf_counter() - start
        dev = tvm.cpu()
        ta, tb = tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev)
        tc = tvm.runtime.tensor(np.zeros((m, n), np.float32), dev)
        return Prepared(
            lambda: lib(ta, tb, tc),
            tc.numpy,
            f"tvm {tvm.__version__}, MR={mr} bn={bn}, compile {compile_s:.2f} s",
        )

    def tvm_threads() -> str:
        import tvm

        return str(tvm.runtime.num_threads())

    def ember_setup(scheduled: bool, target: str = "llvm") -> Prepared:
        import ember

        mr, bn = tiles[target]
        start = time.perf_counter()
        if scheduled:
            s, args = ember_scheduled(m, n, k, mr, bn)
        else:
            s, args = ember_naive(m, n, k)
        mod = ember.build(s, args, target=target, name="matmul")
        compile_s = time.perf_counter() - start
        c = np.empty((m, n), np.float32)
        tile = f"MR={mr} bn={bn}, " if scheduled else ""
        return Prepared(
            lambda: mod(a, b, c),
            lambda: c,
            f"{tile}compile {compile_s:.2f} s",
            {"compile_s": compile_s},
        )

    return [
        Impl(REFERENCE, numpy_setup, openblas_threads),
        Impl("onnxruntime", ort_setup, lambda: str(cores())),
        Impl("torch", torch_setup, torch_threads),
        Impl("ember naive", lambda: ember_setup(False), ember_threads),
        *(
            impl
            for target in tiles
            for impl in (
                Impl(
                    _label(TVM_SCHEDULED, target),
                    partial(tvm_setup, target),
                    tvm_threads,
                ),
                Impl(
                    _label(EMBER_SCHEDULED, target),
                    partial(ember_setup, True, target),
                    ember_threads,
                ),
            )
        ),
    ]


def _label(name: str, target: str) -> str:
    return name if target == "llvm" else f"{name} {target.removeprefix('llvm ')}"


def main(argv: list[str] | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="M = N = K")
    parser.add_argument(
        "--quick", action="store_true", help="size 256 and shorter timing"
    )
    parser.add_argument(
        "--mr", type=int, help="rows of the register tile (default: the target's)"
    )
    parser.add_argument(
        "--bn",
        type=int,
        help="columns of the register tile, B panels (default: the target's)",
    )
    parser.add_argument(
        "--mcpu",
        action="append",
        help="also build for this CPU (default: haswell; --mcpu none: no more rows)",
    )
    add_timing_options(parser)
    opts = parser.parse_args(argv)
    size = 256 if opts.quick else opts.size
    for what, factor in (("--mr", opts.mr), ("--bn", opts.bn)):
        if factor is not None and (factor <= 0 or size % factor):
            parser.error(f"{what} {factor} must be positive and divide the size {size}")
    targets = ["llvm"] + [
        f"llvm -mcpu={m}" for m in (opts.mcpu or ["haswell"]) if m != "none"
    ]
    tiles = {}
    for target in targets:
        mr, bn = register_tile(target, size)
        tiles[target] = (opts.mr or mr, opts.bn or bn)

    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    flops = 2.0 * size**3

    print(f"fp32 matmul {size} x {size} x {size} ({flops / 1e9:.2f} GFLOP)")
    print(describe_machine())
    print(threads_note())
    rows = run_all(
        implementations(a, b, tiles),
        expected,
        flops,
        REFERENCE,
        **timing_options(opts),
    )
    scheduled = next(r for r in rows if r.name == EMBER_SCHEDULED)
    if "compile_s" in scheduled.extra:
        print(
            f"ember scheduled compile time: {scheduled.extra['compile_s']:.2f} s "
            "(target < 1 s; built after the naive kernel)"
        )
    print("targets:")
    print(check_target(rows, EMBER_SCHEDULED, REFERENCE, 0.6))
    print(check_target(rows, EMBER_SCHEDULED, TVM_SCHEDULED, 1.0))
    return rows


if __name__ == "__main__":
    main()
