"""The `vulkan` target: te kernels as GLSL compute shaders, SPIR-V by
glslangValidator, run by `ember.runtime.vulkan_api` (Mesa's lavapipe here, a
CPU Vulkan device), and a small CNN compiled with `compile_model` that matches
onnxruntime. Each test skips, saying why, where the driver or the compiler is
missing (`.ci/system_deps.sh` installs glslang-tools, libvulkan1 and
mesa-vulkan-drivers)."""

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import runtime as rt
from ember.backends.source.gpu import build_plan
from ember.backends.source.printer import SourceError
from ember.backends.source.target import DeviceTarget
from ember.backends.vulkan import GLSLANG, split_shaders

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_target_gpu import (  # noqa: E402
    rand,
    row_sum,
    run_on,
    softmax,
    softmax_ref,
    tiled_matmul,
    vecadd,
)

DEV = rt.device("vulkan", 0)


def _missing() -> str | None:
    if shutil.which(GLSLANG) is None:
        return f"{GLSLANG} missing (Debian: glslang-tools)"
    try:
        rt.empty((1,), device=DEV)
    except rt.EmberError as e:
        return f"no Vulkan device: {e}"
    return None


MISSING = _missing()
needs_vulkan = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING}")
needs_glslang = pytest.mark.skipif(
    shutil.which(GLSLANG) is None, reason=f"{GLSLANG} missing (glslang-tools)"
)


def test_import_runtime_loads_no_vulkan():
    """The runtime imports alone: vulkan_api waits for a vulkan device."""
    code = "import ember.runtime, sys; print('ember.runtime.vulkan_api' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def test_kernels_are_glsl_compute_shaders_one_per_kernel():
    s, args = softmax()
    plan = build_plan(ember.lower(s, args, name="softmax"), DeviceTarget("vulkan"))
    head, kernels = split_shaders(plan["source"])
    assert head.startswith("#version 450\n")
    assert list(kernels) == [f"softmax_kernel{i}" for i in range(4)]
    for text in kernels.values():
        assert "void main() {" in text and "layout(local_size_x = " in text
        assert "layout(std430, binding = 0)" in text


@needs_glslang
def test_the_binary_is_spirv_per_kernel():
    s, args = tiled_matmul()
    mod = ember.build(s, args, target="vulkan", name="matmul")
    binary = json.loads(mod.plan["binary"])  # type: ignore[attr-defined]
    assert list(binary) == ["matmul_kernel0"]
    spirv = base64.b64decode(binary["matmul_kernel0"])
    assert spirv[:4] == b"\x03\x02\x23\x07"  # SPIR-V's magic, little-endian
    assert "shared float" in mod.get_source()


def test_bool_buffers_are_refused_naming_the_op():
    from ember import te

    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] > 0.5, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(SourceError, match=r"buffer of i1 \(bool\)"):
        build_plan(ember.lower(s, [A, B], name="gt"), DeviceTarget("vulkan"))


@needs_vulkan
def test_vecadd_runs_on_vulkan():
    s, args = vecadd()
    mod = ember.build(s, args, target="vulkan", name="vecadd")
    a, b = rand(1024), rand(1024, seed=1)
    (c,) = run_on(mod, DEV, [a, b], [(1024,)])
    np.testing.assert_allclose(c, a + b)


@needs_vulkan
@pytest.mark.parametrize("n", [64, 60])  # 60: the tiles' guards stay inside
def test_tiled_matmul_with_shared_tiles_runs_on_vulkan(n):
    s, args = tiled_matmul(n=n)
    mod = ember.build(s, args, target="vulkan", name="matmul")
    a, b = rand(n, n), rand(n, n, seed=1)
    (c,) = run_on(mod, DEV, [a, b], [(n, n)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@needs_vulkan
def test_reductions_run_on_vulkan():
    s, args = row_sum()
    mod = ember.build(s, args, target="vulkan", name="row_sum")
    a = rand(100, 37)
    (out,) = run_on(mod, DEV, [a], [(100,)])
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)
    s, args = softmax()  # four kernels, three intermediate buffers
    mod = ember.build(s, args, target="vulkan", name="softmax")
    a = rand(64, 48)
    (out,) = run_on(mod, DEV, [a], [(64, 48)])
    np.testing.assert_allclose(out, softmax_ref(a), rtol=1e-5, atol=1e-6)


@needs_vulkan
def test_device_arrays_copy_within_and_back():
    a = rt.array(np.arange(10, dtype="int32"), device=DEV)
    b = rt.empty((10,), "int32", DEV).copyfrom(a)
    np.testing.assert_array_equal(b.numpy(), np.arange(10))
    DEV.sync()


def _small_cnn():
    """conv 3x3 (+bias) -> relu -> max pool 2x2 -> flatten -> dense, 16x16 in."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    shapes = {"conv_w": (8, 3, 3, 3), "conv_b": (8,), "fc_w": (10, 512), "fc_b": (10,)}
    inits = [
        numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.3).astype(np.float32), name
        )
        for name, shape in shapes.items()
    ]
    nodes = [
        helper.make_node(
            "Conv", ["input", "conv_w", "conv_b"], ["c"], pads=[1, 1, 1, 1]
        ),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["output"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8
    )
    onnx.checker.check_model(model)
    return model


@needs_vulkan
def test_a_small_cnn_on_vulkan_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    model = _small_cnn()
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, {"input": x})
    mod = ember.compile_model(model, target="vulkan")
    out = np.zeros(expected.shape, np.float32)
    mod["default_run"](x, out)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    # on device arrays, and through the graph executor
    y = rt.empty(expected.shape, device=DEV)
    mod["default_run"](rt.array(x, device=DEV), y)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4, atol=1e-4)
    gm = rt.GraphModule(mod["default"](DEV))
    gm.set_input("input", x)
    gm.run()
    np.testing.assert_allclose(gm.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-4)
