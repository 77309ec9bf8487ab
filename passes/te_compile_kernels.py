"""`te-compile-kernels`: a model's kernels compiled apart, each to an object."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ember.passes.te_apply_records import TUNED_ATTR

OBJECTS_ATTR = "ember.objects"
"""The module's compiled kernels: symbol → the key of its object in the kernel
cache (`ember.backends.kernel_cache`), which the link step reads it from."""


@dataclass(frozen=True)
class TeCompileKernels(ModulePass):
    """Compile each kernel function (`ember.kernel`, te IR with its schedule)
    apart, through `KERNELS_TO_LOOP` and its target's backend
    (`Backend.compile_kernel`: LLVM to a relocatable object for a CPU, a piece
    of a launch plan for a GPU), as MLIR's `gpu-module-to-binary` compiles
    device modules: in worker processes, once per distinct kernel, through the kernel
    cache (`ember.backends.kernels`). The function becomes a declaration with the
    signature of its loop form (operands, result, then its scratch buffers);
    the module's `ember.objects` names its object by its key in the kernel
    cache, where the link step reads it (so the IR stays text of a readable
    size, as MLIR's `dense_resource` keeps blobs out of line).

        func.func private @ember_relu_1f(%x: tensor<4xf32>)     func.func private @ember_relu_1f(
            -> tensor<4xf32> attributes {ember.kernel} {  ──►       memref<4xf32> {ember.name = "x"},
          %y = te.compute ...                                       memref<4xf32> {ember.output, ...})
        }                                          // and ember.objects = {ember_relu_1f = "<key>"}

    `ember.backends.kernels.kernel_build` sets the cache, the workers and a
    progress report for the pipelines run inside it.
    """

    name = "te-compile-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.backends.kernel_cache import default_cache
        from ember.backends.kernels import (
            compile_kernels,
            current_build,
            keep_te_source,
        )
        from ember.backends.source.target import target_of

        try:
            target = target_of(op)
        except ValueError as e:
            raise PassFailedException(f"te-compile-kernels: {e}") from None
        jobs = take_kernels(op, str(target))
        if not jobs:
            return
        build = current_build()
        cache = build.cache if build.cache is not None else default_cache()
        compile_kernels(jobs, str(target), cache, build.workers, build.report)
        for job in jobs:  # for get_source: a few KB a kernel, no compile
            keep_te_source(job.key, job.text)
        keys = {**object_keys(op), **{j.symbol: j.key for j in jobs}}
        op.attributes[OBJECTS_ATTR] = DictionaryAttr(
            {symbol: StringAttr(key) for symbol, key in keys.items()}
        )


def object_keys(module: ModuleOp) -> dict[str, str]:
    """The kernel objects `module` names (`ember.objects`): symbol → cache key.

    Raises:
        PassFailedException: the attribute is not a dictionary of strings.
    """
    attr = module.attributes.get(OBJECTS_ATTR)
    if attr is None:
        return {}
    if not isinstance(attr, DictionaryAttr) or not all(
        isinstance(v, StringAttr) for v in attr.data.values()
    ):
        raise PassFailedException(
            f"expected {OBJECTS_ATTR} to map symbols to cache keys, got {attr}"
        )
    return {name: v.data for name, v in attr.data.items()}  # pyright: ignore


def take_kernels(module: ModuleOp, target: str) -> list:
    """Each kernel function of `module` as a `KernelJob` compiled apart; the
    module keeps its declaration with the signature its loop form has
    (operands, the result, then scratch buffers)."""
    from ember.backends.kernels import HASHED_NAME, KernelJob, kernel_key
    from ember.passes.convert_graph_to_te import KERNEL_ATTR
    from ember.passes.convert_te_to_loop import scratch_buffers

    jobs = []
    for op in list(module.ops):
        if not isinstance(op, func.FuncOp) or KERNEL_ATTR not in op.attributes:
            continue
        symbol = op.sym_name.data
        copy = op.clone()
        copy.sym_name = StringAttr(HASHED_NAME)
        copy.sym_visibility = None
        del copy.attributes[KERNEL_ATTR]
        copy.attributes.pop(TUNED_ATTR, None)
        text = str(ModuleOp([copy]))
        try:
            scratch = scratch_buffers(op)
        except PassFailedException as e:
            raise PassFailedException(f"kernel @{symbol}: {e}") from None
        types, attrs = _loop_signature(op, symbol, scratch)
        decl = func.FuncOp.external(symbol, types, [])
        decl.arg_attrs = ArrayAttr(attrs)
        if TUNED_ATTR in op.attributes:
            decl.attributes[TUNED_ATTR] = UnitAttr()
        module.body.block.insert_op_before(decl, op)
        module.body.block.erase_op(op)
        key = kernel_key(text, target)
        jobs.append(KernelJob(text, symbol, key, tuple(str(t) for _, t, _ in scratch)))
    return jobs


def _loop_signature(
    op: func.FuncOp, symbol: str, scratch: list
) -> tuple[list[Attribute], list[DictionaryAttr]]:
    """The argument types and attributes of te kernel `op`'s loop form: its
    operands, its result, its scratch buffers, then its size symbols (what
    `convert-te-to-loop{scratch-args=true}` makes of it)."""
    from ember.passes.convert_te_to_loop import dims_attr as dims
    from ember.passes.func_packed_abi import SYMBOL_ATTR
    from ember.passes.graph_plan_memory import memref_of

    inputs = op.function_type.inputs.data
    own = [d.data for d in op.arg_attrs.data] if op.arg_attrs else [{}] * len(inputs)
    symbols = [(t, d) for t, d in zip(inputs, own, strict=True) if SYMBOL_ATTR in d]
    types: list[Attribute] = []
    attrs: list[DictionaryAttr] = []
    for t, name in zip(inputs, _arg_names(op), strict=True):
        if isinstance(t, TensorType):
            types.append(memref_of(t))
            attrs.append(DictionaryAttr({"ember.name": StringAttr(name), **dims(t)}))
    result = op.function_type.outputs.data[0]
    types.append(memref_of(result))
    output = {"ember.name": StringAttr(symbol), "ember.output": UnitAttr()}
    attrs.append(DictionaryAttr({**output, **dims(result)}))
    for name, t, scratch_dims in scratch:
        types.append(t)
        scratch_attrs = {"ember.name": StringAttr(name), "ember.scratch": UnitAttr()}
        attrs.append(DictionaryAttr({**output, **scratch_attrs, **scratch_dims}))
    for t, d in symbols:
        types.append(t)
        attrs.append(DictionaryAttr({SYMBOL_ATTR: d[SYMBOL_ATTR]}))
    return types, attrs


def _arg_names(f: func.FuncOp) -> list[str]:
    n = len(f.function_type.inputs.data)
    dicts = f.arg_attrs.data if f.arg_attrs is not None else [DictionaryAttr({})] * n
    names = []
    for i, d in enumerate(dicts):
        name = d.data.get("ember.name")
        names.append(name.data if isinstance(name, StringAttr) else f"arg{i}")
    return names
