"""The named pipelines. Reading `model_segments` tells the whole compile story
of a model, `EMBER_CPU` that of a te program.

    ember-opt model.mlir -p ember-model -t llvm      # graph IR in, LLVM IR out
    ember-opt model.mlir -p ember-graph              # the graph passes alone
    ember-opt kernel.mlir -p ember-cpu -t llvm       # te or loop IR in

A pipeline is an ordered list of named segments, each a list of passes; the
`--emit` stages of `ember-opt` stop after a segment, so every stage is a prefix
of the one pipeline that `ember.compile_model` runs too.
"""

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from ember.passes.pass_context import PassContext
from ember.runtime.errors import EmberValueError

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np

GRAPH_PASSES: tuple[tuple[str, int], ...] = (
    # graph: inference batch norms fold into the preceding conv2d/dense, or become
    # a per-channel mul and add (needs opt_level 2)
    ("graph-fold-batch-norm", 2),
    # layer norms written out (mean, difference, square, mean, epsilon, root,
    # quotient) become graph.layer_norm, one kernel
    ("graph-fuse-layer-norm", 2),
    # matmuls of one input by several weights (attention's query, key and
    # value) become one matmul by the joined weights and a slice for each
    ("graph-merge-matmuls", 2),
    # identical params, literals and ops are merged
    ("cse", 2),
    # what params and literals alone compute is computed now (new params)
    ("graph-fold-constants", 1),
    # matmul, scale, mask, softmax, matmul: graph.attention, one kernel that
    # keeps a tile of rows' scores in L1
    ("graph-fuse-attention", 2),
    # an elementwise chain on one byte tensor (a quantized model's float
    # activations between its quantized ops) becomes a 256-entry table
    ("graph-lookup-tables", 2),
    ("dce", 2),
    # anchors take their elementwise epilogues, injective ops chain: a group per kernel
    ("graph-fuse-ops", 1),
)
"""The graph passes with the opt_level each needs, in the order they run."""


def graph_pipeline(ctx: PassContext | None = None) -> tuple[str, ...]:
    """The graph passes `ctx` (the current `PassContext` by default) runs, in order."""
    ctx = ctx or PassContext.current()
    return tuple(name for name, level in GRAPH_PASSES if ctx.is_enabled(name, level))


def optimize_graph(
    module: ModuleOp,
    params: "Mapping[str, np.ndarray]",
    ctx: PassContext | None = None,
) -> "dict[str, np.ndarray]":
    """Run the graph passes of `ctx` on `module` in place, with `params` bound.

    Returns:
        The params the optimized module binds (folded weights included).
    """
    from ember.passes import run
    from ember.passes.bound_params import bind_params
    from ember.passes.graph_fold_constants import prune_params

    with bind_params(params) as bound:
        passes = graph_pipeline(ctx)
        if passes:
            run(module, ",".join(passes))
    return prune_params(module, bound.values)


GRAPH_TO_TE: tuple[str, ...] = (
    # each fusion group becomes a te kernel (compute + schedule, chosen by the
    # strategy registered for its op class and the target) and a call of it
    "convert-graph-to-te",
)

TE_TO_LOOP: tuple[str, ...] = (
    # te: the schedule applied, tensor expressions become loop nests over buffers
    "convert-te-to-loop",
    # loop: what the schedule made trivial goes (loops that run once, guards
    # that always hold), then duplicated index arithmetic
    "loop-simplify",
    "cse",
)
"""te IR to the scheduled loop nest: what `get_source("loop")` shows."""

KERNELS_TO_LOOP: tuple[str, ...] = (
    # a model's kernels allocate nothing: their intermediates become scratch
    # arguments the model's workspace provides
    "convert-te-to-loop{scratch-args=true}",
    "loop-simplify",
    "cse",
)
"""A model's kernel, te to loops (its buffers are the caller's)."""

LOOP_TO_CF: tuple[str, ...] = (
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
)
"""Loop nests to branches between blocks, over upstream dialects."""

TO_LLVM: tuple[str, ...] = (
    # upstream dialects → llvm
    "convert-math-to-llvm",
    "convert-dot-to-llvm",
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
"""Upstream dialects to the llvm dialect."""

LOOP_TO_LLVM: tuple[str, ...] = (
    *LOOP_TO_CF,
    # every public function gets a packed-ABI entry that checks its arguments
    "func-packed-abi",
    *TO_LLVM,
)
"""Loop IR to the llvm dialect, public functions with their packed entries."""

EMBER_CPU: tuple[str, ...] = (*TE_TO_LOOP, *LOOP_TO_LLVM)
"""A te (or loop) program to the llvm dialect for a CPU."""


def model_segments(
    ctx: PassContext | None = None,
    records: str = "auto",
    embed_params: bool = True,
    debug: bool = False,
    kind: str = "llvm",
    precision: str = "float32",
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The model pipeline `ember-model` for target kind `kind`: (stage,
    passes) in order, the graph passes those of `ctx` (the current
    `PassContext` by default), the segments after te those of the kind's
    backend (`Backend.model_lowering`). The stage names are `ember-opt
    --emit`'s: each segment ends at that level.

    Args:
        ctx: the pass context (opt level, disabled passes).
        records: the tuning log `te-apply-records` applies ("auto": the one
            under ember's cache directory, "": none).
        embed_params: whether the library carries its params
            (`graph-plan-memory{embed-params}`).
        debug: whether the call plan names each kernel's source nodes and
            tensors (`graph-plan-memory{debug}`, for `ember debug`).
        kind: the target kind ("llvm", "opencl", ...).
        precision: the products' ("float32" or "bf16",
            `convert-graph-to-te{precision}`; "auto": each layer's measured
            by `graph-mixed-precision`).
    """
    from ember.backends import backend

    owner = backend(kind)
    apply_records = "te-apply-records"
    if records != "auto":
        apply_records += "{records=" + json.dumps(records) + "}"
    options = ([] if embed_params else ["embed-params=false"]) + (
        ["debug=true"] if debug else []
    )
    if owner.memory != "workspace":
        options.append(f"memory={owner.memory}")
    plan = "graph-plan-memory" + ("{" + " ".join(options) + "}" if options else "")
    graph_passes = _graph_passes(ctx, precision)
    if owner.is_gpu:  # topi.attention's schedule is a CPU's (scores in L1); the
        # generic GPU schedule would compute each exponential once per result
        # column, so a GPU keeps the two matmuls and the softmax
        graph_passes = tuple(p for p in graph_passes if p != "graph-fuse-attention")
    return (
        ("graph", graph_passes),
        # each kernel's best schedule from a tuning log, where it has one
        ("te", (_to_te(precision), apply_records)),
        # each kernel compiled apart (in parallel, cached), as MLIR's
        # gpu-module-to-binary compiles device modules; the model function
        # becomes `default_run`: kernel calls on views of the memory planned
        # by liveness (the backend's rule) and of the params; then what the
        # backend adds to lower the entry
        *owner.model_lowering(plan),
    )


def _graph_passes(ctx: PassContext | None, precision: str) -> tuple[str, ...]:
    """The graph passes of `ctx`; for precision "auto", with each layer's
    precision measured (`graph-mixed-precision`) before the ops fuse."""
    passes = graph_pipeline(ctx)
    if precision != "auto":
        return passes
    fuse = "graph-fuse-ops"
    at = passes.index(fuse) if fuse in passes else len(passes)
    return (*passes[:at], "graph-mixed-precision", *passes[at:])


def _to_te(precision: str) -> str:
    (to_te,) = GRAPH_TO_TE
    if precision in ("float32", "auto"):  # auto: each layer as it is marked
        return to_te
    return f"{to_te}{{precision={precision}}}"


def model_passes(
    ctx: PassContext | None = None, until: str = "llvm", **options
) -> tuple[str, ...]:
    """The passes of `ember-model` up to and including stage `until`
    (`options` as `model_segments` takes them)."""
    passes: list[str] = []
    segments = model_segments(ctx, **options)
    for stage, segment in segments:
        passes += segment
        if stage == until:
            return tuple(passes)
    if until == "llvm":  # a kind whose entry is no machine code: every stage
        return tuple(passes)
    raise EmberValueError(f"no model stage {until!r}")


def _run(ctx: Context, module: ModuleOp, passes: tuple[str, ...]) -> None:
    from ember.passes import get_all_passes

    if passes:
        PassPipeline.parse_spec(get_all_passes(), ",".join(passes)).apply(ctx, module)


@dataclass(frozen=True)
class EmberCpuPipeline(ModulePass):
    """te (or loop) IR to the llvm dialect for a CPU: the passes of `EMBER_CPU`."""

    name = "ember-cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _run(ctx, op, EMBER_CPU)


@dataclass(frozen=True)
class EmberGraphPipeline(ModulePass):
    """The graph passes of `GRAPH_PASSES` up to `opt-level` (params fold when
    bound, `ember.passes.bound_params`).

    ember-opt model.mlir -p 'ember-graph{opt-level=1}'
    """

    name = "ember-graph"

    opt_level: int = 2

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _run(ctx, op, graph_pipeline(PassContext(opt_level=self.opt_level)))


@dataclass(frozen=True)
class EmberModelPipeline(ModulePass):
    """A graph model to the llvm dialect: every segment of `model_segments`.

    ember-opt model.mlir -p 'ember-model{opt-level=2 records="r.jsonl"}' -t llvm
    """

    name = "ember-model"

    opt_level: int = 2
    records: str = "auto"
    """The tuning log to apply ("auto": the one under ember's cache directory)."""
    precision: str = "float32"
    """The products' precision, "float32" or "bf16" (`convert-graph-to-te`),
    or "auto" (`graph-mixed-precision`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.backends.source.target import target_kind, target_of

        context = PassContext(opt_level=self.opt_level)
        kind = target_kind(target_of(op))
        passes = model_passes(
            context, records=self.records, kind=kind, precision=self.precision
        )
        _run(ctx, op, passes)


def named_pipelines() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The named pipelines ember-opt lists (`--list-pipelines`): a summary and
    the passes (those of the highest opt level). A function: `ember-model`'s
    passes come from the llvm backend, which a run that only prints IR does
    not load."""
    return {
        "ember-model{opt-level=N}": (
            "graph -> llvm dialect: a whole model, its kernels and its entry",
            (
                *(name for name, _ in GRAPH_PASSES),
                *(p for _, segment in model_segments()[1:] for p in segment),
            ),
        ),
        "ember-graph{opt-level=N}": (
            "graph -> graph: fold, fuse (N=0 none, 1 fold literals and fuse, 2 all)",
            tuple(name for name, _ in GRAPH_PASSES),
        ),
        "ember-cpu": ("te or loop -> llvm dialect, for a CPU", EMBER_CPU),
    }
