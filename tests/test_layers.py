"""The import directions between ember's packages, stated once: a new edge
against them fails here (read from the source with `ast`, every import,
function-level ones included; `from ember import te` is an edge to `te`).

The layers, bottom up: `runtime` (imports nothing of the compiler); `dialects`
(the IR); `te` (the TE language: expressions, schedules, their lowering to te
IR); `passes` and `backends` (transformations and code generators, the
kernel pool and cache); `topi` (the operator library: te computes and
schedules, nothing of graph ops); `strategy` (which topi builder computes
each graph op); `frontends`; `tune`; `compiler` (the model compiler:
`compile_model`, `build`); `llm` (causal LMs from a model folder); the
`ember` package (the façade); `tools`
(command lines) on top. Edges that go up a layer today are listed in
`KNOWN_BACK_EDGES` with the reason; the list may only shrink (issue 23:
"packages show the layers").
"""

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "runtime",
    "dialects",
    "te",
    "passes",
    "backends",
    "topi",
    "strategy",
    "frontends",
    "tune",
    "compiler",
    "llm",
    "ember",
    "tools",
)
LAYER = {name: i for i, name in enumerate(PACKAGES)}
# passes and backends are one layer (a backend runs passes; a pass compiles
# kernels through a backend).
LAYER["backends"] = LAYER["passes"]

KNOWN_BACK_EDGES = {
    ("passes", "strategy"): "convert-graph-to-te lowers each group through the "
    "strategies (lower_group, plan_blocks, copy_kernel)",
    ("passes", "tune"): "te-apply-records reads tuning logs (tune.records)",
    ("backends", "ember"): "the package version only (the kernel cache's keys)",
    ("frontends", "compiler"): "the torch frontend compiles (compile_model)",
    ("tune", "compiler"): "tune_model lowers a model to its kernels "
    "(lower_to_te); a candidate is built as ember.build builds",
    ("runtime", "ember"): "the package version only (rpc server's banner)",
    ("ember", "tools"): "`python -m ember` runs the command line (__main__.py)",
}


def _package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "ember":
        return None
    if len(parts) > 1 and parts[1] in PACKAGES:
        return parts[1]
    return "ember"


@cache
def _edges() -> dict[tuple[str, str], set[str]]:
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module == "ember":
                    names = [f"ember.{a.name}" for a in node.names]  # ember.te
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                else:
                    continue
                for name in names:
                    target = _package(name)
                    if target is not None and target != package:
                        edges[(package, target)].add(
                            f"{path.relative_to(ROOT)}: {name}"
                        )
    return edges


def test_imports_follow_the_layers():
    wrong = {
        edge: sorted(where)[:3]
        for edge, where in _edges().items()
        if LAYER[edge[1]] > LAYER[edge[0]] and edge not in KNOWN_BACK_EDGES
    }
    assert not wrong, f"imports against the layers: {wrong}"


def test_the_known_back_edges_still_exist():
    """An edge removed is a layer mended: drop it from the list."""
    gone = set(KNOWN_BACK_EDGES) - set(_edges())
    assert not gone, f"no longer imported, remove from KNOWN_BACK_EDGES: {gone}"


def test_the_runtime_and_backends_import_only_the_package_version():
    for package in ("runtime", "backends"):
        found = _edges().get((package, "ember"), set())
        assert all(w.endswith((": ember", ": ember.__version__")) for w in found)
