"""One error hierarchy: every error ember raises on a bad argument is an
`EmberError`, and also the built-in it always was (`ValueError`,
`TypeError`), so `except EmberError` catches them all and `except
ValueError` keeps working."""

import numpy as np
import pytest

import ember
from ember import te, topi
from ember.runtime import EmberError, EmberTypeError, EmberValueError


def _vecadd():
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + 1.0, name="B")
    return te.create_schedule(b.op), a, b


def _build_without_an_input():
    s, _, b = _vecadd()
    ember.build(s, [b], name="f")


def _lower_named(name: str):
    s, a, b = _vecadd()
    ember.lower(s, [a, b], name=name)


def _split_by_zero():
    s, _, b = _vecadd()
    s[b].split(b.op.axis[0], factor=0)


CASES = {
    "a placeholder's shape": (ValueError, lambda: te.placeholder((0, -1), name="A")),
    "a placeholder's dtype": (
        ValueError,
        lambda: te.placeholder((4,), dtype="complex64", name="A"),
    ),
    "a compute's index count": (
        TypeError,
        lambda: te.compute(
            (4,), lambda i, j: te.placeholder((4,), name="A")[i], name="B"
        ),
    ),
    "a build without its input": (ValueError, _build_without_an_input),
    "a split by zero": (ValueError, _split_by_zero),
    "a function name": (ValueError, lambda: _lower_named("1bad")),
    "an unknown CPU": (ValueError, lambda: ember.Target("llvm -mcpu=nonexistent")),
    "a target kind": (ValueError, lambda: ember.Target("cuda")),
    "a target of the wrong type": (TypeError, lambda: ember.Target(3)),  # type: ignore[arg-type]
    "a conv2d weight shape": (
        ValueError,
        lambda: topi.conv2d(te.placeholder((1, 3, 8, 8), name="x"), (4, 5, 3, 3)),
    ),
    "a pass plugin": (
        ValueError,
        lambda: ember.passes.load_pass_plugin("/nonexistent/plugin.py"),
    ),
    "a pass context level": (ValueError, lambda: ember.PassContext(opt_level=9)),
    "an array's dtype": (
        TypeError,
        lambda: ember.runtime.array(np.zeros(3, dtype=object)),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_argument_errors_are_ember_errors_and_builtins(name):
    builtin, call = CASES[name]
    with pytest.raises(EmberError) as info:
        call()
    assert isinstance(info.value, builtin), type(info.value).__mro__


def test_the_function_name_error_names_the_rule():
    with pytest.raises(EmberValueError, match="expected a function name"):
        _lower_named("1bad")


def test_the_classes_derive_from_both():
    assert issubclass(EmberValueError, EmberError)
    assert issubclass(EmberValueError, ValueError)
    assert issubclass(EmberTypeError, EmberError)
    assert issubclass(EmberTypeError, TypeError)


def test_a_compiled_call_keeps_the_kind_of_its_argument_error():
    s, a, b = _vecadd()
    f = ember.build(s, [a, b], name="f")
    strided = np.zeros((4, 2), "float32")[:, 0]
    with pytest.raises(ValueError, match="f: argument 0: expected a C-contiguous"):
        f(strided, np.zeros(4, "float32"))
    with pytest.raises(EmberError):
        f(strided, np.zeros(4, "float32"))
