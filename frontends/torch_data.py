"""Core aten operators that move, select and compare data, to graph ops:
reshapes, expand, select, slice and split, embedding lookups, permutes, cat and
pad, comparisons, logical ops and `where`, casts, and the identities (clone,
dropout in eval, ...). They register
with `torch_ops.converter`, as the compute ops in `torch_ops.py` do.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from ember.dialects import graph as G
from ember.frontends.torch_ops import ConversionError, OpContext, converter, shape_of


@converter("view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "flatten")
def _reshape(c: OpContext, x, *_args, **_kwargs):
    shape = list(c.out_shape)
    if list(shape_of(x)) == shape:
        return x
    return c.emit(G.ReshapeOp, x, shape=shape)


@converter("expand")
def _expand(c: OpContext, x, *_args, **_kwargs):
    shape = list(c.out_shape)
    if list(shape_of(x)) == shape:
        return x
    return c.emit(G.BroadcastToOp, x, shape=shape)


def _slice(c: OpContext, x, dim: int, start: int, end: int, step: int):
    shape = shape_of(x)
    dim %= len(shape)
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], ends[dim], steps[dim] = start, end, step
    return c.emit(G.SliceOp, x, starts=starts, ends=ends, steps=steps)


@converter("select")
def _select(c: OpContext, x, dim: int, index: int):
    n = shape_of(x)[dim]
    index %= n
    y = _slice(c, x, dim, index, index + 1, 1)
    return c.emit(G.ReshapeOp, y, shape=list(c.out_shape))


@converter("slice")
def _slice_tensor(c: OpContext, x, dim=0, start=None, end=None, step=1):
    n = shape_of(x)[dim]
    # torch's bounds: negative from the end, then clamped to [0, n]
    start, end = (0 if start is None else start), (n if end is None else end)
    start, end = (min(max(v + n if v < 0 else v, 0), n) for v in (start, end))
    if start >= end:
        raise ConversionError(f"expected a non-empty slice, got {start}:{end}")
    if (start, end, step) == (0, n, 1):
        return x
    return _slice(c, x, dim, start, end, step)


_COMPARE = {
    "eq": G.EqualOp,
    "lt": G.LessOp,
    "le": G.LessEqualOp,
    "gt": G.GreaterOp,
    "ge": G.GreaterEqualOp,
    "logical_and": G.LogicalAndOp,
    "logical_or": G.LogicalOrOp,
}


@converter(*_COMPARE, "ne")
def _compare(c: OpContext, a, b):
    if c.op == "ne":
        return c.emit(G.LogicalNotOp, c.emit(G.EqualOp, a, b))
    return c.emit(_COMPARE[c.op], a, b)


@converter("logical_not", "bitwise_not")
def _logical_not(c: OpContext, x):
    if c.node.meta["val"].dtype != torch.bool:
        raise ConversionError("expected a bool tensor (bitwise not of integers)")
    return c.emit(G.LogicalNotOp, x)


@converter("any")
def _any(c: OpContext, x, dim=None, keepdim=False):
    """max over the axes of x as 0 / 1 floats, then > 0."""
    dims = [dim] if isinstance(dim, int) else list(dim or range(len(shape_of(x))))
    y = c.emit(G.CastOp, x, to="float32")
    y = c.emit(G.ReduceMaxOp, y, axes=dims, keepdims=bool(keepdim))
    return c.emit(G.GreaterOp, y, 0.0)


@converter("where")
def _where(c: OpContext, cond, a, b):
    return c.emit(G.WhereOp, cond, a, b)


@converter("full_like", "full")
def _full(c: OpContext, x, value, **_kwargs):
    return c.emit(G.BroadcastToOp, float(value), shape=list(c.out_shape))


@converter("permute")
def _permute(c: OpContext, x, dims):
    rank = len(shape_of(x))
    return c.emit(G.TransposeOp, x, perm=[d % rank for d in dims])


@converter("transpose", "t")
def _transpose(c: OpContext, x, d0=0, d1=1):
    perm = list(range(len(shape_of(x))))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return c.emit(G.TransposeOp, x, perm=perm)


@converter("split_with_sizes", "split")
def _split(c: OpContext, x, sizes, dim=0):
    n = shape_of(x)[dim]
    if isinstance(sizes, int):  # split.Tensor: chunks of `sizes`, the last shorter
        sizes = [min(sizes, n - start) for start in range(0, n, sizes)]
    starts = np.cumsum([0, *sizes])
    return tuple(
        _slice_tensor(c, x, dim, int(a), int(b)) for a, b in itertools.pairwise(starts)
    )


@converter("embedding")
def _embedding(c: OpContext, weight, indices, *_args, **_kwargs):
    """Rows of `weight` (padding_idx and sparse only matter to training)."""
    return c.emit(G.GatherOp, weight, indices, axis=0)


@converter("_assert_tensor_metadata")
def _assert_metadata(c: OpContext, *_args, **_kwargs) -> tuple:
    """The exporter's check of a value's dtype and shape, true by construction:
    no value."""
    return ()


@converter("cat", "concat")
def _cat(c: OpContext, tensors, dim=0):
    return c.emit(G.ConcatOp, *tensors, axis=dim)


@converter("constant_pad_nd")
def _pad(c: OpContext, x, pad, value=0.0):
    rank = len(shape_of(x))
    if any(p < 0 for p in pad):
        raise ConversionError(f"expected non-negative pads, got {list(pad)}")
    begin, end = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # torch pads the last axis first
        begin[rank - 1 - i], end[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return c.emit(G.PadOp, x, pads=begin + end, value=float(value))


@converter("clone", "alias", "detach", "contiguous", "lift_fresh_copy", "dropout")
def _identity(c: OpContext, x, *_args, **_kwargs):
    return x


@converter("_to_copy")
def _to_copy(c: OpContext, x, dtype=None, **_kwargs):
    """A copy, cast where `dtype` (one of `DTYPES`) differs."""
    to = str(dtype).removeprefix("torch.") if dtype is not None else None
    if isinstance(x, np.ndarray):
        return x if to is None else x.astype(to)
    if to is None or str(c.node.args[0].meta["val"].dtype) == f"torch.{to}":
        return x
    return c.emit(G.CastOp, x, to=to)
