"""conv2d for CPUs with wide SIMD: te computes and default schedules.

    k = conv2d(x, (64, 64, 3, 3), strides=(1, 1), padding=(1, 1, 1, 1),
               bias=True, epilogue=lambda v, idx: te.min(te.max(v, 0.0), 6.0))
    mod = ember.build(k.schedule(), k.args, name="conv")
    mod(x_np, k.transform("conv2d.weight", w_oihw), bias_np, y)

`data` is NCHW, the weight OIHW (O, I/groups, KH, KW), the optional bias (O,), the
output NCHW: the graph's layouts. Inside, one of three kernels:

- **NCHWc** (groups == 1): the input is padded and packed to
  (N, C/cb, H', W', cb) in one parallel stage; the convolution computes a register
  tile of `ot` output-channel blocks x `yt` rows x `xt` columns of `ob` channels
  each (a vector register of floats: 16 on AVX-512, 8 on AVX2, 4 on SSE2 and
  NEON; the target says), the reduction outside the tile, the
  channel block vectorized, the tile unrolled; every input element loaded is
  broadcast to `ot` vectors, every weight vector used `yt * xt` times. The tile is
  attached to the final stage, which writes NCHW with the bias and the epilogue:
  no pass over memory between the convolution and its output. The weight is
  packed at compile time to (O/ob, C/cb, KH, KW, cb, ob) (output channels padded
  with zeros to a multiple of `ob`).
- **depthwise** (groups == C == O): packed input as above, weights
  (C/ob, KH, KW, ob), the per-channel sum vectorized over the channel block and
  tiled over columns.
- **direct** (any other groups or shapes): the definition, parallel over output
  channels; correct, not fast.

The epilogue is `epilogue(value, (n, c, h, w)) -> expr`; it may read other tensors
given in `epilogue_inputs`, which become the last placeholders.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ember import te
from ember.backends.llvm.target import Target
from ember.runtime.errors import EmberValueError
from ember.te.schedule import Schedule
from ember.topi.kernel import (
    Epilogue,
    Kernel,
    Knobs,
    accumulator_registers,
    apply_epilogue,
)


@dataclass(frozen=True)
class Conv2dShape:
    """The geometry of one convolution, checked and normalised."""

    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    strides: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    dilation: tuple[int, int]
    groups: int

    @property
    def oh(self) -> int:
        pt, _, pb, _ = self.padding
        return (
            self.h + pt + pb - self.dilation[0] * (self.kh - 1) - 1
        ) // self.strides[0] + 1

    @property
    def ow(self) -> int:
        _, pl, _, pr = self.padding
        return (
            self.w + pl + pr - self.dilation[1] * (self.kw - 1) - 1
        ) // self.strides[1] + 1

    @property
    def window(self) -> tuple[int, int]:
        """Rows and columns of the padded input the convolution reads (its
        border included, nothing past the last window)."""
        dh, dw = self.dilation
        return (
            (self.oh - 1) * self.strides[0] + dh * (self.kh - 1) + 1,
            (self.ow - 1) * self.strides[1] + dw * (self.kw - 1) + 1,
        )

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.o, self.oh, self.ow)

    @property
    def flops(self) -> int:
        return (
            2
            * self.n
            * self.o
            * self.oh
            * self.ow
            * (self.c // self.groups)
            * (self.kh * self.kw)
        )


def _pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and v >= 1 for v in pair):
        raise EmberValueError(
            f"conv2d: expected {what} as 2 positive ints, got {value!r}"
        )
    return pair  # type: ignore[return-value]


def _padding(value: int | Sequence[int]) -> tuple[int, int, int, int]:
    pads = (value,) * 4 if isinstance(value, int) else tuple(value)
    if len(pads) == 2:
        pads = (pads[0], pads[1], pads[0], pads[1])
    if len(pads) != 4 or not all(isinstance(v, int) and v >= 0 for v in pads):
        raise EmberValueError(
            "conv2d: expected padding as [top, left, bottom, right] non-negative "
            f"ints (or [h, w]), got {value!r}"
        )
    return pads  # type: ignore[return-value]


def conv2d_shape(
    data_shape: Sequence[int],
    weight_shape: Sequence[int],
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Conv2dShape:
    """Check a convolution's shapes and attributes; raise ValueError naming what is
    wrong ("expected X, got Y")."""
    if len(data_shape) != 4:
        raise EmberValueError(
            f"conv2d: expected NCHW data, got shape {tuple(data_shape)}"
        )
    if len(weight_shape) != 4:
        raise EmberValueError(
            f"conv2d: expected an OIHW weight, got shape {tuple(weight_shape)}"
        )
    n, c, h, w = data_shape
    o, ig, kh, kw = weight_shape
    if groups < 1 or c % groups or o % groups:
        raise EmberValueError(
            f"conv2d: expected groups dividing input channels {c} and output "
            f"channels {o}, got {groups}"
        )
    if ig * groups != c:
        raise EmberValueError(
            f"conv2d: expected weight input channels {c // groups} (= {c} / groups "
            f"{groups}), got {ig}"
        )
    shape = Conv2dShape(
        n,
        c,
        h,
        w,
        o,
        kh,
        kw,
        _pair(strides, "strides"),
        _padding(padding),
        _pair(dilation, "dilation"),
        groups,
    )
    if shape.oh < 1 or shape.ow < 1:
        raise EmberValueError(
            f"conv2d: expected a kernel {kh}x{kw} (dilation {shape.dilation}) no "
            f"larger than the padded input {h}x{w} (padding {shape.padding}), "
            f"got output {shape.oh}x{shape.ow}"
        )
    return shape


def conv2d(
    data: te.Tensor,
    weight_shape: Sequence[int],
    *,
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    bias: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "conv2d",
    target: Target | None = None,
    data_block: int | None = None,
    out_block: int | None = None,
    algorithm: str = "auto",
) -> Kernel:
    """A 2-D convolution kernel over NCHW data, with its default CPU schedule.

    Args:
        data: the input tensor, NCHW float32.
        weight_shape: OIHW, (out channels, in channels / groups, KH, KW).
        strides, dilation: (h, w) or one int.
        padding: (top, left, bottom, right), (h, w) or one int; zeros.
        groups: channel groups; groups == channels == out channels is depthwise.
        bias: whether the kernel takes a bias (O,) added before the epilogue.
        epilogue: applied to every output element, `(value, (n, c, h, w)) -> expr`.
        epilogue_inputs: the tensors the epilogue reads.
        name: the output tensor's name; placeholders are `<name>.weight` and
            `<name>.bias`.
        target: the machine the schedule is for (its vector lanes and
            registers size the blocks and the register tile); None:
            `Target.current()`.
        data_block: the data is channel-blocked, (N, C/b, H, W, b) with b =
            `channel_block(C, target)`, as another convolution wrote it
            (`out_block`): no packing pass, only the zero border where the
            convolution pads.
        out_block: write the output channel-blocked, (N, O/b, OH, OW, b) with
            b = `channel_block(O, target)`, for convolutions to read; the
            epilogue still sees NCHW indices.
        algorithm: "direct" (the NCHWc, depthwise or direct kernel),
            "winograd-2" or "winograd-4" (F(m x m, 3 x 3), 3x3 stride-1 convolutions
            of one group only), or "auto": Winograd where the target gains
            by it (`conv2d_winograd.winograd_tile`).

    Returns:
        The Kernel: placeholders [data, weight, (bias), *epilogue_inputs]; the
        weight placeholder's layout depends on the kernel chosen, and
        `weight_transforms` turns an OIHW array into it.
    """
    machine = Target.resolve(target)
    logical = logical_shape(data, data_block, f"conv2d '{name}'")
    shape = conv2d_shape(logical, weight_shape, strides, padding, dilation, groups)
    if data.dtype != "float32":
        raise EmberValueError(
            f"conv2d '{name}': expected float32 data, got {data.dtype}"
        )
    # imported here: the Winograd kernel builds on this module's stages
    from ember.topi import conv2d_winograd

    m = conv2d_winograd.algorithm_tile(algorithm, shape, machine, name)
    builder, kind = _nchwc, "nchwc"
    if m:
        builder, kind = functools.partial(conv2d_winograd.winograd, m=m), "winograd"
    elif groups == shape.c == shape.o and groups > 1:
        builder, kind = _depthwise, "depthwise"
    elif groups > 1 and _group_span(shape, machine.vector_lanes(data.dtype)):
        builder, kind = _grouped, "grouped"
    elif groups > 1:
        builder, kind = _direct, "direct"
    layout = Blocks(data_block, out_block)
    for block, channels in ((data_block, shape.c), (out_block, shape.o)):
        if block is not None and (
            builder is _direct or block != channel_block(channels, machine)
        ):
            raise EmberValueError(
                f"conv2d '{name}': a {kind} kernel over {channels} "
                f"channels takes no channel block {block}"
            )
    kernel = builder(data, shape, bias, epilogue, name, machine, layout)
    kernel.placeholders.extend(epilogue_inputs)
    kernel.attrs["flops"] = shape.flops
    return kernel


def logical_shape(data: te.Tensor, block: int | None, what: str, word: int = 1):
    """The NCHW shape of `data`: itself, or, blocked by `block` (N, C/b, H, W,
    b), its channels joined; a block that is not whole words of `word`
    channels is refused."""
    if block is None:
        return data.shape
    if data.ndim != 5 or data.shape[-1] != block or block % word:
        whole = f" of whole words of {word}" if word > 1 else ""
        raise EmberValueError(
            f"{what}: expected blocked data (N, C/{block}, H, W, {block}){whole}, "
            f"got shape {tuple(data.shape)}"
        )
    n, blocks, h, w, b = data.shape
    return (n, blocks * b, h, w)


@dataclass(frozen=True)
class Blocks:
    """Channel blocks of a kernel's data and output (None: NCHW)."""

    data: int | None = None
    out: int | None = None


def channel_block(channels: int, target: Target) -> int:
    """The channel block of a blocked activation, (N, C/b, H, W, b): the
    largest power of two dividing C, up to a vector, so that a block never
    straddles the NCHWc kernel's vectors of output channels (24 channels:
    blocks of 8 in vectors of 16, not 12)."""
    return _largest_power_of_two_divisor(channels, target.vector_lanes("float32"))


def _largest_divisor(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def _largest_power_of_two_divisor(n: int, limit: int) -> int:
    d = 1
    while d * 2 <= limit and n % (d * 2) == 0:
        d *= 2
    return d


def _padded(
    data: te.Tensor,
    shape: Conv2dShape,
    cb: int,
    stage: str,
    size: tuple[int, int] | None = None,
) -> te.Tensor:
    """Stage `stage`, (N, C/cb, H', W', cb): `data` (NCHW, or blocked by `cb`)
    zero-padded and channel-blocked; H' x W' `size`, by default only the rows
    and columns the convolution reads (asymmetric padding costs nothing),
    zero wherever they fall outside the input."""
    pt, pl, _, _ = shape.padding
    hp, wp = size or shape.window

    def read(n, co, y, x, ci):
        if data.ndim == 5:  # blocked already: a copy of whole vectors
            return data[n, co, y, x, ci]
        return data[n, co * cb + ci, y, x]

    def body(n, co, y, x, ci):
        value = read(n, co, y - pt, x - pl, ci)
        conds = inside_border(shape, (hp, wp), y, x)
        return te.if_then_else(te.all(*conds), value, 0.0) if conds else value

    return te.compute((shape.n, shape.c // cb, hp, wp, cb), body, name=stage)


def inside_border(
    shape: Conv2dShape, size: tuple[int, int], y: te.Expr, x: te.Expr
) -> list[te.Expr]:
    """The conditions that row y and column x of the padded input (size
    `size`) lie inside the data, not in its border: none where no border
    is read on that side."""
    pt, pl, _, _ = shape.padding
    hp, wp = size
    conds = []
    if pt:
        conds.append(y >= pt)
    if hp - pt > shape.h:
        conds.append(y < shape.h + pt)
    if pl:
        conds.append(x >= pl)
    if wp - pl > shape.w:
        conds.append(x < shape.w + pl)
    return conds


def _packed_data(data: te.Tensor, shape: Conv2dShape, cb: int, block, name: str):
    """The convolution's input as (N, C/cb, H', W', cb) with its zero border:
    packed from NCHW, padded from blocked data, or blocked data itself where
    there is no border (the convolution reads rows and columns inside it)."""
    if block is None or any(shape.padding):
        return _padded(data, shape, cb, f"{name}.data_pack")
    return data


MIN_BLOCKED_MACS = 32
"""Multiply-adds per output from which a tile takes several channel blocks
(see `_tile`)."""

MIN_COLUMNS = 8
"""Columns a deep tile keeps at least, whatever the register count: with 16
registers (AVX2, SSE2) the accumulators then leave no room for a second channel
block, and the tile is the one long row."""


def _tile(shape: Conv2dShape, blocks: int, target: Target) -> tuple[int, int, int]:
    """(ot, yt, xt): output-channel blocks, rows and columns of the register tile,
    ot * yt * xt accumulators of one vector each (`accumulator_registers`).

    Each step of the reduction broadcasts xt inputs and loads ot weight vectors
    for ot * xt FMAs. Where each output's reduction has `MIN_BLOCKED_MACS` or
    more and there are several channel blocks, columns go up to a quarter of
    the registers and the accumulators left take more blocks (a power of two,
    up to an eighth of the registers: ot weight vectors are live at once):
    fewer loads per FMA than one long row of columns. Measured on Zen 5, one
    thread: ResNet-18's 3x3 256->256 @14 (2, 1, 7) 0.93 ms against (1, 1, 14)
    1.10; MobileNetV2's 1x1 96->24 @56 0.123 against 0.145 and 64->384 @14
    0.046 against 0.053; three blocks were slower than two (0.059). Shallower
    reductions (1x1 over 16 or 24 channels) are bound by writing the output,
    which long rows of columns do best (16->96 @112: (1, 1, 14) 0.30 ms, (3, 1,
    8) 0.64; 24->144 @56: 0.144 against 0.273), as is one block (depthwise):
    columns up to half the registers. A width with no divisor from 4 to
    that bound takes the narrowest wider divisor the accumulators hold, not
    a tail: SqueezeNet's 1x1 512->1000 @13 whole rows (1, 1, 13) 0.41 ms
    against (1, 1, 4) and a tail 0.83 (Zen 5, two threads). Where the row is
    short, more rows fill the accumulators."""
    registers, room = target.vector_registers, accumulator_registers(target)
    blocked = blocks > 1 and _macs(shape) >= MIN_BLOCKED_MACS
    widest = max(registers // 4, MIN_COLUMNS) if blocked else registers // 2
    xt = _largest_divisor(shape.ow, widest)
    if xt < 4 and shape.ow > widest:
        # no divisor from 4 to `widest`: the narrowest wider one the
        # accumulators hold (13, 27: the whole row, 9), else a tile with a tail
        xt = min(
            (d for d in range(widest + 1, room + 1) if shape.ow % d == 0),
            default=widest // 2,
        )
    room //= xt
    ot = _largest_power_of_two_divisor(blocks, max(1, min(registers // 8, room)))
    room //= ot
    yt = _largest_divisor(shape.oh, room) if room >= 2 else 1
    return ot, yt, xt


def _tile_space(
    shape: Conv2dShape, blocks: int, target: Target, default: tuple[int, int, int]
) -> tuple[tuple[int, int, int], ...]:
    """The register tiles (ot, yt, xt) the target's registers hold: ot a power
    of two dividing the channel blocks with ot weight vectors live, xt any
    divisor of the width from 4 up to the register count (or 4, 8, 16 with a
    tail),
    yt a divisor of the height, ot * yt * xt accumulators within
    `accumulator_registers`, and at least four of them where the output has
    that many (fewer leave the FMA pipes idle)."""
    registers = target.vector_registers
    room = accumulator_registers(target)
    ots = [d for d in (1, 2, 4, 8) if blocks % d == 0 and d <= max(1, registers // 4)]
    narrowest = min(4, shape.ow)
    xts = {
        d for d in range(narrowest, min(shape.ow, registers) + 1) if shape.ow % d == 0
    }
    xts |= {d for d in (4, 8, 16) if d < shape.ow and d <= registers}
    yts = [d for d in range(1, min(shape.oh, room) + 1) if shape.oh % d == 0]
    least = min(4, shape.ow * shape.oh)
    tiles = {
        (ot, yt, xt)
        for ot in ots
        for xt in sorted(xts)
        for yt in yts
        if least <= ot * yt * xt <= room and ot * (yt * xt + 1) < registers
    }
    return tuple(sorted(tiles | {default}))


def _nchwc(
    data: te.Tensor,
    shape: Conv2dShape,
    bias: bool,
    epilogue: Epilogue | None,
    name: str,
    target: Target,
    layout: Blocks,
) -> Kernel:
    lanes = target.vector_lanes(data.dtype)
    cb = layout.data or _largest_divisor(shape.c, lanes)
    # Whole vectors, O padded with zero filters: where O is a multiple of half a
    # vector only (24 channels), a third of the FMAs on zeros costs less than
    # half-width vectors (MobileNetV2's 96->24 and 144->24 @56, Zen 5, one
    # thread: 0.174 -> 0.146 ms and 0.258 -> 0.201 ms; the model 2-3%).
    ob = lanes
    op = -(-shape.o // ob) * ob
    blocks = op // ob
    packed = _packed_data(data, shape, cb, layout.data, name)
    weight = te.placeholder(
        (blocks, shape.c // cb, shape.kh, shape.kw, cb, ob), name=f"{name}.weight"
    )
    conv = blocked_conv(packed, weight, shape, name)
    b = te.placeholder((shape.o,), name=f"{name}.bias") if bias else None
    output = _output(_unblocked(conv, ob), b, epilogue, shape, layout.out, name)
    default, knobs = nchwc_schedule(shape, blocks, ob, cb, packed, conv, output, target)
    ot, yt, xt = default["tile"]

    def pack_weight(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, np.float32)
        if op != shape.o:
            w = np.concatenate([w, np.zeros((op - shape.o, *w.shape[1:]), w.dtype)])
        blocked = w.reshape(blocks, ob, shape.c // cb, cb, shape.kh, shape.kw)
        return np.ascontiguousarray(blocked.transpose(0, 2, 4, 5, 3, 1))

    placeholders = [data, weight] + ([b] if b is not None else [])
    return Kernel(
        output,
        placeholders,
        {weight.name: pack_weight},
        lambda s: knobs.apply(s, default),
        {"kernel": "nchwc", "cb": cb, "ob": ob, "tile": (ot, yt, xt)},
        knobs,
    )


def blocked_conv(
    packed: te.Tensor,
    weight: te.Tensor,
    shape: Conv2dShape,
    name: str,
    product: Callable[[te.Expr, te.Expr], te.Expr] = lambda a, b: a * b,
    first: Callable[[te.Expr], te.Expr] | None = None,
) -> te.Tensor:
    """Stage `<name>.conv`, (N, blocks, OH, OW, ob): the NCHWc convolution of
    `packed` (N, *, H', W', cb) by `weight` (blocks, CB, KH, KW, cb, ob),
    summing `product`s over the CB blocks of channels (elements, or words
    of the int8 and bfloat16 kernels) starting at `first(o)` for output block
    o (from 0 by default: a grouped convolution reads its own span)."""
    blocks, spans, _, _, cb, ob = weight.shape
    rco = te.reduce_axis((0, spans), name="rco")
    rh = te.reduce_axis((0, shape.kh), name="rh")
    rw = te.reduce_axis((0, shape.kw), name="rw")
    rci = te.reduce_axis((0, cb), name="rci")
    (sh, sw), (dh, dw) = shape.strides, shape.dilation

    def body(n, o, y, x, oi):
        block = rco if first is None else first(o) + rco
        return te.sum(
            product(
                packed[n, block, y * sh + rh * dh, x * sw + rw * dw, rci],
                weight[o, rco, rh, rw, rci, oi],
            ),
            axis=[rco, rh, rw, rci],
        )

    return te.compute(
        (shape.n, blocks, shape.oh, shape.ow, ob), body, name=f"{name}.conv"
    )


def nchwc_schedule(
    shape: Conv2dShape,
    blocks: int,
    ob: int,
    cb: int,
    packed: te.Tensor,
    conv: te.Tensor,
    output: te.Tensor,
    target: Target,
    also: Callable[[Schedule], None] | None = None,
    inline_pack: bool = False,
) -> tuple[dict, Knobs]:
    """The NCHWc kernel's default schedule and its knobs, for `conv` (N,
    blocks, OH, OW, ob) over `packed` data whose last axis is `cb` long,
    written out by `output`: the register tile (`_tile`), whether the copy
    out unrolls, whether the reduction sweeps; `also` schedules other stages
    of the kernel's. With `inline_pack` (blocked words of bfloat16 or
    uint8 data whose halves or bytes lie side by side, and no border to
    pad) the convolution reads each word where it lies, in the pack's
    place: LLVM combines the narrow loads into one, and the pass over the
    data is gone (Zen 5: MobileNetV2 in bfloat16 1.15 -> 1.03 ms, int8 0.79
    -> 0.76)."""
    ot, yt, xt = _tile(shape, blocks, target)
    default = {
        "tile": (ot, yt, xt),
        "unroll": _unroll_copy_out(shape, (ob * ot, yt, xt)),
        "sweep": _sweeps(shape, ot * ob, target),
    }

    def schedule(s, config: dict) -> None:
        if inline_pack:
            s[packed].compute_inline()
        else:
            _schedule_pack(s, packed, cb)
        ot, yt, xt = config["tile"]
        tile = (ob * ot, yt, xt)
        sweep = config["sweep"] and _sweep_fits(shape, ob * ot, target)
        _schedule_tile(s, conv, output, tile, config["unroll"], sweep)
        if also is not None:
            also(s)

    knobs = Knobs(
        {
            "tile": _tile_space(shape, blocks, target, default["tile"]),
            "unroll": (False, True),
            "sweep": (False, True) if _sweep_fits(shape, ob, target) else (False,),
        },
        default,
        schedule,
    )
    return default, knobs


def _depthwise(
    data: te.Tensor,
    shape: Conv2dShape,
    bias: bool,
    epilogue: Epilogue | None,
    name: str,
    target: Target,
    layout: Blocks,
) -> Kernel:
    lanes = target.vector_lanes(data.dtype)
    # blocked on either side: the one block throughout (a tile of the result
    # never straddles two of the convolution's)
    blocked = layout.data or layout.out
    cb = channel_block(shape.c, target) if blocked else _largest_divisor(shape.c, lanes)
    blocks = shape.c // cb
    packed = _packed_data(data, shape, cb, layout.data, name)
    weight = te.placeholder((blocks, shape.kh, shape.kw, cb), name=f"{name}.weight")
    rh = te.reduce_axis((0, shape.kh), name="rh")
    rw = te.reduce_axis((0, shape.kw), name="rw")
    (sh, sw), (dh, dw) = shape.strides, shape.dilation
    conv = te.compute(
        (shape.n, blocks, shape.oh, shape.ow, cb),
        lambda n, c, y, x, ci: te.sum(
            packed[n, c, y * sh + rh * dh, x * sw + rw * dw, ci]
            * weight[c, rh, rw, ci],
            axis=[rh, rw],
        ),
        name=f"{name}.conv",
    )
    b = te.placeholder((shape.o,), name=f"{name}.bias") if bias else None
    output = _output(_unblocked(conv, cb), b, epilogue, shape, layout.out, name)
    _, yt, xt = _tile(shape, 1, target)
    padding = not isinstance(packed.op, te.PlaceholderOp)
    default = {
        "tile": (1, yt, xt),
        "unroll": _unroll_copy_out(shape, (cb, yt, xt)),
        "pad_at_rows": padding,
    }

    def schedule(s, config: dict) -> None:
        _, yt, xt = config["tile"]
        rows = _task_rows(shape, yt) if config["pad_at_rows"] else None
        task = _schedule_tile(
            s, conv, output, (cb, yt, xt), config["unroll"], rows=rows
        )
        if rows is None:
            _schedule_pack(s, packed, cb)
        else:  # each task pads the rows it reads, for its channel block
            s[packed].compute_at(s[output], task)
            s[packed].vectorize(s[packed].op.axis[-1])

    knobs = Knobs(
        {
            "tile": _tile_space(shape, 1, target, default["tile"]),
            "unroll": (False, True),
            "pad_at_rows": (False, True) if padding else (False,),
        },
        default,
        schedule,
    )

    def pack_weight(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, np.float32).reshape(blocks, cb, shape.kh, shape.kw)
        return np.ascontiguousarray(w.transpose(0, 2, 3, 1))

    placeholders = [data, weight] + ([b] if b is not None else [])
    return Kernel(
        output,
        placeholders,
        {weight.name: pack_weight},
        lambda s: schedule(s, default),
        {"kernel": "depthwise", "cb": cb, "tile": (yt, xt)},
        knobs,
    )


def _group_span(shape: Conv2dShape, ob: int) -> int:
    """The input channels a block of `ob` output channels of a grouped
    convolution reads, where the block and the groups align (0 where they do
    not): whole groups, ob / (O/G) of them, or a part of one group. Groups
    of one output channel are left to the direct kernel: the block would
    multiply ob times the definition, the vector's whole gain."""
    out_group, in_group = shape.o // shape.groups, shape.c // shape.groups
    if out_group == 1:
        return 0
    if ob % out_group == 0:
        return ob // out_group * in_group
    if out_group % ob == 0:
        return in_group
    return 0


def _grouped(
    data: te.Tensor,
    shape: Conv2dShape,
    bias: bool,
    epilogue: Epilogue | None,
    name: str,
    target: Target,
    layout: Blocks,
) -> Kernel:
    """A grouped convolution as the NCHWc kernel over each output block's own
    input channels: a vector of `ob` output channels covers whole groups (or
    lies in one), so it reads one span of input channels (`_group_span`),
    broadcast as in the NCHWc kernel, against weights zero outside each
    lane's group. Where groups are narrower than a vector (RegNetY's 8
    channels in 16 lanes) that multiplies ob / (O/G) times more than the
    definition, at the NCHWc kernel's rate: the direct kernel, which
    vectorizes nothing, is slower still. Blocked data is packed as it lies
    (whole vectors where its block is the span's); the output is written NCHW
    or blocked (`layout`)."""
    ob = target.vector_lanes(data.dtype)
    span = _group_span(shape, ob)
    out_group, in_group = shape.o // shape.groups, shape.c // shape.groups
    cb = _largest_divisor(span, ob)
    op = -(-shape.o // ob) * ob
    blocks = op // ob
    # the span of block o starts at channel first(o): a multiple of cb
    whole = ob % out_group == 0

    def first(o):
        return o * span if whole else o * ob // out_group * in_group

    channels = max(shape.c, blocks * span) if whole else shape.c
    packed = _grouped_pack(data, shape, cb, channels, name)
    weight = te.placeholder(
        (blocks, span // cb, shape.kh, shape.kw, cb, ob), name=f"{name}.weight"
    )
    conv = blocked_conv(packed, weight, shape, name, first=lambda o: first(o) // cb)
    b = te.placeholder((shape.o,), name=f"{name}.bias") if bias else None
    output = _output(_unblocked(conv, ob), b, epilogue, shape, layout.out, name)
    default, knobs = nchwc_schedule(shape, blocks, ob, cb, packed, conv, output, target)

    def pack_weight(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, np.float32)
        full = np.zeros((op, span, shape.kh, shape.kw), np.float32)
        for oc in range(shape.o):
            at = (oc % ob) // out_group * in_group if whole else 0
            full[oc, at : at + in_group] = w[oc]
        blocked = full.reshape(blocks, ob, span // cb, cb, shape.kh, shape.kw)
        return np.ascontiguousarray(blocked.transpose(0, 2, 4, 5, 3, 1))

    return Kernel(
        output,
        [data, weight] + ([b] if b is not None else []),
        {weight.name: pack_weight},
        lambda s: knobs.apply(s, default),
        {"kernel": "grouped", "cb": cb, "ob": ob, "tile": default["tile"]},
        knobs,
    )


def _grouped_pack(
    data: te.Tensor, shape: Conv2dShape, cb: int, channels: int, name: str
) -> te.Tensor:
    """(N, channels/cb, H', W', cb): `data` (NCHW, or blocked: a copy of
    whole vectors where its block is cb) zero-padded as the convolution
    reads it, channels past C zero (a last block's span)."""
    pt, pl, _, _ = shape.padding
    hp, wp = shape.window

    def body(n, co, y, x, ci):
        c = co * cb + ci
        conds = inside_border(shape, (hp, wp), y, x)
        if channels != shape.c:
            conds.append(c < shape.c)
            c = te.min(c, shape.c - 1)
        if data.ndim == 5:
            b = data.shape[-1]
            value = data[n, c // b, y - pt, x - pl, c % b]
        else:
            value = data[n, c, y - pt, x - pl]
        return te.if_then_else(te.all(*conds), value, 0.0) if conds else value

    return te.compute(
        (shape.n, channels // cb, hp, wp, cb), body, name=f"{name}.data_pack"
    )


def _unblocked(conv: te.Tensor, ob: int):
    """The NCHWc result (blocks of `ob`) read at NCHW indices."""
    return lambda n, c, y, x: conv[n, c // ob, y, x, c % ob]


def _output(
    conv_value,
    b: te.Tensor | None,
    epilogue: Epilogue | None,
    shape: Conv2dShape,
    block: int | None,
    name: str,
) -> te.Tensor:
    """The final stage of `conv_value(n, c, y, x)`, the convolution at NCHW
    indices, with the bias and the epilogue: written NCHW, or blocked by
    `block`."""

    def value(n, c, y, x):
        v = conv_value(n, c, y, x)
        if b is not None:
            v = v + b[c]
        return apply_epilogue(epilogue, v, (n, c, y, x))

    if block is None:
        return te.compute(shape.out_shape, value, name=name)
    return te.compute(
        (shape.n, shape.o // block, shape.oh, shape.ow, block),
        lambda n, co, y, x, ci: value(n, co * block + ci, y, x),
        name=name,
    )


def _schedule_pack(s, packed: te.Tensor, cb: int) -> None:
    if isinstance(packed.op, te.PlaceholderOp):
        return  # blocked data read as it is
    n, co, y, x, ci = s[packed].op.axis
    s[packed].parallel(s[packed].fuse(n, co, y))
    if cb > 1:
        s[packed].vectorize(ci)


def _macs(shape: Conv2dShape) -> int:
    """Multiply-adds of one output element."""
    return shape.c // shape.groups * shape.kh * shape.kw


def _unroll_copy_out(shape: Conv2dShape, tile: tuple[int, int, int]) -> bool:
    """Whether the final stage unrolls its tile (the accumulators stay in
    registers; measured up to 1.5x faster on memory-bound layers, those whose
    outputs take fewer than 128 multiply-adds) or loops over it (the tile goes
    through the stack: a third of the build time)."""
    return _macs(shape) < 128 and tile[0] * tile[1] * tile[2] <= 256


SWEEP_WEIGHTS_L2 = 1
"""A layer sweeps (see `_schedule_tile`) when its weights exceed this many L2s:
they come from memory once a run, not from a cache."""


def _sweep_fits(shape: Conv2dShape, channels: int, target: Target) -> bool:
    """Whether a sweep's accumulators for `channels` output channels (every
    output position of them) fit in half of L1, where they stay between the
    reduction's chunks."""
    return channels * shape.oh * shape.ow * 4 <= target.l1d_bytes // 2


def _sweeps(shape: Conv2dShape, channels: int, target: Target) -> bool:
    """Whether the default schedule sweeps: the weights are too large for L2
    (read from memory every run: ResNet-18's last stages) and the
    accumulators fit (`_sweep_fits`)."""
    weights = shape.o * (shape.c // shape.groups) * shape.kh * shape.kw * 4
    return weights > SWEEP_WEIGHTS_L2 * target.l2_bytes and _sweep_fits(
        shape, channels, target
    )


TASK_ROWS = 8
"""Output rows a depthwise task takes at most where it pads its own input
rows (`_task_rows`)."""


def _task_rows(shape: Conv2dShape, yt: int) -> int:
    """Row tiles of a depthwise task that pads the input rows it reads: the
    most whose rows stay within `TASK_ROWS` and divide the output's (no
    tail), so the padded copy is a few rows of one channel block, in L1, not
    a pass over memory that the convolution reads back, and no parallel
    loop of its own."""
    tiles = shape.oh // yt
    return max(
        d
        for d in range(1, tiles + 1)
        if tiles % d == 0 and d * yt <= max(TASK_ROWS, yt)
    )


def _schedule_tile(
    s,
    conv: te.Tensor,
    output: te.Tensor,
    tile,
    unroll: bool,
    sweep: bool = False,
    rows: int | None = None,
):
    """Tile the NCHW output by (channels, rows, columns), parallel over the outer
    tiles; compute the NCHWc register tile of `conv` at each tile (reduction
    outside, tile unrolled, channel block vectorized), then write it out with the
    channels vectorized (lanes scattered to NCHW) and the bias and epilogue
    applied: the output is written once, by this stage. (Unrolling the input
    channel block too was slower on Zen 5: 64->64 @56, 1.22 against 0.94 ms
    on a loaded machine.) With `rows`, a parallel task takes that many row
    tiles. Returns the parallel loop."""
    ct, yt, xt = tile
    if output.ndim == 5:  # blocked: whole channel blocks, stored contiguously
        n, cbk, y, x, ci = s[output].op.axis
        co, cbi = s[output].split(cbk, factor=max(1, ct // output.shape[-1]))
        yo, yi = s[output].split(y, factor=yt)
        xo, xi = s[output].split(x, factor=xt)
        s[output].reorder(n, co, yo, xo, cbi, yi, xi, ci)
        inner = [cbi, yi, xi]
    else:
        n, c, y, x = s[output].op.axis
        co, ci = s[output].split(c, factor=ct)
        yo, yi = s[output].split(y, factor=yt)
        xo, xi = s[output].split(x, factor=xt)
        s[output].reorder(n, co, yo, xo, yi, xi, ci)
        inner = [yi, xi]
    if unroll:
        for axis in inner:
            s[output].unroll(axis)
    s[output].vectorize(ci)
    *data_axes, lanes = s[conv].op.axis
    if not sweep:
        task = yo
        if rows is not None:
            task, _ = s[output].split(yo, factor=rows)
        par = s[output].fuse(n, co, task)
        s[output].parallel(par)
        s[conv].compute_at(s[output], xo)
        s[conv].reorder(*data_axes[:1], *s[conv].op.reduce_axis, *data_axes[1:], lanes)
        for axis in data_axes[1:]:
            s[conv].unroll(axis)
        s[conv].vectorize(lanes)
        return par
    # the sweep: per channel tile, each chunk of the reduction (one input
    # channel block: its weights stay in L1) runs over every output tile
    nco = s[output].fuse(n, co)
    s[output].parallel(nco)
    s[conv].compute_at(s[output], nco)
    cn, cc, cy, cx = data_axes
    cyo, cyi = s[conv].split(cy, factor=yt)
    cxo, cxi = s[conv].split(cx, factor=xt)
    rco, *rest = s[conv].op.reduce_axis
    s[conv].reorder(cn, rco, cyo, cxo, *rest, cc, cyi, cxi, lanes)
    for axis in (cc, cyi, cxi):
        s[conv].unroll(axis)
    s[conv].vectorize(lanes)
    return nco


def _direct(
    data: te.Tensor,
    shape: Conv2dShape,
    bias: bool,
    epilogue: Epilogue | None,
    name: str,
    target: Target,
    layout: Blocks,
) -> Kernel:
    """The definition over a zero-padded copy of the input, any groups (no
    target fact enters: parallel over channels, nothing vectorized)."""
    pt, pl, _, _ = shape.padding
    hp, wp = shape.window
    h, w = shape.h, shape.w
    padded = te.compute(
        (shape.n, shape.c, hp, wp),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= pt, y < h + pt, x >= pl, x < w + pl),
            data[n, c, y - pt, x - pl],
            0.0,
        ),
        name=f"{name}.pad",
    )
    ig, og = shape.c // shape.groups, shape.o // shape.groups
    weight = te.placeholder((shape.o, ig, shape.kh, shape.kw), name=f"{name}.weight")
    b = te.placeholder((shape.o,), name=f"{name}.bias") if bias else None
    rc = te.reduce_axis((0, ig), name="rc")
    rh = te.reduce_axis((0, shape.kh), name="rh")
    rw = te.reduce_axis((0, shape.kw), name="rw")
    (sh, sw), (dh, dw) = shape.strides, shape.dilation
    conv = te.compute(
        shape.out_shape,
        lambda n, o, y, x: te.sum(
            padded[n, o // og * ig + rc, y * sh + rh * dh, x * sw + rw * dw]
            * weight[o, rc, rh, rw],
            axis=[rc, rh, rw],
        ),
        name=f"{name}.conv",
    )

    def out(n, c, y, x):
        v = conv[n, c, y, x]
        if b is not None:
            v = v + b[c]
        return apply_epilogue(epilogue, v, (n, c, y, x))

    output = te.compute(shape.out_shape, out, name=name)

    def schedule(s) -> None:
        n, c, y, x = s[padded].op.axis
        s[padded].parallel(s[padded].fuse(n, c))
        n, o, y, x = s[conv].op.axis
        s[conv].parallel(s[conv].fuse(n, o))
        n, c, y, x = s[output].op.axis
        s[output].parallel(s[output].fuse(n, c))

    placeholders = [data, weight] + ([b] if b is not None else [])
    return Kernel(output, placeholders, {}, schedule, {"kernel": "direct"})
