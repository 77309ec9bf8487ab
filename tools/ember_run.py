"""`ember-run`: run a compiled model library and show what it produced, and how fast.

    ember-run model.so --input data=x.npy [--input ...] [--params model.params]
                       [--repeat 10] [--output-dir out/] [--seed 0]
    ember-run model.so --inputs inputs.npz      # arrays named as the inputs
    ember-run model.so --profile [--trace trace.json]   # time each kernel

Loads the library (``.so`` or ``.tar``) with the runtime alone, sets the inputs
from ``.npy`` files or an ``.npz`` archive of arrays named as the model's inputs
(tvmc's ``--inputs``; random ones, seeded, for inputs not given), runs the model,
prints each output's name, shape, dtype, min/max/mean and first values, then
the latency: the median of ``--repeat`` timed runs (``time_evaluator``).
``--profile`` then runs ``--repeat`` more kernel by kernel and prints where the
time goes (``GraphModule.profile``: each kernel's calls, total and mean time,
share and graph ops); ``--trace FILE`` writes those calls as a Chrome trace
that Perfetto (ui.perfetto.dev) or ``chrome://tracing`` opens.
``--output-dir`` saves each output as ``<name>.npy``; one that would be the
library, the params or an input file, or another output's file, is refused
before the model runs.

Exit status (as every ember tool, see ``ember.tools.common``): 0 on success, 1
when a file is missing or unreadable or the model cannot be loaded or run (the
message says why), 2 for bad command-line arguments, 3 for a bug. Progress goes
to stderr through logging (``-q`` hides it), results to stdout. Imports nothing
but the standard library, numpy and ``ember.runtime``.
"""

import argparse
import logging
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
from ember.runtime.errors import EmberValueError
from ember.tools.common import UsageError, add_common_arguments, check_distinct_files

PROGRESS_AFTER_S = 0.5
"""Loading that takes longer than this gets a progress line on stderr."""

log = logging.getLogger("ember.tools.run")


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
        log.info("%s...", message)

    timer = threading.Timer(delay, show)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if shown.is_set():
            elapsed = time.perf_counter() - start
            log.info("%s: done in %.1f s", message, elapsed)


def _parser(prog: str = "ember-run") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run a compiled ember model library and time it.",
    )
    parser.add_argument("library", help="the model library (.so or .tar)")
    parser.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input from a .npy file (FILE.npy alone for a model with one "
        "input), or FILE.npz: inputs from the arrays named as them",
    )
    parser.add_argument(
        "--inputs",
        action="append",
        default=[],
        metavar="FILE.npz",
        help="tvmc's spelling: inputs from the arrays of an .npz named as them",
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
        "--profile",
        action="store_true",
        help="time every kernel call and print a table of the kernels",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE.json",
        help="with --profile: write the kernel calls as a Chrome trace (Perfetto)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the random inputs (default 0)"
    )
    parser.add_argument(
        "--show", type=int, default=8, help="values printed per output (default 8)"
    )
    add_common_arguments(parser, prog)
    return parser


Source = tuple[str, str | None]
"""Where an input comes from: a .npy file, or an .npz file and its key."""


def _parse_inputs(specs: list[str], names: list[str]) -> dict[str, Source]:
    sources: dict[str, Source] = {}

    def add(name: str, source: Source, spec: str) -> None:
        if name not in names:
            raise UsageError(
                f"--input {spec}: the model has no input {name!r}; its inputs "
                f"are {', '.join(map(repr, names))}"
            )
        if name in sources:
            raise UsageError(f"--input {name} is given twice")
        sources[name] = source

    for spec in specs:
        name, sep, path = spec.rpartition("=")
        if not sep and spec.endswith(".npz"):
            for key in _npz_keys(spec):
                add(key, (spec, key), spec)
            continue
        if not sep:
            if len(names) != 1:
                raise UsageError(
                    f"--input {spec}: the model has {len(names)} inputs "
                    f"({', '.join(names)}); write NAME=FILE.npy"
                )
            name, path = names[0], spec
        add(name, (path, None), spec)
    return sources


def _npz_keys(path: str) -> list[str]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            return list(archive.files)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path}") from None
    except (OSError, ValueError, AttributeError) as e:
        raise EmberValueError(f"cannot read {path} as an .npz archive: {e}") from None


def _load(source: Source) -> np.ndarray:
    path, key = source
    if key is not None:
        with np.load(path, allow_pickle=False) as archive:
            return archive[key]
    try:
        value = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path}") from None
    except (OSError, ValueError) as e:
        raise EmberValueError(f"cannot read {path} as a .npy array: {e}") from None
    if not isinstance(value, np.ndarray):
        value.close()
        raise EmberValueError(
            f"{path} holds several arrays (.npz): name it --input FILE.npz "
            "(arrays named as the inputs), or give one .npy per input"
        )
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


def _mb(nbytes: int | str) -> str:
    if isinstance(nbytes, str):  # a symbolic size: its expression
        return f"{nbytes} bytes"
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 1e5 else f"{nbytes} bytes"


def _output_files(
    opts: argparse.Namespace, outputs: list[dict], files: dict[str, Source]
) -> list[str | None]:
    """Where ``--output-dir`` saves each output (None: nowhere), once none is
    the library, the params, an input's file or another output's."""
    saved = [
        os.path.join(opts.output_dir, _safe_name(t["name"]) + ".npy")
        if opts.output_dir
        else None
        for t in outputs
    ]
    check_distinct_files(
        [
            ("the library", opts.library),
            ("--params", opts.params),
            *((f"input {name!r}", path) for name, (path, _) in files.items()),
        ],
        [
            *(
                (f"output {t['name']!r}", p)
                for t, p in zip(outputs, saved, strict=True)
            ),
            ("--trace", opts.trace),
        ],
    )
    return saved


def run(opts: argparse.Namespace) -> None:
    if opts.repeat < 0:
        raise UsageError(f"--repeat must be >= 0, got {opts.repeat}")
    if opts.trace and not opts.profile:
        raise UsageError("--trace needs --profile")
    if opts.profile and not opts.repeat:
        raise UsageError("--profile needs --repeat of at least 1")
    if not os.path.exists(opts.library):
        raise FileNotFoundError(f"no such file: {opts.library}")
    if opts.output_dir:  # before the work, not after it
        os.makedirs(opts.output_dir, exist_ok=True)
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
    files = _parse_inputs(opts.input + opts.inputs, names)
    saved = _output_files(opts, model["outputs"], files)
    if opts.params is not None:
        try:
            with open(opts.params, "rb") as f:
                data = f.read()
        except OSError as e:
            raise OSError(f"cannot read --params {opts.params}: {e.strerror}") from None
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
            value = _load(files[name])
            path, key = files[name]
            origin = path if key is None else f"{path}[{key!r}]"
        elif not all(isinstance(d, int) for d in shape):
            raise EmberError(
                f"input {name!r} has the symbolic shape ({', '.join(map(str, shape))}): "
                f"give its values (--input {name}=FILE.npy), whose shape binds "
                "the symbols"
            )
        else:
            value = _random_input(shape, dtype, rng)
            origin = f"random (seed {opts.seed})"
        module.set_input(name, value)
        print(f"input {name!r}: {dtype} {shape} from {origin}")

    module.run()
    for i, tensor in enumerate(model["outputs"]):
        value = module.get_output(i).numpy()
        print(f"output {i} {tensor['name']!r}: {value.dtype} {value.shape}")
        print(_summary(value, opts.show))
        if (path := saved[i]) is not None:
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
    if opts.profile:
        profile = module.profile(repeat=opts.repeat)
        print(f"profile ({opts.repeat} run(s) kernel by kernel):")
        print(profile.table())
        if opts.trace:
            profile.save_trace(opts.trace)
            print(f"trace written to {opts.trace} (open it in ui.perfetto.dev)")


def main(argv: list[str] | None = None, prog: str = "ember-run") -> int:
    """Run ember-run; returns the exit status (see `ember.tools.common`)."""
    from ember.tools.common import tool_main

    return tool_main(prog, _parser(prog).parse_args(argv), run, (TypeError,))


if __name__ == "__main__":
    sys.exit(main())
