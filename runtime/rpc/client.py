"""The RPC client: a session with a remote ember runtime.

``connect`` returns an ``RPCSession``: files go up and down, libraries are
loaded there, arrays live there (``ember.runtime.array(x, device=
remote.cpu(0))``) and functions run there on them. Everything a session hands
out (``RemoteNDArray``, ``RemoteModule``, ``RemoteFunction``) is a handle to
an object in the server's session; dropping the last reference frees it there.
"""

import collections
import os
import socket
import threading
import weakref
from collections.abc import Callable, Sequence

import numpy as np

from ..dlpack import DL_CPU, dtype_to_dl
from ..errors import EmberError, FunctionNotFoundError
from ..ndarray import NDArray, _numpy_view, array
from ..ndarray import device as _local_device
from ..profiling import BenchmarkResult
from . import protocol as p
from .protocol import MsgType, RPCError

RPC_SESSION_MASK = 128
"""Added to a device type for a device of an RPC session, as TVM does: code
that checks for ``cpu`` (type 1) refuses a remote device (type 129)."""

_REPLY_LIMIT = 1 << 32


def connect(
    host: str = "127.0.0.1",
    port: int = p.DEFAULT_PORT,
    key: str | None = None,
    timeout: float | None = 60.0,
) -> "RPCSession":
    """Open a session with an ember RPC server.

    Args:
        host: the server's address.
        port: its port.
        key: the server's shared key, if it has one. It is never sent: the
            client proves it knows it by an HMAC of a one-time nonce.
        timeout: seconds to wait for the connection and for each reply (a remote
            call or timing included); None waits forever.

    Returns:
        The session; close it with ``close()`` or a ``with`` block.

    Raises:
        RPCError: the server cannot be reached, refused the key, or does not
            speak this protocol.

    Example:
        >>> remote = connect("127.0.0.1", 9090)  # doctest: +SKIP
        >>> remote.upload("vecadd.so")  # doctest: +SKIP
        >>> f = remote.load_module("vecadd.so")["vecadd"]  # doctest: +SKIP
    """
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        raise RPCError(f"cannot connect to {host}:{port}: {e.strerror or e}") from None
    return RPCSession(sock, f"{host}:{port}", key, timeout)


class RPCSession:
    """A connection to an ember RPC server (made by ``connect``).

    Attributes:
        address: "host:port" of the server.
        info: what the server said of itself: "machine", "system", its limits.
    """

    def __init__(
        self, sock: socket.socket, address: str, key: str | None, timeout: float | None
    ):
        self.address = address
        self._sock: socket.socket | None = sock
        self._lock = threading.Lock()
        self._dead: collections.deque[int] = collections.deque()  # to FREE
        sock.settimeout(timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.info = self._handshake(key)
        except BaseException:
            self.close()
            raise
        self._chunk = max(1, min(p.CHUNK_BYTES, self.info["max_frame_bytes"] - 65536))

    def _handshake(self, key: str | None) -> dict:
        try:
            hello = p.receive(self._socket(), _REPLY_LIMIT)
            if hello.type == MsgType.ERROR:
                raise p.error_from(hello.header)
            if hello.type != MsgType.HELLO:
                raise RPCError(f"expected HELLO, got message type {hello.type}")
            nonce = bytes.fromhex(p.field(hello.header, "nonce", str))
            p.count(hello.header, "max_frame_bytes")
            if hello.header.get("key_required") and key is None:
                raise RPCError(
                    f"the server at {self.address} requires a key; pass key="
                )
            digest = None if key is None else p.expected_digest(key, nonce)
            p.send(self._socket(), MsgType.AUTH, {"digest": digest})
            reply = p.receive(self._socket(), _REPLY_LIMIT)
        except (OSError, p.FrameError, p.ConnectionClosed, ValueError) as e:
            raise RPCError(f"handshake with {self.address} failed: {e}") from None
        if reply.type == MsgType.ERROR:
            raise p.error_from(reply.header)
        return hello.header

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise RPCError(f"the session with {self.address} is closed")
        return self._sock

    def close(self) -> None:
        """End the session: the server removes its workspace and objects."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def __enter__(self) -> "RPCSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._sock is None else self.info.get("machine", "?")
        return f"<RPCSession {self.address} ({state})>"

    def _request(
        self, type_: int, header: dict | None = None, data: bytes | memoryview = b""
    ) -> tuple[dict, memoryview]:
        with self._lock:
            sock = self._socket()
            try:
                if self._dead:  # pops: a finalizer may append meanwhile
                    dead = [self._dead.popleft() for _ in range(len(self._dead))]
                    p.send(sock, MsgType.FREE, {"handles": dead})
                p.send(sock, type_, header, data)
                reply = p.receive(sock, _REPLY_LIMIT)
            except (OSError, p.FrameError, p.ConnectionClosed, p.MessageError) as e:
                self.close()
                request = MsgType(type_).name
                if isinstance(e, TimeoutError):
                    why = f"no reply to {request} within the timeout"
                elif isinstance(e, p.ConnectionClosed):
                    why = (
                        f"the server closed the connection during {request} (if "
                        "that ran a library's code, its session may have crashed: "
                        "the server's log says)"
                    )
                else:
                    why = f"connection lost during {request}: {e}"
                raise RPCError(
                    f"{self.address}: {why}; the session is closed"
                ) from None
        if reply.type == MsgType.ERROR:
            raise p.error_from(reply.header)
        if reply.type != MsgType.OK:
            raise RPCError(f"unexpected reply type {reply.type}")
        return reply.header, reply.data

    def _release(self, handle: int) -> None:
        if self._sock is not None:
            self._dead.append(handle)

    # Files.

    def upload(self, path: str | os.PathLike, target_name: str | None = None) -> None:
        """Copy a local file into the session's workspace.

        Args:
            path: the local file.
            target_name: its name there (default: the local base name); a plain
                name, no directory.

        Raises:
            ValueError: a name with a directory in it.
            RPCError: the workspace limit would be exceeded.
        """
        name = p.check_name(
            target_name if target_name is not None else os.path.basename(path)
        )
        with open(path, "rb") as f:
            offset = 0
            while True:
                data = f.read(self._chunk)
                last = len(data) < self._chunk
                self._request(
                    MsgType.UPLOAD, {"name": name, "offset": offset, "last": last}, data
                )
                offset += len(data)
                if last:
                    return

    def download(self, name: str) -> bytes:
        """The contents of a file in the session's workspace."""
        parts, total, offset = [], None, 0
        while total is None or offset < total:
            header, data = self._request(
                MsgType.DOWNLOAD, {"name": name, "offset": offset, "size": self._chunk}
            )
            total = p.count(header, "total")
            if not data and offset < total:
                raise RPCError(
                    f"download of {name!r} stopped at {offset} of {total} bytes"
                )
            parts.append(bytes(data))
            offset += len(data)
        return b"".join(parts)

    def listdir(self) -> list[str]:
        """The names of the files in the session's workspace."""
        header, _ = self._request(MsgType.LISTDIR)
        return list(p.field(header, "files", list))

    def remove(self, name: str) -> None:
        """Delete a file of the session's workspace."""
        self._request(MsgType.REMOVE, {"name": name})

    def load_module(self, name: str) -> "RemoteModule":
        """Load an uploaded library (``.so``, or ``.tar`` if the server has a C
        compiler) and return it as a module whose functions run there."""
        header, _ = self._request(MsgType.LOAD_MODULE, {"name": name})
        module = self._value(header)
        if not isinstance(module, RemoteModule):
            raise RPCError(f"load_module({name!r}): the server replied {header!r:.80}")
        return module

    # Devices and arrays.

    def cpu(self, dev_id: int = 0) -> "RemoteDevice":
        """The server's CPU, for ``ember.runtime.array(x, device=...)`` and
        ``empty(..., device=...)``."""
        return RemoteDevice(self, DL_CPU, dev_id)

    def device(self, dev_type: str | int, dev_id: int = 0) -> "RemoteDevice":
        """A device of the server by name or type code (only "cpu" serves)."""
        local = _local_device(dev_type, dev_id)
        return RemoteDevice(self, local.device_type, local.device_id)

    def empty(self, shape, dtype, device: "RemoteDevice") -> "RemoteNDArray":
        """An uninitialized array on the server (``ember.runtime.empty`` calls
        this for a remote device)."""
        dtype = np.dtype(dtype)
        dtype_to_dl(dtype)
        shape = tuple(int(n) for n in shape)
        header, _ = self._request(
            MsgType.ALLOC,
            {
                "shape": list(shape),
                "dtype": dtype.name,
                "device": [device.base_type, device.device_id],
            },
        )
        return RemoteNDArray(self, p.count(header, "array"), shape, dtype.name, device)

    def array(self, data: np.ndarray, device: "RemoteDevice") -> "RemoteNDArray":
        """A copy of ``data`` on the server (``ember.runtime.array`` calls this
        for a remote device)."""
        out = self.empty(data.shape, data.dtype, device)
        out.copyfrom(data)
        return out

    def _write(self, handle: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8).data
        for offset in range(0, len(raw), self._chunk):
            self._request(
                MsgType.COPY_IN,
                {"array": handle, "offset": offset},
                raw[offset : offset + self._chunk],
            )

    def _read(self, handle: int, nbytes: int) -> bytearray:
        out = bytearray(nbytes)
        offset = 0
        while offset < nbytes:
            _, data = self._request(
                MsgType.COPY_OUT,
                {"array": handle, "offset": offset, "size": nbytes - offset},
            )
            if not data:
                raise RPCError(f"array read stopped at {offset} of {nbytes} bytes")
            out[offset : offset + len(data)] = data
            offset += len(data)
        return out

    # Values crossing the wire.

    def _arg(self, value, index: int, data: list[bytes], offset: list[int]):
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, np.integer | np.floating):
            return value.item()
        if isinstance(value, RemoteNDArray | RemoteModule | RemoteDevice):
            if value.session is not self:
                raise EmberError(
                    f"argument {index}: {value!r} belongs to another RPC session"
                )
            if isinstance(value, RemoteDevice):
                return {"device": [value.base_type, value.device_id]}
            return {
                "array" if isinstance(value, RemoteNDArray) else "module": value.handle
            }
        if isinstance(value, bytes | bytearray | memoryview):
            blob = bytes(value)
            data.append(blob)
            offset[0] += len(blob)
            return {"bytes": [offset[0] - len(blob), len(blob)]}
        if isinstance(value, np.ndarray | NDArray) or hasattr(value, "__dlpack__"):
            raise TypeError(
                f"argument {index}: a local {type(value).__name__} cannot be passed to a "
                f"remote function; copy it there first: "
                f"ember.runtime.array(x, device=remote.cpu(0))"
            )
        raise TypeError(
            f"argument {index}: a {type(value).__name__} cannot be sent over RPC"
        )

    def _args(self, args: Sequence) -> tuple[list, bytes]:
        data: list[bytes] = []
        offset = [0]
        encoded = [self._arg(a, i, data, offset) for i, a in enumerate(args)]
        return encoded, b"".join(data)

    def _value(self, value):
        if not isinstance(value, dict):
            return value
        if "array" in value:
            shape = tuple(p.field(value, "shape", list))
            return RemoteNDArray(
                self,
                p.count(value, "array"),
                shape,
                p.field(value, "dtype", str),
                self.cpu(),
            )
        if "module" in value:
            return RemoteModule(
                self,
                p.count(value, "module"),
                p.field(value, "type_key", str),
                value.get("entry"),
                [n for n in value.get("functions", []) if isinstance(n, str)],
            )
        raise RPCError(f"cannot decode a reply value {value!r:.80}")


class RemoteDevice:
    """A device of an RPC session (``remote.cpu(0)``).

    Attributes:
        session: the RPCSession.
        device_type: ``base_type + RPC_SESSION_MASK``, so local code that
            expects a local cpu refuses it.
        base_type, device_id: the device on the server.
    """

    __slots__ = ("session", "base_type", "device_id")

    def __init__(self, session: RPCSession, base_type: int, device_id: int):
        self.session = session
        self.base_type = base_type
        self.device_id = device_id

    @property
    def device_type(self) -> int:
        return self.base_type + RPC_SESSION_MASK

    @property
    def rpc_session(self) -> RPCSession:
        return self.session

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, RemoteDevice)
            and other.session is self.session
            and (other.base_type, other.device_id) == (self.base_type, self.device_id)
        )

    def __hash__(self) -> int:
        return hash((id(self.session), self.base_type, self.device_id))

    def __repr__(self) -> str:
        name = "cpu" if self.base_type == DL_CPU else f"device{self.base_type}"
        return f"remote[{self.session.address}].{name}({self.device_id})"


class RemoteNDArray:
    """An array in an RPC session's memory.

    ``numpy()`` copies it here, ``copyfrom`` copies into it; pass it to remote
    functions as you would an NDArray to local ones.

    Example:
        >>> a = ember.runtime.array(x, device=remote.cpu(0))  # doctest: +SKIP
        >>> f(a, b, c); c.numpy()  # doctest: +SKIP
    """

    def __init__(
        self,
        session: RPCSession,
        handle: int,
        shape: tuple,
        dtype: str,
        device: RemoteDevice,
    ):
        self.session = session
        self.handle = handle
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        weakref.finalize(self, session._release, handle)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def numpy(self) -> np.ndarray:
        """A local copy of the array's contents."""
        raw = self.session._read(self.handle, self.nbytes)
        return np.frombuffer(raw, self.dtype).reshape(self.shape)

    def copyfrom(self, source) -> "RemoteNDArray":
        """Copy data into the array, as ``NDArray.copyfrom`` does.

        Args:
            source: an NDArray, RemoteNDArray, numpy array or DLPack tensor of
                the same shape and dtype, or a list (converted to the dtype).

        Raises:
            ValueError: the shape or the dtype differs.
        """
        if isinstance(source, RemoteNDArray | NDArray):
            src = source.numpy()
        elif isinstance(source, np.ndarray):
            src = source
        elif hasattr(source, "__dlpack__"):
            src = _numpy_view(source, "copyfrom")
        else:
            src = np.asarray(source, dtype=self.dtype)
        if src.shape != self.shape:
            raise ValueError(
                f"copyfrom: expected shape {self.shape}, got shape {src.shape}"
            )
        if src.dtype.name != self.dtype:
            raise ValueError(
                f"copyfrom: expected dtype {self.dtype}, got dtype {src.dtype.name}"
            )
        self.session._write(self.handle, src)
        return self

    def copyto(self, target):
        """Copy into ``target`` (an NDArray, RemoteNDArray or writeable numpy
        array of the same shape and dtype), or into new memory on a device
        (local or remote).

        Returns:
            The target array, or the new copy.
        """
        if isinstance(target, RemoteNDArray | NDArray):
            return target.copyfrom(self.numpy())
        if isinstance(target, np.ndarray):
            if (target.shape, target.dtype.name) != (self.shape, self.dtype):
                raise ValueError(
                    f"copyto: expected a {self.dtype} array of shape {self.shape}, "
                    f"got {target.dtype.name} {target.shape}"
                )
            np.copyto(target, self.numpy())
            return target
        return array(self.numpy(), device=target)

    def __repr__(self) -> str:
        return f"<RemoteNDArray {self.dtype} {self.shape} on {self.device!r}>"


class RemoteFunction:
    """A function of a remote module; calling it runs it on the server."""

    def __init__(self, module: "RemoteModule", name: str):
        self.module = module
        self.name = name

    def __call__(self, *args):
        session = self.module.session
        encoded, data = session._args(args)
        header, _ = session._request(
            MsgType.CALL,
            {"module": self.module.handle, "name": self.name, "args": encoded},
            data,
        )
        return session._value(header.get("value"))

    def __repr__(self) -> str:
        return f"<RemoteFunction {self.name} of {self.module!r}>"


class RemoteModule:
    """A module loaded in an RPC session: ``mod["f"]`` is a RemoteFunction,
    ``time_evaluator`` times on the server.

    Attributes:
        session, handle: where it lives.
        type_key: the server-side module's kind ("dso", "graph_executor", ...).
        entry_name: the function ``mod(...)`` calls, or None.
    """

    def __init__(
        self,
        session: RPCSession,
        handle: int,
        type_key: str,
        entry: str | None,
        functions: list[str],
    ):
        self.session = session
        self.handle = handle
        self.type_key = type_key
        self.entry_name = entry if isinstance(entry, str) else None
        self._names = functions
        self._functions: dict[str, RemoteFunction] = {}
        weakref.finalize(self, session._release, handle)

    def function_names(self) -> list[str]:
        return list(self._names)

    def get_function(self, name: str, query_imports: bool = False) -> RemoteFunction:
        """The remote function ``name``; asks the server whether it exists.

        Raises:
            FunctionNotFoundError: the module has no such function.
        """
        func = self._functions.get(name)
        if func is None:
            self.session._request(
                MsgType.GET_FUNCTION, {"module": self.handle, "name": name}
            )
            func = self._functions[name] = RemoteFunction(self, name)
        return func

    def __getitem__(self, name: str) -> RemoteFunction:
        return self.get_function(name)

    def __call__(self, *args):
        if self.entry_name is None:
            raise FunctionNotFoundError(
                f"remote {self.type_key} module has no entry function"
            )
        return self.get_function(self.entry_name)(*args)

    def time_evaluator(
        self,
        func_name: str,
        dev: RemoteDevice | None = None,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0,
        cooldown_interval_ms: float = 0,
        repeats_to_cooldown: int = 1,
        f_preproc: str = "",
    ) -> Callable[..., BenchmarkResult]:
        """Time ``func_name`` on the server (see ``Module.time_evaluator``): the
        clock runs there, so the figures exclude the network.

        Returns:
            ``evaluator(*args) -> BenchmarkResult``, args being remote arrays.
        """
        if f_preproc:
            raise EmberError("time_evaluator over RPC: f_preproc is not supported")
        device_id = 0
        if dev is not None:
            if not isinstance(dev, RemoteDevice) or dev.session is not self.session:
                raise TypeError(
                    f"time_evaluator: expected a device of this session, got {dev!r}"
                )
            device_id = dev.device_id
        self.get_function(func_name)
        session = self.session

        def evaluator(*args) -> BenchmarkResult:
            encoded, data = session._args(args)
            header, _ = session._request(
                MsgType.TIME_EVALUATOR,
                {
                    "module": self.handle,
                    "name": func_name,
                    "device_id": device_id,
                    "number": number,
                    "repeat": repeat,
                    "min_repeat_ms": min_repeat_ms,
                    "cooldown_interval_ms": cooldown_interval_ms,
                    "repeats_to_cooldown": repeats_to_cooldown,
                    "args": encoded,
                },
                data,
            )
            return BenchmarkResult(p.field(header, "results", list))

        evaluator.__name__ = f"time_evaluator_{func_name}"
        return evaluator

    def __repr__(self) -> str:
        return (
            f"<RemoteModule {self.type_key} #{self.handle} on {self.session.address}>"
        )
