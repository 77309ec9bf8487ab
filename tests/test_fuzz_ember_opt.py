"""Fuzzing `ember-opt`: random and mutated IR, random pipelines and flags.

Inputs grow from the lit corpus (every `tests/lit/**/*.mlir`, split on `// -----`,
comment lines stripped; each case remembers the pipelines its file's RUN lines use),
mutated line- and token-wise, with extreme numbers, swapped types, changed
attributes, missing terminators, renamed SSA values, splices of two cases, or
replaced by random text. Each runs under a random pass pipeline (the case's own, or
passes drawn from the registry with good, random or wrong options) and random flags.

The oracle: every run exits 0, or 1/2 with a non-empty diagnostic on stderr; no
"Traceback" anywhere, no run longer than `CASE_TIMEOUT` seconds, and (subprocess
slice) no death by a signal. Runs are in-process (`main(argv)`, ~10 ms each) with a
few in fresh processes, which would show a segfault, an LLVM abort or a hang in
native code that in-process runs cannot survive.

    pytest tests/test_fuzz_ember_opt.py                   # the quick, fixed slice
    EMBER_FUZZ_EXAMPLES=5000 EMBER_FUZZ_SEED=7 pytest tests/test_fuzz_ember_opt.py
    pytest -m slow tests/test_fuzz_ember_opt.py           # the nightly size
    python tests/test_fuzz_ember_opt.py --examples 5000 --seed 7   # a catalogue of
        # every outcome, internal errors grouped with the frame that raised them
"""

import argparse
import contextlib
import dataclasses
import io
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from fuzz_util import SEED, fuzz_given

from ember.tools.ember_opt import main as ember_opt_main

LIT = Path(__file__).parent / "lit"
CASE_TIMEOUT = 10.0
QUICK_EXAMPLES = 400
NIGHTLY_EXAMPLES = 5000
EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", QUICK_EXAMPLES))


# ---------------------------------------------------------------- the corpus


@dataclasses.dataclass(frozen=True)
class Seed:
    name: str
    text: str
    pipelines: tuple[str, ...]


_PIPELINE = re.compile(r"(?:-p|--passes)[ =](?:'([^']*)'|\"([^\"]*)\"|(\S+))")


def load_corpus() -> list[Seed]:
    seeds = []
    for path in sorted(LIT.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        text = path.read_text()
        runs = [ln for ln in text.splitlines() if "RUN:" in ln]
        pipelines = tuple(
            {
                next(g for g in m.groups() if g)
                for r in runs
                for m in _PIPELINE.finditer(r)
            }
        )
        for i, chunk in enumerate(text.split("// -----")):
            body = "\n".join(
                ln for ln in chunk.splitlines() if not ln.lstrip().startswith("//")
            ).strip()
            if body:
                rel = path.relative_to(LIT)
                seeds.append(Seed(f"{rel}#{i}", body + "\n", tuple(sorted(pipelines))))
    return seeds


CORPUS = load_corpus()
_TOKEN = re.compile(r"%[\w.$-]+|@[\w.$-]+|\^[\w.$-]+|-?\d+(?:\.\d+)?(?:e-?\d+)?|\w+|\S")
_NUMBER = re.compile(r"(?<![\w%@^#])-?\d+(?:\.\d+)?")
_SSA = re.compile(r"%[\w.$-]+")
_ATTR = re.compile(r"([\w-]+)\s*=\s*([^,}\s]+)")
_TYPES = ("f32", "i32", "index", "f64", "i1", "i8", "i64", "f16", "bf16", "none")
_SHAPED = ("tensor", "memref", "vector")
_EXTREMES = (
    "0", "-1", "1", "2", "-2147483648", "2147483647", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "18446744073709551616",
    "1000000000000", "4294967296", "1e308", "-0.0", "0.5", "0x7fc00000",
    "99999999999999999999999999999999",
)  # fmt: skip
_ATTR_VALUES = (
    "0", "-1", "9223372036854775807", "true", "false", "unit", '"x"', '""', "[]",
    "[0, 0]", "[-1]", "{}", "1.5 : f32", "0 : index", "-1 : i64", "dense<1.0>",
    "dense<> : tensor<0xf32>", "array<i64: -1, 0>", "#loop.kind<bogus>", "@nowhere",
    "affine_map<(d0) -> (d0)>", "i32", "tensor<?xf32>", "@f",
)  # fmt: skip
_TERMINATORS = re.compile(r"\b(yield|return|br|cond_br|unreachable|switch)\b")
_JUNK = "{}()<>[]%@^#:,=\"'xX0-9.?!*\n\\ "


def _lines_mutation(op: str) -> Callable[[random.Random, str], str]:
    def apply(r: random.Random, text: str) -> str:
        lines = text.splitlines()
        if len(lines) < 2:
            return text
        i, j = r.randrange(len(lines)), r.randrange(len(lines))
        if op == "delete":
            del lines[i : i + r.choice((1, 1, 2, 3))]
        elif op == "duplicate":
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines) + "\n"

    return apply


def _tokens_mutation(op: str) -> Callable[[random.Random, str], str]:
    def apply(r: random.Random, text: str) -> str:
        spans = [m.span() for m in _TOKEN.finditer(text)]
        if len(spans) < 2:
            return text
        (a, b), (c, d) = sorted(r.sample(spans, 2))
        if op == "delete":
            return text[:a] + text[b:]
        if op == "duplicate":
            return text[:c] + text[a:b] + " " + text[c:]
        return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]

    return apply


def flip_chars(r: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(r.randint(1, 4)):
        if chars:
            chars[r.randrange(len(chars))] = r.choice(_JUNK)
    return "".join(chars)


def extreme_number(r: random.Random, text: str) -> str:
    spans = [m.span() for m in _NUMBER.finditer(text)]
    if not spans:
        return text
    for a, b in r.sample(spans, min(len(spans), r.randint(1, 3))):
        text = text[:a] + r.choice(_EXTREMES) + text[b:]  # later spans may shift: fine
    return text


def swap_types(r: random.Random, text: str) -> str:
    if r.random() < 0.4:
        old, new = r.sample(_SHAPED, 2)
    else:
        old, new = r.sample(_TYPES, 2)
    pattern = re.compile(rf"\b{old}\b")
    hits = list(pattern.finditer(text))
    if not hits:
        return text
    if r.random() < 0.5:
        return pattern.sub(new, text)
    m = r.choice(hits)
    return text[: m.start()] + new + text[m.end() :]


def huge_shape(r: random.Random, text: str) -> str:
    hits = list(re.finditer(r"(tensor|memref|vector)<(\d+)", text))
    if not hits:
        return text
    m = r.choice(hits)
    dim = r.choice(("0", "4294967296", "9223372036854775807", "1000000000", "?"))
    return text[: m.start(2)] + dim + text[m.end(2) :]


def truncate(r: random.Random, text: str) -> str:
    return text[: r.randrange(len(text) + 1)]


def change_attribute(r: random.Random, text: str) -> str:
    hits = list(_ATTR.finditer(text))
    if not hits:
        return text
    m = r.choice(hits)
    return text[: m.start(2)] + r.choice(_ATTR_VALUES) + text[m.end(2) :]


def remove_terminator(r: random.Random, text: str) -> str:
    lines = text.splitlines()
    hits = [i for i, ln in enumerate(lines) if _TERMINATORS.search(ln)]
    if not hits:
        return text
    for i in sorted(r.sample(hits, r.randint(1, len(hits))), reverse=True):
        del lines[i]
    return "\n".join(lines) + "\n"


def rename_ssa(r: random.Random, text: str) -> str:
    names = sorted(set(_SSA.findall(text)))
    if not names:
        return text
    old = r.choice(names)
    new = r.choice([*names, "%undefined", "%0", "%arg0"])
    if r.random() < 0.5:
        return re.sub(re.escape(old) + r"\b", new, text)
    hits = [m for m in _SSA.finditer(text) if m.group() == old]
    m = r.choice(hits)
    return text[: m.start()] + new + text[m.end() :]


def splice(r: random.Random, text: str) -> str:
    other = r.choice(CORPUS).text.splitlines()
    lines = text.splitlines()
    i, j = r.randrange(len(lines) + 1), r.randrange(len(other) + 1)
    if r.random() < 0.5:
        return "\n".join(lines[:i] + other[j:]) + "\n"
    k = min(len(other), j + r.randint(1, 4))
    return "\n".join(lines[:i] + other[j:k] + lines[i:]) + "\n"


MUTATIONS: dict[str, Callable[[random.Random, str], str]] = {
    "delete-lines": _lines_mutation("delete"),
    "duplicate-line": _lines_mutation("duplicate"),
    "swap-lines": _lines_mutation("swap"),
    "delete-token": _tokens_mutation("delete"),
    "duplicate-token": _tokens_mutation("duplicate"),
    "swap-tokens": _tokens_mutation("swap"),
    "flip-chars": flip_chars,
    "extreme-number": extreme_number,
    "swap-types": swap_types,
    "huge-shape": huge_shape,
    "truncate": truncate,
    "change-attribute": change_attribute,
    "remove-terminator": remove_terminator,
    "rename-ssa": rename_ssa,
    "splice": splice,
}


def random_text(r: random.Random) -> str:
    kind = r.randrange(3)
    if kind == 0:  # characters the IR grammar cares about
        return "".join(
            r.choice(_JUNK + "abcdefgimnrstu") for _ in range(r.randrange(80))
        )
    if kind == 1:  # tokens of the corpus, shuffled
        tokens = _TOKEN.findall(r.choice(CORPUS).text)
        return " ".join(r.choice(tokens) for _ in range(r.randrange(1, 60)))
    return "".join(chr(r.randrange(1, 0x3000)) for _ in range(r.randrange(60)))


# ---------------------------------------------------------------- the pipelines

# The passes inputs from the corpus meet in real use, drawn more often than the
# rest of xDSL's registry (most of which targets other dialects).
_COMMON = (
    "canonicalize", "cse", "dce", "licm", "convert-scf-to-cf",
    "reconcile-unrealized-casts", "ember-cpu", "ember-graph",
)  # fmt: skip
_STRINGS = ("C", "A", "B", "i", "j", "k", "i.outer", "j.inner", "", '"a b"', "C.local")
_INTS = ("0", "-1", "1", "3", "16", "9223372036854775807", "99999999999999999999")


def _pass_names() -> tuple[list[str], list[str]]:
    from ember.passes import _EMBER_PASSES, _PRIMITIVE_PASSES, get_all_passes

    ember = [*_EMBER_PASSES, *_PRIMITIVE_PASSES, *_COMMON]
    return ember, sorted(set(get_all_passes()) - set(ember))


EMBER_PASSES, OTHER_PASSES = _pass_names()


def _option_value(r: random.Random, annotation: str) -> str:
    if r.random() < 0.15:  # a value of the wrong kind
        return r.choice(("x", "1.5", "true", '"', "", "{", "a,b"))
    if "int" in annotation:
        return r.choice(_INTS)
    if "bool" in annotation:
        return r.choice(("true", "false"))
    if "tuple" in annotation:
        return '"' + ",".join(r.sample(_STRINGS[:6], r.randint(1, 3))) + '"'
    return r.choice(_STRINGS)


def random_pass(r: random.Random) -> str:
    from ember.passes import get_all_passes

    pool = EMBER_PASSES if r.random() < 0.85 else OTHER_PASSES
    name = r.choice(pool)
    roll = r.random()
    if roll < 0.5:
        return name
    if roll < 0.6:  # an option no pass has, or broken option syntax
        return name + r.choice(("{bogus=1}", "{", "{=}", "{a=1 a=2}", "{}", "{x y}"))
    try:
        fields = dataclasses.fields(get_all_passes()[name]())
    except Exception:
        return name
    if not fields:
        return name
    chosen = r.sample(fields, r.randint(1, len(fields)))
    opts = " ".join(
        f"{f.name.replace('_', '-')}={_option_value(r, str(f.type))}" for f in chosen
    )
    return f"{name}{{{opts}}}"


def random_pipeline(r: random.Random, case: Seed | None) -> str | None:
    roll = r.random()
    if roll < 0.15:
        return None
    if roll < 0.5 and case is not None and case.pipelines:
        return r.choice(case.pipelines)
    return ",".join(random_pass(r) for _ in range(r.randint(1, 4)))


_FLAGS = (
    "--split-input-file", "--verify-diagnostics", "--print-op-generic",
    "--allow-unregistered-dialect", "--print-between-passes",
    "--parsing-diagnostics", "--print-debuginfo", "--print-no-properties",
    "--time-passes", "--print-ir-after-all", "--print-ir-before-all",
    "--no-implicit-module",
)  # fmt: skip
_VALUED_FLAGS = (
    "--emit", "--print-ir-after", "--print-ir-before", "--opt-level", "--mcpu",
    "--mlir-elide-elementsattrs-if-larger",
)  # fmt: skip
_FLAG_VALUES = (
    "graph", "te", "loop", "llvm", "llvm-ir", "asm", "obj", "bogus", "0", "3", "-1",
    "cse", "convert-te-to-loop", "loop-vectorize,cse", "znver5", "",
)  # fmt: skip
_TARGETS = (
    "mlir", "dot", "bogus", "llvm{x=1}", "", "llvm -mtriple=aarch64-linux-gnu",
    "llvm -mcpu=bogus", "llvm -mattr=+nothing", "llvm -mtriple=bogus",
)  # fmt: skip


@dataclasses.dataclass
class Case:
    text: str | bytes
    args: list[str]
    origin: str

    def repro(self) -> str:
        text = self.text if isinstance(self.text, str) else repr(self.text)
        return f"ember-opt input.mlir {' '.join(self.args)}\n--- input.mlir ({self.origin})\n{text}"


# Mutations that mostly keep IR valid, for cases that must get through the whole
# pipeline to LLVM to test the backend.
_MILD = ("extreme-number", "huge-shape", "change-attribute", "swap-types")
_BACKEND = (
    ["--emit=llvm-ir"], ["--emit=asm"], ["--emit=obj"], ["-p", "ember-cpu", "-t", "llvm"],
    ["--emit=asm", "-t", "llvm -mtriple=aarch64-linux-gnu"],
)  # fmt: skip


_TO_LLVM = {"llvm", "--emit=llvm-ir", "--emit=asm", "--emit=obj"}


def backend_case(r: random.Random) -> Case:
    """A te or loop case from the corpus, mildly mutated or not, compiled to LLVM
    IR, assembly or an object."""
    seed_case = r.choice(
        [s for s in CORPUS if re.search(r"te\.compute|loop\.", s.text)]
    )
    text = seed_case.text
    names = r.sample(_MILD, r.choice((0, 0, 1, 1, 2)))
    for name in names:
        text = MUTATIONS[name](r, text)
    args = [*r.choice(_BACKEND), *(["--split-input-file"] if r.random() < 0.2 else [])]
    return Case(
        text, args, f"{seed_case.name} mutated by {', '.join(names) or 'nothing'}"
    )


def random_case(r: random.Random) -> Case:
    roll = r.random()
    if roll < 0.12:
        return backend_case(r)
    seed_case: Seed | None = None
    if roll < 0.08:
        text: str | bytes = random_text(r)
        origin = "random text"
    elif roll < 0.1:
        text = bytes(r.randrange(256) for _ in range(r.randrange(64)))
        origin = "random bytes"
    else:
        seed_case = r.choice(CORPUS)
        text = seed_case.text
        names = r.sample(sorted(MUTATIONS), r.choice((0, 1, 1, 1, 2, 2, 3)))
        for name in names:
            text = MUTATIONS[name](r, text)
        origin = f"{seed_case.name} mutated by {', '.join(names) or 'nothing'}"
    args: list[str] = []
    pipeline = random_pipeline(r, seed_case)
    if pipeline is not None:
        args += ["-p", pipeline]
    args += [f for f in _FLAGS if r.random() < 0.12]
    if r.random() < 0.15:
        args += [r.choice(_VALUED_FLAGS) + "=" + r.choice(_FLAG_VALUES)]
    roll = r.random()
    if roll < 0.15 or (pipeline and "ember-cpu" in pipeline and roll < 0.6):
        args += ["-t", "llvm"]
    elif roll < 0.22:
        args += ["-t", r.choice(_TARGETS)]
    return Case(text, args, origin)


# ---------------------------------------------------------------- running, the oracle


@dataclasses.dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str
    seconds: float


class CaseTimeout(BaseException):
    """Raised by the alarm in a case that runs too long (a BaseException, so that
    ember-opt's handlers do not catch it)."""


def _alarm(signum: int, frame: object) -> None:
    raise CaseTimeout


def run_in_process(case: Case, path: Path) -> Outcome:
    data = case.text.encode() if isinstance(case.text, str) else case.text
    path.write_bytes(data)
    out = io.TextIOWrapper(io.BytesIO(), write_through=True)  # --emit=obj: bytes
    err = io.StringIO()
    start = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = ember_opt_main([str(path), *case.args])
            except SystemExit as e:  # argparse's usage errors
                rc = e.code if isinstance(e.code, int) else 1
    except CaseTimeout:
        rc = -signal.SIGALRM
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    stdout = out.buffer.getvalue().decode(errors="replace")  # type: ignore[attr-defined]
    return Outcome(rc, stdout, err.getvalue(), time.perf_counter() - start)


def run_subprocess(case: Case, path: Path) -> Outcome:
    data = case.text.encode() if isinstance(case.text, str) else case.text
    path.write_bytes(data)
    cmd = [sys.executable, "-m", "ember.tools.ember_opt", str(path), *case.args]
    env = {k: v for k, v in os.environ.items() if k != "EMBER_TRACEBACK"}
    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=CASE_TIMEOUT + 5, env=env)
    except subprocess.TimeoutExpired as e:
        return Outcome(-signal.SIGALRM, str(e.stdout), str(e.stderr), CASE_TIMEOUT)
    # --emit=obj writes bytes
    stdout = p.stdout.decode(errors="replace")
    stderr = p.stderr.decode(errors="replace")
    return Outcome(p.returncode, stdout, stderr, time.perf_counter() - start)


def verdict(o: Outcome) -> str | None:
    """Why the outcome breaks the oracle, or None."""
    if o.rc == -signal.SIGALRM:
        return f"hang: no result after {CASE_TIMEOUT:.0f} s"
    if o.rc < 0:
        return f"killed by signal {-o.rc}"
    if o.rc not in (0, 1, 2):
        return f"exit status {o.rc}"
    if "Traceback" in o.stdout or "Traceback" in o.stderr:
        return "a Python traceback"
    if o.rc != 0 and not o.stderr.strip():
        return f"exit status {o.rc} with nothing on stderr"
    if o.seconds > CASE_TIMEOUT:
        return f"took {o.seconds:.1f} s"
    return None


def check(case: Case, o: Outcome) -> None:
    why = verdict(o)
    assert why is None, (
        f"{why}\n{case.repro()}\n--- rc {o.rc}, stderr:\n{o.stderr[-3000:]}"
    )


# ---------------------------------------------------------------- the tests


def _fuzz(data_randoms: random.Random, path: Path) -> None:
    case = random_case(data_randoms)
    o = run_in_process(case, path)
    check(case, o)
    # An internal error is a one-line diagnostic, but one raised in ember's own
    # code is a bug to fix; xDSL's are reported upstream.
    if o.rc == 3 and "internal error" in o.stderr:
        where = _where(case, path)
        assert not where.startswith("ember"), (
            f"internal error at {where}\n{case.repro()}\n{o.stderr}"
        )


@pytest.fixture(scope="module")
def input_path():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d) / "input.mlir"


@fuzz_given(EXAMPLES)
def test_fuzz_in_process(input_path: Path, r: random.Random) -> None:
    _fuzz(r, input_path)


@pytest.mark.slow
@fuzz_given(max(EXAMPLES, NIGHTLY_EXAMPLES))
def test_fuzz_in_process_nightly(input_path: Path, r: random.Random) -> None:
    _fuzz(r, input_path)


def _subprocess_cases(n: int, seed_value: int) -> list[Case]:
    """Cases that reach native code most: the full pipeline down to LLVM IR."""
    r = random.Random(seed_value)
    cases = []
    while len(cases) < n:
        case = random_case(r)
        if r.random() < 0.6:
            case.args = ["-p", "ember-cpu", "-t", "llvm"]
        cases.append(case)
    return cases


@pytest.mark.parametrize("index", range(6))
def test_fuzz_subprocess(input_path: Path, index: int) -> None:
    case = _subprocess_cases(6, int(SEED or 0))[index]
    check(case, run_subprocess(case, input_path))


def test_corpus_covers_the_lit_tests() -> None:
    names = {s.name.split("#")[0] for s in CORPUS}
    assert len(names) >= 60, sorted(names)
    assert any("ember-cpu" in p for s in CORPUS for p in s.pipelines)


def test_oracle_rejects_what_it_should() -> None:
    assert verdict(Outcome(0, "ok", "", 0.1)) is None
    assert verdict(Outcome(1, "", "error: x", 0.1)) is None
    assert verdict(Outcome(1, "", "", 0.1)) is not None
    assert verdict(Outcome(1, "", "Traceback (most recent call last)", 0.1))
    assert verdict(Outcome(-11, "", "", 0.1)) == "killed by signal 11"
    assert verdict(Outcome(-signal.SIGALRM, "", "", 10.0)).startswith("hang")


def test_in_process_runs_catch_hangs(
    input_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CASE_TIMEOUT", 0.2)
    monkeypatch.setattr(
        sys.modules[__name__], "ember_opt_main", lambda argv: time.sleep(5)
    )
    o = run_in_process(Case("", [], "sleep"), input_path)
    assert verdict(o) and verdict(o).startswith("hang"), o


# ---------------------------------------------------------------- the catalogue


REPO = Path(__file__).resolve().parents[1]


def _where(case: Case, path: Path) -> str:
    """The innermost ember or xDSL frame (`ember file:line function`, or `xdsl
    ...`) of the exception behind an internal error, found by running the case
    again with EMBER_TRACEBACK=1."""
    import traceback

    path.write_bytes(case.text.encode() if isinstance(case.text, str) else case.text)
    os.environ["EMBER_TRACEBACK"] = "1"
    try:
        with (
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            ember_opt_main([str(path), *case.args])
    except Exception as e:
        for f in reversed(traceback.extract_tb(e.__traceback__)):
            where = f"{Path(f.filename).name}:{f.lineno} {f.name}"
            if "site-packages/xdsl/" in f.filename:
                return f"xdsl {where}"
            if f.filename.startswith(str(REPO)) and "site-packages" not in f.filename:
                return f"ember {where}"
        return "?"
    except BaseException:
        return "?"
    finally:
        del os.environ["EMBER_TRACEBACK"]
    return "-"


def catalogue(
    examples: int, seed_value: int, subprocess_every: int = 0, show: str = ""
) -> int:
    """Run `examples` cases, print what happened; returns the number that broke
    the oracle."""
    r = random.Random(seed_value)
    tally: Counter[str] = Counter()
    internal: dict[str, tuple[int, Case, str]] = {}
    unplaced: Counter[str] = Counter()  # diagnostics without a file:line:col
    broken = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "input.mlir"
        for i in range(examples):
            case = random_case(r)
            sub = subprocess_every and i % subprocess_every == 0
            o = (run_subprocess if sub else run_in_process)(case, path)
            why = verdict(o)
            if show and re.search(show, o.stderr):
                print(f"SHOWN:\n{case.repro()}\n{o.stderr[-2000:]}\n")
            if why:
                broken += 1
                print(f"BROKEN ({why}):\n{case.repro()}\n{o.stderr[-2000:]}\n")
            tally[
                {0: "ok", 1: "diagnostic", 2: "usage", 3: "internal"}.get(o.rc, "?")
            ] += 1
            tally["ok to LLVM"] += o.rc == 0 and bool(set(case.args) & _TO_LLVM)
            tally["in a process"] += bool(sub)
            if o.rc and not o.stderr.lstrip().startswith(str(path)):
                first = o.stderr.strip().splitlines()[0] if o.stderr.strip() else ""
                unplaced[re.sub(r"\d+", "N", first)[:160]] += 1
            if o.rc == 3 and "internal error" in o.stderr:
                key = o.stderr.strip().splitlines()[-1][:160]
                n, first, where = internal.get(key, (0, case, ""))
                internal[key] = (n + 1, first, where or _where(case, path))
    print(f"{examples} cases, seed {seed_value}, {time.perf_counter() - start:.0f} s")
    print(dict(tally), f"broken: {broken}, internal errors: {len(internal)} kinds")
    print("\ndiagnostics without a location:")
    for key, n in unplaced.most_common():
        print(f"  [{n}x] {key}")
    for key, (n, case, where) in sorted(internal.items(), key=lambda kv: -kv[1][0]):
        print(f"\n[{n}x] at {where}\n  {key}\n  {case.repro()[:1500]}")
    return broken


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=NIGHTLY_EXAMPLES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--subprocess-every", type=int, default=0, help="every Nth case in a process"
    )
    parser.add_argument(
        "--show", default="", help="print the cases whose stderr matches"
    )
    a = parser.parse_args()
    sys.exit(1 if catalogue(a.examples, a.seed, a.subprocess_every, a.show) else 0)
