"""ember-tune: a model's kernels tuned into a log that ember-compile applies;
resuming, the cache directory's log, and one-line errors for bad input."""

import subprocess
import sys

import onnx
import pytest
from test_tune_model import small_cnn

from ember.tools.ember_tune import main
from ember.tune.records import TuningRecordWarning, load_records


def _tool(name: str, *args, env=None):
    return subprocess.run(
        [sys.executable, "-m", f"ember.tools.{name}", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.fixture
def env(tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    return dict(os.environ)


@pytest.mark.slow  # record application is tested in-process (test_tune_model.py)
def test_tune_resume_and_compile_with_the_records(tmp_path, env):
    model = tmp_path / "m.onnx"
    onnx.save(small_cnn(), model)
    log = tmp_path / "r.jsonl"
    first = _tool("ember_tune", model, "-o", log, "--trials", 4, env=env)
    assert first.returncode == 0, first.stderr
    assert "model (tuned kernels" in first.stdout  # the table
    assert "conv2d_add_relu" in first.stdout
    records = load_records(log)
    roles = [r.role for r in records]
    assert roles.count("trial") == 4 and roles.count("baseline") == 3
    # the best of each task went to the cache directory's log too
    cached = load_records(tmp_path / "cache" / "tuning.jsonl")
    assert len({r.workload for r in cached}) == 3

    again = _tool("ember_tune", model, "-o", log, "--trials", 2, env=env)
    assert again.returncode == 2
    assert "--resume" in again.stderr and "Traceback" not in again.stderr
    assert len(load_records(log)) == len(records)  # nothing overwritten

    with open(log, "a") as f:  # a torn line, as a tuner killed mid-write leaves
        f.write('{"version": 1, "workload": \n')
    resumed = _tool("ember_tune", model, "-o", log, "--trials", 2, "--resume", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert "skipped: not JSON" in resumed.stderr  # a warning, and on it goes
    with pytest.warns(TuningRecordWarning, match="skipped"):
        after = load_records(log)[len(records) :]
    trials = [r.schedule for r in after if r.role == "trial"]
    assert len(trials) == 2
    assert not {r.schedule for r in records} & set(trials)  # nothing twice

    lib = tmp_path / "m.so"
    built = _tool("ember_compile", model, "-o", lib, "--tuning-records", log, env=env)
    assert built.returncode == 0, built.stderr
    assert "3 tuned" in built.stderr


@pytest.mark.parametrize(
    "args, status, message",
    [
        (["--trials", "0"], 2, "--trials: expected a positive count"),
        (["--time-budget", "-1"], 2, "--time-budget: expected seconds > 0"),
        (["--rpc", "nohost"], 2, "--rpc: expected HOST:PORT"),
        (["--rpc", "h:1", "--dask-scheduler", "tcp://h:2"], 2, "give one of them"),
    ],
)
def test_bad_arguments_are_one_line_errors(tmp_path, capsys, args, status, message):
    model = tmp_path / "m.onnx"
    onnx.save(small_cnn(), model)
    assert main([str(model), "-o", str(tmp_path / "r.jsonl"), *args]) == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_model_and_corrupt_model(tmp_path, capsys, env):
    assert main([str(tmp_path / "none.onnx"), "-o", str(tmp_path / "r.jsonl")]) == 1
    assert "no such model file" in capsys.readouterr().err
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00not a model")
    assert main([str(bad), "-o", str(tmp_path / "r.jsonl")]) == 1
    assert "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_compile_with_a_missing_records_file(tmp_path, env):
    model = tmp_path / "m.onnx"
    onnx.save(small_cnn(), model)
    out = _tool(
        "ember_compile",
        model,
        "-o",
        tmp_path / "m.so",
        "--tuning-records",
        tmp_path / "none.jsonl",
        env=env,
    )
    assert out.returncode == 1
    assert "--tuning-records: no such file" in out.stderr


def test_an_output_that_is_the_model_or_another_output_is_refused(
    tmp_path, capsys, env
):
    """`-o model.onnx --resume` would append JSON to the model: refused, as
    are --plot naming the log and -o naming the cache directory's log."""
    model = tmp_path / "m.onnx"
    onnx.save(small_cnn(), model)
    before = model.read_bytes()
    cached = tmp_path / "cache" / "tuning.jsonl"
    cached.parent.mkdir()
    cached.write_text("")
    log = tmp_path / "r.jsonl"
    for args, message in [
        (["-o", str(model), "--resume"], f"-o {model}: the same file as the model"),
        (
            ["-o", str(log), "--plot", f"{tmp_path}/./r.jsonl"],
            f"--plot {tmp_path}/./r.jsonl: the same file as -o {log}",
        ),
        (
            ["-o", str(cached), "--resume"],
            f"-o {cached}: the same file as the cache directory's log {cached}",
        ),
    ]:
        assert main([str(model), "-q", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("ember-tune: error: ") and message in err
        assert err.count("\n") == 1
    assert model.read_bytes() == before and cached.read_text() == ""
    assert not log.exists()
