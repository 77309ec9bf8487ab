"""Models on devices: `compile_model(target="opencl")` runs MobileNetV2 on the
OpenCL platform here (PoCL's CPU device) and matches onnxruntime; the same model
for "cuda" compiles to PTX that ptxas accepts, and runs where a GPU is. Each
skips, saying why, where its device or tool is missing."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import runtime as rt

ort = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import onnx_models  # noqa: E402
from test_target_gpu import NO_CUDA, NO_OPENCL, PTXAS  # noqa: E402

needs_opencl = pytest.mark.skipif(NO_OPENCL is not None, reason=f"{NO_OPENCL}")
needs_cuda = pytest.mark.skipif(NO_CUDA is not None, reason=f"{NO_CUDA}")


@pytest.fixture(scope="module")
def mobilenet():
    """MobileNetV2 at 96x96, its input and onnxruntime's output."""
    model = onnx_models.mobilenet_v2(size=96, num_classes=100)
    feeds = onnx_models.random_input(model)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, feeds)
    return model, feeds["input"], expected


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def opencl_mobilenet(mobilenet):
    return ember.compile_model(mobilenet[0], target="opencl")


@needs_opencl
def test_mobilenet_v2_on_opencl_matches_onnxruntime(mobilenet, opencl_mobilenet):
    _, x, expected = mobilenet
    out = np.zeros(expected.shape, np.float32)
    opencl_mobilenet["default_run"](x, out)
    _close(out, expected)
    # again, on device arrays: the params stay uploaded, buffers are reused
    dev = rt.opencl(0)
    y = rt.empty(expected.shape, device=dev)
    opencl_mobilenet["default_run"](rt.array(x, device=dev), y)
    _close(y.numpy(), expected)


@needs_opencl
@pytest.mark.parametrize("suffix", ["so", "tar"])
def test_an_opencl_model_exports_and_loads_in_a_process_without_the_compiler(
    mobilenet, opencl_mobilenet, tmp_path, suffix
):
    """A GPU model is an artifact like a CPU one: its launch plan and params go
    into the library as data, and `load_module` in a fresh process, which
    imports nothing of the compiler, runs it on PoCL."""
    _, x, expected = mobilenet
    path = tmp_path / f"mobilenet.{suffix}"
    opencl_mobilenet.export_library(path)
    np.save(tmp_path / "x.npy", x)
    code = (
        "import sys, numpy as np\n"
        "from ember import runtime as rt\n"
        f"lib = rt.load_module({str(path)!r})\n"
        "gm = rt.GraphModule(lib['default'](rt.opencl(0)))\n"
        f"np.save({str(tmp_path / 'y.npy')!r}, gm(input=np.load({str(tmp_path / 'x.npy')!r}))[0])\n"
        "compiler = [m for m in sys.modules if m.split('.')[0] in ('xdsl', 'llvmlite')"
        " or m.startswith(('ember.passes', 'ember.backends', 'ember.compiler.model'))]\n"
        "assert not compiler, compiler\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    _close(np.load(tmp_path / "y.npy"), expected)


def test_the_model_plan_reads_each_param_once_and_launches_every_kernel(
    opencl_mobilenet,
):
    plan = opencl_mobilenet.plan
    run = plan["functions"]["default_run"]
    assert [a["name"] for a in run["args"]] == ["input", "output"]
    assert [a["output"] for a in run["args"]] == [False, True]
    kernels = {
        launch["kernel"] for f in plan["functions"].values() for launch in f["launches"]
    }
    assert {launch["kernel"] for launch in run["launches"]} == kernels
    read = {
        a["param"] for launch in run["launches"] for a in launch["args"] if "param" in a
    }
    assert read == set(plan["params"]) == set(opencl_mobilenet.params)
    assert "__kernel void" in opencl_mobilenet.get_source()
    assert "loop.for" in opencl_mobilenet.get_source("loop")  # what was printed
    assert opencl_mobilenet.compile_stats.calls >= len(plan["functions"]) - 1


def test_a_device_model_goes_through_graph_plan_memory_with_reused_slots(
    opencl_mobilenet,
):
    """One pipeline: the device plan's default_run is `graph-plan-memory`'s
    call plan, its intermediates in slots (device buffers) reused by liveness:
    far fewer buffers than calls, as many bytes as the plan's slots."""
    info = opencl_mobilenet.model_info
    run = opencl_mobilenet.plan["functions"]["default_run"]
    slots = info["slots"]
    assert run["buffers"][: len(slots)] == [
        {"shape": [n], "dtype": "uint8"} for n in slots
    ]
    assert len(run["buffers"]) == len(slots)  # kernels allocate nothing
    assert len(slots) < len(info["calls"]) / 4
    assert sum(slots) < info["intermediate_bytes"] / 2
    assert (
        opencl_mobilenet.compile_stats.kernels
        == len(opencl_mobilenet.plan["functions"]) - 1
    )


@pytest.fixture(scope="module")
def cuda_mobilenet(mobilenet):
    return ember.compile_model(mobilenet[0], target="cuda -arch=sm_80")


def test_a_cuda_model_exports_and_loads_like_a_cpu_one(cuda_mobilenet, tmp_path):
    """Exporting and loading touch no driver: the plan (CUDA C, its PTX) and
    the params come back as they went in."""
    cuda_mobilenet.export_library(tmp_path / "m.so")
    again = rt.load_module(tmp_path / "m.so")
    assert again.plan == cuda_mobilenet.plan
    assert again.get_source("ptx") == cuda_mobilenet.get_source("ptx")
    for name, value in cuda_mobilenet.params.items():
        np.testing.assert_array_equal(again.params[name], value)


def test_mobilenet_v2_for_cuda_is_ptx_that_ptxas_accepts(cuda_mobilenet, tmp_path):
    mod = cuda_mobilenet
    assert "__global__ void" in mod.get_source("cuda")
    ptx = mod.get_source("ptx")
    assert ".target sm_80" in ptx
    if PTXAS is None:
        pytest.skip("ptxas missing: pip install nvidia-cuda-nvcc-cu12")
    path = tmp_path / "mobilenet.ptx"
    path.write_text(ptx)
    for arch in ("sm_80", "sm_90"):
        done = subprocess.run(
            [PTXAS, f"-arch={arch}", str(path), "-o", os.devnull],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"ptxas {arch}: {done.stderr}"


@needs_cuda
def test_mobilenet_v2_on_cuda_matches_onnxruntime(mobilenet):
    model, x, expected = mobilenet
    mod = ember.compile_model(model, target="cuda")
    dev = rt.cuda(0)
    y = rt.empty(expected.shape, device=dev)
    mod["default_run"](rt.array(x, device=dev), y)
    _close(y.numpy(), expected)


@needs_opencl
def test_a_bert_encoder_with_int64_ids_on_opencl_matches_onnxruntime():
    """Token ids gathered from an embedding table, a padding mask, layer norm
    and attention: every op through the generic GPU schedule."""
    model = onnx_models.bert_encoder(seq=16, d=64, layers=1)
    feeds = onnx_models.random_input(model)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, feeds)
    mod = ember.compile_model(model, target="opencl")
    gm = rt.GraphModule(mod["default"](rt.opencl(0)))
    (got,) = gm(**feeds)
    _close(got, expected)
