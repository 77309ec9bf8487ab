"""The named pipelines. Reading `GRAPH_PASSES` then `EMBER_CPU` tells the whole
compile story for a CPU.

ember-opt model.mlir -p ember-graph
ember-opt kernel.mlir -p ember-cpu -t llvm
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

if TYPE_CHECKING:
    import numpy as np

    from ember.pass_context import PassContext

GRAPH_PASSES: tuple[tuple[str, int], ...] = (
    # graph: inference batch norms fold into the preceding conv2d/dense, or become
    # a per-channel mul and add (needs opt_level 2)
    ("graph-fold-batch-norm", 2),
    # identical params, literals and ops are merged
    ("cse", 2),
    # what params and literals alone compute is computed now (new params)
    ("graph-fold-constants", 1),
    ("dce", 2),
    # anchors take their elementwise epilogues, injective ops chain: a group per kernel
    ("graph-fuse-ops", 1),
)
"""The graph passes with the opt_level each needs, in the order they run."""


def graph_pipeline(ctx: "PassContext | None" = None) -> tuple[str, ...]:
    """The graph passes `ctx` (the current `PassContext` by default) runs, in order."""
    from ember.pass_context import PassContext

    ctx = ctx or PassContext.current()
    return tuple(name for name, level in GRAPH_PASSES if ctx.is_enabled(name, level))


def optimize_graph(
    module: ModuleOp,
    params: "Mapping[str, np.ndarray]",
    ctx: "PassContext | None" = None,
) -> "dict[str, np.ndarray]":
    """Run the graph pipeline of `ctx` on `module` in place, folding with `params`.

    Returns:
        The params the optimized module binds (folded weights included).
    """
    from ember.passes import get_all_passes, get_context
    from ember.passes.graph_fold_batch_norm import rewrite_batch_norms
    from ember.passes.graph_fold_constants import fold_constants, prune_params

    passes = get_all_passes()
    out = dict(params)
    for name in graph_pipeline(ctx):
        if name == "graph-fold-constants":
            out = fold_constants(module, out)
        elif name == "graph-fold-batch-norm":
            rewrite_batch_norms(module)
        else:
            PassPipeline.parse_spec(passes, name).apply(get_context(), module)
    return prune_params(module, out)


TE_TO_LOOP: tuple[str, ...] = (
    # te: the schedule applied, tensor expressions become loop nests over buffers
    "convert-te-to-loop",
    # loop: what the schedule made trivial goes (loops that run once, guards
    # that always hold), then duplicated index arithmetic
    "loop-simplify",
    "cse",
)
"""te IR to the scheduled loop nest: what `get_source("loop")` shows."""

EMBER_CPU: tuple[str, ...] = (
    *TE_TO_LOOP,
    # parallel loops become functions libgomp runs on every core
    "loop-outline-parallel",
    # vectorized loops become SIMD code on vector types
    "loop-vectorize",
    # loop: loop nests become structured control flow
    "convert-loop-to-scf",
    "canonicalize",
    "cse",
    # scf → cf: loops become branches between blocks
    "convert-scf-to-cf",
    # calls of registered host functions go through the hook a host installs;
    # a failed call returns from the function, out of every loop
    "convert-call-packed-to-llvm",
    # every public function gets a packed-ABI entry that checks its arguments
    "func-packed-abi",
    # upstream dialects → llvm
    "convert-math-to-llvm",
    "convert-vector-to-llvm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-memref-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",
    "reconcile-unrealized-casts",
    # only llvm ops are left, or the first other op is named
    "llvm-verify-lowered",
)


@dataclass(frozen=True)
class EmberCpuPipeline(ModulePass):
    """te (or loop) IR to the llvm dialect for a CPU: the passes of `EMBER_CPU`."""

    name = "ember-cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.passes import get_all_passes

        PassPipeline.parse_spec(get_all_passes(), ",".join(EMBER_CPU)).apply(ctx, op)


@dataclass(frozen=True)
class EmberGraphPipeline(ModulePass):
    """The graph passes of `GRAPH_PASSES` up to `opt-level` (literals fold; params
    fold only from Python, `optimize_graph`).

    ember-opt model.mlir -p 'ember-graph{opt-level=1}'
    """

    name = "ember-graph"

    opt_level: int = 2

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.pass_context import PassContext
        from ember.passes import get_all_passes

        names = graph_pipeline(PassContext(opt_level=self.opt_level))
        if names:
            PassPipeline.parse_spec(get_all_passes(), ",".join(names)).apply(ctx, op)


PIPELINES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ember-graph{opt-level=N}": (
        "graph -> graph: fold, fuse (N=0 none, 1 fold literals and fuse, 2 all)",
        tuple(name for name, _ in GRAPH_PASSES),
    ),
    "ember-cpu": ("te or loop -> llvm dialect, for a CPU", EMBER_CPU),
}
"""The named pipelines ember-opt lists (`--list-pipelines`): a summary and the
passes (for `ember-graph`, those of the highest level). A graph goes on past
`ember-graph` through the ahead-of-time flow, not a pass list: see
`ember-opt --emit` and `ember.aot`."""
