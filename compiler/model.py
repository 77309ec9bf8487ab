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
function is compiled apart by its target's backend (`te-compile-kernels`: an
object for a CPU, a piece of a launch plan for a GPU; in a pool of processes,
once per distinct kernel, cached by its te IR and target in
`ember.backends.kernel_cache`), and the module keeps its declaration. `link_model`
then asks the backend for the runtime module (`Backend.link_model`): a CPU's
entry JIT-compiled with the kernel objects (`export_library` writes one
library), a GPU's launch plan (`backends/source/gpu_model.py`). The same
pipeline runs for every kind; only the backend's segments after te and its
memory rule (`Backend.memory`) differ.
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
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import BlockArgument
from xdsl.utils.exceptions import PassFailedException

from ember.backends.kernel_cache import CompileCache
from ember.backends.kernels import KernelBuild, KernelCode, kernel_build, te_source
from ember.dialects import graph
from ember.passes.pipelines import GRAPH_TO_TE
from ember.passes.te_compile_kernels import OBJECTS_ATTR, object_keys
from ember.runtime import EmberError, Module
from ember.runtime.errors import EmberValueError

if TYPE_CHECKING:
    from ember.backends import Backend
    from ember.backends.llvm import Target
    from ember.backends.source import DeviceTarget

Progress = Callable[[str, int, int, str], None]
"""`progress(stage, done, total, detail)`: stage is "graph", "kernels" or "link"."""


class ModelCompileError(EmberError):
    """A model that cannot be compiled; the message names the op or value."""


@dataclass
class CompileStats:
    """What a compilation did, for tools and tests."""

    kernels: int = 0
    calls: int = 0
    cache_hits: int = 0
    compiled: int = 0
    workspace_bytes: int | str = 0
    """In bytes; for a model with symbolic shapes and no bounds, the
    expression over its symbols (text)."""
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
    bounds: Mapping[str, int] | None = None,
    opt_level: int | None = None,
    embed_params: bool = True,
    disabled_pass: Sequence[str] = (),
    cache: CompileCache | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
    tuning_records: str | os.PathLike | Sequence | bool | None = None,
    debug: bool = False,
    precision: str = "float32",
    calibration: Mapping[str, np.ndarray]
    | Sequence[Mapping[str, np.ndarray]]
    | None = None,
) -> Module:
    """Compile a model ahead of time into one module running `default_run`.

    Args:
        model: graph IR (a module with `func.func @main`, or its text), an ONNX
            `ModelProto`, or the path of an `.onnx` file.
        params: the graph's params by name (with graph IR); an ONNX model
            brings its own, and a value given here for one of its inputs fixes
            that input at compile time (TVM's `relay.build(params=...)`): an
            input that gives a shape, axes or pads then folds.
        target: where the code runs ("llvm" is this machine; a GPU kind,
            "cuda", "opencl" or "vulkan", gives a `DeviceModule`, see
            `ember.backends.source.gpu_model`).
        shape: input shapes by name: fixes an ONNX model's symbolic
            dimensions (`dim_param` and unnamed ones), which otherwise stay
            symbols: one library runs every consistent shape.
        bounds: upper bounds of size symbols by name (`{"seq": 512}`): the
            library refuses larger ones, plans its workspace once for them,
            and schedules plan for them.
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
        debug: keep in the call plan each kernel's ONNX nodes and the
            tensor its result is (`graph-plan-memory{debug}`), for `ember
            debug` and the profile's node names; every library keeps the
            kernels' graph ops.
        precision: the products' precision: "float32", or "bf16":
            convolutions of one group, dense layers and matmuls by a weight
            multiply bfloat16 roundings of their operands (weights stored so)
            and sum in float32 (`ember.topi.bf16`), on a target with a
            bfloat16 dot product (x86 avx512bf16, aarch64 bf16); elsewhere
            refused. Activations between kernels stay float32. "auto": each
            such layer in bfloat16 where its error on a calibration batch
            stays under `graph-mixed-precision`'s bound (1.6% relative),
            float32 elsewhere, and everywhere on a target without a bfloat16
            dot product.
        calibration: what precision "auto" measures each layer on: the
            inputs by name, or a list of such examples (a few representative
            ones); None: a synthetic one (standard normal floats, zero
            integers).

    Returns:
        The compiled module: `mod["default"](dev)` makes the graph executor,
        `mod.export_library("m.so")` writes the library, `mod.params` is the
        param dict the library reads (its blob's entries by name: what
        `load_params` takes), `mod.compile_stats` what was done.

    Raises:
        ModelCompileError: an op no strategy covers, a missing param, ...
    """
    from ember.backends import backend
    from ember.backends.source import resolve_target, target_kind
    from ember.backends.source.target import set_target
    from ember.passes.bound_params import bind_params
    from ember.passes.convert_graph_to_te import precision_problem
    from ember.passes.graph_mixed_precision import calibrate
    from ember.passes.pipelines import model_passes

    tgt = resolve_target(target)
    kind = target_kind(tgt)
    if problem := precision_problem(precision, tgt):
        raise ModelCompileError(f"compile_model: {problem}")
    if calibration is not None and precision != "auto":
        raise ModelCompileError(
            f"compile_model: a calibration batch is for precision 'auto', "
            f"got precision {precision!r}"
        )
    if not backend(kind).models:
        raise ModelCompileError(
            f"compile_model: target {kind!r} builds kernels (ember.build) but not "
            "whole models yet; use 'llvm' for this machine, or a GPU kind "
            "('cuda', 'opencl', 'vulkan')"
        )
    timings: dict[str, float] = {}
    start = time.perf_counter()
    module, params = _load(model, params, shape)
    _set_bounds(module, bounds)
    _check_params(_main(module), params)
    _check_computes(_main(module))
    set_target(module, tgt)
    passes = model_passes(
        _pass_context(opt_level, disabled_pass),
        records=_records_option(tuning_records),
        embed_params=embed_params,
        debug=debug,
        kind=kind,
        precision=precision,
    )
    hits = 0

    def report(done: int, total: int, symbol: str, hit: bool) -> None:
        nonlocal hits
        hits += hit
        if progress is not None:
            progress("kernels", done, total, f"{symbol}{' (cached)' if hit else ''}")

    build = KernelBuild(cache, workers, report)
    watch = _Watch(timings, progress, start)
    with bind_params(params) as bound, kernel_build(build), calibrate(calibration):
        _run(module, passes, watch)
    t1 = time.perf_counter()
    kernels = len(object_keys(module))
    mod = link_model(module, tgt, bound.values, cache, watch.entry_loop)
    timings["link"] = timings.get("link", 0.0) + time.perf_counter() - t1
    timings["total"] = time.perf_counter() - start
    model_info = mod.model_info  # type: ignore[attr-defined]
    stats = CompileStats(
        kernels=kernels,
        calls=watch.calls,
        cache_hits=hits,
        compiled=kernels - hits,
        workspace_bytes=model_info["workspace_bytes"],
        intermediate_bytes=model_info["intermediate_bytes"],
        params_bytes=model_info["params_bytes"],
        tuned=watch.tuned,
        seconds=timings,
    )
    mod.compile_stats = stats  # type: ignore[attr-defined]
    return mod


def _records_option(tuning_records) -> str:
    """`compile_model`'s `tuning_records` as `te-apply-records`' option."""
    if tuning_records is None:
        return "auto"
    if tuning_records is False:
        return ""
    if isinstance(tuning_records, str | os.PathLike):
        return os.fspath(tuning_records)
    return os.pathsep.join(os.fspath(p) for p in tuning_records)


def link_model(
    module: ModuleOp,
    target: str | dict | Target | DeviceTarget,
    params: Mapping[str, np.ndarray] | None = None,
    cache: CompileCache | None = None,
    entry_loop: str | None = None,
) -> Module:
    """The runtime module of a model that went through `ember-model` for
    `target`, made by its backend (`Backend.link_model`) from the module (its
    entry and `ember.model` description), its kernels' code (`ember.objects`,
    read from the kernel `cache`, the process-wide one by default) and the
    params bound while it compiled (`params`; None: none bound, the library
    expects them from `load_params`). `entry_loop` is the entry's loop IR
    (after `graph-plan-memory`), which `get_source("loop")` shows before each
    kernel's.

    Raises:
        ModelCompileError: a kernel's code is not in the cache, or a param
            the plan needs has no value.
    """
    from ember.backends import backend
    from ember.backends.source import resolve_target, target_kind
    from ember.passes.graph_plan_memory import MODEL_ATTR

    target = resolve_target(target)
    owner = backend(target_kind(target))
    kernels = model_kernels(module, owner, cache)
    module.attributes.pop(OBJECTS_ATTR, None)
    info = json.loads(module.attributes[MODEL_ATTR].data)  # type: ignore[attr-defined]
    packed = _params(info["params"], params) if params is not None else {}
    try:
        mod = owner.link_model(module, target, info, packed, kernels, entry_loop)
    except EmberValueError as e:
        raise ModelCompileError(str(e)) from None
    mod.params = packed  # type: ignore[attr-defined]
    mod.model_info = info  # type: ignore[attr-defined]
    return mod


def model_kernels(
    module: ModuleOp, owner: Backend, cache: CompileCache | None = None
) -> list[KernelCode]:
    """The code of each kernel `module` names (`ember.objects`), read from the
    kernel `cache` (the process-wide one by default) and checked by its
    backend `owner`.

    Raises:
        ModelCompileError: a kernel's code is missing or damaged.
    """
    from ember.backends.kernel_cache import default_cache

    cache = cache if cache is not None else default_cache()
    kernels = []
    for symbol, key in object_keys(module).items():
        code = cache.get(key)
        if code is None:
            raise ModelCompileError(
                f"kernel @{symbol}: its code ({key[:16]}...) is not in the kernel "
                "cache; run the pipeline's te-compile-kernels in this process or "
                "with the cache directory it used"
            )
        if (why := owner.kernel_problem(code, symbol)) is not None:
            raise ModelCompileError(f"kernel @{symbol}: its cached code is {why}")
        kernels.append(KernelCode(symbol, code, te_source(key)))
    return kernels


class _Watch:
    """Watches the pipeline run: each stage's seconds (`CompileStats.seconds`),
    the graph stage's end (`Progress`), and the kernels and their calls as
    `te-compile-kernels` leaves them."""

    def __init__(
        self, timings: dict[str, float], progress: Progress | None, start: float
    ):
        self.timings, self.progress = timings, progress
        self.stage, self.last = "graph", start
        self.calls = self.tuned = 0
        self.entry_loop: str | None = None

    def __call__(self, previous, module: ModuleOp, following) -> None:
        from ember.passes.te_apply_records import TUNED_ATTR

        now = time.perf_counter()
        if previous is not None:
            self.stage = _STAGE_OF.get(previous.name, _AFTER[self.stage])
            self.timings[self.stage] = (
                self.timings.get(self.stage, 0.0) + now - self.last
            )
        if following is not None and following.name == GRAPH_TO_TE[0]:
            if self.progress is not None:
                self.progress("graph", 1, 1, "")
        if previous is not None and previous.name == "graph-plan-memory":
            self.entry_loop = str(module)
        if previous is not None and previous.name == "te-compile-kernels":
            ops = list(module.walk())
            self.calls = sum(isinstance(op, graph.CallKernelOp) for op in ops)
            self.tuned = sum(
                isinstance(op, func.FuncOp) and TUNED_ATTR in op.attributes
                for op in ops
            )
        self.last = now


_STAGE_OF = {
    "convert-graph-to-te": "strategy",
    "te-apply-records": "strategy",
    "te-compile-kernels": "kernels",
}
"""The stage `CompileStats.seconds` counts a pass's time under."""
_AFTER = {"graph": "graph", "strategy": "strategy", "kernels": "link", "link": "link"}
"""The stage of a pass not in `_STAGE_OF`, after one of the given stage: the
graph passes, then the entry's lowering counted with the link."""


def lower_to_te(
    model: ModuleOp | str | Path | Any,
    params: Mapping[str, np.ndarray] | None = None,
    target: str | dict | Target = "llvm",
    shape: Mapping[str, Sequence[int]] | None = None,
    opt_level: int | None = None,
    disabled_pass: Sequence[str] = (),
    bounds: Mapping[str, int] | None = None,
    precision: str = "float32",
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """A model through the `graph` and `te` stages of `ember-model`, as
    `compile_model` runs them (`bounds` as its) but with no tuning records
    applied: the module of its kernels (te functions, each with its default
    schedule) and their calls, and the params it binds then (packed weights
    included). What the tuner extracts its tasks from."""
    from ember.backends.llvm import Target
    from ember.backends.llvm.target import set_module_target
    from ember.passes.bound_params import bind_params
    from ember.passes.pipelines import model_passes

    tgt = Target(target)
    module, params = _load(model, params, shape)
    _set_bounds(module, bounds)
    _check_params(_main(module), params)
    _check_computes(_main(module))
    set_module_target(module, tgt)
    context = _pass_context(opt_level, disabled_pass)
    with bind_params(params) as bound:
        passes = model_passes(context, until="te", records="", precision=precision)
        _run(module, passes)
    return module, bound.values


def _pass_context(opt_level: int | None, disabled: Sequence[str]):
    """The current `PassContext`, with `opt_level` and `disabled` (when given)
    taking precedence."""
    from ember.passes.pass_context import PassContext

    current = PassContext.current()
    return PassContext(
        opt_level=current.opt_level if opt_level is None else opt_level,
        disabled_pass=[*current.disabled_pass, *disabled],
        config=current.config,
    )


def _run(module: ModuleOp, passes: Sequence[str], callback=None) -> None:
    from xdsl.passes import PassPipeline

    from ember.passes import get_context, parse_pipeline

    if not passes:
        return
    pipeline = parse_pipeline(",".join(passes))
    if callback is not None:
        pipeline = PassPipeline(pipeline.passes, callback)
    try:
        pipeline.apply(get_context(), module)
    except PassFailedException as e:
        raise ModelCompileError(str(e)) from None


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
        str(model) if isinstance(model, Path) else model,
        shape=shape,
        freeze=params,
        symbolic=True,
    )
    return module, {**onnx_params, **(params or {})}


def _set_bounds(module: ModuleOp, bounds: Mapping[str, int] | None) -> None:
    """Record `bounds` on the module (`ember.bounds`), refusing a bound that
    is not a positive int or names no symbol of the model."""
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, i64

    from ember.dialects.graph_shapes import dims_of
    from ember.passes.convert_graph_to_te import BOUNDS_ATTR, module_bounds

    if not bounds:
        return
    symbols: set[str] = set()
    for arg in _main(module).args:
        for d in dims_of(arg.type) if isinstance(arg.type, TensorType) else ():
            symbols |= d.symbols() if not isinstance(d, int) else set()
    for name, value in bounds.items():
        if type(value) is not int or value <= 0:
            raise ModelCompileError(
                f"bounds: expected a positive int for {name!r}, got {value!r}"
            )
        if name not in symbols:
            known = ", ".join(sorted(symbols)) or "none (its shapes are static)"
            raise ModelCompileError(
                f"bounds: the model has no size symbol {name!r}; its symbols: {known}"
            )
    # the model's own bounds (a buffer sliced to a symbol) stay when smaller
    merged = module_bounds(module)
    for name, value in bounds.items():
        merged[name] = min(value, merged.get(name, value))
    module.attributes[BOUNDS_ATTR] = DictionaryAttr(
        {name: IntegerAttr(value, i64) for name, value in merged.items()}
    )


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
    "ModelCompileError",
    "compile_model",
    "link_model",
]
