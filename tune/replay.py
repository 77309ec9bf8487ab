"""Schedule IR text replayed through the Python schedule API.

    s = schedule_from_text([A, B, C], 'te.schedule { te.parallel "C" "i" }')
    ember.build(s, [A, B, C])

The text names stages and loops as the IR does; the replay maps those names to
the `te.Var`s of a fresh `te.create_schedule` (the compute axes as
`ember.lower` names them, then every loop a replayed primitive returns) and
calls the primitive, so the result is an ordinary `te.Schedule` that a user can
inspect and schedule further, and every step is checked as a hand-written
one is.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, StringAttr

from ember import te
from ember.dialects import te as te_ir
from ember.dialects import te_schedule as ir
from ember.te.schedule import ScheduleError, thread_axis
from ember.tune.task import KERNEL, parse_schedule


def schedule_from_text(args: Sequence[te.Tensor], text: str) -> te.Schedule:
    """A `te.Schedule` of the computation of `args` (inputs, then outputs)
    that does what the `te.schedule` op `text` says."""
    from ember.te.lowering import lower

    outputs = [t.op for t in args if not isinstance(t.op, te.PlaceholderOp)]
    s = te.create_schedule(outputs)
    module = lower(s, args, KERNEL)
    ops: dict[str, te.Operation] = {st.op.name: st.op for st in s.stages.values()}
    loops: dict[str, dict[str, te.Var]] = {}
    for c in module.walk():
        if isinstance(c, te_ir.ComputeOp):
            op = ops[c.tensor_name.data]
            assert isinstance(op, te.ComputeOp)
            names = [a.name_hint or f"ax{n}" for n, a in enumerate(c.body.block.args)]
            loops[op.name] = dict(zip(names, [*op.axis, *op.reduce_axis], strict=True))

    def stage(name: str):
        if name not in ops:
            raise ScheduleError(f"replay: no stage '{name}'")
        return s[ops[name]]

    def var(stage_name: str, name: str) -> te.Var:
        found = loops.get(stage_name, {}).get(name)
        if found is None:
            raise ScheduleError(f"replay: stage '{stage_name}' has no loop '{name}'")
        return found

    for p in parse_schedule(text).body.block.ops:
        name = p.stage.data  # type: ignore[attr-defined]
        here = loops.setdefault(name, {})
        match p:
            case ir.SplitOp():
                by = "factor" if p.factor is not None else "nparts"
                outer, inner = stage(name).split(
                    var(name, p.axis.data), **{by: p.amount}
                )
                here[p.outer.data], here[p.inner.data] = outer, inner
            case ir.FuseOp():
                axes = [var(name, a.data) for a in p.axes.data]
                here[p.fused.data] = stage(name).fuse(*axes)
            case ir.ReorderOp():
                stage(name).reorder(*[var(name, a.data) for a in p.axes.data])
            case ir.VectorizeOp():
                stage(name).vectorize(var(name, p.axis.data))
            case ir.ParallelOp():
                stage(name).parallel(var(name, p.axis.data))
            case ir.UnrollOp():
                stage(name).unroll(var(name, p.axis.data))
            case ir.PragmaOp():
                value = p.value
                if isinstance(value, IntegerAttr):
                    value = value.value.data
                elif isinstance(value, StringAttr):
                    value = value.data
                stage(name).pragma(var(name, p.axis.data), p.key.data, value)
            case ir.BindOp():
                stage(name).bind(var(name, p.axis.data), thread_axis(p.thread.data))
            case ir.ComputeAtOp():
                target = p.target.data
                stage(name).compute_at(stage(target), var(target, p.axis.data))
            case ir.ComputeInlineOp():
                stage(name).compute_inline()
            case ir.ComputeRootOp():
                stage(name).compute_root()
            case ir.CacheWriteOp():
                origin = ops[name]
                cache = s.cache_write(origin.output, p.scope.data)
                _same_name(cache.op.name, p.result.data)
                ops[cache.op.name] = cache.op
                assert isinstance(cache.op, te.ComputeOp)
                old = loops[name]
                rank = len(cache.op.axis)
                data_names = list(old)[:rank]
                loops[cache.op.name] = {
                    **{
                        f"{n}.c": v
                        for n, v in zip(data_names, cache.op.axis, strict=True)
                    },
                    **{n: old[n] for n in list(old)[rank:]},
                }
                loops[name] = {n: old[n] for n in data_names}
            case ir.CacheReadOp():
                readers = [ops[r.data] for r in p.readers.data]
                cache = s.cache_read(ops[name].output, p.scope.data, readers)
                _same_name(cache.op.name, p.result.data)
                ops[cache.op.name] = cache.op
                assert isinstance(cache.op, te.ComputeOp)
                loops[cache.op.name] = {
                    f"ax{d}": v for d, v in enumerate(cache.op.axis)
                }
            case _:
                raise ScheduleError(f"replay: unknown primitive {p.name}")
    return s


def _same_name(made: str, recorded: str) -> None:
    if made != recorded:
        raise ScheduleError(
            f"replay: the cache stage is named '{made}', the schedule says '{recorded}'"
        )
