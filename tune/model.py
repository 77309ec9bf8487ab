"""Tuning a whole model: its kernels are the tasks, its calls their weights.

    tasks = extract_tasks("resnet18.onnx")          # the kernels with knobs
    result = tune_model("resnet18.onnx", records="r.jsonl", time_budget_s=900)
    mod = ember.compile_model("resnet18.onnx", tuning_records="r.jsonl")

`extract_tasks` runs the model through the `graph` and `te` stages of
`ember-model`, exactly as `compile_model` does, and keeps each kernel
function whose topi template declares knobs (`topi.kernel.Knobs`): the task
is the function as the model holds it, so its workload hash is the one
`apply_history_best` looks up when the model is compiled. A candidate is the
template's schedule at one point of its knob space, lowered to schedule IR
text (`KnobSpace`), measured against the template's default schedule.

`tune_model` measures every task's default first (how much of the model's
time each kernel takes, times the calls of it), then gives each batch to the
task with the largest share of the model's estimated time per trial spent
on it, so trials follow the time (Ansor's task scheduler, without its
gradient estimate).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ember.runtime.errors import EmberValueError
from ember.tune.task import KERNEL, Task


class KnobSpace:
    """The configs of a template's knobs, rendered to schedule IR text: the
    search space interface (`sample`, `mutate`, `crossover`, `render`) of
    `ember.tune.space.SearchSpace`.

    Args:
        task: the kernel's task.
        kernel: the topi `Kernel` it was lowered from (with `knobs`).
    """

    def __init__(self, task: Task, kernel):
        if kernel.knobs is None:
            raise EmberValueError(
                f"kernel '{kernel.output.name}' declares no knobs to tune"
            )
        self.task, self.kernel, self.knobs = task, kernel, kernel.knobs
        self.names = sorted(self.knobs.space)
        self._texts: dict[str, str] = {}

    def __len__(self) -> int:
        return self.knobs.size()

    def configs(self) -> list[dict]:
        """Every config of the space (`len(self)` of them)."""
        choices = [self.knobs.space[n] for n in self.names]
        return [
            dict(zip(self.names, c, strict=True)) for c in itertools.product(*choices)
        ]

    def sample(self, rng: random.Random) -> dict:
        return {n: rng.choice(self.knobs.space[n]) for n in self.names}

    def mutate(self, config: dict, rng: random.Random) -> dict:
        """`config` with one knob (that has a choice) changed."""
        open_ = [n for n in self.names if len(self.knobs.space[n]) > 1]
        if not open_:
            return dict(config)
        name = rng.choice(open_)
        others = [v for v in self.knobs.space[name] if v != config.get(name)]
        return {**config, name: rng.choice(others)}

    def crossover(self, a: dict, b: dict, rng: random.Random) -> dict:
        return {n: (a if rng.random() < 0.5 else b)[n] for n in self.names}

    def render(self, config: dict) -> str:
        """The schedule IR text of the template at `config`."""
        key = json.dumps(config, sort_keys=True)
        if key not in self._texts:
            self._texts[key] = schedule_text(self.kernel, config, self.task.sizes)
        return self._texts[key]


def schedule_text(kernel, config: dict | None = None, sizes=None) -> str:
    """The `te.schedule` op's text of `kernel` scheduled at `config` (its
    default schedule when None), a kernel over size symbols planned at
    `sizes` (`Task.sizes`; `PLANNING_SIZE` for the others)."""
    from xdsl.dialects import func

    from ember.dialects.te_schedule import ScheduleOp
    from ember.passes.convert_graph_to_te import PLANNING_SIZE
    from ember.runtime.shape_expr import planning
    from ember.te.lowering import lower

    with planning(sizes or {}, PLANNING_SIZE):
        module = lower(kernel.schedule(config=config), kernel.args, KERNEL)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    ops = [op for op in fn.body.block.ops if isinstance(op, ScheduleOp)]
    return str(ops[0]) if ops else "te.schedule {\n}"


@dataclass
class ModelTask:
    """One kernel of a model to tune.

    Attributes:
        symbol: the kernel function's name in the model (`ember_<kind>_<hash>`).
        kind: what it computes (`conv2d_relu`, ...).
        task: the tuning task (its function as the model holds it).
        kernel: the topi kernel it was lowered from.
        calls: how many times one run of the model calls it.
    """

    symbol: str
    kind: str
    task: Task
    kernel: Any
    calls: int

    @property
    def space(self) -> KnobSpace:
        return KnobSpace(self.task, self.kernel)

    @property
    def default_config(self) -> dict:
        return dict(self.kernel.knobs.default)


def extract_tasks(
    model,
    params=None,
    target="llvm",
    shape=None,
    opt_level: int | None = None,
    bounds=None,
    precision: str = "float32",
) -> list[ModelTask]:
    """The kernels of `model` whose templates have knobs, in the order the
    model first calls them. A kernel over size symbols is measured at the
    sizes its schedule is planned for (`Task.sizes`: the bound, else
    `PLANNING_SIZE`), which the model compiled with the same `bounds` finds
    its record by.

    Args:
        model, params, shape, opt_level, bounds, precision: as
            `ember.compile_model`'s.
        target: the CPU target the kernels are tuned for.

    Returns:
        One `ModelTask` per distinct kernel function (layers of the same
        shape share one, `calls` counts them).
    """
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

    from ember.backends.llvm import Target
    from ember.compiler.model import lower_to_te
    from ember.dialects import graph
    from ember.passes.convert_graph_to_te import (
        KERNEL_ATTR,
        module_bounds,
        observe_kernels,
    )
    from ember.tune.task import planning_sizes

    tgt = Target(target)
    with observe_kernels() as kernels:
        module, _ = lower_to_te(
            model, params, tgt, shape, opt_level, bounds=bounds, precision=precision
        )
    planned_for = module_bounds(module)  # the given bounds and the model's own
    calls = Counter(
        op.callee.root_reference.data
        for op in module.walk()
        if isinstance(op, graph.CallKernelOp)
    )
    functions = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    }
    tasks = []
    for symbol in calls:  # dicts keep the order of first calls
        kernel = kernels.get(symbol)
        if kernel is None or kernel.knobs is None or symbol not in functions:
            continue
        fn = functions[symbol]
        kind_attr = fn.attributes[KERNEL_ATTR]
        kind = getattr(kind_attr, "data", "kernel")
        sizes = planning_sizes(fn, planned_for)
        task = Task(str(ModuleOp([fn.clone()])), tgt, sizes)
        tasks.append(ModelTask(symbol, kind, task, kernel, calls[symbol]))
    return tasks


@dataclass
class TaskReport:
    """One task's outcome in `ModelTuneResult`."""

    symbol: str
    kind: str
    calls: int
    trials: int
    default_s: float
    best_s: float
    best_config: dict | None
    curve: list[float] = field(default_factory=list)
    """The best seconds after each trial."""

    @property
    def speedup(self) -> float:
        return self.default_s / self.best_s


@dataclass
class ModelTuneResult:
    """What `tune_model` found: per task, and the model's kernel time
    estimated as the sum over tasks of calls x seconds (kernels without knobs
    not counted)."""

    tasks: list[TaskReport]
    trials: int
    seconds: float
    records: str | None

    @property
    def default_s(self) -> float:
        return sum(t.calls * t.default_s for t in self.tasks)

    @property
    def best_s(self) -> float:
        return sum(t.calls * t.best_s for t in self.tasks)

    def table(self) -> str:
        """The tasks before and after, one row each, and the total."""
        rows = [
            f"{'task':<34} {'calls':>5} {'trials':>6} {'default ms':>10} "
            f"{'tuned ms':>9} {'speedup':>7}  best config"
        ]
        for t in self.tasks:
            config = json.dumps(t.best_config) if t.best_config else "(default)"
            rows.append(
                f"{t.kind[:34]:<34} {t.calls:>5} {t.trials:>6} "
                f"{t.default_s * 1e3:>10.4f} {t.best_s * 1e3:>9.4f} "
                f"{t.speedup:>6.2f}x  {config}"
            )
        rows.append(
            f"{'model (tuned kernels, x calls)':<34} {'':>5} {self.trials:>6} "
            f"{self.default_s * 1e3:>10.4f} {self.best_s * 1e3:>9.4f} "
            f"{self.default_s / self.best_s:>6.2f}x"
        )
        return "\n".join(rows)

    def plot(self, path: str | os.PathLike) -> None:
        """Save a plot of each task's best time over its trials (needs
        matplotlib: `pip install ember[plot]`)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise EmberValueError(
                "plotting needs matplotlib: pip install 'ember[plot]'"
            ) from None
        fig, ax = plt.subplots(figsize=(8, 5))
        for t in self.tasks:
            if t.curve:
                ax.plot(
                    range(len(t.curve) + 1),
                    [1.0] + [c / t.default_s for c in t.curve],
                    drawstyle="steps-post",
                    label=f"{t.kind[:24]} x{t.calls}",
                )
        ax.set_xlabel("trials of the task")
        ax.set_ylabel("best time / default schedule's")
        ax.set_title("ember-tune: best so far per task")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


Progress = Callable[[dict], None]
"""Called after each batch with {"trials", "total", "elapsed", "estimate_s",
"default_s", "task", "best_s"}: what a progress bar shows."""


def tune_model(
    model,
    params=None,
    *,
    target="llvm",
    shape=None,
    opt_level: int | None = None,
    bounds=None,
    precision: str = "float32",
    trials: int | None = None,
    time_budget_s: float | None = None,
    records: str | os.PathLike | None = None,
    strategy: str = "evolutionary",
    batch: int | None = None,
    seed: int = 0,
    num_threads: int | None = None,
    builder=None,
    runner=None,
    progress: Progress | bool = False,
    tasks: Sequence[ModelTask] | None = None,
) -> ModelTuneResult:
    """Tune the kernels of `model` for `target` (this machine).

    Args:
        model, params, shape, opt_level, bounds, precision: as
            `ember.compile_model`'s.
        target: a CPU target that is this machine.
        trials: candidates to measure in all (defaults not counted); None:
            32 per task, or no limit with a time budget.
        time_budget_s: stop starting batches after this many seconds.
        records: the JSON-lines log to resume from and append to; what
            `compile_model(tuning_records=...)` and `ember-compile
            --tuning-records` read.
        strategy, batch, seed, num_threads: as `ember.tune.tune`'s.
        builder, runner: how candidates are built and timed (a local process
            pool and runner process by default; `RPCRunner`, `DaskBuilder`,
            `DaskRunner` for other machines).
        progress: True for a progress bar on stderr (tqdm), or a callable.
        tasks: the tasks (default: `extract_tasks` of the model).

    Returns:
        A `ModelTuneResult`; `.table()` prints it.
    """
    from ember.tune.measure import LocalBuilder, LocalRunner
    from ember.tune.search import TaskTuner

    start = time.monotonic()
    if tasks is None:
        tasks = extract_tasks(
            model, params, target, shape, opt_level, bounds, precision
        )
    if not tasks:
        raise EmberValueError(
            "tune_model: the model has no kernel with knobs to tune (its "
            "convolutions carry the knobs; see ember.topi.kernel.Knobs)"
        )
    if trials is None:
        trials = 32 * len(tasks) if time_budget_s is None else sys.maxsize
    own_builder, own_runner = builder is None, runner is None
    builder = builder or LocalBuilder()
    runner = runner or LocalRunner(num_threads=num_threads)
    batch = batch or 2 * builder.workers
    report = _progress(progress, trials, time_budget_s)
    tuners: list = []
    try:
        for n, t in enumerate(tasks):
            space = t.space
            default = space.render(t.default_config)
            tuners.append(
                TaskTuner(
                    t.task,
                    space,
                    builder,
                    runner,
                    records=records,
                    strategy=strategy,
                    seed=seed + n,
                    baseline=(default, t.default_config),
                )
            )
        done = 0
        while done < trials:
            if time_budget_s is not None and time.monotonic() - start > time_budget_s:
                break
            open_ = [i for i, tu in enumerate(tuners) if not tu.exhausted]
            if not open_:
                break
            # the largest share of the model's time per trial spent on it
            i = max(
                open_,
                key=lambda i: (
                    tasks[i].calls * tuners[i].best[0] / (tuners[i].trials + batch)
                ),
            )
            before = tuners[i].trials
            tuners[i].step(min(batch, trials - done))
            done += tuners[i].trials - before
            report(
                {
                    "trials": done,
                    "total": trials,
                    "elapsed": time.monotonic() - start,
                    "estimate_s": sum(
                        t.calls * tu.best[0]
                        for t, tu in zip(tasks, tuners, strict=True)
                    ),
                    "default_s": sum(
                        t.calls * tu.baseline_cost
                        for t, tu in zip(tasks, tuners, strict=True)
                    ),
                    "task": tasks[i].kind,
                    "best_s": tuners[i].best[0],
                }
            )
        for tu in tuners:  # the winners against the defaults, once more
            if tu.trials:
                tu.confirm()
    finally:
        for tu in tuners:
            tu.close()
        if own_runner:
            runner.close()
        if own_builder:
            builder.close()
        close = getattr(report, "close", None)
        if close is not None:
            close()
    reports = []
    for t, tu in zip(tasks, tuners, strict=True):
        result = tu.result()
        best = tu.history.fastest.get(result.best_schedule, (0.0, None))[1]
        reports.append(
            TaskReport(
                t.symbol,
                t.kind,
                t.calls,
                tu.trials,
                tu.baseline_cost,
                result.best_cost,
                best,
                list(tu.curve),
            )
        )
    path = None if records is None else str(records)
    return ModelTuneResult(reports, done, time.monotonic() - start, path)


def _progress(progress, trials: int, budget: float | None):
    """The callable `tune_model` reports to: the caller's, a tqdm bar, or
    nothing."""
    if callable(progress):
        return progress
    if not progress:
        return lambda info: None
    try:
        from tqdm import tqdm
    except ImportError:
        raise EmberValueError(
            "a progress bar needs tqdm: pip install 'ember[tune]'"
        ) from None
    by_time = trials == sys.maxsize
    bar = tqdm(
        total=round(budget) if by_time and budget else trials,
        unit="s" if by_time else "trial",
        file=sys.stderr,
        dynamic_ncols=True,
    )

    class Bar:
        def __call__(self, info: dict) -> None:
            bar.n = round(info["elapsed"]) if by_time else info["trials"]
            bar.set_postfix_str(
                f"{info['trials']} trials, model {info['estimate_s'] * 1e3:.3f} ms "
                f"(default {info['default_s'] * 1e3:.3f}), {info['task'][:20]} "
                f"best {info['best_s'] * 1e3:.4f} ms",
                refresh=False,
            )
            bar.refresh()

        def close(self) -> None:
            bar.close()

    return Bar()


def save_to_cache(result: ModelTuneResult, tasks: Sequence[ModelTask]) -> str | None:
    """Add each task's best record in `result`'s log to the log under ember's
    cache directory (what `compile_model` applies by default); the path, or
    None when there is no log or no cache directory."""
    from ember.backends.kernel_cache import default_directory
    from ember.tune.records import append_records, best_record, load_records

    directory = default_directory()
    if result.records is None or directory is None:
        return None
    records = load_records(result.records)
    best = [best_record(records, t.task.workload, t.task.target_key) for t in tasks]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "tuning.jsonl"
    append_records(path, [r for r in best if r is not None])
    return str(path)
