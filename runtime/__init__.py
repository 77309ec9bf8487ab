"""The ember runtime: run compiled code with nothing but numpy and ctypes.

Arrays live in ``NDArray`` (memory described by a DLPack ``DLTensor``; zero-copy
to and from numpy, PyTorch and anything else that speaks DLPack; on the CPU, or on
a GPU: ``cuda(0)``, ``opencl(0)``, whose driver is loaded only when first used),
GPU kernels run from a ``DeviceModule`` (a launch plan), compiled code is a
``Module`` of ``PackedFunc``s called through a packed C ABI, ``load_module`` opens a
shared library of such functions, and ``register_func`` makes Python functions
reachable by name. This package imports nothing from the compiler, so a deployed
model needs only ``ember.runtime``.
"""

from .device_graph import DeviceGraphExecutor
from .device_module import DeviceModule, check_plan
from .errors import (
    CompilerNotFoundError,
    EmberError,
    EmberTypeError,
    EmberValueError,
    ExportError,
    FunctionNotFoundError,
    IncompatibleLibraryError,
    InvalidLibraryError,
    LibraryLoadError,
    LibraryNotFoundError,
    LinkError,
)
from .graph_module import GraphExecutor, GraphModule
from .module import DSOModule, Module, load_module
from .ndarray import (
    Device,
    NDArray,
    array,
    cpu,
    cuda,
    device,
    empty,
    from_dlpack,
    opencl,
)
from .packed_func import PackedFunc, TypeCode
from .parallel import get_num_threads, set_num_threads
from .params import load_param_dict, pack_params, param_layout, save_param_dict
from .profiling import BenchmarkResult
from .registry import (
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)

__all__ = [
    "BenchmarkResult",
    "CompilerNotFoundError",
    "ExportError",
    "FunctionNotFoundError",
    "IncompatibleLibraryError",
    "InvalidLibraryError",
    "LibraryLoadError",
    "LibraryNotFoundError",
    "LinkError",
    "DSOModule",
    "Device",
    "DeviceGraphExecutor",
    "DeviceModule",
    "EmberError",
    "EmberTypeError",
    "EmberValueError",
    "GraphExecutor",
    "GraphModule",
    "Module",
    "NDArray",
    "PackedFunc",
    "TypeCode",
    "array",
    "check_plan",
    "cpu",
    "cuda",
    "device",
    "empty",
    "from_dlpack",
    "get_global_func",
    "get_num_threads",
    "list_global_func_names",
    "load_module",
    "load_param_dict",
    "opencl",
    "pack_params",
    "param_layout",
    "register_func",
    "remove_global_func",
    "save_param_dict",
    "set_num_threads",
]
