"""`ember-opt --emit=<stage>`: run the input down to a named IR level and print it.

    ember-opt kernel.mlir --emit=loop                  # te → scheduled loop nest
    ember-opt kernel.mlir --emit=asm -t "llvm -mtriple=aarch64-linux-gnu"
    ember-opt model.mlir --emit=graph --opt-level=1    # graph passes only
    ember-opt model.mlir --emit=loop                   # every kernel + the entry

The stages, in order: graph, te, loop, llvm (the llvm dialect), llvm-ir (LLVM IR
after LLVM's -O pipeline for the target), asm, obj. A te or loop function runs
`TE_TO_LOOP` then the rest of `EMBER_CPU`; a graph function runs the segments
of `ember-model` up to the stage (`model_passes`): te holds the kernels as te
functions and the model as `graph.call_kernel`s, loop the kernels as loop
functions and the model as `default_run` over its planned workspace. Either way
they are ordinary passes, so `--print-ir-after-all` and `--time-passes` see them.
"""

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from ember.runtime.errors import EmberValueError

STAGES = ("graph", "te", "loop", "llvm", "llvm-ir", "asm", "obj")
"""The IR levels `--emit` names, in compile order."""

TEXT_MODULE_STAGES = ("graph", "te", "loop", "llvm")


class StageError(EmberValueError):
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
    """An llvm-dialect module as optimized LLVM IR, assembly or object code. A
    model (`ember-model`'s output) is linked as `compile_model` links it: the
    object holds its kernels' objects and the params bound to it (an ONNX
    input's), and the text lists the kernels compiled apart."""
    from ember.backends.llvm import Target, translate
    from ember.backends.llvm.codegen import (
        emit_assembly,
        emit_object,
        optimize,
        parse,
    )
    from ember.passes.graph_plan_memory import MODEL_ATTR

    t = Target(target)
    if MODEL_ATTR in module.attributes:
        return _model_codegen(module, stage, t)
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


def _model_codegen(module: ModuleOp, stage: str, target) -> str | bytes:
    import tempfile

    from ember.compiler.model import link_model
    from ember.passes.bound_params import bound_params

    bound = bound_params()
    objects = kernel_listing(module)
    mod = link_model(module.clone(), target, bound.values if bound else None)
    if stage == "obj":
        with tempfile.TemporaryDirectory(prefix="ember-opt-") as tmp:
            path = f"{tmp}/model.o"
            mod.export_library(path)
            with open(path, "rb") as f:
                return f.read()
    text = mod.get_source("ll" if stage == "llvm-ir" else "asm")
    return text.rstrip() + "\n" + objects


def kernel_listing(module: ModuleOp) -> str:
    """Comment lines naming the kernels `module` links as objects."""
    from ember.passes.te_compile_kernels import object_keys

    return "".join(
        f"; kernel @{name}: an object compiled apart (te-compile-kernels), "
        f"cache key {key[:16]}\n"
        for name, key in object_keys(module).items()
    )


def make_pipeline(
    available: dict[str, Callable[[], type[ModulePass]]],
    callback: Callable[[ModulePass | None, ModuleOp, ModulePass | None], None],
    ctx,
) -> Pipeline:
    def run(spec: str, module: ModuleOp) -> None:
        if spec:
            PassPipeline.parse_spec(available, spec, callback).apply(ctx, module)

    return run


def device_source(module: ModuleOp, target) -> str:
    """te or loop IR as the source of a `c`, `opencl` or `cuda` target
    (`DeviceTarget`): the GPU kernels of the launch plan, or C's function
    bodies. te IR runs `TE_TO_LOOP` first (on `module`, in place)."""
    from ember.backends.source.gpu import build_plan
    from ember.backends.source.printer import print_c
    from ember.passes import run
    from ember.passes.graph_plan_memory import MODEL_ATTR
    from ember.passes.pipelines import TE_TO_LOOP

    if MODEL_ATTR in module.attributes and target.backend.models:
        return _device_model_source(module, target)
    level = input_level(module)
    if level not in ("te", "loop"):
        raise StageError(f"-t {target.kind} expects te or loop IR, got {level} IR")
    if level == "te":
        run(module, ",".join(TE_TO_LOOP))
    if target.is_gpu:
        return build_plan(module, target)["source"]
    return print_c(module, target.backend.face())


def _device_model_source(module: ModuleOp, target) -> str:
    """A GPU model after `ember-model`: its launch plan's source (the kernels
    compiled apart, joined) and `default_run`'s launches as comments."""
    import json

    from ember.compiler.model import model_kernels
    from ember.passes.graph_plan_memory import MODEL_ATTR
    from ember.runtime.abi import MODEL_ENTRY

    info = json.loads(module.attributes[MODEL_ATTR].data)  # type: ignore[attr-defined]
    plan = target.backend.model_plan(
        info, model_kernels(module, target.backend), target
    )
    run = plan["functions"][MODEL_ENTRY]
    lines = [
        f"// {MODEL_ENTRY}: {len(run['args'])} arguments, {len(run['buffers'])} "
        f"buffers, {len(run['launches'])} launches"
    ]
    for launch in run["launches"]:
        args = ", ".join(f"{k}{v}" for a in launch["args"] for k, v in a.items())
        lines.append(
            f"//   {launch['kernel']}<<<{launch['grid']}, {launch['block']}>>>({args})"
        )
    return plan["source"].rstrip() + "\n\n" + "\n".join(lines)
