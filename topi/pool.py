"""Pooling over NCHW or channel blocks: max and average pooling with
asymmetric padding, ceil mode, dilation and count_include_pad (average), and
global average pooling. Each builder returns a `Kernel` taking `x` (and the
epilogue's inputs) and writing the pooled tensor; `data_block` and
`out_block` read and write blocked activations, (N, C/b, H, W, b), as the
NCHWc convolutions around a pooling do (`strategy.plan_blocks`).

    x = te.placeholder((1, 64, 112, 112), name="x")
    k = max_pool2d(x, kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    mod = ember.build(k.schedule(), k.args, name="pool")

Padding never materializes: a window element outside the input is -inf for
max (so NaN inputs still propagate, as numpy's max does) and is skipped by
average pooling's sum; the divisor follows ONNX and PyTorch: with
count_include_pad it counts the window clipped to the padded input (the part a
ceil_mode window hangs past the padding is not counted), without it only the
elements inside the input.

Over blocked data each tap of a window is a vector of the block's channels,
read directly (kh * kw vector loads an output vector). Over NCHW, pooling is
separable: a column pass combines the kh window rows for each
input column (contiguous vector loads), a window pass combines kw of those
column results at every column position (contiguous reads from L1), and the
output takes every sw-th window (one strided read per output, where the
direct form makes kh * kw of them: 3x3/2 max pooling of 1x64x112x112 went
from 293 us to 120 us on one core, onnxruntime's 119 us). Schedule: output rows (n, c, oh) fused, in parallel when
large; each row runs both passes with the reduction loops outside the
vectorized innermost axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ember import te
from ember.runtime.errors import EmberValueError
from ember.te import Expr
from ember.te.expr import int_range
from ember.te.schedule import Schedule
from ember.topi.conv2d import logical_shape
from ember.topi.elementwise import (
    MAX_REDUCER,
    PARALLEL_MIN_WORK,
    compute_of,
    inline_injective,
    unique_stage_names,
)
from ember.topi.kernel import Epilogue, Kernel, apply_epilogue, epilogue_inputs
from ember.topi.reduce import inverse_count


def pool_output_size(
    size: int,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> int:
    """Output extent of one pooled axis, ONNX/PyTorch rules: with ceil_mode the
    last window must still start inside the input or the begin padding."""
    span = dilation * (kernel - 1) + 1
    room = size + pad_begin + pad_end - span
    if room < 0:
        raise EmberValueError(
            f"pool: a window of {span} does not fit {size} with padding "
            f"({pad_begin}, {pad_end})"
        )
    out = (-(-room // stride) if ceil_mode else room // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def _pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or any(not isinstance(v, int) or v <= 0 for v in pair):
        raise EmberValueError(f"pool: expected two positive {what}, got {value!r}")
    return pair  # type: ignore[return-value]


def _check_input(x: te.Tensor, what: str) -> None:
    if x.ndim != 4:
        raise EmberValueError(f"{what}: expected NCHW input, got shape {x.shape}")


def _window_count(
    o: Expr, stride: int, begin: int, kernel: int, low: int, high: int
) -> Expr:
    """How many positions of the window at output `o` lie in [low, high)."""
    start = o * stride - begin
    end = start + kernel
    start = te.select(start < low, low, start)
    end = te.select(end > high, high, end)
    return end - start


def _tap_counts(
    extent: int,
    stride: int,
    begin: int,
    kernel: int,
    dilation: int,
    low: int,
    high: int,
    name: str,
) -> te.Tensor:
    """For each output position, how many taps of its dilated window lie in
    [low, high)."""
    t = te.reduce_axis((0, kernel), "t")

    def count(o: Expr) -> Expr:
        at = o * stride - begin + t * dilation
        return te.sum(te.if_then_else(te.all(at >= low, at < high), 1, 0), axis=t)

    return te.compute((extent,), count, name=name)


def _pool(
    x: te.Tensor,
    kind: str,
    kernel: int | Sequence[int],
    strides: int | Sequence[int],
    padding: Sequence[int],
    dilation: int | Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
    epilogue: Epilogue | None,
    epilogue_tensors: Sequence[te.Tensor] | None,
    name: str,
    data_block: int | None = None,
    out_block: int | None = None,
) -> Kernel:
    n, c, h, w = _logical(x, data_block, f"{kind}_pool2d")
    (kh, kw), (sh, sw) = _pair(kernel, "kernel sizes"), _pair(strides, "strides")
    (dh, dw) = _pair(dilation, "dilations")
    if len(padding) != 4 or any(p < 0 for p in padding):
        raise EmberValueError(
            f"{kind}_pool2d: expected padding [top, left, bottom, right] >= 0, "
            f"got {list(padding)}"
        )
    top, left, bottom, right = padding
    oh = pool_output_size(h, kh, sh, top, bottom, dh, ceil_mode)
    ow = pool_output_size(w, kw, sw, left, right, dw, ceil_mode)
    combine, fill = (MAX_REDUCER, -math.inf) if kind == "max" else (te.sum, 0.0)
    if kind == "max" and x.dtype in te.INT_DTYPES:
        combine, fill = te.max, int_range(x.dtype)[0]  # no NaN to carry
    rh, rw = te.reduce_axis((0, kh), "rh"), te.reduce_axis((0, kw), "rw")

    # `span` columns from -left cover every window
    span = (ow - 1) * sw + (kw - 1) * dw + 1

    def inside(ih: Expr, iw: Expr) -> list[Expr]:
        """The bounds checks a read at (ih, iw) needs: only where a window
        reaches past the input."""
        checks = []
        if top:
            checks.append(ih >= 0)
        if (oh - 1) * sh + (kh - 1) * dh - top >= h:
            checks.append(ih < h)
        if left:
            checks.append(iw >= 0)
        if span - left > w:
            checks.append(iw < w)
        return checks

    def padded(read: Expr, checks: list[Expr]) -> Expr:
        return te.if_then_else(te.all(*checks), read, fill) if checks else read

    if data_block is not None:
        # Blocked data: each tap is a vector of the block's channels, so the
        # window is read directly (kh * kw vector loads an output vector).
        block = data_block

        def tap(b: Expr, cb: Expr, i: Expr, j: Expr, ci: Expr) -> Expr:
            ih, iw = i * sh + rh * dh - top, j * sw + rw * dw - left
            value = padded(x[b, cb, ih, iw, ci], inside(ih, iw))
            return combine(value, axis=[rh, rw])

        pooled = te.compute((n, c // block, oh, ow, block), tap, name=f"{name}.windows")

        def windows_at(b: Expr, d: Expr, i: Expr, j: Expr) -> Expr:
            return pooled[b, d // block, i, j, d % block]

    else:
        # NCHW: pooling is separable. First each column of the window rows
        # (contiguous along the input row, so vector loads), then each window
        # along that row of column results, which lives in L1. Column p is
        # input column p - left, `fill` outside the input.

        def column(b: Expr, d: Expr, i: Expr, p: Expr) -> Expr:
            ih, iw = i * sh + rh * dh - top, p - left
            return combine(padded(x[b, d, ih, iw], inside(ih, iw)), axis=rh)

        columns = te.compute((n, c, oh, span), column, name=f"{name}.columns")
        # The window pass at every column position (stride 1: contiguous
        # vector reads), then every sw-th of them: one strided read per output
        # instead of kw.
        positions = (ow - 1) * sw + 1
        windows = te.compute(
            (n, c, oh, positions),
            lambda b, d, i, p: combine(columns[b, d, i, p + rw * dw], axis=rw),
            name=f"{name}.windows",
        )

        def windows_at(b: Expr, d: Expr, i: Expr, j: Expr) -> Expr:
            return windows[b, d, i, j * sw]

    counts_h: te.Tensor | None = None
    counts_w: te.Tensor | None = None
    if kind == "avg" and (dh, dw) != (1, 1):
        # A dilated window's taps in range, counted tap by tap.
        counts_h = _tap_counts(
            oh,
            sh,
            top,
            kh,
            dh,
            -top if count_include_pad else 0,
            h + bottom if count_include_pad else h,
            f"{name}.rows",
        )
        counts_w = _tap_counts(
            ow,
            sw,
            left,
            kw,
            dw,
            -left if count_include_pad else 0,
            w + right if count_include_pad else w,
            f"{name}.cols",
        )

    def finish(b: Expr, d: Expr, i: Expr, j: Expr) -> Expr:
        value = windows_at(b, d, i, j)
        if kind == "avg":
            # The padded input spans [-top, h + bottom); the input [0, h).
            lo_h, hi_h = (-top, h + bottom) if count_include_pad else (0, h)
            lo_w, hi_w = (-left, w + right) if count_include_pad else (0, w)
            if counts_h is None or counts_w is None:
                rows = _window_count(i, sh, top, kh, lo_h, hi_h)
                cols = _window_count(j, sw, left, kw, lo_w, hi_w)
            else:
                rows = counts_h[i]
                cols = counts_w[j]
            value = value / (rows * cols).astype("float32")
        return apply_epilogue(epilogue, value, (b, d, i, j))

    shape = (n, c, oh, ow)
    out = _written(shape, finish, out_block, name)
    unique_stage_names(out)
    return Kernel(
        out,
        [x, *epilogue_inputs(epilogue_tensors)],
        schedule_fn=lambda s: schedule_pool(s, out, kh * kw),
        attrs={"pattern": "pool", "kind": kind, "output": shape},
    )


def _logical(x: te.Tensor, block: int | None, what: str) -> tuple:
    """The NCHW shape of `x`: itself (checked 4-D), or, blocked by `block`,
    its channels joined (`conv2d.logical_shape`)."""
    if block is None:
        _check_input(x, what)
    return tuple(logical_shape(x, block, what))


def _written(shape: tuple, value, block: int | None, name: str) -> te.Tensor:
    """The output stage of `value(n, c, i, j)` at NCHW indices: NCHW, or
    blocked by `block`, (N, C/b, OH, OW, b)."""
    if block is None:
        return te.compute(shape, value, name=name)
    n, c, oh, ow = shape
    if c % block:
        raise EmberValueError(f"{name}: {c} channels are not blocks of {block}")
    return te.compute(
        (n, c // block, oh, ow, block),
        lambda b, co, i, j, ci: value(b, co * block + ci, i, j),
        name=name,
    )


def schedule_pool(s: Schedule, out: te.Tensor, window: int) -> None:
    """Rows of the output (n, c, oh; blocked: n, c/b, oh) fused, in parallel
    when large; in each row the column pass and the window pass run
    (reduction loops outside the vectorized innermost axis), then whatever
    follows them. Windows over blocked data that an NCHW output reads a lane
    at a time are computed whole first, by rows of blocks."""
    inline_injective(s)
    stage = s[out]
    axes = compute_of(stage).axis
    row = stage.fuse(*axes[:3])
    if math.prod(out.shape) * (window + 2) >= PARALLEL_MIN_WORK:
        stage.parallel(row)
    for t in _reductions_feeding(out):
        inner = s[t]
        if t is not out and len(t.shape) > len(out.shape):
            _parallel_rows(inner, t, window)  # blocked windows, NCHW output
        elif t is not out:
            inner.compute_at(stage, row)
        inner.reorder(*compute_of(inner).reduce_axis, compute_of(inner).axis[-1])
    for t in _reductions_feeding(out):
        s[t].vectorize(compute_of(s[t]).axis[-1])
    if not compute_of(out).reduce_axis:
        stage.vectorize(axes[-1])


def _parallel_rows(stage, t: te.Tensor, window: int) -> None:
    """`t` at the root, its first three axes fused, in parallel when large."""
    rows = stage.fuse(*compute_of(stage).axis[:3])
    if math.prod(t.shape) * (window + 2) >= PARALLEL_MIN_WORK:
        stage.parallel(rows)


def _reductions_feeding(out: te.Tensor) -> list[te.Tensor]:
    """`out` and the stages before it that reduce, producers first."""
    found: list[te.Tensor] = []

    def visit(t: te.Tensor) -> None:
        if not isinstance(t.op, te.ComputeOp) or any(t is f for f in found):
            return
        for u in compute_of(t).input_tensors:
            visit(u)
        if compute_of(t).reduce_axis:
            found.append(t)

    visit(out)
    return found


def max_pool2d(
    x: te.Tensor,
    kernel: int | Sequence[int],
    strides: int | Sequence[int] = 1,
    padding: Sequence[int] = (0, 0, 0, 0),
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] | None = None,
    name: str = "max_pool2d",
    data_block: int | None = None,
    out_block: int | None = None,
) -> Kernel:
    """graph.max_pool2d: the largest element of each window; padding is -inf
    (an integer type's lowest value).

    Args:
        x: NCHW input, or channel-blocked (N, C/b, H, W, b) by `data_block`.
        kernel, strides, dilation: per axis (h, w), or one int for both.
        padding: [top, left, bottom, right].
        ceil_mode: round the output size up (windows may overhang the padding).
        epilogue: applied to each pooled value with its (n, c, oh, ow) indices.
        epilogue_tensors: tensors the epilogue reads (kernel inputs after x).
        data_block, out_block: the channel blocks of a blocked input and
            output (None: NCHW).
    """
    return _pool(
        x, "max", kernel, strides, padding, dilation, ceil_mode, False,
        epilogue, epilogue_tensors, name, data_block, out_block,
    )  # fmt: skip


def avg_pool2d(
    x: te.Tensor,
    kernel: int | Sequence[int],
    strides: int | Sequence[int] = 1,
    padding: Sequence[int] = (0, 0, 0, 0),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    dilation: int | Sequence[int] = 1,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] | None = None,
    name: str = "avg_pool2d",
    data_block: int | None = None,
    out_block: int | None = None,
) -> Kernel:
    """graph.avg_pool2d: the mean of each window (see the module docstring for
    the divisor); arguments as `max_pool2d`'s."""
    return _pool(
        x, "avg", kernel, strides, padding, dilation, ceil_mode, count_include_pad,
        epilogue, epilogue_tensors, name, data_block, out_block,
    )  # fmt: skip


def global_avg_pool2d(
    x: te.Tensor,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] | None = None,
    name: str = "global_avg_pool2d",
    data_block: int | None = None,
    out_block: int | None = None,
) -> Kernel:
    """graph.global_avg_pool2d: the mean over H and W, shape (N, C, 1, 1), or
    blocked by `out_block`; `x` NCHW, or blocked by `data_block`.

    NCHW data, two stages: column sums over H for each channel (vectorized
    over W), then the sum of the W column sums times 1 / (H W). Blocked data:
    one stage summing the block's channels as vectors over H and W.
    """
    n, c, h, w = _logical(x, data_block, "global_avg_pool2d")
    rh, rw = te.reduce_axis((0, h), "rh"), te.reduce_axis((0, w), "rw")
    cols: te.Tensor | None = None
    if data_block is None:
        cols = te.compute(
            (n, c, w),
            lambda b, d, j: te.sum(x[b, d, rh, j], axis=rh),
            name=f"{name}.cols",
        )
        total = te.compute(
            (n, c), lambda b, d: te.sum(cols[b, d, rw], axis=rw), name=f"{name}.sum"
        )

        def total_at(b: Expr, d: Expr) -> Expr:
            return total[b, d]

    else:
        block = data_block
        total = te.compute(
            (n, c // block, block),
            lambda b, cb, ci: te.sum(x[b, cb, rh, rw, ci], axis=[rh, rw]),
            name=f"{name}.sum",
        )

        def total_at(b: Expr, d: Expr) -> Expr:
            return total[b, d // block, d % block]

    scale = inverse_count(h * w)
    out = _written(
        (n, c, 1, 1),
        lambda b, d, i, j: apply_epilogue(
            epilogue, total_at(b, d) * scale, (b, d, i, j)
        ),
        out_block,
        name,
    )
    unique_stage_names(out)
    large = n * c * h * w * 3 >= PARALLEL_MIN_WORK

    def schedule(s: Schedule) -> None:
        inline_injective(s)
        stage = s[out]
        axes = compute_of(stage).axis
        if cols is None:  # blocked data: vectors of the block's sums
            blocks = compute_of(s[total]).axis
            rows = s[total].fuse(*blocks[:2])
            if large:
                s[total].parallel(rows)
            s[total].reorder(*compute_of(s[total]).reduce_axis, blocks[-1])
            s[total].vectorize(blocks[-1])
            if len(axes) == 5:
                stage.vectorize(axes[-1])
            return
        channel = stage.fuse(axes[0], axes[1])
        if large:
            stage.parallel(channel)
        s[total].compute_at(stage, channel)
        s[cols].compute_at(stage, channel)
        col_rh = compute_of(s[cols]).reduce_axis[0]
        col = compute_of(s[cols]).axis[2]
        s[cols].reorder(col_rh, col)
        s[cols].vectorize(col)

    return Kernel(
        out,
        [x, *epilogue_inputs(epilogue_tensors)],
        schedule_fn=schedule,
        attrs={"pattern": "pool", "kind": "global_avg"},
    )
