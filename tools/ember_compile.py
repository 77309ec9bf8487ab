"""`ember-compile`: compile an ONNX model ahead of time into one library.

    ember-compile model.onnx -o model.so [--target "llvm -mcpu=native"]
                  [--input-shape data:1,3,224,224] [--opt-level 3]
                  [--params-separate model.params] [--tuning-records records.jsonl]
    ember-compile model.onnx -o model.so --input-shapes "data:[1,3,224,224] mask:[1,8]"

The library holds `default_run` (the whole model), every kernel, the model's
description and, unless `--params-separate` is given, its params; run it with
`ember-run model.so` or `GraphModule(load_module("model.so")["default"](dev))`.
Progress goes to stderr through logging (importing, kernels compiled k/n with
cache hits, linking; `-q` hides it); the last line says what was written. The
output paths are checked before any work: each must be writable, and none
may be the model, the tuning log or the other output.

Exit status (as every ember tool, see `ember.tools.common`): 0 on success, 1
when the model cannot be read or compiled or an output cannot be written (one
message, no traceback), 2 for bad command-line arguments, 3 for a bug.
"""

import argparse
import logging
import os
import re
import shlex
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ember.tools.common import (
    UsageError,
    add_common_arguments,
    check_distinct_files,
)

log = logging.getLogger("ember.tools.compile")


def add_model_arguments(parser: argparse.ArgumentParser, output: str) -> None:
    """The arguments of a tool that compiles an ONNX model: the file, `-o`
    (described by `output`), `--target`, the input shapes in ember's and
    tvmc's spellings (`parse_shapes`) and `--opt-level`."""
    parser.add_argument("model", help="the ONNX model file")
    parser.add_argument("-o", "--output", required=True, help=output)
    parser.add_argument(
        "--target", default="llvm", help='the target (default "llvm": this machine)'
    )
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:D0,D1,...",
        help="the shape of an input with symbolic dimensions (repeatable); "
        "NAME:1,3,224,224, NAME:1x3x224x224 or NAME:[1,3,224,224]",
    )
    parser.add_argument(
        "--input-shapes",
        action="append",
        default=[],
        metavar='"NAME:[D0,...] NAME:[...]"',
        help="tvmc's spelling: several shapes in one argument, space-separated",
    )
    parser.add_argument(
        "--opt-level", type=int, default=3, help="graph optimization level 0-3"
    )


def add_precision_argument(parser: argparse.ArgumentParser) -> None:
    """--precision, as `compile_model`'s `precision`."""
    parser.add_argument(
        "--precision",
        choices=("float32", "bf16", "auto"),
        default="float32",
        help="the products' precision: bf16 multiplies bfloat16 roundings of "
        "the operands of convolutions and dense layers, summed in float32, on "
        "a CPU with a bfloat16 dot product (x86 avx512bf16, aarch64 bf16); "
        "auto does so per layer where its error on a calibration example "
        "stays under 1.6%%",
    )


def _parser(prog: str = "ember-compile") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Compile an ONNX model into an ember model library.",
    )
    add_model_arguments(parser, "the library to write (.so or .tar)")
    add_bounds_argument(parser)
    parser.add_argument(
        "--tuning-records",
        metavar="FILE",
        help="apply the best schedules of this tuning log (ember-tune); by "
        "default those under ember's cache directory apply",
    )
    add_precision_argument(parser)
    parser.add_argument(
        "--calibration",
        metavar="FILE.npz",
        help="with --precision auto: the inputs by name (numpy's savez) each "
        "layer's error is measured on; by default synthetic ones",
    )
    parser.add_argument(
        "--params-separate",
        metavar="FILE",
        help="write the params to FILE (save_param_dict) instead of the library",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="keep each kernel's ONNX nodes and tensors in the library, for "
        "`ember debug --library` and the profile's node names",
    )
    add_common_arguments(parser, prog)
    return parser


def _calibration(path: str | None) -> dict | None:
    """The inputs by name in `--calibration`'s file (arrays), or None."""
    if path is None:
        return None
    import numpy as np

    try:
        with np.load(path) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError) as e:
        raise UsageError(f"--calibration: cannot read {path}: {e}") from None


_SHAPE_USAGE = (
    "expected NAME:D0,D1,..., NAME:D0xD1x... or NAME:[D0,D1,...] with positive extents"
)


def parse_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    """Input shapes as ember and tvmc spell them: `["data:1,3,224,224"]`,
    `["data:1x3x224x224"]` and `["data:[1,3,224,224] mask:[1,8]"]` (several in
    one string, tvmc's `--input-shapes`) give `{"data": (1, 3, 224, 224), ...}`.

    Raises:
        UsageError: a spec without a name or with non-positive extents.
    """
    shapes = {}
    for spec in specs:
        # spaces inside brackets and after the colon belong to one mapping
        tight = re.sub(r"\[[^\]]*\]", lambda m: re.sub(r"\s+", "", m[0]), spec)
        tight = re.sub(r":\s+\[", ":[", tight)
        for mapping in tight.split() or [spec]:
            name, sep, dims = mapping.rpartition(":")
            bracketed = dims.startswith("[") and dims.endswith("]")
            text = dims[1:-1] if bracketed else dims
            parts = (
                text.split("x") if "x" in text and not bracketed else text.split(",")
            )
            try:
                shape = tuple(int(d) for d in parts)
            except ValueError:
                shape = ()
            if not sep or not name or not shape or min(shape) < 1:
                raise UsageError(f"--input-shape: {_SHAPE_USAGE}, got {mapping!r}")
            if name in shapes:
                raise UsageError(f"--input-shape: {name!r} is given twice")
            shapes[name] = shape
    return shapes


def shapes_flag(shapes: Mapping[str, tuple[int, ...] | None]) -> str:
    """`shapes` as the flag that gives them, as a shell reads it back into
    `parse_shapes`: `--input-shapes img:1,3,224,224`; None (a rank the model
    does not say) is `NAME:D0,D1,...`."""
    specs = [
        f"{name}:{'D0,D1,...' if dims is None else ','.join(map(str, dims))}"
        for name, dims in shapes.items()
    ]
    return f"--input-shapes {shlex.quote(' '.join(specs))}"


@contextmanager
def shapes_as_flags() -> Iterator[None]:
    """A model input whose shape is left open is asked for in this tool's
    spelling (`--input-shapes ...`), not the Python API's (`shape={...}`)."""
    from ember.frontends.onnx import InputShapeError

    try:
        yield
    except InputShapeError as e:
        raise e.hint(shapes_flag(e.shapes)) from None


def _mib(nbytes: int | str) -> str:
    """A size for the log: MiB, or a symbolic size's expression in bytes."""
    return f"{nbytes / 2**20:.1f} MiB" if isinstance(nbytes, int) else f"{nbytes} bytes"


def add_bounds_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bounds",
        action="append",
        default=[],
        metavar="NAME=N,...",
        help="upper bounds of the model's size symbols (repeatable), e.g. "
        "seq=512: the library plans its workspace and schedules for them and "
        "refuses larger inputs; without, it runs any size",
    )


def parse_bounds(specs: list[str]) -> dict[str, int]:
    """`--bounds seq=512,batch=8` (repeatable) as `{"seq": 512, "batch": 8}`.

    Raises:
        UsageError: a spec that is not NAME=N with N a positive int.
    """
    bounds: dict[str, int] = {}
    for spec in specs:
        for item in filter(None, re.split(r"[,\s]+", spec)):
            name, sep, value = item.partition("=")
            if not sep or not name or not value.isdigit() or int(value) < 1:
                raise UsageError(
                    f"--bounds: expected NAME=N with N a positive int, got {item!r}"
                )
            bounds[name] = int(value)
    return bounds


def check_writable(path: Path, option: str) -> None:
    """Fail now, not after the compilation, when `path` cannot be written.

    Raises:
        FileNotFoundError: its directory does not exist.
        PermissionError: its directory cannot be written, or `path` can't.
        IsADirectoryError: `path` is a directory.
    """
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"{option} {path}: no such directory: {parent}")
    if path.is_dir():
        raise IsADirectoryError(f"{option} {path}: is a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (
        path.exists() and not os.access(path, os.W_OK)
    ):
        raise PermissionError(f"{option} {path}: permission denied")


class _Progress:
    """Kernel progress: one stderr line rewritten on a terminal, else a log
    record every ten kernels; nothing below INFO."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.hits = 0

    def __call__(self, stage: str, done: int, total: int, detail: str) -> None:
        self.hits += detail.endswith("(cached)")
        if not log.isEnabledFor(logging.INFO):
            return
        line = f"kernels {done}/{total} ({self.hits} cached) {detail}"
        if self.tty:
            print(f"\r\033[K{line}", end="" if done < total else "\n", file=sys.stderr)
            sys.stderr.flush()
        elif done == total or done % 10 == 0:
            log.info(line)


def run(opts: argparse.Namespace) -> None:
    output = Path(opts.output)
    if output.suffix not in (".so", ".tar"):
        raise UsageError(f"-o: expected a .so or .tar file, got {opts.output!r}")
    if not 0 <= opts.opt_level <= 3:
        raise UsageError(f"--opt-level: expected 0..3, got {opts.opt_level}")
    shapes = parse_shapes(opts.input_shape + opts.input_shapes)
    if not Path(opts.model).is_file():
        raise FileNotFoundError(f"no such model file: {opts.model}")
    check_distinct_files(
        [("the model", opts.model), ("--tuning-records", opts.tuning_records)],
        [("-o", output), ("--params-separate", opts.params_separate)],
    )
    check_writable(output, "-o")
    if opts.params_separate is not None:
        check_writable(Path(opts.params_separate), "--params-separate")
    if opts.tuning_records is not None and not Path(opts.tuning_records).is_file():
        raise FileNotFoundError(
            f"--tuning-records: no such file: {opts.tuning_records}"
        )
    calibration = _calibration(opts.calibration)
    start = time.perf_counter()
    log.debug(
        "target %r, opt-level %d, input shapes %s",
        opts.target,
        opts.opt_level,
        shapes or "from the model",
    )
    log.info("importing %s", opts.model)
    import ember
    from ember.runtime import save_param_dict

    with shapes_as_flags():
        mod = ember.compile_model(
            opts.model,
            target=opts.target,
            shape=shapes or None,
            bounds=parse_bounds(opts.bounds) or None,
            opt_level=opts.opt_level,
            embed_params=opts.params_separate is None,
            progress=_Progress(),
            tuning_records=opts.tuning_records,
            debug=opts.debug,
            precision=opts.precision,
            calibration=calibration,
        )
    log.info("linking %s", output)
    mod.export_library(str(output))
    if opts.params_separate is not None:
        Path(opts.params_separate).write_bytes(save_param_dict(mod.params))
    stats = mod.compile_stats
    where = f", params in {opts.params_separate}" if opts.params_separate else ""
    log.info(
        f"wrote {output} ({stats.calls} kernel calls, {stats.kernels} kernels, "
        f"{stats.cache_hits} from cache, {stats.tuned} tuned, workspace "
        f"{_mib(stats.workspace_bytes)}, params {stats.params_bytes / 2**20:.1f} MiB{where}) in "
        f"{time.perf_counter() - start:.1f} s"
    )


def main(argv: list[str] | None = None, prog: str = "ember-compile") -> int:
    """Run ember-compile; returns the exit status (see `ember.tools.common`)."""
    from ember.tools.common import tool_main

    return tool_main(prog, _parser(prog).parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
