"""The GPU targets: te schedules with bound loops as CUDA C and OpenCL C kernels.

OpenCL kernels run on the OpenCL platform here (PoCL's CPU device) and match
numpy; CUDA's PTX (NVRTC) is checked by ptxas for sm_80 and sm_90, and runs
where an NVIDIA GPU is. Each skips, saying why, where its tool is missing.
"""

import glob
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import runtime as rt
from ember import te
from ember.backends.source.gpu import build_plan
from ember.backends.source.printer import SourceError
from ember.backends.source.target import DeviceTarget
from ember.passes import get_context
from ember.te.schedule import ScheduleError

ROOT = Path(__file__).resolve().parent.parent


def _missing(device) -> str | None:
    try:
        rt.empty((1,), device=device)
    except Exception as error:  # noqa: BLE001 - any failure means no device
        return str(error)
    return None


NO_OPENCL = _missing(rt.opencl(0))
NO_CUDA = _missing(rt.cuda(0))
needs_opencl = pytest.mark.skipif(NO_OPENCL is not None, reason=f"{NO_OPENCL}")
needs_cuda = pytest.mark.skipif(NO_CUDA is not None, reason=f"{NO_CUDA}")


def _ptxas() -> str | None:
    try:
        import nvidia.cuda_nvcc  # type: ignore[import-not-found]

        for folder in nvidia.cuda_nvcc.__path__:
            found = glob.glob(os.path.join(folder, "bin", "ptxas"))
            if found:
                return found[0]
    except ImportError:
        pass
    return None


PTXAS = _ptxas()


def loop_module(s, args, name):
    return ember.lower(s, args, name=name)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def check_ptx(mod, tmp_path) -> None:
    """ptxas accepts the module's PTX for sm_80 and sm_90."""
    if PTXAS is None:
        pytest.skip("ptxas missing: pip install nvidia-cuda-nvcc-cu12")
    ptx = tmp_path / "kernel.ptx"
    ptx.write_text(mod.get_source("ptx"))
    for arch in ("sm_80", "sm_90"):
        done = subprocess.run(
            [PTXAS, f"-arch={arch}", str(ptx), "-o", os.devnull],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"ptxas {arch}: {done.stderr}"


def run_on(mod, device, inputs, out_shapes):
    """Run `mod` on `device` with numpy inputs; the outputs as numpy."""
    args = [rt.array(a, device=device) for a in inputs]
    outs = [rt.empty(shape, device=device) for shape in out_shapes]
    mod(*args, *outs)
    return [o.numpy() for o in outs]


# --- the programs ---------------------------------------------------------------


def vecadd(n=1024, factor=64):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=factor)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def tiled_matmul(n=64, tile=16):
    """TVM's classic: tiles of A and B copied to shared memory by all the threads
    of a block at each step of the reduction, C accumulated in a local."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    CC = s.cache_write(C, "local")
    by, ty = s[C].split(C.op.axis[0], factor=tile)
    bx, tx = s[C].split(C.op.axis[1], factor=tile)
    s[C].reorder(by, bx, ty, tx)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[CC].compute_at(s[C], tx)
    ko, _ = s[CC].split(CC.op.reduce_axis[0], factor=tile)
    for T in (AA, BB):
        s[T].compute_at(s[CC], ko)
        y, x = s[T].op.axis
        s[T].bind(y, te.thread_axis("threadIdx.y"))
        s[T].bind(x, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def row_sum(rows=100, cols=37, threads=32):
    """One thread per row, its reduction serial; 100 rows leave a guard."""
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    S = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="S")
    s = te.create_schedule(S.op)
    bx, tx = s[S].split(S.op.axis[0], factor=threads)
    s[S].bind(bx, te.thread_axis("blockIdx.x"))
    s[S].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, S]


def softmax(rows=64, cols=48):
    """Two reductions and two elementwise stages, each its own kernel; the row
    maxima and sums are the plan's intermediate buffers."""
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    M = te.compute((rows,), lambda i: te.max(A[i, k], axis=k), name="M")
    E = te.compute((rows, cols), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, cols), name="k2")
    S = te.compute((rows,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    P = te.compute((rows, cols), lambda i, j: E[i, j] / S[i], name="P")
    s = te.create_schedule(P.op)
    for T in (M, S):
        bx, tx = s[T].split(T.op.axis[0], factor=16)
        s[T].bind(bx, te.thread_axis("blockIdx.x"))
        s[T].bind(tx, te.thread_axis("threadIdx.x"))
    for T in (E, P):
        s[T].bind(T.op.axis[0], te.thread_axis("blockIdx.x"))
        s[T].bind(T.op.axis[1], te.thread_axis("threadIdx.x"))
    return s, [A, P]


def softmax_ref(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# --- source and plans -------------------------------------------------------------


def test_vecadd_source_and_plan():
    s, args = vecadd()
    plan = build_plan(loop_module(s, args, "vecadd"), DeviceTarget("cuda"))
    source = plan.pop("source")
    assert 'extern "C" __global__ void __launch_bounds__(64)' in source
    assert "int32_t i_outer = (int32_t)blockIdx.x;" in source
    assert "int32_t i_inner = (int32_t)threadIdx.x;" in source
    assert "C[t0] = t1 + t2;" in source
    assert plan == {
        "format": "ember.device/1",
        "kind": "cuda",
        "binary": None,
        "source_format": "cu",
        "functions": {
            "vecadd": {
                "args": [
                    {"name": n, "shape": [1024], "dtype": "float32", "output": n == "C"}
                    for n in "ABC"
                ],
                "buffers": [],
                "launches": [
                    {
                        "kernel": "vecadd_kernel0",
                        "grid": [16, 1, 1],
                        "block": [64, 1, 1],
                        "args": [{"arg": 0}, {"arg": 1}, {"arg": 2}],
                        "shared_bytes": 0,
                    }
                ],
            }
        },
    }


def test_matmul_shares_tiles_with_barriers_around_the_copies():
    s, args = tiled_matmul()
    source = build_plan(loop_module(s, args, "matmul"), DeviceTarget("opencl"))[
        "source"
    ]
    assert "__local float A_shared[256];" in source
    assert "__local float B_shared[256];" in source
    assert "float C_local[1];" in source
    body = source[source.index("for (int k_outer") :]
    first, second = (
        body.index("barrier(CLK_LOCAL_MEM_FENCE);"),
        body.rindex("barrier(CLK_LOCAL_MEM_FENCE);"),
    )
    copy, use = body.index("A_shared[ax"), body.index("for (int k_inner")
    assert first < copy < second < use
    assert body.count("barrier(") == 2


def test_a_smaller_bound_loop_runs_under_a_guard():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((128,), lambda i: A[i % 64] + 1.0, name="C")
    s = te.create_schedule([B.op, C.op])
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    module = loop_module(s, [A, B, C], "two")
    plan = build_plan(module, DeviceTarget("cuda"))
    launches = plan["functions"]["two"]["launches"]
    assert [launch["block"] for launch in launches] == [[64, 1, 1], [128, 1, 1]]
    assert "if (" not in plan["source"]  # each kernel is its own launch


def test_cuda_ptx_passes_ptxas(tmp_path):
    for program, name in ((vecadd, "vecadd"), (tiled_matmul, "matmul")):
        s, args = program()
        mod = ember.build(s, args, target="cuda -arch=sm_80", name=name)
        assert ".target sm_80" in mod.get_source("ptx")
        check_ptx(mod, tmp_path)
    s, args = softmax()
    check_ptx(ember.build(s, args, target="cuda", name="softmax"), tmp_path)


# --- runs -------------------------------------------------------------------------


@needs_opencl
def test_vecadd_runs_on_opencl():
    s, args = vecadd()
    mod = ember.build(s, args, target="opencl", name="vecadd")
    a, b = rand(1024), rand(1024, seed=1)
    (c,) = run_on(mod, rt.opencl(0), [a, b], [(1024,)])
    np.testing.assert_allclose(c, a + b)


@needs_opencl
@pytest.mark.parametrize("n", [64, 60])  # 60: the tiles' guards stay inside
def test_tiled_matmul_runs_on_opencl(n):
    s, args = tiled_matmul(n=n)
    mod = ember.build(s, args, target="opencl", name="matmul")
    a, b = rand(n, n), rand(n, n, seed=1)
    (c,) = run_on(mod, rt.opencl(0), [a, b], [(n, n)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@needs_opencl
def test_reductions_run_on_opencl():
    s, args = row_sum()
    mod = ember.build(s, args, target="opencl", name="row_sum")
    a = rand(100, 37)
    (out,) = run_on(mod, rt.opencl(0), [a], [(100,)])
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)
    s, args = softmax()
    mod = ember.build(s, args, target="opencl", name="softmax")
    plan = mod.plan  # type: ignore[attr-defined]
    assert len(plan["functions"]["softmax"]["buffers"]) == 3  # M, E and S
    a = rand(64, 48)
    (out,) = run_on(mod, rt.opencl(0), [a], [(64, 48)])
    np.testing.assert_allclose(out, softmax_ref(a), rtol=1e-5, atol=1e-6)


@needs_cuda
def test_programs_run_on_cuda():
    for n in (64, 60):
        s, args = tiled_matmul(n=n)
        mod = ember.build(s, args, target="cuda", name="matmul")
        a, b = rand(n, n), rand(n, n, seed=1)
        (c,) = run_on(mod, rt.cuda(0), [a, b], [(n, n)])
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    s, args = row_sum()
    mod = ember.build(s, args, target="cuda", name="row_sum")
    a = rand(100, 37)
    (out,) = run_on(mod, rt.cuda(0), [a], [(100,)])
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)
    s, args = softmax()
    mod = ember.build(s, args, target="cuda", name="softmax")
    a = rand(64, 48)
    (out,) = run_on(mod, rt.cuda(0), [a], [(64, 48)])
    np.testing.assert_allclose(out, softmax_ref(a), rtol=1e-5, atol=1e-6)


@needs_opencl
@settings(max_examples=8, deadline=None)
@given(
    rows=st.integers(1, 12),
    cols=st.integers(1, 40),
    inner=st.integers(1, 16),
    outer_tag=st.sampled_from(["blockIdx.x", "blockIdx.y", "vthread"]),
    row_tag=st.sampled_from(["blockIdx.y", "threadIdx.y", "blockIdx.z"]),
)
def test_random_splits_and_binds_match_numpy(rows, cols, inner, outer_tag, row_tag):
    A = te.placeholder((rows, cols), name="A")
    B = te.compute((rows, cols), lambda i, j: A[i, j] * 3.0 - 1.0, name="B")
    s = te.create_schedule(B.op)
    jo, ji = s[B].split(B.op.axis[1], factor=inner)
    if outer_tag == row_tag:
        return
    s[B].bind(B.op.axis[0], te.thread_axis(row_tag))
    s[B].bind(jo, te.thread_axis(outer_tag))
    s[B].bind(ji, te.thread_axis("threadIdx.x"))
    mod = ember.build(s, [A, B], target="opencl", name="affine")
    a = rand(rows, cols)
    (b,) = run_on(mod, rt.opencl(0), [a], [(rows, cols)])
    np.testing.assert_allclose(b, a * 3.0 - 1.0, rtol=1e-6, atol=1e-6)  # a fused FMA


@needs_opencl
@settings(max_examples=6, deadline=None)
@given(n=st.integers(1, 40), tile=st.sampled_from([2, 4, 8]))
def test_random_shared_tiles_match_numpy(n, tile):
    """The shared-memory matmul with any tile, dividing n or not."""
    s, args = tiled_matmul(n=n, tile=tile)
    mod = ember.build(s, args, target="opencl", name="matmul")
    a, b = rand(n, n), rand(n, n, seed=1)
    (c,) = run_on(mod, rt.opencl(0), [a, b], [(n, n)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


# --- errors -----------------------------------------------------------------------


def test_bind_on_a_cpu_target_names_the_gpu_targets():
    s, args = vecadd()
    with pytest.raises(
        ScheduleError,
        match=r"loop 'i.outer' of stage 'C' is bound to blockIdx.x; bind needs a "
        r"GPU target: build with target='cuda' or 'opencl'",
    ):
        ember.build(s, args, target="llvm")


def test_a_nest_without_bound_loops_is_refused():
    A = te.placeholder((16,), name="A")
    C = te.compute((16,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(
        SourceError, match=r"stage 'C' has no loop bound to a GPU thread axis"
    ):
        ember.build(s, [A, C], target="cuda")


def test_a_block_larger_than_the_target_allows_is_refused():
    s, args = vecadd(n=4096, factor=2048)
    with pytest.raises(
        SourceError,
        match=r"stage 'C': kernel vecadd_kernel0 has 2048 threads per block "
        r"\(2048 x 1 x 1\), more than max_num_threads = 1024",
    ):
        ember.build(s, args, target="cuda", name="vecadd")
    s, args = vecadd(n=1024, factor=128)
    with pytest.raises(SourceError, match=r"more than max_num_threads = 64"):
        ember.build(s, args, target="opencl -max_num_threads=64", name="vecadd")


def test_too_much_shared_memory_is_refused():
    s, args = tiled_matmul(n=64, tile=16)
    with pytest.raises(
        SourceError,
        match=r"kernel matmul_kernel0 uses 2048 bytes of shared memory "
        r"\(B.shared, A.shared\), more than max_shared_memory_per_block = 1024",
    ):
        ember.build(
            s, args, target="cuda -max_shared_memory_per_block=1024", name="matmul"
        )


GLOBAL_IN_KERNEL = """
func.func @f(%A: memref<64xf32> {ember.name = "A"},
             %C: memref<64xf32> {ember.name = "C", ember.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  loop.for %i = %c0 to %c64 step %c1 {
    %T = loop.alloc : memref<1xf32>
    %x = memref.load %A[%i] : memref<64xf32>
    memref.store %x, %T[%c0] : memref<1xf32>
    %y = memref.load %T[%c0] : memref<1xf32>
    memref.store %y, %C[%i] : memref<64xf32>
  } {ember.thread = "threadIdx.x"}
  func.return
}
"""


def test_a_global_buffer_inside_a_kernel_is_refused():
    from xdsl.parser import Parser

    module = Parser(get_context(), GLOBAL_IN_KERNEL).parse_module()
    with pytest.raises(
        SourceError,
        match=r"stage 'T' allocates a global buffer inside kernel f_kernel0; use "
        r"cache_read/cache_write with scope 'shared' or 'local'",
    ):
        build_plan(module, DeviceTarget("opencl"))


def test_nvrtc_errors_carry_its_log():
    from ember.backends.source.nvrtc import NVRTCError, compile_ptx

    with pytest.raises(NVRTCError, match=r"(?s)compile for sm_80.*undefined"):
        compile_ptx('extern "C" __global__ void k() { undefined_name = 1; }', "sm_80")


def test_three_targets_example():
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "three_targets.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "fadd" in out and "runs here: ok" in out  # LLVM IR for the host, run
    assert "__global__" in out and "blockIdx.x" in out  # CUDA C
    assert "skylake-avx512" in out


# --- dtypes and ops against the CPU build ------------------------------------------


def mixed_program(n: int, bind: bool):
    """Integer division and remainder of negative numbers, the fast-math bit
    tricks, math functions, bool, int8, int64, float64 and a bit cast."""
    from ember.topi import fastmath

    X = te.placeholder((n,), name="X", dtype="int32")
    Y = te.placeholder((n,), name="Y", dtype="int32")
    F = te.placeholder((n,), name="F")
    outs = [
        te.compute((n,), lambda i: X[i] // Y[i], name="Q"),
        te.compute((n,), lambda i: X[i] % Y[i], name="R"),
        te.compute(
            (n,),
            lambda i: fastmath.exp(F[i]) + fastmath.erf(F[i]) + fastmath.tanh(F[i]),
            name="FM",
        ),
        te.compute(
            (n,),
            lambda i: te.exp(F[i]) + te.sqrt(te.abs(F[i])) + te.log(te.abs(F[i]) + 1.0),
            name="M",
        ),
        te.compute((n,), lambda i: te.all(F[i] < 0.5, X[i] > 0), name="B"),
        te.compute(
            (n,),
            lambda i: F[i].astype("float64") * 1.5 - (X[i] // 7).astype("float64"),
            name="D",
        ),
        te.compute((n,), lambda i: (X[i] % 100).astype("int8"), name="I8"),
        te.compute((n,), lambda i: te.select(F[i] > 0.5, F[i], -F[i]), name="S"),
        te.compute((n,), lambda i: te.reinterpret("int32", F[i]) // 3, name="BC"),
        te.compute(
            (n,), lambda i: F[i].astype("int64") * X[i].astype("int64") - 5, name="L"
        ),
    ]
    s = te.create_schedule([o.op for o in outs])
    if bind:
        for o in outs:
            bx, tx = s[o].split(o.op.axis[0], factor=16)
            s[o].bind(bx, te.thread_axis("blockIdx.x"))
            s[o].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [X, Y, F, *outs]


DEVICES = [
    pytest.param("opencl", marks=needs_opencl),
    pytest.param("cuda", marks=needs_cuda),
]


def device_of(kind: str):
    return rt.opencl(0) if kind == "opencl" else rt.cuda(0)


@pytest.mark.parametrize("kind", DEVICES)
def test_dtypes_and_ops_match_the_cpu_build(kind):
    n = 64
    rng = np.random.default_rng(0)
    x = rng.integers(-1000, 1000, n).astype("int32")
    y = rng.integers(-9, 9, n).astype("int32")
    y[y == 0] = 3
    f = (rng.standard_normal(n) * 2).astype("float32")
    s, args = mixed_program(n, bind=False)
    cpu = ember.build(s, args, target="llvm", name="mixed")
    expected = [np.zeros(t.shape, t.dtype) for t in args[3:]]
    cpu(x, y, f, *expected)
    s, args = mixed_program(n, bind=True)
    mod = ember.build(s, args, target=kind, name="mixed")
    dev = device_of(kind)
    outs = [rt.empty(e.shape, dtype=e.dtype, device=dev) for e in expected]
    mod(*(rt.array(a, device=dev) for a in (x, y, f)), *outs)
    for out, want, t in zip(outs, expected, args[3:], strict=True):
        got = out.numpy()
        assert got.dtype == want.dtype, t.name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=t.name)


def test_dtypes_and_ops_pass_ptxas(tmp_path):
    s, args = mixed_program(64, bind=True)
    check_ptx(ember.build(s, args, target="cuda", name="mixed"), tmp_path)


def half_program(n: int):
    H = te.placeholder((n,), name="H", dtype="float16")
    E = te.compute((n,), lambda i: te.exp(H[i]) * H[i] + 1.0, name="E")
    s = te.create_schedule(E.op)
    bx, tx = s[E].split(E.op.axis[0], factor=16)
    s[E].bind(bx, te.thread_axis("blockIdx.x"))
    s[E].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [H, E]


@pytest.mark.parametrize("kind", DEVICES)
def test_float16_rounds_after_each_op(kind):
    """Neither PoCL nor NVRTC (without CUDA's headers) has half arithmetic: a
    float16 value is a float rounded to float16 after each op, as numpy's."""
    n = 64
    h = np.linspace(-4, 4, n).astype("float16")
    s, args = half_program(n)
    mod = ember.build(s, args, target=kind, name="half")
    dev = device_of(kind)
    out = rt.empty((n,), dtype="float16", device=dev)
    mod(rt.array(h, device=dev), out)
    want = (np.exp(h) * h + np.float16(1.0)).astype("float16")
    np.testing.assert_array_equal(out.numpy(), want)


def test_float16_passes_ptxas(tmp_path):
    s, args = half_program(64)
    cuda = ember.build(s, args, target="cuda", name="half")
    assert "cvt.rn.f16.f32" in cuda.get_source()
    check_ptx(cuda, tmp_path)


def test_index_width_follows_the_largest_buffer():
    s, args = vecadd(n=1 << 30, factor=256)
    source = build_plan(loop_module(s, args, "big"), DeviceTarget("cuda"))["source"]
    assert "int64_t i_outer = (int64_t)blockIdx.x;" in source
    s, args = vecadd(n=1 << 20, factor=256)
    source = build_plan(loop_module(s, args, "small"), DeviceTarget("opencl"))["source"]
    assert "int i_outer = (int)get_group_id(0);" in source


def test_a_grid_beyond_cuda_limits_is_refused():
    A = te.placeholder((4, 70000), name="A")
    B = te.compute((4, 70000), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    s[B].bind(B.op.axis[1], te.thread_axis("blockIdx.y"))
    with pytest.raises(SourceError, match=r"launches 70000 along blockIdx.y, more"):
        build_plan(loop_module(s, [A, B], "wide"), DeviceTarget("cuda"))


BARRIER_IN_GUARD = """
func.func @g(%A: memref<64xf32> {ember.name = "A"},
             %C: memref<64xf32> {ember.name = "C", ember.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  loop.for %b = %c0 to %c1 step %c1 {
    %S = loop.alloc shared : memref<64xf32>
    loop.for %i = %c0 to %c64 step %c1 {
      %x = memref.load %A[%i] : memref<64xf32>
      memref.store %x, %C[%i] : memref<64xf32>
    } {ember.thread = "threadIdx.x"}
    loop.for %j = %c0 to %c32 step %c1 {
      %y = memref.load %A[%j] : memref<64xf32>
      memref.store %y, %S[%j] : memref<64xf32>
      %k = arith.addi %j, %c1 : index
      %z = memref.load %S[%k] : memref<64xf32>
      memref.store %z, %C[%j] : memref<64xf32>
    } {ember.thread = "threadIdx.x"}
  } {ember.thread = "blockIdx.x"}
  func.return
}
"""


def test_a_barrier_needed_inside_a_guard_is_refused():
    from xdsl.parser import Parser

    module = Parser(get_context(), BARRIER_IN_GUARD).parse_module()
    with pytest.raises(
        SourceError,
        match=r"kernel g_kernel0 needs a barrier between writes and reads of shared "
        r"memory inside the guard of loop 'j' \(threadIdx.x\)",
    ):
        build_plan(module, DeviceTarget("cuda"))
