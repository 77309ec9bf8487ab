"""A model's parameters as bytes: the param dict file format, and the packed blob
a compiled model reads its weights from.

**Param dict** (``save_param_dict`` / ``load_param_dict``, TVM's names): a
name → array mapping in one little-endian binary document::

    offset  size  field
    0       8     magic b"EMBERPRM"
    8       4     version (uint32, 2)
    12      4     count (uint32): the number of entries
    16            count entries, each:
                    uint32 name length, name (UTF-8, non-empty, unique)
                    uint16 dtype length, dtype (ASCII numpy name: "float32", ...)
                    uint32 ndim, ndim x int64 extents (>= 0)
                    uint64 nbytes (= product of extents x element size)
                    zero padding to the next multiple of 64 from the start
                    nbytes of data, row-major, little-endian elements
    end-4   4     CRC-32 (zlib's, uint32) of every byte before it

Data starts 64-byte aligned in the file, so a reader that maps the file can view
every array in place. The checksum is verified before anything else is read: a
changed bit anywhere, a lost or an added byte is an ``InvalidParamsError``
(an ``EmberError`` and a ``ValueError``), never weights loaded silently (CRC-32
catches every error of up to 3 bits and every burst of up to 32 bits; it is
no defence against deliberate changes, which a signature would need). Version 1
(ember's first format: the same without the checksum; ``ember-compile
--params`` wrote it) is still read, unchecked: saving it again upgrades it. A
single flipped bit cannot turn version 2 into 1. Every length is checked
against what is left, so a document that is truncated, or carries a valid
checksum over invalid fields, is an ``InvalidParamsError`` saying where,
never a crash or a huge allocation.

**Packed params** (``pack_params``): the blob a compiled model's ``default_run``
takes as its ``params`` argument, each param at the offset its metadata gives
(``{"name": {"offset", "shape", "dtype"}}``, offsets 64-byte aligned), zeros
between. ``param_layout`` makes such a layout.
"""

import math
import struct
import zlib
from collections.abc import Mapping

import numpy as np

from .errors import EmberTypeError, EmberValueError, InvalidParamsError
from .ndarray import NDArray, empty

MAGIC = b"EMBERPRM"
VERSION = 2
"""The version ``save_param_dict`` writes; ``load_param_dict`` reads 1 and 2."""
ALIGNMENT = 64
"""Byte alignment of every array's data in a param dict and in a packed blob."""

DTYPES = frozenset(
    ["bool", "float16", "float32", "float64"]
    + [f"{u}int{b}" for u in ("", "u") for b in (8, 16, 32, 64)]
)
"""The dtypes a param may have."""

_HEADER = struct.Struct("<8sII")
_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")


def _as_numpy(name: str, value) -> np.ndarray:
    if isinstance(value, NDArray):
        return value.numpy()
    if isinstance(value, np.ndarray):
        arr = value
    elif hasattr(value, "__dlpack__"):
        arr = np.from_dlpack(value)
    else:
        raise EmberTypeError(
            f"param {name!r}: expected a numpy array or NDArray, "
            f"got {type(value).__name__}"
        )
    if arr.dtype.name not in DTYPES:
        raise EmberTypeError(
            f"param {name!r}: unsupported dtype {arr.dtype}; expected one of "
            f"{', '.join(sorted(DTYPES))}"
        )
    return arr


def _pad(n: int) -> int:
    return -n % ALIGNMENT


def save_param_dict(params: Mapping[str, "np.ndarray | NDArray"]) -> bytes:
    """Serialize named arrays into one param dict document.

    Args:
        params: name → numpy array or NDArray (any layout; written row-major).

    Returns:
        The bytes of the document (see the module docstring for the format).

    Raises:
        TypeError: a name is not a non-empty string, or an array's dtype is
            not supported.

    Example:
        >>> blob = save_param_dict({"w": np.ones((2, 3), "float32")})
        >>> load_param_dict(blob)["w"].shape
        (2, 3)
    """
    chunks = [_HEADER.pack(MAGIC, VERSION, len(params))]
    size = _HEADER.size
    for name, value in params.items():
        if not isinstance(name, str) or not name:
            raise EmberTypeError(f"param names are non-empty strings, got {name!r}")
        arr = _as_numpy(name, value)
        if arr.dtype.name not in DTYPES:
            raise EmberTypeError(f"param {name!r}: unsupported dtype {arr.dtype}")
        data = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
        encoded, dtype = name.encode(), arr.dtype.name.encode()
        head = b"".join(
            [
                _U32.pack(len(encoded)),
                encoded,
                _U16.pack(len(dtype)),
                dtype,
                _U32.pack(arr.ndim),
                struct.pack(f"<{arr.ndim}q", *arr.shape),
                _U64.pack(data.nbytes),
            ]
        )
        size += len(head)
        padding = b"\0" * _pad(size)
        chunks += [head, padding, data.tobytes()]
        size += len(padding) + data.nbytes
    checksum = 0
    for chunk in chunks:
        checksum = zlib.crc32(chunk, checksum)
    chunks.append(_U32.pack(checksum))
    return b"".join(chunks)


class _Reader:
    """Reads fields off a buffer, refusing to run past its end."""

    def __init__(self, data: memoryview):
        self.data, self.at = data, 0

    def take(self, n: int, what: str) -> memoryview:
        if n > len(self.data) - self.at:
            raise InvalidParamsError(
                f"truncated param dict: {what} needs {n} bytes at offset "
                f"{self.at}, only {len(self.data) - self.at} left"
            )
        chunk = self.data[self.at : self.at + n]
        self.at += n
        return chunk

    def unpack(self, fmt: struct.Struct, what: str) -> int:
        return fmt.unpack(self.take(fmt.size, what))[0]


def load_param_dict(data: "bytes | bytearray | memoryview") -> dict[str, NDArray]:
    """Read a param dict document written by ``save_param_dict``.

    Args:
        data: the document's bytes.

    Returns:
        name → NDArray (each a fresh, 64-byte aligned copy), in file order.

    Raises:
        InvalidParamsError: (an EmberError and a ValueError) not a param
            dict (bad magic), another version, a checksum that does not match
            (a changed, lost or added byte), or a truncated or corrupt
            document; the message says which entry and field.
        TypeError: ``data`` is not bytes-like.

    Example:
        >>> load_param_dict(b"not params")
        Traceback (most recent call last):
        ...
        ember.runtime.errors.InvalidParamsError: not an ember param dict: expected magic b'EMBERPRM', got b'not para'
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise EmberTypeError(f"expected bytes, got {type(data).__name__}")
    view = memoryview(data).cast("B")
    if bytes(view[:8]) != MAGIC:
        raise InvalidParamsError(
            f"not an ember param dict: expected magic {MAGIC!r}, "
            f"got {bytes(view[:8])!r}"
        )
    _, version, count = _HEADER.unpack(_Reader(view).take(_HEADER.size, "the header"))
    if version not in (1, VERSION):
        raise InvalidParamsError(
            f"param dict version {version} is not supported (this runtime "
            f"reads versions 1 and {VERSION}), or the file is damaged"
        )
    if version >= 2:
        view = _checked(view)
    reader = _Reader(view)
    reader.take(_HEADER.size, "the header")
    result: dict[str, NDArray] = {}
    for i in range(count):
        where = f"entry {i}"
        length = reader.unpack(_U32, f"{where}: the name length")
        try:
            name = bytes(reader.take(length, f"{where}: the name")).decode()
        except UnicodeDecodeError:
            raise InvalidParamsError(
                f"corrupt param dict: {where}: name is not UTF-8"
            ) from None
        if not name:
            raise InvalidParamsError(f"corrupt param dict: {where} has an empty name")
        if name in result:
            raise InvalidParamsError(
                f"corrupt param dict: param {name!r} appears twice"
            )
        where = f"param {name!r}"
        dtype_length = reader.unpack(_U16, f"{where}: the dtype length")
        dtype = bytes(reader.take(dtype_length, f"{where}: the dtype"))
        dtype_name = dtype.decode("ascii", "replace")
        if dtype_name not in DTYPES:
            raise InvalidParamsError(
                f"corrupt param dict: {where}: unknown dtype {dtype!r}"
            )
        ndim = reader.unpack(_U32, f"{where}: ndim")
        if ndim > 32:
            raise InvalidParamsError(
                f"corrupt param dict: {where}: ndim {ndim} exceeds 32"
            )
        shape = struct.unpack(f"<{ndim}q", reader.take(8 * ndim, f"{where}: shape"))
        if any(n < 0 for n in shape):
            raise InvalidParamsError(
                f"corrupt param dict: {where}: negative shape {shape}"
            )
        nbytes = reader.unpack(_U64, f"{where}: nbytes")
        itemsize = np.dtype(dtype_name).itemsize
        expected = itemsize
        for n in shape:
            expected *= n
        if nbytes != expected:
            raise InvalidParamsError(
                f"corrupt param dict: {where}: {nbytes} bytes of data for "
                f"{dtype_name} {shape}, expected {expected}"
            )
        reader.take(_pad(reader.at), f"{where}: padding")
        raw = reader.take(nbytes, f"{where}: data")
        array = empty(shape, dtype_name)
        np.asarray(array).reshape(-1).view("uint8")[:] = np.frombuffer(raw, "uint8")
        if not np.little_endian:  # pragma: no cover - big-endian hosts
            array.numpy().byteswap(inplace=True)
        result[name] = array
    if reader.at != len(view):
        raise InvalidParamsError(
            f"corrupt param dict: {len(view) - reader.at} bytes after the last "
            f"of {count} entries"
        )
    return result


def _checked(view: memoryview) -> memoryview:
    """The document without its CRC-32, once the CRC-32 matches."""
    if len(view) < _HEADER.size + _U32.size:
        raise InvalidParamsError(
            f"truncated param dict: {len(view)} bytes, shorter than a header "
            "and a checksum"
        )
    body = view[: -_U32.size]
    recorded = _U32.unpack(view[-_U32.size :])[0]
    actual = zlib.crc32(body)
    if actual != recorded:
        raise InvalidParamsError(
            f"damaged param dict: the CRC-32 of its {len(body)} bytes is "
            f"{actual:#010x}, its last 4 bytes record {recorded:#010x}: a byte "
            "was changed, or the file was cut short or extended"
        )
    return body


def param_layout(
    params: Mapping[str, "np.ndarray | NDArray"],
) -> tuple[dict[str, dict], int]:
    """Where each param goes in a packed blob: in order, each at the next
    64-byte aligned offset.

    Args:
        params: name → array (only shapes and dtypes are used).

    Returns:
        ``(layout, nbytes)``: the metadata's ``"params"`` object
        (``{name: {"offset", "shape", "dtype"}}``) and the blob's size, a
        multiple of 64.

    Example:
        >>> param_layout({"a": np.zeros(3, "float32"), "b": np.zeros(2, "int64")})
        ({'a': {'offset': 0, 'shape': [3], 'dtype': 'float32'}, 'b': {'offset': 64, 'shape': [2], 'dtype': 'int64'}}, 128)
    """
    layout, offset = {}, 0
    for name, value in params.items():
        arr = _as_numpy(name, value)
        layout[name] = {
            "offset": offset,
            "shape": list(arr.shape),
            "dtype": arr.dtype.name,
        }
        offset += arr.nbytes + _pad(arr.nbytes)
    return layout, offset


def _layout_size(layout: Mapping[str, Mapping]) -> int:
    end = 0
    for entry in layout.values():
        size = np.dtype(entry["dtype"]).itemsize * math.prod(entry["shape"])
        end = max(end, entry["offset"] + size)
    return end + _pad(end)


def check_layout(layout: object, nbytes: int | None = None) -> None:
    """Raise ValueError unless ``layout`` is a valid params layout: each entry
    ``{"offset": int >= 0, multiple of 64, "shape": [int >= 0...], "dtype": str}``,
    inside ``nbytes`` when given, no two overlapping."""
    if not isinstance(layout, dict):
        raise EmberValueError(
            f'"params" must be an object, got {type(layout).__name__}'
        )
    spans = []
    for name, entry in layout.items():
        where = f"param {name!r}"
        if not isinstance(entry, dict):
            raise EmberValueError(f"{where} must be an object")
        offset, shape, dtype = (
            entry.get("offset"),
            entry.get("shape"),
            entry.get("dtype"),
        )
        if (
            not isinstance(offset, int)
            or isinstance(offset, bool)
            or offset < 0
            or offset % ALIGNMENT
        ):
            raise EmberValueError(
                f'{where}: "offset" must be a non-negative multiple of '
                f"{ALIGNMENT}, got {offset!r}"
            )
        if not isinstance(shape, list) or not all(_is_int(n) and n >= 0 for n in shape):
            raise EmberValueError(
                f'{where}: "shape" must be a list of extents, got {shape!r}'
            )
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise EmberValueError(
                f'{where}: "dtype" must be a dtype name, got {dtype!r}'
            )
        size = np.dtype(dtype).itemsize * math.prod(shape)  # exact, no overflow
        if nbytes is not None and offset + size > nbytes:
            raise EmberValueError(
                f"{where}: bytes [{offset}, {offset + size}) are past the end of "
                f"the {nbytes}-byte params blob"
            )
        spans.append((offset, offset + size, name))
    spans.sort()
    for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < end:
            raise EmberValueError(f"params {a!r} and {b!r} overlap in the params blob")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def pack_params(
    params: Mapping[str, "np.ndarray | NDArray"],
    layout: Mapping[str, Mapping],
    nbytes: int | None = None,
) -> bytes:
    """Lay params out in one blob at the offsets of ``layout``.

    Args:
        params: name → array; exactly the names of ``layout``, each with the
            layout's shape and dtype (a strategy's packed weights).
        layout: the metadata's ``"params"`` object, e.g. from ``param_layout``.
        nbytes: the blob's size (the metadata's ``params_bytes``); by default
            the end of the last param, rounded up to 64.

    Returns:
        The blob, zeros between params.

    Raises:
        ValueError: a param missing or not in the layout (all of them named),
            a shape or dtype unlike the layout's, or a layout that does not fit.

    Example:
        >>> w = np.arange(3, dtype="float32")
        >>> layout, size = param_layout({"w": w})
        >>> np.frombuffer(pack_params({"w": w}, layout), "float32")[:4]
        array([0., 1., 2., 0.], dtype=float32)
    """
    if nbytes is None:
        nbytes = _layout_size(layout)
    check_layout(dict(layout), nbytes)
    missing = [n for n in layout if n not in params]
    extra = [n for n in params if n not in layout]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(map(repr, missing))}")
        if extra:
            parts.append(f"not in the layout: {', '.join(map(repr, extra))}")
        raise EmberValueError(f"pack_params: {'; '.join(parts)}")
    blob = np.zeros(nbytes, "uint8")
    for name, entry in layout.items():
        arr = _as_numpy(name, params[name])
        if list(arr.shape) != list(entry["shape"]) or arr.dtype.name != entry["dtype"]:
            raise EmberValueError(
                f"pack_params: param {name!r}: expected {entry['dtype']} "
                f"{tuple(entry['shape'])}, got {arr.dtype.name} {arr.shape}"
            )
        data = np.ascontiguousarray(arr, arr.dtype.newbyteorder("<"))
        offset = entry["offset"]
        blob[offset : offset + data.nbytes] = data.reshape(-1).view("uint8")
    return blob.tobytes()


__all__ = [
    "ALIGNMENT",
    "check_layout",
    "load_param_dict",
    "pack_params",
    "param_layout",
    "save_param_dict",
]
