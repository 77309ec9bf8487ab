"""Winograd F(m x m, 3 x 3) convolution: its transforms are exact, its kernels
match numpy on random shapes, layouts and epilogues (rounding apart), every
knob config computes the same, and the target decides where it applies."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_blocked_layouts import from_blocks, to_blocks
from test_topi_conv import conv_reference

import ember
from ember import te, topi
from ember.backends.llvm import Target
from ember.runtime.errors import EmberValueError
from ember.topi.conv2d import channel_block, conv2d_shape
from ember.topi.conv2d_winograd import TRANSFORMS, winograd_tile


@pytest.mark.parametrize("m", sorted(TRANSFORMS))
def test_transforms_compute_the_correlation(m):
    """A^T [(G g) * (B^T d)] is the 3-tap correlation of d by g, exactly (in
    rationals: the matrices are the algorithm, not an approximation)."""
    from fractions import Fraction

    bt, g, at = TRANSFORMS[m]
    rng = np.random.default_rng(m)
    for _ in range(5):
        d = [Fraction(int(v)) for v in rng.integers(-9, 9, m + 2)]
        w = [Fraction(int(v)) for v in rng.integers(-9, 9, 3)]
        gw = [sum(row[i] * w[i] for i in range(3)) for row in g]
        bd = [sum(row[i] * d[i] for i in range(m + 2)) for row in bt]
        y = [sum(row[i] * gw[i] * bd[i] for i in range(m + 2)) for row in at]
        assert y == [sum(w[k] * d[j + k] for k in range(3)) for j in range(m)]


def run(xs, o, *, m, padding=1, bias=False, blocked=(False, False), residual=False):
    """Build F(m, 3) for data `xs` (NCHW) and `o` output channels, run it on
    random data; return (kernel, y NCHW, expected NCHW)."""
    n, c, h, w = xs
    target = Target.current()
    cb, ob = channel_block(c, target), channel_block(o, target)
    x_t = te.placeholder((n, c // cb, h, w, cb) if blocked[0] else xs, name="x")
    shape = conv2d_shape(xs, (o, c, 3, 3), padding=padding)
    r_t = te.placeholder(shape.out_shape, name="r")
    k = topi.conv2d(
        x_t,
        (o, c, 3, 3),
        padding=padding,
        bias=bias,
        epilogue=(lambda v, i: te.max(v + r_t[i], 0.0)) if residual else None,
        epilogue_inputs=[r_t] if residual else [],
        name="conv",
        algorithm=f"winograd-{m}",
        data_block=cb if blocked[0] else None,
        out_block=ob if blocked[1] else None,
    )
    assert k.attrs["kernel"] == "winograd" and k.attrs["m"] == m
    rng = np.random.default_rng(sum(xs) + o + m)
    x = rng.uniform(-1, 1, xs).astype(np.float32)
    wt = rng.uniform(-1, 1, (o, c, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, o).astype(np.float32)
    r = rng.uniform(-1, 1, shape.out_shape).astype(np.float32)
    expected = conv_reference(x, wt, (1, 1), shape.padding)
    if bias:
        expected = expected + b[None, :, None, None]
    if residual:
        expected = np.maximum(expected + r, 0.0)
    mod = ember.build(k.schedule(), k.args, name="conv")
    args = [to_blocks(x, cb) if blocked[0] else x, k.transform("conv.weight", wt)]
    args += [b] if bias else []
    args += [r] if residual else []
    y = np.full(k.output.shape, np.nan, np.float32)
    mod(*args, y)
    return k, from_blocks(y) if blocked[1] else y, expected


def close(y, expected):
    """Winograd rounds differently from the direct sum: within 1e-5 of the
    result's scale (F(4, 3) grows the transforms' values by up to 100x)."""
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(y, expected, rtol=0, atol=2e-5 * scale)


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("blocked", [(False, False), (True, True), (True, False)])
def test_kernel_matches_numpy(m, blocked):
    """Whole and partial tiles (10 = 2 x 4 + 2), bias, a residual epilogue,
    NCHW or blocked data and output."""
    _, y, expected = run(
        (1, 16, 10, 7), 32, m=m, bias=True, blocked=blocked, residual=True
    )
    close(y, expected)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    m=st.sampled_from([2, 4]),
    n=st.integers(1, 2),
    c=st.sampled_from([4, 8, 16, 24, 32]),
    o=st.sampled_from([4, 8, 20, 32, 48]),
    h=st.integers(1, 13),
    w=st.integers(1, 13),
    padding=st.sampled_from([0, 1, (1, 0, 2, 1), (0, 2, 0, 0)]),
)
def test_random_shapes_match_numpy(m, n, c, o, h, w, padding):
    pt, pl, pb, pr = padding if isinstance(padding, tuple) else (padding,) * 4
    if h + pt + pb < 3 or w + pl + pr < 3:
        return  # no output
    _, y, expected = run((n, c, h, w), o, m=m, padding=padding, bias=True)
    close(y, expected)


def test_every_knob_config_computes_the_same():
    """The GEMM's knobs (rows of tiles, panel order) change the schedule, not
    the result."""
    x = te.placeholder((1, 16, 8, 8), name="x")
    k = topi.conv2d(x, (32, 16, 3, 3), padding=1, algorithm="winograd-4", name="c")
    assert k.knobs is not None
    rng = np.random.default_rng(0)
    xv = rng.uniform(-1, 1, (1, 16, 8, 8)).astype(np.float32)
    wv = k.transform("c.weight", rng.uniform(-1, 1, (32, 16, 3, 3)).astype(np.float32))
    outputs = []
    for rows in k.knobs.space["rows"]:
        for outer in k.knobs.space["panel_outer"]:
            s = k.schedule(config={"rows": rows, "panel_outer": outer})
            y = np.zeros((1, 32, 8, 8), np.float32)
            ember.build(s, k.args, name="c")(xv, wv, y)
            outputs.append(y)
    for y in outputs[1:]:
        np.testing.assert_array_equal(y, outputs[0])


def test_algorithm_is_checked():
    x = te.placeholder((1, 16, 8, 8), name="x")
    with pytest.raises(EmberValueError, match="computes 3x3 convolutions of stride 1"):
        topi.conv2d(x, (16, 16, 3, 3), strides=2, algorithm="winograd-4")
    with pytest.raises(EmberValueError, match="computes 3x3 convolutions"):
        topi.conv2d(x, (16, 16, 5, 5), algorithm="winograd-2")
    with pytest.raises(EmberValueError, match="expected algorithm 'auto'"):
        topi.conv2d(x, (16, 16, 3, 3), algorithm="fft")
    assert topi.conv2d(x, (16, 16, 3, 3), algorithm="direct").attrs["kernel"] == "nchwc"


def test_the_target_decides_where_winograd_applies():
    """m = 4 while the transformed weights fit the last-level cache, then
    m = 2, then none; never for channels that fill no vector or shapes it
    does not compute."""
    big = Target(
        "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -l3-bytes=33554432"
    )
    small = Target(
        "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -l3-bytes=4194304"
    )

    def tile(c, o, target, **attrs):
        return winograd_tile(
            conv2d_shape((1, c, 28, 28), (o, c, 3, 3), **attrs), target
        )

    assert tile(256, 256, big) == 4  # 9.4 MB transformed
    assert tile(512, 512, big) == 2  # 37.7 MB for m = 4, 16.8 for m = 2
    assert tile(256, 256, small) == 2
    assert tile(512, 512, small) == 0
    assert tile(4, 64, big) == 0  # a quarter of a vector of input channels
    assert tile(8, 64, big) == 4  # half a vector
    assert tile(64, 8, big) == 0  # less than a vector of output channels
    assert tile(64, 64, big, strides=2) == 0
    assert tile(64, 64, big, dilation=2, padding=2) == 0
    assert tile(64, 64, Target("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell")) == 4
    # below MIN_MACS (16 -> 16 at 8x8: 147k) the direct kernel builds faster
    small_layer = conv2d_shape((1, 16, 8, 8), (16, 16, 3, 3), padding=1)
    assert winograd_tile(small_layer, big) == 0


def _transforms(module) -> int:
    """How many Winograd kernels a lowered module holds."""
    from xdsl.dialects.builtin import StringAttr

    from ember.dialects import te as te_ir

    return sum(
        isinstance(op, te_ir.ComputeOp)
        and op.properties["name"] == StringAttr("conv2d.data_transform")
        for op in module.walk()
    )


def _three_convs():
    from test_blocked_layouts import _model

    layer = {"k": 3, "dw": False, "relu": True, "residual": True}
    return _model(
        [
            {**layer, "c_in": 16, "o": 32, "stride": 1},
            {**layer, "o": 32, "stride": 1},
            {**layer, "o": 32, "stride": 2},
        ]
    )


@pytest.mark.parametrize("algorithm", ["auto", "direct", "winograd-2", "winograd-4"])
def test_models_take_the_pass_contexts_algorithm(algorithm):
    """`PassContext(config={"conv2d.algorithm": ...})` picks every
    convolution's kernel (Winograd only where it computes the shape: the
    stride-2 layer stays direct; "auto" leaves the layer below `MIN_MACS`
    direct too); each gives onnxruntime's result."""
    from test_blocked_layouts import _check

    from ember.compiler.model import lower_to_te
    from ember.passes.pass_context import PassContext

    model = _three_convs()
    with PassContext(config={"conv2d.algorithm": algorithm}):
        module, _ = lower_to_te(model)
        _check(model)
    # auto: only the 32 -> 32 layer (1.1M multiply-adds) reaches MIN_MACS
    expected = {"direct": 0, "auto": 1}.get(algorithm, 2)
    assert _transforms(module) == expected
