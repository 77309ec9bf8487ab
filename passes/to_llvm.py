"""What every `convert-<dialect>-to-llvm` pass shares (this file is not a pass).

Each conversion is one walk over the module with a table from op class to handler;
no recursive type-conversion patterns. Where a converted op meets a value of the old
type, `as_llvm` inserts a `builtin.unrealized_conversion_cast`; `replace` casts new
results back to the old types for users not converted yet. xDSL's
`reconcile-unrealized-casts` removes the cast pairs at the end of the pipeline.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    IndexType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnrealizedConversionCastOp,
    UnregisteredOp,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException


def llvm_type(t: Attribute) -> Attribute:
    """The llvm-dialect type ember lowers `t` to: index → i64, memref → !llvm.ptr."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return llvm.LLVMPointerType()
    if isinstance(t, VectorType) and isinstance(t.element_type, IndexType):
        return VectorType(i64, t.get_shape())
    return t


def cast(value: SSAValue, to: Attribute, before: Operation) -> SSAValue:
    """`value` as type `to`, through an unrealized cast inserted before `before`."""
    if value.type == to:
        return value
    op = UnrealizedConversionCastOp.get([value], [to])
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.results[0]


def as_llvm(value: SSAValue, before: Operation) -> SSAValue:
    """`value` in its llvm-dialect type, cast before `before` if it is not yet."""
    return cast(value, llvm_type(value.type), before)


def replace(op: Operation, new_ops: list[Operation], results: list[SSAValue]) -> None:
    """Replace `op` by `new_ops`; `results` stand for its results, cast back to the
    old types where they differ so that unconverted users still verify."""
    casts: list[Operation] = []
    old_typed: list[SSAValue] = []
    for old, new in zip(op.results, results, strict=True):
        if old.type == new.type:
            old_typed.append(new)
            continue
        back = UnrealizedConversionCastOp.get([new], [old.type])
        casts.append(back)
        old_typed.append(back.results[0])
    Rewriter.replace_op(op, [*new_ops, *casts], old_typed)


def retype_block_args(block: Block) -> None:
    """Give `block`'s arguments their llvm-dialect types in place; users not converted
    yet see the old type through a cast at the top of the block."""
    for arg in block.args:
        new_type = llvm_type(arg.type)
        if new_type == arg.type:
            continue
        old_type = arg.type
        new = Rewriter.replace_value_with_new_type(arg, new_type)
        if not new.uses:
            continue
        back = UnrealizedConversionCastOp.get([new], [old_type])
        Rewriter.insert_op(back, InsertPoint.at_start(block))
        new.replace_uses_with_if(
            back.results[0], lambda use, back=back: use.operation is not back
        )


def declare_function(
    anchor: Operation, name: str, inputs: list[Attribute], output: Attribute
) -> None:
    """Declare the external `llvm.func @name` in `anchor`'s module unless it exists.

    An existing symbol of that name that is not an `llvm.func` is a diagnostic.
    """
    existing = SymbolTable.lookup_symbol(anchor, name)
    if isinstance(existing, llvm.FuncOp):
        return
    if existing is not None:
        raise PassFailedException(
            f"cannot declare llvm.func @{name}: the symbol is taken by "
            f"'{existing.name}'"
        )
    module = anchor.get_toplevel_object()
    assert isinstance(module, ModuleOp)
    ftype = llvm.LLVMFunctionType(inputs, output)
    module.body.block.add_op(
        llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external"))
    )


Handler = Callable[[Operation], None]


@dataclass(frozen=True)
class ConvertToLLVMPass(ModulePass):
    """Base of the `convert-<dialect>-to-llvm` passes.

    Subclasses set `dialect` and return their handlers from `handlers()`; a handler
    replaces one op (use `as_llvm` and `replace`). After the walk, any op of
    `dialect` that is left is reported as a diagnostic naming it.
    """

    dialect: ClassVar[str]

    def handlers(self) -> dict[type[Operation], Handler]:
        raise NotImplementedError

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = self.handlers()
        for inner in list(op.walk()):
            handler = table.get(type(inner))
            if handler is not None:
                handler(inner)
        check_converted(op, self.dialect, self.name)


def op_name(op: Operation) -> str:
    """The name of `op`, also when it is unregistered."""
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def cannot_lower(pass_name: str, op: Operation, why: str) -> PassFailedException:
    """The diagnostic of a conversion that rejects `op`, naming its symbol (the
    function it is in, or its own)."""
    where, anchor = "", op
    while anchor is not None:
        if isinstance(name := anchor.properties.get("sym_name"), StringAttr):
            where = f" in @{name.data}" if anchor is not op else f" @{name.data}"
            break
        anchor = anchor.parent_op()
    return PassFailedException(
        f"{pass_name}: cannot lower '{op_name(op)}'{where}: {why}"
    )


def check_converted(module: ModuleOp, dialect: str, pass_name: str) -> None:
    """Fail with a diagnostic naming the first op of `dialect` left in `module`."""
    prefix = dialect + "."
    for left in module.walk():
        if left.name.startswith(prefix):
            raise PassFailedException(
                f"{pass_name}: failed to convert '{left.name}' to the llvm dialect: "
                f"{left}"
            )
