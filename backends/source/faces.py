"""What differs between C99, OpenCL C and CUDA C, for the one printer.

A face names the types, qualifiers, math functions, literals and statements
that the dialects spell differently; the printer (`printer.py`) asks it and
never writes a dialect's word itself. `CFace` is the face of `c` (plain
functions), `OpenCLFace` and `CUDAFace` those of the kernels `gpu.py` prints.
"""

import struct

from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute, Operation

from ember.runtime.errors import EmberValueError

# math dialect op -> (C99 name for double, arity); float adds C99's `f` suffix
MATH_FUNCTIONS: dict[str, tuple[str, int]] = {
    "math.exp": ("exp", 1),
    "math.exp2": ("exp2", 1),
    "math.expm1": ("expm1", 1),
    "math.log": ("log", 1),
    "math.log2": ("log2", 1),
    "math.log10": ("log10", 1),
    "math.log1p": ("log1p", 1),
    "math.sqrt": ("sqrt", 1),
    "math.cbrt": ("cbrt", 1),
    "math.tanh": ("tanh", 1),
    "math.sinh": ("sinh", 1),
    "math.cosh": ("cosh", 1),
    "math.sin": ("sin", 1),
    "math.cos": ("cos", 1),
    "math.tan": ("tan", 1),
    "math.asin": ("asin", 1),
    "math.acos": ("acos", 1),
    "math.atan": ("atan", 1),
    "math.asinh": ("asinh", 1),
    "math.acosh": ("acosh", 1),
    "math.atanh": ("atanh", 1),
    "math.erf": ("erf", 1),
    "math.erfc": ("erfc", 1),
    "math.absf": ("fabs", 1),
    "math.floor": ("floor", 1),
    "math.ceil": ("ceil", 1),
    "math.round": ("round", 1),
    "math.roundeven": ("rint", 1),
    "math.trunc": ("trunc", 1),
    "math.powf": ("pow", 2),
    "math.atan2": ("atan2", 2),
    "math.copysign": ("copysign", 2),
    "arith.maxnumf": ("fmax", 2),
    "arith.minnumf": ("fmin", 2),
    "arith.remf": ("fmod", 2),
    "math.fma": ("fma", 3),
}


ALLOC_FAILED = -101
"""What an impl returns when an intermediate buffer cannot be allocated (the
runtime's EMBER_ERR_ALLOC)."""


def bits(t: Attribute) -> int:
    """The width of a scalar type; `index` is 64 bits everywhere."""
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, Float16Type):
        return 16
    if isinstance(t, Float32Type):
        return 32
    if isinstance(t, Float64Type):
        return 64
    raise EmberValueError(f"C-family source: unsupported type {t}")


def is_float(t: Attribute) -> bool:
    return isinstance(t, Float16Type | Float32Type | Float64Type)


class Face:
    """C99: the base every face changes only where its dialect differs."""

    name = "c"
    restrict = "restrict"
    # qualifier of pointer parameters, and of `shared`-scope arrays
    global_space = ""
    shared_space = ""
    function_qualifier = "static"
    helper_qualifier = "static inline"
    kernel_qualifier = ""
    block_index_qualifier = ""
    barrier = ""
    # whether math functions are overloaded (OpenCL's `exp(float)`)
    overloaded_math = False
    # float16 arithmetic in the language itself (C's _Float16); else values are
    # floats rounded to float16 after each op, buffers hold the 16 bits
    native_half = True

    def prelude(self, features: set[str]) -> list[str]:
        """Lines that open a translation unit using `features` ("f16", "f64",
        "malloc")."""
        lines = ["#include <stdbool.h>", "#include <stdint.h>", "#include <math.h>"]
        return lines + (["#include <stdlib.h>"] if "malloc" in features else [])

    def int_type(self, width: int, unsigned: bool = False) -> str:
        if width == 1:
            return "bool"
        return f"{'u' if unsigned else ''}int{width}_t"

    def float_type(self, width: int) -> str:
        if width == 16:
            return "_Float16"
        return {32: "float", 64: "double"}[width]

    index_bits = 64
    """The width of `index` values (loop counters, buffer offsets): 64, or 32
    where every buffer is small enough (GPU kernels: 64-bit integer arithmetic
    costs several instructions there; a 32-bit microcontroller likewise)."""

    def index_type(self) -> str:
        """The C type of `index` values."""
        return self.int_type(self.index_bits)

    def ctype(self, t: Attribute, unsigned: bool = False) -> str:
        """The C type of a scalar of type `t` in a variable."""
        if isinstance(t, IndexType) and not unsigned:
            return self.index_type()
        if is_float(t) and bits(t) == 16 and not self.native_half:
            return "float"
        if is_float(t):
            return self.float_type(bits(t))
        return self.int_type(bits(t), unsigned)

    def element_type(self, t: Attribute) -> str:
        """The C type of a buffer's element."""
        if is_float(t) and bits(t) == 16 and not self.native_half:
            return self.half_storage
        return self.ctype(t)

    half_storage = "uint16_t"

    def half_load(self, buffer: str, index: str) -> str:
        """A float16 element as a float (faces without native half)."""
        return f"ember_h2f({buffer}[{index}])"

    def half_store(self, buffer: str, index: str, value: str) -> str:
        """The statement storing float `value` as float16."""
        return f"{buffer}[{index}] = ember_f2h({value});"

    def half_helpers(self) -> dict[str, list[str]]:
        """Helper functions (name: lines, without the qualifier) that emulated
        float16 uses: `ember_round_f16` at least."""
        return {}

    def math_function(self, op_name: str, t: Attribute) -> str:
        base = MATH_FUNCTIONS[op_name][0]
        width = bits(t)
        if self.overloaded_math or width == 64:
            return base
        return base + "f"

    def math_helpers(self) -> dict[str, list[str]]:
        """Helper functions (name: lines, without the qualifier) that
        `math_function` names where the language has no such function; one
        joins the unit when first called."""
        return {}

    def float_literal(self, value: float, t: Attribute) -> str:
        width = bits(t)
        if value != value:
            return self.special_float("nan", width)
        if value in (float("inf"), float("-inf")):
            text = self.special_float("inf", width)
            return text if value > 0 else f"(-{text})"
        if width == 16:
            value = struct.unpack("e", struct.pack("e", value))[0]
            text = repr(value)
        elif width == 32:
            value = struct.unpack("f", struct.pack("f", value))[0]
            text = repr(value)
            exact = struct.unpack("f", struct.pack("f", float(text)))[0] == value
            text = text if exact else value.hex()
        else:
            text = repr(value)
        if "e" not in text and "." not in text and "x" not in text:
            text += ".0"
        suffix = "f" if width == 32 else ""
        if width == 16 and not self.native_half:
            return f"({text}f)" if text.startswith("-") else text + "f"
        if width == 16:
            return f"(({self.float_type(16)}){text}f)"
        return f"({text}{suffix})" if text.startswith("-") else text + suffix

    def special_float(self, which: str, width: int) -> str:
        name = "INFINITY" if which == "inf" else "NAN"
        return name if width == 32 else f"(({self.float_type(width)}){name})"

    def bitcast(self, expr: str, src: Attribute, dst: Attribute) -> str | None:
        """A bit cast in the dialect's own spelling, or None for the union helper."""
        return None

    def pointer_param(self, t: Attribute, name: str, const: bool) -> str:
        space = f"{self.global_space} " if self.global_space else ""
        qual = "const " if const else ""
        return f"{space}{qual}{self.element_type(t)}* {self.restrict} {name}"

    def loop_pragma(self, kind: str, extent: int | None) -> list[str]:
        """Lines before a loop of `kind`."""
        if kind == "unrolled":
            return (
                ["#pragma GCC unroll 64"]
                if extent is None
                else [f"#pragma GCC unroll {min(extent, 64)}"]
            )
        return []

    def alloc_global(
        self, name: str, elem: str, count: int, live: list[str]
    ) -> list[str]:
        """Lines that allocate a `global`-scope buffer `name` of `count` `elem`s;
        `live` are the global buffers allocated before it and still live (to
        free when this allocation fails). The C face uses malloc/free."""
        cleanup = " ".join(f"free({b});" for b in reversed(live))
        return [
            f"{elem}* {name} = ({elem}*)malloc(sizeof({elem}) * {count});",
            f"if ({name} == NULL) {{ {cleanup}{' ' if cleanup else ''}"
            f"return {ALLOC_FAILED}; }}",
        ]

    def free_global(self, name: str) -> list[str]:
        return [f"free({name});"]

    def thread_index(self, tag: str) -> str:
        raise EmberValueError(f"{self.name}: no thread index {tag}")

    long_suffix = "LL"
    """The suffix of a 64-bit integer literal."""

    def cast(self, type_name: str, expr: str) -> str:
        """`expr` (a primary or parenthesized expression) converted to
        `type_name`: a C cast, or a constructor where the language has no casts."""
        return f"({type_name}){expr}"

    reserved_words: frozenset[str] = frozenset()
    """Words of the language, beyond C's, that no variable may be named."""

    def refuse(self, op: Operation) -> str | None:
        """Why the language cannot express `op` (a message naming it), or None;
        the GPU plan asks it of every op before printing."""
        return None

    def kernel_head(self, name: str, params: list[str], block: list[int]) -> str:
        """The text opening kernel `name`, up to its `{`: `params` are its
        pointer parameters, `block` its threads per block along x, y, z."""
        return f"{self.kernel_qualifier}\n{name}({', '.join(params)}) {{"

    def open_kernel(self, head: str, shared: list[str]) -> str:
        """A kernel's `head` with the declarations of its `shared` arrays:
        at the top of its body (GLSL declares them at file scope instead)."""
        return "\n".join([head, *(f"  {line}" for line in shared)])


class CFace(Face):
    """C99 for `c`: plain functions, malloc'd intermediates."""


class OpenCLFace(Face):
    """OpenCL C 1.2: `__kernel`, `__global` pointers, `__local` shared arrays,
    overloaded math, `as_T` bit casts."""

    name = "opencl"
    global_space = "__global"
    shared_space = "__local"
    function_qualifier = ""
    helper_qualifier = "static inline"
    kernel_qualifier = "__kernel void"
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    overloaded_math = True
    _IDS = {"blockIdx": "get_group_id", "threadIdx": "get_local_id"}

    def prelude(self, features: set[str]) -> list[str]:
        return ["#pragma OPENCL EXTENSION cl_khr_fp64: enable"] * ("f64" in features)

    def int_type(self, width: int, unsigned: bool = False) -> str:
        if width == 1:
            return "bool"
        name = {8: "char", 16: "short", 32: "int", 64: "long"}[width]
        return f"u{name}" if unsigned else name

    def float_type(self, width: int) -> str:
        return {16: "half", 32: "float", 64: "double"}[width]

    native_half = False  # cl_khr_fp16 is optional (PoCL's CPU device lacks it)
    # PoCL 3.1 (Debian 12) miscompiles kernels that use a block index after a
    # barrier in a loop, under a guard (the shared-memory matmul with tiles that
    # do not divide: blocks but the first write nothing); a volatile block index
    # avoids it, at the cost of a reload per use. PoCL 5 and NVIDIA are right
    # without it.
    block_index_qualifier = "volatile "
    half_storage = "half"  # readable by vload_half / vstore_half without it

    def element_type(self, t: Attribute) -> str:
        # OpenCL forbids bool in buffers; a byte holds 0 or 1 as numpy's bool
        return "uchar" if bits(t) == 1 else super().element_type(t)

    def half_load(self, buffer: str, index: str) -> str:
        return f"vload_half({index}, {buffer})"

    def half_store(self, buffer: str, index: str, value: str) -> str:
        return f"vstore_half_rte({value}, {index}, {buffer});"

    def half_helpers(self) -> dict[str, list[str]]:
        return {"ember_round_f16": _SOFT_ROUND_F16}

    def special_float(self, which: str, width: int) -> str:
        name = "INFINITY" if which == "inf" else "NAN"
        return name if width == 32 else f"(({self.float_type(width)}){name})"

    def bitcast(self, expr: str, src: Attribute, dst: Attribute) -> str | None:
        return f"as_{self.ctype(dst)}({expr})"

    def loop_pragma(self, kind: str, extent: int | None) -> list[str]:
        return ["#pragma unroll"] if kind == "unrolled" else []

    def thread_index(self, tag: str) -> str:
        base, _, dim = tag.partition(".")
        return f"({self.index_type()}){self._IDS[base]}({'xyz'.index(dim)})"

    def kernel_head(self, name: str, params: list[str], block: list[int]) -> str:
        sizes = ", ".join(str(d) for d in block)
        head = f"{self.kernel_qualifier} __attribute__((reqd_work_group_size({sizes})))"
        return f"{head}\n{name}({', '.join(params)}) {{"


class CUDAFace(Face):
    """CUDA C for NVRTC: `extern "C" __global__` kernels, `__shared__` arrays,
    the C99 math names (NVRTC has no standard headers: the prelude types)."""

    name = "cuda"
    restrict = "__restrict__"
    shared_space = "__shared__"
    function_qualifier = ""
    helper_qualifier = "static __device__ __forceinline__"
    kernel_qualifier = 'extern "C" __global__ void'
    barrier = "__syncthreads();"

    def prelude(self, features: set[str]) -> list[str]:
        return [
            "typedef signed char int8_t;",
            "typedef short int16_t;",
            "typedef int int32_t;",
            "typedef long long int64_t;",
            "typedef unsigned char uint8_t;",
            "typedef unsigned short uint16_t;",
            "typedef unsigned int uint32_t;",
            "typedef unsigned long long uint64_t;",
        ]

    native_half = False  # NVRTC has no cuda_fp16.h: PTX's cvt converts
    half_storage = "unsigned short"

    def half_helpers(self) -> dict[str, list[str]]:
        return {
            "ember_h2f": [
                "float ember_h2f(unsigned short h) {",
                "  float f;",
                '  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));',
                "  return f;",
                "}",
            ],
            "ember_f2h": [
                "unsigned short ember_f2h(float f) {",
                "  unsigned short h;",
                '  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));',
                "  return h;",
                "}",
            ],
            "ember_round_f16": [
                "float ember_round_f16(float x) {",
                "  return ember_h2f(ember_f2h(x));",
                "}",
            ],
        }

    def special_float(self, which: str, width: int) -> str:
        f32 = (
            "__int_as_float(0x7f800000)"
            if which == "inf"
            else ("__int_as_float(0x7fc00000)")
        )
        if width == 64:
            return (
                "__longlong_as_double(0x7ff0000000000000LL)"
                if which == "inf"
                else "__longlong_as_double(0x7ff8000000000000LL)"
            )
        return f32

    def bitcast(self, expr: str, src: Attribute, dst: Attribute) -> str | None:
        names = {
            ("f", 32): "float",
            ("i", 32): "int",
            ("f", 64): "double",
            ("i", 64): "longlong",
        }
        a = names.get(("f" if is_float(src) else "i", bits(src)))
        b = names.get(("f" if is_float(dst) else "i", bits(dst)))
        if a is None or b is None:
            return None
        return f"__{a}_as_{b}({expr})"

    def loop_pragma(self, kind: str, extent: int | None) -> list[str]:
        return ["#pragma unroll"] if kind == "unrolled" else []

    def thread_index(self, tag: str) -> str:
        return f"({self.index_type()}){tag}"

    def kernel_head(self, name: str, params: list[str], block: list[int]) -> str:
        threads = block[0] * block[1] * block[2]
        head = f"{self.kernel_qualifier} __launch_bounds__({threads})"
        return f"{head}\n{name}({', '.join(params)}) {{"


# float -> nearest float16 (ties to even) -> float, for OpenCL without
# cl_khr_fp16: overflow to infinity from 65520, subnormals on the 2^-24 grid
_SOFT_ROUND_F16 = [
    "float ember_round_f16(float x) {",
    "  uint bits = as_uint(x);",
    "  uint sign = bits & 0x80000000u;",
    "  uint mag = bits & 0x7fffffffu;",
    "  if (mag >= 0x7f800000u) return x;",
    "  if (mag >= 0x477ff000u) return as_float(sign | 0x7f800000u);",
    "  if (mag < 0x38800000u) {",
    "    float q = 5.9604644775390625e-8f;",
    "    return copysign(rint(fabs(x) / q) * q, x);",
    "  }",
    "  mag = (mag + 0x0fffu + ((mag >> 13) & 1u)) & ~0x1fffu;",
    "  return as_float(sign | mag);",
    "}",
]
