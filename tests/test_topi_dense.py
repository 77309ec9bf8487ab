"""ember.topi dense / matmul / batch_matmul against numpy, with epilogues."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import te, topi


def build_run(k, inputs):
    mod = ember.build(k.schedule(), k.args, name="f")
    y = np.full(k.output.shape, np.nan, np.float32)
    mod(*inputs, y)
    return y


def rand(rng, shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize(
    "m, n, k",
    [(1, 1000, 512), (1, 10, 7), (5, 33, 17), (64, 128, 128), (3, 16, 1)],
)
def test_dense_bias_relu_matches_numpy(m, n, k):
    rng = np.random.default_rng(m * n * k)
    x_t = te.placeholder((m, k), name="x")
    kern = topi.dense(
        x_t, (n, k), bias=True, epilogue=lambda v, idx: te.max(v, 0.0), name="fc"
    )
    x, w, b = rand(rng, (m, k)), rand(rng, (n, k)), rand(rng, n)
    y = build_run(kern, [x, kern.transform("fc.weight", w), b])
    np.testing.assert_allclose(y, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)


def test_dense_weight_is_packed_in_column_panels():
    kern = topi.dense(te.placeholder((1, 4), name="x"), (70, 4), name="fc")
    w = np.arange(280, dtype=np.float32).reshape(70, 4)
    packed = kern.transform("fc.weight", w)
    nb = packed.shape[2]
    assert packed.shape == (-(-70 // nb), 4, nb)
    assert packed[1, 3, 2] == w[nb + 2, 3]
    assert packed[-1, 0, -1] == 0.0  # padding columns are zeros


def test_dense_epilogue_reads_a_residual_with_mn_indices():
    rng = np.random.default_rng(1)
    x_t, r_t = te.placeholder((4, 8), name="x"), te.placeholder((4, 24), name="r")
    kern = topi.dense(
        x_t, (24, 8), epilogue=lambda v, idx: v + r_t[idx], epilogue_inputs=[r_t]
    )
    x, w, r = rand(rng, (4, 8)), rand(rng, (24, 8)), rand(rng, (4, 24))
    y = build_run(kern, [x, kern.transform("dense.weight", w), r])
    np.testing.assert_allclose(y, x @ w.T + r, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((64, 128), (128, 128)),
        ((4, 64, 128), (4, 128, 128)),  # the transformer block's batch
        ((2, 1, 5, 7), (3, 7, 9)),  # batch broadcasting
        ((4, 6, 8), (8, 40)),  # a batch against one matrix
        ((7,), (3, 7, 5)),  # 1-D left operand
        ((3, 4, 7), (7,)),  # 1-D right operand
    ],
)
def test_matmul_has_numpy_semantics(sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a_t, b_t = te.placeholder(sa, name="a"), te.placeholder(sb, name="b")
    kern = topi.matmul(a_t, b_t)
    a, b = rand(rng, sa), rand(rng, sb)
    assert kern.output.shape == np.matmul(a, b).shape == topi.matmul_shape(sa, sb)
    np.testing.assert_allclose(build_run(kern, [a, b]), a @ b, rtol=1e-4, atol=1e-4)


def test_batch_matmul_with_gelu_like_epilogue():
    rng = np.random.default_rng(3)
    a_t, b_t = (
        te.placeholder((2, 16, 32), name="a"),
        te.placeholder((2, 32, 48), name="b"),
    )

    def epilogue(v, idx):  # gelu, tanh form
        return 0.5 * v * (1.0 + te.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))

    kern = topi.batch_matmul(a_t, b_t, epilogue=epilogue)
    a, b = rand(rng, (2, 16, 32)), rand(rng, (2, 32, 48))
    z = (a @ b).astype(np.float64)
    gelu = 0.5 * z * (1 + np.tanh(0.7978845608 * (z + 0.044715 * z**3)))
    np.testing.assert_allclose(build_run(kern, [a, b]), gelu, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: topi.dense(te.placeholder((2, 3), name="x"), (4, 5)),
            "match data's K",
        ),
        (lambda: topi.dense(te.placeholder((2, 3, 1), name="x"), (4, 3)), "(M, K)"),
        (
            lambda: topi.matmul(
                te.placeholder((2, 3), name="a"), te.placeholder((4, 5), name="b")
            ),
            "K 3 to equal",
        ),
        (
            lambda: topi.batch_matmul(
                te.placeholder((2, 3, 4), name="a"), te.placeholder((3, 4, 5), name="b")
            ),
            "expected \\(B, M, K\\)",
        ),
        (
            lambda: topi.matmul(
                te.placeholder((3,), name="a"), te.placeholder((3,), name="b")
            ),
            "two vectors",
        ),
    ],
)
def test_invalid_operands_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 9), st.integers(1, 40), st.integers(1, 20), st.booleans())
def test_random_dense_shapes(m, n, k, bias):
    rng = np.random.default_rng(m + 7 * n + 31 * k)
    kern = topi.dense(te.placeholder((m, k), name="x"), (n, k), bias=bias, name="d")
    x, w, b = rand(rng, (m, k)), rand(rng, (n, k)), rand(rng, n)
    args = [x, kern.transform("d.weight", w)] + ([b] if bias else [])
    expected = x @ w.T + (b if bias else 0)
    np.testing.assert_allclose(build_run(kern, args), expected, rtol=1e-4, atol=1e-4)


def test_layers_benchmark_quick_runs_and_checks():
    """benchmarks/layers.py builds, checks and times a layer (the classifier head)."""
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).parent.parent / "benchmarks"
    out = subprocess.run(
        [sys.executable, "layers.py", "--quick", "--only", "fc", "--repeat", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        cwd=bench,
    ).stdout
    row = next(line for line in out.splitlines() if line.startswith("m.fc "))
    assert "dense 1280->1000" in row and "dense tile=(1, 64)" in row, out
    assert "WRONG" not in out and "failed" not in out, out


@pytest.mark.parametrize("m", [197, 7, 13])
def test_rows_without_a_good_divisor_get_whole_tiles_over_padded_rows(m):
    """197 tokens (a prime) once gave one-row register tiles, 3.7x slower: M
    is padded to whole tiles now, the padded rows never copied out; the output
    (NaN-filled first) is exactly numpy's, for dense and for matmul."""
    rng = np.random.default_rng(m)
    x_t = te.placeholder((m, 24), name="x")
    kern = topi.dense(x_t, (40, 24), bias=True, name="fc")
    assert kern.attrs["tile"][0] > 1
    x, w, b = rand(rng, (m, 24)), rand(rng, (40, 24)), rand(rng, 40)
    y = build_run(kern, [x, kern.transform("fc.weight", w), b])
    np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-4, atol=1e-4)
    a_t, b_t = te.placeholder((2, m, 24), name="a"), te.placeholder((24, 40), name="b")
    mm = topi.matmul(a_t, b_t, name="mm")
    assert mm.attrs["tile"][0] > 1
    a, bb = rand(rng, (2, m, 24)), rand(rng, (24, 40))
    np.testing.assert_allclose(build_run(mm, [a, bb]), a @ bb, rtol=1e-4, atol=1e-4)


@settings(max_examples=12, deadline=None)
@given(
    st.lists(st.integers(1, 3), max_size=2),
    st.integers(1, 13),
    st.integers(1, 70),
    st.integers(1, 20),
)
def test_matmul_by_a_packed_weight_matches_numpy(batch, m, n, k):
    """a (..., M, K) @ w (K, N) with w packed in panels (M padded to whole
    tiles, N to whole panels), a residual epilogue over the output's indices."""
    rng = np.random.default_rng(m + 7 * n + 31 * k + 101 * len(batch))
    shape = (*batch, m, n)
    a_t, r_t = te.placeholder((*batch, m, k), name="a"), te.placeholder(shape, name="r")
    kern = topi.matmul_weight(
        a_t, (k, n), epilogue=lambda v, idx: v + r_t[idx], epilogue_inputs=[r_t]
    )
    a, w, r = rand(rng, (*batch, m, k)), rand(rng, (k, n)), rand(rng, shape)
    packed = kern.transform("matmul.weight", w)
    assert packed.shape[1] == k and packed.shape[0] * packed.shape[2] >= n
    y = build_run(kern, [a, packed, r])
    np.testing.assert_allclose(y, a @ w + r, rtol=1e-4, atol=1e-4)


@settings(max_examples=12, deadline=None)
@given(st.data(), st.booleans(), st.integers(1, 20), st.integers(1, 40))
def test_every_knob_config_gives_numpys_result(data, dense, m, n):
    """Tuning never changes a result: any rows x panel order of a GEMM
    template's knobs computes the same product."""
    k = data.draw(st.integers(1, 24), label="k")
    rng = np.random.default_rng(m + 7 * n + 31 * k)
    a_t = te.placeholder((m, k), name="a")
    if dense:
        kern = topi.dense(a_t, (n, k), bias=True)
        w, b = rand(rng, (n, k)), rand(rng, (n,))
        args = [kern.transform("dense.weight", w), b]
        expected = lambda a: a @ w.T + b  # noqa: E731
    else:
        kern = topi.matmul_weight(a_t, (k, n))
        w = rand(rng, (k, n))
        args = [kern.transform("matmul.weight", w)]
        expected = lambda a: a @ w  # noqa: E731
    assert (
        kern.knobs is not None
        and kern.knobs.default["rows"] in (kern.knobs.space["rows"])
    )
    config = {
        "rows": data.draw(st.sampled_from(kern.knobs.space["rows"]), label="rows"),
        "panel_outer": data.draw(st.booleans(), label="panel_outer"),
    }
    mod = ember.build(kern.schedule(config=config), kern.args, name="f")
    a = rand(rng, (m, k))
    y = np.full(kern.output.shape, np.nan, np.float32)
    mod(a, *args, y)
    np.testing.assert_allclose(y, expected(a), rtol=1e-4, atol=1e-4)


def test_matmul_weight_refuses_mismatched_operands():
    with pytest.raises(ValueError, match="expected a .* and a weight"):
        topi.matmul_weight(te.placeholder((4, 8), name="a"), (7, 3))


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from([((2, 3), (2, 3)), ((3,), (1,)), ((1,), (4,)), ((), (2,))]),
    st.integers(2, 14),
    st.integers(1, 80),
    st.integers(1, 20),
)
def test_matmul_with_a_partial_last_panel_matches_numpy(batches, m, n, k):
    """N not a multiple of the panel (attention scores, 197 x 197): b is
    copied into zero-padded panels first; batch dims broadcast either way."""
    sa, sb = batches
    rng = np.random.default_rng(m + 7 * n + 31 * k)
    a_t = te.placeholder((*sa, m, k), name="a")
    b_t = te.placeholder((*sb, k, n), name="b")
    kern = topi.matmul(a_t, b_t, epilogue=lambda v, idx: v * 0.125)
    a, b = rand(rng, (*sa, m, k)), rand(rng, (*sb, k, n))
    y = build_run(kern, [a, b])
    np.testing.assert_allclose(y, (a @ b) * 0.125, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("l2", [1024, 1 << 20])
def test_panels_outside_or_inside_the_row_tiles_give_numpys_result(l2):
    """Column panels are the outer tile loop only while one fits in half of
    L2 (here 24 x nb floats: not in 1 KiB, in 1 MiB); both orders are exact."""
    rng = np.random.default_rng(l2)
    target = ember.Target(f"llvm -l2-bytes={l2}")
    a_t = te.placeholder((2, 29, 24), name="a")
    kern = topi.matmul_weight(a_t, (24, 70), target=target)
    a, w = rand(rng, (2, 29, 24)), rand(rng, (24, 70))
    with target:
        y = build_run(kern, [a, kern.transform("matmul.weight", w)])
    np.testing.assert_allclose(y, a @ w, rtol=1e-4, atol=1e-4)
    dense = topi.dense(te.placeholder((29, 24), name="x"), (70, 24), target=target)
    with target:
        y = build_run(dense, [a[0], dense.transform("dense.weight", w.T)])
    np.testing.assert_allclose(y, a[0] @ w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "target, m, tile",
    [
        ("llvm -mcpu=skylake-avx512", 128, (8, 128)),  # 24 accumulators: 8 x 2
        ("llvm -mcpu=skylake-avx512", 197, (11, 198)),  # a prime: least padding
        ("llvm -mcpu=skylake-avx512", 50, (10, 50)),
        ("llvm -mcpu=skylake-avx512", 3, (3, 3)),
        ("llvm -mcpu=haswell", 128, (4, 128)),  # 12 accumulators: up to 6 x 2
        ("llvm -mcpu=haswell", 197, (6, 198)),
    ],
)
def test_register_tile_rows_fill_the_targets_accumulators(target, m, tile):
    from ember.topi.dense import _row_tile

    assert _row_tile(m, 2, ember.Target(target)) == tile
