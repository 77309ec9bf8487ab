"""Core aten operators that move, select and compare data, to graph ops:
reshapes, expand, select, slice and split, embedding lookups, permutes, cat and
pad, comparisons, logical ops and `where`, casts, and the identities (clone,
dropout in eval, ...). They register
with `torch_ops.converter`, as the compute ops in `torch_ops.py` do.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.frontends.torch_ops import ConversionError, OpContext, converter, shape_of
from ember.runtime.shape_expr import SymExpr


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
    start, end = (0 if start is None else start), (n if end is None else end)
    if any(isinstance(v, SymExpr) for v in (n, start, end)):
        return _symbolic_slice(c, x, dim, start, step)
    # torch's bounds: negative from the end, then clamped to [0, n]
    start, end = (min(max(v + n if v < 0 else v, 0), n) for v in (start, end))
    if start >= end:
        raise ConversionError(f"expected a non-empty slice, got {start}:{end}")
    if (start, end, step) == (0, n, 1):
        return x
    return _slice(c, x, dim, start, end, step)


def _symbolic_slice(c: OpContext, x, dim: int, start, step: int):
    """A slice whose bounds or axis are sizes: its length is the one torch
    derived under its guards (`mask[:, :t]`, `bias[:t]`), from a known
    start."""
    if not isinstance(start, int) or start < 0:
        raise ConversionError(
            f"expected a slice from a known, non-negative start, got {start}"
        )
    dim %= len(shape_of(x))
    length = c.out_shape[dim]
    if (start, step, length) == (0, 1, shape_of(x)[dim]):
        return x
    return _slice(c, x, dim, start, start + (length - 1) * step + 1, step)


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


@converter("bitwise_and", "bitwise_or")
def _bitwise(c: OpContext, a, b):
    """`&` and `|` of masks (HF's causal and padding masks)."""
    if c.node.meta["val"].dtype != torch.bool:
        raise ConversionError("expected bool tensors (bitwise and/or of integers)")
    return c.emit(G.LogicalAndOp if c.op == "bitwise_and" else G.LogicalOrOp, a, b)


def _as(c: OpContext, x: SSAValue, dtype: torch.dtype) -> SSAValue:
    name = str(dtype).removeprefix("torch.")
    return x if dtype_of(x.type.element_type) == name else c.emit(G.CastOp, x, to=name)  # type: ignore[attr-defined]


@converter("arange")
def _arange(c: OpContext, *args, **_kwargs):
    """arange(end), arange(start, end), arange(start, end, step) to a symbolic
    end (`torch.arange(t)`; a known one is folded at import)."""
    start, end, step = {1: (0, *args, 1), 2: (*args, 1), 3: args}[len(args)]
    if not isinstance(start, int) or not isinstance(step, int) or step == 0:
        raise ConversionError(
            f"expected an integer start and non-zero step, got {start} and {step}"
        )
    if not isinstance(end, SymExpr):
        y = c.value(np.arange(start, end, step, dtype=np.int64))
    else:
        y = c.emit(G.RangeOp, start=start, limit=end, delta=step)
    return _as(c, y, c.node.meta["val"].dtype)


@converter("cumsum")
def _cumsum(c: OpContext, x, dim, **_kwargs):
    """Running sums (integers sum as int64, as torch's do)."""
    y = c.emit(G.CumSumOp, x, axis=dim, exclusive=False, reverse=False)
    return _as(c, y, c.node.meta["val"].dtype)


@converter("index")
def _index(c: OpContext, x, indices):
    """Advanced indexing `x[..., i, j, ...]` by integer tensors on axes next
    to each other (broadcast against each other): x with those axes
    flattened, gathered at each position's linear index."""
    shape = shape_of(x)
    at = [axis for axis, i in enumerate(indices) if i is not None]
    if not at or at != list(range(at[0], at[0] + len(at))):
        raise ConversionError("expected index tensors on axes next to each other")
    first, last = at[0], at[-1] + 1
    linear = None
    for axis in at:
        i = c.value(indices[axis])
        if dtype_of(i.type.element_type) not in ("int64", "int32"):  # type: ignore[attr-defined]
            raise ConversionError(
                "expected integer index tensors (a bool mask "
                "gives a shape known only from its data)"
            )
        i = _as(c, i, torch.int64)
        n = c.scalar(shape[axis], "int64")
        i = c.emit(
            G.WhereOp,
            c.emit(G.LessOp, i, c.scalar(0, "int64")),
            c.emit(G.AddOp, i, n),
            i,
        )
        stride = math.prod(shape[axis + 1 : last])
        term = (
            i
            if isinstance(stride, int) and stride == 1
            else c.emit(G.MulOp, i, c.scalar(stride, "int64"))
        )
        linear = term if linear is None else c.emit(G.AddOp, linear, term)
    out = c.out_shape
    positions = list(out[first : len(out) - (len(shape) - last)])
    if list(shape_of(linear)) != positions:
        linear = c.emit(G.BroadcastToOp, linear, shape=positions)
    flat = [*shape[:first], math.prod(shape[first:last]), *shape[last:]]
    if list(flat) != list(shape):
        x = c.emit(G.ReshapeOp, x, shape=flat)
    return c.emit(G.GatherOp, x, linear, axis=first)


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
