"""The ember runtime: run compiled code with nothing but numpy and ctypes.

Arrays live in ``NDArray`` (CPU memory described by a DLPack ``DLTensor``; zero-copy
to and from numpy, PyTorch and anything else that speaks DLPack) and compiled code
is called as a ``PackedFunc`` through a packed C ABI. This package imports nothing
from the compiler.
"""

from .errors import EmberError
from .ndarray import Device, NDArray, array, cpu, device, empty, from_dlpack
from .packed_func import PackedFunc, TypeCode

__all__ = [
    "Device",
    "EmberError",
    "NDArray",
    "PackedFunc",
    "TypeCode",
    "array",
    "cpu",
    "device",
    "empty",
    "from_dlpack",
]
