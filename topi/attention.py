"""Scaled dot-product attention in one kernel (graph.attention):
softmax(q @ kt * scale + mask) @ v, the softmax along the keys.

    q = te.placeholder((1, 12, 197, 64), name="q")
    kt = te.placeholder((1, 12, 64, 197), name="kt")
    v = te.placeholder((1, 12, 197, 64), name="v")
    k = attention(q, kt, v, scale=0.125)
    mod = ember.build(k.schedule(), k.args, name="attention")

Three kernels (the scores' matmul, the softmax, the matmul by the values) write
a head's S x T scores and read them twice; here a tile of query rows computes
its scores, their softmax and its share of the result while the scores stay in
L1 (ViT-B/16's 11 rows x 224 keys: 10 KB):

- the keys are copied once into zero-padded panels of `nb` columns (nb / lanes
  vectors: the register tile of `topi.dense`), so no tile ends in a partial
  panel;
- per tile of `mt` query rows (parallel with the batch dims): the scores a
  panel at a time (the tile's accumulators in registers), scaled, the mask
  added, the padded keys -inf; the row maxima; e = exp(s - max) (`fastmath.exp`
  flushing what would be subnormal, as `topi.reduce.softmax`); the row sums; e
  times v a panel of result columns at a time, each row by 1 / its sum.

A row whose scores are all -inf (masked out) is NaN, as numpy's softmax
formula gives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ember import te
from ember.backends.llvm.target import Target
from ember.runtime.errors import EmberValueError
from ember.te.schedule import Schedule
from ember.topi import fastmath
from ember.topi.dense import _row_tile
from ember.topi.elementwise import broadcast_read, compute_of
from ember.topi.kernel import (
    Epilogue,
    Kernel,
    Knobs,
    accumulator_registers,
    apply_epilogue,
    epilogue_inputs,
)
from ember.topi.reduce import _row_reduce, _schedule_partials


def attention(
    q: te.Tensor,
    kt: te.Tensor,
    v: te.Tensor,
    mask: te.Tensor | None = None,
    *,
    scale: float = 1.0,
    fill: float = -math.inf,
    nan_to_zero: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] = (),
    name: str = "attention",
    target: Target | None = None,
) -> Kernel:
    """softmax(q @ kt * scale + mask) @ v for q (..., S, D), kt (..., D, T),
    v (..., T, E) of the same batch dims and a mask broadcasting to
    (..., S, T) (a boolean one: the scores where it is true, `fill`
    elsewhere), then the epilogue per result element.

    Args:
        q, kt, v, mask: placeholders.
        scale: the factor of the scores.
        fill: the score where a boolean mask is false.
        nan_to_zero: NaN probabilities are 0: a row whose sum is NaN (one
            NaN probability makes every one of the row NaN) is zeros.
        epilogue, epilogue_tensors: elementwise ops on the result and the
            tensors they read.
        target: the machine (None: `Target.current()`); static sizes only.

    Raises:
        EmberValueError: shapes that do not fit, or symbolic sizes.
    """
    shapes = [tuple(t.shape) for t in (q, kt, v)]
    if not all(isinstance(d, int) for s in shapes for d in s):
        raise EmberValueError(
            f"attention '{name}': expected static shapes, got {shapes}"
        )
    if not (q.ndim == kt.ndim == v.ndim >= 2) or not (
        q.shape[:-2] == kt.shape[:-2] == v.shape[:-2]
    ):
        raise EmberValueError(
            f"attention '{name}': expected q, kt, v of the same batch dims, got {shapes}"
        )
    *batch, rows, depth = q.shape
    keys, width = kt.shape[-1], v.shape[-1]
    if kt.shape[-2] != depth or v.shape[-2] != keys:
        raise EmberValueError(
            f"attention '{name}': expected kt (..., {depth}, T) and v (..., T, E), "
            f"got {shapes}"
        )
    machine = Target.resolve(target)
    lanes = machine.vector_lanes(q.dtype)
    nb = 2 * lanes
    mt, mp = _row_tile(rows, nb // lanes, machine)
    panels = -(-keys // nb)
    tp = panels * nb  # the keys padded to whole panels
    n = len(batch)
    bs = tuple(batch)

    def row(i: te.Expr) -> te.Expr:  # the padded rows repeat the last one
        return i if mp == rows else te.min(i, rows - 1)

    def key(j: te.Expr) -> te.Expr:  # the padded keys read the last one
        return j if tp == keys else te.min(j, keys - 1)

    def panel(*idx: te.Expr) -> te.Expr:  # zeros past the keys (a select: a
        # vector blend, every read in bounds)
        j = idx[n] * nb + idx[n + 2]
        value = kt[(*idx[:n], idx[n + 1], key(j))]
        return value if tp == keys else te.select(j < keys, value, 0.0)

    kp = te.compute((*bs, panels, depth, nb), panel, name=f"{name}.keys")
    rd = te.reduce_axis((0, depth), "rd")
    acc = te.compute(
        (*bs, mp, tp),
        lambda *idx: te.sum(
            q[(*idx[:n], row(idx[n]), rd)]
            * kp[(*idx[:n], idx[n + 1] // nb, rd, idx[n + 1] % nb)],
            axis=rd,
        ),
        name=f"{name}.qk",
    )
    full = (*bs, rows, keys)

    def score(*idx: te.Expr) -> te.Expr:
        *b, i, j = idx
        value = acc[idx] * scale
        # selects, not branches (every read is in bounds): vector blends; a
        # clamped index only where keys are padded (it makes a gather)
        if mask is not None:
            m = broadcast_read(mask, (*b, row(i), key(j)), full)
            if mask.dtype == "bool":  # the scores where it is true, else `fill`
                value = te.select(m, value, te.const(fill, "float32"))
            else:
                value = value + m
        if tp == keys:
            return value
        # the padded keys weigh nothing
        return te.select(j < keys, value, te.const(-math.inf, "float32"))

    scores = te.compute((*bs, mp, tp), score, name=f"{name}.scores")
    peak_partials, peak = _row_reduce(
        lambda r, k, _: scores[(*r, k)], (*bs, mp), tp, "fastmax", f"{name}.max", lanes
    )
    e = te.compute(
        (*bs, mp, tp),
        lambda *idx: fastmath.exp(
            scores[idx] - peak[idx[:-1]], flush=True, nonpositive=True
        ),
        name=f"{name}.exp",
    )
    rj = te.reduce_axis((0, keys), "rj")
    z = te.compute(
        (*bs, mp, width),
        lambda *idx: te.sum(e[(*idx[:-1], rj)] * v[(*idx[:n], rj, idx[-1])], axis=rj),
        name=f"{name}.pv",
    )
    total_partials, total = _row_reduce(
        lambda r, k, _: e[(*r, k)], (*bs, mp), tp, "sum", f"{name}.sum", lanes
    )

    # 1 / the sum read first: its stage then comes before z's in the nest,
    # which the bounds of the stages attached at one tile need
    def result(*idx: te.Expr) -> te.Expr:
        total_ = total[idx[:-1]]
        value = (1.0 / total_) * z[idx]
        if nan_to_zero:  # a NaN sum: NaN is the only value unequal to itself
            value = te.select(te.not_equal(total_, total_), te.const(0.0), value)
        return apply_epilogue(epilogue, value, tuple(idx))

    out = te.compute((*bs, rows, width), result, name=name)
    eb = nb if width % nb == 0 else width

    def schedule(s: Schedule, config: dict) -> None:
        *outer, ji = compute_of(s[kp]).axis
        s[kp].parallel(s[kp].fuse(*outer[:-1]) if len(outer) > 2 else outer[0])
        s[kp].vectorize(ji)
        *b, i, d = compute_of(s[out]).axis
        io, ii = s[out].split(i, factor=config["rows"])
        do, di = s[out].split(d, factor=eb)
        s[out].reorder(*b, io, do, ii, di)
        tile = s[out].fuse(*b, io) if b else io
        s[out].parallel(tile)
        s[out].unroll(ii)
        s[out].vectorize(di)
        # the scores a panel at a time, the tile's accumulators in registers
        s[scores].compute_at(s[out], tile)
        *_, si, sj = compute_of(s[scores]).axis
        jo, ji = s[scores].split(sj, factor=nb)
        s[scores].reorder(jo, si, ji)
        s[scores].unroll(si)
        s[scores].vectorize(ji)
        s[acc].compute_at(s[scores], jo)
        *_, ai, aj = compute_of(s[acc]).axis
        s[acc].reorder(*compute_of(s[acc]).reduce_axis, ai, aj)
        s[acc].unroll(ai)
        s[acc].vectorize(aj)
        for t, partials in ((peak, peak_partials), (e, None), (total, total_partials)):
            s[t].compute_at(s[out], tile)
            if partials is not None:
                _schedule_partials(s, partials, s[out], tile)
            else:
                s[t].vectorize(compute_of(s[t]).axis[-1])
        s[z].compute_at(s[out], do)
        *_, zi, zj = compute_of(s[z]).axis
        s[z].reorder(*compute_of(s[z]).reduce_axis, zi, zj)
        s[z].unroll(zi)
        s[z].vectorize(zj)

    # the row tile is the knob: divisors of the padded rows (the computation
    # stays) within the accumulator registers
    most = max(1, accumulator_registers(machine) // 2)
    tiles = {t for t in range(1, min(mp, most) + 1) if mp % t == 0} | {mt}
    knobs = Knobs({"rows": tuple(sorted(tiles))}, {"rows": mt}, schedule)
    inputs = [t for t in (q, kt, v, mask) if t is not None]
    return Kernel(
        out,
        [*inputs, *epilogue_inputs(epilogue_tensors)],
        schedule_fn=lambda s: schedule(s, knobs.default),
        attrs={
            "kernel": "attention",
            "tile": (mt, nb),
            "flops": 2 * math.prod(bs) * rows * keys * (depth + width),
        },
        knobs=knobs,
    )
