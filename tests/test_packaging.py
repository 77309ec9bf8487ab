"""Packaging: the wheel holds every subpackage, the license and py.typed, builds
without setuptools warnings, and `import ember.runtime` works from an installed
copy and from a checkout's root; dependencies are ranges pinned by
constraints.txt."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path

import numpy
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGE_DIR: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]


def _source_packages() -> set[str]:
    """Every folder with an __init__.py under the package-dir mapping, as the
    import name it gets."""
    found = set()
    for name, folder in PACKAGE_DIR.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in rel:
                found.add(".".join([name, *rel]))
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of what pyproject.toml names (the build
    writes build/ and *.egg-info beside the sources)."""
    if Version(version("setuptools")) < Version("77"):
        pytest.fail("setuptools>=77 builds the SPDX license: `make` installs it")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for folder in {f.split("/")[0] for f in PACKAGE_DIR.values()}:
        shutil.copytree(
            ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    out = src / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "-w", str(out), "."],
        cwd=src,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "Warning" not in output, output
    (whl,) = out.glob("ember-*.whl")
    return whl


def test_wheel_holds_every_subpackage_license_and_types(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in _source_packages():
        assert f"{package.replace('.', '/')}/__init__.py" in names, package
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) >= _source_packages()
    assert "ember/py.typed" in names
    assert "ember/runtime/include/ember_runtime.h" in names
    (dist_info,) = {n.split("/")[0] for n in names if ".dist-info/" in n}
    assert f"{dist_info}/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Classifier: License" not in metadata
    import ember

    assert f"Version: {ember.__version__}\n" in metadata
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt")
    assert b"ember = ember.tools.cli:main" in entry_points


def test_runtime_imports_installed_and_from_the_source_root(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q"]
        + ["--target", str(target), str(wheel)],
        check=True,
    )
    # -S: no site-packages, so no editable finder to lend the checkout's folders
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(target), str(Path(numpy.__file__).parents[1])]
        ),
    }
    code = "import ember.runtime, ember.runtime.rpc; print(ember.runtime.__file__)"
    for cwd, where in ((tmp_path, target), (ROOT, ROOT)):
        done = subprocess.run(
            [sys.executable, "-S", "-c", code],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        assert Path(done.stdout.strip()).is_relative_to(where)


def test_dependencies_are_ranges_pinned_by_constraints():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, pinned = line.partition("==")
            pins[name.strip().lower()] = pinned.strip()
    project = PYPROJECT["project"]
    requirements = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        requirements += [Requirement(r) for r in extra]
    for req in requirements:
        name = req.name.lower()
        assert name in pins, f"{name} has no exact version in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), (req, pins[name])
        exact = [s for s in req.specifier if s.operator == "=="]
        if name == "torch":  # an unpinned torch pulls the CUDA wheels
            assert str(req.specifier) == "==2.13.0"
        else:
            assert not exact, (
                f"{req}: a range in pyproject.toml, the pin in constraints"
            )


def test_every_make_install_takes_the_constraints():
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    installs = [ln for ln in makefile.splitlines() if re.search(r"pip\S* install", ln)]
    assert installs and all("-c constraints.txt" in ln for ln in installs)
    recipes = [ln.strip() for ln in makefile.splitlines() if ln.startswith("\t")]
    assert not [ln for ln in recipes if "pip" in ln and "PIP_INSTALL" not in ln]
