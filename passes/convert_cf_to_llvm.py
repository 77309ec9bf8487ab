"""convert-cf-to-llvm: branches, switches and asserts (cf → llvm dialect).

Besides the terminators, this pass owns the arguments of every non-entry block of a
function (`func.func` or `llvm.func`): they take their llvm-dialect types (index →
i64, memref → !llvm.ptr). Entry blocks belong to convert-func-to-llvm.
"""

from dataclasses import dataclass
from hashlib import sha1

from xdsl.dialects import cf, func, llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i8, i32, i64
from xdsl.ir import Block, Operation
from xdsl.rewriter import Rewriter
from xdsl.traits import SymbolTable

from ember.dialects.llvm import SwitchOp
from ember.passes.to_llvm import (
    ConvertToLLVMPass,
    Handler,
    as_llvm,
    cannot_lower,
    declare_function,
    replace,
    retype_block_args,
)


def _retype_blocks(op: func.FuncOp | llvm.FuncOp) -> None:
    for block in list(op.body.blocks)[1:]:
        retype_block_args(block)


def _br(op: cf.BranchOp) -> None:
    args = [as_llvm(a, op) for a in op.arguments]
    replace(op, [llvm.BrOp(op.successor, *args)], [])


def _cond_br(op: cf.ConditionalBranchOp) -> None:
    then_args = [as_llvm(a, op) for a in op.then_arguments]
    else_args = [as_llvm(a, op) for a in op.else_arguments]
    new = llvm.CondBrOp(op.cond, op.then_block, then_args, op.else_block, else_args)
    replace(op, [new], [])


def _switch(op: cf.SwitchOp) -> None:
    if op.default_operands or op.case_operands:
        raise cannot_lower(
            "convert-cf-to-llvm",
            op,
            "expected no block operands (llvm.switch has none)",
        )
    values = op.case_values.get_values() if op.case_values is not None else ()
    cases = list(zip(values, op.case_blocks, strict=True))
    new = SwitchOp(as_llvm(op.flag, op), op.default_block, cases)  # type: ignore[arg-type]
    replace(op, [new], [])


def define_string(module: ModuleOp, symbol: str, text: str) -> str:
    """Add an internal constant NUL-terminated string global holding `text`,
    named `symbol` (with `_` appended while that name is taken).

    Returns:
        The global's name.
    """
    while SymbolTable.lookup_symbol(module, symbol) is not None:
        symbol += "_"
    data = text.encode() + b"\0"
    module.body.block.add_op(
        llvm.GlobalOp(
            llvm.LLVMArrayType(len(data), i8),
            symbol,
            "internal",
            constant=True,
            value=StringAttr(data.decode()),
        )
    )
    return symbol


def _message(anchor: Operation, text: str) -> str:
    """The name of the string global holding `text`, one per distinct text."""
    name = "__ember_assert_" + sha1(text.encode()).hexdigest()[:12]
    if SymbolTable.lookup_symbol(anchor, name) is not None:
        return name
    module = anchor.get_toplevel_object()
    assert isinstance(module, ModuleOp)
    return define_string(module, name, text)


def _assert(op: cf.AssertOp) -> None:
    """`cf.assert %ok, "msg"` continues if %ok, else writes `assertion failed: msg`
    to stderr (fd 2) and calls `abort`."""
    block = op.parent_block()
    assert block is not None and block.parent is not None
    text = f"assertion failed: {op.msg.data}\n"
    ptr = llvm.LLVMPointerType()
    declare_function(op, "write", [i32, ptr, i64], i64)
    declare_function(op, "abort", [], llvm.LLVMVoidType())
    message = _message(op, text)
    rest = block.split_before(op)
    failed = Block()
    block.parent.add_block(failed)
    block.add_op(llvm.CondBrOp(op.arg, rest, [], failed, []))
    stderr = llvm.ConstantOp(IntegerAttr(2, i32), i32)
    address = llvm.AddressOfOp(message, ptr)
    length = llvm.ConstantOp(IntegerAttr(len(text.encode()), i64), i64)
    failed.add_ops(
        [
            stderr,
            address,
            length,
            llvm.CallOp("write", stderr, address, length, return_type=i64),
            llvm.CallOp("abort"),
            llvm.UnreachableOp(),
        ]
    )
    Rewriter.erase_op(op)


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ConvertToLLVMPass):
    """Lower cf.br/cond_br/switch/assert to llvm.br/cond_br/switch.

    Before:
        ^bb1(%i: index):
          %done = arith.cmpi slt, %i, %n : index
          cf.cond_br %done, ^bb2, ^bb3
        ^bb2:
          cf.br ^bb1(%next : index)

    After (casts between index and i64 elided):
        ^bb1(%i: i64):
          %done = arith.cmpi slt, %i', %n : index
          llvm.cond_br %done, ^bb2, ^bb3
        ^bb2:
          llvm.br ^bb1(%next' : i64)

    `cf.switch` becomes ember's `llvm.switch` and must not pass block operands.
    `cf.assert %ok, "msg"` splits its block: a failed check writes
    `assertion failed: msg` to stderr and calls `abort`.
    """

    name = "convert-cf-to-llvm"
    dialect = "cf"

    def handlers(self) -> dict[type[Operation], Handler]:
        return {
            func.FuncOp: _retype_blocks,
            llvm.FuncOp: _retype_blocks,
            cf.BranchOp: _br,
            cf.ConditionalBranchOp: _cond_br,
            cf.SwitchOp: _switch,
            cf.AssertOp: _assert,
        }  # type: ignore[dict-item]
