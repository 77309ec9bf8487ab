"""One RPC session on the server, one request at a time, in a process of its
own that the listener forks once the client has authenticated (``handshake``).

A session owns a workspace directory: ``files/`` holds what the client
uploads (plain names only, see ``protocol.check_name``; an upload in progress
is ``files/.upload-<name>`` until its last chunk), ``tmp/`` is the session's
``TMPDIR`` (a ``.tar`` library is linked there). The server removes the
workspace when the session ends. The session's objects, arrays and loaded modules, live in a
table of integer handles that only this session can name.

A client that goes away while its request runs (it closes the connection, or
shuts down its sending side) ends the session at once: a thread watches the
socket, so that a long call does not hold the session's process, its slot and
its workspace until it returns, to answer nobody.
"""

import logging
import os
import select
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .. import params as _params
from ..dlpack import DL_CPU
from ..module import Module, load_module
from ..ndarray import Device, NDArray, empty
from . import protocol as p
from .protocol import MessageError, MsgType, RPCError

log = logging.getLogger("ember.rpc.server")

_PARTIAL = ".upload-"
T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """What one session may use; the server's command-line options."""

    max_frame_bytes: int = p.DEFAULT_MAX_FRAME_BYTES
    max_workspace_bytes: int = p.DEFAULT_MAX_WORKSPACE_BYTES
    max_memory_bytes: int = p.DEFAULT_MAX_MEMORY_BYTES
    idle_timeout: float | None = 600.0


class ServerSession:
    """Serve one client on ``sock`` until it disconnects (see the module docstring)."""

    def __init__(
        self,
        sock: socket.socket,
        workspace: str,
        limits: Limits,
        name: str,
    ):
        self.sock = sock
        self.limits = limits
        self.name = name
        self.files = os.path.join(workspace, "files")
        self.tmp = os.path.join(workspace, "tmp")
        self.objects: dict[int, object] = {}
        self.next_handle = 1
        self.memory = 0
        self.owned: dict[int, int] = {}  # handle -> bytes, of arrays ALLOC made
        self.chunk = max(1, min(p.CHUNK_BYTES, limits.max_frame_bytes - 65536))
        self.busy: str | None = None  # the request running now
        self.client_left = False
        self.handlers: dict[int, Callable[[p.Message], tuple[dict, Any]]] = {
            MsgType.UPLOAD: self.upload,
            MsgType.DOWNLOAD: self.download,
            MsgType.LISTDIR: self.listdir,
            MsgType.REMOVE: self.remove,
            MsgType.LOAD_MODULE: self.load_module,
            MsgType.GET_FUNCTION: self.get_function,
            MsgType.CALL: self.call,
            MsgType.TIME_EVALUATOR: self.time_evaluator,
            MsgType.ALLOC: self.alloc,
            MsgType.COPY_IN: self.copy_in,
            MsgType.COPY_OUT: self.copy_out,
        }

    def run(self) -> None:
        """Answer the client's AUTH (the listener has checked it), then serve
        requests until the client leaves. Socket errors (the client went away)
        end the session; nothing else does."""
        self.sock.settimeout(self.limits.idle_timeout)
        # Replies go out as soon as they are written: no Nagle delay on a reply
        # sent as a header and a payload.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        os.makedirs(self.files, exist_ok=True)
        os.makedirs(self.tmp, exist_ok=True)
        p.send(self.sock, MsgType.OK)
        log.info("%s: session started", self.name)
        if hasattr(select, "POLLRDHUP"):
            threading.Thread(target=self.watch, name="watch", daemon=True).start()
        while True:
            try:
                msg = p.receive(
                    self.sock, self.limits.max_frame_bytes, self.limits.idle_timeout
                )
            except p.ConnectionClosed:
                log.info("%s: client closed the connection", self.name)
                return
            except p.FrameError as e:
                log.warning("%s: %s; closing the connection", self.name, e)
                self.reply_error(e)
                return
            except MessageError as e:
                log.warning("%s: %s", self.name, e)
                self.reply_error(e)
                continue
            except TimeoutError:
                log.warning(
                    "%s: idle for %s s; closing", self.name, self.limits.idle_timeout
                )
                return
            self.dispatch(msg)

    def watch(self) -> None:
        """Wait for the client's end of the connection to close; if a request
        is running then, end the process (the listener removes the workspace)."""
        poller = select.poll()
        poller.register(self.sock, select.POLLRDHUP)
        poller.poll()
        # With the GIL, the two flags order this against dispatch(): either
        # this thread sees the request running or dispatch sees the client gone.
        self.client_left = True
        if self.busy is not None:
            self.leave()

    def leave(self) -> None:
        log.warning(
            "%s: the client left during %s; ending the session", self.name, self.busy
        )
        os._exit(0)

    def dispatch(self, msg: p.Message) -> None:
        if msg.type == MsgType.FREE:
            self.free(msg.header)
            return
        handler = self.handlers.get(msg.type)
        self.busy = _type_name(msg.type)
        if self.client_left:
            self.leave()
        try:
            if handler is None:
                raise MessageError(f"unknown message type {msg.type}")
            header, data = handler(msg)
        except Exception as e:  # reported to the client; the session goes on
            log.info(
                "%s: %s failed: %s: %s",
                self.name,
                _type_name(msg.type),
                type(e).__name__,
                e,
            )
            self.reply_error(e)
            return
        finally:
            self.busy = None
        p.send(self.sock, MsgType.OK, header, data)

    def reply_error(self, error: BaseException) -> None:
        header = p.error_header(error)
        header["message"] = header["message"].replace(self.files + os.sep, "")
        try:
            p.send(self.sock, MsgType.ERROR, header)
        except OSError:
            pass

    # Files.

    def path(self, header: dict) -> tuple[str, str]:
        name = p.check_name(p.field(header, "name", str))
        return name, os.path.join(self.files, name)

    def existing(self, header: dict) -> tuple[str, str]:
        name, path = self.path(header)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no file {name!r} in the session workspace")
        return name, path

    def workspace_bytes(self) -> int:
        with os.scandir(self.files) as entries:
            return sum(e.stat().st_size for e in entries if e.is_file())

    def upload(self, msg: p.Message):
        name, path = self.path(msg.header)
        offset = p.count(msg.header, "offset")
        last = p.field(msg.header, "last", bool)
        partial = os.path.join(self.files, _PARTIAL + name)
        size = os.path.getsize(partial) if os.path.isfile(partial) else 0
        if offset != size:
            raise MessageError(
                f"upload of {name!r}: expected offset {size}, got {offset}"
            )
        used = self.workspace_bytes()
        if used + len(msg.data) > self.limits.max_workspace_bytes:
            if os.path.exists(partial):
                os.remove(partial)
            raise RPCError(
                f"upload of {name!r}: the session workspace would exceed its limit "
                f"of {self.limits.max_workspace_bytes} bytes ({used} in use)"
            )
        with open(partial, "ab" if offset else "wb") as f:
            f.write(msg.data)
        if last:
            os.replace(partial, path)
            log.info(
                "%s: uploaded %s (%d bytes)", self.name, name, offset + len(msg.data)
            )
        return {"size": offset + len(msg.data)}, b""

    def download(self, msg: p.Message):
        _, path = self.existing(msg.header)
        offset = p.count(msg.header, "offset")
        size = min(p.count(msg.header, "size"), self.chunk)
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(size)
            total = os.fstat(f.fileno()).st_size
        return {"total": total}, data

    def listdir(self, msg: p.Message):
        names = sorted(n for n in os.listdir(self.files) if not n.startswith("."))
        return {"files": names}, b""

    def remove(self, msg: p.Message):
        _, path = self.existing(msg.header)
        os.remove(path)
        return {}, b""

    # Modules and calls.

    def load_module(self, msg: p.Message):
        name, path = self.existing(msg.header)
        module = load_module(path)
        log.info("%s: loaded %s", self.name, name)
        return self.encode(module), b""

    def function(self, header: dict):
        module = self.lookup(p.field(header, "module", int), Module)
        return module.get_function(p.field(header, "name", str), query_imports=True)

    def get_function(self, msg: p.Message):
        self.function(msg.header)
        return {}, b""

    def call(self, msg: p.Message):
        func = self.function(msg.header)
        args = self.decode_args(msg)
        return {"value": self.encode(func(*args))}, b""

    def time_evaluator(self, msg: p.Message):
        h = msg.header
        module = self.lookup(p.field(h, "module", int), Module)
        evaluator = module.time_evaluator(
            p.field(h, "name", str),
            Device(DL_CPU, p.count(h, "device_id")),
            number=p.count(h, "number"),
            repeat=p.count(h, "repeat"),
            min_repeat_ms=p.field(h, "min_repeat_ms", (int, float)),
            cooldown_interval_ms=p.field(h, "cooldown_interval_ms", (int, float)),
            repeats_to_cooldown=p.count(h, "repeats_to_cooldown"),
        )
        return {"results": list(evaluator(*self.decode_args(msg)).results)}, b""

    # Arrays.

    def alloc(self, msg: p.Message):
        h = msg.header
        shape = p.field(h, "shape", list)
        if not all(type(n) is int and n >= 0 for n in shape):
            raise MessageError(
                f"field 'shape': expected a list of extents, got {shape!r:.80}"
            )
        dtype = p.field(h, "dtype", str)
        if dtype not in _params.DTYPES:
            raise MessageError(
                f"unknown dtype {dtype!r}; expected one of {', '.join(sorted(_params.DTYPES))}"
            )
        device = self.device(p.field(h, "device", list))
        nbytes = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
        if self.memory + nbytes > self.limits.max_memory_bytes:
            raise RPCError(
                f"an array of {nbytes} bytes would exceed the session's memory limit "
                f"of {self.limits.max_memory_bytes} bytes ({self.memory} in use)"
            )
        handle = self.register(empty(shape, dtype, device))
        self.owned[handle] = nbytes
        self.memory += nbytes
        return {"array": handle}, b""

    def bytes_of(self, header: dict) -> tuple[np.ndarray, int]:
        array = self.lookup(p.field(header, "array", int), NDArray)
        return np.asarray(array).reshape(-1).view(np.uint8), p.count(header, "offset")

    def copy_in(self, msg: p.Message):
        raw, offset = self.bytes_of(msg.header)
        if offset + len(msg.data) > raw.size:
            raise MessageError(
                f"copy of {len(msg.data)} bytes at offset {offset} overruns an array of {raw.size} bytes"
            )
        raw[offset : offset + len(msg.data)] = np.frombuffer(msg.data, np.uint8)
        return {}, b""

    def copy_out(self, msg: p.Message):
        raw, offset = self.bytes_of(msg.header)
        size = min(p.count(msg.header, "size"), self.chunk)
        return {"nbytes": raw.size}, raw[offset : offset + size].data

    def free(self, header: dict) -> None:
        handles = header.get("handles")
        for handle in handles if isinstance(handles, list) else ():
            if type(handle) is int:
                self.objects.pop(handle, None)
                self.memory -= self.owned.pop(handle, 0)

    # Values.

    def register(self, obj: object) -> int:
        handle = self.next_handle
        self.next_handle += 1
        self.objects[handle] = obj
        return handle

    def lookup(self, handle: int, kind: type[T]) -> T:
        obj = self.objects.get(handle)
        if not isinstance(obj, kind):
            what = "an array" if kind is NDArray else "a module"
            raise MessageError(f"handle {handle} is not {what} of this session")
        return obj

    @staticmethod
    def device(value: object) -> Device:
        if not (
            isinstance(value, list)
            and len(value) == 2
            and all(type(v) is int for v in value)
        ):
            raise MessageError(f"a device must be [type, id], got {value!r:.80}")
        if value[0] != DL_CPU:
            raise RPCError(f"this server runs on the cpu; got device type {value[0]}")
        return Device(DL_CPU, value[1])

    def decode_args(self, msg: p.Message) -> list:
        args = p.field(msg.header, "args", list)
        return [self.decode(a, msg.data, i) for i, a in enumerate(args)]

    def decode(self, value: object, data: memoryview, index: int):
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, dict) and len(value) == 1:
            ((kind, v),) = value.items()
            if kind == "array" and type(v) is int:
                return self.lookup(v, NDArray)
            if kind == "module" and type(v) is int:
                return self.lookup(v, Module)
            if kind == "device":
                return self.device(v)
            if kind == "bytes" and isinstance(v, list) and len(v) == 2:
                start, size = v
                if (
                    type(start) is int
                    and type(size) is int
                    and 0 <= start <= start + size <= len(data)
                ):
                    return bytes(data[start : start + size])
        raise MessageError(f"argument {index}: cannot decode {value!r:.80}")

    def encode(self, value: object) -> Any:
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, NDArray):
            return {
                "array": self.register(value),
                "shape": list(value.shape),
                "dtype": value.dtype,
            }
        if isinstance(value, Module):
            return {
                "module": self.register(value),
                "type_key": value.type_key,
                "entry": value.entry_name,
                "functions": value.function_names(),
            }
        raise TypeError(f"a {type(value).__name__} cannot be returned over RPC")


def _type_name(type_: int) -> str:
    try:
        return MsgType(type_).name
    except ValueError:
        return f"message type {type_}"
