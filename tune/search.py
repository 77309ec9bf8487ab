"""The search: random, or evolutionary guided by a cost model; `auto_schedule`.

    s = ember.auto_schedule(C, [A, B, C], time_budget_s=120, records="mm.jsonl")

Each round measures a batch of candidates not measured before (by schedule
text, across resumed logs too). The evolutionary strategy starts with one
random batch; then, every round, it retrains the cost model on all
measurements, evolves a population (fresh samples and the best measured
configs; children by mutation and crossover of parents drawn by predicted
score), and measures the best-predicted unmeasured candidates, with a fifth
of the batch drawn at random so a wrong model cannot starve the search.
Features of unmeasured candidates are computed through the builder's
executor, in parallel.
"""

from __future__ import annotations

import logging
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ember.runtime.errors import EmberValueError
from ember.tune.cost_model import default_model, throughput_targets
from ember.tune.measure import (
    LocalBuilder,
    LocalRunner,
    MeasureInput,
    Measurer,
    features_job,
)
from ember.tune.records import Record, append_records, load_records, make_record
from ember.tune.space import SearchSpace
from ember.tune.task import Task

log = logging.getLogger("ember.tune")

EMPTY = "te.schedule {\n}"


@dataclass
class TuneResult:
    """What a tuning run found."""

    task: Task
    best_schedule: str
    best_cost: float
    baseline_cost: float
    records: list[Record] = field(default_factory=list)
    """This run's measurements (the baseline first)."""

    @property
    def speedup(self) -> float:
        return self.baseline_cost / self.best_cost


@dataclass
class _History:
    texts: set[str] = field(default_factory=set)
    configs: list[dict] = field(default_factory=list)
    features: list[list[float]] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    best: tuple[float, str] = (math.inf, EMPTY)
    feature_cache: dict[str, list[float] | None] = field(default_factory=dict)
    """Features of unmeasured candidates by schedule text (None: illegal)."""
    fastest: dict[str, tuple[float, dict | None]] = field(default_factory=dict)
    """Each measured schedule's fastest cost and its config."""

    def add(self, text: str, config, features, cost: float) -> None:
        self.texts.add(text)
        if cost < self.fastest.get(text, (math.inf, None))[0]:
            self.fastest[text] = (cost, config)
        if cost < self.best[0]:
            self.best = (cost, text)
        if config is not None and features is not None:
            self.configs.append(config)
            self.features.append(features)
            self.costs.append(cost)


class TaskTuner:
    """The search on one task, a batch at a time: what `tune` runs alone and
    `tune_model` runs for each kernel of a model, sharing out the trials.

    On construction it measures the baseline (the untuned kernel, or the
    template's default schedule) and reads the task's earlier measurements
    from `records`; each `step` measures one batch.

    Args:
        task: the task.
        space: its search space (`SearchSpace` by Ansor's rules, or a
            template's `KnobSpace`).
        builder, runner: how candidates are built and timed (the caller's:
            not closed here).
        records: a JSON-lines log to resume from and append to.
        strategy, seed, population, generations, cost_model: as `tune`'s.
        baseline: the baseline's schedule text and config.
    """

    def __init__(
        self,
        task: Task,
        space,
        builder: LocalBuilder,
        runner: LocalRunner,
        *,
        records: str | os.PathLike | None = None,
        strategy: str = "evolutionary",
        seed: int = 0,
        population: int = 64,
        generations: int = 3,
        baseline: tuple[str, dict | None] = (EMPTY, None),
        cost_model=None,
    ):
        if strategy not in ("evolutionary", "random"):
            raise EmberValueError(
                f"tune: expected strategy 'evolutionary' or 'random', got {strategy!r}"
            )
        self.task, self.space = task, space
        self.builder, self.records = builder, records
        self.rng = random.Random(seed)
        self.population, self.generations = population, generations
        self.history = _History()
        for r in load_records(records) if records is not None else []:
            if r.workload == task.workload and r.target == task.target_key:
                self.history.add(r.schedule, r.config, None, r.cost)
        self.measurer = Measurer(task, builder, runner, seed=seed, baseline=baseline[0])
        self.threads = runner.num_threads
        self.model = None
        if strategy == "evolutionary":
            self.model = default_model() if cost_model is None else cost_model
        result = self.measurer.baseline
        self.baseline_cost = result.cost
        self.baseline = baseline
        self.run = [
            make_record(
                task, baseline[0], result, baseline[1], self.threads, "baseline"
            )
        ]
        self.history.add(baseline[0], baseline[1], result.features, result.cost)
        self.trials = 0
        self.curve: list[float] = []
        """The best cost after each measured candidate."""
        self.exhausted = False
        if records is not None:
            append_records(records, self.run)

    @property
    def best(self) -> tuple[float, str]:
        """(seconds, schedule text) of the fastest measurement so far."""
        return self.history.best

    def step(self, size: int, inject: Sequence[MeasureInput] = ()) -> list[Record]:
        """Measure up to `size` new candidates (and `inject`'s); their records.
        Sets `exhausted` when the space has no unmeasured candidate left."""
        history = self.history
        if self.model is not None and len(history.costs) >= max(4, size // 2):
            picked = _evolve(
                self.space,
                history,
                self.model,
                self.builder,
                self.rng,
                size,
                self.population,
                self.generations,
            )
        else:
            picked = _fresh(self.space, history, self.rng, size)
        inputs = [*inject, *(MeasureInput(self.space.render(c), c) for c in picked)]
        if not inputs:
            self.exhausted = True
            return []
        results = self.measurer.measure(inputs)
        new = []
        for c, res in zip(inputs, results, strict=True):
            if c.module_text is not None and res.ok:
                continue  # an injected kernel is not a schedule of the task
            if c.module_text is None:
                history.add(c.schedule, c.config, res.features, res.cost)
            new.append(make_record(self.task, c.schedule, res, c.config, self.threads))
            self.curve.append(history.best[0])
        if self.records is not None:
            append_records(self.records, new)
        self.run += new
        self.trials += len(inputs)
        ok = sum(r.ok for r in results)
        log.debug(
            "ember.tune %s: %d measured, %d failed this round, best %.3g ms",
            self.task.workload[:8],
            self.trials,
            len(results) - ok,
            history.best[0] * 1e3,
        )
        return new

    def confirm(self, top: int = 2) -> list[Record]:
        """Measure the baseline and the `top` fastest other schedules again,
        records appended: a schedule that won while another process paused
        its rivals meets them once more, and each keeps its fastest time."""
        fastest = self.history.fastest
        ranked = sorted(
            (t for t in fastest if t != self.baseline[0] and fastest[t][0] < math.inf),
            key=lambda t: fastest[t][0],
        )
        texts = [self.baseline[0], *ranked[:top]]
        inputs = [MeasureInput(t, fastest.get(t, (0.0, None))[1]) for t in texts]
        results = self.measurer.measure(inputs)
        new = []
        for c, res in zip(inputs, results, strict=True):
            self.history.add(c.schedule, c.config, None, res.cost)
            new.append(
                make_record(
                    self.task, c.schedule, res, c.config, self.threads, "confirm"
                )
            )
        self.baseline_cost = min(self.baseline_cost, results[0].cost)
        if self.records is not None:
            append_records(self.records, new)
        self.run += new
        return new

    def result(self) -> TuneResult:
        cost, text = self.history.best
        return TuneResult(self.task, text, cost, self.baseline_cost, self.run)

    def close(self) -> None:
        self.measurer.close()


def tune(
    args: Sequence | Task,
    *,
    target=None,
    trials: int | None = None,
    time_budget_s: float | None = None,
    records: str | os.PathLike | None = None,
    strategy: str = "evolutionary",
    batch: int | None = None,
    seed: int = 0,
    num_threads: int | None = None,
    builder: LocalBuilder | None = None,
    runner: LocalRunner | None = None,
    population: int = 64,
    generations: int = 3,
    inject: Sequence[MeasureInput] = (),
    space=None,
    baseline: tuple[str, dict | None] = (EMPTY, None),
    cost_model=None,
) -> TuneResult:
    """Search schedules for the computation of `args` (inputs, then outputs).

    Args:
        args: the te tensors, or a `Task`.
        target: where it runs (None: `Target.current()`).
        trials: candidates to measure at most (the baseline not counted);
            None: 64, or no limit with a `time_budget_s`.
        time_budget_s: stop starting rounds after this many seconds.
        records: a JSON-lines log: its records of this task are not measured
            again and count for the best, and every measurement is appended.
        strategy: "evolutionary" (cost model) or "random".
        batch: candidates per round (default: twice the builder's workers).
        seed: of the sampling (inputs too).
        num_threads: threads of the measured kernels (None: the runtime's).
        builder, runner: how candidates are built and timed (default: a
            local process pool and runner process, closed at the end).
        population, generations: of the evolutionary search per round.
        inject: a test hook: candidates measured in the first round.
        space: the search space (default: `SearchSpace(task)`, Ansor's rules).
        baseline: (schedule text, config) of the kernel the candidates are
            checked against (default: the computation without a schedule).
        cost_model: of the evolutionary search, anything with `fit(x, y)`
            and `predict(x)` (default: `cost_model.default_model()`).

    Returns:
        A `TuneResult`; its `best_schedule` is schedule IR text.
    """
    task = args if isinstance(args, Task) else Task.from_tensors(args, target)
    if not task.target.is_host:
        raise EmberValueError(
            f"tune: candidates are measured on this machine, and {task.target} "
            f"is not it ({task.target.not_host_reason}); tune on the machine "
            "itself and build with its records"
        )
    if trials is None:
        trials = 64 if time_budget_s is None else sys.maxsize
    own_builder, own_runner = builder is None, runner is None
    builder = builder or LocalBuilder()
    runner = runner or LocalRunner(num_threads=num_threads)
    batch = batch or 2 * builder.workers
    start = time.monotonic()
    tuner = None
    try:
        tuner = TaskTuner(
            task,
            space or SearchSpace(task),
            builder,
            runner,
            records=records,
            strategy=strategy,
            seed=seed,
            population=population,
            generations=generations,
            baseline=baseline,
            cost_model=cost_model,
        )
        pending = list(inject)
        while tuner.trials < trials and not tuner.exhausted:
            if time_budget_s is not None and time.monotonic() - start > time_budget_s:
                break
            tuner.step(min(batch, trials - tuner.trials), pending)
            pending = []
        return tuner.result()
    finally:
        if tuner is not None:
            tuner.close()
        if own_runner:
            runner.close()
        if own_builder:
            builder.close()


def _fresh(
    space: SearchSpace, history: _History, rng: random.Random, n: int
) -> list[dict]:
    """Up to `n` random configs whose schedules were not measured."""
    out, texts = [], set(history.texts)
    for _ in range(n * 20):
        if len(out) == n:
            break
        config = space.sample(rng)
        text = space.render(config)
        if text not in texts:
            texts.add(text)
            out.append(config)
    return out


def _evolve(
    space: SearchSpace,
    history: _History,
    model,
    builder: LocalBuilder,
    rng: random.Random,
    n: int,
    population: int,
    generations: int,
) -> list[dict]:
    """`n` unmeasured configs: mostly the cost model's best of an evolved
    population, a fifth at random."""
    model.fit(np.array(history.features), throughput_targets(history.costs))
    order = np.argsort(history.costs)
    elite = [history.configs[i] for i in order[: population // 4]]
    scored: dict[str, tuple[float, dict]] = {}

    def score(configs: list[dict]) -> list[tuple[float, dict]]:
        texts = [space.render(c) for c in configs]
        todo = {t: c for t, c in zip(texts, configs, strict=True) if t not in scored}
        missing = [t for t in todo if t not in history.feature_cache]
        jobs = [(space.task.with_schedule(t),) for t in missing]
        for t, f in zip(missing, builder.map(features_job, jobs), strict=True):
            history.feature_cache[t] = f if isinstance(f, list) else None
        rows = [(t, history.feature_cache[t]) for t in todo]
        rows = [(t, f) for t, f in rows if f is not None]
        if rows:
            predicted = model.predict(np.array([f for _, f in rows]))
            for (t, _), p in zip(rows, predicted, strict=True):
                scored[t] = (float(p), todo[t])
        return [scored[t] for t in texts if t in scored]

    pool = score(elite + [space.sample(rng) for _ in range(population - len(elite))])
    for _ in range(generations):
        if not pool:
            break
        pool.sort(key=lambda sc: -sc[0])

        def parent(pool=pool) -> dict:
            a, b = rng.choice(pool), rng.choice(pool)
            return (a if a[0] >= b[0] else b)[1]

        children = []
        for _ in range(population):
            child = space.mutate(parent(), rng)
            if rng.random() < 0.3:
                child = space.crossover(child, parent(), rng)
            children.append(child)
        pool = sorted(pool + score(children), key=lambda sc: -sc[0])[:population]
    ranked = sorted(scored.items(), key=lambda kv: -kv[1][0])
    greedy = n - max(1, n // 5) if n > 1 else n
    out, texts = [], set(history.texts)
    for text, (_, config) in ranked:
        if len(out) == greedy:
            break
        if text not in texts:
            texts.add(text)
            out.append(config)
    history_view = _History(texts=texts)
    return out + _fresh(space, history_view, rng, n - len(out))


def auto_schedule(
    out,
    args: Sequence,
    *,
    target=None,
    time_budget_s: float | None = None,
    trials: int | None = None,
    records: str | os.PathLike | None = None,
    **options,
):
    """A schedule for the computation of `out`, found by search.

    Args:
        out: the output tensor (or a list of them); must be among `args`.
        args: the function's tensors, inputs first, then outputs.
        target: where it runs (None: `Target.current()`).
        time_budget_s: seconds of search at most (rounds already started
            finish); None: `trials` decides.
        trials: candidates to measure at most (None: 64, or no limit with a
            time budget).
        records: a JSON-lines tuning log to resume from and append to.
        options: more of `tune`'s arguments (strategy, batch, seed,
            num_threads, builder, runner).

    Returns:
        A `te.Schedule` that `ember.build(s, args)` compiles: the fastest
        measured schedule (the untuned one if nothing beat it).

    Example:
        >>> s = ember.auto_schedule(C, [A, B, C], time_budget_s=60)
        >>> mod = ember.build(s, [A, B, C])
    """
    from ember.tune.replay import schedule_from_text

    outs = out if isinstance(out, list | tuple) else [out]
    if any(all(o is not a for a in args) for o in outs):
        raise EmberValueError("auto_schedule: the output must be among the arguments")
    result = tune(
        args,
        target=target,
        trials=trials,
        time_budget_s=time_budget_s,
        records=records,
        **options,
    )
    return schedule_from_text(args, result.best_schedule)
