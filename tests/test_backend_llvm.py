"""ember.backends.llvm: translation, targets, -O3, JIT, objects for other machines."""

import ctypes
import gc
import json
import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

import ember
from ember import te
from ember.backends.llvm import (
    LLVMModule,
    Target,
    TranslationError,
    build_module,
    translate,
)
from ember.backends.llvm import target as target_module
from ember.dialects.llvm import LLVM
from ember.runtime import EmberError
from ember.runtime.errors import FunctionNotFoundError


def parse(text: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, LLVM, Arith):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def jit(text: str) -> LLVMModule:
    return build_module(parse(text))


def cfunc(mod: LLVMModule, name: str, restype, *argtypes):
    return ctypes.CFUNCTYPE(restype, *argtypes)(mod.function_address(name))


def host_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    match = re.search(r"^flags\s*:(.*)$", text, re.M)
    return set(match.group(1).split()) if match else set()


# --- ember's extra ops -------------------------------------------------------

CASTS = """
llvm.func @to_i32(%x: f32) -> i32 {
  %r = llvm.fptosi %x : f32 to i32
  llvm.return %r : i32
}
llvm.func @to_u64(%x: f64) -> i64 {
  %r = llvm.fptoui %x : f64 to i64
  llvm.return %r : i64
}
llvm.func @from_u32(%x: i32) -> f64 {
  %r = llvm.uitofp %x : i32 to f64
  llvm.return %r : f64
}
"""


def test_float_int_casts():
    mod = jit(CASTS)
    to_i32 = cfunc(mod, "to_i32", ctypes.c_int32, ctypes.c_float)
    to_u64 = cfunc(mod, "to_u64", ctypes.c_uint64, ctypes.c_double)
    from_u32 = cfunc(mod, "from_u32", ctypes.c_double, ctypes.c_uint32)
    assert [to_i32(x) for x in (2.9, -2.9, 0.0)] == [2, -2, 0]
    assert to_u64(1.5e19) == 15_000_000_000_000_000_000
    assert from_u32(0xFFFFFFFF) == 4294967295.0
    assert "fptosi" in mod.get_source("ll-unopt")


def test_extractelement_with_dynamic_index():
    mod = jit("""
    llvm.func @lane(%a: f32, %b: f32, %i: i64) -> f32 {
      %u = llvm.mlir.undef : vector<2xf32>
      %z = llvm.mlir.constant(0 : i64) : i64
      %o = llvm.mlir.constant(1 : i64) : i64
      %v0 = llvm.insertelement %a, %u[%z : i64] : vector<2xf32>
      %v1 = llvm.insertelement %b, %v0[%o : i64] : vector<2xf32>
      %x = llvm.extractelement %v1[%i : i64] : vector<2xf32>
      llvm.return %x : f32
    }
    """)
    lane = cfunc(
        mod, "lane", ctypes.c_float, ctypes.c_float, ctypes.c_float, ctypes.c_int64
    )
    assert (lane(1.5, 2.5, 0), lane(1.5, 2.5, 1)) == (1.5, 2.5)


SWITCH = """
llvm.func @classify(%x: i32) -> i32 {
  llvm.switch %x : i32, ^other [1: ^one, 7: ^seven, -3: ^minus]
^one:
  %a = llvm.mlir.constant(10 : i32) : i32
  llvm.return %a : i32
^seven:
  %b = llvm.mlir.constant(70 : i32) : i32
  llvm.return %b : i32
^minus:
  %c = llvm.mlir.constant(-30 : i32) : i32
  llvm.return %c : i32
^other:
  %d = llvm.mlir.constant(0 : i32) : i32
  llvm.return %d : i32
}
"""


def test_switch():
    mod = jit(SWITCH)  # the code lives as long as the module
    classify = cfunc(mod, "classify", ctypes.c_int32, ctypes.c_int32)
    assert [classify(x) for x in (1, 7, -3, 0, 2)] == [10, 70, -30, 0, 0]


def test_switch_rejects_destinations_with_block_arguments():
    module = parse("""
    llvm.func @f(%x: i32) -> i32 {
      llvm.switch %x : i32, ^done [1: ^done]
    ^done(%y: i32):
      llvm.return %y : i32
    }
    """)
    with pytest.raises(TranslationError, match="llvm.switch"):
        translate(module)


# --- control flow, globals, calls --------------------------------------------


def test_loop_with_block_arguments_in_any_block_order():
    # ^exit comes before the blocks that define the values it receives.
    mod = jit("""
    llvm.func @sum_below(%n: i64) -> i64 {
      %zero = llvm.mlir.constant(0 : i64) : i64
      llvm.br ^header(%zero, %zero : i64, i64)
    ^exit(%r: i64):
      llvm.return %r : i64
    ^header(%i: i64, %acc: i64):
      %c = llvm.icmp "slt" %i, %n : i64
      llvm.cond_br %c, ^body, ^exit(%acc : i64)
    ^body:
      %one = llvm.mlir.constant(1 : i64) : i64
      %acc2 = llvm.add %acc, %i : i64
      %i2 = llvm.add %i, %one : i64
      llvm.br ^header(%i2, %acc2 : i64, i64)
    }
    """)
    sum_below = cfunc(mod, "sum_below", ctypes.c_int64, ctypes.c_int64)
    assert [sum_below(n) for n in (0, 1, 10, 1000)] == [0, 0, 45, 499500]
    unoptimized = mod.get_source("ll-unopt")
    assert "phi" in unoptimized and '%"acc2"' in unoptimized


def test_string_globals():
    mod = jit("""
    llvm.mlir.global internal constant @hello("hello\\00") {addr_space = 0 : i32} : !llvm.array<6 x i8>
    llvm.mlir.global private constant @raw("\\FF\\00") {addr_space = 0 : i32} : !llvm.array<2 x i8>
    llvm.func @greeting() -> !llvm.ptr {
      %p = llvm.mlir.addressof @hello : !llvm.ptr
      llvm.return %p : !llvm.ptr
    }
    llvm.func @raw_bytes() -> !llvm.ptr {
      %p = llvm.mlir.addressof @raw : !llvm.ptr
      llvm.return %p : !llvm.ptr
    }
    """)
    assert cfunc(mod, "greeting", ctypes.c_char_p)() == b"hello"
    assert cfunc(mod, "raw_bytes", ctypes.c_char_p)() == b"\xff"


def test_string_global_of_the_wrong_length_is_an_error():
    module = parse("""
    llvm.mlir.global internal constant @s("hi") {addr_space = 0 : i32} : !llvm.array<6 x i8>
    """)
    with pytest.raises(TranslationError, match="2 bytes"):
        translate(module)


def test_zero_initialized_global_and_indirect_call():
    mod = jit("""
    llvm.mlir.global internal @counter() {addr_space = 0 : i32} : !llvm.array<4 x i64> {
      %z = llvm.mlir.zero : !llvm.array<4 x i64>
      llvm.return %z : !llvm.array<4 x i64>
    }
    llvm.func internal @bump(%by: i64) -> i64 {
      %p = llvm.mlir.addressof @counter : !llvm.ptr
      %v = llvm.load %p : !llvm.ptr -> i64
      %w = llvm.add %v, %by : i64
      llvm.store %w, %p : i64, !llvm.ptr
      llvm.return %w : i64
    }
    llvm.func @call_through(%f: !llvm.ptr, %x: i64) -> i64 {
      %r = llvm.call %f(%x) : !llvm.ptr, (i64) -> i64
      llvm.return %r : i64
    }
    llvm.func @bump_address() -> !llvm.ptr {
      %f = llvm.mlir.addressof @bump : !llvm.ptr
      llvm.return %f : !llvm.ptr
    }
    """)
    bump = cfunc(mod, "bump_address", ctypes.c_void_p)()
    call_through = cfunc(
        mod, "call_through", ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64
    )
    assert [call_through(bump, 3), call_through(bump, 4)] == [3, 7]
    with pytest.raises(KeyError, match="bump"):
        mod.function_address("bump")  # internal: not exported


INTRINSICS = """
llvm.func @fmuladd(%a: f32, %b: f32, %c: f32) -> f32 {
  %r = llvm.call_intrinsic "llvm.fmuladd"(%a, %b, %c) : (f32, f32, f32) -> f32
  llvm.return %r : f32
}
llvm.func @vector_ops(%p: !llvm.ptr, %q: !llvm.ptr, %out: !llvm.ptr) {
  %a = llvm.load %p : !llvm.ptr -> vector<4xf32>
  %b = llvm.load %q : !llvm.ptr -> vector<4xf32>
  %fma = llvm.call_intrinsic "llvm.fmuladd"(%a, %b, %b) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
  %max = llvm.call_intrinsic "llvm.maxnum"(%fma, %a) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
  %min = llvm.call_intrinsic "llvm.minimum"(%max, %b) {fastmathFlags = #llvm.fastmath<nsz>} : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
  %exp = llvm.intr.exp(%min) : (vector<4xf32>) -> vector<4xf32>
  %r = llvm.intr.fma(%exp, %a, %b) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
  llvm.store %r, %out : vector<4xf32>, !llvm.ptr
  llvm.return
}
llvm.func @scalar_exp(%x: f32) -> f32 {
  %r = llvm.intr.exp(%x) : (f32) -> f32
  llvm.return %r : f32
}
llvm.func @smax(%p: !llvm.ptr, %q: !llvm.ptr, %out: !llvm.ptr) {
  %a = llvm.load %p : !llvm.ptr -> vector<4xi32>
  %b = llvm.load %q : !llvm.ptr -> vector<4xi32>
  %r = llvm.call_intrinsic "llvm.smax"(%a, %b) : (vector<4xi32>, vector<4xi32>) -> vector<4xi32>
  llvm.store %r, %out : vector<4xi32>, !llvm.ptr
  llvm.return
}
"""


def test_intrinsics_on_scalars_and_vectors():
    mod = jit(INTRINSICS)
    unoptimized = mod.get_source("ll-unopt")
    # One intrinsic at two types needs two mangled declarations.
    assert '@"llvm.exp.f32"' in unoptimized and '@"llvm.exp.v4f32"' in unoptimized
    assert 'call nsz <4 x float> @"llvm.minimum.v4f32"' in unoptimized
    f = cfunc(mod, "fmuladd", ctypes.c_float, *[ctypes.c_float] * 3)
    assert f(2.0, 3.0, 1.0) == 7.0
    assert cfunc(mod, "scalar_exp", ctypes.c_float, ctypes.c_float)(0.0) == 1.0

    ptr = ctypes.c_void_p
    a = np.array([0.5, -1.0, 2.0, -3.0], np.float32)
    b = np.array([1.0, 0.25, -2.0, 4.0], np.float32)
    out = np.zeros(4, np.float32)
    cfunc(mod, "vector_ops", None, ptr, ptr, ptr)(
        a.ctypes.data, b.ctypes.data, out.ctypes.data
    )
    expected = np.exp(np.minimum(np.maximum(a * b + b, a), b)) * a + b
    np.testing.assert_allclose(out, expected, rtol=1e-6)

    x = np.array([1, -5, 7, -2], np.int32)
    y = np.array([0, -6, 9, 3], np.int32)
    r = np.zeros(4, np.int32)
    cfunc(mod, "smax", None, ptr, ptr, ptr)(x.ctypes.data, y.ctypes.data, r.ctypes.data)
    np.testing.assert_array_equal(r, np.maximum(x, y))


def test_stack_save_and_restore_around_an_alloca():
    mod = jit("""
    llvm.func @through_stack(%x: i32) -> i32 {
      %sp = llvm.intr.stacksave : !llvm.ptr
      %one = llvm.mlir.constant(1 : i64) : i64
      %slot = llvm.alloca %one x i32 : (i64) -> !llvm.ptr
      llvm.store %x, %slot : i32, !llvm.ptr
      %y = llvm.load %slot : !llvm.ptr -> i32
      llvm.intr.stackrestore %sp : !llvm.ptr
      llvm.return %y : i32
    }
    """)
    assert '@"llvm.stacksave.p0"' in mod.get_source("ll-unopt")
    assert cfunc(mod, "through_stack", ctypes.c_int32, ctypes.c_int32)(9) == 9


def test_o3_vectorizes_a_simple_loop():
    mod = jit("""
    llvm.func @double(%a: !llvm.ptr {llvm.noalias}, %out: !llvm.ptr {llvm.noalias}) {
      %zero = llvm.mlir.constant(0 : i64) : i64
      %n = llvm.mlir.constant(1024 : i64) : i64
      llvm.br ^header(%zero : i64)
    ^header(%i: i64):
      %more = llvm.icmp "slt" %i, %n : i64
      llvm.cond_br %more, ^body, ^done
    ^body:
      %p = llvm.getelementptr %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %x = llvm.load %p : !llvm.ptr -> f32
      %y = llvm.fadd %x, %x : f32
      %q = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %y, %q : f32, !llvm.ptr
      %one = llvm.mlir.constant(1 : i64) : i64
      %next = llvm.add %i, %one : i64
      llvm.br ^header(%next : i64)
    ^done:
      llvm.return
    }
    """)
    assert re.search(r"fadd <\d+ x float>", mod.get_source("ll"))
    a = np.arange(1024, dtype=np.float32)
    out = np.zeros_like(a)
    p = ctypes.c_void_p
    cfunc(mod, "double", None, p, p)(a.ctypes.data, out.ctypes.data)
    np.testing.assert_array_equal(out, 2 * a)


def test_module_from_llvm_ir_text():
    mod = LLVMModule("define i32 @answer() {\n  ret i32 42\n}\n")
    assert cfunc(mod, "answer", ctypes.c_int32)() == 42
    with pytest.raises(ValueError, match="invalid LLVM IR"):
        LLVMModule("define i32 @broken() {\n  ret i64 0\n}\n")


# --- the packed ABI ----------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8),
        ("lanes", ctypes.c_uint16),
    ]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


# fill(args, type_codes, n, ret, ret_code): out[i] = 2 * i for the DLTensor in
# args[0]; returns -1 unless called with exactly one argument. Its metadata marks
# that argument as an output.
FILL_METADATA = json.dumps(
    {
        "entry": "fill",
        "functions": {
            "fill": {
                "args": [
                    {"name": "out", "shape": [-1], "dtype": "float32", "output": True}
                ]
            }
        },
    }
)


def string_global(name: str, text: str) -> str:
    """An llvm-dialect constant holding `text` NUL-terminated."""
    escaped = text.replace('"', "\\22")
    size = len(text.encode()) + 1
    return (
        f'llvm.mlir.global private constant @{name}("{escaped}\\00") '
        f"{{addr_space = 0 : i32}} : !llvm.array<{size} x i8>\n"
    )


PACKED = string_global("meta", FILL_METADATA)
PACKED += """
llvm.func @fill(%args: !llvm.ptr, %codes: !llvm.ptr, %n: i32, %ret: !llvm.ptr, %ret_code: !llvm.ptr) -> i32 {
  %one32 = llvm.mlir.constant(1 : i32) : i32
  %ok = llvm.icmp "eq" %n, %one32 : i32
  llvm.cond_br %ok, ^start, ^bad
^bad:
  %m1 = llvm.mlir.constant(-1 : i32) : i32
  llvm.return %m1 : i32
^start:
  %t = llvm.load %args : !llvm.ptr -> !llvm.ptr
  %data = llvm.load %t : !llvm.ptr -> !llvm.ptr
  %shape_p = llvm.getelementptr %t[24] : (!llvm.ptr) -> !llvm.ptr, i8
  %shape = llvm.load %shape_p : !llvm.ptr -> !llvm.ptr
  %len = llvm.load %shape : !llvm.ptr -> i64
  %zero = llvm.mlir.constant(0 : i64) : i64
  llvm.br ^header(%zero : i64)
^header(%i: i64):
  %more = llvm.icmp "slt" %i, %len : i64
  llvm.cond_br %more, ^body, ^done
^body:
  %f = llvm.sitofp %i : i64 to f32
  %v = llvm.fadd %f, %f : f32
  %p = llvm.getelementptr %data[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %p : f32, !llvm.ptr
  %one = llvm.mlir.constant(1 : i64) : i64
  %next = llvm.add %i, %one : i64
  llvm.br ^header(%next : i64)
^done:
  %z = llvm.mlir.constant(0 : i32) : i32
  llvm.return %z : i32
}
llvm.func internal @hidden_packed(%a: !llvm.ptr, %b: !llvm.ptr, %n: i32, %c: !llvm.ptr, %d: !llvm.ptr) -> i32 {
  %z = llvm.mlir.constant(0 : i32) : i32
  llvm.return %z : i32
}
llvm.func @__ember_metadata(%a: !llvm.ptr, %b: !llvm.ptr, %n: i32, %c: !llvm.ptr, %d: !llvm.ptr) -> i32 {
  %text = llvm.mlir.addressof @meta : !llvm.ptr
  llvm.store %text, %c : !llvm.ptr, !llvm.ptr
  %str = llvm.mlir.constant(11 : i32) : i32
  llvm.store %str, %d : i32, !llvm.ptr
  %z = llvm.mlir.constant(0 : i32) : i32
  llvm.return %z : i32
}
llvm.func @not_packed(%x: i32) -> i32 {
  llvm.return %x : i32
}
"""


def test_packed_function_through_raw_ctypes():
    mod = jit(PACKED)
    assert mod.function_names() == ["fill"]
    assert mod.entry_name == "fill"
    out = np.full(37, -1.0, np.float32)
    shape = (ctypes.c_int64 * 1)(37)
    tensor = DLTensor(
        out.ctypes.data, DLDevice(1, 0), 1, DLDataType(2, 32, 1), shape, None, 0
    )
    args = (ctypes.c_void_p * 1)(ctypes.addressof(tensor))
    codes = (ctypes.c_int32 * 1)(7)
    ret = ctypes.c_int64()
    ret_code = ctypes.c_int32()
    p = ctypes.c_void_p
    fill = cfunc(mod, "fill", ctypes.c_int32, p, p, ctypes.c_int32, p, p)
    refs = [ctypes.addressof(x) for x in (args, codes, ret, ret_code)]
    assert fill(refs[0], refs[1], 1, refs[2], refs[3]) == 0
    np.testing.assert_array_equal(out, 2 * np.arange(37, dtype=np.float32))
    assert fill(refs[0], refs[1], 2, refs[2], refs[3]) == -1


def test_packed_function_through_the_runtime():
    mod = jit(PACKED)
    fill = mod["fill"]
    assert "fill" in mod and "not_packed" not in mod and "hidden_packed" not in mod
    del mod
    gc.collect()  # the PackedFunc keeps the module, and its machine code, alive
    out = np.zeros(5, np.float32)
    fill(out)
    np.testing.assert_array_equal(out, [0, 2, 4, 6, 8])
    entry = jit(PACKED)
    entry(out[:3])  # mod(...) calls the only packed function
    np.testing.assert_array_equal(out, [0, 2, 4, 6, 8])
    with pytest.raises(FunctionNotFoundError, match="fill"):
        entry["not_packed"]


def test_metadata_and_read_only_outputs():
    mod = jit(PACKED)
    assert mod.metadata == json.loads(FILL_METADATA)
    fill = mod["fill"]
    assert fill.outputs == (0,)
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(EmberError) as info:
        fill(out)
    assert str(info.value) == (
        "fill: argument 0 (out) is an output but the array is read-only"
    )
    np.testing.assert_array_equal(out, 0)


def test_compiled_kernel_refuses_read_only_outputs():
    n = 16
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    mod = ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")
    args = mod.metadata["functions"]["vecadd"]["args"]
    assert [arg.get("output", False) for arg in args] == [False, False, True]
    assert mod["vecadd"].outputs == (2,)
    a = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    out.flags.writeable = False
    with pytest.raises(EmberError) as info:
        mod(a, a, out)
    assert str(info.value) == (
        "vecadd: argument 2 (C) is an output but the array is read-only"
    )
    np.testing.assert_array_equal(out, 0)
    mod(out, out, a)  # read-only inputs are fine
    np.testing.assert_array_equal(a, 0)


def test_compiled_kernel_output_over_a_read_only_mmap(tmp_path):
    # Writing into a read-only mapping is a segfault: run it in a subprocess.
    data = tmp_path / "zeros.bin"
    data.write_bytes(bytes(4 * 1024))
    done = run_fresh(f"""
        import mmap
        import numpy as np
        import ember
        from ember import te
        from ember.runtime import EmberError

        A = te.placeholder((1024,), name="A")
        C = te.compute((1024,), lambda i: A[i] + 1.0, name="C")
        mod = ember.build(te.create_schedule(C.op), [A, C], name="inc")
        with open({str(data)!r}, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            mod(np.ones(1024, np.float32), np.frombuffer(mapped, np.float32))
        except EmberError as e:
            print(e)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "inc: argument 1 (C) is an output but the array is read-only\n"
    )


# --- the module: sources, files, externals -----------------------------------


def test_linkage_visibility_and_attributes_reach_llvm():
    mod = jit("""
    llvm.func internal @helper(%x: i32) -> i32 attributes {passthrough = ["noinline", ["probe-stack", "inline-asm"]]} {
      llvm.return %x : i32
    }
    llvm.func hidden @inner(%x: i32) -> i32 {
      %r = llvm.call @helper(%x) : (i32) -> i32
      llvm.return %r : i32
    }
    llvm.func @outer(%p: !llvm.ptr {llvm.noalias}) -> i32 {
      %x = llvm.load %p : !llvm.ptr -> i32
      %r = llvm.call @inner(%x) : (i32) -> i32
      llvm.return %r : i32
    }
    """)
    unoptimized = mod.get_source("ll-unopt")
    assert re.search(
        r'@"helper".*noinline nounwind "probe-stack"="inline-asm"', unoptimized
    )
    assert 'define hidden i32 @"inner"' in unoptimized
    assert 'ptr noalias %"p"' in unoptimized
    assert "nounwind" in unoptimized
    value = ctypes.c_int32(42)
    outer = cfunc(mod, "outer", ctypes.c_int32, ctypes.c_void_p)
    assert outer(ctypes.addressof(value)) == 42


def test_save_object_ir_and_assembly(tmp_path):
    mod = jit(CASTS)
    for suffix in (".o", ".ll", ".s"):
        mod.save(tmp_path / f"m{suffix}")
    assert (tmp_path / "m.o").read_bytes()[:4] == b"\x7fELF"
    assert "define" in (tmp_path / "m.ll").read_text()
    assert "to_i32" in (tmp_path / "m.s").read_text()
    with pytest.raises(ValueError, match=r"\.o, \.ll or \.s"):
        mod.save(tmp_path / "m.txt")
    with pytest.raises(ValueError, match="unknown source format"):
        mod.get_source("ptx")


def test_unresolvable_external_raises_instead_of_aborting():
    module = parse("""
    llvm.func @ember_no_such_symbol(i32) -> i32
    llvm.func @f(%x: i32) -> i32 {
      %r = llvm.call @ember_no_such_symbol(%x) : (i32) -> i32
      llvm.return %r : i32
    }
    """)
    with pytest.raises(
        EmberError, match="compiled code uses 'ember_no_such_symbol', which this"
    ):
        build_module(module)


def run_fresh(script: str) -> subprocess.CompletedProcess:
    """Run `script` in a new Python process: no execution engine exists yet."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_heap_buffers_in_the_first_build_of_a_process():
    # LLVM knows no process symbol (aligned_alloc, free, expf) until an execution
    # engine exists; the first build of a process must still resolve them.
    done = run_fresh("""
        import numpy as np
        import ember
        from ember import te

        n = 64  # big enough that -O3 keeps the intermediate buffer
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
        C = te.compute((n,), lambda i: te.exp(B[i]) + 1.0, name="C")
        mod = ember.build(te.create_schedule(C.op), [A, C], name="f")
        ir = mod.get_source("ll")
        assert "aligned_alloc" in ir and "@free" in ir, ir
        a = np.linspace(-1, 1, n).astype(np.float32)
        c = np.empty(n, np.float32)
        mod(a, c)
        np.testing.assert_allclose(c, np.exp(a * 2) + 1, rtol=1e-6)
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


SCRATCH_KERNEL = """
import gc, resource, sys
import numpy as np
import ember
from ember import te
from ember.runtime import load_module

a = te.placeholder((1024, 1024), name="a")
b = te.compute(a.shape, lambda i, j: a[i, j] * 2.0, name="b")  # 4 MiB of scratch
c = te.compute(a.shape, lambda i, j: b[i, j] + 1.0, name="c")
x = np.ones(a.shape, np.float32)
y = np.empty_like(x)


def faults_a_call(mod):
    mod(x, y)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        mod(x, y)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
    assert (y == 3).all()
    return faults
"""


def test_a_kernel_keeps_its_scratch_for_its_next_call():
    """A heap buffer's block stays in its module between calls: a kernel
    called again faults no pages in (a fresh 4 MiB block is 1024 pages;
    glibc handed large freed blocks back to the OS, about 400 faults a
    call), built in-process or loaded from a library."""
    done = run_fresh(
        SCRATCH_KERNEL
        + """
mod = ember.build(te.create_schedule(c.op), [a, c], name="f")
print(faults_a_call(mod))
mod.export_library("/tmp/ember_scratch_%d.so" % __import__("os").getpid())
print(faults_a_call(load_module("/tmp/ember_scratch_%d.so" % __import__("os").getpid())))
"""
    )
    assert done.returncode == 0, done.stderr
    assert [float(v) < 16 for v in done.stdout.split()] == [True, True], done.stdout


@pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="counts the heap with glibc's mallinfo2"
)
def test_a_module_that_goes_frees_the_scratch_it_kept():
    """`__ember_scratch_release` runs when the runtime lets a module go (an
    in-process build, a loaded library): the heap holds its block no more."""
    done = run_fresh(
        SCRATCH_KERNEL
        + """
import ctypes, os


class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    ).split()]


libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info


def in_use():
    gc.collect()
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


path = "/tmp/ember_scratch_%d.so" % os.getpid()
mod = ember.build(te.create_schedule(c.op), [a, c], name="f")
mod.export_library(path)
start = in_use()
faults_a_call(mod)
kept = in_use() - start
del mod
freed = kept - (in_use() - start)
lib = load_module(path)
start = in_use()
faults_a_call(lib)
kept_lib = in_use() - start
del lib
print(kept, freed, kept_lib, kept_lib - (in_use() - start))
os.remove(path)
"""
    )
    assert done.returncode == 0, done.stderr
    kept, freed, kept_lib, freed_lib = map(int, done.stdout.split())
    four = 4 << 20
    assert kept >= four and freed >= four and kept_lib >= four and freed_lib >= four


def test_calls_from_two_threads_share_a_kernels_scratch_safely():
    """Two threads calling one kernel at once: one takes the kept block, the
    other allocates; each gives its block back (the slot keeps one, frees
    the other); every result is right."""
    import threading

    n = 256
    A = te.placeholder((n, n), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute(A.shape, lambda i, j: B[j, i] + 1.0, name="C")
    mod = ember.build(te.create_schedule(C.op), [A, C], name="f")
    wrong = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(40):
            a = rng.standard_normal((n, n)).astype(np.float32)
            out = np.empty_like(a)
            mod(a, out)
            if not np.array_equal(out, a.T * 2 + 1):
                wrong.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_calls_into_the_c_library():
    mod = jit("""
    llvm.func @labs(i64) -> i64
    llvm.func @f(%x: i64) -> i64 {
      %r = llvm.call @labs(%x) : (i64) -> i64
      llvm.return %r : i64
    }
    """)
    assert cfunc(mod, "f", ctypes.c_int64, ctypes.c_int64)(-5) == 5


# --- translation errors ------------------------------------------------------


def test_op_outside_the_llvm_dialect_is_named():
    module = parse("""
    llvm.func @f(%x: i32) -> i32 {
      %c = arith.constant 1 : i32
      llvm.return %x : i32
    }
    """)
    with pytest.raises(TranslationError, match="'arith.constant'") as info:
        translate(module)
    assert info.value.op_name == "arith.constant"


def test_top_level_op_that_is_not_a_function_or_global_is_named():
    with pytest.raises(TranslationError, match="arith.constant"):
        translate(parse("%c = arith.constant 1 : i32"))


def test_leftover_unrealized_cast_explains_itself():
    module = parse("""
    llvm.func @f(%x: i32) -> i64 {
      %y = builtin.unrealized_conversion_cast %x : i32 to i64
      llvm.return %y : i64
    }
    """)
    with pytest.raises(TranslationError, match="reconcile-unrealized-casts"):
        translate(module)


# --- targets ------------------------------------------------------------------


def test_host_target_is_the_real_cpu():
    target = Target.host()
    assert target.is_host and target == Target("llvm")
    assert target.cpu == llvm.get_host_cpu_name()  # "generic": test_cross_compile
    features = target.features.split(",")
    flags = host_flags()
    if "avx2" in flags:
        assert "+avx2" in features
    if flags and "avx512f" not in flags:
        assert "+avx512f" not in features
    tm = target.create_target_machine()
    assert tm is target.create_target_machine()
    assert tm is Target("llvm").create_target_machine()


def test_host_assembly_has_host_instructions():
    mod = jit("""
    llvm.func @add(%a: f32, %b: f32) -> f32 {
      %r = llvm.fadd %a, %b : f32
      llvm.return %r : f32
    }
    """)
    asm = mod.get_source("asm")
    arch = Target.host().arch
    expected = {"x86_64": r"\bv?addss\b", "aarch64": r"\bfadd\b"}.get(arch, r"add")
    assert re.search(expected, asm), asm


def test_mattr_overrides_host_features():
    target = Target("llvm -mattr=-avx2")
    assert target.is_host and target.not_host_reason == ""
    assert target.features.endswith(",-avx2")
    assert str(target) == "llvm -mattr=-avx2"


def other_cpu() -> str:
    """A CPU LLVM knows for this host's architecture that the host is not."""
    known = {
        "x86_64": ("sapphirerapids", "znver4", "skylake"),
        "aarch64": ("neoverse-v2", "cortex-a72"),
    }.get(Target.host().arch, ())
    for cpu in known:
        if cpu != llvm.get_host_cpu_name():
            return cpu
    pytest.skip(f"no other CPU listed for {Target.host().arch}")


def test_another_cpu_makes_a_cross_target():
    cpu = other_cpu()
    target = Target(f"llvm -mcpu={cpu}")
    assert not target.is_host and target.cpu == cpu
    assert f"-mcpu={cpu} is not this machine's CPU" in target.not_host_reason
    mod = build_module(parse(PACKED), target)
    assert "fill" in mod.get_source("asm")
    with pytest.raises(EmberError, match="cannot run on this machine: -mcpu="):
        mod(np.zeros(4, np.float32))
    same = Target(f"llvm -mcpu={llvm.get_host_cpu_name()}")
    assert same.is_host


def test_host_targets_start_no_subprocess(monkeypatch):
    def refuse(*args):
        raise AssertionError(f"validated {args} in a subprocess")

    monkeypatch.setattr(target_module, "_llvm_rejects", refuse)
    host = llvm.get_host_cpu_name()
    for spec in ("llvm", "llvm -mcpu=native", "llvm -mattr=-avx2,+sse2"):
        assert Target(spec).is_host
    assert Target(f"llvm -mcpu={host} -opt-level=2").is_host
    assert not Target("llvm -mtriple=aarch64-linux-gnu").is_host


def test_named_cpus_and_features_are_checked_once(monkeypatch):
    calls = []
    real_run = subprocess.run

    def counting_run(*args, **kwargs):
        calls.append(args)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(target_module.subprocess, "run", counting_run)
    target_module._llvm_rejects.cache_clear()
    cpu = other_cpu()
    for _ in range(3):
        Target(f"llvm -mcpu={cpu}")
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "llvm -mcpu=notacpu",
            "target llvm -mcpu=notacpu: -mcpu=notacpu is not a CPU LLVM knows for",
        ),
        (
            "llvm -mattr=+notafeature",
            "target llvm -mattr=+notafeature: -mattr +notafeature is not a feature",
        ),
        (
            "llvm -mcpu=native -mattr=-notafeature",
            ": -mattr -notafeature is not a feature LLVM knows for",
        ),
        (
            "llvm -mtriple=aarch64-linux-gnu -mcpu=notacpu",
            ": -mcpu=notacpu is not a CPU LLVM knows for aarch64-linux-gnu",
        ),
    ],
)
def test_unknown_cpus_and_features_are_value_errors(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Target(spec)


def test_unknown_cpu_does_not_kill_the_process():
    # LLVM aborts the process ("64-bit code requested on a subtarget that doesn't
    # support it") when it generates code for an unknown x86 CPU.
    done = run_fresh("""
        from ember import te
        import ember
        A = te.placeholder((8,), name="A")
        B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
        try:
            ember.build(te.create_schedule(B.op), [A, B], target="llvm -mcpu=notacpu")
        except ValueError as e:
            print(e)
    """)
    assert done.returncode == 0, done.stderr
    assert "-mcpu=notacpu is not a CPU LLVM knows" in done.stdout


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() != "x86_64",
    reason="shapes the address space with Linux x86-64 mmap flags",
)
@pytest.mark.slow  # 9 s: maps most of the address space
def test_sections_stay_in_reach_in_a_crowded_address_space():
    # Every gap in the mmap area is filled but for one page, and 8 GiB below the
    # lowest mapping are taken: a one-page section lands in a hole at the top,
    # anything larger more than 8 GiB below. A model's kernel objects (small
    # code model: rip-relative loads of their constants) must still link.
    done = run_fresh("""
        import ctypes, sys
        import numpy as np
        sys.path.insert(0, "examples")
        import onnx_models
        from ember import compile_model
        from ember.runtime import GraphModule, cpu

        libc = ctypes.CDLL(None)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                              ctypes.c_int, ctypes.c_int, ctypes.c_long]
        PAGE, TAKEN = 4096, 0x2 | 0x20 | 0x4000 | 0x100000  # ..., FIXED_NOREPLACE

        def take(address, size):
            return libc.mmap(address, size, 0, TAKEN, -1, 0) == address

        def run(lib):
            m = GraphModule(lib["default"](cpu()))
            return np.array(m(np.ones((1, 3, 32, 32), "float32"))[0])

        model = onnx_models.mobilenet_v2(size=32, width=0.35, num_classes=10)
        want = run(compile_model(model))  # the kernels are cached: now only loads
        def mmap_area():
            maps = [line.split() for line in open("/proc/self/maps")]
            names = [m[5] if len(m) > 5 else "" for m in maps]
            spans = [tuple(int(x, 16) for x in m[0].split("-")) for m in maps]
            return spans[names.index("[heap]") + 1 : names.index("[stack]")]

        # Python's own allocations may take part of a gap meanwhile: pass again
        for _ in range(10):
            area = mmap_area()
            gaps = [(end, start) for (_, end), (start, _) in zip(area, area[1:])]
            if not [take(e + PAGE, s - e - PAGE) for e, s in gaps if s - e > PAGE]:
                break
        assert take(area[0][0] - (8 << 30), 8 << 30)
        np.testing.assert_allclose(run(compile_model(model)), want, rtol=1e-6)
        print("linked")
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "linked"


def test_target_strings_and_dicts():
    t = Target(
        "llvm  -mcpu=skylake-avx512 -mattr=+avx2,-avx512f "
        "-mtriple=x86_64-linux-gnu -opt-level=2"
    )
    assert (t.cpu, t.triple, t.mattr, t.opt_level) == (
        "skylake-avx512",
        "x86_64-linux-gnu",
        ("+avx2", "-avx512f"),
        2,
    )
    assert t.features == "+avx2,-avx512f"
    canonical = (
        "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 "
        "-mattr=+avx2,-avx512f -opt-level=2"
    )
    assert str(t) == canonical and Target(str(t)) == t
    d = Target(
        {
            "kind": "llvm",
            "mcpu": "skylake-avx512",
            "mtriple": "x86_64-linux-gnu",
            "mattr": ["+avx2", "-avx512f"],
            "opt_level": 2,
        }
    )
    assert d == t and hash(d) == hash(t) and len({d, t}) == 1
    assert Target("llvm -mcpu=native") == Target("llvm") == Target(Target("llvm"))
    assert Target("llvm -opt-level=1").create_target_machine() is not (
        Target("llvm").create_target_machine()
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cuda", "unsupported kind 'cuda'"),
        ("llvm -mcpu", "got '-mcpu'"),
        ("llvm mcpu=x", "got 'mcpu=x'"),
        ("llvm -mfoo=1", "unknown option -mfoo"),
        ("llvm -mattr=avx2", "got 'avx2'"),
        ("llvm -opt-level=4", "got '4'"),
        ("llvm -mcpu=a -mcpu=b", "-mcpu given twice"),
        ("llvm -mtriple=nosuch-arch-linux", "-mtriple=nosuch-arch-linux"),
        ({"kind": "llvm", "cpu": "x"}, "unknown key 'cpu'"),
        ({"kind": "c"}, "unsupported kind 'c'"),
    ],
)
def test_bad_targets_name_the_bad_part(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Target(spec)


def test_the_listed_target_kinds_are_the_backend_modules():
    """`kinds()` is a list (tools read it without importing LLVM); each
    module of `ember.backends` that defines a `BACKEND` is in it, and only
    those."""
    import pkgutil
    from importlib import import_module

    import ember.backends as package
    from ember.backends import Backend, backend, kinds

    found = []
    for info in pkgutil.iter_modules(package.__path__):
        module = import_module(f"ember.backends.{info.name}")
        if isinstance(getattr(module, "BACKEND", None), Backend):
            found.append(info.name)
    assert kinds() == tuple(sorted(found))
    assert all(backend(kind).kind == kind for kind in kinds())
