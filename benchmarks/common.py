"""What the side-by-side benchmarks share: timing, checking, threads and the table.

Each benchmark lists implementations. An implementation's `setup()` prepares its
inputs, compiles what it must and returns a `Prepared`: `run()` computes once,
`fetch()` returns the result of the last run as a numpy array. The harness then

1. runs it once and compares the result with numpy's (`allclose`, rtol and atol
   1e-4): a wrong result is a WRONG row and is never timed;
2. times it (`measure`): one warm-up call, then enough calls per measurement to
   last at least ~50 ms, repeated; the row shows the median and the spread;
3. prints one table: time, GFLOPS and the ratio to the reference implementation.

A setup that raises ImportError is a "not installed" row (the `bench` extra is
optional); any other exception is a "failed" row holding the message, so one
broken implementation never hides the others.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

RTOL = 1e-4
ATOL = 1e-4


def cores() -> int:
    """The cores this process may run on (every library is left to use all of them)."""
    return len(os.sched_getaffinity(0))


# TVM's runtime sizes its thread pool once, from TVM_NUM_THREADS or its own guess of
# the core count, which is 1 on the 2-core VM this was written on; every other
# library uses all cores by default. Set it before tvm is imported so the
# comparison is like for like (a value given in the environment wins).
_TVM_THREADS_GIVEN = "TVM_NUM_THREADS" in os.environ
os.environ.setdefault("TVM_NUM_THREADS", str(cores()))


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median, fastest and slowest of `repeat` measurements,
    each the mean of `number` back-to-back calls."""

    median: float
    low: float
    high: float
    number: int
    repeat: int

    @property
    def spread(self) -> float:
        """(slowest - fastest) / median: how noisy the measurement was."""
        return (self.high - self.low) / self.median


def _clock(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


def measure(
    fn: Callable[[], object],
    min_time: float = 0.05,
    repeat: int = 7,
    budget: float = 3.0,
) -> Timing:
    """Time `fn()`: a warm-up call, then `repeat` measurements of `number` calls.

    `number` grows until one measurement lasts `min_time`; `repeat` shrinks (to
    no fewer than 3) when the measurements would take more than `budget` seconds,
    so a naive kernel of seconds a call does not hold the run up for minutes.

    Args:
        fn: the call to time.
        min_time: the shortest measurement, in seconds.
        repeat: the most measurements.
        budget: seconds the measurements should take at most, roughly.

    Returns:
        The per-call median, fastest and slowest measurement.
    """
    first = _clock(fn, 1)  # warm-up: thread pools, lazy JIT, first touch of pages
    number, elapsed = 1, first
    while elapsed < min_time:
        # aim 20% past the target; at least double so a tiny first guess converges
        number = max(
            2 * number, math.ceil(number * 1.2 * min_time / max(elapsed, 1e-9))
        )
        elapsed = _clock(fn, number)
    per_call = elapsed / number
    repeat = max(min(3, repeat), min(repeat, int(budget / (per_call * number))))
    samples = [_clock(fn, number) / number for _ in range(repeat)]
    return Timing(
        statistics.median(samples), min(samples), max(samples), number, repeat
    )


def gflops(flops: float, seconds: float) -> float:
    """Billions of floating-point operations per second."""
    return flops / seconds / 1e9


@dataclass
class Prepared:
    """A ready implementation: `run()` computes, `fetch()` returns the last result;
    `extra` carries figures for the benchmark's own report (a compile time).

    An implementation that times itself (a library's own timer, such as
    `time_evaluator`) gives `timing(min_time, repeat) -> Timing`, used instead of
    `measure(run)`; it is still checked through `run` and `fetch` first. One
    that computes in lower precision on purpose (OpenVINO's bfloat16 default)
    gives the `tolerance` (rtol, atol relative to the expected's largest
    magnitude) it is checked to instead of `RTOL`, `ATOL`."""

    run: Callable[[], object]
    fetch: Callable[[], np.ndarray]
    note: str = ""
    extra: dict = field(default_factory=dict)
    timing: Callable[[float, int], Timing] | None = None
    tolerance: tuple[float, float] | None = None


@dataclass
class Impl:
    """A row of the table: its name, how to prepare it and its threads."""

    name: str
    setup: Callable[[], Prepared]
    threads: Callable[[], str] = lambda: ""


@dataclass
class Row:
    """The outcome of one implementation.

    status is "ok" (checked and timed), "WRONG" (checked, not timed), "not
    installed" or "failed" (with the message in `note`).
    """

    name: str
    status: str
    timing: Timing | None = None
    gflops: float | None = None
    note: str = ""
    threads: str = ""
    extra: dict = field(default_factory=dict)


def _first_line(exc: BaseException, limit: int = 160) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def evaluate(
    impl: Impl,
    expected: np.ndarray,
    flops: float,
    min_time: float = 0.05,
    repeat: int = 7,
) -> Row:
    """Prepare, check against `expected`, and (only if right) time one implementation."""
    try:
        prepared = impl.setup()
    except ImportError as exc:
        return Row(impl.name, "not installed", note=f"({exc.name or exc})")
    except Exception as exc:  # a broken implementation is a row, not a crash
        if os.environ.get("BENCH_TRACEBACK"):
            traceback.print_exc()
        return Row(impl.name, "failed", note=_first_line(exc))
    try:
        threads = impl.threads()
    except Exception as exc:
        threads = f"? ({_first_line(exc, 40)})"
    try:
        prepared.run()
        got = np.asarray(prepared.fetch())
    except Exception as exc:
        return Row(impl.name, "failed", note=_first_line(exc), threads=threads)
    rtol, atol = RTOL, ATOL
    if prepared.tolerance is not None:
        rtol = prepared.tolerance[0]
        atol = prepared.tolerance[1] * float(np.max(np.abs(expected), initial=0.0))
    if got.shape != expected.shape or not np.allclose(
        got, expected, rtol=rtol, atol=atol
    ):
        if got.shape != expected.shape:
            why = f"shape {got.shape}, expected {expected.shape}"
        else:
            why = f"max |error| {np.nanmax(np.abs(got - expected)):.3g}"
        return Row(impl.name, "WRONG", note=why, threads=threads)
    if prepared.timing is not None:
        try:
            timing = prepared.timing(min_time, repeat)
        except Exception as exc:
            return Row(impl.name, "failed", note=_first_line(exc), threads=threads)
    else:
        timing = measure(prepared.run, min_time=min_time, repeat=repeat)
    return Row(
        impl.name,
        "ok",
        timing,
        gflops(flops, timing.median),
        prepared.note,
        threads,
        prepared.extra,
    )


def print_table(rows: Sequence[Row], reference: str) -> None:
    """Print the rows; the ratio column is GFLOPS over the `reference` row's."""
    ref = next((r for r in rows if r.name == reference and r.status == "ok"), None)
    width = max(len("implementation"), *(len(r.name) for r in rows))
    vs = f"vs {reference}"
    rw = max(len(vs), 10)
    head = (
        f"{'implementation':<{width}}  {'time (ms)':>10}  {'spread':>6}  "
        f"{'best (ms)':>10}  {'GFLOPS':>8}  {vs:>{rw}}  {'thr':>3}  notes"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if r.status == "ok":
            assert r.timing is not None and r.gflops is not None
            ratio = f"{r.gflops / ref.gflops:.2f}x" if ref and ref.gflops else "-"
            cells = (
                f"{r.timing.median * 1e3:10.3f}  {r.timing.spread * 100:5.1f}%  "
                f"{r.timing.low * 1e3:10.3f}  {r.gflops:8.1f}  {ratio:>{rw}}"
            )
        else:
            cells = f"{r.status:>10}  {'':>6}  {'':>10}  {'':>8}  {'':>{rw}}"
        print(f"{r.name:<{width}}  {cells}  {r.threads:>3}  {r.note}".rstrip())
    if ref is None:
        print(f"(the reference, {reference}, did not run: no ratios)")
    print(
        "time: median per call; spread: (slowest - fastest) / median of the "
        "measurements; best: the fastest; GFLOPS from the median; ratio: GFLOPS / "
        "reference GFLOPS (above 1 is faster); thr: threads."
    )


def run_all(
    impls: Sequence[Impl],
    expected: np.ndarray,
    flops: float,
    reference: str,
    min_time: float = 0.05,
    repeat: int = 7,
    table: Callable[[Sequence[Row], str], None] | None = None,
) -> list[Row]:
    """Evaluate every implementation in order and print the table (`print_table`
    unless another printer, such as `print_latency_table`, is given)."""
    rows = []
    for impl in impls:
        print(f"  {impl.name} ...", flush=True)
        rows.append(evaluate(impl, expected, flops, min_time, repeat))
    print()
    (table or print_table)(rows, reference)
    return rows


def print_latency_table(rows: Sequence[Row], reference: str) -> None:
    """Print the rows as microseconds per call; the ratio column is the
    `reference` row's time over each row's (above 1 is faster)."""
    ref = next((r for r in rows if r.name == reference and r.status == "ok"), None)
    width = max(len("implementation"), *(len(r.name) for r in rows))
    vs = f"vs {reference}"
    rw = max(len(vs), 10)
    head = (
        f"{'implementation':<{width}}  {'us/call':>9}  {'spread':>6}  "
        f"{'best (us)':>9}  {vs:>{rw}}  notes"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if r.status == "ok":
            assert r.timing is not None
            ratio = f"{ref.timing.median / r.timing.median:.2f}x" if ref else "-"
            cells = (
                f"{r.timing.median * 1e6:9.3f}  {r.timing.spread * 100:5.1f}%  "
                f"{r.timing.low * 1e6:9.3f}  {ratio:>{rw}}"
            )
        else:
            cells = f"{r.status:>9}  {'':>6}  {'':>9}  {'':>{rw}}"
        print(f"{r.name:<{width}}  {cells}  {r.note}".rstrip())
    if ref is None:
        print(f"(the reference, {reference}, did not run: no ratios)")
    print(
        "us/call: median of the measurements, each the mean of many back-to-back "
        "calls; spread: (slowest - fastest) / median; best: the fastest; ratio: "
        "reference time / this row's time (above 1 is faster)."
    )


def check_latency(rows: Sequence[Row], name: str, limit: float) -> str:
    """One line saying whether row `name` takes at most `limit` seconds a call."""
    row = next((r for r in rows if r.name == name), None)
    goal = f"{name} <= {limit * 1e6:g} us a call"
    if row is None or row.status != "ok" or row.timing is None:
        return f"  {goal}: cannot tell ({row.status if row else 'absent'})"
    median, best = row.timing.median * 1e6, row.timing.low * 1e6
    verdict = "met" if row.timing.median <= limit else "NOT met"
    return f"  {goal}: {verdict} (median {median:.3f} us, best {best:.3f} us)"


def add_timing_options(parser: argparse.ArgumentParser) -> None:
    """--repeat and --min-time, shared by the benchmarks."""
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="measurements per row (default 7, 3 with --quick; fewer for slow rows)",
    )
    parser.add_argument(
        "--min-time",
        type=float,
        default=None,
        help="seconds one measurement lasts at least (default 0.05, 0.01 with --quick)",
    )


def timing_options(opts: argparse.Namespace) -> dict:
    """The keyword arguments of `run_all` the command line asks for."""
    repeat = opts.repeat if opts.repeat is not None else 3 if opts.quick else 7
    min_time = (
        opts.min_time if opts.min_time is not None else 0.01 if opts.quick else 0.05
    )
    if repeat < 1 or min_time <= 0:
        raise SystemExit("--repeat and --min-time must be positive")
    return {"repeat": repeat, "min_time": min_time}


def check_target(rows: Sequence[Row], name: str, other: str, factor: float) -> str:
    """One line saying whether row `name` reaches `factor` x row `other`'s GFLOPS."""
    mine = next((r for r in rows if r.name == name), None)
    theirs = next((r for r in rows if r.name == other), None)
    goal = f"{name} >= {factor:g} x {other}"
    if mine is None or mine.status != "ok" or mine.gflops is None:
        return f"  {goal}: cannot tell ({name}: {mine.status if mine else 'absent'})"
    if theirs is None or theirs.status != "ok" or theirs.gflops is None:
        return (
            f"  {goal}: cannot tell ({other}: {theirs.status if theirs else 'absent'})"
        )
    ratio = mine.gflops / theirs.gflops
    verdict = "met" if ratio >= factor else "NOT met"
    return f"  {goal}: {verdict} ({ratio:.2f}x)"


def openblas_threads() -> str:
    """The thread count of the OpenBLAS that numpy bundles, asked through ctypes."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*"))
    for path in libs:
        lib = ctypes.CDLL(path)
        for symbol in (
            "scipy_openblas_get_num_threads64_",
            "openblas_get_num_threads64_",
            "openblas_get_num_threads",
        ):
            if hasattr(lib, symbol):
                return str(getattr(lib, symbol)())
    return os.environ.get("OPENBLAS_NUM_THREADS", "?")


def ember_threads() -> str:
    """The team size of ember's parallel loops on libgomp: EMBER_NUM_THREADS, else
    OMP_NUM_THREADS, else one thread per core."""
    for variable in ("EMBER_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(variable, "").strip():
            return os.environ[variable].strip()
    return str(cores())


def describe_machine() -> str:
    """CPU name as LLVM sees it, cores, versions, and a warning when other
    processes compete for the cores (they make every figure noisy, and hurt
    spinning thread pools, OpenBLAS's and OpenMP's, most)."""
    try:
        import llvmlite.binding as llvm

        cpu = llvm.get_host_cpu_name()
    except Exception:
        cpu = platform.processor() or "?"
    load = os.getloadavg()[0]
    text = (
        f"host cpu {cpu}, {cores()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, load average {load:.2f}"
    )
    if load > 0.5:
        text += "\nwarning: other processes are busy; timings will be noisy"
    return text


THREADS_NOTE = (
    "threads: every library uses all {n} cores, as by default: OpenBLAS and "
    "onnxruntime (intra-op pool, one thread per physical core) choose so "
    "themselves, torch.set_num_threads({n}), ember's parallel loops run on "
    "libgomp (all cores; EMBER_NUM_THREADS={n} in a worker process, unless "
    "given: its automatic count would read the other workers' spinning pools "
    "as load), and "
    "TVM_NUM_THREADS={tvm} "
    "({how})."
)


def threads_note() -> str:
    """What the header says about threads."""
    how = (
        "given in the environment"
        if _TVM_THREADS_GIVEN
        else "set by the harness: TVM's own guess can be 1 thread on a small VM"
    )
    return THREADS_NOTE.format(n=cores(), tvm=os.environ["TVM_NUM_THREADS"], how=how)


def tvm_target(target: str = "llvm") -> dict:
    """An ember target string ("llvm", "llvm -mcpu=haswell") as a TVM 0.27
    target dict, which takes no CLI strings; the host CPU from LLVM for a
    plain "llvm", as ember's."""
    import llvmlite.binding as llvm

    mcpu = re.search(r"-mcpu=(\S+)", target)
    return {"kind": "llvm", "mcpu": mcpu.group(1) if mcpu else llvm.get_host_cpu_name()}


class Worker:
    """The driver's end of a benchmark's worker process, one runtime in its
    own process: `python SCRIPT --worker RUNTIME DIRECTORY *EXTRA`, which
    takes one JSON command a line on stdin and answers each (its first answer:
    whether it loaded) with a line `REPLY + json` on stdout; its stderr goes
    to DIRECTORY/RUNTIME.err, whose last line is the note of a worker that
    died."""

    def __init__(
        self, script: str, reply: str, runtime: str, directory: Path, *extra: str
    ):
        self.reply = reply
        self.stderr = directory / f"{runtime.replace(' ', '_')}.err"
        command = [sys.executable, script, "--worker", runtime, str(directory)]
        # ember's automatic thread count leaves a core other processes use; here
        # the other workers' idle pools spin after their turns (onnxruntime's
        # intra-op threads, OpenVINO's), which it read as load: one thread,
        # ResNet-18 15.1 ms against 10.0 with the count fixed like the others'
        env = {**os.environ}
        env.setdefault("EMBER_NUM_THREADS", str(cores()))
        with open(self.stderr, "w") as err:
            self.proc = subprocess.Popen(
                [*command, *extra],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
            )

    def read(self) -> dict:
        """Its next answer."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(self.reply):
                return json.loads(line[len(self.reply) :])
        lines = self.stderr.read_text().strip().splitlines()
        return {"status": "failed", "note": lines[-1] if lines else "worker exited"}

    def ask(self, **command) -> dict:
        """Send `command`; its answer."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return {"status": "failed", "note": "worker exited"}
        return self.read()

    def close(self) -> None:
        """Close its stdin, which ends it (`wait` for that)."""
        if self.proc.stdin:
            self.proc.stdin.close()

    def wait(self) -> None:
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def serve(
    reply_prefix: str,
    load: Callable[[], tuple[object, str]],
    answer: Callable[[object, dict], dict],
) -> None:
    """A worker process's side of `Worker`: `load()` its model (giving it and
    a note; an ImportError is a "not installed" answer, another failure a
    "failed" one), say it is ready, then answer each JSON command line with
    `answer(model, command)` (a failure is that command's "failed" answer)."""

    def reply(**fields) -> None:
        print(reply_prefix + json.dumps(fields), flush=True)

    try:
        model, note = load()
    except ImportError as exc:
        return reply(status="not installed", note=f"({exc.name or exc})")
    except Exception as exc:
        return reply(status="failed", note=_first_line(exc))
    reply(status="ok", note=note)
    for line in sys.stdin:
        try:
            fields = answer(model, json.loads(line))
        except Exception as exc:
            reply(status="failed", note=_first_line(exc))
            continue
        reply(status="ok", **fields)
