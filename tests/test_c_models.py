"""Whole models for the `c` target (issue 28): the small CNN compiled with
`compile_model(target="c")` runs on this machine through the library it
exports and matches onnxruntime; in micro mode (`c -mcpu=cortex-m4`) its C
file compiles strictly, references no heap or thread symbol, runs through a
small C main on the host, and builds for a Cortex-M4 when arm-none-eabi-gcc
is installed."""

import shutil
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest
import small_cnn

import ember
from ember.runtime import GraphModule, cpu, load_module

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

STRICT = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-O2"]
FORBIDDEN = ("malloc", "calloc", "realloc", "free", "pthread_", "GOMP_", "omp_")

MAIN = r"""
#include <stdio.h>
#include "model.h"

int main(int argc, char** argv) {
  static float x[EMBER_MODEL_INPUT_X_SIZE], y[EMBER_MODEL_OUTPUT_Y_SIZE];
  FILE* f = fopen(argv[1], "rb");
  if (argc != 3 || !f || fread(x, sizeof x, 1, f) != 1) return 2;
  fclose(f);
  if (ember_model_run(x, y) != 0) return 3;
  f = fopen(argv[2], "wb");
  if (!f || fwrite(y, sizeof y, 1, f) != 1) return 4;
  return fclose(f);
}
"""


def _onnxruntime_output(x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(small_cnn.model().SerializeToString())
    return session.run(None, {"x": x})[0]


def _undefined(obj: Path) -> list[str]:
    out = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]


def test_a_cnn_for_c_runs_through_its_library_like_onnxruntime(tmp_path):
    mod = ember.compile_model(small_cnn.model(), target="c")
    assert "int32_t default_run(" in mod.get_source()
    assert "ember_model_run(const float* x, float* y" in mod.get_source("h")
    x = small_cnn.random_input()
    expected = _onnxruntime_output(x)
    mod.export_library(tmp_path / "cnn.so")
    lib = load_module(tmp_path / "cnn.so")
    m = GraphModule(lib["default"](cpu()))
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-5)
    m = GraphModule(mod["default"](cpu()))  # compiled in this process
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-5)


def test_the_sources_export_as_a_folder_and_a_tar(tmp_path):
    mod = ember.compile_model(small_cnn.model(), target="c")
    mod.export_library(tmp_path / "cnn")
    assert (tmp_path / "cnn" / "model.c").read_text() == mod.get_source()
    mod.export_library(tmp_path / "cnn.tar")
    with tarfile.open(tmp_path / "cnn.tar") as tar:
        assert sorted(tar.getnames()) == ["model.c", "model.h"]


@pytest.fixture(scope="module")
def micro(tmp_path_factory) -> Path:
    """The small CNN in micro mode, its sources written to a folder."""
    out = tmp_path_factory.mktemp("micro") / "cnn"
    ember.compile_model(small_cnn.model(), target="c -mcpu=cortex-m4").export_library(
        out
    )
    return out


def test_micro_c_needs_no_heap_or_threads_and_runs_from_a_c_main(micro, tmp_path):
    obj = tmp_path / "model.o"
    flags = [*STRICT, "-ffreestanding", "-DEMBER_NO_METADATA"]
    subprocess.run(
        ["cc", *flags, "-c", str(micro / "model.c"), "-o", str(obj)], check=True
    )
    bad = [s for s in _undefined(obj) if s.startswith(FORBIDDEN)]
    assert bad == [], f"micro C references {bad}"
    (tmp_path / "main.c").write_text(MAIN)
    exe = tmp_path / "run"
    subprocess.run(
        ["cc", *STRICT, f"-I{micro}", str(tmp_path / "main.c"), str(obj)]
        + ["-o", str(exe), "-lm"],
        check=True,
    )
    x = small_cnn.random_input()
    x.tofile(tmp_path / "x.bin")
    done = subprocess.run([str(exe), tmp_path / "x.bin", tmp_path / "y.bin"])
    assert done.returncode == 0
    y = np.fromfile(tmp_path / "y.bin", "float32").reshape(small_cnn.OUTPUT_SHAPE)
    np.testing.assert_allclose(y, _onnxruntime_output(x), rtol=1e-4, atol=1e-5)


def test_micro_c_builds_for_a_cortex_m4(micro, tmp_path):
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        pytest.skip("arm-none-eabi-gcc is not installed (.ci/system_deps.sh)")
    obj = tmp_path / "model.o"
    arm = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
    subprocess.run(
        [gcc, *arm, *STRICT, "-DEMBER_NO_METADATA", "-c", str(micro / "model.c")]
        + ["-o", str(obj)],
        check=True,
    )
    bad = [s for s in _undefined(obj) if s.startswith(FORBIDDEN)]
    assert bad == [], f"micro C references {bad}"
    size = subprocess.run(
        ["arm-none-eabi-size", str(obj)], capture_output=True, text=True
    )
    print(f"\nsmall CNN for cortex-m4 (model.o):\n{size.stdout}")


def test_ember_compile_takes_target_c(tmp_path):
    import onnx

    from ember.tools import ember_compile

    onnx.save(small_cnn.model(), tmp_path / "cnn.onnx")
    argv = [str(tmp_path / "cnn.onnx"), "-o", str(tmp_path / "cnn.so")]
    assert ember_compile.main([*argv, "--target", "c"]) == 0
    m = GraphModule(load_module(tmp_path / "cnn.so")["default"](cpu()))
    x = small_cnn.random_input()
    m.run(x=x)
    np.testing.assert_allclose(
        m.get_output(0).numpy(), _onnxruntime_output(x), rtol=1e-4, atol=1e-5
    )
