"""ember's passes: one pass per file, registered lazily by name, and the pass API.

A pass is a frozen-dataclass `ModulePass`; its file is its name with underscores
(`convert-te-to-loop` lives in `convert_te_to_loop.py`). Nothing is imported until a
pass is asked for, so listing passes stays cheap.

Passes of your own (`passes/api.py`, `docs/tutorial_custom_pass.md`):

    from ember.passes import ModulePass, PatternPass, register_pass, run

    register_pass(MyPass)                  # or @register_pass on the class
    run(module, "my-pass{opt=3},cse")
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ember.passes.api import (
    PassPluginError,
    PatternPass,
    load_pass_plugin,
    parse_pipeline,
    pattern_pass,
    register_pass,
    registered_passes,
    unregister_pass,
)

__all__ = [
    "ModulePass",
    "PassPluginError",
    "PatternPass",
    "builtin_passes",
    "get_all_passes",
    "get_context",
    "load_pass_plugin",
    "parse_pipeline",
    "pattern_pass",
    "register_pass",
    "run",
    "unregister_pass",
]

_EMBER_PASSES = (
    "graph-fold-constants",
    "graph-fold-batch-norm",
    "graph-fuse-layer-norm",
    "graph-fuse-attention",
    "graph-merge-matmuls",
    "graph-lookup-tables",
    "graph-mixed-precision",
    "graph-fuse-ops",
    "convert-graph-to-te",
    "te-apply-records",
    "te-compile-kernels",
    "graph-plan-memory",
    "convert-te-to-loop",
    "loop-simplify",
    "loop-outline-parallel",
    "loop-vectorize",
    "convert-loop-to-scf",
    "convert-call-packed-to-llvm",
    "convert-vector-to-llvm",
    "func-packed-abi",
    "convert-arith-to-llvm",
    "convert-math-to-llvm",
    "convert-dot-to-llvm",
    "convert-index-to-llvm",
    "convert-memref-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "llvm-verify-lowered",
)


# The schedule primitives are a dozen small passes sharing one file.
_PRIMITIVE_PASSES = (
    "te-split",
    "te-tile",
    "te-fuse",
    "te-reorder",
    "te-vectorize",
    "te-parallel",
    "te-unroll",
    "te-pragma",
    "te-bind",
    "te-compute-at",
    "te-compute-inline",
    "te-compute-root",
    "te-cache-read",
    "te-cache-write",
)


def _loader(name: str, module: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        mod = import_module(module)
        for value in vars(mod).values():
            if (
                isinstance(value, type)
                and issubclass(value, ModulePass)
                and getattr(value, "name", None) == name
            ):
                return value
        raise LookupError(f"module {module} defines no pass named '{name}'")

    return load


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass ember-opt knows: xDSL's upstream passes, ember's own, then those
    registered with `register_pass`, plugins and `ember.passes` entry points."""
    return {**builtin_passes(), **registered_passes()}


def builtin_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's upstream passes, then ember's own."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    passes = dict(xdsl_passes())
    for name in _EMBER_PASSES:
        passes[name] = _loader(name, f"ember.passes.{name.replace('-', '_')}")
    for name in _PRIMITIVE_PASSES:
        passes[name] = _loader(name, "ember.passes.te_primitives")
    passes["ember-cpu"] = _loader("ember-cpu", "ember.passes.pipelines")
    passes["ember-graph"] = _loader("ember-graph", "ember.passes.pipelines")
    passes["ember-model"] = _loader("ember-model", "ember.passes.pipelines")
    return passes


def get_context() -> Context:
    """A context with xDSL's dialects and ember's registered (lazily)."""
    from xdsl.dialects import get_all_dialects

    from ember.dialects import get_ember_dialects

    ctx = Context()
    for name, factory in {**get_all_dialects(), **get_ember_dialects()}.items():
        ctx.register_dialect(name, factory)
    return ctx


def run(module: ModuleOp, pipeline: str, ctx: Context | None = None) -> ModuleOp:
    """Run a textual pass pipeline (`"convert-te-to-loop,cse"`) on `module` in place.

    Args:
        module: the IR to transform.
        pipeline: comma-separated pass names, options in braces: `"p{opt=3},cse"`.
        ctx: the context; a fresh one with every dialect registered by default.

    Returns:
        The same module, transformed.

    Raises:
        ValueError: a malformed pipeline, an unknown pass or a bad option; the
            message names the closest passes or the option and its type.
    """
    parse_pipeline(pipeline).apply(ctx or get_context(), module)
    return module
