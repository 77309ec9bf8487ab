"""convert-dot-to-llvm: byte dot products on the target's instruction.

`dot.u8i8` on vectors of i32 lanes becomes the widest instruction the module's
target (`ember.target`) has whose width divides the lanes, one call per piece:

- x86 with AVX512-VNNI: `vpdpbusd` on 16 lanes, and on 8 or 4 with AVX512-VL;
  with AVX-VNNI alone, on 8 or 4 lanes (the same LLVM intrinsics, VEX-encoded);
- aarch64 with i8mm: `usdot` on 4 or 2 lanes; with the dot product
  extension alone, `sdot` of the unsigned bytes less 128 (their sign bits
  flipped), plus 128 times the signed bytes' sum (`sdot` with ones).

Elsewhere (a scalar, an odd width, a target without them) the bytes are widened
to i32, multiplied, and each lane's four products added: what the instruction
computes, in the target's plain vector instructions (x86 without VNNI: pmaddwd
pairs).

`dot.bf16` likewise: x86 with AVX512-BF16, `vdpbf16ps` on 16 lanes (8 or 4
with AVX512-VL); aarch64 with the bf16 extension, `bfdot` on 4 or 2 lanes;
elsewhere each word's halves widened to float32 (a mask and a shift) and two
fused multiply-adds, the odd pair's first as the instruction adds them. The
intrinsics are called on i32 (x86) and i8 (aarch64) vectors, which LLVM
upgrades to its bfloat vectors.
"""

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import IntegerType, ModuleOp, VectorType, i32
from xdsl.ir import Attribute, Operation, SSAValue

from ember.backends.llvm.target import Target, module_target
from ember.dialects import dot
from ember.passes.convert_vector_to_llvm import _shuffle
from ember.passes.to_llvm import (
    Builder,
    ConvertToLLVMPass,
    Handler,
    Lowering,
    handlers_for,
)

BYTES = 4
"""Bytes in an i32 lane: the products each lane sums."""


def instructions(target: Target) -> dict[int, tuple[str, str]]:
    """Lanes -> (the intrinsic, the type of its byte operands' lanes: "i32" or
    "i8", or "signed": i8, the instruction signed x signed) of the target's
    byte dot products."""
    if target.arch == "x86_64":
        vnni = target.has_feature("avx512vnni")
        narrow = (vnni and target.has_feature("avx512vl")) or target.has_feature(
            "avxvnni"
        )
        found = {16: ("llvm.x86.avx512.vpdpbusd.512", "i32")} if vnni else {}
        if narrow:
            found[8] = ("llvm.x86.avx512.vpdpbusd.256", "i32")
            found[4] = ("llvm.x86.avx512.vpdpbusd.128", "i32")
        return found
    if target.arch == "aarch64" and target.has_feature("i8mm"):
        return {
            4: ("llvm.aarch64.neon.usdot.v4i32.v16i8", "i8"),
            2: ("llvm.aarch64.neon.usdot.v2i32.v8i8", "i8"),
        }
    if target.arch == "aarch64" and target.has_feature("dotprod"):
        return {
            4: ("llvm.aarch64.neon.sdot.v4i32.v16i8", "signed"),
            2: ("llvm.aarch64.neon.sdot.v2i32.v8i8", "signed"),
        }
    return {}


def bf16_instructions(target: Target) -> dict[int, tuple[str, str]]:
    """Lanes -> (the intrinsic, the type of its word operands' lanes) of the
    target's bfloat16 dot products."""
    if target.arch == "x86_64" and target.has_feature("avx512bf16"):
        found = {16: ("llvm.x86.avx512bf16.dpbf16ps.512", "i32")}
        if target.has_feature("avx512vl"):
            found[8] = ("llvm.x86.avx512bf16.dpbf16ps.256", "i32")
            found[4] = ("llvm.x86.avx512bf16.dpbf16ps.128", "i32")
        return found
    if target.arch == "aarch64" and target.has_feature("bf16"):
        return {
            4: ("llvm.aarch64.neon.bfdot.v4f32.v16i8", "i8"),
            2: ("llvm.aarch64.neon.bfdot.v2f32.v8i8", "i8"),
        }
    return {}


SIGN_BITS = -0x7F7F7F80
"""0x80808080 as an i32: each byte's sign bit, which flipped makes an
unsigned byte u the signed byte u - 128."""

HALF_BYTE_RANGE = 7
"""log2(128): the signed sum's correction, 128 * sum(b), is a shift."""


def _lanes(t: Attribute) -> int:
    return t.get_shape()[0] if isinstance(t, VectorType) else 1


def _pieces(e: Builder, v: SSAValue, width: int) -> list[SSAValue]:
    n = _lanes(v.type)
    if n == width:
        return [v]
    return [_shuffle(e, v, v, list(range(i, i + width))) for i in range(0, n, width)]


def _joined(e: Builder, pieces: list[SSAValue]) -> SSAValue:
    """The pieces' lanes in order, one vector: each piece widened to the
    lanes joined so far (shufflevector takes operands of one type), then
    appended."""
    joined, width = pieces[0], _lanes(pieces[0].type)
    for piece in pieces[1:]:
        have = _lanes(joined.type)
        wide = _shuffle(e, piece, piece, [i % width for i in range(have)])
        joined = _shuffle(e, joined, wide, [*range(have), *range(have, have + width)])
    return joined


def _widened(e: Builder, v: SSAValue, lanes: int, signed: bool) -> SSAValue:
    as_bytes = e.op(llvm.BitcastOp, v, result=VectorType(IntegerType(8), [lanes * 4]))
    cast = llvm.SExtOp if signed else llvm.ZExtOp
    return e.op(cast, as_bytes, result=VectorType(i32, [lanes * 4]))


def _generic(acc: SSAValue, a: SSAValue, b: SSAValue, e: Builder) -> SSAValue:
    """acc + the four products of each lane, on widened bytes."""
    lanes = _lanes(acc.type)
    products = e.op(
        llvm.MulOp, _widened(e, a, lanes, False), _widened(e, b, lanes, True)
    )
    if not isinstance(acc.type, VectorType):
        total = e.intrinsic(
            "llvm.vector.reduce.add", [products], i32, overload=products.type
        )
        return e.op(llvm.AddOp, acc, total)
    total = acc
    for j in range(BYTES):
        part = _shuffle(e, products, products, list(range(j, lanes * BYTES, BYTES)))
        total = e.op(llvm.AddOp, total, part)
    return total


HIGH_HALF = -(1 << 16)
"""0xFFFF0000 as an i32: a word's high bfloat16, in place as a float32."""


def _bf16_generic(acc: SSAValue, a: SSAValue, b: SSAValue, e: Builder) -> SSAValue:
    """acc + each word's odd product, then its even one: the halves widened
    to float32 (exact) and fused multiply-adds (the products are exact, so
    each addition rounds once, as the instruction's)."""
    t = acc.type
    words = a.type
    mask, shift = e.constant(HIGH_HALF, words), e.constant(16, words)

    def half(word: SSAValue, high: bool) -> SSAValue:
        bits = e.op(llvm.AndOp if high else llvm.ShlOp, word, mask if high else shift)
        return e.op(llvm.BitcastOp, bits, result=t)

    total = acc
    for high in (True, False):
        total = e.intrinsic("llvm.fma", [half(a, high), half(b, high), total], t)
    return total


def _splat(v: SSAValue) -> bool:
    """Whether `v` is one value in every lane (a `vector.broadcast`)."""
    return isinstance(v.owner, vector.BroadcastOp)


def _lowering(
    found: dict[int, tuple[str, str]],
    generic: Callable[[SSAValue, SSAValue, SSAValue, Builder], SSAValue],
    symmetric: bool = False,
) -> Lowering:
    """Lower a dot product on the widest of the `found` instructions whose
    width divides its lanes, piece by piece, else by `generic`. Where the
    product is `symmetric` in its operands (bfloat16's, not u8 x s8), a
    broadcast goes last: the instruction's one operand that may be memory,
    so the broadcast folds into it (`vdpbf16ps zmm, zmm, m32bcst`) instead of
    taking a shuffle of its own, which on Zen 4 shares the pipes of the
    products (a 16 -> 96 1x1 layer: 16 -> 9 cycles a vector of outputs)."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        acc, a, b = args
        if symmetric and _splat(a) and not _splat(b):
            a, b = b, a
        n = _lanes(acc.type)
        vector = isinstance(acc.type, VectorType)
        width = max((w for w in found if vector and n % w == 0), default=0)
        if not width:
            return [generic(acc, a, b, e)]
        name, operand = found[width]
        out = []
        for p, x, y in zip(*(_pieces(e, v, width) for v in (acc, a, b)), strict=True):
            if operand == "signed":
                out.append(_signed(e, name, p, x, y))
                continue
            if operand == "i8":
                t = VectorType(IntegerType(8), [width * BYTES])
                x, y = (e.op(llvm.BitcastOp, v, result=t) for v in (x, y))
            out.append(e.intrinsic(name, [p, x, y], p.type, mangle=False))
        return [_joined(e, out)]

    return lower


def _signed(e: Builder, name: str, acc: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
    """acc + a.u8 . b.s8 on a signed x signed dot product: (a - 128) . b,
    a's sign bits flipped, plus 128 * sum(b), the dot product of b with
    ones."""
    t = acc.type
    as_bytes = VectorType(IntegerType(8), [_lanes(t) * BYTES])
    flipped = e.op(llvm.XOrOp, a, e.constant(SIGN_BITS, t))
    x, y, ones = (
        e.op(llvm.BitcastOp, v, result=as_bytes)
        for v in (flipped, b, e.constant(ONES, t))
    )
    shifted = e.intrinsic(name, [acc, x, y], t, mangle=False)
    total = e.intrinsic(name, [e.constant(0, t), ones, y], t, mangle=False)
    correction = e.op(llvm.ShlOp, total, e.constant(HALF_BYTE_RANGE, t))
    return e.op(llvm.AddOp, shifted, correction)


ONES = 0x01010101
"""A word of four bytes of 1: its dot product with b is the sum of b's bytes."""


@dataclass(frozen=True)
class ConvertDotToLLVMPass(ConvertToLLVMPass):
    """Lower `dot.u8i8` and `dot.bf16` to the target's dot product
    instructions, or widening multiplies and adds (see the module docstring).

        %s = dot.u8i8 %acc, %a, %b : vector<16xi32>
      ──► (x86 with avx512vnni)
        %s = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%acc, %a, %b)
    """

    name = "convert-dot-to-llvm"
    dialect = "dot"

    def handlers(self) -> dict[type[Operation], Handler]:
        raise NotImplementedError  # made per module: they depend on its target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op)
        lowerings: dict[type[Operation], Lowering] = {
            dot.U8I8Op: _lowering(instructions(target), _generic),
            dot.BF16Op: _lowering(bf16_instructions(target), _bf16_generic, True),
        }
        self.convert(op, handlers_for(self.name, lowerings))
