"""The OpenCL device API: the OpenCL ICD loader (``libOpenCL.so.1``) through ctypes.

Imported only when memory or a kernel is first asked of an ``opencl(i)``
device (see ``ember.runtime.device_api``). Devices are numbered across every
platform the loader finds, GPUs first; a machine with no OpenCL GPU numbers all
its devices instead (PoCL's CPU device, say). Each device gets one context and
one in-order command queue; reads, writes and copies are blocking, kernel
launches are queued. Programs are OpenCL C, built for the device when a module
first runs on it; a failed build raises an ``EmberError`` holding the build log.
"""

import ctypes
from ctypes import (
    POINTER,
    byref,
    c_char_p,
    c_int32,
    c_size_t,
    c_uint32,
    c_uint64,
    c_void_p,
)

from .device_api import DeviceAPI
from .errors import EmberError

LIBRARY = "libOpenCL.so.1"
"""The ICD loader (Debian: ocl-icd-libopencl1), which finds the platforms
listed in ``/etc/OpenCL/vendors``."""

_DEVICE_TYPE_GPU = 1 << 2
_DEVICE_TYPE_ALL = 0xFFFFFFFF
_DEVICE_NAME = 0x102B
_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004
_DEVICE_LOCAL_MEM_SIZE = 0x1023
_PLATFORM_NAME = 0x0902
_MEM_READ_WRITE = 1
_PROGRAM_BUILD_LOG = 0x1183
_TRUE = 1
_SUCCESS, _DEVICE_NOT_FOUND, _PLATFORM_NOT_FOUND = 0, -1, -1001

_ERRORS = {
    -1: "CL_DEVICE_NOT_FOUND",
    -2: "CL_DEVICE_NOT_AVAILABLE",
    -3: "CL_COMPILER_NOT_AVAILABLE",
    -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE",
    -5: "CL_OUT_OF_RESOURCES",
    -6: "CL_OUT_OF_HOST_MEMORY",
    -11: "CL_BUILD_PROGRAM_FAILURE",
    -30: "CL_INVALID_VALUE",
    -32: "CL_INVALID_PLATFORM",
    -33: "CL_INVALID_DEVICE",
    -34: "CL_INVALID_CONTEXT",
    -36: "CL_INVALID_COMMAND_QUEUE",
    -38: "CL_INVALID_MEM_OBJECT",
    -42: "CL_INVALID_BINARY",
    -43: "CL_INVALID_BUILD_OPTIONS",
    -44: "CL_INVALID_PROGRAM",
    -45: "CL_INVALID_PROGRAM_EXECUTABLE",
    -46: "CL_INVALID_KERNEL_NAME",
    -48: "CL_INVALID_KERNEL",
    -49: "CL_INVALID_ARG_INDEX",
    -50: "CL_INVALID_ARG_VALUE",
    -51: "CL_INVALID_ARG_SIZE",
    -52: "CL_INVALID_KERNEL_ARGS",
    -53: "CL_INVALID_WORK_DIMENSION",
    -54: "CL_INVALID_WORK_GROUP_SIZE",
    -55: "CL_INVALID_WORK_ITEM_SIZE",
    -56: "CL_INVALID_GLOBAL_OFFSET",
    -61: "CL_INVALID_BUFFER_SIZE",
    -63: "CL_INVALID_GLOBAL_WORK_SIZE",
    -1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

_P = c_void_p  # every cl_* object is an opaque pointer
_PROTOTYPES = {
    "clGetPlatformIDs": (c_int32, [c_uint32, POINTER(_P), POINTER(c_uint32)]),
    "clGetPlatformInfo": (c_int32, [_P, c_uint32, c_size_t, _P, POINTER(c_size_t)]),
    "clGetDeviceIDs": (
        c_int32,
        [_P, c_uint64, c_uint32, POINTER(_P), POINTER(c_uint32)],
    ),
    "clGetDeviceInfo": (c_int32, [_P, c_uint32, c_size_t, _P, POINTER(c_size_t)]),
    "clCreateContext": (_P, [_P, c_uint32, POINTER(_P), _P, _P, POINTER(c_int32)]),
    "clCreateCommandQueue": (_P, [_P, _P, c_uint64, POINTER(c_int32)]),
    "clCreateBuffer": (_P, [_P, c_uint64, c_size_t, _P, POINTER(c_int32)]),
    "clEnqueueWriteBuffer": (
        c_int32,
        [_P, _P, c_uint32, c_size_t, c_size_t, _P, c_uint32, _P, _P],
    ),
    "clEnqueueReadBuffer": (
        c_int32,
        [_P, _P, c_uint32, c_size_t, c_size_t, _P, c_uint32, _P, _P],
    ),
    "clEnqueueCopyBuffer": (
        c_int32,
        [_P, _P, _P, c_size_t, c_size_t, c_size_t, c_uint32, _P, _P],
    ),
    "clCreateProgramWithSource": (
        _P,
        [_P, c_uint32, POINTER(c_char_p), POINTER(c_size_t), POINTER(c_int32)],
    ),
    "clBuildProgram": (c_int32, [_P, c_uint32, POINTER(_P), c_char_p, _P, _P]),
    "clGetProgramBuildInfo": (
        c_int32,
        [_P, _P, c_uint32, c_size_t, _P, POINTER(c_size_t)],
    ),
    "clCreateKernel": (_P, [_P, c_char_p, POINTER(c_int32)]),
    "clSetKernelArg": (c_int32, [_P, c_uint32, c_size_t, _P]),
    "clEnqueueNDRangeKernel": (
        c_int32,
        [_P, _P, c_uint32, _P, POINTER(c_size_t), POINTER(c_size_t), c_uint32, _P, _P],
    ),
    "clFinish": (c_int32, [_P]),
    "clReleaseMemObject": (c_int32, [_P]),
    "clReleaseKernel": (c_int32, [_P]),
    "clReleaseProgram": (c_int32, [_P]),
}
# OpenCL 2.0; a 1.x platform's queue comes from clCreateCommandQueue instead.
_QUEUE_WITH_PROPERTIES = (_P, [_P, _P, _P, POINTER(c_int32)])


def _error_name(rc: int) -> str:
    return f"{_ERRORS.get(rc, 'error')} ({rc})"


class OpenCLAPI(DeviceAPI):
    """``DeviceAPI`` over the OpenCL ICD loader; one per process.

    Example:
        >>> from ember.runtime.device_api import device_api
        >>> device_api(opencl(0)).describe(0)["name"]  # doctest: +SKIP
        'cpu-haswell-AMD EPYC 9B45'
    """

    name = "opencl"

    def __init__(self):
        """Load ``libOpenCL.so.1`` and list the platforms' devices.

        Raises:
            EmberError: no ICD loader, or no OpenCL platform or device.
        """
        try:
            lib = ctypes.CDLL(LIBRARY)
        except OSError as e:
            raise EmberError(
                f"opencl: no OpenCL ICD loader ({LIBRARY}): {e}; install one "
                "(Debian: ocl-icd-libopencl1) and a platform (a GPU driver, or "
                "pocl-opencl-icd)"
            ) from None
        self._f = {}
        for name, (restype, argtypes) in _PROTOTYPES.items():
            function = getattr(lib, name)
            function.argtypes, function.restype = argtypes, restype
            self._f[name] = function
        self._queue_with_properties = getattr(
            lib, "clCreateCommandQueueWithProperties", None
        )
        if self._queue_with_properties is not None:
            restype, argtypes = _QUEUE_WITH_PROPERTIES
            self._queue_with_properties.argtypes = argtypes
            self._queue_with_properties.restype = restype
        self._devices = self._find_devices()
        self._queues: dict[int, tuple[int, int]] = {}  # dev_id -> (context, queue)

    def _call(self, where: str, name: str, *args, detail: str = "") -> None:
        rc = self._f[name](*args)
        if rc != _SUCCESS:
            raise EmberError(f"{where}: {name}{detail} failed: {_error_name(rc)}")

    def _create(self, where: str, name: str, *args, detail: str = "") -> int:
        """Call a clCreate* function (which returns the object and reports
        through its last argument); the new object."""
        rc = c_int32()
        handle = self._f[name](*args, byref(rc))
        if rc.value != _SUCCESS or not handle:
            raise EmberError(f"{where}: {name}{detail} failed: {_error_name(rc.value)}")
        return handle

    def _find_devices(self) -> list[int]:
        count = c_uint32()
        rc = self._f["clGetPlatformIDs"](0, None, byref(count))
        if rc == _PLATFORM_NOT_FOUND or (rc == _SUCCESS and not count.value):
            raise EmberError(
                "opencl: no OpenCL platform; install a GPU's OpenCL driver or "
                "pocl-opencl-icd (a platform lists itself in /etc/OpenCL/vendors)"
            )
        if rc != _SUCCESS:
            raise EmberError(f"opencl: clGetPlatformIDs failed: {_error_name(rc)}")
        platforms = (_P * count.value)()
        self._call("opencl", "clGetPlatformIDs", count.value, platforms, None)
        for kind in (_DEVICE_TYPE_GPU, _DEVICE_TYPE_ALL):
            found = []
            for platform in platforms:
                n = c_uint32()
                rc = self._f["clGetDeviceIDs"](platform, kind, 0, None, byref(n))
                if rc == _DEVICE_NOT_FOUND or not n.value:
                    continue
                if rc != _SUCCESS:
                    raise EmberError(
                        f"opencl: clGetDeviceIDs failed: {_error_name(rc)}"
                    )
                ids = (_P * n.value)()
                self._call("opencl", "clGetDeviceIDs", platform, kind, n, ids, None)
                found += [d for d in ids if d]
            if found:
                return found
        raise EmberError("opencl: the OpenCL platforms have no device")

    def _info(self, getter: str, handle: int, key: int) -> bytes:
        size = c_size_t()
        self._call("opencl", getter, handle, key, 0, None, byref(size))
        value = ctypes.create_string_buffer(size.value)
        self._call("opencl", getter, handle, key, size, value, None)
        return value.raw

    def device_count(self) -> int:
        return len(self._devices)

    def _device(self, dev_id: int) -> int:
        self.check_id(dev_id)
        return self._devices[dev_id]

    def _queue(self, dev_id: int) -> tuple[str, int, int]:
        """The device's name for messages, context and command queue."""
        where = f"opencl({dev_id})"
        found = self._queues.get(dev_id)
        if found is None:
            device = _P(self._device(dev_id))
            context = self._create(
                where, "clCreateContext", None, 1, byref(device), None, None
            )
            queue = 0
            if self._queue_with_properties is not None:
                rc = c_int32()
                queue = (
                    self._queue_with_properties(context, device, None, byref(rc)) or 0
                )
            if not queue:  # no OpenCL 2.0 on this platform
                queue = self._create(where, "clCreateCommandQueue", context, device, 0)
            found = self._queues[dev_id] = (context, queue)
        return where, found[0], found[1]

    def describe(self, dev_id: int) -> dict:
        device = self._device(dev_id)
        get = self._info
        return {
            "name": get("clGetDeviceInfo", device, _DEVICE_NAME).rstrip(b"\0").decode(),
            "max_work_group_size": int.from_bytes(
                get("clGetDeviceInfo", device, _DEVICE_MAX_WORK_GROUP_SIZE), "little"
            ),
            "local_mem_size": int.from_bytes(
                get("clGetDeviceInfo", device, _DEVICE_LOCAL_MEM_SIZE), "little"
            ),
        }

    def alloc(self, dev_id: int, nbytes: int) -> int:
        where, context, _ = self._queue(dev_id)
        return self._create(
            where,
            "clCreateBuffer",
            context,
            _MEM_READ_WRITE,
            nbytes,
            None,
            detail=f"({nbytes} bytes)",
        )

    def free(self, dev_id: int, handle: int) -> None:
        self._call(f"opencl({dev_id})", "clReleaseMemObject", handle)

    def copy_from_host(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        where, _, queue = self._queue(dev_id)
        self._call(
            where,
            "clEnqueueWriteBuffer",
            queue,
            dst,
            _TRUE,
            0,
            nbytes,
            src,
            0,
            None,
            None,
        )

    def copy_to_host(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        where, _, queue = self._queue(dev_id)
        self._call(
            where,
            "clEnqueueReadBuffer",
            queue,
            src,
            _TRUE,
            0,
            nbytes,
            dst,
            0,
            None,
            None,
        )

    def copy_on_device(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        where, _, queue = self._queue(dev_id)
        self._call(
            where, "clEnqueueCopyBuffer", queue, src, dst, 0, 0, nbytes, 0, None, None
        )
        self._call(where, "clFinish", queue)

    def sync(self, dev_id: int) -> None:
        where, _, queue = self._queue(dev_id)
        self._call(where, "clFinish", queue)

    def load(self, dev_id: int, source: str, binary: str | None) -> int:
        where, context, _ = self._queue(dev_id)
        if binary is not None:
            raise EmberError(
                f"{where}: an OpenCL program is built from its source; the launch "
                "plan carries a binary"
            )
        text = source.encode()
        program = self._create(
            where,
            "clCreateProgramWithSource",
            context,
            1,
            byref(c_char_p(text)),
            byref(c_size_t(len(text))),
        )
        device = _P(self._devices[dev_id])
        rc = self._f["clBuildProgram"](program, 1, byref(device), b"", None, None)
        if rc != _SUCCESS:
            try:
                log = self._info_build_log(program, device.value or 0)
            finally:
                self._f["clReleaseProgram"](program)
            raise EmberError(
                f"{where}: clBuildProgram failed: {_error_name(rc)}; build log:\n{log}"
            )
        return program

    def _info_build_log(self, program: int, device: int) -> str:
        size = c_size_t()
        get = self._f["clGetProgramBuildInfo"]
        if get(program, device, _PROGRAM_BUILD_LOG, 0, None, byref(size)):
            return "(no build log)"
        log = ctypes.create_string_buffer(size.value)
        get(program, device, _PROGRAM_BUILD_LOG, size, log, None)
        return log.value.decode(errors="replace").strip() or "(empty build log)"

    def get_kernel(self, dev_id: int, program: int, name: str) -> int:
        rc = c_int32()
        kernel = self._f["clCreateKernel"](program, name.encode(), byref(rc))
        if rc.value == -46:  # CL_INVALID_KERNEL_NAME
            raise EmberError(
                f"opencl({dev_id}): the program defines no kernel {name!r}"
            )
        if rc.value != _SUCCESS or not kernel:
            raise EmberError(
                f"opencl({dev_id}): clCreateKernel({name!r}) failed: "
                f"{_error_name(rc.value)}"
            )
        return kernel

    def unload(self, dev_id: int, program: int, kernels: list[int]) -> None:
        for kernel in kernels:
            self._f["clReleaseKernel"](kernel)
        self._f["clReleaseProgram"](program)

    def launch(self, dev_id, kernel, grid, block, shared_bytes, pointers) -> None:
        where, _, queue = self._queue(dev_id)
        if shared_bytes:
            raise EmberError(
                f"{where}: OpenCL kernels take no dynamic shared memory (declare "
                f"__local arrays in the kernel); the launch asks {shared_bytes} bytes"
            )
        size = ctypes.sizeof(_P)
        for i, pointer in enumerate(pointers):
            self._call(
                where,
                "clSetKernelArg",
                kernel,
                i,
                size,
                byref(_P(pointer)),
                detail=f"(argument {i})",
            )
        global_size = (c_size_t * 3)(*(g * b for g, b in zip(grid, block, strict=True)))
        local_size = (c_size_t * 3)(*block)
        self._call(
            where,
            "clEnqueueNDRangeKernel",
            queue,
            kernel,
            3,
            None,
            global_size,
            local_size,
            0,
            None,
            None,
            detail=f"(global {list(global_size)}, local {list(block)})",
        )


API = OpenCLAPI
"""The device API `ember.runtime.device_api` finds for this kind."""
