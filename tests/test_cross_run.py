"""Cross-built code, run: te kernels and a whole CNN compiled for aarch64,
riscv64 and wasm32, executed under qemu-user and wasmtime, checked against
numpy and onnxruntime.

Each kernel (vecadd, a scheduled matmul, column sums, topi's sum over the last
axis, a topi conv2d with bias and relu, a sigmoid calling libm's expf) is built
with `ember.build(..., target=...)`. For Linux targets it is exported with the
target's gcc and run by examples/deploy_c/run_kernel.c, compiled by the same
gcc, under qemu-aarch64 (`-cpu cortex-a72`; `-cpu max` for neoverse-v2 code)
or qemu-riscv64 (RVV at VLEN 128 and 256; RV64GC code on a CPU without RVV):
qemu's CPU models refuse instructions they lack (SIGILL), so a kernel using a
feature its target does not have fails. The host's own `cc` runs the same
program natively, as the control. wasm32 objects are linked by wasm-ld and
called in wasmtime (tests/cross_util.py). The CNN is compiled by
`ember.compile_model` for aarch64 and riscv64 and run by
examples/deploy_c/run_model.c against onnxruntime.

The tools come from `make system-deps`; a test whose tool is missing skips and
says which package brings it.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cross_util
import numpy as np
import pytest
from cross_util import Machine, WasmModule, link_wasm, run_kernel

import ember
from ember import te, topi
from ember.backends.kernel_cache import CompileCache
from ember.backends.llvm.target import Target
from ember.topi.reduce import reduce as topi_reduce

A72 = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"
NEOVERSE_V2 = "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v2"
RISCV64 = "llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c,+v"
RV64GC = "llvm -mtriple=riscv64-linux-gnu"
WASM32 = "llvm -mtriple=wasm32-unknown-unknown -mattr=+simd128"
RVV = "rv64,v=true,vext_spec=v1.0,vlen="  # qemu's RISC-V CPU with RVV 1.0
NEON_FMA = r"fmla\s+v\d+\.4s"


@dataclass(frozen=True)
class CrossTarget:
    """A target and where its code runs: C hosts on `machines`, or wasmtime."""

    name: str
    target: str
    machines: tuple[Machine, ...] = ()
    vector: str = ""  # a regex of the vector instructions a scheduled matmul uses

    @property
    def wasm(self) -> bool:
        return not self.machines


TARGETS = [
    CrossTarget("host", "llvm", (Machine(),)),
    CrossTarget(
        "aarch64-cortex-a72", A72, (Machine("aarch64", "cortex-a72"),), NEON_FMA
    ),
    CrossTarget(
        "aarch64-neoverse-v2", NEOVERSE_V2, (Machine("aarch64", "max"),), NEON_FMA
    ),
    CrossTarget(
        "riscv64-rvv",
        RISCV64,
        (Machine("riscv64", RVV + "128"), Machine("riscv64", RVV + "256")),
        r"vfmacc\.v[vf]|vfmadd\.v[vf]",
    ),
    # RV64GC, no vector extension assumed: runs on a CPU without one
    CrossTarget("riscv64-rv64gc", RV64GC, (Machine("riscv64", "rv64,v=false"),)),
    CrossTarget("wasm32-simd128", WASM32, (), r"f32x4\.mul"),
]
BY_NAME = {t.name: t for t in TARGETS}


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _normal(shape, seed: int) -> np.ndarray:
    return _rng(seed).standard_normal(shape).astype(np.float32)


# -- the kernels: (target) -> (module, function, inputs, expected outputs) -----------

Built = tuple[ember.runtime.Module, str, list[np.ndarray], list[np.ndarray]]


def vecadd(target: str) -> Built:
    n = 1000  # a ragged tail after 62 vectors of 16
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(inner)
    s[C].parallel(outer)
    a, b = _normal(n, 1), _normal(n, 2)
    mod = ember.build(s, [A, B, C], target=target, name="vecadd")
    return mod, "vecadd", [a, b], [a + b]


def matmul(target: str) -> Built:
    """8 x 16 tiles of C, k split by 4, (mo, no, ko, ki, mi, ni), the columns
    vectorized, the row blocks parallel; no extent divides its tile."""
    m, k, n = 37, 29, 40
    A, B = te.placeholder((m, k), name="A"), te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    ko, ki = s[C].split(r, factor=4)
    s[C].reorder(mo, no, ko, ki, mi, ni)
    s[C].vectorize(ni)
    s[C].parallel(mo)
    a, b = _normal((m, k), 3), _normal((k, n), 4)
    mod = ember.build(s, [A, B, C], target=target, name="matmul")
    return mod, "matmul", [a, b], [a @ b]


def colsum(target: str) -> Built:
    """C[j] = sum_r A[r, j]: the reduction outside, 8 columns a vector inside."""
    m, n = 33, 70
    A = te.placeholder((m, n), name="A")
    r = te.reduce_axis((0, m), name="r")
    C = te.compute((n,), lambda j: te.sum(A[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].reorder(outer, r, inner)
    s[C].vectorize(inner)
    a = _normal((m, n), 5)
    mod = ember.build(s, [A, C], target=target, name="colsum")
    return mod, "colsum", [a], [a.sum(0)]


def rowsum(target: str) -> Built:
    """topi's reduce_sum over the last axis: vector partial sums, then a total."""
    x = te.placeholder((6, 5, 37), name="x")
    k = topi_reduce(x, "sum", axes=[-1], keepdims=False, name="rowsum")
    a = _normal(x.shape, 6)
    mod = ember.build(k.schedule(), k.args, target=target, name="rowsum")
    return mod, "rowsum", [a], [a.sum(-1)]


def _conv2d_reference(x, w, b, stride: int, pad: int) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride]
    y = np.einsum("nchwij,ocij->nohw", windows, w) + b[None, :, None, None]
    return np.maximum(y, 0).astype(np.float32)


def conv2d(target: str) -> Built:
    """topi's NCHWc conv2d (packed input and weights, register tile, channel
    block vectorized) with bias and relu, stride 2 over a padded 13 x 11 image."""
    x = te.placeholder((1, 8, 13, 11), name="x")
    k = topi.conv2d(
        x,
        (12, 8, 3, 3),
        strides=2,
        padding=1,
        bias=True,
        epilogue=lambda v, idx: te.max(v, 0.0),
        name="conv",
    )
    data, w, b = _normal(x.shape, 7), _normal((12, 8, 3, 3), 8), _normal(12, 9)
    mod = ember.build(k.schedule(), k.args, target=target, name="conv")
    inputs = [data, k.transform("conv.weight", w), k.transform("conv.bias", b)]
    return mod, "conv", inputs, [_conv2d_reference(data, w, b, 2, 1)]


def sigmoid(target: str) -> Built:
    """1 / (1 + exp(-x)), vectorized: calls libm's expf on every target."""
    n = 100
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: 1.0 / (1.0 + te.exp(-A[i])), name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(s[C].split(C.op.axis[0], factor=4)[1])
    a = np.linspace(-8, 8, n, dtype=np.float32)
    expected = (1 / (1 + np.exp(-a.astype(np.float64)))).astype(np.float32)
    mod = ember.build(s, [A, C], target=target, name="sigmoid")
    return mod, "sigmoid", [a], [expected]


def dot_bytes(target: str) -> Built:
    """C[j] = sum_r dot_u8i8(A[r], B[r, j]) on int32 words of four bytes,
    eight columns a vector: the target's byte dot product where it has one
    (aarch64 i8mm's usdot, x86 VNNI), widened products elsewhere."""
    m, n = 19, 40
    A = te.placeholder((m,), "int32", name="A")
    B = te.placeholder((m, n), "int32", name="B")
    r = te.reduce_axis((0, m), name="r")
    C = te.compute((n,), lambda j: te.sum(te.dot_u8i8(A[r], B[r, j]), axis=r), name="C")
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].reorder(outer, r, inner)
    s[C].vectorize(inner)
    a8 = _rng(10).integers(0, 256, (m, 4), dtype=np.uint8)
    b8 = _rng(11).integers(-128, 128, (m, n, 4), dtype=np.int8)
    want = np.einsum("rk,rjk->j", a8.astype(np.int64), b8.astype(np.int64))
    mod = ember.build(s, [A, B, C], target=target, name="dot_bytes")
    inputs = [a8.view(np.int32).reshape(m), b8.view(np.int32).reshape(m, n)]
    return mod, "dot_bytes", inputs, [want.astype(np.int32)]


KERNELS: dict[str, Callable[[str], Built]] = {
    f.__name__: f for f in (vecadd, matmul, colsum, rowsum, conv2d, sigmoid, dot_bytes)
}


@functools.cache
def built(kernel: str, target: str) -> Built:
    return KERNELS[kernel](BY_NAME[target].target)


def poisoned(like: np.ndarray) -> np.ndarray:
    """An output buffer filled with 0xff bytes (NaN), as run_kernel.c fills
    its outputs: an element the kernel never writes shows."""
    return np.frombuffer(b"\xff" * like.nbytes, like.dtype).reshape(like.shape).copy()


@pytest.fixture(scope="session")
def c_host(tmp_path_factory):
    """examples/deploy_c/<source> compiled for a machine's architecture, once."""
    compiled: dict[tuple[str | None, str], Path] = {}

    def get(machine: Machine, source: str) -> Path:
        key = (machine.arch, source)
        if key not in compiled:
            directory = tmp_path_factory.mktemp(f"hosts_{machine.arch or 'native'}")
            compiled[key] = machine.compile_host(source, directory / Path(source).stem)
        return compiled[key]

    return get


def _export(mod, target: CrossTarget, path: Path) -> Path:
    cc = target.machines[0].gcc if target.name != "host" else None
    mod.export_library(path, cc=cc)
    return path


def _wasm(mod, function: str, directory: Path) -> WasmModule:
    obj = directory / f"{function}.o"
    mod.save(obj)
    return WasmModule(link_wasm([obj], directory / f"{function}.wasm").read_bytes())


def _require(target: CrossTarget) -> None:
    if target.wasm:
        cross_util.wasm_ld()
        pytest.importorskip(
            "wasmtime", reason="wasmtime not installed: pip install -e '.[dev]'"
        )
    for machine in target.machines:
        machine.require()


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("target", [t.name for t in TARGETS])
def test_kernel_runs_on_the_target_and_matches_numpy(kernel, target, c_host, tmp_path):
    t = BY_NAME[target]
    _require(t)
    mod, function, inputs, expected = built(kernel, target)
    if t.wasm:
        wasm = _wasm(mod, function, tmp_path)
        args = [a.copy() for a in inputs] + [poisoned(e) for e in expected]
        assert wasm.call(function, args) == (0, None)
        wasm.instance.release_scratch()  # the blocks kept for the next call
        assert wasm.heap.live == {}, "the kernel did not free what it allocated"
        for a, original in zip(args, inputs, strict=False):
            np.testing.assert_array_equal(a, original)  # inputs untouched
        runs = [args[len(inputs) :]]
    else:
        library = _export(mod, t, tmp_path / f"{function}.so")
        runs = []
        for machine in t.machines:
            host = c_host(machine, "run_kernel.c")
            done, outputs = run_kernel(
                machine, host, library, function, inputs, expected, tmp_path
            )
            assert done.returncode == 0, f"{machine}: {done.stderr}"
            runs.append(outputs)
    for outputs in runs:
        for got, want in zip(outputs, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", [t.name for t in TARGETS if t.vector])
def test_the_scheduled_matmul_runs_on_the_vector_unit(target):
    """What the run tests run is vector code (NEON, RVV, Wasm SIMD)."""
    asm = built("matmul", target)[0].get_source("asm")
    assert re.search(rf"^\s+(?:{BY_NAME[target].vector})\b", asm, re.M), asm


def test_byte_dot_products_use_the_targets_instruction():
    """aarch64 with i8mm (Neoverse V2) runs usdot; the host's VNNI, where it
    has it, vpdpbusd; Cortex-A72 has neither and widens."""
    assert re.search(
        r"^\s+usdot\b",
        built("dot_bytes", "aarch64-neoverse-v2")[0].get_source("asm"),
        re.M,
    )
    assert "usdot" not in built("dot_bytes", "aarch64-cortex-a72")[0].get_source("asm")
    host = built("dot_bytes", "host")[0].get_source("asm")
    assert ("vpdpbusd" in host) == Target.host().has_feature("avx512vnni")


def test_byte_dot_products_on_sdot_alone_run_and_match(c_host, tmp_path):
    """Cortex-A76 has the dot product extension but not i8mm: unsigned by
    signed bytes are sdot of the flipped bytes plus the correction, exact
    under qemu."""
    a76 = CrossTarget(
        "aarch64-cortex-a76",
        "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76",
        (Machine("aarch64", "max"),),
    )
    _require(a76)
    mod, function, inputs, expected = dot_bytes(a76.target)
    asm = mod.get_source("asm")
    assert re.search(r"^\s+sdot\b", asm, re.M) and "usdot" not in asm
    library = _export(mod, a76, tmp_path / f"{function}.so")
    machine = a76.machines[0]
    done, outputs = run_kernel(
        machine, c_host(machine, "run_kernel.c"), library, function, inputs,
        expected, tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(outputs[0], expected[0])


def _bf16_words(values: np.ndarray) -> np.ndarray:
    """float32 `values` (finite, last axis even) rounded to bfloat16, ties to
    even, and packed two an int32 word, the even element low."""
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32)
    return (rounded[..., 0::2] | (rounded[..., 1::2] << 16)).view(np.int32)


def _bf16_halves(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (even, odd) bfloat16 numbers of int32 words, widened to float32."""
    u = words.view(np.uint32)
    return (u << 16).view(np.float32), (u & 0xFFFF0000).view(np.float32)


def dot_bf16(target: str) -> Built:
    """C[j] = sum_r dot_bf16(A[r], B[r, j]) on int32 words of two bfloat16
    numbers, eight columns a vector: bfdot on aarch64's bf16 extension,
    widened halves and fused multiply-adds elsewhere; against float64 sums."""
    m, n = 19, 40
    A = te.placeholder((m,), "int32", name="A")
    B = te.placeholder((m, n), "int32", name="B")
    r = te.reduce_axis((0, m), name="r")
    C = te.compute((n,), lambda j: te.sum(te.dot_bf16(A[r], B[r, j]), axis=r), name="C")
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].reorder(outer, r, inner)
    s[C].vectorize(inner)
    a = _bf16_words(_normal((m, 2), 12)).reshape(m)
    b = _bf16_words(_normal((m, n, 2), 13)).reshape(m, n)
    (a0, a1), (b0, b1) = _bf16_halves(a), _bf16_halves(b)
    want = a0.astype(np.float64) @ b0 + a1.astype(np.float64) @ b1
    mod = ember.build(s, [A, B, C], target=target, name="dot_bf16")
    return mod, "dot_bf16", [a, b], [want.astype(np.float32)]


@pytest.mark.parametrize(
    ("cpu", "qemu_cpu", "bfdot"),
    [("neoverse-v1", "max", True), ("cortex-a72", "cortex-a72", False)],
)
def test_bf16_dot_products_run_on_aarch64_and_match(
    cpu, qemu_cpu, bfdot, c_host, tmp_path
):
    """Neoverse V1 has the bf16 extension: bfdot, whose sum of the pair's
    products (rounded to odd, then added) may differ from two roundings by
    an ulp of the sums; within a float32 rounding an addition of the float64
    sums. Cortex-A72 has none (qemu's model refuses bfdot): the halves
    widened and fused multiply-adds, exactly numpy's float32 sums in the
    same order, the odd pair's product first."""
    machine = Machine("aarch64", qemu_cpu)
    target = CrossTarget(
        f"aarch64-{cpu}", f"llvm -mtriple=aarch64-linux-gnu -mcpu={cpu}", (machine,)
    )
    mod, function, (a, b), (want,) = dot_bf16(target.target)
    asm = mod.get_source("asm")
    assert bool(re.search(r"^\s+bfdot\b", asm, re.M)) == bfdot, asm
    _require(target)
    library = _export(mod, target, tmp_path / f"{function}.so")
    done, (got,) = run_kernel(
        machine, c_host(machine, "run_kernel.c"), library, function, [a, b],
        [want], tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (a0, a1), (b0, b1) = _bf16_halves(a), _bf16_halves(b)
    bound = np.abs(a0) @ np.abs(b0) + np.abs(a1) @ np.abs(b1)
    additions = 2 * len(a)
    assert np.all(np.abs(got - want) <= additions * 2.0**-23 * bound), got - want
    if not bfdot:
        ordered = np.zeros_like(want)
        for k in range(len(a)):
            ordered = ordered + a1[k] * b1[k]
            ordered = ordered + a0[k] * b0[k]
        np.testing.assert_array_equal(got, ordered)


@pytest.mark.parametrize("target", [t.name for t in TARGETS])
def test_a_refused_call_reports_the_kernels_message(target, c_host, tmp_path):
    """The error path crosses the ABI too: a wrong shape is refused with the
    kernel's static message, read by the host (C, or Python over wasm memory)."""
    t = BY_NAME[target]
    _require(t)
    mod, function, (a, b), (c,) = built("vecadd", target)
    message = "vecadd: argument 1 (B): expected float32 tensor of shape (1000,)"
    if t.wasm:
        wasm = _wasm(mod, function, tmp_path)
        rc, got = wasm.call(function, [a, b[:999].copy(), c.copy()])
        assert (rc, got) == (-3, message)
        assert wasm.call(function, [a, b, c.copy()], count=2)[0] == -1
        return
    library = _export(mod, t, tmp_path / "vecadd.so")
    machine = t.machines[0]
    done, _ = run_kernel(
        machine,
        c_host(machine, "run_kernel.c"),
        library,
        function,
        [a, b[:999]],
        [c],
        tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"run_kernel: vecadd failed (code -3): {message}\n"


@pytest.mark.parametrize("target", ["aarch64-cortex-a72", "riscv64-rvv"])
def test_the_deploy_c_example_runs_on_the_target(target, c_host, tmp_path):
    """examples/deploy_c as its README cross-builds it: build_kernel.py
    --target --cc, main.c by the same gcc; main.c checks the result against C
    and the kernel's refusals itself."""
    t = BY_NAME[target]
    _require(t)
    machine = t.machines[0]
    library = tmp_path / "matmul.so"
    command = [sys.executable, cross_util.DEPLOY_C / "build_kernel.py", library]
    command += ["--m", "37", "--k", "29", "--n", "40", "--target", t.target]
    done = subprocess.run(
        [*command, "--cc", machine.gcc], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    done = machine.run([c_host(machine, "main.c"), library, "matmul", 37, 29, 40])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "result: ok" in done.stdout
    assert f'"triple": "{Target(t.target).triple}"' in done.stdout
    assert "expected float32 tensor of shape (29, 40)" in done.stdout


def test_the_run_kernel_readme_example_runs(c_host, tmp_path, monkeypatch):
    """examples/deploy_c/README.md's aarch64 vecadd, as written, under qemu."""
    machine = BY_NAME["aarch64-cortex-a72"].machines[0]
    machine.require()
    readme = (cross_util.DEPLOY_C / "README.md").read_text()
    section = readme[readme.index("## Any kernel, on another machine") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "README.md", "exec"), {})
    assert "qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu cortex-a72" in section
    files = [("in", "a"), ("in", "b"), ("out", "c")]
    specs = [f"{kind}:float32:1000:{name}.bin" for kind, name in files]
    host = c_host(machine, "run_kernel.c")
    done = machine.run([host, "./vecadd.so", "vecadd", *specs])
    assert done.returncode == 0, done.stderr
    c = np.fromfile(tmp_path / "c.bin", np.float32)
    np.testing.assert_array_equal(c, np.arange(1000, dtype=np.float32) + 1)


def test_a_wasm32_module_exports_no_shared_library(tmp_path):
    """No C compiler links Wasm objects into a .so: the error says what does,
    whatever cc= is given (it suggested 'wasm32-linux-gnu-gcc')."""
    mod = built("vecadd", "wasm32-simd128")[0]
    for cc in (None, "cc"):
        with pytest.raises(ember.runtime.ExportError, match="link it with wasm-ld"):
            mod.export_library(tmp_path / "vecadd.so", cc=cc)
    assert not (tmp_path / "vecadd.so").exists()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("float32:1000:{a}", "expected in:DTYPE:SHAPE:FILE or out:DTYPE:SHAPE:FILE"),
        ("in:float32:1000", "expected in:DTYPE:SHAPE:FILE or out:DTYPE:SHAPE:FILE"),
        ("in:float33:1000:{a}", "expected a dtype such as float32"),
        ("in:complex64:1000:{a}", "expected a dtype such as float32"),
        ("in:float32:10x:{a}", "expected a shape such as 4x8"),
        ("in:float32:-4:{a}", "expected a shape such as 4x8"),
        ("in:float32:1x1x1x1x1x1x1x1x1000:{a}", "(at most 8 extents)"),
        ("in:float32:999:{a}", "has 4000 bytes, expected 3996"),
        ("in:float32:1000:{a}.missing", "cannot open"),
    ],
)
def test_run_kernel_refuses_bad_tensors(spec, message, c_host, tmp_path):
    machine = Machine()
    machine.require()
    host = c_host(machine, "run_kernel.c")
    a = tmp_path / "a.bin"
    np.zeros(1000, np.float32).tofile(a)
    done = machine.run([host, tmp_path / "none.so", "f", spec.format(a=a)])
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_run_kernel_refuses_a_missing_library_or_function(c_host, tmp_path):
    machine = Machine()
    machine.require()
    host = c_host(machine, "run_kernel.c")
    done = machine.run([host])
    assert done.returncode == 2 and "usage: run_kernel" in done.stderr
    done = machine.run([host, tmp_path / "none.so", "f"])
    assert done.returncode == 2 and "cannot open the library" in done.stderr
    library = _export(built("vecadd", "host")[0], BY_NAME["host"], tmp_path / "v.so")
    done = machine.run([host, library, "vecsub"])
    assert done.returncode == 2
    assert done.stderr == "run_kernel: the library defines no function vecsub\n"


# -- a whole model -----------------------------------------------------------------


def tiny_cnn():
    """conv-bn-relu, max pool, depthwise conv-relu, strided conv-relu, global
    average pool, a Gemm to 10 logits and their softmax (two outputs)."""
    sys.path.insert(0, str(cross_util.ROOT / "examples"))
    try:
        from onnx_models import GraphBuilder
    finally:
        sys.path.remove(str(cross_util.ROOT / "examples"))
    g = GraphBuilder("tiny_cnn", 0, 17)
    x = g.relu(g.batch_norm(g.conv("input", 3, 8, 3, "conv1"), 8, "bn1"), "conv1")
    x = g.node("MaxPool", [x], "pool1", kernel_shape=[2, 2], strides=[2, 2])
    x = g.relu(g.conv(x, 8, 8, 3, "dw2", groups=8, bias=True), "dw2")
    x = g.relu(g.conv(x, 8, 16, 3, "conv3", stride=2, bias=True), "conv3")
    x = g.node("GlobalAveragePool", [x], "gap")
    x = g.node("Flatten", [x], "flatten", axis=1)
    logits = g.gemm(x, 16, 10, "fc", gain=8.0)
    probs = g.node("Softmax", [logits], "softmax", axis=-1)
    return g.model(
        [("input", [1, 3, 16, 16])],
        [(logits, "logits", [1, 10]), (probs, "probs", [1, 10])],
    )


@pytest.fixture(scope="module")
def cnn():
    onnxruntime = pytest.importorskip("onnxruntime")
    model = tiny_cnn()
    x = _normal((1, 3, 16, 16), 10)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    return model, x, session.run(None, {"input": x})


@pytest.mark.parametrize("target", ["aarch64-cortex-a72", "riscv64-rvv"])
def test_compiled_cnn_runs_in_the_c_host_and_matches_onnxruntime(
    target, cnn, c_host, tmp_path
):
    t = BY_NAME[target]
    _require(t)
    model, x, expected = cnn
    mod = ember.compile_model(model, target=t.target, cache=CompileCache(None))
    library = _export(mod, t, tmp_path / "cnn.so")
    x.tofile(tmp_path / "x.bin")
    outputs = [tmp_path / "logits.bin", tmp_path / "probs.bin"]
    for machine in t.machines:
        host = c_host(machine, "run_model.c")
        done = machine.run([host, library, tmp_path / "x.bin", *outputs])
        assert done.returncode == 0, f"{machine}: {done.stderr}"
        assert "input 0: dtype (2, 32), shape (1, 3, 16, 16)" in done.stdout
        for path, want in zip(outputs, expected, strict=True):
            got = np.fromfile(path, np.float32).reshape(want.shape)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_compiled_cnn_runs_in_wasmtime_and_matches_onnxruntime(cnn, tmp_path):
    """The CNN compiled for wasm32: its objects (entry and kernels, from the
    exported .tar) linked by wasm-ld, `default_run` called through the packed
    ABI in wasmtime with the params blob beside it (a wasm module holds no ELF
    data object, so the params stay separate)."""
    import tarfile

    from ember.runtime import pack_params
    from ember.runtime.cc import read_manifest

    t = BY_NAME["wasm32-simd128"]
    _require(t)
    model, x, expected = cnn
    mod = ember.compile_model(
        model, target=t.target, cache=CompileCache(None), embed_params=False
    )
    mod.export_library(tmp_path / "cnn.tar")
    with tarfile.open(tmp_path / "cnn.tar") as tar:
        tar.extractall(tmp_path / "objects", filter="data")
    objects = sorted((tmp_path / "objects").rglob("*.o"))
    assert len(objects) > 2  # the entry and the kernels
    wasm = WasmModule(link_wasm(objects, tmp_path / "cnn.wasm").read_bytes())
    info = read_manifest(str(tmp_path / "cnn.tar"))["metadata"]["model"]
    blob = np.frombuffer(
        pack_params(mod.params, info["params"], info["params_bytes"]),  # type: ignore[attr-defined]
        np.uint8,
    )
    outputs = [np.zeros(o["shape"], np.float32) for o in info["outputs"]]
    workspace = np.zeros(info["workspace_bytes"], np.uint8)
    arrays = [x, *outputs, workspace, blob.copy()]
    rc, message = wasm.call("default_run", arrays)
    assert rc == 0, message
    for got, want in zip(arrays[1 : 1 + len(outputs)], expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
