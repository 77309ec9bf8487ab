"""TVM-style schedules: how the stages of a tensor expression run.

    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=32)
    s[C].vectorize(xi)
    s[C].parallel(xo)

A `Schedule` records primitives, one `Stage` per compute. Nothing is transformed
here: `ember.lower` writes the record as schedule IR (`te.schedule { te.split ... }`)
beside the computation, and `convert-te-to-loop` applies it. So a schedule made in
Python, written in text or added by an `ember-opt` pass is the same thing. The
checks made here are the ones a user wants at the call: a stage that is not in the
schedule, an axis that is not a leaf of the stage, a reduction axis vectorized or
run in parallel. The pass checks everything again on the IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ember import te
from ember.dialects.te_schedule import SCOPES, THREAD_TAGS
from ember.runtime.errors import EmberTypeError, EmberValueError
from ember.runtime.shape_expr import SymExpr


class ScheduleError(EmberValueError):
    """An illegal schedule request; the message names the primitive and the loop."""


@dataclass
class Step:
    """One recorded primitive: `kind` applied to `stage` with `args`.

    Args hold te.Var axes, te.Tensor/Operation stages and plain values; the
    lowering turns them into names.
    """

    kind: str
    stage: te.Operation
    args: tuple
    results: tuple = ()


class CacheOp(te.ComputeOp):
    """The handle of a stage made by `cache_read` or `cache_write`.

    Its axes are fresh variables for scheduling it; its body is never lowered from
    Python: the schedule IR says how to build it from `origin`.
    """

    def __init__(self, name: str, axis: list[te.Var], body: te.Expr, origin):
        super().__init__(name, axis, body)
        self.origin = origin


def thread_axis(tag: str) -> te.Var:
    """A GPU thread axis (`blockIdx.x`, `threadIdx.y`, `vthread`...) for `bind`."""
    if tag not in THREAD_TAGS:
        raise ScheduleError(f"thread_axis: unknown tag '{tag}'; expected {THREAD_TAGS}")
    var = te.Var(tag, 0, 1)
    var.thread_tag = tag  # type: ignore[attr-defined]
    return var


@dataclass
class Stage:
    """How one compute runs: its loops (leaf axes, in order) and where it sits."""

    op: te.Operation
    schedule: Schedule
    leaves: list[te.Var] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    kinds: dict[int, str] = field(default_factory=dict)
    """The annotation (vectorize, parallel, unroll) of each annotated loop, by id."""

    def __post_init__(self):
        if isinstance(self.op, te.ComputeOp):
            self.leaves = [*self.op.axis, *self.op.reduce_axis]
            self.names = {v.name for v in self.leaves}

    @property
    def name(self) -> str:
        return self.op.name

    def _record(self, kind: str, *args, results: tuple = ()) -> None:
        self.schedule.steps.append(Step(kind, self.op, args, results))

    def _not_extern(self, primitive: str) -> None:
        if isinstance(self.op, te.ExternOp):
            raise ScheduleError(
                f"{primitive}: stage '{self.name}' is an extern stage (te.extern): "
                "its loops are opaque to the schedule; it runs whole, at the root"
            )

    def _not_read_by_extern(self, primitive: str) -> None:
        for stage in self.schedule.stages.values():
            if isinstance(stage.op, te.ExternOp) and any(
                t.op is self.op for t in stage.op.inputs
            ):
                raise ScheduleError(
                    f"{primitive}: stage '{self.name}' is read by extern stage "
                    f"'{stage.name}', which needs it whole, at the root"
                )

    def _leaf(self, primitive: str, var: te.Var) -> te.Var:
        self._not_extern(primitive)
        if not isinstance(var, te.Var):
            raise ScheduleError(
                f"{primitive}: expected an axis of stage '{self.name}', got {var!r}"
            )
        if _find(self.leaves, var) is None:
            known = ", ".join(v.name for v in self.leaves)
            raise ScheduleError(
                f"{primitive}: '{var.name}' is not a loop of stage '{self.name}' "
                f"(it was split or fused already, or belongs to another stage); "
                f"its loops are {known}"
            )
        return var

    def _fresh(
        self, name: str, lower: int, extent: int | SymExpr, reduce: bool
    ) -> te.Var:
        unique, n = name, 1
        while unique in self.names:
            unique, n = f"{name}_{n}", n + 1
        self.names.add(unique)
        return te.Var(unique, lower, extent, reduce)

    def split(
        self, parent: te.Var, factor: int | None = None, nparts: int | None = None
    ) -> tuple[te.Var, te.Var]:
        """Split loop `parent` into (outer, inner); inner runs `factor` times, or
        outer runs `nparts` times. A tail that does not divide is guarded."""
        self._leaf("split", parent)
        if (factor is None) == (nparts is None):
            raise ScheduleError(
                f"split: give exactly one of factor= or nparts= for '{parent.name}'"
            )
        amount = factor if factor is not None else nparts
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
            raise ScheduleError(
                f"split: expected a positive int to split '{parent.name}', got {amount!r}"
            )
        if factor is not None:
            inner_extent, outer_extent = amount, -(-parent.extent // amount)
        else:
            outer_extent, inner_extent = amount, -(-parent.extent // amount)
        outer = self._fresh(f"{parent.name}.outer", 0, outer_extent, parent.reduce)
        inner = self._fresh(f"{parent.name}.inner", 0, inner_extent, parent.reduce)
        at = _position(self.leaves, parent)
        self.leaves[at : at + 1] = [outer, inner]
        by = ("factor", factor) if factor is not None else ("nparts", nparts)
        self._record("split", parent, *by, results=(outer, inner))
        return outer, inner

    def tile(
        self, x_parent: te.Var, y_parent: te.Var, x_factor: int, y_factor: int
    ) -> tuple[te.Var, te.Var, te.Var, te.Var]:
        """Split two loops and order them (x.outer, y.outer, x.inner, y.inner)."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *args: te.Var) -> te.Var:
        """Fuse adjacent loops (outermost first) into one."""
        if len(args) == 1 and isinstance(args[0], list | tuple):
            args = tuple(args[0])
        if len(args) < 2:
            raise ScheduleError(f"fuse: expected at least two loops of '{self.name}'")
        positions = [_position(self.leaves, self._leaf("fuse", v)) for v in args]
        if positions != list(range(positions[0], positions[0] + len(args))):
            raise ScheduleError(
                f"fuse: loops {', '.join(v.name for v in args)} of stage "
                f"'{self.name}' must be adjacent, outermost first"
            )
        if len({v.reduce for v in args}) != 1:
            raise ScheduleError(
                f"fuse: cannot fuse a reduction loop with a data-parallel loop in "
                f"stage '{self.name}'"
            )
        extent = 1
        for v in args:
            extent *= v.extent
        fused = self._fresh(
            ".".join(v.name for v in args) + ".fused", 0, extent, args[0].reduce
        )
        self.leaves[positions[0] : positions[-1] + 1] = [fused]
        self._record("fuse", *args, results=(fused,))
        return fused

    def reorder(self, *args: te.Var) -> None:
        """Put the given loops in this order, in the positions they occupy."""
        if len(args) == 1 and isinstance(args[0], list | tuple):
            args = tuple(args[0])
        for v in args:
            self._leaf("reorder", v)
        if len(set(map(id, args))) != len(args):
            raise ScheduleError(f"reorder: a loop of '{self.name}' is named twice")
        slots = sorted(_position(self.leaves, v) for v in args)
        for slot, v in zip(slots, args, strict=True):
            self.leaves[slot] = v
        self._record("reorder", *args)

    def vectorize(self, var: te.Var) -> None:
        """Run loop `var` as SIMD lanes."""
        self._annotate("vectorize", var)

    def parallel(self, var: te.Var) -> None:
        """Run the iterations of loop `var` on the thread pool."""
        self._annotate("parallel", var)

    def unroll(self, var: te.Var) -> None:
        """Unroll loop `var` completely.

        At most 4096 copies of the body (the extents of the stage's unrolled
        loops multiplied); a build beyond it fails naming the loop: split the
        loop and unroll the inner part.
        """
        self._annotate("unroll", var)

    def _annotate(self, kind: str, var: te.Var) -> None:
        self._leaf(kind, var)
        if var.reduce and kind in ("vectorize", "parallel"):
            raise ScheduleError(
                f"{kind}: '{var.name}' of stage '{self.name}' is a reduction loop; "
                "its iterations depend on each other"
            )
        earlier = self.kinds.setdefault(id(var), kind)
        if earlier != kind:
            raise ScheduleError(
                f"{kind}: '{var.name}' of stage '{self.name}' is already annotated "
                f"with {earlier}"
            )
        self._record(kind, var)

    def pragma(self, var: te.Var, pragma_type: str, pragma_value=None) -> None:
        """Attach a pragma to loop `var`, e.g. ("auto_unroll_max_step", 16).

        `auto_unroll_max_step` unrolls the loops below `var` whose nest runs at
        most that many steps, and never more than 4096.
        """
        self._leaf("pragma", var)
        if not isinstance(pragma_type, str) or not pragma_type:
            raise ScheduleError("pragma: expected a pragma name")
        if pragma_value is not None and not isinstance(pragma_value, int | str):
            raise ScheduleError(
                f"pragma: expected an int or str value, got {pragma_value!r}"
            )
        self._record("pragma", var, pragma_type, pragma_value)

    def bind(self, var: te.Var, thread: te.Var) -> None:
        """Bind loop `var` to a GPU thread axis from `te.thread_axis`; a data
        loop only (a reduction would need threads to combine their parts)."""
        self._leaf("bind", var)
        if var.reduce:
            raise ScheduleError(
                f"bind: loop '{var.name}' of stage '{self.name}' is a reduction "
                "axis; only data-parallel loops can be bound to a thread axis"
            )
        tag = getattr(thread, "thread_tag", None)
        if tag is None:
            raise ScheduleError(
                f"bind: expected a te.thread_axis for '{var.name}', got {thread!r}"
            )
        self._record("bind", var, tag)

    def compute_at(self, parent: Stage, scope: te.Var) -> None:
        """Compute this stage inside loop `scope` of stage `parent`, only the part
        `parent` needs in one iteration of it."""
        if not isinstance(parent, Stage):
            raise ScheduleError(f"compute_at: expected a stage, got {parent!r}")
        if parent is self:
            raise ScheduleError(
                f"compute_at: stage '{self.name}' cannot attach to itself"
            )
        self._not_extern("compute_at")
        parent._leaf("compute_at", scope)
        self._not_output("compute_at")
        self._not_read_by_extern("compute_at")
        self._record("compute_at", parent.op, scope)

    def _not_output(self, primitive: str) -> None:
        if any(op is self.op for op in self.schedule.outputs):
            raise ScheduleError(
                f"{primitive}: stage '{self.name}' is an output of the schedule; "
                "outputs are computed at the root"
            )

    def compute_inline(self) -> None:
        """Substitute this stage's expression into every stage that reads it."""
        self._not_extern("compute_inline")
        self._not_output("compute_inline")
        self._not_read_by_extern("compute_inline")
        if isinstance(self.op, te.ComputeOp) and self.op.reduce_axis:
            raise ScheduleError(
                f"compute_inline: stage '{self.name}' is a reduction and cannot be "
                "inlined"
            )
        self._record("compute_inline")

    def compute_root(self) -> None:
        """Compute this stage whole, at the top of the function (the default)."""
        self._record("compute_root")

    def __repr__(self) -> str:
        return f"Stage({self.name}, loops=[{', '.join(v.name for v in self.leaves)}])"


class Schedule:
    """The schedule of the stages that compute `outputs`; `s[T]` is T's stage."""

    def __init__(self, outputs: Sequence[te.Operation]):
        self.outputs = list(outputs)
        self.steps: list[Step] = []
        self.stages: dict[int, Stage] = {}
        for op in self.outputs:
            if not isinstance(op, te.ComputeOp | te.ExternOp):
                raise EmberTypeError(
                    f"create_schedule: expected compute ops, got {op!r}"
                )
        for op in _reachable(self.outputs):
            self.stages[id(op)] = Stage(op, self)

    def __getitem__(self, key: te.Tensor | te.Operation) -> Stage:
        op = key.op if isinstance(key, te.Tensor) else key
        stage = self.stages.get(id(op))
        if stage is None or not isinstance(op, te.ComputeOp | te.ExternOp):
            name = getattr(op, "name", repr(op))
            raise ScheduleError(f"'{name}' is not a compute stage of this schedule")
        return stage

    def cache_read(
        self, tensor: te.Tensor, scope: str, readers: Sequence[te.Tensor | te.Operation]
    ) -> te.Tensor:
        """A stage copying `tensor` into a `scope` buffer that `readers` read
        instead; schedule it with `compute_at` to copy a tile at a time."""
        _check_scope("cache_read", scope)
        readers = [r.op if isinstance(r, te.Tensor) else r for r in readers]
        if not readers:
            raise ScheduleError(f"cache_read: no readers given for '{tensor.name}'")
        for r in readers:
            if isinstance(r, te.ExternOp):
                raise ScheduleError(
                    f"cache_read: stage '{r.name}' is an extern stage (te.extern); "
                    "it reads its inputs whole and cannot read a cache instead"
                )
            reads = r.input_tensors
            if all(t is not tensor for t in reads):
                raise ScheduleError(
                    f"cache_read: stage '{getattr(r, 'name', r)}' does not read "
                    f"'{tensor.name}'"
                )
        axis = [te.Var(f"ax{d}", 0, n) for d, n in enumerate(tensor.shape)]
        name = self._stage_name(f"{tensor.name}.{scope}")
        op = CacheOp(name, axis, tensor[tuple(axis)], tensor.op)
        cache = te.Tensor(tensor.shape, tensor.dtype, op)
        self.stages[id(op)] = Stage(op, self)
        self.steps.append(Step("cache_read", tensor.op, (scope, *readers), (op,)))
        return cache

    def cache_write(self, tensor: te.Tensor, scope: str) -> te.Tensor:
        """A `scope` stage that computes `tensor`'s expression; `tensor`'s stage
        then copies it out. The usual register tile of a reduction."""
        _check_scope("cache_write", scope)
        stage = self[tensor]
        stage._not_extern("cache_write")
        if any(s.stage is tensor.op for s in self.steps):
            raise ScheduleError(
                f"cache_write: schedule stage '{tensor.name}' after cache_write, "
                "not before"
            )
        compute = tensor.op
        assert isinstance(compute, te.ComputeOp)
        axis = [te.Var(f"{v.name}.c", 0, v.extent) for v in compute.axis]
        op = CacheOp(
            self._stage_name(f"{tensor.name}.{scope}"), axis, compute.body, compute
        )
        op.reduce_axis = list(compute.reduce_axis)
        cache = te.Tensor(tensor.shape, tensor.dtype, op)
        self.stages[id(op)] = Stage(op, self)
        stage.leaves = list(compute.axis)
        self.steps.append(Step("cache_write", compute, (scope,), (op,)))
        return cache

    def _stage_name(self, base: str) -> str:
        """`base`, or `base.<n>` when a tensor of the schedule is named so already
        (two cache_reads of one tensor into one scope)."""
        taken = {stage.op.name for stage in self.stages.values()}
        name, n = base, 1
        while name in taken:
            name, n = f"{base}.{n}", n + 1
        return name

    def __repr__(self) -> str:
        return f"Schedule({', '.join(op.name for op in self.outputs)})"


def _find(leaves: list[te.Var], var: te.Var) -> int | None:
    """The index of `var` in `leaves` by identity (te expressions overload ==)."""
    return next((n for n, v in enumerate(leaves) if v is var), None)


def _position(leaves: list[te.Var], var: te.Var) -> int:
    """The index of a loop that `Stage._leaf` has checked is in `leaves`."""
    at = _find(leaves, var)
    assert at is not None, f"'{var.name}' is not a loop of this stage"
    return at


def _check_scope(primitive: str, scope: str) -> None:
    if scope not in SCOPES:
        raise ScheduleError(f"{primitive}: unknown scope '{scope}'; expected {SCOPES}")


def _reachable(outputs: Sequence[te.Operation]) -> list[te.Operation]:
    seen: dict[int, te.Operation] = {}

    def visit(op: te.Operation) -> None:
        if id(op) in seen:
            return
        seen[id(op)] = op
        if isinstance(op, te.ComputeOp | te.ExternOp):
            for t in op.input_tensors:
                visit(t.op)

    for op in outputs:
        visit(op)
    return list(seen.values())


def create_schedule(ops: te.Operation | Sequence[te.Operation]) -> Schedule:
    """A schedule for the stages computing `ops`; every stage starts as a naive
    loop nest computed at the top level."""
    return Schedule([ops] if isinstance(ops, te.Operation) else list(ops))


def schedule_ir(sched: Schedule, axis_names: dict[int, str]):
    """The `te.schedule` op recording `sched`'s steps.

    Args:
        sched: the schedule.
        axis_names: the IR name of each compute axis, by `id` of its te.Var, as
            `ember.lower` named the block arguments.
    """
    from xdsl.dialects.builtin import IntegerAttr, StringAttr

    from ember.dialects import te_schedule as ir

    names = dict(axis_names)
    for step in sched.steps:
        if step.kind == "cache_write":
            (cache,) = step.results
            assert isinstance(step.stage, te.ComputeOp)  # cache_write checks it
            for var, orig in zip(cache.axis, step.stage.axis, strict=True):
                names[id(var)] = f"{names.get(id(orig), orig.name)}.c"
        elif step.kind == "cache_read":
            (cache,) = step.results
            for d, var in enumerate(cache.axis):
                names[id(var)] = f"ax{d}"

    def name(var: te.Var) -> str:
        return names.get(id(var), var.name)

    ops = []
    for step in sched.steps:
        stage, args = step.stage.name, step.args
        match step.kind:
            case "split":
                parent, by, amount = args
                outer, inner = step.results
                ops.append(
                    ir.SplitOp(
                        stage, name(parent), name(outer), name(inner), **{by: amount}
                    )
                )
            case "fuse":
                ops.append(
                    ir.FuseOp(stage, [name(v) for v in args], name(step.results[0]))
                )
            case "reorder":
                ops.append(ir.ReorderOp(stage, [name(v) for v in args]))
            case "vectorize":
                ops.append(ir.VectorizeOp(stage, name(args[0])))
            case "parallel":
                ops.append(ir.ParallelOp(stage, name(args[0])))
            case "unroll":
                ops.append(ir.UnrollOp(stage, name(args[0])))
            case "pragma":
                var, key, value = args
                attr = (
                    None
                    if value is None
                    else StringAttr(value)
                    if isinstance(value, str)
                    else IntegerAttr(value, 64)
                )
                ops.append(ir.PragmaOp(stage, name(var), key, attr))
            case "bind":
                ops.append(ir.BindOp(stage, name(args[0]), args[1]))
            case "compute_at":
                target, scope = args
                ops.append(ir.ComputeAtOp(stage, target.name, name(scope)))
            case "compute_inline":
                ops.append(ir.ComputeInlineOp(stage))
            case "compute_root":
                ops.append(ir.ComputeRootOp(stage))
            case "cache_read":
                scope, *readers = args
                ops.append(
                    ir.CacheReadOp(
                        stage, scope, [r.name for r in readers], step.results[0].name
                    )
                )
            case "cache_write":
                ops.append(ir.CacheWriteOp(stage, args[0], step.results[0].name))
    return ir.ScheduleOp(ops)
