"""`ember-compile`: compile an ONNX model ahead of time into one library.

    ember-compile model.onnx -o model.so [--target "llvm -mcpu=native"]
                  [--input-shape name:1,3,224,224] [--opt-level 3]
                  [--params-separate model.params]

The library holds `default_run` (the whole model), every kernel, the model's
description and, unless `--params-separate` is given, its params; run it with
`ember-run model.so` or `GraphModule(load_module("model.so")["default"](dev))`.
Progress goes to stderr (importing, kernels compiled k/n with cache hits,
linking); the last line says what was written.

Exit status: 0 on success, 1 when the model cannot be compiled (an unsupported
operator, a file that is not ONNX: one message, no traceback), 2 for bad
command-line arguments.
"""

import argparse
import sys
import time
from pathlib import Path


class UsageError(Exception):
    """A bad command-line argument: exit status 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember-compile",
        description="Compile an ONNX model into an ember model library.",
    )
    parser.add_argument("model", help="the ONNX model file")
    parser.add_argument(
        "-o", "--output", required=True, help="the library to write (.so or .tar)"
    )
    parser.add_argument(
        "--target", default="llvm", help='the target (default "llvm": this machine)'
    )
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:D0,D1,...",
        help="the shape of an input with symbolic dimensions (repeatable)",
    )
    parser.add_argument(
        "--opt-level", type=int, default=3, help="graph optimization level 0-3"
    )
    parser.add_argument(
        "--params-separate",
        metavar="FILE",
        help="write the params to FILE (save_param_dict) instead of the library",
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="no progress on stderr"
    )
    return parser


def parse_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    """`["data:1,3,224,224"]` -> `{"data": (1, 3, 224, 224)}`.

    Raises:
        UsageError: a spec without a name or with non-positive extents.
    """
    shapes = {}
    for spec in specs:
        name, sep, dims = spec.rpartition(":")
        try:
            shape = tuple(int(d) for d in dims.split(","))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or min(shape) < 1:
            raise UsageError(
                f"--input-shape: expected NAME:D0,D1,... with positive extents, "
                f"got {spec!r}"
            )
        shapes[name] = shape
    return shapes


class _Progress:
    """Kernel progress on one stderr line (rewritten on a terminal)."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.hits = 0

    def __call__(self, stage: str, done: int, total: int, detail: str) -> None:
        if self.quiet:
            return
        self.hits += detail.endswith("(cached)")
        line = f"kernels {done}/{total} ({self.hits} cached) {detail}"
        if self.tty:
            print(f"\r\033[K{line}", end="" if done < total else "\n", file=sys.stderr)
        elif done == total or done % 10 == 0:
            print(line, file=sys.stderr)
        sys.stderr.flush()

    def say(self, message: str) -> None:
        if not self.quiet:
            print(message, file=sys.stderr, flush=True)


def run(opts: argparse.Namespace) -> None:
    output = Path(opts.output)
    if output.suffix not in (".so", ".tar"):
        raise UsageError(f"-o: expected a .so or .tar file, got {opts.output!r}")
    if not 0 <= opts.opt_level <= 3:
        raise UsageError(f"--opt-level: expected 0..3, got {opts.opt_level}")
    shapes = parse_shapes(opts.input_shape)
    if not Path(opts.model).is_file():
        raise FileNotFoundError(f"no such model file: {opts.model}")
    report = _Progress(opts.quiet)
    start = time.perf_counter()
    report.say(f"importing {opts.model}")
    import ember
    from ember.runtime import save_param_dict

    mod = ember.compile_model(
        opts.model,
        target=opts.target,
        shape=shapes or None,
        opt_level=opts.opt_level,
        embed_params=opts.params_separate is None,
        progress=report,
    )
    report.say(f"linking {output}")
    mod.export_library(str(output))
    if opts.params_separate is not None:
        Path(opts.params_separate).write_bytes(save_param_dict(mod.params))
    stats = mod.compile_stats
    where = f", params in {opts.params_separate}" if opts.params_separate else ""
    report.say(
        f"wrote {output} ({stats.calls} kernel calls, {stats.kernels} kernels, "
        f"{stats.cache_hits} from cache, workspace {stats.workspace_bytes / 2**20:.1f} "
        f"MiB, params {stats.params_bytes / 2**20:.1f} MiB{where}) in "
        f"{time.perf_counter() - start:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    from ember.runtime import EmberError

    opts = _parser().parse_args(argv)
    try:
        run(opts)
    except UsageError as e:
        print(f"ember-compile: error: {e}", file=sys.stderr)
        return 2
    except (EmberError, OSError, ValueError) as e:
        print(f"ember-compile: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ember-compile: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
