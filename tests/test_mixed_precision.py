"""precision="auto": each layer in bfloat16 where a calibration batch shows its
error under `graph-mixed-precision`'s bound, float32 elsewhere."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_bf16 import needs_bf16, small_cnn
from xdsl.dialects import func

import ember
from ember.compiler.model import ModelCompileError, lower_to_te
from ember.runtime import GraphModule, cpu


def cancelling() -> onnx.ModelProto:
    """Two matmuls by weights: the first copies x0 and adds a thousandth of x1
    (bfloat16 rounds it well), the second subtracts the two columns: the
    thousandth left is below bfloat16's rounding of x0."""
    weights = {
        "w1": np.array([[1.0, 1.0], [0.0, 0.001]], np.float32),
        "w2": np.array([[1.0], [-1.0]], np.float32),
    }
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["y1"]),
            helper.make_node("MatMul", ["y1", "w2"], ["y"]),
        ],
        "cancelling",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (64, 2))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (64, 1))],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _relative_error(lib, x: np.ndarray) -> float:
    (got,) = GraphModule(lib["default"](cpu()))(x=x)
    want = -0.001 * x[:, 1:].astype(np.float64)  # x0 - (x0 + x1 / 1000)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def _kernel_precisions(module) -> list[bool]:
    """For each kernel with products, whether it multiplies bfloat16 pairs."""
    kernels = [f for f in module.ops if isinstance(f, func.FuncOp)]
    return [
        "dot.bf16" in str(f)
        for f in kernels
        if any(k in f.sym_name.data for k in ("conv2d", "dense", "matmul"))
    ]


@needs_bf16
def test_the_cancelling_layer_stays_float32_and_keeps_its_accuracy():
    x = np.random.default_rng(0).standard_normal((64, 2)).astype(np.float32)
    module, _ = lower_to_te(cancelling(), precision="auto")
    assert _kernel_precisions(module) == [True, False]
    auto = ember.compile_model(cancelling(), precision="auto", calibration={"x": x})
    bf16 = ember.compile_model(cancelling(), precision="bf16")
    f32 = ember.compile_model(cancelling())
    test = np.random.default_rng(1).standard_normal((64, 2)).astype(np.float32)
    # the first layer's bfloat16 rounding (2^-9 relative) is all that is left
    assert _relative_error(auto, test) < 2**-7
    assert _relative_error(bf16, test) > 0.5
    assert _relative_error(f32, test) < 1e-3


@needs_bf16
def test_a_cnn_in_auto_precision_takes_bfloat16_everywhere_and_agrees():
    """Well-conditioned layers (the five of the small CNN) all take bfloat16
    kernels, measured on a list of calibration examples; the result agrees
    with onnxruntime within bfloat16's error, the same top-1."""
    import onnxruntime

    proto = small_cnn()
    rng = np.random.default_rng(3)
    examples = [
        {"x": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(2)
    ]
    module, _ = lower_to_te(proto, precision="auto")
    assert _kernel_precisions(module) == [True] * 5
    lib = ember.compile_model(proto, precision="auto", calibration=examples)
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = session.run(None, {"x": x})[0]
    (got,) = GraphModule(lib["default"](cpu()))(x=x)
    assert np.abs(got - want).max() <= 0.03 * np.abs(want).max()
    assert got.argmax() == want.argmax()


def test_auto_on_a_target_without_bfloat16_is_float32():
    module, _ = lower_to_te(cancelling(), precision="auto", target="llvm -mcpu=haswell")
    assert _kernel_precisions(module) == [False, False]


@pytest.mark.parametrize(
    "calibration, message",
    [
        ({"y": np.zeros((64, 2), np.float32)}, "has no input 'x'"),
        ({"x": np.zeros((3, 2), np.float32)}, r"input 'x' has shape \(3, 2\)"),
    ],
)
@needs_bf16
def test_a_calibration_batch_that_does_not_fit_is_refused(calibration, message):
    with pytest.raises(ModelCompileError, match=message):
        ember.compile_model(cancelling(), precision="auto", calibration=calibration)


def test_a_calibration_batch_without_auto_is_refused():
    with pytest.raises(ModelCompileError, match="calibration batch is for precision"):
        ember.compile_model(cancelling(), calibration={"x": np.zeros((64, 2))})


@needs_bf16
def test_ember_compile_takes_a_calibration_file(tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(cancelling(), model)
    x = np.random.default_rng(0).standard_normal((64, 2)).astype(np.float32)
    np.savez(tmp_path / "cal.npz", x=x)

    def compile_(*extra):
        return subprocess.run(
            [
                sys.executable, "-m", "ember.tools.ember_compile", str(model),
                "-o", str(tmp_path / "m.so"), "--precision", "auto", *extra,
            ],
            capture_output=True,
            text=True,
        )  # fmt: skip

    done = compile_("--calibration", str(tmp_path / "cal.npz"))
    assert done.returncode == 0, done.stderr
    lib = ember.runtime.load_module(tmp_path / "m.so")
    assert _relative_error(lib, x) < 2**-7
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip")
    done = compile_("--calibration", str(broken))
    assert done.returncode != 0
    assert "--calibration: cannot read" in done.stderr
    assert "Traceback" not in done.stderr
