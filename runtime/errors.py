"""Exceptions raised by the ember runtime."""


class EmberError(RuntimeError):
    """An error from the ember runtime or from compiled code.

    Compiled functions report bad arguments through their return code; the runtime
    turns that into an ``EmberError`` whose message is the function's own message
    followed by what the caller actually passed.
    """


class FunctionNotFoundError(EmberError, AttributeError):
    """A module or the global registry has no function with the requested name."""
