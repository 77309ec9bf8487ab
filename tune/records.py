"""Tuning records: a JSON-lines log of measured candidates.

One line per measurement:

    {"version": 1, "workload": "<sha256 of the unscheduled te IR>",
     "target": "triple=x86_64-unknown-linux-gnu cpu=znver5 features=... abi= opt=3",
     "target_str": "llvm", "schedule": "te.schedule {...}", "config": {...},
     "costs": [seconds, ...], "error_kind": null, "error": "",
     "build_s": 0.41, "threads": 2, "time": 1764110000.0}

Records are keyed by workload (the function's te IR without its schedule,
named `@kernel`, and for a kernel over size symbols the sizes it was measured
at, `"sizes"`) and the *resolved* target (`target_fingerprint`, as the
kernel cache keys objects): a log tuned on one CPU is never applied on
another. Files are appended to, one whole line per write, so a tuning run
that stops leaves a log that resumes; `load_records` skips, with a
`TuningRecordWarning`, every line that is not a record of this version (torn
writes, other tools' lines, newer versions). `merge_records` joins logs.
`apply_history_best` puts the best schedule on each function of a te module
that has one, which is what `ember.build(..., tuning_records=...)` does.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

VERSION = 1

_FIELDS = ("workload", "target", "schedule", "costs")


class TuningRecordWarning(UserWarning):
    """A line of a tuning log that is not a record ember can use."""


@dataclass
class Record:
    workload: str
    target: str
    schedule: str
    costs: list[float] = field(default_factory=list)
    error_kind: str | None = None
    error: str = ""
    config: dict | None = None
    target_str: str = ""
    build_s: float = 0.0
    threads: int | None = None
    time: float = 0.0
    version: int = VERSION
    role: str = "trial"
    """"trial" (a candidate of the search), "baseline" (the kernel the
    candidates are checked against) or "confirm" (a winner measured again)."""
    sizes: dict | None = None
    """The size symbols' values a symbolic kernel was measured at (part of
    its workload); None for a kernel of fixed sizes."""

    @property
    def ok(self) -> bool:
        return self.error_kind is None and bool(self.costs)

    @property
    def cost(self) -> float:
        """The fastest repeat's seconds per call (see `MeasureResult.cost`);
        infinite for a failed measurement."""
        return min(self.costs) if self.ok else math.inf

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def _parse(line: str, where: str) -> Record | None:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        return _skip(where, f"not JSON ({e.msg})")
    except RecursionError:
        return _skip(where, "JSON nested too deeply")
    if not isinstance(data, dict):
        return _skip(where, "not a JSON object")
    if data.get("version") != VERSION:
        return _skip(where, f"version {data.get('version')!r}, expected {VERSION}")
    missing = [f for f in _FIELDS if f not in data]
    if missing:
        return _skip(where, f"no {', '.join(missing)}")
    known = Record.__dataclass_fields__
    try:
        record = Record(**{k: v for k, v in data.items() if k in known})
        ok_types = (
            isinstance(record.workload, str)
            and isinstance(record.target, str)
            and isinstance(record.schedule, str)
            and isinstance(record.costs, list)
            and all(isinstance(c, int | float) for c in record.costs)
        )
    except TypeError as e:
        return _skip(where, str(e))
    if not ok_types:
        return _skip(where, "a field of the wrong type")
    return record


def _skip(where: str, why: str) -> None:
    warnings.warn(f"{where}: skipped: {why}", TuningRecordWarning, stacklevel=4)
    return None


def load_records(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
) -> list[Record]:
    """The records of one log or several, in file order; lines that are not
    records are skipped with a `TuningRecordWarning` naming file and line. A
    missing file has no records."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out: list[Record] = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            continue
        with path.open(encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                record = _parse(line, f"{path}:{n}")
                if record is not None:
                    out.append(record)
    return out


def append_records(path: str | os.PathLike, records: Sequence[Record]) -> None:
    """Append `records` to the log `path` (made if missing), each line in one
    write, so concurrent tuners and a stop part-way leave whole lines."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        for record in records:
            os.write(fd, (record.to_json() + "\n").encode())
    finally:
        os.close(fd)


def merge_records(
    sources: Iterable[str | os.PathLike], destination: str | os.PathLike
) -> int:
    """Write the records of all `sources` to `destination`, each measured
    schedule once (its best measurement; failures only where it never
    succeeded). Returns the number of records written."""
    best: dict[tuple[str, str, str], Record] = {}
    for record in load_records(list(sources)):
        key = (record.workload, record.target, record.schedule)
        if key not in best or record.cost < best[key].cost:
            best[key] = record
    tmp = Path(f"{destination}.tmp{os.getpid()}")
    tmp.write_text("".join(r.to_json() + "\n" for r in best.values()), encoding="utf-8")
    os.replace(tmp, destination)
    return len(best)


def best_record(records: Iterable[Record], workload: str, target: str) -> Record | None:
    """The fastest successful record of `workload` on `target`, if any."""
    return next(iter(ranked_records(records, workload, target)), None)


def ranked_records(
    records: Iterable[Record], workload: str, target: str
) -> list[Record]:
    """The successful records of `workload` on `target`, fastest first, each
    schedule once."""
    matching = sorted(
        (r for r in records if r.ok and r.workload == workload and r.target == target),
        key=lambda r: r.cost,
    )
    seen: set[str] = set()
    return [r for r in matching if not (r.schedule in seen or seen.add(r.schedule))]


def make_record(
    task, schedule: str, result, config: dict | None, threads, role: str = "trial"
) -> Record:
    """The record of one `MeasureResult` of `task`."""
    return Record(
        workload=task.workload,
        target=task.target_key,
        schedule=schedule,
        costs=list(result.costs),
        error_kind=result.error_kind,
        error=result.error[:2000],
        config=config,
        target_str=str(task.target),
        build_s=round(result.build_s, 4),
        threads=threads,
        time=time.time(),
        role=role,
        sizes=dict(task.sizes) or None,
    )


def _is_te(fn) -> bool:
    """Whether `fn` computes tensors in te (a kernel, not a model's graph)."""
    from ember.dialects import te as te_ir

    return any(isinstance(op, te_ir.ComputeOp) for op in fn.body.block.ops)


def apply_history_best(module, records, target) -> int:
    """Give each te function of `module` the best schedule `records` hold for
    it on `target` (replacing its own); a function without a record keeps its
    schedule. Returns how many functions got one.

    Args:
        module: an xDSL module of te IR (changed in place).
        records: a log's path, several paths, or `Record`s.
        target: the resolved `Target` the module is built for.
    """
    from ember.tune.task import set_schedule

    best = history_best(module, records, target)
    for fn, schedule in best.items():
        set_schedule(fn, schedule)
    return len(best)


def history_best(module, records, target) -> dict:
    """The best usable schedule `records` hold for each te function of
    `module` on `target` (function -> `te.schedule` op), as
    `apply_history_best` applies them; damaged records are skipped with a
    `TuningRecordWarning`."""
    from xdsl.dialects import func

    from ember.backends.kernel_cache import target_fingerprint
    from ember.passes.convert_graph_to_te import module_bounds
    from ember.tune.task import planning_sizes, workload

    if isinstance(records, str | os.PathLike):
        records = load_records(records)
    elif not all(isinstance(r, Record) for r in records):
        records = load_records(records)
    fingerprint = target_fingerprint(target)
    bounds = module_bounds(module)
    best = {}
    for op in list(module.ops):
        if not isinstance(op, func.FuncOp) or not _is_te(op):
            continue
        key = workload(op, planning_sizes(op, bounds))
        for record in ranked_records(records, key, fingerprint):
            schedule = _usable_schedule(op, record)
            if schedule is not None:
                best[op] = schedule
                break
    return best


def default_records() -> str | None:
    """The tuning log under ember's cache directory that models apply by
    default (`ember-tune` adds its best records there), if it exists; its
    records apply only to the target they were measured on."""
    from ember.backends.kernel_cache import default_directory

    directory = default_directory()
    path = directory / "tuning.jsonl" if directory is not None else None
    return str(path) if path is not None and path.is_file() else None


def _usable_schedule(fn, record: Record):
    """`record`'s schedule, verified and lowered once on a copy of `fn`; None,
    with a `TuningRecordWarning`, when it is not one `fn` can take (a log is
    input: hand-edited, merged from other tools, or damaged)."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.utils.exceptions import DiagnosticException

    from ember.passes import run
    from ember.runtime.errors import EmberError
    from ember.tune.task import parse_schedule, set_schedule

    try:
        schedule = parse_schedule(record.schedule)
        trial = fn.clone()
        set_schedule(trial, schedule.clone())
        run(ModuleOp([trial]), "convert-te-to-loop")
    except (EmberError, DiagnosticException, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        warnings.warn(
            f"tuning record of workload {record.workload[:12]} "
            f"({record.cost:.3g} s) skipped: {why}",
            TuningRecordWarning,
            stacklevel=3,
        )
        return None
    return schedule
