"""ONNX ops that index by values: Gather on computed tensors (the embedding
lookup of every transformer; a Gather whose inputs are all known at import is
folded by `onnx_fold`); ArgMax and ArgMin; Hardmax and OneHot, each a compare
of indices with the position range along one axis (no scatter op needed)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.frontends.onnx_fold import checked_shape, shape_of
from ember.frontends.onnx_ops import (
    CONST_INPUTS,
    ConversionError,
    NodeContext,
    converter,
)

CONST_INPUTS["OneHot"] = [(1, "depth")]


@converter("Gather")
def _gather(c: NodeContext):
    return [c.emit(G.GatherOp, c.value(0), c.value(1), axis=c.attr("axis", 0))]


@converter("ArgMax", "ArgMin")
def _arg_reduce(c: NodeContext):
    op = G.ArgMaxOp if c.node.op_type == "ArgMax" else G.ArgMinOp
    return [
        c.emit(
            op,
            c.value(0),
            axis=c.attr("axis", 0),
            keepdims=bool(c.attr("keepdims", 1)),
            select_last_index=bool(c.attr("select_last_index", 0)),
        )
    ]


def _positions(c: NodeContext, rank: int, axis: int, n: int, dtype: str) -> SSAValue:
    """0 .. n-1 along `axis` of a rank-`rank` tensor, 1 on every other axis."""
    shape = [1] * rank
    shape[axis] = checked_shape([n], dtype, "the positions")[0]
    return c.array(np.arange(n, dtype=dtype).reshape(shape), "positions")


def _axis(c: NodeContext, rank: int) -> int:
    axis = c.attr("axis", -1)
    if not -rank <= axis < rank:
        raise ConversionError(f"expected an axis in [{-rank}, {rank}), got {axis}")
    return axis % rank


@converter("Hardmax")
def _hardmax(c: NodeContext):
    """1 where x holds the first maximum along the axis (ArgMax's index equals
    the position), else 0."""
    x = c.value(0)
    shape = shape_of(x)
    axis = _axis(c, len(shape))
    first = c.emit(G.ArgMaxOp, x, axis=axis, keepdims=True)
    positions = _positions(c, len(shape), axis, shape[axis], "int64")
    hit = c.emit(G.EqualOp, first, positions)
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    return [c.emit(G.CastOp, hit, to=dtype)]


@converter("OneHot")
def _one_hot(c: NodeContext):
    """on_value where an index (negative ones wrap once) equals the position
    along the new axis, off_value elsewhere; depth must be known at import,
    the values [off, on] may be computed."""
    depth_array = c.const(1, "depth")
    if depth_array.size != 1:
        raise ConversionError(f"expected a scalar depth, got shape {depth_array.shape}")
    depth = int(depth_array.reshape(-1)[0])
    if depth < 1:
        raise ConversionError(f"expected a positive depth, got {depth}")
    indices = c.value(0)
    kind = dtype_of(indices.type.element_type)  # type: ignore[attr-defined]
    if kind not in ("int64", "int32"):  # ONNX takes any numeric indices
        indices = c.emit(G.CastOp, indices, to="int64")
        kind = "int64"
    shape = shape_of(indices)
    depth_value = c.emit_op(G.ConstantOp.from_numpy(np.asarray(depth, kind)))
    zero = c.emit_op(G.ConstantOp.from_numpy(np.asarray(0, kind)))
    negative = c.emit(G.LessOp, indices, zero)
    wrapped = c.emit(
        G.WhereOp, negative, c.emit(G.AddOp, indices, depth_value), indices
    )
    axis = _axis(c, len(shape) + 1)
    expanded = c.emit(G.ReshapeOp, wrapped, shape=[*shape[:axis], 1, *shape[axis:]])
    hit = c.emit(G.EqualOp, expanded, _positions(c, len(shape) + 1, axis, depth, kind))
    values = c.value(2)
    if shape_of(values) != (2,):
        raise ConversionError(
            f"expected values [off_value, on_value] of shape (2,), got "
            f"{shape_of(values)}"
        )
    off, on = (
        c.emit(
            G.ReshapeOp,
            c.emit(G.SliceOp, values, starts=[i], ends=[i + 1], steps=[1]),
            shape=[],
        )
        for i in (0, 1)
    )
    return [c.emit(G.WhereOp, hit, on, off)]
