"""`ember-tune`: tune a model's kernels on this machine, records to a log.

    ember-tune model.onnx -o records.jsonl [--trials N] [--time-budget SECONDS]
               [--rpc HOST:PORT] [--dask-scheduler ADDRESS] [--resume]
               [--plot curve.png] [--input-shape data:1,3,224,224] [--target ...]
               [--bounds seq=512]
    ember-compile model.onnx -o model.so --tuning-records records.jsonl

A model with size symbols (a dynamic batch or sequence) is tuned as it
compiles: each symbolic kernel at the sizes its schedule is planned for (the
`--bounds`, else 128), and `ember-compile` with the same bounds applies the
records.

Each kernel whose template has knobs (convolutions) is a task; the trials go
to the tasks by their share of the model's time (`ember.tune.tune_model`).
Candidates are built in a local process pool (or on a Dask cluster with
`--dask-scheduler`) and timed in an isolated runner process (or on the
device behind an ember RPC server with `--rpc`), each checked against the
default schedule's output. A progress bar shows the trials, each task's best
time and the model's estimate; the end prints the tasks before and after.
The best record of each task is also added to the log under ember's cache
directory, which `compile_model` applies by default (`--no-cache-records`
leaves it alone).

Exit status (as every ember tool, see `ember.tools.common`): 0 on success, 1
when the model cannot be read or tuned or the log cannot be written, 2 for
bad command-line arguments (an existing log without `--resume` is one:
tuning never overwrites earlier work; so is an output that is the model or
another output), 3 for a bug.
"""

import argparse
import logging
import sys
import time
from pathlib import Path

from ember.tools.common import (
    Named,
    UsageError,
    add_common_arguments,
    check_distinct_files,
)

log = logging.getLogger("ember.tools.tune")


def _parser(prog: str = "ember-tune") -> argparse.ArgumentParser:
    from ember.tools.ember_compile import (
        add_bounds_argument,
        add_model_arguments,
        add_precision_argument,
    )

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Tune an ONNX model's kernels for this machine.",
    )
    add_model_arguments(parser, "the tuning log to write (.jsonl)")
    add_bounds_argument(parser)
    add_precision_argument(parser)
    parser.add_argument(
        "--trials", type=int, help="candidates to measure in all (default 32 a task)"
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        metavar="SECONDS",
        help="stop starting batches after this many seconds",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an existing log: what it measured is not measured again",
    )
    parser.add_argument(
        "--strategy",
        choices=("evolutionary", "random"),
        default="evolutionary",
        help="search guided by the cost model (default), or random",
    )
    parser.add_argument(
        "--threads", type=int, help="threads of the measured kernels (default: all)"
    )
    parser.add_argument(
        "--rpc",
        metavar="HOST:PORT",
        help="time candidates on the ember RPC server there ($EMBER_RPC_KEY: its key)",
    )
    parser.add_argument(
        "--cc",
        metavar="COMPILER",
        help="the C compiler that links candidates for another machine's target "
        "(e.g. aarch64-linux-gnu-gcc with --rpc to an aarch64 board)",
    )
    parser.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        help="build on this Dask cluster's workers and time on those holding "
        "the resource 'device' (needs ember[distributed])",
    )
    parser.add_argument(
        "--plot", metavar="PNG", help="save each task's best time over its trials"
    )
    parser.add_argument(
        "--no-cache-records",
        action="store_true",
        help="do not add the best records to the log under ember's cache directory",
    )
    add_common_arguments(parser, prog)
    return parser


def _address(spec: str) -> tuple[str, int]:
    host, sep, port = spec.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--rpc: expected HOST:PORT, got {spec!r}")
    return host, int(port)


def _check(opts: argparse.Namespace) -> Path:
    """The log's path, once the arguments make sense; raises UsageError."""
    from ember.tools.ember_compile import check_writable

    output = Path(opts.output)
    if opts.trials is not None and opts.trials < 1:
        raise UsageError(f"--trials: expected a positive count, got {opts.trials}")
    if opts.time_budget is not None and opts.time_budget <= 0:
        raise UsageError(f"--time-budget: expected seconds > 0, got {opts.time_budget}")
    if opts.threads is not None and opts.threads < 1:
        raise UsageError(f"--threads: expected a positive count, got {opts.threads}")
    if not 0 <= opts.opt_level <= 3:
        raise UsageError(f"--opt-level: expected 0..3, got {opts.opt_level}")
    if opts.rpc and opts.dask_scheduler:
        raise UsageError("--rpc and --dask-scheduler: give one of them")
    check_distinct_files([("the model", opts.model)], _outputs(opts))
    if output.exists() and not opts.resume:
        raise UsageError(
            f"-o {output}: the log exists; --resume continues it (tuning never "
            "overwrites earlier records), or name another file"
        )
    if not Path(opts.model).is_file():
        raise FileNotFoundError(f"no such model file: {opts.model}")
    check_writable(output, "-o")
    if opts.plot:
        check_writable(Path(opts.plot), "--plot")
    return output


def _outputs(opts: argparse.Namespace) -> list[Named]:
    """The files a run writes: the cache directory's log (first: an option
    naming it is what is wrong), the log and the plot."""
    from ember.backends.kernel_cache import default_directory

    directory = None if opts.no_cache_records else default_directory()
    cached = directory / "tuning.jsonl" if directory is not None else None
    return [
        ("the cache directory's log", cached),
        ("-o", opts.output),
        ("--plot", opts.plot),
    ]


def _measurers(opts: argparse.Namespace):
    """(builder, runner) for the options: None for the local defaults."""
    import os

    if opts.rpc:
        from ember.tune import RPCRunner

        host, port = _address(opts.rpc)
        key = os.environ.get("EMBER_RPC_KEY")
        return _builder(opts), RPCRunner(host, port, key=key)
    if opts.dask_scheduler:
        from ember.tune import DaskBuilder, DaskRunner

        try:
            from distributed import Client
        except ImportError:
            raise UsageError(
                "--dask-scheduler needs dask.distributed: pip install "
                "'ember[distributed]'"
            ) from None
        client = Client(opts.dask_scheduler, timeout="20s")
        return DaskBuilder(client), DaskRunner(client)
    return _builder(opts), None


def _builder(opts: argparse.Namespace):
    """A builder linking with `--cc`, or None for the default one."""
    if not opts.cc:
        return None
    from ember.tune.measure import LocalBuilder

    return LocalBuilder(cc=opts.cc)


def run(opts: argparse.Namespace) -> None:
    from ember.tools.ember_compile import parse_bounds, parse_shapes, shapes_as_flags

    output = _check(opts)
    shapes = parse_shapes(opts.input_shape + opts.input_shapes)
    bounds = parse_bounds(opts.bounds) or None
    start = time.perf_counter()
    log.info("importing %s", opts.model)
    from ember.tune.model import extract_tasks, save_to_cache, tune_model

    with shapes_as_flags():
        tasks = extract_tasks(
            opts.model,
            None,
            opts.target,
            shapes or None,
            opts.opt_level,
            bounds,
            precision=opts.precision,
        )
    log.info(
        "%d tasks: %s",
        len(tasks),
        ", ".join(f"{t.kind} x{t.calls}" for t in tasks) or "none",
    )
    builder, runner = _measurers(opts)
    bar = sys.stderr.isatty() and log.isEnabledFor(logging.INFO)
    result = tune_model(
        opts.model,
        target=opts.target,
        trials=opts.trials,
        time_budget_s=opts.time_budget,
        records=output,
        strategy=opts.strategy,
        num_threads=opts.threads,
        builder=builder,
        runner=runner,
        progress=True if bar else _log_progress,
        tasks=tasks,
    )
    print(result.table())
    if opts.plot:
        result.plot(opts.plot)
        log.info("wrote %s", opts.plot)
    if not opts.no_cache_records:
        where = save_to_cache(result, tasks)
        if where is not None:
            log.info("best records added to %s (compile_model applies them)", where)
    log.info(
        "wrote %s: %d trials in %.0f s; the tuned kernels %.3f ms a run, "
        "%.3f ms with the default schedules",
        output,
        result.trials,
        time.perf_counter() - start,
        result.best_s * 1e3,
        result.default_s * 1e3,
    )


def _log_progress(info: dict) -> None:
    log.info(
        "%d trials, %.0f s: model %.3f ms (default %.3f), %s best %.4f ms",
        info["trials"],
        info["elapsed"],
        info["estimate_s"] * 1e3,
        info["default_s"] * 1e3,
        info["task"],
        info["best_s"] * 1e3,
    )


def main(argv: list[str] | None = None, prog: str = "ember-tune") -> int:
    """Run ember-tune; returns the exit status (see `ember.tools.common`)."""
    from ember.tools.common import tool_main

    return tool_main(prog, _parser(prog).parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
