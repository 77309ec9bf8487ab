"""benchmarks/generate.py: ember.llm, transformers eager, torch.compile and
onnxruntime each generate, their greedy ids checked against transformers'
generate before anything is timed; a runtime with other ids is never timed."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
RUNTIMES = [
    "ember",
    "ember-int8",
    "ember-int4",
    "torch-eager",
    "torch-compile",
    "onnxruntime",
]
ROW = re.compile(
    r"^(\S+)\s+(ok|WRONG|failed|not installed)\s+(\d+\.\d\d)\s+(\d+\.\d)"
    r"\s+(-|\d+\.\d\dx (?:faster|slower))\s+(\d+\.\d)\s+\d+%",
    re.M,
)


def load_generate():
    spec = importlib.util.spec_from_file_location(
        "bench_generate", BENCH / "generate.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class FakeWorker:
    """A worker whose generations return `ids`, 1 ms a decode step."""

    def __init__(self, ids: list[int]):
        self.ids, self.calls = ids, 0

    def ask(self, prompt: list[int], new_tokens: int) -> dict:
        self.calls += 1
        decode = [1e-3] * (new_tokens - 1)
        return {"status": "ok", "ids": self.ids, "prefill": 0.01, "decode": decode}


def test_other_ids_are_a_wrong_row_that_is_never_timed(monkeypatch, capsys):
    gen = load_generate()
    monkeypatch.setattr(gen, "SETTLE", 0)
    result = gen.Result(gen.Model("m", 10**6, 4 * 10**6, reference=[1, 2, 3]))
    workers = {"ember": FakeWorker([1, 2, 3]), "onnxruntime": FakeWorker([1, 5, 3])}
    result.status = dict.fromkeys(workers, "ok")
    result.note = dict.fromkeys(workers, "")
    gen.check(result, workers, 3)
    gen.measure_rounds(result, workers, 3, rounds=2)
    assert result.status == {"ember": "ok", "onnxruntime": "WRONG"}
    assert result.note["onnxruntime"] == (
        "token 1: id 5, expected 2 (transformers generate)"
    )
    assert (workers["ember"].calls, workers["onnxruntime"].calls) == (3, 1)
    assert result.decode_rate("ember") == pytest.approx(1000)
    gen.print_table(result, bandwidth=8.0)
    out = capsys.readouterr().out
    assert re.search(r"^ember\s+ok\s+10\.00\s+1000\.0\s+-\s+4\.0\s+50%", out, re.M)
    assert re.search(r"^onnxruntime\s+WRONG\s+token 1: id 5", out, re.M), out


@pytest.mark.slow  # 20-30 s: four worker processes, three of them import torch
def test_generate_quick_checks_and_times_every_runtime():
    """Every runtime's greedy ids equal transformers' and every row is timed,
    with decode tokens/s, ember's ratio and the share of memory bandwidth."""
    for package in ("torch", "transformers", "onnx", "onnxruntime"):
        pytest.importorskip(package)
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH / "generate.py"),
            "--quick",
            "--models",
            "gpt2-small-ish",
            "--new-tokens",
            "4",
            # inductor's C++ build takes about 45 s on 2 cores with a cold
            # cache; the full run compiles with it
            "--compile-backend",
            "eager",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    assert re.search(r"^cpu .+, \d+ threads", out, re.M), out
    assert re.search(r"^memory bandwidth \d+\.\d GB/s", out, re.M), out
    rows = ROW.findall(out)
    assert [row[0] for row in rows] == RUNTIMES, out
    for name, status, prefill, rate, versus, weights in rows:
        assert status == "ok", (name, out)
        assert float(prefill) > 0 and float(rate) > 0 and float(weights) > 0, out
        assert (versus == "-") == (name == "ember"), (name, out)
    assert "WRONG" not in out and "failed" not in out, out
    for name in ("ember-int8", "ember-int4"):  # measured against float32's stream
        assert re.search(rf"^{name} .*top-1 agreement \d+/4 \(teacher", out, re.M), out
