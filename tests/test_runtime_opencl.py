"""OpenCL devices: arrays in cl_mem, and hand-written kernels run from launch plans.

Runs on any OpenCL platform (PoCL's CPU device here: pocl-opencl-icd); skips,
saying why, where the machine has none.
"""

import threading

import numpy as np
import pytest

from ember import runtime as rt
from ember.runtime import dlpack
from ember.runtime.device_module import DeviceModule


def _opencl_missing() -> str | None:
    try:
        rt.empty((1,), device=rt.opencl(0))
    except rt.EmberError as e:
        return str(e)
    return None


_MISSING = _opencl_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=f"no OpenCL: {_MISSING}")

DEV = rt.opencl(0)
N = 1000  # not a multiple of the block: the kernels check their bounds

SOURCE = """
__kernel void vecadd_kernel0(__global const float* A, __global const float* B,
                             __global float* C) {
  int i = get_global_id(0);
  if (i < 1000) C[i] = A[i] + B[i];
}

__kernel void scale_kernel0(__global const float* A, __global float* T) {
  int i = get_global_id(0);
  if (i < 1000) T[i] = 2.0f * A[i];
}

__kernel void scale_kernel1(__global const float* T, __global const float* B,
                            __global float* C) {
  int i = get_global_id(0);
  if (i < 1000) C[i] = T[i] + B[i];
}

/* Sums each block of 64 in __local memory, a tree of barriers. */
__kernel void blocksum_kernel0(__global const float* A, __global float* S) {
  __local float part[64];
  int t = get_local_id(0);
  part[t] = A[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = 32; stride > 0; stride >>= 1) {
    if (t < stride) part[t] += part[t + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) S[get_group_id(0)] = part[0];
}
"""


def _arg(name, shape, output=False, dtype="float32"):
    return {"name": name, "shape": list(shape), "dtype": dtype, "output": output}


def _launch(kernel, args, grid=16, block=64):
    return {
        "kernel": kernel,
        "grid": [grid, 1, 1],
        "block": [block, 1, 1],
        "args": args,
        "shared_bytes": 0,
    }


def make_plan(source=SOURCE):
    return {
        "format": "ember.device/1",
        "kind": "opencl",
        "source": source,
        "binary": None,
        "source_format": "cl",
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
                    _launch("scale_kernel1", [{"buffer": 0}, {"arg": 1}, {"arg": 2}]),
                ],
            },
            "blocksum": {
                "args": [_arg("A", [8, 64]), _arg("S", [8], True)],
                "buffers": [],
                "launches": [_launch("blocksum_kernel0", [{"arg": 0}, {"arg": 1}], 8)],
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


# --- arrays -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int8", "float64", "bool"])
def test_round_trip(dtype):
    x = (np.arange(24) % 3).astype(dtype).reshape(2, 3, 4)
    a = rt.array(x, device=DEV)
    assert (a.shape, a.dtype, a.device) == ((2, 3, 4), dtype, DEV)
    np.testing.assert_array_equal(a.numpy(), x)
    t = dlpack.DLTensor.from_address(a._dltensor_address())
    assert (t.device.device_type, t.device.device_id) == (4, 0)
    assert t.data == a.data_ptr() != 0  # the cl_mem handle, as TVM passes it


def test_copies_between_host_and_device():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    a = rt.empty((2, 3), "float32", DEV).copyfrom(x)
    b = a.copyto(DEV)  # device to device
    assert b.data_ptr() != a.data_ptr()
    a.copyfrom(rt.array(x + 1))  # from a cpu NDArray
    np.testing.assert_array_equal(b.numpy(), x)
    host = rt.empty((2, 3), "float32")
    host.copyfrom(a)
    np.testing.assert_array_equal(host.numpy(), x + 1)
    np.testing.assert_array_equal(a.copyto(rt.cpu()).numpy(), x + 1)
    b.copyto(a)
    np.testing.assert_array_equal(rt.array(a).numpy(), x)  # to the cpu by default
    np.testing.assert_array_equal(np.array(a), x)  # an explicit copy
    a.copyfrom([[7, 7, 7], [7, 7, 7]])
    assert a.numpy().sum() == 42


def test_empty_and_zero_size_arrays():
    a = rt.empty((0, 3), "float32", DEV)
    assert a.numpy().shape == (0, 3) and a.data_ptr() == 0
    a.copyfrom(np.zeros((0, 3), "float32"))


def test_numpy_cannot_view_device_memory():
    a = rt.array(np.ones(3, "float32"), device=DEV)
    with pytest.raises(rt.EmberError, match=r"opencl\(0\) memory.*a\.numpy\(\)"):
        np.asarray(a)


def test_copy_errors():
    a = rt.empty((2, 3), "float32", DEV)
    with pytest.raises(ValueError, match=r"expected shape \(2, 3\), got shape \(3,\)"):
        a.copyfrom(np.zeros(3, "float32"))
    with pytest.raises(ValueError, match="expected dtype float32, got dtype int32"):
        a.copyfrom(rt.empty((2, 3), "int32", DEV))
    with pytest.raises(ValueError, match="no device opencl.7."):
        rt.empty((2,), device=rt.opencl(7))


def test_memory_is_freed_with_the_array():
    # 64 MiB, 40 times: without freeing, PoCL's buffers would add up to 2.5 GiB
    for _ in range(40):
        a = rt.empty((16, 1024, 1024), "float32", DEV)
        del a


def test_dlpack_shares_the_cl_mem():
    a = rt.array(np.arange(4, dtype="int32"), device=DEV)
    assert a.__dlpack_device__() == (4, 0)
    b = rt.from_dlpack(a)
    assert b.data_ptr() == a.data_ptr() and b.device == DEV
    del a
    np.testing.assert_array_equal(b.numpy(), np.arange(4))  # b keeps it alive


def test_device_sync_and_facts():
    DEV.sync()
    assert DEV.exist and not rt.opencl(99).exist
    from ember.runtime.device_api import device_api

    facts = device_api(DEV).describe(0)
    assert facts["name"] and facts["max_work_group_size"] >= 64


def test_cpu_code_refuses_device_arrays():
    import ember
    from ember import te

    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i] * 2, name="B")
    double = ember.build(te.create_schedule(B.op), [A, B], name="double")
    a = rt.array(np.ones(3, "float32"), device=DEV)
    with pytest.raises(
        rt.EmberError,
        match=r"double: argument 0 \(A\): expected a CPU tensor; .* on opencl\(0\)",
    ):
        double(a, np.zeros(3, "float32"))
    with pytest.raises(rt.EmberError, match="expected cpu memory"):
        rt.NDArray(np.ones(3), device=DEV)


# --- device modules -------------------------------------------------------------


def test_vecadd(mod, data):
    a, b = data
    A, B = rt.array(a, device=DEV), rt.array(b, device=DEV)
    C = rt.empty((N,), "float32", DEV)
    mod["vecadd"](A, B, C)
    np.testing.assert_allclose(C.numpy(), a + b)
    mod(B, B, C)  # the entry: the first function
    np.testing.assert_allclose(C.numpy(), b + b)


def test_numpy_arguments_are_copied_in_and_out(mod, data):
    a, b = data
    c = np.zeros(N, "float32")
    mod["vecadd"](a, b, c)
    np.testing.assert_allclose(c, a + b)
    host = rt.empty((N,), "float32")
    mod["vecadd"](a, rt.array(b), host)  # cpu NDArrays too
    np.testing.assert_allclose(host.numpy(), a + b)


def test_two_launches_share_an_intermediate_buffer(mod, data):
    a, b = data
    c = np.zeros(N, "float32")
    mod["scale_add"](a, b, c)
    np.testing.assert_allclose(c, 2 * a + b, rtol=1e-6)
    loaded = mod._loaded[DEV]
    (buffer,) = loaded.buffers["scale_add"]
    mod["scale_add"](b, a, c)  # the buffer is allocated once, then reused
    assert loaded.buffers["scale_add"][0] is buffer
    np.testing.assert_allclose(c, 2 * b + a, rtol=1e-6)


def test_local_memory_and_barriers(mod):
    x = np.arange(8 * 64, dtype="float32").reshape(8, 64)
    s = np.zeros(8, "float32")
    mod["blocksum"](x, s)
    np.testing.assert_allclose(s, x.sum(axis=1))


def test_calls_from_threads(mod, data):
    a, b = data
    results = {}

    def work(k):
        c = np.zeros(N, "float32")
        for _ in range(5):
            mod["scale_add"](a * k, b, c)
        results[k] = c

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_allclose(results[k], 2 * (a * k) + b, rtol=1e-6)


def test_argument_errors(mod, data):
    a, b = data
    c = np.zeros(N, "float32")
    with pytest.raises(TypeError, match="vecadd: expected 3 arguments, got 2"):
        mod["vecadd"](a, b)
    with pytest.raises(ValueError, match=r"argument 1 \(B\): expected shape \(1000,\)"):
        mod["vecadd"](a, b[:10], c)
    with pytest.raises(
        ValueError, match=r"argument 0 \(A\): expected dtype float32, got float64"
    ):
        mod["vecadd"](a.astype("float64"), b, c)
    with pytest.raises(
        ValueError, match=r"argument 2 \(C\): is an output but the array is read-only"
    ):
        c.flags.writeable = False
        mod["vecadd"](a, b, c)
    with pytest.raises(TypeError, match="argument 1: expected an NDArray"):
        mod["vecadd"](a, "b", np.zeros(N, "float32"))
    with pytest.raises(rt.FunctionNotFoundError, match="available: vecadd, scale_add"):
        mod["nope"]


def test_a_kernel_the_program_lacks():
    plan = make_plan()
    plan["functions"]["vecadd"]["launches"][0]["kernel"] = "missing_kernel"
    with pytest.raises(rt.EmberError, match="defines no kernel 'missing_kernel'"):
        DeviceModule(plan)["vecadd"](*[np.zeros(N, "float32")] * 3)


def test_a_build_error_shows_the_log():
    broken = DeviceModule(
        make_plan(SOURCE + "\n__kernel void bad() { undeclared = 1; }")
    )
    with pytest.raises(
        rt.EmberError, match=r"(?s)clBuildProgram failed.*build log:.*undeclared"
    ):
        broken["vecadd"](*[np.zeros(N, "float32")] * 3)


def test_get_source_and_export(mod, tmp_path):
    assert mod.get_source() == mod.get_source("cl") == SOURCE
    with pytest.raises(
        rt.EmberError, match="has no source in format 'ptx'; it has '', 'opencl', 'cl'"
    ):
        mod.get_source("ptx")
    mod.save(tmp_path / "m.json")
    for name in ("m.json", "m.so", "m.tar", "m.o"):
        if name != "m.json":
            mod.export_library(tmp_path / name)
        again = rt.load_module(tmp_path / name)
        assert isinstance(again, DeviceModule) and again.plan == mod.plan
        c = np.zeros(N, "float32")
        again["vecadd"](np.ones(N, "float32"), np.ones(N, "float32"), c)
        assert (c == 2).all()


def test_time_evaluator(mod, data):
    a, b = data
    args = [
        rt.array(a, device=DEV),
        rt.array(b, device=DEV),
        rt.empty((N,), device=DEV),
    ]
    result = mod.time_evaluator("vecadd", DEV, number=3, repeat=2)(*args)
    assert len(result.results) == 2 and result.mean > 0
    with pytest.raises(rt.EmberError, match=r"runs on opencl devices; got cpu\(0\)"):
        mod.time_evaluator("vecadd", rt.cpu())


MALFORMED = [
    (lambda p: p.update(format="ember.device/2"), 'format: expected "ember.device/1"'),
    (
        lambda p: p.update(kind="tpu"),
        r'kind: expected a device kind \(cuda, opencl, vulkan, metal, .*\), got "tpu"',
    ),
    (lambda p: p.update(binary=3), "binary: expected the device binary's text or null"),
    (lambda p: p.pop("source"), "source: expected the kernels' source text, got null"),
    (lambda p: p.update(functions={}), "functions: expected an object of at least one"),
    (
        lambda p: p["functions"]["vecadd"]["args"][0].update(shape=[-1]),
        r'functions\["vecadd"\]\["args"\]\[0\]\["shape"\]: expected a list of non-negative ints',
    ),
    (
        lambda p: p["functions"]["vecadd"]["args"][0].update(dtype="float7"),
        r'\["args"\]\[0\]\["dtype"\]: expected a dtype name',
    ),
    (
        lambda p: p["functions"]["vecadd"]["args"][2].pop("output"),
        r'\["args"\]\[2\]\["output"\]: expected true or false, got null',
    ),
    (
        lambda p: p["functions"]["vecadd"]["launches"][0].update(grid=[16, 1]),
        r'\["launches"\]\[0\]\["grid"\]: expected 3 positive ints, got \[16, 1\]',
    ),
    (
        lambda p: p["functions"]["vecadd"]["launches"][0].update(block=[0, 1, 1]),
        r'\["launches"\]\[0\]\["block"\]: expected 3 positive ints',
    ),
    (
        lambda p: p["functions"]["vecadd"]["launches"][0].update(shared_bytes=-1),
        r'\["shared_bytes"\]: expected an int >= 0',
    ),
    (
        lambda p: p["functions"]["vecadd"]["launches"][0]["args"].append({"arg": 3}),
        r'\["launches"\]\[0\]\["args"\]\[3\]: expected an index of args below 3',
    ),
    (
        lambda p: p["functions"]["vecadd"]["launches"][0]["args"].append({"buffer": 0}),
        r"expected an index of buffers below 0",
    ),
    (
        lambda p: p["functions"]["vecadd"]["launches"][0]["args"].append(5),
        r'expected \{"arg": i\}, \{"buffer": j\} or \{"param": name\}, got 5',
    ),
    (
        lambda p: p["functions"]["vecadd"].pop("buffers"),
        r'\["buffers"\]: expected a list',
    ),
    (
        lambda p: p.update(entry="nope"),
        "entry: expected the name of one of the functions",
    ),
]


@pytest.mark.parametrize("damage, message", MALFORMED)
def test_malformed_plans_name_the_field(damage, message):
    plan = make_plan()
    damage(plan)
    with pytest.raises(rt.EmberValueError, match=message):
        DeviceModule(plan)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.update(binary="x"), "an OpenCL program is built from its source"),
        (
            lambda p: p["functions"]["vecadd"]["launches"][0].update(shared_bytes=64),
            "OpenCL kernels take no dynamic shared memory",
        ),
    ],
)
def test_what_opencl_cannot_run_its_api_refuses(damage, message):
    """The plan is any device's; OpenCL's API refuses what OpenCL lacks."""
    plan = make_plan()
    damage(plan)
    a = np.ones(N, "float32")
    with pytest.raises(rt.EmberError, match=message):
        DeviceModule(plan)["vecadd"](
            rt.array(a, device=DEV), rt.array(a, device=DEV), rt.empty((N,), device=DEV)
        )


def test_not_a_plan():
    with pytest.raises(
        rt.EmberValueError, match=r"the plan: expected an object, got \[\]"
    ):
        DeviceModule([])  # pyright: ignore[reportArgumentType]


def test_params_are_uploaded_once_per_device():
    plan = make_plan()
    plan["params"] = {"W": {"shape": [N], "dtype": "float32"}}
    plan["functions"]["vecadd"]["launches"][0]["args"][1] = {"param": "W"}
    w = np.arange(N, dtype="float32")
    mod = DeviceModule(plan, params={"W": w})
    c = np.zeros(N, "float32")
    mod["vecadd"](np.ones(N, "float32"), np.zeros(N, "float32"), c)  # B unused
    np.testing.assert_allclose(c, w + 1)
    with pytest.raises(ValueError, match="param 'W' has no value"):
        DeviceModule(plan)
    with pytest.raises(ValueError, match=r"param 'W': expected shape \(1000,\)"):
        DeviceModule(plan, params={"W": w[:5]})
    plan["functions"]["vecadd"]["launches"][0]["args"][1] = {"param": "V"}
    with pytest.raises(
        ValueError, match="expected the name of one of the plan's params"
    ):
        DeviceModule(plan, params={"W": w})
