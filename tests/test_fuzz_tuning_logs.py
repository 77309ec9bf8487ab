"""Fuzzing tuning logs and schedule IR: mutated schedules never change a result.

A valid schedule of the search space is mutated (extreme and non-positive
numbers, swapped or unknown loop and stage names, lines deleted, duplicated or
swapped, truncation, junk) and given to `ember.build` two ways: as the best
record of a tuning log (under a good record), and inside te IR text. The
oracle: a log's damaged record is skipped with a `TuningRecordWarning` or
applied, IR text is refused with an `EmberError` (or a pass's diagnostic) or built, and whatever runs
computes what the untuned build computes. Any other exception fails.

    pytest tests/test_fuzz_tuning_logs.py                        # the quick slice
    EMBER_FUZZ_EXAMPLES=500 pytest tests/test_fuzz_tuning_logs.py
"""

import json
import os
import random
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.utils.exceptions import PassFailedException

import ember
from ember import te
from ember.runtime.errors import EmberError
from ember.tune.records import Record, TuningRecordWarning, append_records
from ember.tune.space import SearchSpace
from ember.tune.task import Task

EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", 12))
NUMBERS = (-(2**63), -7, -1, 0, 1, 2, 3, 5, 1000, 2**31, 2**63 - 1)


def _matmul():
    A = te.placeholder((12, 10), name="A")
    B = te.placeholder((10, 20), name="B")
    r = te.reduce_axis((0, 10), name="k")
    C = te.compute((12, 20), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return [A, B, C]


@pytest.fixture(scope="module")
def setup():
    args = _matmul()
    task = Task.from_tensors(args)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((12, 10)).astype("float32")
    b = rng.standard_normal((10, 20)).astype("float32")
    expected = np.zeros((12, 20), "float32")
    ember.build(args[-1], args)(a, b, expected)
    return args, task, SearchSpace(task), (a, b, expected)


def mutate(text: str, rnd: random.Random) -> str:
    """`text` (a te.schedule op) with one to three random mutations."""
    for _ in range(rnd.randint(1, 3)):
        if not text:
            break
        lines = text.splitlines()
        kind = rnd.randrange(7)
        numbers = list(re.finditer(r"-?\d+", text))
        names = list(re.finditer(r'"[^"]*"', text))
        if kind == 0 and numbers:
            m = rnd.choice(numbers)
            text = text[: m.start()] + str(rnd.choice(NUMBERS)) + text[m.end() :]
        elif kind == 1 and names:
            m = rnd.choice(names)
            other = rnd.choice([n.group() for n in names] + ['"zz"', '""'])
            text = text[: m.start()] + other + text[m.end() :]
        elif kind == 2 and len(lines) > 2:
            del lines[rnd.randrange(1, len(lines) - 1)]
            text = "\n".join(lines)
        elif kind == 3 and len(lines) > 2:
            at = rnd.randrange(1, len(lines) - 1)
            lines.insert(at, lines[at])
            text = "\n".join(lines)
        elif kind == 4 and len(lines) > 3:
            i, j = rnd.sample(range(1, len(lines) - 1), 2)
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind == 5:
            text = text[: rnd.randrange(len(text))]
        else:
            at = rnd.randrange(len(text))
            text = (
                text[:at] + rnd.choice(["{", "}", "->", "[", "%0", "\x00"]) + text[at:]
            )
    return text


def _run(mod, inputs) -> np.ndarray:
    a, b, _ = inputs
    got = np.zeros((12, 20), "float32")
    mod(a, b, got)
    return got


_fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@_fuzz
@given(st.randoms(use_true_random=False))
def test_a_mutated_record_is_skipped_or_computes_the_same(setup, tmp_path_factory, rnd):
    args, task, space, inputs = setup
    good = space.render(space.sample(rnd))
    bad = mutate(good, rnd)
    log = tmp_path_factory.mktemp("log") / "log.jsonl"
    append_records(
        log,
        [
            Record(task.workload, task.target_key, good, [1e-3]),
            Record(task.workload, task.target_key, bad, [1e-9]),
        ],
    )
    s = te.create_schedule(args[-1].op)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = ember.build(s, args, name="mm", tuning_records=log)
    skipped = [w for w in caught if issubclass(w.category, TuningRecordWarning)]
    assert len(skipped) <= 1, [str(w.message) for w in skipped]
    np.testing.assert_allclose(_run(mod, inputs), inputs[2], rtol=1e-5, atol=1e-5)


@_fuzz
@given(st.randoms(use_true_random=False))
def test_mutated_schedule_ir_is_refused_or_computes_the_same(setup, rnd):
    args, _, space, inputs = setup
    s = te.create_schedule(args[-1].op)
    text = str(ember.lower(s, args, "mm", emit="te"))
    schedule = mutate(space.render(space.sample(rnd)), rnd)
    text = text.replace("func.return", schedule + "\n    func.return", 1)
    try:
        mod = ember.build(text)
    except (EmberError, PassFailedException):  # a diagnostic naming the primitive
        return
    np.testing.assert_allclose(_run(mod, inputs), inputs[2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "line",
    [
        "[" * 100_000,
        '{"version": 1, "workload": ' + "[" * 5000 + "]" * 5000 + "}",
        json.dumps(
            {"version": 1, "workload": "w", "target": "t", "schedule": 3, "costs": [1]}
        ),
        json.dumps(
            {
                "version": 1,
                "workload": "w",
                "target": "t",
                "schedule": "x",
                "costs": [float("nan")],
            }
        ),
    ],
)
def test_hostile_log_lines_are_skipped(setup, tmp_path, line):
    args, task, space, inputs = setup
    log = tmp_path / "log.jsonl"
    log.write_text(line + "\n")
    append_records(
        log, [Record(task.workload, task.target_key, "te.schedule {\n}", [1])]
    )
    s = te.create_schedule(args[-1].op)
    mod = ember.build(s, args, name="mm", tuning_records=log)
    np.testing.assert_allclose(_run(mod, inputs), inputs[2], rtol=1e-5, atol=1e-5)
