"""Does the cost model pay? Evolutionary search guided by it against random search.

On one task (a float32 matmul, 256 x 256 x 256) and one trial budget, each
seed runs `ember.tune` twice with that seed, strategy "random" and
"evolutionary" (the first batch of eight is the same random one for both),
and counts, in the order the candidates were measured, the trials each needed
to first reach within 95% of the best time either found (cost <= best / 0.95).
A run that never got there counts as the budget (shown as ">48"). The ratio
is random's trials over the model's, summed over the seeds: above 1, the
model found a near-best schedule in fewer measurements.

The kernels run on one thread (the other core builds) so that timings move
less with the machine's load; the seed is also that of the inputs.

    .venv/bin/python benchmarks/tuning_cost_model.py [--seeds 4] [--trials 48]
        [--model lightgbm|lambdarank|trees|ridge]
    .venv/bin/python benchmarks/tuning_cost_model.py --rank 200

`--rank N` measures N random candidates instead and shows how well each model,
fitted on 16, 32 or 64 of them, ranks the others.

tests/test_tune_cost_model.py runs `compare` on two seeds (marked slow).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

SIZE = 256
TRIALS = 48
BATCH = 8
NEAR = 0.95


def matmul(n: int) -> list:
    from ember import te

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    r = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return [A, B, C]


MODELS = ("lightgbm", "lambdarank", "trees", "ridge")


def make_model(name: str | None):
    """The cost model called `name` (None: `default_model()`)."""
    from ember.tune.cost_model import LightGBMModel, RidgeModel, default_model

    makers = {
        "lightgbm": lambda: LightGBMModel(),
        "lambdarank": lambda: LightGBMModel("lambdarank"),
        "trees": lambda: LightGBMModel(ridge=False),
        "ridge": RidgeModel,
    }
    return default_model() if name is None else makers[name]()


@dataclass
class Run:
    """One tuning run: the cost of each measured candidate, in order, and the
    seconds from the start until it was measured."""

    costs: list[float]
    times: list[float]
    seconds: float

    @property
    def best(self) -> float:
        return min(self.costs)

    def trials_to(self, cost: float) -> int | None:
        """Measured trials until the first cost at most `cost` (None: never)."""
        return next((i + 1 for i, c in enumerate(self.costs) if c <= cost), None)

    def seconds_to(self, cost: float) -> float:
        """Seconds until the first cost at most `cost` (the run's: never)."""
        n = self.trials_to(cost)
        return self.seconds if n is None else self.times[n - 1]


def run(strategy: str, seed: int, trials: int, model: str | None = None) -> Run:
    from ember.tune.measure import LocalBuilder, LocalRunner
    from ember.tune.search import tune

    start, wall = time.perf_counter(), time.time()
    result = tune(
        matmul(SIZE),
        trials=trials,
        strategy=strategy,
        batch=BATCH,
        seed=seed,
        builder=LocalBuilder(workers=2),
        runner=LocalRunner(num_threads=1, timeout_s=10),
        cost_model=make_model(model) if strategy == "evolutionary" else None,
    )
    measured = result.records[1:]  # the untuned baseline first
    return Run(
        [r.cost for r in measured],
        [r.time - wall for r in measured],
        time.perf_counter() - start,
    )


@dataclass
class Row:
    """One seed: random search against the model's."""

    seed: int
    trials: int
    random: Run
    model: Run

    @property
    def best(self) -> float:
        return min(self.random.best, self.model.best)

    def _trials(self, r: Run) -> int:
        return r.trials_to(self.best / NEAR) or self.trials

    @property
    def random_trials(self) -> int:
        """Trials random search needed to reach 95% of the best (the budget
        if it never did)."""
        return self._trials(self.random)

    @property
    def model_trials(self) -> int:
        return self._trials(self.model)


def compare(
    seeds=(0, 1, 2, 3), trials: int = TRIALS, model: str | None = None
) -> list[Row]:
    rows = []
    for seed in seeds:
        random = run("random", seed, trials)
        guided = run("evolutionary", seed, trials, model)
        rows.append(Row(seed, trials, random, guided))
    return rows


def ratio(rows: list[Row]) -> float:
    """Random search's trials to 95% of the best over the model's, summed."""
    return sum(r.random_trials for r in rows) / sum(r.model_trials for r in rows)


def table(rows: list[Row]) -> str:
    def shown(row: Row, r: Run) -> str:
        n = r.trials_to(row.best / NEAR)
        return f">{row.trials}" if n is None else str(n)

    lines = [
        f"float32 matmul {SIZE}^3, {rows[0].trials} trials, batch {BATCH}, "
        "1 kernel thread; trials to reach 95% of the best either found",
        f"{'seed':>4}  {'best ms':>8}  {'random':>6}  {'model':>6}  "
        f"{'random best':>11}  {'model best':>10}  {'random s':>8}  {'model s':>7}",
    ]
    for row in rows:
        lines.append(
            f"{row.seed:>4}  {row.best * 1e3:>8.4f}  {shown(row, row.random):>6}  "
            f"{shown(row, row.model):>6}  {row.random.best * 1e3:>11.4f}  "
            f"{row.model.best * 1e3:>10.4f}  {row.random.seconds:>8.0f}  "
            f"{row.model.seconds:>7.0f}"
        )
    random = sum(r.random_trials for r in rows)
    model = sum(r.model_trials for r in rows)
    never = sum(r.random.trials_to(r.best / NEAR) is None for r in rows)
    bound = f" (at least: random never got there in {never})" if never else ""
    lines.append(
        f"trials summed: random {random}, model {model}; "
        f"ratio random/model {ratio(rows):.2f}{bound}"
    )
    random_s = sum(r.random.seconds_to(r.best / NEAR) for r in rows)
    model_s = sum(r.model.seconds_to(r.best / NEAR) for r in rows)
    lines.append(
        f"seconds to get there, summed (a whole run where it never did): "
        f"random {random_s:.0f}, model {model_s:.0f}"
    )
    return "\n".join(lines)


def rank_table(n: int, seed: int = 100, draws: int = 30) -> str:
    """How each model ranks: `n` random candidates measured, then, over
    `draws` random splits, each model fitted on 16, 32 or 64 of them ranks
    the rest; the mean Spearman correlation with the measured throughput, and
    the best measured throughput among its top 8 over the best of the rest."""
    import numpy as np

    from ember.tune.cost_model import throughput_targets
    from ember.tune.measure import LocalBuilder, LocalRunner, features_job
    from ember.tune.search import tune

    result = tune(
        matmul(SIZE),
        trials=n,
        strategy="random",
        batch=BATCH,
        seed=seed,
        builder=LocalBuilder(workers=2),
        runner=LocalRunner(num_threads=1, timeout_s=10),
    )
    rows = [
        (features_job(result.task.with_schedule(r.schedule)), r.cost)
        for r in result.records[1:]  # the untuned baseline first
    ]
    rows = [(f, c) for f, c in rows if f is not None]  # features of illegal ones
    x = np.array([f for f, _ in rows])
    cost = np.array([c for _, c in rows])

    sizes = [k for k in (16, 32, 64) if k + 8 <= len(x)]  # 8 left to rank at least

    def order(v: np.ndarray) -> np.ndarray:
        return np.argsort(np.argsort(v))

    lines = [
        f"float32 matmul {SIZE}^3, {len(x)} random candidates measured; "
        f"{draws} draws: fitted on n, ranking the rest",
        f"{'model':<11}" + "".join(f"  n={k:<3} rho  top8" for k in sizes),
    ]
    for name in MODELS:
        line = f"{name:<11}"
        for k in sizes:
            rng = np.random.default_rng(0)
            rho, top = [], []
            for _ in range(draws):
                pick = rng.permutation(len(x))
                fit, rest = pick[:k], pick[k:]
                model = make_model(name)
                model.fit(x[fit], throughput_targets(list(cost[fit])))
                predicted = model.predict(x[rest])
                truth = throughput_targets(list(cost[rest]))
                rho.append(np.corrcoef(order(predicted), order(truth))[0, 1])
                top.append(truth[np.argsort(-predicted)[:8]].max())
            line += f"  {np.mean(rho):>9.2f}  {np.mean(top):.2f}"
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import describe_machine

    from ember.tune.cost_model import default_model

    parser = argparse.ArgumentParser(
        description="The cost model against random search."
    )
    parser.add_argument("--seeds", type=int, default=4, help="seeds 0 .. N-1")
    parser.add_argument("--trials", type=int, default=TRIALS, help="budget per run")
    parser.add_argument(
        "--model",
        choices=MODELS,
        help="the cost model (default: default_model())",
    )
    parser.add_argument(
        "--rank",
        type=int,
        metavar="N",
        help="instead: measure N random candidates and show how each model ranks them",
    )
    args = parser.parse_args()
    print(describe_machine())
    if args.rank:
        print(rank_table(args.rank))
        return
    print(f"cost model: {args.model or type(default_model()).__name__}")
    rows = compare(range(args.seeds), args.trials, args.model)
    print(table(rows))


if __name__ == "__main__":
    main()
