"""convert-memref-to-llvm: buffers as bare pointers (memref → llvm dialect).

ember's bare-pointer convention: a memref with a static shape and the identity layout
is one `!llvm.ptr` to its first element. An access is a `getelementptr` on the
row-major linearized index, so inner loops carry no descriptor arithmetic. Anything
the convention cannot express (dynamic shapes, other layouts, memory spaces) is a
diagnostic naming the op.
"""

from dataclasses import dataclass
from math import prod

from xdsl.dialects import llvm, memref, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from ember.passes.to_llvm import (
    ConvertToLLVMPass,
    Handler,
    as_llvm,
    declare_function,
    llvm_type,
    replace,
)

BUFFER_ALIGNMENT = 64
"""Heap and stack buffers start on a cache line (and a full AVX-512 vector)."""

_FLOAT_BYTES: dict[type[Attribute], int] = {
    Float16Type: 2,
    BFloat16Type: 2,
    Float32Type: 4,
    Float64Type: 8,
}


def element_bytes(t: Attribute) -> int | None:
    """Bytes one element of type `t` takes in a buffer, or None if unsupported."""
    if isinstance(t, IndexType):
        return 8
    if isinstance(t, IntegerType):
        width = t.width.data
        return max(1, width // 8) if width in (1, 8, 16, 32, 64) else None
    return _FLOAT_BYTES.get(type(t))


def bare_pointer_error(t: MemRefType) -> str | None:
    """Why `t` cannot lower to a bare pointer, or None if it can."""
    if not t.has_static_shape():
        return f"expected a static shape, got {t}"
    if not isinstance(t.layout, NoneAttr):
        return f"expected the identity layout, got {t}"
    if not isinstance(t.memory_space, NoneAttr):
        return f"expected the default memory space, got {t}"
    if element_bytes(t.element_type) is None:
        return f"unsupported element type in {t}"
    return None


def cannot_lower(pass_name: str, op: Operation, why: str) -> PassFailedException:
    """The diagnostic of a conversion that rejects `op`, naming its symbol (the
    function it is in, or its own)."""
    where, anchor = "", op
    while anchor is not None:
        if isinstance(name := anchor.properties.get("sym_name"), StringAttr):
            where = f" in @{name.data}" if anchor is not op else f" @{name.data}"
            break
        anchor = anchor.parent_op()
    return PassFailedException(f"{pass_name}: cannot lower '{op.name}'{where}: {why}")


def _buffer_type(op: Operation, value: SSAValue | Attribute) -> MemRefType:
    t = value.type if isinstance(value, SSAValue) else value
    error = bare_pointer_error(t) if isinstance(t, MemRefType) else f"got {t}"
    if error is not None:
        raise cannot_lower("convert-memref-to-llvm", op, error)
    assert isinstance(t, MemRefType)
    return t


def _constant(value: int, before: Operation) -> SSAValue:
    const = llvm.ConstantOp(IntegerAttr(value, i64), i64)
    before.parent_block().insert_op_before(const, before)  # type: ignore[union-attr]
    return const.result


def _element_address(
    op: Operation, buffer: SSAValue, indices: tuple[SSAValue, ...]
) -> SSAValue:
    """`&buffer[indices]`: a GEP on the row-major linear index (i64, nsw)."""
    t = _buffer_type(op, buffer)
    base = as_llvm(buffer, op)
    if not indices:
        return base
    shape = t.get_shape()
    nsw = llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,))
    ops: list[Operation] = []
    linear: SSAValue | None = None
    for dim, index in enumerate(indices):
        term = as_llvm(index, op)
        stride = prod(shape[dim + 1 :])
        if stride != 1:
            mul = llvm.MulOp(term, _constant(stride, op), overflow=nsw)
            ops.append(mul)
            term = mul.res
        if linear is not None:
            add = llvm.AddOp(linear, term, overflow=nsw)
            ops.append(add)
            term = add.res
        linear = term
    elem = llvm_type(t.element_type)
    gep = llvm.GEPOp.from_mixed_indices(base, [linear], elem, inbounds=True)
    ops.append(gep)
    op.parent_block().insert_ops_before(ops, op)  # type: ignore[union-attr]
    return gep.result


def _alignment(t: MemRefType) -> int:
    size = element_bytes(t.element_type)
    assert size is not None
    return size


def _load(op: memref.LoadOp) -> None:
    t = _buffer_type(op, op.memref)
    ptr = _element_address(op, op.memref, tuple(op.indices))
    load = llvm.LoadOp(ptr, llvm_type(op.res.type), alignment=_alignment(t))
    replace(op, [load], [load.dereferenced_value])


def _store(op: memref.StoreOp) -> None:
    t = _buffer_type(op, op.memref)
    ptr = _element_address(op, op.memref, tuple(op.indices))
    store = llvm.StoreOp(as_llvm(op.value, op), ptr, alignment=_alignment(t))
    replace(op, [store], [])


def _vector_load(op: vector.LoadOp) -> None:
    t = _buffer_type(op, op.base)
    ptr = _element_address(op, op.base, tuple(op.indices))
    load = llvm.LoadOp(ptr, llvm_type(op.result.type), alignment=_alignment(t))
    replace(op, [load], [load.dereferenced_value])


def _vector_store(op: vector.StoreOp) -> None:
    t = _buffer_type(op, op.base)
    ptr = _element_address(op, op.base, tuple(op.indices))
    store = llvm.StoreOp(as_llvm(op.vector, op), ptr, alignment=_alignment(t))
    replace(op, [store], [])


def _buffer_alignment(op: memref.AllocOp | memref.AllocaOp) -> int:
    requested = op.alignment.value.data if op.alignment is not None else 0
    return max(BUFFER_ALIGNMENT, requested)


def _byte_size(t: MemRefType) -> int:
    size = element_bytes(t.element_type)
    assert size is not None
    return prod(t.get_shape()) * size


def _alloc(op: memref.AllocOp) -> None:
    t = _buffer_type(op, op.memref)
    align = _buffer_alignment(op)
    # aligned_alloc wants a size that is a multiple of the alignment (C11).
    nbytes = max(align, -(-_byte_size(t) // align) * align)
    ptr = llvm.LLVMPointerType()
    declare_function(op, "aligned_alloc", [i64, i64], ptr)
    consts = [llvm.ConstantOp(IntegerAttr(v, i64), i64) for v in (align, nbytes)]
    call = llvm.CallOp("aligned_alloc", *consts, return_type=ptr)
    replace(op, [*consts, call], [call.returned])  # type: ignore[list-item]


def _dealloc(op: memref.DeallocOp) -> None:
    _buffer_type(op, op.memref)
    declare_function(op, "free", [llvm.LLVMPointerType()], llvm.LLVMVoidType())
    replace(op, [llvm.CallOp("free", as_llvm(op.memref, op))], [])


def _alloca(op: memref.AllocaOp) -> None:
    t = _buffer_type(op, op.memref)
    count = llvm.ConstantOp(IntegerAttr(prod(t.get_shape()), i64), i64)
    alloca = llvm.AllocaOp(
        count, llvm_type(t.element_type), alignment=_buffer_alignment(op)
    )
    replace(op, [count, alloca], [alloca.res])


def _global(op: memref.GlobalOp) -> None:
    t = _buffer_type(op, op.type)
    count = prod(t.get_shape())
    elem = llvm_type(t.element_type)
    value = op.initial_value
    if isinstance(value, UnitAttr):  # uninitialized: zero-filled, like C statics
        data = bytes(_byte_size(t))
    else:
        assert isinstance(value, DenseIntOrFPElementsAttr)
        data = value.data.data * (count if len(value) == 1 else 1)  # splat
    flat = DenseIntOrFPElementsAttr(TensorType(elem, [count]), BytesAttr(data))
    private = op.sym_visibility.data == "private"
    new = llvm.GlobalOp(
        llvm.LLVMArrayType(count, elem),
        op.sym_name,
        "internal" if private else "external",
        constant=op.constant is not None,
        value=flat,
        alignment=op.alignment.value.data if op.alignment is not None else None,
    )
    replace(op, [new], [])


def _get_global(op: memref.GetGlobalOp) -> None:
    _buffer_type(op, op.memref)
    address = llvm.AddressOfOp(op.name_, llvm.LLVMPointerType())
    replace(op, [address], [address.result])


@dataclass(frozen=True)
class ConvertMemRefToLLVMPass(ConvertToLLVMPass):
    """Lower memref (and vector.load/store) ops on bare-pointer buffers to llvm.

    Before:
        %x = memref.load %A[%i, %j] : memref<4x8xf32>
        memref.store %x, %B[%j] : memref<8xf32>
        %T = memref.alloc() : memref<16xf32>
        memref.dealloc %T : memref<16xf32>

    After (casts from memref/index to !llvm.ptr/i64 elided):
        %c8 = llvm.mlir.constant(8 : i64) : i64
        %0 = llvm.mul %i, %c8 overflow<nsw> : i64
        %1 = llvm.add %0, %j overflow<nsw> : i64
        %2 = llvm.getelementptr inbounds %A[%1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        %x = llvm.load %2 {alignment = 4 : i64} : !llvm.ptr -> f32
        %3 = llvm.getelementptr inbounds %B[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        llvm.store %x, %3 {alignment = 4 : i64} : f32, !llvm.ptr
        %T = llvm.call @aligned_alloc(%c64, %c64) : (i64, i64) -> !llvm.ptr
        llvm.call @free(%T) : (!llvm.ptr) -> ()

    `memref.alloca` becomes an `llvm.alloca` aligned to 64 bytes; `memref.global` /
    `memref.get_global` become `llvm.mlir.global` (a flat array) / `addressof`.
    Block arguments and function signatures are left to convert-func-to-llvm and
    convert-cf-to-llvm; values meet through unrealized casts.
    """

    name = "convert-memref-to-llvm"
    dialect = "memref"

    def handlers(self) -> dict[type[Operation], Handler]:
        return {
            memref.LoadOp: _load,
            memref.StoreOp: _store,
            memref.AllocOp: _alloc,
            memref.DeallocOp: _dealloc,
            memref.AllocaOp: _alloca,
            memref.GlobalOp: _global,
            memref.GetGlobalOp: _get_global,
            vector.LoadOp: _vector_load,
            vector.StoreOp: _vector_store,
        }  # type: ignore[dict-item]
