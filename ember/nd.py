"""`ember.nd`: the runtime's arrays under TVM's `tvm.nd` names.

    a = ember.nd.array(np.ones(4, "float32"), ember.cpu(0))
    b = ember.nd.empty((4,), "float32")

The names are `ember.runtime`'s own; this module adds none and, like the runtime,
imports nothing from the compiler.
"""

from ember.runtime import (
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

__all__ = [
    "Device",
    "NDArray",
    "array",
    "cpu",
    "cuda",
    "device",
    "empty",
    "from_dlpack",
    "opencl",
]
