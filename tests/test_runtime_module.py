"""The Module base class contract, with a subclass whose functions are native
function pointers implemented in Python, and load_module's errors."""

import ctypes
import gc
import json
import weakref

import numpy as np
import pytest

from ember import runtime as rt
from ember.runtime.packed_func import PACKED_FUNC_TYPE, EmberValue


def constant(value: int):
    """A native packed function returning ``value`` as an int."""

    def run(values, codes, n, ret, ret_code):
        EmberValue.from_address(ret).v_int64 = value
        ctypes.c_int32.from_address(ret_code).value = 0
        return 0

    return PACKED_FUNC_TYPE(run)


def returns_string(text: "str | bytes | None", rc: int = 0):
    """A native packed function returning ``text`` (None: a NULL string;
    bytes as they are, UTF-8 or not)."""
    data = text.encode() if isinstance(text, str) else text
    buf = None if data is None else ctypes.create_string_buffer(data)

    def run(values, codes, n, ret, ret_code):
        address = ctypes.addressof(buf) if buf is not None else None
        EmberValue.from_address(ret).v_handle = address
        ctypes.c_int32.from_address(ret_code).value = 11
        return rc

    return PACKED_FUNC_TYPE(run)


def counter(calls: list):
    """A native packed function that counts its calls."""

    def run(values, codes, n, ret, ret_code):
        calls.append(n)
        return 0

    return PACKED_FUNC_TYPE(run)


class TableModule(rt.Module):
    """What a compiler-side module does: says where functions are, nothing more."""

    type_key = "table"

    def __init__(self, functions: dict, entry_name=None):
        super().__init__(entry_name)
        self.table = functions
        self.lookups = []

    def _function_address(self, name: str) -> int:
        self.lookups.append(name)
        native = self.table.get(name)
        return ctypes.cast(native, ctypes.c_void_p).value if native else 0

    def function_names(self) -> list[str]:
        return sorted(self.table)

    def get_source(self, fmt: str = "") -> str:
        return f"source in {fmt}"


def test_get_function_wraps_and_caches():
    mod = TableModule({"one": constant(1), "two": constant(2)})
    f = mod.get_function("one")
    assert isinstance(f, rt.PackedFunc)
    assert f() == 1
    assert mod["one"] is f
    assert mod["two"]() == 2
    # the metadata function is looked for once, with the first function
    assert mod.lookups == ["one", "__ember_metadata", "two"]
    assert mod.metadata == {}
    assert "one" in mod and "three" not in mod


def test_missing_function_lists_the_available_ones():
    mod = TableModule({"one": constant(1), "two": constant(2)})
    with pytest.raises(
        rt.EmberError, match=r"no function 'three'; available: one, two"
    ):
        mod["three"]
    with pytest.raises(AttributeError):
        mod.get_function("three")
    with pytest.raises(TypeError, match="function names are strings"):
        mod[0]


def test_call_uses_the_entry_function():
    assert TableModule({"main": constant(7)}, entry_name="main")() == 7
    with pytest.raises(
        rt.EmberError, match="no entry function.*; call a function by name"
    ):
        TableModule({"main": constant(7)})()


def test_functions_keep_the_module_alive():
    mod = TableModule({"one": constant(1)})
    f = mod["one"]
    alive = weakref.ref(mod)
    del mod
    gc.collect()
    assert alive() is not None
    assert f() == 1


def test_imports():
    lib = TableModule({"helper": constant(5)})
    mod = TableModule({"main": constant(1)})
    mod.import_module(lib)
    assert mod.imported_modules == [lib]
    assert mod.get_function("helper", query_imports=True)() == 5
    with pytest.raises(rt.EmberError, match="no function 'helper'"):
        mod.get_function("helper")
    with pytest.raises(TypeError, match="expected a Module"):
        mod.import_module("lib.so")


def test_source_and_repr():
    mod = TableModule({"a": constant(1)}, entry_name="a")
    assert mod.get_source("ll") == "source in ll"
    assert repr(mod) == "Module(table, entry=a, functions=[a])"
    with pytest.raises(rt.EmberError, match="module has no source"):
        rt.Module().get_source("asm")
    with pytest.raises(NotImplementedError, match="_function_address"):
        rt.Module()["f"]


def test_load_module_missing_file(tmp_path):
    with pytest.raises(rt.LibraryNotFoundError, match="no such file") as info:
        rt.load_module(tmp_path / "missing.so")
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, rt.EmberError)


def test_load_module_wrong_suffix(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\0")
    with pytest.raises(
        rt.EmberError,
        match=r"expected a shared library \(.so\), a library archive \(.tar\) or "
        r"an object file \(.o\), got suffix '.onnx'",
    ):
        rt.load_module(path)


def test_load_module_garbage_file(tmp_path):
    path = tmp_path / "garbage.so"
    path.write_bytes(b"this is not an ELF file" * 10)
    with pytest.raises(
        rt.InvalidLibraryError,
        match="garbage.so is not an ELF shared library: it is a text file",
    ):
        rt.load_module(str(path))


VECADD_METADATA = {
    "entry": "vecadd",
    "functions": {
        "vecadd": {
            "args": [
                {"name": "A", "shape": [4], "dtype": "float32"},
                {"name": "B", "shape": [4], "dtype": "float32", "output": False},
                {"name": "C", "shape": [4], "dtype": "float32", "output": True},
            ]
        },
        "old": {"args": [{"name": "x"}]},
    },
}


def test_metadata_marks_outputs_read_only_arrays_are_refused():
    calls = []
    mod = TableModule(
        {
            "vecadd": counter(calls),
            "old": counter(calls),
            "__ember_metadata": returns_string(json.dumps(VECADD_METADATA)),
        }
    )
    assert mod.metadata == VECADD_METADATA
    assert mod.metadata is mod.metadata
    assert mod["vecadd"].outputs == (2,)
    assert mod["old"].outputs == ()  # no "output" key: not an output
    a = np.ones(4, np.float32)
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(rt.EmberError) as info:
        mod["vecadd"](a, a, out)
    assert str(info.value) == (
        "vecadd: argument 2 (C) is an output but the array is read-only"
    )
    with pytest.raises(rt.EmberError, match="argument 2 .C. is an output"):
        mod["vecadd"](rt.empty(4), rt.empty(4), rt.from_dlpack(out))
    assert calls == []
    mod["vecadd"](out, out, rt.empty(4))  # read-only inputs are fine
    mod["old"](out)
    assert calls == [3, 1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "returned a null string"),
        ("{not json", "Expecting property name"),
        ("[1, 2]", r"expected a JSON object, got an array \(\[1, 2\]\)"),
        ('{"entry": 5, "functions": [1]}', '"entry" must be a string or null'),
        ('{"functions": [1]}', '"functions" must be an object, got an array'),
        ('{"functions": {"f": 1}}', "function 'f' must be an object"),
        ('{"functions": {"f": {"args": {}}}}', '"args" must be a list'),
        ('{"functions": {"f": {"args": [3]}}}', "argument 0 must be an object"),
        ('{"functions": {"f": {"args": [{"name": 1}]}}}', '"name" must be a string'),
        ('{"functions": {"f": {"args": [{"output": 1}]}}}', '"output" must be true'),
        (b'{"entry": "f\xffg"}', r"the JSON is not UTF-8 \(byte 0xff at offset 12\)"),
        ("[" * 100_000, "the JSON is nested too deeply"),
        (
            '{"model": {"inputs": [{"name": "x", "shape": [1], "dtype": []}]}}',
            "unknown dtype",
        ),
        ('{"model": 3}', '"model" must be an object'),
    ],
)
def test_malformed_metadata_is_an_ember_error(text, message):
    mod = TableModule({"f": constant(1), "__ember_metadata": returns_string(text)})
    with pytest.raises(rt.EmberError, match="^table module: invalid __ember_metadata"):
        _ = mod.metadata
    with pytest.raises(rt.EmberError, match=message):
        mod["f"]


def test_failing_metadata_function_is_an_ember_error():
    mod = TableModule({"__ember_metadata": returns_string("it broke", rc=-1)})
    with pytest.raises(
        rt.EmberError, match="^table module: invalid __ember_metadata: it broke"
    ):
        _ = mod.metadata


def test_module_without_object_code_cannot_be_exported(tmp_path):
    mod = TableModule({"one": constant(1)})
    with pytest.raises(
        rt.ExportError, match="^table module cannot be exported: it has no object code"
    ):
        mod.export_library(tmp_path / "m.so")
    with pytest.raises(rt.ExportError, match=r"ending in \.so .*, \.tar .* or \.o"):
        mod.export_library(tmp_path / "m.zip")
    assert list(tmp_path.iterdir()) == []
