"""No-Python deployment: runtime/include/ember_runtime.h and examples/deploy_c.

A kernel exported by ember is run by a C program (examples/deploy_c/main.c)
compiled here with the system C compiler: the program opens the library with
dlopen, prints its metadata, runs the kernel on DLTensors it builds itself, checks
the result against C and shows the error path. The header is compiled as strict
C99 and as C++, and its layout and constants are checked against the Python
runtime and the code generator, which are the ABI's reference.
"""

import ctypes
import importlib.util
import json
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import te
from ember.passes import func_packed_abi
from ember.runtime import dlpack, module, parallel
from ember.runtime.packed_func import TypeCode

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "runtime" / "include" / "ember_runtime.h"
EXAMPLE = ROOT / "examples" / "deploy_c"
CC = shutil.which("cc")
CXX = shutil.which("c++")
STRICT_C = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]

needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")


def _load_build_kernel():
    spec = importlib.util.spec_from_file_location(
        "deploy_c_build_kernel", EXAMPLE / "build_kernel.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build_kernel = _load_build_kernel()


def _compile(source: Path, output: Path, *flags: str, compiler: str | None = CC):
    assert compiler is not None
    command = [compiler, *flags, f"-I{HEADER.parent}", str(source), "-o", str(output)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr}"
    return output


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    """examples/deploy_c/main.c, compiled warning-free as C99."""
    if CC is None:
        pytest.skip("no C compiler (cc) on PATH")
    out = tmp_path_factory.mktemp("deploy_c")
    return _compile(EXAMPLE / "main.c", out / "deploy_c", *STRICT_C, "-O1", "-ldl")


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """The example's kernel (64x48 @ 48x32, parallel and vectorized), exported."""
    if CC is None:
        pytest.skip("no C compiler (cc) on PATH")
    path = tmp_path_factory.mktemp("lib") / "matmul.so"
    build_kernel.matmul(64, 48, 32).export_library(path)
    return path


def run_host(host: Path, *args, env: dict[str, str] | None = None):
    """Run the C host in a bare environment: no Python variables, no PATH."""
    return subprocess.run(
        [str(host), *map(str, args)],
        capture_output=True,
        text=True,
        env=env or {},
        timeout=60,
    )


def lines(stdout: str) -> dict[str, str]:
    """`key: value` lines of the host's output."""
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)


@needs_cc
def test_c_host_runs_an_exported_kernel(host, library):
    done = run_host(host, library, env={"EMBER_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stdout + done.stderr
    out = lines(done.stdout)
    assert out["threads per parallel region"].startswith("2 ")
    document = json.loads(out["metadata"])
    assert document["entry"] == "matmul"  # other keys (a "triple") may follow
    args = document["functions"]["matmul"]["args"]
    assert list(document["functions"]) == ["matmul"]
    assert args == [
        {"name": name, "shape": shape, "dtype": "float32", "output": name == "C"}
        for name, shape in (("A", [64, 48]), ("B", [48, 32]), ("C", [64, 32]))
    ]
    assert "matmul(A[64 x 48], B[48 x 32]) -> C[64 x 32]" in done.stdout
    assert out["result"].startswith("ok"), done.stdout


@needs_cc
def test_c_host_shows_the_kernels_error_messages(host, library):
    done = run_host(host, library)
    assert done.returncode == 0, done.stdout + done.stderr
    out = lines(done.stdout)
    assert out["wrong shape"] == (
        "code -3 (argument 1): matmul: argument 1 (B): expected float32 tensor "
        "of shape (48, 32)"
    )
    assert out["wrong count"] == ("code -1: matmul: expected 3 arguments (A, B, C)")


@needs_cc
def test_c_host_runs_ragged_tiles(host, tmp_path):
    """Extents that the 8 x 16 tiles and vector width do not divide."""
    lib = tmp_path / "m.so"
    build_kernel.matmul(5, 3, 17).export_library(lib)
    done = run_host(host, lib, "matmul", 5, 3, 17)
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines(done.stdout)["result"].startswith("ok")


@needs_cc
def test_c_host_fails_on_a_wrong_result(host, tmp_path):
    """The check in main.c can fail: a "matmul" that doubles its result."""
    A = te.placeholder((8, 4), name="A")
    B = te.placeholder((4, 16), name="B")
    r = te.reduce_axis((0, 4), name="r")
    C = te.compute(
        (8, 16), lambda i, j: te.sum(A[i, r] * B[r, j] * 2.0, axis=r), name="C"
    )
    wrong = ember.build(te.create_schedule(C.op), [A, B, C], name="matmul")
    lib = tmp_path / "wrong.so"
    wrong.export_library(lib)
    done = run_host(host, lib, "matmul", 8, 4, 16)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "result: MISMATCH in " in done.stdout


@needs_cc
def test_c_host_fails_when_the_kernel_refuses_its_arguments(host, library):
    """Dimensions other than the library's: the kernel's message, exit code 1."""
    done = run_host(host, library, "matmul", 64, 48, 33)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "deploy_c: matmul failed with code -3: matmul: argument 1 (B): expected "
        "float32 tensor of shape (48, 32)"
    )


@needs_cc
def test_c_host_refuses_a_missing_function_bad_threads_or_a_bad_library(
    host, library, tmp_path
):
    done = run_host(host, library, "conv2d")
    assert done.returncode == 2
    assert done.stderr.strip() == f"deploy_c: {library} has no function 'conv2d'"
    done = run_host(host, library, env={"EMBER_NUM_THREADS": "two"})
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "deploy_c: EMBER_NUM_THREADS must be an integer in 1..1073741824, got 'two'"
    )
    garbage = tmp_path / "garbage.so"
    garbage.write_bytes(b"not an ELF file")
    done = run_host(host, garbage)
    assert done.returncode == 2
    assert done.stderr.startswith(f"deploy_c: cannot open {garbage}: ")


@needs_cc
def test_c_host_is_clean_under_address_sanitizer(library, tmp_path):
    """The host's own memory use (tensors, shapes, messages, no leaks), and no
    crash at exit from libgomp's threads (a dlclose there unloads libgomp)."""
    flags = [*STRICT_C, "-g", "-fsanitize=address,undefined"]
    flags += ["-fno-sanitize-recover=all", "-ldl"]
    command = [CC, *flags, f"-I{HEADER.parent}", str(EXAMPLE / "main.c")]
    command += ["-o", str(tmp_path / "deploy_c_asan")]
    if subprocess.run(command, capture_output=True).returncode != 0:
        pytest.skip("the C compiler has no AddressSanitizer")
    done = run_host(tmp_path / "deploy_c_asan", library)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Sanitizer" not in done.stderr
    assert lines(done.stdout)["result"].startswith("ok")


@needs_cc
def test_the_library_runs_the_same_in_python(library):
    """What the C host ran, Python's load_module runs too, against numpy."""
    f = module.load_module(library)["matmul"]
    a = np.random.rand(64, 48).astype("float32")
    b = np.random.rand(48, 32).astype("float32")
    c = np.empty((64, 32), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


# The header ----------------------------------------------------------------


@needs_cc
@pytest.mark.parametrize("declare", [False, True], ids=["dlopen", "linked"])
def test_header_compiles_as_strict_c99(tmp_path, declare):
    flags = [*STRICT_C, "-fsyntax-only", "-x", "c"]
    if declare:
        flags.append("-DEMBER_DECLARE_LIBRARY_SYMBOLS")
    command = [CC, *flags, str(HEADER)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(CXX is None, reason="no C++ compiler (c++) on PATH")
def test_header_compiles_as_cpp(tmp_path):
    flags = ["-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-x", "c++"]
    command = [CXX, *flags, "-DEMBER_DECLARE_LIBRARY_SYMBOLS", str(HEADER)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def _dlpack_header() -> Path | None:
    """A dlpack.h shipped by an installed package (torch, tvm_ffi), if any."""
    for package, relative in (
        ("tvm_ffi", "include/dlpack/dlpack.h"),
        ("torch", "include/ATen/dlpack.h"),
    ):
        spec = importlib.util.find_spec(package)
        for location in (spec and spec.submodule_search_locations) or ():
            if (candidate := Path(location) / relative).is_file():
                return candidate
    return None


@needs_cc
@pytest.mark.skipif(_dlpack_header() is None, reason="no dlpack.h installed")
def test_header_uses_dlpack_h_when_included_first(tmp_path):
    source = tmp_path / "both.c"
    source.write_text(
        f'#include "{_dlpack_header()}"\n#include "ember_runtime.h"\n'
        "int main(void) {\n"
        "  DLTensor t = {0};\n  EmberValue v;\n  v.v_handle = &t;\n"
        "  return v.v_handle == 0;\n}\n"
    )
    _compile(source, tmp_path / "both", *STRICT_C)


_PROBE = r"""
#include <stddef.h>
#include <stdio.h>
#include "ember_runtime.h"
#define SHOW(name, value) printf("%s %ld\n", name, (long)(value))
#define FIELD(s, f) SHOW(#s "." #f, offsetof(s, f))
int main(void) {
  SHOW("sizeof.EmberValue", sizeof(EmberValue));
  SHOW("sizeof.DLTensor", sizeof(DLTensor));
  FIELD(DLTensor, data); FIELD(DLTensor, device); FIELD(DLTensor, ndim);
  FIELD(DLTensor, dtype); FIELD(DLTensor, shape); FIELD(DLTensor, strides);
  FIELD(DLTensor, byte_offset);
  FIELD(DLDevice, device_type); FIELD(DLDevice, device_id);
  FIELD(DLDataType, code); FIELD(DLDataType, bits); FIELD(DLDataType, lanes);
  SHOW("kDLCPU", kDLCPU); SHOW("kDLInt", kDLInt); SHOW("kDLUInt", kDLUInt);
  SHOW("kDLFloat", kDLFloat); SHOW("kDLBfloat", kDLBfloat);
  SHOW("kDLBool", kDLBool);
  SHOW("INT", EMBER_TYPE_INT); SHOW("UINT", EMBER_TYPE_UINT);
  SHOW("FLOAT", EMBER_TYPE_FLOAT); SHOW("HANDLE", EMBER_TYPE_HANDLE);
  SHOW("NULL", EMBER_TYPE_NULL); SHOW("DLTENSOR", EMBER_TYPE_DLTENSOR);
  SHOW("MODULE", EMBER_TYPE_MODULE); SHOW("PACKED_FUNC", EMBER_TYPE_PACKED_FUNC);
  SHOW("STR", EMBER_TYPE_STR); SHOW("NDARRAY", EMBER_TYPE_NDARRAY);
  SHOW("EMBER_ERR_ARG(3)", EMBER_ERR_ARG(3));
  SHOW("EMBER_ERR_ARG_INDEX(-5)", EMBER_ERR_ARG_INDEX(-5));
  printf("symbols %s %s %s\n", EMBER_METADATA_SYMBOL, EMBER_NUM_THREADS_SYMBOL,
         EMBER_CALL_PACKED_SYMBOL);
  return 0;
}
"""


@needs_cc
def test_header_agrees_with_the_runtime_and_the_code_generator(tmp_path):
    source = tmp_path / "probe.c"
    source.write_text(_PROBE)
    probe = _compile(source, tmp_path / "probe", *STRICT_C)
    out = subprocess.run([probe], capture_output=True, text=True, check=True).stdout
    symbols = out.splitlines()[-1].split()[1:]
    c = {k: int(v) for k, v in (line.split() for line in out.splitlines()[:-1])}

    # Layout: the runtime's ctypes structs, which compiled code reads.
    assert c["sizeof.EmberValue"] == 8
    assert c["sizeof.DLTensor"] == ctypes.sizeof(dlpack.DLTensor)
    for struct in (dlpack.DLTensor, dlpack.DLDevice, dlpack.DLDataType):
        for field, _ in struct._fields_:
            offset = getattr(struct, field).offset
            assert c[f"{struct.__name__}.{field}"] == offset, (struct, field)
    # The field order the code generator's DLTensor struct assumes.
    fields = [f for f, _ in dlpack.DLTensor._fields_]
    assert [fields.index(f) for f in ("data", "device", "ndim", "dtype")] == [
        0,
        1,
        2,
        3,
    ]
    assert len(func_packed_abi.DLTENSOR.types.data) == 10  # device, dtype unpacked

    # Constants: the runtime's type codes (every one it has), the codes the
    # entry emits, DLPack's device and dtype codes.
    for code in TypeCode:  # DLTENSOR_HANDLE is EMBER_TYPE_DLTENSOR, ...
        name = code.name if code.name == "HANDLE" else code.name.removesuffix("_HANDLE")
        assert c[name] == code.value, code
    assert c["NULL"] == func_packed_abi.TYPE_NULL
    assert c["STR"] == func_packed_abi.TYPE_STR
    assert c["DLTENSOR"] == func_packed_abi.TYPE_DLTENSOR
    assert c["NDARRAY"] == func_packed_abi.TYPE_NDARRAY
    assert (c["MODULE"], c["PACKED_FUNC"]) == (9, 10)  # TVM's numbering
    assert c["kDLCPU"] == dlpack.DL_CPU == func_packed_abi.DEVICE_CPU
    dl_codes = {"kDLInt": "int32", "kDLUInt": "uint8", "kDLFloat": "float32"}
    for name, dtype in dl_codes.items():
        assert c[name] == func_packed_abi.DTYPES[dtype][0]
    assert c["kDLBfloat"] == func_packed_abi.DTYPES["bfloat16"][0]
    assert c["kDLBool"] == func_packed_abi.DTYPES["bool"][0] == dlpack.DL_BOOL
    assert c["EMBER_ERR_ARG(3)"] == -5 and c["EMBER_ERR_ARG_INDEX(-5)"] == 3
    assert symbols[:2] == [module.METADATA_FUNCTION, parallel.NUM_THREADS_SYMBOL]
    assert symbols[2] == "__ember_call_packed"


def test_header_ships_with_the_runtime_package():
    shipped = files("ember.runtime") / "include" / "ember_runtime.h"
    assert shipped.is_file()
    assert "EmberPackedFunc" in shipped.read_text()


@needs_cc
def test_example_makefile_builds_and_runs(tmp_path):
    """`make -C examples/deploy_c`, on a copy so the tree stays clean."""
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    for name in ("Makefile", "main.c", "build_kernel.py"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    command = ["make", "-s", "-C", str(tmp_path), f"ROOT={ROOT}"]
    command += [f"PYTHON={sys.executable}", "M=8", "K=4", "N=16"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "result: ok" in done.stdout
    assert (tmp_path / "matmul_8x4x16.so").is_file()


def test_example_readme_shows_the_commands_the_makefile_runs():
    readme = (EXAMPLE / "README.md").read_text()
    assert "make -C examples/deploy_c" in readme
    assert "python build_kernel.py matmul.so" in readme
    assert "main.c -o deploy_c -ldl" in readme
