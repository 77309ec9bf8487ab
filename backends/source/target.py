"""Targets whose code is source for a device or a C compiler: `c`, `opencl`,
`cuda`, and any other kind a backend defines (`ember.backends`).

    DeviceTarget("cuda -arch=sm_90")                 # CUDA C, PTX for sm_90 by NVRTC
    DeviceTarget("opencl -max_num_threads=128")      # OpenCL C, built by the driver
    DeviceTarget("c -mcpu=cortex-m4")                # C99, microcontroller mode
    DeviceTarget({"kind": "cuda", "arch": "sm_80"})

Their facts are what a GPU schedule needs, named as TVM names them:
`max_num_threads` (threads in a block / work-group), `max_shared_memory_per_block`
(bytes of `shared` scope) and `thread_warp_size`. They are the kind's defaults
(`Backend.options`) unless the target string states them; ember never asks a
device while compiling, so code can be built on a machine that has none.

`c` code is portable C99 with a packed entry per function; with `-mcpu=cortex-m*`
(or `-micro=true`) it is microcontroller code: no heap, no threads, one static
workspace. `host` is the LLVM target of the code that drives the device (the
machine ember runs on).
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ember.backends import backend, kinds
from ember.runtime.errors import EmberTypeError, EmberValueError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp


class DeviceTarget:
    """A target of a source kind (see the module docstring).

    Attributes:
        kind: "c", "opencl", "cuda", or another backend's kind.
        arch: the CUDA virtual architecture the PTX is for ("sm_80"); "" otherwise.
        mcpu: the CPU a `c` target names ("" when none).
        micro: `c` code for a microcontroller: no heap, threads or libm beyond C99.
        max_num_threads: the most threads one block (work-group) may have.
        max_shared_memory_per_block: bytes of `shared` memory one block may use.
        thread_warp_size: threads that run in lock step (1 where unknown).
    """

    def __init__(self, spec: "str | Mapping[str, Any] | DeviceTarget"):
        if isinstance(spec, DeviceTarget):
            kind, options = spec.kind, dict(spec._options)
        elif isinstance(spec, str):
            kind, options = _parse_string(spec)
        elif isinstance(spec, Mapping):
            kind, options = _parse_dict(spec)
        else:
            raise EmberTypeError(f"expected a target string or dict, got {spec!r}")
        self.kind = kind
        self._options = options
        self.backend = backend(kind)

        def option(name: str) -> str:
            return options.get(name, self.backend.options.get(name, ""))

        self.arch = option("arch")
        self.mcpu = option("mcpu")
        micro = option("micro") or ("true" if self.mcpu.startswith("cortex-m") else "")
        if micro not in ("", "true", "false", "1", "0"):
            raise EmberValueError(
                f"target {self}: -micro is true or false, got {micro!r}"
            )
        self.micro = micro in ("true", "1")
        self.max_num_threads = int(option("max_num_threads") or 1)
        self.max_shared_memory_per_block = int(
            option("max_shared_memory_per_block") or 0
        )
        self.thread_warp_size = int(option("thread_warp_size") or 1)
        self.backend.check_target(self)

    @property
    def is_gpu(self) -> bool:
        """Code runs as kernels on a device with a thread hierarchy."""
        return self.backend.is_gpu

    @property
    def host(self):
        """The LLVM target of the machine that drives the device (this one)."""
        from ember.backends.llvm.target import Target

        return Target.host()

    def __str__(self) -> str:
        return " ".join([self.kind, *(f"-{k}={v}" for k, v in self._options.items())])

    def __repr__(self) -> str:
        return f"DeviceTarget({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceTarget) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def _parse_string(spec: str) -> tuple[str, dict[str, str]]:
    kind, *words = spec.split() or [""]
    _check_kind(spec, kind)
    options: dict[str, str] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not key.startswith("-") or not eq or not value:
            raise EmberValueError(
                f"target {spec!r}: expected -option=value, got {word!r}"
            )
        _set_option(options, spec, kind, key.lstrip("-"), value)
    return kind, options


def _parse_dict(spec: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    kind = str(spec.get("kind", ""))
    _check_kind(dict(spec), kind)
    options: dict[str, str] = {}
    for key, value in spec.items():
        if key != "kind":
            _set_option(
                options, dict(spec), kind, str(key).replace("-", "_"), str(value)
            )
    return kind, options


def _check_kind(spec: object, kind: str) -> None:
    known = [k for k in kinds() if k != "llvm"]
    if kind not in known:
        raise EmberValueError(
            f"target {spec!r}: unsupported kind {kind!r}, expected one of "
            f"{', '.join(known)}"
        )


def _set_option(
    options: dict[str, str], spec: object, kind: str, key: str, value: str
) -> None:
    key = key.replace("-", "_")
    takes = list(backend(kind).options)
    if key not in takes:
        raise EmberValueError(
            f"target {spec!r}: unknown option -{key} for {kind} "
            f"(expected one of {', '.join('-' + k for k in takes)})"
        )
    if key in options:
        raise EmberValueError(f"target {spec!r}: -{key} given twice")
    if key in backend(kind).integer_options and (not value.isdigit() or int(value) < 1):
        raise EmberValueError(
            f"target {spec!r}: -{key} must be an integer >= 1, got {value!r}"
        )
    options[key] = value


def target_kind(spec: "str | Mapping[str, Any] | object | None") -> str:
    """The kind a target spec names ("llvm" for None and `Target`s)."""
    if isinstance(spec, DeviceTarget):
        return spec.kind
    if isinstance(spec, str):
        return (spec.split() or ["llvm"])[0]
    if isinstance(spec, Mapping):
        return str(spec.get("kind", "llvm"))
    return "llvm"


def resolve_target(spec):
    """A `Target` (kind llvm) or `DeviceTarget` (every other kind) for `spec`;
    None is `Target.current()`."""
    from ember.backends.llvm.target import Target

    if target_kind(spec) != "llvm":
        return DeviceTarget(spec)  # type: ignore[arg-type]
    return Target.resolve(spec)  # type: ignore[arg-type]


def target_of(module: "ModuleOp"):
    """The target `module` is compiled for, of any kind: its `ember.target`
    attribute (`resolve_target`), else `Target.current()`.

    Raises:
        EmberValueError: the attribute is not a target string (named).
    """
    from xdsl.dialects.builtin import StringAttr

    from ember.backends.llvm.target import MODULE_ATTR, module_target

    attr = module.attributes.get(MODULE_ATTR)
    if not isinstance(attr, StringAttr):
        return module_target(module)
    try:
        return resolve_target(attr.data)
    except ValueError as e:
        raise EmberValueError(f"{MODULE_ATTR} = {attr}: {e}") from None


def set_target(module: "ModuleOp", target) -> None:
    """Record in `module` the target (of any kind) its code is for."""
    from xdsl.dialects.builtin import StringAttr

    from ember.backends.llvm.target import MODULE_ATTR

    module.attributes[MODULE_ATTR] = StringAttr(str(resolve_target(target)))


__all__ = ["DeviceTarget", "resolve_target", "set_target", "target_kind", "target_of"]
