"""Parallel loops at run time: libgomp, and how many threads they use.

Compiled parallel loops run on libgomp (``GOMP_parallel``). A module that has
any defines the int32 global ``__ember_num_threads``: the thread count every
parallel region of the module asks libgomp for, 0 meaning libgomp's default
(``OMP_NUM_THREADS``, else one thread per core). Whoever loads such a module
sets it once, before the first call, from ``EMBER_NUM_THREADS``; the JIT and
``load_module`` both do. A global rather than ``omp_set_num_threads`` because
libgomp keeps that setting per calling thread: a global holds for calls from
every Python thread alike.
"""

import ctypes
import ctypes.util
import os
from functools import cache

from .errors import EmberError

NUM_THREADS_SYMBOL = "__ember_num_threads"
"""The int32 global of a module with parallel loops: threads per parallel
region, 0 for libgomp's default."""

NUM_THREADS_ENV = "EMBER_NUM_THREADS"
"""The environment variable that sets the thread count of modules loaded after
it is set; it wins over ``OMP_NUM_THREADS``."""


def num_threads_from_env() -> int:
    """The thread count ``EMBER_NUM_THREADS`` asks for; 0 when it is unset.

    Returns:
        A positive count, or 0 to leave the choice to libgomp (which reads
        ``OMP_NUM_THREADS`` and otherwise uses every core).

    Raises:
        EmberError: the variable is set to something other than a positive
            integer.

    Example:
        >>> os.environ["EMBER_NUM_THREADS"] = "2"
        >>> num_threads_from_env()
        2
        >>> del os.environ["EMBER_NUM_THREADS"]
    """
    text = os.environ.get(NUM_THREADS_ENV, "").strip()
    if not text:
        return 0
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1 or count > 2**31 - 1:
        raise EmberError(f"{NUM_THREADS_ENV} must be a positive integer, got {text!r}")
    return count


def configure_library(lib: ctypes.CDLL) -> None:
    """Set the thread count of a loaded library, if it has parallel loops.

    Args:
        lib: the library, loaded with ctypes.

    Raises:
        EmberError: ``EMBER_NUM_THREADS`` is not a positive integer.
    """
    try:
        count = ctypes.c_int32.in_dll(lib, NUM_THREADS_SYMBOL)
    except ValueError:
        return  # no parallel loops
    count.value = num_threads_from_env()


def needs_openmp(error: OSError) -> bool:
    """Whether a library failed to load because libgomp is not loaded."""
    message = str(error)
    return "undefined symbol: GOMP_" in message or "undefined symbol: omp_" in message


@cache
def load_openmp() -> bool:
    """Load libgomp into this process for every library after it (RTLD_GLOBAL).

    Returns:
        False if this system has no libgomp.
    """
    for name in (ctypes.util.find_library("gomp"), "libgomp.so.1"):
        if name:
            try:
                ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            return True
    return False
