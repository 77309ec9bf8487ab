"""The runtime-only distribution (runtime/pyproject.toml): `ember-runtime` holds
ember.runtime, ember.runtime.rpc with `ember-rpc-server`, the C header and the
C runtime's sources, and needs numpy alone. A venv holding nothing else (no
xdsl, llvmlite or onnx, no compiler package) loads a model this process
compiled and exported, as `.so` and `.tar`, gives this process's result bit
for bit, and serves it over RPC with its own `ember-rpc-server`.

Offline by construction: the wheel is built with this venv's setuptools
(`--no-build-isolation`), numpy's wheel is repacked from the numpy installed
here (the files its RECORD lists), and the new venv installs both with
`--no-index`, so no package index is asked."""

import importlib.metadata
import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest
import small_cnn

import ember
from ember.runtime import GraphModule, cpu, load_module
from ember.runtime.rpc import connect

ROOT = Path(__file__).resolve().parents[1]
KEY = "runtime-package-test-key-0123456789"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="venv layout")


def _repack_installed(name: str, out: Path) -> Path:
    """A wheel of an installed distribution, zipped from the files its RECORD
    lists (scripts outside site-packages and bytecode left out; pip makes
    both again)."""
    dist = importlib.metadata.distribution(name)
    wheel_info = dist.read_text("WHEEL") or ""
    tag = next(
        line.split(":", 1)[1].strip()
        for line in wheel_info.splitlines()
        if line.startswith("Tag:")
    )
    path = out / f"{dist.metadata['Name']}-{dist.version}-{tag}.whl"
    install_records = {"INSTALLER", "REQUESTED", "direct_url.json"}
    with zipfile.ZipFile(path, "w") as z:
        for file in dist.files or ():
            in_info = file.parent.name.endswith(".dist-info")
            if ".." in file.parts or file.suffix == ".pyc":
                continue
            if in_info and file.name in install_records:
                continue
            z.write(file.locate(), str(file))
    return path


def _build_runtime_wheel(out: Path) -> Path:
    """`pip wheel ./runtime`, built from a copy (setuptools writes build/ and
    *.egg-info beside the sources)."""
    src = out / "src"
    subprocess.run(["cp", "-r", str(ROOT / "runtime"), str(src)], check=True)
    subprocess.run(
        ["find", str(src), "-name", "__pycache__", "-prune", "-exec", "rm", "-rf"]
        + ["{}", "+"],
        check=True,
    )
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    (wheel,) = out.glob("ember_runtime-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("wheels")
    return {
        "ember-runtime": _build_runtime_wheel(out),
        "numpy": _repack_installed("numpy", out),
    }


@pytest.fixture(scope="module")
def venv(wheels, tmp_path_factory) -> Path:
    """A venv with ember-runtime and what it depends on, from the wheels only."""
    root = tmp_path_factory.mktemp("runtime-venv") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python")]
        + ["install", "-q", "--no-index", "--find-links"]
        + [str(wheels["ember-runtime"].parent), "ember-runtime"],
        check=True,
    )
    return root


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> dict:
    """The small CNN compiled and exported here, with this process's output."""
    root = tmp_path_factory.mktemp("model")
    lib = ember.compile_model(small_cnn.model())
    lib.export_library(root / "cnn.so")
    lib.export_library(root / "cnn.tar")
    x = small_cnn.random_input()
    np.save(root / "x.npy", x)
    m = GraphModule(load_module(root / "cnn.so")["default"](cpu()))
    m.run(x=x)
    return {"root": root, "x": x, "y": m.get_output(0).numpy()}


def _env() -> dict[str, str]:
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "EMBER_RPC_KEY"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_the_wheel_holds_the_runtime_and_depends_on_numpy_alone(wheels):
    with zipfile.ZipFile(wheels["ember-runtime"]) as z:
        names = set(z.namelist())
        (info,) = {n.split("/")[0] for n in names if ".dist-info/" in n}
        metadata = z.read(f"{info}/METADATA").decode()
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert {
        "ember/runtime/__init__.py",
        "ember/runtime/rpc/server.py",
        "ember/runtime/include/ember_runtime.h",
        "ember/runtime/include/ember_crt.h",
        "ember/runtime/c/model.c",
        "ember/runtime/c/Makefile",
    } <= names
    # `ember` stays a namespace package: no ember/__init__.py, no compiler
    assert {n.split("/")[1] for n in names if n.startswith("ember/")} == {"runtime"}
    requires = [ln for ln in metadata.splitlines() if ln.startswith("Requires-Dist:")]
    assert requires == ["Requires-Dist: numpy<3,>=2.1"]
    assert f"Version: {ember.__version__}\n" in metadata
    assert "ember-rpc-server = ember.runtime.rpc.server:main" in entry_points


def test_the_runtime_project_matches_the_main_one():
    """One numpy range and one version for both distributions."""
    main = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = tomllib.loads((ROOT / "runtime" / "pyproject.toml").read_text())
    numpy_range = [d for d in main["dependencies"] if d.startswith("numpy")]
    assert runtime["project"]["dependencies"] == numpy_range
    assert runtime["project"]["version"] == ember.__version__
    main_dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "setuptools"
    ]["package-dir"]
    for package, folder in runtime["tool"]["setuptools"]["package-dir"].items():
        expected = main_dirs.get(package)
        if expected is not None:  # the same folders under the same names
            assert (ROOT / "runtime" / folder).resolve() == (ROOT / expected).resolve()


RUN_MODEL = """
import importlib.metadata, importlib.util, json, sys
import numpy as np
from ember.runtime import GraphModule, cpu, load_module
from ember.runtime.rpc import connect

absent = ["xdsl", "llvmlite", "onnx", "ember.compiler", "ember.te", "ember.passes"]
found = [m for m in absent if importlib.util.find_spec(m) is not None]
dists = sorted(d.metadata["Name"] for d in importlib.metadata.distributions())
outputs = {}
for library in sys.argv[2:]:
    m = GraphModule(load_module(library)["default"](cpu()))
    m.run(x=np.load(sys.argv[1]))
    outputs[library] = m.get_output(0).numpy().tolist()
print(json.dumps({"found": found, "dists": dists, "outputs": outputs,
                  "modules": sorted(sys.modules)}))
"""


def test_a_venv_with_only_the_runtime_runs_an_exported_model(venv, model, tmp_path):
    libraries = [str(model["root"] / "cnn.so"), str(model["root"] / "cnn.tar")]
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", RUN_MODEL]
        + [str(model["root"] / "x.npy"), *libraries],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["found"] == []
    assert result["dists"] == ["ember-runtime", "numpy"]
    assert not [m for m in result["modules"] if m.startswith(("xdsl", "llvmlite"))]
    for library in libraries:
        got = np.array(result["outputs"][library], dtype="float32")
        np.testing.assert_array_equal(got, model["y"])


def test_the_runtime_venv_serves_rpc(venv, model, tmp_path):
    version = subprocess.run(
        [str(venv / "bin" / "ember-rpc-server"), "--version"],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert version.stdout == f"ember-rpc-server (ember-runtime) {ember.__version__}\n"
    env = {**_env(), "EMBER_RPC_KEY": KEY}
    server = subprocess.Popen(
        [str(venv / "bin" / "ember-rpc-server"), "--port", "0", "-q"]
        + ["--workspace", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("ember-rpc-server: listening on 127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        with connect("127.0.0.1", port, key=KEY) as remote:
            remote.upload(model["root"] / "cnn.so")
            lib = remote.load_module("cnn.so")
            m = GraphModule(lib["default"](remote.cpu(0)))
            m.run(x=model["x"])
            np.testing.assert_array_equal(m.get_output(0).numpy(), model["y"])
            assert m.benchmark(number=2, repeat=2).mean > 0
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert "Traceback" not in err, err
