"""Device APIs and the arrays that live in GPU memory.

A ``DeviceAPI`` is what the runtime needs from a GPU runtime: allocate, free,
copy to, from and within the device, wait for queued work, load a program and
launch its kernels. ``ember.runtime.cuda_api`` implements it over the CUDA driver
API (``libcuda.so.1``), ``ember.runtime.opencl_api`` over the OpenCL ICD loader
(``libOpenCL.so.1``), both through ctypes. Neither module is imported, nor its
library loaded, until memory or a kernel is first asked of a device of its kind
(``device_api``): ``import ember.runtime`` touches no driver, and a machine
without one fails with one ``EmberError`` saying what is missing.

``DeviceNDArray`` is the NDArray of device memory: its DLTensor's ``data`` is
the ``CUdeviceptr`` (CUDA) or the ``cl_mem`` handle (OpenCL, as TVM does) and
its ``device`` is ``(2, id)`` or ``(4, id)``. It is made by ``empty``, ``array``
and ``from_dlpack`` with a GPU device; its data crosses to the host only through
an explicit copy (``numpy()``, ``copyto``, ``np.array(a)``).
"""

import ctypes
import importlib
import importlib.util
import math
import threading

import numpy as np

from .dlpack import (
    DL_OPENCL,
    CapsuleTensor,
    DLDataType,
    DLDevice,
    DLTensor,
    dtype_to_dl,
    read_capsule,
)
from .errors import EmberError, EmberValueError
from .ndarray import (
    _GPU_TYPES,
    Device,
    NDArray,
    _on_gpu,
    copy_source,
    empty,
    from_dlpack,
)

_loaded: dict[int, "DeviceAPI"] = {}
_loading = threading.Lock()


class DeviceAPI:
    """The operations the runtime needs from one kind of device.

    Handles (device memory, programs, kernels) are ints: a ``CUdeviceptr`` or a
    ``cl_mem``, a ``CUmodule`` or a ``cl_program``. Copies are blocking: when
    one returns, the data is where it was asked to be. ``launch`` only queues
    (on one in-order stream or queue per device); ``sync`` waits for it.
    Every method raises ``EmberError`` naming the failed call and the device.
    """

    name = "device"
    """The device kind, as ``Device`` prints it: "cuda", "opencl"."""

    def device_count(self) -> int:
        """How many devices of this kind the machine has."""
        raise NotImplementedError

    def check_id(self, dev_id: int) -> None:
        """Refuse a device index this machine has no device for."""
        count = self.device_count()
        if not 0 <= dev_id < count:
            raise EmberValueError(
                f"{self.name}({dev_id}): no such device; this machine has {count} "
                f"{self.name} device{'' if count == 1 else 's'}"
            )

    def describe(self, dev_id: int) -> dict:
        """Facts about device ``dev_id``: at least its ``name``."""
        raise NotImplementedError

    def alloc(self, dev_id: int, nbytes: int) -> int:
        """``nbytes`` (> 0) of device memory; its handle."""
        raise NotImplementedError

    def free(self, dev_id: int, handle: int) -> None:
        """Give back memory ``alloc`` returned."""
        raise NotImplementedError

    def copy_from_host(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from host address ``src`` into device memory ``dst``."""
        raise NotImplementedError

    def copy_to_host(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from device memory ``src`` to host address ``dst``."""
        raise NotImplementedError

    def copy_on_device(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` between two allocations of device ``dev_id``."""
        raise NotImplementedError

    def sync(self, dev_id: int) -> None:
        """Wait until all work queued on device ``dev_id`` is done."""
        raise NotImplementedError

    def load(self, dev_id: int, source: str, binary: str | None) -> int:
        """Load a program (PTX ``binary`` for CUDA; OpenCL C ``source`` built
        for the device) on device ``dev_id``; its handle."""
        raise NotImplementedError

    def get_kernel(self, dev_id: int, program: int, name: str) -> int:
        """The kernel ``name`` of a loaded program."""
        raise NotImplementedError

    def unload(self, dev_id: int, program: int, kernels: list[int]) -> None:
        """Release a program and the kernels taken from it."""
        raise NotImplementedError

    def launch(
        self,
        dev_id: int,
        kernel: int,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        pointers: list[int],
    ) -> None:
        """Queue ``kernel`` on ``grid`` blocks of ``block`` threads, each
        parameter one device pointer (``cl_mem``)."""
        raise NotImplementedError


def device_api(dev: Device) -> DeviceAPI:
    """The API of ``dev``'s kind, its library loaded on first use.

    Args:
        dev: a cuda or opencl Device.

    Returns:
        The DeviceAPI, shared by every device of the kind.

    Raises:
        EmberError: the kind has no device API in ember, or its driver library
            is missing or fails to start (the message names the library).

    Example:
        >>> device_api(cuda(0)).describe(0)["name"]  # doctest: +SKIP
        'NVIDIA H100 80GB HBM3'
    """
    api = _loaded.get(dev.device_type)
    if api is not None:
        return api
    with _loading:
        api = _loaded.get(dev.device_type)
        if api is None:
            api = _loaded[dev.device_type] = _api_class(dev)()
    return api


def _api_class(dev: Device) -> type["DeviceAPI"]:
    """The API of ``dev``'s kind: ``API`` of ``ember.runtime.<kind>_api``, by
    the kind's DLPack name, so a new kind of device is one module."""
    kind = dev.kind
    name = f"{__package__}.{kind}_api"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        module = None
    api = getattr(module, "API", None)
    if not (isinstance(api, type) and issubclass(api, DeviceAPI)):
        raise EmberError(
            f"{dev}: ember has no runtime for {kind} devices (no "
            f"ember.runtime.{kind}_api); it runs on cpu, {', '.join(_known_kinds())}"
        )
    return api


def _known_kinds() -> list[str]:
    from .ndarray import DEVICE_KINDS

    return [
        k for k in DEVICE_KINDS if importlib.util.find_spec(f"{__package__}.{k}_api")
    ]


def check_device(dev: Device, what: str) -> DeviceAPI:
    """``device_api(dev)``, having checked that device ``dev`` exists."""
    api = device_api(dev)
    count = api.device_count()
    if not 0 <= dev.device_id < count:
        raise EmberValueError(
            f"{what}: no device {dev}; this machine has {count} {api.name} "
            f"device{'' if count == 1 else 's'}"
        )
    return api


class _Allocation:
    """Device memory owned by an array: freed when the last array using it dies."""

    __slots__ = ("api", "dev_id", "handle")

    def __init__(self, api: DeviceAPI, dev_id: int, nbytes: int):
        self.api, self.dev_id = api, dev_id
        self.handle = api.alloc(dev_id, nbytes) if nbytes else 0

    def __del__(self):
        if self.handle:
            handle, self.handle = self.handle, 0
            try:
                self.api.free(self.dev_id, handle)
            except Exception:  # noqa: BLE001 - a dying context at exit frees it too
                pass


def _stand_in(shape: tuple[int, ...], dtype: np.dtype, owner=None) -> np.ndarray:
    """A numpy array with ``shape`` and ``dtype`` over one element of host
    memory (all strides 0), keeping ``owner`` alive: what the NDArray code
    reads the shape and dtype from, and what DLPack exports are made of."""
    cell = (ctypes.c_char * dtype.itemsize)()
    cell.owner = owner  # pyright: ignore[reportAttributeAccessIssue]
    one = np.frombuffer(memoryview(cell), dtype, count=1)
    return np.lib.stride_tricks.as_strided(one, shape, (0,) * len(shape))


class DeviceNDArray(NDArray):
    """An NDArray in GPU memory (cuda or opencl); made by ``empty``, ``array``,
    ``from_dlpack`` and ``copyto`` with a GPU device.

    ``numpy()``, ``copyto(cpu())`` and ``np.array(a)`` copy the data back to
    the host; ``np.asarray(a)``, which promises a view, is refused. Passing one
    to compiled CPU code is refused by the function's device check.

    Example:
        >>> a = array(np.arange(4, dtype="float32"), device=cuda(0))  # doctest: +SKIP
        >>> a.device, a.numpy()  # doctest: +SKIP
        (cuda(0), array([0., 1., 2., 3.], dtype=float32))
    """

    __slots__ = ("_memory", "_api")

    def __init__(self, shape, dtype, device: Device, data: int, memory: object):
        """Describe device memory at ``data`` (a pointer or a ``cl_mem``) that
        ``memory`` keeps alive (an allocation, or a DLPack producer's owner)."""
        dtype = np.dtype(dtype)
        self._api = device_api(device)
        self._memory = memory
        self._arr = _stand_in(tuple(shape), dtype)
        self.device = device
        self._shape_buf = (ctypes.c_int64 * len(shape))(*shape)
        self._dltensor = DLTensor(
            data or None,
            DLDevice(device.device_type, device.device_id),
            len(shape),
            DLDataType(*dtype_to_dl(dtype)),
            ctypes.cast(self._shape_buf, ctypes.POINTER(ctypes.c_int64)),
            None,
            0,
        )
        self._handle = ctypes.addressof(self._dltensor)

    @property
    def nbytes(self) -> int:
        """The size of the data in bytes."""
        return self._arr.size * self._arr.itemsize

    def data_ptr(self) -> int:
        """The device pointer (CUDA) or ``cl_mem`` handle (OpenCL) of the data;
        equal to torch's ``t.data_ptr()`` for a tensor shared through DLPack."""
        return self._dltensor.data or 0

    def numpy(self) -> np.ndarray:
        """A numpy copy of the data, copied from the device.

        Example:
            >>> array([1.0, 2.0], device=opencl()).numpy()  # doctest: +SKIP
            array([1., 2.])
        """
        out = np.empty(self.shape, self._arr.dtype)
        if self.nbytes:
            self._api.copy_to_host(
                self.device.device_id, out.ctypes.data, self.data_ptr(), self.nbytes
            )
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``np.array(a)``: a host copy. ``np.asarray(a)`` promises a view,
        which device memory cannot give: refused, naming ``numpy()``."""
        if not copy:
            raise EmberError(
                f"NDArray: the data is in {self.device} memory, which numpy "
                "cannot view; copy it to the host with a.numpy() (or np.array(a))"
            )
        host = self.numpy()
        return host if dtype is None else host.astype(dtype)

    def copyfrom(self, source) -> "NDArray":
        """Copy an NDArray (any device), a numpy array, a DLPack tensor or a
        list of the same shape and dtype into this device array.

        Example:
            >>> empty((2,), "int32", cuda()).copyfrom([1, 2]).numpy()  # doctest: +SKIP
            array([1, 2], dtype=int32)
        """
        dev_id = self.device.device_id
        if not isinstance(source, NDArray) and _on_gpu(source):
            source = from_dlpack(source)
        if isinstance(source, DeviceNDArray):
            _check_like(source, self.shape, self.dtype)
            if not self.nbytes:
                return self
            if source.device == self.device:
                self._api.copy_on_device(
                    dev_id, self.data_ptr(), source.data_ptr(), self.nbytes
                )
                return self
            source = source.numpy()  # another device: through the host
        host = np.ascontiguousarray(copy_source(source, self.shape, self.dtype))
        if self.nbytes:
            self._api.copy_from_host(
                dev_id, self.data_ptr(), host.ctypes.data, self.nbytes
            )
        return self

    def copy_into_host(self, out: np.ndarray) -> None:
        """Copy the data into ``out``, a C-contiguous host array of the same
        shape and dtype (what a CPU NDArray's ``copyfrom`` uses)."""
        _check_like(self, out.shape, out.dtype.name)
        if self.nbytes:
            self._api.copy_to_host(
                self.device.device_id, out.ctypes.data, self.data_ptr(), self.nbytes
            )

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the device memory as a DLPack capsule (``torch.from_dlpack``).

        The capsule is numpy's, made for a stand-in array that keeps this one
        alive, with its data and device set to this array's: its destructor
        and deleter are numpy's C code, safe to run at any time.

        Args:
            stream: the consumer's CUDA stream; any but None and -1 waits for
                the work queued on the device first.
            max_version: the highest DLPack version the consumer understands.
            dl_device: must be None or this array's device.
            copy: True to export a copy on the same device.

        Returns:
            A ``"dltensor"`` or ``"dltensor_versioned"`` PyCapsule.
        """
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(
                f"NDArray: cannot export {self.device} memory to device {dl_device}"
            )
        if copy:
            return (
                empty(self.shape, self.dtype, self.device)
                .copyfrom(self)
                .__dlpack__(stream=stream, max_version=max_version)
            )
        if stream is not None and stream != -1:
            self.device.sync()
        stand_in = _stand_in(self.shape, self._arr.dtype, owner=self)
        capsule = stand_in.__dlpack__(max_version=max_version)
        t = read_capsule(capsule).tensor
        t.data = self.data_ptr() or None
        t.byte_offset = 0
        t.device.device_type = self.device.device_type
        t.device.device_id = self.device.device_id
        if t.strides:
            stride = 1
            for i in reversed(range(t.ndim)):
                t.strides[i] = stride
                stride *= self.shape[i]
        return capsule

    def __repr__(self) -> str:
        return (
            f"<ember.runtime.NDArray shape={self.shape}, {self.dtype}, {self.device}>"
        )


def _check_like(source: NDArray, shape: tuple[int, ...], dtype: str) -> None:
    if source.shape != tuple(shape):
        raise EmberValueError(
            f"copyfrom: expected shape {tuple(shape)}, got shape {source.shape}"
        )
    if source.dtype != dtype:
        raise EmberValueError(
            f"copyfrom: expected dtype {dtype}, got dtype {source.dtype}"
        )


def device_empty(shape: tuple[int, ...], dtype: np.dtype, dev: Device) -> NDArray:
    """``empty`` on a cuda or opencl device."""
    api = check_device(dev, "empty")
    nbytes = math.prod(shape) * dtype.itemsize
    memory = _Allocation(api, dev.device_id, nbytes)
    return DeviceNDArray(shape, dtype, dev, memory.handle, memory)


def device_from_capsule(opened: CapsuleTensor, owner, shape, dtype) -> NDArray:
    """The NDArray of a consumed DLPack tensor in cuda or opencl memory."""
    t = opened.tensor
    dev = Device(t.device.device_type, t.device.device_id)
    if dev.device_type not in _GPU_TYPES:
        raise EmberError(
            f"from_dlpack: ember handles {_GPU_TYPES.names()} memory; got {dev}"
        )
    data = t.data or 0
    if t.byte_offset:
        if dev.device_type == DL_OPENCL:  # a cl_mem is a handle, not an address
            raise EmberValueError(
                f"from_dlpack: an {dev} tensor at byte offset {t.byte_offset} "
                "into its cl_mem; ember's OpenCL arrays start at offset 0"
            )
        data += t.byte_offset
    return DeviceNDArray(shape, dtype, dev, data, owner)
