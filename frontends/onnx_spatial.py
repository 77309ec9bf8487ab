"""ONNX ConvTranspose (2-D, and 1-D as 2-D with H = 1) and Resize (nearest and
linear, scales or sizes known at import) as graph.conv2d_transpose and
graph.resize, and 1-D Conv, MaxPool and AveragePool as their 2-D ops on rows
of height 1 (3-D pools as two separable 2-D pools); LpPool as a root of
AveragePool's window sums of |x|^p; the converters register with
`onnx_ops.converter`."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_spatial import COORDINATE_MODES, NEAREST_MODES
from ember.frontends.onnx_fold import shape_of
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

MAX_SCALE_DENOMINATOR = 1024
"""A float scale becomes the nearest fraction with at most this denominator,
so the source positions stay exact integer arithmetic."""


def _spatial_1d_2d(attrs: dict[str, Any], _opset: int) -> list[str]:
    kernel = attrs.get("kernel_shape")
    if kernel is not None and len(kernel) not in (1, 2):
        return [f"kernel_shape={list(kernel)} (only 1-D and 2-D)"]
    return []


def _spatial_1d_2d_3d(attrs: dict[str, Any], _opset: int) -> list[str]:
    kernel = attrs.get("kernel_shape")
    if kernel is not None and len(kernel) not in (1, 2, 3):
        return [f"kernel_shape={list(kernel)} (only 1-D, 2-D and 3-D)"]
    return []


CHECKS.update(
    {
        "Conv": _all(_AUTO_PAD, _spatial_1d_2d),
        "MaxPool": _all(_AUTO_PAD, _spatial_1d_2d_3d),
        "AveragePool": _all(_AUTO_PAD, _spatial_1d_2d_3d),
        "ConvTranspose": _all(_AUTO_PAD, _spatial_1d_2d),
        "Resize": _all(
            _one_of("mode", ["nearest", "linear"], "nearest"),
            _one_of("coordinate_transformation_mode", COORDINATE_MODES, "half_pixel"),
            _one_of("nearest_mode", NEAREST_MODES, "round_prefer_floor"),
            _one_of("antialias", [0], 0),
            _one_of("exclude_outside", [0], 0),
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
    x, w = c.value(0), c.value(1)
    rank = len(shape_of(x))
    if rank not in (3, 4) or len(shape_of(w)) != rank:
        raise ConversionError(
            f"expected 1-D or 2-D data and weight, got {shape_of(x)} and {shape_of(w)}"
        )
    one_d = rank == 3
    if one_d:  # a row of height 1
        n, ch, length = shape_of(x)
        x = c.emit(G.ReshapeOp, x, shape=[n, ch, 1, length])
        w = c.emit(G.ReshapeOp, w, shape=[*shape_of(w)[:2], 1, shape_of(w)[2]])

    def pair(name: str, default: int) -> list[int]:
        values = list(c.attr(name, [default] * (rank - 2)))
        return [default, *values] if one_d else values

    strides, dilation = pair("strides", 1), pair("dilations", 1)
    output_padding = pair("output_padding", 0)
    kernel = shape_of(w)[2:]
    spatial = shape_of(x)[2:]
    pads = list(c.attr("pads", [0] * (2 * (rank - 2))))
    if one_d:
        pads = [0, pads[0], 0, pads[1]]
    auto_pad = c.attr("auto_pad", "NOTSET")
    output_shape = c.attr("output_shape")
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        wanted = list(output_shape[-(rank - 2) :]) if output_shape is not None else []
        if one_d and wanted:
            wanted = [1, *wanted]
        if not wanted:
            wanted = [n * s for n, s in zip(spatial, strides, strict=True)]
        begin, end = [], []
        for i in range(2):
            full = (spatial[i] - 1) * strides[i] + (kernel[i] - 1) * dilation[i] + 1
            total = full + output_padding[i] - wanted[i]
            if total < 0:  # the requested extent is past the full result: zeros
                output_padding[i] -= total
                total = 0
            small, large = total // 2, total - total // 2
            upper = auto_pad != "SAME_LOWER"
            begin.append(small if upper else large)
            end.append(large if upper else small)
        pads = begin + end
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    operands = [x, w] + ([c.value(2)] if c.has(2) else [])
    y = c.emit(
        G.Conv2DTransposeOp,
        *operands,
        strides=strides,
        padding=pads,
        output_padding=output_padding,
        dilation=dilation,
        groups=c.attr("group", 1),
    )
    if one_d:
        n, ch, _, length = shape_of(y)
        y = c.emit(G.ReshapeOp, y, shape=[n, ch, length])
    return [y]


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
    if shape == tuple(sizes) and all(s == 1 for s in scales):
        return [x]
    mode = c.attr("coordinate_transformation_mode", "half_pixel")
    return [
        c.emit(
            G.ResizeOp,
            x,
            shape=sizes,
            scale_num=[s.numerator for s in scales],
            scale_den=[s.denominator for s in scales],
            coord=COORDINATE_MODES.index(mode),
            nearest=NEAREST_MODES.index(c.attr("nearest_mode", "round_prefer_floor")),
            linear=c.attr("mode", "nearest") == "linear",
        )
    ]


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
