"""Code generation targets, written as TVM writes them.

    Target("llvm")                                    # the host CPU, all its features
    Target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon")
    Target({"kind": "llvm", "mtriple": "riscv64-linux-gnu", "mattr": ["+m", "+d"]})

Target `llvm` without `-mtriple` and `-mcpu` (or with `-mcpu=native`) is the host:
its triple, `get_host_cpu_name()` and the feature string LLVM detects on it, never
LLVM's generic CPU. `-mattr` adds to (or overrides) the host's features. An explicit
`-mcpu` takes the features that CPU implies, plus `-mattr`.
"""

from collections.abc import Mapping
from typing import Any

import llvmlite.binding as llvm

from ember.backends.llvm.codegen import initialize

_OPTIONS = ("mtriple", "mcpu", "mattr", "mabi", "opt-level")
_DICT_KEYS = frozenset({"kind", *_OPTIONS, "opt_level"})
_TARGET_MACHINES: dict[str, llvm.TargetMachine] = {}


class Target:
    """An LLVM code generation target (see the module docstring for the forms).

    Attributes:
        triple: the target triple (the host's when not given).
        cpu: the CPU name LLVM compiles for.
        features: the comma-separated LLVM feature string.
        mattr: the features the user asked for, in order.
        mabi: the ABI name ("" for the target's default).
        opt_level: 0 to 3, LLVM's optimization and code generation level.
        is_host: the code can run in this process.
    """

    def __init__(self, spec: "str | Mapping[str, Any] | Target" = "llvm"):
        if isinstance(spec, Target):
            options = dict(spec._options)
        elif isinstance(spec, str):
            options = _parse_string(spec)
        elif isinstance(spec, Mapping):
            options = _parse_dict(spec)
        else:
            raise TypeError(f"expected a target string or dict, got {spec!r}")
        if options.get("mcpu") == "native":
            del options["mcpu"]
        self._options: dict[str, str] = options
        self.mattr: tuple[str, ...] = tuple(
            a for a in options.get("mattr", "").split(",") if a
        )
        self.mabi = options.get("mabi", "")
        self.opt_level = int(options.get("opt-level", "3"))
        initialize()
        host_triple = llvm.get_process_triple()
        self.triple = options.get("mtriple", host_triple)
        try:
            self._llvm_target = llvm.Target.from_triple(self.triple)
        except RuntimeError as e:
            raise ValueError(
                f"target {self}: -mtriple={self.triple} is not a target this LLVM "
                f"knows ({str(e).strip()})"
            ) from None
        native = "mcpu" not in options
        self.is_host = _same_machine(self.triple, host_triple)
        if native and self.is_host:
            self.cpu = llvm.get_host_cpu_name()
            host_features = llvm.get_host_cpu_features().flatten()
            self.features = ",".join(x for x in (host_features, *self.mattr) if x)
        else:
            self.cpu = options.get("mcpu", "generic")
            self.features = ",".join(self.mattr)

    @classmethod
    def host(cls) -> "Target":
        """The machine this process runs on."""
        return cls("llvm")

    @property
    def arch(self) -> str:
        """The architecture part of the triple, e.g. `x86_64` or `aarch64`."""
        return self.triple.split("-", 1)[0]

    def create_target_machine(self) -> llvm.TargetMachine:
        """This target's LLVM target machine (PIC, default code model), cached.

        The cached machine must not be handed to an execution engine, which would
        take ownership of it; use `create_jit_target_machine` for that.
        """
        key = str(self)
        tm = _TARGET_MACHINES.get(key)
        if tm is None:
            tm = _TARGET_MACHINES[key] = self._target_machine(jit=False)
        return tm

    def create_jit_target_machine(self) -> llvm.TargetMachine:
        """A new target machine for an MCJIT engine, which takes ownership of it."""
        return self._target_machine(jit=True)

    def _target_machine(self, jit: bool) -> llvm.TargetMachine:
        return self._llvm_target.create_target_machine(
            cpu=self.cpu,
            features=self.features,
            opt=self.opt_level,
            reloc="pic",
            codemodel="jitdefault" if jit else "default",
            jit=jit,
            abiname=self.mabi,
        )

    def __str__(self) -> str:
        parts = ["llvm"]
        parts += [f"-{k}={self._options[k]}" for k in _OPTIONS if k in self._options]
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def _same_machine(triple: str, host: str) -> bool:
    a, b = llvm.get_triple_parts(triple), llvm.get_triple_parts(host)
    return (a.Arch, a.OS) == (b.Arch, b.OS)


def _parse_string(spec: str) -> dict[str, str]:
    kind, *words = spec.split()
    if kind != "llvm":
        raise ValueError(f"target {spec!r}: unsupported kind {kind!r}, expected 'llvm'")
    options: dict[str, str] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not key.startswith("-") or not eq or not value:
            raise ValueError(f"target {spec!r}: expected -option=value, got {word!r}")
        _set_option(options, spec, key.lstrip("-"), value)
    return options


def _parse_dict(spec: Mapping[str, Any]) -> dict[str, str]:
    unknown = sorted(set(spec) - _DICT_KEYS)
    if unknown:
        raise ValueError(f"target {dict(spec)!r}: unknown key {unknown[0]!r}")
    if spec.get("kind", "llvm") != "llvm":
        raise ValueError(
            f"target {dict(spec)!r}: unsupported kind {spec['kind']!r}, expected 'llvm'"
        )
    options: dict[str, str] = {}
    for key, value in spec.items():
        if key == "kind":
            continue
        if key == "mattr" and not isinstance(value, str):
            value = ",".join(value)
        _set_option(options, dict(spec), key.replace("_", "-"), str(value))
    return options


def _set_option(options: dict[str, str], spec: object, key: str, value: str) -> None:
    if key not in _OPTIONS:
        raise ValueError(
            f"target {spec!r}: unknown option -{key} "
            f"(expected one of {', '.join('-' + o for o in _OPTIONS)})"
        )
    if key in options:
        raise ValueError(f"target {spec!r}: -{key} given twice")
    if key == "mattr":
        bad = [a for a in value.split(",") if not a or a[0] not in "+-"]
        if bad:
            raise ValueError(
                f"target {spec!r}: -mattr entries must start with + or -, "
                f"got {bad[0]!r}"
            )
    if key == "opt-level" and value not in ("0", "1", "2", "3"):
        raise ValueError(f"target {spec!r}: -opt-level must be 0 to 3, got {value!r}")
    options[key] = value


__all__ = ["Target"]
