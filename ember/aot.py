"""Ahead-of-time model compilation: a graph becomes one native `default_run`.

    mod = ember.compile_model("mobilenet_v2.onnx", shape={"input": (1, 3, 224, 224)})
    gm = ember.runtime.GraphModule(mod["default"](ember.runtime.cpu()))
    gm.set_input("input", x); gm.run(); y = gm.get_output(0).numpy()
    mod.export_library("mobilenet_v2.so")

The stages, in order:

1. **graph passes** (`ember.passes.graph_pipeline` under a `PassContext`):
   constants folded, batch norms folded into their convolutions, ops fused
   into `graph.fused` groups.
2. **kernels**: each group (or lone op) becomes a topi kernel through the
   strategy table (`ember.strategy`); weights a kernel wants in another layout
   are transformed now, at compile time, into the params blob. A kernel's te IR
   is hashed; each distinct kernel compiles once to an object with a
   bare-pointer symbol (`ember.kernel_build`, cached by `ember.compile_cache`).
3. **memory plan**: every intermediate gets an offset in one workspace, reused
   by liveness (`ember.memory_plan`); reshapes and flattens of contiguous
   tensors are aliases, not kernels; a result that is a model output is
   written straight into the output buffer. A kernel's own intermediates (its
   `ember.scratch` arguments: a padded input, a pooling column pass) are
   workspace slices live during its call only, so no kernel allocates.
4. **entry**: `default_run(inputs..., outputs..., workspace, params)` calls the
   kernels in order on `memref.view`s of the workspace and params at their
   offsets; `func-packed-abi` gives it the checked packed entry and puts the
   `ember.model` description into the library's metadata.
5. **module**: the entry is JIT-compiled with the kernel objects linked into the
   same engine; each kernel object is also an imported module, so
   `export_library` writes one library holding the entry, every kernel and
   (by default) the params blob as `__ember_params`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import arith, func, llvm, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    i8,
    i32,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from ember.compile_cache import CompileCache, default_cache
from ember.dialects import graph
from ember.kernel_build import (
    HASHED_NAME,
    KernelJob,
    compile_kernels,
    kernel_key,
    object_symbols,
)
from ember.memory_plan import ALIGNMENT, TensorLife, plan_memory
from ember.runtime import EmberError, Module
from ember.runtime.cc import ObjectFile
from ember.strategy import KernelSpec, copy_kernel, lower_group

if TYPE_CHECKING:
    from ember.backends.llvm import LLVMModule, Target
    from ember.topi.kernel import Kernel

Progress = Callable[[str, int, int, str], None]
"""`progress(stage, done, total, detail)`: stage is "graph", "kernels" or "link"."""

ENTRY = "default_run"
PARAMS_SYMBOL = "__ember_params"
_ALIASES = ("graph.reshape", "graph.flatten")


class ModelCompileError(EmberError):
    """A model that cannot be compiled; the message names the op or value."""


# ---------------------------------------------------------------- storage


@dataclass(frozen=True)
class _Input:
    index: int


@dataclass(frozen=True)
class _Output:
    index: int


@dataclass(frozen=True)
class _Param:
    name: str


@dataclass(frozen=True)
class _Work:
    """An intermediate in the workspace, named by its root value's id."""

    key: int


@dataclass(frozen=True)
class _Scratch:
    """A kernel's own intermediate (its `ember.scratch` argument `index`) in
    call `step`: a workspace slice live during that call only."""

    step: int
    index: int


_Storage = _Input | _Output | _Param | _Work


@dataclass
class _Call:
    symbol: str
    args: list[tuple[SSAValue | str | _Output | _Scratch, MemRefType]]
    """Each argument: a graph value, a packed param's name, a model output
    (a copy's destination) or a scratch buffer, and the buffer type the kernel
    takes there."""


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
    seconds: dict[str, float] = field(default_factory=dict)


def _memref(t: Any) -> MemRefType:
    assert isinstance(t, TensorType)
    return MemRefType(t.element_type, t.get_shape())


def _te_memref(tensor) -> MemRefType:
    from ember.lowering import _TYPES

    return MemRefType(_TYPES[tensor.dtype], tensor.shape)


def _nbytes(t: MemRefType) -> int:
    from ember.passes.convert_memref_to_llvm import element_bytes

    size = element_bytes(t.element_type)
    assert size is not None
    return int(np.prod(t.get_shape(), dtype=np.int64)) * size


def _dtype(t: Any) -> str:
    from ember.passes.func_packed_abi import dtype_of

    name = dtype_of(t.element_type)
    if name is None:
        raise ModelCompileError(f"unsupported element type {t.element_type}")
    return name


class _Lowering:
    """The graph of `@main` lowered to kernel calls with a memory plan."""

    def __init__(
        self,
        main: func.FuncOp,
        params: Mapping[str, np.ndarray],
        target: str,
        cache: CompileCache,
        progress: Progress | None,
        workers: int | None,
    ):
        self.main = main
        self.params_in = params
        self.target = target
        self.cache = cache
        self.progress = progress
        self.workers = workers
        self.storage: dict[SSAValue, _Storage] = {}
        self.alias: dict[SSAValue, SSAValue] = {}
        self.consts: dict[SSAValue, np.ndarray] = {}
        self.param_names: dict[SSAValue, str] = {}
        self.constants = 0
        self.offsets: dict[SSAValue | _Scratch, int] = {}
        """Workspace byte offsets of intermediates (by root value) and scratch
        buffers, from the memory plan (`_plan`)."""
        self.packed: dict[str, np.ndarray] = {}
        """The params blob's entries by name: every param or constant some
        kernel reads as it is, and every packed form a kernel reads."""
        self.calls: list[_Call] = []
        self.jobs: dict[str, KernelJob] = {}
        self.scratch: dict[str, list[MemRefType]] = {}
        """Each kernel's scratch buffer types, by key."""
        self.stats = CompileStats()

    # -- values known at compile time

    def constant_of(self, value: SSAValue) -> np.ndarray | None:
        value = self.root(value)
        if value in self.consts:
            return self.consts[value]
        owner = value.owner
        if isinstance(owner, graph.ParamOp):
            return self._param_value(owner)
        if isinstance(owner, graph.ConstantOp):
            return self.consts.setdefault(value, owner.numpy())
        return None

    def _param_value(self, op: graph.ParamOp) -> np.ndarray:
        name = op.param_name.data
        if name not in self.params_in:
            raise ModelCompileError(
                f'graph.param "{name}": no value in the params '
                f"({len(self.params_in)} given)"
            )
        value = np.asarray(self.params_in[name])
        expected = tuple(op.result.type.get_shape())  # type: ignore[attr-defined]
        if value.shape != expected:
            raise ModelCompileError(
                f'graph.param "{name}": expected shape {expected}, got {value.shape}'
            )
        return value

    def root(self, value: SSAValue) -> SSAValue:
        while value in self.alias:
            value = self.alias[value]
        return value

    # -- walking the graph

    def lower(self) -> None:
        block = self.main.body.block
        for i, arg in enumerate(block.args):
            self.storage[arg] = _Input(i)
        kernels: list[tuple[Operation, KernelSpec]] = []
        returned: list[SSAValue] = []
        for op in block.ops:
            if isinstance(op, graph.ParamOp | graph.ConstantOp):
                continue
            if isinstance(op, func.ReturnOp):
                returned = list(op.arguments)
                continue
            if self._is_alias(op):
                self.alias[op.results[0]] = self._alias_source(op)
                continue
            try:
                spec = lower_group(op, self.constant_of)
            except ValueError as e:
                raise ModelCompileError(str(e)) from None
            kernels.append((op, spec))
        self.outputs = returned
        self._assign_outputs(returned)
        for op, spec in kernels:
            self._call(spec.kernel, spec.operands, spec.kind, op.results[0])
        for i in sorted(self.copies):
            value = returned[i]
            shape = tuple(value.type.get_shape())  # type: ignore[attr-defined]
            self._call(copy_kernel(shape), [value], "copy", _Output(i))

    def _is_alias(self, op: Operation) -> bool:
        if op.name in _ALIASES:
            return True
        if isinstance(op, graph.FusedOp):
            inner = [o for o in op.body.block.ops if not isinstance(o, graph.YieldOp)]
            return len(inner) == 1 and inner[0].name in _ALIASES
        return False

    def _alias_source(self, op: Operation) -> SSAValue:
        return op.operands[0]

    def _assign_outputs(self, returned: list[SSAValue]) -> None:
        """A model output computed by a kernel is written straight into the
        output buffer (through any reshapes); others are copied at the end."""
        self.copies: set[int] = set()
        for i, value in enumerate(returned):
            root = self.root(value)
            owner = root.owner
            computed = not isinstance(root.owner, Block) and not isinstance(
                owner, graph.ParamOp | graph.ConstantOp
            )
            if computed and root not in self.storage:
                self.storage[root] = _Output(i)
            else:
                self.copies.add(i)

    def _storage_of(self, value: SSAValue) -> _Storage:
        root = self.root(value)
        if root in self.storage:
            return self.storage[root]
        owner = root.owner
        if isinstance(owner, graph.ParamOp | graph.ConstantOp):
            return _Param(self._param_name(root))
        return self.storage.setdefault(root, _Work(id(root)))

    def _param_name(self, value: SSAValue) -> str:
        """The name of a param or constant a kernel reads as it is, which puts
        its value into the blob."""
        name = self._base_name(value)
        if name not in self.packed:
            array = self.constant_of(value)
            assert array is not None
            self.packed[name] = np.ascontiguousarray(array)
        return name

    def _base_name(self, value: SSAValue) -> str:
        """The name of a param or constant (`constant<i>` for literals), without
        putting it into the blob: a param only read packed stays out of it."""
        if value not in self.param_names:
            owner = value.owner
            if isinstance(owner, graph.ParamOp):
                name = owner.param_name.data
            else:
                name = f"constant{self.constants}"
                self.constants += 1
            self.param_names[value] = name
        return self.param_names[value]

    def _call(
        self,
        kernel: Kernel,
        operands: Sequence[SSAValue],
        kind: str,
        result: SSAValue | _Output,
    ) -> None:
        from ember.lowering import lower
        from ember.passes.convert_te_to_loop import scratch_buffers

        te_module = lower(kernel.schedule(), kernel.args, HASHED_NAME)
        text = str(te_module)
        key = kernel_key(text, self.target)
        symbol = f"ember_{kind or 'kernel'}_{key[:16]}"
        if key not in self.jobs:
            function = next(
                op
                for op in te_module.ops
                if isinstance(op, func.FuncOp) and op.sym_name.data == HASHED_NAME
            )
            self.scratch[key] = [t for _, t in scratch_buffers(function)]
            scratch = tuple(str(t) for t in self.scratch[key])
            self.jobs[key] = KernelJob(text, symbol, key, scratch)
        args: list[tuple[SSAValue | str | _Output | _Scratch, MemRefType]] = []
        for placeholder, value in zip(kernel.placeholders, operands, strict=True):
            t = _te_memref(placeholder)
            transform = kernel.weight_transforms.get(placeholder.name)
            if transform is None:
                args.append((value, t))
                continue
            array = self.constant_of(value)
            if array is None:
                raise ModelCompileError(
                    f"kernel '{kind}': its weight '{placeholder.name}' must be a "
                    "param or constant (it is packed at compile time), got a "
                    "value computed at run time"
                )
            base = self._base_name(self.root(value))
            name = f"{base}.packed.{key[:8]}"
            if name not in self.packed:
                self.packed[name] = kernel.transform(placeholder.name, array)
            args.append((name, t))
        args.append((result, _te_memref(kernel.output)))
        step = len(self.calls)
        args += [(_Scratch(step, i), t) for i, t in enumerate(self.scratch[key])]
        self.calls.append(_Call(symbol, args))


def compile_model(
    model: ModuleOp | str | Path | Any,
    params: Mapping[str, np.ndarray] | None = None,
    target: str | dict | Target = "llvm",
    shape: Mapping[str, Sequence[int]] | None = None,
    opt_level: int | None = None,
    embed_params: bool = True,
    disabled_pass: Sequence[str] = (),
    cache: CompileCache | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
) -> LLVMModule:
    """Compile a model ahead of time into one module running `default_run`.

    Args:
        model: graph IR (a module with `func.func @main`, or its text), an ONNX
            `ModelProto`, or the path of an `.onnx` file.
        params: the graph's params by name (with graph IR); an ONNX model
            brings its own.
        target: where the code runs ("llvm" is this machine).
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

    Returns:
        The compiled module: `mod["default"](dev)` makes the graph executor,
        `mod.export_library("m.so")` writes the library, `mod.params` is the
        param dict the library reads (its blob's entries by name: what
        `load_params` takes), `mod.compile_stats` what was done.

    Raises:
        ModelCompileError: an op no strategy covers, a missing param, ...
    """
    from ember.backends.llvm import LLVMModule, Target
    from ember.backends.llvm.module import _resolve

    timings: dict[str, float] = {}
    start = time.perf_counter()
    module, params = _load(model, params, shape)
    _check_params(_main(module), params)
    params = _optimize_graph(module, params, opt_level, disabled_pass)
    main = _main(module)
    timings["graph"] = time.perf_counter() - start
    tgt = Target(target)
    cache = cache if cache is not None else default_cache()
    lowering = _Lowering(main, params or {}, str(tgt), cache, progress, workers)
    lowering.lower()
    t0 = time.perf_counter()
    timings["strategy"] = t0 - start - timings["graph"]
    jobs = list(lowering.jobs.values())
    hits = 0

    def report(done: int, total: int, symbol: str, hit: bool) -> None:
        nonlocal hits
        hits += hit
        if progress is not None:
            progress("kernels", done, total, f"{symbol}{' (cached)' if hit else ''}")

    codes = compile_kernels(jobs, str(tgt), cache, workers=workers, progress=report)
    t1 = time.perf_counter()
    timings["kernels"] = t1 - t0
    plan, layout, blob_bytes = _plan(lowering)
    entry = _entry_module(lowering, main, plan, layout, blob_bytes, embed_params)
    from ember.passes import run
    from ember.passes.pipelines import EMBER_CPU, TE_TO_LOOP

    run(entry, ",".join(EMBER_CPU[len(TE_TO_LOOP) :]))
    objects = []
    for job in jobs:
        code = codes[job.symbol]
        defined, needed = object_symbols(code)
        for name in needed - {"__ember_num_threads"}:
            if not _resolve(name):
                raise ModelCompileError(
                    f"kernel {job.symbol} uses {name!r}, which this process lacks"
                )
        objects.append(
            ObjectFile(
                name=f"{job.symbol}.o",
                code=code,
                triple=tgt.triple,
                features=_features(tgt),
                symbols=tuple(sorted(defined)),
            )
        )
    packed = _packed_blob(lowering.packed, layout, blob_bytes)
    data = {PARAMS_SYMBOL: packed} if embed_params else None
    mod = LLVMModule(entry, tgt, entry_name=ENTRY, data=data, objects=objects)
    for o in objects:
        mod.import_module(KernelObjectModule(o))
    timings["link"] = time.perf_counter() - t1
    timings["total"] = time.perf_counter() - start
    stats = lowering.stats
    stats.kernels, stats.calls = len(jobs), len(lowering.calls)
    stats.cache_hits, stats.compiled = hits, len(jobs) - hits
    stats.workspace_bytes = plan.workspace_bytes
    stats.intermediate_bytes = plan.total_bytes
    stats.params_bytes = blob_bytes
    stats.seconds = timings
    mod.params = dict(lowering.packed)  # type: ignore[attr-defined]
    mod.compile_stats = stats  # type: ignore[attr-defined]
    return mod


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
        str(model) if isinstance(model, Path) else model, shape=shape
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


def _main(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise ModelCompileError("expected a graph module with func.func @main")


def _optimize_graph(
    module: ModuleOp,
    params: Mapping[str, np.ndarray],
    opt_level: int | None,
    disabled: Sequence[str],
) -> dict[str, np.ndarray]:
    """Run the graph passes the context asks for: the current `PassContext`,
    with `opt_level` and `disabled` (when given) taking precedence."""
    from ember.pass_context import PassContext
    from ember.passes.pipelines import optimize_graph

    current = PassContext.current()
    ctx = PassContext(
        opt_level=current.opt_level if opt_level is None else opt_level,
        disabled_pass=[*current.disabled_pass, *disabled],
        config=current.config,
    )
    return optimize_graph(module, params, ctx)


# ---------------------------------------------------------------- plan


def _plan(lowering: _Lowering):
    """The workspace plan of the intermediates and the params blob layout."""
    lives: dict[SSAValue | _Scratch, list[int]] = {}
    sizes: dict[SSAValue | _Scratch, int] = {}
    for step, call in enumerate(lowering.calls):
        for value, t in call.args:
            if isinstance(value, _Scratch):
                lives[value], sizes[value] = [step, step], _nbytes(t)
            if not isinstance(value, SSAValue):
                continue
            storage = lowering._storage_of(value)
            if isinstance(storage, _Work):
                root = lowering.root(value)
                span = lives.setdefault(root, [step, step])
                span[0], span[1] = min(span[0], step), max(span[1], step)
                sizes[root] = max(sizes.get(root, 0), _nbytes(t))
    names = {root: f"t{i}" for i, root in enumerate(lives)}
    plan = plan_memory(
        [TensorLife(names[r], sizes[r], lives[r][0], lives[r][1]) for r in lives]
    )
    lowering.offsets = {r: plan.offsets[names[r]] for r in lives}
    layout: dict[str, dict] = {}
    offset = 0
    for name, array in lowering.packed.items():
        layout[name] = {
            "offset": offset,
            "shape": list(array.shape),
            "dtype": str(array.dtype),
        }
        offset += -(-max(array.nbytes, 1) // ALIGNMENT) * ALIGNMENT
    return plan, layout, max(offset, ALIGNMENT)


def _packed_blob(
    packed: dict[str, np.ndarray], layout: dict, nbytes: int
) -> np.ndarray:
    blob = np.zeros(nbytes, np.uint8)
    for name, array in packed.items():
        start = layout[name]["offset"]
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        blob[start : start + raw.size] = raw
    return blob


# ---------------------------------------------------------------- entry


def _entry_module(
    lowering: _Lowering,
    main: func.FuncOp,
    plan,
    layout: dict,
    params_bytes: int,
    embedded: bool,
) -> ModuleOp:
    """`default_run` over memrefs calling the kernels, with `ember.model`."""
    inputs = list(main.body.block.args)
    outputs = lowering.outputs
    in_names = _arg_names(main, len(inputs), "ember.name", "input")
    out_names = _result_names(main, len(outputs))
    workspace_bytes = max(plan.workspace_bytes, ALIGNMENT)
    ws_type = MemRefType(i8, [workspace_bytes])
    params_type = MemRefType(i8, [params_bytes])
    types = [
        *(_memref(v.type) for v in inputs),
        *(_memref(v.type) for v in outputs),
        ws_type,
        params_type,
    ]
    block = Block(arg_types=types)
    args = list(block.args)
    arg_attrs = [
        *(DictionaryAttr({"ember.name": StringAttr(n)}) for n in in_names),
        *(
            DictionaryAttr({"ember.name": StringAttr(n), "ember.output": UnitAttr()})
            for n in out_names
        ),
        DictionaryAttr(
            {"ember.name": StringAttr("workspace"), "ember.output": UnitAttr()}
        ),
        DictionaryAttr({"ember.name": StringAttr("params")}),
    ]
    ws, params = args[-2], args[-1]
    ops: list[Operation] = []
    constants: dict[int, SSAValue] = {}

    def offset(n: int) -> SSAValue:
        if n not in constants:
            c = arith.ConstantOp(IntegerAttr(n, IndexType()))
            ops.append(c)
            constants[n] = c.result
        return constants[n]

    def view(buffer: SSAValue, at: int, t: MemRefType) -> SSAValue:
        v = memref.ViewOp(buffer, offset(at), [], t)
        ops.append(v)
        return v.result

    def cast(value: SSAValue, t: MemRefType) -> SSAValue:
        if value.type == t:
            return value
        # The same bytes seen with another shape (a reshape of an input or
        # output): bare pointers make this free; the casts reconcile away.
        c = UnrealizedConversionCastOp.get([value], [t])
        ops.append(c)
        return c.results[0]

    def buffer(value: SSAValue | str | _Output | _Scratch, t: MemRefType) -> SSAValue:
        if isinstance(value, str):
            return view(params, layout[value]["offset"], t)
        if isinstance(value, _Scratch):
            return view(ws, lowering.offsets[value], t)
        storage = value if isinstance(value, _Output) else lowering._storage_of(value)
        if isinstance(storage, _Input):
            return cast(args[storage.index], t)
        if isinstance(storage, _Output):
            return cast(args[len(inputs) + storage.index], t)
        if isinstance(storage, _Param):
            return view(params, layout[storage.name]["offset"], t)
        assert isinstance(value, SSAValue)  # an _Output returned above
        return view(ws, lowering.offsets[lowering.root(value)], t)

    declared: dict[str, list[MemRefType]] = {}
    for call in lowering.calls:
        operands = [buffer(v, t) for v, t in call.args]
        declared.setdefault(call.symbol, [t for _, t in call.args])
        ops.append(func.CallOp(call.symbol, operands, []))
    ops.append(func.ReturnOp())
    block.add_ops(ops)
    entry = func.FuncOp(ENTRY, FunctionType.from_lists(types, []), Region(block))
    entry.arg_attrs = ArrayAttr(arg_attrs)
    decls = [
        func.FuncOp.external(symbol, types_, []) for symbol, types_ in declared.items()
    ]
    model = {
        "inputs": [
            {"name": n, "shape": list(v.type.get_shape()), "dtype": _dtype(v.type)}  # type: ignore[attr-defined]
            for n, v in zip(in_names, inputs, strict=True)
        ],
        "outputs": [
            {"name": n, "shape": list(v.type.get_shape()), "dtype": _dtype(v.type)}  # type: ignore[attr-defined]
            for n, v in zip(out_names, outputs, strict=True)
        ],
        "workspace_bytes": workspace_bytes,
        "params_bytes": params_bytes,
        "params": layout,
        "params_embedded": embedded,
    }
    from ember.runtime.parallel import NUM_THREADS_SYMBOL

    threads = llvm.GlobalOp(
        i32, NUM_THREADS_SYMBOL, "external", value=IntegerAttr(0, i32), alignment=4
    )
    module = ModuleOp([*decls, entry, threads])
    module.attributes["ember.model"] = StringAttr(json.dumps(model))
    return module


def _arg_names(f: func.FuncOp, n: int, key: str, prefix: str) -> list[str]:
    attrs = f.arg_attrs.data if f.arg_attrs is not None else [DictionaryAttr({})] * n
    names = []
    for i, d in enumerate(attrs):
        name = d.data.get(key)
        names.append(name.data if isinstance(name, StringAttr) else f"{prefix}{i}")
    return names


def _result_names(f: func.FuncOp, n: int) -> list[str]:
    attrs = f.res_attrs.data if f.res_attrs is not None else [DictionaryAttr({})] * n
    names = []
    for i, d in enumerate(attrs):
        name = d.data.get("ember.name")
        names.append(name.data if isinstance(name, StringAttr) else f"output{i}")
    return names


__all__ = [
    "CompileStats",
    "KernelObjectModule",
    "ModelCompileError",
    "compile_model",
]
