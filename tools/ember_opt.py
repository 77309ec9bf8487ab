"""`ember-opt`: xDSL's opt driver with ember's dialects, passes and targets.

    ember-opt kernel.mlir -p ember-cpu -t llvm

Bad input (a parse or verification error, an unknown pass, a failing pass) prints one
diagnostic on stderr and exits with status 1; set EMBER_TRACEBACK=1 to see the Python
traceback of an internal error.
"""

import os
import re
import sys
from dataclasses import dataclass
from io import BytesIO
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain


@dataclass(frozen=True)
class LLVMIRTarget(Target):
    """Prints the llvm-dialect module as LLVM IR text (`-t llvm`), verified and
    printed by LLVM itself."""

    name = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ember.backends.llvm import translate
        from ember.backends.llvm.codegen import parse

        print(str(parse(translate(module))).rstrip(), file=output)


class EmberOptMain(xDSLOptMain):
    version_format = "ember-opt on xdsl {xdsl_version}"

    def register_all_dialects(self) -> None:
        from ember.dialects import register_all_dialects

        register_all_dialects(self.ctx)

    def register_all_passes(self) -> None:
        from ember.passes import get_all_passes

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def setup_pipeline(self) -> None:
        self.args.passes = expand_pipelines(self.args.passes)
        super().setup_pipeline()

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        text = chunk.read()
        lines = text.decode(errors="replace").splitlines()
        if all(not ln.strip() or ln.lstrip().startswith("//") for ln in lines):
            return ModuleOp([])  # an empty input is an empty module, as in mlir-opt
        return super().parse_chunk(BytesIO(text), file_extension, start_offset)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets["llvm"] = lambda: LLVMIRTarget


def expand_pipelines(spec: str) -> str:
    """`ember-cpu` in a pass list, replaced by its passes so that per-pass flags
    (`--print-between-passes`, `--time-passes`) see every stage."""
    from ember.passes.pipelines import EMBER_CPU

    return re.sub(r"(?<![\w-])ember-cpu(?![\w{-])", ",".join(EMBER_CPU), spec)


def _diagnostic(e: Exception) -> str:
    """The error's message and, for a verifier error, the lines of IR around the
    op it marks (xDSL attaches the whole module, annotated, as a note)."""
    text = str(e).rstrip()
    for note in getattr(e, "__notes__", ()):
        lines = note.splitlines()
        marks = [i for i, line in enumerate(lines) if "^^^" in line]
        if marks:
            first, last = max(0, marks[0] - 4), min(len(lines), marks[-1] + 2)
            text += "\n" + "\n".join(lines[first:last])
    return text


def main(argv: list[str] | None = None) -> int:
    """Run ember-opt; returns the process exit status."""
    try:
        from ember.passes.api import load_plugins_from_argv

        argv = load_plugins_from_argv(argv)  # --load-pass-plugin, before passes list
        EmberOptMain(description="ember's modular optimizer driver", args=argv).run()
    except (DiagnosticException, ParseError) as e:
        print(_diagnostic(e), file=sys.stderr)
        return 1
    except ArgSpecParseError as e:  # a BaseException in xDSL: catch it by name
        print(f"ember-opt: error: {e}", file=sys.stderr)
        return 1
    except (ValueError, LookupError, NotImplementedError, OSError) as e:
        if os.environ.get("EMBER_TRACEBACK"):
            raise
        print(f"ember-opt: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug in ember or xDSL, reported as one line
        if os.environ.get("EMBER_TRACEBACK"):
            raise
        print(
            f"ember-opt: internal error: {type(e).__name__}: {e} "
            "(set EMBER_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
