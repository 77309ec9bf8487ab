"""examples/deploy_c/run_model.c: a C host runs a model library without Python
and agrees with the Python GraphModule, and refuses what it must."""

import shutil
import struct
import subprocess
from pathlib import Path

import handmade_model as hm
import numpy as np
import pytest

import ember
from ember.runtime import GraphModule, cpu, load_module, pack_params

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "deploy_c"
INCLUDE = ROOT / "runtime" / "include"
PARAMS = hm.random_params()

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def _compile(out: Path, *flags: str) -> Path:
    subprocess.run(
        [
            "cc",
            "-std=c99",
            "-O2",
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            *flags,
            f"-I{INCLUDE}",
            str(EXAMPLE / "run_model.c"),
            "-o",
            str(out),
            "-ldl",
        ],
        check=True,
    )
    return out


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp("run_model") / "run_model")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("c_models")
    embedded, separate = root / "embedded.so", root / "separate.so"
    hm.build(PARAMS).export_library(embedded)
    hm.build().export_library(separate)
    blob = root / "params.bin"
    blob.write_bytes(pack_params(PARAMS, hm.LAYOUT, hm.PARAMS_BYTES))
    return {"embedded": embedded, "separate": separate, "params": blob}


def _python_output(library: Path, x: np.ndarray, params=None) -> np.ndarray:
    m = GraphModule(load_module(library)["default"](cpu()))
    if params is not None:
        m.load_params(params)
    m.run(x=x)
    return m.get_output(0).numpy()


def _run(runner: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(runner), *map(str, args)], capture_output=True, text=True, env={}
    )


def test_embedded_params_match_the_python_runtime(runner, models, tmp_path):
    x = np.random.default_rng(3).standard_normal((1, hm.K)).astype("float32")
    x.tofile(tmp_path / "x.bin")
    done = _run(
        runner,
        "--repeat",
        5,
        models["embedded"],
        tmp_path / "x.bin",
        tmp_path / "y.bin",
    )
    assert done.returncode == 0, done.stderr
    assert "params 896 bytes, embedded" in done.stdout
    assert "input 0: dtype (2, 32), shape (1, 8), 32 bytes" in done.stdout
    assert "output 0: dtype (2, 32), shape (1, 4), 16 bytes" in done.stdout
    assert "latency: median" in done.stdout
    y = np.fromfile(tmp_path / "y.bin", "float32").reshape(1, hm.N)
    np.testing.assert_array_equal(y, _python_output(models["embedded"], x))
    np.testing.assert_allclose(y, hm.reference(x, PARAMS), rtol=1e-5, atol=1e-5)


def test_separate_params_from_a_blob_file(runner, models, tmp_path):
    x = np.ones((1, hm.K), "float32")
    x.tofile(tmp_path / "x.bin")
    done = _run(runner, models["separate"], tmp_path / "x.bin", tmp_path / "y.bin")
    assert done.returncode == 2
    assert "keeps its params separate: pass --params PARAMS.bin" in done.stderr
    done = _run(
        runner,
        "--params",
        models["params"],
        models["separate"],
        tmp_path / "x.bin",
        tmp_path / "y.bin",
    )
    assert done.returncode == 0, done.stderr
    y = np.fromfile(tmp_path / "y.bin", "float32").reshape(1, hm.N)
    expected = _python_output(models["separate"], x, models["params"].read_bytes())
    np.testing.assert_array_equal(y, expected)


def test_refusals(runner, models, tmp_path):
    (tmp_path / "short.bin").write_bytes(bytes(12))
    np.zeros((1, hm.K), "float32").tofile(tmp_path / "x.bin")
    cases = [
        (
            (models["embedded"], tmp_path / "short.bin", tmp_path / "y.bin"),
            "has 12 bytes, expected 32",
        ),
        (
            (models["embedded"], tmp_path / "x.bin"),
            "give 2 file(s) after the library, got 1",
        ),
        (
            (models["embedded"], tmp_path / "none.bin", tmp_path / "y.bin"),
            "cannot open",
        ),
        (
            ("--repeat", "x", models["embedded"]),
            "--repeat must be a non-negative integer",
        ),
        (("--bogus", "1", models["embedded"]), "unknown option --bogus"),
        ((tmp_path / "x.bin",), "cannot open"),
        (
            (
                "--params",
                tmp_path / "short.bin",
                models["separate"],
                tmp_path / "x.bin",
                tmp_path / "y.bin",
            ),
            "has 12 bytes, expected 896",
        ),
        ((), "usage: run_model"),
    ]
    for args, message in cases:
        done = _run(runner, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr, (args, done.stderr)


def test_a_kernel_library_is_not_a_model(runner, tmp_path):
    from ember import te

    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    ember.build(te.create_schedule(B.op), [A, B], name="inc").export_library(
        tmp_path / "k.so"
    )
    done = _run(runner, tmp_path / "k.so")
    assert done.returncode == 2
    assert "defines no default_run: not an ember model" in done.stderr


def test_the_model_refusing_the_call_is_exit_1(runner, models, tmp_path):
    """A library whose workspace size global disagrees with its entry (a
    broken build): the host allocates that size, and the entry's own check
    refuses the call with its message."""
    if shutil.which("nm") is None:
        pytest.skip("needs nm")
    symbols = subprocess.run(
        ["nm", "-D", str(models["embedded"])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    address = next(
        int(line.split()[0], 16)
        for line in symbols.splitlines()
        if line.endswith(" __ember_model_workspace_bytes")
    )
    data = bytearray(models["embedded"].read_bytes())
    offset = _file_offset(data, address)
    assert int.from_bytes(data[offset : offset + 8], "little") == hm.WORKSPACE_BYTES
    data[offset : offset + 8] = (128).to_bytes(8, "little")
    (tmp_path / "bad.so").write_bytes(bytes(data))
    np.zeros((1, hm.K), "float32").tofile(tmp_path / "x.bin")
    done = _run(runner, tmp_path / "bad.so", tmp_path / "x.bin", tmp_path / "y.bin")
    assert done.returncode == 1
    assert (
        "default_run failed (code -4): default_run: argument 2 (workspace): "
        "expected uint8 tensor of shape (64,)" in done.stderr
    )


def _file_offset(data: bytes, address: int) -> int:
    """The file offset of a virtual address, from the program headers."""
    (phoff,) = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize
        )
        if p_type == 1 and p_vaddr <= address < p_vaddr + p_filesz:
            return address - p_vaddr + p_offset
    raise AssertionError(f"address {address:#x} is in no PT_LOAD segment")


def test_under_sanitizers(models, tmp_path):
    runner = tmp_path / "run_model_asan"
    try:
        _compile(
            runner, "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"
        )
    except subprocess.CalledProcessError:
        pytest.skip("the C compiler cannot build with sanitizers here")
    x = np.random.default_rng(5).standard_normal((1, hm.K)).astype("float32")
    x.tofile(tmp_path / "x.bin")
    done = _run(
        runner,
        "--repeat",
        3,
        models["embedded"],
        tmp_path / "x.bin",
        tmp_path / "y.bin",
    )
    assert done.returncode == 0, done.stderr
    y = np.fromfile(tmp_path / "y.bin", "float32").reshape(1, hm.N)
    np.testing.assert_allclose(y, hm.reference(x, PARAMS), rtol=1e-5, atol=1e-5)


def test_makefile_builds_run_model(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("needs make")
    copy = tmp_path / "deploy_c"
    shutil.copytree(
        EXAMPLE, copy, ignore=shutil.ignore_patterns("*.so", "deploy_c", "run_model")
    )
    done = subprocess.run(
        ["make", "-C", str(copy), "run_model", f"ROOT={ROOT}"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (copy / "run_model").exists()


SMALL_CNN = """
func.func @main(%x: tensor<1x3x16x16xf32> {ember.name = "image"}) -> tensor<1x8xf32> {
  %w = graph.param "conv.weight" : tensor<8x3x3x3xf32>
  %b = graph.param "conv.bias" : tensor<8xf32>
  %c = graph.conv2d %x, %w, %b {strides = [1, 1], padding = [1, 1, 1, 1]} : (tensor<1x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x16x16xf32>
  %r = graph.relu %c : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %g = graph.global_avg_pool2d %r : (tensor<1x8x16x16xf32>) -> tensor<1x8x1x1xf32>
  %f = graph.flatten %g {axis = 1} : (tensor<1x8x1x1xf32>) -> tensor<1x8xf32>
  %s = graph.softmax %f {axis = 1} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %s : tensor<1x8xf32>
}
"""


@pytest.mark.parametrize("embed_params", [True, False])
def test_a_compiled_model_matches_the_python_runtime(runner, tmp_path, embed_params):
    """A graph compiled by ember.compile_model (packed conv weights, workspace
    plan, several kernels), run from C and from Python."""
    rng = np.random.default_rng(0)
    params = {
        "conv.weight": rng.standard_normal((8, 3, 3, 3)).astype("float32"),
        "conv.bias": rng.standard_normal(8).astype("float32"),
    }
    mod = ember.compile_model(SMALL_CNN, params, embed_params=embed_params)
    mod.export_library(tmp_path / "cnn.so")
    lib = load_module(tmp_path / "cnn.so")
    model = lib.metadata["model"]
    x = rng.standard_normal((1, 3, 16, 16)).astype("float32")
    x.tofile(tmp_path / "x.bin")
    m = GraphModule(lib["default"](cpu()))
    args = []
    if not embed_params:
        packed = pack_params(mod.params, model["params"], model["params_bytes"])
        (tmp_path / "params.bin").write_bytes(packed)
        m.load_params(packed)
        args = ["--params", tmp_path / "params.bin"]
    m.run(image=x)
    done = _run(
        runner, *args, tmp_path / "cnn.so", tmp_path / "x.bin", tmp_path / "y.bin"
    )
    assert done.returncode == 0, done.stderr
    y = np.fromfile(tmp_path / "y.bin", "float32").reshape(1, 8)
    np.testing.assert_array_equal(y, m.get_output(0).numpy())
    np.testing.assert_allclose(y.sum(), 1.0, rtol=1e-5)


def test_header_names_the_symbols_the_compiler_emits():
    from ember.passes import func_packed_abi as abi
    from ember.runtime import graph_module

    text = (INCLUDE / "ember_runtime.h").read_text()
    expected = {
        "EMBER_MODEL_RUN_SYMBOL": graph_module.RUN_FUNCTION,
        "EMBER_MODEL_WORKSPACE_BYTES_SYMBOL": abi.MODEL_GLOBALS["workspace_bytes"],
        "EMBER_MODEL_PARAMS_BYTES_SYMBOL": abi.MODEL_GLOBALS["params_bytes"],
        "EMBER_MODEL_IO_SYMBOL": abi.MODEL_IO,
        "EMBER_PARAMS_SYMBOL": graph_module.PARAMS_SYMBOL,
    }
    for macro, symbol in expected.items():
        assert f'#define {macro} "{symbol}"' in text
    assert abi.MODEL_ENTRY == graph_module.RUN_FUNCTION
