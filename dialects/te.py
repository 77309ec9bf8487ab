"""The `te` dialect: tensor expressions, TVM's TE level.

A te program is a `func.func` over ranked tensors, static or with symbolic
dims (see `ComputeOp`). Each
`te.compute` defines one tensor by a scalar expression of its indices; the body reads
other tensors with `te.read` and does scalar work in `arith`/`math` (and `scf.if`
where a side of a condition must not run). A compute with `reduce` folds its body
over extra reduction axes with a combiner: sum, max, min, or one of its own given
as a `combine` region and its identity, as a TVM compute whose body is `te.sum(...)`
or a `te.comm_reducer`'s. A `te.extern` stage is opaque: its tensor is written by
loop-level code over buffers (a `loop.call_packed` of a host function), like a
TVM `te.extern`.
"""

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
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
    opt_region_def,
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
    IsolatedFromAbove,
    IsTerminator,
    NoMemoryEffect,
    NoTerminator,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from ember.dialects.graph_shapes import dims_of
from ember.dialects.te_schedule import SCHEDULE_OPS
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import SymExpr
from ember.runtime.shape_expr import parse as parse_dim

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
    reduction axis `k` runs over `[0, reduce_extents[k])`. An extent may be
    symbolic: a dynamic dim of the result type named by its encoding
    (`tensor<?x8xf32, ["n"]>`), a reduction extent given as an expression
    string (`(%k : "n")`) over the function's size symbols (its trailing
    `index` arguments marked `ember.symbol`), which the body may also read. `reduce` names the
    combiner: sum, max and min are built in; any other name is a custom combiner,
    given after the body as a `combine` region over (accumulated, next) values of
    the element type, with the `identity` it starts from:

        %P = te.compute "P" (%i) reduce prod (%k : 8) -> tensor<4xf32> {
          %a = te.read %A[%i, %k] : tensor<4x8xf32>
          te.yield %a : f32
        } combine (%acc, %x) identity 1.000000e+00 : f32 {
          %p = arith.mulf %acc, %x : f32
          te.yield %p : f32
        }
    """

    name = "te.compute"

    tensor_name = prop_def(StringAttr, prop_name="name")
    reduce = opt_prop_def(StringAttr)
    reduce_extents = opt_prop_def(DenseArrayBase[IntegerType])
    reduce_dims = opt_prop_def(ArrayAttr[StringAttr])
    """The expression of each symbolic (-1) reduction extent, in order."""
    identity = opt_prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)
    body = region_def("single_block")
    combiner = opt_region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        name: str,
        result_type: TensorType,
        body: Region | Block,
        reduce: str | None = None,
        reduce_extents: Sequence[int | SymExpr] = (),
        combiner: Region | Block | None = None,
        identity: Attribute | None = None,
    ):
        props: dict[str, Attribute] = {"name": StringAttr(name)}
        if reduce is not None:
            props["reduce"] = StringAttr(reduce)
            props["reduce_extents"] = DenseArrayBase.from_list(
                i64, [e if isinstance(e, int) else -1 for e in reduce_extents]
            )
            symbolic = [str(e) for e in reduce_extents if isinstance(e, SymExpr)]
            if symbolic:
                props["reduce_dims"] = ArrayAttr([StringAttr(e) for e in symbolic])
        if identity is not None:
            props["identity"] = identity
        regions: list[Region] = [body if isinstance(body, Region) else Region(body)]
        if combiner is not None:
            regions.append(
                combiner if isinstance(combiner, Region) else Region(combiner)
            )
        super().__init__(
            result_types=[result_type],
            properties=props,
            regions=[regions[0], regions[1:]],
        )

    @property
    def extents(self) -> tuple[int | SymExpr, ...]:
        """The reduction extents (ints, or expressions over the size symbols),
        () for a plain compute."""
        if self.reduce_extents is None:
            return ()
        names = iter(self.reduce_dims.data if self.reduce_dims is not None else ())
        extents: list[int | SymExpr] = []
        for v in self.reduce_extents.get_values():
            extents.append(int(v) if v >= 0 else parse_dim(next(names).data))
        return tuple(extents)

    @property
    def shape(self) -> tuple[int | SymExpr, ...]:
        """The result's dims, symbolic ones as the encoding names them."""
        return tuple(dims_of(self.output_type))

    @property
    def output_type(self) -> TensorType:
        assert isinstance(self.result.type, TensorType)
        return self.result.type

    @property
    def combine_block(self) -> Block | None:
        """The custom combiner's block (accumulated, next) -> te.yield, if any."""
        return None if self.combiner is None else self.combiner.block

    def verify_(self) -> None:
        shape = self.output_type.get_shape()
        dims_of(self.output_type)  # a dynamic dim must be named
        if (self.reduce is None) != (self.reduce_extents is None):
            raise VerifyException(
                "expected 'reduce' and 'reduce_extents' together, got only one"
            )
        self._verify_combiner()
        self._verify_extents()
        args = self.body.block.args
        expected = len(shape) + len(self.extents)
        if len(args) != expected:
            raise VerifyException(
                f"expected {expected} index block arguments, got {len(args)}"
            )
        for arg in args:
            if not isinstance(arg.type, IndexType):
                raise VerifyException(f"expected index block arguments, got {arg.type}")
        element = self.output_type.element_type
        _verify_yield(self.body.block, element, "the body")

    def _verify_extents(self) -> None:
        if self.reduce_extents is None:
            if self.reduce_dims is not None:
                raise VerifyException("expected 'reduce_dims' only on a reduction")
            return
        values = self.reduce_extents.get_values()
        names = self.reduce_dims.data if self.reduce_dims is not None else ()
        dynamic = sum(1 for v in values if v == -1)
        if any(v == 0 or v < -1 for v in values) or dynamic != len(names):
            symbolic = f", or -1 for each of the {len(names)} in 'reduce_dims'"
            raise VerifyException(
                f"expected positive reduction extents{symbolic if names else ''}, "
                f"got {list(values)}"
            )
        for name in names:
            try:
                extent = parse_dim(name.data)
            except EmberValueError as e:
                raise VerifyException(f"reduction extent: {e}") from None
            if isinstance(extent, int):
                raise VerifyException(
                    f"expected a symbolic reduction extent, got '{name.data}'"
                )

    def _verify_combiner(self) -> None:
        custom = self.combiner is not None
        if custom != (self.identity is not None):
            raise VerifyException(
                "expected a combine region and an 'identity' together, got only one"
            )
        if self.reduce is None:
            if custom:
                raise VerifyException("expected a combine region only on a reduction")
            return
        reduce = self.reduce.data
        if not custom:
            if reduce not in COMBINERS:
                raise VerifyException(
                    f"expected combiner sum, max or min, or a combine region for "
                    f"the custom combiner '{reduce}', got none"
                )
            return
        if reduce in COMBINERS:
            raise VerifyException(
                f"expected no combine region for the builtin combiner '{reduce}'"
            )
        if not _IDENTIFIER.fullmatch(reduce):
            raise VerifyException(
                f"expected the combiner's name to be an identifier, got '{reduce}'"
            )
        element = self.output_type.element_type
        assert self.identity is not None
        if self.identity.type != element:
            raise VerifyException(
                f"expected an identity of type {element}, got {self.identity}"
            )
        block = self.combiner.block  # type: ignore[union-attr]
        types = [a.type for a in block.args]
        if types != [element, element]:
            raise VerifyException(
                f"expected the combine region to take (accumulated, next) values "
                f"of type {element}, got ({', '.join(map(str, types))})"
            )
        _verify_yield(block, element, "the combine region")
        for op in block.walk():
            if isinstance(op, ReadOp):
                raise VerifyException(
                    "expected no te.read in the combine region: a combiner sees "
                    "only its two arguments"
                )

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
                    printer.print_string(" : "),
                    printer.print_string_literal(str(pair[1]))
                    if isinstance(pair[1], SymExpr)
                    else printer.print_string(str(pair[1])),
                ),
            )
            printer.print_string(")")
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        if self.combiner is not None and self.identity is not None:
            printer.print_string(" combine (")
            printer.print_list(self.combiner.block.args, printer.print_ssa_value)
            printer.print_string(") identity ")
            printer.print_attribute(self.identity)
            printer.print_string(" ")
            printer.print_region(self.combiner, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "ComputeOp":
        name = parser.parse_str_literal("expected the tensor's name")

        def index_arg() -> Parser.Argument:
            return parser.parse_argument(expect_type=False).resolve(IndexType())

        indices = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, index_arg)
        reduce: str | None = None
        extents: list[int | SymExpr] = []
        reduce_args: list[Parser.Argument] = []
        if parser.parse_optional_keyword("reduce"):
            reduce = parser.parse_identifier(
                "expected a combiner: sum, max, min or a custom combiner's name"
            )

            def reduce_axis() -> None:
                reduce_args.append(index_arg())
                parser.parse_punctuation(":")
                text = parser.parse_optional_str_literal()
                if text is None:
                    extents.append(parser.parse_integer(allow_boolean=False))
                    return
                try:
                    extents.append(parse_dim(text))
                except EmberValueError as e:
                    parser.raise_error(f"reduction extent: {e}")

            parser.parse_comma_separated_list(Parser.Delimiter.PAREN, reduce_axis)
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        if not isinstance(result_type, TensorType):
            parser.raise_error(f"expected a tensor type, got {result_type}")
        body = parser.parse_region([*indices, *reduce_args])
        combiner: Region | None = None
        identity: Attribute | None = None
        if parser.parse_optional_keyword("combine"):
            element = result_type.element_type
            args = parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN,
                lambda: parser.parse_argument(expect_type=False).resolve(element),
            )
            parser.parse_keyword("identity")
            identity = parser.parse_attribute()
            combiner = parser.parse_region(args)
        attrs = parser.parse_optional_attr_dict()
        op = cls(name, result_type, body, reduce, extents, combiner, identity)
        op.attributes.update(attrs)
        return op


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def _verify_yield(block: Block, element: Attribute, what: str) -> None:
    term = block.last_op
    if not isinstance(term, YieldOp):
        raise VerifyException(
            f"expected {what} to end in te.yield, got "
            f"{'nothing' if term is None else term.name}"
        )
    if term.value.type != element:
        raise VerifyException(f"expected yield of {element}, got {term.value.type}")


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


@irdl_op_definition
class ExternOp(IRDLOperation):
    """A tensor written by opaque loop-level code: TVM's `te.extern`.

        %B = te.extern "B" (%A) : (tensor<16xf32>) -> tensor<16xf32> {
        ^bb0(%a: memref<16xf32>, %b: memref<16xf32>):
          loop.call_packed "my.sort"(%a, %b) : memref<16xf32>, memref<16xf32>
        }

    The body's arguments are the buffers of the inputs, then of the result; it
    must write the whole result. It sees nothing from outside (its constants are
    its own), and schedules cannot look inside: the stage is computed whole, at
    the root. One result (several outputs are not supported yet).
    """

    name = "te.extern"

    tensor_name = prop_def(StringAttr, prop_name="name")
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), IsolatedFromAbove())

    def __init__(
        self,
        name: str,
        inputs: Sequence[SSAValue | Operation],
        result_type: TensorType,
        body: Region | Block,
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[result_type],
            properties={"name": StringAttr(name)},
            regions=[body if isinstance(body, Region) else Region(body)],
        )

    @property
    def output_type(self) -> TensorType:
        assert isinstance(self.result.type, TensorType)
        return self.result.type

    def verify_(self) -> None:
        types = [*self.inputs.types, self.result.type]
        for t in types:
            assert isinstance(t, TensorType)
            if any(d < 0 for d in t.get_shape()):
                raise VerifyException(f"expected static shapes, got {t}")
        expected = [
            MemRefType(t.element_type, t.get_shape())  # type: ignore[attr-defined]
            for t in types
        ]
        got = [a.type for a in self.body.block.args]
        if got != expected:
            raise VerifyException(
                "expected the body to take the buffers of the inputs and the result "
                f"({', '.join(map(str, expected))}), got ({', '.join(map(str, got))})"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.tensor_name.data)
        printer.print_string(" (")
        printer.print_list(self.inputs, printer.print_ssa_value)
        printer.print_string(") : (")
        printer.print_list(self.inputs.types, printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "ExternOp":
        name = parser.parse_str_literal("expected the tensor's name")
        inputs = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_type
        )
        if len(types) != len(inputs):
            parser.raise_error(f"expected {len(inputs)} input types, got {len(types)}")
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        if not isinstance(result_type, TensorType):
            parser.raise_error(f"expected a tensor type, got {result_type}")
        body = parser.parse_region()
        attrs = parser.parse_optional_attr_dict()
        operands = [
            parser.resolve_operand(o, t) for o, t in zip(inputs, types, strict=True)
        ]
        op = cls(name, operands, result_type, body)
        op.attributes.update(attrs)
        return op


TE = Dialect("te", [ComputeOp, ExternOp, ReadOp, YieldOp, *SCHEDULE_OPS])
