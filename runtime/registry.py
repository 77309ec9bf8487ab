"""The global function registry: Python functions reachable by name.

Compiled code will call registered functions through a callback table handed to a
module at load time; Python code gets them back with ``get_global_func``.
"""

import threading

from .errors import EmberError, EmberTypeError, FunctionNotFoundError
from .packed_func import PackedFunc

_FUNCTIONS: dict[str, PackedFunc] = {}
_LOCK = threading.Lock()


def register_func(func_name, f=None, override: bool = False):
    """Register a function under a global name.

    Usable as ``@register_func("name")``, ``@register_func`` (the function's
    ``__name__``) or ``register_func("name", f)``.

    Args:
        func_name: the name, or the function itself when used as a bare decorator.
        f: the function (a callable or a PackedFunc); omit it to get a decorator.
        override: replace a function already registered under the name.

    Returns:
        ``f`` unchanged, or a decorator that registers and returns its argument.

    Raises:
        EmberError: the name is taken and ``override`` is false.

    Example:
        >>> @register_func("demo.add")
        ... def add(a, b):
        ...     return a + b
        >>> get_global_func("demo.add")(1, 2)
        3
    """
    if callable(func_name) and f is None:
        f = func_name
        func_name = f.name if isinstance(f, PackedFunc) else f.__name__
    if not isinstance(func_name, str):
        raise EmberTypeError(f"expected a function name, got {func_name!r}")

    def register(func):
        packed = func if isinstance(func, PackedFunc) else PackedFunc(func, func_name)
        with _LOCK:
            if func_name in _FUNCTIONS and not override:
                raise EmberError(
                    f"global function {func_name!r} is already registered; "
                    "pass override=True to replace it"
                )
            _FUNCTIONS[func_name] = packed
        return func

    return register if f is None else register(f)


def get_global_func(name: str, allow_missing: bool = False) -> PackedFunc | None:
    """The function registered as ``name``.

    Args:
        name: the registered name.
        allow_missing: return None instead of raising when there is none.

    Returns:
        The PackedFunc, or None (only with ``allow_missing``).

    Raises:
        FunctionNotFoundError: nothing is registered as ``name``.

    Example:
        >>> get_global_func("no.such.function", allow_missing=True) is None
        True
    """
    func = _FUNCTIONS.get(name)
    if func is None and not allow_missing:
        raise FunctionNotFoundError(f"no global function is registered as {name!r}")
    return func


def list_global_func_names() -> list[str]:
    """The names of all registered functions.

    Returns:
        A sorted list of names.

    Example:
        >>> "demo.add" in list_global_func_names()  # doctest: +SKIP
        True
    """
    return sorted(_FUNCTIONS)


def remove_global_func(name: str) -> None:
    """Unregister ``name``.

    Args:
        name: the registered name.

    Raises:
        FunctionNotFoundError: nothing is registered as ``name``.

    Example:
        >>> register_func("demo.tmp", print)  # doctest: +SKIP
        >>> remove_global_func("demo.tmp")  # doctest: +SKIP
    """
    with _LOCK:
        if _FUNCTIONS.pop(name, None) is None:
            raise FunctionNotFoundError(f"no global function is registered as {name!r}")
