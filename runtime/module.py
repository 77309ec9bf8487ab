"""Modules: named collections of packed functions, and loading shared libraries.

``Module`` is the base every kind of compiled code shares (TVM's
``runtime.Module``): ``mod["f"]`` gives a PackedFunc, ``mod(...)`` calls the entry
function. A subclass only says where a function's code is (``_function_address``)
and what it holds (``function_names``); the base wraps, caches and keeps it alive.
``DSOModule`` is the subclass for a shared library built by ``export_library``.
"""

import ctypes
import json
import os

from .errors import EmberError, FunctionNotFoundError
from .packed_func import PackedFunc

METADATA_FUNCTION = "__ember_metadata"
"""The packed function a library defines to describe itself as a JSON string."""

LIBRARY_SUFFIXES = (".so",)
"""File suffixes ``load_module`` accepts."""


class Module:
    """A collection of packed functions.

    Subclasses implement ``_function_address`` and usually ``function_names`` and
    ``get_source``; every PackedFunc they hand out keeps the module alive.

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
            func = self._functions[name] = PackedFunc(address, name=name, owner=self)
            return func
        if query_imports:
            for imported in self._imports:
                func = imported._find(name, True)
                if func is not None:
                    return func
        return None

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


class DSOModule(Module):
    """A shared library of packed functions, loaded with ctypes.

    If the library defines ``__ember_metadata`` (a packed function returning
    ``{"entry": name | null, "functions": {name: {...}}}`` as JSON), it provides
    ``entry_name``, ``function_names()`` and ``metadata``; without it, functions
    are still found by symbol name.

    Attributes:
        path: the file the library was loaded from.
        metadata: the parsed metadata, or {} when the library has none.
    """

    type_key = "dso"

    def __init__(self, path: str | os.PathLike):
        """Load the library at ``path``.

        Raises:
            EmberError: the file is not a loadable library, or its metadata is
                not valid JSON.
        """
        super().__init__()
        self.path = os.fspath(path)
        try:
            self._lib = ctypes.CDLL(os.path.abspath(self.path))
        except OSError as e:
            raise EmberError(f"cannot load {self.path} as a library: {e}") from None
        self.metadata = self._read_metadata()
        self.entry_name = self.metadata.get("entry")

    def _function_address(self, name: str) -> int:
        try:
            symbol = self._lib[name]
        except AttributeError:
            return 0
        return ctypes.cast(symbol, ctypes.c_void_p).value or 0

    def _read_metadata(self) -> dict:
        if METADATA_FUNCTION not in self:
            return {}
        text = self.get_function(METADATA_FUNCTION)()
        try:
            metadata = json.loads(text)
            if not isinstance(metadata, dict):
                raise ValueError(f"expected a JSON object, got {type(metadata)}")
        except ValueError as e:
            raise EmberError(f"{self.path}: invalid {METADATA_FUNCTION}: {e}") from None
        return metadata

    def function_names(self) -> list[str]:
        return list(self.metadata.get("functions", {}))


def load_module(path: str | os.PathLike) -> Module:
    """Load a module saved by ``export_library``.

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
