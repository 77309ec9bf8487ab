"""Out-of-bounds tensor reads (issue 16): reads that bound inference proves out
of range are refused when lowering; the bounds-checked build mode
(`ember.build(..., bounds_check=True)`, `convert-te-to-loop{bounds-check=true}`)
turns any other out-of-range read into an `EmberError`, never a crash, and
leaves in-range results as they are."""

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

import ember
from ember import te
from ember.passes import get_context, run
from ember.runtime import EmberError


def _build(tensors, out, **kwargs):
    return ember.build(te.create_schedule(out.op), [*tensors, out], **kwargs)


@pytest.mark.parametrize(
    "index, message",
    [
        (lambda i: i + 1, r"index 0 ranges over \[1, 1024\], outside \[0, 1023\]"),
        (lambda i: i - 1, r"index 0 ranges over \[-1, 1022\], outside \[0, 1023\]"),
        (lambda i: 2 * i, r"index 0 ranges over \[0, 2046\], outside \[0, 1023\]"),
        (lambda i: i + 5000, r"index 0 ranges over \[5000, 6023\]"),
    ],
)
def test_proven_out_of_bounds_read_is_refused(index, message):
    A = te.placeholder((1024,), name="A")
    C = te.compute((1024,), lambda i: A[index(i)], name="C")
    with pytest.raises(PassFailedException, match="te.read of 'A' " + message):
        _build([A], C, name="shift")


def test_proven_out_of_bounds_reduction_read_is_refused():
    A = te.placeholder((8, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((8,), lambda i: te.sum(A[i, k + 1], axis=k), name="C")
    with pytest.raises(
        PassFailedException,
        match=r"te.read of 'A' index 1 ranges over \[1, 16\], outside \[0, 15\] "
        r"\(in compute 'C'\)",
    ):
        _build([A], C, name="rowsum")


def test_guarded_reads_are_not_refused():
    """A read in a guarded branch runs only where its condition holds."""
    A = te.placeholder((16,), name="A")
    C = te.compute((16,), lambda i: te.if_then_else(i >= 1, A[i - 1], 0.0), name="C")
    for checked in (False, True):
        mod = _build([A], C, name="shifted", bounds_check=checked)
        a = np.arange(16, dtype="float32")
        c = np.zeros(16, "float32")
        mod(a, c)
        np.testing.assert_array_equal(c, np.concatenate([[0], a[:-1]]))


def test_te_ir_with_a_proven_out_of_bounds_read_is_refused():
    ir = """
    func.func @f(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %C = te.compute "C" (%i, %j) -> tensor<4x8xf32> {
        %c3 = arith.constant 3 : index
        %jj = arith.addi %j, %c3 : index
        %x = te.read %A[%i, %jj] : tensor<4x8xf32>
        te.yield %x : f32
      }
      func.return %C : tensor<4x8xf32>
    }
    """
    module = Parser(get_context(), ir).parse_module()
    with pytest.raises(
        PassFailedException,
        match=r"@f: te.read of 'A' index 1 ranges over \[3, 10\], outside \[0, 7\]",
    ):
        run(module, "convert-te-to-loop")


GATHER = """
func.func @gather(%A: tensor<16xf32> {ember.name = "A"},
                  %I: tensor<64xi32> {ember.name = "I"}) -> tensor<64xf32> {
  %C = te.compute "C" (%i) -> tensor<64xf32> {
    %k = te.read %I[%i] : tensor<64xi32>
    %j = arith.index_cast %k : i32 to index
    %x = te.read %A[%j] : tensor<16xf32>
    te.yield %x : f32
  }
  SCHEDULE
  func.return %C : tensor<64xf32>
}
"""
PARALLEL = """te.schedule {
    te.split "C" "i" factor 16 -> "i.outer", "i.inner"
    te.parallel "C" "i.outer"
    te.vectorize "C" "i.inner"
  }"""


@pytest.mark.parametrize("bad", [16, 10**9, -1, -(2**31)])
@pytest.mark.parametrize("schedule", ["", PARALLEL], ids=["serial", "parallel"])
def test_data_dependent_out_of_bounds_read_raises(bad, schedule):
    ir = GATHER.replace("SCHEDULE", schedule)
    mod = ember.build(ir, name="gather", bounds_check=True)
    a = np.arange(16, dtype="float32")
    c = np.zeros(64, "float32")
    indices = np.arange(64, dtype="int32") % 16
    mod(a, indices, c)
    np.testing.assert_array_equal(c, a[indices])
    indices[37] = bad
    for _ in range(20):  # threads that pass must never hide one that failed
        with pytest.raises(
            EmberError, match=r"gather: te.read of 'A' index 0 in stage 'C' is outside"
        ):
            mod(a, indices, c)
    mod(a, indices % 16, c)  # the module works on afterwards
    np.testing.assert_array_equal(c, a[indices % 16])


def _unproven(n):
    """A stencil whose clamped reads bound inference cannot bound."""
    A = te.placeholder((n,), name="A")
    C = te.compute(
        (n,),
        lambda i: A[te.max(i - 1, 0)] + A[i] * 2.0 + A[te.min(i + 1, n - 1)],
        name="C",
    )
    return A, C


def _schedules():
    def plain(s, C):
        pass

    def split_vectorize_parallel(s, C):
        xo, xi = s[C].split(C.op.axis[0], factor=16)
        s[C].vectorize(xi)
        s[C].parallel(xo)

    def tail(s, C):
        s[C].split(C.op.axis[0], factor=24)  # 1000 = 41 * 24 + 16: a guard

    return [plain, split_vectorize_parallel, tail]


@pytest.mark.parametrize("schedule", _schedules(), ids=lambda f: f.__name__)
def test_checked_mode_keeps_in_range_results(schedule):
    A, C = _unproven(1000)
    a = np.random.default_rng(0).standard_normal(1000).astype("float32")
    results = []
    for checked in (False, True):
        s = te.create_schedule(C.op)
        schedule(s, C)
        mod = ember.build(s, [A, C], name="stencil", bounds_check=checked)
        assert ("bounds_error" in mod.get_source("loop")) == checked
        c = np.zeros(1000, "float32")
        mod(a, c)
        results.append(c)
    want = np.concatenate([[a[0]], a[:-1]]) + a * 2 + np.concatenate([a[1:], [a[-1]]])
    np.testing.assert_allclose(results[0], want, rtol=1e-6)
    np.testing.assert_array_equal(results[0], results[1])


def test_checked_mode_with_compute_at_and_reduction():
    A = te.placeholder((32, 32), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, te.min(j + 1, 31)] + 1.0, name="B")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((32,), lambda i: te.sum(B[i, k], axis=k), name="C")
    a = np.random.default_rng(1).standard_normal((32, 32)).astype("float32")
    results = []
    for checked in (False, True):
        s = te.create_schedule(C.op)
        s[B].compute_at(s[C], C.op.axis[0])
        mod = ember.build(s, [A, C], name="rows", bounds_check=checked)
        c = np.zeros(32, "float32")
        mod(a, c)
        results.append(c)
    shifted = np.concatenate([a[:, 1:], a[:, -1:]], axis=1)
    np.testing.assert_allclose(results[0], (shifted + 1).sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(results[0], results[1])


def test_proven_in_range_reads_are_not_checked():
    A = te.placeholder((64,), name="A")
    C = te.compute((63,), lambda i: A[i + 1] - A[i], name="C")
    mod = _build([A], C, name="diff", bounds_check=True)
    assert "bounds_error" not in mod.get_source("loop")
