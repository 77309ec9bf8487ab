"""Timing compiled functions: ``Module.time_evaluator``, as in TVM.

``time_evaluator(mod, "f", dev, number, repeat, min_repeat_ms)`` returns a
function that takes ``f``'s arguments, calls ``f`` once to warm up (so argument
errors surface before any timing), then measures ``repeat`` times. One
measurement times ``number`` back-to-back calls with ``time.perf_counter`` and
records their mean; while a measurement lasts less than ``min_repeat_ms``,
``number`` grows (to ``min_repeat_ms`` over the time per call, plus one, or by the
golden ratio, whichever is more, as TVM does) and the measurement is taken again.
The grown ``number`` carries over to the following repeats.

On a GPU (a ``DeviceModule``'s functions, which only queue their kernels), each
measurement waits for the device before it starts and before it stops
(``Device.sync``), so it times the kernels themselves.

The calls are made from Python, so each measured call includes the PackedFunc's
call overhead (about a microsecond; see "Call overhead" in
``docs/architecture.md``); for kernels of a few microseconds, read the figures
with that in mind. Garbage collection is paused while measuring, as ``timeit``
does.
"""

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence

from .errors import EmberError, EmberTypeError, EmberValueError
from .ndarray import Device, cpu
from .registry import get_global_func

_clock = time.perf_counter
_GOLDEN_RATIO = 1.618


class BenchmarkResult:
    """Seconds per call of each repeat, and their summary.

    Attributes:
        results: per-repeat mean seconds per call, a tuple.
        mean, median, min, max, std: of ``results``, in seconds (std is the
            population standard deviation, as numpy's default).

    Example:
        >>> r = BenchmarkResult([1e-3, 3e-3])
        >>> r.mean, r.median, r.min, r.max, r.std
        (0.002, 0.002, 0.001, 0.003, 0.001)
    """

    __slots__ = ("results", "mean", "median", "min", "max", "std")

    def __init__(self, results: Sequence[float]):
        """Summarize ``results`` (seconds; at least one)."""
        if not results:
            raise EmberValueError("a benchmark result needs at least one measurement")
        self.results: tuple[float, ...] = tuple(float(r) for r in results)
        self.mean = statistics.fmean(self.results)
        self.median = statistics.median(self.results)
        self.min = min(self.results)
        self.max = max(self.results)
        self.std = statistics.pstdev(self.results)

    def __repr__(self) -> str:
        return (
            f"BenchmarkResult(min={self.min}, mean={self.mean}, "
            f"median={self.median}, max={self.max}, std={self.std}, "
            f"results={self.results})"
        )

    def __str__(self) -> str:
        names = ("mean", "median", "max", "min", "std")
        values = (self.mean, self.median, self.max, self.min, self.std)
        head = " ".join(f"{name + ' (ms)':^12}" for name in names)
        row = " ".join(f"{v * 1e3:^12.4f}" for v in values)
        return f"Execution time summary:\n{head}\n{row}"


def time_evaluator(
    module,
    func_name: str,
    dev: Device,
    number: int = 10,
    repeat: int = 1,
    min_repeat_ms: float = 0,
    cooldown_interval_ms: float = 0,
    repeats_to_cooldown: int = 1,
    f_preproc: str = "",
) -> Callable[..., BenchmarkResult]:
    """A function that times ``module``'s function ``func_name`` (see the module
    docstring).

    Args:
        module: the ``Module`` holding the function (imports are searched too).
        func_name: the function's name.
        dev: the device the function runs on: ``cpu()`` for compiled CPU code,
            a cuda or opencl device for a ``DeviceModule``.
        number: calls per measurement, at least 1 (grown for min_repeat_ms).
        repeat: measurements, at least 1; each gives one of ``results``.
        min_repeat_ms: the shortest a measurement may last, in milliseconds.
        cooldown_interval_ms: a pause after every ``repeats_to_cooldown``
            measurements, in milliseconds.
        repeats_to_cooldown: measurements between pauses, at least 1.
        f_preproc: the name of a registered function (``register_func``) called
            with the same arguments before each measurement (e.g. to flush a
            cache); "" for none.

    Returns:
        ``evaluator(*args) -> BenchmarkResult``.

    Raises:
        FunctionNotFoundError: the module has no ``func_name``, or nothing is
            registered as ``f_preproc``.
        EmberError: ``dev`` is not a device the module runs on.
        TypeError, ValueError: a count or a time is not a number in range.

    Example:
        >>> timer = mod.time_evaluator("vecadd", cpu(), number=100)  # doctest: +SKIP
        >>> timer(a, b, c).mean  # seconds per call  # doctest: +SKIP
        1.2e-06
    """
    func = module.get_function(func_name, query_imports=True)
    _check_device(module, dev)
    number = _count("number", number, 1)
    repeat = _count("repeat", repeat, 1)
    repeats_to_cooldown = _count("repeats_to_cooldown", repeats_to_cooldown, 1)
    min_repeat_s = _milliseconds("min_repeat_ms", min_repeat_ms) / 1e3
    cooldown_s = _milliseconds("cooldown_interval_ms", cooldown_interval_ms) / 1e3
    preproc = get_global_func(f_preproc) if f_preproc else None

    def evaluator(*args) -> BenchmarkResult:
        func(*args)  # warm-up; a bad argument raises here, before any timing
        calls, results = number, []
        collecting = gc.isenabled()
        gc.disable()
        try:
            for i in range(repeat):
                if preproc is not None:
                    preproc(*args)
                while True:
                    elapsed = _measure(func, args, calls, dev)
                    if elapsed >= min_repeat_s:
                        break
                    calls = _grow(calls, elapsed, min_repeat_s)
                results.append(elapsed / calls)
                if cooldown_s and (i + 1) % repeats_to_cooldown == 0:
                    time.sleep(cooldown_s)
        finally:
            if collecting:
                gc.enable()
        return BenchmarkResult(results)

    evaluator.__name__ = f"time_evaluator_{func_name}"
    return evaluator


def _measure(func, args: tuple, calls: int, dev: Device) -> float:
    dev.sync()  # a no-op on the cpu; on a GPU, the calls' kernels are queued
    start = _clock()
    for _ in range(calls):
        func(*args)
    dev.sync()
    return _clock() - start


def _grow(calls: int, elapsed: float, min_repeat_s: float) -> int:
    """The calls for the next try at a measurement that lasted ``elapsed``."""
    if elapsed <= 0:  # a clock too coarse to see the calls
        return math.ceil(calls * _GOLDEN_RATIO)
    return max(int(min_repeat_s / (elapsed / calls)) + 1, int(calls * _GOLDEN_RATIO))


def _check_device(module, dev) -> None:
    if not isinstance(dev, Device):
        raise EmberTypeError(
            f"time_evaluator: expected a Device such as ember.runtime.cpu(), "
            f"got {dev!r}"
        )
    device_type = getattr(module, "device_type", cpu().device_type)
    if dev.device_type != device_type:
        if device_type == cpu().device_type:
            raise EmberError(
                f"time_evaluator: ember's compiled functions run on the cpu; got {dev}"
            )
        kind = getattr(module, "kind", "device")
        raise EmberError(
            f"time_evaluator: this {kind} module runs on {kind} devices; got {dev}"
        )


def _count(name: str, value, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EmberTypeError(f"time_evaluator: {name} must be an int, got {value!r}")
    if value < least:
        raise EmberValueError(f"time_evaluator: {name} must be >= {least}, got {value}")
    return value


def _milliseconds(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EmberTypeError(f"time_evaluator: {name} must be a number, got {value!r}")
    if not 0 <= value < math.inf:
        raise EmberValueError(
            f"time_evaluator: {name} must be a finite number >= 0, got {value}"
        )
    return float(value)
