"""The names and numbers compiled code and the runtime agree on, written once.

The compiler writes them into libraries (`func-packed-abi`, `graph-plan-memory`,
the link step) and the runtime reads them back; both import them from here
(the compiler may import the runtime, never the reverse).
"""

from enum import IntEnum

MODEL_ENTRY = "default_run"
"""A model library's entry: ``default_run(inputs..., outputs..., workspace, params)``."""
MODEL_ATTR = "ember.model"
"""The module attribute (and metadata key ``"model"``) describing a model."""
METADATA_FUNCTION = "__ember_metadata"
"""The packed function returning a library's metadata document as JSON."""
PARAMS_SYMBOL = "__ember_params"
"""A model library's embedded params blob."""
SCRATCH_RELEASE = "__ember_scratch_release"
"""``void()``: frees the heap blocks a library's kernels keep between calls
(their scratch, reused by the next call); a runtime calls it when it lets a
library's module go. Weak: a library of several objects defines one."""


class TypeCode(IntEnum):
    """Type codes of packed arguments and return values (TVM's numbering).

    ``MODULE_HANDLE`` passes a ``Module`` as an opaque handle that
    ``module_from_handle`` maps back; ``PACKED_FUNC_HANDLE`` passes the address of
    a packed C function (a Python PackedFunc's is a ctypes trampoline).
    """

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    NULL = 4
    DLTENSOR_HANDLE = 7
    MODULE_HANDLE = 9
    PACKED_FUNC_HANDLE = 10
    STR = 11
    NDARRAY_HANDLE = 13


__all__ = [
    "SCRATCH_RELEASE",
    "METADATA_FUNCTION",
    "MODEL_ATTR",
    "MODEL_ENTRY",
    "PARAMS_SYMBOL",
    "TypeCode",
]
