"""Calls from compiled code into Python: the ``__ember_call_packed`` hook.

A compiled module that calls registered functions (``te.call_packed``) defines a
weak, pointer-sized global ``__ember_call_packed``, null until its host installs a
callback of C type::

    int32_t hook(const char* name, EmberValue* args, int32_t* type_codes,
                 int32_t num_args, EmberValue* ret, int32_t* ret_type_code);

Whoever loads such a module installs the trampoline here (``LLVMModule`` when it
JIT-compiles, ``DSOModule`` when it loads a library); a C host may write its own
function there. The trampoline finds the function registered under ``name``
(``register_func``), hands it the arguments (tensors as zero-copy NDArray views of
the compiled code's buffers, valid during the call), and writes an int, float,
str or NDArray result to ``ret``. A Python exception does not cross into compiled
code: it is kept for this thread, the hook returns -1 with a message in ``ret``,
the compiled function stops and returns ``CALLBACK_ERROR`` (-100), and its
``PackedFunc`` raises the kept exception again.
"""

import ctypes
import difflib
import math
import threading
from ctypes import CFUNCTYPE, c_char, c_double, c_int32, c_int64, c_void_p

import numpy as np

from .dlpack import DL_CPU, DLTensor, dl_to_dtype, dltensor_layout, is_compact
from .errors import EmberError, EmberTypeError, EmberValueError, FunctionNotFoundError
from .ndarray import NDArray, cpu
from .packed_func import (
    EmberValue,
    PackedFunc,
    TypeCode,
    module_from_handle,
    packed_func_from_handle,
)
from .registry import get_global_func, list_global_func_names

HOOK_SYMBOL = "__ember_call_packed"
"""The weak pointer global through which compiled code calls the host."""

CALLBACK_ERROR = -100
"""What a compiled function returns when a host function it called failed (or no
hook was installed); its message is in ``ret`` as a string (type code 11)."""

PACKED_FUNC_HANDLE, MODULE_HANDLE = 10, 9
"""Type codes (TVM's) of a packed C function's address and of a module."""

HOOK_TYPE = CFUNCTYPE(
    c_int32, c_void_p, c_void_p, c_void_p, c_int32, c_void_p, c_void_p
)
"""The ctypes prototype of the hook."""

_CPU = cpu()
_state = threading.local()
"""Per thread: ``error``, the pending (exception, callback name), and ``buffer``
and ``keep``, the last string and NDArray handed to compiled code (alive until
the next one)."""


def _lookup(name: str) -> PackedFunc:
    func = get_global_func(name, allow_missing=True)
    if func is not None:
        return func
    near = difflib.get_close_matches(name, list_global_func_names(), n=3)
    hint = (
        f"; did you mean {', '.join(map(repr, near))}?"
        if near
        else "; register it with ember.runtime.register_func"
    )
    raise FunctionNotFoundError(
        f"compiled code called {name!r}, but no global function is registered "
        f"under that name{hint}"
    )


def _tensor(address: int, index: int) -> NDArray:
    """A zero-copy NDArray over the DLTensor at ``address``."""
    if not address:
        raise EmberError(f"argument {index}: null tensor handle")
    t = DLTensor.from_address(address)
    if t.device.device_type != DL_CPU:
        raise EmberError(
            f"argument {index}: expected a cpu tensor, got device type "
            f"{t.device.device_type}"
        )
    dtype = dl_to_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    shape, strides = dltensor_layout(t)
    if not is_compact(shape, strides):
        raise EmberValueError(
            f"argument {index}: expected a compact row-major tensor, got shape "
            f"{shape} with strides {strides}"
        )
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return NDArray(np.empty(shape, dtype))
    data = (c_char * nbytes).from_address((t.data or 0) + t.byte_offset)
    # The view shares the caller's DLTensor as well as its memory: building an
    # NDArray's own costs 5 us a tensor, most of a callback's overhead. Passed
    # back to compiled code during the call, it is the very tensor it was given.
    view = NDArray.__new__(NDArray)
    # ctypes arrays export the buffer protocol; typeshed's ctypes stubs do not say so
    view._arr = np.frombuffer(data, dtype).reshape(shape)  # pyright: ignore[reportCallIssue, reportArgumentType]
    view._dltensor, view._shape_buf, view._handle = t, None, address
    view.device = _CPU
    return view


def _argument(value: EmberValue, code: int, index: int):
    if code in (TypeCode.DLTENSOR_HANDLE, TypeCode.NDARRAY_HANDLE):
        return _tensor(value.v_handle or 0, index)
    if code == TypeCode.INT:
        return value.v_int64
    if code == TypeCode.UINT:
        return value.v_int64 & 0xFFFF_FFFF_FFFF_FFFF
    if code == TypeCode.FLOAT:
        return value.v_float64
    if code == TypeCode.STR:
        if not value.v_handle:
            raise EmberError(f"argument {index}: null string")
        return ctypes.string_at(value.v_handle).decode()
    if code == TypeCode.NULL:
        return None
    if code == TypeCode.HANDLE:
        return c_void_p(value.v_handle)
    if code == PACKED_FUNC_HANDLE:
        return packed_func_from_handle(value.v_handle or 0)
    if code == MODULE_HANDLE:
        return module_from_handle(value.v_handle or 0)
    raise EmberTypeError(
        f"argument {index}: cannot convert type code {code} to a Python value"
    )


def _keep_string(text: str) -> int:
    buffer = ctypes.create_string_buffer(text.encode(errors="replace"))
    _state.buffer = buffer
    return ctypes.addressof(buffer)


def _write_return(result, ret: int, ret_code: int) -> None:
    if isinstance(result, bool | int | np.integer):
        if not -(2**63) <= int(result) < 2**63:
            raise OverflowError(f"returned {result}, which does not fit in int64")
        value, code, kind = int(result), TypeCode.INT, c_int64
    elif isinstance(result, float | np.floating):
        value, code, kind = float(result), TypeCode.FLOAT, c_double
    elif isinstance(result, str):
        value, code, kind = _keep_string(result), TypeCode.STR, c_void_p
    elif isinstance(result, NDArray):  # e.g. `y.copyfrom(...)`, which returns y
        _state.keep = result
        value, code, kind = result._handle, TypeCode.DLTENSOR_HANDLE, c_void_p
    elif result is None:
        value, code, kind = 0, TypeCode.NULL, c_int64
    else:
        raise EmberTypeError(
            f"returned a {type(result).__name__}; expected None, int, float, str "
            "or NDArray"
        )
    if ret and ret_code:
        # each branch above picks `value` and its ctypes `kind` together
        kind.from_address(ret).value = value  # pyright: ignore[reportAttributeAccessIssue]
        c_int32.from_address(ret_code).value = code


def _trampoline(name, args, codes, num_args, ret, ret_code) -> int:
    callee = "?"
    try:
        callee = ctypes.string_at(name).decode(errors="replace") if name else "?"
        func = _lookup(callee)
        values = (EmberValue * num_args).from_address(args) if num_args else ()
        types = (c_int32 * num_args).from_address(codes) if num_args else ()
        converted = [
            _argument(values[i], types[i], i)  # type: ignore[index]
            for i in range(num_args)
        ]
        _write_return(func(*converted), ret or 0, ret_code or 0)
        return 0
    except BaseException as error:  # noqa: BLE001 - nothing may unwind into C
        _state.error = (error, callee)
        if ret and ret_code:
            message = f"callback '{callee}' raised {type(error).__name__}: {error}"
            c_void_p.from_address(ret).value = _keep_string(message)
            c_int32.from_address(ret_code).value = TypeCode.STR
        return -1


_HOOK = HOOK_TYPE(_trampoline)  # alive for the process: compiled code holds it
_HOOK_ADDRESS = ctypes.cast(_HOOK, c_void_p).value


def install(address: int) -> None:
    """Point the hook global at ``address`` to the Python trampoline.

    Args:
        address: the address of a module's ``__ember_call_packed`` global.

    Example:
        >>> slot = ctypes.c_void_p()
        >>> install(ctypes.addressof(slot))
        >>> slot.value == ctypes.cast(_HOOK, ctypes.c_void_p).value
        True
    """
    c_void_p.from_address(address).value = _HOOK_ADDRESS


def configure_library(lib: ctypes.CDLL) -> None:
    """Install the trampoline in a loaded library, if it calls host functions.

    Args:
        lib: the library, loaded with ctypes.
    """
    try:
        slot = c_void_p.in_dll(lib, HOOK_SYMBOL)
    except ValueError:
        return  # it calls no host functions
    slot.value = _HOOK_ADDRESS


def take_error() -> tuple[BaseException, str] | None:
    """The exception the last failed callback of this thread raised, and the
    callback's name; None if there is none. Taking it clears it.

    Returns:
        ``(exception, name)`` or None.

    Example:
        >>> take_error() is None
        True
    """
    pending = getattr(_state, "error", None)
    _state.error = None
    return pending
