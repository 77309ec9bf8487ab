"""ember's backends: one object per target kind.

A `Backend` is all the compiler knows of one kind of target: its facts (target
options and their defaults), its code generator after the te-to-loop segment,
the face its source is printed with, and the runtime device its code runs on.
The rest of the compiler asks `backend(kind)` and never branches on a kind's
name, as tinygrad asks a device's renderer.

A kind is the module `ember.backends.<kind>` (a file or a package) defining
`BACKEND`, an instance of a `Backend` subclass; its runtime device, where it
has one of its own, is `ember.runtime.<device>_api` (see
`ember.runtime.device_api`). Adding a kind edits no table:

    # ember/backends/metal.py
    class MetalBackend(Backend):
        kind = "metal"; device = "metal"; is_gpu = True
        options = {"max_num_threads": "1024", ...}
    BACKEND = MetalBackend()

    backend("metal").build(module, target, entry)
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar

from ember.runtime.errors import EmberValueError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp


class Backend:
    """One target kind (see the module docstring)."""

    kind: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    """One line for listings (`ember-opt --help`)."""
    device: ClassVar[str] = "cpu"
    """The runtime device its code runs on, by its DLPack name."""
    is_gpu: ClassVar[bool] = False
    """Code runs as kernels on a device with a thread hierarchy."""
    options: ClassVar[dict[str, str]] = {}
    """Target options it takes (TVM's names, without the dash), with their
    defaults ("" for none)."""
    integer_options: ClassVar[tuple[str, ...]] = (
        "max_num_threads",
        "max_shared_memory_per_block",
        "thread_warp_size",
    )
    """Options whose value is an integer >= 1."""
    grid_limits: ClassVar[tuple[tuple[int, int, int], tuple[int, int, int]] | None]
    grid_limits = None
    """The most blocks and threads per block along x, y and z, where the device
    API caps them, or None."""
    source_suffix: ClassVar[str] = ""
    """The file suffix of its source (a `get_source` format), "" for none."""
    binary_format: ClassVar[str] = ""
    """What `binary` gives (a `get_source` format: CUDA's "ptx")."""

    def face(self) -> Any:
        """The C-family face its source is printed with (`backends.source.faces`)."""
        raise EmberValueError(f"target kind {self.kind!r} prints no C-family source")

    def check_target(self, target: Any) -> None:
        """Refuse a target of this kind whose options do not fit (a message
        naming the option); nothing by default."""

    def build(self, module: ModuleOp, target: Any, entry: str | None) -> Any:
        """Compile loop IR `module` (after the te-to-loop segment) for
        `target`; a runtime `Module`."""
        raise NotImplementedError

    def binary(self, source: str, target: Any) -> str | None:
        """The device binary a GPU plan carries beside its source (CUDA's PTX),
        or None: the driver builds the source at load time."""
        return None

    # --- models: what `ember-model` does after te, for this kind ---------------

    models: ClassVar[bool] = False
    """Whether `compile_model` compiles whole models for it."""

    memory: ClassVar[str] = "workspace"
    """How `graph-plan-memory` places a model's intermediates: "workspace"
    (one arena, offsets reused by liveness, views are pointer arithmetic) or
    "buffers" (a buffer per slot, slots reused by liveness: where a kernel
    argument is a whole buffer, as an OpenCL `cl_mem` or a Vulkan binding)."""

    def model_lowering(self, plan: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Its segments of `ember-model` after te, `plan` being the
        `graph-plan-memory` pass with its options: by default each kernel is
        compiled apart (`te-compile-kernels`) and the model function becomes
        `default_run` over the planned memory; a kind whose entry is machine
        code adds the segments lowering it."""
        return (("loop", ("te-compile-kernels", plan)),)

    def kernel_passes(self) -> tuple[str, ...]:
        """The passes `te-compile-kernels` runs on each kernel after
        `KERNELS_TO_LOOP` (part of the kernel's cache key)."""
        return ()

    def compile_kernel(self, module: ModuleOp, symbol: str, target: Any) -> bytes:
        """A model's kernel, loop IR of the function `symbol` (its buffers the
        caller's), compiled to what `link_model` takes, stored in the kernel
        cache."""
        raise EmberValueError(f"target kind {self.kind!r} compiles no models")

    def kernel_problem(self, code: bytes, symbol: str) -> str | None:
        """Why cached `code` cannot be kernel `symbol`'s, or None."""
        return None

    def link_model(
        self,
        module: ModuleOp,
        target: Any,
        info: dict,
        params: dict,
        kernels: list,
        entry_loop: str | None,
    ) -> Any:
        """The runtime `Module` of a model after `ember-model`: `module` holds
        its entry, `info` is its `ember.model` description, `params` the values
        of the params it reads by name (checked against `info`), `kernels`
        each kernel's `KernelCode` (`compile_kernel`'s code) in the order of
        `ember.objects`, `entry_loop` the entry's loop IR."""
        raise EmberValueError(f"target kind {self.kind!r} compiles no models")


@cache
def backend(kind: str) -> Backend:
    """The backend of target kind `kind` ("llvm", "c", "opencl", "cuda", ...).

    Raises:
        EmberValueError: no backend of that name.
    """
    module_name = f"{__name__}.{kind}"
    try:
        module = import_module(module_name) if kind.isidentifier() else None
    except ModuleNotFoundError as e:
        if e.name != module_name:
            raise
        module = None
    found = getattr(module, "BACKEND", None)
    if not isinstance(found, Backend):
        raise EmberValueError(
            f"unsupported target kind {kind!r}, expected one of {', '.join(kinds())}"
        )
    return found


KINDS = ("c", "cuda", "llvm", "metal", "opencl", "vulkan")
"""Every target kind, sorted: each names the module of this package that
defines its `BACKEND`. Listed rather than found by importing every module, so
that tools list them without loading LLVM (`tests/test_backend_llvm.py`
checks the list against the modules)."""


def kinds() -> tuple[str, ...]:
    """Every target kind a backend module defines, sorted."""
    return KINDS


__all__ = ["Backend", "backend", "kinds"]
