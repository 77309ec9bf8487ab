"""What a target's machine has, asked of LLVM and of Linux: the facts behind
`Target.vector_bytes` and the properties after it.

- `has_features`: which LLVM features a CPU and feature string turn on. LLVM
  knows each CPU's implied features but does not list them; its inliner compares
  them, so the question is put to it.
- `host_caches`, `host_cores`: this machine's caches (sysfs) and usable cores.
- the tables by architecture family that turn features into widths and counts.
"""

import os
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm

from ember.backends.llvm.codegen import initialize

# The machine's facts, by architecture family (`Target.vector_bytes` and the
# properties after it say how each is derived): the LLVM features they depend on,
# the SIMD width where one feature decides it, and the vector registers.
FAMILIES = {"x86_64": "x86", "i386": "x86", "riscv64": "riscv", "riscv32": "riscv"}
FAMILIES.update({"wasm32": "wasm", "wasm64": "wasm"})
FACT_FEATURES = {
    "x86": ("sse2", "avx", "avx512f", "fma"),
    "aarch64": ("neon",),
    "riscv": ("f", "d", "v"),
    "wasm": ("simd128",),
}
SIMD_BYTES = {"aarch64": 16, "wasm": 16}
REGISTERS = {"aarch64": 32, "riscv": 32, "wasm": 16}
# RISC-V V guarantees VLEN >= 128 bits (zvl128b); zvl<N>b promise more.
RVV_MIN_BITS = 128
RVV_LENGTHS = ("zvl256b", "zvl512b", "zvl1024b")
# Caches of a machine nobody described (a cross target, or sysfs unreadable):
# what common cores of every family have at least (32 KiB L1d, 256 KiB L2), no
# L3 counted on.
DEFAULT_CACHES = {1: 32 * 1024, 2: 256 * 1024, 3: 0}


@cache
def has_features(
    triple: str, cpu: str, features: str, names: tuple[str, ...]
) -> tuple[bool, ...]:
    """For each of `names`: whether (cpu, features) has that LLVM feature.

    A caller for the target and, per name, an internal callee for the target
    plus `+name`; LLVM's inliner (its TargetTransformInfo) inlines a callee only
    when the caller has every feature the callee has, CPU implications and
    tuning flags included, so a call left behind is a feature missing. Run in
    this process: the CPU is one LLVM knows (`Target` had `_llvm_rejects` check it first).
    """
    initialize()
    text = [
        f'attributes #0 = {{ "target-cpu"="{cpu}" "target-features"="{features}" }}'
    ]
    for i, name in enumerate(names):
        more = ",".join(x for x in (features, f"+{name}") if x)
        text += [
            f"define internal i32 @callee{i}(i32 %x) #{i + 1} {{\n"
            "  %y = mul i32 %x, 3\n  ret i32 %y\n}",
            f"define i32 @caller{i}(i32 %x) #0 {{\n"
            f"  %r = call i32 @callee{i}(i32 %x)\n  ret i32 %r\n}}",
            f'attributes #{i + 1} = {{ "target-cpu"="{cpu}" "target-features"="{more}" }}',
        ]
    module = llvm.parse_assembly("\n".join(text))
    module.triple = triple
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, opt=2)
    module.data_layout = str(tm.target_data)
    builder = llvm.create_pass_builder(
        tm, llvm.create_pipeline_tuning_options(speed_level=2)
    )
    builder.getModulePassManager().run(module, builder)
    return tuple(
        f"@callee{i}(" not in str(module.get_function(f"caller{i}"))
        for i in range(len(names))
    )


@cache
def host_caches() -> dict[int, int]:
    """Cache level -> bytes of this machine's data (or unified) caches, from
    Linux sysfs; {} where it cannot be read."""
    sizes: dict[int, int] = {}
    units = {"K": 1024, "M": 1024 * 1024, "G": 1024**3}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or not size:
            continue
        scale = units.get(size[-1], 1)
        digits = size[:-1] if size[-1] in units else size
        if digits.isdigit():
            sizes[level] = int(digits) * scale
    return sizes


def host_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1
