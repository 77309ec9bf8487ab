"""ONNX conformance: onnx's backend node tests run through ember, classified.

    python -m ember.tools.conformance                    # every single-op case
    python -m ember.tools.conformance --filter 'conv|gemm' --jobs 2
    python -m ember.tools.conformance --expanded --report build/conformance.jsonl
    python -m ember.tools.conformance --quick            # make test's slice

`make conformance` is the full run (single-op and function-expanded cases);
`tests/test_onnx_conformance.py` runs the quick slice in `make test`.

The onnx wheel ships the generators of its backend node tests
(`onnx.backend.test.case.node`), not their data. The first run generates the
cases (no network, a few seconds) into
`<ember cache>/onnx-node-tests/<onnx version>/`, in onnx's own layout
(`<case>/model.onnx`, `test_data_set_0/*.pb`), and later runs read them from
there. The cache folder is `ember.backends.kernel_cache`'s: `$EMBER_CACHE_DIR`, else
`$XDG_CACHE_HOME/ember`, else `~/.cache/ember`. A case is single-op when its
model has one node (the issue's measure); `--expanded` adds onnx's
function-expanded twins (`*_expanded`: the op written as several nodes).

onnxruntime runs each case first: the baseline the figures count against,
cached beside the cases per onnxruntime version. A model newer than
onnxruntime's opsets is converted to its newest by `onnx.version_converter`.
Then ember: `compile_model(model)` (the frontend converts an opset outside its
range itself, or refuses), `GraphModule(mod["default"](cpu()))`, set the
inputs, run, and compare with the expected outputs as onnx's backend tests
do: the case's rtol/atol (1e-3/1e-7 for every node test), the output count,
shapes and dtypes exactly, integers, booleans and strings exactly, NaN where
NaN is expected. Each outcome is one class:

- pass: every output matches;
- refused: an ember error (`EmberError` and its subclasses) whose message names
  an op type of the model (`Conv`, or the graph op it became: `graph.conv2d`)
  or an attribute of one of its nodes; "refused, unclear" when it names
  neither (the model's name, `test_conv_...`, does not count);
- wrong: ember ran the model and an output differs (count, shape, dtype,
  values);
- crash: any other exception (a traceback from inside ember), a worker that
  dies, or a case that runs past `--timeout`.

Cases run in long-lived worker processes (`conformance_worker`), `--jobs` of
them, each importing ember once and running case after case (a process per
case would spend ~1-2 s of imports on each; the whole suite takes well under a
minute on two cores with warm caches). A worker that dies or times out is
killed with its process group and replaced, and the pool goes on; a Python
exception is caught and classified in the worker, which runs on. A worker
first compiles and runs a one-Relu model: a build that cannot is reported once
(exit status 2), not as two thousand crashes.

Prints a summary table (and the commonest unclear refusals), writes one JSON
line per case (`--report`: name, op, single_op, class, message, onnxruntime's
verdict and message, seconds) and exits with 1 when any case is wrong or
crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ember.tools.conformance_worker import CLASSES, CRASH, PASS, UNCLEAR, WRONG

WORKER = [sys.executable, "-m", "ember.tools.conformance_worker"]
_STARTUP_SECONDS = 120.0
_RECYCLE_AFTER = 300  # cases per worker: compiled modules stay loaded
_BASELINE_FORMAT = 2  # how run_ort poses a case; a new one invalidates the cache


# Besides the hashed sample: ops ember compiles (a pool, a matmul, a reduction,
# a softmax, transposes), refusals that must name the op (Conv with a weight
# computed at run time, ArgMax), and an Identity that folds to nothing.
QUICK_NAMED = (
    "test_relu",
    "test_gemm_default_no_bias",
    "test_matmul_4d",
    "test_maxpool_2d_pads",
    "test_averagepool_2d_same_upper",
    "test_softmax_axis_0",
    "test_reduce_max_default_axes_keepdims_random",
    "test_transpose_all_permutations_3",
    "test_batchnorm_example",
    "test_conv_with_strides_padding",
    "test_argmax_default_axis_example",
    "test_identity",
    "test_nonmaxsuppression_center_point_box_format",
)


@dataclass(frozen=True)
class Case:
    """A generated node test: its folder and what the report names it by."""

    name: str
    op: str
    nodes: int
    folder: Path

    @property
    def single_op(self) -> bool:
        return self.nodes == 1


def cache_root() -> Path:
    """Where the generated cases live (a temporary folder when ember's cache
    is off)."""
    import onnx

    from ember.backends.kernel_cache import default_directory

    base = default_directory()
    if base is None:
        base = Path(tempfile.gettempdir()) / f"ember-{os.getuid()}"
    return base / "onnx-node-tests" / onnx.__version__


def generate(root: Path) -> None:
    """Write every node test of the installed onnx under `root` in onnx's
    layout, with `meta.json` (rtol, atol, op) per case and `index.json` last
    (its presence marks a complete cache), through a temporary folder renamed
    into place."""
    import warnings

    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generators' numpy warnings
        cases = node.collect_testcases()
    root.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".gen-", dir=root.parent))
    models = {c.name: c.model for c in cases if c.model is not None}
    ops = {
        n: m.graph.node[0].op_type for n, m in models.items() if len(m.graph.node) == 1
    }
    index = []
    for case in cases:
        model = models[case.name]
        # an expanded case is named after its op's case: test_x_expanded[_verN]
        base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
        op = ops.get(base) or model.graph.node[0].op_type
        _write_case(work / case.name, case)
        meta = {"rtol": case.rtol, "atol": case.atol, "op": op}
        (work / case.name / "meta.json").write_text(json.dumps(meta))
        index.append({"name": case.name, "op": op, "nodes": len(model.graph.node)})
    (work / "index.json").write_text(json.dumps(index))
    try:
        os.rename(work, root)
    except OSError:  # another run finished first: keep its copy
        shutil.rmtree(work, ignore_errors=True)


def _write_case(folder: Path, case: Any) -> None:
    from onnx import TensorProto, numpy_helper

    data = folder / "test_data_set_0"
    data.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(case.model.SerializeToString())
    inputs, outputs = case.data_sets[0]
    for kind, values, infos in (
        ("input", inputs, case.model.graph.input),
        ("output", outputs, case.model.graph.output),
    ):
        for i, (value, info) in enumerate(zip(values, infos, strict=True)):
            if info.type.HasField("sequence_type"):
                proto = numpy_helper.from_list(value, info.name)
            elif info.type.HasField("optional_type"):
                proto = numpy_helper.from_optional(value, info.name)
            elif isinstance(value, TensorProto):
                proto = value
            else:
                proto = numpy_helper.from_array(value, info.name)
            (data / f"{kind}_{i}.pb").write_bytes(proto.SerializeToString())


def load_cases(root: Path | None = None) -> list[Case]:
    """Every node test case, generated on the first call."""
    root = root or cache_root()
    if not (root / "index.json").is_file():
        generate(root)
    index = json.loads((root / "index.json").read_text())
    return [Case(e["name"], e["op"], e["nodes"], root / e["name"]) for e in index]


def select_cases(
    cases: Iterable[Case],
    pattern: str | None = None,
    expanded: bool = False,
    limit: int | None = None,
) -> list[Case]:
    """The cases to run: single-op ones (and function-expanded ones if asked),
    those whose name matches `pattern` (re.search), the first `limit`."""
    chosen = [c for c in cases if expanded or c.single_op]
    if pattern:
        chosen = [c for c in chosen if re.search(pattern, c.name)]
    return chosen[:limit] if limit is not None else chosen


def quick_slice(
    cases: Iterable[Case], modulus: int = 24, named: Iterable[str] = QUICK_NAMED
) -> list[Case]:
    """A stable sample of single-op cases: those whose name's CRC-32 is 0
    modulo `modulus` (the same cases on every machine), plus `named` ones."""
    named = set(named)
    return [
        c
        for c in cases
        if c.single_op
        and (zlib.crc32(c.name.encode()) % modulus == 0 or c.name in named)
    ]


class WorkerError(RuntimeError):
    """A worker did not start, or ember cannot compile a Relu here: the build
    is broken, and no case is run."""


class _Worker:
    """A worker process: requests on stdin, answers on stdout, in its own
    process group (killed whole: a kernel-compiling child dies with it)."""

    def __init__(self, argv: Sequence[str]):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,
        )
        self.buffer = b""
        self.done = 0

    def send(self, request: dict) -> None:
        # the worker shares the log's file offset: its next words start at 0,
        # so a death reports this case's stderr, not an earlier one's
        self.log.seek(0)
        self.log.truncate()
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()

    def receive(self, timeout: float) -> dict | str:
        """The next answer, or why none came ("timeout", or how it died)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return f"timed out after {timeout:g} s"
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return self._death()
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def _death(self) -> str:
        code = self.proc.wait()
        why = (
            f"signal {signal.Signals(-code).name}"
            if code < 0
            else f"exit status {code}"
        )
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip().splitlines()[-3:]
        return f"worker died ({why})" + (": " + " | ".join(tail) if tail else "")

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.log.close()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


def run_cases(
    cases: Sequence[Case],
    jobs: int = 2,
    timeout: float = 120.0,
    baseline: dict[str, dict] | None = None,
    worker: Sequence[str] = WORKER,
    on_result: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Run `cases` on `jobs` workers; one result dict per case, in order.

    `baseline` maps case names to onnxruntime's verdicts ({"pass", "message"});
    a case missing from it is run by onnxruntime too, and the verdict added.
    """
    baseline = {} if baseline is None else baseline
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(cases)):
        todo.put(i)
    results: list[dict | None] = [None] * len(cases)
    failures: list[str] = []
    lock = threading.Lock()

    def run_one(w: _Worker, case: Case) -> tuple[dict, bool]:
        """The result, and whether the worker is still usable."""
        with lock:
            known = baseline.get(case.name)
        w.send({"case": str(case.folder), "ort": known is None})
        if known is None:
            answer = w.receive(timeout)
            if isinstance(answer, str):  # onnxruntime crashed: ember not run
                known = {"pass": False, "message": f"onnxruntime: {answer}"}
                with lock:
                    baseline[case.name] = known
                return {"class": CRASH, "message": "", "retry": True}, False
            known = {"pass": answer["pass"], "message": answer["message"]}
            with lock:
                baseline[case.name] = known
        answer = w.receive(timeout)
        if isinstance(answer, str):
            return {"class": CRASH, "message": answer}, False
        return answer, True

    def slot() -> None:
        w: _Worker | None = None
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                break
            case = cases[i]
            if w is None:
                w = _Worker(worker)
                hello = w.receive(_STARTUP_SECONDS)
                if isinstance(hello, str) or hello.get("step") != "ready":
                    w.kill()
                    why = hello if isinstance(hello, str) else hello.get("message")
                    failures.append(f"a worker did not start: {why}")
                    while not todo.empty():  # the other slots stop too
                        todo.get_nowait()
                    return
            answer, alive = run_one(w, case)
            if answer.pop("retry", False):
                w.kill()
                w = None
                todo.put(i)
                continue
            w.done += 1
            if not alive:
                w.kill()
                w = None
            elif w.done >= _RECYCLE_AFTER:
                w.close()
                w = None
            with lock:
                verdict = baseline[case.name]
            result = {
                "name": case.name,
                "op": case.op,
                "single_op": case.single_op,
                "class": answer["class"],
                "message": answer.get("message", ""),
                "ort_pass": verdict["pass"],
                "ort_message": verdict["message"],
                "seconds": answer.get("seconds"),
            }
            results[i] = result
            if on_result is not None:
                with lock:
                    on_result(result)
        if w is not None:
            w.close()

    threads = [threading.Thread(target=slot) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise WorkerError(failures[0])
    missing = [cases[i].name for i, r in enumerate(results) if r is None]
    if missing:
        raise RuntimeError(f"conformance: no result for {missing[:5]}")
    return results  # type: ignore[return-value]


def baseline_path(root: Path) -> Path:
    import onnxruntime

    return root / f"onnxruntime-{onnxruntime.__version__}-v{_BASELINE_FORMAT}.json"


def load_baseline(root: Path) -> dict[str, dict]:
    try:
        return json.loads(baseline_path(root).read_text())
    except (OSError, ValueError):
        return {}


def save_baseline(root: Path, baseline: dict[str, dict]) -> None:
    path = baseline_path(root)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(baseline, sort_keys=True))
    os.replace(tmp, path)


def summary(results: Sequence[dict]) -> str:
    """The table: counts and shares per class, over every case run and over
    those onnxruntime passes, then ember's pass rate on the latter; single-op
    cases (the issue's measure) apart from function-expanded ones."""
    single = [r for r in results if r["single_op"]]
    expanded = [r for r in results if not r["single_op"]]
    parts = [_table("single-op cases", single)] if single else []
    if expanded:
        parts.append(_table("function-expanded cases (several nodes)", expanded))
    return "\n\n".join(parts)


def _table(title: str, results: Sequence[dict]) -> str:
    every = Counter(r["class"] for r in results)
    ort = [r for r in results if r["ort_pass"]]
    base = Counter(r["class"] for r in ort)
    labels = {"unclear": "refused, unclear"}
    lines = [
        f"{title}:",
        f"{'class':<18}{'all':>16}{'onnxruntime passes':>24}",
        f"{'total':<18}{len(results):>16}{len(ort):>24}",
    ]
    for k in CLASSES:
        a = f"{every[k]} ({_pct(every[k], len(results))})"
        b = f"{base[k]} ({_pct(base[k], len(ort))})"
        lines.append(f"{labels.get(k, k):<18}{a:>16}{b:>24}")
    lines.append(
        f"ember passes {base[PASS]} of the {len(ort)} cases onnxruntime passes "
        f"({_pct(base[PASS], len(ort))})"
    )
    return "\n".join(lines)


def unclear_kinds(results: Sequence[dict], top: int = 8) -> list[tuple[int, str]]:
    """The commonest unclear refusals, with quoted names and numbers blanked
    so that one message is one kind."""
    kinds = Counter(
        re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", r["message"].splitlines()[0]))
        for r in results
        if r["class"] == UNCLEAR
    )
    return [(n, k) for k, n in kinds.most_common(top)]


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "-"


def _progress(total: int) -> Callable[[dict], None]:
    try:
        from tqdm import tqdm  # type: ignore[import-not-found]
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=total, unit="case")

        def update(result: dict) -> None:
            bar.update(1)
            if result["class"] in (WRONG, CRASH):
                bar.write(f"{result['class']}: {result['name']}: {result['message']}")

        return update
    done = Counter()
    step = max(1, total // 20)

    def plain(result: dict) -> None:
        done["n"] += 1
        done[result["class"]] += 1
        if result["class"] in (WRONG, CRASH):
            print(f"  {result['class']}: {result['name']}: {result['message'][:300]}")
        if done["n"] % step == 0 or done["n"] == total:
            counts = ", ".join(f"{k} {done[k]}" for k in CLASSES)
            print(f"[{done['n']}/{total}] {counts}", flush=True)

    return plain


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ember.tools.conformance",
        description="Run onnx's backend node tests through ember and classify them.",
    )
    parser.add_argument("--filter", metavar="REGEX", help="cases whose name matches")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="workers (default: cores)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds per case (default: %(default)s)",
    )
    parser.add_argument("--limit", type=int, help="the first N cases (after --filter)")
    parser.add_argument(
        "--report",
        type=Path,
        default=Path("conformance.jsonl"),
        help="the JSON-lines report (default: %(default)s)",
    )
    parser.add_argument(
        "--expanded",
        action="store_true",
        help="also the function-expanded cases (several nodes: *_expanded)",
    )
    parser.add_argument("--quick", action="store_true", help="make test's slice only")
    args = parser.parse_args(argv)

    root = cache_root()
    cases = load_cases(root)
    if args.quick:
        cases = quick_slice(cases)
    cases = select_cases(cases, args.filter, args.expanded, args.limit)
    if not cases:
        print("conformance: no case matches", file=sys.stderr)
        return 2
    print(
        f"conformance: {len(cases)} cases from {root}, {args.jobs} workers", flush=True
    )
    baseline = load_baseline(root)
    start = time.monotonic()
    try:
        results = run_cases(
            cases, args.jobs, args.timeout, baseline, on_result=_progress(len(cases))
        )
    except WorkerError as e:
        print(f"conformance: {e}", file=sys.stderr)
        return 2
    finally:
        save_baseline(root, baseline)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    with args.report.open("w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    print(summary(results))
    for n, kind in unclear_kinds(results):
        print(f"  unclear x{n}: {kind[:200]}")
    print(f"{time.monotonic() - start:.0f} s; report: {args.report}")
    bad = [r for r in results if r["class"] in (WRONG, CRASH)]
    for r in bad:
        print(f"{r['class']}: {r['name']} ({r['op']}): {r['message'][:300]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
