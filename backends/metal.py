"""The `metal` kind: kernels in the Metal Shading Language and a launch plan
(`backends/source/gpu.py`), compiled by the Metal driver when loaded.

MSL is C++ with address spaces: buffers are `device` pointers bound by
`[[buffer(i)]]`, the block and thread indices are kernel parameters, shared
memory is `threadgroup`. Metal has no 64-bit float, so IR computing in f64 is
refused naming the op. ember has no Metal runtime: the module gives its source
(`get_source("metal")`), and calling it fails asking for a Metal device.

    kernel void vecadd_kernel0(device const float* A [[buffer(0)]], ...,
        uint3 blockIdx [[threadgroup_position_in_grid]],
        uint3 threadIdx [[thread_position_in_threadgroup]]) {
"""

from typing import ClassVar

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation

from ember.backends.source.faces import MATH_FUNCTIONS, Face, bits, is_float
from ember.backends.source.gpu_model import GPUBackend
from ember.backends.source.scalars import SourceError

# math.* with a precise variant in metal::precise (fast math is Metal's default)
_PRECISE = {
    "exp", "exp2", "log", "log2", "log10", "sqrt", "pow", "sin", "cos", "tan",
    "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "asinh", "acosh",
    "atanh",
}  # fmt: skip
# C99 functions MSL lacks: ember_<name> helpers over float
_MISSING = {"expm1", "log1p", "cbrt", "erf", "erfc"}


class MetalFace(Face):
    """MSL: `kernel void` with attributed parameters, `threadgroup` arrays,
    overloaded math in `metal::`, native `half`, no `double`."""

    name = "metal"
    restrict = ""
    global_space = "device"
    shared_space = "threadgroup"
    function_qualifier = ""
    helper_qualifier = "static inline"
    kernel_qualifier = "kernel void"
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);"
    overloaded_math = True
    native_half = True
    reserved_words = frozenset(
        """device thread threadgroup threadgroup_imageblock constant metal kernel
        vertex fragment using namespace template typename class struct new delete
        this operator private public protected virtual friend explicit mutable
        uint3 as_type threadgroup_barrier mem_flags isnan isinf fract""".split()
    )

    def prelude(self, features: set[str]) -> list[str]:
        return ["#include <metal_stdlib>", "using namespace metal;"]

    def int_type(self, width: int, unsigned: bool = False) -> str:
        if width == 1:
            return "bool"
        name = {8: "char", 16: "short", 32: "int", 64: "long"}[width]
        return f"u{name}" if unsigned else name

    def float_type(self, width: int) -> str:
        if width == 64:
            raise SourceError(_NO_DOUBLE)
        return {16: "half", 32: "float"}[width]

    def element_type(self, t: Attribute) -> str:
        # a byte holds 0 or 1 as numpy's bool does
        return "uchar" if bits(t) == 1 else super().element_type(t)

    def pointer_param(self, t: Attribute, name: str, const: bool) -> str:
        qual = "const " if const else ""
        return f"device {qual}{self.element_type(t)}* {name}"

    def math_function(self, op_name: str, t: Attribute) -> str:
        base = MATH_FUNCTIONS[op_name][0]
        if base in _MISSING:
            return f"ember_{base}"
        return f"metal::{'precise::' if base in _PRECISE else ''}{base}"

    def math_helpers(self) -> dict[str, list[str]]:
        return _HELPERS

    def bitcast(self, expr: str, src: Attribute, dst: Attribute) -> str | None:
        return f"as_type<{self.ctype(dst)}>({expr})"

    def loop_pragma(self, kind: str, extent: int | None) -> list[str]:
        return ["#pragma unroll"] if kind == "unrolled" else []

    def thread_index(self, tag: str) -> str:
        return f"({self.index_type()}){tag}"

    def refuse(self, op: Operation) -> str | None:
        for value in (*op.operands, *op.results):
            t = value.type
            t = t.element_type if isinstance(t, MemRefType) else t
            if is_float(t) and bits(t) == 64:
                fn = op.parent_op()
                while fn is not None and not isinstance(fn, func.FuncOp):
                    fn = fn.parent_op()
                at = f" in @{fn.sym_name.data}" if fn is not None else ""
                return f"metal source: '{op.name}'{at} uses {t}: {_NO_DOUBLE}"
        return None

    def kernel_head(self, name: str, params: list[str], block: list[int]) -> str:
        buffers = [f"{p} [[buffer({i})]]" for i, p in enumerate(params)]
        indices = [
            "uint3 blockIdx [[threadgroup_position_in_grid]]",
            "uint3 threadIdx [[thread_position_in_threadgroup]]",
        ]
        return f"{self.kernel_qualifier}\n{name}({', '.join(buffers + indices)}) {{"


_NO_DOUBLE = (
    "Metal has no 64-bit float (double); compute in float32 (cast the inputs) "
    "or build for 'cuda' or 'opencl'"
)

_PRECISE_EXP = "metal::precise::exp"
_PRECISE_LOG = "metal::precise::log"
# r = erfc(|x|): Numerical Recipes' Chebyshev fit, relative error < 1.2e-7
_ERFC_ABS = [
    "  float z = metal::fabs(x);",
    "  float t = 1.0f / (1.0f + 0.5f * z);",
    "  float p = -0.82215223f + t * 0.17087277f;",
    *(
        f"  p = {c} + t * p;"
        for c in (
            "1.48851587f",
            "-1.13520398f",
            "0.27886807f",
            "-0.18628806f",
            "0.09678418f",
            "0.37409196f",
            "1.00002368f",
        )
    ),  # fmt: skip
    f"  float r = t * {_PRECISE_EXP}(-z * z - 1.26551223f + t * p);",
]
# float only: MSL widens half math to float (`ScalarPrinter.math`)
_HELPERS = {
    "ember_expm1": [
        "float ember_expm1(float x) {",
        "  /* Kahan: exp(x) - 1 without cancellation near 0 */",
        f"  float u = {_PRECISE_EXP}(x);",
        "  if (u == 1.0f) return x;",
        "  if (u - 1.0f == -1.0f || isinf(u)) return u - 1.0f;",
        f"  return (u - 1.0f) * x / {_PRECISE_LOG}(u);",
        "}",
    ],
    "ember_log1p": [
        "float ember_log1p(float x) {",
        "  /* Goldberg: log(1 + x) without losing x's low bits */",
        "  float u = 1.0f + x;",
        "  if (u == 1.0f) return x;",
        f"  float l = {_PRECISE_LOG}(u);",
        "  return isinf(u) ? l : l * x / (u - 1.0f);",
        "}",
    ],
    "ember_cbrt": [
        "float ember_cbrt(float x) {",
        "  if (x == 0.0f || isinf(x) || isnan(x)) return x;",
        "  float y = metal::copysign(metal::precise::pow(metal::fabs(x), "
        "1.0f / 3.0f), x);",
        "  return y - (y * y * y - x) / (3.0f * y * y);  /* one Newton step */",
        "}",
    ],
    "ember_erfc": [
        "float ember_erfc(float x) {",
        *_ERFC_ABS,
        "  return x >= 0.0f ? r : 2.0f - r;",
        "}",
    ],
    "ember_erf": [
        "float ember_erf(float x) {",
        "  if (metal::fabs(x) < 0.5f) {",
        "    /* Taylor series: 1 - erfc(x) would cancel near 0 */",
        "    float x2 = x * x;",
        "    float s = 1.0f / 216.0f - x2 / 1320.0f;",
        "    s = 1.0f / 42.0f - x2 * s;",
        "    s = 1.0f / 10.0f - x2 * s;",
        "    s = 1.0f / 3.0f - x2 * s;",
        "    return 1.1283791670955126f * x * (1.0f - x2 * s);",
        "  }",
        *_ERFC_ABS,
        "  return x >= 0.0f ? 1.0f - r : r - 1.0f;",
        "}",
    ],
}


class MetalBackend(GPUBackend):
    kind = "metal"
    summary = "Metal Shading Language kernels and a launch plan (source only here)"
    device = "metal"
    options: ClassVar[dict[str, str]] = {
        "max_num_threads": "1024",
        "max_shared_memory_per_block": "32768",
        "thread_warp_size": "32",  # an Apple GPU's SIMD-group
    }
    source_suffix = "metal"

    def face(self) -> MetalFace:
        return MetalFace()


BACKEND = MetalBackend()
