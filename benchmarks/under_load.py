"""Threads under load: MobileNetV2 alone, beside busy processes, and twice at once.

    .venv/bin/python benchmarks/under_load.py            # 224x224, 5 s a measurement
    .venv/bin/python benchmarks/under_load.py --quick    # 96x96, 0.5 s, fewer loads
    .venv/bin/python benchmarks/under_load.py --rounds 3 # each load 3 times, interleaved

A library's thread pool is tuned for a machine of free cores; on a shared machine
its threads compete with other processes. Each library (ember, onnxruntime, and
PyTorch eager if installed) runs the model in a process of its own, calling it back
to back for a fixed time, under each load:

    alone          nothing else runs
    K busy         K other processes spin on the CPU (pure Python loops); K is the
                   number of cores, and twice that
    two processes  two processes run the model at once (throughput: both together)

For each library and load the table gives throughput (runs a second), the median
and 90th-percentile latency, the share of its alone-throughput kept and the p90
over its alone median; then ember beside onnxruntime: ember should keep at least
onnxruntime's share, with a p90 ratio at most 1.5x onnxruntime's. ember runs the
exported library (`load_module`, as deployed) with its defaults: see "Threads
under load" in docs/architecture.md; environment variables such as
EMBER_NUM_THREADS, GOMP_SPINCOUNT or OMP_WAIT_POLICY given to this script reach
every model process. Compiles go through the kernel cache, so a second run
starts at once.

Every library's output is checked against onnxruntime's (allclose, rtol = atol =
1e-4) before it is timed. The machine's own load (other users) is printed before
each measurement: it is noise this script cannot remove; --rounds repeats the
whole series so the noise shows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

import common  # noqa: E402

EMBER = "ember"
ORT = "onnxruntime"
TORCH = "PyTorch eager"
LIBRARIES = (EMBER, ORT, TORCH)
SPIN = "while True: pass"


@dataclass
class Files:
    """What the model processes load: the model, its input, ember's library."""

    onnx: Path
    input: Path
    library: Path


# --------------------------------------------------------------------------- #
# A model process: load, check readiness, run back to back, report latencies.


def _runner(library: str, files: Files):
    """`(run, fetch)`: run the model once in this process; the last output."""
    x = np.load(files.input)
    out: list = []
    if library == EMBER:
        from ember.runtime import GraphModule, cpu, load_module

        gm = GraphModule(load_module(files.library)["default"](cpu()))
        gm.set_input("input", x)
        return gm.run, lambda: gm.get_output(0).numpy()
    if library == ORT:
        import onnxruntime

        session = onnxruntime.InferenceSession(
            str(files.onnx), providers=["CPUExecutionProvider"]
        )

        def run_ort():
            out[:] = session.run(None, {"input": x})

        return run_ort, lambda: out[0]
    import models
    import onnx
    import torch

    forward = models._torch_forward(onnx.load(files.onnx), {"input": x})

    def run_torch():
        with torch.inference_mode():
            out[:] = [forward()]

    return run_torch, lambda: out[0].numpy()


def worker(library: str, files: Files, start_at: float, seconds: float) -> None:
    """Run the model from `start_at` (time.time()) for `seconds`; print the
    latencies as JSON."""
    run, _ = _runner(library, files)
    for _ in range(3):  # warm-up: thread pools started, pages touched
        run()
    while (wait := start_at - time.time()) > 0:
        time.sleep(min(wait, 0.05))
    latencies = []
    cpu = time.process_time()
    begin = time.perf_counter()
    end = begin + seconds
    while True:
        t = time.perf_counter()
        run()
        now = time.perf_counter()
        latencies.append(now - t)
        if now >= end:
            break
    cpu = time.process_time() - cpu
    json.dump({"seconds": now - begin, "latencies": latencies, "cpu": cpu}, sys.stdout)


# --------------------------------------------------------------------------- #
# The driver: loads, measurements, the table.


@dataclass
class Result:
    """One library under one load: every process's runs over their time."""

    runs: int
    throughput: float  # runs a second, all model processes together
    median: float  # seconds
    p90: float
    others: float | None  # cores the machine's other users kept busy meanwhile


def measure(
    library: str,
    files: Files,
    models: int,
    spinners: int,
    seconds: float,
    env: dict[str, str] | None = None,
) -> Result:
    """Run `models` model processes (with `env` added to their environment)
    beside `spinners` busy ones for `seconds`."""
    busy = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(spinners)]
    try:
        start_at = time.time() + 1.5 + 0.5 * models  # time to load and warm up
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--worker",
                    library,
                    str(files.onnx),
                    str(files.input),
                    str(files.library),
                    repr(start_at),
                    repr(seconds),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, **(env or {})},
            )
            for _ in range(models)
        ]
        others = _others_busy(busy, start_at, seconds)
        reports = []
        for p in procs:
            out, err = p.communicate(timeout=120 + 10 * seconds)
            if p.returncode:
                raise RuntimeError(err.strip().splitlines()[-1] if err else "failed")
            reports.append(json.loads(out))
    finally:
        for p in busy:
            p.kill()
            p.wait()
    latencies = [t for r in reports for t in r["latencies"]]
    throughput = sum(len(r["latencies"]) / r["seconds"] for r in reports)
    if others is not None:
        others = max(0.0, others - sum(r["cpu"] for r in reports) / seconds)
    return Result(
        len(latencies),
        throughput,
        statistics.median(latencies),
        float(np.percentile(latencies, 90)),
        others,
    )


def _ticks(path: str, fields: slice) -> int | None:
    """The sum of `fields` of the first line of a /proc file (clock ticks)."""
    try:
        with open(path) as f:
            values = f.readline().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return sum(int(v) for v in values[fields])


def _others_busy(
    spinners: list[subprocess.Popen], start_at: float, seconds: float
) -> float | None:
    """Cores busy from `start_at` for `seconds` with anything but the spinners
    (the model processes' own time is taken off by the caller): the
    machine's other users. None without /proc."""

    def sample() -> tuple[int, int] | None:
        # /proc/stat: user nice system idle iowait irq softirq steal; a process's
        # stat after its name: utime and stime are the 12th and 13th fields
        machine = _ticks("/proc/stat", slice(1, 9))
        idle = _ticks("/proc/stat", slice(4, 6))
        ours = [_ticks(f"/proc/{p.pid}/stat", slice(11, 13)) for p in spinners]
        if machine is None or idle is None or None in ours:
            return None
        return machine - idle, sum(t for t in ours if t is not None)

    while (wait := start_at - time.time()) > 0:
        time.sleep(wait)
    before = sample()
    time.sleep(seconds)
    after = sample()
    if before is None or after is None:
        return None
    hz = os.sysconf("SC_CLK_TCK")
    return ((after[0] - before[0]) - (after[1] - before[1])) / hz / seconds


def _wait_quiet(limit: float) -> None:
    """Wait up to `limit` seconds for a second in which the machine's cores
    were busy less than a tenth of a core (nothing of ours runs meanwhile)."""
    hz = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = _ticks("/proc/stat", slice(1, 9)), _ticks("/proc/stat", slice(4, 6))
        time.sleep(1.0)
        after = _ticks("/proc/stat", slice(1, 9)), _ticks("/proc/stat", slice(4, 6))
        if None in before or None in after:
            return
        busy = (after[0] - after[1]) - (before[0] - before[1])  # type: ignore[operator]
        if busy / hz < 0.1:
            return
    print(f"  (the machine was not quiet for {limit:g} s: measuring anyway)")


def available(library: str) -> str | None:
    """None if `library` can run here, else why not."""
    import importlib.util

    needs = {EMBER: (), ORT: ("onnxruntime",), TORCH: ("torch",)}[library]
    for name in ("onnx", *needs):
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            return f"not installed ({name})"
    return None


def prepare(size: int, directory: Path, libraries: list[str]) -> dict[str, str]:
    """Write the model, its input and ember's library; check every library's
    output against onnxruntime's. Returns why a library cannot be timed."""
    import onnx
    import onnx_models

    model = onnx_models.mobilenet_v2(size=size)
    x = onnx_models.random_input(model)["input"]
    onnx.save(model, directory / "model.onnx")
    np.save(directory / "input.npy", x)
    files = Files(directory / "model.onnx", directory / "input.npy", directory / "m.so")
    problems: dict[str, str] = {}
    expected = None
    if available(ORT) is None:  # the reference, timed or not
        import onnxruntime

        session = onnxruntime.InferenceSession(model.SerializeToString())
        expected = session.run(None, {"input": x})[0]
    for library in libraries:
        try:
            if library == EMBER:
                import ember

                start = time.perf_counter()
                mod = ember.compile_model(model)  # the process-wide kernel cache
                print(f"  ember compiled in {time.perf_counter() - start:.1f} s")
                mod.export_library(files.library)
            if expected is None:
                print(
                    f"  {library}: output not checked (no onnxruntime to check against)"
                )
                continue
            run, fetch = _runner(library, files)
            run()
            got = np.asarray(fetch())
            if not np.allclose(got, expected, rtol=common.RTOL, atol=common.ATOL):
                problems[library] = "WRONG"
        except Exception as exc:
            problems[library] = f"failed: {common._first_line(exc)}"
    return problems


def loads(quick: bool) -> list[tuple[str, int, int]]:
    """(label, model processes, busy processes) of every load, alone first."""
    n = common.cores()
    out = [("alone", 1, 0), (f"{n} busy", 1, n)]
    if not quick:
        out.append((f"{2 * n} busy", 1, 2 * n))
    out.append(("two processes", 2, 0))
    return out


def print_table(results: dict[str, dict[str, list[Result]]], problems: dict) -> None:
    """Per library and load: throughput, median, p90 and the two ratios (the
    median over rounds of each figure)."""
    w = max(14, *(len(name) for name in results))
    head = (
        f"{'library':<{w}}  {'load':<14}  {'runs/s':>8}  {'median ms':>9}  "
        f"{'p90 ms':>8}  {'kept':>6}  {'p90/alone':>9}  {'others':>6}"
    )
    print(head)
    print("-" * len(head))
    for library, by_load in results.items():
        if library in problems:
            print(f"{library:<{w}}  {problems[library]}")
            continue
        alone = by_load.get("alone")
        for label, rounds in by_load.items():
            if not rounds:
                print(f"{library:<{w}}  {label:<14}  failed")
                continue
            thr, med, p90 = _figures(rounds, label == "alone")
            kept = ratio = "-"
            if alone:
                a_thr, a_med, _ = _figures(alone, True)
                kept = f"{100 * thr / a_thr:5.0f}%"
                ratio = f"{p90 / a_med:8.1f}x"
            seen = [r.others for r in rounds if r.others is not None]
            others = f"{max(seen):6.2f}" if seen else "-"
            print(
                f"{library:<{w}}  {label:<14}  {thr:8.1f}  {med * 1e3:9.2f}  "
                f"{p90 * 1e3:8.2f}  {kept:>6}  {ratio:>9}  {others:>6}"
            )
    print(
        "runs/s: model runs a second (two processes: both together); kept: runs/s "
        "over the library's alone runs/s; p90/alone: the p90 latency over the "
        "library's alone median; others: cores the machine's other users kept "
        "busy meanwhile (the most of any round: noise this script cannot "
        "remove). Each other figure is the median over rounds; alone, the best."
    )


def _figures(rounds: list[Result], alone: bool = False) -> tuple[float, float, float]:
    """Throughput, median and p90 over rounds: the median of each, but alone,
    the best of each (the quietest round is the nearest to alone)."""
    if alone:
        return (
            max(r.throughput for r in rounds),
            min(r.median for r in rounds),
            min(r.p90 for r in rounds),
        )
    return (
        statistics.median(r.throughput for r in rounds),
        statistics.median(r.median for r in rounds),
        statistics.median(r.p90 for r in rounds),
    )


def compare(results: dict[str, dict[str, list[Result]]], problems: dict) -> None:
    """Every ember row beside onnxruntime under every load: the issue's goals."""
    embers = [name for name in results if name.split()[0] == EMBER]
    if ORT in problems or ORT not in results or not results[ORT].get("alone"):
        print("ember vs onnxruntime: cannot tell (onnxruntime did not run)")
        return
    o_alone = _figures(results[ORT]["alone"], True)
    for name in embers:
        if name in problems or not results[name].get("alone"):
            print(f"{name} vs onnxruntime: cannot tell ({name} did not run)")
            continue
        e_alone = _figures(results[name]["alone"], True)
        print(
            f"{name} vs onnxruntime (goal: kept >= onnxruntime's, p90/alone <= "
            "1.5x onnxruntime's):"
        )
        print(
            f"  alone: {e_alone[1] * 1e3:.2f} ms vs {o_alone[1] * 1e3:.2f} ms "
            f"median ({e_alone[1] / o_alone[1]:.2f}x)"
        )
        for label, e in results[name].items():
            o = results[ORT].get(label)
            if label == "alone":
                continue
            if not e or not o:
                print(f"  {label}: cannot tell (failed)")
                continue
            e_kept = _figures(e)[0] / e_alone[0]
            o_kept = _figures(o)[0] / o_alone[0]
            e_p90 = _figures(e)[2] / e_alone[1]
            o_p90 = _figures(o)[2] / o_alone[1]
            ok = e_kept >= o_kept and e_p90 <= 1.5 * o_p90
            print(
                f"  {label}: kept {100 * e_kept:.0f}% vs {100 * o_kept:.0f}%, "
                f"p90/alone {e_p90:.1f}x vs {o_p90:.1f}x ({e_p90 / o_p90:.2f}x): "
                f"{'met' if ok else 'NOT met'}"
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="96x96, 0.5 s, 3 loads")
    parser.add_argument("--seconds", type=float, help="per measurement (default 5)")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every load")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=None,
        metavar="SECONDS",
        help="before each alone measurement, wait up to this long for a second "
        "in which other users keep less than a tenth of a core busy (default "
        "30, 0 with --quick)",
    )
    parser.add_argument("--size", type=int, help="image size (default 224)")
    parser.add_argument(
        "--library", choices=LIBRARIES, action="append", help="default: all"
    )
    parser.add_argument(
        "--ember-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one more ember row, its processes run with NAME=VALUE (e.g. "
        "EMBER_NUM_THREADS=2: a fixed team, as before the automatic count)",
    )
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.worker:
        library, onnx_path, x, lib, start_at, seconds = opts.worker
        files = Files(Path(onnx_path), Path(x), Path(lib))
        worker(library, files, float(start_at), float(seconds))
        return 0
    seconds = opts.seconds or (0.5 if opts.quick else 5.0)
    if opts.wait_quiet is None:
        opts.wait_quiet = 0.0 if opts.quick else 30.0
    size = opts.size or (96 if opts.quick else 224)
    if seconds <= 0 or opts.rounds < 1 or size < 32:
        raise SystemExit("--seconds and --rounds must be positive, --size >= 32")
    print(common.describe_machine())
    print(
        "threads: every library's default (ember: EMBER_NUM_THREADS, else the "
        f"{common.cores()} cores of its affinity less those other processes keep "
        "busy); the busy processes are Python spin loops"
    )
    libraries = list(dict.fromkeys(opts.library or LIBRARIES))
    problems = {lib: why for lib in libraries if (why := available(lib))}
    # rows: name → (library, environment of its processes)
    rows = {lib: (lib, {}) for lib in libraries}
    for setting in opts.ember_env:
        name, eq, value = setting.partition("=")
        if not eq or not name:
            raise SystemExit(f"--ember-env expects NAME=VALUE, got {setting!r}")
        rows[f"{EMBER} {setting}"] = (EMBER, {name: value})
    print(f"\nMobileNetV2, batch 1, 3x{size}x{size}, fp32, {seconds:g} s a measurement")
    results: dict[str, dict[str, list[Result]]] = {row: {} for row in rows}
    with tempfile.TemporaryDirectory(prefix="ember-under-load-") as tmp:
        runnable = [lib for lib in libraries if lib not in problems]
        if runnable:
            problems |= prepare(size, Path(tmp), runnable)
        files = Files(
            Path(tmp, "model.onnx"), Path(tmp, "input.npy"), Path(tmp, "m.so")
        )
        for round_ in range(opts.rounds):
            for label, models, spinners in loads(opts.quick):
                load = os.getloadavg()[0]
                print(f"  round {round_ + 1}, {label} (load average {load:.2f}) ...")
                for row, (library, env) in rows.items():  # interleaved: drift
                    if library in problems:  # hits every row alike
                        continue
                    rounds = results[row].setdefault(label, [])
                    if label == "alone" and opts.wait_quiet:
                        _wait_quiet(opts.wait_quiet)
                    try:
                        rounds.append(
                            measure(library, files, models, spinners, seconds, env)
                        )
                    except Exception as exc:
                        print(f"    {row}: {common._first_line(exc)}")
    print()
    print_table(
        results,
        {row: problems[lib] for row, (lib, _) in rows.items() if lib in problems},
    )
    compare(results, problems)
    return 0


if __name__ == "__main__":
    sys.exit(main())
