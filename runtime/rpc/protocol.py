"""The ember RPC wire format: length-prefixed binary frames.

Every message, in both directions, is one frame::

    offset  size  field
    0       4     magic b"EMRP"
    4       1     protocol version (VERSION)
    5       1     message type (MsgType)
    6       2     reserved, zero
    8       8     payload length, little-endian unsigned
    16      n     payload: u32 little-endian header length h, then h bytes of
                  UTF-8 JSON (an object), then n - 4 - h bytes of raw data

The JSON header carries names, handles, shapes and dtypes; the raw data carries
file contents and tensor bytes (C order, the dtype's native little-endian
layout). Nothing read from the wire is unpickled or evaluated: JSON is parsed
with ``json.loads`` and checked field by field, tensors are ``np.frombuffer``
of a dtype from a fixed list.

A session: the server sends HELLO (its version, limits and a random nonce);
the client answers AUTH with ``HMAC-SHA256(key, nonce)`` (or no digest when it
has no key); the server replies OK or ERROR and closes. After that each request
gets exactly one reply, OK or ERROR, except FREE, which gets none.

Arguments and return values of remote calls are JSON values: null, booleans,
numbers and strings as themselves; ``{"array": h}``, ``{"module": h}`` for the
session's objects; ``{"device": [type, id]}``; ``{"bytes": [offset, size]}`` for
a slice of the frame's raw data.
"""

import hashlib
import hmac
import json
import os
import socket
import struct
import time
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeVar, overload

from ..errors import (
    CompilerNotFoundError,
    EmberError,
    ExportError,
    FunctionNotFoundError,
    IncompatibleLibraryError,
    InvalidLibraryError,
    LibraryLoadError,
    LibraryNotFoundError,
    LinkError,
)

T = TypeVar("T")

MAGIC = b"EMRP"
VERSION = 1
HEADER = struct.Struct("<4sBBHQ")
_JSON_LENGTH = struct.Struct("<I")

DEFAULT_PORT = 9090
DEFAULT_MAX_FRAME_BYTES = 64 << 20
"""The largest payload a server accepts (``--max-frame-bytes``); clients split
files and tensors into chunks below the server's limit."""
DEFAULT_MAX_WORKSPACE_BYTES = 1 << 30
"""The most bytes of files one session may keep (``--max-workspace-bytes``)."""
DEFAULT_MAX_MEMORY_BYTES = 2 << 30
"""The most bytes of arrays one session may allocate (``--max-memory-bytes``)."""
CHUNK_BYTES = 4 << 20
"""The largest piece of a file or tensor a client sends or asks for at once."""
MAX_NAME_LENGTH = 240
"""The longest file name, in UTF-8 bytes: the file system's 255, less room for
the server's prefix of an upload in progress."""


class MsgType(IntEnum):
    """The message types. Replies are OK or ERROR; FREE has no reply."""

    HELLO = 1
    AUTH = 2
    OK = 3
    ERROR = 4
    UPLOAD = 10
    DOWNLOAD = 11
    LISTDIR = 12
    REMOVE = 13
    LOAD_MODULE = 20
    GET_FUNCTION = 21
    CALL = 22
    TIME_EVALUATOR = 23
    ALLOC = 30
    COPY_IN = 31
    COPY_OUT = 32
    FREE = 33


class RPCError(EmberError):
    """The RPC connection failed or the peer broke the protocol."""


class ConnectionClosed(RPCError):
    """The peer closed the connection between two frames."""


class FrameError(RPCError):
    """A frame that cannot be read: bad magic, another version, too large, or
    cut short. The stream has lost its frame boundaries and must be closed."""


class MessageError(RPCError, ValueError):
    """A complete frame whose content is wrong: bad JSON, a missing or mistyped
    field, an unknown message type. The session can go on."""


class RemoteError(EmberError):
    """A remote operation raised an exception type this client does not map to
    one of its own."""


@dataclass(frozen=True, slots=True)
class Message:
    type: int
    header: dict
    data: memoryview


def frame_head(type_: int, header: dict | None, data_size: int) -> bytes:
    """A frame up to its raw data: the fixed header and the JSON header."""
    text = json.dumps(header or {}, separators=(",", ":")).encode()
    length = _JSON_LENGTH.size + len(text) + data_size
    return (
        HEADER.pack(MAGIC, VERSION, type_, 0, length)
        + _JSON_LENGTH.pack(len(text))
        + text
    )


def send(
    sock: socket.socket,
    type_: int,
    header: dict | None = None,
    data: bytes | memoryview = b"",
) -> None:
    """Send one frame; ``data`` may be any bytes-like object (sent without a copy)."""
    size = memoryview(data).nbytes
    if size and size < 1 << 16:
        sock.sendall(frame_head(type_, header, size) + bytes(data))
        return
    sock.sendall(frame_head(type_, header, size))
    if size:
        sock.sendall(data)


def _read_into(
    sock: socket.socket,
    view: memoryview,
    got: int,
    what: str,
    deadline: float | None,
) -> None:
    """Fill ``view[got:]`` from the socket; past ``deadline`` (monotonic), an
    incomplete read is a FrameError. Each read waits at most the socket's own
    timeout, so the deadline costs no system call."""
    stop = len(view)
    while got < stop:
        try:
            n = sock.recv_into(view[got:], min(stop - got, 1 << 20))
        except TimeoutError:
            if deadline is None:
                raise
            n = -1
        if n == 0:
            raise FrameError(
                f"connection closed after {got} of {stop} bytes of a {what}"
            )
        got += max(n, 0)
        if got < stop and deadline is not None and time.monotonic() > deadline:
            raise FrameError(f"a {what} was still incomplete at its deadline")


def receive(
    sock: socket.socket, max_bytes: int, frame_timeout: float | None = None
) -> Message:
    """Read one frame.

    The first byte may take as long as the socket's timeout allows; with
    ``frame_timeout``, a frame still incomplete that many seconds after its
    first byte is refused at its next read (a peer cannot hold a reader by
    sending a byte now and then).

    Raises:
        ConnectionClosed: end of stream before a frame began.
        FrameError: a frame that cannot be read, or not whole by the frame
            timeout (the stream must be closed).
        MessageError: a complete frame with a malformed payload.
        TimeoutError: no frame began within the socket's timeout.
    """
    head = memoryview(bytearray(HEADER.size))
    got = sock.recv_into(head, HEADER.size)
    if got == 0:
        raise ConnectionClosed("the peer closed the connection")
    deadline = None if frame_timeout is None else time.monotonic() + frame_timeout
    _read_into(sock, head, got, "frame header", deadline)
    type_, length = parse_head(head, max_bytes)
    payload = memoryview(bytearray(length))
    _read_into(sock, payload, 0, "frame", deadline)
    return Message(type_, *split_payload(payload))


def parse_head(head: bytes | bytearray | memoryview, max_bytes: int) -> tuple[int, int]:
    """A frame's fixed header: its message type and payload length.

    Raises:
        FrameError: bad magic, another version, or a payload over ``max_bytes``.
    """
    magic, version, type_, _, length = HEADER.unpack(head)
    if magic != MAGIC:
        raise FrameError(f"not an ember RPC frame (magic {bytes(magic)!r})")
    if version != VERSION:
        raise FrameError(
            f"protocol version {version} is not supported; this side speaks {VERSION}"
        )
    if length > max_bytes:
        raise FrameError(
            f"a frame of {length} bytes exceeds the limit of {max_bytes} bytes"
        )
    return type_, length


def split_payload(payload: memoryview) -> tuple[dict, memoryview]:
    """A payload's JSON header and raw data.

    Raises:
        MessageError: no header length, a length past the end, or a header
            that is not a JSON object.
    """
    if len(payload) < _JSON_LENGTH.size:
        raise MessageError(f"a payload of {len(payload)} bytes has no header length")
    (size,) = _JSON_LENGTH.unpack(payload[: _JSON_LENGTH.size])
    end = _JSON_LENGTH.size + size
    if end > len(payload):
        raise MessageError(
            f"the JSON header claims {size} bytes, the payload has {len(payload) - 4}"
        )
    try:
        header = json.loads(bytes(payload[_JSON_LENGTH.size : end]))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise MessageError(f"the message header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise MessageError(
            f"the message header must be a JSON object, got {type(header).__name__}"
        )
    return header, payload[end:]


@overload
def field(header: dict, name: str, kind: type[T]) -> T: ...
@overload
def field(header: dict, name: str, kind: tuple[type, ...]) -> Any: ...
def field(header: dict, name: str, kind: type | tuple[type, ...]) -> Any:
    """``header[name]``, checked to be of ``kind`` (bool never counts as int)."""
    if name not in header:
        raise MessageError(f"the message lacks the field {name!r}")
    value = header[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise MessageError(
            f"field {name!r}: expected {expected}, got {type(value).__name__}"
        )
    return value


def count(header: dict, name: str) -> int:
    """A non-negative integer field."""
    value = field(header, name, int)
    if value < 0:
        raise MessageError(
            f"field {name!r}: expected a non-negative integer, got {value}"
        )
    return value


def expected_digest(key: str, nonce: bytes) -> str:
    """What AUTH carries: HMAC-SHA256 of the HELLO nonce under the key, in hex."""
    return hmac.new(key.encode(), nonce, hashlib.sha256).hexdigest()


def check_name(name: object) -> str:
    """A file name of the session's workspace: a plain name, no directory.

    Raises:
        ValueError: an empty name, one with a path separator or NUL, ".", "..",
            a name starting with "." (reserved for the server), one that is not
            valid UTF-8 (a lone surrogate) or longer than MAX_NAME_LENGTH bytes.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a file name must be a non-empty string, got {name!r}")
    bad = ("/", "\\", "\0") + ((os.altsep,) if os.altsep else ())
    if any(c in name for c in bad) or os.path.isabs(name):
        raise ValueError(f"file name {name!r} must be a plain name without a directory")
    if name.startswith("."):
        raise ValueError(f"file name {name!r} must not start with '.'")
    try:
        size = len(name.encode())
    except UnicodeEncodeError:
        raise ValueError(f"file name {name!r} is not valid UTF-8") from None
    if size > MAX_NAME_LENGTH:
        raise ValueError(
            f"file name of {size} bytes exceeds the limit of {MAX_NAME_LENGTH}"
        )
    return name


_ERRORS: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        AttributeError,
        RuntimeError,
        ArithmeticError,
        ZeroDivisionError,
        OverflowError,
        MemoryError,
        NotImplementedError,
        FileNotFoundError,
        FileExistsError,
        PermissionError,
        OSError,
        EmberError,
        FunctionNotFoundError,
        LibraryLoadError,
        LibraryNotFoundError,
        InvalidLibraryError,
        IncompatibleLibraryError,
        ExportError,
        LinkError,
        CompilerNotFoundError,
        RPCError,
        MessageError,
        RemoteError,
    )
}


def error_header(error: BaseException) -> dict:
    """An ERROR reply's header for ``error``: its type's name and message."""
    message = (
        str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    )
    return {"error": type(error).__name__, "message": message}


def error_from(header: dict) -> Exception:
    """The exception an ERROR reply stands for: the same type when it is one of
    a fixed list of builtin and ember types, else ``RemoteError``."""
    name = header.get("error")
    message = header.get("message")
    message = message if isinstance(message, str) else repr(message)
    cls = _ERRORS.get(name) if isinstance(name, str) else None
    if cls is None:
        return RemoteError(f"remote {name}: {message}")
    return cls(message)
