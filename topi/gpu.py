"""The generic GPU schedule: any te computation as correct device kernels.

TVM's `schedule_injective` and its simple reduction schedules, for every stage
at once: elementwise and injective stages are inlined into their readers; every
stage left (the output, reductions and extern-free computes a reader needs
whole) becomes one kernel whose spatial loops are fused and split into blocks
of `threads` threads, `blockIdx.x` by `threadIdx.x`, each thread computing one
element (its reduction serially). The threads per block are the target's
`max_num_threads` capped at 256 (a common occupancy sweet spot that every CUDA
and OpenCL device takes) and at the stage's size.

Nothing here is fast — no shared memory, no register tiles — but every graph
op's computation runs, in its own layout, on any device: the baseline that
tuning (the auto-tuning issue) improves on.

    s = te.create_schedule(out.op)
    schedule_gpu(s, DeviceTarget("cuda"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ember import te
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import SymExpr
from ember.te.schedule import Schedule

if TYPE_CHECKING:
    from ember.backends.source import DeviceTarget

MAX_THREADS = 256


def schedule_gpu(s: Schedule, target: DeviceTarget) -> Schedule:
    """Schedule every stage of `s` for the GPU `target` (see the module)."""
    outputs = {id(op) for op in s.outputs}
    for stage in list(s.stages.values()):
        op = stage.op
        if not isinstance(op, te.ComputeOp):
            continue
        if id(op) not in outputs and not op.reduce_axis:
            stage.compute_inline()
            continue
        bind_threads(s, op, target)
    return s


def bind_threads(s: Schedule, op: te.ComputeOp, target: DeviceTarget) -> None:
    """Fuse `op`'s spatial loops and split them over blocks of threads."""
    stage = s[op]
    axes = list(op.axis)
    size = 1
    for v in axes:
        if isinstance(v.extent, SymExpr):
            raise EmberValueError(
                f"GPU schedules take fixed shapes; stage '{op.name}' has the "
                f"symbolic extent {v.extent}"
            )
        size *= v.extent
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    threads = min(target.max_num_threads, MAX_THREADS, size)
    blocks, inner = stage.split(fused, factor=threads)
    stage.bind(blocks, te.thread_axis("blockIdx.x"))
    stage.bind(inner, te.thread_axis("threadIdx.x"))
