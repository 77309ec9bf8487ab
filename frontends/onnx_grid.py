"""ONNX GridSample (2-D and 3-D data; nearest, linear and 2-D cubic
interpolation; zeros, border and reflection padding) and AffineGrid as
compositions of graph ops: the source coordinates are elementwise arithmetic
on the grid, each interpolation tap a graph.gather of the data laid out as
(N * spatial, C) rows at computed row numbers, weighted and summed;
AffineGrid is a matmul of an import-time base grid with theta. The converters
register with `onnx_ops.converter`."""

from __future__ import annotations

import itertools
import math

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.frontends.onnx_fold import shape_of
from ember.frontends.onnx_ops import (
    CHECKS,
    CONST_INPUTS,
    ConversionError,
    NodeContext,
    _all,
    _one_of,
    converter,
)

_MODES = {"bilinear": "linear", "bicubic": "cubic"}
"""GridSample's opset-16 mode names and their opset-20 spelling."""

CUBIC_A = -0.75
"""GridSample's cubic convolution coefficient (Keys' a, fixed by ONNX)."""

CHECKS.update(
    {
        "GridSample": _all(
            _one_of(
                "mode", ["linear", "nearest", "cubic", "bilinear", "bicubic"], "linear"
            ),
            _one_of("padding_mode", ["zeros", "border", "reflection"], "zeros"),
            _one_of("align_corners", [0, 1], 0),
        ),
        "AffineGrid": _one_of("align_corners", [0, 1], 0),
    }
)
CONST_INPUTS["AffineGrid"] = [(1, "size")]


class _Builder:
    """Elementwise graph ops on values of one float dtype, with Python
    numbers as scalar constants of that dtype."""

    def __init__(self, c: NodeContext, dtype: str):
        self.c, self.dtype = c, dtype

    def k(self, value: float) -> SSAValue:
        return self.c.emit_op(G.ConstantOp.from_numpy(np.asarray(value, self.dtype)))

    def op(self, op: type[G.GraphOp], a: SSAValue, b: SSAValue | float) -> SSAValue:
        return self.c.emit(op, a, self.k(b) if isinstance(b, float | int) else b)

    def reflect(self, v: SSAValue, low: float, high: float) -> SSAValue:
        """v folded into [low, high] by reflecting at its ends (a triangle
        wave of period 2 (high - low))."""
        span = high - low
        if span == 0:
            return self.c.emit(G.ClipOp, v, min=low, max=high)
        a = self.op(G.SubOp, v, low)
        periods = self.c.emit(G.FloorOp, self.op(G.MulOp, a, 1 / (2 * span)))
        t = self.op(G.SubOp, a, self.op(G.MulOp, periods, 2 * span))
        back = self.op(G.SubOp, self.op(G.MulOp, t, -1.0), -2 * span)
        return self.op(G.AddOp, self.c.emit(G.MinimumOp, t, back), low)

    def outside(self, v: SSAValue, low: float, high: float) -> SSAValue:
        below = self.c.emit(G.LessOp, v, self.k(low))
        return self.c.emit(
            G.LogicalOrOp, below, self.c.emit(G.GreaterOp, v, self.k(high))
        )


def _cubic_weights(b: _Builder, r: SSAValue) -> list[SSAValue]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for a
    source r in [0, 1) past tap 0."""
    a = CUBIC_A

    def near(d: SSAValue) -> SSAValue:  # |d| <= 1
        inner = b.op(G.SubOp, b.op(G.MulOp, d, a + 2), a + 3)
        return b.op(G.AddOp, b.op(G.MulOp, b.op(G.MulOp, inner, d), d), 1.0)

    def far(d: SSAValue) -> SSAValue:  # 1 < |d| < 2
        inner = b.op(G.MulOp, b.op(G.SubOp, d, 5.0), a)
        inner = b.op(G.AddOp, b.op(G.MulOp, inner, d), 8 * a)
        return b.op(G.SubOp, b.op(G.MulOp, inner, d), 4 * a)

    one_minus = b.op(G.SubOp, b.op(G.MulOp, r, -1.0), -1.0)
    return [
        far(b.op(G.AddOp, r, 1.0)),
        near(r),
        near(one_minus),
        far(b.op(G.AddOp, one_minus, 1.0)),
    ]


@converter("GridSample")
def _grid_sample(c: NodeContext):
    x, grid = c.value(0), c.value(1)
    shape, grid_shape = shape_of(x), shape_of(grid)
    k = len(shape) - 2
    mode = c.attr("mode", "linear")
    mode = _MODES.get(mode, mode)
    if k not in (2, 3) or grid_shape != (shape[0], *grid_shape[1:-1], k):
        raise ConversionError(
            f"expected 2-D or 3-D data and a grid (N, ..., {k}) of its batch, got "
            f"{shape} and {grid_shape}"
        )
    if mode == "cubic" and k != 2:
        raise ConversionError(f"expected 2-D data for mode='cubic', got {shape}")
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    if not np.issubdtype(dtype, np.floating):
        raise ConversionError(f"expected float data, got {dtype}")
    b = _Builder(c, dtype)
    n, channels, dims = shape[0], shape[1], shape[2:]
    points = math.prod(grid_shape[1:-1])
    align = bool(c.attr("align_corners", 0))
    padding = c.attr("padding_mode", "zeros")
    flat_grid = c.emit(G.ReshapeOp, grid, shape=[n, points, k])
    strides = [math.prod(dims[j + 1 :]) for j in range(k)]
    # each axis's taps: (row offset (N, P) int64, weight (N, P) or None)
    axis_taps: list[list[tuple[SSAValue, SSAValue | None]]] = []
    for j, d in enumerate(dims):
        # the grid's last axis holds (x, y[, z]): the data's axes reversed
        g = c.emit(
            G.SliceOp,
            flat_grid,
            starts=[0, 0, k - 1 - j],
            ends=[n, points, k - j],
            steps=[1, 1, 1],
        )
        g = c.emit(G.ReshapeOp, g, shape=[n, points])
        if align:
            v = b.op(G.MulOp, b.op(G.MulOp, b.op(G.AddOp, g, 1.0), 0.5), d - 1.0)
        else:
            v = b.op(G.MulOp, b.op(G.AddOp, g, 1.0), float(d))
            v = b.op(G.MulOp, b.op(G.SubOp, v, 1.0), 0.5)
        if mode == "nearest":
            v = c.emit(G.RoundOp, v)
        low, high = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
        # onnxruntime (as PyTorch) clamps only the taps of a cubic border
        # sample, not its source, where the reference clamps both
        if padding == "reflection" or (padding == "border" and mode != "cubic"):
            inside = (
                c.emit(G.ClipOp, v, min=0.0, max=d - 1.0)
                if padding == "border"
                else b.reflect(v, low, high)
            )
            v = c.emit(G.WhereOp, b.outside(v, low, high), inside, v)
        if mode == "nearest":
            positions: list[tuple[SSAValue, SSAValue | None]] = [(v, None)]
        else:
            base = c.emit(G.FloorOp, v)
            r = b.op(G.SubOp, v, base)
            if mode == "linear":
                weights = [b.op(G.SubOp, b.op(G.MulOp, r, -1.0), -1.0), r]
                offsets = [0.0, 1.0]
            else:
                weights, offsets = _cubic_weights(b, r), [-1.0, 0.0, 1.0, 2.0]
            positions = [
                (b.op(G.AddOp, base, o) if o else base, w)
                for o, w in zip(offsets, weights, strict=True)
            ]
        taps = []
        for t, w in positions:
            if padding == "zeros":
                valid = c.emit(G.LogicalNotOp, b.outside(t, 0.0, d - 1.0))
                w = c.emit(G.WhereOp, valid, w if w is not None else b.k(1.0), b.k(0.0))
            elif padding == "reflection":
                t = b.reflect(t, low, high)
            t = c.emit(G.ClipOp, t, min=0.0, max=d - 1.0)
            row = c.emit(G.CastOp, b.op(G.MulOp, t, float(strides[j])), to="int64")
            taps.append((row, w))
        axis_taps.append(taps)
    size = math.prod(dims)
    batch = np.arange(n, dtype=np.int64).reshape(n, 1) * size
    rows_of = c.emit(
        G.ReshapeOp,
        c.emit(G.TransposeOp, x, perm=[0, *range(2, k + 2), 1]),
        shape=[n * size, channels],
    )
    total: SSAValue | None = None
    for combo in itertools.product(*axis_taps):
        row = c.array(batch, "batch_rows")
        weight: SSAValue | None = None
        for t, w in combo:
            row = c.emit(G.AddOp, row, t)
            if w is not None:
                weight = w if weight is None else c.emit(G.MulOp, weight, w)
        term = c.emit(G.GatherOp, rows_of, row, axis=0)  # (N, P, C)
        if weight is not None:
            weight = c.emit(G.ReshapeOp, weight, shape=[n, points, 1])
            term = c.emit(G.MulOp, term, weight)
        total = term if total is None else c.emit(G.AddOp, total, term)
    assert total is not None
    y = c.emit(G.TransposeOp, total, perm=[0, 2, 1])
    return [c.emit(G.ReshapeOp, y, shape=[n, channels, *grid_shape[1:-1]])]


def _base_grid(dims: tuple[int, ...], align: bool) -> np.ndarray:
    """AffineGrid's (prod(dims), k + 1) homogeneous points (x, y[, z], 1),
    x along the last axis, each coordinate normalized to [-1, 1]."""
    axes = []
    for d in dims:
        i = np.arange(d, dtype=np.float64)
        if align:
            axes.append(-1 + 2 * i / (d - 1) if d > 1 else 0 * i - 1)
        else:
            axes.append(-1 + (2 * i + 1) / d)
    mesh = np.meshgrid(*axes, indexing="ij")
    columns = [m.reshape(-1) for m in reversed(mesh)]
    return np.stack([*columns, np.ones(math.prod(dims))], axis=1)


@converter("AffineGrid")
def _affine_grid(c: NodeContext):
    theta = c.value(0)
    size = [int(v) for v in c.const(1, "size").reshape(-1)]
    k = len(size) - 2
    n, rows, cols = shape_of(theta)
    if k not in (2, 3) or (rows, cols) != (k, k + 1) or size[0] != n:
        raise ConversionError(
            f"expected theta (N, 2, 3) with a size of 4 or (N, 3, 4) with 5, got "
            f"{shape_of(theta)} and size {size}"
        )
    dims = tuple(size[2:])
    dtype = dtype_of(theta.type.element_type)  # type: ignore[attr-defined]
    base = c.array(
        _base_grid(dims, bool(c.attr("align_corners", 0))).astype(dtype), "base"
    )
    grid = c.emit(G.MatmulOp, base, c.emit(G.TransposeOp, theta, perm=[0, 2, 1]))
    return [c.emit(G.ReshapeOp, grid, shape=[n, *dims, k])]
