"""What every ember command-line tool shares: exit statuses, `--version`,
verbosity (`-v`, `-q`, `EMBER_LOG_LEVEL`) and one-line errors.

Exit status, the same in every tool:

    0    success
    1    an input error: a model, library, IR or data file that is missing,
         unreadable, invalid or cannot be compiled or run (the message says why)
    2    a usage error: a bad option or option value (argparse's status too)
    3    an internal error: a bug in ember, one line; `--show-traceback` or
         EMBER_TRACEBACK=1 shows the Python traceback
    130  interrupted (Ctrl-C)

Progress and information go to stderr through `logging` (the `ember` logger):
INFO by default, `-q` warnings only, `-qq` errors only, `-v` debug too;
EMBER_LOG_LEVEL (a level name or number) sets the default. Results go to stdout.

Imports only the standard library and `ember.runtime`, so `ember-run` stays
free of the compiler.
"""

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

OK = 0
INPUT_ERROR = 1
USAGE_ERROR = 2
INTERNAL_ERROR = 3
INTERRUPTED = 130


class UsageError(Exception):
    """A bad command-line argument: exit status 2."""


def version(prog: str) -> str:
    """What `prog --version` prints: the tool and ember's version."""
    from ember import __version__

    return (
        f"ember {__version__}" if prog == "ember" else f"{prog} (ember) {__version__}"
    )


def add_common_arguments(parser: argparse.ArgumentParser, prog: str) -> None:
    """`--version`, `-v/--verbose`, `-q/--quiet` and `--show-traceback`."""
    parser.add_argument("--version", action="version", version=version(prog))
    add_verbosity_arguments(parser)
    parser.add_argument(
        "--show-traceback",
        action="store_true",
        help="show the Python traceback of an internal error (or EMBER_TRACEBACK=1)",
    )


def add_verbosity_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more messages on stderr (debug); default from EMBER_LOG_LEVEL",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        help="fewer messages on stderr: -q warnings only, -qq errors only",
    )


def log_level(verbose: int = 0, quiet: int = 0) -> int:
    """The level the flags ask for, else EMBER_LOG_LEVEL's, else INFO.

    Raises:
        UsageError: EMBER_LOG_LEVEL names no level.
    """
    if verbose or quiet:
        return max(logging.DEBUG, logging.INFO + 10 * (quiet - verbose))
    env = os.environ.get("EMBER_LOG_LEVEL", "").strip()
    if not env:
        return logging.INFO
    if env.isdigit():
        return int(env)
    level = logging.getLevelNamesMapping().get(env.upper())
    if level is None:
        raise UsageError(
            f"EMBER_LOG_LEVEL: expected DEBUG, INFO, WARNING, ERROR or a number, "
            f"got {env!r}"
        )
    return level


class _Formatter(logging.Formatter):
    def __init__(self, prog: str):
        super().__init__()
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.levelno >= logging.WARNING:
            return f"{self.prog}: {record.levelname.lower()}: {message}"
        return message


class _StderrHandler(logging.StreamHandler):
    """Writes to `sys.stderr` as it is at each record (a test captures it)."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


_HANDLER: logging.Handler | None = None


def setup_logging(prog: str, level: int) -> None:
    """Send the `ember` logger's records of `level` and above to stderr,
    replacing an earlier call's handler."""
    global _HANDLER
    logger = logging.getLogger("ember")
    if _HANDLER is not None:
        logger.removeHandler(_HANDLER)
    _HANDLER = _StderrHandler()
    _HANDLER.setFormatter(_Formatter(prog))
    logger.addHandler(_HANDLER)
    logger.setLevel(level)
    logger.propagate = False


Named = tuple[str, str | os.PathLike[str] | None]
"""A file of a command line: how the message names it (`-o`, "the model"),
and its path (None: not given)."""


def check_distinct_files(inputs: Sequence[Named], outputs: Sequence[Named]) -> None:
    """Refuse, before anything is written, an output that is the same file as
    an input or as another output: `ember-compile m.onnx -o m.so
    --params-separate m.onnx` would overwrite its own model. The same file:
    the same path once symlinks, `.` and `..` are resolved, or one file by
    `os.path.samefile` (a hard link) where both exist.

    Raises:
        UsageError: naming both files, e.g. "--params-separate m.onnx: the
            same file as the model m.onnx; name another file".
    """
    seen = [(what, path) for what, path in inputs if path is not None]
    for what, path in outputs:
        if path is None:
            continue
        for other, earlier in seen:
            if _same_file(path, earlier):
                raise UsageError(
                    f"{what} {os.fspath(path)}: the same file as {other} "
                    f"{os.fspath(earlier)}; name another file"
                )
        seen.append((what, path))


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def show_traceback(opts: argparse.Namespace | None = None) -> bool:
    return bool(getattr(opts, "show_traceback", False)) or bool(
        os.environ.get("EMBER_TRACEBACK")
    )


def run_tool(
    prog: str,
    body: Callable[[], None],
    input_errors: tuple[type[BaseException], ...],
    traceback: bool = False,
) -> int:
    """Run a tool's work and turn what it raises into a message and an exit
    status: UsageError 2, `input_errors` 1, anything else 3 (re-raised when
    `traceback`)."""
    try:
        body()
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except input_errors as e:
        if traceback:
            raise
        print(f"{prog}: error: {e}", file=sys.stderr)
        return INPUT_ERROR
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as e:
        if traceback:
            raise
        print(internal_error(prog, e), file=sys.stderr)
        return INTERNAL_ERROR
    return OK


def tool_main(
    prog: str,
    opts: argparse.Namespace,
    run: Callable[[argparse.Namespace], None],
    input_errors: tuple[type[BaseException], ...] = (),
) -> int:
    """A tool's `main` once its arguments are parsed: logging at the level
    `-v`/`-q` ask for, then `run(opts)` under `run_tool`, where ember's errors,
    OSError, ValueError and `input_errors` are the input's fault (status 1)."""
    from ember.runtime import EmberError

    def body() -> None:
        setup_logging(prog, log_level(opts.verbose, opts.quiet))
        run(opts)

    errors = (EmberError, OSError, ValueError, *input_errors)
    return run_tool(prog, body, errors, show_traceback(opts))


def internal_error(prog: str, e: BaseException) -> str:
    return (
        f"{prog}: internal error: {type(e).__name__}: {e} "
        "(--show-traceback or EMBER_TRACEBACK=1 shows the traceback)"
    )
