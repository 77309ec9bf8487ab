"""`ember-run`: run a compiled model library and show what it produced, and how fast.

    ember-run model.so --input data=x.npy [--input ...] [--params model.params]
                       [--repeat 10] [--output-dir out/] [--seed 0]

Loads the library (``.so`` or ``.tar``) with the runtime alone, sets the inputs
from ``.npy`` files (random ones, seeded, for inputs not given), runs the model,
prints each output's name, shape, dtype, min/max/mean and first values, then
the latency: the median of ``--repeat`` timed runs (``time_evaluator``).
``--output-dir`` saves each output as ``<name>.npy``.

Exit status: 0 on success, 1 when the model cannot be loaded or run (the
message says why), 2 for bad command-line arguments or unreadable files.
Imports nothing but the standard library, numpy and ``ember.runtime``.
"""

import argparse
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ember import runtime
from ember.runtime import EmberError, GraphModule

PROGRESS_AFTER_S = 0.5
"""Loading that takes longer than this gets a progress line on stderr."""


class UsageError(Exception):
    """A bad argument or an unreadable file: exit status 2."""


@contextmanager
def progress(message: str, delay: float | None = None) -> Iterator[None]:
    """Print ``message...`` on stderr if the block runs longer than ``delay``
    seconds (default ``PROGRESS_AFTER_S``), then how long it took."""
    if delay is None:
        delay = PROGRESS_AFTER_S
    shown = threading.Event()
    start = time.perf_counter()

    def show() -> None:
        shown.set()
        print(f"{message}...", file=sys.stderr, flush=True)

    timer = threading.Timer(delay, show)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if shown.is_set():
            elapsed = time.perf_counter() - start
            print(f"{message}: done in {elapsed:.1f} s", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember-run",
        description="Run a compiled ember model library and time it.",
    )
    parser.add_argument("library", help="the model library (.so or .tar)")
    parser.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input from a .npy file (FILE.npy alone for a model with one input)",
    )
    parser.add_argument(
        "--params",
        metavar="FILE",
        help="params saved with save_param_dict (or the packed blob), for a "
        "library that keeps them separate",
    )
    parser.add_argument(
        "--repeat", type=int, default=10, help="timed runs (default 10; 0: no timing)"
    )
    parser.add_argument(
        "--output-dir", metavar="DIR", help="save each output as DIR/<name>.npy"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the random inputs (default 0)"
    )
    parser.add_argument(
        "--show", type=int, default=8, help="values printed per output (default 8)"
    )
    return parser


def _parse_inputs(specs: list[str], names: list[str]) -> dict[str, str]:
    files: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.rpartition("=")
        if not sep:
            if len(names) != 1:
                raise UsageError(
                    f"--input {spec}: the model has {len(names)} inputs "
                    f"({', '.join(names)}); write NAME=FILE.npy"
                )
            name, path = names[0], spec
        if name not in names:
            raise UsageError(
                f"--input {spec}: the model has no input {name!r}; its inputs "
                f"are {', '.join(map(repr, names))}"
            )
        if name in files:
            raise UsageError(f"--input {name} is given twice")
        files[name] = path
    return files


def _load_npy(path: str) -> np.ndarray:
    try:
        value = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {path} as a .npy array: {e}") from None
    if not isinstance(value, np.ndarray):
        raise UsageError(f"{path} holds several arrays (.npz); give one .npy per input")
    return value


def _random_input(shape, dtype: str, rng: np.random.Generator) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(0, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _summary(value: np.ndarray, show: int) -> str:
    flat = value.reshape(-1)
    if flat.size == 0:
        return "  (empty)"
    numbers = flat.astype("float64")
    first = np.array2string(flat[:show], precision=5, separator=", ")
    more = ", ..." if flat.size > show else ""
    return (
        f"  min {numbers.min():.6g}  max {numbers.max():.6g}  "
        f"mean {numbers.mean():.6g}\n  first values: {first[:-1]}{more}]"
    )


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip(".") or "output"


def _mb(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 1e5 else f"{nbytes} bytes"


def run(opts: argparse.Namespace) -> None:
    if opts.repeat < 0:
        raise UsageError(f"--repeat must be >= 0, got {opts.repeat}")
    if not os.path.exists(opts.library):
        raise UsageError(f"no such file: {opts.library}")
    what = "linking" if opts.library.endswith(".tar") else "loading"
    with progress(f"{what} {opts.library}"):
        lib = runtime.load_module(opts.library)
    model = lib.metadata.get("model")
    if model is None:
        functions = ", ".join(lib.function_names()) or "none listed"
        raise EmberError(
            f"{opts.library} is not a model library (its metadata has no "
            f'"model"; it defines: {functions}); compile a model with '
            "ember-compile, or call its functions with load_module"
        )
    module = GraphModule(lib["default"](runtime.cpu()))
    names = [t["name"] for t in model["inputs"]]
    files = _parse_inputs(opts.input, names)
    if opts.params is not None:
        try:
            with open(opts.params, "rb") as f:
                data = f.read()
        except OSError as e:
            raise UsageError(
                f"cannot read --params {opts.params}: {e.strerror}"
            ) from None
        module.load_params(data)
    elif not model["params_embedded"] and model["params"]:
        raise EmberError(
            f"{opts.library} keeps its params separate: pass --params FILE "
            "(the .params file written next to it)"
        )

    params = "embedded" if model["params_embedded"] else "separate"
    print(
        f"model: {opts.library} ({len(names)} input(s), {len(model['outputs'])} "
        f"output(s); params {params}, {_mb(model['params_bytes'])}; workspace "
        f"{_mb(model['workspace_bytes'])})"
    )
    rng = np.random.default_rng(opts.seed)
    for tensor in model["inputs"]:
        name, shape, dtype = tensor["name"], tuple(tensor["shape"]), tensor["dtype"]
        if name in files:
            value = _load_npy(files[name])
            origin = files[name]
        else:
            value = _random_input(shape, dtype, rng)
            origin = f"random (seed {opts.seed})"
        module.set_input(name, value)
        print(f"input {name!r}: {dtype} {shape} from {origin}")

    module.run()
    if opts.output_dir:
        os.makedirs(opts.output_dir, exist_ok=True)
    for i, tensor in enumerate(model["outputs"]):
        value = module.get_output(i).numpy()
        print(f"output {i} {tensor['name']!r}: {value.dtype} {value.shape}")
        print(_summary(value, opts.show))
        if opts.output_dir:
            path = os.path.join(opts.output_dir, _safe_name(tensor["name"]) + ".npy")
            np.save(path, value)
            print(f"  saved to {path}")

    if opts.repeat:
        timer = module.module.time_evaluator(
            "run", runtime.cpu(), number=1, repeat=opts.repeat
        )
        result = timer()
        ms = [t * 1e3 for t in result.results]
        print(
            f"latency: median {result.median * 1e3:.3f} ms (min {min(ms):.3f}, "
            f"max {max(ms):.3f}, mean {result.mean * 1e3:.3f}) over "
            f"{opts.repeat} run(s)"
        )


def main(argv: list[str] | None = None) -> int:
    opts = _parser().parse_args(argv)
    try:
        run(opts)
    except UsageError as e:
        print(f"ember-run: error: {e}", file=sys.stderr)
        return 2
    except (EmberError, ValueError, TypeError, OSError) as e:
        if os.environ.get("EMBER_TRACEBACK"):
            raise
        print(f"ember-run: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ember-run: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
