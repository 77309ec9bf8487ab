"""ember.topi.conv2d against a direct numpy convolution: every form MobileNetV2 and
ResNet-18 use (small shapes), epilogues, packed weights, and random shapes."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import te, topi


def conv_reference(
    x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1
):
    """The definition in float64: a sum over (kh, kw) of strided windows."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    o, ig, kh, kw = w.shape
    pt, pl, pb, pr = padding
    (sh, sw), (dh, dw) = strides, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                window = xp[
                    :,
                    g * ig : (g + 1) * ig,
                    i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                    j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                ]
                y[:, g * og : (g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", window, w[g * og : (g + 1) * og, :, i, j]
                )
    return y


def run_conv(xs, ws, *, bias=False, epilogue=None, extra=(), config=None, **attrs):
    """Build the kernel (at knob `config`, if given), run it on random data;
    return (kernel, y, x, w, b, extras)."""
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x_t = te.placeholder(xs, name="x")
    extra_t = [te.placeholder(shape, name=f"e{i}") for i, shape in enumerate(extra)]
    k = topi.conv2d(
        x_t,
        ws,
        bias=bias,
        epilogue=None if epilogue is None else epilogue(*extra_t),
        epilogue_inputs=extra_t,
        name="conv",
        **attrs,
    )
    s = k.schedule() if config is None else k.schedule(config=config)
    mod = ember.build(s, k.args, name="conv")
    x = rng.uniform(-1, 1, xs).astype(np.float32)
    w = rng.uniform(-1, 1, ws).astype(np.float32)
    b = rng.uniform(-1, 1, ws[0]).astype(np.float32)
    extras = [rng.uniform(-1, 1, shape).astype(np.float32) for shape in extra]
    y = np.full(k.output.shape, np.nan, np.float32)
    args = [x, k.transform("conv.weight", w)] + ([b] if bias else []) + extras
    mod(*args, y)
    return k, y, x, w, b, extras


def check(y, expected):
    assert y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


FORMS = [
    # (data, weight, attrs, kernel expected)
    (
        (1, 16, 10, 10),
        (32, 16, 3, 3),
        {"padding": 1, "algorithm": "winograd-4"},
        "winograd",
    ),
    ((1, 16, 10, 10), (32, 16, 3, 3), {"padding": 1}, "nchwc"),  # 3x3 s1, small
    ((1, 16, 11, 11), (32, 16, 3, 3), {"padding": 1, "strides": 2}, "nchwc"),  # s2
    ((1, 32, 8, 8), (16, 32, 1, 1), {}, "nchwc"),  # pointwise
    ((1, 16, 9, 9), (32, 16, 1, 1), {"strides": 2}, "nchwc"),  # 1x1 s2 downsample
    ((1, 3, 19, 19), (16, 3, 7, 7), {"padding": 3, "strides": 2}, "nchwc"),  # stem
    ((1, 3, 16, 16), (32, 3, 3, 3), {"padding": 1, "strides": 2}, "nchwc"),  # mnv2
    ((1, 24, 7, 7), (24, 24, 1, 1), {}, "nchwc"),  # 24 channels: blocks of 8
    (
        (1, 16, 6, 6),
        (20, 16, 3, 3),
        {"padding": 1, "algorithm": "winograd-2"},
        "winograd",
    ),
    ((1, 16, 6, 6), (20, 16, 3, 3), {"padding": 1}, "nchwc"),  # O padded to 32
    ((1, 32, 12, 12), (32, 1, 3, 3), {"padding": 1, "groups": 32}, "depthwise"),
    (
        (1, 32, 13, 13),
        (32, 1, 3, 3),
        {"padding": 1, "strides": 2, "groups": 32},
        "depthwise",
    ),
    ((1, 24, 7, 7), (24, 1, 3, 3), {"padding": 1, "groups": 24}, "depthwise"),
    ((1, 8, 9, 9), (12, 4, 3, 3), {"padding": 1, "groups": 2}, "direct"),
    # groups whole within a vector: each block of outputs reads its own span
    ((1, 8, 9, 9), (8, 2, 3, 3), {"padding": 1, "groups": 4}, "grouped"),
    ((1, 48, 10, 10), (48, 8, 3, 3), {"padding": 1, "groups": 6}, "grouped"),
    # RegNetY's 104 = 13 groups of 8: the last block's span past C reads zeros
    (
        (1, 104, 7, 7),
        (104, 8, 3, 3),
        {"padding": 1, "strides": 2, "groups": 13},
        "grouped",
    ),
    # groups of 32 output channels: each vector inside one group
    ((1, 64, 6, 6), (64, 32, 3, 3), {"padding": 1, "groups": 2}, "grouped"),
    ((1, 8, 11, 11), (16, 8, 3, 3), {"padding": 2, "dilation": 2}, "nchwc"),
    (
        (1, 8, 9, 11),
        (16, 8, 3, 3),
        {"padding": (0, 1, 2, 1), "strides": (2, 1)},
        "nchwc",
    ),
    (
        (2, 8, 6, 6),
        (16, 8, 3, 3),
        {"padding": 1, "algorithm": "winograd-4"},
        "winograd",
    ),
    ((2, 8, 6, 6), (16, 8, 3, 3), {"padding": 1}, "nchwc"),  # batch 2
]


@pytest.mark.parametrize("xs, ws, attrs, kind", FORMS)
def test_conv2d_forms_match_numpy(xs, ws, attrs, kind):
    k, y, x, w, _, _ = run_conv(xs, ws, **attrs)
    assert k.attrs["kernel"] == kind
    norm = topi.conv2d_shape(
        xs, ws, **{k: v for k, v in attrs.items() if k != "algorithm"}
    )
    expected = conv_reference(
        x, w, norm.strides, norm.padding, norm.dilation, norm.groups
    )
    check(y, expected)


@pytest.mark.parametrize(
    "xs, ws, attrs",
    [
        ((1, 16, 8, 8), (32, 16, 1, 1), {}),
        ((1, 32, 9, 9), (32, 1, 3, 3), {"padding": 1, "groups": 32}),
        ((1, 8, 6, 6), (8, 4, 3, 3), {"padding": 1, "groups": 2}),
    ],
)
def test_bias_and_relu6_epilogue(xs, ws, attrs):
    def relu6():
        return lambda v, idx: te.min(te.max(v, 0.0), 6.0)

    _, y, x, w, b, _ = run_conv(xs, ws, bias=True, epilogue=relu6, **attrs)
    norm = topi.conv2d_shape(xs, ws, **attrs)
    ref = conv_reference(x, w, norm.strides, norm.padding, groups=norm.groups)
    check(y, np.clip(ref + b[None, :, None, None], 0, 6))


def test_residual_add_epilogue_reads_another_tensor():
    xs, ws = (1, 16, 7, 7), (16, 16, 3, 3)

    def residual(r):
        return lambda v, idx: te.max(v + r[idx], 0.0)

    k, y, x, w, b, (r,) = run_conv(
        xs, ws, bias=True, epilogue=residual, extra=[(1, 16, 7, 7)], padding=1
    )
    assert [p.name for p in k.placeholders] == ["x", "conv.weight", "conv.bias", "e0"]
    ref = conv_reference(x, w, padding=(1, 1, 1, 1)) + b[None, :, None, None] + r
    check(y, np.maximum(ref, 0))


def test_epilogue_sees_nchw_indices():
    """A per-channel scale indexed by the epilogue's c (folded batch norm)."""
    xs, ws = (1, 8, 5, 5), (24, 8, 1, 1)

    def scale(s):
        return lambda v, idx: v * s[idx[1]]

    _, y, x, w, _, (s,) = run_conv(xs, ws, epilogue=scale, extra=[(24,)])
    check(y, conv_reference(x, w) * s[None, :, None, None])


def test_weight_transform_packs_oihw():
    x = te.placeholder((1, 32, 8, 8), name="x")
    k = topi.conv2d(x, (48, 32, 3, 3), padding=1, name="c", algorithm="direct")
    w = np.arange(48 * 32 * 9, dtype=np.float32).reshape(48, 32, 3, 3)
    packed = k.transform("c.weight", w)
    assert packed.shape == tuple(k.placeholders[1].shape) == (3, 2, 3, 3, 16, 16)
    # packed[ob, cb, kh, kw, ci, oi] = w[ob*16 + oi, cb*16 + ci, kh, kw]
    assert packed[2, 1, 0, 2, 3, 5] == w[2 * 16 + 5, 16 + 3, 0, 2]
    with pytest.raises(KeyError, match="no placeholder 'c.bias'"):
        k.transform("c.bias", w)


@pytest.mark.parametrize(
    "xs, ws, attrs, message",
    [
        ((1, 8, 5, 5), (8, 3, 3, 3), {}, "expected weight input channels 8"),
        ((1, 8, 5, 5), (8, 8, 3, 3), {"groups": 3}, "expected groups dividing"),
        ((1, 8, 2, 2), (8, 8, 3, 3), {}, "no larger than the padded input"),
        ((8, 5, 5), (8, 8, 3, 3), {}, "expected NCHW data"),
        ((1, 8, 5, 5), (8, 8, 3, 3), {"padding": (1, 2, 3)}, "expected padding"),
        ((1, 8, 5, 5), (8, 8, 3, 3), {"strides": 0}, "expected strides"),
    ],
)
def test_invalid_shapes_are_refused(xs, ws, attrs, message):
    with pytest.raises(ValueError, match=message):
        topi.conv2d(te.placeholder(xs, name="x"), ws, **attrs)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.data(),
    st.sampled_from([1, 2, 4, "dw"]),
    st.integers(1, 3),
    st.integers(1, 2),
    st.integers(1, 2),
)
def test_random_convolutions_match_numpy(data, groups, k, stride, dilation):
    cg = data.draw(st.sampled_from([1, 3, 4, 8]), label="in channels per group")
    og = data.draw(st.sampled_from([1, 5, 8, 16]), label="out channels per group")
    if groups == "dw":
        groups, cg, og = data.draw(st.sampled_from([8, 16, 24]), label="dw"), 1, 1
    c, o = cg * groups, og * groups
    span = dilation * (k - 1) + 1
    h = data.draw(st.integers(max(span - 2, 1), 9), label="h")
    w = data.draw(st.integers(max(span - 2, 1), 9), label="w")
    pads = tuple(data.draw(st.integers(0, 2), label=f"pad{i}") for i in range(4))
    if h + pads[0] + pads[2] < span or w + pads[1] + pads[3] < span:
        pads = (2, 2, 2, 2)
    attrs = {
        "strides": stride,
        "padding": pads,
        "dilation": dilation,
        "groups": groups,
    }
    _, y, x, wt, b, _ = run_conv((1, c, h, w), (o, cg, k, k), bias=True, **attrs)
    ref = conv_reference(x, wt, (stride,) * 2, pads, (dilation,) * 2, groups)
    check(y, ref + b[None, :, None, None])


def test_knob_space_is_legal_and_holds_the_default():
    """The tuner's knobs: tiles within the target's registers, the default
    among them; a config names only known knobs and legal values."""
    from ember.backends.llvm.target import Target
    from ember.runtime.errors import EmberValueError
    from ember.topi.kernel import accumulator_registers

    target = Target("llvm -mcpu=haswell")
    x = te.placeholder((1, 32, 14, 14), name="x")
    k = topi.conv2d(x, (64, 32, 3, 3), padding=1, target=target, algorithm="direct")
    assert k.knobs is not None
    tiles = k.knobs.space["tile"]
    assert k.knobs.default["tile"] in tiles
    assert all(
        4 <= ot * yt * xt <= accumulator_registers(target) for ot, yt, xt in tiles
    )
    with pytest.raises(EmberValueError, match="unknown knob"):
        k.schedule(config={"tiles": (1, 1, 7)})
    with pytest.raises(EmberValueError, match="knob 'tile': expected one of"):
        k.schedule(config={"tile": (3, 5, 9)})
    assert topi.conv2d(x, (8, 4, 3, 3), groups=8).knobs is None  # direct


@pytest.mark.parametrize("blocked", [False, True])
def test_weights_larger_than_l2_sweep_the_reduction(blocked):
    """Weights that come from memory every run: the default schedule takes
    each chunk of the reduction over every output tile (its weights stay in
    L1); the same result as numpy, blocked or NCHW."""
    from ember.backends.llvm.target import Target

    target = Target("llvm -l2-bytes=16384")
    shape, ws = (1, 32, 7, 7), (64, 32, 3, 3)
    x_t = te.placeholder((1, 2, 7, 7, 16) if blocked else shape, name="x")
    layout = {"data_block": 16, "out_block": 16} if blocked else {}
    k = topi.conv2d(
        x_t, ws, padding=1, bias=True, target=target, algorithm="direct", **layout
    )
    assert k.knobs is not None and k.knobs.default["sweep"]
    with target:
        mod = ember.build(k.schedule(), k.args, name="conv")
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    w = rng.uniform(-1, 1, ws).astype(np.float32)
    b = rng.uniform(-1, 1, 64).astype(np.float32)
    feed = x.reshape(1, 2, 16, 7, 7).transpose(0, 1, 3, 4, 2) if blocked else x
    y = np.full(k.output.shape, np.nan, np.float32)
    mod(np.ascontiguousarray(feed), k.transform("conv2d.weight", w), b, y)
    if blocked:
        y = y.transpose(0, 1, 4, 2, 3).reshape(1, 64, 7, 7)
    ref = conv_reference(x, w, (1, 1), (1, 1, 1, 1))
    check(y, ref + b[None, :, None, None])


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.data(), st.sampled_from([1, "dw"]), st.integers(1, 3), st.integers(1, 2))
def test_every_knob_config_gives_numpys_result(data, groups, k, stride):
    """Tuning never changes a result: any point of the knob space (JSON lists
    as a record gives them back) computes the convolution."""
    c = data.draw(st.sampled_from([8, 16, 24]), label="channels")
    o = c if groups == "dw" else data.draw(st.sampled_from([8, 16, 40]), label="o")
    groups = c if groups == "dw" else 1
    h = data.draw(st.integers(k, 12), label="h")
    w = data.draw(st.integers(k, 12), label="w")
    attrs = {"strides": stride, "padding": k // 2, "groups": groups}
    x_t = te.placeholder((1, c, h, w), name="x")
    knobs = topi.conv2d(x_t, (o, c // groups, k, k), **attrs).knobs
    assert knobs is not None
    config = {
        name: list(v) if isinstance(v, tuple) else v
        for name, v in (
            (n, data.draw(st.sampled_from(choices), label=n))
            for n, choices in sorted(knobs.space.items())
        )
    }
    _, y, x, wt, b, _ = run_conv(
        (1, c, h, w), (o, c // groups, k, k), bias=True, config=config, **attrs
    )
    ref = conv_reference(x, wt, (stride,) * 2, (k // 2,) * 4, (1, 1), groups)
    check(y, ref + b[None, :, None, None])


@pytest.mark.slow
@pytest.mark.parametrize(
    "xs, ws, attrs",
    [
        ((1, 64, 56, 56), (64, 64, 3, 3), {"padding": 1}),
        ((1, 3, 224, 224), (64, 3, 7, 7), {"padding": 3, "strides": 2}),
        ((1, 96, 112, 112), (96, 1, 3, 3), {"padding": 1, "strides": 2, "groups": 96}),
        ((1, 16, 112, 112), (96, 16, 1, 1), {}),
        ((1, 320, 7, 7), (1280, 320, 1, 1), {}),
    ],
)
def test_model_sized_layers(xs, ws, attrs):
    _, y, x, w, b, _ = run_conv(xs, ws, bias=True, **attrs)
    norm = topi.conv2d_shape(xs, ws, **attrs)
    ref = conv_reference(x, w, norm.strides, norm.padding, groups=norm.groups)
    check(y, ref + b[None, :, None, None])
