"""ember.tune on a Dask cluster: a LocalCluster on loopback with two worker
processes that hold a "device"; candidates built as tasks (their libraries
come back as bytes), measured on a device worker in a runner process of its
own, so a crashing candidate is a failed record and the worker lives on.
Timings are never asserted."""

import sys

import pytest
from test_tune_measure import _hang, _kernel, _segfault, _text
from test_tune_search import _check, _matmul

from ember import te
from ember.runtime.errors import EmberError
from ember.tune.dask import DaskBuilder, DaskRunner
from ember.tune.measure import MeasureInput, Measurer, features_job
from ember.tune.records import load_records
from ember.tune.replay import schedule_from_text
from ember.tune.search import tune
from ember.tune.task import Task

distributed = pytest.importorskip("distributed")


def _matmul_segfault(m, n, k):
    """The matmul's signature; reads A at a row computed from B, far outside."""
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    C = te.compute(
        (m, n),
        lambda i, j: (
            A[(B[0, j] * 1e12).astype("int64").astype("index"), 0] + B[i % k, j]
        ),
        name="C",
    )
    return [A, B, C]


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            resources={"device": 1},
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


class _CountingBuilder(DaskBuilder):
    features_computed = 0

    def map(self, fn, jobs):
        if fn is features_job:
            self.features_computed += len(jobs)
        return super().map(fn, jobs)


def test_tune_on_a_local_cluster(client, tmp_path):
    args = _matmul(8, 16, 4)
    log = tmp_path / "log.jsonl"
    crash = MeasureInput("", module_text=_text(_matmul_segfault(8, 16, 4)))
    builder, runner = _CountingBuilder(client), DaskRunner(client, timeout_s=10)
    try:
        result = tune(
            args,
            trials=8,
            builder=builder,
            runner=runner,
            records=log,
            inject=[crash],
            population=16,
            generations=1,
        )
    finally:
        runner.close()
        builder.close()
    assert result.best_cost < float("inf")
    records = load_records(log)
    # the baseline; the injected one and a random batch of 4; 3 more (of 8
    # trials) the cost model picked from candidates whose features the
    # workers computed
    assert len(records) == 1 + 1 + 4 + 3
    assert builder.features_computed > 16
    assert records[1].error_kind == "crash"
    assert sum(r.error_kind is None for r in records) >= 4
    _check(schedule_from_text(args, result.best_schedule), args, 0)


def test_failures_are_failed_results_and_the_workers_live_on(client):
    task = Task.from_tensors(_kernel(lambda A, B, i: A[i] * 2.0 + B[i]))
    workers = set(client.nthreads())
    builder, runner = DaskBuilder(client), DaskRunner(client, timeout_s=3)
    m = Measurer(task, builder, runner)
    try:
        crash = MeasureInput("", module_text=_text(_kernel(_segfault)))
        wrong = MeasureInput(
            "", module_text=_text(_kernel(lambda A, B, i: A[i] * 3.0 + B[i]))
        )
        split = MeasureInput(
            'te.schedule {\n  te.split "C" "i" factor 8 -> "i.outer", "i.inner"\n}'
        )
        hang = MeasureInput("", module_text=_text(_kernel(_hang)))
        garbage = MeasureInput("te.schedule {")
        results = m.measure([crash, split, wrong, hang, garbage, split])
    finally:
        m.close()
        runner.close()
        builder.close()
    kinds = [r.error_kind for r in results]
    assert kinds == ["crash", None, "wrong", "timeout", "build", None]
    assert "SIGSEGV" in results[0].error
    assert results[1].features and results[1].costs
    assert set(client.nthreads()) == workers


def test_a_resource_no_worker_holds_is_refused(client):
    with pytest.raises(EmberError, match=r"no worker.*\{'gpu': 1\}.*gpu=1"):
        DaskRunner(client, resources={"gpu": 1})


def test_without_distributed_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(EmberError, match=r"pip install ember\[distributed\]"):
        DaskBuilder(object())
