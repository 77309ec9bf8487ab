"""The global function registry."""

import pytest

from ember import runtime as rt


@pytest.fixture
def names():
    """Names registered by a test, removed afterwards."""
    used = []
    yield used
    for name in used:
        if rt.get_global_func(name, allow_missing=True) is not None:
            rt.remove_global_func(name)


def test_three_ways_to_register(names):
    names += ["test.mul", "test_registry_add", "test.neg"]

    @rt.register_func("test.mul")
    def mul(a, b):
        return a * b

    @rt.register_func
    def test_registry_add(a, b):
        return a + b

    def neg(a):
        return -a

    assert rt.register_func("test.neg", neg) is neg
    assert mul(2, 3) == 6  # the decorator returns the function itself
    assert rt.get_global_func("test.mul")(2, 3) == 6
    assert rt.get_global_func("test_registry_add")(2, 3) == 5
    assert rt.get_global_func("test.neg")(2) == -2
    assert isinstance(rt.get_global_func("test.neg"), rt.PackedFunc)
    assert {"test.mul", "test_registry_add", "test.neg"} <= set(
        rt.list_global_func_names()
    )
    assert rt.list_global_func_names() == sorted(rt.list_global_func_names())


def test_register_twice_needs_override(names):
    names.append("test.twice")
    rt.register_func("test.twice", lambda: 1)
    with pytest.raises(rt.EmberError, match="'test.twice' is already registered"):
        rt.register_func("test.twice", lambda: 2)
    rt.register_func("test.twice", lambda: 3, override=True)
    assert rt.get_global_func("test.twice")() == 3


def test_register_a_packed_func(names):
    names.append("test.packed")
    f = rt.PackedFunc(lambda: "hi", name="test.packed")
    rt.register_func(f)
    assert rt.get_global_func("test.packed") is f


def test_missing_functions(names):
    assert rt.get_global_func("test.absent", allow_missing=True) is None
    with pytest.raises(rt.EmberError, match="no global function is registered"):
        rt.get_global_func("test.absent")
    with pytest.raises(rt.EmberError, match="no global function is registered"):
        rt.remove_global_func("test.absent")
    with pytest.raises(TypeError, match="expected a function name"):
        rt.register_func(42, lambda: 0)


def test_remove(names):
    rt.register_func("test.removed", print)
    rt.remove_global_func("test.removed")
    assert "test.removed" not in rt.list_global_func_names()
