"""The `opencl` kind: kernels in OpenCL C and a launch plan, built by the
driver when loaded (`backends/source/gpu.py`; PoCL runs them on a CPU)."""

from typing import ClassVar

from ember.backends.source.gpu_model import GPUBackend


class OpenCLBackend(GPUBackend):
    kind = "opencl"
    summary = "OpenCL C kernels and a launch plan"
    device = "opencl"
    options: ClassVar[dict[str, str]] = {
        "max_num_threads": "256",
        "max_shared_memory_per_block": "16384",
        "thread_warp_size": "1",
    }
    source_suffix = "cl"

    def face(self):
        from ember.backends.source.faces import OpenCLFace

        return OpenCLFace()


BACKEND = OpenCLBackend()
