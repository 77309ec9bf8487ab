"""ember.tune's search space: sketches by Ansor's rules, knobs in the target's
ranges, and every sampled or mutated candidate computing what the untuned
kernel computes."""

import random

import numpy as np
import pytest

import ember
from ember import te
from ember.tune.space import SearchSpace
from ember.tune.task import Task


def _matmul(m, n, k, epilogue=False):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    if not epilogue:
        return [A, B, C]
    D = te.compute((m, n), lambda i, j: te.max(C[i, j], 0.0), name="D")
    E = te.compute((m, n), lambda i, j: D[i, j] * 2.0 + 1.0, name="E")
    return [A, B, E]


def _rowsum(m, n):
    A = te.placeholder((m, n), name="A")
    r = te.reduce_axis((0, n), name="r")
    S = te.compute((m,), lambda i: te.sum(A[i, r] * A[i, r], axis=r), name="S")
    return [A, S]


def _colmax(m, n):
    A = te.placeholder((m, n), name="A")
    r = te.reduce_axis((0, m), name="r")
    S = te.compute((n,), lambda j: te.max(A[r, j], axis=r), name="S")
    return [A, S]


def _elementwise(m, n):
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 3.0, name="B")
    C = te.compute((m, n), lambda i, j: B[i, j] + A[i, j], name="C")
    return [A, C]


def _conv(c, o, h):
    x = te.placeholder((1, c, h, h), name="x")
    w = te.placeholder((o, c, 3, 3), name="w")
    pad = te.compute(
        (1, c, h + 2, h + 2),
        lambda n, ch, y, xx: te.if_then_else(
            te.all(y >= 1, y <= h, xx >= 1, xx <= h),
            x[n, ch, y - 1, xx - 1],
            0.0,
        ),
        name="pad",
    )
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    out = te.compute(
        (1, o, h, h),
        lambda n, f, y, xx: te.sum(
            pad[n, rc, y + ry, xx + rx] * w[f, rc, ry, rx], axis=[rc, ry, rx]
        ),
        name="out",
    )
    return [x, w, out]


def _untuned(args):
    s = te.create_schedule(
        [t.op for t in args if not isinstance(t.op, te.PlaceholderOp)]
    )
    return ember.build(s, args)


def _run(mod, task, inputs):
    out = [np.zeros(shape, dtype) for shape, dtype, o in task.args if o]
    mod(*inputs, *out)
    return out


def _check_candidates(args, n, seed=0, target=None):
    task = Task.from_tensors(args, target)
    space = SearchSpace(task)
    inputs = [
        a
        for a, (_, _, o) in zip(task.random_inputs(seed), task.args, strict=True)
        if not o
    ]
    (expected,) = _run(_untuned(args), task, inputs)
    rng = random.Random(seed)
    config = space.sample(rng)
    for step in range(n):
        if step % 3 == 1:
            config = space.mutate(config, rng)
        elif step % 3 == 2:
            config = space.crossover(config, space.sample(rng), rng)
        else:
            config = space.sample(rng)
        text = space.render(config)
        (got,) = _run(ember.build(task.with_schedule(text)), task, inputs)
        np.testing.assert_allclose(
            got, expected, rtol=1e-4, atol=1e-4, err_msg=f"seed {seed}:\n{text}"
        )
    return task, space


def test_sketch_of_a_matmul_tiles_it_with_a_local_accumulator():
    task = Task.from_tensors(_matmul(16, 32, 8))
    space = SearchSpace(task)
    assert [(t.reduction, t.outer, t.inner, t.cache) for t in space.tiled] == [
        ("C", "C", "C.local", True)
    ]
    text = space.render(space.sample(random.Random(1)))
    assert 'te.cache_write "C" "local" -> "C.local"' in text
    assert 'te.compute_at "C.local" at "C" "j.inner.outer"' in text


def test_sketch_fuses_an_elementwise_epilogue_and_inlines_the_chain():
    task = Task.from_tensors(_matmul(16, 32, 8, epilogue=True))
    space = SearchSpace(task)
    assert space.inline == ["D"]
    assert [(t.outer, t.inner, t.cache) for t in space.tiled] == [("E", "C", False)]
    assert space.roots == []


def test_sketch_of_reductions_without_reuse_and_elementwise_stages():
    space = SearchSpace(Task.from_tensors(_rowsum(8, 16)))
    assert space.tiled == [] and [s.name for s in space.roots] == ["S"]
    space = SearchSpace(Task.from_tensors(_elementwise(8, 16)))
    assert space.inline == ["B"] and [s.name for s in space.roots] == ["C"]


def test_knob_ranges_come_from_the_target():
    args = _elementwise(4, 96)
    sse = SearchSpace(Task.from_tensors(args, "llvm -mcpu=x86-64"))
    avx2 = SearchSpace(Task.from_tensors(args, "llvm -mcpu=haswell"))
    stage = sse.task.stage("C")
    assert max(sse.vector_choices(stage)) == 16  # four 4-lane vectors
    assert max(avx2.vector_choices(stage)) == 32  # four 8-lane vectors
    task = Task.from_tensors(_matmul(64, 64, 64), "llvm -mcpu=x86-64")
    space = SearchSpace(task)
    rng = random.Random(0)
    budget = task.target.vector_registers * 4 * 3 // 4
    for _ in range(50):
        config = space.mutate(space.sample(rng), rng)
        assert config["tile.C.0"][2] * config["tile.C.1"][2] <= budget
        assert space.tile_fits(task.stage("C"), config)


@pytest.mark.parametrize(
    "make",
    [
        lambda r: _matmul(
            r.choice([4, 12, 20]), r.choice([8, 24, 40]), r.choice([3, 16])
        ),
        lambda r: _matmul(r.choice([6, 16]), r.choice([8, 18]), 5, epilogue=True),
        lambda r: _rowsum(r.choice([3, 8]), r.choice([7, 32])),
        lambda r: _colmax(r.choice([5, 9]), r.choice([12, 40])),
        lambda r: _elementwise(r.choice([1, 6]), r.choice([10, 64])),
        lambda r: _conv(r.choice([2, 3]), r.choice([4, 8]), r.choice([5, 6])),
    ],
    ids=["matmul", "matmul_epilogue", "rowsum", "colmax", "elementwise", "conv2d"],
)
def test_every_candidate_computes_what_the_untuned_kernel_computes(make):
    seed = random.randrange(1 << 16)
    _check_candidates(make(random.Random(seed)), 6, seed)


def test_stage_names_with_dots():
    A = te.placeholder((8, 12), name="x.in")
    B = te.placeholder((12, 16), name="w.0")
    r = te.reduce_axis((0, 12), name="k")
    C = te.compute(
        (8, 16), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="l.0.mm"
    )
    D = te.compute((8, 16), lambda i, j: te.max(C[i, j], 0.0), name="l.0.relu")
    task, space = _check_candidates([A, B, D], 6, seed=7)
    assert [(t.outer, t.inner) for t in space.tiled] == [("l.0.relu", "l.0.mm")]
