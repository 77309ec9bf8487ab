"""The `dot` dialect: the packed dot products that int8 and bfloat16 kernels
are built on.

    %s = dot.u8i8 %acc, %a, %b : vector<16xi32>
    %t = dot.bf16 %acc, %a, %b : vector<16xf32>, vector<16xi32>

Each i32 lane of `a` and `b` holds four bytes; the result is `acc` plus the sum
of the four products of `a`'s bytes read unsigned and `b`'s read signed, in
every lane (x86 VNNI's `vpdpbusd`, aarch64's `usdot`). It works on scalars and
1-D vectors alike, so a vectorized loop turns one into the other lane by lane.
`convert-dot-to-llvm` lowers it to the target's instruction where it has one
and to widening multiplies and adds elsewhere; the C-family printer writes the
same sum. No intermediate overflows: four products of at most 255 * 128 each
and the accumulator wrap like any i32 addition.

`dot.bf16` is the same on pairs: each i32 lane of `a` and `b` holds two
bfloat16 numbers (the even element in the low half), and each f32 lane of the
result is `acc` plus both products, the odd pair's added first, each addition
rounded to nearest even (x86's `vdpbf16ps`, aarch64's `bfdot`). The products
of two bfloat16 numbers are exact in float32, so elsewhere it is two fused
multiply-adds of the halves widened (a shift and a mask). The instructions
flush subnormal numbers to zero; the widened form keeps them.
"""

from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntAttr, VectorType, f32, i32
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyOf,
    EqAttrConstraint,
    IRDLOperation,
    RangeOf,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


def _scalar_or_vector(element, name: str) -> VarConstraint:
    """`element`, or a 1-D vector of it, one type for every operand named
    `name`."""
    return VarConstraint(
        name,
        AnyOf(
            (
                EqAttrConstraint(element),
                VectorType.constr(
                    EqAttrConstraint(element),
                    shape=ArrayAttr.constr(RangeOf(IntAttr).of_length(1)),
                ),
            )
        ),
    )


I32_OR_VECTOR = _scalar_or_vector(i32, "T")


class _DotOp(IRDLOperation):
    """acc + a dot product per lane: the result has the accumulator's type."""

    def __init__(
        self,
        acc: Operation | SSAValue,
        lhs: Operation | SSAValue,
        rhs: Operation | SSAValue,
    ):
        super().__init__(
            operands=[acc, lhs, rhs], result_types=[SSAValue.get(acc).type]
        )


@irdl_op_definition
class U8I8Op(_DotOp):
    """`acc` plus, per i32 lane, the dot product of the four unsigned bytes of
    `lhs` with the four signed bytes of `rhs`."""

    name = "dot.u8i8"

    T: ClassVar = I32_OR_VECTOR
    acc = operand_def(T)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    assembly_format = "$acc `,` $lhs `,` $rhs attr-dict `:` type($result)"

    traits = traits_def(Pure())


@irdl_op_definition
class BF16Op(_DotOp):
    """`acc` plus, per f32 lane, the dot product of the two bfloat16 numbers
    in the i32 lane of `lhs` with the two in `rhs`'s."""

    name = "dot.bf16"

    T: ClassVar = _scalar_or_vector(f32, "T")
    W: ClassVar = _scalar_or_vector(i32, "W")
    acc = operand_def(T)
    lhs = operand_def(W)
    rhs = operand_def(W)
    result = result_def(T)

    assembly_format = (
        "$acc `,` $lhs `,` $rhs attr-dict `:` type($result) `,` type($lhs)"
    )

    traits = traits_def(Pure())

    def verify_(self) -> None:
        lanes = [
            t.get_shape()[0] if isinstance(t, VectorType) else 1
            for t in (self.acc.type, self.lhs.type)
        ]
        if lanes[0] != lanes[1]:
            raise VerifyException(
                f"expected one lane of words per f32 lane, got {lanes[0]} f32 "
                f"and {lanes[1]} i32 lanes"
            )


Dot = Dialect("dot", [U8I8Op, BF16Op])
