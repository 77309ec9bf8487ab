"""Pooling over NCHW: max and average pooling with asymmetric padding, ceil
mode, dilation and count_include_pad (average), and global average
pooling. Each builder returns a `Kernel` taking `x` (and the epilogue's
inputs) and writing the pooled tensor.

    x = te.placeholder((1, 64, 112, 112), name="x")
    k = max_pool2d(x, kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    mod = ember.build(k.schedule(), k.args, name="pool")

Padding never materializes: a window element outside the input is -inf for
max (so NaN inputs still propagate, as numpy's max does) and is skipped by
average pooling's sum; the divisor follows ONNX and PyTorch: with
count_include_pad it counts the window clipped to the padded input (the part a
ceil_mode window hangs past the padding is not counted), without it only the
elements inside the input.

Pooling is separable: a column pass combines the kh window rows for each
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
) -> Kernel:
    _check_input(x, f"{kind}_pool2d")
    (kh, kw), (sh, sw) = _pair(kernel, "kernel sizes"), _pair(strides, "strides")
    (dh, dw) = _pair(dilation, "dilations")
    if len(padding) != 4 or any(p < 0 for p in padding):
        raise EmberValueError(
            f"{kind}_pool2d: expected padding [top, left, bottom, right] >= 0, "
            f"got {list(padding)}"
        )
    top, left, bottom, right = padding
    n, c, h, w = x.shape
    oh = pool_output_size(h, kh, sh, top, bottom, dh, ceil_mode)
    ow = pool_output_size(w, kw, sw, left, right, dw, ceil_mode)
    combine, fill = (MAX_REDUCER, -math.inf) if kind == "max" else (te.sum, 0.0)
    if kind == "max" and x.dtype in te.INT_DTYPES:
        combine, fill = te.max, int_range(x.dtype)[0]  # no NaN to carry
    # Pooling is separable: first each column of the window rows (contiguous
    # along the input row, so vector loads), then each window along that
    # row of column results, which lives in L1. `span` columns cover every
    # window; column p is input column p - left, `fill` outside the input.
    span = (ow - 1) * sw + (kw - 1) * dw + 1
    rh, rw = te.reduce_axis((0, kh), "rh"), te.reduce_axis((0, kw), "rw")

    def column(b: Expr, d: Expr, i: Expr, p: Expr) -> Expr:
        ih, iw = i * sh + rh * dh - top, p - left
        inside = []
        if top:
            inside.append(ih >= 0)
        if (oh - 1) * sh + (kh - 1) * dh - top >= h:
            inside.append(ih < h)
        if left:
            inside.append(iw >= 0)
        if span - left > w:
            inside.append(iw < w)
        read = x[b, d, ih, iw]
        value = te.if_then_else(te.all(*inside), read, fill) if inside else read
        return combine(value, axis=rh)

    columns = te.compute((n, c, oh, span), column, name=f"{name}.columns")
    shape = (n, c, oh, ow)
    # The window pass at every column position (stride 1: contiguous vector
    # reads), then every sw-th of them: one strided read per output instead
    # of kw.
    positions = (ow - 1) * sw + 1
    windows = te.compute(
        (n, c, oh, positions),
        lambda b, d, i, p: combine(columns[b, d, i, p + rw * dw], axis=rw),
        name=f"{name}.windows",
    )

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
        value = windows[b, d, i, j * sw]
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

    out = te.compute(shape, finish, name=name)
    unique_stage_names(out)
    return Kernel(
        out,
        [x, *epilogue_inputs(epilogue_tensors)],
        schedule_fn=lambda s: schedule_pool(s, out, kh * kw),
        attrs={"pattern": "pool", "kind": kind, "output": shape},
    )


def schedule_pool(s: Schedule, out: te.Tensor, window: int) -> None:
    """Rows of the output (n, c, oh) fused, in parallel when large; in each
    row the column pass and the window pass run (reduction loops outside the
    vectorized innermost axis), then whatever follows them."""
    inline_injective(s)
    n, c, oh, ow = out.shape
    stage = s[out]
    b, d, i, j = compute_of(stage).axis
    row = stage.fuse(b, d, i)
    if n * c * oh * ow * (window + 2) >= PARALLEL_MIN_WORK:
        stage.parallel(row)
    for t in _reductions_feeding(out):
        inner = s[t]
        if t is not out:
            inner.compute_at(stage, row)
        inner.reorder(*compute_of(inner).reduce_axis, compute_of(inner).axis[-1])
    for t in _reductions_feeding(out):
        s[t].vectorize(compute_of(s[t]).axis[-1])
    if not compute_of(out).reduce_axis:
        stage.vectorize(j)


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
) -> Kernel:
    """graph.max_pool2d: the largest element of each window; padding is -inf
    (an integer type's lowest value).

    Args:
        x: NCHW input.
        kernel, strides, dilation: per axis (h, w), or one int for both.
        padding: [top, left, bottom, right].
        ceil_mode: round the output size up (windows may overhang the padding).
        epilogue: applied to each pooled value with its (n, c, oh, ow) indices.
        epilogue_tensors: tensors the epilogue reads (kernel inputs after x).
    """
    return _pool(
        x, "max", kernel, strides, padding, dilation, ceil_mode, False,
        epilogue, epilogue_tensors, name,
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
) -> Kernel:
    """graph.avg_pool2d: the mean of each window (see the module docstring for
    the divisor); arguments as `max_pool2d`'s."""
    return _pool(
        x, "avg", kernel, strides, padding, dilation, ceil_mode, count_include_pad,
        epilogue, epilogue_tensors, name,
    )  # fmt: skip


def global_avg_pool2d(
    x: te.Tensor,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] | None = None,
    name: str = "global_avg_pool2d",
) -> Kernel:
    """graph.global_avg_pool2d: the mean over H and W, shape (N, C, 1, 1).

    Two stages: column sums over H for each channel (vectorized over W), then
    the sum of the W column sums times 1 / (H W).
    """
    _check_input(x, "global_avg_pool2d")
    n, c, h, w = x.shape
    rh = te.reduce_axis((0, h), "rh")
    cols = te.compute(
        (n, c, w), lambda b, d, j: te.sum(x[b, d, rh, j], axis=rh), name=f"{name}.cols"
    )
    rw = te.reduce_axis((0, w), "rw")
    total = te.compute(
        (n, c), lambda b, d: te.sum(cols[b, d, rw], axis=rw), name=f"{name}.sum"
    )
    scale = inverse_count(h * w)
    out = te.compute(
        (n, c, 1, 1),
        lambda b, d, i, j: apply_epilogue(epilogue, total[b, d] * scale, (b, d, i, j)),
        name=name,
    )
    unique_stage_names(out)

    def schedule(s: Schedule) -> None:
        inline_injective(s)
        stage = s[out]
        b, d, i, j = compute_of(stage).axis
        channel = stage.fuse(b, d)
        if n * c * h * w * 3 >= PARALLEL_MIN_WORK:
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
