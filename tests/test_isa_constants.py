"""No ISA constant is written in `topi/` or `passes/`: `Target` is the one place
that knows the machine (vector widths, lanes, registers, caches).

An AST scan of every Python file there flags:

- a name that says it is a machine fact (`VECTOR`, `LANES`, `TILE_REGISTERS`,
  `VECTOR_BYTES`, `MAX_WIDTH`, `L2_BYTES`, `simd_width`, `lanes`...) bound to an
  integer literal, at any level;
- an integer literal passed where a width or tile goes: a `split`/`tile` factor,
  a `*divisor*` helper's bound, a `lanes=`/`vector=`-like keyword;
- 16, 32 or 64 written beside a lanes, vector or registers name (`lanes * 16`,
  `registers > 32`).

The scanner is tested on the code it replaced (the AVX-512 constants of topi and
loop-vectorize before the target held them), so it is known to catch them.
"""

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("topi", "passes")

# Machine facts as constant names (UPPER_CASE) and as variables (any case).
FACT_CONSTANT = re.compile(
    r"(^|_)(VECTORS?|LANES?|REGISTERS?|SIMD|ZMM|YMM|XMM|VLEN|WIDTH|L1D?|L2|L3|CACHE)"
    r"(_|$)"
)
FACT_VARIABLE = re.compile(
    r"(?i)(^|_)(vectors?|lanes?|registers?|simd|vlen|vector_bytes|cache_bytes)(_|$)"
)
WIDE = {16, 32, 64}
FACTOR_CALLS = {"split", "tile"}
WIDTH_KEYWORDS = {"factor", "lanes", "vector", "width", "vector_bytes", "registers"}


def _literal_int(node: ast.AST) -> int | None:
    """The value of an integer expression made of literals only (`1 << 4`)."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        if isinstance(node, ast.BinOp):
            left, right = _literal_int(node.left), _literal_int(node.right)
            if left is not None and right is not None:
                try:
                    return int(eval(compile(ast.Expression(node), "", "eval")))
                except Exception:
                    return None
        return None
    return value if type(value) is int else None


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _targets(node: ast.Assign | ast.AnnAssign) -> list[tuple[str, ast.AST]]:
    """(name, value) for each name the assignment binds to a known value."""
    if isinstance(node, ast.AnnAssign):
        if node.value is None:
            return []
        return [(_name_of(node.target), node.value)]
    pairs = []
    for target in node.targets:
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            values = node.value.elts
            if len(values) == len(target.elts) and not any(
                isinstance(v, ast.Starred) for v in values
            ):
                pairs += [
                    (_name_of(t), v) for t, v in zip(target.elts, values, strict=True)
                ]
        else:
            pairs.append((_name_of(target), node.value))
    return pairs


def isa_constants(source: str, filename: str = "<source>") -> list[str]:
    """Each ISA constant written in `source`, as "file:line: what"."""
    found = []

    def flag(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{getattr(node, 'lineno', '?')}: {what}")

    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            for name, value in _targets(node):
                number = _literal_int(value)
                if number is None or number < 2:
                    continue
                if FACT_CONSTANT.search(name) or FACT_VARIABLE.search(name):
                    flag(node, f"{name} = {number} (a machine fact: ask the Target)")
        elif isinstance(node, ast.Call):
            callee = _name_of(node.func)
            literal_args = [(a, _literal_int(a)) for a in node.args]
            if callee in FACTOR_CALLS:
                for arg, number in literal_args[1:]:
                    if number is not None and number >= 2:
                        flag(arg, f"{callee}(..., {number}): a literal tile factor")
            if "divisor" in callee:
                for arg, number in literal_args[1:]:
                    if number is not None and number >= 2:
                        flag(arg, f"{callee}(..., {number}): a literal width bound")
            for keyword in node.keywords:
                number = _literal_int(keyword.value)
                if keyword.arg in WIDTH_KEYWORDS and number is not None and number >= 2:
                    flag(keyword, f"{callee}({keyword.arg}={number}): a literal width")
        elif isinstance(node, ast.BinOp | ast.Compare):
            sides = (
                [node.left, node.right]
                if isinstance(node, ast.BinOp)
                else [node.left, *node.comparators]
            )
            numbers = [_literal_int(s) for s in sides]
            names = [_name_of(s) for s in sides]
            if any(n in WIDE for n in numbers) and any(
                FACT_VARIABLE.search(n) for n in names if n
            ):
                flag(node, f"{ast.unparse(node)}: a width beside a lanes/vector name")
    return found


def scanned_files() -> list[Path]:
    files = sorted(f for d in SCANNED for f in (ROOT / d).rglob("*.py"))
    assert len(files) > 20, files  # the scan must see the packages
    return files


def test_no_isa_constant_in_topi_or_passes():
    found = []
    for path in scanned_files():
        found += isa_constants(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, "\n".join(found)


# The code the scan replaced, as it was written before the target held the facts.
OLD = {
    "conv2d": """
VECTOR = 16  # f32 lanes of an AVX-512 register
TILE_REGISTERS = 24  # accumulators a register tile may hold (32 zmm in all)

def _tile(shape, ob, blocks):
    xt = _largest_divisor(shape.ow, 16)
""",
    "dense": "VECTOR = 16\n",
    "reduce": 'LANES = 16\n"""float32 lanes of an AVX-512 vector"""\n',
    "loop_vectorize": "MAX_WIDTH = 64\nVECTOR_BYTES = 64\n",
    "local": "def f(s, x):\n    lanes = 8\n    s.split(x, factor=16)\n",
    "beside": "def f(lanes, registers):\n    return lanes * 16, registers > 32\n",
    "annotated": "class C:\n    L2_BYTES: int = 1 << 20\n",
}


@pytest.mark.parametrize(
    "name, count",
    [
        ("conv2d", 3),
        ("dense", 1),
        ("reduce", 1),
        ("loop_vectorize", 2),
        ("local", 2),
        ("beside", 2),
        ("annotated", 1),
    ],
)
def test_the_scan_catches_the_old_constants(name: str, count: int):
    assert len(isa_constants(OLD[name])) == count, isa_constants(OLD[name])


def test_the_scan_leaves_other_numbers_alone():
    source = """
BUFFER_ALIGNMENT = 64
PARALLEL_MIN_WORK = 1 << 18
DATA, DEVICE_TYPE, NDIM, CODE, BITS, LANES = 0, 1, *range(3, 7)
def f(target, t):
    lanes = target.vector_lanes("float32")
    nb = 2 * lanes
    return t.width.data // 8, IntegerAttr(0, 32), nb
"""
    assert isa_constants(source) == []


def test_the_scan_fails_on_the_code_before_the_target():
    """The tree as it was before this change (where git has it)."""
    before = "03d080d"
    try:
        subprocess.run(
            ["git", "-C", str(ROOT), "cat-file", "-e", f"{before}^{{commit}}"],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git history here")
    found = []
    for path in (
        "topi/conv2d.py",
        "topi/dense.py",
        "topi/reduce.py",
        "passes/loop_vectorize.py",
    ):
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{before}:{path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        found += isa_constants(text, path)
    assert len(found) >= 7, found
