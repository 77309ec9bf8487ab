"""ember.tune's search and `ember.auto_schedule`: tiny runs (a few trials,
small shapes). Every schedule found computes what the untuned kernel
computes; timings are never asserted."""

import random

import numpy as np
import pytest

import ember
from ember import te
from ember.tune.cost_model import RidgeModel, throughput_targets
from ember.tune.measure import LocalBuilder, LocalRunner, MeasureInput
from ember.tune.records import load_records
from ember.tune.replay import schedule_from_text
from ember.tune.search import tune
from ember.tune.task import KERNEL


def _matmul(m, n, k, epilogue=False):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    if not epilogue:
        return [A, B, C]
    bias = te.placeholder((n,), name="bias")
    D = te.compute((m, n), lambda i, j: te.max(C[i, j] + bias[j], 0.0), name="D")
    return [A, B, bias, D]


def _expected(args, arrays):
    a, b = arrays[0], arrays[1]
    out = a.astype(np.float64) @ b
    if len(args) == 4:
        out = np.maximum(out + arrays[2], 0)
    return out


def _small(**kw):
    return dict(builder=LocalBuilder(workers=2), runner=LocalRunner(timeout_s=5), **kw)


def _check(s, args, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1, 1, t.shape).astype("float32") for t in args[:-1]]
    out = np.zeros(args[-1].shape, "float32")
    ember.build(s, args)(*arrays, out)
    np.testing.assert_allclose(out, _expected(args, arrays), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("epilogue", [False, True])
def test_auto_schedule_finds_a_schedule_that_computes_the_same(tmp_path, epilogue):
    seed = random.randrange(1 << 16)
    r = random.Random(seed)
    args = _matmul(
        r.choice([8, 12, 32]), r.choice([16, 24, 48]), r.choice([4, 9, 16]), epilogue
    )
    log = tmp_path / "log.jsonl"
    s = ember.auto_schedule(
        args[-1],
        args,
        trials=6,
        records=log,
        strategy="random",
        batch=3,
        seed=seed,
        **_small(),
    )
    assert isinstance(s, te.Schedule)
    _check(s, args, seed)
    records = load_records(log)
    assert len(records) == 7  # the baseline, then six candidates
    assert records[0].schedule == "te.schedule {\n}"
    assert len({r.schedule for r in records}) == 7


def test_a_log_resumes_without_measuring_a_schedule_twice(tmp_path):
    args = _matmul(16, 32, 8)
    log = tmp_path / "log.jsonl"
    first = tune(args, trials=4, records=log, strategy="random", batch=4, **_small())
    again = tune(args, trials=4, records=log, strategy="random", batch=4, **_small())
    records = load_records(log)
    candidates = [r.schedule for r in records if r.schedule != "te.schedule {\n}"]
    assert len(candidates) == len(set(candidates)) == 8
    assert again.best_cost <= first.best_cost
    assert len(first.records) == len(again.records) == 5


def test_evolutionary_search_with_the_cost_model(tmp_path, monkeypatch):
    from ember.tune import search

    calls = []
    evolve = search._evolve
    monkeypatch.setattr(search, "_evolve", lambda *a: calls.append(1) or evolve(*a))
    args = _matmul(24, 32, 16, epilogue=True)
    result = tune(args, trials=10, batch=4, population=8, generations=1, **_small())
    assert len(calls) >= 1
    assert result.best_cost <= result.baseline_cost
    _check(schedule_from_text(args, result.best_schedule), args, 0)


def test_failing_candidates_are_recorded_and_the_search_goes_on(tmp_path):
    N = 64
    A = te.placeholder((N,), name="A")
    B = te.placeholder((N,), name="B")

    def kernel(body):
        C = te.compute((N,), lambda i: body(i), name="C")
        return str(
            ember.lower(te.create_schedule(C.op), [A, B, C], KERNEL, emit="te")
        ), [A, B, C]

    _, args = kernel(lambda i: A[i] * 2.0 + B[i])
    wrong, _ = kernel(lambda i: A[i] * 3.0 + B[i])
    crash, _ = kernel(lambda i: A[(B[i] * 1e12).astype("int64").astype("index")])
    r = te.reduce_axis((0, 1 << 30), name="r")
    hang, _ = kernel(lambda i: te.sum(A[(i + r) % N] * B[(i * r) % N], axis=r))
    log = tmp_path / "log.jsonl"
    result = tune(
        args,
        trials=6,
        batch=3,
        records=log,
        strategy="random",
        inject=[MeasureInput("", module_text=t) for t in (crash, hang, wrong)],
        **_small(),
    )
    kinds = [r.error_kind for r in load_records(log)]
    assert kinds[:4] == [None, "crash", "timeout", "wrong"]
    assert len(kinds) == 1 + 3 + 3 and all(k is None for k in kinds[4:])
    assert np.isfinite(result.best_cost)


def test_a_zero_budget_keeps_the_untuned_schedule():
    args = _matmul(8, 8, 8)
    result = tune(args, trials=8, time_budget_s=0, **_small())
    assert result.best_schedule == "te.schedule {\n}" and len(result.records) == 1


def test_the_cost_models():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 6))
    y = x[:, 0] * 2 - x[:, 1] + 0.1 * rng.normal(size=40)
    model = RidgeModel()
    model.fit(x, y)
    assert np.corrcoef(model.predict(x), y)[0, 1] > 0.9
    assert list(throughput_targets([2.0, 1.0, float("inf")])) == [0.5, 1.0, 0.0]


def test_another_machine_is_refused_before_anything_is_measured():
    with pytest.raises(ember.runtime.errors.EmberValueError, match="not it"):
        tune(_matmul(8, 8, 8), target="llvm -mtriple=aarch64-linux-gnu")
