"""Targets whose code is C-family source: `c`, `opencl` and `cuda`.

    DeviceTarget("cuda -arch=sm_90")                 # CUDA C, PTX for sm_90 by NVRTC
    DeviceTarget("opencl -max_num_threads=128")      # OpenCL C, built by the driver
    DeviceTarget("c -mcpu=cortex-m4")                # C99, microcontroller mode
    DeviceTarget({"kind": "cuda", "arch": "sm_80"})

Their facts are what a GPU schedule needs, named as TVM names them:
`max_num_threads` (threads in a block / work-group), `max_shared_memory_per_block`
(bytes of `shared` scope) and `thread_warp_size`. They are defaults of the
device class unless the target string states them; ember never asks a device
while compiling, so code can be built on a machine that has none.

`c` code is portable C99 with a packed entry per function; with `-mcpu=cortex-m*`
(or `-micro=true`) it is microcontroller code: no heap, no threads, one static
workspace. `host` is the LLVM target of the code that drives the device (the
machine ember runs on).
"""

from collections.abc import Mapping
from typing import Any

from ember.runtime.errors import EmberTypeError, EmberValueError

KINDS = ("c", "opencl", "cuda")
# option: (kinds that take it, default per kind)
_OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "arch": (("cuda",), {"cuda": "sm_80"}),
    "mcpu": (("c",), {}),
    "micro": (("c",), {}),
    "max_num_threads": (("cuda", "opencl"), {"cuda": "1024", "opencl": "256"}),
    "max_shared_memory_per_block": (
        ("cuda", "opencl"),
        {"cuda": "49152", "opencl": "16384"},
    ),
    "thread_warp_size": (("cuda", "opencl"), {"cuda": "32", "opencl": "1"}),
}
_INTEGER_OPTIONS = (
    "max_num_threads",
    "max_shared_memory_per_block",
    "thread_warp_size",
)


class DeviceTarget:
    """A `c`, `opencl` or `cuda` target (see the module docstring).

    Attributes:
        kind: "c", "opencl" or "cuda".
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

        def option(name: str) -> str:
            return options.get(name, _OPTIONS[name][1].get(kind, ""))

        self.arch = option("arch")
        if kind == "cuda" and not _is_sm(self.arch):
            raise EmberValueError(
                f"target {self}: -arch must name a CUDA architecture such as sm_80, "
                f"got {self.arch!r}"
            )
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

    @property
    def is_gpu(self) -> bool:
        """Code runs as kernels on a device with a thread hierarchy."""
        return self.kind in ("cuda", "opencl")

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


def _is_sm(arch: str) -> bool:
    return arch.startswith("sm_") and arch[3:].rstrip("af").isdigit()


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
    if kind not in KINDS:
        raise EmberValueError(
            f"target {spec!r}: unsupported kind {kind!r}, expected one of "
            f"{', '.join(KINDS)}"
        )


def _set_option(
    options: dict[str, str], spec: object, kind: str, key: str, value: str
) -> None:
    key = key.replace("-", "_")
    takes = [k for k, (kinds, _) in _OPTIONS.items() if kind in kinds]
    if key not in takes:
        raise EmberValueError(
            f"target {spec!r}: unknown option -{key} for {kind} "
            f"(expected one of {', '.join('-' + k for k in takes)})"
        )
    if key in options:
        raise EmberValueError(f"target {spec!r}: -{key} given twice")
    if key in _INTEGER_OPTIONS and (not value.isdigit() or int(value) < 1):
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
    """A `Target` (kind llvm) or `DeviceTarget` (c, opencl, cuda) for `spec`;
    None is `Target.current()`."""
    from ember.backends.llvm.target import Target

    if target_kind(spec) in KINDS:
        return DeviceTarget(spec)  # type: ignore[arg-type]
    return Target.resolve(spec)  # type: ignore[arg-type]


__all__ = ["KINDS", "DeviceTarget", "resolve_target", "target_kind"]
