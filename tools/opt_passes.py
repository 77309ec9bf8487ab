"""`ember-opt --list-passes` (and the end of `--help`): every pass with its
one-line summary, ember's apart from xDSL's; and MLIR's `--pass-pipeline` form.

    ember-opt --list-passes
    ember-opt kernel.mlir --pass-pipeline='builtin.module(convert-te-to-loop,cse)'
"""

import re
from collections.abc import Callable

from xdsl.passes import ModulePass

from ember.runtime.errors import EmberValueError

PassFactory = Callable[[], type[ModulePass]]


def summary(cls: type) -> str:
    """The first sentence of a pass class's docstring, on one line ('' without
    a docstring): its summary line, even where that wraps."""
    paragraph = (cls.__doc__ or "").strip().split("\n\n")[0]
    return re.split(
        r"(?<!e\.g\.)(?<!i\.e\.)(?<=\.)\s(?=[A-Z])", " ".join(paragraph.split())
    )[0]


def list_passes(available: dict[str, PassFactory]) -> str:
    """The passes by where they come from: ember, xDSL, then others (plugins,
    `register_pass`), each name with its summary."""
    groups: dict[str, list[tuple[str, str]]] = {"ember": [], "xDSL": [], "other": []}
    for name, factory in sorted(available.items()):
        try:
            cls = factory()
        except Exception as e:  # an optional dependency of one xDSL pass
            groups["other"].append((name, f"(cannot load: {type(e).__name__}: {e})"))
            continue
        module = cls.__module__
        group = (
            "ember"
            if module == "ember" or module.startswith("ember.")
            else "xDSL"
            if module.startswith("xdsl.")
            else "other"
        )
        groups[group].append((name, summary(cls)))
    titles = {
        "ember": "ember's passes",
        "xDSL": "xDSL's passes",
        "other": "other passes (plugins, register_pass)",
    }
    lines: list[str] = []
    for group, entries in groups.items():
        if not entries:
            continue
        lines.append(f"{titles[group]}:")
        width = max(len(n) for n, _ in entries) + 2
        lines.extend(f"  {n:<{width}}{s}".rstrip() for n, s in entries)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


_ANCHOR = re.compile(r"^\s*([\w.]+)\((.*)\)\s*$", re.S)


def strip_module_anchor(spec: str) -> str:
    """MLIR's `builtin.module(p1,p2{opt=1})` as xDSL's `p1,p2{opt=1}`; a list
    without the anchor is returned as it is.

    Raises:
        ValueError: an anchor on another op (`func.func(...)`): ember-opt runs
            passes on the whole module.
    """
    m = _ANCHOR.match(spec)
    if m is None or "{" in spec[: spec.find("(")]:
        return spec
    if m[1] != "builtin.module":
        raise EmberValueError(
            f"--pass-pipeline: expected builtin.module(...) (ember-opt runs passes "
            f"on the whole module), got {m[1]}(...)"
        )
    return m[2].strip()
