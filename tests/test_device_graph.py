"""GraphModule over models for GPUs: the device graph executor
(``ember.runtime.device_graph``) on hand-written launch plans and on a small
ONNX model compiled for OpenCL, compared with numpy and onnxruntime.

Runs on any OpenCL platform (PoCL's CPU device here: pocl-opencl-icd); skips,
saying why, where the machine has none.
"""

import threading

import numpy as np
import pytest

import ember
from ember import runtime as rt
from ember.runtime import EmberError, GraphModule
from ember.runtime.device_api import DeviceNDArray
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
SHAPE = (8, 125)  # 1000 elements: not a multiple of the block of 64
N = 1000

# A model's shape: t = x * w (a param) into an intermediate, then two outputs.
SOURCE = """
__kernel void scale_kernel0(__global const float* X, __global const float* W,
                            __global float* T) {
  int i = get_global_id(0);
  if (i < 1000) T[i] = X[i] * W[i];
}

__kernel void combine_kernel0(__global const float* T, __global const float* Y,
                              __global float* S, __global float* P) {
  int i = get_global_id(0);
  if (i < 1000) { S[i] = T[i] + Y[i]; P[i] = T[i] * Y[i]; }
}
"""


def _arg(name, output=False):
    return {"name": name, "shape": list(SHAPE), "dtype": "float32", "output": output}


def _launch(kernel, args):
    return {
        "kernel": kernel,
        "grid": [16, 1, 1],
        "block": [64, 1, 1],
        "args": args,
        "shared_bytes": 0,
    }


def make_plan():
    return {
        "format": "ember.device/1",
        "kind": "opencl",
        "source": SOURCE,
        "binary": None,
        "params": {"w": {"shape": list(SHAPE), "dtype": "float32"}},
        "functions": {
            "default_run": {
                "args": [_arg("x"), _arg("y"), _arg("sum", True), _arg("prod", True)],
                "buffers": [{"shape": list(SHAPE), "dtype": "float32"}],
                "launches": [
                    _launch(
                        "scale_kernel0", [{"arg": 0}, {"param": "w"}, {"buffer": 0}]
                    ),
                    _launch(
                        "combine_kernel0",
                        [{"buffer": 0}, {"arg": 1}, {"arg": 2}, {"arg": 3}],
                    ),
                ],
            },
        },
    }


RNG = np.random.default_rng(0)
W = RNG.random(SHAPE, dtype="float32")
XS = [RNG.random(SHAPE, dtype="float32") for _ in range(4)]
YS = [RNG.random(SHAPE, dtype="float32") for _ in range(4)]


def expected(x, y, w=W):
    return [x * w + y, x * w * y]


def _close(got, want) -> bool:
    return all(np.allclose(g, e, rtol=1e-6) for g, e in zip(got, want, strict=True))


@pytest.fixture(scope="module")
def mod():
    return DeviceModule(make_plan(), params={"w": W})


@pytest.fixture
def gm(mod):
    return GraphModule(mod["default"](DEV))


def test_set_input_run_get_output(mod, gm):
    assert "default" in mod and "default" not in DeviceModule(_kernel_only(), {"w": W})
    gm.set_input("x", XS[0])
    gm.set_input(1, rt.array(YS[0], device=DEV))  # from the device
    gm.run()
    out = gm.get_output(0)
    assert isinstance(out, DeviceNDArray) and out.device == DEV
    prod = np.empty(SHAPE, "float32")
    assert gm.get_output("prod", prod) is prod
    assert _close([out.numpy(), prod], expected(XS[0], YS[0]))
    np.testing.assert_array_equal(gm.get_input("y").numpy(), YS[0])
    into = rt.empty(SHAPE, "float32", DEV)
    gm.get_output(1, into)
    strided = np.empty((8, 250), "float32")[:, ::2]
    gm.get_output(1, strided)
    assert _close([into.numpy(), strided], [prod, prod])
    gm.run(x=XS[1], y=rt.array(YS[1]))  # a cpu NDArray
    assert _close([gm.get_output(i).numpy() for i in (0, 1)], expected(XS[1], YS[1]))


def test_call_returns_numpy(gm):
    got = gm(XS[2], y=YS[2])
    assert all(isinstance(g, np.ndarray) for g in got)
    assert _close(got, expected(XS[2], YS[2]))
    on_device = rt.array(XS[3], device=DEV)  # used in place
    assert _close(gm(x=on_device, y=YS[3]), expected(XS[3], YS[3]))


def test_io_info(gm):
    assert gm.get_num_inputs() == 2 and gm.get_num_outputs() == 2
    assert gm.get_input_index("y") == 1 and gm.get_input_index("z") == -1
    assert gm.get_input_info() == (
        {"x": SHAPE, "y": SHAPE},
        {"x": "float32", "y": "float32"},
    )
    assert list(gm.get_output_info()[0]) == ["sum", "prod"]
    assert gm.module.function_names()[0] == "set_input"


def test_four_threads_at_once(mod, gm):
    """Each thread calls the shared GraphModule and runs one of its own, all
    on one module: its intermediate buffer is shared by every call."""

    def work(i, results):
        own = GraphModule(mod["default"](DEV))
        wrong = 0
        for k in range(15):
            j = (i + k) % 4
            wrong += not _close(gm(x=XS[j], y=YS[j]), expected(XS[j], YS[j]))
            own.set_input("x", XS[j])
            own.set_input("y", YS[j])
            own.run()
            got = [own.get_output(0).numpy(), own.get_output(1).numpy()]
            wrong += not _close(got, expected(XS[j], YS[j]))
        results[i] = wrong

    assert _in_threads(work) == [0] * 4
    assert 1 <= len(gm.module._free_io) <= 4


def test_stateful_use_shared_by_threads_is_right_or_an_error(gm):
    def work(i, results):
        wrong = 0
        for _ in range(15):
            try:
                gm.set_input("x", XS[i])
                gm.set_input("y", YS[i])
                gm.run()
                got = [gm.get_output(0).numpy(), gm.get_output(1).numpy()]
            except EmberError as e:
                assert "one thread's at a time" in str(e)
                continue
            wrong += not _close(got, expected(XS[i], YS[i]))
        results[i] = wrong

    assert _in_threads(work) == [0] * 4


def _in_threads(work) -> list:
    results = [None] * 4
    threads = [threading.Thread(target=work, args=(i, results)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_errors(mod, gm):
    with pytest.raises(EmberError, match="no input named 'z'; its inputs are 'x', 'y'"):
        gm.set_input("z", XS[0])
    with pytest.raises(
        EmberError,
        match=r"set_input 'x': expected float32 \(8, 125\), got float32 \(125, 8\)",
    ):
        gm.set_input("x", XS[0].T.copy())
    with pytest.raises(
        EmberError, match=r"set_input 'y': expected float32 \(8, 125\), got float64"
    ):
        gm.set_input("y", YS[0].astype("float64"))
    with pytest.raises(EmberError, match="input 'x': expected float32"):
        gm(x=XS[0].astype("float16"), y=YS[0])
    with pytest.raises(EmberError, match=r"input\(s\) 'y' not given"):
        gm(x=XS[0])
    with pytest.raises(EmberError, match="output index 2 is out of range"):
        gm.get_output(2)
    with pytest.raises(
        EmberError, match=r"out must be float32 \(8, 125\), got float64"
    ):
        gm.get_output(0, np.empty(SHAPE))
    with pytest.raises(
        EmberError,
        match="compiled for opencl runs on opencl devices, such as opencl\\(0\\); got cpu\\(0\\)",
    ):
        mod["default"](rt.cpu())
    with pytest.raises(EmberError, match="no device opencl\\(99\\)"):
        mod["default"](rt.opencl(99))


def test_load_params_replaces_this_executors_params(mod, gm):
    other = GraphModule(mod["default"](DEV))
    w2 = W + 1
    gm.load_params(rt.save_param_dict({"w": w2}))
    assert _close(gm(x=XS[0], y=YS[0]), expected(XS[0], YS[0], w2))
    gm.load_params({"w": rt.array(W * 2, device=DEV)})  # in place, from the device
    gm.run(x=XS[1], y=YS[1])
    assert _close([gm.get_output(0).numpy()], expected(XS[1], YS[1], W * 2)[:1])
    assert _close(other(x=XS[0], y=YS[0]), expected(XS[0], YS[0]))
    with pytest.raises(EmberError, match="has no param 'v'; its params are 'w'"):
        gm.load_params({"v": W})
    with pytest.raises(EmberError, match=r"param 'w' must be float32 \(8, 125\)"):
        gm.load_params({"w": W[:4]})
    with pytest.raises(EmberError, match="not as a packed blob"):
        gm.load_params(W.tobytes())


def _kernel_only():
    plan = make_plan()
    plan["functions"] = {"kernel": plan["functions"]["default_run"]}
    return plan


def test_a_tiny_onnx_model_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    weights = {
        "W": rng.standard_normal((4, 3, 3, 3)).astype("float32"),
        "B": rng.standard_normal(4).astype("float32"),
        "G": rng.standard_normal((5, 4)).astype("float32"),
        "C": rng.standard_normal(5).astype("float32"),
    }
    nodes = [
        helper.make_node("Conv", ["input", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "G", "C"], ["output"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 5])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8
    )
    x = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"input": x})

    mod = ember.compile_model(model, target="opencl")
    gm = GraphModule(mod["default"](DEV))
    gm.set_input("input", x)
    gm.run()
    np.testing.assert_allclose(gm.get_output(0).numpy(), want, rtol=1e-4, atol=1e-5)
    (y,) = gm(input=x)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_a_run_never_takes_an_input_another_thread_set(gm):
    """A sets x, B takes over and sets x, A sets y and runs: A would compute
    with B's x, so the run is refused (the race the 4-thread test can hit on
    an asynchronous device, made deterministic)."""

    def in_thread(step):
        errors = []

        def body():
            try:
                step()
            except BaseException as e:  # noqa: BLE001 - reported to the test
                errors.append(repr(e))

        t = threading.Thread(target=body)
        t.start()
        t.join()
        return errors

    a_errors: list[str] = []

    def thread_a():
        gm.set_input("x", XS[0])
        barrier_b.wait()  # B sets x now
        barrier_a.wait()
        gm.set_input("y", YS[0])
        with pytest.raises(EmberError, match="was last set by another thread"):
            gm.run()

    barrier_a, barrier_b = threading.Barrier(2), threading.Barrier(2)
    a = threading.Thread(target=lambda: a_errors.extend(in_thread(thread_a)))
    a.start()
    barrier_b.wait()
    assert in_thread(lambda: gm.set_input("x", XS[1])) == []
    barrier_a.wait()
    a.join()
    assert a_errors == []

    # a thread that sets every input itself runs
    def thread_c():
        gm.set_input("x", XS[2])
        gm.set_input("y", YS[2])
        gm.run()
        got = [gm.get_output(0).numpy(), gm.get_output(1).numpy()]
        assert _close(got, expected(XS[2], YS[2]))

    assert in_thread(thread_c) == []
