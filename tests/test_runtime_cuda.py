"""CUDA devices: arrays in device memory, hand-written PTX run from launch plans,
and DLPack with torch CUDA tensors (pointer-equal, both ways).

Needs an NVIDIA GPU and its driver (libcuda.so.1); skips, saying why, where there
is none. The torch tests also need torch built with CUDA. On a machine without a
driver only the no-driver error is tested: one clear EmberError, never a crash.
"""

import gc

import numpy as np
import pytest

from ember import runtime as rt
from ember.runtime.device_module import DeviceModule


def _cuda_missing() -> str | None:
    try:
        rt.empty((1,), device=rt.cuda(0))
    except rt.EmberError as e:
        if "libcuda.so.1" in str(e):
            return "no CUDA driver (libcuda.so.1)"
        return str(e)
    return None


_MISSING = _cuda_missing()
needs_cuda = pytest.mark.skipif(_MISSING is not None, reason=str(_MISSING))
DEV = rt.cuda(0)
N = 1000

# Hand-written PTX (no compiler needed): C = A + B over 1000 floats, T = 2A, and
# each block of B its block of A reversed through dynamic shared memory.
PTX = r"""
.version 7.0
.target sm_52
.address_size 64

.extern .shared .align 4 .b8 smem[];

.visible .entry vecadd_kernel0(.param .u64 A, .param .u64 B, .param .u64 C)
{
    .reg .pred %p<2>;
    .reg .f32 %f<4>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<11>;
    ld.param.u64 %rd1, [A];
    ld.param.u64 %rd2, [B];
    ld.param.u64 %rd3, [C];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    setp.ge.s32 %p1, %r4, 1000;
    @%p1 bra $L_done;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r4, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
$L_done:
    ret;
}

.visible .entry scale_kernel0(.param .u64 A, .param .u64 T)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [A];
    ld.param.u64 %rd2, [T];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    setp.ge.s32 %p1, %r4, 1000;
    @%p1 bra $L_end;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.s32 %rd5, %r4, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f1, [%rd6];
    add.f32 %f2, %f1, %f1;
    st.global.f32 [%rd7], %f2;
$L_end:
    ret;
}

.visible .entry reverse_kernel0(.param .u64 A, .param .u64 B)
{
    .reg .f32 %f<2>;
    .reg .b32 %r<9>;
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [A];
    ld.param.u64 %rd2, [B];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    mul.wide.s32 %rd5, %r4, 4;
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f32 %f1, [%rd6];
    mov.u32 %r5, smem;
    shl.b32 %r6, %r1, 2;
    add.s32 %r6, %r5, %r6;
    st.shared.f32 [%r6], %f1;
    bar.sync 0;
    sub.s32 %r7, %r3, %r1;
    sub.s32 %r7, %r7, 1;
    shl.b32 %r7, %r7, 2;
    add.s32 %r8, %r5, %r7;
    ld.shared.f32 %f1, [%r8];
    add.s64 %rd6, %rd4, %rd5;
    st.global.f32 [%rd6], %f1;
    ret;
}
"""

SOURCE = """// What the PTX was written from, for get_source.
extern "C" __global__ void vecadd_kernel0(const float* A, const float* B, float* C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1000) C[i] = A[i] + B[i];
}
"""


def _arg(name, shape, output=False):
    return {"name": name, "shape": list(shape), "dtype": "float32", "output": output}


def _launch(kernel, args, grid=16, block=64, shared_bytes=0):
    return {
        "kernel": kernel,
        "grid": [grid, 1, 1],
        "block": [block, 1, 1],
        "args": args,
        "shared_bytes": shared_bytes,
    }


def make_plan():
    return {
        "format": "ember.device/1",
        "kind": "cuda",
        "source": SOURCE,
        "binary": PTX,
        "source_format": "cu",
        "binary_format": "ptx",
        "functions": {
            "vecadd": {
                "args": [_arg("A", [N]), _arg("B", [N]), _arg("C", [N], True)],
                "buffers": [],
                "launches": [
                    _launch("vecadd_kernel0", [{"arg": 0}, {"arg": 1}, {"arg": 2}])
                ],
            },
            "scale_add": {  # C = 2A + B through an intermediate buffer
                "args": [_arg("A", [N]), _arg("B", [N]), _arg("C", [N], True)],
                "buffers": [{"shape": [N], "dtype": "float32"}],
                "launches": [
                    _launch("scale_kernel0", [{"arg": 0}, {"buffer": 0}]),
                    _launch("vecadd_kernel0", [{"buffer": 0}, {"arg": 1}, {"arg": 2}]),
                ],
            },
            "reverse": {
                "args": [_arg("A", [4, 64]), _arg("B", [4, 64], True)],
                "buffers": [],
                "launches": [
                    _launch("reverse_kernel0", [{"arg": 0}, {"arg": 1}], 4, 64, 256)
                ],
            },
        },
    }


@pytest.fixture(scope="module")
def mod():
    return DeviceModule(make_plan())


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.random(N, dtype="float32"), rng.random(N, dtype="float32")


@pytest.mark.skipif(_MISSING is None, reason="this machine has a CUDA driver")
def test_no_driver_is_one_clear_error():
    with pytest.raises(rt.EmberError, match=r"no CUDA driver \(libcuda\.so\.1\)"):
        rt.empty((2,), device=rt.cuda(0))
    with pytest.raises(rt.EmberError, match="libcuda.so.1"):
        rt.array(np.zeros(2), device=rt.cuda(0))
    assert not rt.cuda(0).exist
    mod = DeviceModule(make_plan())  # built without a driver: only calls need one
    assert mod.get_source("ptx") == PTX
    with pytest.raises(rt.EmberError, match="libcuda.so.1"):
        mod["vecadd"](*[np.zeros(N, "float32")] * 3)


def test_plan_without_a_driver():
    mod = DeviceModule(make_plan())
    assert mod.get_source() == mod.get_source("cuda") == SOURCE
    with pytest.raises(rt.EmberError, match="it has '', 'cuda', 'cu', 'ptx'"):
        mod.get_source("cl")
    assert mod.function_names() == ["vecadd", "scale_add", "reverse"]


@needs_cuda
def test_round_trip_and_copies():
    x = np.arange(24, dtype="float32").reshape(4, 6)
    a = rt.array(x, device=DEV)
    assert (a.shape, a.dtype, a.device) == ((4, 6), "float32", DEV)
    np.testing.assert_array_equal(a.numpy(), x)
    b = a.copyto(DEV)
    assert b.data_ptr() != a.data_ptr()
    a.copyfrom(x * 2)
    np.testing.assert_array_equal(b.numpy(), x)
    np.testing.assert_array_equal(a.copyto(rt.cpu()).numpy(), x * 2)
    with pytest.raises(rt.EmberError, match=r"cuda\(0\) memory.*a\.numpy\(\)"):
        np.asarray(a)
    assert rt.cuda(0).exist and not rt.cuda(64).exist
    with pytest.raises(ValueError, match="no device cuda.64."):
        rt.empty((2,), device=rt.cuda(64))


@needs_cuda
def test_memory_is_freed_with_the_array():
    for _ in range(40):  # 1 GiB each: 40 GiB if never freed
        a = rt.empty((256, 1024, 1024), "float32", DEV)
        del a


@needs_cuda
def test_launch_plans(mod, data):
    a, b = data
    A, B = rt.array(a, device=DEV), rt.array(b, device=DEV)
    C = rt.empty((N,), "float32", DEV)
    mod["vecadd"](A, B, C)
    np.testing.assert_allclose(C.numpy(), a + b)
    c = np.zeros(N, "float32")
    mod["scale_add"](a, b, c)  # numpy in and out; a buffer between the launches
    np.testing.assert_allclose(c, 2 * a + b, rtol=1e-6)
    x = np.arange(256, dtype="float32").reshape(4, 64)
    y = np.zeros((4, 64), "float32")
    mod["reverse"](x, y)  # dynamic shared memory and a barrier
    np.testing.assert_array_equal(y, x[:, ::-1])


@needs_cuda
def test_errors(mod, data):
    a, b = data
    with pytest.raises(ValueError, match=r"argument 1 \(B\): expected shape"):
        mod["vecadd"](a, b[:3], np.zeros(N, "float32"))
    plan = make_plan()
    plan["functions"]["vecadd"]["launches"][0]["kernel"] = "missing_kernel"
    with pytest.raises(
        rt.EmberError, match="the PTX defines no kernel 'missing_kernel'"
    ):
        DeviceModule(plan)["vecadd"](a, b, np.zeros(N, "float32"))
    plan = make_plan()
    plan["binary"] = ".version 7.0\n.target sm_52\nnot ptx at all"
    with pytest.raises(rt.EmberError, match="cuModuleLoadData failed: CUDA_ERROR"):
        DeviceModule(plan)["vecadd"](a, b, np.zeros(N, "float32"))
    plan["binary"] = None
    with pytest.raises(rt.EmberError, match="carries no PTX"):
        DeviceModule(plan)["vecadd"](a, b, np.zeros(N, "float32"))


@needs_cuda
def test_time_evaluator_and_events(mod, data):
    a, b = data
    args = [
        rt.array(a, device=DEV),
        rt.array(b, device=DEV),
        rt.empty((N,), device=DEV),
    ]
    result = mod.time_evaluator("vecadd", DEV, number=10, repeat=3)(*args)
    assert len(result.results) == 3 and result.mean > 0
    from ember.runtime.device_api import device_api

    api = device_api(DEV)
    ms = api.elapsed_ms(0, lambda: mod["vecadd"](*args))  # pyright: ignore[reportAttributeAccessIssue]
    assert ms > 0
    assert api.describe(0)["compute_capability_major"] >= 5


# --- torch CUDA tensors -----------------------------------------------------------


def _torch():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


@needs_cuda
def test_from_dlpack_of_a_torch_cuda_tensor_shares_its_memory():
    torch = _torch()
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    a = rt.from_dlpack(t)
    assert a.device == rt.cuda(t.device.index or 0)
    assert a.data_ptr() == t.data_ptr()
    assert (a.shape, a.dtype) == ((3, 4), "float32")
    del t
    gc.collect()
    np.testing.assert_array_equal(a.numpy(), np.arange(12).reshape(3, 4))  # kept alive
    view = torch.arange(10, dtype=torch.float32, device="cuda")[2:]  # a byte offset
    assert rt.from_dlpack(view).data_ptr() == view.data_ptr()


@needs_cuda
def test_torch_from_dlpack_of_a_cuda_ndarray_shares_its_memory():
    torch = _torch()
    a = rt.array(np.arange(6, dtype="float32").reshape(2, 3), device=DEV)
    t = torch.from_dlpack(a)
    assert t.device.type == "cuda" and t.data_ptr() == a.data_ptr()
    assert t.shape == (2, 3) and t.stride() == (3, 1)
    del a
    gc.collect()
    t += 1  # a's memory lives as long as t
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(1, 7).reshape(2, 3))


@needs_cuda
def test_kernels_write_torch_tensors_in_place(mod):
    torch = _torch()
    a = torch.rand(N, device="cuda")
    b = torch.rand(N, device="cuda")
    c = torch.empty(N, device="cuda")
    mod["vecadd"](a, b, c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)
    # ember's memory and torch's share the primary context: copies both ways
    e = rt.empty((N,), "float32", DEV).copyfrom(rt.from_dlpack(c))
    torch.testing.assert_close(torch.from_dlpack(e), a + b)
