"""ONNX normalizations and data movement on computed tensors: LayerNormalization
(with its Mean and InvStdDev outputs), InstanceNormalization and
GroupNormalization (as graph.layer_norm), Slice and Split (as graph.slice),
Expand, Tile, Trilu, CumSum, CumProd, DepthToSpace and SpaceToDepth. Their
shape-like inputs (starts, ends, axes, steps, split sizes, shapes, repeats, k,
axis) must be known at import time; the converters register with
`onnx_ops.converter`.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_shapes import broadcast
from ember.frontends.onnx_fold import shape_of
from ember.frontends.onnx_ops import (
    CHECKS,
    CONST_INPUTS,
    ConversionError,
    NodeContext,
    _one_of,
    converter,
)

CONST_INPUTS.update(
    {
        "Slice": [(1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")],
        "Split": [(1, "split")],
        "Expand": [(1, "the shape")],
        "Tile": [(1, "repeats")],
        "Trilu": [(1, "k")],
        "CumSum": [(1, "axis")],
        "CumProd": [(1, "axis")],
    }
)
CHECKS.update(
    {
        "DepthToSpace": _one_of("mode", ["DCR", "CRD"], "DCR"),
        "SpaceToDepth": _one_of("mode", ["DCR", "CRD"], "DCR"),
    }
)


def _ints(c: NodeContext, i: int, what: str) -> list[int]:
    return [int(v) for v in np.asarray(c.const(i, what)).reshape(-1)]


# -- normalizations -------------------------------------------------------------------


@converter("LayerNormalization")
def _layer_norm(c: NodeContext):
    """graph.layer_norm; the optional Mean and InvStdDev outputs as reductions."""
    x = c.value(0)
    rank = len(shape_of(x))
    axis = c.attr("axis", -1) % rank
    eps = float(c.attr("epsilon", 1e-5))
    operands = [x, c.value(1)] + ([c.value(2)] if c.has(2) else [])
    outputs: list[SSAValue] = [c.emit(G.LayerNormOp, *operands, axis=axis, epsilon=eps)]
    wanted = [bool(name) for name in c.node.output[1:]]
    if any(wanted):
        axes = list(range(axis, rank))
        mean = c.emit(G.ReduceMeanOp, x, axes=axes, keepdims=True)
        outputs.append(mean)
        if len(wanted) > 1 and wanted[1]:
            centred = c.emit(G.SubOp, x, mean)
            var = c.emit(
                G.ReduceMeanOp,
                c.emit(G.MulOp, centred, centred),
                axes=axes,
                keepdims=True,
            )
            std = c.emit(G.SqrtOp, c.emit(G.AddOp, var, c.constant(eps)))
            outputs.append(c.emit(G.DivOp, c.constant(1.0), std))
    return outputs


def _per_channel(c: NodeContext, i: int, shape: tuple[int, ...]) -> SSAValue:
    """Input `i` (one value per channel or group) reshaped to `shape`."""
    return c.emit(G.ReshapeOp, c.value(i), shape=list(shape))


@converter("InstanceNormalization")
def _instance_norm(c: NodeContext):
    """graph.layer_norm over the spatial axes, scale and bias as (C, 1, ...)."""
    x = c.value(0)
    shape = shape_of(x)
    if len(shape) < 3:
        raise ConversionError(f"expected (N, C, D1, ...) data, got shape {shape}")
    channel = (shape[1],) + (1,) * (len(shape) - 2)
    scale, bias = _per_channel(c, 1, channel), _per_channel(c, 2, channel)
    eps = float(c.attr("epsilon", 1e-5))
    return [c.emit(G.LayerNormOp, x, scale, bias, axis=2, epsilon=eps)]


@converter("GroupNormalization")
def _group_norm(c: NodeContext):
    """graph.layer_norm of x as (N, G, C/G, D1 D2 ...) from axis 2; scale and
    bias per channel (opset 21's form: onnx's checker refuses 18's)."""
    x = c.value(0)
    shape = shape_of(x)
    groups = int(c.attr("num_groups"))
    if len(shape) < 3 or shape[1] % groups:
        raise ConversionError(
            f"expected (N, C, D1, ...) data with C divisible by {groups}, got {shape}"
        )
    n, channels = shape[:2]
    grouped = (n, groups, channels // groups, math.prod(shape[2:]))
    params = (groups, channels // groups, 1)
    scale, bias = _per_channel(c, 1, params), _per_channel(c, 2, params)
    y = c.emit(
        G.LayerNormOp,
        c.emit(G.ReshapeOp, x, shape=list(grouped)),
        scale,
        bias,
        axis=2,
        epsilon=float(c.attr("epsilon", 1e-5)),
    )
    return [c.emit(G.ReshapeOp, y, shape=list(shape))]


# -- data movement --------------------------------------------------------------------


def _slice(c: NodeContext, x: SSAValue, bounds: dict[int, tuple[int, int, int]]):
    """graph.slice of `x`; `bounds` maps an axis to ONNX's (start, end, step),
    which Python's slice rules resolve and clamp the way ONNX does."""
    shape = shape_of(x)
    starts, ends, steps = [], [], []
    for d, n in enumerate(shape):
        if d not in bounds or not isinstance(n, int):
            start, end, step = _symbolic_bounds(d, n, bounds.get(d))
        else:
            start, end, step = slice(*bounds[d]).indices(n)
        starts.append(start)
        ends.append(end)
        steps.append(step)
    if starts == [0] * len(shape) and ends == list(shape) and steps == [1] * len(shape):
        return x
    return c.emit(G.SliceOp, x, starts=starts, ends=ends, steps=steps)


def _symbolic_bounds(d: int, n, bound) -> tuple:
    """(start, end, step) of an axis kept whole (`bound` None) or sliced with
    known non-negative bounds on a symbolic extent `n`: ONNX's clamping of a
    huge end (INT64_MAX, `x[:, 2:]`) gives `n`; what needs n's value to
    resolve (a negative index) is refused."""
    if bound is None:
        return 0, n, 1
    start, end, step = bound
    if not all(isinstance(v, int) for v in (start, end, step)) or start < 0 or step < 1:
        raise ConversionError(
            f"expected known non-negative slice bounds on axis {d} of symbolic "
            f"extent {n}, got {start}:{end}:{step}"
        )
    return start, n if end >= 2**31 else end, step


@converter("Slice")
def _slice_node(c: NodeContext):
    x = c.value(0)
    rank = len(shape_of(x))
    starts, ends = _ints(c, 1, "starts"), _ints(c, 2, "ends")
    axes = _ints(c, 3, "axes") if c.has(3) else list(range(len(starts)))
    steps = _ints(c, 4, "steps") if c.has(4) else [1] * len(starts)
    if 0 in steps:
        raise ConversionError(f"expected non-zero steps, got {steps}")
    bounds = {
        a % rank: (s, e, st)
        for a, s, e, st in zip(axes, starts, ends, steps, strict=True)
    }
    return [_slice(c, x, bounds)]


@converter("Split")
def _split(c: NodeContext):
    x = c.value(0)
    shape = shape_of(x)
    axis = c.attr("axis", 0) % len(shape)
    n, count = shape[axis], len(c.node.output)
    if c.has(1):
        sizes = _ints(c, 1, "split")
    else:
        # num_outputs (18 on) or the outputs' count: equal parts, the last smaller
        parts = int(c.attr("num_outputs", count))
        sizes = [-(-n // parts)] * parts
        sizes[-1] = n - sizes[0] * (parts - 1)
    if sum(sizes) != n or any(s < 1 for s in sizes):
        raise ConversionError(
            f"expected positive split sizes summing to {n} on axis {axis}, got {sizes}"
        )
    offsets = np.cumsum([0, *sizes])
    return [
        _slice(c, x, {axis: (int(offsets[i]), int(offsets[i + 1]), 1)})
        for i in range(len(sizes))
    ]


@converter("Expand")
def _expand(c: NodeContext):
    x = c.value(0)
    target = _ints(c, 1, "the shape")
    if broadcast(shape_of(x), tuple(target)) == shape_of(x):
        return [x]
    return [c.emit(G.BroadcastToOp, x, shape=target)]


@converter("Tile")
def _tile(c: NodeContext):
    x = c.value(0)
    repeats = _ints(c, 1, "repeats")
    if all(r == 1 for r in repeats) and len(repeats) == len(shape_of(x)):
        return [x]
    return [c.emit(G.TileOp, x, repeats=repeats)]


@converter("Trilu")
def _trilu(c: NodeContext):
    k = _ints(c, 1, "k")[0] if c.has(1) else 0
    upper = bool(c.attr("upper", 1))
    return [c.emit(G.TriluOp, c.value(0), upper=upper, k=k)]


@converter("CumSum", "CumProd")
def _cumsum(c: NodeContext):
    (axis,) = _ints(c, 1, "axis")
    return [
        c.emit(
            G.CumProdOp if c.node.op_type == "CumProd" else G.CumSumOp,
            c.value(0),
            axis=axis,
            exclusive=bool(c.attr("exclusive", 0)),
            reverse=bool(c.attr("reverse", 0)),
        )
    ]


@converter("DepthToSpace")
def _depth_to_space(c: NodeContext):
    crd = c.attr("mode", "DCR") == "CRD"
    return [
        c.emit(G.DepthToSpaceOp, c.value(0), blocksize=c.attr("blocksize"), crd=crd)
    ]


@converter("SpaceToDepth")
def _space_to_depth(c: NodeContext):
    crd = c.attr("mode", "DCR") == "CRD"
    return [
        c.emit(G.SpaceToDepthOp, c.value(0), blocksize=c.attr("blocksize"), crd=crd)
    ]
