"""ember.tune's RPC runner against a local server: candidates timed there and
checked here against the untuned kernel; a wrong, crashing or hanging
candidate is recorded as failed and measuring goes on; a server killed
mid-run gives failed results, not an exception. Timings are never asserted."""

import os
import signal
import threading
import time

import pytest
from rpc_util import rpc_server
from test_tune_measure import _hang, _kernel, _segfault, _text

from ember.tune.measure import LocalBuilder, MeasureInput, Measurer
from ember.tune.records import load_records
from ember.tune.rpc_runner import RPCRunner
from ember.tune.search import tune
from ember.tune.task import Task

KEY = "tune over rpc, a key of 32 bytes"
SPLIT = (
    'te.schedule {\n  te.split "C" "i" factor 8 -> "i.outer", "i.inner"\n'
    '  te.vectorize "C" "i.inner"\n}'
)


@pytest.fixture(scope="module")
def server():
    with rpc_server(key=KEY) as running:
        yield running


@pytest.fixture(scope="module")
def builder():
    b = LocalBuilder(workers=2)
    yield b
    b.close()


def _task():
    return Task.from_tensors(_kernel(lambda A, B, i: A[i] * 2.0 + B[i]))


def test_failures_are_recorded_and_measuring_goes_on(server, builder):
    runner = RPCRunner("127.0.0.1", server.port, key=KEY, timeout_s=3)
    m = Measurer(_task(), builder, runner)
    try:
        assert m.baseline.ok and m.baseline.costs
        good = MeasureInput(SPLIT)
        wrong = MeasureInput(
            "", module_text=_text(_kernel(lambda A, B, i: A[i] * 3.0 + B[i]))
        )
        crash = MeasureInput("", module_text=_text(_kernel(_segfault)))
        hang = MeasureInput("", module_text=_text(_kernel(_hang)))
        garbage = MeasureInput("te.schedule {")
        results = m.measure([good, wrong, crash, good, hang, garbage, good])
    finally:
        m.close()
        runner.close()  # the caller's, not the measurer's
    kinds = [r.error_kind for r in results]
    assert kinds == [None, "wrong", "crash", None, "timeout", "build", None]
    assert "elements differ" in results[1].error
    assert "closed the connection during CALL" in results[2].error
    assert "within the timeout" in results[4].error
    assert all(r.costs for r in results if r.ok)
    assert "SIGSEGV" in server.log()


def test_tune_over_rpc_writes_records(server, builder, tmp_path):
    log = tmp_path / "log.jsonl"
    runner = RPCRunner("127.0.0.1", server.port, key=KEY, timeout_s=10)
    crash = MeasureInput("", module_text=_text(_kernel(_segfault)))
    try:
        result = tune(
            _task(),
            trials=4,
            batch=4,
            strategy="random",
            builder=builder,
            runner=runner,
            records=log,
            inject=[crash],
        )
    finally:
        runner.close()
    assert result.best_cost < float("inf")
    records = load_records(log)
    assert len(records) == 1 + 1 + 4  # the baseline, the injected one, a batch
    assert [r.error_kind for r in records].count("crash") == 1
    assert sum(r.error_kind is None for r in records) >= 3


def _kill_once_loaded(server, name: str) -> threading.Thread:
    """A thread that kills the server once its log says it loaded `name`
    (so while that candidate runs there)."""

    def kill():
        deadline = time.monotonic() + 30
        while f"loaded {name}" not in server.log() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        os.kill(server.pid, signal.SIGKILL)

    thread = threading.Thread(target=kill)
    thread.start()
    return thread


def test_a_server_killed_mid_run_gives_failed_results(builder):
    with rpc_server(key=KEY) as running:
        runner = RPCRunner("127.0.0.1", running.port, key=KEY, timeout_s=20)
        m = Measurer(_task(), builder, runner)  # c1.so
        try:
            hang = MeasureInput("", module_text=_text(_kernel(_hang)))
            killer = _kill_once_loaded(running, "c3.so")
            start = time.monotonic()
            results = m.measure([MeasureInput(SPLIT), hang, MeasureInput(SPLIT)])
            elapsed = time.monotonic() - start
            killer.join()
        finally:
            m.close()
            runner.close()
    assert [r.error_kind for r in results] == [None, "crash", "crash"]
    assert "closed the connection during CALL" in results[1].error
    assert "no RPC server" in results[2].error and "cannot connect" in results[2].error
    assert elapsed < 15  # not the hang's timeout: the dead server is noticed


def test_a_session_the_server_ended_between_candidates_is_replaced(builder):
    with rpc_server("--idle-timeout", "0.5", key=KEY) as running:
        runner = RPCRunner("127.0.0.1", running.port, key=KEY, timeout_s=5)
        m = Measurer(_task(), builder, runner)
        try:
            time.sleep(1.0)  # the server ends the idle session
            results = m.measure([MeasureInput(SPLIT)])
        finally:
            m.close()
            runner.close()
        assert "idle for 0.5 s" in running.log()
    assert results[0].ok, results[0].error


def test_no_server_fails_the_baseline_clearly(builder):
    from ember.runtime.errors import EmberError

    runner = RPCRunner("127.0.0.1", 9, key=KEY, timeout_s=2)
    with pytest.raises(EmberError, match="untuned kernel failed.*no RPC server"):
        Measurer(_task(), builder, runner)
