"""ONNX tensor ops written in graph ops: ScatterND and ScatterElements (as
graph.scatter_nd over index rows), GatherND and GatherElements (a gather of
the flattened data at linear indices), TopK (each element's rank by pairwise
comparison), Einsum (broadcast products summed over the contracted letters),
Compress (a gather of the kept positions), Pad's edge, reflect and wrap modes
(a gather per axis), and CenterCropPad (a slice and a pad). What decides a
shape (TopK's k, Compress's condition, pads) must be known at import time.
The converters register with `onnx_ops.converter`.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_index import SCATTER_REDUCTIONS
from ember.frontends.onnx_fold import shape_of
from ember.frontends.onnx_ops import (
    CHECKS,
    CONST_INPUTS,
    ConversionError,
    NodeContext,
    _one_of,
    converter,
)

CHECKS.update(
    {
        "ScatterND": _one_of("reduction", SCATTER_REDUCTIONS, "none"),
        "ScatterElements": _one_of("reduction", SCATTER_REDUCTIONS, "none"),
    }
)
CONST_INPUTS.update({"TopK": [(1, "k")], "Compress": [(1, "condition")]})


def _dtype(v: SSAValue) -> str:
    return dtype_of(v.type.element_type)  # type: ignore[attr-defined]


def _scalar(c: NodeContext, value: float | int, dtype: str) -> SSAValue:
    return c.emit_op(G.ConstantOp.from_numpy(np.asarray(value, dtype)))


def _axis(c: NodeContext, rank: int, default: int = 0) -> int:
    axis = c.attr("axis", default)
    if not -rank <= axis < rank:
        raise ConversionError(f"expected an axis in [{-rank}, {rank}), got {axis}")
    return axis % rank


# -- scatter --------------------------------------------------------------------------


def _scatter(
    c: NodeContext, data: SSAValue, rows: SSAValue, updates: SSAValue
) -> SSAValue:
    """graph.scatter_nd of `updates` at index `rows` (..., q), both flattened
    to M rows."""
    *batch, q = shape_of(rows)
    m = math.prod(batch)
    rows = c.emit(G.ReshapeOp, rows, shape=[m, q])
    tail = list(shape_of(data)[q:])
    updates = c.emit(G.ReshapeOp, updates, shape=[m, *tail])
    reduction = SCATTER_REDUCTIONS.index(c.attr("reduction", "none"))
    return c.emit(G.ScatterNDOp, data, rows, updates, reduction=reduction)


@converter("ScatterND")
def _scatter_nd(c: NodeContext):
    return [_scatter(c, c.value(0), c.value(1), c.value(2))]


@converter("ScatterElements")
def _scatter_elements(c: NodeContext):
    """Element j of indices names the data element at j's own coordinates but
    on `axis`, where it names its index: the coordinate rows are the
    positions of every other axis (import-time constants) around indices."""
    data, indices = c.value(0), c.value(1)
    rank = len(shape_of(data))
    axis = _axis(c, rank)
    shape = shape_of(indices)
    kind = _dtype(indices)
    grid = np.moveaxis(np.indices(shape, dtype=kind), 0, -1)
    column = c.emit(G.ReshapeOp, indices, shape=[*shape, 1])
    parts = []
    if axis > 0:
        parts.append(c.array(np.ascontiguousarray(grid[..., :axis]), "before"))
    parts.append(column)
    if axis < rank - 1:
        parts.append(c.array(np.ascontiguousarray(grid[..., axis + 1 :]), "after"))
    rows = parts[0] if len(parts) == 1 else c.emit(G.ConcatOp, *parts, axis=rank)
    return [_scatter(c, data, rows, c.value(2))]
