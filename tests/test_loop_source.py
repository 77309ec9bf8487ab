"""`get_source("loop")`: the scheduled loop nest of a built module."""

import numpy as np
import pytest

import ember
from ember import te


def test_loop_source_shows_the_schedule():
    A = te.placeholder((100,), name="A")
    C = te.compute((100,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    outer, _ = s[C].split(C.op.axis[0], factor=32)
    s[C].parallel(outer)
    mod = ember.build(s, [A, C], name="double")
    text = mod.get_source("loop")
    assert "loop.for %i_outer = %c0 to %c4 step %c1 parallel" in text
    assert "loop.for %i_inner = %c0 to %c32 step %c1 {" in text
    assert "arith.cmpi slt" in text  # the guard of the tail: 4 x 32 > 100
    a = np.arange(100, dtype="float32")
    c = np.empty_like(a)
    mod(a, c)
    np.testing.assert_array_equal(c, a * 2)


def test_loop_source_needs_ir_to_have_been_built():
    from ember.backends.llvm import LLVMModule

    mod = LLVMModule("define i32 @f() {\n  ret i32 0\n}\n", "llvm")
    with pytest.raises(ValueError, match="not built from te or loop IR"):
        mod.get_source("loop")
