"""ONNX Col2Im and Conv whose weight is computed at run time, both as
matmuls over blocks of the image: Col2Im sums each block's columns into the
image (a grouped graph.conv2d_transpose with one-hot weights for 2-D images,
an import-time placement matrix for other ranks); a Conv whose weight is no
param (a graph input, or computed by the model) is im2col, one strided
graph.slice per kernel position, and a grouped matmul, because graph.conv2d's
kernels pack their weight at compile time; a 3-D Conv with a known weight is
a sum of graph.conv2d over its depth taps. The converters register with
`onnx_ops.converter`."""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.frontends import onnx_spatial
from ember.frontends.onnx_fold import shape_of
from ember.frontends.onnx_ops import (
    CONST_INPUTS,
    CONVERTERS,
    ConversionError,
    Converter,
    NodeContext,
    converter,
)

CONST_INPUTS["Col2Im"] = [(1, "image_shape"), (2, "block_shape")]

MAX_COL2IM_MATRIX = 1 << 22
"""The most entries of the import-time placement matrix Col2Im builds for
data that is not 2-D."""


@converter("Col2Im")
def _col2im(c: NodeContext):
    """Sums each block's columns into the image: for 2-D images a grouped
    graph.conv2d_transpose whose weights are one-hot at each kernel position
    (the C * K block channels of a group land on its one image channel);
    other ranks as a matmul with an import-time (K * L, pixels) 0/1 matrix."""
    x = c.value(0)
    image = [int(v) for v in c.const(1, "image_shape").reshape(-1)]
    block = [int(v) for v in c.const(2, "block_shape").reshape(-1)]
    k = len(image)
    strides = list(c.attr("strides", [1] * k))
    dilations = list(c.attr("dilations", [1] * k))
    pads = list(c.attr("pads", [0] * (2 * k)))
    n, rows, length = shape_of(x)
    size = math.prod(block)
    counts = [
        (image[d] + pads[d] + pads[d + k] - dilations[d] * (block[d] - 1) - 1)
        // strides[d]
        + 1
        for d in range(k)
    ]
    if len(block) != k or rows % size or math.prod(counts) != length:
        raise ConversionError(
            f"expected (N, C * {size}, {math.prod(counts)}) data for the image "
            f"{image} and block {block}, got {shape_of(x)}"
        )
    channels = rows // size
    if k == 2:
        weight = np.zeros((channels * size, 1, *block), np.float32)
        for ch in range(channels):
            for j in range(size):
                weight[ch * size + j, 0, j // block[1], j % block[1]] = 1.0
        extra = [
            image[d]
            + pads[d]
            + pads[d + k]
            - (counts[d] - 1) * strides[d]
            - dilations[d] * (block[d] - 1)
            - 1
            for d in range(k)
        ]
        blocks = c.emit(G.ReshapeOp, x, shape=[n, rows, *counts])
        return [
            c.emit(
                G.Conv2DTransposeOp,
                blocks,
                c.array(weight.astype(_float(x)), "placement"),
                strides=strides,
                padding=pads,
                output_padding=extra,
                dilation=dilations,
                groups=channels,
            )
        ]
    pixels = math.prod(image)
    if size * length * pixels > MAX_COL2IM_MATRIX:
        raise ConversionError(
            f"expected at most {MAX_COL2IM_MATRIX} entries in the placement matrix "
            f"of a {k}-D image, got {size * length * pixels}"
        )
    matrix = np.zeros((size, length, pixels))
    for j in np.ndindex(*block):
        for p in np.ndindex(*counts):
            at = [p[d] * strides[d] - pads[d] + j[d] * dilations[d] for d in range(k)]
            if all(0 <= at[d] < image[d] for d in range(k)):
                row = np.ravel_multi_index(j, block)
                col = np.ravel_multi_index(p, counts)
                matrix[row, col, np.ravel_multi_index(at, image)] += 1.0
    flat = c.emit(G.ReshapeOp, x, shape=[n, channels, size * length])
    placement = c.array(
        matrix.reshape(size * length, pixels).astype(_float(x)), "placement"
    )
    y = c.emit(G.MatmulOp, flat, placement)
    return [c.emit(G.ReshapeOp, y, shape=[n, channels, *image])]


def _float(x: SSAValue) -> str:
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    if not np.issubdtype(dtype, np.floating):
        raise ConversionError(f"expected float data, got {dtype}")
    return dtype


def _conv_pads(c: NodeContext, spatial: list[int], kernel: list[int]) -> list[int]:
    """ONNX's explicit [begin..., end...] padding from auto_pad and pads."""
    k = len(spatial)
    auto_pad = c.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        return list(c.attr("pads", [0] * (2 * k)))
    if auto_pad == "VALID":
        return [0] * (2 * k)
    strides = c.attr("strides", [1] * k)
    dilations = c.attr("dilations", [1] * k)
    begin, end = [], []
    for size, w, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        total = max((-(-size // s) - 1) * s + (w - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        upper = auto_pad == "SAME_UPPER"
        begin.append(small if upper else large)
        end.append(large if upper else small)
    return begin + end


def _conv_im2col(c: NodeContext) -> SSAValue:
    """Conv as (N, G, O/G, C/G * K) x (N, G, C/G * K, pixels): the columns are
    the padded input sliced at each kernel position with the stride."""
    x, w = c.value(0), c.value(1)
    n, channels, *spatial = shape_of(x)
    out_channels, per_group, *kernel = shape_of(w)
    k = len(spatial)
    groups = int(c.attr("group", 1))
    if len(kernel) != k or channels != per_group * groups or out_channels % groups:
        raise ConversionError(
            f"expected a weight (O, C/{groups}, ...) for data {shape_of(x)}, got "
            f"{shape_of(w)}"
        )
    strides = list(c.attr("strides", [1] * k))
    dilations = list(c.attr("dilations", [1] * k))
    pads = _conv_pads(c, spatial, kernel)
    if any(pads):
        x = c.emit(G.PadOp, x, pads=[0, 0, *pads[:k], 0, 0, *pads[k:]])
    padded = shape_of(x)[2:]
    out = [
        (padded[d] - dilations[d] * (kernel[d] - 1) - 1) // strides[d] + 1
        for d in range(k)
    ]
    pixels = math.prod(out)
    columns = []
    for j in np.ndindex(*kernel):
        starts = [j[d] * dilations[d] for d in range(k)]
        ends = [starts[d] + (out[d] - 1) * strides[d] + 1 for d in range(k)]
        piece = c.emit(
            G.SliceOp,
            x,
            starts=[0, 0, *starts],
            ends=[n, channels, *ends],
            steps=[1, 1, *strides],
        )
        columns.append(
            c.emit(G.ReshapeOp, piece, shape=[n, groups, per_group, 1, pixels])
        )
    size = math.prod(kernel)
    stacked = columns[0] if size == 1 else c.emit(G.ConcatOp, *columns, axis=3)
    stacked = c.emit(G.ReshapeOp, stacked, shape=[n, groups, per_group * size, pixels])
    rows = c.emit(
        G.ReshapeOp, w, shape=[groups, out_channels // groups, per_group * size]
    )
    y = c.emit(G.MatmulOp, rows, stacked)
    y = c.emit(G.ReshapeOp, y, shape=[n, out_channels, *out])
    if c.has(2):
        bias = c.emit(G.ReshapeOp, c.value(2), shape=[out_channels] + [1] * k)
        y = c.emit(G.AddOp, y, bias)
    return y


def _conv_depth_taps(c: NodeContext) -> SSAValue:
    """3-D Conv as a sum over the kernel's depth taps of one graph.conv2d
    each, on every output depth's input plane at once: the data goes to
    (N, D, C, H, W) once, and tap t reads the planes t * dilation + d * stride
    (a strided graph.slice), batched as (N D_out, C, H, W). Groups, the
    (H, W) strides, dilations and padding are conv2d's own, so its packed,
    tuned kernels do the work (im2col would copy the input kd kh kw times)."""
    x = c.value(0)
    n, channels, depth, h, wd = shape_of(x)
    out_channels, per_group, *kernel = c.const(1, "the weight").shape
    groups = int(c.attr("group", 1))
    if (
        len(kernel) != 3
        or min(kernel) < 1
        or channels != per_group * groups
        or out_channels % groups
    ):
        raise ConversionError(
            f"expected a weight (O, C/{groups}, kd, kh, kw) for data {shape_of(x)}, "
            f"got {c.const(1, 'the weight').shape}"
        )
    strides = list(c.attr("strides", [1] * 3))
    dilations = list(c.attr("dilations", [1] * 3))
    pads = _conv_pads(c, [depth, h, wd], kernel)
    x = c.emit(G.TransposeOp, x, perm=[0, 2, 1, 3, 4])
    if pads[0] or pads[3]:
        x = c.emit(G.PadOp, x, pads=[0, pads[0], 0, 0, 0, 0, pads[3], 0, 0, 0])
    padded = depth + pads[0] + pads[3]
    out_depth = (padded - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    if out_depth < 1:
        raise ConversionError(
            f"expected the kernel's depth {kernel[0]} (dilation {dilations[0]}) "
            f"within the padded depth {padded}"
        )
    y = None
    for t, tap in enumerate(onnx_spatial.depth_taps(c)):
        start = t * dilations[0]
        end = start + (out_depth - 1) * strides[0] + 1
        planes = x
        if (start, end, strides[0]) != (0, padded, 1):
            planes = c.emit(
                G.SliceOp,
                x,
                starts=[0, start, 0, 0, 0],
                ends=[n, end, channels, h, wd],
                steps=[1, strides[0], 1, 1, 1],
            )
        planes = c.emit(G.ReshapeOp, planes, shape=[n * out_depth, channels, h, wd])
        operands = [planes, tap] + ([c.value(2)] if c.has(2) and t == 0 else [])
        part = c.emit(
            G.Conv2DOp,
            *operands,
            strides=strides[1:],
            padding=[pads[1], pads[2], pads[4], pads[5]],
            dilation=dilations[1:],
            groups=groups,
        )
        y = part if y is None else c.emit(G.AddOp, y, part)
    assert y is not None  # the kernel has at least one depth tap
    _, _, out_h, out_w = shape_of(y)
    y = c.emit(G.ReshapeOp, y, shape=[n, out_depth, out_channels, out_h, out_w])
    return c.emit(G.TransposeOp, y, perm=[0, 2, 1, 3, 4])


def _unpacked_weights(packed: Converter) -> Converter:
    """Conv's converter, taking the im2col route where the weight is not
    known at import time, and the depth-tap route for 3-D data."""

    def convert(c: NodeContext):
        if not c.is_const(1):
            return [_conv_im2col(c)]
        if len(shape_of(c.value(0))) == 5:
            return [_conv_depth_taps(c)]
        return packed(c)

    return convert


# after onnx_spatial's 1-D wrapper, so that a 1-D Conv's param weight
# still reaches the packed route
CONVERTERS["Conv"] = _unpacked_weights(CONVERTERS["Conv"])
