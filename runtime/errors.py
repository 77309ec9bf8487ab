"""Exceptions raised by the ember runtime."""


class EmberError(RuntimeError):
    """An error from the ember runtime or from compiled code.

    Compiled functions report bad arguments through their return code; the runtime
    turns that into an ``EmberError`` whose message is the function's own message
    followed by what the caller actually passed.
    """


class EmberValueError(EmberError, ValueError):
    """An argument of the right type with a wrong value (a shape, a name, an
    option): both an ``EmberError`` and a ``ValueError``, so ``except
    EmberError`` catches every error ember raises and ``except ValueError``
    keeps working."""


class EmberTypeError(EmberError, TypeError):
    """An argument of the wrong type: both an ``EmberError`` and a
    ``TypeError``."""


class FunctionNotFoundError(EmberError, AttributeError):
    """A module or the global registry has no function with the requested name."""


class LibraryLoadError(EmberError):
    """A library cannot be loaded: ``load_module``'s errors derive from this one."""


class LibraryNotFoundError(LibraryLoadError, FileNotFoundError):
    """The library file does not exist (also a ``FileNotFoundError``)."""


class InvalidLibraryError(LibraryLoadError):
    """The file is not a loadable library: not ELF, not a shared library,
    truncated, or a corrupt library archive."""


class IncompatibleLibraryError(LibraryLoadError):
    """The library was built for another kind of machine (say, aarch64 code on
    an x86_64 host)."""


class ExportError(EmberError):
    """A module cannot be exported as asked: wrong file suffix, modules that
    cannot share one library, or a cross-compiled module without a compiler
    for its machine."""


class LinkError(EmberError):
    """The system C compiler failed to link a library (or is missing), when
    exporting a ``.so`` or when loading a ``.tar``."""


class CompilerNotFoundError(LinkError):
    """The C compiler named by ``cc=``, ``$CC`` or the default ``cc`` does not
    exist."""


class InvalidParamsError(EmberValueError):
    """A param dict cannot be read: not one, another version, truncated, or
    damaged (its checksum does not match). Also a ``ValueError``, as these
    errors were before the class existed."""
