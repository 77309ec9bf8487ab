"""`ember-opt --emit=<stage>`: run the input down to a named IR level and print it.

    ember-opt kernel.mlir --emit=loop                  # te → scheduled loop nest
    ember-opt kernel.mlir --emit=asm -t "llvm -mtriple=aarch64-linux-gnu"
    ember-opt model.mlir --emit=graph --opt-level=1    # graph passes only
    ember-opt model.mlir --emit=loop                   # every kernel + the entry

The stages, in order: graph, te, loop, llvm (the llvm dialect), llvm-ir (LLVM IR
after LLVM's -O pipeline for the target), asm, obj. A te or loop function runs
`TE_TO_LOOP` then the rest of `EMBER_CPU` as ordinary passes (so
`--print-ir-after-all` and `--time-passes` see them). A graph function is not
one pass list: past the graph passes it is lowered by the ahead-of-time flow
(`ember.aot`) stage by stage: each fusion group becomes a kernel (a te
function), and the model's entry `default_run` calls the kernels on a static
memory plan. The output is then one module per kernel and one for the entry,
separated by `// -----` (so `--split-input-file` reads it back).
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass, PassPipeline

STAGES = ("graph", "te", "loop", "llvm", "llvm-ir", "asm", "obj")
"""The IR levels `--emit` names, in compile order."""

TEXT_MODULE_STAGES = ("graph", "te", "loop", "llvm")


class StageError(ValueError):
    """An `--emit` the input cannot give (a stage before the input's level)."""


def input_level(module: ModuleOp) -> str:
    """The stage `module` is at: the earliest level of any op it holds."""
    dialects = {op.name.split(".")[0] for op in module.walk()} - {"builtin"}
    if "graph" in dialects:
        return "graph"
    if "te" in dialects:
        return "te"
    if dialects and dialects <= {"llvm"}:
        return "llvm"
    return "loop"


def check_stage(stage: str, level: str) -> None:
    if level != "graph" and stage == "graph":
        raise StageError(f"--emit=graph expects graph IR, got {level} IR")
    if STAGES.index(stage) < STAGES.index(level):
        later = ", ".join(STAGES[STAGES.index(level) :])
        raise StageError(
            f"--emit={stage}: the input is already at the {level} stage; "
            f"expected one of {later}"
        )


def stage_passes(stage: str, level: str) -> tuple[str, ...]:
    """The passes taking a te/loop/llvm module at `level` to `stage` (the
    llvm-dialect part; llvm-ir, asm and obj are LLVM's work after it)."""
    from ember.passes.pipelines import EMBER_CPU, TE_TO_LOOP

    if level == "llvm" or stage == "te":
        return ()
    if stage == "loop":
        return TE_TO_LOOP
    return EMBER_CPU


Pipeline = Callable[[str, ModuleOp], None]
"""Runs a comma-separated pass list on a module (instrumented by ember-opt)."""


def codegen(module: ModuleOp, stage: str, target: str) -> str | bytes:
    """An llvm-dialect module as optimized LLVM IR, assembly or object code."""
    from ember.backends.llvm import Target, translate
    from ember.backends.llvm.codegen import (
        emit_assembly,
        emit_object,
        optimize,
        parse,
    )

    t = Target(target)
    tm = t.create_target_machine()
    compiled = parse(
        translate(module, triple=t.triple, data_layout=str(tm.target_data))
    )
    optimize(compiled, tm, t.opt_level)
    if stage == "llvm-ir":
        return str(compiled)
    if stage == "asm":
        return emit_assembly(compiled, tm)
    return emit_object(compiled, tm)


@dataclass
class ModelStages:
    """A graph module lowered by the AOT flow: kernels' modules and the entry."""

    kernels: list[tuple[str, ModuleOp]]
    entry: ModuleOp


def lower_model(module: ModuleOp, target: str) -> ModelStages:
    """The kernels (te IR) and entry (loop level) of graph `module`'s `@main`.

    ember-opt sees no param values: each `graph.param` is bound to zeros of its
    type, which changes no kernel (weights are data, never code).
    """
    from xdsl.dialects.builtin import StringAttr
    from xdsl.parser import Parser

    from ember.aot import _dtype, _entry_module, _Lowering, _main, _plan
    from ember.dialects import graph
    from ember.kernel_build import HASHED_NAME
    from ember.passes import get_context

    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    main = funcs[0] if len(funcs) == 1 else _main(module)
    params: dict[str, np.ndarray] = {}
    for op in main.walk():
        if isinstance(op, graph.ParamOp):
            t = op.result.type
            assert isinstance(t, TensorType)
            params[op.param_name.data] = np.zeros(t.get_shape(), _dtype(t))
    # Lowering compiles nothing (kernels compile after it), so no cache is read.
    lowering = _Lowering(main, params, target, None, None, 1)  # type: ignore[arg-type]
    lowering.lower()
    plan, layout, blob_bytes = _plan(lowering)
    entry = _entry_module(lowering, main, plan, layout, blob_bytes, True)
    kernels = []
    ctx = get_context()
    for job in lowering.jobs.values():
        kernel = Parser(ctx, job.text, job.symbol).parse_module()
        for op in kernel.ops:
            if isinstance(op, func.FuncOp) and op.sym_name.data == HASHED_NAME:
                op.sym_name = StringAttr(job.symbol)
        kernels.append((job.symbol, kernel))
    return ModelStages(kernels, entry)


def model_stage_modules(
    stages: ModelStages, stage: str, run: Pipeline
) -> list[tuple[str, ModuleOp]]:
    """The kernels' and entry's modules at `stage` (te, loop or llvm)."""
    from ember.kernel_build import kernel_passes
    from ember.passes.pipelines import EMBER_CPU, TE_TO_LOOP

    out = []
    for symbol, kernel in stages.kernels:
        if stage == "loop":  # the kernels' own te-to-loop (scratch arguments)
            run(",".join(kernel_passes()[: len(TE_TO_LOOP)]), kernel)
        elif stage != "te":
            run(",".join(kernel_passes()), kernel)
        out.append((f"kernel {symbol}", kernel))
    if stage in ("loop", "llvm"):
        if stage == "llvm":
            run(",".join(EMBER_CPU[len(TE_TO_LOOP) :]), stages.entry)
        out.append(("entry default_run", stages.entry))
    return out


def make_pipeline(
    available: dict[str, Callable[[], type[ModulePass]]],
    callback: Callable[[ModulePass | None, ModuleOp, ModulePass | None], None],
    ctx,
) -> Pipeline:
    def run(spec: str, module: ModuleOp) -> None:
        if spec:
            PassPipeline.parse_spec(available, spec, callback).apply(ctx, module)

    return run
