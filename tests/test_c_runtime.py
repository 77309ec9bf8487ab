"""The C runtime (runtime/c, runtime/include/ember_crt.h): built here with the
system C compiler as C99 with -pedantic -Werror, it loads a model compiled by
ember.compile_model and runs it by its metadata (names, shapes, dtypes) to the
Python runtime's output bit for bit, with params embedded, from a param dict
or a packed blob, and a model compiled with symbolic shapes at each shape its
inputs are given (refusing inconsistent and out-of-bound ones in the Python
runtime's words, and hostile dims with a reason); it refuses damaged param
dicts, .tar libraries and wrong calls with a message, under
AddressSanitizer/UBSan too. Its code size is printed (`pytest -s`) and held
under the issue's budget."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import masked_model
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


@pytest.fixture(scope="module")
def symbolic(tmp_path_factory) -> dict:
    """The model compiled once for every shape, and once with seq <= 16."""
    root = tmp_path_factory.mktemp("crt_symbolic")
    model = masked_model.model()
    ember.compile_model(model).export_library(root / "symbolic.so")
    ember.compile_model(model, bounds={"seq": 16}).export_library(root / "bounded.so")
    python = GraphModule(load_module(root / "symbolic.so")["default"](cpu()))
    return {"root": root, "python": python}


def _shaped_run(host, library, feeds, tmp_path, outputs=()):
    """run_model_crt at the feeds' shapes (--shape), writing `outputs`."""
    args = []
    for name, value in feeds.items():
        args += ["--shape", f"{name}={','.join(map(str, value.shape))}"]
    args.append(library)
    for name, value in feeds.items():
        value.tofile(tmp_path / f"{name}.bin")
        args.append(f"{name}={tmp_path / f'{name}.bin'}")
    args += [f"{name}={tmp_path / f'{name}.out'}" for name in outputs]
    return _run(host, *args)


def test_a_symbolic_model_runs_at_each_shape_as_in_python(hosts, symbolic, tmp_path):
    """One library, run by the C runtime at three shapes: the outputs have the
    shapes the inputs give and the Python runtime's values, bit for bit."""
    names = masked_model.OUTPUTS
    for b, s in [(2, 7), (1, 1), (3, 16)]:
        feeds = masked_model.feeds(b, s)
        done = _shaped_run(
            hosts["sanitized"], symbolic["root"] / "symbolic.so", feeds, tmp_path, names
        )
        assert done.returncode == 0, done.stderr
        assert (
            "input x: float32 (batch, seq)\ninput mask: float32 (seq,)\n"
            "output pad: float32 (batch, seq + 3)\n"
            "output slice: float32 (batch, (seq + 1) // 2)\n"
            "output sum: float32 (batch, 1)\n"
        ) in done.stdout
        product = feeds["x"] * feeds["mask"]
        python = symbolic["python"](**feeds)
        for name, want in zip(names, python, strict=True):
            got = np.fromfile(tmp_path / f"{name}.out", "float32").reshape(want.shape)
            np.testing.assert_array_equal(got, want)
        assert python[0].shape == (b, s + 3) and python[1].shape == (b, (s + 1) // 2)
        np.testing.assert_array_equal(python[0][:, 1 : s + 1], product)
        np.testing.assert_array_equal(python[1], product[:, ::2])


def test_inconsistent_and_out_of_bound_shapes_are_refused_as_in_python(
    hosts, symbolic, tmp_path
):
    root = symbolic["root"]
    python = GraphModule(load_module(root / "bounded.so")["default"](cpu()))
    cases = [
        ("symbolic.so", {**masked_model.feeds(2, 7), "mask": np.ones(8, np.float32)}),
        ("bounded.so", masked_model.feeds(1, 17)),
    ]
    for library, feeds in cases:
        done = _shaped_run(hosts["sanitized"], root / library, feeds, tmp_path)
        with pytest.raises(Exception) as refused:
            (python if library == "bounded.so" else symbolic["python"])(**feeds)
        assert done.returncode == 1 and str(refused.value) in done.stderr, (
            str(refused.value),
            done.stderr,
        )
    assert "run: input 'mask': dim 0 is 'seq' = 8, but input 'x' gave seq = 7" in (
        _shaped_run(hosts["plain"], root / "symbolic.so", cases[0][1], tmp_path).stderr
    )
    assert "set_input: input 'x': seq = 17 is above its bound 16" in done.stderr
    within = _shaped_run(
        hosts["plain"], root / "bounded.so", masked_model.feeds(1, 16), tmp_path
    )
    assert within.returncode == 0, within.stderr
    unshaped = _run(hosts["plain"], root / "symbolic.so", f"x={tmp_path / 'x.bin'}")
    assert unshaped.returncode == 2
    assert "input x has symbolic dims: give its shape (--shape x=" in unshaped.stderr


SYMBOLIC_API = r"""
#include <stdio.h>
#include <string.h>
#include "ember_crt.h"

#define CHECK(cond) do { if (!(cond)) { printf("FAILED line %d: %s [%s]\n", \
    __LINE__, #cond, EmberGetLastError()); return 1; } } while (0)

static int save(EmberModel* model, int run) {
  char path[64];
  for (int32_t o = 0; o < EmberModelNumOutputs(model); ++o) {
    DLTensor* t = EmberModelOutput(model, o);
    snprintf(path, sizeof path, "out_%d_%d.bin", run, (int)o);
    FILE* f = fopen(path, "wb");
    if (f == NULL) return 1;
    fwrite(t->data, 1, EmberArrayNumBytes(t), f);
    fclose(f);
  }
  return 0;
}

int main(int argc, char** argv) {
  EmberModule *lib, *cnn;
  EmberModel *model, *fixed;
  EmberTensorInfo info;
  DLDataType f32 = {kDLFloat, 32, 1};
  static const int64_t shapes[3][2] = {{2, 7}, {3, 16}, {1, 4}};
  float mask[16];
  (void)argc;
  CHECK(EmberModuleLoad(argv[1], &lib) == 0 && EmberModelCreate(lib, &model) == 0);
  CHECK(EmberModelInputInfo(model, 0, &info) == 0 && info.ndim == 2);
  CHECK(info.shape[0] == -1 && info.shape[1] == -1);
  CHECK(strcmp(info.dims[0], "batch") == 0 && strcmp(info.dims[1], "seq") == 0);
  CHECK(EmberModelOutputInfo(model, 1, &info) == 0);
  CHECK(strcmp(info.dims[1], "(seq + 1) // 2") == 0);
  CHECK(EmberModelOutputInfo(model, 2, &info) == 0);
  CHECK(info.dims[0] != NULL && info.dims[1] == NULL && info.shape[1] == 1);
  CHECK(EmberModelRun(model) == -1);
  CHECK(strstr(EmberGetLastError(),
               "run: input 'x' has a symbolic shape and is not set") != NULL);
  DLTensor* x = EmberModelInput(model, 0);
  void *grown = NULL, *pad = NULL;
  for (int run = 0; run < 3; ++run) {
    int64_t b = shapes[run][0], s = shapes[run][1];
    CHECK(EmberModelSetInputShape(model, 0, shapes[run]) == 0);
    CHECK(EmberModelInput(model, 0) == x && x->shape[0] == b && x->shape[1] == s);
    for (int64_t k = 0; k < b * s; ++k)
      ((float*)x->data)[k] = (float)(k * 7 % 11) - 5.0f;
    for (int64_t k = 0; k < s; ++k) mask[k] = 0.5f + 0.25f * (float)k;
    int64_t length = s;
    DLTensor value = {mask, {kDLCPU, 0}, 1, f32, &length, NULL, 0};
    CHECK(EmberModelSetInput(model, 1, &value) == 0);
    CHECK(EmberModelRun(model) == 0);
    DLTensor* out = EmberModelOutput(model, 0);
    CHECK(out->shape[0] == b && out->shape[1] == s + 3);
    CHECK(EmberModelOutput(model, 1)->shape[1] == (s + 1) / 2);
    CHECK(EmberModelOutput(model, 2)->shape[0] == b);
    if (run == 1) grown = x->data, pad = out->data;
    if (run == 2) CHECK(x->data == grown && out->data == pad); /* reused */
    CHECK(save(model, run) == 0);
  }
  static const int64_t seven[2] = {2, 7}, eight = 8, negative[2] = {2, -1};
  CHECK(EmberModelSetInputShape(model, 0, seven) == 0);
  CHECK(EmberModelSetInputShape(model, 1, &eight) == 0);
  CHECK(EmberModelRun(model) == -1);
  printf("%s\n", EmberGetLastError());
  CHECK(EmberModelSetInputShape(model, 0, negative) == -1);
  printf("%s\n", EmberGetLastError());
  CHECK(EmberModelSetInputShape(model, 2, seven) == -1);

  CHECK(EmberModuleLoad(argv[2], &cnn) == 0 && EmberModelCreate(cnn, &fixed) == 0);
  CHECK(EmberModelInputInfo(fixed, 0, &info) == 0 && info.dims == NULL);
  static const int64_t same[4] = {1, 3, 8, 8}, other[4] = {2, 3, 8, 8};
  CHECK(EmberModelSetInputShape(fixed, 0, same) == 0);
  CHECK(EmberModelSetInputShape(fixed, 0, other) == -1);
  printf("%s\n", EmberGetLastError());
  EmberModelFree(fixed);
  EmberModuleFree(cnn);
  EmberModelFree(model);
  EmberModuleFree(lib);
  printf("ok\n");
  return 0;
}
"""


def test_the_api_gives_shapes_that_grow_shrink_and_reuse_memory(
    hosts, models, symbolic, tmp_path
):
    """EmberModelSetInputShape, in-place writes, EmberModelSetInput of any
    consistent shape, symbolic dims in the info as -1 and their text; a
    smaller shape reuses the memory; a static model takes its own shape only."""
    (tmp_path / "api.c").write_text(SYMBOLIC_API)
    program = _program(
        tmp_path / "api.c", hosts["checked_archive"], tmp_path / "api", *SANITIZE
    )
    done = _run(
        program,
        symbolic["root"] / "symbolic.so",
        models["root"] / "embedded.so",
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stdout.endswith("ok\n"), (
        done.stdout + done.stderr
    )
    assert done.stdout.splitlines()[:3] == [
        "run: input 'mask': dim 0 is 'seq' = 8, but input 'x' gave seq = 7",
        "set_input: input 'x': dim 1 is -1, not a size",
        "set_input: input 'x' has the fixed shape (1, 3, 8, 8), got (2, 3, 8, 8)",
    ]
    for run, (b, s) in enumerate([(2, 7), (3, 16), (1, 4)]):
        x = (np.arange(b * s) * 7 % 11 - 5).astype(np.float32).reshape(b, s)
        mask = (0.5 + 0.25 * np.arange(s)).astype(np.float32)
        for o, want in enumerate(symbolic["python"](x=x, mask=mask)):
            got = np.fromfile(tmp_path / f"out_{run}_{o}.bin", "float32")
            np.testing.assert_array_equal(got.reshape(want.shape), want)


FAKE_LIBRARY = r"""
#include <stdlib.h>
#include <string.h>
#include "ember_runtime.h"

/* A model library whose metadata is $FAKE_METADATA; its default_run writes
   every input, output and the workspace whole, so a tensor given more
   elements than its memory holds is a sanitizer's report. */
int32_t __ember_metadata(EmberValue* args, int32_t* codes, int32_t n,
                         EmberValue* ret, int32_t* ret_code) {
  (void)args; (void)codes; (void)n;
  ret->v_handle = getenv("FAKE_METADATA");
  *ret_code = EMBER_TYPE_STR;
  return 0;
}

int32_t default_run(EmberValue* args, int32_t* codes, int32_t n,
                    EmberValue* ret, int32_t* ret_code) {
  (void)codes; (void)ret; (void)ret_code;
  for (int32_t i = 0; i + 1 < n; ++i) {
    DLTensor* t = (DLTensor*)args[i].v_handle;
    size_t bytes = (t->dtype.bits + 7u) / 8u;
    for (int32_t k = 0; k < t->ndim; ++k) bytes *= (size_t)t->shape[k];
    memset(t->data, 0x5a, bytes);
  }
  return 0;
}
"""


def _fake_metadata(outputs, inputs=(("x", ["n"]),), workspace=0, **model) -> str:
    def tensors(pairs):
        return [{"name": n, "shape": s, "dtype": "float32"} for n, s in pairs]

    return json.dumps(
        {
            "functions": {"default_run": {}},
            "entry": "default_run",
            "model": {
                "inputs": tensors(inputs),
                "outputs": tensors(outputs),
                "workspace_bytes": workspace,
                "params_bytes": 0,
                "params": {},
                "params_embedded": False,
                **model,
            },
        }
    )


def _fake_run(hosts, library, metadata, *args) -> subprocess.CompletedProcess:
    """run_model_crt (sanitized) on the fake library with `metadata`."""
    return subprocess.run(
        [str(hosts["sanitized"]), *map(str, args[:-1]), str(library), *args[-1]],
        capture_output=True,
        text=True,
        env={**os.environ, "FAKE_METADATA": metadata},
    )


# metadata no compiler writes, refused when the model is created
REFUSED_AT_CREATE = [
    (["n +"], {}, "outputs[0] ('y'): dim 0: dimension expression 'n +': expected "
     "an operand, got the end"),
    (["n $ 2"], {}, "'n $ 2': expected an operator, got '$ 2'"),
    (["min(n)"], {}, "'min(n)': expected ',', got ')'"),
    (["(" * 40 + "n" + ")" * 40], {}, "expected at most 32 levels of nesting"),
    (["9" * 20 + " * n"], {}, "expected a number below 2**63, got '99999"),
    (["mod + n"], {}, "expected an operand, got 'mod'"),
    (["3 - 5"], {}, "model: outputs[0] ('y'): dim 0: '3 - 5' is negative"),
    ([-1], {}, "dim 0: expected a non-negative int or an expression text"),
    (["n\u0000"], {}, "dim 0: expected a non-negative int or an expression text"),
    (["n"] * 33, {}, 'output 0: expected a "shape" of at most 32 extents'),
    (["n + m"], {}, "model: outputs[0] ('y'): dim 0 is 'n + m', which uses symbol "
     "'m'; no input binds it (an input's dim that is 'm' alone)"),
    (["n"], {"workspace": "n *"}, 'model: "workspace_bytes": dimension expression'),
    (["n"], {"bounds": {"m": 4}}, "model: bounds: 'm' is not a symbol of the "
     "model's inputs; its symbols are 'n'"),
    (["n"], {"bounds": {"n": 0}}, "model: bounds: 'n' must be a positive int"),
]  # fmt: skip

# sizes that cannot be, refused when the model runs at x's shape (n,)
REFUSED_AT_RUN = [
    (["n // (n - 4)"], {}, 4, "output 'y': dim 0: 'n // (n - 4)' divides by zero "
     "(n = 4)"),
    (["n // 0"], {}, 4, "output 'y': dim 0: 'n // 0' divides by zero (n = 4)"),
    (["n * 4611686018427387904"], {}, 4, "overflows int64 (n = 4)"),
    (["n - 5"], {}, 2, "output 'y': dim 0 is 'n - 5' = -3 (n = 2), which is "
     "negative"),
    (["n * 1152921504606846976"], {}, 4, "cannot allocate output 'y' of shape (4611686018427387904,)"),
    (["n"], {"workspace": "n - 10"}, 2, "the workspace size is 'n - 10' = -8 "
     "(n = 2), which is negative"),
    (["n"], {"bounds": {"n": 3}}, 4, "set_input: input 'x': n = 4 is above its "
     "bound 3"),
    (["n"], {}, -1, "set_input: input 'x': dim 0 is -1, not a size"),
]  # fmt: skip


def test_hostile_dims_are_refused_with_a_reason_never_misread(hosts, tmp_path):
    """Texts that do not parse, nest too deep or overflow, symbols no input
    binds, bad bounds; sizes that divide by zero, overflow or go negative at
    run time: each refused naming the dim, its text and the values, with no
    sanitizer report. Floor // and % as Python's; the inputs' other dims
    checked once their symbols are bound."""
    library = tmp_path / "fake.so"
    (tmp_path / "fake.c").write_text(FAKE_LIBRARY)
    subprocess.run(
        [
            "cc",
            *CFLAGS,
            "-shared",
            "-fPIC",
            str(tmp_path / "fake.c"),
            "-o",
            str(library),
        ],
        check=True,
    )
    x = tmp_path / "x.bin"
    for dims, model, message in REFUSED_AT_CREATE:
        metadata = _fake_metadata([("y", dims)], **model)
        done = _fake_run(hosts, library, metadata, [f"x={x}"])
        assert done.returncode == 1 and message in done.stderr, (message, done.stderr)
        assert "Sanitizer" not in done.stderr
    for dims, model, n, message in REFUSED_AT_RUN:
        np.zeros(max(n, 0), np.float32).tofile(x)
        metadata = _fake_metadata([("y", dims)], **model)
        done = _fake_run(hosts, library, metadata, "--shape", f"x={n}", [f"x={x}"])
        assert done.returncode == 1 and message in done.stderr, (message, done.stderr)
        assert "Sanitizer" not in done.stderr
    # at n = 3: 1, 1 and 2 elements (C's / and % truncate: 2 and -3)
    floors = [("a", ["-n // 2 + n"]), ("b", ["(n - 10) % 4"])]
    floors.append(("c", ["max(0, n - 5) + min(n, 2)"]))
    np.zeros(3, np.float32).tofile(x)
    written = [f"x={x}", *(f"{name}={tmp_path / name}" for name, _ in floors)]
    done = _fake_run(hosts, library, _fake_metadata(floors), "--shape", "x=3", written)
    assert done.returncode == 0, done.stderr
    assert [(tmp_path / name).stat().st_size for name, _ in floors] == [4, 4, 8]
    # the inputs' other dims are checked once their symbols are bound; a text
    # without symbols ("4", "2 * 3") is an int, so w needs no --shape
    inputs = [("x", ["n", "4"]), ("z", ["2 * n"]), ("w", ["2 * 3"])]
    metadata = _fake_metadata([("y", ["n", "1 + 1"])], inputs)
    np.zeros(6, np.float32).tofile(tmp_path / "w.bin")
    for x_shape, z_size, message in [
        ((3, 5), 6, "set_input: input 'x': dim 1 must be 4, got 5"),
        ((3, 4), 5, "run: input 'z': dim 0 is '2 * n' = 6 (n = 3), got 5"),
        ((3, 4), 6, None),
    ]:
        np.zeros(x_shape, np.float32).tofile(x)
        np.zeros(z_size, np.float32).tofile(tmp_path / "z.bin")
        shapes = ["--shape", f"x={x_shape[0]},{x_shape[1]}", "--shape", f"z={z_size}"]
        files = [f"{name}={tmp_path / name}.bin" for name in ("z", "w", "y")]
        done = _fake_run(hosts, library, metadata, *shapes, [f"x={x}", *files])
        if message is None:
            assert done.returncode == 0, done.stderr
            assert (tmp_path / "y.bin").stat().st_size == 4 * 3 * 2
        else:
            assert done.returncode == 1 and message in done.stderr, done.stderr
