"""ember's source backends: loop IR printed as C99, OpenCL C or CUDA C.

One printer (`printer.py`) with three faces. `c` compiles its C with the system
compiler into a library of packed functions (`c.py`); `opencl` and `cuda` split
each function into device kernels at its thread-bound loops and a launch plan
the runtime's `DeviceModule` runs (`gpu.py`).
"""

from ember.backends.source.target import (
    KINDS,
    DeviceTarget,
    resolve_target,
    target_kind,
)


def build_source(module, target: DeviceTarget, entry: str | None, loop_source: str):
    """Compile loop IR `module` (after the te-to-loop segment) for `target`.

    Returns:
        A runtime `Module`: a library of packed functions for `c`, a
        `DeviceModule` for `opencl` and `cuda`. Its `loop_source` is `loop_source`.
    """
    if target.kind == "c":
        from ember.backends.source.c import build_c

        mod = build_c(module, target, entry)
    else:
        from ember.backends.source.gpu import build_gpu

        mod = build_gpu(module, target, entry)
    mod.loop_source = loop_source  # type: ignore[attr-defined]
    return mod


__all__ = ["KINDS", "DeviceTarget", "build_source", "resolve_target", "target_kind"]
