"""The `cuda` kind: kernels in CUDA C, compiled to PTX by NVRTC, and a launch
plan (`backends/source/gpu.py`, `nvrtc.py`)."""

from typing import ClassVar

from ember.backends.source.gpu_model import GPUBackend
from ember.runtime.errors import EmberValueError


class CUDABackend(GPUBackend):
    kind = "cuda"
    summary = "CUDA C kernels, PTX by NVRTC, and a launch plan"
    device = "cuda"
    options: ClassVar[dict[str, str]] = {
        "arch": "sm_80",
        "max_num_threads": "1024",
        "max_shared_memory_per_block": "49152",
        "thread_warp_size": "32",
    }
    grid_limits = ((2**31 - 1, 65535, 65535), (1024, 1024, 64))
    source_suffix = "cu"
    binary_format = "ptx"

    def face(self):
        from ember.backends.source.faces import CUDAFace

        return CUDAFace()

    def check_target(self, target) -> None:
        arch = target.arch
        if not (arch.startswith("sm_") and arch[3:].rstrip("af").isdigit()):
            raise EmberValueError(
                f"target {target}: -arch must name a CUDA architecture such as "
                f"sm_80, got {arch!r}"
            )

    def binary(self, source: str, target) -> str:
        from ember.backends.source.nvrtc import compile_ptx

        return compile_ptx(source, target.arch)


BACKEND = CUDABackend()
