"""Ahead-of-time model compilation: import, the `ember-model` pipeline, code.

    mod = ember.compile_model("mobilenet_v2.onnx", shape={"input": (1, 3, 224, 224)})
    gm = ember.runtime.GraphModule(mod["default"](ember.runtime.cpu()))
    gm.set_input("input", x); gm.run(); y = gm.get_output(0).numpy()
    mod.export_library("mobilenet_v2.so")

`compile_model` runs the segments of `ember.passes.pipelines.model_segments`,
the same passes `ember-opt -p ember-model` runs on text, with the model's
params bound (`ember.passes.bound_params`) so that folding and weight packing
compute values:

1. **graph**: constants and batch norms fold, ops fuse into groups;
2. **te**: `convert-graph-to-te` makes each group a te kernel function (its
   schedule chosen for the target) and a `graph.call_kernel`;
3. **loop**: the kernels become loop functions, and `graph-plan-memory` makes
   the model function `default_run` over a planned workspace and params blob;
4. **llvm**: everything to the llvm dialect, `default_run` with its packed
   entry and the `ember.model` metadata.

The one difference from running the list on one module is where the kernels'
own passes run: as MLIR runs a function pipeline per function, each kernel
function is compiled apart, to an object of its own (in a pool of processes,
once per distinct kernel, cached by its te IR and target in
`ember.compile_cache`), and the module keeps its declaration. The entry is
JIT-compiled with the kernel objects linked into the same engine, and each
kernel object is an imported module, so `export_library` writes one library.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import BlockArgument
from xdsl.utils.exceptions import PassFailedException

from ember.compile_cache import CompileCache, default_cache
from ember.dialects import graph
from ember.kernel_build import (
    HASHED_NAME,
    KernelJob,
    compile_kernels,
    kernel_key,
    object_symbols,
)
from ember.runtime import EmberError, Module
from ember.runtime.cc import ObjectFile

if TYPE_CHECKING:
    from ember.backends.llvm import LLVMModule, Target
    from ember.backends.source import DeviceTarget

Progress = Callable[[str, int, int, str], None]
"""`progress(stage, done, total, detail)`: stage is "graph", "kernels" or "link"."""

ENTRY = "default_run"
PARAMS_SYMBOL = "__ember_params"


class ModelCompileError(EmberError):
    """A model that cannot be compiled; the message names the op or value."""


@dataclass
class CompileStats:
    """What a compilation did, for tools and tests."""

    kernels: int = 0
    calls: int = 0
    cache_hits: int = 0
    compiled: int = 0
    workspace_bytes: int = 0
    intermediate_bytes: int = 0
    params_bytes: int = 0
    tuned: int = 0
    """Kernels whose schedule came from a tuning record."""
    seconds: dict[str, float] = field(default_factory=dict)


def compile_model(
    model: ModuleOp | str | Path | Any,
    params: Mapping[str, np.ndarray] | None = None,
    target: str | dict | Target | DeviceTarget = "llvm",
    shape: Mapping[str, Sequence[int]] | None = None,
    opt_level: int | None = None,
    embed_params: bool = True,
    disabled_pass: Sequence[str] = (),
    cache: CompileCache | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
    tuning_records: str | os.PathLike | Sequence | bool | None = None,
) -> LLVMModule:
    """Compile a model ahead of time into one module running `default_run`.

    Args:
        model: graph IR (a module with `func.func @main`, or its text), an ONNX
            `ModelProto`, or the path of an `.onnx` file.
        params: the graph's params by name (with graph IR); an ONNX model
            brings its own, and a value given here for one of its inputs fixes
            that input at compile time (TVM's `relay.build(params=...)`): an
            input that gives a shape, axes or pads then folds.
        target: where the code runs ("llvm" is this machine; "cuda" and
            "opencl" give a `DeviceModule`, see `ember.aot_device`).
        shape: input shapes by name, for ONNX models with symbolic dimensions.
        opt_level: the graph passes' level (0: none, 1: fold constants and
            fuse, 2+: everything); by default the current `PassContext`'s.
        embed_params: put the params blob into the library (`__ember_params`);
            otherwise `mod.params` holds them for `save_param_dict` and
            `GraphModule.load_params`. As with TVM's build, those are the
            params the library expects, not the model's originals: packed
            weights under their own names (`conv.weight.packed.<hash>`), folded
            params, and only what some kernel reads.
        disabled_pass: graph passes to skip by name.
        cache: the kernel cache (the process-wide one by default).
        progress: called as work advances (see `Progress`).
        workers: processes compiling kernels (default: one per core).
        tuning_records: a tuning log (a path, paths or `Record`s, from
            `ember-tune` or `ember.tune_model`): each kernel with a record
            measured on this target gets its best schedule. None: the log
            under ember's cache directory, if any (`default_records`); False:
            none.

    Returns:
        The compiled module: `mod["default"](dev)` makes the graph executor,
        `mod.export_library("m.so")` writes the library, `mod.params` is the
        param dict the library reads (its blob's entries by name: what
        `load_params` takes), `mod.compile_stats` what was done.

    Raises:
        ModelCompileError: an op no strategy covers, a missing param, ...
    """
    from ember.backends.llvm import LLVMModule, Target
    from ember.backends.source import KINDS, DeviceTarget, target_kind
    from ember.passes.graph_plan_memory import MODEL_ATTR
    from ember.passes.pipelines import model_segments

    if target_kind(target) in KINDS:
        from ember.aot_device import compile_device_model

        device = DeviceTarget(target)  # type: ignore[arg-type]
        if not device.is_gpu:
            raise ModelCompileError(
                "compile_model: target 'c' builds kernels (ember.build) but not "
                "whole models yet; use 'llvm' for this machine, or 'cuda' / 'opencl'"
            )
        return compile_device_model(  # type: ignore[return-value]
            model, params, device, shape, opt_level, disabled_pass
        )
    timings: dict[str, float] = {}
    start = time.perf_counter()
    tgt = Target(target)  # type: ignore[arg-type]  # device kinds returned above
    segments = dict(model_segments(_pass_context(opt_level, disabled_pass)))
    module, values = _to_te(model, params, tgt, shape, segments, progress, timings)
    if tuning_records is None:
        tuning_records = default_records(tgt)
    tuned = 0
    if tuning_records:
        from ember.tune.records import apply_history_best

        tuned = apply_history_best(module, tuning_records, tgt)
    timings["strategy"] = time.perf_counter() - start - timings["graph"]
    t0 = time.perf_counter()
    jobs = _take_kernels(module, tgt)
    calls = sum(isinstance(op, graph.CallKernelOp) for op in module.walk())
    hits = 0

    def report(done: int, total: int, symbol: str, hit: bool) -> None:
        nonlocal hits
        hits += hit
        if progress is not None:
            progress("kernels", done, total, f"{symbol}{' (cached)' if hit else ''}")

    cache = cache if cache is not None else default_cache()
    codes = compile_kernels(jobs, str(tgt), cache, workers, report)
    t1 = time.perf_counter()
    timings["kernels"] = t1 - t0
    _run(module, segments["loop"])
    model_info = json.loads(module.attributes[MODEL_ATTR].data)  # type: ignore[attr-defined]
    model_info["params_embedded"] = embed_params
    module.attributes[MODEL_ATTR] = StringAttr(json.dumps(model_info))
    _run(module, segments["llvm"])
    objects = [_object(job, codes[job.symbol], tgt) for job in jobs]
    packed = _params(model_info["params"], values)
    blob = _blob(packed, model_info["params"], model_info["params_bytes"])
    data = {PARAMS_SYMBOL: blob} if embed_params else None
    mod = LLVMModule(module, tgt, entry_name=ENTRY, data=data, objects=objects)
    for o in objects:
        mod.import_module(KernelObjectModule(o))
    timings["link"] = time.perf_counter() - t1
    timings["total"] = time.perf_counter() - start
    stats = CompileStats(
        kernels=len(jobs),
        calls=calls,
        cache_hits=hits,
        compiled=len(jobs) - hits,
        workspace_bytes=model_info["workspace_bytes"],
        intermediate_bytes=model_info["intermediate_bytes"],
        params_bytes=model_info["params_bytes"],
        tuned=tuned,
        seconds=timings,
    )
    mod.params = packed  # type: ignore[attr-defined]
    mod.compile_stats = stats  # type: ignore[attr-defined]
    return mod


def lower_to_te(
    model: ModuleOp | str | Path | Any,
    params: Mapping[str, np.ndarray] | None = None,
    target: str | dict | Target = "llvm",
    shape: Mapping[str, Sequence[int]] | None = None,
    opt_level: int | None = None,
    disabled_pass: Sequence[str] = (),
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """A model through the `graph` and `te` stages of `ember-model`, as
    `compile_model` runs them: the module of its kernels (te functions, each
    with its schedule) and their calls, and the params it binds then (packed
    weights included). What the tuner extracts its tasks from."""
    from ember.backends.llvm import Target
    from ember.passes.pipelines import model_segments

    segments = dict(model_segments(_pass_context(opt_level, disabled_pass)))
    return _to_te(model, params, Target(target), shape, segments, None, {})


def _to_te(model, params, target, shape, segments, progress, timings):
    from ember.backends.llvm.target import set_module_target
    from ember.passes.bound_params import bind_params

    start = time.perf_counter()
    module, params = _load(model, params, shape)
    _check_params(_main(module), params)
    _check_computes(_main(module))
    set_module_target(module, target)
    with bind_params(params) as bound:
        _run(module, segments["graph"])
        timings["graph"] = time.perf_counter() - start
        if progress is not None:
            progress("graph", 1, 1, "")
        _run(module, segments["te"])
    return module, bound.values


def default_records(target) -> str | None:
    """The tuning log under ember's cache directory that `compile_model`
    applies by default (`ember-tune` adds its best records there), if it
    exists; its records apply only to the target they were measured on."""
    from ember.compile_cache import default_directory

    directory = default_directory()
    path = directory / "tuning.jsonl" if directory is not None else None
    return str(path) if path is not None and path.is_file() else None


def _pass_context(opt_level: int | None, disabled: Sequence[str]):
    """The current `PassContext`, with `opt_level` and `disabled` (when given)
    taking precedence."""
    from ember.pass_context import PassContext

    current = PassContext.current()
    return PassContext(
        opt_level=current.opt_level if opt_level is None else opt_level,
        disabled_pass=[*current.disabled_pass, *disabled],
        config=current.config,
    )


def _run(module: ModuleOp, passes: Sequence[str]) -> None:
    from ember.passes import run

    if not passes:
        return
    try:
        run(module, ",".join(passes))
    except PassFailedException as e:
        raise ModelCompileError(str(e)) from None


def _take_kernels(module: ModuleOp, target: Target) -> list[KernelJob]:
    """Each kernel function as a job compiled apart; the module keeps its
    declaration with the signature its loop form has (operands, the result,
    then scratch buffers)."""
    from ember.passes.convert_graph_to_te import KERNEL_ATTR
    from ember.passes.convert_te_to_loop import scratch_buffers
    from ember.passes.graph_plan_memory import memref_of

    jobs = []
    for op in list(module.ops):
        if not isinstance(op, func.FuncOp) or KERNEL_ATTR not in op.attributes:
            continue
        symbol = op.sym_name.data
        copy = op.clone()
        copy.sym_name = StringAttr(HASHED_NAME)
        copy.sym_visibility = None
        del copy.attributes[KERNEL_ATTR]
        text = str(ModuleOp([copy]))
        try:
            scratch = scratch_buffers(op)
        except PassFailedException as e:
            raise ModelCompileError(f"kernel @{symbol}: {e}") from None
        names = _arg_names(op)
        types = [memref_of(t) for t in op.function_type.inputs.data]
        attrs = [DictionaryAttr({"ember.name": StringAttr(n)}) for n in names]
        out = op.function_type.outputs.data[0]
        types.append(memref_of(out))
        attrs.append(
            DictionaryAttr(
                {"ember.name": StringAttr(symbol), "ember.output": UnitAttr()}
            )
        )
        for name, t in scratch:
            types.append(t)
            attrs.append(
                DictionaryAttr(
                    {
                        "ember.name": StringAttr(name),
                        "ember.output": UnitAttr(),
                        "ember.scratch": UnitAttr(),
                    }
                )
            )
        decl = func.FuncOp.external(symbol, types, [])
        decl.arg_attrs = ArrayAttr(attrs)
        module.body.block.insert_op_before(decl, op)
        module.body.block.erase_op(op)
        jobs.append(
            KernelJob(
                text,
                symbol,
                kernel_key(text, str(target)),
                tuple(str(t) for _, t in scratch),
            )
        )
    return jobs


def _arg_names(f: func.FuncOp) -> list[str]:
    n = len(f.function_type.inputs.data)
    dicts = f.arg_attrs.data if f.arg_attrs is not None else [DictionaryAttr({})] * n
    names = []
    for i, d in enumerate(dicts):
        name = d.data.get("ember.name")
        names.append(name.data if isinstance(name, StringAttr) else f"arg{i}")
    return names


def _object(job: KernelJob, code: bytes, target: Target) -> ObjectFile:
    from ember.backends.llvm.module import _resolve
    from ember.runtime.parallel import NUM_THREADS_SYMBOL

    try:
        defined, needed = object_symbols(code)
    except ValueError:  # not ELF64 (wasm32, 32-bit ELF): nothing runs here
        defined, needed = {job.symbol}, set()
    for name in needed - {NUM_THREADS_SYMBOL}:
        if target.is_host and not _resolve(name):
            raise ModelCompileError(
                f"kernel {job.symbol} uses {name!r}, which this process lacks"
            )
    return ObjectFile(
        name=f"{job.symbol}.o",
        code=code,
        triple=target.triple,
        features=_features(target),
        symbols=tuple(sorted(defined)),
    )


def _params(
    layout: Mapping[str, dict], values: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The blob's entries by name, checked against the layout the plan made."""
    out = {}
    for name, entry in layout.items():
        if name not in values:
            raise ModelCompileError(f'graph.param "{name}": no value in the params')
        array = np.asarray(values[name], order="C")  # 0-d stays 0-d
        if list(array.shape) != entry["shape"]:
            raise ModelCompileError(
                f'graph.param "{name}": expected shape {tuple(entry["shape"])}, '
                f"got {array.shape}"
            )
        out[name] = array.astype(entry["dtype"], copy=False)
    return out


def _blob(packed: Mapping[str, np.ndarray], layout: Mapping[str, dict], nbytes: int):
    blob = np.zeros(nbytes, np.uint8)
    for name, array in packed.items():
        start = layout[name]["offset"]
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        blob[start : start + raw.size] = raw
    return blob


def _features(t: Target) -> tuple[str, ...]:
    return tuple(f[1:] for f in t.features.split(",") if f.startswith("+"))


class KernelObjectModule(Module):
    """One compiled kernel's object, imported by a model's module so that
    `export_library` links it into the library beside the entry (in the JIT
    the entry's engine already holds its code)."""

    type_key = "kernel-object"

    def __init__(self, obj: ObjectFile):
        super().__init__(None)
        self._obj = obj

    def _object_file(self, name: str) -> ObjectFile:
        o = self._obj
        return ObjectFile(name, o.code, o.triple, o.features, {}, o.symbols)

    def _describe(self) -> str:
        return f"kernel {', '.join(self._obj.symbols)}"


def _load(
    model: Any, params: Mapping[str, np.ndarray] | None, shape
) -> tuple[ModuleOp, Mapping[str, np.ndarray]]:
    if isinstance(model, ModuleOp):
        return model.clone(), params or {}
    if isinstance(model, str) and model.lstrip().startswith(("builtin.module", "func")):
        from xdsl.parser import Parser

        from ember.passes import get_context

        try:
            module = Parser(get_context(), model, "<model>").parse_module()
            module.verify()
        except Exception as e:
            raise ModelCompileError(f"invalid graph IR: {e}") from None
        return module, params or {}
    from ember.frontends.onnx import from_onnx

    module, onnx_params = from_onnx(
        str(model) if isinstance(model, Path) else model, shape=shape, freeze=params
    )
    return module, {**onnx_params, **(params or {})}


def _check_params(main: func.FuncOp, params: Mapping[str, np.ndarray]) -> None:
    missing = sorted(
        {
            op.param_name.data
            for op in main.walk()
            if isinstance(op, graph.ParamOp) and op.param_name.data not in params
        }
    )
    if missing:
        raise ModelCompileError(
            f"expected a value for every graph.param, got none for "
            f"{', '.join(missing)} ({len(params)} params given)"
        )


def _check_computes(main: func.FuncOp) -> None:
    """A model without outputs has nothing to plan memory for or run (one
    whose outputs are its inputs copies them: `is_graph_function`)."""
    from ember.passes.convert_graph_to_te import is_graph_function

    if is_graph_function(main):
        return

    def name(attrs, i: int) -> str:
        attr = (
            attrs.data[i].data.get("ember.name") if attrs and i < len(attrs) else None
        )
        return f"'{attr.data}'" if isinstance(attr, StringAttr) else str(i)

    ret = main.body.block.last_op
    outs = [
        f"output {name(main.res_attrs, i)} is "
        + (
            f"input {name(main.arg_attrs, v.index)}"
            if isinstance(v, BlockArgument)
            else "a constant"
        )
        for i, v in enumerate(ret.operands if ret is not None else ())
    ]
    raise ModelCompileError(
        f"@main computes nothing ({', '.join(outs) or 'no outputs'}): ember "
        "compiles models that run at least one op"
    )


def _main(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise ModelCompileError("expected a graph module with func.func @main")


__all__ = [
    "CompileStats",
    "KernelObjectModule",
    "ModelCompileError",
    "compile_model",
]
