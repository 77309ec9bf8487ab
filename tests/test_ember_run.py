"""ember-run: running model libraries from the command line, and its errors."""

import logging
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import handmade_model as hm
import numpy as np
import pytest

import ember
from ember.runtime import save_param_dict
from ember.tools import ember_run
from ember.tools.common import setup_logging

ROOT = Path(__file__).resolve().parents[1]
PARAMS = hm.random_params()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("ember_run")
    paths = {
        "embedded": root / "embedded.so",
        "separate": root / "separate.so",
        "tar": root / "embedded.tar",
        "params": root / "model.params",
    }
    embedded = hm.build(PARAMS)
    embedded.export_library(paths["embedded"])
    embedded.export_library(paths["tar"])
    hm.build().export_library(paths["separate"])
    paths["params"].write_bytes(save_param_dict(PARAMS))
    return paths


def _run(capsys, *argv):
    code = ember_run.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_random_inputs_summary_and_latency(models, capsys, tmp_path):
    code, out, err = _run(
        capsys, models["embedded"], "--repeat", 3, "--output-dir", tmp_path / "out"
    )
    assert code == 0, err
    assert "params embedded, 896 bytes" in out
    assert "input 'x': float32 (1, 8) from random (seed 0)" in out
    assert "output 0 'y': float32 (1, 4)" in out
    assert "min " in out and "max " in out and "mean " in out
    assert "first values: [" in out
    assert "over 3 run(s)" in out and "latency: median " in out
    x = np.random.default_rng(0).standard_normal((1, hm.K)).astype("float32")
    saved = np.load(tmp_path / "out" / "y.npy")
    np.testing.assert_allclose(saved, hm.reference(x, PARAMS), rtol=1e-5, atol=1e-5)
    first = f"{saved[0, 0]:.5f}"
    assert first in out


def test_inputs_from_files(models, capsys, tmp_path):
    x = np.full((1, hm.K), 0.5, "float32")
    np.save(tmp_path / "x.npy", x)
    for spec in (f"x={tmp_path / 'x.npy'}", str(tmp_path / "x.npy")):
        code, out, err = _run(
            capsys,
            models["tar"],
            "--input",
            spec,
            "--repeat",
            0,
            "--output-dir",
            tmp_path,
        )
        assert code == 0, err
        assert f"from {tmp_path / 'x.npy'}" in out
        assert "latency" not in out
        np.testing.assert_allclose(
            np.load(tmp_path / "y.npy"), hm.reference(x, PARAMS), rtol=1e-5, atol=1e-5
        )


def test_inputs_from_an_npz(models, capsys, tmp_path):
    x = np.full((1, hm.K), 0.25, "float32")
    np.savez(tmp_path / "in.npz", x=x)
    for flag in ("--input", "--inputs"):
        code, out, err = _run(
            capsys,
            models["embedded"],
            flag,
            tmp_path / "in.npz",
            "--repeat",
            0,
            "--output-dir",
            tmp_path,
        )
        assert code == 0, err
        assert f"from {tmp_path / 'in.npz'}['x']" in out
        np.testing.assert_allclose(
            np.load(tmp_path / "y.npy"), hm.reference(x, PARAMS), rtol=1e-5, atol=1e-5
        )


def test_separate_params(models, capsys):
    code, out, err = _run(capsys, models["separate"])
    assert code == 1
    assert "keeps its params separate: pass --params FILE" in err
    code, out, err = _run(
        capsys, models["separate"], "--params", models["params"], "--repeat", 1
    )
    assert code == 0, err
    assert "params separate" in out
    code, out, err = _run(capsys, models["separate"], "--params", models["embedded"])
    assert code == 1 and "a packed params blob for this model has 896 bytes" in err
    code, out, err = _run(capsys, models["separate"], "--params", "/no/such.params")
    assert code == 1 and "cannot read --params /no/such.params" in err


@pytest.mark.parametrize(
    "argv, status, message",
    [
        (["{lib}", "--input", "q={npy}"], 2, "has no input 'q'; its inputs are 'x'"),
        (["{lib}", "--input", "x={npy}", "--input", "x={npy}"], 2, "given twice"),
        (["{lib}", "--input", "x=/no/x.npy"], 1, "no such file: /no/x.npy"),
        (["{lib}", "--input", "x={lib}"], 1, "cannot read {lib} as a .npy array"),
        (["{lib}", "--input", "x={npz}"], 1, "holds several arrays (.npz)"),
        (["{lib}", "--inputs", "{npz}"], 2, "has no input 'q'; its inputs are 'x'"),
        (["{lib}", "--input", "/no/x.npz"], 1, "no such file: /no/x.npz"),
        (["{lib}", "--input", "x={wrong}"], 1, r"expected float32 (1, 8), got float64"),
        (["{lib}", "--repeat", "-1"], 2, "--repeat must be >= 0"),
        (["/no/model.so"], 1, "no such file: /no/model.so"),
        (
            ["{npy}"],
            1,
            "expected a shared library (.so), a library archive (.tar) or an object file",
        ),
        (["{kernel}"], 1, 'not a model library (its metadata has no "model"'),
    ],
)
def test_errors_are_one_line_and_an_exit_status(
    models, capsys, tmp_path, argv, status, message
):
    np.save(tmp_path / "x.npy", np.zeros((1, hm.K), "float32"))
    np.save(tmp_path / "wrong.npy", np.zeros((1, hm.K)))
    np.savez(tmp_path / "q.npz", x=np.zeros((1, hm.K), "float32"), q=np.zeros(2))
    from ember import te

    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2, name="B")
    ember.build(te.create_schedule(B.op), [A, B], name="double").export_library(
        tmp_path / "kernel.so"
    )
    values = {
        "lib": models["embedded"],
        "npy": tmp_path / "x.npy",
        "wrong": tmp_path / "wrong.npy",
        "kernel": tmp_path / "kernel.so",
        "npz": tmp_path / "q.npz",
    }
    argv = [a.format(**values) for a in argv]
    code, out, err = _run(capsys, *argv)
    assert code == status
    assert message.format(**values) in err
    assert err.startswith("ember-run: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_an_output_that_is_an_input_file_is_refused(models, capsys, tmp_path):
    """--output-dir would save output 'y' as y.npy over the input read from
    it: refused before the model runs, the input left as it was."""
    x = np.full((1, hm.K), 0.5, "float32")
    np.save(tmp_path / "y.npy", x)
    code, out, err = _run(
        capsys,
        models["embedded"],
        "--input",
        f"x={tmp_path}/y.npy",
        "--output-dir",
        f"{tmp_path}/.",
    )
    assert code == 2 and "output 0" not in out
    assert err == (
        f"ember-run: error: output 'y' {tmp_path}/./y.npy: the same file as "
        f"input 'x' {tmp_path}/y.npy; name another file\n"
    )
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x)


def test_bad_option_is_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        ember_run.main(["--repeat", "x"])
    assert e.value.code == 2


def test_progress_shows_on_long_work(capsys):
    setup_logging("ember-run", logging.INFO)
    with ember_run.progress("working", delay=0.0):
        import time

        time.sleep(0.05)
    err = capsys.readouterr().err
    assert err.startswith("working...\n") and "working: done in" in err
    with ember_run.progress("quick", delay=60):
        pass
    assert capsys.readouterr().err == ""


def test_a_tar_link_shows_progress(models, capsys, monkeypatch):
    monkeypatch.setattr(ember_run, "PROGRESS_AFTER_S", 0.0)
    code, out, err = _run(capsys, models["tar"], "--repeat", 0)
    assert code == 0
    assert f"linking {models['tar']}..." in err and "done in" in err


def test_runs_as_a_program_without_the_compiler(models, tmp_path):
    code = (
        "import sys\n"
        "from ember.tools import ember_run\n"
        f"status = ember_run.main([{str(models['embedded'])!r}, '--repeat', '2'])\n"
        "assert not any(m.startswith(('xdsl', 'llvmlite')) for m in sys.modules)\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    assert "latency: median" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "ember.tools.ember_run", str(tmp_path / "none.so")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr


def test_internal_error_is_one_line_exit_3(models, capsys, monkeypatch):
    def boom(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(ember_run, "_summary", boom)
    code, out, err = _run(capsys, models["embedded"], "--repeat", 0)
    assert code == 3 and "ember-run: internal error: RuntimeError: boom" in err
    assert "Traceback" not in err
    with pytest.raises(RuntimeError):
        ember_run.main([str(models["embedded"]), "--show-traceback"])


def test_quiet_hides_progress(models, capsys, monkeypatch):
    monkeypatch.setattr(ember_run, "PROGRESS_AFTER_S", 0.0)
    code, out, err = _run(capsys, models["tar"], "--repeat", 0, "-q")
    assert code == 0 and err == ""
    monkeypatch.setenv("EMBER_LOG_LEVEL", "warning")
    code, out, err = _run(capsys, models["tar"], "--repeat", 0)
    assert code == 0 and err == ""
    code, out, err = _run(capsys, models["tar"], "--repeat", 0, "-v")
    assert code == 0 and "linking" in err
    monkeypatch.setenv("EMBER_LOG_LEVEL", "loud")
    code, out, err = _run(capsys, models["tar"], "--repeat", 0)
    assert code == 2 and "EMBER_LOG_LEVEL: expected DEBUG" in err


def test_entry_point_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["ember-run"] == "ember.tools.ember_run:main"
