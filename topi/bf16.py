"""bfloat16 kernels: float32 activations, weights stored as bfloat16, products
on the target's bfloat16 dot product, sums in float32.

    k = conv2d_bf16(x, (64, 64, 1, 1))
    mod = ember.build(k.schedule(), k.args)
    mod(x, k.transform("conv2d.weight", w), y)

A bfloat16 number is a float32's high half: 8 bits of significand instead of
24, the same exponent range. Both operands of every product are rounded to it
(to nearest, ties to even: `word` for the activations, in the kernel's
pack stage; `pairs` for the weights, at compile time) and paired,
two channels in an int32 word, even channel low; `te.dot_bf16` then adds
both products of a pair to a float32 accumulator in one lane (`vdpbf16ps`
on x86 with AVX512-BF16, `bfdot` on aarch64). Each product is exact, so the
error against float32 is the operands' rounding: relative 2^-9 each.

Between convolutions a `precision="bf16"` compilation stores activations as
bfloat16 bits (`BITS`, see `strategy.plan_bf16`): a writer's epilogue ends in
`to_bits`, the pack pairs such data as it is, and a float32 kernel reads it
through `on_floats`.

The kernels are the float32 ones on words: the convolution is the NCHWc
kernel of `conv2d.py` (its register tile, sweep and knobs), a block of input
channels `2 * words` wide; dense is the GEMM template of `dense.py` (and its
GEMV variant) over rows of words. Grouped and depthwise convolutions are
bound by memory, not multiplies, and stay float32 (`applies`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from ember import te
from ember.backends.llvm.target import Target
from ember.dialects.graph_numpy import bf16_halves
from ember.runtime.errors import EmberValueError
from ember.topi.conv2d import (
    Blocks,
    Conv2dShape,
    _largest_divisor,
    _output,
    _unblocked,
    blocked_conv,
    conv2d,
    conv2d_shape,
    inside_border,
    logical_shape,
    nchwc_schedule,
)
from ember.topi.dense import (
    _gemm_by_panels,
    _pack_panels,
    _panels,
    on_words,
    schedule_words,
)
from ember.topi.kernel import Epilogue, Kernel

PAIR = 2
"""bfloat16 numbers in an int32 word: the products each lane of
`te.dot_bf16` adds."""


def pairs(w: np.ndarray, axis: int) -> np.ndarray:
    """`w` rounded to bfloat16 (to nearest, ties to even, as `te.bf16_bits`)
    and paired along `axis` (even index low) into int32 words; an odd
    length gets a zero."""
    w = np.asarray(w, np.float32)
    if w.shape[axis] % PAIR:
        pad = [(0, 0)] * w.ndim
        pad[axis] = (0, 1)
        w = np.pad(w, pad)
    half = np.moveaxis(bf16_halves(w), axis, -1)
    words = half[..., 0::2] | (half[..., 1::2] << 16)
    return np.moveaxis(words.astype(np.uint32).view(np.int32), -1, axis)


def widened(words: np.ndarray, axis: int) -> np.ndarray:
    """The float32 values of `pairs`' words along `axis` (for references)."""
    u = np.moveaxis(np.asarray(words).view(np.uint32), axis, -1)
    low, high = (u << 16).view(np.float32), (u & 0xFFFF0000).view(np.float32)
    out = np.stack([low, high], axis=-1).reshape(*u.shape[:-1], -1)
    return np.moveaxis(out, -1, axis)


WINOGRAD_TILE = 2
"""The largest Winograd tile m in bfloat16: F(4x4, 3x3)'s transforms
(coefficients to 8, weights scaled by 1/24) amplify the operands' rounding,
measured on a 64-channel 28x28 layer of normal data, max error 6.9 against
0.24 for the direct bfloat16 kernel (outputs of mean magnitude 18.6); F(2x2,
3x3)'s is 0.41."""


def _winograd_stays_in_l2(shape: Conv2dShape, m: int, target: Target) -> bool:
    """Whether bfloat16 Winograd F(m x m, 3x3)'s intermediates each fit in
    the cores' L2s between the stage writing them and the one reading them:
    the transformed input (bfloat16) and the products (float32), (m + 2)^2
    per tile and channel. Products on pairs take half the float32 time, so
    where the transforms' traffic leaves L2 float32 F(4x4) is faster where
    float32 takes it (2.25 products an output and channel, not F(2x2)'s 4
    in operands of twice the bytes). Large weights do not count: the direct
    kernel reads them from memory too, with 9 products an output and channel
    to F(2x2)'s 4. Measured in ResNet-18 on Zen 5 (2 cores, 1 MiB L2 each),
    bfloat16 F(2x2) against the other: 64->64 @56 (3.2 MB of products)
    0.193 against float32 F(4x4) 0.173 ms; 128->128 @28 (1.6 MB) 0.160
    against 0.177; 256->256 @14 0.167 against 0.30; 512->512 @7 (8.4 MB of
    weights) 0.258 against the direct kernel on pairs 0.305."""
    tiles = shape.n * -(-shape.oh // m) * -(-shape.ow // m)
    data, products = ((m + 2) ** 2 * tiles * c for c in (2 * shape.c, 4 * shape.o))
    return max(data, products) <= target.l2_bytes * target.num_cores


BITS = "uint16"
"""The dtype of an activation stored as bfloat16 between kernels
(`precision="bf16"`, see `strategy.plan_bf16`): the number's 16 bits."""


def to_bits(value: te.Expr) -> te.Expr:
    """float32 `value` rounded to bfloat16 (`te.to_bf16`), its 16 bits."""
    return te.to_bf16(value)


def word(low: te.Expr, high: te.Expr) -> te.Expr:
    """The int32 word of two float32 values rounded to bfloat16, `low`'s in
    the low half (`te.bf16_word`'s word), each rounded by `to_bits`: one
    instruction where the target has it, not `te.bf16_word`'s integer
    rounding (MobileNetV2's stem in bfloat16, whose pack rounds every
    input: 118 -> 102 us on Zen 5, the model 1.6%). A subnormal the
    instruction makes zero is one the dot product reads as zero."""
    return to_bits(low).astype("int32") | (to_bits(high).astype("int32") << 16)


def from_bits(bits: te.Expr) -> te.Expr:
    """The float32 a bfloat16's 16 bits hold (exactly: the high half)."""
    return te.reinterpret("float32", bits.astype("int32") << 16)


def on_floats(data: te.Tensor, build: Callable[[te.Tensor], Kernel]) -> Kernel:
    """`build`'s kernel on `data`, bfloat16 bits (`BITS`), read as the
    float32s they hold: a stage the schedule inlines into the kernel's reads,
    and `data` the kernel's first placeholder in place of that stage."""
    floats = te.compute(
        data.shape, lambda *i: from_bits(data[i]), name=f"{data.name}.floats"
    )
    kernel = build(floats)
    assert kernel.placeholders[0] is floats
    kernel.placeholders[0] = data
    kernel.wrap_schedule(lambda s: s[floats].compute_inline())
    return kernel


def applies(shape: Conv2dShape) -> bool:
    """Whether a convolution takes the bfloat16 kernel: one group (a grouped
    or depthwise one reads a weight per few products: memory, not
    multiplies, bounds it)."""
    return shape.groups == 1


def conv2d_bf16(
    data: te.Tensor,
    weight_shape: Sequence[int],
    *,
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    bias: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "conv2d",
    target: Target | None = None,
    data_block: int | None = None,
    out_block: int | None = None,
    algorithm: str = "auto",
) -> Kernel:
    """A 2-D convolution of one group, as `topi.conv2d`'s NCHWc or Winograd
    kernel, on bfloat16 pairs (see the module docstring).

    Args:
        data: float32, NCHW or channel-blocked (N, C/b, H, W, b); or
            blocked bfloat16 bits (`BITS`), which the pack pairs as they are
            (Winograd's transform reads the float32s they hold).
        weight_shape: OIHW.
        strides, padding, dilation, bias, epilogue, epilogue_inputs, name,
            target, data_block, out_block, algorithm: as `topi.conv2d`'s.

    Returns:
        The Kernel: placeholders [data, <name>.weight words, (<name>.bias),
        *epilogue_inputs]; `transform("<name>.weight", oihw)` packs a weight.
    """
    machine = Target.resolve(target)
    logical = logical_shape(data, data_block, f"conv2d_bf16 '{name}'")
    if data.dtype not in ("float32", BITS) or (data.dtype == BITS and not data_block):
        raise EmberValueError(
            f"conv2d_bf16 '{name}': expected float32 data or blocked bfloat16 "
            f"bits ({BITS}), got {data.dtype}"
        )
    shape = conv2d_shape(logical, weight_shape, strides, padding, dilation, 1)
    # imported here: the Winograd kernel builds on this module's pairs
    from ember.topi import conv2d_winograd

    floats_m = conv2d_winograd.algorithm_tile(algorithm, shape, machine, name)
    if floats_m > WINOGRAD_TILE and algorithm != "auto":
        raise EmberValueError(
            f"conv2d_bf16 '{name}': {algorithm} amplifies bfloat16's rounding "
            f"(F(4x4, 3x3)'s transforms); use winograd-2, direct or auto"
        )
    m = min(floats_m, WINOGRAD_TILE)
    if m and algorithm == "auto" and not _winograd_stays_in_l2(shape, m, machine):
        if floats_m > m:  # float32 F(4x4): exact products, fewer bytes an output

            def floats_kernel(floats: te.Tensor) -> Kernel:
                return conv2d(
                    floats,
                    weight_shape,
                    strides=strides,
                    padding=padding,
                    dilation=dilation,
                    bias=bias,
                    epilogue=epilogue,
                    epilogue_inputs=epilogue_inputs,
                    name=name,
                    target=machine,
                    data_block=data_block,
                    out_block=out_block,
                    algorithm=f"winograd-{floats_m}",
                )

            return (
                on_floats(data, floats_kernel)
                if data.dtype == BITS
                else floats_kernel(data)
            )
        m = 0
    if m:
        layout = Blocks(data_block, out_block)

        def winograd(floats: te.Tensor) -> Kernel:
            return conv2d_winograd.winograd(
                floats, shape, bias, epilogue, name, machine, layout, m=m, bf16=True
            )

        kernel = on_floats(data, winograd) if data.dtype == BITS else winograd(data)
        kernel.placeholders.extend(epilogue_inputs)
        kernel.attrs["flops"] = shape.flops
        return kernel
    ob = machine.vector_lanes("int32")
    if _pairs_columns(shape):
        return _columns_kernel(
            data, shape, bias, epilogue, epilogue_inputs, name, machine, out_block
        )
    c2 = -(-shape.c // PAIR) * PAIR
    words = _largest_divisor(c2 // PAIR, ob)  # words of a channel block
    block = data.shape[-1] if data.dtype == BITS else 0
    own = block % PAIR == 0 and 0 < block // PAIR <= ob
    if own:
        # bits' own blocks: a word's halves lie side by side at an even
        # offset of their block, which LLVM reads as one word (folded into
        # the dot product's broadcast); words across two blocks were two
        # loads and a shift (MobileNetV2 in bfloat16: 1.00 -> 0.95 ms)
        words = block // PAIR
    cb = words * PAIR
    op = -(-shape.o // ob) * ob
    blocks = op // ob
    packed = _packed_pairs(data, shape, c2, words, name)
    weight = te.placeholder(
        (blocks, c2 // cb, shape.kh, shape.kw, words, ob),
        "int32",
        name=f"{name}.weight",
    )
    conv = blocked_conv(packed, weight, shape, name, te.dot_bf16)

    def pack_weight(w: np.ndarray) -> np.ndarray:
        full = np.zeros((op, c2, shape.kh, shape.kw), np.float32)
        full[: shape.o, : shape.c] = w
        # (O/ob, ob, C2/cb, words*2, KH, KW) -> (O/ob, C2/cb, KH, KW, words, ob)
        paired = pairs(full, 1).reshape(blocks, ob, c2 // cb, words, *full.shape[2:])
        return np.ascontiguousarray(paired.transpose(0, 2, 4, 5, 3, 1))

    # bits in their own blocks, no border: a word's halves lie side by side
    inline = own and c2 == shape.c and not any(shape.padding)
    return _words_kernel(
        data,
        packed,
        weight,
        conv,
        pack_weight,
        shape=shape,
        view=shape,
        words=words,
        bias=bias,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name=name,
        target=machine,
        out_block=out_block,
        attrs={"kernel": "nchwc_bf16", "cb": cb},
        inline_pack=inline,
    )


def _words_kernel(
    data: te.Tensor,
    packed: te.Tensor,
    weight: te.Tensor,
    conv: te.Tensor,
    pack_weight: Callable[[np.ndarray], np.ndarray],
    *,
    shape: Conv2dShape,
    view: Conv2dShape,
    words: int,
    bias: bool,
    epilogue: Epilogue | None,
    epilogue_inputs: Sequence[te.Tensor],
    name: str,
    target: Target,
    out_block: int | None,
    attrs: dict,
    **schedule,
) -> Kernel:
    """The kernel of `conv` (N, blocks, OH, OW, ob) on words of `packed`
    (`words` a block): the bias, the epilogue (reading `epilogue_inputs`,
    the last placeholders) and the output stage of
    `shape`, NCHWc's schedule and knobs for `view` (the geometry it tiles),
    `pack_weight` after a check of the OIHW weight's shape."""
    ob = conv.shape[-1]
    b = te.placeholder((shape.o,), name=f"{name}.bias") if bias else None
    output = _output(_unblocked(conv, ob), b, epilogue, shape, out_block, name)
    default, knobs = nchwc_schedule(
        view, conv.shape[1], ob, words, packed, conv, output, target, **schedule
    )
    oihw = (shape.o, shape.c, shape.kh, shape.kw)

    def transform(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, np.float32)
        if w.shape != oihw:
            raise EmberValueError(
                f"conv2d_bf16 '{name}': expected a weight {oihw}, got {w.shape}"
            )
        return pack_weight(w)

    return Kernel(
        output,
        [data, weight, *([b] if b is not None else []), *epilogue_inputs],
        {weight.name: transform},
        lambda s: knobs.apply(s, default),
        {**attrs, "ob": ob, "tile": default["tile"], "flops": shape.flops},
        knobs,
    )


def _padded_value(
    data: te.Tensor, shape: Conv2dShape, size: tuple[int, int], past_c: bool
) -> Callable[..., te.Expr]:
    """value(n, channel, y, x): `data` (NCHW, or blocked) at row y and column
    x of its zero-padded window of `size`, zero in the border (and, with
    `past_c`, in a channel past C); bfloat16 bits (`BITS`) stay bits."""
    pt, pl, _, _ = shape.padding

    def value(n, channel, y, x):
        inside = inside_border(shape, size, y, x)
        if past_c:
            inside.append(channel < shape.c)
        if data.ndim == 5:  # blocked
            b = data.shape[-1]
            v = data[n, channel // b, y - pt, x - pl, channel % b]
        else:
            v = data[n, channel, y - pt, x - pl]
        zero = te.const(0, BITS) if data.dtype == BITS else 0.0
        return te.if_then_else(te.all(*inside), v, zero) if inside else v

    return value


def _word_of(data: te.Tensor, low: te.Expr, high: te.Expr) -> te.Expr:
    """The int32 word of two of `data`'s values (`_padded_value`'s): bits
    rounded already lie side by side, float32s are rounded (`word`)."""
    if data.dtype == BITS:
        return low.astype("int32") | (high.astype("int32") << 16)
    return word(low, high)


def _packed_pairs(
    data: te.Tensor, shape: Conv2dShape, c2: int, words: int, name: str
) -> te.Tensor:
    """(N, C2/cb, H', W', words) int32: each word two channels rounded to
    bfloat16, zero wherever the convolution pads and in a channel past C;
    data of bfloat16 bits (`BITS`) is paired as it is."""
    hp, wp = shape.window
    value = _padded_value(data, shape, (hp, wp), c2 != shape.c)

    def pack_word(n, co, y, x, wi):
        first = (co * words + wi) * PAIR
        return _word_of(data, value(n, first, y, x), value(n, first + 1, y, x))

    return te.compute(
        (shape.n, c2 // (words * PAIR), hp, wp, words),
        pack_word,
        name=f"{name}.data_pack",
    )


COLUMNS_SAVING = 8
"""`_pairs_columns` pairs columns where that saves at least one word of a
kernel row in this many: where C is small (a 3-channel stem saves 3 of 14
words, a 5-channel 5x5 2 of 15), not where a wide odd C would save a word
in hundreds and give up the channel blocks that read data in place."""


def _pairs_columns(shape: Conv2dShape) -> bool:
    """Whether the convolution pairs the (column, channel) elements of each
    kernel row (`_columns_kernel`) rather than channels: C odd (pairs of
    channels would multiply a zero channel a pixel: a 3-channel stem takes
    4), one group, no dilation across columns, an output column a whole
    number of words on (stride x C even), and `COLUMNS_SAVING`'s share of
    a kernel row's words saved."""
    sw, c = shape.strides[1], shape.c
    channel_pairs = shape.kw * -(-c // PAIR)
    saved = channel_pairs - -(-shape.kw * c // PAIR)
    return (
        c % PAIR == 1
        and shape.groups == 1
        and shape.dilation[1] == 1
        and sw * c % PAIR == 0
        and saved * COLUMNS_SAVING >= channel_pairs
    )


def _columns_kernel(
    data: te.Tensor,
    shape: Conv2dShape,
    bias: bool,
    epilogue: Epilogue | None,
    epilogue_inputs: Sequence[te.Tensor],
    name: str,
    target: Target,
    out_block: int | None,
) -> Kernel:
    """The NCHWc kernel on words of a kernel row's (column, channel) elements
    in NHWC order: row y of the padded input is one run of words, element j
    column j // C and channel j % C; output column x reads `taps` words from
    word x * `step` (stride x C / 2 a column). A 7x7 stride-2 stem on 3
    channels takes 11 words a kernel row where channel pairs take 14 (21
    products in 22 lanes, not 28): ResNet-18's stem on Zen 5 0.353 -> 0.277
    ms alone, the model 3.37 -> 3.32 ms.

    The data is packed as (N, 1, H', groups, step), word x * step + k at
    (x + k // step, k % step), so the pack's column and channel of each
    element are constants of the unrolled `step` axis. Where C x KW is odd,
    a row's last word holds one element past the kernel's, times a zero
    weight: an infinite input there makes that output NaN, as a Winograd
    tile spreads one to its neighbours."""
    ob = target.vector_lanes("int32")
    (sh, sw), dh = shape.strides, shape.dilation[0]
    step = sw * shape.c // PAIR  # words an output column moves
    taps = -(-shape.kw * shape.c // PAIR)  # words of a kernel row
    hp, _ = shape.window
    groups = shape.ow - 1 + -(-taps // step)
    # columns the pack reads: past the window where its last word overhangs
    columns = (groups - 1) * sw + (PAIR * step - 1) // shape.c + 1
    value = _padded_value(data, shape, (hp, columns), False)

    def element(n, y, q, j: int):
        return value(n, j % shape.c, y, q * sw + j // shape.c)

    packed = te.compute(
        (shape.n, 1, hp, groups, step),
        lambda n, _, y, q, r: _word_of(
            data, element(n, y, q, r * PAIR), element(n, y, q, r * PAIR + 1)
        ),
        name=f"{name}.data_pack",
    )
    op = -(-shape.o // ob) * ob
    blocks = op // ob
    weight = te.placeholder(
        (blocks, 1, shape.kh, taps, 1, ob), "int32", name=f"{name}.weight"
    )
    rh = te.reduce_axis((0, shape.kh), name="rh")
    rk = te.reduce_axis((0, taps), name="rk")
    conv = te.compute(
        (shape.n, blocks, shape.oh, shape.ow, ob),
        lambda n, o, y, x, oi: te.sum(
            te.dot_bf16(
                packed[n, 0, y * sh + rh * dh, x + rk // step, rk % step],
                weight[o, 0, rh, rk, 0, oi],
            ),
            axis=[rh, rk],
        ),
        name=f"{name}.conv",
    )
    # the schedule's view: a convolution of one word over `taps` columns
    view = replace(
        shape,
        c=PAIR,
        h=hp,
        w=(shape.ow - 1) * step + taps,
        kw=taps,
        strides=(sh, step),
        padding=(0, 0, 0, 0),
        dilation=(dh, 1),
    )

    def unroll_step(s) -> None:  # the pack's words of one column step
        s[packed].unroll(s[packed].op.axis[-1])

    def pack_weight(w: np.ndarray) -> np.ndarray:
        full = np.zeros((op, shape.kh, shape.kw * shape.c), np.float32)
        full[: shape.o] = w.transpose(0, 2, 3, 1).reshape(shape.o, shape.kh, -1)
        paired = pairs(full, 2).reshape(blocks, ob, shape.kh, taps)
        return np.ascontiguousarray(paired.transpose(0, 2, 3, 1)[:, None, :, :, None])

    return _words_kernel(
        data,
        packed,
        weight,
        conv,
        pack_weight,
        shape=shape,
        view=view,
        words=1,
        bias=bias,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name=name,
        target=target,
        out_block=out_block,
        attrs={"kernel": "columns_bf16", "step": step, "taps": taps},
        also=unroll_step,
    )


def pair_words(data: te.Tensor, name: str) -> te.Tensor:
    """Stage `name`: `data` (..., K) float32 rounded to bfloat16 in words of
    two along its last axis, (..., ceil(K/2)) int32, an odd K's last word
    padded with zero."""
    *lead, k = data.shape

    def half(idx: tuple, c: te.Expr) -> te.Expr:
        if k % PAIR == 0:
            return data[(*idx, c)]
        return te.if_then_else(c < k, data[(*idx, te.min(c, k - 1))], 0.0)

    return te.compute(
        (*lead, -(-k // PAIR)),
        lambda *i: word(half(i[:-1], i[-1] * PAIR), half(i[:-1], i[-1] * PAIR + 1)),
        name=name,
    )


def dense_bf16(
    data: te.Tensor,
    weight_shape: Sequence[int],
    *,
    bias: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "dense",
    target: Target | None = None,
) -> Kernel:
    """y = data . weight^T (+ bias), then the epilogue, as `topi.dense` on
    bfloat16 pairs: data (M, K) float32 rounded into a stage of (M, K/2)
    words, the weight packed at compile time to (N'/nb, K/2, nb) words.

    Returns:
        The Kernel: placeholders [data, <name>.weight words, (<name>.bias (N,)),
        *epilogue_inputs].
    """
    if data.ndim != 2 or len(weight_shape) != 2 or data.shape[1] != weight_shape[1]:
        raise EmberValueError(
            f"dense_bf16 '{name}': expected data (M, K) and weight (N, K), got "
            f"{tuple(data.shape)} and {tuple(weight_shape)}"
        )
    machine = Target.resolve(target)
    m, k = data.shape
    n = weight_shape[0]
    k2 = -(-k // PAIR)
    words = pair_words(data, f"{name}.words")
    nb, blocks = _panels(m, n, machine.vector_lanes("int32"))
    weight = te.placeholder((blocks, k2, nb), "int32", name=f"{name}.weight")

    def pack(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, np.float32)
        if w.shape != (n, k):
            raise EmberValueError(
                f"dense_bf16 '{name}': expected a weight ({n}, {k}), got {w.shape}"
            )
        return _pack_panels(pairs(w, 1), nb)

    gemm = _gemm_by_panels(
        words,
        n,
        nb,
        lambda j, r: weight[j // nb, r, j % nb],
        {weight: pack},
        bias=bias,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name=name,
        target=machine,
        kind="dense_bf16",
        product=te.dot_bf16,
    )
    lanes = machine.vector_lanes("float32")
    gemm.attrs["flops"] = 2 * m * n * k
    return on_words(gemm, data, lambda s: schedule_words(s, words, lanes))
