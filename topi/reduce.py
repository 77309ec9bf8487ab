"""Reductions: reduce_sum / reduce_mean / reduce_max, softmax and log_softmax,
and a fused layer norm (mean and variance over the last axes).

    x = te.placeholder((4, 64, 64), name="x")
    k = softmax(x, axis=-1)
    mod = ember.build(k.schedule(), k.args, name="softmax")

A reduction's loop cannot be vectorized (its iterations depend on each other),
so the schedules vectorize across independent sums instead:

- when the innermost input axis is kept, the reduction loops run outside the
  vectorized innermost output axis (one vector of sums per row);
- when it is reduced, the row is reduced in two stages: `lanes` partial results
  (a vector of the target's: 16 float32 on AVX-512, 8 on AVX2), lane l combining
  the elements l, l + lanes, l + 2 lanes, ... (vectorized over l, guarded where
  lanes does not divide the row), then the partials. Summation order differs
  from numpy's pairwise order by a few ulp.

Softmax is numerically stable (max, exp of the difference, sum, divide): a row
of large values does not overflow; a row that is all -inf gives NaN as numpy's
formula does. Its exp is `fastmath.exp` with `flush`: an element below e^-87
times its row's largest is 0, not a subnormal (numpy's would be one). The input of every builder may be a
chain of injective computes over placeholders (the layer-norm pattern after
import: `reduce_mean(pow(x - mean, 2))`); pass the kernel's `placeholders`, and
the chain is inlined into the reduction's read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ember import te
from ember.backends.llvm.target import Target
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import SymExpr, sym_eq
from ember.te import Expr
from ember.te.schedule import Schedule
from ember.topi import fastmath
from ember.topi.elementwise import (
    MAX_REDUCER,
    PARALLEL_MIN_WORK,
    compute_of,
    inline_injective,
    nan_max,
    unique_stage_names,
)
from ember.topi.kernel import Epilogue, Kernel, apply_epilogue, epilogue_inputs

LONG_ROW = 1024
"""Rows at least this long keep four vectors of partial results."""

PROD_REDUCER = te.comm_reducer(lambda a, b: a * b, lambda t: 1, "prod")
"""A product: `PROD_REDUCER(expr, axis=k)` like `te.sum`."""

_COMBINERS: dict[str, tuple[Callable[..., Expr], float]] = {
    "sum": (te.sum, 0.0),
    "mean": (te.sum, 0.0),
    "max": (MAX_REDUCER, -math.inf),
    "prod": (PROD_REDUCER, 1.0),
    # NaN-dropping max (x86's vmaxps, one instruction; te.max's NaN-propagating
    # maximumf expands to several): for softmax, whose NaN spreads through
    # exp(x - max) and the sum anyway.
    "fastmax": (
        te.comm_reducer(
            lambda a, b: te.select(a > b, a, b), lambda t: -math.inf, "fastmax"
        ),
        -math.inf,
    ),
}


def normalize_axes(axes: Sequence[int] | None, ndim: int, what: str) -> list[int]:
    """`axes` as sorted non-negative axes (None or none given: every axis, as
    ONNX's empty axes and graph.reduce_* `axes = []`)."""
    if axes is None or len(axes) == 0:
        return list(range(ndim))
    out = sorted({a + ndim if a < 0 else a for a in axes})
    if any(not 0 <= a < ndim for a in out) or len(out) != len(list(axes)):
        raise EmberValueError(
            f"{what}: expected distinct axes in [{-ndim}, {ndim}), got {list(axes)}"
        )
    return out


def _inputs(x: te.Tensor, placeholders: Sequence[te.Tensor] | None) -> list[te.Tensor]:
    if placeholders is not None:
        return list(placeholders)
    if not isinstance(x.op, te.PlaceholderOp):
        raise EmberValueError(
            f"'{x.name}' is computed: pass the kernel's placeholders= as well"
        )
    return [x]


def inverse_count(count: int | SymExpr) -> float | Expr:
    """`1 / count` for a mean: a number, or a float expression of a symbolic
    count (`1 / (h * w)` over a pooled window of symbolic size)."""
    if isinstance(count, SymExpr):
        return 1.0 / te.Size(count).astype("float32")
    return 1.0 / count


def _row_reduce(
    read: Callable[[tuple[Expr, ...], Expr, list[te.Var]], Expr],
    rows: tuple[int, ...],
    length: int,
    kind: str,
    name: str,
    vector: int,
    extra: Sequence[int] = (),
) -> tuple[te.Tensor, te.Tensor]:
    """(partials, total): `kind` of read(row, k, extra_vars) over `k` in
    [0, length) and the `extra` reduction axes, for each row, through one
    `vector` (the target's lanes) of vectorizable partial results, four on long
    rows."""
    combine, identity = _COMBINERS[kind]
    pair = {
        "max": nan_max,
        "fastmax": lambda a, b: te.select(a > b, a, b),
        "prod": lambda a, b: a * b,
    }.get(kind, lambda a, b: a + b)
    # Long rows: four vectors of partials, four independent dependency chains
    # (one chain waits on the combine's latency every step).
    if isinstance(length, SymExpr):  # planned long or short; never the length
        lanes = 4 * vector if length >= LONG_ROW else vector
    else:
        lanes = 4 * vector if length >= LONG_ROW else min(vector, length)
    # A row of symbolic length: whole vectors of partials unguarded, the
    # last `length % lanes` elements folded in where the lanes combine (a
    # guard on every element would keep the partials from vectorizing).
    split = isinstance(length, SymExpr) and not extra
    guarded = not split and sym_eq(length % lanes, 0) is not True
    whole = length // lanes if split else -(-length // lanes)
    ko = te.reduce_axis((0, whole), "ko")
    others = [te.reduce_axis((0, e), f"r{n}") for n, e in enumerate(extra)]

    def partial(*idx: Expr) -> Expr:
        *row, lane = idx
        k = ko * lanes + lane
        value = read(tuple(row), k, others)
        if guarded:
            value = te.if_then_else(k < length, value, identity)
        return combine(value, axis=[*others, ko])

    def with_tail(row: tuple[Expr, ...], lane: Expr, value: Expr) -> Expr:
        if not split:
            return value
        k = whole * lanes + lane
        last = te.if_then_else(k < length, read(row, k, others), identity)
        return pair(value, last)

    partials = te.compute((*rows, lanes), partial, name=f"{name}.partial")
    # The lanes in a short tree (four chains): one chain of `lanes`
    # dependent adds per row would dominate short rows.
    ways = 4 if lanes % 4 == 0 else 1
    rl = te.reduce_axis((0, lanes // ways), "rl")

    def lanes_combined(*row: Expr) -> Expr:
        parts = [
            with_tail(row, lane, partials[(*row, lane)])
            for lane in (rl + q * (lanes // ways) for q in range(ways))
        ]
        while len(parts) > 1:
            parts = [pair(a, b) for a, b in zip(parts[::2], parts[1::2], strict=True)]
        return combine(parts[0], axis=rl)

    total = te.compute(rows, lanes_combined, name=f"{name}.total")
    return partials, total


def _schedule_partials(s: Schedule, partials: te.Tensor, at, loop) -> None:
    """The partial results computed inside `loop` of stage `at` (at the root
    when `loop` is None), the lanes innermost and vectorized."""
    stage = s[partials]
    if loop is not None:
        stage.compute_at(at, loop)
    lane = compute_of(stage).axis[-1]
    stage.reorder(*compute_of(stage).reduce_axis, lane)
    stage.vectorize(lane)


def reduce(
    x: te.Tensor,
    kind: str,
    axes: Sequence[int] | None = None,
    keepdims: bool = True,
    placeholders: Sequence[te.Tensor] | None = None,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] | None = None,
    name: str | None = None,
    target: Target | None = None,
) -> Kernel:
    """graph.reduce_sum / reduce_mean / reduce_max / reduce_prod over `axes`.

    Args:
        x: the input, a placeholder or an injective chain over `placeholders`.
        kind: "sum", "mean", "max" or "prod".
        axes: the reduced axes (negative from the end; None or []: all).
        keepdims: keep reduced axes as extent 1 (ONNX's default).
        placeholders: the kernel's data inputs when `x` is computed.
        epilogue: applied to each result with its output indices.
        epilogue_tensors: tensors the epilogue reads.
        target: whose vector lanes hold the partial results (None:
            `Target.current()`).
    """
    if kind not in _COMBINERS:
        raise EmberValueError(f"reduce: expected sum, mean, max or prod, got '{kind}'")
    name = name or f"reduce_{kind}"
    reduced = normalize_axes(axes, x.ndim, f"reduce_{kind}")
    kept = [d for d in range(x.ndim) if d not in reduced]
    count = math.prod(x.shape[d] for d in reduced)
    out_shape = tuple(
        1 if d in reduced else e for d, e in enumerate(x.shape) if keepdims or d in kept
    )
    combine, _ = _COMBINERS[kind]
    last_reduced = reduced[-1] == x.ndim - 1 if reduced else False

    def finish(value: Expr, idx: tuple[Expr, ...]) -> Expr:
        if kind == "mean":
            value = value * inverse_count(count)
        return apply_epilogue(epilogue, value, idx)

    def kept_indices(idx: tuple[Expr, ...]) -> list[Expr]:
        return [idx[d] for d in kept] if keepdims else list(idx)

    if last_reduced:
        # Rows: the kept axes; k: the last axis; the other reduced axes fold
        # into the partial results' reduction.
        outer = reduced[:-1]

        def read(row: tuple[Expr, ...], k: Expr, extra: list[te.Var]) -> Expr:
            index: list[Expr] = [k] * x.ndim
            for d, v in zip([*kept, *outer], [*row[: len(kept)], *extra], strict=True):
                index[d] = v
            return x[tuple(index)]

        partials, total = _row_reduce(
            read,
            tuple(x.shape[d] for d in kept) or (1,),
            x.shape[-1],
            kind,
            name,
            Target.resolve(target).vector_lanes(x.dtype),
            [x.shape[d] for d in outer],
        )
    else:
        raxes = [te.reduce_axis((0, x.shape[d]), f"r{d}") for d in reduced]

        def body(*idx: Expr) -> Expr:
            index: list[Expr] = [idx[0]] * x.ndim
            for d, v in zip([*kept, *reduced], [*idx, *raxes], strict=True):
                index[d] = v
            return combine(x[tuple(index)], axis=raxes)

        total = te.compute(tuple(x.shape[d] for d in kept), body, name=f"{name}.total")
        partials = None
    out = te.compute(
        out_shape,
        lambda *idx: finish(total[tuple(kept_indices(idx)) or (0,)], idx),
        name=name,
    )
    unique_stage_names(out)

    def schedule(s: Schedule) -> None:
        inline_injective(s)
        stage = s[out]
        axes_ = list(compute_of(stage).axis)
        work = math.prod(x.shape)
        if partials is not None and not axes_:  # a scalar result
            _schedule_partials(s, partials, stage, None)
            return
        if partials is not None:
            row = axes_[0] if len(axes_) == 1 else stage.fuse(*axes_)
            if work * 3 >= PARALLEL_MIN_WORK and math.prod(out_shape) > 1:
                stage.parallel(row)
            s[total].compute_at(stage, row)
            _schedule_partials(s, partials, stage, row)
            return
        # The innermost axis is kept: reduction loops outside it, vectorized.
        inner = s[total]
        *outer_axes, last = compute_of(inner).axis
        inner.reorder(*compute_of(inner).reduce_axis, last)
        inner.vectorize(last)
        if outer_axes and work * 3 >= PARALLEL_MIN_WORK:
            fused = outer_axes[0] if len(outer_axes) == 1 else inner.fuse(*outer_axes)
            inner.parallel(fused)
        *o_axes, o_last = axes_
        stage.vectorize(o_last)

    return Kernel(
        out,
        [*_inputs(x, placeholders), *epilogue_inputs(epilogue_tensors)],
        schedule_fn=schedule,
        attrs={"pattern": "reduce", "kind": kind},
    )


def softmax(
    x: te.Tensor,
    axis: int = -1,
    placeholders: Sequence[te.Tensor] | None = None,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] | None = None,
    name: str = "softmax",
    target: Target | None = None,
    log: bool = False,
) -> Kernel:
    """graph.softmax: exp(x - max) / sum(exp(x - max)) along `axis`; with
    `log`, graph.log_softmax: x - max - log(sum(exp(x - max))).

    Stages per row: the max (vectorized partials), e = exp(x - max) stored
    once, its sum (partials), the quotient (or the difference); all computed
    row by row inside the output's row loop, so a row stays in L1. The partials
    are `target`'s vector lanes (None: `Target.current()`).
    """
    vector = Target.resolve(target).vector_lanes(x.dtype)
    axis = normalize_axes([axis], x.ndim, "softmax")[0]
    length = x.shape[axis]
    rows = tuple(e for d, e in enumerate(x.shape) if d != axis)

    def full(row: tuple[Expr, ...], k: Expr) -> tuple[Expr, ...]:
        index = list(row)
        index.insert(axis, k)
        return tuple(index)

    def row_of(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(v for d, v in enumerate(idx) if d != axis)

    peak_partials, peak = _row_reduce(
        lambda r, k, _: x[full(r, k)], rows, length, "fastmax", f"{name}.max", vector
    )
    e = te.compute(
        x.shape,
        lambda *idx: fastmath.exp(
            x[idx] - peak[row_of(idx)], flush=True, nonpositive=True
        ),
        name=f"{name}.exp",
    )
    total_partials, total = _row_reduce(
        lambda r, k, _: e[full(r, k)], rows, length, "sum", f"{name}.sum", vector
    )

    def value(idx: tuple[Expr, ...]) -> Expr:
        row = row_of(idx)
        if log:
            return x[idx] - peak[row] - te.log(total[row])
        return e[idx] * (1.0 / total[row])  # one division per row

    out = te.compute(
        x.shape, lambda *idx: apply_epilogue(epilogue, value(idx), idx), name=name
    )
    unique_stage_names(out)

    def schedule(s: Schedule) -> None:
        inline_injective(s, keep=[e])
        _schedule_rows(
            s, out, axis, [(peak, peak_partials), (e, None), (total, total_partials)]
        )

    return Kernel(
        out,
        [*_inputs(x, placeholders), *epilogue_inputs(epilogue_tensors)],
        schedule_fn=schedule,
        attrs={"pattern": "softmax", "axis": axis},
    )


def _schedule_rows(
    s: Schedule,
    out: te.Tensor,
    axis: int,
    stages: Sequence[tuple[te.Tensor, te.Tensor | None]],
) -> None:
    """`out` row by row along `axis`. `stages` are the tensors before it, each
    with its lane partials when it is a row reduction.

    The last axis: rows fused (in parallel when large), every stage computed
    inside the row loop. Another axis: the stages at the root, the partials
    inside their reduction's innermost row loop (the lanes then gather along
    the strided axis)."""
    stage = s[out]
    shape = out.shape
    *outer, last = compute_of(stage).axis
    stage.vectorize(last)
    if axis == len(shape) - 1 and outer:
        row = outer[0] if len(outer) == 1 else stage.fuse(*outer)
        if math.prod(shape) * 16 >= PARALLEL_MIN_WORK:  # exp per element
            stage.parallel(row)
        for t, partials in stages:
            s[t].compute_at(stage, row)
            if partials is not None:
                _schedule_partials(s, partials, stage, row)
            else:
                s[t].vectorize(compute_of(t).axis[-1])
        return
    for t, partials in stages:
        axes = compute_of(t).axis
        if partials is not None:
            _schedule_partials(s, partials, s[t], axes[-1] if axes else None)
        elif axes:
            s[t].vectorize(axes[-1])


def layer_norm(
    x: te.Tensor,
    gamma: te.Tensor | None = None,
    beta: te.Tensor | None = None,
    epsilon: float = 1e-5,
    name: str = "layer_norm",
    target: Target | None = None,
    axis: int = -1,
    placeholders: Sequence[te.Tensor] | None = None,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] | None = None,
) -> Kernel:
    """(x - mean) / sqrt(var + eps) * gamma + beta, mean and variance over the
    axes from `axis` on (graph.layer_norm): one kernel, mean and variance per
    row, two passes over the row for an exact variance.

    Args:
        x: the input, a placeholder or an injective chain over `placeholders`.
        gamma, beta: optional scale and shift, broadcast to x (numpy's rule).
        axis: the first normalized axis (negative from the end).
        epilogue: applied to each result with its output indices.
        target: whose vector lanes hold the partial sums (None:
            `Target.current()`).
    """
    from ember.topi.elementwise import broadcast_read

    vector = Target.resolve(target).vector_lanes(x.dtype)
    axis = normalize_axes([axis], x.ndim, "layer_norm")[0]
    inner = x.shape[axis:]
    length = math.prod(inner)
    rows = x.shape[:axis] or (1,)
    for t in (gamma, beta):
        if t is not None and (
            t.ndim > x.ndim
            or any(
                e not in (1, n)
                for e, n in zip(t.shape[::-1], x.shape[::-1], strict=False)
            )
        ):
            raise EmberValueError(
                f"layer_norm: expected a scale/shift that broadcasts to {x.shape}, "
                f"got {t.name} of {t.shape}"
            )

    def at(row: tuple[Expr, ...], k: Expr) -> Expr:
        """x at row `row` (its first `axis` indices) and flat position `k` of
        the normalized axes."""
        index: list[Expr] = list(row[:axis])
        for d, n in enumerate(inner):
            stride = math.prod(inner[d + 1 :])
            i = k // stride if stride > 1 else k
            index.append(i % n if d else i)
        return x[tuple(index)]

    mean_partials, total = _row_reduce(
        lambda r, k, _: at(r, k), rows, length, "sum", f"{name}.mean", vector
    )
    sq_partials, sq = _row_reduce(
        lambda r, k, _: _square(at(r, k) - total[r] * inverse_count(length)),
        rows,
        length,
        "sum",
        f"{name}.var",
        vector,
    )

    def element(*idx: Expr) -> Expr:
        row = idx[:axis] or (0,)
        mean = total[row] * inverse_count(length)
        inv = 1.0 / te.sqrt(sq[row] * inverse_count(length) + float(epsilon))
        value = (x[idx] - mean) * inv
        if gamma is not None:
            value = value * broadcast_read(gamma, idx, x.shape)
        if beta is not None:
            value = value + broadcast_read(beta, idx, x.shape)
        return apply_epilogue(epilogue, value, idx)

    out = te.compute(x.shape, element, name=name)
    unique_stage_names(out)
    weights = [t for t in (gamma, beta) if t is not None]
    # The row loop holds the row's stages when it is the output's outer loops.
    last = x.ndim - 1 if axis == x.ndim - 1 else -1

    def schedule(s: Schedule) -> None:
        inline_injective(s)
        _schedule_rows(s, out, last, [(total, mean_partials), (sq, sq_partials)])

    return Kernel(
        out,
        [*_inputs(x, placeholders), *weights, *epilogue_inputs(epilogue_tensors)],
        schedule_fn=schedule,
        attrs={"pattern": "layer_norm", "axis": axis},
    )


def _square(v: Expr) -> Expr:
    return v * v
