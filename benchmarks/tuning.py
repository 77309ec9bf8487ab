"""Auto-tuning side by side: untuned, tuned and hand-scheduled ember next to numpy,
onnxruntime, PyTorch and apache-tvm, with the tuning's wall time and trials.

    .venv/bin/python benchmarks/tuning.py                  # all of it, full budgets
    .venv/bin/python benchmarks/tuning.py --quick          # small sizes, tiny budgets
    .venv/bin/python benchmarks/tuning.py --only conv3x3 --budget 30
    .venv/bin/python benchmarks/tuning.py --records-dir logs   # keep the logs, resume

Workloads (--quick: the sizes in brackets):

    matmul        fp32 1024 x 1024 x 1024 [128]
    conv3x3       1x64x56x56, 64 filters 3x3, pad 1, bias [1x16x16x16]
                  (a ResNet-18 layer)
    depthwise     1x144x56x56, 3x3 depthwise, pad 1, bias [1x32x16x16]
                  (a MobileNetV2 layer)
    mobilenet_v2  224x224 [32x32, width 0.35]
    resnet18      224x224 [32x32]

--quick leaves ResNet-18 out (unless --only names it), tunes only a model's
first two tasks (measuring every task's
default alone would outlast its budget), skips torch.compile and apache-tvm,
and measures at most 4 candidates a workload in at most 5 s.

The ember rows:

    ember untuned         the te computation with an empty schedule
                          (te.create_schedule only): the loop nest as written
    ember tuned           the best schedule the search found in --budget seconds:
                          for matmul `ember.tune.tune` over Ansor-style rules
                          (what `ember.auto_schedule` runs), replayed from its
                          schedule text; for a conv the topi template's knobs
                          (`KnobSpace`, the search `tune_model` runs on each of a
                          model's kernels), replayed the same way; for a model
                          `ember.tune_model`, then `compile_model(tuning_records=)`
    ember hand-scheduled  what ember ships without tuning: matmul, the
                          register-blocked micro-kernel of benchmarks/matmul.py;
                          a conv, its topi template's default schedule
                          (`k.schedule()`); a model, `compile_model(
                          tuning_records=False)` (every kernel its template's
                          default). A model has no untuned row: compile_model
                          gives every kernel a schedule.

and the others: numpy (OpenBLAS matmul; im2col + matmul for the 3x3 conv),
onnxruntime (the one op as an ONNX model, or the model), PyTorch eager
(torch.matmul, F.conv2d, or the ONNX graph node by node as benchmarks/models.py
runs it), torch.compile (models, not with --quick) and apache-tvm's default
build of the same ONNX model through relax (no tuning; --no-tvm skips it).

Every row is checked before it is timed, against numpy in float64 (matmul,
convs) or onnxruntime's output (models). The reference of the ratio column is
numpy for matmul and onnxruntime otherwise. After each table, a line gives the
tuning's wall time and trials (candidates measured, defaults not counted) and
the log it wrote; with --records-dir the log is kept and a second run resumes
from it (candidates measured before are not measured again, and count).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import common  # noqa: E402
import models  # noqa: E402
from common import Impl, Prepared  # noqa: E402

UNTUNED = "ember untuned"
TUNED = "ember tuned"
HAND = "ember hand-scheduled"
WORKLOADS = ("matmul", "conv3x3", "depthwise", "mobilenet_v2", "resnet18")
KERNEL_BUDGET = 120.0
MODEL_BUDGET = 900.0
QUICK_BUDGET = 5.0
QUICK_TRIALS = 4
QUICK_TASKS = 2
QUICK_SKIP = "resnet18"
"""Not run by --quick unless --only names it (MobileNetV2 stands for the models)."""


class Tuning:
    """How much a workload was tuned: filled in by the tuned row's setup."""

    def __init__(self, log: Path):
        self.log = log
        self.seconds: float | None = None
        self.trials = 0
        self.detail = ""

    def line(self) -> str:
        if self.seconds is None:
            return "  tuning: did not run (see the ember tuned row)"
        text = (
            f"  tuning: {self.seconds:.1f} s wall time, {self.trials} trials; "
            f"log {self.log}"
        )
        return text + (f"; {self.detail}" if self.detail else "")


@dataclass
class Workload:
    """One table: its rows, the checked result, the flops of one call (None: a
    model, shown as latency) and the row the ratios are to."""

    title: str
    impls: list[Impl]
    expected: np.ndarray
    flops: float | None
    reference: str


# -- the pieces every kernel workload shares --------------------------------------


def ember_kernel(
    make: Callable[[], tuple], inputs: list[np.ndarray], out_shape: tuple, note: str
) -> Callable[[], Prepared]:
    """A row building `make()` -> (schedule, args) and running it on `inputs`."""

    def setup() -> Prepared:
        import ember

        s, args = make()
        start = time.perf_counter()
        mod = ember.build(s, args, name="kernel")
        compile_s = time.perf_counter() - start
        out = np.empty(out_shape, np.float32)
        return Prepared(
            lambda: mod(*inputs, out),
            lambda: out,
            f"{note}{', ' if note else ''}compile {compile_s:.2f} s",
        )

    return setup


def tuned_kernel(
    args: list,
    tuning: Tuning,
    opts: argparse.Namespace,
    space: Callable | None = None,
    baseline: tuple[str, dict] | None = None,
) -> tuple:
    """Tune the te function of `args` and replay the best schedule found:
    (schedule, args). `space(task)` gives the search space (default: Ansor's
    rules) and `baseline` the schedule candidates are measured against
    (default: the untuned kernel)."""
    from ember.tune.replay import schedule_from_text
    from ember.tune.search import tune
    from ember.tune.task import Task

    task = Task.from_tensors(args)
    extra: dict = {}
    if space is not None:
        extra["space"] = space(task)
    if baseline is not None:
        extra["baseline"] = baseline
    start = time.monotonic()
    result = tune(
        task,
        trials=opts.trials,
        time_budget_s=opts.budget_kernel,
        records=tuning.log,
        **extra,
    )
    tuning.seconds = time.monotonic() - start
    tuning.trials = len(result.records) - 1  # the baseline is measured, not a trial
    tuning.detail = (
        f"best {result.best_cost * 1e3:.3f} ms vs {result.baseline_cost * 1e3:.3f} "
        f"ms {'untuned' if baseline is None else 'default'} in the tuner's runner "
        f"({result.speedup:.2f}x)"
    )
    return schedule_from_text(args, result.best_schedule), args


def onnx_model(nodes: list, inputs: dict, initializers: dict, out_shape: tuple):
    """A one-op ONNX model: `inputs` are graph inputs, `initializers` weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes,
        "kernel",
        [
            helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
            for k, v in inputs.items()
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(out_shape))],
        initializer=[numpy_helper.from_array(v, k) for k, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def torch_row(name: str, fn: Callable[[], object]) -> Impl:
    """PyTorch eager: `fn()` (which imports torch) under inference_mode."""

    def setup() -> Prepared:
        import torch

        torch.set_num_threads(common.cores())
        out: list = []

        def run() -> None:
            with torch.inference_mode():
                out[:] = [fn()]

        return Prepared(
            run, lambda: out[0].numpy(), f"torch {torch.__version__}, {name}"
        )

    def threads() -> str:
        import torch

        return str(torch.get_num_threads())

    return Impl(models.TORCH, setup, threads)


def onnx_rows(make_model: Callable, inputs: dict, skip_tvm: bool) -> list[Impl]:
    """onnxruntime and apache-tvm's default build of the one-op ONNX model
    (models.py's rows; their setup builds the model, so a missing onnx is a
    "not installed" row)."""

    def lazy(row: Callable) -> Impl:
        impl = row(None, inputs)

        def setup() -> Prepared:
            return row(make_model(), inputs).setup()

        return Impl(impl.name, setup, impl.threads)

    rows = [lazy(models.onnxruntime_impl)]
    if not skip_tvm:
        rows.append(lazy(models.tvm_impl))
    return rows


# -- matmul ----------------------------------------------------------------------


def matmul_workload(opts: argparse.Namespace, tuning: Tuning):
    import matmul

    size = 128 if opts.quick else 1024
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    mr, bn = matmul.register_tile("llvm", size)

    def numpy_setup() -> Prepared:
        c = np.empty((size, size), np.float32)
        return Prepared(lambda: np.matmul(a, b, out=c), lambda: c, "np.matmul(out=)")

    def make_model():
        from onnx import helper

        node = helper.make_node("MatMul", ["A", "B"], ["Y"])
        return onnx_model([node], {"A": a, "B": b}, {}, (size, size))

    def torch_matmul():
        import torch

        return torch.matmul(torch.from_numpy(a), torch.from_numpy(b))

    ember_rows = ember_matmul_rows(size, mr, bn, [a, b], tuning, opts)
    impls = [
        Impl("numpy", numpy_setup, common.openblas_threads),
        *onnx_rows(make_model, {"A": a, "B": b}, opts.no_tvm),
        torch_row("torch.matmul", torch_matmul),
        *ember_rows,
    ]
    title = f"matmul fp32 {size} x {size} x {size}"
    return Workload(title, impls, expected, 2.0 * size**3, "numpy")


def ember_matmul_rows(size, mr, bn, inputs, tuning, opts) -> list[Impl]:
    import matmul

    shape = (size, size)
    return [
        Impl(
            UNTUNED,
            ember_kernel(
                lambda: matmul.ember_naive(size, size, size), inputs, shape, ""
            ),
            common.ember_threads,
        ),
        Impl(
            TUNED,
            ember_kernel(
                lambda: tuned_kernel(
                    matmul.ember_naive(size, size, size)[1], tuning, opts
                ),
                inputs,
                shape,
                "tune.tune, Ansor-style rules",
            ),
            common.ember_threads,
        ),
        Impl(
            HAND,
            ember_kernel(
                lambda: matmul.ember_scheduled(size, size, size, mr, bn),
                inputs,
                shape,
                f"benchmarks/matmul.py's micro-kernel, MR={mr} bn={bn}",
            ),
            common.ember_threads,
        ),
    ]


# -- the single convolutions ------------------------------------------------------


def conv_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray, groups: int):
    """The 3x3, pad 1, stride 1 convolution in float64 (N = 1)."""
    xp = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))
    oc, icg = w.shape[:2]
    per = oc // groups
    out = np.empty((oc, x.shape[2], x.shape[3]))
    for g in range(groups):
        win = windows[g * icg : (g + 1) * icg]  # (icg, H, W, 3, 3)
        wg = w[g * per : (g + 1) * per].astype(np.float64)  # (per, icg, 3, 3)
        out[g * per : (g + 1) * per] = np.einsum("chwij,ocij->ohw", win, wg)
    return (out + b[:, None, None])[None].astype(np.float32)


def conv_workload(opts: argparse.Namespace, tuning: Tuning, depthwise: bool):
    if depthwise:
        channels, size = (32, 16) if opts.quick else (144, 56)
    else:
        channels, size = (16, 16) if opts.quick else (64, 56)
    groups = channels if depthwise else 1
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (1, channels, size, size)).astype(np.float32)
    w = rng.uniform(-1, 1, (channels, channels // groups, 3, 3)).astype(np.float32)
    bias = rng.uniform(-1, 1, channels).astype(np.float32)
    out_shape = (1, channels, size, size)
    expected = conv_reference(x, w, bias, groups)
    flops = 2.0 * channels * size * size * (channels // groups) * 9

    def template():
        """The topi kernel (made afresh for each row: a schedule mutates it)."""
        from ember import te, topi

        data = te.placeholder(x.shape, name="data")
        return topi.conv2d(
            data, w.shape, padding=1, groups=groups, bias=True, name="conv"
        )

    def inputs(kernel) -> list[np.ndarray]:
        return [
            x,
            kernel.transform("conv.weight", w),
            kernel.transform("conv.bias", bias),
        ]

    def ember_row(name: str, schedule: Callable, note: str) -> Impl:
        def setup() -> Prepared:
            k = template()
            made: list = []

            def make():
                made[:] = [schedule(k)]
                return made[0], k.args

            layout = k.attrs.get("layout", "")
            return ember_kernel(make, inputs(k), out_shape, note or str(layout))()

        return Impl(name, setup, common.ember_threads)

    def untuned(k):
        from ember import te

        return te.create_schedule(k.output.op)

    def tuned(k):
        from ember.tune.model import KnobSpace, schedule_text

        s, _ = tuned_kernel(
            k.args,
            tuning,
            opts,
            space=lambda task: KnobSpace(task, k),
            baseline=(schedule_text(k), dict(k.knobs.default)),
        )
        return s

    def make_model():
        from onnx import helper

        node = helper.make_node(
            "Conv",
            ["X", "W", "B"],
            ["Y"],
            kernel_shape=[3, 3],
            pads=[1] * 4,
            group=groups,
        )
        return onnx_model([node], {"X": x}, {"W": w, "B": bias}, out_shape)

    def torch_conv():
        import torch
        import torch.nn.functional as F

        return F.conv2d(
            torch.from_numpy(x),
            torch.from_numpy(w),
            torch.from_numpy(bias),
            padding=1,
            groups=groups,
        )

    impls = [
        *onnx_rows(make_model, {"X": x}, opts.no_tvm),
        torch_row("F.conv2d", torch_conv),
    ]
    if not depthwise:  # numpy has no depthwise convolution worth the name

        def numpy_setup() -> Prepared:
            import conv2d

            xp = np.zeros((1, channels, size + 2, size + 2), np.float32)
            result: list = []

            def run() -> None:
                y = conv2d.conv_numpy(conv2d.pad_into(x, xp), w)
                y += bias[:, None, None]
                result[:] = [y]

            return Prepared(run, lambda: result[0], "pad + im2col + matmul")

        impls.append(Impl("numpy im2col", numpy_setup, common.openblas_threads))
    impls += [
        ember_row(UNTUNED, untuned, "te.create_schedule only"),
        ember_row(TUNED, tuned, "the template's knobs, KnobSpace"),
        ember_row(HAND, lambda k: k.schedule(), "the template's default, k.schedule()"),
    ]
    kind = "depthwise 3x3" if depthwise else f"{channels} filters 3x3"
    title = f"conv2d NCHW 1x{channels}x{size}x{size}, {kind}, pad 1, bias"
    return Workload(title, impls, expected, flops, models.ORT)


# -- whole models ----------------------------------------------------------------


def model_workload(opts: argparse.Namespace, tuning: Tuning, name: str):
    import onnx_models  # pyright: ignore[reportMissingImports]  # examples/
    import onnxruntime

    if opts.quick:
        model = (
            onnx_models.mobilenet_v2(size=32, width=0.35)
            if name == "mobilenet_v2"
            else onnx_models.resnet18(size=32)
        )
    else:
        model = models.MODELS[name](False)
    inputs = onnx_models.random_input(model)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    expected = np.asarray(session.run(None, inputs)[0])

    def ember_row(row: str, records: Callable[[], object]) -> Impl:
        def setup() -> Prepared:
            import ember
            from ember.runtime import GraphModule, cpu

            given = records()
            start = time.perf_counter()
            mod = ember.compile_model(model, tuning_records=given)
            compile_s = time.perf_counter() - start
            gm = GraphModule(mod["default"](cpu()))
            for key, value in inputs.items():
                gm.set_input(key, value)
            stats = mod.compile_stats
            note = (
                f"compile {compile_s:.1f} s; {stats.kernels} kernels, "
                f"{stats.tuned} from the log"
                if given
                else f"compile {compile_s:.1f} s; {stats.kernels} kernels, "
                "tuning_records=False"
            )
            return Prepared(gm.run, lambda: gm.get_output(0).numpy(), note)

        return Impl(row, setup, common.ember_threads)

    def tune() -> Path:
        import ember
        from ember.tune.model import extract_tasks

        tasks = extract_tasks(model)
        if opts.quick:  # measuring every task's default alone outlasts the budget
            print(f"  (--quick: tuning {QUICK_TASKS} of the {len(tasks)} tasks)")
            tasks = tasks[:QUICK_TASKS]
        result = ember.tune_model(
            model,
            tasks=tasks,
            trials=opts.trials,
            time_budget_s=opts.budget_model,
            records=tuning.log,
            progress=not opts.quick,
        )
        tuning.seconds, tuning.trials = result.seconds, result.trials
        tuning.detail = (
            f"{len(result.tasks)} tasks, their kernel time "
            f"{result.default_s * 1e3:.3f} -> {result.best_s * 1e3:.3f} ms "
            "(the runner's estimate)"
        )
        print(result.table())
        return tuning.log

    impls = [models.onnxruntime_impl(model, inputs), models.torch_impl(model, inputs)]
    if not opts.quick:
        impls.append(models.torch_impl(model, inputs, compiled=True))
    if not opts.no_tvm:
        impls.append(models.tvm_impl(model, inputs))
    # the defaults first: the tuned build then compiles only the tuned kernels
    impls += [ember_row(HAND, lambda: False), ember_row(TUNED, tune)]
    shapes = ", ".join(f"{k} {'x'.join(map(str, v.shape))}" for k, v in inputs.items())
    return Workload(f"{name}: {shapes}", impls, expected, None, models.ORT)


# -- the run ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> list:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"small sizes, {QUICK_BUDGET:g} s and {QUICK_TRIALS} trials of tuning "
        "each, no torch.compile or apache-tvm",
    )
    parser.add_argument(
        "--only", choices=WORKLOADS, action="append", help="this workload (repeatable)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        help=f"seconds of tuning per workload (default {KERNEL_BUDGET:g} for a "
        f"kernel, {MODEL_BUDGET:g} for a model)",
    )
    parser.add_argument(
        "--trials",
        type=int,
        help="candidates to measure at most per workload (default: as many as "
        "the budget allows)",
    )
    parser.add_argument(
        "--records-dir",
        type=Path,
        help="keep the tuning logs here, <workload>.jsonl; resume from those present",
    )
    parser.add_argument("--no-tvm", action="store_true", help="skip apache-tvm's rows")
    common.add_timing_options(parser)
    opts = parser.parse_args(argv)
    if opts.budget is not None and opts.budget <= 0:
        parser.error("--budget must be positive")
    if opts.trials is not None and opts.trials < 1:
        parser.error("--trials must be at least 1")
    quick_budget = QUICK_BUDGET if opts.quick else None
    opts.budget_kernel = opts.budget or quick_budget or KERNEL_BUDGET
    opts.budget_model = opts.budget or quick_budget or MODEL_BUDGET
    if opts.quick:
        opts.no_tvm = True
        opts.trials = opts.trials or QUICK_TRIALS
    timing = common.timing_options(opts)
    workloads = opts.only or [w for w in WORKLOADS if not opts.quick or w != QUICK_SKIP]

    print(common.describe_machine())
    print(common.threads_note())
    with tempfile.TemporaryDirectory() as scratch:
        logs = opts.records_dir or Path(scratch)
        logs.mkdir(parents=True, exist_ok=True)
        rows = []
        for name in workloads:
            log = logs / f"{name}.jsonl"
            before = len(log.read_text().splitlines()) if log.exists() else 0
            tuning = Tuning(log)
            if name == "matmul":
                workload = matmul_workload(opts, tuning)
            elif name in ("conv3x3", "depthwise"):
                workload = conv_workload(opts, tuning, name == "depthwise")
            else:
                workload = model_workload(opts, tuning, name)
            print(f"\n{workload.title}")
            rows.append(
                common.run_all(
                    workload.impls,
                    workload.expected,
                    workload.flops or 1.0,
                    workload.reference,
                    table=None if workload.flops else common.print_latency_table,
                    **timing,
                )
            )
            resumed = f" (resumed: {before} records in the log before)"
            print(tuning.line() + (resumed if before else ""))
            if opts.records_dir is None:
                print("  (the log is deleted at exit: --records-dir keeps it)")
    return rows


if __name__ == "__main__":
    main()
