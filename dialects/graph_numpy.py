"""numpy semantics of graph ops: the helpers behind each op's `reference`
(ONNX's definitions, which onnxruntime checks in tests). Nothing here imports
xDSL, so the formulas read on their own.
"""

import math
from collections.abc import Sequence

import numpy as np

from ember.dialects import graph_shapes as shapes

Array = np.ndarray

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: Array) -> Array:
    return _erf(x).astype(x.dtype)


def bf16_halves(x: np.ndarray) -> np.ndarray:
    """The bfloat16 bits of float32 `x` (to nearest, ties to even, as
    `te.bf16_bits`; a NaN stays a NaN), as uint32s below 2^16."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    quiet = (bits >> 16) | 0x40
    return np.where(np.isnan(x), quiet, rounded).astype(np.uint32) & 0xFFFF


def conv2d(
    x: Array,
    w: Array,
    b: Array | None,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """Direct convolution, one einsum per kernel tap (exact enough for tests)."""
    t, left, bot, r = padding
    xp = np.pad(x, ((0, 0), (0, 0), (t, bot), (left, r)))
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    og = o // groups
    out = np.zeros((n, groups, og, oh, ow), np.float64)
    xg = xp.reshape(n, groups, cg, *xp.shape[2:]).astype(np.float64)
    wg = w.reshape(groups, og, cg, kh, kw).astype(np.float64)
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dilation[0], j * dilation[1]
            patch = xg[
                :,
                :,
                :,
                h0 : h0 + strides[0] * (oh - 1) + 1 : strides[0],
                w0 : w0 + strides[1] * (ow - 1) + 1 : strides[1],
            ]
            out += np.einsum("ngchw,goc->ngohw", patch, wg[:, :, :, i, j])
    y = out.reshape(n, o, oh, ow)
    if b is not None:
        y += b.reshape(1, o, 1, 1)
    return y.astype(x.dtype)


def pool2d(
    x: Array,
    kind: str,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool = False,
) -> Array:
    out_shape = shapes.pool2d(x.shape, kernel, strides, padding, dilation, ceil_mode)
    oh, ow = out_shape[2:]
    t, left = padding[0], padding[1]
    # pad enough on the far side for ceil_mode's last window
    need_h = (oh - 1) * strides[0] + dilation[0] * (kernel[0] - 1) + 1
    need_w = (ow - 1) * strides[1] + dilation[1] * (kernel[1] - 1) + 1
    extra_h = max(0, need_h - x.shape[2] - t)
    extra_w = max(0, need_w - x.shape[3] - left)
    fill = -np.inf if kind == "max" else 0.0
    pads = ((0, 0), (0, 0), (t, extra_h), (left, extra_w))
    xp = np.pad(x.astype(np.float64), pads, constant_values=fill)
    # the divisor counts real elements, plus the declared padding if asked (never
    # the extra padding a ceil_mode window hangs over)
    counter = np.zeros(xp.shape[2:])
    if count_include_pad:
        counter[: t + x.shape[2] + padding[2], : left + x.shape[3] + padding[3]] = 1
    else:
        counter[t : t + x.shape[2], left : left + x.shape[3]] = 1
    acc = np.full((*x.shape[:2], oh, ow), fill)
    count = np.zeros((oh, ow))
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            h0, w0 = i * dilation[0], j * dilation[1]
            sl = (
                slice(h0, h0 + strides[0] * (oh - 1) + 1, strides[0]),
                slice(w0, w0 + strides[1] * (ow - 1) + 1, strides[1]),
            )
            window = xp[:, :, sl[0], sl[1]]
            if kind == "max":
                acc = np.maximum(acc, window)
            else:
                acc = acc + window
                count += counter[sl]
    if kind == "avg":
        acc = acc / np.maximum(count, 1)
    return acc.astype(x.dtype)


def matmul(a: Array, b: Array) -> Array:
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def softmax(x: Array, axis: int) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: Array, axis: int) -> Array:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def clip(x: Array, lo: float | None, hi: float | None) -> Array:
    if lo is not None:
        x = np.maximum(x, np.asarray(lo, x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi, x.dtype))
    return x


def batch_norm(x: Array, g: Array, b: Array, m: Array, v: Array, eps: float) -> Array:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = (g / np.sqrt(v + np.asarray(eps, v.dtype))).reshape(shape)
    return (x - m.reshape(shape)) * scale + b.reshape(shape)


def pad(x: Array, pads: Sequence[int], value: float) -> Array:
    r = x.ndim
    return np.pad(x, list(zip(pads[:r], pads[r:], strict=True)), constant_values=value)
