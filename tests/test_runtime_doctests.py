"""The examples in the runtime's docstrings run and say what they claim."""

import doctest
import importlib

import pytest

from ember import runtime as rt

MODULES = [
    "dlpack",
    "ndarray",
    "packed_func",
    "registry",
    "device_module",
]  # module.py needs a .so


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"ember.runtime.{name}")
    try:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    finally:  # the registry's example registers a function
        if rt.get_global_func("demo.add", allow_missing=True) is not None:
            rt.remove_global_func("demo.add")
    assert result.attempted > 0
    assert result.failed == 0
