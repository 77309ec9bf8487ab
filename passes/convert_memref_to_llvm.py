"""convert-memref-to-llvm: buffers as bare pointers (memref → llvm dialect).

ember's bare-pointer convention: a memref with a static shape and the identity layout
is one `!llvm.ptr` to its first element. An access is a `getelementptr` on the
row-major linearized index, so inner loops carry no descriptor arithmetic. A
dynamic dim is allowed where its size is known: a function argument's from
`ember.dims` and the symbol arguments, a `memref.alloc`'s from its size operands.
Anything else the convention cannot express (other dynamic shapes, layouts,
memory spaces) is a diagnostic naming the op.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from xdsl.dialects import arith, func, llvm, memref, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    OpResult,
    Region,
    SSAValue,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from ember.passes.to_llvm import (
    ConvertToLLVMPass,
    Handler,
    cannot_lower,
    declare_function,
    floor_size,
    llvm_type,
    replace,
)
from ember.runtime.abi import SCRATCH_RELEASE
from ember.runtime.shape_expr import sym_prod

BUFFER_ALIGNMENT = 64
"""Heap and stack buffers start on a cache line (and a full AVX-512 vector)."""

SCRATCH_TAKE = "__ember_scratch_take"
SCRATCH_GIVE = "__ember_scratch_give"
SCRATCH_DROP = "__ember_scratch_drop"
SCRATCH_SLOT = "__ember_scratch."
"""A heap buffer is taken from its site's slot (`SCRATCH_SLOT` n, a module
global) and given back to it, not allocated and freed at each call: see
`codegen.define_scratch` for the functions, and the runtime's modules, which
call `SCRATCH_RELEASE` when they go."""

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


def bare_pointer_error(t: MemRefType, symbolic: bool = False) -> str | None:
    """Why `t` cannot lower to a bare pointer, or None if it can (`symbolic`:
    dynamic dims are allowed, their sizes given as the function's symbols)."""
    if not symbolic and not t.has_static_shape():
        return f"expected a static shape, got {t}"
    if not isinstance(t.layout, NoneAttr):
        return f"expected the identity layout, got {t}"
    if not isinstance(t.memory_space, NoneAttr):
        return f"expected the default memory space, got {t}"
    if element_bytes(t.element_type) is None:
        return f"unsupported element type in {t}"
    return None


def _buffer_type(
    op: Operation, value: SSAValue | Attribute, sized: bool = False
) -> MemRefType:
    """`value`'s memref type, or a diagnostic if it is no bare pointer (`sized`:
    its dynamic sizes are known, as those of a dynamic allocation)."""
    t = value.type if isinstance(value, SSAValue) else value
    sized |= isinstance(value, BlockArgument) and _function_of(value) is not None
    error = bare_pointer_error(t, sized) if isinstance(t, MemRefType) else f"got {t}"
    if error is not None:
        raise cannot_lower("convert-memref-to-llvm", op, error)
    assert isinstance(t, MemRefType)
    return t


# Access ops are built with `create` and shared property attributes: xDSL's
# verifying constructors cost about 8x more, and a kernel has many accesses.
_NSW = {"overflowFlags": IntegerAttr(1, 32)}  # OverflowAttr's encoding of nsw
_GEP = {
    "rawConstantIndices": DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL]),
    "noWrapFlags": IntegerAttr(0, 32),
    "inbounds": UnitAttr(),
}
_PTR = llvm.LLVMPointerType()


class _Accesses:
    """Lowers loads and stores. One cast per converted value (placed at its
    definition) and one constant per function and stride are shared by all
    accesses, so each access costs only its index arithmetic, GEP and load/store."""

    def __init__(self) -> None:
        self.values: dict[SSAValue, SSAValue] = {}
        self.dynamic: dict[SSAValue, list] = {}
        self.constants: dict[tuple[Block, int], SSAValue] = {}
        self.memory_props: dict[int, dict[str, Attribute]] = {}

    def llvm_value(self, value: SSAValue) -> SSAValue:
        new_type = llvm_type(value.type)
        if new_type == value.type:
            return value
        if (known := self.values.get(value)) is None:
            cast = UnrealizedConversionCastOp.get([value], [new_type])
            if isinstance(value, OpResult):
                Rewriter.insert_op(cast, InsertPoint.after(value.op))
            else:
                assert isinstance(value, BlockArgument)
                Rewriter.insert_op(cast, InsertPoint.at_start(value.block))
            known = self.values[value] = cast.results[0]
        return known

    def constant(self, value: int, user: Operation) -> SSAValue:
        entry = _entry_block(user)
        if (known := self.constants.get((entry, value))) is None:
            const = llvm.ConstantOp(IntegerAttr(value, i64), i64)
            Rewriter.insert_op(const, InsertPoint.at_start(entry))
            known = self.constants[entry, value] = const.result
        return known

    def address(
        self,
        op: Operation,
        t: MemRefType,
        buffer: SSAValue,
        indices: Sequence[SSAValue],
    ) -> SSAValue:
        """`&buffer[indices]`: a GEP on the row-major linear index (i64, nsw)."""
        base = self.llvm_value(buffer)
        if not indices:
            return base
        shape = t.get_shape()
        strides = self.strides(op, buffer) if not t.has_static_shape() else None
        ops: list[Operation] = []
        linear: SSAValue | None = None
        for dim, index in enumerate(indices):
            term = self.llvm_value(index)
            stride = prod(shape[dim + 1 :]) if strides is None else strides[dim]
            if stride != 1:
                if not isinstance(stride, SSAValue):
                    stride = self.constant(stride, op)
                operands = [term, stride]
                ops.append(
                    llvm.MulOp.create(
                        operands=operands, result_types=[i64], properties=_NSW
                    )
                )
                term = ops[-1].results[0]
            if linear is not None:
                operands = [linear, term]
                ops.append(
                    llvm.AddOp.create(
                        operands=operands, result_types=[i64], properties=_NSW
                    )
                )
                term = ops[-1].results[0]
            linear = term
        assert linear is not None
        props = {**_GEP, "elem_type": llvm_type(t.element_type)}
        ops.append(
            llvm.GEPOp.create(
                operands=[base, linear], result_types=[_PTR], properties=props
            )
        )
        Rewriter.insert_op(ops, InsertPoint.before(op))
        return ops[-1].results[0]

    def strides(self, op: Operation, buffer: SSAValue) -> list:
        """The row-major strides of a symbolic buffer argument (an int, or an
        i64 value computed once at the function's entry from its symbol
        arguments and `ember.dims`)."""
        if (known := self.dynamic.get(buffer)) is not None:
            return known
        from ember.passes.func_packed_abi import buffer_dims, symbol_args

        f = _function_of(buffer) if isinstance(buffer, BlockArgument) else None
        if f is None:
            raise cannot_lower(
                "convert-memref-to-llvm", op, f"expected the sizes of {buffer.type}"
            )
        assert isinstance(buffer, BlockArgument)
        try:
            dims = buffer_dims(f, buffer.index)
        except ValueError as e:
            raise cannot_lower("convert-memref-to-llvm", op, str(e)) from None
        names = symbol_args(f)
        block = f.body.blocks.first
        assert block is not None
        symbols = {
            name: self.llvm_value(block.args[len(block.args) - len(names) + k])
            for k, name in enumerate(names)
        }
        ops: list[Operation] = []

        def emit(value) -> SSAValue | int:
            if isinstance(value, int):
                return value
            total: SSAValue | int = value.const
            for monomial, coeff in value.terms:
                term: SSAValue | int = coeff
                for atom in monomial:
                    x = atom_value(atom)
                    term = x if term == 1 else _binary(llvm.MulOp, term, x, ops)
                total = term if total == 0 else _binary(llvm.AddOp, total, term, ops)
            return total

        def atom_value(atom) -> SSAValue:
            if atom.op is None:
                if atom.name not in symbols:
                    raise cannot_lower(
                        "convert-memref-to-llvm",
                        op,
                        f"no symbol argument {atom.name} for {buffer.type}",
                    )
                return symbols[atom.name]
            x, y = (_as_value(emit(a), ops) for a in atom.args)
            if atom.op in ("floordiv", "mod"):

                def add(new: Operation) -> SSAValue:
                    ops.append(new)
                    return new.results[0]

                return floor_size(atom.op, x, y, add)
            flag = llvm.ICmpPredicateFlag("slt" if atom.op == "min" else "sgt")
            cmp = llvm.ICmpOp(x, y, IntegerAttr(flag.to_int(), i64))
            ops.append(cmp)
            ops.append(llvm.SelectOp(cmp.results[0], x, y))
            return ops[-1].results[0]

        strides = [emit(sym_prod(dims[k + 1 :])) for k in range(len(dims))]
        # after the symbols' casts at the entry, before any use
        anchor = max(
            (v.owner for v in symbols.values() if isinstance(v, OpResult)),
            key=lambda o: block.get_operation_index(o),
            default=None,
        )
        where = InsertPoint.after(anchor) if anchor else InsertPoint.at_start(block)
        Rewriter.insert_op(ops, where)
        self.dynamic[buffer] = strides
        return strides

    def alloc(self, op: memref.AllocOp) -> None:
        """A heap buffer; one with dynamic dims takes `round_up(bytes)` bytes
        computed from its size operands, and its strides (row-major, from the
        same sizes) are computed once, where it is allocated."""
        if not op.dynamic_sizes:
            return _alloc(op)
        t = _buffer_type(op, op.memref, sized=True)
        align = _buffer_alignment(op)
        ops: list[Operation] = []
        sizes = [self.llvm_value(v) for v in op.dynamic_sizes]
        given = iter(sizes)
        extents = [next(given) if d < 0 else d for d in t.get_shape()]
        strides: list[SSAValue | int] = []
        stride: SSAValue | int = 1
        for extent in reversed(extents[1:]):
            strides.insert(0, stride)
            stride = _product(stride, extent, ops)
        strides.insert(0, stride)
        item = element_bytes(t.element_type)
        assert item is not None
        nbytes: SSAValue | int = prod(d for d in extents if isinstance(d, int)) * item
        for size in sizes:
            nbytes = _product(nbytes, size, ops)
        # aligned_alloc wants a multiple of the alignment (C11), and at least
        # one line, as a static buffer gets.
        nbytes = _binary(llvm.AddOp, nbytes, align - 1, ops)
        nbytes = _binary(llvm.AndOp, nbytes, -align, ops)
        flag = llvm.ICmpPredicateFlag("ult")
        align_value = _i64(align, ops)
        ops.append(llvm.ICmpOp(nbytes, align_value, IntegerAttr(flag.to_int(), i64)))
        ops.append(llvm.SelectOp(ops[-1].results[0], align_value, nbytes))
        nbytes = ops[-1].results[0]
        slot = _scratch_slot(op)
        call = llvm.CallOp(
            SCRATCH_TAKE, slot.result, nbytes, align_value, return_type=_PTR
        )
        buffer = call.results[0]
        buffer.name_hint = op.memref.name_hint
        back = UnrealizedConversionCastOp.get([buffer], [t])
        Rewriter.insert_op([*ops, slot, call, back], InsertPoint.before(op))
        op.memref.replace_all_uses_with(back.results[0])
        self.values[back.results[0]] = buffer
        self.dynamic[back.results[0]] = strides
        Rewriter.erase_op(op)

    def dealloc(self, op: memref.DeallocOp) -> None:
        _buffer_type(op, op.memref, op.memref in self.dynamic)
        declare_function(op, SCRATCH_GIVE, [_PTR], llvm.LLVMVoidType())
        replace(op, [llvm.CallOp(SCRATCH_GIVE, self.llvm_value(op.memref))], [])

    def view(self, op: memref.ViewOp) -> None:
        """A typed view of an i8 buffer at a byte offset: a GEP of i8 by the offset.

        The static memory plan of a model places every intermediate tensor at a
        byte offset of one workspace buffer; a view is that tensor's bare pointer.
        When the offset is a constant the view must lie inside its source (a plan
        that overflows its workspace is a compiler bug, caught here rather than as
        memory corruption at run time)."""
        source = _buffer_type(op, op.source)
        result = _buffer_type(op, op.result, sized=True)  # its sizes are operands
        offset = _constant_index(op.byte_shift)
        static = source.has_static_shape() and result.has_static_shape()
        if offset is not None and static:
            end = offset + _byte_size(result)
            if offset < 0 or end > _byte_size(source):
                raise cannot_lower(
                    "convert-memref-to-llvm",
                    op,
                    f"expected the view's bytes [{offset}, {end}) inside the "
                    f"{_byte_size(source)}-byte source, got {result} at byte "
                    f"{offset}",
                )
        operands = [self.llvm_value(op.source), self.llvm_value(op.byte_shift)]
        props = {**_GEP, "elem_type": IntegerType(8)}
        gep = llvm.GEPOp.create(
            operands=operands, result_types=[_PTR], properties=props
        )
        gep.results[0].name_hint = op.result.name_hint
        Rewriter.insert_op(gep, InsertPoint.before(op))
        if op.result.uses:
            # Users not converted yet see a memref; accesses use the GEP itself.
            back = UnrealizedConversionCastOp.get([gep.results[0]], [op.result.type])
            Rewriter.insert_op(back, InsertPoint.before(op))
            op.result.replace_all_uses_with(back.results[0])
            self.values[back.results[0]] = gep.results[0]
        op.detach()
        op.erase()

    def memory(self, t: MemRefType) -> dict[str, Attribute]:
        """The properties of an aligned, non-atomic llvm.load/store of `t`'s elements."""
        size = element_bytes(t.element_type)
        assert size is not None
        if (props := self.memory_props.get(size)) is None:
            props = self.memory_props[size] = {
                "ordering": IntegerAttr(0, i64),
                "alignment": IntegerAttr(size, i64),
            }
        return props

    def load(self, op: memref.LoadOp | vector.LoadOp) -> None:
        buffer, result = (
            (op.memref, op.res)
            if isinstance(op, memref.LoadOp)
            else (op.base, op.result)
        )
        t = _buffer_type(op, buffer, buffer in self.dynamic)
        ptr = self.address(op, t, buffer, op.indices)
        result_type = llvm_type(result.type)
        stored = _bytes_of_bits(result_type)
        load = llvm.LoadOp.create(
            operands=[ptr],
            result_types=[stored or result_type],
            properties=self.memory(t),
        )
        if stored is None:
            replace(op, [load], [load.results[0]])
            return
        trunc = llvm.TruncOp(load.results[0], result_type)
        replace(op, [load, trunc], [trunc.results[0]])

    def store(self, op: memref.StoreOp | vector.StoreOp) -> None:
        buffer, value = (
            (op.memref, op.value)
            if isinstance(op, memref.StoreOp)
            else (op.base, op.vector)
        )
        t = _buffer_type(op, buffer, buffer in self.dynamic)
        ptr = self.address(op, t, buffer, op.indices)
        operand = self.llvm_value(value)
        ops: list[Operation] = []
        if (stored := _bytes_of_bits(operand.type)) is not None:
            ops.append(llvm.ZExtOp(operand, stored))
            operand = ops[-1].results[0]
        ops.append(
            llvm.StoreOp.create(operands=[operand, ptr], properties=self.memory(t))
        )
        replace(op, ops, [])


def _bytes_of_bits(t: Attribute) -> VectorType | None:
    """The vector of bytes a vector of i1 `t` is stored as (an i1 takes a byte
    in ember's buffers; LLVM's <N x i1> in memory is N bits), else None."""
    if isinstance(t, VectorType) and t.element_type == i1:
        return VectorType(IntegerType(8), t.get_shape())
    return None


def _function_of(arg: BlockArgument) -> func.FuncOp | None:
    """The function whose entry block `arg` is an argument of, if any."""
    owner = arg.block.parent_op()
    if isinstance(owner, func.FuncOp) and arg.block is owner.body.blocks.first:
        return owner
    return None


def _i64(value: int, ops: list[Operation]) -> SSAValue:
    ops.append(llvm.ConstantOp(IntegerAttr(value, i64), i64))
    return ops[-1].results[0]


def _as_value(value: SSAValue | int, ops: list[Operation]) -> SSAValue:
    return _i64(value, ops) if isinstance(value, int) else value


def _binary(kind, a, b, ops: list[Operation]) -> SSAValue:
    ops.append(kind(_as_value(a, ops), _as_value(b, ops)))
    return ops[-1].results[0]


def _product(
    a: SSAValue | int, b: SSAValue | int, ops: list[Operation]
) -> SSAValue | int:
    """`a * b`, folded where both are ints, else an `llvm.mul nsw`."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1 or b == 1:
        return b if a == 1 else a
    operands = [_as_value(a, ops), _as_value(b, ops)]
    ops.append(
        llvm.MulOp.create(operands=operands, result_types=[i64], properties=_NSW)
    )
    return ops[-1].results[0]


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
    slot = _scratch_slot(op)
    consts = [llvm.ConstantOp(IntegerAttr(v, i64), i64) for v in (nbytes, align)]
    call = llvm.CallOp(SCRATCH_TAKE, slot.result, *consts, return_type=_PTR)
    replace(op, [slot, *consts, call], [call.returned])  # type: ignore[list-item]


def _scratch_slot(op: memref.AllocOp) -> llvm.AddressOfOp:
    """The address of a new slot for the heap buffer `op` allocates: a null
    pointer global of the module that `SCRATCH_TAKE` takes a block from and
    `SCRATCH_GIVE` puts it back in, which the module's `SCRATCH_RELEASE`
    (weak: a library of several objects keeps one) drops."""
    module = op.get_toplevel_object()
    assert isinstance(module, ModuleOp)
    taken = {
        g.sym_name.data for g in module.body.block.ops if isinstance(g, llvm.GlobalOp)
    }
    name = next(
        f"{SCRATCH_SLOT}{n}"
        for n in range(len(taken) + 1)
        if f"{SCRATCH_SLOT}{n}" not in taken
    )
    body = Region(Block())
    zero = llvm.ZeroOp(result_types=[_PTR])
    body.block.add_ops([zero, llvm.ReturnOp(zero.res)])
    module.body.block.add_op(
        llvm.GlobalOp(_PTR, name, "internal", alignment=8, body=body)
    )
    declare_function(op, SCRATCH_TAKE, [_PTR, i64, i64], _PTR)
    declare_function(op, SCRATCH_DROP, [_PTR], llvm.LLVMVoidType())
    release = SymbolTable.lookup_symbol(module, SCRATCH_RELEASE)
    if release is None:
        block = Block()
        block.add_op(llvm.ReturnOp())
        release = llvm.FuncOp(
            SCRATCH_RELEASE,
            llvm.LLVMFunctionType([], llvm.LLVMVoidType()),
            linkage=llvm.LinkageAttr("weak"),
            body=Region(block),
        )
        module.body.block.add_op(release)
    assert isinstance(release, llvm.FuncOp) and release.body.block.last_op is not None
    address = llvm.AddressOfOp(name, _PTR)
    drop = llvm.CallOp(SCRATCH_DROP, address.result)
    Rewriter.insert_op([address, drop], InsertPoint.before(release.body.block.last_op))
    return llvm.AddressOfOp(name, _PTR)


def _alloca(op: memref.AllocaOp) -> None:
    """A static-size `llvm.alloca` at the top of the function's entry block, wherever
    the memref.alloca was: one in a loop body would grow the stack every iteration
    (LLVM frees allocas only on return), and only entry-block allocas are static
    frame slots to LLVM. A buffer scoped to a loop body may reuse one slot, since
    no iteration's buffer outlives it."""
    t = _buffer_type(op, op.memref)
    count = llvm.ConstantOp(IntegerAttr(prod(t.get_shape()), i64), i64)
    alloca = llvm.AllocaOp(
        count, llvm_type(t.element_type), alignment=_buffer_alignment(op)
    )
    Rewriter.insert_op([count, alloca], InsertPoint.at_start(_entry_block(op)))
    replace(op, [], [alloca.res])


def _entry_block(op: Operation) -> Block:
    """The entry block of the function (the op under the module) holding `op`."""
    function = op
    while not isinstance(parent := function.parent_op(), ModuleOp | None):
        function = parent
    entry = function.regions[0].blocks.first if function.regions else None
    if entry is None:
        raise cannot_lower(
            "convert-memref-to-llvm", op, "expected to be inside a function body"
        )
    return entry


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
    # _buffer_type rejected any other element (bare_pointer_error)
    assert isinstance(elem, IntegerType | AnyFloat), elem
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


def _constant_index(value: SSAValue) -> int | None:
    """The value of a constant index (`arith.constant`, or an `llvm.mlir.constant`
    cast to index when arith was lowered first), or None if it is not one."""
    op = value.owner
    while isinstance(op, UnrealizedConversionCastOp) and len(op.inputs) == 1:
        op = op.inputs[0].owner
    if isinstance(op, arith.ConstantOp | llvm.ConstantOp) and isinstance(
        op.value, IntegerAttr
    ):
        return op.value.value.data
    return None


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
        %s = llvm.mlir.addressof @__ember_scratch.0 : !llvm.ptr
        %T = llvm.call @__ember_scratch_take(%s, %c64, %c64) : (!llvm.ptr, i64, i64) -> !llvm.ptr
        llvm.call @__ember_scratch_give(%T) : (!llvm.ptr) -> ()

    A heap buffer is taken from a slot of the module (an internal null pointer
    global a site, `SCRATCH_SLOT`) and given back to it: a kernel called again
    reuses its blocks instead of allocating them, and the module's weak
    `__ember_scratch_release` drops them (`codegen.define_scratch` defines the
    functions over `aligned_alloc` and `free`).

    A static `memref.view` of an i8 buffer is the buffer's pointer plus the byte
    offset (the static memory plan's views of a model's workspace):

        %v = memref.view %ws[%c128][] : memref<1024xi8> to memref<4x8xf32>
        →  %v = llvm.getelementptr inbounds %ws[%c128] : (!llvm.ptr, i64) -> !llvm.ptr, i8

    A `memref.alloc` with dynamic sizes allocates the bytes they make, rounded
    up to the alignment; accesses to it stride by the same sizes:

        %T = memref.alloc(%n) : memref<?x8xf32>
        →  %b = llvm.mul %c32, %n overflow<nsw> : i64    // then round_up(%b, 64)
           %T = llvm.call @__ember_scratch_take(%s, %b', %c64) : (!llvm.ptr, i64, i64) -> !llvm.ptr

    `memref.alloca` becomes an `llvm.alloca` aligned to 64 bytes at the top of the
    function's entry block, also when it was in a loop; `memref.global` /
    `memref.get_global` become `llvm.mlir.global` (a flat array) / `addressof`.
    Block arguments and function signatures are left to convert-func-to-llvm and
    convert-cf-to-llvm; values meet through unrealized casts.
    """

    name = "convert-memref-to-llvm"
    dialect = "memref"

    def handlers(self) -> dict[type[Operation], Handler]:
        accesses = _Accesses()
        return {
            memref.LoadOp: accesses.load,
            memref.StoreOp: accesses.store,
            vector.LoadOp: accesses.load,
            vector.StoreOp: accesses.store,
            memref.AllocOp: accesses.alloc,
            memref.DeallocOp: accesses.dealloc,
            memref.AllocaOp: _alloca,
            memref.GlobalOp: _global,
            memref.GetGlobalOp: _get_global,
            memref.ViewOp: accesses.view,
        }  # type: ignore[dict-item]
