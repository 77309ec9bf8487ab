"""ONNX tensor ops written in graph ops: ScatterND, ScatterElements and
TensorScatter (as graph.scatter_nd over index rows), GatherND and
GatherElements (a gather of the flattened data at linear indices), TopK (each
element's rank by pairwise comparison), Einsum (a batched matmul for two
operands, else broadcast products summed over the contracted letters),
Compress (a gather of the kept positions), Pad's edge, reflect and wrap modes
(a gather per axis), and CenterCropPad (a slice and a pad). What decides a
shape (TopK's k, Compress's condition, pads) must be known at import time.
The converters register with `onnx_ops.converter`.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_index import SCATTER_REDUCTIONS
from ember.frontends.onnx_fold import checked_shape, shape_of
from ember.frontends.onnx_ops import (
    CHECKS,
    CONST_INPUTS,
    ConversionError,
    NodeContext,
    _one_of,
    converter,
)
from ember.runtime.shape_expr import SymExpr

CHECKS.update(
    {
        "ScatterND": _one_of("reduction", SCATTER_REDUCTIONS, "none"),
        "ScatterElements": _one_of("reduction", SCATTER_REDUCTIONS, "none"),
        "TensorScatter": _one_of("mode", ["linear", "circular"], "linear"),
    }
)
CONST_INPUTS.update({"TopK": [(1, "k")], "Compress": [(1, "condition")]})


def _dtype(v: SSAValue) -> str:
    return dtype_of(v.type.element_type)  # type: ignore[attr-defined]


def _scalar(c: NodeContext, value: float | int | SymExpr, dtype: str) -> SSAValue:
    """A 0-d `value`; a size that is an expression computed at run time."""
    if isinstance(value, SymExpr):
        size = c.emit(G.SizesOp, values=[value], shape=[])
        return size if dtype == "int64" else c.emit(G.CastOp, size, to=dtype)
    return c.emit_op(G.ConstantOp.from_numpy(np.asarray(value, dtype)))


def _positions(c: NodeContext, shape: tuple, d: int, dtype: str) -> SSAValue:
    """Each position's index along axis `d` of `shape`, broadcastable to it
    (1 along the other axes): an import-time array, or a graph.range where
    the axis is symbolic."""
    n = shape[d]
    ones = [1] * len(shape)
    if isinstance(n, int):
        at = np.arange(n, dtype=dtype).reshape(ones[:d] + [n] + ones[d + 1 :])
        return c.array(at, f"positions{d}")
    at = c.emit(G.RangeOp, limit=n)
    at = at if dtype == "int64" else c.emit(G.CastOp, at, to=dtype)
    return c.emit(G.ReshapeOp, at, shape=ones[:d] + [n] + ones[d + 1 :])


def _offsets(c: NodeContext, shape: tuple, strides: list, axes: range | list, dtype):
    """sum of position[d] * strides[d] over `axes`, of a tensor of `shape`:
    an import-time array where the shape is known, else computed."""
    if all(isinstance(n, int) for n in shape):
        grid = np.indices(shape, dtype=dtype)
        zero = np.zeros(shape, dtype)
        return c.array(sum((grid[d] * strides[d] for d in axes), start=zero), "offsets")
    total: SSAValue | None = None
    for d in axes:
        term = _positions(c, shape, d, dtype)
        if strides[d] != 1:
            term = c.emit(G.MulOp, term, _scalar(c, strides[d], dtype))
        total = term if total is None else c.emit(G.AddOp, total, term)
    return total if total is not None else _scalar(c, 0, dtype)


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


@converter("TensorScatter")
def _tensor_scatter(c: NodeContext):
    """A cache update: the update's position j along `axis` of batch b goes to
    write_indices[b] + j (modulo the cache's extent when circular), written as
    graph.scatter_nd slices over the axes up to `axis`."""
    cache, update = c.value(0), c.value(1)
    rank = len(shape_of(cache))
    axis = _axis(c, rank, -2)
    if axis == 0:
        raise ConversionError("expected an axis after the batch axis, got 0")
    mode = c.attr("mode", "linear")
    lead = list(shape_of(update)[: axis + 1])
    grid = np.moveaxis(np.indices(lead, dtype=np.int64), 0, -1)
    if c.has(2):
        starts = c.emit(G.CastOp, c.value(2), to="int64")
        starts = c.emit(G.ReshapeOp, starts, shape=[lead[0]] + [1] * axis)
        at = c.emit(G.AddOp, starts, c.array(grid[..., axis], "steps"))
    else:
        at = c.array(grid[..., axis], "steps")
    if mode == "circular":
        extent = _scalar(c, shape_of(cache)[axis], "int64")
        at = c.emit(G.ModOp, at, extent)
    at = c.emit(G.ReshapeOp, at, shape=[*lead, 1])
    prefix = c.array(np.ascontiguousarray(grid[..., :axis]), "prefix")
    rows = c.emit(G.ConcatOp, prefix, at, axis=axis + 1)
    return [_scatter(c, cache, rows, update)]


# -- gathers --------------------------------------------------------------------------


def _wrapped(c: NodeContext, indices: SSAValue, extent: int | SSAValue) -> SSAValue:
    """`indices` with negative ones counted from the end of `extent`."""
    kind = _dtype(indices)
    if not isinstance(extent, SSAValue):
        extent = _scalar(c, extent, kind)
    negative = c.emit(G.LessOp, indices, _scalar(c, 0, kind))
    return c.emit(G.WhereOp, negative, c.emit(G.AddOp, indices, extent), indices)


def _column(c: NodeContext, rows: SSAValue, j: int) -> SSAValue:
    """rows[..., j], the last axis dropped."""
    *batch, q = shape_of(rows)
    starts = [0] * len(batch) + [j]
    ends = [*batch, j + 1]
    column = c.emit(
        G.SliceOp, rows, starts=starts, ends=ends, steps=[1] * (len(batch) + 1)
    )
    return c.emit(G.ReshapeOp, column, shape=batch)


def _flat_gather(c: NodeContext, data: SSAValue, linear: SSAValue, lead: int):
    """data's first `lead` axes flattened into one, gathered at `linear`."""
    shape = shape_of(data)
    flat = c.emit(G.ReshapeOp, data, shape=[math.prod(shape[:lead]), *shape[lead:]])
    return c.emit(G.GatherOp, flat, linear, axis=0)


@converter("GatherElements")
def _gather_elements(c: NodeContext):
    """data flattened, read at index * stride(axis) plus the other axes'
    offsets of each position (an import-time array)."""
    data, indices = c.value(0), c.value(1)
    shape = shape_of(data)
    axis = _axis(c, len(shape))
    kind = _dtype(indices)
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    others = [d for d in range(len(shape)) if d != axis]
    offsets = _offsets(c, shape_of(indices), strides, others, kind)
    linear = c.emit(
        G.MulOp,
        _wrapped(c, indices, shape[axis]),
        _scalar(c, strides[axis], kind),
    )
    linear = c.emit(G.AddOp, linear, offsets)
    return [_flat_gather(c, data, linear, len(shape))]


@converter("GatherND")
def _gather_nd(c: NodeContext):
    """data's batch and indexed axes flattened, read at each index row's
    linear position (the batch position an import-time array)."""
    data, indices = c.value(0), c.value(1)
    shape = shape_of(data)
    b = int(c.attr("batch_dims", 0))
    *batch, q = shape_of(indices)
    kind = _dtype(indices)
    indexed = shape[b : b + q]
    linear: SSAValue | None = None
    for j, n in enumerate(indexed):
        term = _wrapped(c, _column(c, indices, j), n)
        stride = math.prod(indexed[j + 1 :])
        if stride != 1:
            term = c.emit(G.MulOp, term, _scalar(c, stride, kind))
        linear = term if linear is None else c.emit(G.AddOp, linear, term)
    assert linear is not None
    if b:
        strides = [math.prod(shape[d + 1 : b]) * math.prod(indexed) for d in range(b)]
        linear = c.emit(
            G.AddOp, linear, _offsets(c, tuple(batch), strides, range(b), kind)
        )
    return [_flat_gather(c, data, linear, b + q)]


@converter("Compress")
def _compress(c: NodeContext):
    """A gather of the positions the condition keeps (along `axis`, or of the
    flattened input without one)."""
    x = c.value(0)
    keep = np.flatnonzero(c.const(1, "condition").astype(bool))
    if keep.size == 0:
        raise ConversionError("expected a condition keeping something, got none")
    if c.attr("axis") is None:
        x = c.emit(G.ReshapeOp, x, shape=[math.prod(shape_of(x))])
        axis = 0
    else:
        axis = _axis(c, len(shape_of(x)))
    if keep[-1] >= shape_of(x)[axis]:
        raise ConversionError(
            f"expected a condition over at most {shape_of(x)[axis]} positions, "
            f"got one keeping position {keep[-1]}"
        )
    positions = c.array(keep.astype(np.int64), "positions")
    return [c.emit(G.GatherOp, x, positions, axis=axis)]


# -- TopK -----------------------------------------------------------------------------


def _to_last(c: NodeContext, x: SSAValue, axis: int) -> tuple[SSAValue, list[int]]:
    """x with `axis` moved last, and the permutation that moves it back."""
    rank = len(shape_of(x))
    if axis == rank - 1:
        return x, []
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [perm.index(d) for d in range(rank)]
    return c.emit(G.TransposeOp, x, perm=perm), back


@converter("TopK")
def _top_k(c: NodeContext):
    """Each element's rank along the axis is the count of elements ahead of
    it (larger, or equal and at a lower index: onnxruntime's order); output
    position r holds the element of rank r. Quadratic in the axis' extent."""
    x = c.value(0)
    shape = shape_of(x)
    axis = _axis(c, len(shape), -1)
    n = shape[axis]
    k = int(np.asarray(c.const(1, "k")).reshape(-1)[0])
    if not 0 < k <= n:
        raise ConversionError(f"expected k in [1, {n}], got {k}")
    rows, back = _to_last(c, x, axis)
    lead = list(shape_of(rows)[:-1])
    mine = c.emit(G.ReshapeOp, rows, shape=[*lead, n, 1])
    theirs = c.emit(G.ReshapeOp, rows, shape=[*lead, 1, n])
    ahead = G.GreaterOp if c.attr("largest", 1) else G.LessOp
    checked_shape([n, n], np.bool_, "the tie-break mask")
    earlier = np.arange(n)[None, :] < np.arange(n)[:, None]  # [i, j]: j < i
    tie = c.emit(
        G.LogicalAndOp,
        c.emit(G.EqualOp, theirs, mine),
        c.array(earlier, "earlier"),
    )
    before = c.emit(G.LogicalOrOp, c.emit(ahead, theirs, mine), tie)
    rank = c.emit(
        G.ReduceSumOp,
        c.emit(G.CastOp, before, to="float32"),
        axes=[len(lead) + 1],
        keepdims=True,
    )
    slots = c.array(np.arange(k, dtype=np.float32)[None, :], "slots")
    chosen = c.emit(G.EqualOp, rank, slots)  # [..., i, r]
    positions = c.array(np.arange(n, dtype=np.float32)[:, None], "positions")
    zero = _scalar(c, 0.0, "float32")
    index = c.emit(
        G.ReduceSumOp,
        c.emit(G.WhereOp, chosen, positions, zero),
        axes=[len(lead)],
        keepdims=False,
    )
    index = c.emit(G.CastOp, index, to="int64")
    flat = c.emit(G.ReshapeOp, rows, shape=[math.prod(shape_of(rows))])
    offsets = (np.arange(math.prod(lead), dtype=np.int64) * n).reshape([*lead, 1])
    at = c.emit(G.AddOp, index, c.array(offsets, "row_offsets"))
    values = c.emit(G.GatherOp, flat, at, axis=0)
    if back:
        values = c.emit(G.TransposeOp, values, perm=back)
        index = c.emit(G.TransposeOp, index, perm=back)
    return [values, index]


# -- Einsum ---------------------------------------------------------------------------


def _einsum_terms(equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """Each operand's letters and the output's, an ellipsis spelled out as
    digits (the broadcast axes, right-aligned across operands)."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise ConversionError(
            f"expected {len(ranks)} terms in the equation, got '{equation}'"
        )
    width = max(
        (r - len(t.replace("...", "")) for t, r in zip(terms, ranks, strict=True)),
        default=0,
    )
    ellipsis = [str(d) for d in range(width)]

    def spell(term: str, rank: int | None) -> list[str]:
        head, dots, tail = term.partition("...")
        if not dots:
            return list(term)
        extra = (rank - len(head) - len(tail)) if rank is not None else width
        return [*head, *ellipsis[width - extra :], *tail]

    letters = [spell(t, r) for t, r in zip(terms, ranks, strict=True)]
    for t, r in zip(letters, ranks, strict=True):
        if len(t) != r or not all(ch.isalpha() or ch.isdigit() for ch in t):
            raise ConversionError(
                f"expected terms matching the operands' ranks {ranks}, got '{equation}'"
            )
    if arrow:
        out = spell(output, None)
    else:
        counts = [ch for t in letters for ch in t]
        out = ellipsis + sorted(
            ch for ch in set(counts) if ch.isalpha() and counts.count(ch) == 1
        )
    return letters, out


def _diagonal(c: NodeContext, x: SSAValue, letters: list[str]):
    """x with each repeated letter's axes reduced to their diagonal: the two
    axes moved last, flattened, and read with a step of n + 1."""
    while len(set(letters)) < len(letters):
        ch = next(ch for ch in letters if letters.count(ch) > 1)
        first = letters.index(ch)
        second = letters.index(ch, first + 1)
        rest = [d for d in range(len(letters)) if d not in (first, second)]
        x = c.emit(G.TransposeOp, x, perm=[*rest, first, second])
        shape = shape_of(x)
        n = shape[-1]
        if shape[-2] != n:
            raise ConversionError(
                f"expected equal extents for the repeated '{ch}', got {shape[-2:]}"
            )
        x = c.emit(G.ReshapeOp, x, shape=[*shape[:-2], n * n])
        x = c.emit(
            G.SliceOp,
            x,
            starts=[0] * (len(shape) - 1),
            ends=[*shape[:-2], n * n],
            steps=[1] * (len(shape) - 2) + [n + 1],
        )
        letters = [letters[d] for d in rest] + [ch]
    return x, letters


def _laid_out(c: NodeContext, x: SSAValue, letters: list[str], order: list[str]):
    """x (over `letters`) transposed to `order`, a subset of them."""
    perm = [letters.index(ch) for ch in order]
    if perm != list(range(len(perm))):
        x = c.emit(G.TransposeOp, x, perm=perm)
    return x


def _contraction(
    c: NodeContext, operands: list[SSAValue], terms: list[list[str]], out: list[str]
) -> SSAValue | None:
    """Two operands as one batched matmul: (batch, left, contracted) times
    (batch, contracted, right), then the output's order; None where the
    letters do not fit that form (a diagonal, a letter of one operand that the
    output drops, batch extents that broadcast)."""
    (a, b), (ta, tb) = operands, terms
    if len(set(ta)) < len(ta) or len(set(tb)) < len(tb):
        return None
    if any(ch not in out and ch not in tb for ch in ta) or any(
        ch not in out and ch not in ta for ch in tb
    ):
        return None
    batch = [ch for ch in out if ch in ta and ch in tb]
    left = [ch for ch in out if ch in ta and ch not in tb]
    right = [ch for ch in out if ch in tb and ch not in ta]
    inner = [ch for ch in ta if ch in tb and ch not in out]
    extents = dict(zip(ta, shape_of(a), strict=True))
    theirs = dict(zip(tb, shape_of(b), strict=True))
    if any(extents[ch] != theirs[ch] for ch in (*batch, *inner)):
        return None
    extents.update(theirs)

    def flat(x: SSAValue, letters: list[str], groups: list[list[str]]) -> SSAValue:
        x = _laid_out(c, x, letters, [ch for g in groups for ch in g])
        sizes = [math.prod(extents[ch] for ch in g) for g in groups]
        return c.emit(G.ReshapeOp, x, shape=sizes)

    y = c.emit(
        G.MatmulOp,
        flat(a, ta, [batch, left, inner]),
        flat(b, tb, [batch, inner, right]),
    )
    found = [*batch, *left, *right]
    y = c.emit(G.ReshapeOp, y, shape=[extents[ch] for ch in found])
    return _laid_out(c, y, found, out)


@converter("Einsum")
def _einsum(c: NodeContext):
    """Two float32 operands without diagonals: a batched matmul. Otherwise
    every operand laid out over all the equation's letters (output letters
    first, extent 1 where it lacks one), multiplied with broadcasting, and
    summed over the letters the output drops."""
    operands = [c.value(i) for i in range(len(c.inputs))]
    terms, out = _einsum_terms(c.attr("equation"), [len(shape_of(v)) for v in operands])
    seen = {ch for t in terms for ch in t}
    if not set(out) <= seen or len(set(out)) < len(out):
        raise ConversionError(
            f"expected distinct output letters among the inputs', got '{''.join(out)}'"
        )
    if len(operands) == 2 and _dtype(operands[0]) == "float32":  # matmul's dtype
        y = _contraction(c, operands, terms, out)
        if y is not None:
            return [y]
    everything = out + sorted(seen - set(out))
    product: SSAValue | None = None
    for x, letters in zip(operands, terms, strict=True):
        x, letters = _diagonal(c, x, letters)
        order = [ch for ch in everything if ch in letters]
        x = _laid_out(c, x, letters, order)
        extents = dict(zip(order, shape_of(x), strict=True))
        wide = [extents.get(ch, 1) for ch in everything]
        if wide != list(shape_of(x)):
            x = c.emit(G.ReshapeOp, x, shape=wide)
        product = x if product is None else c.emit(G.MulOp, product, x)
    assert product is not None
    dropped = list(range(len(out), len(everything)))
    if dropped:
        product = c.emit(G.ReduceSumOp, product, axes=dropped, keepdims=False)
    return [product]


_NUMPY_PAD: dict[str, Literal["edge", "reflect", "wrap"]] = {
    "edge": "edge",
    "reflect": "reflect",
    "wrap": "wrap",
}
"""ONNX Pad's gathering modes as numpy's `np.pad` names them (the positions
of a range padded so are the gathered ones)."""


# -- Pad and CenterCropPad ------------------------------------------------------------


def _crop_and_pad(
    c: NodeContext, x: SSAValue, begin: list[int], end: list[int], mode: str, value
) -> SSAValue:
    """x with `begin` / `end` elements added (removed where negative) on each
    axis: a slice, then graph.pad for constants or, for edge, reflect and
    wrap, a gather per axis of the positions numpy's pad of a range gives."""
    shape = shape_of(x)
    if any(p < 0 for p in (*begin, *end)):
        starts = [max(-b, 0) for b in begin]
        ends = [n - max(-e, 0) for n, e in zip(shape, end, strict=True)]
        if any(s >= e for s, e in zip(starts, ends, strict=True)):
            raise ConversionError(
                f"expected pads leaving every axis non-empty, got {begin + end} "
                f"on shape {shape}"
            )
        x = c.emit(G.SliceOp, x, starts=starts, ends=ends, steps=[1] * len(shape))
        shape = shape_of(x)
        begin, end = [max(b, 0) for b in begin], [max(e, 0) for e in end]
    if not any(begin) and not any(end):
        return x
    if mode == "constant":
        return c.emit(G.PadOp, x, pads=[*begin, *end], value=value)
    for axis, (n, b, e) in enumerate(zip(shape, begin, end, strict=True)):
        if b or e:
            where = np.pad(np.arange(n, dtype=np.int64), (b, e), mode=_NUMPY_PAD[mode])
            x = c.emit(G.GatherOp, x, c.array(where, f"{mode}{axis}"), axis=axis)
    return x


@converter("Pad")
def _pad(c: NodeContext):
    x = c.value(0)
    rank = len(shape_of(x))
    pads = c.ints(1, "pads")
    value = 0.0
    if c.has(2):
        value = float(c.const(2, "the padding value").ravel()[0])
    axes = [a % rank for a in c.ints(3, "axes")] if c.has(3) and rank else []
    n = len(axes) if c.has(3) else rank
    if len(pads) != 2 * n:
        raise ConversionError(
            f"expected {2 * n} pads (a begin and an end per axis), got {len(pads)}"
        )
    if c.has(3):
        full = [0] * (2 * rank)
        for j, axis in enumerate(axes):
            full[axis], full[rank + axis] = pads[j], pads[len(axes) + j]
        pads = full
    mode = c.attr("mode", "constant")
    return [_crop_and_pad(c, x, pads[:rank], pads[rank:], mode, value)]


@converter("CenterCropPad")
def _center_crop_pad(c: NodeContext):
    """Each listed axis cropped or zero-padded to its new extent, centred (the
    odd element taken from the end)."""
    x = c.value(0)
    shape = shape_of(x)
    rank = len(shape)
    wanted = [int(v) for v in np.asarray(c.const(1, "shape")).reshape(-1)]
    axes = [a % rank for a in c.attr("axes", range(rank))]
    if len(axes) != len(wanted):
        raise ConversionError(
            f"expected one extent per axis {axes}, got shape {wanted}"
        )
    begin, end = [0] * rank, [0] * rank
    for axis, size in zip(axes, wanted, strict=True):
        change = size - shape[axis]
        begin[axis] = change // 2 if change >= 0 else -(-change // 2)
        end[axis] = change - begin[axis]
    return [_crop_and_pad(c, x, begin, end, "constant", 0.0)]
