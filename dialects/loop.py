"""The `loop` dialect: explicit loop nests over buffers, TVM's TIR level.

Functions at this level take `memref` buffers (outputs are out-parameters), run
`loop.for` nests whose kind says how each loop should execute, allocate
intermediate buffers with `loop.alloc`, and do scalar work in `arith`/`math` with
`memref.load`/`memref.store`. `loop.call_packed` calls a function the host
registered by name (TVM's `call_packed`), handing it buffers and scalars.
"""

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    IndexType,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
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
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    MemoryAllocEffect,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
)
from xdsl.utils.exceptions import VerifyException

LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled")
ALLOC_SCOPES = ("global", "shared", "local")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a loop body; implicit in the custom syntax.

    loop.yield
    """

    name = "loop.yield"

    assembly_format = "attr-dict"

    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(ForOp)))


@irdl_op_definition
class ForOp(IRDLOperation):
    """A loop over `[lower, upper)` by `step`, with a kind saying how it executes.

    loop.for %i = %c0 to %c64 step %c1 {  ...  }
    loop.for %j = %c0 to %c16 step %c1 vectorized {  ...  }
    """

    name = "loop.for"

    lower = operand_def(IndexType)
    upper = operand_def(IndexType)
    step = operand_def(IndexType)
    kind = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lower: SSAValue | Operation,
        upper: SSAValue | Operation,
        step: SSAValue | Operation,
        body: Region | Block,
        kind: str = "serial",
    ):
        super().__init__(
            operands=[lower, upper, step],
            properties={"kind": StringAttr(kind)},
            regions=[body if isinstance(body, Region) else Region(body)],
        )

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        if self.kind.data not in LOOP_KINDS:
            raise VerifyException(
                f"expected loop kind serial, parallel, vectorized or unrolled, "
                f"got '{self.kind.data}'"
            )
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            got = ", ".join(str(a.type) for a in args) or "none"
            raise VerifyException(f"expected one index induction variable, got ({got})")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        printer.print_ssa_value(self.lower)
        printer.print_string(" to ")
        printer.print_ssa_value(self.upper)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        if self.kind.data != "serial":
            printer.print_string(f" {self.kind.data}")
        printer.print_string(" ")
        printer.print_region(
            self.body, print_entry_block_args=False, print_block_terminators=False
        )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "ForOp":
        iv = parser.parse_argument(expect_type=False).resolve(IndexType())
        parser.parse_punctuation("=")
        bounds = []
        for keyword in ("", "to", "step"):
            if keyword:
                parser.parse_keyword(keyword)
            bounds.append(
                parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
            )
        kind = "serial"
        for candidate in LOOP_KINDS:
            if parser.parse_optional_keyword(candidate):
                kind = candidate
                break
        body = parser.parse_region([iv])
        attrs = parser.parse_optional_attr_dict()
        if not body.block.ops or not isinstance(body.block.last_op, YieldOp):
            body.block.add_op(YieldOp())
        lower, upper, step = bounds
        op = cls(lower, upper, step, body, kind)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer living until the end of the enclosing block.

        %t = loop.alloc : memref<64x64xf32>
        %r = loop.alloc local : memref<16xf32>
        %s = loop.alloc shared : memref<16x16xf32>
        %d = loop.alloc(%n) : memref<?x64xf32>

    `global` buffers come from the heap (device memory on a GPU), `local` ones
    from the stack (one per thread on a GPU); `shared` ones are shared by the
    threads of a GPU block (a CPU keeps them on the stack). A `global` or
    `local` buffer may have dynamic dims, as MLIR's `memref.alloc`: one
    `index` size operand for each `?`, in order (a CPU takes a dynamic local
    buffer from the heap once per function, `convert-loop-to-scf`).
    """

    name = "loop.alloc"

    scope = opt_prop_def(StringAttr)
    sizes = var_operand_def(IndexType)
    buffer = result_def(MemRefType)

    traits = traits_def(MemoryAllocEffect())

    def __init__(
        self,
        buffer_type: MemRefType,
        scope: str = "global",
        sizes: Sequence[SSAValue] = (),
    ):
        super().__init__(
            operands=[list(sizes)],
            result_types=[buffer_type],
            properties={"scope": StringAttr(scope)} if scope != "global" else {},
        )

    @property
    def scope_name(self) -> str:
        return "global" if self.scope is None else self.scope.data

    def verify_(self) -> None:
        if self.scope_name not in ALLOC_SCOPES:
            raise VerifyException(
                f"expected scope global, shared or local, got '{self.scope_name}'"
            )
        buffer_type = self.buffer.type
        assert isinstance(buffer_type, MemRefType)
        dynamic = sum(1 for d in buffer_type.get_shape() if d < 0)
        if dynamic and self.scope_name == "shared":
            raise VerifyException(
                f"expected a static shape for a {self.scope_name} buffer, got "
                f"{buffer_type}"
            )
        if len(self.sizes) != dynamic:
            raise VerifyException(
                f"expected {dynamic} size operands (one per dynamic dim of "
                f"{buffer_type}), got {len(self.sizes)}"
            )

    def print(self, printer: Printer) -> None:
        if self.scope_name != "global":
            printer.print_string(f" {self.scope_name}")
        if self.sizes:
            printer.print_string("(")
            printer.print_list(self.sizes, printer.print_operand)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser) -> "AllocOp":
        scope = "global"
        for candidate in ALLOC_SCOPES:
            if parser.parse_optional_keyword(candidate):
                scope = candidate
                break
        sizes = parser.parse_optional_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        buffer_type = parser.parse_type()
        if not isinstance(buffer_type, MemRefType):
            parser.raise_error(f"expected a memref type, got {buffer_type}")
        operands = parser.resolve_operands(
            sizes or [], [IndexType()] * len(sizes or []), parser.pos
        )
        op = cls(buffer_type, scope, operands)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class CallPackedOp(IRDLOperation):
    """A call of the host function registered as `callee`, with buffers (passed as
    DLTensors), integers, floats and string constants; it may write the buffers.

        loop.call_packed "my.sort"(%A, %B) : memref<16xf32>, memref<16xf32>
        loop.call_packed "my.fill"(%B, "ones", %n) : memref<16xf32>, i64

    String arguments are constants written in place; `args` records where they go
    among the operands (a string for each string argument, `unit` for the next
    operand) and is absent when there are none. The types after `:` are the
    operands' types.
    """

    name = "loop.call_packed"

    callee = prop_def(StringAttr)
    args = opt_prop_def(ArrayAttr)
    arguments = var_operand_def()

    def __init__(
        self,
        callee: str,
        args: Sequence[SSAValue | Operation | str],
    ):
        operands = [a for a in args if not isinstance(a, str)]
        props: dict[str, Attribute] = {"callee": StringAttr(callee)}
        if len(operands) != len(args):
            props["args"] = ArrayAttr(
                [StringAttr(a) if isinstance(a, str) else UnitAttr() for a in args]
            )
        super().__init__(operands=[operands], properties=props)

    @property
    def call_args(self) -> "list[SSAValue | str]":
        """The arguments in call order: operands and string constants."""
        if self.args is None:
            return list(self.arguments)
        operands = iter(self.arguments)
        return [
            a.data if isinstance(a, StringAttr) else next(operands)
            for a in self.args.data
        ]

    def verify_(self) -> None:
        if not self.callee.data:
            raise VerifyException("expected a non-empty callee name, got ''")
        if self.args is not None:
            slots = [a for a in self.args.data if not isinstance(a, StringAttr)]
            if not all(isinstance(a, UnitAttr) for a in slots):
                bad = next(a for a in slots if not isinstance(a, UnitAttr))
                raise VerifyException(
                    f"expected 'args' to hold strings and unit, got {bad}"
                )
            if len(slots) != len(self.arguments):
                raise VerifyException(
                    f"expected {len(slots)} operands for the unit slots of 'args', "
                    f"got {len(self.arguments)}"
                )
        for i, value in enumerate(self.arguments):
            t = value.type
            if isinstance(t, MemRefType):
                if any(d < 0 for d in t.get_shape()):
                    raise VerifyException(
                        f"expected a static shape for operand {i}, got {t}"
                    )
            elif not isinstance(t, IntegerType | IndexType | AnyFloat):
                raise VerifyException(
                    f"expected a memref, integer, index or float for operand {i}, "
                    f"got {t}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.callee.data)
        printer.print_string("(")
        printer.print_list(
            self.call_args,
            lambda a: (
                printer.print_string_literal(a)
                if isinstance(a, str)
                else printer.print_ssa_value(a)
            ),
        )
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        if self.arguments:
            printer.print_string(" : ")
            printer.print_list(self.arguments.types, printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> "CallPackedOp":
        callee = parser.parse_str_literal("expected the callee's name")

        def argument() -> UnresolvedOperand | str:
            text = parser.parse_optional_str_literal()
            return text if text is not None else parser.parse_unresolved_operand()

        args = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, argument)
        attrs = parser.parse_optional_attr_dict()
        operands = [a for a in args if not isinstance(a, str)]
        types = []
        if operands:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(
                Parser.Delimiter.NONE, parser.parse_type
            )
        if len(types) != len(operands):
            parser.raise_error(
                f"expected {len(operands)} operand types, got {len(types)}"
            )
        resolved = iter(
            parser.resolve_operand(o, t) for o, t in zip(operands, types, strict=True)
        )
        op = cls(callee, [a if isinstance(a, str) else next(resolved) for a in args])
        op.attributes.update(attrs)
        return op


Loop = Dialect("loop", [ForOp, YieldOp, AllocOp, CallPackedOp])
