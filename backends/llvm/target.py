"""Code generation targets, written as TVM writes them.

    Target("llvm")                                    # the host CPU, all its features
    Target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon")
    Target({"kind": "llvm", "mtriple": "riscv64-linux-gnu", "mattr": ["+m", "+d"]})

Target `llvm` without `-mtriple` and `-mcpu` (or with `-mcpu=native`) is the host:
its triple, `get_host_cpu_name()` and the feature string LLVM detects on it, never
LLVM's generic CPU. `-mattr` adds to (or overrides) the host's features. An explicit
`-mcpu` takes the features that CPU implies, plus `-mattr`. Another triple without
`-mcpu` is LLVM's generic CPU of that architecture with the platform's baseline, as
clang sets it (riscv64 Linux: RV64GC, `+m,+a,+f,+d,+c`), plus `-mattr`.

Code for a target runs in this process (`is_host`) only when the target's triple
is the host's, its CPU is the host CPU (or not named), and every feature it turns
on with `+` the host has; anything else is a cross target, for which LLVM emits
objects and assembly but nothing runs. A named CPU, feature or ABI that LLVM does
not know is a ValueError: LLVM itself would only warn, or abort the process, so a
short-lived subprocess tries it first (once per process and target; the plain
host target never needs it, and where no subprocess can run the target is
trusted).

Parallel loops call libgomp, which exists only where an OS ships it; on other
targets (wasm32, bare metal: `has_openmp` is False) they run serially, with the
same results (`codegen.define_serial_openmp`).

A target is also the one place that knows the machine's facts, which schedules
and passes read instead of writing ISA constants: `vector_bytes` and
`vector_lanes(dtype)`, `vector_registers`, `has_fma`, `l1d_bytes` / `l2_bytes` /
`l3_bytes`, `num_cores`. They follow from the triple and the features LLVM turns
on for the CPU and `-mattr` (asked of LLVM itself, see `has_feature`), never from
a table of CPU names; `-num-cores`, `-l1d-bytes`, `-l2-bytes` and `-l3-bytes`
override the last four. `with Target(...):` makes a target the one
`Target.current()` answers (the host when none is entered), as TVM's.
"""

import re
import subprocess
import sys
from collections.abc import Mapping
from contextvars import ContextVar, Token
from functools import cache, cached_property
from typing import Any

import llvmlite.binding as llvm
import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr

from ember.backends.llvm import machine
from ember.backends.llvm.codegen import has_openmp, initialize
from ember.runtime.elf import code_features, triple_machine
from ember.runtime.errors import EmberTypeError, EmberValueError

# What LLVM's target machine is made from, then facts a user may state about the
# machine (`-num-cores=4`), which LLVM never sees.
_LLVM_OPTIONS = ("mtriple", "mcpu", "mattr", "mabi", "opt-level")
_FACT_OPTIONS = ("num-cores", "l1d-bytes", "l2-bytes", "l3-bytes")
_OPTIONS = _LLVM_OPTIONS + _FACT_OPTIONS
_DICT_KEYS = frozenset({"kind", *_OPTIONS, *(o.replace("-", "_") for o in _OPTIONS)})
_TARGET_MACHINES: dict[str, llvm.TargetMachine] = {}
# -mabi names by architecture where LLVM ignores an unknown one without a word
# (the RISC-V backend says so itself); an empty tuple takes no -mabi at all.
_ABIS = {
    "x86_64": (),
    "i386": (),
    "i686": (),
    "wasm32": (),
    "wasm64": (),
    "aarch64": ("aapcs", "aapcs-soft", "darwinpcs"),
}
# What every machine of a platform has, as clang assumes it when no -mcpu is
# given: Linux on RISC-V is RV64GC / RV32GC with the hard-float ABI (lp64d),
# which objects must match to link against the system's libraries.
_BASELINES = {
    ("riscv64", "linux"): "+m,+a,+f,+d,+c",
    ("riscv32", "linux"): "+m,+a,+f,+d,+c",
}
_FEATURE_NAME = re.compile(r"[+-][A-Za-z0-9][A-Za-z0-9_.-]*")
_CURRENT: ContextVar[tuple["Target", ...]] = ContextVar("ember_target", default=())


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
        not_host_reason: why the code cannot run here ("" for the host).
        has_openmp: parallel loops run on libgomp; without it they run serially.

    The machine's facts, for schedules and passes: `vector_bytes`,
    `vector_lanes(dtype)`, `vector_registers`, `has_fma`, `l1d_bytes`,
    `l2_bytes`, `l3_bytes`, `num_cores`, and `has_feature(name)` under them.
    """

    def __init__(self, spec: "str | Mapping[str, Any] | Target" = "llvm"):
        if isinstance(spec, Target):
            options = dict(spec._options)
        elif isinstance(spec, str):
            options = _parse_string(spec)
        elif isinstance(spec, Mapping):
            options = _parse_dict(spec)
        else:
            raise EmberTypeError(f"expected a target string or dict, got {spec!r}")
        if options.get("mcpu") == "native":
            del options["mcpu"]
        self._options: dict[str, str] = options
        self._tokens: list[Token] = []
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
            raise EmberValueError(
                f"target {self}: -mtriple={self.triple} is not a target this LLVM "
                f"knows ({str(e).strip()})"
            ) from None
        self.has_openmp = has_openmp(self.triple)
        if self.mabi:
            self._check_abi()
        same_triple = _same_machine(self.triple, host_triple)
        host_cpu = llvm.get_host_cpu_name()
        # Naming this machine's CPU is naming this machine: its detected
        # features, not LLVM's model of the CPU (a VM hides some of those).
        if same_triple and options.get("mcpu", host_cpu) == host_cpu:
            self.cpu = host_cpu
            self.features = ",".join(
                x for x in (_host_feature_string(), *self.mattr) if x
            )
        else:
            self.cpu = options.get("mcpu", "generic")
            base = "" if "mcpu" in options else _baseline_features(self.triple)
            self.features = ",".join(x for x in (base, *self.mattr) if x)
        if self._needs_validation(same_triple, host_cpu):
            error = _llvm_rejects(self.triple, self.cpu, self.features, self.mabi)
            if error:
                raise EmberValueError(f"target {self}: {error}")
        self.not_host_reason = self._not_host_reason(host_triple, host_cpu)
        self.is_host = not self.not_host_reason

    def _needs_validation(self, same_triple: bool, host_cpu: str) -> bool:
        """Whether the target names something LLVM might not know."""
        if self.mabi:
            return True
        if not same_triple:
            return "mcpu" in self._options or bool(self.mattr)
        if self.cpu != host_cpu:
            return True
        known = _host_features()
        return any(a[1:] not in known for a in self.mattr)

    def _check_abi(self) -> None:
        known = _ABIS.get(self.arch)
        if known is not None and self.mabi not in known:
            choices = ", ".join(known) if known else "none: it has one ABI"
            raise EmberValueError(
                f"target {self}: -mabi={self.mabi} is not an ABI of {self.arch} "
                f"(expected {choices})"
            )

    def _not_host_reason(self, host_triple: str, host_cpu: str) -> str:
        """ "" when code for this target runs here: the host's triple, and no
        feature whose instructions code may contain (`code_features`, turned on
        by `-mcpu` or `-mattr`) that this CPU lacks; so `-mcpu=haswell` runs on
        an AVX-512 host, `-mcpu=skylake-avx512` on a Zen 4 without `pku` (no
        code uses it), and `-mcpu=sapphirerapids` (AMX) does not."""
        if not _same_machine(self.triple, host_triple):
            return f"-mtriple={self.triple} is not this machine's {host_triple}"
        if self.cpu == host_cpu and not self.mattr:
            return ""
        host = _host_features()
        missing = [f for f in self.code_features() if not host.get(f)]
        if not missing:
            return ""
        lacks = f"this {host_cpu} lacks {', '.join('+' + f for f in sorted(missing))}"
        if self.cpu != host_cpu:
            return f"-mcpu={self.cpu} is not this machine's CPU ({host_cpu}): {lacks}"
        return lacks

    def code_features(self) -> tuple[str, ...]:
        """The features this target has, of those whose instructions compiled
        code may contain (`ember.runtime.elf.code_features`): what its CPU
        implies and `-mattr` turns on. A library records them, so a CPU
        without one is refused at load time instead of stopping on SIGILL."""
        names = code_features(triple_machine(self.triple))
        return tuple(n for n, on in self._has_all(names).items() if on)

    def has_feature(self, name: str) -> bool:
        """Whether code for this target may use LLVM feature `name` (`avx2`,
        `neon`, `v`, `simd128`): implied by its CPU or turned on by `-mattr`.

        LLVM knows which features a CPU implies but does not list them; its
        inliner does compare them: a function is inlined only into one whose
        features include all of its own. So the question is whether a function
        for this target plus `+name` inlines into one for this target.
        """
        return machine.has_features(self.triple, self.cpu, self.features, (name,))[0]

    def _has_all(self, names: tuple[str, ...]) -> dict[str, bool]:
        has = machine.has_features(self.triple, self.cpu, self.features, names)
        return dict(zip(names, has, strict=True))

    @classmethod
    def host(cls) -> "Target":
        """The machine this process runs on."""
        return cls("llvm")

    @classmethod
    def current(cls) -> "Target":
        """The innermost target entered with `with target:`, else the host.

        Example:
            >>> with Target("llvm -mcpu=haswell"):
            ...     Target.current().vector_lanes("float32")
            8
        """
        stack = _CURRENT.get()
        return stack[-1] if stack else _host_target()

    @classmethod
    def resolve(cls, target: "str | Mapping[str, Any] | Target | None") -> "Target":
        """`target` as a Target; None is `Target.current()`."""
        if target is None:
            return cls.current()
        return target if isinstance(target, Target) else cls(target)

    def __enter__(self) -> "Target":
        self._tokens.append(_CURRENT.set((*_CURRENT.get(), self)))
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._tokens.pop())

    # --- what schedules need to know about the machine -------------------------

    @cached_property
    def _facts(self) -> dict[str, bool]:
        names = machine.FACT_FEATURES.get(self._family, ())
        facts = self._has_all(names) if names else {}
        if facts.get("v"):  # the guaranteed VLEN; zvl* needs v, or LLVM aborts
            facts.update(self._has_all(machine.RVV_LENGTHS))
        return facts

    @property
    def _family(self) -> str:
        arch: str = llvm.get_triple_parts(self.triple).Arch
        return machine.FAMILIES.get(arch) or arch

    @cached_property
    def vector_bytes(self) -> int:
        """Bytes of a SIMD register ember's fixed-width vectors are lowered to; 0
        where there is none (every dtype is then one lane).

        x86: 64 with avx512f, 32 with avx, 16 with sse2. AArch64: 16 (NEON; SVE
        too: LLVM lowers fixed-width vectors to NEON unless told the SVE length,
        which llvmlite cannot). RISC-V with v: the VLEN the features guarantee
        (zvl128b, implied by v: 16 bytes; zvl256b 32, zvl512b 64), which LLVM's
        fixed-length RVV lowering also uses, no -riscv-v-vector-bits-min
        needed. Wasm: 16 with simd128.
        """
        facts, family = self._facts, self._family
        if family == "x86":
            for feature, size in (("avx512f", 64), ("avx", 32), ("sse2", 16)):
                if facts[feature]:
                    return size
            return 0
        if family == "riscv":
            if not facts["v"]:
                return 0
            bits = [int(f[3:-1]) for f in machine.RVV_LENGTHS if facts[f]]
            return max(bits, default=machine.RVV_MIN_BITS) // 8
        return machine.SIMD_BYTES.get(family, 0) if any(facts.values()) else 0

    def vector_lanes(self, dtype: "str | np.dtype | type" = "float32") -> int:
        """Elements of `dtype` in one vector register (1 without SIMD).

        Example:
            >>> Target("llvm -mcpu=haswell").vector_lanes("float32")
            8
        """
        return max(1, self.vector_bytes // np.dtype(dtype).itemsize)

    @cached_property
    def vector_registers(self) -> int:
        """Vector registers a register tile may use: x86-64 32 with avx512f,
        else 16 (i386: 8); AArch64 and RISC-V 32; Wasm 16 (the engine
        allocates registers; 16 is what x86 and ARM hosts give it)."""
        family = self._family
        if family == "x86":
            if llvm.get_triple_parts(self.triple).Arch != "x86_64":
                return 8
            return 32 if self._facts["avx512f"] else 16
        return machine.REGISTERS.get(family, 16)

    @cached_property
    def has_fma(self) -> bool:
        """Fused multiply-add in hardware: x86 with fma (avx512f implies it),
        AArch64 always, RISC-V with f or d; not Wasm (relaxed-simd aside)."""
        facts, family = self._facts, self._family
        if family == "x86":
            return facts["fma"] or facts["avx512f"]
        if family == "riscv":
            return facts["f"] or facts["d"]
        return family == "aarch64"

    @cached_property
    def l1d_bytes(self) -> int:
        """L1 data cache per core: this machine's (sysfs) when the code runs
        here, else `-l1d-bytes`, else 32 KiB."""
        return self._cache_fact("l1d-bytes", 1)

    @cached_property
    def l2_bytes(self) -> int:
        """L2 cache: this machine's when the code runs here, else `-l2-bytes`,
        else 256 KiB."""
        return self._cache_fact("l2-bytes", 2)

    @cached_property
    def l3_bytes(self) -> int:
        """L3 cache (0: none known): this machine's when the code runs here,
        else `-l3-bytes`, else 0."""
        return self._cache_fact("l3-bytes", 3)

    @cached_property
    def num_cores(self) -> int:
        """Cores the code may use: `-num-cores`, else this process's CPU
        affinity when the code runs here, else 1."""
        if "num-cores" in self._options:
            return int(self._options["num-cores"])
        return machine.host_cores() if self.is_host else 1

    def _cache_fact(self, option: str, level: int) -> int:
        if option in self._options:
            return int(self._options[option])
        if self.is_host:
            size = machine.host_caches().get(level)
            if size is not None:
                return size
        return machine.DEFAULT_CACHES[level]

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


@cache
def _host_target() -> Target:
    """The host, made once: every schedule built outside `with target:` asks."""
    return Target("llvm")


MODULE_ATTR = "ember.target"
"""The module attribute naming the target its code is for, as MLIR's target
attributes: `builtin.module attributes {ember.target = "llvm -mcpu=haswell"}`."""


def module_target(module: ModuleOp) -> Target:
    """The target `module` is compiled for: its `ember.target` attribute, else
    `Target.current()` (the host unless a target is entered).

    Raises:
        ValueError: naming the attribute, when it is not a target string.
    """
    attr = module.attributes.get(MODULE_ATTR)
    if attr is None:
        return Target.current()
    if not isinstance(attr, StringAttr):
        raise EmberValueError(
            f"expected {MODULE_ATTR} to be a target string, got {attr}"
        )
    try:
        return Target(attr.data)
    except ValueError as e:
        raise EmberValueError(f"{MODULE_ATTR} = {attr}: {e}") from None


def set_module_target(
    module: ModuleOp, target: "str | Mapping[str, Any] | Target"
) -> None:
    """Record in `module` the target its code is compiled for (`module_target`)."""
    module.attributes[MODULE_ATTR] = StringAttr(str(Target.resolve(target)))


def _baseline_features(triple: str) -> str:
    parts = llvm.get_triple_parts(triple)
    return _BASELINES.get((parts.Arch, parts.OS), "")


def _same_machine(triple: str, host: str) -> bool:
    a, b = llvm.get_triple_parts(triple), llvm.get_triple_parts(host)
    return (a.Arch, a.SubArch, a.OS) == (b.Arch, b.SubArch, b.OS)


@cache
def _host_features() -> dict[str, bool]:
    """Every feature LLVM detects on the host: name → whether the host has it."""
    return dict(llvm.get_host_cpu_features())


@cache
def _host_feature_string() -> str:
    return llvm.get_host_cpu_features().flatten()


# Run by `_llvm_rejects` in a fresh interpreter: build a target machine and emit
# an object, which is where LLVM warns about (or aborts on) what it does not know.
_PROBE = r"""
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
triple, cpu, features, abi = sys.argv[1:5]
tm = llvm.Target.from_triple(triple).create_target_machine(
    cpu=cpu, features=features, abiname=abi
)
module = llvm.parse_assembly("define void @f() {\n  ret void\n}\n")
module.triple = triple
tm.emit_object(module)
"""
_UNKNOWN_CPU = re.compile(r"'([^']*)' is not a recognized processor")
_UNKNOWN_FEATURE = re.compile(r"'([^']*)' is not a recognized feature")
_IGNORED_ABI = re.compile(r"^(.*?) \(ignoring target-abi\)", re.M)


@cache
def _llvm_rejects(triple: str, cpu: str, features: str, abi: str) -> str:
    """Why LLVM cannot generate code for this combination, or "" if it can.

    Tried in a subprocess because LLVM aborts the process on some bad
    combinations (an unknown x86 CPU: "64-bit code requested on a subtarget that
    doesn't support it") and only prints a warning on others.
    """
    if not sys.executable:
        return ""  # an embedded interpreter: no way to ask, trust the target
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, triple, cpu, features, abi],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""  # the check itself could not run: trust the target
    cpu_match = _UNKNOWN_CPU.search(done.stderr)
    if cpu_match:
        return f"-mcpu={cpu_match.group(1)} is not a CPU LLVM knows for {triple}"
    feature_match = _UNKNOWN_FEATURE.search(done.stderr)
    if feature_match:
        return (
            f"-mattr {feature_match.group(1)} is not a feature LLVM knows for {triple}"
        )
    abi_match = _IGNORED_ABI.search(done.stderr)
    if abi_match:
        return f"-mabi={abi} cannot be used: {abi_match.group(1)}"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        detail = lines[-1] if lines else f"exit status {done.returncode}"
        return f"LLVM cannot generate code for it ({detail.strip()})"
    return ""


def _parse_string(spec: str) -> dict[str, str]:
    kind, *words = spec.split()
    if kind != "llvm":
        raise EmberValueError(
            f"target {spec!r}: unsupported kind {kind!r}, expected 'llvm'"
        )
    options: dict[str, str] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not key.startswith("-") or not eq or not value:
            raise EmberValueError(
                f"target {spec!r}: expected -option=value, got {word!r}"
            )
        _set_option(options, spec, key.lstrip("-"), value)
    return options


def _parse_dict(spec: Mapping[str, Any]) -> dict[str, str]:
    unknown = sorted(set(spec) - _DICT_KEYS)
    if unknown:
        raise EmberValueError(f"target {dict(spec)!r}: unknown key {unknown[0]!r}")
    if spec.get("kind", "llvm") != "llvm":
        raise EmberValueError(
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
        raise EmberValueError(
            f"target {spec!r}: unknown option -{key} "
            f"(expected one of {', '.join('-' + o for o in _OPTIONS)})"
        )
    if key in options:
        raise EmberValueError(f"target {spec!r}: -{key} given twice")
    if key == "mattr":
        bad = [a for a in value.split(",") if not _FEATURE_NAME.fullmatch(a)]
        if bad:
            raise EmberValueError(
                f"target {spec!r}: -mattr entries are +feature or -feature, "
                f"got {bad[0]!r}"
            )
    if key == "opt-level" and value not in ("0", "1", "2", "3"):
        raise EmberValueError(
            f"target {spec!r}: -opt-level must be 0 to 3, got {value!r}"
        )
    if key in _FACT_OPTIONS:
        least = 0 if key == "l3-bytes" else 1
        if not value.isdigit() or int(value) < least:
            raise EmberValueError(
                f"target {spec!r}: -{key} must be an integer >= {least}, got {value!r}"
            )
    options[key] = value


__all__ = ["MODULE_ATTR", "Target", "module_target", "set_module_target"]
