"""The benchmark harness: a wrong result is never timed, missing packages and
broken builds are rows, and both benchmarks run in --quick mode with every row
that can be checked right."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


def load_common():
    spec = importlib.util.spec_from_file_location("bench_common", BENCH / "common.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


common = load_common()
EXPECTED = np.arange(12, dtype=np.float32).reshape(3, 4)


def counting(result: np.ndarray):
    """An implementation returning `result` that counts its runs."""
    calls = []

    def setup():
        return common.Prepared(lambda: calls.append(1), lambda: result)

    return setup, calls


class FakeClock:
    """A perf_counter that only moves when a timed call says so."""

    def __init__(self):
        self.now = 0.0
        self.calls = 0

    def perf_counter(self) -> float:
        return self.now

    def call_taking(self, seconds: float):
        def call():
            self.calls += 1
            self.now += seconds

        return call


def test_measure_grows_the_number_of_calls_to_the_minimum_time(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(common, "time", clock)
    timing = common.measure(clock.call_taking(0.002), min_time=0.02, repeat=3)
    # 1 warm-up call of 2 ms, then 12 calls (20% past 20 ms) a measurement
    assert (timing.number, timing.repeat) == (12, 3)
    assert clock.calls == 1 + 12 + 3 * 12
    assert timing.median == timing.low == timing.high == pytest.approx(0.002)
    assert timing.spread == pytest.approx(0)


def test_measure_repeats_fewer_times_when_a_call_is_slow(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(common, "time", clock)
    timing = common.measure(clock.call_taking(0.06), repeat=7, budget=0.1)
    assert (timing.number, timing.repeat, clock.calls) == (1, 3, 4)


def test_measure_reports_the_median_and_the_spread(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(common, "time", clock)
    durations = iter([0.1, 0.3, 0.1, 0.2, 0.5])  # warm-up, then 4 measurements

    def call():
        clock.now += next(durations)

    timing = common.measure(call, min_time=0.05, repeat=4, budget=10)
    assert (timing.low, timing.high) == (pytest.approx(0.1), pytest.approx(0.5))
    assert timing.median == pytest.approx(0.25)
    assert timing.spread == pytest.approx(1.6)


def test_a_right_result_is_timed():
    setup, calls = counting(EXPECTED + 5e-5)
    row = common.evaluate(common.Impl("near", setup), EXPECTED, 1e6, min_time=0.001)
    assert row.status == "ok"
    assert row.timing is not None and row.gflops == pytest.approx(
        1e6 / row.timing.median / 1e9
    )
    assert len(calls) > 3


def test_a_wrong_result_is_reported_and_never_timed():
    wrong = EXPECTED.copy()
    wrong[1, 2] += 1e-2
    setup, calls = counting(wrong)
    row = common.evaluate(common.Impl("off", setup), EXPECTED, 1e6)
    assert row.status == "WRONG"
    assert row.timing is None and row.gflops is None
    assert "max |error| 0.01" in row.note
    assert len(calls) == 1


def test_a_wrong_shape_is_wrong():
    setup, _ = counting(EXPECTED.T)
    row = common.evaluate(common.Impl("transposed", setup), EXPECTED, 1e6)
    assert row.status == "WRONG"
    assert "shape (4, 3), expected (3, 4)" in row.note


def test_a_missing_package_is_a_row():
    def setup():
        import ember_no_such_package  # noqa: F401

    row = common.evaluate(common.Impl("absent", setup), EXPECTED, 1e6)
    assert (row.status, row.note) == ("not installed", "(ember_no_such_package)")


def test_a_failing_build_is_a_row_with_its_message():
    def setup():
        raise ValueError("split: 'i' is not a loop of stage 'C'")

    row = common.evaluate(common.Impl("broken", setup), EXPECTED, 1e6)
    assert row.status == "failed"
    assert row.note == "ValueError: split: 'i' is not a loop of stage 'C'"


def test_the_table_shows_ratios_to_the_reference(capsys):
    fast = common.Timing(0.001, 0.001, 0.0011, 10, 3)
    slow = common.Timing(0.004, 0.004, 0.004, 10, 3)
    rows = [
        common.Row("ref", "ok", fast, 2.0, threads="2"),
        common.Row("slow one", "ok", slow, 0.5, threads="2"),
        common.Row("bad", "WRONG", note="max |error| 1"),
        common.Row("gone", "not installed", note="(onnx)"),
    ]
    common.print_table(rows, "ref")
    out = capsys.readouterr().out
    assert re.search(r"^ref\s+1\.000\s+10\.0%\s+1\.000\s+2\.0\s+1\.00x\s+2$", out, re.M)
    assert re.search(r"^slow one\s+4\.000\s+0\.0%\s+4\.000\s+0\.5\s+0\.25x", out, re.M)
    assert re.search(r"^bad\s+WRONG\s+max \|error\| 1$", out, re.M)
    assert re.search(r"^gone\s+not installed\s+\(onnx\)$", out, re.M)
    assert common.check_target(rows, "slow one", "ref", 0.2).endswith("met (0.25x)")
    assert "NOT met" in common.check_target(rows, "slow one", "ref", 0.5)
    assert "cannot tell (bad: WRONG)" in common.check_target(rows, "bad", "ref", 1)


def test_an_implementation_that_times_itself_is_checked_first():
    timed = []

    def setup(result):
        def timing(min_time, repeat):
            timed.append((min_time, repeat))
            return common.Timing(2e-6, 1e-6, 3e-6, 0, repeat)

        return common.Prepared(lambda: None, lambda: result, timing=timing)

    row = common.evaluate(
        common.Impl("own", lambda: setup(EXPECTED)), EXPECTED, 0, 0.02, 5
    )
    assert (row.status, row.timing.median, timed) == ("ok", 2e-6, [(0.02, 5)])
    row = common.evaluate(common.Impl("bad", lambda: setup(EXPECTED + 1)), EXPECTED, 0)
    assert row.status == "WRONG" and len(timed) == 1


def test_the_latency_table_shows_microseconds_and_ratios(capsys):
    rows = [
        common.Row("ref", "ok", common.Timing(1e-6, 0.9e-6, 1.1e-6, 10, 3)),
        common.Row("slow", "ok", common.Timing(4e-6, 4e-6, 4e-6, 10, 3), note="n"),
        common.Row("gone", "not installed", note="(tvm)"),
    ]
    common.print_latency_table(rows, "ref")
    out = capsys.readouterr().out
    assert re.search(r"^ref\s+1\.000\s+20\.0%\s+0\.900\s+1\.00x$", out, re.M)
    assert re.search(r"^slow\s+4\.000\s+0\.0%\s+4\.000\s+0\.25x\s+n$", out, re.M)
    assert re.search(r"^gone\s+not installed\s+\(tvm\)$", out, re.M)
    assert common.check_latency(rows, "ref", 2e-6) == (
        "  ref <= 2 us a call: met (median 1.000 us, best 0.900 us)"
    )
    assert "NOT met (median 4.000 us" in common.check_latency(rows, "slow", 2e-6)
    assert "cannot tell (not installed)" in common.check_latency(rows, "gone", 2e-6)


def run_quick(script: str, *args: str, out: list[str] | None = None) -> dict[str, str]:
    """Run a benchmark in --quick mode (with `args`); each row's status ("ok"
    when timed). `out`, when given, receives what it printed."""
    stdout = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    if out is not None:
        out.append(stdout)
    statuses = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\S.*?)\s{2,}(WRONG|failed|not installed|\d+\.\d+)\s", line)
        if m and not line.startswith(("implementation", "time:")):
            status = m.group(2)
            statuses[m.group(1)] = "ok" if status[0].isdigit() else status
    return statuses


def check_rows(statuses: dict[str, str], names: list[str]) -> None:
    assert list(statuses) == names
    assert "WRONG" not in statuses.values(), statuses
    for name in names:
        # ember's own rows must run; rows that feed ember torch tensors need torch.
        if name.startswith(("ember", "numpy")) and "torch" not in name:
            assert statuses[name] == "ok", (name, statuses)
        else:  # the bench extra is optional
            assert statuses[name] in ("ok", "not installed"), (name, statuses)


def test_matmul_quick_checks_every_row():
    check_rows(
        run_quick("matmul.py"),
        [
            "numpy",
            "onnxruntime",
            "torch",
            "ember naive",
            "apache-tvm same schedule",
            "ember scheduled",
            "apache-tvm same schedule -mcpu=haswell",
            "ember scheduled -mcpu=haswell",
        ],
    )


def test_conv2d_quick_checks_every_row():
    check_rows(
        run_quick("conv2d.py"),
        [
            "onnxruntime",
            "torch",
            "numpy im2col",
            "apache-tvm same schedule",
            "ember naive",
            "ember scheduled",
        ],
    )


@pytest.mark.slow  # 16 s: a tuning run
def test_tuning_quick_checks_every_row_and_keeps_the_log(tmp_path):
    # a 1x16x16x16 3x3 conv: untuned, tuned (4 trials) and hand-scheduled ember
    out: list[str] = []
    statuses = run_quick(
        "tuning.py", "--only", "conv3x3", "--records-dir", str(tmp_path), out=out
    )
    check_rows(
        statuses,
        [
            "onnxruntime",
            "PyTorch eager",
            "numpy im2col",
            "ember untuned",
            "ember tuned",
            "ember hand-scheduled",
        ],
    )
    line = re.search(
        r"^  tuning: \d+\.\d s wall time, (\d+) trials; log (\S+);", out[0], re.M
    )
    assert line and int(line.group(1)) > 0, out[0]
    assert Path(line.group(2)) == tmp_path / "conv3x3.jsonl"
    assert len((tmp_path / "conv3x3.jsonl").read_text().splitlines()) > 1


CALL_OVERHEAD_ROWS = [
    "ember NDArray",
    "ember numpy",
    "ember torch",
    "ember torch from_dlpack once",
    "ember time_evaluator",
    "apache-tvm function",
    "apache-tvm Relax VM",
    "onnxruntime run",
    "onnxruntime iobinding",
    "torch add",
    "numpy add",
]


def test_call_overhead_quick_checks_every_row():
    check_rows(run_quick("call_overhead.py"), CALL_OVERHEAD_ROWS)


BLOCK_BENCH_EXTRA = """
import runpy, sys

class NoBenchExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("onnx", "onnxruntime", "torch", "tvm"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NoBenchExtra())
sys.argv = [sys.argv[1], "--quick"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _without_the_bench_extra(script: str) -> str:
    """What ``benchmarks/<script>`` prints where the bench extra is absent."""
    return subprocess.run(
        [sys.executable, "-c", BLOCK_BENCH_EXTRA, str(BENCH / script)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        cwd=BENCH,
    ).stdout


def test_without_the_bench_extra_its_rows_say_not_installed():
    out = _without_the_bench_extra("matmul.py")
    for name in ("onnxruntime", "torch", "apache-tvm same schedule"):
        assert re.search(rf"^{name}\s+not installed\s+\(\w+\)$", out, re.M), out
    assert re.search(r"^ember scheduled\s+\d+\.\d+", out, re.M), out
    assert "ember scheduled >= 0.6 x numpy: " in out
    assert "cannot tell (apache-tvm same schedule: not installed)" in out


def test_call_overhead_without_the_bench_extra():
    out = _without_the_bench_extra("call_overhead.py")
    for name in CALL_OVERHEAD_ROWS:
        if name.startswith(("apache-tvm", "onnxruntime", "torch", "ember torch")):
            assert re.search(rf"^{name}\s+not installed\s+\(\w+\)$", out, re.M), out
    for name in ("ember NDArray", "ember numpy", "ember time_evaluator", "numpy add"):
        assert re.search(rf"^{name}\s+\d+\.\d+", out, re.M), out
    assert re.search(
        r"^  ember NDArray <= 2 us a call: (met|NOT met) \(median", out, re.M
    )


RPC_ROWS = [
    "session: connect, 1 request, close",
    "call vecadd n=16, round trip",
    "time_evaluator n=16, local",
    "time_evaluator n=16, remote",
    "time_evaluator n=16, remote/local",
    "time_evaluator n=64K, local",
    "time_evaluator n=64K, remote",
    "time_evaluator n=64K, remote/local",
    "upload 1 MiB",
    "download 1 MiB",
    "copy-in 1 MiB array",
    "copy-out 1 MiB array",
    "8 clients x 20 calls, one server",
    "8 clients x 20 calls, a server each",
]
RPC_CELL = r"(\d+\.\d+ \S+|failed|skipped|not installed|-)"


def rpc_table(out: str) -> dict[str, tuple[str, str]]:
    """The rpc benchmark's rows: label -> (ember cell, tvm cell)."""
    cells = {}
    for line in out.splitlines():
        m = re.match(rf"^(\S.*?)\s{{2,}}{RPC_CELL}\s{{2,}}{RPC_CELL}(\s|$)", line)
        if m and not line.startswith("measure"):
            cells[m.group(1)] = (m.group(2), m.group(3))
    return cells


def test_rpc_quick_measures_every_row():
    out = subprocess.run(
        [sys.executable, str(BENCH / "rpc.py"), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    table = rpc_table(out)
    assert list(table) == RPC_ROWS, out
    for label, (ember, tvm) in table.items():
        if label == "8 clients x 20 calls, a server each":  # 8 servers: not quick
            assert (ember, tvm) in (
                ("skipped", "skipped"),
                ("skipped", "not installed"),
            )
            continue
        assert re.fullmatch(r"\d+\.\d+ \S+", ember), (label, ember, out)
        # tvm's server serves one session at a time: 8 clients at once may fail
        allowed = r"\d+\.\d+ \S+|not installed"
        allowed += {"8 clients x 20 calls, one server": "|failed"}.get(label, "")
        assert re.fullmatch(allowed, tvm), (label, tvm, out)
    assert "WRONG" not in out


def test_rpc_without_the_bench_extra():
    out = _without_the_bench_extra("rpc.py")
    table = rpc_table(out)
    assert list(table) == RPC_ROWS, out
    for label, (ember, tvm) in table.items():
        assert re.fullmatch(r"\d+\.\d+ \S+|skipped", ember), (label, ember, out)
        assert tvm == "not installed", (label, tvm, out)


DYNAMIC_ROW = re.compile(
    r"^\s+(\d+)\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+|not installed)"
    r"\s+(\d+\.\d\dx)\s+(\d+\.\d\dx|-)\s+(\S+)\s+(\S+)$",
    re.M,
)


@pytest.mark.slow  # 30-60 s: three models compiled three times each
def test_dynamic_quick_checks_and_times_every_size():
    """benchmarks/dynamic.py --quick: for the three models, the one dynamic library
    and a static build per size are checked against onnxruntime and timed at
    both sizes, and both compile times are given."""
    pytest.importorskip("torch")
    out = subprocess.run(
        [sys.executable, str(BENCH / "dynamic.py"), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    rows = DYNAMIC_ROW.findall(out)
    assert [(int(r[0]), int(r[1])) for r in rows] == [(1, 16), (8, 64)] * 3, out
    for row in rows:
        errors = [e for e in row[7:] if e != "-"]
        assert all(float(e) <= 1e-4 for e in errors), (row, out)
        assert len(errors) == 2 or row[4] == "not installed", (row, out)
    compiles = re.findall(
        r"^compile \(empty kernel cache\): ember dynamic \d+\.\d s once; "
        r"ember static \d+\.\d s for 2 sizes",
        out,
        re.M,
    )
    assert len(compiles) == 3, out
    assert "WRONG" not in out and "failed" not in out, out


UNDER_LOAD_ROW = re.compile(
    r"^(ember|onnxruntime|PyTorch eager)\s{2,}(alone|\d+ busy|two processes)"
    r"\s+(\d+\.\d)\s+(\d+\.\d\d)\s+(\d+\.\d\d)\s+(\d+)%\s+(\d+\.\d)x"
    r"\s+(?:\d+\.\d\d|-)$",
    re.M,
)


def under_load_rows(out: str) -> dict[tuple[str, str], tuple[float, ...]]:
    rows = {}
    for m in UNDER_LOAD_ROW.finditer(out):
        rows[m.group(1), m.group(2)] = tuple(float(v) for v in m.groups()[2:])
    return rows


@pytest.mark.slow  # 40 s of measured load
def test_under_load_quick_measures_every_load():
    out = subprocess.run(
        [sys.executable, str(BENCH / "under_load.py"), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    rows = under_load_rows(out)
    busy = f"{len(os.sched_getaffinity(0))} busy"
    loads = ["alone", busy, "two processes"]
    assert [k for k in rows if k[0] == "ember"] == [("ember", x) for x in loads], out
    assert [k for k in rows if k[0] == "onnxruntime"] == [
        ("onnxruntime", x) for x in loads
    ], out
    for (library, load), (runs, median, p90, kept, _) in rows.items():
        assert runs > 0 and 0 < median <= p90, (library, load, out)
        assert kept == 100 or load != "alone", out  # alone is the reference
    torch_absent = r"^PyTorch eager\s+not installed \(torch\)$"
    assert re.search(torch_absent, out, re.M) or ("PyTorch eager", "alone") in rows
    assert "WRONG" not in out and "failed" not in out, out
    for load in loads[1:]:
        assert re.search(
            rf"^  {load}: kept \d+% vs \d+%, .*: (met|NOT met)$", out, re.M
        )


@pytest.mark.slow  # 10 s; the quick run covers the rows
def test_under_load_without_onnxruntime():
    # ember's rows are still measured (their output unchecked: nothing to check
    # against), onnxruntime's say why not, and no comparison is made up.
    blocker = BLOCK_BENCH_EXTRA.replace('("onnx", ', "(")
    out = subprocess.run(
        [sys.executable, "-c", blocker, str(BENCH / "under_load.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        cwd=BENCH,
    ).stdout
    assert re.search(r"^onnxruntime\s+not installed \(onnxruntime\)$", out, re.M), out
    assert "ember: output not checked (no onnxruntime to check against)" in out
    assert ("ember", "alone") in under_load_rows(out), out
    assert "ember vs onnxruntime: cannot tell (onnxruntime did not run)" in out
