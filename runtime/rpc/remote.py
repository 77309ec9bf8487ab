"""The objects of an RPC session as the client sees them: handles to the
server's devices, arrays, modules and functions, and the encoding of the values
that cross the wire between them (see ``protocol``)."""

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..dlpack import DL_CPU
from ..errors import EmberError, FunctionNotFoundError
from ..ndarray import NDArray, array, copy_source
from ..profiling import BenchmarkResult
from . import protocol as p
from .protocol import MsgType, RPCError

if TYPE_CHECKING:
    from .client import RPCSession

RPC_SESSION_MASK = 128
"""Added to a device type for a device of an RPC session, as TVM does: code
that checks for ``cpu`` (type 1) refuses a remote device (type 129)."""


class RemoteDevice:
    """A device of an RPC session (``remote.cpu(0)``).

    Attributes:
        session: the RPCSession.
        device_type: ``base_type + RPC_SESSION_MASK``, so local code that
            expects a local cpu refuses it.
        base_type, device_id: the device on the server.
    """

    __slots__ = ("session", "base_type", "device_id")

    def __init__(self, session: "RPCSession", base_type: int, device_id: int):
        self.session = session
        self.base_type = base_type
        self.device_id = device_id

    @property
    def device_type(self) -> int:
        return self.base_type + RPC_SESSION_MASK

    @property
    def rpc_session(self) -> "RPCSession":
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
        session: "RPCSession",
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
        if isinstance(source, RemoteNDArray):
            source = source.numpy()
        src = copy_source(source, self.shape, self.dtype)
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
        encoded, data = encode_args(session, args)
        header, _ = session._request(
            MsgType.CALL,
            {"module": self.module.handle, "name": self.name, "args": encoded},
            data,
        )
        return decode_value(session, header.get("value"))

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
        session: "RPCSession",
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
            encoded, data = encode_args(session, args)
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


def _arg(
    session: "RPCSession", value, index: int, data: list[bytes], offset: list[int]
):
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.integer | np.floating):
        return value.item()
    if isinstance(value, RemoteNDArray | RemoteModule | RemoteDevice):
        if value.session is not session:
            raise EmberError(
                f"argument {index}: {value!r} belongs to another RPC session"
            )
        if isinstance(value, RemoteDevice):
            return {"device": [value.base_type, value.device_id]}
        return {"array" if isinstance(value, RemoteNDArray) else "module": value.handle}
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


def encode_args(session: "RPCSession", args: Sequence) -> tuple[list, bytes]:
    """Arguments as the wire carries them: JSON values, and the raw bytes
    that their ``{"bytes": [offset, size]}`` entries point into."""
    data: list[bytes] = []
    offset = [0]
    encoded = [_arg(session, a, i, data, offset) for i, a in enumerate(args)]
    return encoded, b"".join(data)


def decode_value(session: "RPCSession", value):
    """A value from a reply: JSON as itself, handles as remote objects."""
    if not isinstance(value, dict):
        return value
    if "array" in value:
        shape = tuple(p.field(value, "shape", list))
        return RemoteNDArray(
            session,
            p.count(value, "array"),
            shape,
            p.field(value, "dtype", str),
            session.cpu(),
        )
    if "module" in value:
        return RemoteModule(
            session,
            p.count(value, "module"),
            p.field(value, "type_key", str),
            value.get("entry"),
            [n for n in value.get("functions", []) if isinstance(n, str)],
        )
    raise RPCError(f"cannot decode a reply value {value!r:.80}")
