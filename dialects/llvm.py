"""ember's additions to xDSL's `llvm` dialect (the lowest IR level before LLVM IR).

xDSL's llvm dialect lacks some instructions ember's lowerings need. They are defined
here as ops named in the `llvm.` namespace, and `LLVM` is xDSL's dialect extended
with them, registered under the name `llvm` in ember's contexts. xDSL's modules are
never patched. `backends/llvm/translate.py` turns these ops into LLVM IR.
"""

from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    IntegerType,
    VectorType,
)
from xdsl.dialects.llvm import LLVM as XDSL_LLVM
from xdsl.dialects.llvm import GenericCastOp
from xdsl.ir import Block, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    successor_def,
    traits_def,
    var_successor_def,
)
from xdsl.irdl.constraints import RangeOf
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoMemoryEffect
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class FPToSIOp(GenericCastOp):
    """Float to signed integer, rounding toward zero.

    %i = llvm.fptosi %f : f32 to i32
    """

    name = "llvm.fptosi"


@irdl_op_definition
class FPToUIOp(GenericCastOp):
    """Float to unsigned integer, rounding toward zero.

    %i = llvm.fptoui %f : f32 to i32
    """

    name = "llvm.fptoui"


@irdl_op_definition
class UIToFPOp(GenericCastOp):
    """Unsigned integer to float.

    %f = llvm.uitofp %i : i32 to f32
    """

    name = "llvm.uitofp"


@irdl_op_definition
class ExtractElementOp(IRDLOperation):
    """One lane of a vector.

    %x = llvm.extractelement %v[%i : i64] : vector<8xf32>
    """

    name = "llvm.extractelement"

    ELEMENT: ClassVar = VarConstraint("ELEMENT", AnyAttr())
    VECTOR: ClassVar = VarConstraint(
        "VECTOR_T",
        VectorType.constr(
            ELEMENT, shape=ArrayAttr.constr(RangeOf(IntAttr).of_length(1))
        ),
    )

    vector = operand_def(VECTOR)
    index = operand_def(IntegerType)
    res = result_def(ELEMENT)

    assembly_format = (
        "$vector `[` $index `:` type($index) `]` attr-dict `:` type($vector)"
    )

    traits = traits_def(NoMemoryEffect())

    def __init__(self, vector: Operation | SSAValue, index: Operation | SSAValue):
        vector_type = SSAValue.get(vector).type
        assert isinstance(vector_type, VectorType)
        super().__init__(
            operands=[vector, index], result_types=[vector_type.element_type]
        )


@irdl_op_definition
class SwitchOp(IRDLOperation):
    """Multi-way branch on an integer value; block arguments are not supported.

    llvm.switch %x : i32, ^default [1: ^one, 7: ^seven]
    """

    name = "llvm.switch"

    value = operand_def(IntegerType)
    case_values = prop_def(DenseArrayBase)
    default_dest = successor_def()
    case_dests = var_successor_def()

    traits = traits_def(IsTerminator())

    def __init__(
        self,
        value: Operation | SSAValue,
        default: Block,
        cases: list[tuple[int, Block]],
    ):
        super().__init__(
            operands=[value],
            properties={
                "case_values": DenseArrayBase.from_list(
                    IntegerType(64), [v for v, _ in cases]
                )
            },
            successors=[default, [b for _, b in cases]],
        )

    def verify_(self) -> None:
        count = len(self.case_values.get_values())
        if count != len(self.case_dests):
            raise VerifyException(
                f"expected {count} case destinations, got {len(self.case_dests)}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        printer.print_string(f" : {self.value.type}, ")
        printer.print_block_name(self.default_dest)
        printer.print_string(" [")
        cases = zip(self.case_values.get_values(), self.case_dests, strict=True)
        for i, (value, dest) in enumerate(cases):
            if i:
                printer.print_string(", ")
            printer.print_string(f"{value}: ")
            printer.print_block_name(dest)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "SwitchOp":
        unresolved = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        value = parser.resolve_operand(unresolved, parser.parse_type())
        parser.parse_punctuation(",")
        default = parser.parse_successor()
        cases: list[tuple[int, Block]] = []
        parser.parse_punctuation("[")
        if parser.parse_optional_punctuation("]") is None:
            while True:
                case = parser.parse_integer()
                parser.parse_punctuation(":")
                cases.append((case, parser.parse_successor()))
                if parser.parse_optional_punctuation("]") is not None:
                    break
                parser.parse_punctuation(",")
        op = cls(value, default, cases)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


EXTRA_OPS: tuple[type[Operation], ...] = (
    FPToSIOp,
    FPToUIOp,
    UIToFPOp,
    ExtractElementOp,
    SwitchOp,
)

LLVM = Dialect(
    "llvm",
    [*XDSL_LLVM.operations, *EXTRA_OPS],
    list(XDSL_LLVM.attributes),
)

__all__ = [
    "LLVM",
    "ExtractElementOp",
    "FPToSIOp",
    "FPToUIOp",
    "SwitchOp",
    "UIToFPOp",
]
