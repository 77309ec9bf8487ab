"""convert-func-to-llvm: functions, calls and returns (func → llvm dialect).

Signatures follow `llvm_type`: `index` becomes i64 and a memref becomes a bare
`!llvm.ptr` (so it must have a static shape and the identity layout). Only the entry
block's arguments are retyped here; the other blocks belong to convert-cf-to-llvm.
"""

from dataclasses import dataclass

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from ember.passes.convert_memref_to_llvm import bare_pointer_error
from ember.passes.to_llvm import (
    ConvertToLLVMPass,
    Handler,
    as_llvm,
    cannot_lower,
    llvm_type,
    replace,
    retype_block_args,
)


def _fail(op: Operation, what: str) -> PassFailedException:
    return cannot_lower("convert-func-to-llvm", op, what)


def _lowered(op: Operation, types: tuple[Attribute, ...]) -> list[Attribute]:
    # a symbolic buffer is a bare pointer too: its sizes are the function's
    # symbol arguments (`ember.dims`, read where it is indexed)
    for t in types:
        if isinstance(t, MemRefType) and (error := bare_pointer_error(t, True)):
            raise _fail(op, error)
    return [llvm_type(t) for t in types]


def _result_type(op: Operation, types: tuple[Attribute, ...]) -> Attribute:
    if len(types) > 1:
        raise _fail(op, f"expected at most one result, got {len(types)}")
    return _lowered(op, types)[0] if types else llvm.LLVMVoidType()


def _func(op: func.FuncOp) -> None:
    from ember.passes.func_packed_abi import buffer_dims

    ftype = op.function_type
    for i, t in enumerate(ftype.inputs.data):
        if isinstance(t, MemRefType) and not t.has_static_shape():
            try:
                buffer_dims(op, i)  # its sizes are named, so it can be indexed
            except ValueError as e:
                raise _fail(op, str(e)) from None
    signature = llvm.LLVMFunctionType(
        _lowered(op, ftype.inputs.data), _result_type(op, ftype.outputs.data)
    )
    body = Rewriter.move_region_contents_to_new_regions(op.body)
    if body.blocks:
        retype_block_args(body.blocks[0])
    private = op.sym_visibility is not None and op.sym_visibility.data == "private"
    # A declaration binds to a definition elsewhere, so it must stay external.
    linkage = "internal" if private and body.blocks else "external"
    new = llvm.FuncOp(
        op.sym_name,
        signature,
        linkage=llvm.LinkageAttr(linkage),
        body=body,
        other_props={"arg_attrs": op.arg_attrs, "res_attrs": op.res_attrs},
        extra_attrs=op.attributes,
    )
    Rewriter.replace_op(op, new)


def _return(op: func.ReturnOp) -> None:
    if len(op.arguments) > 1:
        raise _fail(op, f"expected at most one value, got {len(op.arguments)}")
    values = [as_llvm(v, op) for v in op.arguments]
    replace(op, [llvm.ReturnOp(*values)], [])


def _call(op: func.CallOp) -> None:
    result = _result_type(op, op.res.types)
    args = [as_llvm(a, op) for a in op.arguments]
    returns = None if isinstance(result, llvm.LLVMVoidType) else result
    call = llvm.CallOp(op.callee, *args, return_type=returns)
    replace(op, [call], [call.returned] if op.res else [])  # type: ignore[list-item]


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ConvertToLLVMPass):
    """Lower func.func/return/call to llvm.func/return/call.

    Before:
        func.func private @scale(%A: memref<16xf32>, %n: index) -> f32 {
          ...
          func.return %x : f32
        }
        func.func private @expf(f32) -> f32
        %y = func.call @scale(%A, %n) : (memref<16xf32>, index) -> f32

    After:
        llvm.func internal @scale(%A: !llvm.ptr, %n: i64) -> f32 {
          ...   // users of %A, %n see memref/index through unrealized casts
          llvm.return %x : f32
        }
        llvm.func @expf(f32) -> f32
        %y = llvm.call @scale(%A', %n') : (!llvm.ptr, i64) -> f32

    Public functions get external linkage, private definitions internal linkage;
    declarations stay external. Functions with more than one result, and memrefs the
    bare-pointer convention cannot express, are diagnostics.
    """

    name = "convert-func-to-llvm"
    dialect = "func"

    def handlers(self) -> dict[type[Operation], Handler]:
        return {
            func.FuncOp: _func,
            func.ReturnOp: _return,
            func.CallOp: _call,
        }  # type: ignore[dict-item]
