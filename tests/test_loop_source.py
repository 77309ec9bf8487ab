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


def test_a_schedule_saved_as_text_replays(tmp_path):
    """The te IR of a scheduled computation, schedule included, is text that
    builds the same kernel: a schedule can be saved, edited and replayed."""
    M, N, K = 24, 40, 16
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[CC].compute_at(s[C], no)
    s[CC].reorder(s[CC].op.reduce_axis[0], *s[CC].op.axis)
    s[CC].vectorize(s[CC].op.axis[1])
    s[C].parallel(mo)
    saved = tmp_path / "mm.mlir"
    saved.write_text(str(ember.lower(s, [A, B, C], name="mm", emit="te")))
    text = saved.read_text()
    assert 'te.cache_write "C" "local" -> "C.local"' in text
    assert 'te.compute_at "C.local" at "C" "j.outer"' in text
    replayed = ember.build(text, name="mm")
    direct = ember.build(s, [A, B, C], name="mm")
    assert replayed.get_source("loop") == direct.get_source("loop")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype="float32")
    b = rng.standard_normal((K, N), dtype="float32")
    c = np.empty((M, N), "float32")
    replayed(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
