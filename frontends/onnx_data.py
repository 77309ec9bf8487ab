"""ONNX normalizations and data movement on computed tensors: LayerNormalization
(with its Mean and InvStdDev outputs), InstanceNormalization and
GroupNormalization (as graph.layer_norm), Slice and Split (as graph.slice),
Expand, Tile, Trilu, CumSum, CumProd, DepthToSpace and SpaceToDepth. Their
shape-like inputs (starts, ends, axes, steps, split sizes, shapes, repeats, k,
axis) must be known at import time; the converters register with
`onnx_ops.converter`.

Sizes computed from symbolic dims (`onnx_fold.SYMBOLIC_SIZES`) make ops of
what would fold: a Slice of an initializer to `seq` (GPT-2's causal mask
`bias[:, :, :t, :t]`) is a graph.slice whose end is `seq`, and the model's
`ember.bounds` get seq <= the sliced extent (the runtime refuses a longer
sequence, as the model cannot take one); ConstantOfShape and Expand to a
symbolic shape are a graph.broadcast_to; a Range to a symbolic limit is a
graph.range.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import NUMPY_TYPES, dtype_of
from ember.dialects.graph_shapes import broadcast
from ember.frontends.onnx_fold import Empty, shape_of
from ember.frontends.onnx_ops import (
    CHECKS,
    CONST_INPUTS,
    ConversionError,
    NodeContext,
    _one_of,
    converter,
)
from ember.runtime.shape_expr import Sym, SymExpr, evaluate, sym_eq, sym_le

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
    """Input `i` flattened: ints, and expressions where it was computed from
    symbolic dims (typed as ints, as `graph_shapes.Shape` is)."""
    values: list[Any] = [
        v if isinstance(v, SymExpr) else int(v)
        for v in np.asarray(c.const(i, what)).reshape(-1)
    ]
    return values


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
        bound = bounds.get(d)
        if bound is None or not all(isinstance(v, int) for v in (n, *bound)):
            start, end, step = _symbolic_bounds(d, n, bound)
        else:
            start, end, step = slice(*bound).indices(n)
        starts.append(start)
        ends.append(end)
        steps.append(step)
    if starts == [0] * len(shape) and ends == list(shape) and steps == [1] * len(shape):
        return x
    lengths = [
        len(range(a, b, st)) if all(isinstance(v, int) for v in (a, b)) else n
        for a, b, st, n in zip(starts, ends, steps, shape, strict=True)
    ]
    if 0 in lengths:  # empty (Phi-3's rotary pass-through `q[..., 16:]` of 16)
        return empty(x, lengths)
    return c.emit(G.SliceOp, x, starts=starts, ends=ends, steps=steps)


def empty(x: SSAValue, shape: list) -> Empty:
    """A slice of no elements of `x`, of the shape `shape` (0 on an axis)."""
    return Empty(tuple(shape), dtype_of(x.type.element_type))  # type: ignore[attr-defined]


def _symbolic_bounds(d: int, n, bound) -> tuple:
    """(start, end, step) of an axis kept whole (`bound` None) or sliced with
    a known start and step where its extent `n` or its end is symbolic:
    ONNX's clamping of a huge end (INT64_MAX, `x[:, 2:]`) or of one known to
    pass `n` gives `n`; a symbolic end must be bounded by `n` (`end_bound`);
    what needs a symbol's value to resolve (a negative index) is refused."""
    if bound is None:
        return 0, n, 1
    start, end, step = bound
    if isinstance(n, int) and isinstance(start, int) and start < 0:
        start = max(0, start + n)
    if (
        not all(isinstance(v, int) for v in (start, step))
        or start < 0
        or step < 1
        or (isinstance(end, int) and end < 0)
    ):
        raise ConversionError(
            f"expected a known non-negative start and step and a non-negative "
            f"end on axis {d} of extent {n}, got {start}:{end}:{step}"
        )
    if isinstance(end, int) and end >= 2**31 or sym_le(n, end):
        return start, n, step
    if isinstance(end, SymExpr) and not sym_le(end, n):
        end_bound(end, n, d)  # refuses an end it cannot bound
    return start, end, step


def end_bound(end: SymExpr, n, d: int = 0) -> tuple[str, int]:
    """(symbol, bound): the largest value of the one symbol in `end` (`seq`,
    `2 * seq + 1`) that keeps `end` within a known extent `n`, which the
    model's `ember.bounds` then record.

    Raises:
        ConversionError: `n` is symbolic or `end` is not linear in one symbol.
    """
    names = sorted(end.symbols())
    if isinstance(n, int) and len(names) == 1:
        (name,) = names
        b = evaluate(end, {name: 0})
        a = evaluate(end, {name: 1}) - b
        if a > 0 and sym_eq(end, a * Sym(name) + b) and n >= b + a:
            return name, (n - b) // a
    raise ConversionError(
        f"expected a slice end within the extent {n} of axis {d}, got {end}, "
        "which ember cannot bound by it; give the inputs' shapes (shape=...)"
    )


def implied_bounds(ops) -> dict[str, int]:
    """The bounds on size symbols that `ops`' slices need: a symbolic end on
    an axis of known extent (`bias[:, :, :t, :t]` of 1024 rows gives t <= 1024)."""
    bounds: dict[str, int] = {}
    for op in ops:
        if not isinstance(op, G.SliceOp):
            continue
        for d, (n, end) in enumerate(
            zip(shape_of(op.operands[0]), op.config["ends"], strict=True)
        ):
            if isinstance(end, SymExpr) and not sym_le(end, n):
                name, bound = end_bound(end, n, d)
                bounds[name] = min(bound, bounds.get(name, bound))
    return bounds


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


@converter("ConstantOfShape")
def _constant_of_shape(c: NodeContext):
    """A shape computed from symbolic dims (`torch.ones(t, t)`): the value
    broadcast to it; a known shape folds."""
    value = np.asarray(c.attr("value", np.zeros(1, np.float32))).reshape(())
    if value.dtype.name not in NUMPY_TYPES:
        raise ConversionError(
            f"expected a value among {', '.join(NUMPY_TYPES)}, got {value.dtype}"
        )
    fill = c.emit_op(G.ConstantOp.from_numpy(value))
    return [c.emit(G.BroadcastToOp, fill, shape=_ints(c, 0, "the shape"))]


@converter("Range")
def _range(c: NodeContext):
    """A limit computed from symbolic dims (`torch.arange(t)`): graph.range
    over a known start and delta, as the model's dtype; a known limit
    folds."""
    start, limit, delta = (c.const(i, what) for i, what in enumerate(_RANGE))
    first, step = start.item(), delta.item()
    if not all(isinstance(v, int) for v in (first, step)) or step == 0:
        raise ConversionError(
            f"expected an integer start and non-zero delta for a range to "
            f"{limit.item()}, got {first} and {step}"
        )
    y = c.emit(G.RangeOp, start=first, limit=limit.item(), delta=step)
    dtype = start.dtype.name
    return [y if dtype == "int64" else c.emit_op(G.CastOp.build_inferred(y, to=dtype))]


_RANGE = ("the start", "the limit", "the delta")


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
