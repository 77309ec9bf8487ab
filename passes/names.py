"""SSA name hints from user-given names (this file is not a pass).

Tensor and argument names (`ember.name`, a te.compute's name) are any string; an SSA
name in the textual IR is ASCII only. `ssa_name` turns the one into the other.
"""

import re

_INVALID = re.compile(r"[^A-Za-z0-9_$.]+")


def ssa_name(name: str) -> str | None:
    """A valid SSA name hint made from `name`, or None if nothing of it is usable.

    Runs of other characters than ASCII letters, digits, `_`, `$` and `.` become
    one `_` between the kept parts and are dropped at the ends; leading digits are
    dropped.

        >>> ssa_name("x y"), ssa_name('a"b'), ssa_name("2nd"), ssa_name("é")
        ('x_y', 'a_b', 'nd', None)
    """
    kept = "_".join(part for part in _INVALID.split(name) if part)
    return kept.lstrip("0123456789") or None
