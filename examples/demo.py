"""ember's demo: compile a real network ahead of time and race onnxruntime with it,
then schedule kernels written as tensor expressions with `ember.auto_schedule`
and race numpy with them.

    make demo        (or: .venv/bin/python examples/demo.py [--size 224]
                      [--tune-budget 3] [--trials N] [--no-model])

The network is MobileNetV2 (batch 1, fp32, seeded random weights) written as an
ONNX file by `examples/onnx_models.py`; `ember.compile_model` turns it into one
native `default_run` (kernels cached under ~/.cache/ember, so a second run
compiles in about a second), and the graph executor runs it beside onnxruntime
on the same input. Each te kernel gets a few seconds of schedule search
(`--tune-budget`), measured in isolated processes and checked against the
default schedule's result; both schedules are timed beside numpy.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ember
from ember import te

sys.path.insert(0, str(Path(__file__).resolve().parent))


def best_of(fn, repeat: int = 20) -> float:
    """The fastest of `repeat` runs of fn(), in seconds."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def vecadd(n: int):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
    return [A, B, C], (a, b, np.empty(n, "float32")), lambda: a + b


def matmul(n: int, m: int, k: int):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    a = np.random.rand(n, k).astype("float32")
    b = np.random.rand(k, m).astype("float32")
    return [A, B, C], (a, b, np.empty((n, m), "float32")), lambda: a @ b


def rowmax(n: int, m: int):
    A = te.placeholder((n, m), name="A")
    r = te.reduce_axis((0, m), name="r")
    M = te.compute((n,), lambda i: te.max(A[i, r], axis=r), name="M")
    a = np.random.randn(n, m).astype("float32")
    return [A, M], (a, np.empty(n, "float32")), lambda: a.max(axis=1)


def softmax_exp(n: int, m: int):
    """The two-stage numerator of a softmax: exp(x - rowmax(x))."""
    X = te.placeholder((n, m), name="X")
    r = te.reduce_axis((0, m), name="r")
    M = te.compute((n,), lambda i: te.max(X[i, r], axis=r), name="M")
    E = te.compute((n, m), lambda i, j: te.exp(X[i, j] - M[i]), name="E")
    x = np.random.randn(n, m).astype("float32")
    out = np.empty((n, m), "float32")
    return [X, E], (x, out), lambda: np.exp(x - x.max(axis=1, keepdims=True))


def kernel_row(label: str, make, search: dict) -> None:
    """Build a kernel on te's default schedule and on the one `auto_schedule`
    finds, check both against numpy, and print their times beside numpy's."""
    args, arrays, reference = make()
    expected = reference()
    start = time.perf_counter()
    tuned = ember.build(ember.auto_schedule(args[-1], args, **search), args)
    search_s = time.perf_counter() - start
    default = ember.build(te.create_schedule(args[-1].op), args)
    times, errors, ok = [], [], True
    for mod in (default, tuned):
        arrays[-1].fill(np.nan)
        mod(*arrays)
        ok &= np.allclose(arrays[-1], expected, rtol=1e-4, atol=1e-4)
        errors.append(float(np.abs(arrays[-1] - expected).max()))
        times.append(best_of(lambda mod=mod: mod(*arrays)))
    t_numpy = best_of(reference)
    print(
        f"{label:24} {search_s:5.1f}s {times[0] * 1e6:9.1f}us {times[1] * 1e6:9.1f}us "
        f"{t_numpy * 1e6:9.1f}us {t_numpy / times[1]:6.2f}x  "
        f"{'ok' if ok else 'MISMATCH'} (max |err| {max(errors):.1e})"
    )
    if not ok:
        raise SystemExit(f"{label}: ember's result differs from numpy's")


def median_of(fn, repeat: int = 30, warmup_s: float = 0.5) -> float:
    """The median of `repeat` runs of fn(), in seconds, after `warmup_s` of
    warm-up runs: thread pools started, pages touched, and ember's automatic
    thread count past its first window (just after a compile, the compiler's
    own processes count as another's load and leave one thread)."""
    end = time.perf_counter() + warmup_s
    fn()
    while time.perf_counter() < end:
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def model_demo(size: int) -> None:
    import onnx_models

    from ember.runtime import GraphModule, cpu, load_module

    model = onnx_models.mobilenet_v2(size=size)
    inputs = onnx_models.random_input(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mobilenet_v2.onnx"
        path.write_bytes(model.SerializeToString())
        print(f"MobileNetV2, 1x3x{size}x{size} fp32, written to an ONNX file")
        start = time.perf_counter()
        mod = ember.compile_model(str(path))
        stats = mod.compile_stats
        print(
            f"compiled in {time.perf_counter() - start:.1f} s: {stats.calls} kernel "
            f"calls, {stats.kernels} distinct kernels ({stats.cache_hits} from the "
            f"cache), workspace {stats.workspace_bytes / 2**20:.1f} MiB for "
            f"{stats.intermediate_bytes / 2**20:.1f} MiB of intermediates"
        )
        library = Path(tmp) / "mobilenet_v2.so"
        mod.export_library(str(library))
        gm = GraphModule(load_module(str(library))["default"](cpu()))
    for name, value in inputs.items():
        gm.set_input(name, value)
    gm.run()
    got = gm.get_output(0).numpy()
    t_ember = median_of(gm.run)
    try:
        import onnxruntime
    except ImportError:
        print(f"ember {t_ember * 1e3:.2f} ms (onnxruntime is not installed)")
        return
    session = onnxruntime.InferenceSession(model.SerializeToString())
    want = session.run(None, inputs)[0]
    t_ort = median_of(lambda: session.run(None, inputs))
    err = float(np.abs(got - want).max() / np.abs(want).max())
    ok = err <= 1e-4
    print(f"{'runtime':14} {'latency':>10}")
    print(f"{'ember':14} {t_ember * 1e3:8.2f}ms  (exported .so, GraphModule)")
    print(f"{'onnxruntime':14} {t_ort * 1e3:8.2f}ms  ({t_ember / t_ort:.2f}x ember's)")
    print(
        f"outputs agree: {'ok' if ok else 'MISMATCH'} (max relative error "
        f"{err:.1e}, top-1 class {int(got.argmax())} vs {int(want.argmax())})"
    )
    if not ok:
        raise SystemExit("ember's output differs from onnxruntime's")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description="ember's demo")
    parser.add_argument("--size", type=int, default=224, help="MobileNetV2 input size")
    parser.add_argument("--no-model", action="store_true", help="kernels only")
    parser.add_argument(
        "--tune-budget",
        type=float,
        default=3.0,
        metavar="S",
        help="seconds of auto_schedule search per kernel (default 3)",
    )
    parser.add_argument(
        "--trials", type=int, help="candidates measured per kernel at most"
    )
    opts = parser.parse_args()
    if not opts.no_model:
        model_demo(opts.size)
    np.random.seed(0)
    kernels = {
        "vecadd n=1M": lambda: vecadd(1 << 20),
        "matmul 256x256x256": lambda: matmul(256, 256, 256),
        "rowmax 1024x1024": lambda: rowmax(1024, 1024),
        "exp(x - rowmax) 512x512": lambda: softmax_exp(512, 512),
    }
    target = ember.Target("llvm")
    print(f"ember {ember.__version__}, target llvm: {target.triple}, cpu {target.cpu}")
    limit = f" or {opts.trials} candidates" if opts.trials else ""
    print(
        f"te kernels, scheduled by ember.auto_schedule ({opts.tune_budget:g} s"
        f"{limit} of search each) and checked against numpy:"
    )
    print(
        f"{'kernel':24} {'search':>6} {'default':>11} {'tuned':>11} {'numpy':>11} "
        f"{'ratio':>7}  check"
    )
    from ember.tune import LocalBuilder, LocalRunner

    # one build pool and runner process for every search
    builder, runner = LocalBuilder(), LocalRunner()
    search = dict(time_budget_s=opts.tune_budget, trials=opts.trials)
    try:
        for label, make in kernels.items():
            kernel_row(label, make, {**search, "builder": builder, "runner": runner})
    finally:
        builder.close()
        runner.close()
    print(
        "default: te's naive schedule; tuned: the schedule auto_schedule found; "
        "ratio = numpy time / tuned time (above 1: ember is faster)."
    )
    print(
        "Longer searches find faster schedules (--tune-budget 30); "
        "examples/matmul_schedule.py writes one by hand (make bench compares)."
    )


if __name__ == "__main__":
    main()
