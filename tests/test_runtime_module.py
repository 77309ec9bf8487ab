"""The Module base class contract, with a subclass whose functions are native
function pointers implemented in Python, and load_module's errors."""

import ctypes
import gc
import weakref

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
    assert mod.lookups == ["one", "two"]
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
        rt.EmberError, match="no entry function; call a function by name"
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
    with pytest.raises(rt.EmberError, match="no such file"):
        rt.load_module(tmp_path / "missing.so")


def test_load_module_wrong_suffix(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\0")
    with pytest.raises(rt.EmberError, match=r"expected a shared library \(.so\)"):
        rt.load_module(path)


def test_load_module_garbage_file(tmp_path):
    path = tmp_path / "garbage.so"
    path.write_bytes(b"this is not an ELF file" * 10)
    with pytest.raises(rt.EmberError, match="cannot load .*garbage.so as a library"):
        rt.load_module(str(path))
