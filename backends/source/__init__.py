"""ember's source backends: loop IR printed as C99, OpenCL C or CUDA C.

One printer (`printer.py`) with a face per kind (the kind's `Backend.face`). `c` compiles its C with the system
compiler into a library of packed functions (`c.py`); `opencl` and `cuda` split
each function into device kernels at its thread-bound loops and a launch plan
the runtime's `DeviceModule` runs (`gpu.py`).
"""

from ember.backends.source.target import DeviceTarget, resolve_target, target_kind

__all__ = ["DeviceTarget", "resolve_target", "target_kind"]
