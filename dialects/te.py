"""The `te` dialect: tensor expressions, TVM's TE level.

A te program is a `func.func` over ranked, statically shaped tensors. Each
`te.compute` defines one tensor by a scalar expression of its indices; the body reads
other tensors with `te.read` and does scalar work in `arith`/`math`. A compute with
`reduce` folds its body over extra reduction axes with a combiner (sum, max, min),
as a TVM compute whose body is `te.sum(...)`.
"""

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    NoMemoryEffect,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from ember.dialects.te_schedule import SCHEDULE_OPS

COMBINERS = ("sum", "max", "min")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The scalar value of a compute at one point.

    te.yield %v : f32
    """

    name = "te.yield"

    value = operand_def()

    assembly_format = "$value attr-dict `:` type($value)"

    traits = lazy_traits_def(
        lambda: (IsTerminator(), NoMemoryEffect(), HasParent(ComputeOp))
    )

    def __init__(self, value: SSAValue | Operation):
        super().__init__(operands=[value])


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """A tensor defined elementwise by its body; optionally a reduction.

        %C = te.compute "C" (%i) -> tensor<16xf32> { ... te.yield %x : f32 }
        %S = te.compute "S" (%i) reduce sum (%k : 8) -> tensor<4xf32> { ... }

    The body's block arguments are the output indices, then the reduction indices;
    reduction axis `k` runs over `[0, reduce_extents[k])`.
    """

    name = "te.compute"

    tensor_name = prop_def(StringAttr, prop_name="name")
    reduce = opt_prop_def(StringAttr)
    reduce_extents = opt_prop_def(DenseArrayBase)
    result = result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        name: str,
        result_type: TensorType,
        body: Region | Block,
        reduce: str | None = None,
        reduce_extents: Sequence[int] = (),
    ):
        props: dict[str, Attribute] = {"name": StringAttr(name)}
        if reduce is not None:
            props["reduce"] = StringAttr(reduce)
            props["reduce_extents"] = DenseArrayBase.from_list(
                i64, list(reduce_extents)
            )
        super().__init__(
            result_types=[result_type],
            properties=props,
            regions=[body if isinstance(body, Region) else Region(body)],
        )

    @property
    def extents(self) -> tuple[int, ...]:
        """The reduction extents, () for a plain compute."""
        if self.reduce_extents is None:
            return ()
        return tuple(int(v) for v in self.reduce_extents.get_values())

    @property
    def output_type(self) -> TensorType:
        assert isinstance(self.result.type, TensorType)
        return self.result.type

    def verify_(self) -> None:
        shape = self.output_type.get_shape()
        if any(d < 0 for d in shape):
            raise VerifyException(f"expected a static shape, got {self.result.type}")
        if (self.reduce is None) != (self.reduce_extents is None):
            raise VerifyException(
                "expected 'reduce' and 'reduce_extents' together, got only one"
            )
        if self.reduce is not None and self.reduce.data not in COMBINERS:
            raise VerifyException(
                f"expected combiner sum, max or min, got '{self.reduce.data}'"
            )
        if any(e <= 0 for e in self.extents):
            raise VerifyException(
                f"expected positive reduction extents, got {list(self.extents)}"
            )
        args = self.body.block.args
        expected = len(shape) + len(self.extents)
        if len(args) != expected:
            raise VerifyException(
                f"expected {expected} index block arguments, got {len(args)}"
            )
        for arg in args:
            if not isinstance(arg.type, IndexType):
                raise VerifyException(f"expected index block arguments, got {arg.type}")
        term = self.body.block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException(
                f"expected the body to end in te.yield, got "
                f"{'nothing' if term is None else term.name}"
            )
        element = self.output_type.element_type
        if term.value.type != element:
            raise VerifyException(f"expected yield of {element}, got {term.value.type}")

    def print(self, printer: Printer) -> None:
        block = self.body.block
        rank = self.output_type.get_num_dims()
        printer.print_string(" ")
        printer.print_string_literal(self.tensor_name.data)
        printer.print_string(" (")
        printer.print_list(block.args[:rank], printer.print_ssa_value)
        printer.print_string(")")
        if self.reduce is not None:
            printer.print_string(f" reduce {self.reduce.data} (")
            printer.print_list(
                zip(block.args[rank:], self.extents, strict=True),
                lambda pair: (
                    printer.print_ssa_value(pair[0]),
                    printer.print_string(f" : {pair[1]}"),
                ),
            )
            printer.print_string(")")
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "ComputeOp":
        name = parser.parse_str_literal("expected the tensor's name")

        def index_arg() -> Parser.Argument:
            return parser.parse_argument(expect_type=False).resolve(IndexType())

        indices = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, index_arg)
        reduce: str | None = None
        extents: list[int] = []
        reduce_args: list[Parser.Argument] = []
        if parser.parse_optional_keyword("reduce"):
            reduce = parser.parse_identifier("expected a combiner: sum, max or min")

            def reduce_axis() -> None:
                reduce_args.append(index_arg())
                parser.parse_punctuation(":")
                extents.append(parser.parse_integer(allow_boolean=False))

            parser.parse_comma_separated_list(Parser.Delimiter.PAREN, reduce_axis)
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        if not isinstance(result_type, TensorType):
            parser.raise_error(f"expected a tensor type, got {result_type}")
        body = parser.parse_region([*indices, *reduce_args])
        attrs = parser.parse_optional_attr_dict()
        op = cls(name, result_type, body, reduce, extents)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class ReadOp(IRDLOperation):
    """One element of a tensor, inside a compute body.

    %a = te.read %A[%i, %j] : tensor<4x8xf32>
    """

    name = "te.read"

    tensor = operand_def(TensorType)
    indices = var_operand_def(IndexType)
    result = result_def()

    traits = traits_def(NoMemoryEffect())

    def __init__(
        self, tensor: SSAValue | Operation, indices: Sequence[SSAValue | Operation]
    ):
        tensor_type = SSAValue.get(tensor).type
        assert isinstance(tensor_type, TensorType)
        super().__init__(
            operands=[tensor, list(indices)],
            result_types=[tensor_type.element_type],
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.tensor)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_ssa_value)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor.type)

    @classmethod
    def parse(cls, parser: Parser) -> "ReadOp":
        tensor = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tensor_type = parser.parse_type()
        if not isinstance(tensor_type, TensorType):
            parser.raise_error(f"expected a tensor type, got {tensor_type}")
        op = cls(
            parser.resolve_operand(tensor, tensor_type),
            [parser.resolve_operand(i, IndexType()) for i in indices],
        )
        op.attributes.update(attrs)
        return op

    def verify_(self) -> None:
        if self.parent_op() is None or not any(
            isinstance(a, ComputeOp) for a in _ancestors(self)
        ):
            raise VerifyException("expected te.read inside a te.compute body")
        tensor_type = self.tensor.type
        assert isinstance(tensor_type, TensorType)
        if len(self.indices) != tensor_type.get_num_dims():
            raise VerifyException(
                f"expected {tensor_type.get_num_dims()} indices, "
                f"got {len(self.indices)}"
            )
        if self.result.type != tensor_type.element_type:
            raise VerifyException(
                f"expected result of type {tensor_type.element_type}, "
                f"got {self.result.type}"
            )


def _ancestors(op: Operation):
    parent = op.parent_op()
    while parent is not None:
        yield parent
        parent = parent.parent_op()


TE = Dialect("te", [ComputeOp, ReadOp, YieldOp, *SCHEDULE_OPS])
