"""The runtime against real native code: a small C library implementing the packed
ABI the way compiled modules do, built with the system C compiler."""

import gc
import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember import runtime as rt

SOURCE = r"""
#include <stdint.h>
#include <stdio.h>

typedef union { int64_t v_int64; double v_float64; void* v_handle; } EmberValue;
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
  void* data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t* shape; int64_t* strides; uint64_t byte_offset;
} DLTensor;

#define PACKED(name) int32_t name(EmberValue* args, int32_t* codes, int32_t n, \
                                  EmberValue* ret, int32_t* ret_code)
#define FAIL(rc, msg) do { ret->v_handle = (void*)(msg); *ret_code = 11; \
                           return (rc); } while (0)

static int is_f32_vector(const DLTensor* t) {
  return t->device.device_type == 1 && t->ndim == 1 && t->dtype.code == 2 &&
         t->dtype.bits == 32 && t->dtype.lanes == 1 &&
         (!t->strides || t->strides[0] == 1);
}

static float* f32_data(const DLTensor* t) {
  return (float*)((char*)t->data + t->byte_offset);
}

PACKED(add_one) {
  if (n != 1) FAIL(-1, "add_one: expected 1 argument");
  if (codes[0] != 7 && codes[0] != 13)
    FAIL(-2, "add_one: argument 0 (x): expected a tensor");
  DLTensor* x = args[0].v_handle;
  if (!is_f32_vector(x)) FAIL(-2, "add_one: argument 0 (x): expected float32 (n,)");
  for (int64_t i = 0; i < x->shape[0]; ++i) f32_data(x)[i] += 1.0f;
  return 0;
}

PACKED(vecadd) {
  static const char* bad[3] = {
      "vecadd: argument 0 (A): expected float32 (n,)",
      "vecadd: argument 1 (B): expected the shape of A",
      "vecadd: argument 2 (C): expected the shape of A"};
  if (n != 3) FAIL(-1, "vecadd: expected 3 arguments");
  DLTensor* t[3];
  for (int i = 0; i < 3; ++i) {
    t[i] = args[i].v_handle;
    if (codes[i] != 7 || !is_f32_vector(t[i]) || t[i]->shape[0] != t[0]->shape[0])
      FAIL(-2 - i, bad[i]);
  }
  for (int64_t i = 0; i < t[0]->shape[0]; ++i)
    f32_data(t[2])[i] = f32_data(t[0])[i] + f32_data(t[1])[i];
  return 0;
}

PACKED(add_int) {
  if (n != 2 || codes[0] != 0 || codes[1] != 0) FAIL(-1, "add_int: expected 2 ints");
  ret->v_int64 = args[0].v_int64 + args[1].v_int64;
  *ret_code = 0;
  return 0;
}

PACKED(scale) {
  if (n != 1) FAIL(-1, "scale: expected 1 argument");
  if (codes[0] != 2) FAIL(-2, "scale: argument 0 (x): expected a float");
  ret->v_float64 = args[0].v_float64 * 2.5;
  *ret_code = 2;
  return 0;
}

PACKED(greet) {
  static char out[64];
  if (n != 1 || codes[0] != 11) FAIL(-1, "greet: expected 1 string");
  snprintf(out, sizeof out, "hello, %s", (const char*)args[0].v_handle);
  ret->v_handle = out;
  *ret_code = 11;
  return 0;
}

#ifdef WITH_METADATA
PACKED(__ember_metadata) {
  (void)args; (void)codes; (void)n;
  ret->v_handle = METADATA;
  *ret_code = 11;
  return 0;
}
#endif
"""

VECADD_ARGS = [
    {"name": "A", "shape": [-1], "dtype": "float32", "output": False},
    {"name": "B", "shape": [-1], "dtype": "float32"},
    {"name": "C", "shape": [-1], "dtype": "float32", "output": True},
]
METADATA = json.dumps(
    {
        "entry": "add_one",
        "functions": {"add_one": {}, "vecadd": {"args": VECADD_ARGS}},
    }
)


def build(directory, name: str, *defines: str, source: str = SOURCE) -> str:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not sys.platform.startswith("linux"):
        pytest.skip("needs a C compiler on Linux")
    path = directory / f"{name}.c"
    path.write_text(source)
    out = directory / name
    flags = ["-O2", "-shared", "-fPIC", "-Wall", "-Werror", *defines]
    subprocess.run([compiler, *flags, str(path), "-o", str(out)], check=True)
    return str(out)


def c_string(text: str) -> str:
    return '-DMETADATA="' + text.replace('"', '\\"') + '"'


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lib")
    return rt.load_module(
        build(directory, "kernels.so", "-DWITH_METADATA", c_string(METADATA))
    )


@pytest.fixture(scope="module")
def bare_lib(tmp_path_factory):
    return rt.load_module(build(tmp_path_factory.mktemp("bare"), "bare.so"))


def test_metadata(lib):
    assert isinstance(lib, rt.DSOModule)
    assert lib.type_key == "dso"
    assert lib.entry_name == "add_one"
    assert lib.function_names() == ["add_one", "vecadd"]
    assert lib.metadata["functions"]["add_one"] == {}
    assert lib.metadata["functions"]["vecadd"] == {"args": VECADD_ARGS}
    assert repr(lib) == "Module(dso, entry=add_one, functions=[add_one, vecadd])"


def test_library_without_metadata(bare_lib):
    assert bare_lib.entry_name is None
    assert bare_lib.function_names() == []
    assert bare_lib.metadata == {}
    assert bare_lib["add_int"](2, 3) == 5
    with pytest.raises(rt.EmberError, match="no entry function"):
        bare_lib()
    with pytest.raises(rt.EmberError, match="no function 'nope'; available: none"):
        bare_lib["nope"]


def test_invalid_metadata(tmp_path):
    path = build(tmp_path, "bad.so", "-DWITH_METADATA", c_string("{not json"))
    with pytest.raises(rt.EmberError, match="invalid __ember_metadata"):
        rt.load_module(path)


METADATA_ONLY = r"""
#include <stdint.h>
typedef union { int64_t v_int64; double v_float64; void* v_handle; } EmberValue;
int32_t __ember_metadata(EmberValue* args, int32_t* codes, int32_t n,
                         EmberValue* ret, int32_t* ret_code) {
  (void)args; (void)codes; (void)n; (void)ret; (void)ret_code;
  BODY
}
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return 0;", "returned nothing, expected a JSON string"),
        (
            "ret->v_int64 = 5; *ret_code = 1; return 0;",
            "returned int 5, expected a JSON string",
        ),
        ("ret->v_float64 = 5; *ret_code = 2; return 0;", "returned float 5.0"),
        ("ret->v_handle = 0; *ret_code = 11; return 0;", "returned a null string"),
        ('ret->v_handle = "[1,2]"; *ret_code = 11; return 0;', "got an array"),
        (
            r'ret->v_handle = "{\"entry\": 5, \"functions\": [1]}"; '
            "*ret_code = 11; return 0;",
            r'"entry" must be a string or null, got a number \(5\)',
        ),
        (
            r'ret->v_handle = "{\"functions\": [1]}"; *ret_code = 11; return 0;',
            '"functions" must be an object, got an array',
        ),
        ("*ret_code = 4; return -7;", "failed with return code -7"),
    ],
)
def test_malformed_metadata_names_the_library(tmp_path, body, message):
    source = METADATA_ONLY.replace("BODY", body)
    path = build(tmp_path, "meta.so", source=source)
    with pytest.raises(
        rt.EmberError, match=f"invalid __ember_metadata: .*{message}"
    ) as info:
        rt.load_module(path)
    assert str(info.value).startswith(f"{path}: invalid __ember_metadata: ")


def test_entry_function_on_ndarray(lib):
    a = rt.array(np.arange(5, dtype=np.float32))
    lib(a)
    np.testing.assert_array_equal(a.numpy(), np.arange(1, 6))


def test_numpy_arguments_are_written_in_place(lib):
    x = np.arange(8, dtype=np.float32)
    lib["add_one"](x)
    np.testing.assert_array_equal(x, np.arange(1, 9))
    lib["add_one"](x[4:])  # an offset view is compact
    np.testing.assert_array_equal(x, [1, 2, 3, 4, 6, 7, 8, 9])


def test_vecadd_mixed_arguments(lib):
    a = np.arange(1024, dtype=np.float32)
    b = rt.array(np.ones(1024, np.float32))
    c = rt.empty(1024)
    lib["vecadd"](a, b, c)
    np.testing.assert_array_equal(c.numpy(), a + 1)
    view = rt.from_dlpack(a)
    lib["vecadd"](view, view, view)
    np.testing.assert_array_equal(a, 2 * np.arange(1024))


def test_scalar_and_string_returns(lib):
    assert lib["add_int"](2**40, -1) == 2**40 - 1
    assert lib["scale"](2.0) == 5.0
    assert lib["greet"]("ember") == "hello, ember"


def test_argument_errors_say_what_was_passed(lib):
    a = rt.empty(1024)
    with pytest.raises(rt.EmberError) as info:
        lib["vecadd"](a, rt.empty(64), a)
    assert str(info.value) == (
        "vecadd: argument 1 (B): expected the shape of A; "
        "got float32 tensor of shape (64,)"
    )
    with pytest.raises(rt.EmberError, match=r"argument 2 \(C\).*; got int$"):
        lib["vecadd"](a, a, 3)
    with pytest.raises(rt.EmberError, match="got float64 tensor of shape"):
        lib(np.zeros(4))
    with pytest.raises(rt.EmberError, match="^scale: argument 0 .*; got str$"):
        lib["scale"]("x")
    with pytest.raises(rt.EmberError, match="expected 3 arguments; got 2 arguments"):
        lib["vecadd"](a, a)
    with pytest.raises(ValueError, match="argument 0: expected a C-contiguous"):
        lib(np.zeros(8, np.float32)[::2])


def test_read_only_output_is_refused(lib):
    assert lib["vecadd"].outputs == (2,)
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    out.flags.writeable = False
    with pytest.raises(rt.EmberError) as info:
        lib["vecadd"](a, a, out)
    assert str(info.value) == (
        "vecadd: argument 2 (C) is an output but the array is read-only"
    )
    np.testing.assert_array_equal(out, 0)
    with pytest.raises(rt.EmberError, match=r"argument 2 \(C\) is an output"):
        lib["vecadd"](a, a, rt.from_dlpack(out))
    np.testing.assert_array_equal(out, 0)
    lib["vecadd"](out, out, a)  # read-only inputs are fine
    np.testing.assert_array_equal(a, 0)
    assert lib["add_one"].outputs == ()  # no "args" in its metadata


def test_output_over_a_read_only_mmap_does_not_crash(lib, tmp_path):
    # Writing into a read-only mapping is a segfault: run it in a subprocess.
    data = tmp_path / "zeros.bin"
    data.write_bytes(bytes(32))
    script = textwrap.dedent(f"""
        import mmap, numpy as np
        from ember import runtime as rt
        lib = rt.load_module({str(lib.path)!r})
        with open({str(data)!r}, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        out = np.frombuffer(m, np.float32)
        try:
            lib["vecadd"](np.ones(8, np.float32), np.ones(8, np.float32), out)
        except rt.EmberError as e:
            print(e)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "argument 2 (C) is an output but the array is read-only" in done.stdout


def test_functions_outlive_the_module_object(lib, tmp_path):
    path = build(tmp_path, "short.so")
    add_int = rt.load_module(path)["add_int"]
    gc.collect()
    assert add_int(1, 2) == 3
