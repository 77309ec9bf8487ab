"""The symlink tree pyright checks (.ci/pyright_tree.py) mirrors package-dir."""

import importlib.util
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location(
        "pyright_tree", ROOT / ".ci" / "pyright_tree.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tree_links_every_module_under_its_import_name(tmp_path):
    out = tmp_path / "tree"
    linked = _script().build_tree(ROOT, out)
    with (ROOT / "pyproject.toml").open("rb") as f:
        mapping = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    expected = 0
    for name, folder in mapping.items():
        for source in (ROOT / folder).glob("*.py"):
            link = out.joinpath(*name.split("."), source.name)
            assert link.is_symlink(), f"{link} missing for {name}"
            assert link.resolve() == source.resolve()
            expected += 1
    assert linked == expected
    # The import names pyright sees are the ones Python uses.
    assert (out / "ember" / "dialects" / "loop.py").resolve() == (
        ROOT / "dialects" / "loop.py"
    )
    assert (out / "ember" / "backends" / "llvm" / "__init__.py").exists()


def test_rebuild_drops_stale_links(tmp_path):
    out = tmp_path / "tree"
    stale = out / "ember" / "gone.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("")
    _script().build_tree(ROOT, out)
    assert not stale.exists()


def test_missing_package_dir_is_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    with pytest.raises(SystemExit, match="expected a \\[tool.setuptools\\]"):
        _script().build_tree(tmp_path, tmp_path / "tree")
