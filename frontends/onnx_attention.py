"""ONNX Attention (opsets 23, 24, 25) and RotaryEmbedding (23), written in the
graph ops their definitions compose (matmul, softmax, where, reshape, ...), as
onnx's reference and function bodies compute them.

Attention takes Q, K, V as (batch, heads, seq, size), or as (batch, seq, heads *
size) with `q_num_heads` and `kv_num_heads`; past_key and past_value are
concatenated before K and V on the sequence axis (present_key and
present_value). Q and K are each scaled by sqrt(`scale`) (1/sqrt(head_size) by
default), the scores optionally soft-capped (softcap * tanh(x / softcap)), then a
bias is added: the attn_mask (a bool mask as 0 / -inf, a float mask as it is,
padded with -inf to the whole key sequence), the window of keys each query
sees (query i at position p = i + offset sees key j iff p - left_window_size
<= j <= p + right_window_size, `is_causal` capping the right at 0; the offset
is the past length or, with nonpad_kv_seqlen, nonpad - q_len per batch) and
the keys past nonpad_kv_seqlen. A query row whose bias is -inf everywhere has
zero probabilities (softmax would give NaN). Grouped-query attention needs no
copy of K and V: the query heads sharing a key head are laid side by side as
rows of one matmul. `qk_matmul_output` is the scores raw (mode 0),
soft-capped (1), biased (2) or after the softmax (3). A bfloat16 softmax is
refused.

RotaryEmbedding rotates the first `rotary_embedding_dim` features (all by
default) of each head, as pairs (x[i], x[i + r/2]) or, `interleaved`, (x[2i],
x[2i + 1]): (x1 cos - x2 sin, x1 sin + x2 cos), with cos and sin gathered from
the caches at `position_ids` or given per (batch, seq) without them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.frontends.onnx_fold import checked_shape, graph_dtype, shape_of
from ember.frontends.onnx_ops import (
    CHECKS,
    AttributeCheck,
    ConversionError,
    NodeContext,
    _all,
    _one_of,
    converter,
)


def _at_least(name: str, least: int) -> AttributeCheck:
    def check(attrs: dict[str, Any], _opset: int) -> list[str]:
        value = attrs.get(name, least)
        return [] if value >= least else [f"{name}={value!r}"]

    return check


CHECKS.update(
    {
        "Attention": _all(
            _one_of("qk_matmul_output_mode", [0, 1, 2, 3], 0),
            _at_least("left_window_size", -1),
            _at_least("right_window_size", -1),
            _one_of("softmax_precision", [None, 1, 10, 11], None),
        ),
    }
)


def _dtype(x: SSAValue) -> str:
    return dtype_of(x.type.element_type)  # type: ignore[attr-defined]


def _scalar(c: NodeContext, value: float, dtype: str) -> SSAValue:
    return c.emit_op(G.ConstantOp.from_numpy(np.asarray(value, dtype)))


def _op(c: NodeContext, op: type[G.GraphOp], *operands: SSAValue) -> SSAValue:
    """`op` rounded to its operands' dtype, as numpy rounds each op: a kernel
    computes a float16 chain in float32 and rounds only where it writes
    (strategy/lower.py), so a float16 op is built as a float32 one and a cast."""
    if _dtype(operands[0]) != "float16":
        return c.emit(op, *operands)
    wide = [c.emit(G.CastOp, x, to="float32") for x in operands]
    return c.emit(G.CastOp, c.emit(op, *wide), to="float16")


def _matmul(c: NodeContext, a: SSAValue, b: SSAValue) -> SSAValue:
    """a @ b; float16 operands multiply in float32 (graph.matmul has no float16
    kernel), the product rounded back once."""
    if _dtype(a) != "float16":
        return c.emit(G.MatmulOp, a, b)
    a, b = (c.emit(G.CastOp, x, to="float32") for x in (a, b))
    return c.emit(G.CastOp, c.emit(G.MatmulOp, a, b), to="float16")


def _heads_first(c: NodeContext, x: SSAValue, heads: int | None, what: str):
    """A (batch, seq, heads * size) input as (batch, heads, seq, size)."""
    batch, seq, hidden = shape_of(x)
    if not heads or heads < 0 or hidden % heads:
        raise ConversionError(
            f"expected {what} dividing the hidden size {hidden} of a 3-D input, "
            f"got {heads}"
        )
    x = c.emit(G.ReshapeOp, x, shape=[batch, seq, heads, hidden // heads])
    return c.emit(G.TransposeOp, x, perm=[0, 2, 1, 3])


# -- Attention ------------------------------------------------------------------------


class _Bias:
    """The additive bias on the scores, built from its parts, and whether some
    query row may have every key masked (known from constant parts alone)."""

    def __init__(self, c: NodeContext, dtype: str):
        self.c, self.dtype = c, dtype
        self.parts: list[SSAValue] = []
        self.may_mask_a_row = False

    def add(self, part: SSAValue, may_mask_a_row: bool = True) -> None:
        self.parts.append(part)
        self.may_mask_a_row |= may_mask_a_row

    def select(self, keep: SSAValue) -> SSAValue:
        """0 where `keep`, -inf elsewhere."""
        zero = _scalar(self.c, 0.0, self.dtype)
        return self.c.emit(G.WhereOp, keep, zero, _scalar(self.c, -np.inf, self.dtype))

    def total(self) -> SSAValue | None:
        """The sum of the parts (built once), None without parts."""
        while len(self.parts) > 1:
            self.parts[:2] = [_op(self.c, G.AddOp, *self.parts[:2])]
        return self.parts[0] if self.parts else None


def _mask(c: NodeContext, bias: _Bias, kv_len: int) -> None:
    mask = c.value(3)
    shape = shape_of(mask)
    if not shape or shape[-1] > kv_len:
        raise ConversionError(
            f"expected an attn_mask whose last axis is at most the {kv_len} keys, "
            f"got shape {shape}"
        )
    if _dtype(mask) == "bool":
        mask = bias.select(mask)
    elif _dtype(mask) != bias.dtype:
        raise ConversionError(
            f"expected a bool or {bias.dtype} attn_mask, got {_dtype(mask)}"
        )
    if shape[-1] < kv_len:
        pads = [0] * (2 * len(shape))
        pads[-1] = kv_len - shape[-1]
        mask = c.emit(G.PadOp, mask, pads=pads, value=-math.inf)
    bias.add(mask)


def _window(c: NodeContext) -> tuple[int | None, int | None]:
    """How many keys before and after its position a query sees (None: all):
    the sliding window's sizes, the causal frontier capping the right at 0."""
    left, right = c.attr("left_window_size", -1), c.attr("right_window_size", -1)
    left, right = (None if n < 0 else n for n in (left, right))
    if c.attr("is_causal", 0):
        right = 0 if right is None else min(right, 0)
    return left, right


def _frontier(bias: _Bias, q_len: int, kv_len: int, offset: int) -> None:
    """Query i, at position i + offset, sees key j iff j is in its window: a
    constant."""
    left, right = _window(bias.c)
    if left is None and right is None:
        return
    checked_shape([q_len, kv_len], bias.dtype, "the window's bias")
    rows, cols = np.ogrid[:q_len, :kv_len]
    keep = np.ones((q_len, kv_len), np.bool_)
    if left is not None:
        keep &= cols >= rows + offset - left
    if right is not None:
        keep &= cols <= rows + offset + right
    array = np.where(keep, 0.0, -np.inf).astype(bias.dtype)
    name = f"{bias.c.node.output[0]}.window_bias"
    bias.add(bias.c._materialize(name, array), not keep.any(-1).all())


def _nonpad(c: NodeContext, bias: _Bias, batch: int, q_len: int, kv_len: int):
    """Keys at or past nonpad_kv_seqlen[b] masked; query i of batch b is at
    position i + nonpad[b] - q_len: key j is before its window's end iff j -
    i + q_len - right <= nonpad[b], after its start iff nonpad[b] <= j - i +
    q_len + left."""
    lengths = c.value(6)
    if shape_of(lengths) != (batch,):
        raise ConversionError(
            f"expected nonpad_kv_seqlen of shape ({batch},), got {shape_of(lengths)}"
        )
    lengths = c.emit(G.ReshapeOp, lengths, shape=[batch, 1, 1, 1])
    checked_shape([q_len, kv_len], np.int64, "the window's bounds")
    cols = np.arange(kv_len, dtype=np.int64).reshape(1, 1, 1, kv_len)
    name = c.node.output[0]
    keep = c.emit(G.LessOp, c._materialize(f"{name}.key_index", cols), lengths)
    distance = cols[0, 0] - np.arange(q_len, dtype=np.int64).reshape(q_len, 1) + q_len
    left, right = _window(c)
    if right is not None:
        end = c._materialize(f"{name}.window_end", distance - right)
        keep = c.emit(G.LogicalAndOp, keep, c.emit(G.LessEqualOp, end, lengths))
    if left is not None:
        start = c._materialize(f"{name}.window_start", distance + left)
        keep = c.emit(G.LogicalAndOp, keep, c.emit(G.LessEqualOp, lengths, start))
    bias.add(bias.select(keep))


def _softmax_steps(c: NodeContext, x: SSAValue) -> SSAValue:
    """Softmax in x's dtype as numpy computes it, for the dtypes graph.softmax
    (and, for float16, reduce_max and reduce_sum) has no kernel for: float64
    step by step; float16 in float32 steps rounded to float16 where numpy rounds
    (after x - max, exp and the sum), so that it matches onnx's reference to the
    bit, the quotient left in float32 for the caller to round."""
    last = len(shape_of(x)) - 1
    half = _dtype(x) == "float16"

    def rounded(v: SSAValue) -> SSAValue:
        if not half:
            return v
        return c.emit(G.CastOp, c.emit(G.CastOp, v, to="float16"), to="float32")

    if half:
        x = c.emit(G.CastOp, x, to="float32")
    top = c.emit(G.ReduceMaxOp, x, axes=[last], keepdims=True)
    e = rounded(c.emit(G.ExpOp, rounded(c.emit(G.SubOp, x, top))))
    total = rounded(c.emit(G.ReduceSumOp, e, axes=[last], keepdims=True))
    return c.emit(G.DivOp, e, total)


def _softmax(c: NodeContext, scores: SSAValue, bias: _Bias, dtype: str) -> SSAValue:
    """Softmax over the keys in `softmax_precision`, a row the bias masks
    entirely set to zeros, cast back to `dtype`."""
    precision = c.attr("softmax_precision")
    stash = graph_dtype(precision, "softmax_precision") if precision else dtype
    if stash != dtype:
        scores = c.emit(G.CastOp, scores, to=stash)
    if stash == "float32":
        probs = c.emit(G.SoftmaxOp, scores, axis=len(shape_of(scores)) - 1)
    else:
        probs = _softmax_steps(c, scores)
    total = bias.total()
    if total is not None and bias.may_mask_a_row:
        if dtype == "float16":  # graph.reduce_max has no float16 kernel
            total = c.emit(G.CastOp, total, to="float32")
        last = len(shape_of(total)) - 1
        top = c.emit(G.ReduceMaxOp, total, axes=[last], keepdims=True)
        empty = c.emit(G.EqualOp, top, _scalar(c, -np.inf, _dtype(total)))
        probs = c.emit(G.WhereOp, empty, _scalar(c, 0.0, _dtype(probs)), probs)
    for to in dict.fromkeys([stash, dtype]):
        if to != _dtype(probs):
            probs = c.emit(G.CastOp, probs, to=to)
    return probs


@converter("Attention")
def _attention(c: NodeContext):
    q, k, v = c.value(0), c.value(1), c.value(2)
    rank = len(shape_of(q))
    if rank not in (3, 4) or len(shape_of(k)) != rank or len(shape_of(v)) != rank:
        raise ConversionError(
            "expected Q, K and V all 3-D or all 4-D, got shapes "
            f"{shape_of(q)}, {shape_of(k)} and {shape_of(v)}"
        )
    dtype = _dtype(q)
    if _dtype(k) != dtype or _dtype(v) != dtype:
        raise ConversionError(
            f"expected K and V of Q's dtype {dtype}, got {_dtype(k)} and {_dtype(v)}"
        )
    if rank == 3:
        q = _heads_first(c, q, c.attr("q_num_heads"), "q_num_heads")
        k = _heads_first(c, k, c.attr("kv_num_heads"), "kv_num_heads")
        v = _heads_first(c, v, c.attr("kv_num_heads"), "kv_num_heads")
    if c.has(4) != c.has(5):
        raise ConversionError("expected past_key and past_value together, got one")
    past = shape_of(c.value(4))[2] if c.has(4) else 0
    if c.has(4):
        k = c.emit(G.ConcatOp, c.value(4), k, axis=2)
        v = c.emit(G.ConcatOp, c.value(5), v, axis=2)
    present_key, present_value = k, v
    batch, q_heads, q_len, head = shape_of(q)
    kv_heads, kv_len = shape_of(k)[1:3]
    if q_heads % kv_heads:
        raise ConversionError(
            f"expected the query heads ({q_heads}) a multiple of the key heads "
            f"({kv_heads}), got a remainder"
        )
    group = q_heads // kv_heads

    root = _scalar(c, math.sqrt(c.attr("scale", 1.0 / math.sqrt(head))), dtype)
    q = _op(c, G.MulOp, q, root)
    k = c.emit(G.TransposeOp, _op(c, G.MulOp, k, root), perm=[0, 1, 3, 2])
    # the `group` query heads of one key head are consecutive: as rows of one
    # (group * q_len) x kv_len product, K is never repeated
    q = c.emit(G.ReshapeOp, q, shape=[batch, kv_heads, group * q_len, head])
    scores = _matmul(c, q, k)
    scores = c.emit(G.ReshapeOp, scores, shape=[batch, q_heads, q_len, kv_len])
    stages = [scores]
    softcap = float(c.attr("softcap", 0.0))
    if softcap > 0.0:
        cap = _scalar(c, softcap, dtype)
        scores = _op(c, G.MulOp, _op(c, G.TanhOp, _op(c, G.DivOp, scores, cap)), cap)
    stages.append(scores)

    bias = _Bias(c, dtype)
    if c.has(3):
        _mask(c, bias, kv_len)
    if c.has(6):
        if past:
            raise ConversionError(
                "expected nonpad_kv_seqlen without past_key and past_value, got both"
            )
        _nonpad(c, bias, batch, q_len, kv_len)
    else:
        _frontier(bias, q_len, kv_len, past)
    total = bias.total()
    if total is not None:
        scores = _op(c, G.AddOp, scores, total)
    stages.append(scores)

    probs = _softmax(c, scores, bias, dtype)
    stages.append(probs)
    probs = c.emit(G.ReshapeOp, probs, shape=[batch, kv_heads, group * q_len, kv_len])
    y = _matmul(c, probs, v)
    v_head = shape_of(v)[3]
    y = c.emit(G.ReshapeOp, y, shape=[batch, q_heads, q_len, v_head])
    if rank == 3:
        y = c.emit(G.TransposeOp, y, perm=[0, 2, 1, 3])
        y = c.emit(G.ReshapeOp, y, shape=[batch, q_len, q_heads * v_head])
    qk = stages[c.attr("qk_matmul_output_mode", 0)]
    return [y, present_key, present_value, qk]


# -- RotaryEmbedding ------------------------------------------------------------------


def _last_axis(c: NodeContext, x: SSAValue, start: int, end: int, step: int = 1):
    shape = shape_of(x)
    n = len(shape)
    starts, ends = [0] * (n - 1) + [start], [*shape[:-1], end]
    return c.emit(G.SliceOp, x, starts=starts, ends=ends, steps=[1] * (n - 1) + [step])


def _cache(c: NodeContext, i: int, shape: list[int], what: str) -> SSAValue:
    """cos_cache (i=1) or sin_cache (2) as (batch, seq, rotated / 2), gathered at
    position_ids if given, reshaped to `shape` to broadcast over the heads."""
    cache = c.value(i)
    if c.has(3):
        cache = c.emit(G.GatherOp, cache, c.value(3), axis=0)
    want = (shape[0], shape[1] * shape[2], shape[3])
    if shape_of(cache) != want:
        raise ConversionError(f"expected {what} of shape {want}, got {shape_of(cache)}")
    return c.emit(G.ReshapeOp, cache, shape=shape)


@converter("RotaryEmbedding")
def _rotary_embedding(c: NodeContext):
    x = c.value(0)
    shape = shape_of(x)
    if len(shape) == 4:
        batch, _, seq, head = shape
        broadcast = [batch, 1, seq]
    elif len(shape) == 3:
        batch, seq, hidden = shape
        heads = c.attr("num_heads")
        if not heads or heads < 0 or hidden % heads:
            raise ConversionError(
                f"expected num_heads dividing the hidden size {hidden} of a 3-D "
                f"input, got {heads}"
            )
        head = hidden // heads
        x = c.emit(G.ReshapeOp, x, shape=[batch, seq, heads, head])
        broadcast = [batch, seq, 1]
    else:
        raise ConversionError(f"expected a 3-D or 4-D input, got shape {shape}")
    rotated = c.attr("rotary_embedding_dim", 0) or head
    if rotated % 2 or rotated > head:
        raise ConversionError(
            f"expected an even rotary_embedding_dim at most the head size {head}, "
            f"got {rotated}"
        )
    half = rotated // 2
    cos = _cache(c, 1, [*broadcast, half], "cos_cache")
    sin = _cache(c, 2, [*broadcast, half], "sin_cache")
    if c.attr("interleaved", 0):
        x1, x2 = _last_axis(c, x, 0, rotated, 2), _last_axis(c, x, 1, rotated, 2)
    else:
        x1, x2 = _last_axis(c, x, 0, half), _last_axis(c, x, half, rotated)
    real = _op(c, G.SubOp, _op(c, G.MulOp, cos, x1), _op(c, G.MulOp, sin, x2))
    imag = _op(c, G.AddOp, _op(c, G.MulOp, sin, x1), _op(c, G.MulOp, cos, x2))
    lead = list(shape_of(real)[:-1])
    if c.attr("interleaved", 0):
        pair = [*lead, half, 1]
        real = c.emit(G.ReshapeOp, real, shape=pair)
        imag = c.emit(G.ReshapeOp, imag, shape=pair)
        y = c.emit(G.ConcatOp, real, imag, axis=4)
        y = c.emit(G.ReshapeOp, y, shape=[*lead, rotated])
    else:
        y = c.emit(G.ConcatOp, real, imag, axis=3)
    if rotated < head:
        y = c.emit(G.ConcatOp, y, _last_axis(c, x, rotated, head), axis=3)
    if len(shape) == 3:
        y = c.emit(G.ReshapeOp, y, shape=list(shape))
    return [y]
