"""Quantized conv2d on byte dot products: uint8 or int8 data, int8 weights,
int32 accumulation, requantized to uint8 or int8 in the same pass.

    k = conv2d_int8(x, (64, 64, 3, 3), x_zero=128, y_zero=0, out_dtype="uint8",
                    padding=1)
    mod = ember.build(k.schedule(), k.args)
    mod(x_u8, k.transform("conv.weight", w_i8), bias_i32, scale_f32, y_u8)

computes, for every output (n, o, y, x),

    acc = sum over (c, i, j) of (data_padded - x_zero) * weight    (int32, exact)
    y   = clamp(roundeven((acc + bias[o]) * scale[o]) + y_zero, lo, hi)

where the data is padded with `x_zero` (a real zero) and [lo, hi] is `clip`
(by default the output type's range; a fused ReLU raises lo to y_zero). The
product and the float32 requantization are onnxruntime's QLinearConv, and
QDQ's Conv between DequantizeLinear and QuantizeLinear up to the rounding of
float sums.

The kernel is the NCHWc kernel of `conv2d.py` on words: the data is packed to
(N, C4/cb, H', W', cb/4) int32 words, four channels' bytes each (int8 data
flipped to uint8 by adding 128, and x_zero with it; channels past C read as
x_zero), the weight at compile time to (O/ob, C4/cb, KH, KW, cb/4, ob) words
of four input channels' signed bytes, and each multiply-add is
`te.dot_u8i8`: one `vpdpbusd` on a vector of `ob` output channels with
AVX512-VNNI or AVX-VNNI, `usdot` on aarch64 with i8mm, widened products
elsewhere. The register tile, the sweep and the knobs are the float kernel's.
`x_zero` times each output channel's weight sum (a small stage, the sum of
the weight words' bytes by `te.dot_u8i8` with ones) is subtracted in the
final stage, so the reduction is over the raw bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember import te
from ember.backends.llvm.target import Target
from ember.runtime.errors import EmberValueError
from ember.topi import quantized
from ember.topi.conv2d import (
    Blocks,
    blocked_conv,
    conv2d,
    conv2d_shape,
    inside_border,
    logical_shape,
    nchwc_schedule,
)
from ember.topi.kernel import Epilogue, Kernel, Knobs
from ember.topi.quantized import BYTES, ONES


def conv2d_int8(
    data: te.Tensor,
    weight_shape: Sequence[int],
    *,
    x_zero: int,
    y_zero: int,
    out_dtype: str,
    clip: tuple[int, int] | None = None,
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "conv2d",
    target: Target | None = None,
    data_block: int | None = None,
    out_block: int | None = None,
) -> Kernel:
    """A quantized 2-D convolution over NCHW uint8 or int8 data.

    Args:
        data: NCHW, uint8 or int8.
        weight_shape: OIHW of the int8 weight.
        x_zero, y_zero: the zero points of the data and of the output.
        out_dtype: uint8 or int8.
        clip: [lo, hi] the output is clamped to (within its type's range).
        strides, padding, dilation, groups: as `topi.conv2d`'s; grouped
            convolutions (depthwise) take `grouped` (at most `EXACT_TERMS`
            products per output).
        epilogue: applied to every requantized output `(value, (n, c, h, w))`
            (a dequantization of it, where a float op follows), reading
            `epilogue_inputs`, which become the last placeholders.
        name: the output's name; placeholders `<name>.weight`, `<name>.bias`
            (int32, (O,)) and `<name>.scale` (float32, (O,)).
        target: the machine the schedule is for (None: `Target.current()`).
        data_block, out_block: the data is, and the output is to be written,
            channel-blocked (N, C/b, H, W, b), as `topi.conv2d`'s (b =
            `channel_block`): the output's vectors of channels are then
            stored whole, not scattered to NCHW.

    Returns:
        The Kernel: placeholders [data, weight words, bias, scale, *epilogue
        inputs];
        `transform("<name>.weight", oihw_int8)` packs a weight.
    """
    machine = Target.resolve(target)
    q = quantized.check(
        f"conv2d_int8 '{name}'", data.dtype, out_dtype, x_zero, y_zero, clip
    )
    logical = logical_shape(data, data_block, f"conv2d_int8 '{name}'", BYTES)
    shape = conv2d_shape(logical, weight_shape, strides, padding, dilation, groups)
    clip, flip, zero = q.clip, q.flip, q.zero

    if groups > 1:
        return grouped(
            data, shape, x_zero, y_zero, out_dtype, clip, epilogue,
            epilogue_inputs, name, machine, Blocks(data_block, out_block),
        )  # fmt: skip
    ob = machine.vector_lanes("int32")
    c4 = -(-shape.c // BYTES) * BYTES
    words = _largest_divisor(c4 // BYTES, ob)  # words of a channel block
    block = data_block or 0
    as_they_lie = block % BYTES == 0 and 0 < block // BYTES <= ob
    if as_they_lie:
        # blocked data's own blocks: each word is four bytes as they lie, the
        # pack a copy (144 channels in blocks of 16 packed to words of 48
        # were a gather of bytes: MobileNetV2's 144 -> 24 layer 263 -> 118 us),
        # and none where there is no border to pad (`nchwc_schedule`)
        words = block // BYTES
    cb = words * BYTES
    op = -(-shape.o // ob) * ob
    blocks = op // ob
    packed = _packed_words(data, shape, c4, words, zero, flip, name)
    weight = te.placeholder(
        (blocks, c4 // cb, shape.kh, shape.kw, words, ob),
        "int32",
        name=f"{name}.weight",
    )
    conv = blocked_conv(packed, weight, shape, name, te.dot_u8i8)
    sums = [
        te.reduce_axis((0, d), name=f"s{i}") for i, d in enumerate(weight.shape[1:5])
    ]
    weight_sum = te.compute(
        (blocks, ob),
        lambda o, oi: te.sum(
            te.dot_u8i8(te.const(ONES, "int32"), weight[o, *sums, oi]), axis=sums
        ),
        name=f"{name}.weight_sum",
    )
    bias = te.placeholder((shape.o,), "int32", name=f"{name}.bias")
    scale = te.placeholder((shape.o,), "float32", name=f"{name}.scale")

    def value(n, c, y, x):
        acc = conv[n, c // ob, y, x, c % ob]
        if zero:
            acc = acc - weight_sum[c // ob, c % ob] * zero
        return requantize(acc, (n, c, y, x))

    requantize = quantized.requantizer(
        bias, scale, y_zero, clip, out_dtype, epilogue, axis=1
    )
    if out_block is None:
        output = te.compute(shape.out_shape, value, name=name)
    else:
        output = te.compute(
            (shape.n, shape.o // out_block, shape.oh, shape.ow, out_block),
            lambda n, co, y, x, ci: value(n, co * out_block + ci, y, x),
            name=name,
        )

    def schedule_sum(s) -> None:
        if zero:  # the stage exists where the output reads it
            s[weight_sum].vectorize(s[weight_sum].op.axis[-1])

    inline = as_they_lie and not (flip or any(shape.padding)) and c4 == shape.c
    default, knobs = nchwc_schedule(
        shape, blocks, ob, words, packed, conv, output, machine, schedule_sum, inline
    )

    def pack_weight(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w)
        if w.dtype != np.int8:
            raise EmberValueError(
                f"conv2d_int8 '{name}': expected an int8 weight, got {w.dtype}"
            )
        full = np.zeros((op, c4, shape.kh, shape.kw), np.int8)
        full[: shape.o, : shape.c] = w
        # (O/ob, ob, C4/cb, words, 4, KH, KW) -> (O/ob, C4/cb, KH, KW, words, ob, 4)
        blocked = full.reshape(blocks, ob, c4 // cb, words, BYTES, shape.kh, shape.kw)
        blocked = np.ascontiguousarray(blocked.transpose(0, 2, 5, 6, 3, 1, 4))
        return blocked.view(np.int32).reshape(weight.shape)

    ot, yt, xt = default["tile"]
    return Kernel(
        output,
        [data, weight, bias, scale, *epilogue_inputs],
        {weight.name: pack_weight},
        lambda s: knobs.apply(s, default),
        {"kernel": "nchwc_int8", "cb": cb, "ob": ob, "tile": (ot, yt, xt)},
        knobs,
    )


EXACT_TERMS = 2**24 // (255 * 128)
"""Products per output a float32 sum holds exactly: (x - x_zero) * w is an
integer of magnitude at most 255 * 128, and float32 sums integers exactly to
2^24 (`graph.qconv2d` limits its grouped convolutions to as many)."""


def grouped(
    data: te.Tensor,
    shape,
    x_zero: int,
    y_zero: int,
    out_dtype: str,
    clip: tuple[int, int],
    epilogue: Epilogue | None,
    epilogue_inputs: Sequence[te.Tensor],
    name: str,
    target: Target,
    layout: Blocks,
) -> Kernel:
    """A grouped quantized convolution (depthwise, most often) on the float
    kernels of `topi.conv2d`: data - x_zero widened to float32 as the kernel
    pads it, the weight packed as floats, the products summed exactly (at
    most `EXACT_TERMS` of them), the accumulator back to int32 for the bias
    and the requantization in the epilogue."""
    terms = shape.c // shape.groups * shape.kh * shape.kw
    if terms > EXACT_TERMS:
        raise EmberValueError(
            f"conv2d_int8 '{name}': a grouped convolution sums at most "
            f"{EXACT_TERMS} products per output exactly, got {terms}"
        )
    real = te.compute(
        data.shape,
        lambda *i: (data[i].astype("int32") - x_zero).astype("float32"),
        name=f"{name}.real",
    )
    bias = te.placeholder((shape.o,), "int32", name=f"{name}.bias")
    scale = te.placeholder((shape.o,), "float32", name=f"{name}.scale")
    requantize = quantized.requantizer(
        bias, scale, y_zero, clip, out_dtype, epilogue, axis=1
    )
    floats = conv2d(
        real,
        (shape.o, shape.c // shape.groups, shape.kh, shape.kw),
        strides=shape.strides,
        padding=shape.padding,
        dilation=shape.dilation,
        groups=shape.groups,
        epilogue=lambda v, index: requantize(v.astype("int32"), index),
        epilogue_inputs=[bias, scale, *epilogue_inputs],
        name=name,
        target=target,
        data_block=layout.data,
        out_block=layout.out,
        algorithm="direct",
    )
    inner = floats.knobs

    def inline(s) -> None:
        s[real].compute_inline()

    def schedule(s, config: dict) -> None:
        assert inner is not None
        inner.fn(s, config)
        inline(s)

    knobs = None
    if inner is not None:
        knobs = Knobs(inner.space, inner.default, schedule)

    def default(s) -> None:
        floats.schedule(s)
        inline(s)

    weight = floats.placeholders[1].name
    widen = floats.weight_transforms.get(weight, lambda w: np.asarray(w, np.float32))
    return Kernel(
        floats.output,
        [data, *floats.placeholders[1:]],
        {**floats.weight_transforms, weight: widen},  # int8 params to floats
        default,
        {**floats.attrs, "kernel": f"{floats.attrs['kernel']}_int8"},
        knobs,
    )


def _largest_divisor(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def _packed_words(
    data: te.Tensor,
    shape,
    c4: int,
    words: int,
    zero: int,
    flip: int,
    name: str,
) -> te.Tensor:
    """(N, C4/cb, H', W', words) int32: each word four channels' bytes (data
    as uint8: int8 plus `flip`), `zero` wherever the convolution pads and in
    the channels past C."""
    pt, pl, _, _ = shape.padding
    hp, wp = shape.window
    c = shape.c

    def byte(n, channel, y, x):
        inside = inside_border(shape, (hp, wp), y, x)
        if c != c4:
            inside.append(channel < c)
        if data.ndim == 5:  # blocked
            b = data.shape[-1]
            value = data[n, channel // b, y - pt, x - pl, channel % b]
        else:
            value = data[n, channel, y - pt, x - pl]
        value = value.astype("int32")
        if flip:
            value = value + flip
        if not inside:
            return value
        return te.if_then_else(te.all(*inside), value, te.const(zero, "int32"))

    def word(n, co, y, x, wi):
        first = (co * words + wi) * BYTES
        total = byte(n, first, y, x)
        for j in range(1, BYTES):
            total = total | (byte(n, first + j, y, x) << (8 * j))
        return total

    return te.compute(
        (shape.n, c4 // (words * BYTES), hp, wp, words), word, name=f"{name}.data_pack"
    )
