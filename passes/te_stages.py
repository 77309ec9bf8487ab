"""The stages of a te function and what its `te.schedule` does to them (not a pass).

`apply_schedule` reads the schedule region in order. Primitives on loops (split,
fuse, reorder, annotations, compute_at) update the `Stage` records that
`convert-te-to-loop` then emits; primitives that make or remove computes
(cache_read, cache_write, compute_inline) rewrite the te IR at once, so later
primitives see the new stages. Every illegal request is a `ScheduleError` naming
the primitive, the stage and the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ember.dialects import te
from ember.dialects import te_schedule as sch
from ember.passes.affine import Extent
from ember.passes.names import ssa_name
from ember.runtime.shape_expr import SymExpr, sym_floordiv
from ember.te.schedule import ScheduleError


@dataclass(eq=False)
class IterVar:
    """A loop of a stage: a root axis or one made by split or fuse."""

    name: str
    reduce: bool
    kind: str = "serial"
    thread: str | None = None
    pragmas: dict[str, Attribute | None] = field(
        default_factory=dict[str, Attribute | None]
    )


@dataclass
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass
class Fuse:
    axes: list[IterVar]
    fused: IterVar


@dataclass(eq=False)
class Stage:
    """One compute (or extern) and how it runs."""

    op: te.ComputeOp | te.ExternOp
    axes: list[IterVar]
    reduce_axes: list[IterVar]
    scope: str = "global"
    output: bool = False
    leaves: list[IterVar] = field(default_factory=list[IterVar])
    relations: list[Split | Fuse] = field(default_factory=list[Split | Fuse])
    attach: tuple[Stage, str] | None = None
    attach_var: IterVar | None = None
    inlined: bool = False

    def __post_init__(self):
        self.leaves = [*self.axes, *self.reduce_axes]

    @property
    def name(self) -> str:
        return self.op.tensor_name.data

    @property
    def compute(self) -> te.ComputeOp:
        """The te.compute of a stage that is not extern (callers check first)."""
        assert isinstance(self.op, te.ComputeOp), f"'{self.name}' is a te.extern stage"
        return self.op

    @property
    def extern(self) -> bool:
        """Whether this is an opaque te.extern stage, which has no loops."""
        return isinstance(self.op, te.ExternOp)

    def not_extern(self, primitive: str) -> None:
        if self.extern:
            raise ScheduleError(
                f"{primitive}: stage '{self.name}' is an extern stage (te.extern): "
                "its loops are opaque to the schedule; it runs whole, at the root"
            )

    def all_vars(self) -> list[IterVar]:
        found = {id(v): v for v in [*self.axes, *self.reduce_axes]}
        for r in self.relations:
            made = [r.outer, r.inner] if isinstance(r, Split) else [r.fused]
            found.update({id(v): v for v in made})
        return list(found.values())

    def leaf(self, primitive: str, name: str) -> IterVar:
        self.not_extern(primitive)
        for v in self.leaves:
            if v.name == name:
                return v
        loops = ", ".join(v.name for v in self.leaves)
        if any(v.name == name for v in self.all_vars()):
            raise ScheduleError(
                f"{primitive}: loop '{name}' of stage '{self.name}' was already "
                f"split or fused; its loops are {loops}"
            )
        raise ScheduleError(
            f"{primitive}: stage '{self.name}' has no loop '{name}'; its loops are "
            f"{loops}"
        )

    def fresh(self, primitive: str, name: str, reduce: bool) -> IterVar:
        if any(v.name == name for v in self.all_vars()):
            raise ScheduleError(
                f"{primitive}: stage '{self.name}' already has a loop named '{name}'"
            )
        return IterVar(name, reduce)


def extern_reader(value: SSAValue) -> te.ExternOp | None:
    """A te.extern that reads `value` (whole), if any."""
    return next(
        (u.operation for u in value.uses if isinstance(u.operation, te.ExternOp)),
        None,
    )


def axis_names(op: te.ComputeOp) -> list[str]:
    """The names of a compute's axes: its block arguments' names, else `ax<n>`."""
    return [a.name_hint or f"ax{n}" for n, a in enumerate(op.body.block.args)]


def tensor_name(value: SSAValue, function: func.FuncOp) -> str:
    if isinstance(value.owner, te.ComputeOp | te.ExternOp):
        return value.owner.tensor_name.data
    assert isinstance(value, BlockArgument)
    attrs = function.arg_attrs
    if attrs is not None:
        name = attrs.data[value.index].data.get("ember.name")
        if isinstance(name, StringAttr):
            return name.data
    return value.name_hint or f"arg{value.index}"


def make_stage(op: te.ComputeOp | te.ExternOp, names: list[str] | None = None) -> Stage:
    if isinstance(op, te.ExternOp):
        return Stage(op, [], [])
    names = names or axis_names(op)
    rank = op.output_type.get_num_dims()
    return Stage(
        op,
        [IterVar(n, False) for n in names[:rank]],
        [IterVar(n, True) for n in names[rank:]],
    )


class Schedule:
    """The stages of one te function, with its schedule applied."""

    def __init__(self, function: func.FuncOp, block: Block, outputs: set[SSAValue]):
        self.function, self.block = function, block
        self.stages: dict[str, Stage] = {}
        for op in block.ops:
            if isinstance(op, te.ComputeOp | te.ExternOp):
                if op.tensor_name.data in self.stages:
                    raise ScheduleError(
                        f"two computes are named '{op.tensor_name.data}'; a schedule "
                        "needs unique stage names"
                    )
                stage = make_stage(op)
                stage.output = op.result in outputs
                self.stages[stage.name] = stage

    def ordered(self) -> list[Stage]:
        """The live stages in the order of their computes (producers first)."""
        by_op: dict[Operation, Stage] = {
            s.op: s for s in self.stages.values() if not s.inlined
        }
        return [by_op[op] for op in self.block.ops if op in by_op]

    def stage(self, primitive: str, name: str) -> Stage:
        stage = self.stages.get(name)
        if stage is None:
            known = ", ".join(self.stages) or "none"
            raise ScheduleError(
                f"{primitive}: no stage '{name}'; the stages are {known}"
            )
        if stage.inlined:
            raise ScheduleError(f"{primitive}: stage '{name}' was inlined")
        return stage

    def apply(self, schedule: sch.ScheduleOp) -> None:
        for op in schedule.body.block.ops:
            primitive = op.name
            match op:
                case sch.SplitOp():
                    self._split(primitive, op)
                case sch.FuseOp():
                    self._fuse(primitive, op)
                case sch.ReorderOp():
                    self._reorder(primitive, op)
                case sch.VectorizeOp() | sch.ParallelOp() | sch.UnrollOp():
                    self._annotate(primitive, op)
                case sch.PragmaOp():
                    stage = self.stage(primitive, op.stage.data)
                    var = stage.leaf(primitive, op.axis.data)
                    var.pragmas[op.key.data] = op.value
                case sch.BindOp():
                    stage = self.stage(primitive, op.stage.data)
                    var = stage.leaf(primitive, op.axis.data)
                    if var.reduce:
                        raise ScheduleError(
                            f"{primitive}: loop '{var.name}' of stage '{stage.name}' "
                            "is a reduction axis; only data-parallel loops can be "
                            "bound to a thread axis"
                        )
                    var.thread = op.thread.data
                case sch.ComputeAtOp():
                    self._compute_at(primitive, op)
                case sch.ComputeRootOp():
                    self.stage(primitive, op.stage.data).attach = None
                case sch.ComputeInlineOp():
                    self._inline(primitive, self.stage(primitive, op.stage.data))
                case sch.CacheReadOp():
                    self._cache_read(primitive, op)
                case sch.CacheWriteOp():
                    self._cache_write(primitive, op)
                case _:
                    raise ScheduleError(f"unknown schedule op '{op.name}'")
        self._resolve_attachments()

    # --- loops ---------------------------------------------------------------------

    def _split(self, primitive: str, op: sch.SplitOp) -> None:
        stage = self.stage(primitive, op.stage.data)
        parent = stage.leaf(primitive, op.axis.data)
        outer = stage.fresh(primitive, op.outer.data, parent.reduce)
        inner = stage.fresh(primitive, op.inner.data, parent.reduce)
        factor = op.factor.value.data if op.factor is not None else None
        nparts = op.nparts.value.data if op.nparts is not None else None
        if (factor if factor is not None else nparts or 0) <= 0:
            # the verifier refuses it too, but unverified IR must never lower
            raise ScheduleError(
                f"{primitive}: expected a positive split of loop '{parent.name}' "
                f"of stage '{stage.name}', got {factor if factor is not None else nparts}"
            )
        stage.relations.append(Split(parent, outer, inner, factor, nparts))
        at = stage.leaves.index(parent)
        stage.leaves[at : at + 1] = [outer, inner]

    def _fuse(self, primitive: str, op: sch.FuseOp) -> None:
        stage = self.stage(primitive, op.stage.data)
        axes = [stage.leaf(primitive, a.data) for a in op.axes.data]
        at = [stage.leaves.index(v) for v in axes]
        if at != list(range(at[0], at[0] + len(at))):
            raise ScheduleError(
                f"{primitive}: loops {', '.join(v.name for v in axes)} of stage "
                f"'{stage.name}' must be adjacent, outermost first"
            )
        if len({v.reduce for v in axes}) != 1:
            raise ScheduleError(
                f"{primitive}: cannot fuse reduction and data-parallel loops of "
                f"stage '{stage.name}'"
            )
        fused = stage.fresh(primitive, op.fused.data, axes[0].reduce)
        stage.relations.append(Fuse(axes, fused))
        stage.leaves[at[0] : at[-1] + 1] = [fused]

    def _reorder(self, primitive: str, op: sch.ReorderOp) -> None:
        stage = self.stage(primitive, op.stage.data)
        axes = [stage.leaf(primitive, a.data) for a in op.axes.data]
        slots = sorted(stage.leaves.index(v) for v in axes)
        for slot, v in zip(slots, axes, strict=True):
            stage.leaves[slot] = v

    def _annotate(
        self, primitive: str, op: sch.VectorizeOp | sch.ParallelOp | sch.UnrollOp
    ) -> None:
        stage = self.stage(primitive, op.stage.data)
        var = stage.leaf(primitive, op.axis.data)
        kind = {
            "te.vectorize": "vectorized",
            "te.parallel": "parallel",
            "te.unroll": "unrolled",
        }[primitive]
        if var.reduce and kind != "unrolled":
            raise ScheduleError(
                f"{primitive}: loop '{var.name}' of stage '{stage.name}' is a "
                "reduction loop; its iterations depend on each other"
            )
        if var.kind != "serial" and var.kind != kind:
            raise ScheduleError(
                f"{primitive}: loop '{var.name}' of stage '{stage.name}' is already "
                f"{var.kind}"
            )
        var.kind = kind

    def _compute_at(self, primitive: str, op: sch.ComputeAtOp) -> None:
        stage = self.stage(primitive, op.stage.data)
        target = self.stage(primitive, op.target.data)
        stage.not_extern(primitive)
        if stage is target:
            raise ScheduleError(
                f"{primitive}: stage '{stage.name}' cannot be computed inside itself"
            )
        self._not_read_by_extern(primitive, stage)
        if stage.output:
            raise ScheduleError(
                f"{primitive}: stage '{stage.name}' is an output of the function; "
                "outputs are computed at the root"
            )
        target.leaf(primitive, op.axis.data)
        stage.attach = (target, op.axis.data)

    def _resolve_attachments(self) -> None:
        for stage in self.stages.values():
            if stage.attach is None or stage.inlined:
                continue
            target, name = stage.attach
            if target.inlined:
                raise ScheduleError(
                    f"te.compute_at: stage '{stage.name}' is attached to '{target.name}', "
                    "which was inlined"
                )
            if all(v.name != name for v in target.leaves):
                raise ScheduleError(
                    f"te.compute_at: loop '{name}' of stage '{target.name}' was split "
                    f"or fused after '{stage.name}' was attached to it"
                )
            stage.attach_var = target.leaf("te.compute_at", name)
            seen = {stage}
            outer = target
            while outer.attach is not None:
                if outer in seen:
                    raise ScheduleError(
                        f"te.compute_at: stages {', '.join(sorted(s.name for s in seen))} "
                        "are attached in a cycle"
                    )
                seen.add(outer)
                outer = outer.attach[0]

    # --- stages --------------------------------------------------------------------

    def _check_unscheduled(self, primitive: str, stage: Stage) -> None:
        if (
            stage.relations
            or stage.leaves != [*stage.axes, *stage.reduce_axes]
            or any(v.kind != "serial" or v.pragmas or v.thread for v in stage.leaves)
        ):
            raise ScheduleError(
                f"{primitive}: stage '{stage.name}' already has loop primitives; "
                f"apply {primitive} first"
            )

    def _not_read_by_extern(self, primitive: str, stage: Stage) -> None:
        reader = extern_reader(stage.op.result)
        if reader is not None:
            raise ScheduleError(
                f"{primitive}: stage '{stage.name}' is read by extern stage "
                f"'{reader.tensor_name.data}', which needs it whole, at the root"
            )

    def _inline(self, primitive: str, stage: Stage) -> None:
        stage.not_extern(primitive)
        self._not_read_by_extern(primitive, stage)
        if stage.output:
            raise ScheduleError(
                f"{primitive}: stage '{stage.name}' is an output of the function"
            )
        assert isinstance(stage.op, te.ComputeOp)
        if stage.op.reduce is not None:
            raise ScheduleError(
                f"{primitive}: stage '{stage.name}' is a reduction and cannot be "
                "inlined"
            )
        body = stage.op.body.block
        reads = [
            use.operation
            for use in list(stage.op.result.uses)
            if isinstance(use.operation, te.ReadOp)
        ]
        for read in reads:
            mapping: dict[SSAValue, SSAValue] = dict(
                zip(body.args, read.indices, strict=True)
            )
            for inner in list(body.ops)[:-1]:
                Rewriter.insert_op(inner.clone(mapping), InsertPoint.before(read))
            yielded = body.last_op
            assert isinstance(yielded, te.YieldOp)
            value = mapping.get(yielded.value, yielded.value)
            Rewriter.replace_op(read, [], [value])
        if stage.op.result.uses:
            user = next(iter(stage.op.result.uses)).operation
            raise ScheduleError(
                f"{primitive}: stage '{stage.name}' is used by '{user.name}', which "
                "is not a te.read"
            )
        Rewriter.erase_op(stage.op)
        stage.inlined = True

    def _copy_compute(
        self, name: str, source: SSAValue, at: InsertPoint, names: list[str]
    ) -> te.ComputeOp:
        """`name[i...] = source[i...]`, inserted at `at`."""
        t = source.type
        assert isinstance(t, TensorType)
        block = Block(arg_types=[IndexType()] * t.get_num_dims())
        for arg, n in zip(block.args, names, strict=True):
            arg.name_hint = n
        read = te.ReadOp(source, block.args)
        block.add_ops([read, te.YieldOp(read.result)])
        op = te.ComputeOp(name, t, block)  # symbolic dims keep their names
        op.result.name_hint = ssa_name(name)
        Rewriter.insert_op(op, at)
        return op

    def _cache_read(self, primitive: str, op: sch.CacheReadOp) -> None:
        name = op.stage.data
        source = self._tensor(primitive, name)
        readers = [self.stage(primitive, r.data) for r in op.readers.data]
        for reader in readers:
            if reader.extern:
                raise ScheduleError(
                    f"{primitive}: stage '{reader.name}' is an extern stage "
                    "(te.extern); it reads its inputs whole and cannot read a "
                    "cache instead"
                )
        if op.result.data in self.stages:
            raise ScheduleError(f"{primitive}: a stage '{op.result.data}' exists")
        if isinstance(source, BlockArgument):
            at = InsertPoint.at_start(self.block)
        else:
            at = InsertPoint.after(source.owner)  # type: ignore[arg-type]
        rank = len(source.type.get_shape())  # type: ignore[attr-defined]
        names = [f"ax{d}" for d in range(rank)]
        cache = self._copy_compute(op.result.data, source, at, names)
        for reader in readers:
            uses = [
                u
                for u in list(source.uses)
                if isinstance(u.operation, te.ReadOp)
                and reader.op.is_ancestor(u.operation)
            ]
            if not uses:
                raise ScheduleError(
                    f"{primitive}: stage '{reader.name}' does not read '{name}'"
                )
            for use in uses:
                use.operation.operands[use.index] = cache.result
        stage = make_stage(cache, names)
        stage.scope = op.scope.data
        self.stages[stage.name] = stage

    def _cache_write(self, primitive: str, op: sch.CacheWriteOp) -> None:
        stage = self.stage(primitive, op.stage.data)
        stage.not_extern(primitive)
        self._check_unscheduled(primitive, stage)
        if op.result.data in self.stages:
            raise ScheduleError(f"{primitive}: a stage '{op.result.data}' exists")
        old = stage.op
        assert isinstance(old, te.ComputeOp)
        rank = old.output_type.get_num_dims()
        names = axis_names(old)
        cache_names = [f"{n}.c" for n in names[:rank]] + names[rank:]
        cache = old.clone()
        cache.tensor_name = StringAttr(op.result.data)
        cache.result.name_hint = ssa_name(op.result.data)
        for arg, n in zip(cache.body.block.args, cache_names, strict=True):
            arg.name_hint = n
        Rewriter.insert_op(cache, InsertPoint.before(old))
        copy = self._copy_compute(
            stage.name, cache.result, InsertPoint.before(old), names[:rank]
        )
        old.result.replace_all_uses_with(copy.result)
        copy.result.name_hint = old.result.name_hint
        Rewriter.erase_op(old)
        new = make_stage(cache, cache_names)
        new.scope = op.scope.data
        self.stages[new.name] = new
        stage.op = copy
        stage.axes = [IterVar(n, False) for n in names[:rank]]
        stage.reduce_axes = []
        stage.leaves = list(stage.axes)

    def _tensor(self, primitive: str, name: str) -> SSAValue:
        if name in self.stages:
            return self.stage(primitive, name).op.result
        for arg in self.block.args:
            if tensor_name(arg, self.function) == name:
                return arg
        raise ScheduleError(f"{primitive}: no tensor named '{name}'")


def split_extents(split: Split, parent_extent: Extent) -> tuple[Extent, Extent]:
    """(outer, inner) extents of `split` over a parent of `parent_extent`; a
    symbolic parent splits by a factor into `ceil(n / factor)` outer steps (a
    guard keeps the last one inside), by parts into parts of a symbolic size."""
    if isinstance(parent_extent, SymExpr):
        if split.factor is not None:
            return sym_floordiv(parent_extent + split.factor - 1, split.factor), (
                split.factor
            )
        assert split.nparts is not None
        return split.nparts, sym_floordiv(
            parent_extent + split.nparts - 1, split.nparts
        )
    if split.factor is not None:
        inner = min(split.factor, parent_extent)
        return -(-parent_extent // inner), inner
    assert split.nparts is not None
    outer = min(split.nparts, parent_extent)
    return outer, -(-parent_extent // outer)


def constant_attr(attr: Attribute | None) -> int | None:
    return attr.value.data if isinstance(attr, IntegerAttr) else None
