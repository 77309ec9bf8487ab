"""`ember debug`: which kernel, graph op and ONNX node a wrong result comes from.

    ember debug model.onnx [--inputs x.npz] [--library model.so] [--rtol R --atol A]

Runs the compiled model kernel by kernel (compiled now, or the `--library`
built by `ember-compile --debug`) and compares each kernel's result with
onnxruntime's value of the ONNX tensor it computes (`ember.debug.compare`):
prints one line per kernel call (ok, differs, not compared and why), then the
first kernel that differs, its graph ops, ONNX nodes, tensor and error.

Exit status: 0 when every compared result matches, 1 when one differs (or the
model, inputs or library are refused), 2 for bad arguments, 3 for a bug.
"""

import argparse
import sys

from ember.tools.common import UsageError, add_common_arguments


def _parser(prog: str = "ember debug") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Find the first kernel whose result differs from onnxruntime's.",
    )
    parser.add_argument("model", help="the ONNX model file")
    parser.add_argument(
        "--inputs",
        metavar="FILE.npz",
        help="inputs from the arrays of an .npz named as them (others random)",
    )
    parser.add_argument(
        "--library",
        metavar="FILE",
        help="a library built from the model with `ember-compile --debug` "
        "(default: compile the model now)",
    )
    parser.add_argument(
        "--rtol", type=float, default=1e-4, help="relative tolerance (1e-4)"
    )
    parser.add_argument(
        "--atol", type=float, default=1e-5, help="absolute tolerance (1e-5)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the random inputs (default 0)"
    )
    add_common_arguments(parser, prog)
    return parser


class _Differs(Exception):
    """A kernel's result differs: exit status 1 after the report."""


def run(opts: argparse.Namespace) -> None:
    from pathlib import Path

    from ember.debug import compare, load_inputs

    if opts.rtol < 0 or opts.atol < 0:
        raise UsageError("--rtol and --atol must be >= 0")
    for what, path in (
        ("model", opts.model),
        ("--inputs", opts.inputs),
        ("--library", opts.library),
    ):
        if path is not None and not Path(path).is_file():
            raise FileNotFoundError(f"{what}: no such file: {path}")
    inputs = load_inputs(opts.inputs) if opts.inputs else None
    report = compare(
        opts.model,
        inputs,
        library=opts.library,
        rtol=opts.rtol,
        atol=opts.atol,
        seed=opts.seed,
    )
    print(report)
    if report.first is not None:
        raise _Differs(report.verdict())


def main(argv: list[str] | None = None, prog: str = "ember debug") -> int:
    """Run `ember debug`; returns the exit status."""
    from ember.tools.common import tool_main

    return tool_main(prog, _parser(prog).parse_args(argv), run, (_Differs,))


if __name__ == "__main__":
    sys.exit(main())
