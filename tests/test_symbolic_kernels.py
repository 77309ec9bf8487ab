"""Kernels over symbolic sizes at the loop level (issue 25): a function whose
buffers have dynamic dims named by `ember.dims`, and whose trailing `index`
arguments are the symbols (`ember.symbol`), compiles once; its packed entry
binds the symbols from the first buffer each is a dim of, checks every other
dim (expressions included) and the strides, and passes the symbols on; buffer
indexing uses strides computed from them. One library runs every size."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.runtime import EmberError

ADD = """
func.func @add(%A: memref<?x?x4xf32> {ember.name = "A", ember.dims = ["b", "s"]},
               %B: memref<?x4xf32> {ember.name = "B", ember.dims = ["s"]},
               %C: memref<?x?x4xf32> {ember.name = "C", ember.output, ember.dims = ["b", "s"]},
               %b: index {ember.symbol = "b"}, %s: index {ember.symbol = "s"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %b step %c1 {
    loop.for %j = %c0 to %s step %c1 {
      loop.for %k = %c0 to %c4 step %c1 {
        %x = memref.load %A[%i, %j, %k] : memref<?x?x4xf32>
        %y = memref.load %B[%j, %k] : memref<?x4xf32>
        %z = arith.addf %x, %y : f32
        memref.store %z, %C[%i, %j, %k] : memref<?x?x4xf32>
      }
    }
  }
  func.return
}
"""

PAD = """
func.func @pad(%A: memref<?xi32> {ember.name = "A", ember.dims = ["n"]},
               %C: memref<?xi32> {ember.name = "C", ember.output, ember.dims = ["n + 2"]},
               %n: index {ember.symbol = "n"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  %last = arith.addi %n, %c1 : index
  memref.store %zero, %C[%c0] : memref<?xi32>
  memref.store %zero, %C[%last] : memref<?xi32>
  loop.for %i = %c0 to %n step %c1 {
    %x = memref.load %A[%i] : memref<?xi32>
    %j = arith.addi %i, %c1 : index
    memref.store %x, %C[%j] : memref<?xi32>
  }
  func.return
}
"""


@pytest.fixture(scope="module")
def add():
    return ember.build(ADD)["add"]


@pytest.fixture(scope="module")
def pad():
    return ember.build(PAD)["pad"]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(1, 9))
def test_one_kernel_runs_every_size(add, b, s):
    rng = np.random.default_rng(b * 10 + s)
    A = rng.random((b, s, 4), np.float32)
    B = rng.random((s, 4), np.float32)
    C = np.zeros_like(A)
    add(A, B, C)
    np.testing.assert_array_equal(C, A + B)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 40))
def test_an_output_sized_by_an_expression(pad, n):
    A = np.arange(1, n + 1, dtype=np.int32)
    C = np.full(n + 2, -1, np.int32)
    pad(A, C)
    np.testing.assert_array_equal(C, np.pad(A, 1))


def test_inconsistent_shapes_are_refused_naming_the_argument(add, pad):
    A, C = np.zeros((2, 3, 4), np.float32), np.zeros((2, 3, 4), np.float32)
    with pytest.raises(
        EmberError, match=r"argument 1 \(B\): expected float32 tensor of shape \(s, 4\)"
    ):
        add(A, np.zeros((4, 4), np.float32), C)
    with pytest.raises(
        EmberError,
        match=r"argument 2 \(C\): expected float32 tensor of shape \(b, s, 4\)",
    ):
        add(A, np.zeros((3, 4), np.float32), np.zeros((2, 4, 4), np.float32))
    with pytest.raises(
        EmberError,
        match=r"argument 1 \(C\): expected int32 tensor of shape \(n \+ 2,\)",
    ):
        pad(np.zeros(5, np.int32), np.zeros(6, np.int32))
    with pytest.raises(
        EmberError,
        match=r"argument 0 \(A\): expected float32 tensor of shape \(b, s, 4\)",
    ):
        add(np.zeros((2, 3, 5), np.float32), np.zeros((3, 4), np.float32), C)


def test_strided_views_are_checked_against_the_symbolic_strides(add):
    A = np.zeros((2, 6, 4), np.float32)[:, ::2]  # not compact: refused, not misread
    with pytest.raises(EmberError, match="C-contiguous|compact row-major strides"):
        add(A, np.zeros((3, 4), np.float32), np.zeros((2, 3, 4), np.float32))


def test_a_symbolic_library_exports_with_its_dims_in_the_metadata(tmp_path):
    mod = ember.build(ADD)
    mod.export_library(tmp_path / "add.so")
    lib = ember.runtime.load_module(tmp_path / "add.so")
    shapes = [a["shape"] for a in lib.metadata["functions"]["add"]["args"]]
    assert shapes == [["b", "s", 4], ["s", 4], ["b", "s", 4]]
    A, B = np.ones((3, 2, 4), np.float32), np.ones((2, 4), np.float32)
    C = np.zeros_like(A)
    lib["add"](A, B, C)
    np.testing.assert_array_equal(C, A + B)


@pytest.mark.parametrize(
    "signature, message",
    [
        (
            '%A: memref<?xf32> {ember.dims = ["n"]}, %n: index {ember.symbol = "m"}',
            "dims read n, which no index argument marked ember.symbol gives",
        ),
        (
            '%A: memref<?xf32> {ember.dims = ["2 * n"]}, %n: index {ember.symbol = "n"}',
            "symbol n is no buffer's dim by itself",
        ),
        (
            '%A: memref<?xf32>, %n: index {ember.symbol = "n"}',
            "argument 0: expected a static shape, or ember.dims naming each dynamic dim of memref<\\?xf32>",
        ),
    ],
)
def test_symbols_the_entry_cannot_bind_are_refused(signature, message):
    text = f"func.func @f({signature}) {{\n  func.return\n}}\n"
    with pytest.raises(Exception, match=message):
        ember.build(text)


def test_the_c_target_refuses_symbolic_buffers_for_now():
    with pytest.raises(ValueError, match="c: @add has buffers of symbolic sizes"):
        ember.build(ADD, target="c")
