"""convert-memref/func/cf-to-llvm and func-packed-abi, proved by running the code.

Kernels are written as loop-level text IR (func.func over memrefs, cf or scf control
flow), lowered by ember's passes, translated with ember's llvmlite translator, JIT
compiled, and called through the packed entry with hand-built DLTensor / EmberValue
structures: results are compared with numpy and every argument check is exercised.
Arithmetic is written as llvm-dialect ops so these tests depend on no other
conversion, except the scf tests, which also run convert-arith-to-llvm, and the te
programs at the end, which run the whole `ember-cpu` pipeline.
"""

import ctypes
import json
import subprocess
import sys
import textwrap
from ctypes import (
    POINTER,
    Structure,
    c_int32,
    c_int64,
    c_uint8,
    c_uint16,
    c_uint64,
    c_void_p,
)
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from ember.backends.llvm import translate
from ember.backends.llvm.codegen import define_scratch
from ember.passes import get_context, run
from ember.runtime.dlpack import dtype_to_dl
from ember.runtime.packed_func import PACKED_FUNC_TYPE, EmberValue

OURS = (
    "func-packed-abi,convert-scf-to-cf,convert-memref-to-llvm,convert-cf-to-llvm,"
    "convert-func-to-llvm,reconcile-unrealized-casts"
)


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device_type", c_int32),
        ("device_id", c_int32),
        ("ndim", c_int32),
        ("code", c_uint8),
        ("bits", c_uint8),
        ("lanes", c_uint16),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


def tensor(arr: np.ndarray, **fields) -> DLTensor:
    """A DLTensor over `arr`'s memory; `fields` override any DLTensor field, and
    `shape` / `strides` may be given as tuples."""
    code, bits, _ = dtype_to_dl(arr.dtype)
    shape = fields.pop("shape", arr.shape)
    strides = fields.pop("strides", None)
    t = DLTensor(
        data=arr.ctypes.data,
        device_type=1,
        ndim=len(shape),
        code=code,
        bits=bits,
        lanes=1,
        shape=(c_int64 * len(shape))(*shape) if shape else None,
        strides=(c_int64 * len(strides))(*strides) if strides is not None else None,
    )
    for name, value in fields.items():
        setattr(t, name, value)
    t._keep = (arr, t.shape, t.strides)  # the arrays the pointers point into
    return t


class Kernel:
    """A JIT-compiled module whose packed functions take numpy arrays."""

    def __init__(self, text: str, pipeline: str = OURS):
        ctx = get_context()
        self.module = Parser(ctx, text).parse_module()
        run(self.module, pipeline, ctx)
        self.module.verify()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        ir = str(translate(self.module))
        self.llvm_module = llvm.parse_assembly(ir)
        self.llvm_module.verify()
        define_scratch(self.llvm_module)  # what codegen.optimize links in
        machine = llvm.Target.from_default_triple().create_target_machine()
        self.engine = llvm.create_mcjit_compiler(self.llvm_module, machine)
        self.engine.finalize_object()

    def packed(self, name: str):
        return PACKED_FUNC_TYPE(self.engine.get_function_address(name))

    def call(self, name: str, *args, codes=None) -> tuple[int, int, str | None]:
        """Call packed `name`: numpy arrays become DLTensors (type code 7), a
        DLTensor is passed as is, None is a null handle. Returns (rc, ret_code,
        message or None)."""
        values = (EmberValue * max(1, len(args)))()
        tensors = []
        for i, arg in enumerate(args):
            t = tensor(arg) if isinstance(arg, np.ndarray) else arg
            tensors.append(t)
            values[i].v_handle = None if t is None else ctypes.addressof(t)
        type_codes = (c_int32 * max(1, len(args)))(*(codes or [7] * len(args)))
        ret, ret_code = EmberValue(), c_int32(-99)
        rc = self.packed(name)(
            values, type_codes, len(args), ctypes.byref(ret), ctypes.byref(ret_code)
        )
        message = None
        if ret_code.value == 11:
            message = ctypes.string_at(ret.v_handle).decode()
        return rc, ret_code.value, message


# --- vecadd: a cf loop, 1-d buffers, every check of the packed entry -------------

VECADD = """
func.func @vecadd(%A: memref<8xf32> {ember.name = "A"},
                  %B: memref<8xf32> {ember.name = "B"},
                  %C: memref<8xf32> {ember.name = "C", ember.output}) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  cf.br ^loop(%c0 : i64)
^loop(%i: i64):
  %n = llvm.mlir.constant(8 : i64) : i64
  %more = llvm.icmp "slt" %i, %n : i64
  cf.cond_br %more, ^body, ^done
^body:
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  %a = memref.load %A[%ii] : memref<8xf32>
  %b = memref.load %B[%ii] : memref<8xf32>
  %s = llvm.fadd %a, %b : f32
  memref.store %s, %C[%ii] : memref<8xf32>
  %one = llvm.mlir.constant(1 : i64) : i64
  %next = llvm.add %i, %one : i64
  cf.br ^loop(%next : i64)
^done:
  func.return
}
"""


@pytest.fixture(scope="module")
def vecadd() -> Kernel:
    return Kernel(VECADD)


def vecadd_inputs():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 8), dtype=np.float32)
    return a, b, np.zeros(8, np.float32)


def test_vecadd_runs(vecadd):
    a, b, c = vecadd_inputs()
    assert vecadd.call("vecadd", a, b, c) == (0, 4, None)
    np.testing.assert_array_equal(c, a + b)


def test_vecadd_impl_is_private_and_bare(vecadd):
    text = str(vecadd.module)
    assert "llvm.func internal @vecadd_impl(%A: !llvm.ptr" in text
    assert "unrealized_conversion_cast" not in text


def test_ndarray_handle_and_compact_strides_are_accepted(vecadd):
    a, b, c = vecadd_inputs()
    rc = vecadd.call("vecadd", a, tensor(b, strides=(1,)), c, codes=[13, 7, 13])
    assert rc == (0, 4, None)
    np.testing.assert_array_equal(c, a + b)


def test_byte_offset_is_added_to_data(vecadd):
    a, b, _ = vecadd_inputs()
    big = np.zeros(12, np.float32)
    out = tensor(big, shape=(8,), byte_offset=3 * 4)
    assert vecadd.call("vecadd", a, b, out)[0] == 0
    np.testing.assert_array_equal(big[3:11], a + b)
    assert not big[:3].any() and not big[11:].any()


def expect(kernel: Kernel, args, rc: int, message: str, codes=None):
    assert kernel.call("vecadd", *args, codes=codes) == (rc, 11, message)


def test_wrong_argument_count(vecadd):
    a, b, _ = vecadd_inputs()
    expect(vecadd, (a, b), -1, "vecadd: expected 3 arguments (A, B, C)")
    expect(vecadd, (a, b, a, b), -1, "vecadd: expected 3 arguments (A, B, C)")


@pytest.mark.parametrize("code", [0, 2, 3, 4, 11])
def test_wrong_type_code(vecadd, code):
    a, b, c = vecadd_inputs()
    message = "vecadd: argument 1 (B): expected a tensor"
    expect(vecadd, (a, b, c), -3, message, codes=[7, code, 7])


def test_null_handle(vecadd):
    a, _, c = vecadd_inputs()
    expect(vecadd, (a, None, c), -3, "vecadd: argument 1 (B): expected a tensor")


def test_wrong_device(vecadd):
    a, b, c = vecadd_inputs()
    bad = tensor(c, device_type=2)
    expect(vecadd, (a, b, bad), -4, "vecadd: argument 2 (C): expected a CPU tensor")


@pytest.mark.parametrize(
    "bad",
    [
        lambda x: tensor(x, shape=(2, 4)),  # ndim
        lambda x: tensor(x, shape=(7,)),  # extent
        lambda x: tensor(x, shape=(9,)),
        lambda x: tensor(x, code=0),  # dtype code
        lambda x: tensor(x, bits=64),  # dtype bits
        lambda x: tensor(x, lanes=2),  # dtype lanes
        lambda x: tensor(x.view(np.int32)),
        lambda x: tensor(np.zeros(8, np.float64)),
    ],
)
def test_wrong_tensor(vecadd, bad):
    a, b, c = vecadd_inputs()
    message = "vecadd: argument 0 (A): expected float32 tensor of shape (8,)"
    expect(vecadd, (bad(a), b, c), -2, message)


def test_non_compact_strides(vecadd):
    a, b, c = vecadd_inputs()
    message = "vecadd: argument 1 (B): expected compact row-major strides"
    expect(vecadd, (a, tensor(b, strides=(2,)), c), -3, message)


def test_checks_run_in_argument_order(vecadd):
    """The first bad argument is the one reported."""
    a, b, c = vecadd_inputs()
    rc, _, message = vecadd.call("vecadd", a, tensor(b, lanes=4), None)
    assert rc == -3 and message.startswith("vecadd: argument 1 (B)")
    assert c.sum() == 0


OVERLAPS_A = (
    "vecadd: argument 2 (C): output overlaps argument 0 (A); "
    "in-place calls are not supported"
)


def test_output_may_not_be_an_input(vecadd):
    a, b, _ = vecadd_inputs()
    expect(vecadd, (a, b, a), -4, OVERLAPS_A)
    expect(vecadd, (a, b, b), -4, OVERLAPS_A.replace("0 (A)", "1 (B)"))
    np.testing.assert_array_equal(a, vecadd_inputs()[0])


def test_output_may_not_overlap_an_input():
    """Overlapping views of one array are rejected; adjacent ones and one array
    passed as two inputs are fine."""
    kernel = Kernel(VECADD)
    big = np.arange(24, dtype=np.float32)
    b = np.ones(8, np.float32)
    expect(kernel, (big[0:8], b, big[4:12]), -4, OVERLAPS_A)
    expect(kernel, (big[4:12], b, big[0:8]), -4, OVERLAPS_A)
    assert kernel.call("vecadd", big[0:8], b, big[8:16]) == (0, 4, None)
    np.testing.assert_array_equal(big[8:16], np.arange(8) + 1)
    assert kernel.call("vecadd", big[16:24], big[16:24], big[0:8])[0] == 0
    np.testing.assert_array_equal(big[0:8], 2 * big[16:24])


def test_overlap_is_measured_in_bytes_from_byte_offset(vecadd):
    """C starting in A's last byte overlaps it; C starting right after does not."""
    raw = np.zeros(80, np.uint8)
    a = raw[:32].view(np.float32)
    b = np.ones(8, np.float32)
    c = tensor(raw, code=2, bits=32, shape=(8,), byte_offset=31)
    expect(vecadd, (a, b, c), -4, OVERLAPS_A)
    c = tensor(raw, code=2, bits=32, shape=(8,), byte_offset=32)
    assert vecadd.call("vecadd", a, b, c) == (0, 4, None)
    np.testing.assert_array_equal(raw[32:64].view(np.float32), b)


def test_metadata(vecadd):
    rc, code, text = vecadd.call("__ember_metadata")
    assert (rc, code) == (0, 11)
    args = [
        {"name": n, "shape": [8], "dtype": "float32", "output": n == "C"} for n in "ABC"
    ]
    assert json.loads(text) == {
        "entry": "vecadd",
        "functions": {"vecadd": {"args": args}},
    }


# --- 2-d buffers, heap and stack temporaries, 0-d buffers ----------------------


def index_constants(*values: int) -> str:
    """Index constants `%c<v>` without arith: i64 constants cast to index."""
    return "\n".join(
        f"  %k{v} = llvm.mlir.constant({v} : i64) : i64\n"
        f"  %c{v} = builtin.unrealized_conversion_cast %k{v} : i64 to index"
        for v in values
    )


TRANSPOSE = (
    "func.func @transpose(%A: memref<2x3xf64>, %B: memref<3x2xf64>) {\n"
    + index_constants(*range(6))
    + """
  %T = memref.alloc() : memref<3x2xf64>
  %S = memref.alloca() : memref<6xf64>"""
    + "".join(
        f"""
  %a{i}{j} = memref.load %A[%c{i}, %c{j}] : memref<2x3xf64>
  memref.store %a{i}{j}, %T[%c{j}, %c{i}] : memref<3x2xf64>
  %t{i}{j} = memref.load %T[%c{j}, %c{i}] : memref<3x2xf64>
  memref.store %t{i}{j}, %S[%c{2 * j + i}] : memref<6xf64>
  %s{i}{j} = memref.load %S[%c{2 * j + i}] : memref<6xf64>
  memref.store %s{i}{j}, %B[%c{j}, %c{i}] : memref<3x2xf64>"""
        for i in range(2)
        for j in range(3)
    )
    + """
  memref.dealloc %T : memref<3x2xf64>
  func.return
}
"""
)


def test_transpose_through_heap_and_stack_buffers():
    kernel = Kernel(TRANSPOSE)
    text = str(kernel.module)
    assert "llvm.call @__ember_scratch_take" in text and "llvm.alloca" in text
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    b = np.zeros((3, 2), np.float64)
    assert kernel.call("transpose", a, b) == (0, 4, None)
    np.testing.assert_array_equal(b, a.T)


def test_2d_strides():
    kernel = Kernel(TRANSPOSE)
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    b = np.zeros((3, 2), np.float64)
    fortran = tensor(a, strides=(1, 2))
    rc, _, message = kernel.call("transpose", fortran, b)
    assert rc == -2
    assert message == "transpose: argument 0 (arg0): expected compact row-major strides"
    message = "transpose: argument 1 (arg1): expected float64 tensor of shape (3, 2)"
    assert kernel.call("transpose", a, tensor(b, shape=(2, 3))) == (-3, 11, message)
    assert kernel.call("transpose", a, tensor(b, strides=(2, 1)))[0] == 0


EXTENT_ONE = """
func.func @row(%A: memref<1x4xf32>, %B: memref<f32>) {
  %k = llvm.mlir.constant(3 : i64) : i64
  %three = builtin.unrealized_conversion_cast %k : i64 to index
  %z = llvm.mlir.constant(0 : i64) : i64
  %zero = builtin.unrealized_conversion_cast %z : i64 to index
  %x = memref.load %A[%zero, %three] : memref<1x4xf32>
  %y = memref.load %B[] : memref<f32>
  %s = llvm.fadd %x, %y : f32
  memref.store %s, %B[] : memref<f32>
  func.return
}
"""


def test_extent_one_strides_are_ignored_and_0d_buffers_work():
    kernel = Kernel(EXTENT_ONE)
    a = np.arange(4, dtype=np.float32).reshape(1, 4)
    b = np.array(10, np.float32)
    assert kernel.call("row", tensor(a, strides=(123, 1)), b) == (0, 4, None)
    assert b == 13
    rc, _, message = kernel.call("row", a, tensor(b, shape=(1,)))
    assert rc == -3 and message.endswith("expected float32 tensor of shape ()")


# --- dtypes ---------------------------------------------------------------------

DTYPE_KERNEL = (
    """
func.func @select(%M: memref<4xi1>, %X: memref<4xi32>,
                  %Y: memref<4xi8> {ember.dtype = "uint8"}, %Z: memref<4xi32>) {
"""
    + "".join(
        f"""
  %k{i} = llvm.mlir.constant({i} : i64) : i64
  %c{i} = builtin.unrealized_conversion_cast %k{i} : i64 to index
  %m{i} = memref.load %M[%c{i}] : memref<4xi1>
  %x{i} = memref.load %X[%c{i}] : memref<4xi32>
  %y{i} = memref.load %Y[%c{i}] : memref<4xi8>
  %w{i} = llvm.zext %y{i} : i8 to i32
  %r{i} = llvm.select %m{i}, %x{i}, %w{i} : i1, i32
  memref.store %r{i}, %Z[%c{i}] : memref<4xi32>"""
        for i in range(4)
    )
    + """
  func.return
}
"""
)


def test_bool_int_and_uint_buffers():
    kernel = Kernel(DTYPE_KERNEL)
    m = np.array([True, False, True, False])
    x = np.array([1, -2, 3, -4], np.int32)
    y = np.array([200, 201, 202, 255], np.uint8)
    z = np.zeros(4, np.int32)
    assert kernel.call("select", m, x, y, z) == (0, 4, None)
    np.testing.assert_array_equal(z, np.where(m, x, y.astype(np.int32)))
    rc, _, message = kernel.call("select", m, x, y.view(np.int8), z)
    assert rc == -4
    assert message == "select: argument 2 (arg2): expected uint8 tensor of shape (4,)"
    rc, _, message = kernel.call("select", m.view(np.uint8), x, y, z)
    assert message == "select: argument 0 (arg0): expected bool tensor of shape (4,)"
    _, _, meta = kernel.call("__ember_metadata")
    dtypes = [a["dtype"] for a in json.loads(meta)["functions"]["select"]["args"]]
    assert dtypes == ["bool", "int32", "uint8", "int32"]


# --- names -------------------------------------------------------------------------

NAMES = r"""
func.func @names(%A: memref<2xf32> {ember.name = "x y"},
                 %B: memref<2xf32> {ember.name = "a\"b"},
                 %C: memref<2xf32> {ember.name = "é"},
                 %D: memref<2xf32> {ember.name = "back\\slash"},
                 %E: memref<2xf32> {ember.name = ""}) {
  func.return
}
"""


def test_any_argument_name():
    """Names with spaces, quotes, backslashes or non-ASCII letters are kept as they
    are, in UTF-8 in the messages and as JSON strings in the metadata; an empty
    name is `arg<i>`."""
    kernel = Kernel(NAMES)
    names = ["x y", 'a"b', "é", "back\\slash", "arg4"]
    arrays = [np.zeros(2, np.float32) for _ in names]
    for i, name in enumerate(names):
        bad = list(arrays)
        bad[i] = np.zeros(3, np.float32)
        message = f"names: argument {i} ({name}): expected float32 tensor of shape (2,)"
        assert kernel.call("names", *bad) == (-2 - i, 11, message)
    expected = "names: expected 5 arguments (" + ", ".join(names) + ")"
    assert kernel.call("names") == (-1, 11, expected)
    _, _, meta = kernel.call("__ember_metadata")
    args = json.loads(meta)["functions"]["names"]["args"]
    assert [a["name"] for a in args] == names


# --- calls, results, globals, vectors, several entries ----------------------------

# memref.global has no custom syntax in xDSL 0.74: its generic form.
CALLS = """
"memref.global"() <{sym_name = "table", sym_visibility = "private",
  type = memref<4xf32>, initial_value = dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32>,
  constant}> : () -> ()
func.func private @weight(%i: index) -> f32 {
  %T = memref.get_global @table : memref<4xf32>
  %w = memref.load %T[%i] : memref<4xf32>
  func.return %w : f32
}
func.func @scale(%A: memref<4xf32>, %B: memref<4xf32>) {
  %z = llvm.mlir.constant(0 : i64) : i64
  %zero = builtin.unrealized_conversion_cast %z : i64 to index
  %v = vector.load %A[%zero] : memref<4xf32>, vector<4xf32>
  %s = llvm.fadd %v, %v : vector<4xf32>
  vector.store %s, %B[%zero] : memref<4xf32>, vector<4xf32>
  %k = llvm.mlir.constant(3 : i64) : i64
  %three = builtin.unrealized_conversion_cast %k : i64 to index
  %w = func.call @weight(%three) : (index) -> f32
  %b = memref.load %B[%three] : memref<4xf32>
  %p = llvm.fmul %b, %w : f32
  memref.store %p, %B[%three] : memref<4xf32>
  func.return
}
func.func @twice(%A: memref<4xf32>, %B: memref<4xf32>) {
  func.call @scale(%A, %B) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @scale(%B, %B) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
"""


def test_calls_globals_vectors_and_two_entries():
    kernel = Kernel(CALLS)
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.zeros(4, np.float32)
    assert kernel.call("scale", a, b) == (0, 4, None)
    np.testing.assert_array_equal(b, [2, 4, 6, 64])
    assert kernel.call("twice", a, b) == (0, 4, None)
    np.testing.assert_array_equal(b, [4, 8, 12, 8 * 8 * 2 * 8])
    _, _, meta = kernel.call("__ember_metadata")
    document = json.loads(meta)
    assert document["entry"] is None
    assert set(document["functions"]) == {"scale", "twice"}


# --- scf loops (with convert-arith-to-llvm) ---------------------------------------

MATMUL = """
func.func @matmul(%A: memref<4x3xf32> {ember.name = "A"},
                  %B: memref<3x5xf32> {ember.name = "B"},
                  %C: memref<4x5xf32> {ember.name = "C"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c5 step %c1 {
      %acc = scf.for %k = %c0 to %c3 step %c1 iter_args(%s = %zero) -> (f32) {
        %a = memref.load %A[%i, %k] : memref<4x3xf32>
        %b = memref.load %B[%k, %j] : memref<3x5xf32>
        %p = arith.mulf %a, %b : f32
        %t = arith.addf %s, %p : f32
        scf.yield %t : f32
      }
      memref.store %acc, %C[%i, %j] : memref<4x5xf32>
    }
  }
  func.return
}
"""


def test_scf_matmul():
    pipeline = OURS.replace(
        "convert-memref-to-llvm", "convert-arith-to-llvm,convert-memref-to-llvm"
    )
    kernel = Kernel(MATMUL, pipeline)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3), dtype=np.float32)
    b = rng.standard_normal((3, 5), dtype=np.float32)
    c = np.zeros((4, 5), np.float32)
    assert kernel.call("matmul", a, b, c) == (0, 4, None)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    message = "matmul: argument 1 (B): expected float32 tensor of shape (3, 5)"
    assert kernel.call("matmul", a, b.T.copy(), c) == (-3, 11, message)


# --- te programs through ember-cpu ------------------------------------------------

ANY_ALL = """
func.func @any_all(%X: tensor<6x4xi1>) -> (tensor<6xi1>, tensor<6xi1>) {
  %A = te.compute "A" (%i) reduce max (%k : 4) -> tensor<6xi1> {
    %x = te.read %X[%i, %k] : tensor<6x4xi1>
    te.yield %x : i1
  }
  %L = te.compute "L" (%i) reduce min (%k : 4) -> tensor<6xi1> {
    %x = te.read %X[%i, %k] : tensor<6x4xi1>
    te.yield %x : i1
  }
  func.return %A, %L : tensor<6xi1>, tensor<6xi1>
}
"""


def test_bool_max_and_min_are_any_and_all():
    kernel = Kernel(ANY_ALL, "ember-cpu")
    x = np.array(
        [
            [1, 0, 0, 0],
            [0, 0, 0, 1],
            [0, 0, 0, 0],
            [1, 1, 1, 1],
            [0, 1, 1, 1],
            [1, 1, 0, 1],
        ],
        bool,
    )
    a, m = np.zeros(6, bool), np.zeros(6, bool)
    assert kernel.call("any_all", x, a, m) == (0, 4, None)
    np.testing.assert_array_equal(a, x.max(axis=1))
    np.testing.assert_array_equal(m, x.min(axis=1))


SQUARE = """
func.func @square(%A: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 4) -> tensor<4x4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x4xf32>
    %b = te.read %A[%k, %j] : tensor<4x4xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  func.return %C : tensor<4x4xf32>
}
"""


def test_reduction_in_place_is_rejected():
    """`square(x, x)` would read the output while reducing into it: the entry
    refuses it before touching anything."""
    kernel = Kernel(SQUARE, "ember-cpu")
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    c = np.zeros((4, 4), np.float32)
    assert kernel.call("square", x, c) == (0, 4, None)
    np.testing.assert_allclose(c, x @ x)
    message = (
        "square: argument 1 (C): output overlaps argument 0 (A); "
        "in-place calls are not supported"
    )
    assert kernel.call("square", x, x) == (-3, 11, message)
    np.testing.assert_array_equal(x, np.arange(16).reshape(4, 4))
    _, _, meta = kernel.call("__ember_metadata")
    args = json.loads(meta)["functions"]["square"]["args"]
    assert [a["output"] for a in args] == [False, True]


# --- cf.assert --------------------------------------------------------------------

ASSERT = """
func.func @check(%A: memref<f32>) {
  %x = memref.load %A[] : memref<f32>
  %zero = llvm.mlir.constant(0.0 : f32) : f32
  %ok = llvm.fcmp "oge" %x, %zero : f32
  cf.assert %ok, "x must not be negative"
  %y = llvm.fadd %x, %x : f32
  memref.store %y, %A[] : memref<f32>
  func.return
}
"""


def test_assert_that_holds():
    kernel = Kernel(ASSERT)
    a = np.array(2.5, np.float32)
    assert kernel.call("check", a) == (0, 4, None)
    assert a == 5


def test_failed_assert_reports_and_aborts():
    script = textwrap.dedent(
        """
        import numpy as np
        from tests.test_lowering_memref_func_cf import ASSERT, Kernel
        Kernel(ASSERT).call("check", np.array(-1.0, np.float32))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode < 0  # killed by SIGABRT
    assert "assertion failed: x must not be negative" in done.stderr


# --- diagnostics --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, pipeline, message",
    [
        (
            "func.func @f(%A: memref<?xf32>, %i: index) {\n"
            "  %x = memref.load %A[%i] : memref<?xf32>\n  func.return\n}",
            "convert-memref-to-llvm",
            "cannot lower 'memref.load' in @f: expected a static shape",
        ),
        (
            "func.func @f(%A: memref<?xf32>) {\n  func.return\n}",
            "func-packed-abi",
            "@f: argument 0: expected a static shape",
        ),
        (
            "func.func private @f() -> (f32, f32)",
            "convert-func-to-llvm",
            "expected at most one result, got 2",
        ),
        (
            "func.func @f(%A: memref<4x4xf32>) {\n"
            "  %B = memref.subview %A[0, 0] [2, 2] [1, 1] : memref<4x4xf32> to "
            "memref<2x2xf32, strided<[4, 1]>>\n  func.return\n}",
            "convert-memref-to-llvm",
            "failed to convert 'memref.subview'",
        ),
        (  # no conversion takes vector.print: ember-cpu must not succeed
            "func.func @f(%A: memref<4xf32>, %x: f32) {\n"
            '  "vector.print"(%x) : (f32) -> ()\n'
            "  func.return\n}",
            "ember-cpu",
            "convert-vector-to-llvm: cannot lower 'vector.print' in @f",
        ),
    ],
)
def test_diagnostics(text, pipeline, message):
    module: ModuleOp = Parser(get_context(), text).parse_module()
    with pytest.raises(PassFailedException, match=message):
        run(module, pipeline)
