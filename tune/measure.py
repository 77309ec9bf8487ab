"""Measuring candidates: built in parallel, timed in an isolated process,
checked against the untuned kernel.

    measurer = Measurer(task)                 # builds and times the untuned kernel
    results = measurer.measure([MeasureInput(space.render(config), config)])

`LocalBuilder` compiles each candidate (te IR with its schedule) to a shared
library through a `concurrent.futures.Executor`: by default a local process
pool (fork, one worker per core; the xDSL passes hold the GIL), or any
executor given (a Dask client's, across machines). `LocalRunner` keeps one
runner process (`python -m ember.tune.runner`) that loads each library, runs
it on fixed random inputs, compares its outputs with the untuned kernel's and
times it; a candidate that crashes it (a segfault) or outlives the timeout
has it killed and restarted. Every failure is a result, never an exception:
`error_kind` is "build", "timeout", "crash", "wrong" or "run".
"""

from __future__ import annotations

import functools
import json
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ember.runtime.errors import EmberError
from ember.tune.task import KERNEL, Task

ERROR_KINDS = ("build", "timeout", "crash", "wrong", "run")


@dataclass
class MeasureInput:
    """A candidate: its schedule text and the config it was rendered from.

    `module_text` (a test hook) replaces the task's te IR with another
    function of the same signature, to measure a kernel that is known to
    crash, hang or compute something else.
    """

    schedule: str
    config: dict | None = None
    module_text: str | None = None


@dataclass
class BuildResult:
    lib: str | None
    error: str = ""
    build_s: float = 0.0
    features: list[float] | None = None


@dataclass
class MeasureResult:
    """Seconds per call of each repeat, or why there are none."""

    costs: tuple[float, ...] = ()
    error_kind: str | None = None
    error: str = ""
    build_s: float = 0.0
    features: list[float] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @property
    def cost(self) -> float:
        """The fastest repeat's seconds per call; infinite for a failed
        candidate. Other processes only ever add time, so on a shared machine
        the minimum is the steadiest estimate of a schedule's own speed: the
        median follows the load (a default measured at 0.99 ms beside a
        candidate at 0.67 ms was the faster of the two, measured again)."""
        return min(self.costs) if self.ok and self.costs else math.inf


def build_candidate(
    text: str, target: str, path: str, cc: str | None = None
) -> BuildResult:
    """Compile te IR `text` (function `@kernel`) for `target` into the shared
    library `path` (linked by `cc`, a cross compiler for another machine's
    target; by default the host's); also the features of its loop nest. A
    builder job."""
    from xdsl.parser import Parser

    from ember.compiler.build import build
    from ember.passes import get_context
    from ember.tune.features import extract

    start = time.perf_counter()
    try:
        mod = build(text, target=target, name=KERNEL)
        if cc is None:
            mod.export_library(path)
        else:
            mod.export_library(path, cc=cc)
        loop_ir = Parser(get_context(), mod.get_source("loop"), "<loop>").parse_module()
        features = extract(loop_ir)
    except Exception as e:  # the candidate's failure, recorded
        return BuildResult(
            None, f"{type(e).__name__}: {e}", time.perf_counter() - start
        )
    return BuildResult(path, "", time.perf_counter() - start, features)


def features_job(text: str) -> list[float] | None:
    """Features of a candidate without building it (for the cost model)."""
    from ember.tune.features import candidate_features

    try:
        return candidate_features(text)
    except Exception:  # an illegal candidate: the search drops it
        return None


def _fork_pool(workers: int) -> ProcessPoolExecutor:
    from ember.backends.kernels import _die_with_parent, _fork_context

    return ProcessPoolExecutor(
        workers,
        mp_context=_fork_context(),
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )


class LocalBuilder:
    """Builds candidates through an executor.

    Args:
        executor: any `concurrent.futures.Executor`; None makes a fork process
            pool of `workers` (default: one per core) on first use.
        timeout_s: seconds a build may take; a pool whose build outlives it
            is replaced (its workers killed).
        workers: processes of the default pool.
        cc: the C compiler that links a candidate's library, for a target
            another machine runs ("aarch64-linux-gnu-gcc", as TVM's
            `cc.cross_compiler`); None: the host's.
    """

    def __init__(
        self,
        executor: Executor | None = None,
        timeout_s: float = 120.0,
        workers: int | None = None,
        cc: str | None = None,
    ):
        self.cc = cc
        self._own = executor is None
        self._executor = executor
        self.timeout_s = timeout_s
        self.workers = workers or os.cpu_count() or 1

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            self._executor = _fork_pool(self.workers)
        return self._executor

    def _reset(self) -> None:
        """Drop a pool that timed out or broke, killing its workers."""
        if not self._own or self._executor is None:
            return
        pool = self._executor
        self._executor = None
        for process in list(getattr(pool, "_processes", {}).values()):
            if process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
        pool.shutdown(wait=False, cancel_futures=True)

    def map(self, fn, jobs: list[tuple]) -> list:
        """`fn(*job)` for each job through the executor; an exception or a
        timeout gives that job's result as an `Exception`."""
        futures = [self.executor.submit(fn, *job) for job in jobs]
        deadline = time.monotonic() + self.timeout_s * max(
            1, math.ceil(len(jobs) / self.workers)
        )
        results: list = []
        broken = False
        for future in futures:
            try:
                results.append(future.result(max(0.0, deadline - time.monotonic())))
            except FutureTimeout:
                results.append(TimeoutError(f"build took over {self.timeout_s:g} s"))
                broken = True
            except Exception as e:  # a worker that died (BrokenProcessPool)
                results.append(e)
                broken = True
        if broken:
            self._reset()
        return results

    def build(self, jobs: list[tuple[str, str, str]]) -> list[BuildResult]:
        """Build (text, target, path) jobs."""
        out = []
        for r in self.map(functools.partial(build_candidate, cc=self.cc), jobs):
            if isinstance(r, Exception):
                r = BuildResult(None, f"{type(r).__name__}: {r}")
            out.append(r)
        return out

    def close(self) -> None:
        if self._own and self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


class LocalRunner:
    """Times libraries in a runner process of its own.

    Args:
        timeout_s: seconds one candidate may take (run, check and timing)
            before its runner is killed and the candidate recorded as a timeout.
        repeat, number, min_repeat_ms: `time_evaluator`'s.
        num_threads: `EMBER_NUM_THREADS` for the kernels (None: every core
            this process may run on, as a model runs on a free machine;
            ember's automatic count would read the builders' load and time
            candidates on one thread).
        rtol: the check's tolerance for floats (relative to the reference's
            largest magnitude; float16 gets ten times it).
    """

    def __init__(
        self,
        timeout_s: float = 20.0,
        repeat: int = 3,
        number: int = 1,
        min_repeat_ms: float = 20.0,
        num_threads: int | None = None,
        rtol: float = 1e-3,
    ):
        self.timeout_s = timeout_s
        self.repeat, self.number, self.min_repeat_ms = repeat, number, min_repeat_ms
        self.num_threads = num_threads or len(os.sched_getaffinity(0))
        self.rtol = rtol
        self._proc: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()

    def _start(self) -> subprocess.Popen:
        if self._log.closed:  # used again after close()
            self._log = tempfile.TemporaryFile()
        env = dict(os.environ)
        env["EMBER_NUM_THREADS"] = str(self.num_threads)
        proc = subprocess.Popen(
            [sys.executable, "-m", "ember.tune.runner"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            text=True,
        )
        answer = self._read(proc, 120.0)
        if answer is None or not answer.get("ready"):
            self._kill(proc)
            raise EmberError("ember.tune: the runner process did not start")
        return proc

    @staticmethod
    def _read(proc: subprocess.Popen, timeout: float) -> dict | None:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = proc.stdout.readline()
        return json.loads(line) if line else {"eof": True}

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        LocalRunner._close_pipes(proc)

    @staticmethod
    def _close_pipes(proc: subprocess.Popen) -> None:
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except BrokenPipeError:
                    pass

    def run(self, request: dict) -> dict:
        """One request (see `ember.tune.runner`); a crash or a timeout is an
        answer too: {"error": "crash" | "timeout", "message": ...}."""
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
        proc = self._proc
        request = {
            "repeat": self.repeat,
            "number": self.number,
            "min_repeat_ms": self.min_repeat_ms,
            "rtol": self.rtol,
            **request,
        }
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        answer = self._read(proc, self.timeout_s)
        if answer is None:
            self._kill(proc)
            self._proc = None
            return {"error": "timeout", "message": f"ran over {self.timeout_s:g} s"}
        if answer.get("eof"):
            code = proc.wait()
            self._close_pipes(proc)
            self._proc = None
            how = (
                f"signal {signal.Signals(-code).name}"
                if code < 0
                else f"exit code {code}"
            )
            return {
                "error": "crash",
                "message": f"the runner died ({how}){self._tail()}",
            }
        return answer

    def _tail(self) -> str:
        """The start of what the runner wrote to stderr (faulthandler's
        "Fatal Python error: ..." and the stack), after a colon; then the
        log is emptied for the next runner."""
        self._log.seek(0)
        text = self._log.read(300).decode(errors="replace").strip()
        self._log.seek(0)
        self._log.truncate()
        return f": {text}" if text else ""

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                try:
                    self._proc.stdin.close()
                except BrokenPipeError:
                    pass
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._kill(self._proc)
            self._close_pipes(self._proc)
            self._proc = None
        self._log.close()


class Measurer:
    """Measures candidates of `task` against its untuned kernel.

    On construction it writes random inputs, builds the untuned kernel, runs
    it and keeps its outputs as the reference (`baseline` is its result).

    Args:
        task: the task.
        builder, runner: defaults are a `LocalBuilder` and `LocalRunner`
            (closed with the measurer; those given are the caller's).
        workdir: where libraries and arrays go (default: a temporary folder).
        seed: of the random inputs.
        baseline: the schedule the candidates are checked against and
            compared with: none by default (the computation as written), a
            template's default schedule for a topi kernel.
    """

    def __init__(
        self,
        task: Task,
        builder: LocalBuilder | None = None,
        runner: LocalRunner | None = None,
        workdir: str | None = None,
        seed: int = 0,
        baseline: str = "te.schedule {}",
    ):
        self.task = task
        self._closes_builder, self._closes_runner = builder is None, runner is None
        self.builder = builder or LocalBuilder()
        self.runner = runner or LocalRunner()
        self._tmp = (
            None if workdir else tempfile.TemporaryDirectory(prefix="ember-tune-")
        )
        self.workdir = Path(workdir or self._tmp.name)  # type: ignore[union-attr]
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.inputs = str(self.workdir / "inputs.npz")
        self.reference = str(self.workdir / "reference.npz")
        arrays: dict[str, Any] = {
            f"a{n}": a for n, a in enumerate(task.random_inputs(seed))
        }
        np.savez(self.inputs, **arrays)
        self.outputs = [n for n, (_, _, out) in enumerate(task.args) if out]
        self._count = 0
        # float16 keeps ~3 digits: a reordered sum differs in the last one
        halves = any(dtype == "float16" for _, dtype, _ in task.args)
        self._rtol = {"rtol": self.runner.rtol * 10} if halves else {}
        (self.baseline,) = self._measure([MeasureInput(baseline)], save=True)
        if not self.baseline.ok:
            raise EmberError(
                f"ember.tune: the untuned kernel failed ({self.baseline.error_kind}): "
                f"{self.baseline.error}"
            )

    def measure(self, candidates: list[MeasureInput]) -> list[MeasureResult]:
        """Build all candidates (in parallel), then time them one by one."""
        return self._measure(candidates, save=False)

    def _measure(
        self, candidates: list[MeasureInput], save: bool
    ) -> list[MeasureResult]:
        target = str(self.task.target)
        jobs = []
        for c in candidates:
            self._count += 1
            path = str(self.workdir / f"c{self._count}.so")
            try:
                text = (
                    self.task.with_schedule(c.schedule)
                    if c.module_text is None
                    else c.module_text
                )
            except Exception as e:  # an unparsable schedule
                text = f"// {type(e).__name__}: {e}"
            jobs.append((text, target, path))
        results = []
        for build in self.builder.build(jobs):
            if build.lib is None:
                results.append(MeasureResult(error_kind="build", error=build.error))
                continue
            answer = self.runner.run(
                {
                    "lib": build.lib,
                    "entry": KERNEL,
                    "inputs": self.inputs,
                    "outputs": self.outputs,
                    "reference": None if save else self.reference,
                    "save": self.reference if save else None,
                    **self._rtol,
                }
            )
            Path(build.lib).unlink(missing_ok=True)
            if "costs" in answer:
                result = MeasureResult(tuple(answer["costs"]))
            else:
                result = MeasureResult(
                    error_kind=answer["error"], error=answer["message"]
                )
            result.build_s, result.features = build.build_s, build.features
            results.append(result)
        return results

    def close(self) -> None:
        if self._closes_runner:
            self.runner.close()
        if self._closes_builder:
            self.builder.close()
        if self._tmp is not None:
            self._tmp.cleanup()
