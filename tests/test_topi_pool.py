"""topi pooling against a numpy reference and onnxruntime: kernel/stride/
padding (asymmetric), dilation, ceil_mode, count_include_pad, NaN in max
pooling, global average pooling, epilogues."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from topi_util import close, rand, run_kernel

import ember
from ember import te
from ember.topi import pool


def windows(a: np.ndarray, k, s, d, out) -> np.ndarray:
    """(N, C, OH, OW, KH, KW) windows of a padded NCHW array."""
    n, c = a.shape[:2]
    res = np.empty((n, c, out[0], out[1], k[0], k[1]), a.dtype)
    for i in range(out[0]):
        for j in range(out[1]):
            rows = i * s[0] + d[0] * np.arange(k[0])
            cols = j * s[1] + d[1] * np.arange(k[1])
            res[:, :, i, j] = a[:, :, rows][:, :, :, cols]
    return res


def reference(x, kind, k, s, pads, d=(1, 1), ceil_mode=False, include_pad=False):
    t, left, b, r = pads
    h, w = x.shape[2:]
    out = [
        pool.pool_output_size(h, k[0], s[0], t, b, d[0], ceil_mode),
        pool.pool_output_size(w, k[1], s[1], left, r, d[1], ceil_mode),
    ]
    # room for ceil_mode windows that overhang the padding
    extra_h = max(0, (out[0] - 1) * s[0] + d[0] * (k[0] - 1) + 1 - (h + t + b))
    extra_w = max(0, (out[1] - 1) * s[1] + d[1] * (k[1] - 1) + 1 - (w + left + r))
    widths = ((0, 0), (0, 0), (t, b + extra_h), (left, r + extra_w))
    if kind == "max":
        padded = np.pad(x, widths, constant_values=-np.inf)
        return windows(padded, k, s, d, out).max(axis=(4, 5))
    sums = windows(np.pad(x, widths), k, s, d, out).sum(axis=(4, 5))
    ones = np.ones((1, 1, h, w), "float32")
    if include_pad:
        ones = np.pad(ones, ((0, 0), (0, 0), (t, b), (left, r)), constant_values=1)
        ones = np.pad(ones, ((0, 0), (0, 0), (0, extra_h), (0, extra_w)))
    else:
        ones = np.pad(ones, widths)
    counts = windows(ones, k, s, d, out).sum(axis=(4, 5))
    return sums / counts


CASES = [
    # shape, kernel, strides, pads [t, l, b, r], dilation, ceil_mode
    ((1, 3, 9, 9), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((2, 4, 6, 6), (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True),  # 3 rows, not 2
    ((1, 2, 7, 10), (2, 3), (1, 2), (0, 1, 1, 2), (1, 1), False),  # asymmetric
    ((1, 2, 8, 8), (3, 2), (3, 3), (1, 0, 2, 1), (1, 1), True),
    ((1, 2, 7, 11), (2, 2), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((1, 5, 12, 12), (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), False),  # dilated
    ((1, 5, 10, 13), (2, 3), (2, 1), (0, 1, 0, 1), (2, 3), True),
]


@pytest.mark.parametrize("case", CASES)
def test_max_pool_matches_reference(case):
    shape, k, s, pads, d, ceil_mode = case
    a = rand(*shape)
    x = te.placeholder(shape, name="x")
    kern = pool.max_pool2d(x, k, s, pads, d, ceil_mode)
    expected = reference(a, "max", k, s, pads, d, ceil_mode)
    assert kern.output.shape == expected.shape
    close(run_kernel(kern, a), expected)


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("case", [c for c in CASES if c[4] == (1, 1)])
def test_avg_pool_matches_reference(case, include_pad):
    shape, k, s, pads, _, ceil_mode = case
    a = rand(*shape)
    x = te.placeholder(shape, name="x")
    kern = pool.avg_pool2d(x, k, s, pads, ceil_mode, include_pad)
    close(
        run_kernel(kern, a),
        reference(a, "avg", k, s, pads, (1, 1), ceil_mode, include_pad),
    )


def test_ceil_mode_output_sizes_follow_onnx():
    # the last window must start inside the input or the begin padding
    assert pool.pool_output_size(6, 3, 2, 0, 0, ceil_mode=True) == 3
    assert pool.pool_output_size(6, 3, 2, 0, 0, ceil_mode=False) == 2
    assert (
        pool.pool_output_size(5, 2, 2, 1, 1, ceil_mode=True) == 3
    )  # 4th starts in the end pad
    assert pool.pool_output_size(4, 2, 2, 1, 1, ceil_mode=True) == 3
    assert pool.pool_output_size(112, 3, 2, 1, 1) == 56


def onnx_pool(op: str, a: np.ndarray, **attrs) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    node = helper.make_node(op, ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, a.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8  # what every onnxruntime release reads
    sess = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return sess.run(None, {"x": a})[0]


@pytest.mark.parametrize("include_pad", [0, 1])
def test_avg_pool_ceil_mode_agrees_with_onnxruntime(include_pad):
    a = rand(1, 3, 7, 8)
    x = te.placeholder(a.shape, name="x")
    kern = pool.avg_pool2d(x, (3, 2), (2, 3), (1, 0, 1, 1), True, bool(include_pad))
    expected = onnx_pool(
        "AveragePool", a, kernel_shape=[3, 2], strides=[2, 3], pads=[1, 0, 1, 1],
        ceil_mode=1, count_include_pad=include_pad,
    )  # fmt: skip
    close(run_kernel(kern, a), expected)


def test_max_pool_dilated_ceil_mode_agrees_with_onnxruntime():
    a = rand(1, 2, 11, 9)
    x = te.placeholder(a.shape, name="x")
    kern = pool.max_pool2d(x, (3, 2), (2, 2), (1, 0, 0, 1), (2, 2), ceil_mode=True)
    expected = onnx_pool(
        "MaxPool", a, kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 0, 1],
        dilations=[2, 2], ceil_mode=1,
    )  # fmt: skip
    close(run_kernel(kern, a), expected)


def test_max_pool_propagates_nan_and_handles_inf():
    a = rand(1, 1, 4, 4)
    a[0, 0, 0, 0] = np.nan
    a[0, 0, 3, 3] = np.inf
    a[0, 0, 2, 0] = -np.inf
    x = te.placeholder(a.shape, name="x")
    got = run_kernel(pool.max_pool2d(x, 2, 2), a)
    expected = reference(a, "max", (2, 2), (2, 2), (0, 0, 0, 0))
    np.testing.assert_array_equal(got, expected)
    assert np.isnan(got[0, 0, 0, 0]) and got[0, 0, 1, 1] == np.inf


@pytest.mark.parametrize("shape", [(1, 1280, 7, 7), (2, 3, 5, 37), (1, 8, 1, 1)])
def test_global_avg_pool(shape):
    a = rand(*shape)
    x = te.placeholder(shape, name="x")
    close(run_kernel(pool.global_avg_pool2d(x), a), a.mean(axis=(2, 3), keepdims=True))


def test_pool_epilogue_reads_another_tensor():
    a, bias = rand(1, 4, 8, 8), rand(4)
    x, b = te.placeholder(a.shape, name="x"), te.placeholder((4,), name="b")
    kern = pool.max_pool2d(
        x, 2, 2, epilogue=lambda v, i: te.max(v + b[i[1]], 0.0), epilogue_tensors=[b]
    )
    assert [t.name for t in kern.placeholders] == ["x", "b"]
    expected = np.maximum(
        reference(a, "max", (2, 2), (2, 2), (0,) * 4) + bias.reshape(1, 4, 1, 1), 0
    )
    close(run_kernel(kern, a, bias), expected)
    gap = pool.global_avg_pool2d(x, epilogue=lambda v, i: v * 2.0)
    close(run_kernel(gap, a), a.mean(axis=(2, 3), keepdims=True) * 2)


def test_bad_pool_arguments_are_named():
    x = te.placeholder((1, 1, 4, 4), name="x")
    with pytest.raises(ValueError, match="does not fit"):
        pool.max_pool2d(x, 7)
    with pytest.raises(ValueError, match="expected padding"):
        pool.max_pool2d(x, 2, padding=(1, 1))
    with pytest.raises(ValueError, match="expected NCHW input"):
        pool.global_avg_pool2d(te.placeholder((4, 4), name="y"))


@st.composite
def pool_cases(draw):
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["max", "avg"]))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pads = tuple(draw(st.integers(0, k - 1)) for k in (kh, kw, kh, kw))
    h = draw(st.integers(dh * (kh - 1) + 1, 9))
    w = draw(st.integers(dw * (kw - 1) + 1, 9))
    return (
        kind,
        (1, 2, h, w),
        (kh, kw),
        (sh, sw),
        pads,
        (dh, dw),
        draw(st.booleans()),
        draw(st.booleans()),
    )


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pool_cases())
def test_property_pooling_matches_reference(case):
    kind, shape, k, s, pads, d, ceil_mode, include_pad = case
    a = rand(*shape)
    x = te.placeholder(shape, name="x")
    if kind == "max":
        kern = pool.max_pool2d(x, k, s, pads, d, ceil_mode)
    else:
        kern = pool.avg_pool2d(x, k, s, pads, ceil_mode, include_pad, d)
    close(
        run_kernel(kern, a), reference(a, kind, k, s, pads, d, ceil_mode, include_pad)
    )


def blocked(a: np.ndarray, b: int) -> np.ndarray:
    """NCHW -> (N, C/b, H, W, b)."""
    n, c, h, w = a.shape
    return np.ascontiguousarray(a.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


LAYOUTS = [(4, 4), (4, None), (None, 4), (2, 4)]  # (data_block, out_block)


@pytest.mark.parametrize(("data_block", "out_block"), LAYOUTS)
@pytest.mark.parametrize("case", CASES[:5] + CASES[6:])
def test_pooling_reads_and_writes_channel_blocks(case, data_block, out_block):
    # what graph-level planning gives a pool between two NCHWc convolutions
    shape, k, s, pads, d, ceil_mode = case
    shape = (shape[0], 8, *shape[2:])
    a = rand(*shape)
    a[0, 1, 0, 0] = np.nan  # max pooling carries NaN in any layout
    x = te.placeholder(blocked(a, data_block).shape if data_block else shape, name="x")
    given = blocked(a, data_block) if data_block else a
    for kind in ("max", "avg"):
        if kind == "max":
            kern = pool.max_pool2d(
                x, k, s, pads, d, ceil_mode, data_block=data_block, out_block=out_block
            )
        else:
            kern = pool.avg_pool2d(
                x, k, s, pads, ceil_mode, True, d,
                data_block=data_block, out_block=out_block,
            )  # fmt: skip
        expected = reference(a, kind, k, s, pads, d, ceil_mode, include_pad=True)
        if out_block:
            expected = blocked(expected, out_block)
        assert kern.output.shape == expected.shape
        close(run_kernel(kern, given), expected)


def test_max_pool_of_blocked_integers():
    a = np.random.default_rng(0).integers(0, 256, (1, 16, 9, 9)).astype("uint8")
    x = te.placeholder((1, 1, 9, 9, 16), "uint8", name="x")
    kern = pool.max_pool2d(x, 3, 2, (1, 1, 1, 1), data_block=16, out_block=16)
    padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))  # 0 is uint8's lowest
    expected = windows(padded, (3, 3), (2, 2), (1, 1), (5, 5)).max(axis=(4, 5))
    mod = ember.build(kern.schedule(), kern.args)
    got = np.zeros(kern.output.shape, "uint8")
    mod(blocked(a, 16), got)
    np.testing.assert_array_equal(got, blocked(expected, 16))


@pytest.mark.parametrize(("data_block", "out_block"), LAYOUTS)
def test_global_avg_pool_of_blocks(data_block, out_block):
    a = rand(2, 8, 5, 7)
    x = te.placeholder(
        blocked(a, data_block).shape if data_block else a.shape, name="x"
    )
    kern = pool.global_avg_pool2d(
        x, epilogue=lambda v, i: v + i[1].astype("float32"),
        data_block=data_block, out_block=out_block,
    )  # fmt: skip
    expected = a.mean(axis=(2, 3), keepdims=True) + np.arange(8).reshape(1, 8, 1, 1)
    if out_block:
        expected = blocked(expected, out_block)
    given = blocked(a, data_block) if data_block else a
    close(run_kernel(kern, given), expected)


def test_blocked_pool_data_of_the_wrong_shape_is_named():
    with pytest.raises(ValueError, match=r"expected blocked data \(N, C/8, H, W, 8\)"):
        pool.max_pool2d(te.placeholder((1, 2, 4, 4, 4), name="x"), 2, data_block=8)
    with pytest.raises(ValueError, match="6 channels are not blocks of 4"):
        pool.global_avg_pool2d(te.placeholder((1, 6, 4, 4), name="x"), out_block=4)
