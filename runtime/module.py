"""Modules: named collections of packed functions, and loading shared libraries.

``Module`` is the base every kind of compiled code shares (TVM's
``runtime.Module``): ``mod["f"]`` gives a PackedFunc, ``mod(...)`` calls the entry
function. A subclass only says where a function's code is (``_function_address``)
and what it holds (``function_names``); the base wraps, caches and keeps it alive,
and reads the module's self-description from its ``__ember_metadata`` function.
``DSOModule`` is the subclass for a shared library of packed functions, e.g. one
linked by hand from an object file that ``LLVMModule.save("m.o")`` wrote.
"""

import ctypes
import json
import os

from . import parallel
from .errors import EmberError, FunctionNotFoundError
from .packed_func import PackedFunc

METADATA_FUNCTION = "__ember_metadata"
"""The packed function a module defines to describe itself as a JSON string:
``{"entry": name | null, "functions": {name: {"args": [{"name", "shape", "dtype",
"output"}]}}}``; every key but ``functions`` is optional."""

LIBRARY_SUFFIXES = (".so",)
"""File suffixes ``load_module`` accepts."""


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

    def _function_address(self, name: str) -> int:
        """The address of the packed C function ``name``, or 0 if there is none."""
        raise NotImplementedError(
            f"{type(self).__name__} must define _function_address"
        )

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
            known = ", ".join(self.function_names()) or "none listed"
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
        if not isinstance(text, str):
            got = "nothing" if text is None else f"{type(text).__name__} {text!r}"
            raise EmberError(f"{where}: returned {got}, expected a JSON string")
        try:
            return _check_metadata(json.loads(text))
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

    def __getitem__(self, name: str) -> PackedFunc:
        if not isinstance(name, str):
            raise TypeError(f"function names are strings, got {name!r}")
        return self.get_function(name)

    def __contains__(self, name: str) -> bool:
        return self._find(name, False) is not None

    def __call__(self, *args):
        """Call the entry function with ``args``.

        Raises:
            EmberError: the module has no entry function.
        """
        if self.entry_name is None:
            raise EmberError(
                f"{self.type_key} module has no entry function; call a function by "
                'name instead, e.g. mod["name"](...)'
            )
        return self.get_function(self.entry_name)(*args)

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
            raise TypeError(f"expected a Module, got {module!r}")
        self._imports.append(module)

    @property
    def imported_modules(self) -> list["Module"]:
        """The modules imported with ``import_module``, in import order."""
        return list(self._imports)

    def __repr__(self) -> str:
        names = ", ".join(self.function_names())
        return f"Module({self.type_key}, entry={self.entry_name}, functions=[{names}])"


def _check_metadata(document: object) -> dict:
    """``document`` if it has the shape of a metadata document, else ValueError."""
    if not isinstance(document, dict):
        raise ValueError(f"expected a JSON object, got {_json_type(document)}")
    entry = document.get("entry")
    if entry is not None and not isinstance(entry, str):
        raise ValueError(f'"entry" must be a string or null, got {_json_type(entry)}')
    functions = document.get("functions", {})
    if not isinstance(functions, dict):
        raise ValueError(f'"functions" must be an object, got {_json_type(functions)}')
    for name, function in functions.items():
        where = f"function {name!r}"
        if not isinstance(function, dict):
            raise ValueError(f"{where} must be an object, got {_json_type(function)}")
        args = function.get("args", [])
        if not isinstance(args, list):
            raise ValueError(f'{where}: "args" must be a list, got {_json_type(args)}')
        for i, arg in enumerate(args):
            if not isinstance(arg, dict):
                raise ValueError(
                    f"{where}: argument {i} must be an object, got {_json_type(arg)}"
                )
            arg_name = arg.get("name")
            if arg_name is not None and not isinstance(arg_name, str):
                raise ValueError(
                    f'{where}: argument {i}: "name" must be a string, '
                    f"got {_json_type(arg_name)}"
                )
            if not isinstance(arg.get("output", False), bool):
                raise ValueError(
                    f'{where}: argument {i}: "output" must be true or false, '
                    f"got {_json_type(arg['output'])}"
                )
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

    def __init__(self, path: str | os.PathLike):
        """Load the library at ``path``.

        A library with parallel loops gets its thread count from
        ``EMBER_NUM_THREADS`` (see ``ember.runtime.parallel``); one not linked
        with libgomp gets libgomp loaded first.

        Raises:
            EmberError: the file is not a loadable library, its metadata is
                not a valid metadata document, or ``EMBER_NUM_THREADS`` is not
                a positive integer.
        """
        super().__init__()
        self.path = os.fspath(path)
        self._lib = _load_library(self.path)
        parallel.configure_library(self._lib)
        self.entry_name = self.metadata.get("entry")

    def _function_address(self, name: str) -> int:
        try:
            symbol = self._lib[name]
        except AttributeError:
            return 0
        return ctypes.cast(symbol, ctypes.c_void_p).value or 0

    def _describe(self) -> str:
        return self.path

    def function_names(self) -> list[str]:
        return list(self.metadata.get("functions", {}))


def _load_library(path: str) -> ctypes.CDLL:
    try:
        try:
            return ctypes.CDLL(os.path.abspath(path))
        except OSError as e:
            # A library with parallel loops that was not linked with -lgomp.
            if not (parallel.needs_openmp(e) and parallel.load_openmp()):
                raise
            return ctypes.CDLL(os.path.abspath(path))
    except OSError as e:
        raise EmberError(f"cannot load {path} as a library: {e}") from None


def load_module(path: str | os.PathLike) -> Module:
    """Load a shared library of packed functions as a ``DSOModule``.

    Args:
        path: a shared library (``.so``).

    Returns:
        The loaded Module; ``mod["f"]`` gives its functions.

    Raises:
        EmberError: the file is missing, has an unsupported suffix, or cannot be
            loaded.

    Example:
        >>> f = load_module("vecadd.so")["vecadd"]  # doctest: +SKIP
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise EmberError(f"load_module: no such file: {path}")
    suffix = os.path.splitext(path)[1]
    if suffix not in LIBRARY_SUFFIXES:
        raise EmberError(
            f"load_module: cannot load {path}: expected a shared library "
            f"({', '.join(LIBRARY_SUFFIXES)}), got suffix {suffix!r}"
        )
    return DSOModule(path)
