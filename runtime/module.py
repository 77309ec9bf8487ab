"""Modules: named collections of packed functions, and loading shared libraries.

``Module`` is the base every kind of compiled code shares (TVM's
``runtime.Module``): ``mod["f"]`` gives a PackedFunc, ``mod(...)`` calls the entry
function. A subclass only says where a function's code is (``_function_address``)
and what it holds (``function_names``); the base wraps, caches and keeps it alive,
and reads the module's self-description from its ``__ember_metadata`` function.
``DSOModule`` is the subclass for a shared library of packed functions: one
``export_library`` wrote, or one linked by hand from an object file that
``LLVMModule.save("m.o")`` wrote. ``load_module`` opens ``.so`` and ``.tar``
libraries and checks them first (``ember.runtime.elf``).
"""

import ctypes
import json
import os
import tempfile
import weakref

import numpy as np

from . import callbacks, elf, parallel
from . import cc as _cc
from . import export as _export
from .abi import METADATA_FUNCTION, SCRATCH_RELEASE
from .errors import (
    EmberError,
    EmberTypeError,
    EmberValueError,
    ExportError,
    FunctionNotFoundError,
    IncompatibleLibraryError,
    LibraryLoadError,
    LibraryNotFoundError,
)
from .ndarray import NDArray, empty
from .packed_func import PackedFunc

_DEVICE_PLAN = "__ember_device_plan"  # device_module.PLAN_SYMBOL, not imported
"""The packed function a module defines to describe itself as a JSON string:
``{"entry": name | null, "functions": {name: {"args": [{"name", "shape", "dtype",
"output"}]}}}``; every key but ``functions`` is optional. A library written by
``export_library`` adds ``"triple"`` and ``"features"`` (the CPU features its
code may use, which ``load_module`` checks)."""

MODEL_FACTORY = "default"
"""The function name a model library's factory has: ``lib["default"](dev)``
makes the graph executor module (see ``ember.runtime.graph_module``)."""

LIBRARY_SUFFIXES = _export.SUFFIXES
"""File suffixes ``load_module`` and ``export_library`` accept: a shared
library, or a tar of object files and metadata."""


class Module:
    """A collection of packed functions.

    Subclasses implement ``_function_address`` and usually ``function_names`` and
    ``get_source``; every PackedFunc they hand out keeps the module alive. If the
    module defines ``__ember_metadata``, ``metadata`` is its parsed document and
    the functions it hands out refuse read-only arrays in the argument positions
    the metadata marks ``"output": true``.

    Attributes:
        type_key: what kind of module this is ("dso", "llvm", ...).
        entry_name: the function ``mod(...)`` calls, or None.

    Example:
        >>> mod = load_module("vecadd.so")  # doctest: +SKIP
        >>> mod["vecadd"](a, b, c)  # doctest: +SKIP
    """

    type_key = "module"

    def __init__(self, entry_name: str | None = None):
        self.entry_name = entry_name
        self._functions: dict[str, PackedFunc] = {}
        self._imports: list[Module] = []
        self._metadata: dict | None = None
        self._data: dict[str, NDArray] = {}

    def _function_address(self, name: str) -> int:
        """The address of the packed C function ``name``, or 0 if there is none."""
        raise NotImplementedError(
            f"{type(self).__name__} must define _function_address"
        )

    def symbol_address(self, name: str) -> int:
        """The address of the function ``name`` the module defines, whatever
        its signature (a model library's kernels take bare pointers: see
        ``ember.runtime.graph_steps``), or 0 where it has none or cannot run
        here.

        Example:
            >>> lib.symbol_address("default_run") != 0  # doctest: +SKIP
            True
        """
        return self._function_address(name)

    def function_names(self) -> list[str]:
        """The names of the functions this module is known to define.

        Returns:
            A list of names; empty when the module cannot enumerate its functions.
        """
        return []

    def get_function(self, name: str, query_imports: bool = False) -> PackedFunc:
        """The packed function ``name``.

        Args:
            name: the function's name.
            query_imports: also search the imported modules, depth first.

        Returns:
            A PackedFunc, cached: asking twice returns the same object.

        Raises:
            FunctionNotFoundError: no such function (an EmberError and an
                AttributeError); the message lists the known names.

        Example:
            >>> f = mod.get_function("vecadd")  # doctest: +SKIP
        """
        func = self._find(name, query_imports)
        if func is None:
            known = ", ".join(self.function_names())
            if not known:
                known = "none listed"
                if not self.metadata:
                    known += f" ({self._describe()} defines no {METADATA_FUNCTION})"
            raise FunctionNotFoundError(
                f"{self.type_key} module has no function {name!r}; available: {known}"
            )
        return func

    def _find(self, name: str, query_imports: bool) -> PackedFunc | None:
        func = self._functions.get(name)
        if func is not None:
            return func
        address = self._function_address(name)
        if address:
            outputs = self._outputs_of(name) if name != METADATA_FUNCTION else None
            func = PackedFunc(address, name=name, owner=self, outputs=outputs)
            self._functions[name] = func
            return func
        if name == MODEL_FACTORY and "model" in self.metadata:
            from .graph_module import factory

            func = self._functions[name] = factory(self)
            return func
        if query_imports:
            for imported in self._imports:
                func = imported._find(name, True)
                if func is not None:
                    return func
        return None

    @property
    def metadata(self) -> dict:
        """The module's ``__ember_metadata`` document, or {} when it has none.

        Read once, on first use, by calling the module's own ``__ember_metadata``.

        Raises:
            EmberError: the function fails, returns something other than a
                string, or the string is not a metadata document.
        """
        metadata = self._metadata
        if metadata is None:
            metadata = self._metadata = self._read_metadata()
        return metadata

    def _describe(self) -> str:
        """How this module is named in error messages."""
        return f"{self.type_key} module"

    def _read_metadata(self) -> dict:
        address = self._function_address(METADATA_FUNCTION)
        if not address:
            return {}
        where = f"{self._describe()}: invalid {METADATA_FUNCTION}"
        try:
            text = PackedFunc(address, name=METADATA_FUNCTION, owner=self)()
        except EmberError as e:
            raise EmberError(f"{where}: {e}") from None
        except UnicodeDecodeError as e:  # a damaged library's bytes
            raise EmberError(
                f"{where}: the JSON is not UTF-8 (byte {e.object[e.start]:#04x} "
                f"at offset {e.start})"
            ) from None
        if not isinstance(text, str):
            got = "nothing" if text is None else f"{type(text).__name__} {text!r}"
            raise EmberError(f"{where}: returned {got}, expected a JSON string")
        try:
            return _check_metadata(json.loads(text))
        except RecursionError:
            raise EmberError(f"{where}: the JSON is nested too deeply") from None
        except ValueError as e:
            raise EmberError(f"{where}: {e}") from None

    def _outputs_of(self, name: str) -> dict[int, str | None]:
        """Argument position → name of the arguments function ``name`` writes."""
        function = self.metadata.get("functions", {}).get(name) or {}
        return {
            i: arg.get("name")
            for i, arg in enumerate(function.get("args", ()))
            if arg.get("output", False)
        }

    def add_data(self, symbol: str, blob) -> None:
        """Attach a read-only data blob that ``export_library`` writes into the
        library as the global symbol ``symbol`` (64-byte aligned), e.g. a
        model's embedded params ``__ember_params``.

        Args:
            symbol: the symbol's name.
            blob: bytes, or a numpy array (its bytes, row-major).

        Example:
            >>> mod.add_data("__ember_params", blob)  # doctest: +SKIP
        """
        if not isinstance(symbol, str) or not symbol or "\0" in symbol:
            raise EmberValueError(f"expected a symbol name, got {symbol!r}")
        data = (
            np.frombuffer(blob, np.uint8)
            if not isinstance(blob, np.ndarray)
            else (np.ascontiguousarray(blob).reshape(-1).view(np.uint8))
        )
        if data.ctypes.data % 64:
            aligned = np.asarray(empty(data.shape, "uint8"))
            aligned[:] = data
            data = aligned
        view = data.view()  # kept as given when aligned: no copy of big blobs
        view.flags.writeable = False  # like the library's read-only section
        self._data[symbol] = NDArray(view)

    def get_data(self, symbol: str, nbytes: int) -> NDArray | None:
        """The data blob ``symbol`` (see ``add_data``) as a read-only uint8
        NDArray of ``nbytes`` bytes, zero-copy; None if the module has none.

        Raises:
            EmberError: the blob is shorter than ``nbytes``.
        """
        data = self._data.get(symbol)
        if data is not None and data.shape[0] != nbytes:
            raise EmberError(
                f"{self._describe()}: {symbol} holds {data.shape[0]} bytes, "
                f"expected {nbytes}"
            )
        return data

    def _data_blobs(self) -> dict[str, NDArray]:
        """The blobs ``export_library`` writes into the library."""
        return dict(self._data)

    def __getitem__(self, name: str) -> PackedFunc:
        if not isinstance(name, str):
            raise EmberTypeError(f"function names are strings, got {name!r}")
        return self.get_function(name)

    def __contains__(self, name: str) -> bool:
        return self._find(name, False) is not None

    def __call__(self, *args):
        """Call the entry function with ``args``.

        Raises:
            EmberError: the module has no entry function.
        """
        if self.entry_name is None:
            why = "" if self.metadata else f" (it defines no {METADATA_FUNCTION})"
            raise EmberError(
                f"{self.type_key} module has no entry function{why}; call a "
                'function by name instead, e.g. mod["name"](...)'
            )
        return self.get_function(self.entry_name)(*args)

    def time_evaluator(
        self,
        func_name: str,
        dev,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0,
        cooldown_interval_ms: float = 0,
        repeats_to_cooldown: int = 1,
        f_preproc: str = "",
    ):
        """A function timing ``func_name``, like TVM's ``Module.time_evaluator``.

        Each of ``repeat`` measurements times ``number`` calls (more while a
        measurement lasts less than ``min_repeat_ms``); see
        ``ember.runtime.profiling`` for the details and arguments.

        Returns:
            ``evaluator(*args)`` returning a ``BenchmarkResult`` with ``mean``,
            ``median``, ``min``, ``max``, ``std`` and ``results`` in seconds.

        Raises:
            FunctionNotFoundError: the module has no function ``func_name``.

        Example:
            >>> timer = mod.time_evaluator("vecadd", cpu(), number=100)  # doctest: +SKIP
            >>> print(timer(a, b, c))  # doctest: +SKIP
        """
        from .profiling import time_evaluator

        return time_evaluator(
            self,
            func_name,
            dev,
            number,
            repeat,
            min_repeat_ms,
            cooldown_interval_ms,
            repeats_to_cooldown,
            f_preproc,
        )

    def get_source(self, fmt: str = "") -> str:
        """The module's source in a format such as "ll" or "asm", if it has any.

        Args:
            fmt: the format; each module kind documents the ones it offers.

        Returns:
            The source text.

        Raises:
            EmberError: this kind of module keeps no source.
        """
        raise EmberError(f"{self.type_key} module has no source (asked for {fmt!r})")

    def import_module(self, module: "Module") -> None:
        """Make ``module``'s functions reachable with ``query_imports=True``.

        Args:
            module: the module to import; kept alive by this one.
        """
        if not isinstance(module, Module):
            raise EmberTypeError(f"expected a Module, got {module!r}")
        self._imports.append(module)

    @property
    def imported_modules(self) -> list["Module"]:
        """The modules imported with ``import_module``, in import order."""
        return list(self._imports)

    def export_library(
        self,
        path: str | os.PathLike,
        cc: "str | list[str] | None" = None,
        options: "list[str] | tuple[str, ...]" = (),
    ) -> None:
        """Write this module and every module it imports into one library.

        ``.so``: the objects are linked by the system C compiler (``cc -shared
        -fPIC``, with ``-lgomp`` when one has parallel loops) into a shared
        library ``load_module`` opens with ctypes alone, in any process. ``.tar``:
        the objects and a manifest (``ember_library.json``) in an archive,
        linked when it is loaded, which needs no compiler now and works for any
        target. ``.o``: every object linked into one relocatable object (``cc
        -r``), which ``load_module`` or a C toolchain links later. Either way the
        library's ``__ember_metadata`` describes the functions of all the
        modules, and the module's entry stays the entry.

        Args:
            path: the file to write, ending in ``.so``, ``.tar`` or ``.o``.
            cc: the C compiler for a ``.so`` (default ``$CC``, else ``cc``); a
                module compiled for another machine needs one for that machine,
                e.g. ``"aarch64-linux-gnu-gcc"``.
            options: more arguments for the link line of a ``.so``
                (``-L...``, ``-l...``).

        Raises:
            ExportError: a suffix other than ``.so``/``.tar``/``.o``; a module with no
                object code (a loaded library); modules for different machines
                or defining the same function; a ``.so`` for another machine
                without ``cc``.
            LinkError: the compiler is missing or the link failed (the message
                shows the command and the compiler's first error lines).

        Example:
            >>> mod.export_library("vecadd.so")  # doctest: +SKIP
            >>> load_module("vecadd.so")["vecadd"](a, b, c)  # doctest: +SKIP
        """
        _export.export_library(self, os.fspath(path), cc, options)

    def _object_file(self, name: str) -> "_cc.ObjectFile":
        """This module's code as an object file ``name`` for ``export_library``:
        linkable beside other modules' objects, its ``__ember_metadata``
        internal (the library gets a merged one from ``_metadata_object``)."""
        raise ExportError(
            f"{self._describe()} cannot be exported: it has no object code "
            "(only compiled modules, such as ember.build's, can be exported)"
        )

    def _metadata_object(self, document: dict) -> bytes:
        """An object file for this module's target defining ``__ember_metadata``
        to return ``document`` as JSON."""
        raise ExportError(
            f"{self._describe()} cannot write the metadata object of a library"
        )

    def __repr__(self) -> str:
        names = ", ".join(self.function_names())
        return f"Module({self.type_key}, entry={self.entry_name}, functions=[{names}])"


def _check_metadata(document: object) -> dict:
    """``document`` if it has the shape of a metadata document, else ValueError."""
    if not isinstance(document, dict):
        raise EmberValueError(f"expected a JSON object, got {_json_type(document)}")
    entry = document.get("entry")
    if entry is not None and not isinstance(entry, str):
        raise EmberValueError(
            f'"entry" must be a string or null, got {_json_type(entry)}'
        )
    functions = document.get("functions", {})
    if not isinstance(functions, dict):
        raise EmberValueError(
            f'"functions" must be an object, got {_json_type(functions)}'
        )
    for name, function in functions.items():
        where = f"function {name!r}"
        if not isinstance(function, dict):
            raise EmberValueError(
                f"{where} must be an object, got {_json_type(function)}"
            )
        args = function.get("args", [])
        if not isinstance(args, list):
            raise EmberValueError(
                f'{where}: "args" must be a list, got {_json_type(args)}'
            )
        for i, arg in enumerate(args):
            if not isinstance(arg, dict):
                raise EmberValueError(
                    f"{where}: argument {i} must be an object, got {_json_type(arg)}"
                )
            arg_name = arg.get("name")
            if arg_name is not None and not isinstance(arg_name, str):
                raise EmberValueError(
                    f'{where}: argument {i}: "name" must be a string, '
                    f"got {_json_type(arg_name)}"
                )
            if not isinstance(arg.get("output", False), bool):
                raise EmberValueError(
                    f'{where}: argument {i}: "output" must be true or false, '
                    f"got {_json_type(arg['output'])}"
                )
    if "model" in document:
        from .graph_module import check_model

        check_model(document["model"])
    return document


def _json_type(value: object) -> str:
    """The JSON name of a parsed value's type, with the value if it is short."""
    kind = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)
    shown = json.dumps(value)
    return f"{kind} ({shown})" if len(shown) <= 40 and value is not None else kind


class DSOModule(Module):
    """A shared library of packed functions, loaded with ctypes.

    If the library defines ``__ember_metadata`` (see ``METADATA_FUNCTION``), it
    provides ``entry_name``, ``function_names()`` and ``metadata``, and marks
    the arguments each function writes; without it, functions are still found by
    symbol name.

    Attributes:
        path: the file the library was loaded from.
        metadata: the parsed metadata, or {} when the library has none.
    """

    type_key = "dso"

    def __init__(self, path: str | os.PathLike, source: str | None = None):
        """Load the library at ``path``.

        ``source`` names the file the library came from in messages and
        ``path``, when that is not ``path`` (a ``.tar`` linked into a
        temporary ``.so``).

        A library with parallel loops gets its thread count from
        ``EMBER_NUM_THREADS`` (see ``ember.runtime.parallel``); one not linked
        with libgomp gets libgomp loaded first.

        Raises:
            EmberError: the file is not a loadable library, its metadata is
                not a valid metadata document, or ``EMBER_NUM_THREADS`` is not
                a positive integer.
        """
        super().__init__()
        self.path = source or os.fspath(path)
        self._lib = _load_library(os.fspath(path), self.path)
        parallel.configure_library(self._lib, self)
        callbacks.configure_library(self._lib)
        self.entry_name = self.metadata.get("entry")
        # ctypes never unloads the library: the scratch blocks its kernels
        # keep between calls go with the module
        release = self._function_address(SCRATCH_RELEASE)
        if release:
            weakref.finalize(self, release_scratch, release, self._lib)

    def _function_address(self, name: str) -> int:
        try:
            symbol = self._lib[name]
        except AttributeError:
            return 0
        return ctypes.cast(symbol, ctypes.c_void_p).value or 0

    def _describe(self) -> str:
        return self.path

    def get_data(self, symbol: str, nbytes: int) -> NDArray | None:
        """The library's data symbol ``symbol`` viewed zero-copy as ``nbytes``
        read-only bytes (the library's own memory); None if it has none."""
        address = self._function_address(symbol)
        if not address:
            return None
        if address % 64:
            raise EmberError(
                f"{self.path}: {symbol} is at {address:#x}, not 64-byte aligned"
            )
        memory = (ctypes.c_uint8 * nbytes).from_address(address)
        view = np.ctypeslib.as_array(memory)
        view.flags.writeable = False
        return NDArray(view)

    def function_names(self) -> list[str]:
        """The functions the library's metadata lists; empty without
        ``__ember_metadata`` (its functions are still found by name)."""
        return list(self.metadata.get("functions", {}))


_RELEASE = ctypes.CFUNCTYPE(None)


def release_scratch(address: int, code: object = None) -> None:
    """Call a library's `SCRATCH_RELEASE` at `address`: the heap blocks its
    kernels keep between calls are freed; a later call allocates again. A
    module's finalizer, holding `code` (what keeps `address` mapped)."""
    del code
    _RELEASE(address)()


# Path → (device, inode) of every library loaded, to notice a file replaced
# since (re-exported to the same path).
_LOADED: dict[str, tuple[int, int]] = {}


def _load_library(path: str, source: str) -> ctypes.CDLL:
    path = os.path.abspath(path)
    stat = os.stat(path)
    identity = (stat.st_dev, stat.st_ino)
    try:
        if _LOADED.get(path, identity) != identity:
            lib = _load_replaced(path)
        else:
            lib = _dlopen(path)
    except OSError as e:
        raise LibraryLoadError(f"cannot load {source} as a library: {e}") from None
    _LOADED[path] = identity
    return lib


def _load_replaced(path: str) -> ctypes.CDLL:
    """Load the new file at a path whose old file this process has loaded.

    dlopen hands back the library it already has for a path it has seen, even
    when the file there is a new one; under another name (a symbolic link,
    removed at once) it compares files instead, and loads the new one.
    """
    with tempfile.TemporaryDirectory(prefix="ember-reload-") as tmp:
        link = os.path.join(tmp, os.path.basename(path))
        os.symlink(path, link)
        return _dlopen(link)


def _dlopen(path: str) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        # A library with parallel loops that was not linked with -lgomp.
        if not (parallel.needs_openmp(e) and parallel.load_openmp()):
            raise
        return ctypes.CDLL(path)


def load_module(
    path: str | os.PathLike,
    cc: "str | list[str] | None" = None,
    check_cpu: bool = True,
) -> Module:
    """Load a library of packed functions as a ``DSOModule`` (or a GPU launch
    plan saved as ``.json`` by ``DeviceModule.save``, as a ``DeviceModule``).

    A ``.so`` is checked (ELF, a shared library, whole, for this machine) and
    opened with ctypes. A ``.tar`` (see ``Module.export_library``) is
    extracted into a temporary directory and linked there into a ``.so`` by
    the system C compiler, as TVM does: loading a ``.tar`` needs a C
    compiler, never the ember compiler. An object file ``.o`` (what
    ``save("m.o")`` and ``ember-opt --emit obj`` write) is linked the same way.
    The temporary files are removed once the library is loaded. Either way the module's ``entry_name``,
    ``function_names()`` and ``metadata`` come from the library itself.

    Args:
        path: a ``.so`` or ``.tar`` library, an object file ``.o``, or a
            ``.json`` launch plan.
        cc: the C compiler that links a ``.tar`` or ``.o`` (default ``$CC``,
            else ``cc``).
        check_cpu: refuse a library whose metadata lists CPU features that
            ``/proc/cpuinfo`` says this CPU lacks (its code would die of an
            illegal instruction); False skips the check.

    Returns:
        The loaded Module; ``mod["f"]`` gives its functions.

    Raises:
        LibraryNotFoundError: the file is missing.
        InvalidLibraryError: not a library (the message says what it is), a
            truncated one, or a corrupt ``.tar``.
        IncompatibleLibraryError: built for another machine, or for CPU
            features this one lacks.
        LibraryLoadError: the base of these, and what ``dlopen`` failures raise.
        LinkError: linking a ``.tar`` or ``.o`` failed or there is no C compiler.
        EmberError: an unsupported suffix, or invalid metadata.

    Example:
        >>> f = load_module("vecadd.so")["vecadd"]  # doctest: +SKIP
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise LibraryNotFoundError(f"load_module: no such file: {path}")
    suffix = os.path.splitext(path)[1]
    if suffix == ".json":
        from .device_module import load_plan

        return load_plan(path)
    if suffix not in LIBRARY_SUFFIXES:
        raise EmberError(
            f"load_module: cannot load {path}: expected a shared library (.so), "
            f"a library archive (.tar) or an object file (.o), got suffix {suffix!r}"
        )
    if suffix == ".tar":
        module = _load_tar(path, cc)
    elif suffix == ".o":
        module = _load_object(path, cc)
    else:
        elf.check_library(path)
        module = DSOModule(path)
    if module._function_address(_DEVICE_PLAN):  # a GPU model: its plan, as data
        from .device_module import from_library

        return from_library(module)
    if check_cpu:
        _check_cpu(module)
    return module


def _check_cpu(module: Module) -> None:
    """Refuse a library compiled for CPU features this CPU lacks: its code
    would stop the process with an illegal instruction."""
    features = module.metadata.get("features")
    if not isinstance(features, list):
        return
    missing = elf.missing_cpu_features([f for f in features if isinstance(f, str)])
    if missing:
        raise IncompatibleLibraryError(
            f"{module._describe()} was built for a CPU with {', '.join(missing)}, "
            "which this CPU lacks; export it for a target without them (e.g. "
            "-mcpu= of the oldest CPU it must run on)"
        )


def _load_object(path: str, cc: "str | list[str] | None") -> Module:
    elf.check_object(path)
    with open(path, "rb") as f:
        openmp = _cc.uses_openmp(f.read())
    with tempfile.TemporaryDirectory(prefix="ember-o-") as tmp:
        library = os.path.join(tmp, "library.so")
        _cc.link_shared(library, [path], cc, openmp=openmp)
        return DSOModule(library, source=path)


def _load_tar(path: str, cc: "str | list[str] | None") -> Module:
    manifest = _cc.read_manifest(path)
    triple = manifest.get("triple")
    host = elf.host_machine()
    if isinstance(triple, str) and host is not None:
        machine = elf.triple_machine(triple)
        if machine != host:
            raise IncompatibleLibraryError(
                f"{path} was built for {machine} ({triple}), this machine is {host}"
            )
    with tempfile.TemporaryDirectory(prefix="ember-tar-") as tmp:
        manifest, objects = _cc.extract_objects(path, tmp)
        library = os.path.join(tmp, "library.so")
        _cc.link_shared(library, objects, cc, openmp=bool(manifest.get("openmp")))
        # Once loaded, the file is no longer needed: the mapping stays.
        return DSOModule(library, source=path)
