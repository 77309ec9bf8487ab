"""The `vulkan` kind: kernels as GLSL 4.50 compute shaders, compiled to SPIR-V
by glslangValidator, and a launch plan (`backends/source/gpu.py`) that
`ember.runtime.vulkan_api` runs (Mesa's lavapipe runs it on a CPU).

GLSL has no kernels with parameters: each kernel is one shader whose entry is
`main`, its buffers are storage buffers bound in parameter order, its block the
shader's `local_size`, its indices `gl_WorkGroupID` and `gl_LocalInvocationID`,
its shared arrays globals of the shader. The plan's source is the common head
(version, extensions, helpers) followed by the kernels, each opened by a
`// kernel <name>` line; its binary is JSON mapping each kernel to the base64 of
its SPIR-V (the head and that kernel, compiled apart).

    // kernel vecadd_kernel0
    layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
    layout(std430, binding = 0) restrict readonly buffer ember_A { float A[]; };
    ...
    void main() {
      int i_outer = int(gl_WorkGroupID.x);
"""

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
from typing import ClassVar

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation

from ember.backends.source.faces import MATH_FUNCTIONS, Face, bits, is_float
from ember.backends.source.gpu_model import GPUBackend
from ember.backends.source.scalars import SourceError

GLSLANG = "glslangValidator"
"""The GLSL compiler (Debian: glslang-tools)."""

KERNEL_MARK = "// kernel "
"""The line that opens each kernel's shader in the plan's source."""

# C99 name -> GLSL's, where GLSL has the function under another name
_RENAMED = {"fabs": "abs", "rint": "roundEven", "atan2": "atan", "fmax": "max"}
_RENAMED |= {"fmin": "min"}
# C99 functions GLSL lacks (or defines otherwise): helpers, by type
_MISSING = {"expm1", "log1p", "log10", "cbrt", "erf", "erfc", "copysign", "fmod"}
_MISSING |= {"round"}  # GLSL's round may round halves either way
# what GLSL computes in double; its exp, log, pow, sin, ... take float only
_DOUBLE = {"sqrt", "fabs", "floor", "ceil", "round", "rint", "trunc", "fmax", "fmin"}
_DOUBLE |= {"fma", "copysign", "fmod"}

_GLSL_WORDS = """attribute uniform varying buffer shared coherent readonly writeonly
    layout centroid flat smooth noperspective patch sample subroutine in out inout
    invariant precise discard lowp mediump highp precision input output common
    partition active filter superp fixed asm class namespace using template this
    resource noinline public external interface cast sizeof half fvec2 fvec3 fvec4
    sampler1D sampler2D sampler3D image1D image2D image3D atomic_uint struct
    vec2 vec3 vec4 ivec2 ivec3 ivec4 uvec2 uvec3 uvec4 bvec2 bvec3 bvec4 dvec2
    dvec3 dvec4 mat2 mat3 mat4 dmat2 dmat3 dmat4 uint int8_t int16_t int32_t
    int64_t uint8_t uint16_t uint32_t uint64_t float16_t float32_t float64_t
    barrier memoryBarrierShared mod fract roundEven floatBitsToInt intBitsToFloat
    floatBitsToUint uintBitsToFloat packHalf2x16 unpackHalf2x16 packDouble2x32
    unpackDouble2x32 doubleBitsToInt64 int64BitsToDouble length distance"""


class GLSLFace(Face):
    """GLSL 4.50 compute shaders for Vulkan: storage buffers, `shared`
    globals, constructor casts, overloaded math, float16 held in floats."""

    name = "vulkan"
    restrict = "restrict"
    shared_space = "shared"
    function_qualifier = ""
    helper_qualifier = ""
    kernel_qualifier = "void"
    # Vulkan's barrier() orders workgroup memory too; the explicit fence says so
    barrier = "memoryBarrierShared(); barrier();"
    overloaded_math = True
    native_half = False  # halves stored as 16 bits, computed as floats
    half_storage = "uint16_t"
    long_suffix = "L"
    reserved_words = frozenset(_GLSL_WORDS.split())

    def prelude(self, features: set[str]) -> list[str]:
        return [
            "#version 450",
            "#extension GL_EXT_shader_explicit_arithmetic_types : require",
            "#extension GL_EXT_shader_8bit_storage : require",
            "#extension GL_EXT_shader_16bit_storage : require",
            "bool signbit(float x) { return floatBitsToInt(x) < 0; }",
            "bool signbit(double x) { return int(unpackDouble2x32(x).y) < 0; }",
        ]

    def int_type(self, width: int, unsigned: bool = False) -> str:
        if width == 1:
            return "bool"
        if width == 32:
            return "uint" if unsigned else "int"
        return f"{'u' if unsigned else ''}int{width}_t"

    def float_type(self, width: int) -> str:
        return {16: "float16_t", 32: "float", 64: "double"}[width]

    def cast(self, type_name: str, expr: str) -> str:
        return f"{type_name}({expr})"

    def half_load(self, buffer: str, index: str) -> str:
        return f"unpackHalf2x16(uint({buffer}[{index}])).x"

    def half_store(self, buffer: str, index: str, value: str) -> str:
        packed = f"packHalf2x16(vec2({value}, 0.0))"
        return f"{buffer}[{index}] = uint16_t({packed});"

    def half_helpers(self) -> dict[str, list[str]]:
        return {
            "ember_round_f16": [
                "float ember_round_f16(float x) {",
                "  return unpackHalf2x16(packHalf2x16(vec2(x, 0.0))).x;",
                "}",
            ]
        }

    def math_function(self, op_name: str, t: Attribute) -> str:
        base = MATH_FUNCTIONS[op_name][0]
        if base in _MISSING:
            return f"ember_{base}_f{bits(t)}"
        return _RENAMED.get(base, base)

    def math_helpers(self) -> dict[str, list[str]]:
        return _HELPERS

    def float_literal(self, value: float, t: Attribute) -> str:
        if bits(t) != 64 or value != value or value in (float("inf"), -float("inf")):
            return super().float_literal(value, t)
        text = repr(value)
        text += "" if "e" in text or "." in text else ".0"
        return f"({text}lf)" if text.startswith("-") else f"{text}lf"

    def special_float(self, which: str, width: int) -> str:
        if width == 64:
            high = "0x7ff00000u" if which == "inf" else "0x7ff80000u"
            return f"packDouble2x32(uvec2(0u, {high}))"
        return f"uintBitsToFloat({'0x7f800000u' if which == 'inf' else '0x7fc00000u'})"

    def bitcast(self, expr: str, src: Attribute, dst: Attribute) -> str | None:
        names = {32: ("float", "int"), 64: ("double", "int64")}
        width = bits(src)
        if is_float(src) == is_float(dst) or width != bits(dst) or width not in names:
            raise SourceError(f"vulkan source: no bit cast from {src} to {dst}")
        f, i = names[width]
        a, b = (f, i) if is_float(src) else (i, f)
        return f"{a}BitsTo{b[0].upper()}{b[1:]}({expr})"

    def pointer_param(self, t: Attribute, name: str, const: bool) -> str:
        access = "readonly " if const else ""
        elem = self.element_type(t)
        return f"restrict {access}buffer ember_{name} {{ {elem} {name}[]; }}"

    def loop_pragma(self, kind: str, extent: int | None) -> list[str]:
        return []

    def thread_index(self, tag: str) -> str:
        base, _, axis = tag.partition(".")
        builtin = {"blockIdx": "gl_WorkGroupID", "threadIdx": "gl_LocalInvocationID"}
        return self.cast(self.index_type(), f"{builtin[base]}.{axis}")

    def refuse(self, op: Operation) -> str | None:
        if op.name in MATH_FUNCTIONS and bits(op.results[0].type) == 64:
            if MATH_FUNCTIONS[op.name][0] not in _DOUBLE:
                return (
                    f"vulkan source: '{op.name}' on f64: GLSL computes it in "
                    "float only; compute in f32 (cast) or build for 'cuda' or 'opencl'"
                )
        for value in (*op.operands, *op.results):
            t = value.type
            if isinstance(t, MemRefType) and bits(t.element_type) == 1:
                return (
                    f"vulkan source: '{op.name}' uses a buffer of i1 (bool), which "
                    "a Vulkan storage buffer cannot hold; store it as i8 (cast)"
                )
        return None

    def kernel_head(self, name: str, params: list[str], block: list[int]) -> str:
        sizes = ", ".join(
            f"local_size_{a} = {d}" for a, d in zip("xyz", block, strict=True)
        )
        return "\n".join(
            [
                f"{KERNEL_MARK}{name}",
                f"layout({sizes}) in;",
                *(f"layout(std430, binding = {i}) {p};" for i, p in enumerate(params)),
                "void main() {",
            ]
        )

    def open_kernel(self, head: str, shared: list[str]) -> str:
        before, _, opening = head.rpartition("\n")
        return "\n".join([before, *shared, opening])


def _helper(base: str, width: int, body: list[str]) -> tuple[str, list[str]]:
    """`ember_<base>_f<width>` over float or double: `$T` in `body` is the
    type, `$L` the suffix of its literals."""
    t, suffix = {32: ("float", ""), 64: ("double", "lf")}[width]
    params = ["x", "y"] if base in ("copysign", "fmod") else ["x"]
    name = f"ember_{base}_f{width}"
    head = f"{t} {name}({', '.join(f'{t} {p}' for p in params)}) {{"
    lines = [line.replace("$T", t).replace("$L", suffix) for line in body]
    return name, [head, *lines, "}"]


# erfc(|x|) as r: Numerical Recipes' Chebyshev fit, relative error < 1.2e-7
_ERFC_ABS = [
    "  $T z = abs(x);",
    "  $T t = 1.0$L / (1.0$L + 0.5$L * z);",
    "  $T p = -0.82215223$L + t * 0.17087277$L;",
    *(
        f"  p = {c}$L + t * p;"
        for c in (
            "1.48851587",
            "-1.13520398",
            "0.27886807",
            "-0.18628806",
            "0.09678418",
            "0.37409196",
            "1.00002368",
        )
    ),  # fmt: skip
    "  $T r = t * exp(-z * z - 1.26551223$L + t * p);",
]
_BODIES = {
    "expm1": [
        "  $T u = exp(x);  /* Kahan: no cancellation near 0 */",
        "  if (u == 1.0$L) return x;",
        "  if (u - 1.0$L == -1.0$L || isinf(u)) return u - 1.0$L;",
        "  return (u - 1.0$L) * x / log(u);",
    ],
    "log1p": [
        "  $T u = 1.0$L + x;  /* Goldberg: keeps the low bits of x */",
        "  if (u == 1.0$L) return x;",
        "  return isinf(u) ? log(u) : log(u) * x / (u - 1.0$L);",
    ],
    "log10": ["  return log(x) * 0.43429448190325182$L;"],
    "cbrt": [
        "  if (x == 0.0$L || isinf(x) || isnan(x)) return x;",
        "  $T y = sign(x) * pow(abs(x), 1.0$L / 3.0$L);",
        "  return y - (y * y * y - x) / (3.0$L * y * y);  /* one Newton step */",
    ],
    "copysign": ["  return signbit(x) != signbit(y) ? -x : x;"],
    "fmod": ["  return x - y * trunc(x / y);  /* C's fmod: the sign of x */"],
    "round": [
        "  $T r = trunc(x);  /* C's round: halves away from zero */",
        "  return abs(x - r) >= 0.5$L ? r + sign(x) : r;",
    ],
    "erfc": [*_ERFC_ABS, "  return x >= 0.0$L ? r : 2.0$L - r;"],
    "erf": [
        "  if (abs(x) < 0.5$L) {  /* Taylor series: 1 - erfc(x) cancels near 0 */",
        "    $T x2 = x * x;",
        "    $T s = 1.0$L / 216.0$L - x2 / 1320.0$L;",
        "    s = 1.0$L / 42.0$L - x2 * s;",
        "    s = 1.0$L / 10.0$L - x2 * s;",
        "    s = 1.0$L / 3.0$L - x2 * s;",
        "    return 1.1283791670955126$L * x * (1.0$L - x2 * s);",
        "  }",
        *_ERFC_ABS,
        "  return x >= 0.0$L ? 1.0$L - r : r - 1.0$L;",
    ],
}
_HELPERS = dict(
    _helper(base, width, body)
    for base, body in _BODIES.items()
    for width in ((32, 64) if base in _DOUBLE else (32,))
)


class VulkanBackend(GPUBackend):
    kind = "vulkan"
    summary = "GLSL compute shaders, SPIR-V by glslangValidator, and a launch plan"
    device = "vulkan"
    # lavapipe's limits, and Vulkan's guaranteed minimum of shared memory
    options: ClassVar[dict[str, str]] = {
        "max_num_threads": "256",
        "max_shared_memory_per_block": "16384",
        "thread_warp_size": "1",
    }
    grid_limits = ((65535, 65535, 65535), (1024, 1024, 64))
    source_suffix = "comp"
    binary_format = "spirv"

    def face(self) -> GLSLFace:
        return GLSLFace()

    def binary(self, source: str, target) -> str:
        """JSON of {kernel: base64 SPIR-V}, each kernel's shader compiled by
        glslangValidator (the common head and that kernel)."""
        head, kernels = split_shaders(source)
        return json.dumps(
            {name: compile_spirv(head + text, name) for name, text in kernels.items()}
        )


def split_shaders(source: str) -> tuple[str, dict[str, str]]:
    """The plan's source as its common head and each kernel's text, by name."""
    parts = re.split(f"^(?={re.escape(KERNEL_MARK)})", source, flags=re.M)
    kernels = {p.split("\n", 1)[0][len(KERNEL_MARK) :]: p for p in parts[1:]}
    return parts[0], kernels


def compile_spirv(shader: str, name: str) -> str:
    """The base64 SPIR-V of one compute shader.

    Raises:
        SourceError: glslangValidator is missing or rejects the shader (its
            messages quoted).
    """
    tool = shutil.which(GLSLANG)
    if tool is None:
        raise SourceError(
            f"vulkan: {GLSLANG} is not on PATH; install it (Debian: glslang-tools)"
        )
    with tempfile.TemporaryDirectory(prefix="ember-vulkan-") as folder:
        src, out = os.path.join(folder, "k.comp"), os.path.join(folder, "k.spv")
        with open(src, "w", encoding="utf-8") as f:
            f.write(shader)
        done = subprocess.run(
            [tool, "-V", "--target-env", "vulkan1.2", "-o", out, src],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SourceError(
                f"vulkan: {GLSLANG} rejected kernel {name}:\n"
                f"{(done.stdout + done.stderr).strip()}"
            )
        with open(out, "rb") as f:
            return base64.b64encode(f.read()).decode()


BACKEND = VulkanBackend()
