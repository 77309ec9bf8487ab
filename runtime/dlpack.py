"""DLPack structures, dtype mapping and capsule consumption through ctypes.

The structs mirror ``dlpack.h`` byte for byte: a ``DLTensor`` is 48 bytes on a 64-bit
machine, and compiled code reads it at fixed offsets (see "The packed ABI" in
``docs/architecture.md``). Capsules are consumed with the CPython capsule API through
private ctypes prototypes, so setting ``argtypes`` elsewhere cannot disturb them.
Exporting is left to numpy (see ``NDArray.__dlpack__``).
"""

import ctypes
import sys
from collections.abc import Callable
from ctypes import (
    CFUNCTYPE,
    POINTER,
    PYFUNCTYPE,
    Structure,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
    py_object,
)
from typing import Any, NamedTuple

import numpy as np

from .errors import EmberTypeError

DL_CPU = 1
"""``kDLCPU``: host memory, which compiled CPU code reads and writes."""
DL_CUDA = 2
"""``kDLCUDA``: CUDA device memory; a DLTensor's ``data`` is the ``CUdeviceptr``."""
DL_OPENCL = 4
"""``kDLOpenCL``: OpenCL memory; a DLTensor's ``data`` is the ``cl_mem`` handle."""

DL_INT, DL_UINT, DL_FLOAT, DL_COMPLEX, DL_BOOL = 0, 1, 2, 5, 6

FLAG_READ_ONLY = 1
"""``DLPACK_FLAG_BITMASK_READ_ONLY`` in a versioned managed tensor's ``flags``."""


class DLDevice(Structure):
    """``DLDevice``: where a tensor's memory lives."""

    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    """``DLDataType``: type code, bits per lane and lanes of one element."""

    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    """``DLTensor``: a borrowed view of a tensor; what compiled code receives."""

    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    """``DLManagedTensor``: a ``DLTensor`` plus the deleter that releases it."""

    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", c_void_p),
        ("deleter", c_void_p),
    ]


class DLPackVersion(Structure):
    """``DLPackVersion``: the ABI version a versioned managed tensor follows."""

    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    """``DLManagedTensorVersioned`` (DLPack 1.0+): adds a version and flags."""

    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", c_void_p),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


_NUMPY_TO_DL = {
    "bool": (DL_BOOL, 8, 1),
    "int8": (DL_INT, 8, 1),
    "int16": (DL_INT, 16, 1),
    "int32": (DL_INT, 32, 1),
    "int64": (DL_INT, 64, 1),
    "uint8": (DL_UINT, 8, 1),
    "uint16": (DL_UINT, 16, 1),
    "uint32": (DL_UINT, 32, 1),
    "uint64": (DL_UINT, 64, 1),
    "float16": (DL_FLOAT, 16, 1),
    "float32": (DL_FLOAT, 32, 1),
    "float64": (DL_FLOAT, 64, 1),
    "complex64": (DL_COMPLEX, 64, 1),
    "complex128": (DL_COMPLEX, 128, 1),
}
_DL_TO_NUMPY = {dl: np.dtype(name) for name, dl in _NUMPY_TO_DL.items()}
# dlpack.h's DLDataTypeCode names, for messages about types numpy lacks.
_DL_CODE_NAMES = {
    0: "int",
    1: "uint",
    2: "float",
    3: "opaque_handle",
    4: "bfloat",
    5: "complex",
    6: "bool",
    7: "float8_e3m4",
    8: "float8_e4m3",
    9: "float8_e4m3b11fnuz",
    10: "float8_e4m3fn",
    11: "float8_e4m3fnuz",
    12: "float8_e5m2",
    13: "float8_e5m2fnuz",
    14: "float8_e8m0fnu",
    15: "float6_e2m3fn",
    16: "float6_e3m2fn",
    17: "float4_e2m1fn",
}


def dl_type_name(code: int, bits: int, lanes: int = 1) -> str:
    """A DLPack type's name as TVM spells it: "bfloat16", "float32x4".

    Example:
        >>> dl_type_name(4, 16), dl_type_name(2, 32, 4), dl_type_name(10, 8)
        ('bfloat16', 'float32x4', 'float8_e4m3fn')
    """
    name = _DL_CODE_NAMES.get(code)
    if name is None:
        name = f"type code {code}, {bits} bits"
    elif code < 7:  # the sized kinds; the float8/6/4 names carry their size
        name += str(bits)
    return name if lanes == 1 else f"{name}x{lanes}"


def dtype_to_dl(dtype) -> tuple[int, int, int]:
    """Map a numpy dtype to its DLPack ``(code, bits, lanes)``.

    Args:
        dtype: anything ``numpy.dtype`` accepts ("float32", np.int8, ...).

    Returns:
        The ``(code, bits, lanes)`` triple of the matching ``DLDataType``.

    Raises:
        TypeError: the dtype has no DLPack equivalent in ember.

    Example:
        >>> dtype_to_dl("float32")
        (2, 32, 1)
    """
    name = np.dtype(dtype).name
    try:
        return _NUMPY_TO_DL[name]
    except KeyError:
        supported = ", ".join(_NUMPY_TO_DL)
        raise EmberTypeError(
            f"unsupported dtype {name}; expected one of {supported}"
        ) from None


def dl_to_dtype(code: int, bits: int, lanes: int = 1) -> np.dtype:
    """Map a DLPack ``(code, bits, lanes)`` to the numpy dtype.

    Args:
        code: the ``DLDataTypeCode`` (0 int, 1 uint, 2 float, 5 complex, 6 bool).
        bits: bits per lane.
        lanes: vector lanes; numpy only represents 1.

    Returns:
        The numpy dtype.

    Raises:
        TypeError: the combination has no numpy equivalent (bfloat16, float8,
            vector lanes, ...); the message names it.

    Example:
        >>> dl_to_dtype(2, 32)
        dtype('float32')
    """
    try:
        return _DL_TO_NUMPY[(code, bits, lanes)]
    except KeyError:
        raise EmberTypeError(
            f"unsupported DLPack dtype {dl_type_name(code, bits, lanes)} "
            f"(code={code}, bits={bits}, lanes={lanes}): ember's arrays hold "
            "numpy's types; convert the tensor first (torch: t.float())"
        ) from None


def is_compact(shape: tuple[int, ...], strides: tuple[int, ...] | None) -> bool:
    """Whether element strides describe a compact row-major layout.

    Args:
        shape: the extents.
        strides: strides in elements, or None (DLPack's "compact").

    Returns:
        True when the strides are None or match row-major order; a stride of an
        extent-1 dimension is ignored, as is every stride of an empty tensor.

    Example:
        >>> is_compact((2, 3), (3, 1)), is_compact((2, 3), (1, 2))
        (True, False)
    """
    if strides is None or 0 in shape:
        return True
    expected = 1
    for extent, stride in zip(reversed(shape), reversed(strides), strict=True):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


# Private prototypes: `ctypes.pythonapi.PyCapsule_*` are shared objects whose
# argtypes any other library may change.
_api = ctypes.pythonapi
_capsule_is_valid = PYFUNCTYPE(c_int, py_object, c_char_p)(("PyCapsule_IsValid", _api))
capsule_pointer = PYFUNCTYPE(c_void_p, py_object, c_char_p)(
    ("PyCapsule_GetPointer", _api)
)
"""``PyCapsule_GetPointer(capsule, name)``: the address a capsule holds."""
_capsule_set_name = PYFUNCTYPE(c_int, py_object, c_void_p)(("PyCapsule_SetName", _api))
# PyCapsule_SetName keeps the pointer, so the renamed names must live forever.
_USED_NAMES = {
    b"dltensor": ctypes.create_string_buffer(b"used_dltensor"),
    b"dltensor_versioned": ctypes.create_string_buffer(b"used_dltensor_versioned"),
}
_DELETER = CFUNCTYPE(None, c_void_p)


class CapsuleTensor(NamedTuple):
    """A DLPack capsule opened but not yet consumed (see ``read_capsule``)."""

    tensor: DLTensor
    read_only: bool
    name: bytes
    managed: int
    deleter: int


class ManagedTensorOwner:
    """Owns a consumed DLPack managed tensor: calls its deleter when collected."""

    __slots__ = ("_managed", "_deleter")

    def __init__(self, managed: int, deleter: int):
        self._managed = managed
        self._deleter = _DELETER(deleter) if deleter else None

    def __del__(self):
        if self._deleter is not None:
            self._deleter(self._managed)


def read_capsule(capsule) -> CapsuleTensor:
    """Open a DLPack capsule without taking ownership of it.

    Args:
        capsule: a ``"dltensor"`` or ``"dltensor_versioned"`` PyCapsule.

    Returns:
        The tensor it holds: a view into the capsule's memory, valid only while
        the capsule (or, once consumed, its owner) is alive.

    Raises:
        BufferError: not an unconsumed DLPack capsule, or an unknown major version.

    Example:
        >>> capsule = np.zeros(3).__dlpack__()
        >>> read_capsule(capsule).tensor.ndim
        1
    """
    for name in (b"dltensor_versioned", b"dltensor"):
        if _capsule_is_valid(capsule, name):
            break
    else:
        raise BufferError(
            "expected an unconsumed DLPack capsule ('dltensor' or "
            f"'dltensor_versioned'), got {capsule!r}"
        )
    address = capsule_pointer(capsule, name)
    if name == b"dltensor":
        managed = DLManagedTensor.from_address(address)
        return CapsuleTensor(
            managed.dl_tensor, False, name, address, managed.deleter or 0
        )
    versioned = DLManagedTensorVersioned.from_address(address)
    if versioned.version.major != 1:
        raise BufferError(
            f"expected DLPack major version 1, got {versioned.version.major}"
        )
    read_only = bool(versioned.flags & FLAG_READ_ONLY)
    return CapsuleTensor(
        versioned.dl_tensor, read_only, name, address, versioned.deleter or 0
    )


def consume_capsule(capsule, opened: CapsuleTensor) -> ManagedTensorOwner:
    """Take ownership of an opened capsule's tensor, marking the capsule used.

    Args:
        capsule: the capsule passed to ``read_capsule``.
        opened: what ``read_capsule`` returned for it.

    Returns:
        An owner that releases the tensor (calls the producer's deleter) when it is
        garbage collected; keep it alive as long as the memory is used.

    Example:
        >>> cap = np.zeros(3).__dlpack__()
        >>> owner = consume_capsule(cap, read_capsule(cap))
    """
    if _capsule_set_name(capsule, ctypes.addressof(_USED_NAMES[opened.name])):
        raise BufferError("could not mark the DLPack capsule as used")
    return ManagedTensorOwner(opened.managed, opened.deleter)


VERSIONED_TENSOR_OFFSET = DLManagedTensorVersioned.dl_tensor.offset
"""Where the ``DLTensor`` starts inside a ``DLManagedTensorVersioned``."""


# --- DLPack's C exchange API (``__dlpack_c_exchange_api__``) -----------------


class DLPackExchangeAPI(Structure):
    """``DLPackExchangeAPI`` (dlpack.h, DLPack 1.x): a producer's C entry points.

    A tensor type offers it as the class attribute ``__dlpack_c_exchange_api__``,
    a PyCapsule named ``"dlpack_exchange_api"``. Only
    ``dltensor_from_py_object_no_sync`` is used here: it fills a caller-provided
    ``DLTensor`` that borrows the tensor's memory (valid while the tensor lives
    unchanged), in one C call, with no allocation.
    """

    _fields_ = [
        ("version", DLPackVersion),
        ("prev_api", c_void_p),
        ("managed_tensor_allocator", c_void_p),
        ("managed_tensor_from_py_object_no_sync", c_void_p),
        ("managed_tensor_to_py_object_no_sync", c_void_p),
        ("dltensor_from_py_object_no_sync", c_void_p),
        ("current_work_stream", c_void_p),
    ]


EXCHANGE_API_NAME = b"dlpack_exchange_api"
"""The name of the PyCapsule ``__dlpack_c_exchange_api__`` holds."""

# ``int (*)(void* py_object, DLTensor* out)``, called holding the GIL (it reads a
# Python object; on failure it returns -1 with a Python exception set, which
# PYFUNCTYPE raises). The object goes as its address, ``id(obj)`` on CPython:
# ~210 ns a call against ~290 ns through a py_object argtype.
_FILL_BY_ADDRESS = PYFUNCTYPE(c_int, c_void_p, c_void_p)
_FILL_BY_OBJECT = PYFUNCTYPE(c_int, py_object, c_void_p)
FILL_TAKES_ADDRESS = sys.implementation.name == "cpython"
"""Whether a filler takes the object's address (``id``) rather than the object."""


class ExchangeFiller(NamedTuple):
    """A tensor type's ``dltensor_from_py_object_no_sync``, ready to call."""

    fill: Callable[[Any, int], int]
    """``fill(id(obj) or obj, dltensor_address)``: 0, or raises (see above)."""
    capsule: object
    """The capsule, kept alive with the function it points into."""
    version: tuple[int, int]


_FILLERS: dict[type, ExchangeFiller | None] = {}


def exchange_filler(t: type) -> ExchangeFiller | None:
    """The exchange API's DLTensor filler of tensor type ``t``, if it has one.

    Args:
        t: a type whose instances may be passed to compiled code.

    Returns:
        The filler, or None where the type defines no
        ``__dlpack_c_exchange_api__``, the attribute is not a
        ``"dlpack_exchange_api"`` capsule, its major version is not 1, or its
        ``dltensor_from_py_object_no_sync`` is NULL (it is optional). Cached per
        type.

    Example:
        >>> exchange_filler(np.ndarray) is None  # numpy 2.x has no exchange API
        True
    """
    try:
        return _FILLERS[t]
    except KeyError:
        pass
    filler = None
    capsule = getattr(t, "__dlpack_c_exchange_api__", None)
    if capsule is not None and _capsule_is_valid(capsule, EXCHANGE_API_NAME):
        api = DLPackExchangeAPI.from_address(
            capsule_pointer(capsule, EXCHANGE_API_NAME)
        )
        address = api.dltensor_from_py_object_no_sync
        if api.version.major == 1 and address:
            prototype = _FILL_BY_ADDRESS if FILL_TAKES_ADDRESS else _FILL_BY_OBJECT
            filler = ExchangeFiller(
                prototype(address), capsule, (api.version.major, api.version.minor)
            )
    _FILLERS[t] = filler
    return filler


def dtype_word(code: int, bits: int, lanes: int = 1) -> int:
    """A ``DLDataType``'s 4 bytes read as one native-endian unsigned int.

    Example:
        >>> hex(dtype_word(2, 32)) if sys.byteorder == "little" else "0x12002"
        '0x12002'
    """
    return int.from_bytes(bytes(DLDataType(code, bits, lanes)), sys.byteorder)


DTYPE_WORDS = frozenset(dtype_word(*dl) for dl in _NUMPY_TO_DL.values())
"""The ``dtype_word`` of each DLPack type with a numpy equivalent, i.e. those
``dl_to_dtype`` accepts."""
REAL_DTYPE_WORDS = frozenset(
    dtype_word(*dl) for dl in _NUMPY_TO_DL.values() if dl[0] != DL_COMPLEX
)
"""``DTYPE_WORDS`` without the complex types."""
CPU_DEVICE_WORD = int.from_bytes(bytes(DLDevice(DL_CPU, 0)), sys.byteorder, signed=True)
"""``DLDevice(kDLCPU, 0)``'s 8 bytes read as one native-endian int64."""


def dltensor_layout(t: DLTensor) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """A DLTensor's shape and element strides (None when it declares none).

    Example:
        >>> shape = (c_int64 * 2)(2, 3)
        >>> dltensor_layout(DLTensor(None, DLDevice(1, 0), 2, DLDataType(2, 32, 1), shape))
        ((2, 3), None)
    """
    shape = tuple(t.shape[: t.ndim]) if t.ndim else ()
    strides = tuple(t.strides[: t.ndim]) if t.ndim and t.strides else None
    return shape, strides


def dltensor_is_compact(address: int) -> bool:
    """Whether the DLTensor at ``address`` is compact row-major (``is_compact``).

    Example:
        >>> shape = (c_int64 * 2)(2, 3)
        >>> t = DLTensor(None, DLDevice(1, 0), 2, DLDataType(2, 32, 1), shape)
        >>> dltensor_is_compact(ctypes.addressof(t))
        True
    """
    return is_compact(*dltensor_layout(DLTensor.from_address(address)))
