"""Building and timing candidates on a Dask cluster (the extra
`ember[distributed]`).

    client = distributed.Client("scheduler:8786")
    ember.tune.tune(args, builder=DaskBuilder(client), runner=DaskRunner(client))

    dask worker scheduler:8786 --nthreads 1                            # builds
    dask worker scheduler:8786 --nthreads 1 --resources "device=1"     # a board

`DaskBuilder` compiles candidates as tasks on any worker; a task returns the
library's bytes and its features, so workers need not share a file system
with the tuner. `DaskRunner` sends each measurement (the library, the inputs
and the reference as bytes) to a worker that holds the resource (Dask's
worker resources: "device=1" on the machines with the hardware), where a
`LocalRunner` of that worker process runs it in a runner process of its own:
a kernel that crashes or hangs kills that process, not the worker. Failures
are the answers `LocalRunner` gives ("timeout", "crash", "wrong", "run").

`Measurer` times one candidate at a time, so measurements take turns even
with many boards; builds, the expensive part, spread over every worker.
"""

from __future__ import annotations

import atexit
import math
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ember.runtime.errors import EmberError
from ember.tune.measure import BuildResult, LocalRunner, build_candidate

_INSTALL = "pip install ember[distributed]"
DEVICE = {"device": 1}
"""The resources a measurement needs by default: a worker started with
`--resources device=1`."""


def _distributed():
    try:
        import distributed
    except ImportError:
        raise EmberError(
            f"ember.tune: building and measuring on Dask needs dask.distributed; "
            f"{_INSTALL}"
        ) from None
    return distributed


def _build_job(text: str, target: str) -> tuple[BuildResult, bytes | None]:
    """On a worker: `build_candidate` into a temporary file; its bytes."""
    with tempfile.TemporaryDirectory(prefix="ember-tune-") as tmp:
        result = build_candidate(text, target, str(Path(tmp) / "candidate.so"))
        data = Path(result.lib).read_bytes() if result.lib is not None else None
    result.lib = None
    return result, data


_runners: dict[tuple, LocalRunner] = {}
_runners_lock = threading.Lock()


def _close_runners() -> None:
    for runner in _runners.values():
        runner.close()


def _measure_job(
    lib: bytes,
    inputs: bytes,
    reference: bytes | None,
    request: dict,
    settings: dict,
) -> tuple[dict, bytes | None]:
    """On a worker: `request` answered by this process's `LocalRunner` (one
    per setting, started on first use, serving one request at a time), its
    files written here; the saved reference's bytes when it asks to save."""
    with _runners_lock:
        key = tuple(sorted(settings.items()))
        if not _runners:
            atexit.register(_close_runners)
        runner = _runners.get(key)
        if runner is None:
            runner = _runners[key] = LocalRunner(**settings)
        with tempfile.TemporaryDirectory(prefix="ember-tune-") as tmp:
            folder = Path(tmp)
            (folder / "candidate.so").write_bytes(lib)
            (folder / "inputs.npz").write_bytes(inputs)
            if reference is not None:
                (folder / "reference.npz").write_bytes(reference)
            save = folder / "saved.npz"
            answer = runner.run(
                {
                    **request,
                    "lib": str(folder / "candidate.so"),
                    "inputs": str(folder / "inputs.npz"),
                    "reference": None
                    if reference is None
                    else str(folder / "reference.npz"),
                    "save": str(save) if request["save"] else None,
                }
            )
            saved = save.read_bytes() if "costs" in answer and request["save"] else None
    return answer, saved


def _worker_resources(dask_scheduler: Any) -> list[dict]:
    return [dict(w.resources) for w in dask_scheduler.workers.values()]


class DaskBuilder:
    """Builds candidates as tasks of a Dask cluster.

    Args:
        client: a `distributed.Client`.
        timeout_s: seconds a build may take; a build past it is recorded as
            failed (its task is cancelled, but a worker thread already running
            it finishes it first).
        resources: Dask resources a build task needs (None: any worker).

    `workers` is the threads of the cluster's workers when it is made (the
    search makes batches of twice that). Give build workers one thread each:
    the compiler holds the GIL.
    """

    def __init__(
        self, client: Any, timeout_s: float = 120.0, resources: dict | None = None
    ):
        _distributed()
        self.client = client
        self.timeout_s = timeout_s
        self.resources = resources
        self.workers = max(1, sum(client.nthreads().values()))

    def map(self, fn, jobs: list[tuple]) -> list:
        """`fn(*job)` for each job as a task; an exception or a timeout gives
        that job's result as an `Exception`."""
        futures = [
            self.client.submit(fn, *job, pure=False, resources=self.resources)
            for job in jobs
        ]
        deadline = time.monotonic() + self.timeout_s * max(
            1, math.ceil(len(jobs) / self.workers)
        )
        results: list = []
        for future in futures:
            try:
                results.append(future.result(max(0.0, deadline - time.monotonic())))
            except TimeoutError:
                future.cancel()
                results.append(TimeoutError(f"build took over {self.timeout_s:g} s"))
            except Exception as e:  # the job's own, or a worker that died
                results.append(e)
        return results

    def build(self, jobs: list[tuple[str, str, str]]) -> list[BuildResult]:
        """Build (text, target, path) jobs; each library is written to its
        path here."""
        out = []
        tasks = [(text, target) for text, target, _ in jobs]
        for (_, _, path), r in zip(jobs, self.map(_build_job, tasks), strict=True):
            if isinstance(r, Exception):
                out.append(BuildResult(None, f"{type(r).__name__}: {r}"))
                continue
            result, data = r
            if data is not None:
                Path(path).write_bytes(data)
                result.lib = path
            out.append(result)
        return out

    def close(self) -> None:
        """Nothing to release: the client and its cluster are the caller's."""


class DaskRunner:
    """Times libraries on the workers of a Dask cluster that hold a device.

    Args:
        client: a `distributed.Client`.
        resources: Dask resources a measurement needs: {"device": 1} places
            it on a worker started with `--resources device=1`, one at a
            time on each; None: any worker.
        timeout_s, repeat, number, min_repeat_ms, num_threads, rtol: the
            worker's `LocalRunner`'s.
        wait_s: seconds on top of `timeout_s` that a measurement may wait
            for its worker (busy, or starting its runner process) before it
            is recorded as a timeout.

    Raises:
        EmberError: dask.distributed is not installed, or no worker of the
            cluster holds `resources`.
    """

    def __init__(
        self,
        client: Any,
        resources: dict | None = DEVICE,
        timeout_s: float = 20.0,
        repeat: int = 3,
        number: int = 1,
        min_repeat_ms: float = 20.0,
        num_threads: int | None = None,
        rtol: float = 1e-3,
        wait_s: float = 60.0,
    ):
        _distributed()
        self.client = client
        self.resources = dict(resources) if resources else None
        self.timeout_s, self.wait_s = timeout_s, wait_s
        self.num_threads = num_threads
        self.rtol = rtol
        self._settings = {
            "timeout_s": timeout_s,
            "repeat": repeat,
            "number": number,
            "min_repeat_ms": min_repeat_ms,
            "num_threads": num_threads,
            "rtol": rtol,
        }
        self._files: dict[tuple, Any] = {}
        if self.resources:
            held = client.run_on_scheduler(_worker_resources)
            if not any(
                all(w.get(r, 0) >= n for r, n in self.resources.items()) for w in held
            ):
                raise EmberError(
                    f"ember.tune: no worker of the Dask cluster holds resources "
                    f"{self.resources} (workers: {held or 'none'}); start one with "
                    "`dask worker ... --resources "
                    + ",".join(f"{r}={n}" for r, n in self.resources.items())
                    + "`, or pass resources=None"
                )

    def _scattered(self, path: str) -> Any:
        """The file's bytes, scattered to the cluster once while it stays the same."""
        stat = Path(path).stat()
        key = (path, stat.st_mtime_ns, stat.st_size)
        if key not in self._files:
            self._files[key] = self.client.scatter(Path(path).read_bytes())
        return self._files[key]

    def run(self, request: dict) -> dict:
        """One request of `ember.tune.runner`'s protocol, its paths local
        files; the answer is {"costs": [...]} or {"error": kind, "message":
        ...}, never an exception."""
        distributed = _distributed()
        try:
            lib = Path(request["lib"]).read_bytes()
            inputs = self._scattered(request["inputs"])
            reference = (
                self._scattered(request["reference"])
                if request.get("reference")
                else None
            )
        except OSError as e:
            return {"error": "run", "message": f"{type(e).__name__}: {e}"}
        remote = {
            **{k: v for k, v in request.items() if k not in ("lib", "inputs")},
            "save": bool(request.get("save")),
        }
        future = self.client.submit(
            _measure_job,
            lib,
            inputs,
            reference,
            remote,
            self._settings,
            pure=False,
            resources=self.resources,
        )
        wait = self.timeout_s + self.wait_s
        try:
            answer, saved = future.result(wait)
        except TimeoutError:
            future.cancel()
            return {
                "error": "timeout",
                "message": f"no answer from the Dask cluster within {wait:g} s",
            }
        except Exception as e:  # a worker that died, data lost with it
            self._files.clear()
            kind = "crash" if isinstance(e, distributed.KilledWorker) else "run"
            return {"error": kind, "message": f"{type(e).__name__}: {e}"}
        if saved is not None:
            Path(request["save"]).write_bytes(saved)
        return answer

    def close(self) -> None:
        """Release the scattered inputs (the workers keep their runner
        processes for later jobs; they end with the workers)."""
        self._files.clear()
