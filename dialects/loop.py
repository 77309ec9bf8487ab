"""The `loop` dialect: explicit loop nests over buffers, TVM's TIR level.

Functions at this level take `memref` buffers (outputs are out-parameters), run
`loop.for` nests whose kind says how each loop should execute, allocate
intermediate buffers with `loop.alloc`, and do scalar work in `arith`/`math` with
`memref.load`/`memref.store`.
"""

from xdsl.dialects.builtin import IndexType, MemRefType, StringAttr
from xdsl.ir import Block, Dialect, Operation, Region, SSAValue
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
)
from xdsl.parser import Parser
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
ALLOC_SCOPES = ("global", "local")


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
        op = cls(*bounds, body, kind)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer living until the end of the enclosing block.

        %t = loop.alloc : memref<64x64xf32>
        %r = loop.alloc local : memref<16xf32>

    `global` buffers come from the heap, `local` ones from the stack.
    """

    name = "loop.alloc"

    scope = opt_prop_def(StringAttr)
    buffer = result_def(MemRefType)

    traits = traits_def(MemoryAllocEffect())

    def __init__(self, buffer_type: MemRefType, scope: str = "global"):
        super().__init__(
            result_types=[buffer_type],
            properties={"scope": StringAttr(scope)} if scope != "global" else {},
        )

    @property
    def scope_name(self) -> str:
        return "global" if self.scope is None else self.scope.data

    def verify_(self) -> None:
        if self.scope_name not in ALLOC_SCOPES:
            raise VerifyException(
                f"expected scope global or local, got '{self.scope_name}'"
            )
        buffer_type = self.buffer.type
        assert isinstance(buffer_type, MemRefType)
        if any(d < 0 for d in buffer_type.get_shape()):
            raise VerifyException(f"expected a static shape, got {buffer_type}")

    def print(self, printer: Printer) -> None:
        if self.scope_name != "global":
            printer.print_string(f" {self.scope_name}")
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
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        buffer_type = parser.parse_type()
        if not isinstance(buffer_type, MemRefType):
            parser.raise_error(f"expected a memref type, got {buffer_type}")
        op = cls(buffer_type, scope)
        op.attributes.update(attrs)
        return op


Loop = Dialect("loop", [ForOp, YieldOp, AllocOp])
