"""NDArray and Device: tensors that compiled code reads and writes.

An NDArray is a compact row-major block of memory described by a DLPack
``DLTensor`` whose address never changes, so passing it to compiled code costs one
attribute read. Memory is either owned (``empty``, ``array``: 64-byte aligned) or
borrowed from another framework through DLPack (``from_dlpack``), in which case the
producer's deleter runs when the last view of it is gone. Arrays on a cuda or
opencl device are ``DeviceNDArray``s (``ember.runtime.device_api``), made by the
same functions given a GPU ``Device``.
"""

import ctypes
import math
import operator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import DTypeLike

from .dlpack import (
    DL_CPU,
    DL_CUDA,
    DL_OPENCL,
    DLDataType,
    DLDevice,
    DLTensor,
    consume_capsule,
    dl_to_dtype,
    dltensor_layout,
    dtype_to_dl,
    is_compact,
    read_capsule,
)
from .errors import EmberError, EmberTypeError, EmberValueError

ALIGNMENT = 64
"""Byte alignment of the data of every NDArray that ember allocates."""

_DLPACK_MAX_VERSION = (1, 1)
_DEVICE_NAMES = {
    1: "cpu",
    2: "cuda",
    3: "cuda_host",
    4: "opencl",
    7: "vulkan",
    8: "metal",
    10: "rocm",
    11: "rocm_host",
    13: "cuda_managed",
    14: "oneapi",
    15: "webgpu",
    16: "hexagon",
}
_DEVICE_TYPES = {name: code for code, name in _DEVICE_NAMES.items()} | {
    "llvm": DL_CPU,
    "cl": DL_OPENCL,
}
DEVICE_KINDS = tuple(
    name
    for name in _DEVICE_NAMES.values()
    if name != "cpu" and not name.endswith(("_host", "_managed"))
)
"""The accelerators DLPack names: the kinds a launch plan may run on, each with
its device API ``ember.runtime.<kind>_api`` where ember has one."""


@dataclass(frozen=True, slots=True)
class Device:
    """A DLPack device: a device type code (1 is the CPU) and an index.

    Example:
        >>> Device(1, 0)
        cpu(0)
    """

    device_type: int
    device_id: int = 0

    def __repr__(self) -> str:
        return f"{self.kind}({self.device_id})"

    @property
    def kind(self) -> str:
        """The device's DLPack name: "cpu", "cuda", "opencl", "vulkan", ...

        Example:
            >>> Device(4, 0).kind
            'opencl'
        """
        return _DEVICE_NAMES.get(self.device_type, f"device{self.device_type}")

    def sync(self) -> None:
        """Wait until the work queued on the device is done (kernels launched
        by a device module); nothing to wait for on the CPU.

        Raises:
            EmberError: the device's driver is missing or reports an error.

        Example:
            >>> cpu().sync()
        """
        if self.device_type != DL_CPU:
            from .device_api import device_api

            device_api(self).sync(self.device_id)

    @property
    def exist(self) -> bool:
        """Whether this machine has the device (loads its driver to find out).

        Example:
            >>> cpu().exist
            True
        """
        if self.device_type == DL_CPU:
            return self.device_id == 0
        from .device_api import device_api

        try:
            return 0 <= self.device_id < device_api(self).device_count()
        except EmberError:
            return False


def cpu(dev_id: int = 0) -> Device:
    """The CPU device.

    Args:
        dev_id: the device index (always 0 on ordinary machines).

    Returns:
        ``Device(1, dev_id)``.

    Example:
        >>> cpu()
        cpu(0)
    """
    return Device(DL_CPU, dev_id)


def device(dev_type: str | int, dev_id: int = 0) -> Device:
    """A device from its name ("cpu", "cuda", "llvm" means cpu) or type code.

    Args:
        dev_type: a device name or a DLPack device type code.
        dev_id: the device index.

    Returns:
        The Device.

    Raises:
        ValueError: an unknown device name.

    Example:
        >>> device("cpu", 0) == cpu(0)
        True
    """
    if isinstance(dev_type, str):
        try:
            dev_type = _DEVICE_TYPES[dev_type]
        except KeyError:
            known = ", ".join(_DEVICE_TYPES)
            raise EmberValueError(
                f"unknown device {dev_type!r}; expected one of {known}"
            ) from None
    return Device(int(dev_type), int(dev_id))


def cuda(dev_id: int = 0) -> Device:
    """A CUDA GPU; nothing is asked of the driver until memory is.

    Args:
        dev_id: the device index, as CUDA numbers the GPUs.

    Returns:
        ``Device(2, dev_id)``.

    Example:
        >>> cuda(1)
        cuda(1)
    """
    return Device(DL_CUDA, dev_id)


def opencl(dev_id: int = 0) -> Device:
    """An OpenCL device; nothing is asked of the driver until memory is.

    Devices are numbered across the OpenCL platforms, GPUs first; where the
    machine has no OpenCL GPU, every device counts (PoCL's CPU device).

    Args:
        dev_id: the device index.

    Returns:
        ``Device(4, dev_id)``.

    Example:
        >>> opencl()
        opencl(0)
    """
    return Device(DL_OPENCL, dev_id)


_CPU0 = cpu(0)


class _Accelerators:
    """The device type codes ember has a runtime for: each kind of
    `DEVICE_KINDS` whose ``ember.runtime.<kind>_api`` exists (looked up, not
    imported), so a new kind of device is one module."""

    @cached_property
    def codes(self) -> frozenset[int]:
        import importlib.util

        return frozenset(
            _DEVICE_TYPES[kind]
            for kind in DEVICE_KINDS
            if importlib.util.find_spec(f"{__package__}.{kind}_api") is not None
        )

    def __contains__(self, code: object) -> bool:
        return code in self.codes

    def names(self) -> str:
        """ "cpu, cuda and opencl": the memory ember handles, for messages."""
        kinds = ["cpu", *sorted(_DEVICE_NAMES[c] for c in self.codes)]
        return ", ".join(kinds[:-1]) + " and " + kinds[-1]


_GPU_TYPES = _Accelerators()


def _check_cpu(dev: Device, what: str) -> Device:
    if dev.device_type != DL_CPU:
        raise EmberError(f"{what}: expected cpu memory here; got {dev}")
    return dev


class NDArray:
    """An n-dimensional array in CPU memory, passed to compiled code as a DLTensor.

    Create one with ``empty``, ``array`` or ``from_dlpack`` rather than directly.

    Example:
        >>> a = array(np.arange(3, dtype="float32"))
        >>> a.shape, a.dtype, a.device
        ((3,), 'float32', cpu(0))
    """

    __slots__ = ("_arr", "_dltensor", "_shape_buf", "_handle", "device")

    def __init__(self, arr: np.ndarray, device: Device = _CPU0):
        """Wrap the memory of a C-contiguous numpy array without copying it.

        Args:
            arr: the array whose memory this NDArray views; kept alive.
            device: the device the memory is on (only the CPU is supported).
        """
        if not arr.flags.c_contiguous:
            raise EmberValueError(
                f"NDArray memory must be C-contiguous, got a {arr.shape} view with "
                f"byte strides {arr.strides}; array(x) copies it"
            )
        self._arr = arr
        self.device = _check_cpu(device, "NDArray")
        # None in a callback's view, which borrows the caller's DLTensor
        self._shape_buf: ctypes.Array[ctypes.c_int64] | None = (
            ctypes.c_int64 * arr.ndim
        )(*arr.shape)
        self._dltensor = DLTensor(
            arr.__array_interface__["data"][0],
            DLDevice(device.device_type, device.device_id),
            arr.ndim,
            DLDataType(*dtype_to_dl(arr.dtype)),
            ctypes.cast(self._shape_buf, ctypes.POINTER(ctypes.c_int64)),
            None,
            0,
        )
        self._handle = ctypes.addressof(self._dltensor)

    @property
    def shape(self) -> tuple[int, ...]:
        """The extents, as a tuple of ints."""
        return self._arr.shape

    @property
    def dtype(self) -> str:
        """The element type's numpy name, e.g. "float32"."""
        return self._arr.dtype.name

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._arr.ndim

    def _dltensor_address(self) -> int:
        """The address of this array's DLTensor, stable for the array's lifetime."""
        return self._handle

    def data_ptr(self) -> int:
        """The address of the first element, as torch's ``Tensor.data_ptr()``.

        Equal addresses prove that two arrays share memory (zero-copy DLPack).

        Example:
            >>> x = np.zeros(4)
            >>> from_dlpack(x).data_ptr() == x.ctypes.data
            True
        """
        return self._arr.__array_interface__["data"][0]

    def numpy(self) -> np.ndarray:
        """A numpy copy of the data.

        Returns:
            A new numpy array; writing to it does not change this NDArray.

        Example:
            >>> array([1.0, 2.0]).numpy()
            array([1., 2.])
        """
        return self._arr.copy()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``np.asarray(a)``: a numpy view of the same memory (a copy when
        ``copy=True`` or another ``dtype`` is asked for)."""
        if copy or (dtype is not None and np.dtype(dtype) != self._arr.dtype):
            if copy is False:
                raise EmberValueError(
                    f"NDArray: cannot give a {np.dtype(dtype).name} view of "
                    f"{self.dtype} memory without a copy"
                )
            return self._arr.astype(dtype or self._arr.dtype)
        return self._arr.view()

    def copyfrom(self, source) -> "NDArray":
        """Copy data into this array.

        Args:
            source: an NDArray, a numpy array or a DLPack tensor (strided views
                too) of the same shape and dtype, or a list (converted to this
                array's dtype).

        Returns:
            self.

        Raises:
            ValueError: the shape or the dtype differs.

        Example:
            >>> empty((2,), "int32").copyfrom(np.array([1, 2], "int32")).numpy()
            array([1, 2], dtype=int32)
        """
        if isinstance(source, NDArray) and source.device.device_type in _GPU_TYPES:
            source.copy_into_host(self._arr)  # pyright: ignore[reportAttributeAccessIssue]
            return self
        np.copyto(self._arr, copy_source(source, self.shape, self.dtype))
        return self

    def copyto(self, target: "NDArray | Device") -> "NDArray":
        """Copy this array into another NDArray, or into new memory on a device.

        Args:
            target: an NDArray of the same shape and dtype, or a Device.

        Returns:
            The target NDArray, or the new copy.

        Example:
            >>> array([1.0]).copyto(cpu()).numpy()
            array([1.])
        """
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        if isinstance(target, Device):
            return array(self, device=target)
        raise EmberTypeError(f"copyto: expected an NDArray or a Device, got {target!r}")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the array as a DLPack capsule sharing its memory.

        numpy is the producer: its C capsule destructor is safe to run while an
        exception is in flight, which a ctypes-built destructor is not.

        Args:
            stream: must be None for CPU memory.
            max_version: the highest DLPack version the consumer understands.
            dl_device: the device the consumer wants; only this CPU is allowed.
            copy: True to export a copy, False to forbid one.

        Returns:
            A ``"dltensor"`` or ``"dltensor_versioned"`` PyCapsule.

        Example:
            >>> np.from_dlpack(array([1.0, 2.0]))
            array([1., 2.])
        """
        return self._arr.__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack ``(device_type, device_id)`` of the memory."""
        return (self.device.device_type, self.device.device_id)

    def __repr__(self) -> str:
        head = (
            f"<ember.runtime.NDArray shape={self.shape}, {self.dtype}, {self.device}>"
        )
        return f"{head}\n{self._arr!r}"


def copy_source(source, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """What ``copyfrom`` copies from ``source``, as numpy: an NDArray's memory,
    a numpy array or DLPack tensor as it is, a list converted to ``dtype``;
    checked to have ``shape`` and ``dtype`` (ValueError otherwise)."""
    if isinstance(source, NDArray):
        src = source.numpy() if _on_gpu(source) else source._arr
    elif isinstance(source, np.ndarray):
        src = source
    elif hasattr(source, "__dlpack__"):
        src = _numpy_view(source, "copyfrom")
    else:
        src = np.asarray(source, dtype=dtype)
    if src.shape != shape:
        raise EmberValueError(
            f"copyfrom: expected shape {shape}, got shape {src.shape}"
        )
    if src.dtype != np.dtype(dtype):  # byte order too: bytes are copied as they are
        got = src.dtype.name
        if got == dtype:
            got += f" of the other byte order ({src.dtype.str})"
        raise EmberValueError(f"copyfrom: expected dtype {dtype}, got dtype {got}")
    return src


def _on_gpu(tensor) -> bool:
    """Whether an NDArray or a DLPack tensor is in cuda or opencl memory."""
    if isinstance(tensor, NDArray):
        return tensor.device.device_type in _GPU_TYPES
    try:
        return int(tensor.__dlpack_device__()[0]) in _GPU_TYPES
    except Exception:  # noqa: BLE001 - not a DLPack tensor: the caller says so
        return False


def _as_shape(shape) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    dims = tuple(operator.index(d) for d in dims)
    if any(d < 0 for d in dims):
        raise EmberValueError(f"expected non-negative extents, got shape {dims}")
    return dims


def _rpc_session(device):
    """The RPC session of a remote device (``ember.rpc``), which allocates on
    its server; None for a local device."""
    return getattr(device, "rpc_session", None)


def empty(shape, dtype: DTypeLike = "float32", device: Device = _CPU0) -> NDArray:
    """An uninitialized array with 64-byte aligned data.

    Args:
        shape: an int or a sequence of ints.
        dtype: the element type ("float32", "int8", "bool", ...).
        device: where to allocate: the CPU, a GPU (``cuda(0)``,
            ``opencl(0)``: a ``DeviceNDArray``, its memory freed with it), or a
            remote device of an RPC session (``remote.cpu(0)``), which returns a
            ``RemoteNDArray``.

    Returns:
        The new NDArray.

    Raises:
        EmberError: the device's driver is missing (the message names its
            library, e.g. libcuda.so.1) or has no such device.

    Example:
        >>> empty((2, 3), "float16").shape
        (2, 3)
        >>> empty((1024,), "float32", cuda(0)).device  # doctest: +SKIP
        cuda(0)
    """
    shape = _as_shape(shape)
    dtype = np.dtype(dtype)
    dtype_to_dl(dtype)
    session = _rpc_session(device)
    if session is not None:
        return session.empty(shape, dtype, device)
    if isinstance(device, Device) and device.device_type != DL_CPU:
        from .device_api import device_empty

        return device_empty(shape, dtype, device)
    _check_cpu(device, "empty")
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, np.uint8)
    start = -raw.__array_interface__["data"][0] % ALIGNMENT
    return NDArray(np.ndarray(shape, dtype, buffer=raw, offset=start), device)


def array(data, device: Device = _CPU0, dtype: DTypeLike | None = None) -> NDArray:
    """A new array holding a copy of ``data``.

    Args:
        data: a numpy array, an NDArray, a DLPack tensor (strided views too) or
            a (nested) list.
        device: where to allocate: the CPU, a GPU (``cuda(0)``,
            ``opencl(0)``), or a remote device of an RPC session
            (``remote.cpu(0)``), which returns a ``RemoteNDArray``.
        dtype: convert to this element type; by default keep numpy's choice.

    Returns:
        The new NDArray, with its own 64-byte aligned memory.

    Example:
        >>> array([[1, 2], [3, 4]], dtype="int8").numpy()
        array([[1, 2],
               [3, 4]], dtype=int8)
        >>> array(np.ones(4, "float32"), device=opencl(0)).device  # doctest: +SKIP
        opencl(0)
    """
    if _on_gpu(data):
        if not isinstance(data, NDArray):
            data = from_dlpack(data)
        if dtype is None or np.dtype(dtype) == np.dtype(data.dtype):
            if isinstance(device, Device) and device.device_type in _GPU_TYPES:
                return empty(data.shape, data.dtype, device).copyfrom(data)
        data = data.numpy()
    if isinstance(data, NDArray):
        data = data._arr
    elif hasattr(data, "__dlpack__") and not isinstance(data, np.ndarray):
        data = _numpy_view(data, "array")
    src = np.asarray(data, dtype=dtype)
    session = _rpc_session(device)
    if session is not None:
        return session.array(src, device)
    out = empty(src.shape, src.dtype, device)
    if out.device.device_type in _GPU_TYPES:
        return out.copyfrom(src)
    np.copyto(out._arr, src)
    return out


def from_dlpack(tensor) -> NDArray:
    """View another framework's tensor as an NDArray, without copying.

    CPU, CUDA and OpenCL memory are shared: a torch CUDA tensor gives an
    NDArray on ``cuda(i)`` whose ``data_ptr()`` is the tensor's (the producer is
    asked to make its queued work visible to the legacy default stream, where
    ember's kernels run).

    Args:
        tensor: an object with ``__dlpack__`` (a numpy array, a torch tensor,
            an NDArray, ...) or a ``"dltensor"`` PyCapsule.

    Returns:
        An NDArray sharing the tensor's memory; the producer stays alive until the
        NDArray (and every array made from it) is gone.

    Raises:
        EmberError: the tensor is not in cpu, cuda or opencl memory (the
            message names its device, e.g. torch's meta).
        ValueError: the tensor is not compact row-major (a transposed or
            strided view, negative strides); ``array(t)`` copies such views.
        TypeError: the object does not speak DLPack, or its dtype has no numpy
            equivalent (bfloat16, float8, ...; the message names it).
        BufferError: the producer refused to export (a torch tensor that
            requires grad: pass ``t.detach()``).

    Example:
        >>> x = np.arange(4.0)
        >>> from_dlpack(x).shape
        (4,)
    """
    if type(tensor).__name__ == "PyCapsule":
        return _from_capsule(tensor)
    return _from_capsule(_export(tensor, "from_dlpack", gpu=True))


def _export(tensor, what: str, gpu: bool = False):
    """The DLPack capsule of a CPU tensor (or a GPU one, if ``gpu``), or an
    error naming what is wrong."""
    dev = _check_producer(tensor, what, gpu)
    # CUDA: stream 1 is the legacy default stream, where ember's kernels run.
    stream = {"stream": 1} if dev is not None and dev.device_type == DL_CUDA else {}
    try:
        try:
            return tensor.__dlpack__(max_version=_DLPACK_MAX_VERSION, **stream)
        except TypeError:  # a producer older than DLPack 1.0
            return tensor.__dlpack__(**stream)
    except Exception as e:
        raise _refused(tensor, what, e) from None


def _type_name(obj) -> str:
    t = type(obj)
    module = t.__module__.split(".")[0]
    return t.__qualname__ if module == "builtins" else f"{module}.{t.__qualname__}"


def _check_producer(tensor, what: str, gpu: bool = False) -> Device | None:
    """Refuse an object that does not speak DLPack or whose memory is not the
    CPU's (nor a cuda or opencl device's, if ``gpu``), naming its device;
    return the device it names."""
    if not hasattr(tensor, "__dlpack__"):
        raise EmberTypeError(
            f"{what}: expected an object with __dlpack__, got {_type_name(tensor)}"
        )
    if not hasattr(tensor, "__dlpack_device__"):
        return None
    try:
        dev = Device(*map(int, tensor.__dlpack_device__()))
    except Exception as e:  # torch's meta tensors have no DLPack device
        where = getattr(tensor, "device", None)
        where = f" on device {where}" if where is not None else ""
        raise EmberError(
            f"{what}: a {_type_name(tensor)}{where} has no DLPack device ({e}); "
            f"the ember runtime only handles {_GPU_TYPES.names()} memory"
        ) from None
    if dev.device_type != DL_CPU and not (gpu and dev.device_type in _GPU_TYPES):
        handles = _GPU_TYPES.names() if gpu else "cpu"
        raise EmberError(
            f"{what}: only handles {handles} memory; got a "
            f"{_type_name(tensor)} on {dev}"
        )
    return dev


def _refused(tensor, what: str, error: Exception) -> BufferError:
    if getattr(tensor, "requires_grad", False):
        return BufferError(
            f"{what}: a {_type_name(tensor)} that requires grad cannot be shared "
            "through DLPack; pass t.detach() (autograd does not see what compiled "
            "code reads or writes)"
        )
    return BufferError(
        f"{what}: the {_type_name(tensor)} refused to export its memory through "
        f"DLPack: {error}"
    )


class _Exported:
    """A capsule already taken from a producer, offered to numpy's from_dlpack."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DL_CPU, 0)


def _numpy_view(tensor, what: str) -> np.ndarray:
    """A numpy view of a CPU DLPack tensor, strided or not (for copies)."""
    capsule = _export(tensor, what)
    t = read_capsule(capsule).tensor
    dl_to_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)  # names what numpy lacks
    return np.from_dlpack(_Exported(capsule))


def _from_capsule(capsule) -> NDArray:
    opened = read_capsule(capsule)
    t = opened.tensor
    dev = Device(t.device.device_type, t.device.device_id)
    if dev.device_type not in _GPU_TYPES:
        _check_cpu(dev, "from_dlpack")
    dtype = dl_to_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    shape, strides = dltensor_layout(t)
    if not is_compact(shape, strides):
        raise EmberValueError(
            f"from_dlpack: expected a compact row-major tensor, got shape {shape} "
            f"with strides {strides}; make it contiguous first "
            "(np.ascontiguousarray(x), torch: x.contiguous()) or copy it with array(x)"
        )
    owner = consume_capsule(capsule, opened)
    if dev.device_type in _GPU_TYPES:
        from .device_api import device_from_capsule

        return device_from_capsule(opened, owner, shape, dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return NDArray(np.empty(shape, dtype), dev)
    buf = (ctypes.c_char * nbytes).from_address((t.data or 0) + t.byte_offset)
    # Every numpy view of buf, and so every array exported from ours, keeps the
    # producer's memory alive.
    buf.owner = owner  # pyright: ignore[reportAttributeAccessIssue]
    arr = np.frombuffer(memoryview(buf), dtype).reshape(shape)
    if opened.read_only:
        arr.flags.writeable = False
    return NDArray(arr, dev)
