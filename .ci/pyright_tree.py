"""Lay out the `ember` package as Python imports it, for pyright.

ember maps its top-level folders into one import namespace with setuptools'
`package-dir` (`ember.dialects` is `dialects/`, `ember.passes` is `passes/`, ...).
The editable install makes that work at run time through an import hook, which a
static checker cannot run, so pyright would see `ember/` at the repository root
and no `ember.dialects` under it.

This script reads the mapping from pyproject.toml and builds, under
`build/pyright-src/`, the tree an installed wheel would have, made of one relative
symlink per source file:

    build/pyright-src/ember/__init__.py         -> ember/__init__.py
    build/pyright-src/ember/dialects/loop.py    -> dialects/loop.py
    build/pyright-src/ember/backends/llvm/...   -> backends/llvm/...

pyright checks the tree (`include` and an execution environment rooted there), so
every module has exactly one name, `ember.<...>`, whether a file reaches it by an
absolute or a relative import. Symlinks to files, not to folders, because pyright
does not descend into symlinked folders when it looks for source files. The tree
is rebuilt from scratch on every run (milliseconds), so new and deleted files are
always reflected.

With `--run`, it then runs pyright (the one installed beside this Python) with the
arguments that follow, and rewrites the paths pyright prints from the tree back to
the files in the repository, so `build/pyright-src/ember/dialects/loop.py:12:3`
reads `dialects/loop.py:12:3`. The exit status is pyright's. `make lint` runs it
that way.

Usage: python .ci/pyright_tree.py [--root REPO] [--out DIR] [--run [PYRIGHT ARGS]]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

SOURCE_SUFFIXES = (".py", ".pyi")


def package_dirs(pyproject: Path) -> dict[str, Path]:
    """The `package-dir` mapping of pyproject.toml: dotted name -> folder."""
    with pyproject.open("rb") as f:
        config = tomllib.load(f)
    mapping = config.get("tool", {}).get("setuptools", {}).get("package-dir")
    if not isinstance(mapping, dict) or not mapping:
        raise SystemExit(
            f"{pyproject}: expected a [tool.setuptools] package-dir table, got "
            f"{mapping!r}"
        )
    return {str(name): Path(folder) for name, folder in mapping.items()}


def build_tree(root: Path, out: Path) -> int:
    """Rebuild `out` as symlinks into `root`; return the number of files linked."""
    mapping = package_dirs(root / "pyproject.toml")
    if out.exists():
        shutil.rmtree(out)
    linked = 0
    for name, folder in sorted(mapping.items()):
        src = root / folder
        if not src.is_dir():
            raise SystemExit(f"package-dir maps {name!r} to {folder}, not a folder")
        dest = out.joinpath(*name.split("."))
        dest.mkdir(parents=True, exist_ok=True)
        # Only the folder's own files: subpackages are entries of their own in
        # package-dir (ember.backends.llvm), as setuptools requires.
        for path in sorted(src.iterdir()):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES:
                link = dest / path.name
                link.symlink_to(os.path.relpath(path, dest))
                linked += 1
    return linked


def run_pyright(root: Path, out: Path, pyright_args: list[str]) -> int:
    """Run pyright in `root`, printing its output with tree paths made real."""
    proc = subprocess.run(
        [sys.executable, "-m", "pyright", *pyright_args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    tree_path = re.compile(re.escape(str(out)) + r"/[^\s:\"']+")

    def real(match: re.Match[str]) -> str:
        path = Path(match.group(0))
        return os.path.relpath(path.resolve(), root) if path.exists() else str(path)

    sys.stdout.write(tree_path.sub(real, proc.stdout))
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).parent.parent)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--run",
        nargs=argparse.REMAINDER,
        default=None,
        metavar="PYRIGHT_ARGS",
        help="then run pyright with these arguments, paths mapped back",
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    out = (args.out or root / "build" / "pyright-src").resolve()
    linked = build_tree(root, out)
    print(f"pyright tree: {linked} files under {os.path.relpath(out)}", file=sys.stderr)
    if args.run is None:
        return 0
    return run_pyright(root, out, args.run)


if __name__ == "__main__":
    raise SystemExit(main())
