"""A CPU model's module: its entry's code and its kernels' objects, linked.

`ember-model` leaves the entry `default_run` in the llvm dialect and each
kernel as an object in the kernel cache (`te-compile-kernels`). The entry is
JIT-compiled with the kernel objects linked into the same engine, and each
kernel object is an imported module, so `export_library` writes one library;
the params blob (`__ember_params`) is a data symbol where the plan embeds it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

from ember.backends.kernels import KernelCode, object_symbols
from ember.backends.llvm.module import LLVMModule, _resolve
from ember.backends.llvm.target import Target
from ember.runtime import EmberError, Module
from ember.runtime.abi import MODEL_ENTRY, PARAMS_SYMBOL
from ember.runtime.cc import ObjectFile
from ember.runtime.errors import EmberValueError
from ember.runtime.parallel import NUM_THREADS_SYMBOL


def link(
    module: ModuleOp,
    target: Target,
    info: dict,
    params: Mapping[str, np.ndarray],
    kernels: list[KernelCode],
    entry_loop: str | None,
) -> LLVMModule:
    """The module of a CPU model (see the module docstring); `info` is its
    `ember.model` description, `params` the blob's entries by name.

    Raises:
        EmberValueError: a kernel needs a symbol this process lacks.
    """
    objects = [_object(k.symbol, k.code, target) for k in kernels]
    data = None
    if info["params_embedded"]:
        data = {PARAMS_SYMBOL: _blob(params, info["params"], info["params_bytes"])}
    mod = LLVMModule(module, target, entry_name=MODEL_ENTRY, data=data, objects=objects)
    for o, k in zip(objects, kernels, strict=True):
        mod.import_module(KernelObjectModule(o, k.te_source))
    mod.loop_source = lambda: _model_loop_source(mod, entry_loop)
    return mod


def _object(symbol: str, code: bytes, target: Target) -> ObjectFile:
    try:
        defined, needed = object_symbols(code)
    except ValueError:  # not ELF64 (wasm32, 32-bit ELF): nothing runs here
        defined, needed = {symbol}, set()
    for name in needed - {NUM_THREADS_SYMBOL}:
        if target.is_host and not _resolve(name):
            raise EmberValueError(
                f"kernel {symbol} uses {name!r}, which this process lacks"
            )
    return ObjectFile(
        name=f"{symbol}.o",
        code=code,
        triple=target.triple,
        features=target.code_features(),
        symbols=tuple(sorted(defined)),
    )


def _blob(packed: Mapping[str, np.ndarray], layout: Mapping[str, dict], nbytes: int):
    blob = np.zeros(nbytes, np.uint8)
    for name, array in packed.items():
        start = layout[name]["offset"]
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        blob[start : start + raw.size] = raw
    return blob


class KernelObjectModule(Module):
    """One compiled kernel's object, imported by a model's module so that
    `export_library` links it into the library beside the entry (in the JIT
    the entry's engine already holds its code); `get_source("te")` is the
    kernel's te IR, `get_source("loop")` (the default) its loop nest, lowered
    again from it."""

    type_key = "kernel-object"

    def __init__(self, obj: ObjectFile, te_source: str | None = None):
        super().__init__(None)
        self._obj = obj
        self._te_source = te_source

    def get_source(self, fmt: str = "loop") -> str:
        """The kernel's "te" IR or its "loop" nest (the default).

        Raises:
            EmberError: another format, or a process other than the one that
                compiled the kernel asks (it keeps the te IR).
        """
        if fmt not in ("te", "loop", ""):
            raise EmberError(
                f"{self._describe()} has sources 'te' and 'loop', not {fmt!r}"
            )
        if self._te_source is None:
            raise EmberError(
                f"{self._describe()}: its te IR is kept by the process that "
                "compiled it; compile the model in this process to see it"
            )
        if fmt == "te":
            return self._te_source
        return kernel_loop_source(self._te_source, self._obj.name.removesuffix(".o"))

    def _object_file(self, name: str) -> ObjectFile:
        o = self._obj
        return ObjectFile(name, o.code, o.triple, o.features, {}, o.symbols)

    def _describe(self) -> str:
        return f"kernel {', '.join(self._obj.symbols)}"


def kernel_loop_source(te_source: str, symbol: str) -> str:
    """A model kernel's loop nest, lowered from its te IR (`te_source`, the
    function `@kernel`) as `te-compile-kernels` lowers it, named `symbol`."""
    from xdsl.parser import Parser

    from ember.backends.kernels import HASHED_NAME
    from ember.passes import get_context, run
    from ember.passes.pipelines import KERNELS_TO_LOOP

    module = Parser(get_context(), te_source, "<kernel>").parse_module()
    run(module, ",".join(KERNELS_TO_LOOP))
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == HASHED_NAME:
            op.sym_name = StringAttr(symbol)
    return str(module)


def _model_loop_source(mod: Module, entry_loop: str | None) -> str:
    """A model's loop IR: its entry (`default_run` after `graph-plan-memory`),
    then each kernel's loop nest."""
    parts = [entry_loop] if entry_loop else []
    parts += [
        m.get_source("loop")
        for m in mod.imported_modules
        if isinstance(m, KernelObjectModule)
    ]
    return "\n".join(parts)


__all__ = ["KernelObjectModule", "kernel_loop_source", "link"]
