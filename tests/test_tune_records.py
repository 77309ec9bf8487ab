"""ember.tune's records: the JSON-lines log (versioned, keyed by workload and
resolved target), corrupt and foreign lines skipped with a warning, merging,
and `ember.build(..., tuning_records=...)` applying the best record."""

import json
import random

import numpy as np
import pytest

import ember
from ember import te
from ember.backends.kernel_cache import target_fingerprint
from ember.tune.records import (
    Record,
    TuningRecordWarning,
    append_records,
    best_record,
    load_records,
    merge_records,
)
from ember.tune.space import SearchSpace
from ember.tune.task import Task


def _matmul(m=16, n=24, k=8, name="C"):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name=name)
    return [A, B, C]


def _records(task, n, seed=0):
    space = SearchSpace(task)
    rng = random.Random(seed)
    return [
        Record(
            task.workload,
            task.target_key,
            space.render(space.sample(rng)),
            [1e-3 * (i + 1)],
        )
        for i in range(n)
    ]


def test_records_round_trip_and_the_best_is_the_fastest(tmp_path):
    task = Task.from_tensors(_matmul())
    log = tmp_path / "log.jsonl"
    recs = _records(task, 3)
    recs.append(
        Record(task.workload, task.target_key, "te.schedule {\n}", [], "crash", "x")
    )
    append_records(log, recs)
    loaded = load_records(log)
    assert [r.to_json() for r in loaded] == [r.to_json() for r in recs]
    line = json.loads(log.read_text().splitlines()[0])
    assert line["version"] == 1 and line["target"].startswith("triple=")
    assert (
        best_record(loaded, task.workload, task.target_key).schedule == recs[0].schedule
    )
    assert best_record(loaded, task.workload, "triple=other") is None
    assert task.target_key == target_fingerprint("llvm")  # resolved, never "llvm"


def test_corrupt_and_foreign_lines_are_skipped_with_a_warning(tmp_path):
    task = Task.from_tensors(_matmul())
    log = tmp_path / "log.jsonl"
    good = _records(task, 2)
    append_records(log, good[:1])
    with log.open("a") as f:
        f.write('{"version": 1, "workload": "abc", "tar')  # a torn write
        f.write("\n[1, 2, 3]\n")
        f.write(json.dumps({"version": 99, "workload": "w", "target": "t"}) + "\n")
        f.write(json.dumps({"hello": "from another tool"}) + "\n")
        f.write(json.dumps({**json.loads(good[0].to_json()), "costs": "fast"}) + "\n")
        f.write("\n")
    append_records(log, good[1:])
    with pytest.warns(TuningRecordWarning) as caught:
        loaded = load_records(log)
    assert [r.schedule for r in loaded] == [g.schedule for g in good]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 5 and all(f"{log}:" in m for m in messages)
    assert any("version 99" in m for m in messages)
    assert load_records(tmp_path / "missing.jsonl") == []


def test_merge_keeps_each_schedule_once_at_its_best(tmp_path):
    task = Task.from_tensors(_matmul())
    a, b = _records(task, 3), _records(task, 3)
    for r in b:
        r.costs = [c / 10 for c in r.costs]
    extra = _records(Task.from_tensors(_matmul(8, 8, 8)), 2, seed=5)
    append_records(tmp_path / "a.jsonl", a)
    append_records(tmp_path / "b.jsonl", b + extra)
    n = merge_records(
        [tmp_path / "a.jsonl", tmp_path / "b.jsonl"], tmp_path / "m.jsonl"
    )
    merged = load_records(tmp_path / "m.jsonl")
    assert n == len(merged) == len({r.schedule for r in a}) + len(extra)
    for r in merged:
        if r.workload == task.workload:
            assert r.costs == next(x.costs for x in b if x.schedule == r.schedule)


def test_build_applies_the_best_record_and_computes_the_same(tmp_path):
    args = _matmul(20, 48, 12)
    task = Task.from_tensors(args)
    log = tmp_path / "log.jsonl"
    recs = _records(task, 4, seed=3)
    append_records(log, recs)
    # a record of another machine, faster, is never applied
    append_records(
        log,
        [Record(task.workload, "triple=x cpu=y features= abi= opt=3", "bad", [1e-9])],
    )
    a = np.random.rand(20, 12).astype("float32")
    b = np.random.rand(12, 48).astype("float32")
    expected = np.zeros((20, 48), "float32")
    ember.build(args[-1], args)(a, b, expected)
    s = te.create_schedule(args[-1].op)
    mod = ember.build(s, args, name="mm", tuning_records=log)
    assert 'te.cache_write "C" "local"' not in mod.loop_source  # loop IR, not te
    assert "C.local" in mod.loop_source
    got = np.zeros((20, 48), "float32")
    mod(a, b, got)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # from te IR text too, and a computation without records keeps its schedule
    text = str(ember.lower(s, args, "mm", emit="te"))
    assert "C.local" in ember.build(text, tuning_records=[str(log)]).loop_source
    other = _matmul(20, 48, 12, name="D")
    assert "local" not in ember.build(other[-1], other, tuning_records=log).loop_source
