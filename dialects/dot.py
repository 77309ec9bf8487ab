"""The `dot` dialect: byte dot products, the integer multiply-add that int8
kernels are built on.

    %s = dot.u8i8 %acc, %a, %b : vector<16xi32>

Each i32 lane of `a` and `b` holds four bytes; the result is `acc` plus the sum
of the four products of `a`'s bytes read unsigned and `b`'s read signed, in
every lane (x86 VNNI's `vpdpbusd`, aarch64's `usdot`). It works on scalars and
1-D vectors alike, so a vectorized loop turns one into the other lane by lane.
`convert-dot-to-llvm` lowers it to the target's instruction where it has one
and to widening multiplies and adds elsewhere; the C-family printer writes the
same sum. No intermediate overflows: four products of at most 255 * 128 each
and the accumulator wrap like any i32 addition.
"""

from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntAttr, VectorType, i32
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

I32_OR_VECTOR = VarConstraint(
    "T",
    AnyOf(
        (
            EqAttrConstraint(i32),
            VectorType.constr(
                EqAttrConstraint(i32),
                shape=ArrayAttr.constr(RangeOf(IntAttr).of_length(1)),
            ),
        )
    ),
)


@irdl_op_definition
class U8I8Op(IRDLOperation):
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

    def __init__(
        self,
        acc: Operation | SSAValue,
        lhs: Operation | SSAValue,
        rhs: Operation | SSAValue,
    ):
        super().__init__(
            operands=[acc, lhs, rhs], result_types=[SSAValue.get(acc).type]
        )


Dot = Dialect("dot", [U8I8Op])
