"""The C runtime (runtime/c, runtime/include/ember_crt.h): built here with the
system C compiler as C99 with -pedantic -Werror, it loads a model compiled by
ember.compile_model and runs it by its metadata (names, shapes, dtypes) to the
Python runtime's output bit for bit, with params embedded, from a param dict
or a packed blob; it refuses damaged param dicts, .tar libraries and wrong
calls with a message, under AddressSanitizer/UBSan too. Its code size is
printed (`pytest -s`) and held under the issue's budget."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import small_cnn

import ember
from ember import te
from ember.runtime import (
    GraphModule,
    cpu,
    load_module,
    pack_params,
    save_param_dict,
)
from ember.tools import build_runtime

ROOT = Path(__file__).resolve().parents[1]
CRT = ROOT / "runtime" / "c"
INCLUDE = ROOT / "runtime" / "include"
HOST = ROOT / "examples" / "deploy_c" / "run_model_crt.c"
SOURCES = [CRT / name for name in build_runtime.LIBRARY_SOURCES]
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", f"-I{INCLUDE}"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
CODE_BUDGET = 50 * 1024  # the goal for the runtime and its RPC server

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def _library(out: Path, *flags: str) -> Path:
    """libember_runtime.a from runtime/c, compiled with `flags`."""
    out.mkdir(parents=True, exist_ok=True)
    objects = []
    for source in SOURCES:
        obj = out / f"{source.stem}.o"
        subprocess.run(
            ["cc", *CFLAGS, "-fPIC", *flags, "-c", str(source), "-o", str(obj)],
            check=True,
        )
        objects.append(str(obj))
    archive = out / "libember_runtime.a"
    subprocess.run(["ar", "rcs", str(archive), *objects], check=True)
    return archive


def _program(source: Path, archive: Path, out: Path, *flags: str) -> Path:
    subprocess.run(
        ["cc", *CFLAGS, "-O1", *flags, str(source), str(archive), "-o", str(out)]
        + ["-ldl"],
        check=True,
    )
    return out


@pytest.fixture(scope="module")
def hosts(tmp_path_factory) -> dict[str, Path]:
    """run_model_crt against the runtime built for size, and under ASan/UBSan."""
    root = tmp_path_factory.mktemp("crt")
    small = _library(root / "small", "-Os")
    checked = _library(root / "checked", "-O1", *SANITIZE)
    return {
        "archive": small,
        "plain": _program(HOST, small, root / "run_model_crt"),
        "sanitized": _program(HOST, checked, root / "run_model_crt_asan", *SANITIZE),
        "checked_archive": checked,
    }


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    """The small CNN with embedded and with separate params, its param dict,
    its packed blob, an input and the Python runtime's output."""
    root = tmp_path_factory.mktemp("crt_models")
    onnx_model = small_cnn.model()
    ember.compile_model(onnx_model).export_library(root / "embedded.so")
    separate = ember.compile_model(onnx_model, embed_params=False)
    separate.export_library(root / "separate.so")
    separate.export_library(root / "separate.tar")
    (root / "params.bin").write_bytes(save_param_dict(separate.params))
    model = load_module(root / "separate.so").metadata["model"]
    (root / "packed.bin").write_bytes(
        pack_params(separate.params, model["params"], model["params_bytes"])
    )
    x = small_cnn.random_input()
    x.tofile(root / "x.bin")
    m = GraphModule(load_module(root / "embedded.so")["default"](cpu()))
    m.run(x=x)
    return {"root": root, "y": m.get_output(0).numpy(), "params": separate.params}


def _run(host: Path, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(host), *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def _output(path: Path) -> np.ndarray:
    return np.fromfile(path, "float32").reshape(small_cnn.OUTPUT_SHAPE)


def test_code_size_is_reported_and_within_budget(hosts):
    size = subprocess.run(
        ["size", "-t", str(hosts["archive"])], capture_output=True, text=True
    )
    assert size.returncode == 0, size.stderr
    totals = size.stdout.strip().splitlines()[-1].split()
    text, data = int(totals[0]), int(totals[1])
    print(f"\nC runtime (libember_runtime.a, -Os, x86-64): {size.stdout}")
    print(f"C runtime code: {text} bytes of text, {data} of data")
    assert text + data < CODE_BUDGET


@pytest.mark.parametrize("host", ["plain", "sanitized"])
def test_a_model_runs_by_its_metadata_as_in_python(hosts, models, tmp_path, host):
    root = models["root"]
    done = _run(
        hosts[host],
        root / "embedded.so",
        f"x={root / 'x.bin'}",
        f"y={tmp_path / 'y.bin'}",
    )
    assert done.returncode == 0, done.stderr
    assert "input x: float32 (1, 3, 8, 8)\noutput y: float32 (1, 10)\n" in done.stdout
    np.testing.assert_array_equal(_output(tmp_path / "y.bin"), models["y"])


@pytest.mark.parametrize("params", ["params.bin", "packed.bin"])
def test_separate_params_load_from_a_param_dict_or_a_blob(
    hosts, models, tmp_path, params
):
    root = models["root"]
    args = [root / "separate.so", f"x={root / 'x.bin'}", f"y={tmp_path / 'y.bin'}"]
    missing = _run(hosts["plain"], *args)
    assert missing.returncode == 1
    assert "params not loaded: 'w.packed." in missing.stderr
    done = _run(hosts["sanitized"], "--params", root / params, *args)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(_output(tmp_path / "y.bin"), models["y"])


def _version_1(document: bytes) -> bytes:
    """The same param dict in version 1: no CRC-32, so the field checks run."""
    return document[:8] + (1).to_bytes(4, "little") + document[12:-4]


def test_damaged_param_dicts_are_refused_with_a_reason(hosts, models, tmp_path):
    root = models["root"]
    good = (root / "params.bin").read_bytes()
    flipped = bytearray(good)
    flipped[100] ^= 4
    old = _version_1(good)
    cases = {
        "flipped": (bytes(flipped), "damaged param dict: the CRC-32"),
        "short": (good[:-9], "damaged param dict"),
        "magic": (b"NOTPARAM" + good[8:], "expected a param dict or the packed"),
        "v1-cut-field": (old[:100], "truncated param dict: entry 0: nbytes"),
        "v1-cut-data": (old[:-3], "truncated param dict"),
        "v1-extra": (old + b"\0", "1 bytes after the last entry"),
        "v1-count": (old[:12] + (10**6).to_bytes(4, "little") + old[16:], "entries"),
        "v1-ok": (old, None),
    }
    args = [root / "separate.so", f"x={root / 'x.bin'}", f"y={tmp_path / 'y.bin'}"]
    for name, (document, message) in cases.items():
        (tmp_path / name).write_bytes(document)
        done = _run(hosts["sanitized"], "--params", tmp_path / name, *args)
        if message is None:
            assert done.returncode == 0, done.stderr
        else:
            assert done.returncode == 1 and message in done.stderr, (name, done.stderr)
            assert "Sanitizer" not in done.stderr


def test_wrong_libraries_and_inputs_are_refused(hosts, models, tmp_path):
    root, host = models["root"], hosts["sanitized"]
    x = f"x={root / 'x.bin'}"
    (tmp_path / "notes.so").write_text("not a library\n")
    cases = [
        (
            [root / "separate.tar", x],
            1,
            "is a .tar library: its objects must be linked",
        ),
        ([tmp_path / "notes.so", x], 1, "is not a library (not an ELF file)"),
        ([tmp_path / "missing.so", x], 1, "cannot open"),
        (
            [root / "embedded.so", f"image={root / 'x.bin'}"],
            2,
            "no input named 'image'; its inputs: 'x'",
        ),
        ([root / "embedded.so", f"x={root / 'packed.bin'}"], 2, "input x takes 768"),
        ([root / "embedded.so"], 2, "the model has 1 input(s), 0 given"),
    ]
    for args, status, message in cases:
        done = _run(host, *args)
        assert done.returncode == status and message in done.stderr, (args, done.stderr)
        assert "Sanitizer" not in done.stderr


API_TEST = r"""
#include <stdio.h>
#include <string.h>
#include "ember_crt.h"

#define CHECK(cond) do { if (!(cond)) { printf("FAILED line %d: %s [%s]\n", \
    __LINE__, #cond, EmberGetLastError()); return 1; } } while (0)

int main(int argc, char** argv) {
  EmberModule* lib;
  EmberPackedFunc f;
  DLTensor *a, *b, *c, *wrong;
  DLDataType f32, u8;
  int64_t n = 16, m = 15;
  (void)argc;
  CHECK(EmberDataTypeFromString("float32", &f32) == 0);
  CHECK(EmberDataTypeFromString("uint8", &u8) == 0 && u8.code == kDLUInt);
  CHECK(EmberDataTypeFromString("float31", &f32) == -1);
  CHECK(strstr(EmberGetLastError(), "unknown dtype 'float31'") != NULL);
  CHECK(EmberDataTypeFromString("float32", &f32) == 0);
  CHECK(strcmp(EmberDataTypeName(f32), "float32") == 0);
  CHECK(EmberModuleLoad(argv[1], &lib) == 0);
  CHECK(strstr(EmberModuleMetadata(lib), "\"vecadd\"") != NULL);
  CHECK(strcmp(EmberModuleEntry(lib), "vecadd") == 0);
  CHECK(EmberModuleNumFunctions(lib) == 1);
  CHECK(strcmp(EmberModuleFunctionName(lib, 0), "vecadd") == 0);
  CHECK(EmberModuleFunctionName(lib, 1) == NULL);
  CHECK(EmberModuleGetFunction(lib, "vecadd_impl", &f) == -1);
  CHECK(strstr(EmberGetLastError(), "no function 'vecadd_impl'") != NULL);
  CHECK(EmberModuleGetFunction(lib, "vecadd", &f) == 0);
  CHECK(EmberArrayEmpty(&n, 1, f32, &a) == 0 && EmberArrayEmpty(&n, 1, f32, &b) == 0);
  CHECK(EmberArrayEmpty(&n, 1, f32, &c) == 0 && EmberArrayEmpty(&m, 1, f32, &wrong) == 0);
  CHECK(EmberArrayNumBytes(a) == 64 && (size_t)a->data % 64 == 0);
  for (int i = 0; i < 16; ++i) {
    ((float*)a->data)[i] = (float)i;
    ((float*)b->data)[i] = 0.5f;
  }
  EmberValue args[3], ret;
  int32_t codes[3] = {EMBER_TYPE_DLTENSOR, EMBER_TYPE_DLTENSOR, EMBER_TYPE_DLTENSOR}, rc;
  args[0].v_handle = a; args[1].v_handle = b; args[2].v_handle = c;
  CHECK(EmberFuncCall(f, args, codes, 3, &ret, &rc) == 0);
  CHECK(((float*)c->data)[15] == 15.5f);
  args[1].v_handle = wrong;
  CHECK(EmberFuncCall(f, args, codes, 3, &ret, &rc) == -1);
  CHECK(strstr(EmberGetLastError(), "vecadd: argument 1 (B): expected") != NULL);
  CHECK(EmberFuncCall(f, args, codes, 2, &ret, &rc) == -1);
  CHECK(strstr(EmberGetLastError(), "expected 3 arguments") != NULL);
  EmberModel* model;
  CHECK(EmberModelCreate(lib, &model) == -1);
  CHECK(strstr(EmberGetLastError(), "not a model library") != NULL);
  EmberArrayFree(a); EmberArrayFree(b); EmberArrayFree(c); EmberArrayFree(wrong);
  EmberModuleFree(lib);
  printf("ok\n");
  return 0;
}
"""


def test_the_api_loads_looks_up_allocates_and_calls(hosts, tmp_path):
    A = te.placeholder((16,), name="A")
    B = te.placeholder((16,), name="B")
    C = te.compute((16,), lambda i: A[i] + B[i], name="C")
    mod = ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")
    mod.export_library(tmp_path / "vecadd.so")
    (tmp_path / "api.c").write_text(API_TEST)
    program = _program(
        tmp_path / "api.c", hosts["checked_archive"], tmp_path / "api", *SANITIZE
    )
    done = _run(program, "vecadd.so", cwd=tmp_path)  # no slash: the file here
    assert done.returncode == 0 and done.stdout == "ok\n", done.stdout + done.stderr


def test_the_header_names_every_function_the_library_defines(hosts):
    """ember_crt.h declares what libember_runtime.a exports, nothing more or less."""
    symbols = subprocess.run(
        ["nm", "-g", "--defined-only", str(hosts["archive"])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    exported = {s for s in re.findall(r" T (\w+)", symbols) if s.startswith("Ember")}
    header = (INCLUDE / "ember_crt.h").read_text()
    declared = set(re.findall(r"\b(Ember[A-Z]\w+)\(", header))
    assert exported == declared
    internal = {s for s in re.findall(r" [TDBR] (\w+)", symbols)} - exported
    assert all(s.startswith(("ember_", "json_", "buf_")) for s in internal), internal


def test_the_example_makefile_builds_the_runtime_and_its_host(models, tmp_path):
    """`make -C examples/deploy_c run_model_crt`, on a copy so the tree stays clean."""
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    for name in ("Makefile", "run_model_crt.c"):
        shutil.copy(HOST.parent / name, tmp_path / name)
    done = subprocess.run(
        ["make", "-s", "-C", str(tmp_path), f"ROOT={ROOT}", "run_model_crt"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "build" / "crt" / "libember_runtime.a").is_file()
    root = models["root"]
    run = _run(
        tmp_path / "run_model_crt",
        "--repeat",
        "3",
        root / "embedded.so",
        f"x={root / 'x.bin'}",
        f"y={tmp_path / 'y.bin'}",
    )
    assert run.returncode == 0 and "latency: median" in run.stdout, run.stderr
    np.testing.assert_array_equal(_output(tmp_path / "y.bin"), models["y"])


def test_a_model_with_symbolic_shapes_is_refused_naming_the_way_out(hosts, tmp_path):
    """The C runtime runs libraries compiled for fixed shapes: one whose
    sizes are expressions (a batch left open) is refused saying so."""
    onnx_model = small_cnn.model()
    for value in (*onnx_model.graph.input, *onnx_model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    library = tmp_path / "symbolic.so"
    ember.compile_model(onnx_model).export_library(library)
    x = small_cnn.random_input()
    x.tofile(tmp_path / "x.bin")
    run = _run(hosts["sanitized"], library, f"x={tmp_path / 'x.bin'}")
    assert run.returncode == 1, run.stderr
    assert "the model has symbolic shapes" in run.stderr
    assert "compile with shape=" in run.stderr
