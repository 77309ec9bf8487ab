"""`ember`: one command for every tool, in the way of TVM's `tvmc`.

    ember compile model.onnx -o model.so       # = ember-compile
    ember tune model.onnx -o records.jsonl     # = ember-tune
    ember run model.so --inputs inputs.npz     # = ember-run
    ember debug model.onnx --inputs x.npz      # the first kernel that differs
    ember generate llm-folder --prompt-ids 1,2 # tokens from a causal LM
    ember opt kernel.mlir -p ember-cpu         # = ember-opt
    ember rpc-server --port 9090               # = ember-rpc-server
    ember build-runtime -o out/                # the C runtime and RPC server
    ember cache info | clear                   # the compile cache on disk
    ember --version
    python -m ember ...                        # the same

Each command takes the options of its tool (`ember compile --help`) and exits
with its status: 0 ok, 1 input error, 2 usage error, 3 internal error
(`ember.tools.common`).
"""

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from ember.tools.common import (
    UsageError,
    add_common_arguments,
    log_level,
    run_tool,
    setup_logging,
    show_traceback,
    version,
)

COMMANDS: dict[str, tuple[str, str]] = {
    "compile": ("ember.tools.ember_compile", "compile an ONNX model into a library"),
    "tune": ("ember.tools.ember_tune", "tune a model's kernels for this machine"),
    "run": ("ember.tools.ember_run", "run a compiled model library and time it"),
    "debug": (
        "ember.tools.ember_debug",
        "find the first kernel whose result differs from onnxruntime's",
    ),
    "generate": (
        "ember.tools.ember_generate",
        "generate tokens with a causal LM folder or engine library",
    ),
    "opt": ("ember.tools.ember_opt", "run passes over IR and print any stage"),
    "rpc-server": ("ember.runtime.rpc.server", "serve RPC sessions on a device"),
    "build-runtime": (
        "ember.tools.build_runtime",
        "compile the C runtime and its RPC server for a device",
    ),
    "cache": ("ember.tools.cli", "show or clear the compile cache on disk"),
}
"""Command name -> (the module whose `main(argv)` runs it, its summary)."""

log = logging.getLogger("ember.tools.cache")


def _parser() -> argparse.ArgumentParser:
    width = max(map(len, COMMANDS)) + 2
    listing = "\n".join(f"  {n:<{width}}{s}" for n, (_, s) in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="ember",
        usage="ember [-h] [--version] COMMAND [ARGS ...]",
        description="ember, a deep-learning compiler: one command for its tools.",
        epilog=f"commands:\n{listing}\n\n`ember COMMAND --help` tells more.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version("ember"))
    parser.add_argument(
        "command", choices=COMMANDS, metavar="COMMAND", help="one of those below"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `ember COMMAND ...`; returns the command's exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        opts = _parser().parse_args(args[:1])
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    if opts.command == "cache":
        return cache_main(args[1:])
    tool: Callable[[list[str]], int] = import_module(COMMANDS[opts.command][0]).main
    return tool(args[1:])


def _cache_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember cache",
        description="The compile cache on disk: compiled kernels keyed by their "
        "structure and target ($EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else "
        "~/.cache/ember; EMBER_CACHE=off keeps it in memory).",
    )
    parser.add_argument(
        "action",
        choices=("info", "clear"),
        help="info: where it is and what it holds; clear: remove every kernel",
    )
    parser.add_argument(
        "--dir", metavar="DIR", help="the cache directory (default: as above)"
    )
    add_common_arguments(parser, "ember cache")
    return parser


def cache_main(argv: Sequence[str] | None = None) -> int:
    """Run `ember cache info|clear`; returns the exit status."""
    opts = _cache_parser().parse_args(argv)

    def body() -> None:
        from pathlib import Path

        from ember.backends import kernel_cache as compile_cache

        setup_logging("ember cache", log_level(opts.verbose, opts.quiet))
        directory = Path(opts.dir) if opts.dir else compile_cache.default_directory()
        if directory is None:
            print("the disk cache is off (EMBER_CACHE): kernels stay in memory")
            return
        if directory.exists() and not directory.is_dir():
            raise UsageError(f"--dir {directory}: not a directory")
        if opts.action == "clear":
            removed = compile_cache.clear(directory)
            print(f"removed {removed} kernel(s) from {directory}")
            return
        info = compile_cache.cache_info(directory)
        print(f"directory: {info.directory}")
        print(f"kernels: {info.entries} ({info.size / 2**20:.1f} MiB)")
        if info.temporaries:
            log.warning(
                "%d temporary file(s) left by writers that stopped mid-write "
                "(`ember cache clear` removes them)",
                info.temporaries,
            )

    return run_tool("ember cache", body, (OSError, ValueError), show_traceback(opts))


if __name__ == "__main__":
    sys.exit(main())
