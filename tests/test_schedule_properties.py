"""A schedule never changes results: random shapes and random legal schedules.

Each test draws a computation (elementwise chains, reductions, matmul, conv2d),
then builds a schedule step by step: at every step it picks one of the primitives
that is legal on the current leaf loops of the stage it is scheduling, consumers
before their producers (so a loop a producer is attached to is never split
afterwards). The compiled kernel must agree with numpy. On a failure hypothesis
prints the schedule that broke it, one Python call a line (`note`).

The default run keeps each test to a few dozen examples; the `slow` variants
(`pytest -m slow tests/test_schedule_properties.py`) run many more.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import ember
from ember import te

FAST = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MANY = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


class Scheduler:
    """Draws legal primitives on a schedule, one at a time, and notes each one."""

    def __init__(self, data: st.DataObject, s: te.Schedule):
        self.data, self.s = data, s
        self.attached: dict[int, tuple[te.Tensor, te.Var]] = {}
        self.annotated: set[int] = set()
        self.vectorized: set[int] = set()

    def draw(self, strategy: st.SearchStrategy, label: str):
        return self.data.draw(strategy, label=label)

    def loops(self, T: te.Tensor, most: int = 4) -> None:
        """Split (factor or nparts), tile, fuse and reorder T's leaf loops."""
        stage = self.s[T]
        for _ in range(self.draw(st.integers(0, most), "loop steps")):
            leaves = stage.leaves
            runs = [
                (n, width)
                for width in (2, 3)
                for n in range(len(leaves) - width + 1)
                if len({v.reduce for v in leaves[n : n + width]}) == 1
            ]
            kinds = ["split", "reorder", "tile"] if len(leaves) > 1 else ["split"]
            kinds += ["fuse"] if runs else []
            kind = self.draw(st.sampled_from(kinds), "primitive")
            event(kind)
            if kind == "split":
                v = self.draw(st.sampled_from(leaves), "loop")
                by = self.draw(st.sampled_from(["factor", "nparts"]), "by")
                amount = self.draw(st.integers(1, v.extent + 1), by)
                outer, inner = stage.split(v, **{by: amount})
                note(
                    f"{outer.name}, {inner.name} = s[{T.name}].split({v.name}, {by}={amount})"
                )
            elif kind == "tile":
                x, y = sorted(
                    self.draw(st.permutations(range(len(leaves))), "tile loops")[:2]
                )
                fx = self.draw(st.integers(1, leaves[x].extent + 1), "x factor")
                fy = self.draw(st.integers(1, leaves[y].extent + 1), "y factor")
                names = (leaves[x].name, leaves[y].name)
                made = stage.tile(leaves[x], leaves[y], fx, fy)
                note(
                    f"{', '.join(v.name for v in made)} = s[{T.name}].tile({names[0]}, {names[1]}, {fx}, {fy})"
                )
            elif kind == "fuse":
                n, width = self.draw(st.sampled_from(runs), "fuse run")
                axes = leaves[n : n + width]
                fused = stage.fuse(*axes)
                note(
                    f"{fused.name} = s[{T.name}].fuse({', '.join(v.name for v in axes)})"
                )
            else:
                order = self.draw(st.permutations(leaves), "reorder")
                order = order[: self.draw(st.integers(2, len(order)), "reordered")]
                stage.reorder(*order)
                note(f"s[{T.name}].reorder({', '.join(v.name for v in order)})")

    def annotate(self, T: te.Tensor, most: int = 3) -> None:
        """Vectorize (the innermost data loop), parallel, unroll and pragma (bind
        needs a GPU target: tests/test_target_gpu.py draws binds)."""
        stage = self.s[T]
        for _ in range(self.draw(st.integers(0, most), "annotations")):
            free = [v for v in stage.leaves if id(v) not in self.annotated]
            data = [v for v in free if not v.reduce]
            inner = stage.leaves[-1]
            kinds = ["pragma"]
            kinds += ["vectorize"] if not inner.reduce and inner in free else []
            kinds += ["parallel"] if data else []
            kinds += ["unroll"] if any(v.extent <= 8 for v in free) else []
            kind = self.draw(st.sampled_from(kinds), "annotation")
            event(kind)
            if kind == "pragma":
                v = self.draw(st.sampled_from(stage.leaves), "pragma loop")
                step = self.draw(st.integers(1, 16), "max step")
                stage.pragma(v, "auto_unroll_max_step", step)
                note(f's[{T.name}].pragma({v.name}, "auto_unroll_max_step", {step})')
                continue
            if kind == "vectorize":
                v = inner
                stage.vectorize(v)
                self.vectorized.add(id(v))
            elif kind == "parallel":
                v = self.draw(st.sampled_from(data), "parallel loop")
                stage.parallel(v)
            else:
                v = self.draw(
                    st.sampled_from([v for v in free if v.extent <= 8]), "unrolled loop"
                )
                stage.unroll(v)
            self.annotated.add(id(v))
            note(f"s[{T.name}].{kind}({v.name})")

    def places(self, reader: te.Tensor) -> list[tuple[te.Tensor, te.Var]]:
        """Where a stage that only `reader` reads may be computed: any loop of
        `reader`, or, if `reader` is attached at loop v of T, a loop of T up to v
        (and so on outwards). Vectorized loops are left alone."""
        found = [(reader, v) for v in self.s[reader].leaves]
        while id(reader.op) in self.attached:
            reader, at = self.attached[id(reader.op)]
            leaves = self.s[reader].leaves
            position = next(n for n, v in enumerate(leaves) if v is at)
            found += [(reader, v) for v in leaves[: position + 1]]
        return [(t, v) for t, v in found if id(v) not in self.vectorized]

    def place(self, T: te.Tensor, reader: te.Tensor, inline: bool = True) -> str:
        """Compute T at the root, inline, or at a loop of (or around) `reader`."""
        choices = ["root", "at"] + (["inline"] if inline else [])
        places = self.places(reader)
        if not places:
            choices.remove("at")
        where = self.draw(st.sampled_from(choices), f"placement of {T.name}")
        event(f"{T.name} {where}")
        if where == "inline":
            self.s[T].compute_inline()
            note(f"s[{T.name}].compute_inline()")
        elif where == "at":
            target, v = self.draw(st.sampled_from(places), "attach at")
            self.s[T].compute_at(self.s[target], v)
            self.attached[id(T.op)] = (target, v)
            note(f"s[{T.name}].compute_at(s[{target.name}], {v.name})")
            if self.draw(st.integers(0, 9), "compute_root") == 0:
                self.s[T].compute_root()
                del self.attached[id(T.op)]
                note(f"s[{T.name}].compute_root()")
        return where

    def schedule(self, T: te.Tensor) -> None:
        self.loops(T)
        self.annotate(T)


def _check(s, args, inputs, expected, name):
    mod = ember.build(s, args, name=name)
    out = np.zeros(expected.shape, expected.dtype)
    mod(*inputs, out)
    np.testing.assert_allclose(out, expected, **TOLERANCE)


def _uniform(data, shape):
    seed = data.draw(st.integers(0, 2**16), label="seed")
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")


# --- elementwise ---------------------------------------------------------------------


# How a stage reads its producer along the last axis: the producer's extent for
# a consumer of extent w, and the indices read at j (te loop or numpy array).
READS = {
    "same": (lambda w: w, lambda j: [j]),
    "stencil": (lambda w: w + 1, lambda j: [j, j + 1]),
    "down": (lambda w: 2 * w, lambda j: [2 * j, 2 * j + 1]),
    "up": (lambda w: (w + 1) // 2, lambda j: [j // 2]),
}


def elementwise_chain(data):
    """A -> S1 -> ... -> out, each stage reading its producer along the last axis
    at the same point, a stencil (j, j + 1), downsampled (2j, 2j + 1) or
    upsampled (j // 2), so bound inference must grow, stretch or shrink the
    producer's region; optionally a cache_write of the output and a cache_read
    of A."""
    rank = data.draw(st.integers(1, 3), label="rank")
    shape = data.draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank))
    depth = data.draw(st.integers(1, 3), label="computes")
    reads = data.draw(
        st.lists(st.sampled_from(sorted(READS)), min_size=depth, max_size=depth),
        label="reads",
    )
    widths = [shape[-1]]
    for kind in reversed(reads):
        widths.insert(0, READS[kind][0](widths[0]))
    shapes = [(*shape[:-1], w) for w in widths]
    note(f"shapes {shapes}, reads {reads}")
    tensors = [te.placeholder(shapes[0], name="A")]
    for n in range(depth):

        def body(*i, P=tensors[-1], n=n, kind=reads[n]):
            first, *rest = READS[kind][1](i[-1])
            x = P[(*i[:-1], first)] * (0.5 + n) + 1.0
            for j in rest:
                x = x - P[(*i[:-1], j)]
            return x

        tensors.append(te.compute(shapes[n + 1], body, name=f"S{n + 1}"))
    A, out = tensors[0], tensors[-1]
    s = te.create_schedule(out.op)
    sched = Scheduler(data, s)
    local = None
    if data.draw(st.booleans(), label="cache_write"):
        local = s.cache_write(out, "local")
        note(f'{local.name} = s.cache_write({out.name}, "local")')
    copy = None
    if data.draw(st.booleans(), label="cache_read"):
        first = local if depth == 1 and local is not None else tensors[1]
        copy = s.cache_read(A, "local", [first])
        note(f'A.local = s.cache_read(A, "local", [{first.name}])')
    sched.schedule(out)
    reader = out
    for T in [local] if local is not None else []:
        if sched.place(T, reader) != "inline":
            sched.schedule(T)
            reader = T
    for T in reversed(tensors[1:-1]):
        if sched.place(T, reader) != "inline":
            sched.schedule(T)
            reader = T
    if copy is not None and sched.place(copy, reader) != "inline":
        sched.schedule(copy)

    x = _uniform(data, shapes[0])
    a = x
    for n in range(depth):
        first, *rest = READS[reads[n]][1](np.arange(shapes[n + 1][-1]))
        y = x[..., first] * np.float32(0.5 + n) + np.float32(1.0)
        for j in rest:
            y = y - x[..., j]
        x = y
    _check(s, [A, out], [a], x, "chain")


# --- reductions ----------------------------------------------------------------------


def reduction(data):
    """R = sum|max over 1-2 axes of P, P = 2*A - 1 (root, inline or attached),
    optionally through a cache_write stage."""
    rank = data.draw(st.integers(2, 3), label="rank")
    shape = tuple(data.draw(st.lists(st.integers(1, 8), min_size=rank, max_size=rank)))
    reduced = data.draw(
        st.lists(
            st.integers(0, rank - 1), min_size=1, max_size=min(2, rank - 1), unique=True
        ).map(sorted),
        label="reduced axes",
    )
    combiner = data.draw(st.sampled_from(["sum", "max"]), label="combiner")
    starts = [
        data.draw(st.integers(0, min(1, shape[d] - 1)), label="start") for d in reduced
    ]
    note(f"shape {shape}, reduce over {reduced} from {starts} with {combiner}")
    kept = [d for d in range(rank) if d not in reduced]
    A = te.placeholder(shape, name="A")
    P = te.compute(shape, lambda *i: A[i] * 2.0 - 1.0, name="P")
    axes = [
        te.reduce_axis((lo, shape[d]), name=f"r{d}")
        for d, lo in zip(reduced, starts, strict=True)
    ]

    def body(*i):
        index, it = [], iter(i)
        for d in range(rank):
            index.append(axes[reduced.index(d)] if d in reduced else next(it))
        return getattr(te, combiner)(P[tuple(index)], axis=axes)

    R = te.compute([shape[d] for d in kept], body, name="R")
    s = te.create_schedule(R.op)
    sched = Scheduler(data, s)
    reader = R
    if data.draw(st.booleans(), label="cache_write"):
        RL = s.cache_write(R, "local")
        note("RL = s.cache_write(R, 'local')")
        sched.schedule(R)
        sched.place(RL, R, inline=False)
        reader = RL
    sched.schedule(reader)
    if sched.place(P, reader) != "inline":
        sched.schedule(P)

    a = _uniform(data, shape)
    window = tuple(
        slice(starts[reduced.index(d)], None) if d in reduced else slice(None)
        for d in range(rank)
    )
    p = a[window] * np.float32(2) - np.float32(1)
    expected = getattr(np, combiner)(p, axis=tuple(reduced))
    _check(s, [A, R], [a], expected, "reduce")


# --- matmul --------------------------------------------------------------------------


def matmul(data):
    """C = A @ B, optionally through a cache_write stage (the register tile) and a
    cache_read copy of A or B, each computed at a random loop."""
    n, m, k = data.draw(st.tuples(*[st.integers(1, 12)] * 3), label="n, m, k")
    note(f"A {n}x{k}, B {k}x{m}")
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    sched = Scheduler(data, s)
    reader = C
    if data.draw(st.booleans(), label="cache_write"):
        CC = s.cache_write(C, "local")
        note('CC = s.cache_write(C, "local")')
        reader = CC
    cached = data.draw(st.sampled_from([None, A, B]), label="cache_read")
    if cached is not None:
        copy = s.cache_read(cached, "local", [reader])
        note(f'{cached.name}L = s.cache_read({cached.name}, "local", [{reader.name}])')
    sched.schedule(C)
    if reader is not C:
        sched.place(reader, C, inline=False)
        sched.schedule(reader)
    if cached is not None:
        sched.place(copy, reader, inline=False)
        sched.schedule(copy)

    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    a = rng.uniform(-1, 1, (n, k)).astype("float32")
    b = rng.uniform(-1, 1, (k, m)).astype("float32")
    _check(s, [A, B, C], [a, b], a @ b, "matmul")


# --- conv2d --------------------------------------------------------------------------


def conv2d(data):
    """NCHW conv2d, stride 1, of a small image through a padding stage
    (te.if_then_else; root, inline or attached), optionally through cache_write."""
    c, h, w = data.draw(
        st.tuples(st.integers(1, 3), st.integers(3, 7), st.integers(3, 7)),
        label="c, h, w",
    )
    f = data.draw(st.integers(1, 4), label="filters")
    kh, kw = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="kernel")
    pad = data.draw(st.integers(0, 1), label="pad")
    note(f"image 1x{c}x{h}x{w}, {f} filters {kh}x{kw}, pad {pad}")
    ph, pw = h + 2 * pad, w + 2 * pad
    oh, ow = ph - kh + 1, pw - kw + 1
    X = te.placeholder((1, c, h, w), name="X")
    W = te.placeholder((f, c, kh, kw), name="W")
    P = te.compute(
        (1, c, ph, pw),
        lambda n, ci, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
            X[n, ci, y - pad, x - pad],
            0.0,
        ),
        name="P",
    )
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    Out = te.compute(
        (1, f, oh, ow),
        lambda n, fo, y, x: te.sum(
            P[n, rc, y + ry, x + rx] * W[fo, rc, ry, rx], axis=[rc, ry, rx]
        ),
        name="Out",
    )
    s = te.create_schedule(Out.op)
    sched = Scheduler(data, s)
    reader = Out
    if data.draw(st.booleans(), label="cache_write"):
        OutL = s.cache_write(Out, "local")
        note('OutL = s.cache_write(Out, "local")')
        sched.schedule(Out)
        sched.place(OutL, Out, inline=False)
        reader = OutL
    sched.schedule(reader)
    if sched.place(P, reader) != "inline":
        sched.schedule(P)

    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    x = rng.uniform(-1, 1, (1, c, h, w)).astype("float32")
    wt = rng.uniform(-1, 1, (f, c, kh, kw)).astype("float32")
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))
    expected = np.einsum("ncyxab,fcab->nfyx", windows, wt).astype("float32")
    _check(s, [X, W, Out], [x, wt], expected, "conv2d")


CASES = {
    "elementwise_chain": elementwise_chain,
    "reduction": reduction,
    "matmul": matmul,
    "conv2d": conv2d,
}


@pytest.mark.parametrize("case", sorted(CASES))
@FAST
@given(data=st.data())
def test_schedule_keeps_results(case, data):
    CASES[case](data)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
@MANY
@given(data=st.data())
def test_schedule_keeps_results_many(case, data):
    CASES[case](data)
