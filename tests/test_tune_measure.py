"""ember.tune's measurement: candidates built in a process pool, timed in a
runner process, checked against the untuned kernel; a candidate that fails to
build, computes a wrong result, crashes its process or hangs is recorded as
failed and measuring goes on. Timings are never asserted."""

import pytest

import ember
from ember import te
from ember.tune.measure import LocalBuilder, LocalRunner, MeasureInput, Measurer
from ember.tune.task import KERNEL, Task

N = 64


def _kernel(body):
    A = te.placeholder((N,), name="A")
    B = te.placeholder((N,), name="B")
    C = te.compute((N,), lambda i: body(A, B, i), name="C")
    return [A, B, C]


def _text(args):
    return str(ember.lower(te.create_schedule(args[-1].op), args, KERNEL, emit="te"))


def _segfault(A, B, i):
    # an index computed from the data, far outside A (nothing proves it out
    # of range, so nothing refuses it without bounds_check)
    return A[(B[i] * 1e12).astype("int64").astype("index")] + B[i]


def _hang(A, B, i):
    r = te.reduce_axis((0, 1 << 30), name="r")
    return te.sum(A[(i + r) % N] * B[(i * r) % N], axis=r)


@pytest.fixture(scope="module")
def measurer():
    task = Task.from_tensors(_kernel(lambda A, B, i: A[i] * 2.0 + B[i]))
    builder, runner = LocalBuilder(workers=2), LocalRunner(timeout_s=5)
    m = Measurer(task, builder, runner)
    yield m
    m.close()
    runner.close()
    builder.close()


def test_the_untuned_kernel_is_the_baseline(measurer):
    assert measurer.baseline.ok and measurer.baseline.costs
    assert len(measurer.baseline.features) > 10


def test_failures_are_recorded_and_measuring_goes_on(measurer):
    good = MeasureInput(
        'te.schedule {\n  te.split "C" "i" factor 8 -> "i.outer", "i.inner"\n'
        '  te.vectorize "C" "i.inner"\n}'
    )
    wrong = MeasureInput(
        "", module_text=_text(_kernel(lambda A, B, i: A[i] * 3.0 + B[i]))
    )
    crash = MeasureInput("", module_text=_text(_kernel(_segfault)))
    hang = MeasureInput("", module_text=_text(_kernel(_hang)))
    illegal = MeasureInput('te.schedule {\n  te.vectorize "C" "nowhere"\n}')
    garbage = MeasureInput("te.schedule {")
    results = measurer.measure([good, wrong, crash, good, hang, illegal, garbage, good])
    kinds = [r.error_kind for r in results]
    assert kinds == [None, "wrong", "crash", None, "timeout", "build", "build", None]
    assert "elements differ" in results[1].error
    assert "SIGSEGV" in results[2].error and "Segmentation fault" in results[2].error
    assert "nowhere" in results[5].error
    assert all(r.costs for r in results if r.ok)
    assert all(r.cost == float("inf") for r in results if not r.ok)
