"""Module.time_evaluator: its result, the calls it makes (counted, on a fake clock
where it matters) and its errors."""

import doctest

import numpy as np
import pytest

from ember import runtime as rt
from ember.runtime import profiling


class CountingModule(rt.Module):
    """A module whose function ``count`` is a Python callable behind the packed C
    ABI (its PackedFunc trampoline), counting its calls and their arguments."""

    type_key = "counting"

    def __init__(self, on_call=None):
        super().__init__()
        self.calls = []

        def count(*args):
            self.calls.append(args)
            if on_call is not None:
                on_call()

        self._count = rt.PackedFunc(count, name="count")

    def _function_address(self, name: str) -> int:
        return self._count.handle if name == "count" else 0

    def function_names(self) -> list[str]:
        return ["count"]


class FakeClock:
    """perf_counter for profiling: moves only when a counted call says so."""

    def __init__(self, monkeypatch, seconds_per_call: float):
        self.now = 0.0
        self.step = seconds_per_call
        monkeypatch.setattr(profiling, "_clock", lambda: self.now)

    def tick(self):
        self.now += self.step


@pytest.fixture
def names():
    used = []
    yield used
    for name in used:
        if rt.get_global_func(name, allow_missing=True) is not None:
            rt.remove_global_func(name)


def test_number_and_repeat_are_honoured():
    mod = CountingModule()
    result = mod.time_evaluator("count", rt.cpu(), number=7, repeat=3)(5, 2.5)
    assert len(mod.calls) == 1 + 7 * 3  # a warm-up call, then 3 x 7
    assert set(mod.calls) == {(5, 2.5)}  # through the packed ABI and back
    assert isinstance(result, profiling.BenchmarkResult)
    assert isinstance(result.results, tuple) and len(result.results) == 3
    assert all(r > 0 for r in result.results)


def test_min_repeat_ms_grows_number(monkeypatch):
    clock = None
    mod = CountingModule(on_call=lambda: clock.tick())
    clock = FakeClock(monkeypatch, 1e-3)  # every call takes 1 ms
    timer = mod.time_evaluator("count", rt.cpu(), number=1, repeat=2, min_repeat_ms=10)
    result = timer()
    # 1 call lasts 1 ms < 10 ms: number becomes max(10 / 1 + 1, 1 * 1.618) = 11,
    # which the second repeat keeps
    assert len(mod.calls) == 1 + 1 + 11 + 11
    assert result.results == pytest.approx((1e-3, 1e-3))


def test_growth_follows_the_golden_ratio_when_that_is_more(monkeypatch):
    clock = None
    mod = CountingModule(on_call=lambda: clock.tick())
    clock = FakeClock(monkeypatch, 1e-3)
    mod.time_evaluator("count", rt.cpu(), number=10, min_repeat_ms=10.5)()
    # 10 ms < 10.5 ms: max(int(10.5 / 1) + 1, int(10 * 1.618)) = 16
    assert len(mod.calls) == 1 + 10 + 16


def test_a_clock_that_sees_no_time_grows_number(monkeypatch):
    readings = iter([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # (start, end) per measurement
    monkeypatch.setattr(profiling, "_clock", lambda: next(readings))
    mod = CountingModule()
    result = mod.time_evaluator("count", rt.cpu(), number=1, min_repeat_ms=1)()
    # 0 s for 1 call, then for ceil(1.618) = 2 calls, then 1 s for ceil(3.236) = 4
    assert len(mod.calls) == 1 + 1 + 2 + 4
    assert result.results == (0.25,)


def test_result_summary():
    r = profiling.BenchmarkResult([3e-3, 1e-3, 2e-3, 6e-3])
    assert r.results == (3e-3, 1e-3, 2e-3, 6e-3)
    expected = np.array(r.results)
    assert r.mean == pytest.approx(expected.mean())
    assert r.median == pytest.approx(np.median(expected))
    assert (r.min, r.max) == (1e-3, 6e-3)
    assert r.std == pytest.approx(expected.std())
    assert repr(r).startswith("BenchmarkResult(min=0.001, mean=0.003, median=0.0025")
    assert str(r).splitlines() == [  # TVM's layout
        "Execution time summary:",
        " mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  ",
        "   3.0000       2.5000       6.0000       1.0000       1.8708   ",
    ]
    with pytest.raises(ValueError, match="at least one measurement"):
        profiling.BenchmarkResult([])


def test_f_preproc_runs_before_each_repeat(names):
    mod = CountingModule()
    seen = []
    names.append("test.preproc")
    rt.register_func("test.preproc", lambda *args: seen.append((len(mod.calls), args)))
    timer = mod.time_evaluator(
        "count", rt.cpu(), number=2, repeat=3, f_preproc="test.preproc"
    )
    timer(1)
    assert seen == [(1, (1,)), (3, (1,)), (5, (1,))]


def test_cooldown_sleeps_between_repeats(monkeypatch):
    sleeps = []
    monkeypatch.setattr(profiling.time, "sleep", sleeps.append)
    mod = CountingModule()
    mod.time_evaluator(
        "count",
        rt.cpu(),
        number=1,
        repeat=4,
        cooldown_interval_ms=20,
        repeats_to_cooldown=2,
    )()
    assert sleeps == [0.02, 0.02]


def test_missing_function():
    with pytest.raises(rt.FunctionNotFoundError, match="no function 'nope'"):
        CountingModule().time_evaluator("nope", rt.cpu())


def test_functions_of_imported_modules_are_found():
    class Empty(rt.Module):
        def _function_address(self, name: str) -> int:
            return 0

    outer, inner = Empty(), CountingModule()
    outer.import_module(inner)
    outer.time_evaluator("count", rt.cpu(), number=2)()
    assert len(inner.calls) == 3


def test_missing_preproc():
    with pytest.raises(rt.FunctionNotFoundError, match="'no.such.preproc'"):
        CountingModule().time_evaluator("count", rt.cpu(), f_preproc="no.such.preproc")


def test_bad_device():
    mod = CountingModule()
    with pytest.raises(rt.EmberError, match=r"run on the cpu; got cuda\(0\)"):
        mod.time_evaluator("count", rt.device("cuda"))
    with pytest.raises(TypeError, match="expected a Device such as"):
        mod.time_evaluator("count", "cpu")


@pytest.mark.parametrize(
    "option, value, error, message",
    [
        ("number", 0, ValueError, "number must be >= 1, got 0"),
        ("repeat", -1, ValueError, "repeat must be >= 1, got -1"),
        ("number", 2.5, TypeError, "number must be an int, got 2.5"),
        ("min_repeat_ms", -1, ValueError, "min_repeat_ms must be a finite number"),
        ("min_repeat_ms", float("nan"), ValueError, "min_repeat_ms must be a finite"),
        ("cooldown_interval_ms", "1", TypeError, "must be a number, got '1'"),
        ("repeats_to_cooldown", 0, ValueError, "repeats_to_cooldown must be >= 1"),
    ],
)
def test_bad_options(option, value, error, message):
    with pytest.raises(error, match=message):
        CountingModule().time_evaluator("count", rt.cpu(), **{option: value})


def test_docstring_examples():
    assert doctest.testmod(profiling).failed == 0


@pytest.fixture(scope="module")
def vecadd():
    import ember
    from ember import te

    A = te.placeholder((16,), name="A")
    B = te.placeholder((16,), name="B")
    C = te.compute((16,), lambda i: A[i] + B[i], name="C")
    return ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")


def test_times_a_compiled_kernel(vecadd):
    a, b = np.arange(16, dtype=np.float32), np.ones(16, np.float32)
    c = rt.empty(16)
    timer = vecadd.time_evaluator("vecadd", rt.cpu(0), number=50, repeat=3)
    result = timer(rt.array(a), rt.array(b), c)
    np.testing.assert_array_equal(c.numpy(), a + b)
    assert len(result.results) == 3
    assert 0 < result.min <= result.median <= result.max < 1e-2


def test_bad_arguments_raise_before_timing(vecadd):
    timer = vecadd.time_evaluator("vecadd", rt.cpu(), number=1000, repeat=1000)
    with pytest.raises(
        rt.EmberError,
        match=r"argument 1 \(B\): expected float32 tensor of shape \(16,\); got",
    ):
        timer(np.zeros(16, np.float32), np.zeros(4, np.float32), rt.empty(16))
    with pytest.raises(rt.EmberError, match="got 2 arguments"):
        timer(np.zeros(16, np.float32), rt.empty(16))
