"""ember's additions to xDSL's `llvm` dialect (the lowest IR level before LLVM IR).

xDSL's llvm dialect lacks some instructions ember's lowerings need. They are defined
here as ops named in the `llvm.` namespace, and `LLVM` is xDSL's dialect extended
with them, registered under the name `llvm` in ember's contexts. Two of xDSL's ops
only take scalars where LLVM also takes vectors: `llvm.select` (an `i1` condition)
and `llvm.fcmp` (float operands); ember's `SelectOp` and `FCmpOp` take both, with
the same syntax, and replace xDSL's in `LLVM`. xDSL's modules are never patched.
`backends/llvm/translate.py` turns these ops into LLVM IR.
"""

from typing import ClassVar

from xdsl.dialects import llvm as xdsl_llvm
from xdsl.dialects.builtin import (
    AnyFloatConstr,
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    IntegerAttr,
    IntegerType,
    VectorType,
    i1,
    i64,
)
from xdsl.dialects.llvm import LLVM as XDSL_LLVM
from xdsl.dialects.llvm import FastMathAttr, FCmpPredicateFlag, GenericCastOp
from xdsl.ir import Attribute, Block, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    EqAttrConstraint,
    IRDLOperation,
    ParsePropInAttrDict,
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
from xdsl.traits import IsTerminator, NoMemoryEffect, Pure
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


_BOOL = EqAttrConstraint(i1)


def _lanes(t: Attribute) -> tuple[int, ...] | None:
    """The shape of a vector type, None for a scalar."""
    return tuple(t.get_shape()) if isinstance(t, VectorType) else None


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`lhs` where `cond` holds, else `rhs`; lane by lane with a vector condition.

    %r = llvm.select %c, %a, %b : i1, f32
    %v = llvm.select %m, %x, %y : vector<8xi1>, vector<8xf32>
    """

    name = "llvm.select"

    T: ClassVar = VarConstraint("T", AnyAttr())

    cond = operand_def(_BOOL | VectorType.constr(_BOOL))
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(T)
    fastmathFlags = prop_def(FastMathAttr, default_value=FastMathAttr(None))

    traits = traits_def(Pure())

    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($res)"

    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        cond: Operation | SSAValue,
        lhs: Operation | SSAValue,
        rhs: Operation | SSAValue,
    ):
        super().__init__(
            operands=[cond, lhs, rhs], result_types=[SSAValue.get(lhs).type]
        )

    def verify_(self) -> None:
        lanes = _lanes(self.cond.type)
        if lanes is not None and _lanes(self.res.type) != lanes:
            raise VerifyException(
                f"expected a vector of {lanes[0]} lanes to select from with "
                f"{self.cond.type}, got {self.res.type}"
            )


@irdl_op_definition
class FCmpOp(IRDLOperation):
    """Compare floats, lane by lane on vectors; the result is i1 or a vector of i1.

    %b = llvm.fcmp "olt" %x, %y : f32
    %m = llvm.fcmp "uno" %u, %v {fastmathFlags = #llvm.fastmath<nsz>} : vector<8xf32>
    """

    name = "llvm.fcmp"

    T: ClassVar = VarConstraint("T", AnyFloatConstr | VectorType.constr(AnyFloatConstr))

    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(_BOOL | VectorType.constr(_BOOL))
    predicate = prop_def(IntegerAttr[IntegerType])
    fastmathFlags = prop_def(FastMathAttr, default_value=FastMathAttr(None))

    traits = traits_def(Pure())

    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        lhs: Operation | SSAValue,
        rhs: Operation | SSAValue,
        predicate: str,
        fastmath: FastMathAttr | None = None,
    ):
        lanes = _lanes(SSAValue.get(lhs).type)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[i1 if lanes is None else VectorType(i1, lanes)],
            properties={
                "predicate": IntegerAttr(FCmpPredicateFlag(predicate).to_int(), i64),
                "fastmathFlags": fastmath or FastMathAttr(None),
            },
        )

    @property
    def predicate_name(self) -> str:
        return FCmpPredicateFlag.from_int(self.predicate.value.data).value

    def verify_(self) -> None:
        count = len(FCmpPredicateFlag)
        if not 0 <= self.predicate.value.data < count:
            raise VerifyException(
                f"expected a predicate in [0, {count}), got {self.predicate.value.data}"
            )
        lanes = _lanes(self.lhs.type)
        if _lanes(self.res.type) != lanes:
            expected = "i1" if lanes is None else f"{VectorType(i1, lanes)}"
            raise VerifyException(f"expected result {expected}, got {self.res.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f' "{self.predicate_name}" ')
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        attrs = dict(self.attributes)
        if self.fastmathFlags.data:
            attrs["fastmathFlags"] = self.fastmathFlags
        printer.print_op_attributes(attrs)
        printer.print_string(f" : {self.lhs.type}")

    @classmethod
    def parse(cls, parser: Parser) -> "FCmpOp":
        at = parser.pos
        predicate = parser.parse_str_literal()
        if predicate not in FCmpPredicateFlag.__members__.values():
            names = ", ".join(f.value for f in FCmpPredicateFlag)
            parser.raise_error(
                f"expected an fcmp predicate ({names}), got '{predicate}'", at
            )
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        fastmath = attrs.pop("fastmathFlags", None)
        if fastmath is not None and not isinstance(fastmath, FastMathAttr):
            parser.raise_error(f"expected #llvm.fastmath<...>, got {fastmath}")
        op = cls(
            parser.resolve_operand(lhs, t),
            parser.resolve_operand(rhs, t),
            predicate,
            fastmath,
        )
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class SwitchOp(IRDLOperation):
    """Multi-way branch on an integer value; block arguments are not supported.

    llvm.switch %x : i32, ^default [1: ^one, 7: ^seven]
    """

    name = "llvm.switch"

    value = operand_def(IntegerType)
    case_values = prop_def(DenseArrayBase[IntegerType])
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
    SelectOp,
    FCmpOp,
    SwitchOp,
)

_REPLACED = (xdsl_llvm.SelectOp, xdsl_llvm.FCmpOp)

LLVM = Dialect(
    "llvm",
    [*(op for op in XDSL_LLVM.operations if op not in _REPLACED), *EXTRA_OPS],
    list(XDSL_LLVM.attributes),
)

__all__ = [
    "LLVM",
    "ExtractElementOp",
    "FCmpOp",
    "FPToSIOp",
    "FPToUIOp",
    "SelectOp",
    "SwitchOp",
    "UIToFPOp",
]
