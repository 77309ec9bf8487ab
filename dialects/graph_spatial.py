"""`graph` dialect ops on images past convolution and pooling: conv2d_transpose
(ONNX ConvTranspose) and resize (nearest and linear). The dialect is assembled
in `graph.py`.

    %y = graph.conv2d_transpose %x, %w {strides = [2, 2], padding = [1, 1, 1, 1],
           output_padding = [1, 1], dilation = [1, 1], groups = 1}
           : (tensor<1x8x4x4xf32>, tensor<8x4x3x3xf32>) -> tensor<1x4x8x8xf32>
"""

from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_base import REQUIRED, GraphOp
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import Shape, ShapeError


def conv2d_transpose_shape(
    x: Shape,
    w: Shape,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    output_padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> Shape:
    """(N, C_out, H_out, W_out): H_out = (H - 1) s - top - bottom + d (kh - 1)
    + 1 + output_padding (ONNX's rule)."""
    shapes.expect_rank("data (NCHW)", x, 4)
    shapes.expect_rank("weight (C_in, C_out/groups, kh, kw)", w, 4)
    for name, values, n in (
        ("strides", strides, 2),
        ("padding", padding, 4),
        ("output_padding", output_padding, 2),
        ("dilation", dilation, 2),
    ):
        if len(values) != n:
            raise ShapeError(f"expected {n} '{name}', got {list(values)}")
    if min(*strides, *dilation, groups) < 1 or min(*padding, *output_padding) < 0:
        raise ShapeError(
            "expected positive strides, dilation and groups and non-negative "
            f"padding, got {list(strides)}, {list(dilation)}, {groups}, "
            f"{list(padding)} and {list(output_padding)}"
        )
    if x[1] != w[0] or x[1] % groups:
        raise ShapeError(
            f"expected data channels {w[0]} divisible by {groups} groups, got {x[1]}"
        )
    out = []
    for i in range(2):
        extent = (x[2 + i] - 1) * strides[i] + dilation[i] * (w[2 + i] - 1) + 1
        extent += output_padding[i] - padding[i] - padding[2 + i]
        if extent < 1:
            raise ShapeError(f"expected a positive output extent, got {extent}")
        out.append(extent)
    return (x[0], w[1] * groups, *out)


@irdl_op_definition
class Conv2DTransposeOp(GraphOp):
    """The gradient of conv2d for its input, as ONNX's ConvTranspose: NCHW data,
    weight (C_in, C_out/groups, kh, kw), optional bias (C_out); `padding` is
    [top, left, bottom, right], cropped from the full result, and
    `output_padding` adds rows and columns at its end.

    %y = graph.conv2d_transpose %x, %w {strides = [2, 2]}
           : (tensor<1x8x4x4xf32>, tensor<8x4x3x3xf32>) -> tensor<1x4x9x9xf32>
    """

    name = "graph.conv2d_transpose"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "strides": ("ints", (1, 1)),
        "padding": ("ints", (0, 0, 0, 0)),
        "output_padding": ("ints", (0, 0)),
        "dilation": ("ints", (1, 1)),
        "groups": ("int", 1),
    }
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) not in (2, 3):
            raise ShapeError(f"expected 2 or 3 operands, got {len(s)}")
        out = conv2d_transpose_shape(s[0], s[1], **cfg)
        if len(s) == 3 and s[2] != (out[1],):
            raise ShapeError(f"expected a bias of shape ({out[1]},), got {s[2]}")
        return out

    def reference(self, inputs: list[Array]) -> Array:
        x, w = inputs[0].astype(np.float64), inputs[1].astype(np.float64)
        cfg = self.config
        (sh, sw), (dh, dw), g = cfg["strides"], cfg["dilation"], cfg["groups"]
        n, cin, h, wd = x.shape
        _, cout_g, kh, kw = w.shape
        full_h = (h - 1) * sh + dh * (kh - 1) + 1 + cfg["output_padding"][0]
        full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + cfg["output_padding"][1]
        full = np.zeros((n, cout_g * g, full_h, full_w))
        cin_g = cin // g
        for grp in range(g):
            xg = x[:, grp * cin_g : (grp + 1) * cin_g]
            wg = w[grp * cin_g : (grp + 1) * cin_g]
            for i in range(kh):
                for j in range(kw):
                    part = np.einsum("nchw,co->nohw", xg, wg[:, :, i, j])
                    full[
                        :,
                        grp * cout_g : (grp + 1) * cout_g,
                        i * dh : i * dh + (h - 1) * sh + 1 : sh,
                        j * dw : j * dw + (wd - 1) * sw + 1 : sw,
                    ] += part
        top, left, bottom, right = cfg["padding"]
        y = full[:, :, top : full_h - bottom, left : full_w - right]
        if len(inputs) > 2:
            y = y + inputs[2][:, None, None]
        return y.astype(inputs[0].dtype)


COORDINATE_MODES = (
    "half_pixel",
    "asymmetric",
    "align_corners",
    "pytorch_half_pixel",
)
"""ONNX's coordinate_transformation_mode values graph.resize takes, by index."""
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
"""ONNX's nearest_mode values, by index."""


def source_position(
    i: int, n_in: int, n_out: int, num: int, den: int, coord: int
) -> tuple[int, int]:
    """Output index `i`'s position in the input as the fraction (p, q), q > 0:
    ONNX's coordinate transformation with the scale num / den (out / in)."""
    mode = COORDINATE_MODES[coord]
    if mode == "align_corners":
        # i (n_in - 1) / (n_in scale - 1): the resized length before rounding,
        # which is n_out when sizes are given
        q = n_in * num - den
        return (i * (n_in - 1) * den, q) if q > 0 else (0, 1)
    if mode == "asymmetric":
        return (i * den, num)
    if mode == "pytorch_half_pixel" and n_out == 1:
        return (0, 1)
    # (i + 1/2) / scale - 1/2 = ((2 i + 1) den - num) / (2 num)
    return ((2 * i + 1) * den - num, 2 * num)


def nearest_index(p: int, q: int, nearest: int) -> int:
    """The input index nearest to p / q by ONNX's nearest_mode."""
    mode = NEAREST_MODES[nearest]
    if mode == "floor":
        return p // q
    if mode == "ceil":
        return -(-p // q)
    if mode == "round_prefer_ceil":
        return (2 * p + q) // (2 * q)
    return -((q - 2 * p) // (2 * q))  # round half down: ceil(p/q - 1/2)


@irdl_op_definition
class ResizeOp(GraphOp):
    """Nearest or linear resampling of every axis to `shape`, the scale of axis
    d being scale_num[d] / scale_den[d] (output over input); `coord` and
    `nearest` index `COORDINATE_MODES` and `NEAREST_MODES`. Linear resizes at
    most two axes (bilinear).

    %y = graph.resize %x {shape = [1, 3, 8, 8], scale_num = [1, 1, 2, 2],
           scale_den = [1, 1, 1, 1], coord = 1, nearest = 2, linear = false}
           : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
    """

    name = "graph.resize"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "shape": ("ints", REQUIRED),
        "scale_num": ("ints", REQUIRED),
        "scale_den": ("ints", REQUIRED),
        "coord": ("int", 0),
        "nearest": ("int", 0),
        "linear": ("bool", False),
    }
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        rank = len(s[0])
        for key in ("shape", "scale_num", "scale_den"):
            if len(cfg[key]) != rank:
                raise ShapeError(f"expected {rank} '{key}', got {list(cfg[key])}")
        if min(*cfg["shape"], *cfg["scale_num"], *cfg["scale_den"]) < 1:
            raise ShapeError("expected a positive shape and scales")
        if not 0 <= cfg["coord"] < len(COORDINATE_MODES):
            raise ShapeError(f"expected a coord in [0, 4), got {cfg['coord']}")
        if not 0 <= cfg["nearest"] < len(NEAREST_MODES):
            raise ShapeError(f"expected a nearest in [0, 4), got {cfg['nearest']}")
        resized = [d for d in range(rank) if cls._changes(s[0], cfg, d)]
        if cfg["linear"] and len(resized) > 2:
            raise ShapeError(f"expected linear resizing of 2 axes, got {resized}")
        return tuple(cfg["shape"])

    @staticmethod
    def _changes(shape: Shape, cfg: dict[str, Any], d: int) -> bool:
        return shape[d] != cfg["shape"][d] or cfg["scale_num"][d] != cfg["scale_den"][d]

    def taps(self, d: int) -> list[list[tuple[int, float]]]:
        """For axis d, each output index's (input index, weight) pairs."""
        cfg = self.config
        n_in = self.input.type.get_shape()[d]  # type: ignore[attr-defined]
        n_out, num, den = cfg["shape"][d], cfg["scale_num"][d], cfg["scale_den"][d]
        out = []
        for i in range(n_out):
            p, q = source_position(i, n_in, n_out, num, den, cfg["coord"])
            if not cfg["linear"]:
                k = nearest_index(p, q, cfg["nearest"])
                out.append([(min(max(k, 0), n_in - 1), 1.0)])
                continue
            lo, frac = p // q, (p % q) / q
            if lo < 0:
                lo, frac = 0, 0.0
            if lo >= n_in - 1:
                lo, frac = n_in - 1, 0.0
            out.append([(lo, 1 - frac), (min(lo + 1, n_in - 1), frac)])
        return out

    def reference(self, inputs: list[Array]) -> Array:
        y = inputs[0].astype(np.float64)
        for d in range(y.ndim):
            taps = self.taps(d)
            matrix = np.zeros((len(taps), y.shape[d]))
            for i, pairs in enumerate(taps):
                for k, weight in pairs:
                    matrix[i, k] += weight
            y = np.moveaxis(np.tensordot(matrix, np.moveaxis(y, d, 0), 1), 0, d)
        return y.astype(inputs[0].dtype)
