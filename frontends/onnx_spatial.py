"""ONNX ConvTranspose (2-D; 1-D as 2-D with H = 1; 3-D as one 2-D op per
depth tap, placed along depth by a matrix) and Resize (nearest and linear,
scales or sizes known at import) as graph.conv2d_transpose and graph.resize,
and 1-D Conv, MaxPool and AveragePool as their 2-D ops on rows of height 1
(3-D pools as two separable 2-D pools); LpPool as a root of
AveragePool's window sums of |x|^p; the converters register with
`onnx_ops.converter`."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_spatial import COORDINATE_MODES, NEAREST_MODES
from ember.frontends.onnx_fold import checked_shape, shape_of
from ember.frontends.onnx_ops import (
    _AUTO_PAD,
    CHECKS,
    CONST_INPUTS,
    CONVERTERS,
    ConversionError,
    Converter,
    NodeContext,
    _all,
    _one_of,
    converter,
)

MATRIX_COORDINATE_MODES = ("half_pixel_symmetric", "tf_crop_and_resize")
"""Resize's coordinate modes that only the resampling matrices take."""

MAX_SCALE_DENOMINATOR = 1024
"""A float scale becomes the nearest fraction with at most this denominator,
so the source positions stay exact integer arithmetic."""


def _spatial_1d_2d_3d(attrs: dict[str, Any], _opset: int) -> list[str]:
    kernel = attrs.get("kernel_shape")
    if kernel is not None and len(kernel) not in (1, 2, 3):
        return [f"kernel_shape={list(kernel)} (only 1-D, 2-D and 3-D)"]
    return []


def _excluded_outside(attrs: dict[str, Any], _opset: int) -> list[str]:
    """onnxruntime drops taps outside the input only from cubic and
    antialiased linear filters (nearest would lose its only tap)."""
    mode, antialias = attrs.get("mode", "nearest"), attrs.get("antialias", 0)
    if attrs.get("exclude_outside", 0) != 1 or mode == "cubic":
        return []
    if mode == "linear" and antialias:
        return []
    return [f"exclude_outside=1 (only with cubic or antialiased linear, got {mode!r})"]


CHECKS.update(
    {
        "Conv": _all(_AUTO_PAD, _spatial_1d_2d_3d),
        "MaxPool": _all(_AUTO_PAD, _spatial_1d_2d_3d),
        "AveragePool": _all(_AUTO_PAD, _spatial_1d_2d_3d),
        "ConvTranspose": _all(_AUTO_PAD, _spatial_1d_2d_3d),
        "Resize": _all(
            _one_of("mode", ["nearest", "linear", "cubic"], "nearest"),
            _one_of(
                "coordinate_transformation_mode",
                [*COORDINATE_MODES, *MATRIX_COORDINATE_MODES],
                "half_pixel",
            ),
            _one_of("nearest_mode", NEAREST_MODES, "round_prefer_floor"),
            _one_of("antialias", [0, 1], 0),
            _one_of("exclude_outside", [0, 1], 0),
            _excluded_outside,
            _one_of(
                "keep_aspect_ratio_policy",
                ["stretch", "not_larger", "not_smaller"],
                "stretch",
            ),
        ),
    }
)
CONST_INPUTS.update({"Resize": [(1, "roi"), (2, "scales"), (3, "sizes")]})


@converter("ConvTranspose")
def _conv_transpose(c: NodeContext):
    x = c.value(0)
    rank = len(shape_of(x))
    # a 3-D weight known at import time is only read by its depth slices
    if rank == 5 and c.is_const(1):
        w, w_shape = None, c.const(1, "the weight").shape
    else:
        w = c.value(1)
        w_shape = shape_of(w)
    if rank not in (3, 4, 5) or len(w_shape) != rank:
        raise ConversionError(
            f"expected 1-D, 2-D or 3-D data and weight, got {shape_of(x)} and "
            f"{tuple(w_shape)}"
        )
    k = rank - 2
    strides = list(c.attr("strides", [1] * k))
    dilation = list(c.attr("dilations", [1] * k))
    output_padding = list(c.attr("output_padding", [0] * k))
    kernel, spatial = w_shape[2:], shape_of(x)[2:]
    pads = list(c.attr("pads", [0] * (2 * k)))
    auto_pad = c.attr("auto_pad", "NOTSET")
    output_shape = c.attr("output_shape")
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        wanted = list(output_shape[-k:]) if output_shape is not None else []
        if not wanted:
            wanted = [n * s for n, s in zip(spatial, strides, strict=True)]
        begin, end = [], []
        for i in range(k):
            full = (spatial[i] - 1) * strides[i] + (kernel[i] - 1) * dilation[i] + 1
            total = full + output_padding[i] - wanted[i]
            if total < 0:  # the requested extent is past the full result: zeros
                output_padding[i] -= total
                total = 0
            small, large = total // 2, total - total // 2
            upper = auto_pad == "SAME_UPPER"  # NOTSET: the larger half first
            begin.append(small if upper else large)
            end.append(large if upper else small)
        pads = begin + end
    elif auto_pad == "VALID":
        pads = [0] * (2 * k)
    bias = c.value(2) if c.has(2) else None
    if k == 3:
        return [_conv_transpose_3d(c, x, bias, strides, pads, output_padding, dilation)]
    assert w is not None  # only a 3-D weight stays an import-time array
    if k == 1:  # a row of height 1
        n, ch, length = shape_of(x)
        x = c.emit(G.ReshapeOp, x, shape=[n, ch, 1, length])
        w = c.emit(G.ReshapeOp, w, shape=[*w_shape[:2], 1, w_shape[2]])
        strides, dilation = [1, *strides], [1, *dilation]
        output_padding, pads = [0, *output_padding], [0, pads[0], 0, pads[1]]
    y = c.emit(
        G.Conv2DTransposeOp,
        *([x, w] if bias is None else [x, w, bias]),
        strides=strides,
        padding=pads,
        output_padding=output_padding,
        dilation=dilation,
        groups=c.attr("group", 1),
    )
    if k == 1:
        n, ch, _, length = shape_of(y)
        y = c.emit(G.ReshapeOp, y, shape=[n, ch, length])
    return [y]


def depth_taps(c: NodeContext) -> list[SSAValue]:
    """A 3-D Conv's or ConvTranspose's weight (A, B, kd, kh, kw) as its kd
    2-D weights (A, B, kh, kw): import-time slices where the weight is
    known (so each is a param the 2-D kernels pack), else graph.slice."""
    if c.is_const(1):
        w = c.const(1, "the weight")
        return [
            c.array(np.ascontiguousarray(w[:, :, d]), f"depth{d}")
            for d in range(w.shape[2])
        ]
    w = c.value(1)
    a, b, kd, kh, kw = shape_of(w)
    return [
        c.emit(
            G.ReshapeOp,
            c.emit(
                G.SliceOp,
                w,
                starts=[0, 0, d, 0, 0],
                ends=[a, b, d + 1, kh, kw],
                steps=[1] * 5,
            ),
            shape=[a, b, kh, kw],
        )
        for d in range(kd)
    ]


def _conv_transpose_3d(
    c: NodeContext,
    x: SSAValue,
    bias: SSAValue | None,
    strides: list[int],
    pads: list[int],
    output_padding: list[int],
    dilation: list[int],
) -> SSAValue:
    """3-D ConvTranspose as one batched graph.conv2d_transpose per depth tap
    of the kernel over all depth planes (N D, C, H, W), then an import-time
    0/1 (D_out, kd D) matrix that places each tap's planes at depth
    d * stride + tap * dilation - pad (dropping the cropped ones) and sums
    them: the scatter along depth is linear and small."""
    n, channels, depth, h, wd = shape_of(x)
    planes = c.emit(G.TransposeOp, x, perm=[0, 2, 1, 3, 4])
    planes = c.emit(G.ReshapeOp, planes, shape=[n * depth, channels, h, wd])
    parts = [
        c.emit(
            G.Conv2DTransposeOp,
            planes,
            tap,
            strides=strides[1:],
            padding=[pads[1], pads[2], pads[4], pads[5]],
            output_padding=output_padding[1:],
            dilation=dilation[1:],
            groups=c.attr("group", 1),
        )
        for tap in depth_taps(c)
    ]
    if not parts:
        raise ConversionError("expected a kernel depth of at least 1, got 0")
    _, out_channels, out_h, out_w = shape_of(parts[0])
    size = out_channels * out_h * out_w
    parts = [c.emit(G.ReshapeOp, part, shape=[n, depth, size]) for part in parts]
    taps = len(parts)
    full = (depth - 1) * strides[0] + (taps - 1) * dilation[0] + 1
    out_depth = full + output_padding[0] - pads[0] - pads[3]
    if out_depth < 1:
        raise ConversionError(
            f"expected a positive output depth, got {out_depth} (pads {pads})"
        )
    placement = np.zeros((out_depth, taps * depth))
    for t in range(taps):
        for d in range(depth):
            at = d * strides[0] + t * dilation[0] - pads[0]
            if 0 <= at < out_depth:
                placement[at, t * depth + d] = 1.0
    stacked = parts[0] if taps == 1 else c.emit(G.ConcatOp, *parts, axis=1)
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    y = c.emit(G.MatmulOp, c.array(placement.astype(dtype), "placement"), stacked)
    y = c.emit(G.ReshapeOp, y, shape=[n, out_depth, out_channels, out_h, out_w])
    y = c.emit(G.TransposeOp, y, perm=[0, 2, 1, 3, 4])
    if bias is not None:
        bias = c.emit(G.ReshapeOp, bias, shape=[out_channels, 1, 1, 1])
        y = c.emit(G.AddOp, y, bias)
    return y


def _resize_plan(
    c: NodeContext, shape: tuple[int, ...]
) -> tuple[list[Fraction], list[int]]:
    """Each axis's scale (output over input) and output extent, from sizes
    (the aspect-ratio policy applied) or scales (the extent floor(n scale)),
    over `axes` from opset 18."""
    rank = len(shape)
    axes = [a % rank for a in c.attr("axes", range(rank))]
    scales, extents = [Fraction(1)] * rank, list(shape)
    if c.has(3):
        sizes = [int(v) for v in c.const(3, "sizes").reshape(-1)]
        given = [Fraction(s, shape[a]) for a, s in zip(axes, sizes, strict=True)]
        policy = c.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            common = (min if policy == "not_larger" else max)(given)
            given = [common] * len(axes)
            sizes = [int(common * shape[a] + Fraction(1, 2)) for a in axes]
        for a, scale, size in zip(axes, given, sizes, strict=True):
            scales[a], extents[a] = scale, size
        return scales, extents
    values = c.const(2, "scales").reshape(-1) if c.has(2) else np.zeros(0)
    if len(values) != len(axes) or any(v <= 0 for v in values):
        raise ConversionError(
            f"expected {len(axes)} positive scales or sizes, got scales {list(values)}"
        )
    for a, v in zip(axes, values.astype(np.float64), strict=True):
        scales[a] = Fraction(float(v)).limit_denominator(MAX_SCALE_DENOMINATOR)
        extents[a] = int(np.floor(shape[a] * v))
    return scales, extents


@converter("Resize")
def _resize(c: NodeContext):
    x = c.value(0)
    shape = shape_of(x)
    scales, sizes = _resize_plan(c, shape)
    mode = c.attr("coordinate_transformation_mode", "half_pixel")
    changed = [a for a in range(len(shape)) if shape[a] != sizes[a] or scales[a] != 1]
    if not changed and mode != "tf_crop_and_resize":
        return [x]
    interpolation = c.attr("mode", "nearest")
    if (
        interpolation == "cubic"
        or mode in MATRIX_COORDINATE_MODES
        or c.attr("exclude_outside", 0)
        or (interpolation == "linear" and (c.attr("antialias", 0) or len(changed) > 2))
    ):
        return [_resize_by_matrices(c, x, scales, sizes)]
    return [
        c.emit(
            G.ResizeOp,
            x,
            shape=sizes,
            scale_num=[s.numerator for s in scales],
            scale_den=[s.denominator for s in scales],
            coord=COORDINATE_MODES.index(mode),
            nearest=NEAREST_MODES.index(c.attr("nearest_mode", "round_prefer_floor")),
            linear=interpolation == "linear",
        )
    ]


def _resize_by_matrices(
    c: NodeContext, x: SSAValue, scales: list[Fraction], sizes: list[int]
) -> SSAValue:
    """Resize as one matmul per resized axis with an (out, in) matrix built at
    import time: every mode, filter and coordinate transformation is separable
    and linear in the data (tf_crop_and_resize adds the extrapolation value
    where the source lies outside the input)."""
    shape = shape_of(x)
    rank = len(shape)
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    if not np.issubdtype(dtype, np.floating):
        raise ConversionError(
            f"expected float data for mode={c.attr('mode', 'nearest')!r} with these "
            f"attributes, got {np.dtype(dtype).name}"
        )
    axes = [a % rank for a in c.attr("axes", range(rank))]
    floats = [float(s) for s in scales]
    if not c.has(3) and c.has(2):  # the given scales, not their fractions
        for a, v in zip(axes, c.const(2, "scales").reshape(-1), strict=True):
            floats[a] = float(v)
    roi = [(0.0, 1.0)] * rank
    coord = c.attr("coordinate_transformation_mode", "half_pixel")
    if coord == "tf_crop_and_resize":
        given = c.const(1, "roi").astype(np.float64).reshape(-1) if c.has(1) else []
        if len(given) != 2 * len(axes):
            raise ConversionError(
                f"expected {2 * len(axes)} roi values, got {list(given)}"
            )
        for k, a in enumerate(axes):
            roi[a] = (float(given[k]), float(given[k + len(axes)]))
    fill = float(c.attr("extrapolation_value", 0.0))
    y = x
    for a in range(rank):
        if shape[a] == sizes[a] and floats[a] == 1 and coord != "tf_crop_and_resize":
            continue
        matrix, outside = _resample_matrix(c, shape[a], sizes[a], floats[a], roi[a])
        y = _along_axis(c, y, matrix.astype(dtype), a, f"resize{a}")
        if fill != 0.0 and outside.any():
            column = np.where(outside, fill, 0.0).astype(dtype)
            column = column.reshape([-1] + [1] * (rank - 1 - a))
            y = c.emit(G.AddOp, y, c.array(column, f"extrapolation{a}"))
    return y


def _along_axis(
    c: NodeContext, x: SSAValue, matrix: np.ndarray, axis: int, what: str
) -> SSAValue:
    """`matrix` (out, in) applied to axis `axis` of x: a matmul, with the axis
    moved last and back unless it is one of the last two."""
    rank = len(shape_of(x))
    if axis == rank - 2:
        return c.emit(G.MatmulOp, c.array(matrix, what), x)
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    if axis != rank - 1:
        x = c.emit(G.TransposeOp, x, perm=perm)
    y = c.emit(G.MatmulOp, x, c.array(np.ascontiguousarray(matrix.T), what))
    return y if axis == rank - 1 else c.emit(G.TransposeOp, y, perm=perm)


def _filter_taps(c: NodeContext, ratio: float, scale: float) -> tuple[int, np.ndarray]:
    """The first tap's offset from the input index left of the source (which
    lies `ratio` in (0, 1] past it) and the taps' weights, for Resize's
    mode; antialias widens linear and cubic filters by 1 / scale when
    downsampling."""
    mode = c.attr("mode", "nearest")
    if mode == "nearest":
        if ratio == 1:
            return 0, np.array([0.0, 1.0])
        up = {
            "round_prefer_floor": ratio > 0.5,
            "round_prefer_ceil": ratio >= 0.5,
            "floor": False,
            "ceil": True,
        }[c.attr("nearest_mode", "round_prefer_floor")]
        return 0, np.array([0.0, 1.0] if up else [1.0, 0.0])
    antialias = bool(c.attr("antialias", 0))
    width = min(scale, 1.0) if antialias else 1.0
    reach = 1 if mode == "linear" else 2
    start = int(np.floor(-reach / width)) + 1
    d = np.abs(width * (np.arange(start, 2 - start) - ratio))
    if mode == "linear":
        weights = np.clip(1 - d, 0, 1)
    else:
        a = float(c.attr("cubic_coeff_a", -0.75))
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        weights = np.where(d <= 1, near, np.where(d < 2, far, 0.0))
    return start, weights / weights.sum() if antialias else weights


def _resample_matrix(
    c: NodeContext, n_in: int, n_out: int, scale: float, roi: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """One axis of ONNX Resize: the (n_out, n_in) weights and which outputs
    lie outside the input (tf_crop_and_resize's extrapolation)."""
    coord = c.attr("coordinate_transformation_mode", "half_pixel")
    checked_shape([n_out, n_in], np.float64, "the resampling matrix")
    length = scale * n_in
    i = np.arange(n_out, dtype=np.float64)
    if coord == "align_corners":
        x = i * (n_in - 1) / (length - 1) if length != 1 else 0 * i
    elif coord == "asymmetric":
        x = i / scale
    elif coord == "tf_crop_and_resize":
        span = (roi[1] - roi[0]) * (n_in - 1)
        x = i * span / (length - 1) if length != 1 else 0 * i + span / 2
        x = x + roi[0] * (n_in - 1)
    elif coord == "pytorch_half_pixel" and length == 1:
        x = 0 * i - 0.5
    elif coord == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / length)
        x = offset + (i + 0.5) / scale - 0.5
    else:
        x = (i + 0.5) / scale - 0.5
    outside = (x < 0) | (x > n_in - 1)
    if coord != "tf_crop_and_resize":
        outside[:] = False
    matrix = np.zeros((n_out, n_in))
    for row, source in enumerate(x):
        if outside[row]:
            continue
        left = int(np.ceil(source)) - 1
        start, weights = _filter_taps(c, float(source - left), scale)
        # the reference picks the taps among the input padded by half the
        # filter's length on each side
        pad = -(-len(weights) // 2)
        first = min(max(left + start, -pad), n_in + pad - len(weights))
        taps = np.arange(first, first + len(weights))
        if c.attr("exclude_outside", 0):
            weights = np.where((taps >= 0) & (taps < n_in), weights, 0.0)
            weights = weights / weights.sum()
        np.add.at(matrix[row], np.clip(taps, 0, n_in - 1), weights)
    return matrix, outside


def _rows(two_d: Converter) -> Converter:
    """A converter of 2-D NCHW ops that also takes 1-D (N, C, L) data (and a
    Conv's (O, I, k) weight) as rows of height 1."""

    def convert(c: NodeContext):
        x = c.value(0)
        if len(shape_of(x)) != 3:
            return two_d(c)
        n, ch, length = shape_of(x)
        inputs = list(c.inputs)
        inputs[0] = c.emit(G.ReshapeOp, x, shape=[n, ch, 1, length])
        if c.node.op_type == "Conv":
            w = c.value(1)
            inputs[1] = c.emit(G.ReshapeOp, w, shape=[*shape_of(w)[:2], 1, -1])
        rows = NodeContext(c.node, c.opset, inputs, c.block, c._materialize)
        rows.attrs = dict(c.attrs)  # with any a wrapping converter set
        for name in ("kernel_shape", "strides", "dilations"):
            if name in c.attrs:
                rows.attrs[name] = [1, *c.attrs[name]]
        if "pads" in c.attrs:
            begin, end = c.attrs["pads"]
            rows.attrs["pads"] = [0, begin, 0, end]
        (y,) = two_d(rows)
        assert isinstance(y, SSAValue)  # the 2-D converters build an op
        n, ch, _, length = shape_of(y)
        return [c.emit(G.ReshapeOp, y, shape=[n, ch, length])]

    return convert


def _volumes(two_d: Converter) -> Converter:
    """A pooling converter that also takes 3-D (N, C, D, H, W) data: pooling
    is separable (a max of maxes; a mean of means, the counts of valid
    elements being a product per axis), so it pools (H, W) on (N, C D, H, W),
    then D on (N, C, D, H' W') with a (kd, 1) window."""

    def convert(c: NodeContext):
        x = c.value(0)
        if len(shape_of(x)) != 5:
            return two_d(c)
        n, ch, depth, h, w = shape_of(x)

        def pool(data: SSAValue, pick: tuple[int, int], fill: int, pad: bool):
            step = NodeContext(c.node, c.opset, [data], c.block, c._materialize)
            step.attrs = dict(c.attrs)  # with any a wrapping converter set
            for name in ("kernel_shape", "strides", "dilations"):
                if name in c.attrs:
                    values = c.attrs[name]
                    step.attrs[name] = [
                        values[pick[0]] if pick[0] >= 0 else fill,
                        values[pick[1]] if pick[1] >= 0 else fill,
                    ]
            if "pads" in c.attrs:
                p = c.attrs["pads"]
                step.attrs["pads"] = (
                    [p[1], p[2], p[4], p[5]] if pad else [p[0], 0, p[3], 0]
                )
            (y,) = two_d(step)
            assert isinstance(y, SSAValue)  # the 2-D converters build an op
            return y

        planes = c.emit(G.ReshapeOp, x, shape=[n, ch * depth, h, w])
        y = pool(planes, (1, 2), 1, True)
        _, _, h2, w2 = shape_of(y)
        y = c.emit(G.ReshapeOp, y, shape=[n, ch, depth, h2 * w2])
        y = pool(y, (0, -1), 1, False)
        return [c.emit(G.ReshapeOp, y, shape=[n, ch, shape_of(y)[2], h2, w2])]

    return convert


for _op in ("Conv", "MaxPool", "AveragePool"):
    CONVERTERS[_op] = _rows(CONVERTERS[_op])
for _op in ("MaxPool", "AveragePool"):
    CONVERTERS[_op] = _volumes(CONVERTERS[_op])


CHECKS["LpPool"] = _all(_AUTO_PAD, _spatial_1d_2d_3d, _one_of("ceil_mode", [0], 0))


@converter("LpPool")
def _lp_pool(c: NodeContext):
    """(sum of |x|^p over each window)^(1/p): the window sum is AveragePool's
    mean with the padding counted, times the window's size (every window
    lies within the padded input without ceil_mode)."""
    p = float(c.attr("p", 2))
    if p <= 0:
        raise ConversionError(f"expected p > 0, got {p}")
    x = c.value(0)
    powered = (
        c.emit(G.MulOp, x, x)
        if p == 2
        else c.emit(G.PowOp, c.emit(G.AbsOp, x), c.constant(p))
    )
    mean = NodeContext(c.node, c.opset, [powered], c.block, c._materialize)
    mean.attrs["count_include_pad"] = 1
    (y,) = CONVERTERS["AveragePool"](mean)
    assert isinstance(y, SSAValue)  # the pooling converters build an op
    size = float(np.prod(c.attr("kernel_shape")))
    total = c.emit(G.MulOp, y, c.constant(size))
    if p == 2:
        return [c.emit(G.SqrtOp, total)]
    return [c.emit(G.PowOp, total, c.constant(1.0 / p))]
