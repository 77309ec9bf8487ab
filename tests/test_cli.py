"""The `ember` command and what every tool shares: --version, one exit-status
scheme (0 ok, 1 input error, 2 usage error, 3 internal error), the cache."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ember
from ember.runtime.rpc import server as rpc_server
from ember.tools import cli, ember_compile, ember_opt, ember_run, ember_tune

ROOT = Path(__file__).resolve().parents[1]

TOOLS = {
    "ember": cli.main,
    "ember-compile": ember_compile.main,
    "ember-tune": ember_tune.main,
    "ember-run": ember_run.main,
    "ember-opt": ember_opt.main,
    "ember-rpc-server": rpc_server.main,
    "ember cache": cli.cache_main,
}


def _status(main, argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse's exits
        return e.code if isinstance(e.code, int) else 1


@pytest.mark.parametrize("prog", TOOLS)
def test_every_tool_prints_embers_version(prog, capsys):
    assert _status(TOOLS[prog], ["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(prog) and ember.__version__ in out


def test_python_dash_m_ember_is_the_ember_command():
    done = subprocess.run(
        [sys.executable, "-m", "ember", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == f"ember {ember.__version__}\n"
    done = subprocess.run(
        [sys.executable, "-m", "ember", "compile", "--help"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "Compile an ONNX model" in done.stdout


def test_scripts_are_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["ember"] == "ember.tools.cli:main"
    for name in ("ember-opt", "ember-compile", "ember-run", "ember-rpc-server"):
        assert name in scripts


@pytest.mark.parametrize(
    "argv, tool",
    [
        (["compile", "/no/m.onnx", "-o", "/tmp/m.so"], "ember-compile"),
        (["run", "/no/m.so"], "ember-run"),
        (["opt", "/no/k.mlir"], "ember-opt"),
    ],
)
def test_commands_dispatch_to_the_tools(argv, tool, capsys):
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{tool}: error: ") and "/no/" in err


def test_unknown_command_is_a_usage_error(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    assert cli.main([]) == 2


@pytest.mark.parametrize("prog", TOOLS)
def test_a_bad_option_is_status_2_everywhere(prog, capsys):
    argv = ["--no-such-option"]
    if prog == "ember":
        argv = ["opt", *argv]
    assert _status(TOOLS[prog], argv) == 2
    assert ": error: " in capsys.readouterr().err


@pytest.mark.parametrize(
    "main, argv",
    [
        (ember_compile.main, ["{tmp}/none.onnx", "-o", "{tmp}/m.so"]),
        (ember_run.main, ["{tmp}/none.so"]),
        (ember_opt.main, ["{tmp}/none.mlir"]),
    ],
)
def test_a_missing_input_file_is_status_1_everywhere(main, argv, tmp_path, capsys):
    assert main([a.format(tmp=tmp_path) for a in argv]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "none." in err and "Traceback" not in err


def _fake_entries(root: Path, n: int) -> None:
    shard = root / "kernels" / "ab"
    shard.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (shard / f"k{i}.o").write_bytes(b"\0" * 1024)


def test_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    _fake_entries(tmp_path / "cache", 3)
    assert cli.main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"directory: {tmp_path / 'cache'}" in out and "kernels: 3 " in out
    assert cli.main(["cache", "clear"]) == 0
    assert f"removed 3 kernel(s) from {tmp_path / 'cache'}" in capsys.readouterr().out
    assert cli.main(["cache", "info"]) == 0
    assert "kernels: 0 " in capsys.readouterr().out
    _fake_entries(tmp_path / "other", 2)
    assert cli.main(["cache", "info", "--dir", str(tmp_path / "other")]) == 0
    assert "kernels: 2 " in capsys.readouterr().out
    monkeypatch.setenv("EMBER_CACHE", "off")
    assert cli.main(["cache", "info"]) == 0
    assert "the disk cache is off" in capsys.readouterr().out
    assert _status(cli.main, ["cache", "prune"]) == 2
