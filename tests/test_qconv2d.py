"""graph.qconv2d and topi's conv2d_int8: quantized convolutions on byte dot
products, exact against numpy's integer reference (the op's `reference`), on
random shapes, zero points, clips and data types (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import te
from ember.dialects import graph
from ember.runtime import GraphModule, cpu
from ember.runtime.errors import EmberValueError
from ember.topi.conv2d_int8 import conv2d_int8

RANGES = {"uint8": (0, 255), "int8": (-128, 127)}
ELEMENT = {"uint8": "ui8", "int8": "i8"}


def reference(x, w, bias, scale, x_zero, y_zero, clip, out, strides, padding):
    """The integer convolution in int64, requantized in float32 (numpy)."""
    t, left, b, r = padding
    xp = np.pad(x.astype(np.int64) - x_zero, ((0, 0), (0, 0), (t, b), (left, r)))
    kh, kw = w.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    windows = windows[:, :, :: strides[0], :: strides[1]]
    acc = np.einsum("nchwij,ocij->nohw", windows, w.astype(np.int64))
    acc = acc + bias[None, :, None, None]
    y = np.rint(acc.astype(np.float32) * scale[None, :, None, None]) + y_zero
    return np.clip(y, *clip).astype(out)


def operands(rng, n, c, h, w_, o, k, dtype):
    lo, hi = RANGES[dtype]
    x = rng.integers(lo, hi + 1, (n, c, h, w_)).astype(dtype)
    w = rng.integers(-128, 128, (o, c, k, k)).astype(np.int8)
    bias = rng.integers(-2000, 2000, o).astype(np.int32)
    scale = (rng.random(o) * 2e-3 + 1e-4).astype(np.float32)
    return x, w, bias, scale


def model(x, w, out, cfg) -> str:
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    (sh, sw), (t, left, b, r) = cfg["strides"], cfg["padding"]
    oh, ow = (h + t + b - kh) // sh + 1, (wd + left + r - kw) // sw + 1
    xt = f"tensor<{n}x{c}x{h}x{wd}x{ELEMENT[x.dtype.name]}>"
    wt = f"tensor<{o}x{c}x{kh}x{kw}xi8>"
    yt = f"tensor<{n}x{o}x{oh}x{ow}x{ELEMENT[out]}>"
    attrs = (
        f"strides = {list(cfg['strides'])}, padding = {list(cfg['padding'])}, "
        f"x_zero = {cfg['x_zero']}, y_zero = {cfg['y_zero']}, "
        f"clip = {list(cfg['clip'])}, signed = {str(out == 'int8').lower()}"
    )
    return f"""func.func @main(%x: {xt}) -> {yt} {{
  %w = graph.param "w" : {wt}
  %b = graph.param "b" : tensor<{o}xi32>
  %s = graph.param "s" : tensor<{o}xf32>
  %y = graph.qconv2d %x, %w, %b, %s {{{attrs}}} : ({xt}, {wt}, tensor<{o}xi32>, tensor<{o}xf32>) -> {yt}
  func.return %y : {yt}
}}"""


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    c=st.integers(1, 40),
    o=st.integers(1, 40),
    hw=st.tuples(st.integers(3, 12), st.integers(3, 12)),
    k=st.sampled_from([1, 3, 5]),
    stride=st.sampled_from([1, 2]),
    pad=st.integers(0, 2),
    dtypes=st.sampled_from([("uint8", "uint8"), ("int8", "int8"), ("uint8", "int8")]),
    relu=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_quantized_convolutions_are_exact(c, o, hw, k, stride, pad, dtypes, relu, seed):
    rng = np.random.default_rng(seed)
    data, out = dtypes
    h, w_ = max(hw[0], k), max(hw[1], k)
    x, w, bias, scale = operands(rng, 1, c, h, w_, o, k, data)
    lo, hi = RANGES[out]
    y_zero = int(rng.integers(lo, hi + 1))
    cfg = {
        "strides": (stride, stride),
        "padding": (pad, pad, pad, pad),
        "x_zero": int(rng.integers(*RANGES[data])),
        "y_zero": y_zero,
        "clip": (y_zero if relu else lo, hi),
    }
    lib = ember.compile_model(model(x, w, out, cfg), {"w": w, "b": bias, "s": scale})
    (y,) = GraphModule(lib["default"](cpu()))(input0=x)
    want = reference(x, w, bias, scale, clip=cfg.pop("clip"), out=out, **cfg)
    np.testing.assert_array_equal(y, want)


def test_the_reference_is_the_ops_definition():
    rng = np.random.default_rng(1)
    x, w, bias, scale = operands(rng, 2, 5, 7, 6, 9, 3, "int8")
    cfg = {"strides": (2, 1), "padding": (1, 0, 2, 1), "x_zero": -3, "y_zero": 4}
    clip = (4, 127)
    op = graph.QConv2DOp.build_inferred(
        *[graph.ConstantOp.from_numpy(a).result for a in (x, w, bias, scale)],
        **cfg,
        clip=clip,
        signed=True,
    )
    got = op.reference([x, w, bias, scale])
    want = reference(x, w, bias, scale, clip=clip, out="int8", **cfg)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "target", ["llvm", "llvm -mcpu=haswell", "c"], ids=["host", "avx2", "c"]
)
def test_the_kernel_is_exact_with_and_without_dot_instructions(target):
    rng = np.random.default_rng(2)
    x, w, bias, scale = operands(rng, 1, 6, 9, 9, 20, 3, "uint8")
    X = te.placeholder(x.shape, "uint8", name="x")
    k = conv2d_int8(
        X,
        w.shape,
        x_zero=131,
        y_zero=9,
        out_dtype="uint8",
        padding=1,
        name="conv",
        target=None if target == "c" else target,
    )
    mod = ember.build(k.schedule(), k.args, target=target, name="conv")
    y = np.zeros(k.output.shape, np.uint8)
    mod(x, k.transform("conv.weight", w), bias, scale, y)
    want = reference(x, w, bias, scale, 131, 9, (0, 255), "uint8", (1, 1), (1,) * 4)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"x_zero": 300}, "zero points out of range"),
        ({"clip": (0, 300)}, "clip range within uint8"),
        ({"out_dtype": "float32"}, "expected output of uint8 or int8"),
    ],
)
def test_the_kernel_refuses_what_it_cannot_compute(kwargs, message):
    X = te.placeholder((1, 4, 5, 5), "uint8", name="x")
    args = {"x_zero": 0, "y_zero": 0, "out_dtype": "uint8", **kwargs}
    with pytest.raises(EmberValueError, match=message):
        conv2d_int8(X, (8, 4, 3, 3), **args)


def test_chained_convolutions_pass_blocked_bytes_exactly():
    """conv -> depthwise -> conv, 16 and 32 channels: the activations between
    them stay channel-blocked bytes (N, C/16, H, W, 16), which the last (1x1,
    no border) reads where they lie, without a pack; the result is the ops'
    definitions composed."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (1, 8, 10, 10)).astype(np.uint8)
    w1 = rng.integers(-128, 128, (16, 8, 3, 3)).astype(np.int8)
    wd = rng.integers(-128, 128, (16, 1, 3, 3)).astype(np.int8)
    w2 = rng.integers(-128, 128, (32, 16, 1, 1)).astype(np.int8)
    params = {"w1": w1, "wd": wd, "w2": w2}
    for name, o in (("1", 16), ("d", 16), ("2", 32)):
        params[f"b{name}"] = rng.integers(-500, 500, o).astype(np.int32)
        params[f"s{name}"] = (rng.random(o) * 1e-3 + 1e-4).astype(np.float32)
    t = {
        "x": "tensor<1x8x10x10xui8>", "y1": "tensor<1x16x10x10xui8>",
        "yd": "tensor<1x16x5x5xui8>", "y2": "tensor<1x32x5x5xi8>",
    }  # fmt: skip
    common = "clip = [0, 255]"
    text = f"""func.func @main(%x: {t["x"]}) -> {t["y2"]} {{
  %w1 = graph.param "w1" : tensor<16x8x3x3xi8>
  %b1 = graph.param "b1" : tensor<16xi32>
  %s1 = graph.param "s1" : tensor<16xf32>
  %wd = graph.param "wd" : tensor<16x1x3x3xi8>
  %bd = graph.param "bd" : tensor<16xi32>
  %sd = graph.param "sd" : tensor<16xf32>
  %w2 = graph.param "w2" : tensor<32x16x1x1xi8>
  %b2 = graph.param "b2" : tensor<32xi32>
  %s2 = graph.param "s2" : tensor<32xf32>
  %y1 = graph.qconv2d %x, %w1, %b1, %s1 {{padding = [1, 1, 1, 1], x_zero = 100, y_zero = 5, {common}}} : ({t["x"]}, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> {t["y1"]}
  %yd = graph.qconv2d %y1, %wd, %bd, %sd {{strides = [2, 2], padding = [1, 1, 1, 1], groups = 16, x_zero = 5, y_zero = 7, {common}}} : ({t["y1"]}, tensor<16x1x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> {t["yd"]}
  %y2 = graph.qconv2d %yd, %w2, %b2, %s2 {{x_zero = 7, y_zero = -3, clip = [-128, 127], signed = true}} : ({t["yd"]}, tensor<32x16x1x1xi8>, tensor<32xi32>, tensor<32xf32>) -> {t["y2"]}
  func.return %y2 : {t["y2"]}
}}"""
    lib = ember.compile_model(text, params)
    (y,) = GraphModule(lib["default"](cpu()))(input0=x)
    p = params
    y1 = qconv(x, p["w1"], p["b1"], p["s1"], padding=(1,) * 4, x_zero=100, y_zero=5)
    yd = qconv(
        y1, p["wd"], p["bd"], p["sd"], strides=(2, 2), padding=(1,) * 4,
        groups=16, x_zero=5, y_zero=7,
    )  # fmt: skip
    y2 = qconv(
        yd, p["w2"], p["b2"], p["s2"], x_zero=7, y_zero=-3, clip=(-128, 127),
        signed=True,
    )  # fmt: skip
    np.testing.assert_array_equal(y, y2)


def qconv(x, w, bias, scale, clip=(0, 255), **cfg):
    """graph.qconv2d's definition (`reference`) on arrays."""
    values = [graph.ConstantOp.from_numpy(a).result for a in (x, w, bias, scale)]
    op = graph.QConv2DOp.build_inferred(*values, clip=clip, **cfg)
    return op.reference([x, w, bias, scale])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    k=st.integers(1, 70),
    n=st.integers(1, 50),
    rows=st.sampled_from([None, 1, 3, 8]),
    dtypes=st.sampled_from([("uint8", "uint8"), ("int8", "int8"), ("uint8", "int8")]),
    seed=st.integers(0, 2**16),
)
def test_quantized_dense_layers_are_exact(k, n, rows, dtypes, seed):
    """graph.qdense against its definition, at fixed and symbolic rows (the
    GEMV variant where they are 1)."""
    rng = np.random.default_rng(seed)
    data, out = dtypes
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    scale = (rng.random(n) * 2e-3 + 1e-4).astype(np.float32)
    lo, hi = RANGES[out]
    cfg = {
        "x_zero": int(rng.integers(*RANGES[data])),
        "y_zero": int(rng.integers(lo, hi + 1)),
        "clip": (lo, hi),
        "signed": out == "int8",
    }
    m = "?" if rows is None else str(rows)
    enc = ', ["m"]' if rows is None else ""
    xt = f"tensor<{m}x{k}x{ELEMENT[data]}{enc}>"
    yt = f"tensor<{m}x{n}x{ELEMENT[out]}{enc}>"
    attrs = (
        f"x_zero = {cfg['x_zero']}, y_zero = {cfg['y_zero']}, clip = "
        f"{list(cfg['clip'])}, signed = {str(cfg['signed']).lower()}"
    )
    text = f"""func.func @main(%x: {xt}) -> {yt} {{
  %w = graph.param "w" : tensor<{n}x{k}xi8>
  %b = graph.param "b" : tensor<{n}xi32>
  %s = graph.param "s" : tensor<{n}xf32>
  %y = graph.qdense %x, %w, %b, %s {{{attrs}}} : ({xt}, tensor<{n}x{k}xi8>, tensor<{n}xi32>, tensor<{n}xf32>) -> {yt}
  func.return %y : {yt}
}}"""
    lib = ember.compile_model(text, {"w": w, "b": bias, "s": scale})
    gm = GraphModule(lib["default"](cpu()))
    for r in [1, 5] if rows is None else [rows]:
        x = rng.integers(*RANGES[data], size=(r, k), endpoint=True).astype(data)
        (y,) = gm(input0=x)
        values = [graph.ConstantOp.from_numpy(a).result for a in (x, w, bias, scale)]
        op = graph.QDenseOp.build_inferred(*values, **cfg)
        np.testing.assert_array_equal(y, op.reference([x, w, bias, scale]))


def test_the_tuner_tunes_quantized_kernels_without_changing_results(tmp_path):
    """A quantized convolution's template has the float kernel's knobs (tile,
    unroll, sweep): the tuner measures them, and the tuned model computes the
    same bytes."""
    from ember.tune.model import extract_tasks, tune_model

    rng = np.random.default_rng(4)
    x, w, bias, scale = operands(rng, 1, 8, 6, 6, 16, 3, "uint8")
    cfg = {
        "strides": (1, 1), "padding": (1, 1, 1, 1), "x_zero": 128, "y_zero": 3,
        "clip": (3, 255),
    }  # fmt: skip
    text, params = model(x, w, "uint8", cfg), {"w": w, "b": bias, "s": scale}
    (task,) = extract_tasks(text, params)
    assert {"tile", "unroll", "sweep"} <= set(task.kernel.knobs.space)
    log = tmp_path / "records.json"
    tune_model(text, params, trials=2, records=log)
    assert log.read_text().count('"config"') >= 2
    tuned = ember.compile_model(text, params, tuning_records=log)
    (y,) = GraphModule(tuned["default"](cpu()))(input0=x)
    want = reference(x, w, bias, scale, clip=cfg.pop("clip"), out="uint8", **cfg)
    np.testing.assert_array_equal(y, want)
