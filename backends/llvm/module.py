"""`LLVMModule`: an llvm-dialect module compiled by LLVM, JIT-run on the host."""

import ctypes
import ctypes.util
import json
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from xdsl.dialects.builtin import ModuleOp

from ember.backends.kernels import object_symbols
from ember.backends.llvm.codegen import (
    embedded_metadata,
    emit_assembly,
    emit_object,
    metadata_object,
    optimize,
    parse,
    prepare_for_library,
)
from ember.backends.llvm.target import Target
from ember.backends.llvm.translate import translate
from ember.runtime import EmberError, Module, callbacks, parallel
from ember.runtime.abi import METADATA_FUNCTION, SCRATCH_RELEASE
from ember.runtime.cc import ObjectFile
from ember.runtime.errors import EmberValueError, ExportError
from ember.runtime.module import release_scratch
from ember.runtime.parallel import NUM_THREADS_SYMBOL, num_threads_from_env

_PACKED_SIGNATURE = "i32 (ptr, ptr, i32, ptr, ptr)"
_METADATA = METADATA_FUNCTION
# Libraries compiled code may call that a Python process has not always loaded:
# by symbol prefix, and for any other symbol.
_LIBRARIES = {"GOMP_": "gomp", "omp_": "gomp"}
_FALLBACK_LIBRARIES = ("m",)
_SOURCE_FORMATS = ("loop", "ll", "ll-unopt", "asm")


class LLVMModule(Module):
    """A module compiled to machine code by LLVM.

    On the host the code is JIT-compiled with MCJIT and its packed functions are
    callable (`mod["f"](a, b)`); for another target only its LLVM IR, assembly
    and object code exist.

    Parallel loops run on libgomp with `set_num_threads`'s count, else
    `EMBER_NUM_THREADS` as it is when the module is built, else libgomp's
    default if `OMP_NUM_THREADS` is set, else the cores other processes leave
    free; see `ember.runtime.parallel`.

    Args:
        module: an xDSL module in the llvm dialect, an llvmlite module, or LLVM IR.
        target: where the code runs (see `Target`).
        entry_name: the function `mod(...)` calls; by default the only one.
        data: read-only blobs by symbol name that `export_library` writes into
            the library beside the code (see `Module.add_data`), e.g. a
            model's embedded params `{"__ember_params": blob}`.
        objects: relocatable objects for the same target linked into the JIT
            beside the module's code (an ahead-of-time model's kernels, which
            the module calls); `export_library` does not see them, so a caller
            exporting them imports a module per object.

    Example:
        >>> mod = LLVMModule(llvm_dialect_module, "llvm")
        >>> mod["vecadd"](a, b, c)
        >>> mod.save("vecadd.o")
    """

    type_key = "llvm"

    def __init__(
        self,
        module: ModuleOp | ir.Module | str,
        target: "str | dict | Target" = "llvm",
        entry_name: str | None = None,
        data: "Mapping[str, bytes | np.ndarray] | None" = None,
        objects: "Sequence[ObjectFile]" = (),
    ):
        super().__init__(entry_name)
        for symbol, blob in (data or {}).items():
            self.add_data(symbol, blob)
        self.target = Target(target)
        tm = self.target.create_target_machine()
        if isinstance(module, ModuleOp):
            module = translate(
                module, triple=self.target.triple, data_layout=str(tm.target_data)
            )
        self._unoptimized = str(module)
        compiled = parse(self._unoptimized)
        self._signatures = _defined_functions(compiled)
        optimize(compiled, tm, self.target.opt_level)
        self._optimized = str(compiled)
        self._emitted: dict[str, bytes | str] = {}
        packed = self.function_names()
        if entry_name is None and len(packed) == 1:
            self.entry_name = packed[0]
        self._engine: llvm.ExecutionEngine | _LinkedObjects | None = None
        # a model's kernels, which the runtime may call one by one (profile)
        self._kernels = {s for o in objects for s in o.symbols}
        if self.target.is_host:
            threads = _thread_count(compiled)
            _resolve_externals(compiled, {s for o in objects for s in o.symbols})
            if objects:
                codes = (self.object_code(), *(o.code for o in objects))
                exports = {
                    *self._signatures,
                    *self._kernels,
                    NUM_THREADS_SYMBOL,
                    callbacks.HOOK_SYMBOL,
                    SCRATCH_RELEASE,
                }
                self._engine = _LinkedObjects(codes, exports)
            else:
                jit = self.target.create_jit_target_machine()
                self._engine = llvm.create_mcjit_compiler(compiled, jit)
                self._engine.finalize_object()
            if threads is not None:
                address = self._engine.get_global_value_address(NUM_THREADS_SYMBOL)
                parallel.register(self, address)
            if _defines_global(compiled, callbacks.HOOK_SYMBOL):
                hook = self._engine.get_global_value_address(callbacks.HOOK_SYMBOL)
                callbacks.install(hook)
            if _defines_function(compiled, SCRATCH_RELEASE):
                # when the module goes, its kernels' kept scratch blocks go;
                # the finalizer holds the engine, whose code it calls, till then
                release = self._engine.get_function_address(SCRATCH_RELEASE)
                weakref.finalize(self, release_scratch, release, self._engine)

    def function_names(self) -> list[str]:
        """The packed functions the module exports, in definition order."""
        return [
            name
            for name, signature in self._signatures.items()
            if signature == _PACKED_SIGNATURE and name != _METADATA
        ]

    def function_address(self, name: str) -> int:
        """The address of the exported function `name`, whatever its signature.

        Raises:
            KeyError: the module exports no function `name`.
            EmberError: the module was compiled for another machine.
        """
        if name not in self._signatures:
            raise KeyError(f"module exports no function {name!r}")
        if self._engine is None:
            raise EmberError(
                f"module compiled for {self.target} cannot run on this machine: "
                f"{self.target.not_host_reason}; save it with save('m.o') instead"
            )
        return self._engine.get_function_address(name)

    def _function_address(self, name: str) -> int:
        if self._signatures.get(name) != _PACKED_SIGNATURE:
            return 0
        return self.function_address(name)

    def symbol_address(self, name: str) -> int:
        if self._engine is None or name not in {*self._signatures, *self._kernels}:
            return 0
        return self._engine.get_function_address(name)

    loop_source: "str | Callable[[], str] | None" = None
    """The scheduled loop nest, when the module was built from te IR (or what
    makes it, for a model: its kernels are lowered again when asked)."""

    def get_source(self, fmt: str = "ll") -> str:
        """The module's code: "loop" (the scheduled loop IR, like TVM's
        `lower(..., simple_mode=True)`), "ll" (optimized LLVM IR), "ll-unopt" or
        "asm"."""
        if fmt == "loop":
            if callable(self.loop_source):  # a model's: lowered again when asked
                self.loop_source = self.loop_source()
            if self.loop_source is None:
                raise EmberValueError("this module was not built from te or loop IR")
            return self.loop_source
        if fmt in ("ll", ""):
            return self._optimized
        if fmt == "ll-unopt":
            return self._unoptimized
        if fmt in ("asm", "s"):
            return self._emit("asm")  # type: ignore[return-value]
        raise EmberValueError(
            f"unknown source format {fmt!r}, expected one of {_SOURCE_FORMATS}"
        )

    def object_code(self) -> bytes:
        """The module as a relocatable object file for its target."""
        return self._emit("obj")  # type: ignore[return-value]

    def save(self, path: str | Path) -> None:
        """Write the module to `path`: `.o` object code, `.ll` IR, `.s` assembly.

        Only this module is written: a module with imports is exported with
        `export_library`, which links them all into one library.

        Raises:
            ExportError: the module imports other modules.
        """
        path = Path(path)
        if self._imports:
            raise ExportError(
                f"cannot save {path}: the module imports {len(self._imports)} "
                "other module(s), which save() would leave out; use "
                "export_library('m.so') or export_library('m.tar') to write them "
                "all into one library"
            )
        if path.suffix == ".o":
            path.write_bytes(self.object_code())
        elif path.suffix == ".ll":
            path.write_text(self._optimized)
        elif path.suffix == ".s":
            path.write_text(self.get_source("asm"))
        else:
            raise EmberValueError(f"cannot save {path}: expected a .o, .ll or .s file")

    def _object_file(self, name: str) -> ObjectFile:
        """The module's object for a library, linkable beside other modules'
        (see `prepare_for_library`), with its metadata and symbols."""
        text = embedded_metadata(self._optimized)
        if text is None and _METADATA in self._signatures:
            raise ExportError(
                f"cannot export the llvm module {self.function_names()}: its "
                f"{_METADATA} was not made by func-packed-abi"
            )
        return ObjectFile(
            name=name,
            code=self._emit("lib-obj"),  # type: ignore[arg-type]
            triple=self.target.triple,
            features=self.target.code_features(),
            metadata=json.loads(text) if text else {},
            symbols=tuple(n for n in self._signatures if n != _METADATA),
        )

    def _metadata_object(self, document: dict) -> bytes:
        return metadata_object(
            json.dumps(document), self.target.create_target_machine()
        )

    def _emit(self, kind: str) -> bytes | str:
        if kind not in self._emitted:
            # Code generation rewrites the IR it runs on; start from a fresh copy.
            fresh = parse(self._optimized)
            if kind == "lib-obj":
                prepare_for_library(fresh)
            tm = self.target.create_target_machine()
            emit = emit_assembly if kind == "asm" else emit_object
            self._emitted[kind] = emit(fresh, tm)
        return self._emitted[kind]


class _LinkedObjects:
    """Object files linked into this process by JITLink (ORC), as one library.

    A model's kernels are compiled ahead of time with the small code model: a
    kernel reads its constants rip-relative, within 2 GiB of its code. MCJIT's
    memory manager maps each object's code and constants apart, and in a
    crowded address space (torch loaded) they can land farther apart, where
    LLVM aborts the process; JITLink places each object's sections in one
    block, and reaches other objects and the process through stubs.
    """

    _count = 0

    def __init__(self, codes: Sequence[bytes], exports: Collection[str]):
        builder = llvm.JITLibraryBuilder()
        defined: set[str] = set()
        needed: set[str] = set()
        for code in codes:
            builder.add_object_img(code)
            have, need = object_symbols(code)
            defined |= have
            needed |= need
        # symbols `_resolve` registered with LLVM (or loaded) for the objects
        for name in sorted(needed - defined):
            address = llvm.address_of_symbol(name)
            if address:
                builder.import_symbol(name, address)
        for name in sorted(set(exports) & defined):
            builder.export_symbol(name)
        _LinkedObjects._count += 1
        self._tracker = builder.link(_lljit(), f"ember{_LinkedObjects._count}")

    def get_function_address(self, name: str) -> int:
        return self._tracker[name]

    get_global_value_address = get_function_address


@cache
def _lljit() -> "llvm.LLJIT":
    """The process's ORC JIT (JITLink): one for every linked model."""
    return llvm.create_lljit_compiler(use_jit_link=True)


def _defined_functions(module: llvm.ModuleRef) -> dict[str, str]:
    """Name → LLVM signature of the functions `module` defines and exports."""
    return {
        f.name: str(f.global_value_type)
        for f in module.functions
        if not f.is_declaration and f.linkage == llvm.Linkage.external
    }


def _defines_function(module: llvm.ModuleRef, name: str) -> bool:
    return any(f.name == name and not f.is_declaration for f in module.functions)


def _defines_global(module: llvm.ModuleRef, name: str) -> bool:
    try:
        return not module.get_global_variable(name).is_declaration
    except NameError:
        return False


def _thread_count(module: llvm.ModuleRef) -> int | None:
    """`EMBER_NUM_THREADS` (0 when unset) for a module with parallel loops,
    checked before the module is JIT-compiled; None for other modules.

    Raises:
        EmberError: `EMBER_NUM_THREADS` is not a positive integer.
    """
    try:
        module.get_global_variable(NUM_THREADS_SYMBOL)
    except NameError:
        return None
    return num_threads_from_env()


def _resolve_externals(
    module: llvm.ModuleRef, provided: "Collection[str]" = ()
) -> None:
    """Make every external symbol of `module` resolvable in this process, but
    those that objects linked beside it provide.

    MCJIT aborts the process on a symbol it cannot find; finding them first turns
    that into an exception naming the symbol.

    Raises:
        EmberError: a symbol is in neither this process nor a library known to
            provide it.
    """
    for value in (*module.functions, *module.global_variables):
        name = value.name
        if value.is_declaration and not name.startswith("llvm."):
            if name not in provided and not _resolve(name):
                raise EmberError(
                    f"compiled code uses {name!r}, which this process lacks"
                )


def _resolve(name: str) -> bool:
    """Make the symbol `name` known to LLVM; False if it is nowhere to be found.

    LLVM searches the process itself only once an execution engine has loaded
    it, so before the first JIT compilation in a process even `malloc` is
    unknown to it: a symbol the process has (libc, libm, anything loaded) is
    registered with its address, and otherwise a library that provides it is
    loaded.
    """
    if llvm.address_of_symbol(name):
        return True
    address = _process_symbol(name)
    if address:
        llvm.add_symbol(name, address)
        return True
    prefixed = [lib for prefix, lib in _LIBRARIES.items() if name.startswith(prefix)]
    for library in (*prefixed, *_FALLBACK_LIBRARIES):
        if _load_library(library) and llvm.address_of_symbol(name):
            return True
    return False


@cache
def _process() -> ctypes.CDLL:
    """Every symbol this process has loaded (dlopen(NULL))."""
    return ctypes.CDLL(None)


def _process_symbol(name: str) -> int:
    """The address of `name` among the symbols this process has loaded, or 0."""
    try:
        symbol = _process()[name]
    except AttributeError:
        return 0
    return ctypes.cast(symbol, ctypes.c_void_p).value or 0


@cache
def _load_library(library: str) -> bool:
    """Load `lib<library>` into the process for LLVM, once; False if absent."""
    path = ctypes.util.find_library(library)
    if not path:
        return False
    try:
        llvm.load_library_permanently(path)
    except RuntimeError:
        return False
    return True


__all__ = ["LLVMModule"]
