"""A CNN on an emulated Cortex-M4 (issue 28): `make -C examples/deploy_mcu
MODEL=m.onnx INPUT=x.npy run` compiles the small CNN for "c -mcpu=cortex-m4",
builds it with arm-none-eabi-gcc for the MPS2-AN386 board, runs it under
qemu-system-arm with semihosting, and its printed output matches onnxruntime.
Flash and RAM used (arm-none-eabi-size) are printed."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import small_cnn

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "deploy_mcu"
TOOLS = ("make", "arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm")


def _missing() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _flash_and_ram(size_output: str) -> tuple[int, int]:
    """Flash (text + data) and RAM (data + bss) from arm-none-eabi-size's line."""
    text, data, bss = (int(v) for v in size_output.splitlines()[1].split()[:3])
    return text + data, data + bss


def test_the_small_cnn_runs_on_a_cortex_m4_under_qemu_like_onnxruntime(tmp_path):
    if missing := _missing():
        reason = f"needs {', '.join(missing)} (.ci/system_deps.sh)"
        print(reason)
        pytest.skip(reason)
    ort = pytest.importorskip("onnxruntime")
    onnx.save(small_cnn.model(), tmp_path / "m.onnx")
    x = small_cnn.random_input()
    np.save(tmp_path / "x.npy", x)
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        ["make", "-s", "-C", str(EXAMPLE), f"MODEL={tmp_path / 'm.onnx'}"]
        + [f"INPUT={tmp_path / 'x.npy'}", f"BUILD={tmp_path / 'build'}"]
        + [f"PYTHON={sys.executable}", f"EMBER_COMPILE={bin_dir / 'ember-compile'}"]
        + ["run"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    size_at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["text"])
    flash, ram = _flash_and_ram("\n".join(lines[size_at : size_at + 2]))
    print(
        f"\nsmall CNN on cortex-m4 (model.elf with newlib): flash {flash} B, RAM {ram} B"
    )
    assert "ember_model_run: 0" in lines
    first = lines.index("ember_model_run: 0") + 1
    y = np.array([float(v) for v in lines[first:]], "float32")
    session = ort.InferenceSession(small_cnn.model().SerializeToString())
    expected = session.run(None, {"x": x})[0]
    np.testing.assert_allclose(
        y.reshape(small_cnn.OUTPUT_SHAPE), expected, rtol=1e-4, atol=1e-5
    )
