"""The CUDA device API: the CUDA driver API (``libcuda.so.1``) through ctypes.

Imported only when memory or a kernel is first asked of a ``cuda(i)`` device
(see ``ember.runtime.device_api``). Each device runs in its *primary context*,
retained once and made current in the calling thread before every call, so
ember shares memory, modules and the legacy default stream with any library that
uses the primary context too (PyTorch does). Programs are PTX text, JIT-compiled
by the driver for the GPU at ``cuModuleLoadData``; kernels are launched on the
legacy default stream (``hStream`` 0). Every failure is an ``EmberError``
naming the device, the call and the driver's error name and description.
"""

import ctypes
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_uint, c_void_p

from .device_api import DeviceAPI
from .errors import EmberError

LIBRARY = "libcuda.so.1"
"""The driver library, which the NVIDIA driver installs (not the CUDA toolkit)."""

_CUdeviceptr = ctypes.c_uint64
_CU_DEVICE_ATTRIBUTES = {
    "max_threads_per_block": 1,
    "max_shared_memory_per_block": 8,
    "warp_size": 10,
    "multiprocessor_count": 16,
    "compute_capability_major": 75,
    "compute_capability_minor": 76,
}
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_DEFAULT_SHARED_LIMIT = 48 * 1024
_CUDA_ERROR_NOT_FOUND = 500

# name -> argtypes; every function returns a CUresult (int).
_PROTOTYPES = {
    "cuInit": [c_uint],
    "cuGetErrorName": [c_int, POINTER(c_char_p)],
    "cuGetErrorString": [c_int, POINTER(c_char_p)],
    "cuDeviceGetCount": [POINTER(c_int)],
    "cuDeviceGet": [POINTER(c_int), c_int],
    "cuDeviceGetName": [c_char_p, c_int, c_int],
    "cuDeviceGetAttribute": [POINTER(c_int), c_int, c_int],
    "cuDevicePrimaryCtxRetain": [POINTER(c_void_p), c_int],
    "cuCtxSetCurrent": [c_void_p],
    "cuCtxSynchronize": [],
    "cuMemAlloc_v2": [POINTER(_CUdeviceptr), c_size_t],
    "cuMemFree_v2": [_CUdeviceptr],
    "cuMemcpyHtoD_v2": [_CUdeviceptr, c_void_p, c_size_t],
    "cuMemcpyDtoH_v2": [c_void_p, _CUdeviceptr, c_size_t],
    "cuMemcpyDtoD_v2": [_CUdeviceptr, _CUdeviceptr, c_size_t],
    "cuModuleLoadData": [POINTER(c_void_p), c_char_p],
    "cuModuleUnload": [c_void_p],
    "cuModuleGetFunction": [POINTER(c_void_p), c_void_p, c_char_p],
    "cuFuncSetAttribute": [c_void_p, c_int, c_int],
    "cuLaunchKernel": [
        c_void_p,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_void_p,
        POINTER(c_void_p),
        POINTER(c_void_p),
    ],
    "cuEventCreate": [POINTER(c_void_p), c_uint],
    "cuEventRecord": [c_void_p, c_void_p],
    "cuEventSynchronize": [c_void_p],
    "cuEventElapsedTime": [POINTER(c_float), c_void_p, c_void_p],
    "cuEventDestroy_v2": [c_void_p],
}


class CudaAPI(DeviceAPI):
    """``DeviceAPI`` over the CUDA driver API; one per process.

    Example:
        >>> from ember.runtime.device_api import device_api
        >>> device_api(cuda(0)).describe(0)  # doctest: +SKIP
        {'name': 'NVIDIA H100 80GB HBM3', 'compute_capability_major': 9, ...}
    """

    name = "cuda"

    def __init__(self):
        """Load ``libcuda.so.1`` and initialize the driver.

        Raises:
            EmberError: no driver library, or ``cuInit`` fails (no GPU, a
                driver too old for the kernel module, ...).
        """
        try:
            lib = ctypes.CDLL(LIBRARY)
        except OSError as e:
            raise EmberError(
                f"cuda: no CUDA driver ({LIBRARY}): {e}; cuda devices need an "
                "NVIDIA GPU and its driver"
            ) from None
        self._lib = lib
        self._f = {}
        for name, argtypes in _PROTOTYPES.items():
            try:
                function = getattr(lib, name)
            except AttributeError:
                raise EmberError(
                    f"cuda: {LIBRARY} has no {name}; the NVIDIA driver is too old"
                ) from None
            function.argtypes, function.restype = argtypes, c_int
            self._f[name] = function
        self._call("cuda", "cuInit", 0)
        self._contexts: dict[int, int] = {}

    def _error(self, rc: int) -> str:
        name, text = c_char_p(), c_char_p()
        if self._f["cuGetErrorName"](rc, byref(name)) or not name.value:
            return f"CUresult {rc}"
        self._f["cuGetErrorString"](rc, byref(text))
        description = (text.value or b"").decode(errors="replace")
        return f"{name.value.decode()} ({description})"

    def _call(self, where: str, name: str, *args, detail: str = "") -> None:
        rc = self._f[name](*args)
        if rc:
            raise EmberError(f"{where}: {name}{detail} failed: {self._error(rc)}")

    def _enter(self, dev_id: int) -> str:
        """Make device ``dev_id``'s primary context current in this thread;
        the device's name for messages."""
        where = f"cuda({dev_id})"
        ctx = self._contexts.get(dev_id)
        if ctx is None:
            self.check_id(dev_id)
            device, handle = c_int(), c_void_p()
            self._call(where, "cuDeviceGet", byref(device), dev_id)
            self._call(where, "cuDevicePrimaryCtxRetain", byref(handle), device)
            ctx = self._contexts[dev_id] = handle.value or 0
        self._call(where, "cuCtxSetCurrent", ctx)
        return where

    def device_count(self) -> int:
        count = c_int()
        self._call("cuda", "cuDeviceGetCount", byref(count))
        return count.value

    def describe(self, dev_id: int) -> dict:
        where = self._enter(dev_id)
        name = ctypes.create_string_buffer(256)
        self._call(where, "cuDeviceGetName", name, len(name), dev_id)
        facts: dict = {"name": name.value.decode(errors="replace")}
        value = c_int()
        for key, attribute in _CU_DEVICE_ATTRIBUTES.items():
            self._call(where, "cuDeviceGetAttribute", byref(value), attribute, dev_id)
            facts[key] = value.value
        return facts

    def alloc(self, dev_id: int, nbytes: int) -> int:
        where = self._enter(dev_id)
        pointer = _CUdeviceptr()
        detail = f"({nbytes} bytes)"
        self._call(where, "cuMemAlloc_v2", byref(pointer), nbytes, detail=detail)
        return pointer.value

    def free(self, dev_id: int, handle: int) -> None:
        self._call(self._enter(dev_id), "cuMemFree_v2", handle)

    def copy_from_host(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        self._call(self._enter(dev_id), "cuMemcpyHtoD_v2", dst, src, nbytes)

    def copy_to_host(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        self._call(self._enter(dev_id), "cuMemcpyDtoH_v2", dst, src, nbytes)

    def copy_on_device(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        self._call(self._enter(dev_id), "cuMemcpyDtoD_v2", dst, src, nbytes)

    def sync(self, dev_id: int) -> None:
        self._call(self._enter(dev_id), "cuCtxSynchronize")

    def load(self, dev_id: int, source: str, binary: str | None) -> int:
        where = self._enter(dev_id)
        if binary is None:
            raise EmberError(
                f"{where}: the module carries no PTX; ember loads CUDA kernels "
                "from PTX (the plan's binary) and does not compile CUDA C"
            )
        module = c_void_p()
        self._call(where, "cuModuleLoadData", byref(module), binary.encode() + b"\0")
        return module.value or 0

    def get_kernel(self, dev_id: int, program: int, name: str) -> int:
        where = self._enter(dev_id)
        function = c_void_p()
        rc = self._f["cuModuleGetFunction"](byref(function), program, name.encode())
        if rc == _CUDA_ERROR_NOT_FOUND:
            raise EmberError(f"{where}: the PTX defines no kernel {name!r}")
        if rc:
            raise EmberError(
                f"{where}: cuModuleGetFunction({name!r}) failed: {self._error(rc)}"
            )
        return function.value or 0

    def unload(self, dev_id: int, program: int, kernels: list[int]) -> None:
        self._call(self._enter(dev_id), "cuModuleUnload", program)

    def launch(self, dev_id, kernel, grid, block, shared_bytes, pointers) -> None:
        where = self._enter(dev_id)
        if shared_bytes > _DEFAULT_SHARED_LIMIT:  # more must be asked for
            self._call(
                where,
                "cuFuncSetAttribute",
                kernel,
                _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes,
                detail=f"(dynamic shared memory, {shared_bytes} bytes)",
            )
        values = (_CUdeviceptr * len(pointers))(*pointers)
        base, size = ctypes.addressof(values), ctypes.sizeof(_CUdeviceptr)
        params = (c_void_p * len(pointers))(
            *(base + i * size for i in range(len(pointers)))
        )
        self._call(
            where,
            "cuLaunchKernel",
            kernel,
            *grid,
            *block,
            shared_bytes,
            None,
            params,
            None,
            detail=f"(grid {list(grid)}, block {list(block)})",
        )

    def elapsed_ms(self, dev_id: int, run) -> float:
        """Milliseconds of GPU time that the work ``run()`` queues takes,
        measured between two CUDA events on the legacy default stream.

        Example:
            >>> device_api(cuda(0)).elapsed_ms(0, lambda: f(a, b, c))  # doctest: +SKIP
            0.0123
        """
        where = self._enter(dev_id)
        start, end, ms = c_void_p(), c_void_p(), c_float()
        self._call(where, "cuEventCreate", byref(start), 0)
        try:
            self._call(where, "cuEventCreate", byref(end), 0)
            try:
                self._call(where, "cuEventRecord", start, None)
                run()
                self._enter(dev_id)  # run() may have switched contexts
                self._call(where, "cuEventRecord", end, None)
                self._call(where, "cuEventSynchronize", end)
                self._call(where, "cuEventElapsedTime", byref(ms), start, end)
            finally:
                self._f["cuEventDestroy_v2"](end)
        finally:
            self._f["cuEventDestroy_v2"](start)
        return ms.value


API = CudaAPI
"""The device API `ember.runtime.device_api` finds for this kind."""
