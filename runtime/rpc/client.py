"""The RPC client: a session with a remote ember runtime.

``connect`` returns an ``RPCSession``: files go up and down, libraries are
loaded there, arrays live there (``ember.runtime.array(x, device=
remote.cpu(0))``) and functions run there on them. Everything a session hands
out (``remote.RemoteNDArray``, ``RemoteModule``, ``RemoteFunction``) is a
handle to an object in the server's session; dropping the last reference frees
it there.
"""

import collections
import os
import socket
import threading

import numpy as np

from ..dlpack import DL_CPU, dtype_to_dl
from ..ndarray import device as _local_device
from . import protocol as p
from .protocol import MsgType, RPCError
from .remote import RemoteDevice, RemoteModule, RemoteNDArray, decode_value

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
                        f"the server closed the connection during {request}: its "
                        "session ended (a library's code that crashed it, or the "
                        "server stopped or killed; the server's log says which)"
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
        module = decode_value(self, header)
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
