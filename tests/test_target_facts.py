"""What `Target` says about a machine: vector width and lanes, registers, FMA,
caches, cores; `Target.current()` and `with target:`; which CPUs run here.

The facts of a named CPU come from the features LLVM turns on for it, so they
hold on any host; the host's own facts are checked against LLVM's detection and
Linux sysfs.
"""

import os
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.backends.llvm import Target, machine

X86 = "llvm -mtriple=x86_64-unknown-linux-gnu"

# spec: (vector bytes, float32 lanes, vector registers, FMA)
FACTS = {
    f"{X86} -mcpu=haswell": (32, 8, 16, True),
    f"{X86} -mcpu=x86-64": (16, 4, 16, False),
    f"{X86} -mcpu=x86-64 -mattr=+avx2": (32, 8, 16, False),
    f"{X86} -mcpu=skylake-avx512": (64, 16, 32, True),
    f"{X86} -mcpu=skylake-avx512 -mattr=-avx512f": (32, 8, 16, True),
    "llvm -mtriple=i686-linux-gnu -mcpu=pentium4": (16, 4, 8, False),
    "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72": (16, 4, 32, True),
    "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v2 -mattr=+sve": (16, 4, 32, True),
    "llvm -mtriple=riscv64-linux-gnu -mattr=+v": (16, 4, 32, True),
    "llvm -mtriple=riscv64-linux-gnu -mattr=+v,+zvl256b": (32, 8, 32, True),
    "llvm -mtriple=riscv64-linux-gnu": (0, 1, 32, True),
    "llvm -mtriple=riscv32-unknown-elf": (0, 1, 32, False),
    "llvm -mtriple=wasm32-unknown-unknown -mattr=+simd128": (16, 4, 16, False),
    "llvm -mtriple=wasm32-unknown-unknown": (0, 1, 16, False),
}


@pytest.mark.parametrize("spec", sorted(FACTS))
def test_facts_follow_the_features(spec: str):
    vector_bytes, lanes, registers, fma = FACTS[spec]
    t = Target(spec)
    assert t.vector_bytes == vector_bytes
    assert t.vector_lanes("float32") == lanes
    assert t.vector_lanes(np.float64) == max(1, vector_bytes // 8)
    assert t.vector_lanes("int8") == max(1, vector_bytes)
    assert t.vector_registers == registers
    assert t.has_fma is fma


def test_features_are_llvms_not_a_table_of_cpus():
    haswell = Target(f"{X86} -mcpu=haswell")
    assert haswell.has_feature("avx2") and haswell.has_feature("fma")
    assert not haswell.has_feature("avx512f")
    a72 = Target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72")
    assert a72.has_feature("neon") and not a72.has_feature("sve")
    assert Target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v2").has_feature(
        "sve2"
    )
    # -mattr turns features off as well as on
    assert not Target(f"{X86} -mcpu=haswell -mattr=-avx").has_feature("avx2")


def test_cross_targets_have_default_caches_and_one_core():
    t = Target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72")
    assert (t.l1d_bytes, t.l2_bytes, t.l3_bytes) == (32 * 1024, 256 * 1024, 0)
    assert t.num_cores == 1
    t = Target(
        "llvm -mtriple=aarch64-linux-gnu -num-cores=4 -l1d-bytes=65536 "
        "-l2-bytes=1048576 -l3-bytes=0"
    )
    assert (t.num_cores, t.l1d_bytes, t.l2_bytes, t.l3_bytes) == (4, 65536, 1 << 20, 0)
    assert str(t).endswith(
        "-num-cores=4 -l1d-bytes=65536 -l2-bytes=1048576 -l3-bytes=0"
    )
    assert t == Target(str(t))
    assert Target({"mtriple": "aarch64-linux-gnu", "num_cores": 8}).num_cores == 8


@pytest.mark.parametrize(
    "spec, message",
    [
        ("llvm -num-cores=0", "-num-cores must be an integer >= 1, got '0'"),
        ("llvm -l2-bytes=1M", "-l2-bytes must be an integer >= 1, got '1M'"),
        ("llvm -vector-bytes=64", "unknown option -vector-bytes"),
    ],
)
def test_bad_fact_options_are_errors(spec: str, message: str):
    with pytest.raises(ValueError, match=message):
        Target(spec)


def sysfs_cache(level: int) -> int | None:
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if int((index / "level").read_text()) != level:
                continue
            if (index / "type").read_text().strip() == "Instruction":
                continue
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        return int(size[:-1]) * {"K": 1024, "M": 1 << 20}[size[-1]]
    return None


def test_host_facts_are_this_machines():
    host = Target.host()
    features = dict(llvm.get_host_cpu_features())
    if host.arch == "x86_64":
        want = 64 if features.get("avx512f") else 32 if features.get("avx") else 16
        assert host.vector_bytes == want
        assert host.vector_registers == (32 if features.get("avx512f") else 16)
        assert host.has_fma == bool(features.get("fma") or features.get("avx512f"))
    assert host.num_cores == len(os.sched_getaffinity(0))
    for level, got in ((1, host.l1d_bytes), (2, host.l2_bytes), (3, host.l3_bytes)):
        expected = sysfs_cache(level)
        if expected is not None:
            assert got == expected
    assert host.l1d_bytes > 0 and host.l2_bytes > 0


def test_unreadable_sysfs_falls_back_to_the_defaults(monkeypatch):
    monkeypatch.setattr(machine, "host_caches", lambda: {})
    host = Target("llvm")
    assert (host.l1d_bytes, host.l2_bytes, host.l3_bytes) == (32 * 1024, 256 * 1024, 0)


def test_current_is_the_host_until_a_target_is_entered():
    assert Target.current() == Target.host()
    haswell = Target(f"{X86} -mcpu=haswell")
    arm = Target("llvm -mtriple=aarch64-linux-gnu")
    with haswell as entered:
        assert entered is haswell and Target.current() is haswell
        with arm:
            assert Target.current() is arm
            with haswell:  # the same target entered twice
                assert Target.current() is haswell
            assert Target.current() is arm
        assert Target.current() is haswell
    assert Target.current() == Target.host()


def test_current_is_restored_after_an_exception():
    with pytest.raises(RuntimeError), Target("llvm -mtriple=aarch64-linux-gnu"):
        raise RuntimeError("boom")
    assert Target.current() == Target.host()


def test_resolve():
    t = Target("llvm -mtriple=aarch64-linux-gnu")
    assert Target.resolve(t) is t
    assert Target.resolve("llvm -mtriple=aarch64-linux-gnu") == t
    with t:
        assert Target.resolve(None) is t
    assert Target.resolve(None) == Target.host()


# --- which CPUs run here -------------------------------------------------------


def x86_host() -> dict[str, bool]:
    if Target.host().arch != "x86_64":
        pytest.skip("an x86-64 host")
    return dict(llvm.get_host_cpu_features())


def test_a_cpu_whose_features_the_host_has_runs_here():
    features = x86_host()
    assert Target("llvm -mcpu=x86-64").is_host  # SSE2: every x86-64
    haswell = Target("llvm -mcpu=haswell")
    implied = {f for f, on in haswell._has_all(tuple(sorted(features))).items() if on}
    assert {"avx", "avx2", "fma", "sse2"} <= implied and "avx512f" not in implied
    assert haswell.is_host == all(features[f] for f in implied), haswell.not_host_reason


def test_a_cpu_with_features_the_host_lacks_is_refused_by_name():
    features = x86_host()
    if features.get("amx-tile"):
        pytest.skip("this host has AMX")
    t = Target("llvm -mcpu=sapphirerapids")
    assert not t.is_host
    host = llvm.get_host_cpu_name()
    assert t.not_host_reason.startswith(
        f"-mcpu=sapphirerapids is not this machine's CPU ({host}): this {host} lacks "
    )
    assert "+amx-tile" in t.not_host_reason
    lacking = {f for f, on in features.items() if not on}
    named = {w.strip(",")[1:] for w in t.not_host_reason.split() if w.startswith("+")}
    assert named <= lacking  # only features the host really lacks are named


def test_naming_the_host_cpu_is_the_host():
    host = Target(f"llvm -mcpu={llvm.get_host_cpu_name()}")
    assert host.is_host and host.features == Target("llvm").features


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(sorted(FACTS)),
    st.sampled_from(["float16", "float32", "float64", "int8", "int32", "int64"]),
)
def test_lanes_fill_the_vector_exactly(spec: str, dtype: str):
    t = Target(spec)
    lanes = t.vector_lanes(dtype)
    itemsize = np.dtype(dtype).itemsize
    if t.vector_bytes:
        assert lanes * itemsize == t.vector_bytes
    else:
        assert lanes == 1
