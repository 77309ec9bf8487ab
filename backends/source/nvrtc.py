"""CUDA C to PTX with NVRTC, through ctypes: no GPU and no CUDA toolkit needed.

The library comes from the `nvidia-cuda-nvrtc-cu12` wheel (`pip install
ember[cuda]`), else from the system (`libnvrtc.so*`). NVRTC compiles exactly
the source that `get_source("cuda")` shows, for a virtual architecture:

    ptx = compile_ptx(source, "sm_80")      # --gpu-architecture=compute_80

A compile error raises `NVRTCError` carrying NVRTC's log.
"""

import ctypes
import ctypes.util
import glob
import os
from functools import cache

from ember.runtime.errors import EmberError


class NVRTCError(EmberError, RuntimeError):
    """NVRTC is missing, or it rejected the source (the message has its log)."""


def library_candidates() -> list[str]:
    """Where libnvrtc may be: the wheel's lib folder first, then the system."""
    found: list[str] = []
    try:
        import nvidia.cuda_nvrtc  # type: ignore[import-not-found]

        for folder in nvidia.cuda_nvrtc.__path__:
            found += sorted(glob.glob(os.path.join(folder, "lib", "libnvrtc.so*")))
    except ImportError:
        pass
    found = [f for f in found if "builtins" not in f and ".alt." not in f]
    system = ctypes.util.find_library("nvrtc")
    if system:
        found.append(system)
    found += sorted(glob.glob("/usr/local/cuda/lib64/libnvrtc.so*"), reverse=True)
    found += ["libnvrtc.so.12", "libnvrtc.so"]
    return found


@cache
def _library() -> ctypes.CDLL:
    errors = []
    for path in library_candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as error:
            errors.append(str(error))
            continue
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        return lib
    raise NVRTCError(
        "target cuda needs NVRTC (libnvrtc.so): pip install 'ember[cuda]' "
        "(the nvidia-cuda-nvrtc-cu12 wheel) or install the CUDA toolkit"
        + (f"; tried: {'; '.join(errors[:3])}" if errors else "")
    )


def version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(_library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "version")
    return major.value, minor.value


def _check(result: int, what: str, log: str = "") -> None:
    if result != 0:
        text = _library().nvrtcGetErrorString(result)
        message = text.decode() if text else f"error {result}"
        raise NVRTCError(f"NVRTC {what}: {message}" + (f"\n{log}" if log else ""))


def compile_ptx(source: str, arch: str, name: str = "ember.cu") -> str:
    """PTX text for CUDA C `source` and architecture `arch` ("sm_80")."""
    lib = _library()
    program = ctypes.c_void_p()
    _check(
        lib.nvrtcCreateProgram(
            ctypes.byref(program), source.encode(), name.encode(), 0, None, None
        ),
        "create program",
    )
    try:
        options = [f"--gpu-architecture=compute_{arch[3:]}".encode(), b"--std=c++17"]
        array = (ctypes.c_char_p * len(options))(*options)
        result = lib.nvrtcCompileProgram(program, len(options), array)
        size = ctypes.c_size_t()
        _check(lib.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "log size")
        log = ctypes.create_string_buffer(size.value)
        _check(lib.nvrtcGetProgramLog(program, log), "log")
        _check(result, f"compile for {arch}", log.value.decode(errors="replace"))
        _check(lib.nvrtcGetPTXSize(program, ctypes.byref(size)), "PTX size")
        ptx = ctypes.create_string_buffer(size.value)
        _check(lib.nvrtcGetPTX(program, ptx), "PTX")
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


__all__ = ["NVRTCError", "compile_ptx", "library_candidates", "version"]
