"""The README's Python and the scripts in examples/ run as written."""

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
    # The README writes libraries to the working directory and reads examples/.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "the README shows Python"
    scope: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), scope)


@pytest.mark.slow  # 19 s; `make demo` runs it
def test_demo_runs_and_checks_against_numpy():
    """The demo as `make demo` runs it, made small: a 64x64 MobileNetV2 and
    two candidates of schedule search per kernel."""
    demo = [str(ROOT / "examples" / "demo.py"), "--size", "64", "--trials", "2"]
    out = subprocess.run(
        [sys.executable, *demo], capture_output=True, text=True, check=True
    ).stdout
    assert "MISMATCH" not in out
    assert "outputs agree: ok" in out and "scheduled by ember.auto_schedule" in out
    assert out.count(" ok (max |err|") == 4, out  # a row per te kernel


def test_examples_import_cleanly(monkeypatch):
    """Every example imports; one that needs an optional package (torch) is
    left out, with the reason printed, where that package is missing."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))  # as when run from there
    for script in (ROOT / "examples").glob("*.py"):
        try:
            runpy.run_path(str(script), run_name="not_main")
        except ModuleNotFoundError as e:
            if e.name not in OPTIONAL:
                raise
            print(f"{script.name}: not imported, {e.name} is not installed")


OPTIONAL = ("torch",)


@pytest.mark.parametrize("script", ["matmul_schedule.py", "conv2d_schedule.py"])
def test_schedule_tutorials_run_every_step_right(script):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    steps = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(steps) == 6, out
    assert all(line.endswith(" ok") for line in steps), out
