"""topi schedules for other x86 CPUs, built and run on this one: AVX2 (haswell: 8
float lanes, 16 registers) and SSE2 (x86-64: 4 lanes, 16 registers) against the
host's (AVX-512 here: 16 lanes, 32 registers).

Each kernel is built inside `with Target(...)`, runs in this process (a CPU whose
features the host has is the host) and matches numpy; its schedule (tile, blocks,
partial lanes) and machine code (xmm / ymm / zmm) follow the target's width.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import te, topi
from ember.backends.llvm import Target
from ember.topi import elementwise, reduce
from ember.topi.conv2d import MIN_COLUMNS
from ember.topi.kernel import Kernel, accumulator_registers

RNG = np.random.default_rng(11)
TARGETS = ["llvm", "llvm -mcpu=haswell", "llvm -mcpu=x86-64"]


@pytest.fixture(params=TARGETS)
def target(request) -> Target:
    t = Target(request.param)
    if Target.host().arch != "x86_64":
        pytest.skip("x86 CPUs run on an x86-64 host")
    if not t.is_host:
        pytest.skip(f"{t} does not run here: {t.not_host_reason}")
    return t


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-2, 2, shape).astype(np.float32)


def build(k: Kernel, target: Target):
    """Built for `target` (Target.current() inside `with`), run here."""
    with target:
        mod = ember.build(k.schedule(), k.args, name="k")
    assert mod.target == target and mod.target.is_host
    return mod


def run(mod, k: Kernel, *inputs: np.ndarray) -> np.ndarray:
    out = np.full(k.output.shape, np.nan, np.float32)
    mod(*inputs, out)
    return out


def widest_register(asm: str) -> int:
    """Bytes of the widest x86 vector register the code names."""
    for name, size in (("zmm", 64), ("ymm", 32), ("xmm", 16)):
        if re.search(rf"%{name}\d", asm):
            return size
    return 0


def check_machine_code(mod, target: Target) -> None:
    # The code is no wider than the target's vectors, and uses them (SSE2 is
    # the floor of every x86-64 float).
    assert widest_register(mod.get_source("asm")) == target.vector_bytes


def test_matmul(target: Target):
    a, b = te.placeholder((24, 40), name="a"), te.placeholder((40, 48), name="b")
    with target:
        k = topi.matmul(a, b)
    lanes = target.vector_lanes("float32")
    mt, nb = k.attrs["tile"]
    assert nb == 2 * lanes and 24 % mt == 0
    assert mt * nb // lanes <= accumulator_registers(target)
    mod = build(k, target)
    x, y = rand(24, 40), rand(40, 48)
    np.testing.assert_allclose(run(mod, k, x, y), x @ y, rtol=1e-5, atol=1e-5)
    check_machine_code(mod, target)


def test_dense_gemv(target: Target):
    x = te.placeholder((1, 64), name="x")
    k = topi.dense(x, (100, 64), bias=True, target=target)
    assert k.attrs["tile"] == (1, 4 * target.vector_lanes("float32"))
    mod = build(k, target)
    xv, w, bias = rand(1, 64), rand(100, 64), rand(100)
    got = run(mod, k, xv, k.transform("dense.weight", w), bias)
    np.testing.assert_allclose(got, xv @ w.T + bias, rtol=1e-5, atol=1e-5)


def conv_reference(x, w, pad, groups=1):
    n, c, h, wd = x.shape
    o, ig, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for f in range(o):
        g = f // og
        for i in range(kh):
            for j in range(kw):
                window = xp[:, g * ig : (g + 1) * ig, i : i + oh, j : j + ow]
                out[:, f] += np.einsum("ncyx,c->nyx", window, w[f, :, i, j])
    return out.astype(np.float32)


def test_conv2d_nchwc(target: Target):
    x = te.placeholder((1, 32, 10, 10), name="x")
    with target:
        k = topi.conv2d(x, (32, 32, 3, 3), padding=1, bias=True, algorithm="direct")
    lanes = target.vector_lanes("float32")
    assert k.attrs["cb"] == k.attrs["ob"] == lanes
    ot, yt, xt = k.attrs["tile"]
    assert ot * yt * xt <= accumulator_registers(target)
    assert xt <= target.vector_registers // 2
    mod = build(k, target)
    xv, w, bias = rand(1, 32, 10, 10), rand(32, 32, 3, 3), rand(32)
    got = run(mod, k, xv, k.transform("conv2d.weight", w), bias)
    want = conv_reference(xv, w, 1) + bias[:, None, None]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    check_machine_code(mod, target)


def test_conv2d_depthwise(target: Target):
    x = te.placeholder((1, 32, 9, 9), name="x")
    k = topi.conv2d(x, (32, 1, 3, 3), padding=1, groups=32, target=target)
    assert k.attrs["cb"] == target.vector_lanes("float32")
    mod = build(k, target)
    xv, w = rand(1, 32, 9, 9), rand(32, 1, 3, 3)
    got = run(mod, k, xv, k.transform("conv2d.weight", w))
    np.testing.assert_allclose(got, conv_reference(xv, w, 1, 32), rtol=1e-4, atol=1e-4)


def partial_lanes(k: Kernel) -> int:
    """The lanes of a row reduction's partial results (its last extent)."""
    stack, seen = [k.output], set()
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t.name.endswith(".partial"):
            return t.shape[-1]
        if isinstance(t.op, te.ComputeOp):
            stack += t.op.input_tensors
    raise AssertionError("no partial results")


@pytest.mark.parametrize("length", [100, 2000])
def test_reduce_sum_rows(target: Target, length: int):
    x = te.placeholder((6, length), name="x")
    with target:
        k = reduce.reduce(x, "sum", axes=[1], keepdims=False)
    lanes = target.vector_lanes("float32")
    assert partial_lanes(k) == (4 * lanes if length >= reduce.LONG_ROW else lanes)
    mod = build(k, target)
    xv = rand(6, length)
    np.testing.assert_allclose(run(mod, k, xv), xv.sum(axis=1), rtol=1e-4, atol=1e-4)
    check_machine_code(mod, target)


def test_softmax(target: Target):
    x = te.placeholder((4, 70), name="x")
    k = reduce.softmax(x, target=target)
    assert partial_lanes(k) == target.vector_lanes("float32")
    mod = build(k, target)
    xv = rand(4, 70)
    e = np.exp(xv - xv.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        run(mod, k, xv), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6
    )


def test_elementwise_chunks_are_whole_vectors(target: Target):
    # One long row: split into chunks for the threads, each whole vectors.
    n = 3 * 1024 * 100 + 12
    a, b = te.placeholder((1, n), name="a"), te.placeholder((1, n), name="b")
    with target:
        k = elementwise.injective(elementwise.relu(elementwise.add(a, b)), [a, b])
    mod = build(k, target)
    lanes = target.vector_lanes("float32")
    inner = re.findall(r"to %c(\d+) step %c1 vectorized", mod.loop_source)
    assert [int(c) for c in inner] == [elementwise.CHUNK // lanes * lanes]
    assert " parallel {" in mod.loop_source
    av, bv = rand(1, n), rand(1, n)
    np.testing.assert_array_equal(run(mod, k, av, bv), np.maximum(av + bv, 0))
    check_machine_code(mod, target)


def test_the_schedules_differ_as_the_widths_say():
    """The same matmul and conv2d for the three widths: tiles shrink with the
    lanes and the registers, not only the vector type."""
    a, b = te.placeholder((64, 64), name="a"), te.placeholder((64, 64), name="b")
    x = te.placeholder((1, 64, 14, 14), name="x")
    tiles = {}
    for spec in ("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512", *TARGETS[1:]):
        t = Target(spec)
        conv = topi.conv2d(x, (64, 64, 3, 3), padding=1, target=t, algorithm="direct")
        tiles[t.vector_lanes()] = (
            topi.matmul(a, b, target=t).attrs["tile"],
            conv.attrs,
        )
    assert [tiles[n][0][1] for n in (16, 8, 4)] == [32, 16, 8]  # nb: 2 vectors
    assert [tiles[n][1]["ob"] for n in (16, 8, 4)] == [16, 8, 4]
    # a deep 3x3: 7 columns (a divisor <= 8); 32 registers hold 2 channel
    # blocks of them, 16 registers one
    assert [tiles[n][1]["tile"][2] for n in (16, 8, 4)] == [7, 7, 7]
    assert [tiles[n][1]["tile"][0] for n in (16, 8, 4)] == [2, 1, 1]


SPECS = [
    "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512",
    "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell",
    "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64",
    "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72",
    "llvm -mtriple=riscv64-linux-gnu -mattr=+v,+zvl256b",
]


@settings(max_examples=60, deadline=None)
@given(
    spec=st.sampled_from(SPECS),
    c=st.integers(1, 80),
    o=st.integers(1, 80),
    hw=st.integers(3, 40),
    k=st.sampled_from([1, 3]),
)
def test_conv_tiles_fit_the_target(spec: str, c: int, o: int, hw: int, k: int):
    """Whatever the shape: blocks divide the channels and fit a vector, the
    register tile fits the accumulators, the columns divide the width (or
    take a tail only on widths without a small divisor)."""
    t = Target(spec)
    lanes = t.vector_lanes("float32")
    x = te.placeholder((1, c, hw, hw), name="x")
    attrs = topi.conv2d(
        x, (o, c, k, k), padding=k // 2, target=t, algorithm="direct"
    ).attrs
    cb, ob, (ot, yt, xt) = attrs["cb"], attrs["ob"], attrs["tile"]
    assert c % cb == 0 and cb <= lanes and ob in (lanes, lanes // 2)
    assert ot * yt * xt <= accumulator_registers(t)
    assert ot <= max(1, t.vector_registers // 8)
    # the widest columns: half the registers, or for deep reductions a quarter
    # (at least MIN_COLUMNS); a tail takes half of that
    widest = {t.vector_registers // 2, max(t.vector_registers // 4, MIN_COLUMNS)}
    assert hw % xt == 0 or (2 * xt in widest and hw > 2 * xt)


@settings(max_examples=60, deadline=None)
@given(spec=st.sampled_from(SPECS), m=st.integers(1, 50), n=st.integers(1, 200))
def test_gemm_tiles_fit_the_target(spec: str, m: int, n: int):
    t = Target(spec)
    lanes = t.vector_lanes("float32")
    a, b = te.placeholder((m, 16), name="a"), te.placeholder((16, n), name="b")
    mt, nb = topi.matmul(a, b, target=t).attrs["tile"]
    assert 1 <= mt <= m and nb in (lanes, 2 * lanes)
    assert mt * (nb // lanes) <= accumulator_registers(t)
    full = min(m, accumulator_registers(t) // max(nb // lanes, 2))
    assert -(-full // 2) <= mt <= full
    if m % mt:  # M padded only where no divisor is at least half the full tile
        assert not any(m % d == 0 for d in range(-(-full // 2), full + 1))
