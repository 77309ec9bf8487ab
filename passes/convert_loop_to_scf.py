"""`convert-loop-to-scf`: loop nests and buffers become scf loops and memref ops."""

from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import PassFailedException

from ember.dialects import loop
from ember.passes.affine import constant_value

ALIGNMENT = 64
"""Bytes; a cache line, and enough for any SIMD load on the CPUs ember targets."""


MAX_UNROLL_COPIES = 4096
"""The most copies of a body that unrolling may make (the product of the trip
counts of the unrolled loops around it): beyond it code size, compile time and
the instruction cache all lose, and a schedule should split the loop first."""


@dataclass(frozen=True)
class ConvertLoopToScfPass(ModulePass):
    """Lower `loop.for` to `scf.for` (or unroll it) and `loop.alloc` to memref.

    Before:

        %t = loop.alloc : memref<4xf32>
        loop.for %i = %c0 to %c64 step %c1 parallel { ... }
        loop.for %j = %c0 to %c2 step %c1 unrolled {
          %x = memref.load %t[%j] : memref<4xf32>
        }
        func.return

    After:

        %t = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
        scf.for %i = %c0 to %c64 step %c1 { ... } {ember.loop_kind = "parallel"}
        %j = arith.constant 0 : index
        %x = memref.load %t[%j] : memref<4xf32>
        %j_1 = arith.constant 1 : index
        %x_1 = memref.load %t[%j_1] : memref<4xf32>
        memref.dealloc %t : memref<4xf32>
        func.return

    `serial`, `parallel` and `vectorized` loops all become serial `scf.for` for now
    (outlining to libgomp and explicit SIMD come with schedules); a non-serial kind
    stays on the loop as the discardable attribute `ember.loop_kind`. An `unrolled`
    loop whose bounds and step are `arith.constant`s (step > 0) is replaced by one
    copy of its body per iteration, the induction variable turned into an index
    constant; with other bounds it becomes an `scf.for` marked `unrolled`. A global
    `loop.alloc` becomes a 64-byte aligned `memref.alloc` (with its dynamic sizes,
    `loop.alloc(%n)` → `memref.alloc(%n)`) freed by a `memref.dealloc`
    just before the terminator of its block (the end of the block if it has none); a
    local one becomes an aligned `memref.alloca`. The walk is post-order, so an
    unrolled body is copied after its inner loops are already lowered. Unrolling
    that would make more than `MAX_UNROLL_COPIES` copies of a body (counting the
    unrolled loops around it) fails, naming the loop. So does a loop bound to a
    GPU thread axis (`ember.thread`): a CPU has no thread hierarchy, and the
    message names the targets that take it.
    """

    name = "convert-loop-to-scf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, loop.ForOp) and "ember.thread" in inner.attributes:
                _refuse_bound(inner)
        _lower_nested(op)


def _lower_nested(op: Operation) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in list(block.ops):
                _lower_nested(inner)
                if inner.dialect_name() == "loop":
                    _lower(inner)


def _lower(op: Operation) -> None:
    match op:
        case loop.ForOp():
            _lower_for(op)
        case loop.AllocOp():
            _lower_alloc(op)
        case loop.YieldOp() if isinstance(op.parent_op(), loop.ForOp):
            pass  # replaced with its loop
        case loop.CallPackedOp():
            pass  # convert-call-packed-to-llvm lowers it, once loops are branches
        case _:
            _fail(op, "has no lowering to scf")


def _fail(op: Operation, message: str) -> NoReturn:
    raise PassFailedException(f"convert-loop-to-scf: '{op.name}' {message}")


def _refuse_bound(op: loop.ForOp) -> NoReturn:
    """A CPU runs no thread hierarchy: a bound loop is a GPU schedule."""
    tag = op.attributes["ember.thread"]
    tag = tag.data if isinstance(tag, StringAttr) else str(tag)
    stores = [s.memref for s in op.walk() if isinstance(s, memref.StoreOp)]
    outside = [b for b in stores if not op.is_ancestor(_owner(b))]
    stage = f" of stage '{_buffer_name(outside[-1])}'" if outside else ""
    _fail(
        op,
        f"loop '{op.induction_var.name_hint or '?'}'{stage} is bound to {tag}; "
        "bind needs a GPU target: build with target='cuda' or 'opencl'",
    )


def _owner(value: SSAValue) -> Operation:
    owner = value.owner
    if isinstance(owner, Operation):
        return owner
    parent = owner.parent_op()
    assert parent is not None
    return parent


def _buffer_name(value: SSAValue) -> str:
    owner = value.owner
    if isinstance(owner, Block) and isinstance(value, BlockArgument):
        function = owner.parent_op()
        if isinstance(function, func.FuncOp) and function.arg_attrs is not None:
            name = function.arg_attrs.data[value.index].data.get("ember.name")
            if isinstance(name, StringAttr):
                return name.data
    return value.name_hint or "?"


def _lower_for(op: loop.ForOp) -> None:
    kind = op.kind.data
    if kind == "unrolled" and _unroll(op):
        return
    body = op.body.block
    end = body.last_op
    assert isinstance(end, loop.YieldOp)
    Rewriter.replace_op(end, scf.YieldOp())
    new = scf.ForOp(
        op.lower,
        op.upper,
        op.step,
        [],
        Rewriter.move_region_contents_to_new_regions(op.body),
    )
    new.attributes.update(op.attributes)
    if kind != "serial":
        new.attributes["ember.loop_kind"] = StringAttr(kind)
    Rewriter.replace_op(op, new)


def _unroll(op: loop.ForOp) -> bool:
    """Replace `op` by a copy of its body per iteration if its bounds are constant."""
    bounds = [constant_value(v) for v in (op.lower, op.upper, op.step)]
    if None in bounds:
        return False
    lower, upper, step = bounds
    assert lower is not None and upper is not None and step is not None
    if step <= 0:
        return False
    copies = _unrolled_copies(op)
    if copies > MAX_UNROLL_COPIES:
        name = op.induction_var.name_hint or "?"
        _fail(
            op,
            f"unrolling loop %{name} makes {copies} copies of its body (with the "
            f"unrolled loops around it), more than the cap of {MAX_UNROLL_COPIES}",
        )
    body = list(op.body.block.ops)[:-1]
    iv = op.induction_var
    before = InsertPoint.before(op)
    for value in range(lower, upper, step):
        const = arith.ConstantOp(IntegerAttr(value, IndexType()))
        const.result.name_hint = iv.name_hint
        Rewriter.insert_op(const, before)
        mapping: dict[SSAValue, SSAValue] = {iv: const.result}
        Rewriter.insert_op([inner.clone(mapping) for inner in body], before)
    Rewriter.erase_op(op)
    return True


def _unrolled_copies(op: loop.ForOp) -> int:
    """How many copies of `op`'s body unrolling it and the unrolled loops with
    constant bounds around it makes."""
    copies = 1
    current: Operation | None = op
    while current is not None:
        if isinstance(current, loop.ForOp) and current.kind.data == "unrolled":
            lower, upper, step = (
                constant_value(v) for v in (current.lower, current.upper, current.step)
            )
            if lower is not None and upper is not None and step and step > 0:
                copies *= max(0, -(-(upper - lower) // step))
        current = current.parent_op()
    return copies


def _lower_alloc(op: loop.AllocOp) -> None:
    t = op.buffer.type
    assert isinstance(t, MemRefType)
    local = op.scope_name != "global"
    if local and op.sizes:
        _hoist_dynamic_local(op)
        return
    cls = memref.AllocaOp if local else memref.AllocOp
    sizes = list(op.sizes) if cls is memref.AllocOp else None
    new = cls.get(t.element_type, ALIGNMENT, t.shape, sizes, t.layout, t.memory_space)
    if isinstance(new, memref.AllocOp):
        block = op.parent_block()
        assert block is not None
        end = block.last_op
        assert end is not None
        free = memref.DeallocOp.get(new)
        if end.has_trait(IsTerminator):
            Rewriter.insert_op(free, InsertPoint.before(end))
        else:
            Rewriter.insert_op(free, InsertPoint.at_end(block))
    new.attributes.update(op.attributes)
    Rewriter.replace_op(op, new)


def _hoist_dynamic_local(op: loop.AllocOp) -> None:
    """A local buffer of symbolic size (a row of a symbolic length that a
    stage computes per iteration): one heap buffer for the whole function,
    allocated at its entry once its sizes are known and freed before it
    returns, reused by every iteration (no iteration's buffer outlives it,
    as with a local buffer's stack slot). On the heap, not the stack: its
    size is known only at run time. A parallel loop's outlined function
    allocates one per thread."""
    t = op.buffer.type
    assert isinstance(t, MemRefType)
    function = op.parent_op()
    while function is not None and not isinstance(function, func.FuncOp):
        function = function.parent_op()
    assert function is not None, "loop.alloc outside a function"
    entry = function.body.block
    defined = []  # the top-level ops its sizes are computed by
    for size in op.sizes:
        owner = size.owner
        while isinstance(owner, Operation) and owner.parent_block() is not entry:
            owner = owner.parent_op()
        if isinstance(owner, Operation):
            defined.append(owner)
    last = max(defined, key=entry.get_operation_index, default=None)
    at = InsertPoint.after(last) if last else InsertPoint.at_start(entry)
    new = memref.AllocOp.get(
        t.element_type, ALIGNMENT, t.shape, list(op.sizes), t.layout, t.memory_space
    )
    new.attributes.update(op.attributes)
    Rewriter.insert_op(new, at)
    for ret in [o for o in function.walk() if isinstance(o, func.ReturnOp)]:
        Rewriter.insert_op(memref.DeallocOp.get(new), InsertPoint.before(ret))
    op.buffer.replace_all_uses_with(new.memref)
    Rewriter.erase_op(op)
