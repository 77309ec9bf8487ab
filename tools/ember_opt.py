"""`ember-opt`: xDSL's opt driver with ember's dialects, passes, targets, stages
and mlir-opt's instrumentation and diagnostics (see docs/ember_opt.md).

    ember-opt kernel.mlir -p ember-cpu -t llvm
    ember-opt kernel.mlir --emit=asm -t "llvm -mtriple=aarch64-linux-gnu"
    ember-opt model.mlir --emit=graph -t dot | dot -Tsvg > model.svg
    ember-opt kernel.mlir -t "cuda -arch=sm_90"        # te/loop IR as CUDA C
    ember-opt kernel.mlir -p ember-cpu --print-ir-after=loop-vectorize --time-passes
    ember-opt kernel.mlir --pass-pipeline='builtin.module(convert-te-to-loop,cse)'
    ember-opt --list-passes

Bad input (a parse or verification error, an unknown pass, a failing pass) prints
`file:line:col: error: message` with the offending line on stderr and exits with
status 1; a bad option is status 2, an internal error status 3 (as every ember
tool: `ember.tools.common`); `--show-traceback` (or EMBER_TRACEBACK=1) shows the
Python traceback of an internal error.
"""

import argparse
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO, StringIO
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from ember.passes.api import add_plugin_argument, parse_pipeline
from ember.runtime import EmberError
from ember.runtime.errors import EmberValueError
from ember.tools.common import (
    INPUT_ERROR,
    INTERNAL_ERROR,
    OK,
    USAGE_ERROR,
    UsageError,
    add_verbosity_arguments,
    check_distinct_files,
    internal_error,
    log_level,
    setup_logging,
    version,
)
from ember.tools.opt_diagnostics import (
    EmberDiagnostic,
    LocatingParser,
    ParsedChunk,
    check_expectations,
    check_no_elided,
    expectations,
    from_parse_error,
    from_pass_error,
    from_verify_error,
)
from ember.tools.opt_instrument import Instrumentation, Timer, print_module
from ember.tools.opt_passes import list_passes, strip_module_anchor
from ember.tools.opt_stages import STAGES

TARGETS = ("mlir", "llvm", "dot")
"""The `-t` formats that print ember IR, besides each source kind's
(`source_kinds`). xDSL's others (x86-asm, wgsl, csl, ...) expect their own
dialects: on ember IR they crash or print nothing."""


def source_kinds() -> tuple[str, ...]:
    """The target kinds whose `-t` prints source: every backend's but llvm's."""
    from ember.backends import kinds

    return tuple(k for k in kinds() if k != "llvm")


@dataclass(frozen=True)
class LLVMIRTarget(Target):
    """Prints the llvm-dialect module as LLVM IR text (`-t llvm`), verified and
    printed by LLVM itself."""

    name = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ember.backends.llvm import translate
        from ember.backends.llvm.codegen import parse
        from ember.tools.opt_stages import kernel_listing

        print(str(parse(translate(module))).rstrip(), file=output)
        print(kernel_listing(module), end="", file=output)


@dataclass(frozen=True)
class SourceTarget(Target):
    """Prints te or loop IR as C-family source (`-t c`, `-t opencl`, `-t cuda`,
    with TVM options: `-t "cuda -arch=sm_90"`): te IR is lowered to loops
    first; opencl and cuda print the kernels the GPU build launches, c the
    functions' C bodies (`ember_<name>_impl`)."""

    name = "cuda"
    device: ClassVar[str] = "cuda"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ember.backends.source import DeviceTarget
        from ember.tools.opt_stages import device_source

        print(device_source(module, DeviceTarget(self.device)).rstrip(), file=output)


class EmberOptMain(xDSLOptMain):
    version_format = version("ember-opt") + " (xdsl {xdsl_version})"
    codegen_target: str = "llvm"
    """The LLVM target (TVM form) for --emit=llvm-ir/asm/obj and graph lowering."""
    device_target: str = ""
    """The `-t c|opencl|cuda ...` target string, options included."""

    def register_all_dialects(self) -> None:
        from ember.dialects import register_all_dialects

        register_all_dialects(self.ctx)

    def register_all_passes(self) -> None:
        from ember.passes import get_all_passes

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        from ember.tools.opt_dot import DotTarget

        super().register_all_targets()
        ours: dict[str, Callable[[], type[Target]]] = {
            "llvm": lambda: LLVMIRTarget,
            "dot": lambda: DotTarget,
        }
        for kind in source_kinds():
            ours[kind] = self._source_factory(kind)
        self.available_targets = {
            t: ours.get(t) or self.available_targets[t]
            for t in (*TARGETS, *source_kinds())
        }

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        add_plugin_argument(arg_parser)  # loaded by main() before parsing; for --help
        arg_parser.prog = "ember-opt"
        # -v is --verbose in every ember tool; xDSL gives it to --version
        version_action = arg_parser._option_string_actions.pop("-v")
        version_action.option_strings = ["--version"]
        add_verbosity_arguments(arg_parser)
        _append_pass_list_to_help(arg_parser, self.available_passes)
        for action in arg_parser._actions:
            if "--passes" in action.option_strings:
                action.help = (
                    "a comma-separated pass pipeline, `p1,p2{opt=1}` (--list-passes "
                    "lists the passes; MLIR's builtin.module(...) is accepted too)"
                )
            if "--target" in action.option_strings:
                # `-t "llvm -mtriple=..."`: output LLVM code for that target
                action.type = self._split_target
                action.help = (
                    f"{action.help}; an LLVM target string (`llvm -mtriple=... "
                    "-mcpu=...`) picks the machine for llvm-ir, asm and obj"
                )
        arg_parser.add_argument(
            "--emit",
            choices=STAGES,
            help="run the input down to this stage and print it (see --list-pipelines)",
        )
        arg_parser.add_argument(
            "--opt-level",
            type=int,
            default=2,
            help="graph pass level for --emit on graph input (default 2)",
        )
        arg_parser.add_argument(
            "--precision",
            choices=("float32", "bf16", "auto"),
            default="float32",
            help="the products' precision for --emit on graph input "
            "(convert-graph-to-te{precision})",
        )
        arg_parser.add_argument("--mcpu", help="the CPU LLVM compiles for")
        arg_parser.add_argument(
            "--input-shapes",
            action="append",
            default=[],
            metavar='"NAME:[D0,...] NAME:D0,D1"',
            help="ONNX input: shapes for inputs with symbolic dims (ember-compile's "
            "spelling); dims not given stay symbolic in the graph IR",
        )
        arg_parser.add_argument(
            "--list-pipelines",
            action="store_true",
            help="list the named pipelines and --emit stages, then exit",
        )
        arg_parser.add_argument(
            "--list-passes",
            action="store_true",
            help="list the passes with their summaries, ember's then xDSL's, then exit",
        )
        arg_parser.add_argument(
            "--pass-pipeline",
            metavar="'builtin.module(P1,P2{OPT=V})'",
            help="the pass pipeline in MLIR's form (instead of -p)",
        )
        arg_parser.add_argument("--print-ir-after-all", action="store_true")
        arg_parser.add_argument("--print-ir-before-all", action="store_true")
        arg_parser.add_argument(
            "--print-ir-after",
            default="",
            metavar="PASS[,PASS]",
            help="print the IR to stderr after these passes",
        )
        arg_parser.add_argument(
            "--print-ir-before",
            default="",
            metavar="PASS[,PASS]",
            help="print the IR to stderr before these passes",
        )
        arg_parser.add_argument(
            "--mlir-elide-elementsattrs-if-larger",
            type=int,
            metavar="N",
            help="print dense constants of more than N elements as "
            "dense_resource<__elided__> (not parseable back)",
        )
        arg_parser.add_argument(
            "--show-traceback",
            action="store_true",
            help="show the Python traceback of an internal error",
        )

    def _split_target(self, value: str) -> str:
        name, _, options = value.strip().partition(" ")
        if options and name == "llvm":
            self.codegen_target = value.strip()
        if name in source_kinds():
            self.device_target = value.strip()
            return name
        return name if options and name == "llvm" else value

    def _source_factory(self, kind: str) -> Callable[[], type[Target]]:
        # called at output time (xDSL takes a factory with no parameters), when
        # `-t`'s options are known
        def factory() -> type[Target]:
            spec = self.device_target or kind
            attrs = {"name": kind, "device": spec}
            return type(f"{kind.capitalize()}SourceTarget", (SourceTarget,), attrs)

        return factory

    def setup_pipeline(self) -> None:
        args = self.args
        setup_logging("ember-opt", log_level(args.verbose, args.quiet))
        if args.pass_pipeline is not None:
            if args.passes:
                raise UsageError("give -p or --pass-pipeline, not both")
            args.passes = args.pass_pipeline
        try:
            args.passes = strip_module_anchor(args.passes)
        except ValueError as e:
            raise UsageError(str(e)) from None
        if args.mcpu:
            self.codegen_target = f"{self.codegen_target} -mcpu={args.mcpu}"
        self.args.passes = expand_pipelines(args.passes, self._model_kind())
        self.instr = Instrumentation(
            print_before=_names(args.print_ir_before),
            print_after=_names(args.print_ir_after),
            print_before_all=args.print_ir_before_all,
            print_after_all=args.print_ir_after_all,
            elide_above=args.mlir_elide_elementsattrs_if_larger,
            verify=not args.disable_verify,
            timer=Timer() if args.time_passes else None,
        )
        inner = self.instr.callback()

        def callback(
            prev: ModulePass | None, module: ModuleOp, next_: ModulePass | None
        ) -> None:
            inner(prev, module, next_)
            if args.print_between_passes:  # xDSL's flag, kept: IR on stdout
                if prev is not None and next_ is not None:
                    print(f"IR after {prev.name}:")
                    print_module(
                        module, sys.stdout, args.mlir_elide_elementsattrs_if_larger
                    )
                    print("\n\n")

        self.callback = callback
        # ember's parser: an unknown pass names the closest ones, a bad option
        # names the option and the type it expects.
        self.pipeline = parse_pipeline(
            self.args.passes, self.available_passes, callback
        )

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["mlir"] = self._parse_mlir
        # binary: read whole by `_run_onnx`, never as text chunks
        self.available_frontends["onnx"] = self._parse_mlir

    def _parse_mlir(self, io: IO[bytes]) -> ModuleOp:
        from ember.tools.opt_lexer_guard import check_string_literals

        text = io.read().decode(errors="replace")
        check_string_literals(text, self.get_input_name())
        parser = LocatingParser(self.ctx, text, self.get_input_name())
        module = parser.parse_module(not self.args.no_implicit_module)
        self._op_offsets = parser.op_offsets
        if "ember.target" not in module.attributes:
            self._set_target(module)
        return module

    def _model_kind(self) -> str:
        """The kind a graph model compiles for: `-t`'s where its backend
        compiles models (a GPU kind), else llvm."""
        from ember.backends import backend
        from ember.backends.source import target_kind

        if not self.device_target:
            return "llvm"  # without loading LLVM: most runs print IR
        kind = target_kind(self.device_target)
        return kind if backend(kind).models else "llvm"

    def _set_target(self, module: ModuleOp) -> None:
        """`-t "llvm -mcpu=..."` picks the machine schedules are for; `-t
        opencl` (a kind that compiles models) the device a graph model is for."""
        from ember.tools.opt_stages import input_level

        if self._model_kind() != "llvm" and input_level(module) == "graph":
            module.attributes["ember.target"] = StringAttr(self.device_target)
        elif self.codegen_target != "llvm":
            module.attributes["ember.target"] = StringAttr(self.codegen_target)

    # ------------------------------------------------------------ the driver

    def run(self) -> None:  # type: ignore[override]
        """Parse, verify, run the passes and the --emit stages, print; one
        diagnostic per failing chunk (every chunk is tried)."""
        if self.args.list_pipelines:
            print(list_pipelines())
            return
        if self.args.list_passes:
            print(list_passes(self.available_passes), end="")
            return
        self._check_emit_args()
        # -o opens its file before the input is read: the same file is emptied
        check_distinct_files(
            [("the input", self.args.input_file)], [("-o", self.args.output_file)]
        )
        chunks, file_extension = self.prepare_input()
        if file_extension == "onnx":
            data = chunks[0][0].read()
            for chunk, _ in chunks:
                chunk.close()
            self._run_onnx(data)
            return
        failures = 0
        binary: list[bytes] = []
        stream = None if self.args.emit == "obj" else self.prepare_output()
        try:
            for i, (chunk, offset) in enumerate(chunks):
                text = chunk.read().decode(errors="replace")
                chunk.close()
                if i > 0 and stream is not None:
                    stream.write("// -----\n")
                parsed = ParsedChunk(self.get_input_name(), text, offset, {})
                outputs: list[str | bytes] = []
                failures += self._run_chunk(parsed, file_extension, outputs)
                start = time.perf_counter()
                for o in outputs:
                    if isinstance(o, bytes):
                        binary.append(o)
                    elif stream is not None:
                        stream.write(o)
                if stream is not None:
                    stream.flush()
                if self.instr.timer is not None:
                    self.instr.timer.add("output", time.perf_counter() - start)
        finally:
            if stream is not None and stream is not sys.stdout:
                stream.close()
        if binary:
            self._write_binary(b"".join(binary))
        if self.instr.timer is not None:
            print(self.instr.timer.report(), file=sys.stderr)
        if failures:
            raise SystemExit(1)

    def _run_onnx(self, data: bytes) -> None:
        """An ONNX model: imported to graph IR with its params bound, so the
        passes fold and pack weights as `compile_model` does and `-t dot`
        draws the graph that is compiled."""
        import onnx

        from ember.frontends.onnx import from_onnx
        from ember.passes.bound_params import bind_params

        try:
            model = onnx.load_from_string(data)
        except Exception as e:  # protobuf's DecodeError, among others
            raise EmberValueError(
                f"{self.get_input_name()}: not an ONNX model ({type(e).__name__}: {e})"
            ) from None
        from ember.tools.ember_compile import parse_shapes, shapes_as_flags

        shapes = parse_shapes(self.args.input_shapes)
        # open dims stay symbols: the graph IR shows them, and the pipeline
        # says where it needs them fixed; an input without any shape is asked
        # for in this tool's spelling
        with shapes_as_flags():
            module, params = from_onnx(model, shape=shapes or None, symbolic=True)
        self._set_target(module)
        with bind_params(params):
            self.instr.current = None
            self.apply_passes(module)
            outputs = self._emit(module)
        binary = [o for o in outputs if isinstance(o, bytes)]
        if binary:
            self._write_binary(b"".join(binary))
            return
        stream = self.prepare_output()
        try:
            for o in outputs:
                stream.write(o)  # type: ignore[arg-type]
        finally:
            if stream is not sys.stdout:
                stream.close()

    def _run_chunk(
        self, chunk: ParsedChunk, file_extension: str, outputs: list[str | bytes]
    ) -> int:
        args = self.args
        expected = expectations(chunk) if args.verify_diagnostics else []
        module: ModuleOp | None = None
        self._op_offsets = {}
        try:
            timer = self.instr.timer or Timer()
            with timer.time("parse"):
                check_no_elided(chunk)
                module = self._parse_text(chunk.text, file_extension)
            chunk.op_offsets = self._op_offsets
            if not args.disable_verify:
                with timer.time("verify"):
                    module.verify()
            self.instr.current = None
            self.apply_passes(module)
            outputs.extend(self._emit(module))
            diagnostic = None
        except ParseError as e:
            e.span = _with_offset(e, chunk.line_offset)
            if args.parsing_diagnostics and not expected:
                print(e)  # xDSL's form, which the dialect tests check
                return 0
            diagnostic = from_parse_error(e, chunk)
        except DiagnosticException as e:
            if args.verify_diagnostics and not expected:
                print(e)  # xDSL's form: the message and the annotated IR
                for note in getattr(e, "__notes__", ()):
                    print(note)
                return 0
            diagnostic = self._diagnostic_of(e, module, chunk)
        except EmberDiagnostic as e:
            diagnostic = e
        if args.verify_diagnostics and expected:
            problems = check_expectations(expected, diagnostic, chunk.name)
            for p in problems:
                print(p, file=sys.stderr)
            return 1 if problems else 0
        if diagnostic is not None:
            print(diagnostic.render(chunk.name), file=sys.stderr)
            return 1
        return 0

    def _parse_text(self, text: str, file_extension: str) -> ModuleOp:
        lines = text.splitlines()
        if all(not ln.strip() or ln.lstrip().startswith("//") for ln in lines):
            return ModuleOp([])  # an empty input is an empty module, as in mlir-opt
        module = self.available_frontends[file_extension](BytesIO(text.encode()))
        assert module is not None
        return module

    def _diagnostic_of(
        self, e: DiagnosticException, module: ModuleOp | None, chunk: ParsedChunk
    ) -> EmberDiagnostic:
        running = self.instr.current
        if isinstance(e, VerifyException) and module is not None:
            d = from_verify_error(e, module, chunk)
            if running:
                d.message += f" (after pass '{running}')"
            return d
        return from_pass_error(e, running, chunk)

    # ------------------------------------------------------------ stages

    def _check_emit_args(self) -> None:
        emit = self.args.emit
        if emit == "obj" and self.args.output_file is None and sys.stdout.isatty():
            raise EmberValueError(
                "--emit=obj writes object code: give -o FILE or redirect stdout"
            )

    def _emit(self, module: ModuleOp) -> list[str | bytes]:
        """The printed result of one chunk: the module, or its --emit stage."""
        from ember.tools import opt_stages as st

        stage = self.args.emit
        timer = self.instr.timer or Timer()
        if stage is None:
            with timer.time("output"):
                return [self._print(module)]
        level = st.input_level(module)
        st.check_stage(stage, level)
        run = st.make_pipeline(self.available_passes, self.callback, self.ctx)
        if level == "graph":
            return self._emit_graph(module, stage, run, timer)
        run(",".join(st.stage_passes(stage, level)), module)
        if stage in st.TEXT_MODULE_STAGES:
            return [self._print(module)]
        with timer.time(f"codegen ({stage})"):
            return [st.codegen(module, stage, self.codegen_target)]

    def _emit_graph(
        self, module: ModuleOp, stage: str, run, timer: Timer
    ) -> list[str | bytes]:
        from ember.passes.pass_context import PassContext
        from ember.passes.pipelines import model_passes
        from ember.tools import opt_stages as st

        text_stage = stage if stage in st.TEXT_MODULE_STAGES else "llvm"
        ctx = PassContext(opt_level=self.args.opt_level)
        kind = self._model_kind()
        passes = model_passes(
            ctx, until=text_stage, kind=kind, precision=self.args.precision
        )
        run(",".join(passes), module)
        if stage == text_stage:
            return [self._print(module)]
        with timer.time(f"codegen ({stage})"):
            return [st.codegen(module, stage, self.codegen_target)]

    def _print(self, module: ModuleOp) -> str:
        elide = self.args.mlir_elide_elementsattrs_if_larger
        if elide is not None and self.args.target == "mlir":
            out = StringIO()
            print_module(module, out, elide, self.args.print_op_generic)
            return out.getvalue()
        return self.output_resulting_program(module)

    def _write_binary(self, data: bytes) -> None:
        if self.args.output_file:
            with open(self.args.output_file, "wb") as f:
                f.write(data)
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()


def _as_text(o: str | bytes) -> str:
    return o if isinstance(o, str) else o.decode(errors="replace")


def _ends_with_newline(s: str) -> str:
    return s if s.endswith("\n") else s + "\n"


def _with_offset(e: ParseError, line_offset: int):
    import dataclasses

    return dataclasses.replace(e.span, line_offset=line_offset)


def _names(spec: str) -> set[str]:
    return {n.strip() for n in spec.split(",") if n.strip()}


def expand_pipelines(spec: str, kind: str = "llvm") -> str:
    """`ember-cpu`, `ember-graph{opt-level=N}` and `ember-model{opt-level=N}` in
    a pass list, replaced by their passes (`ember-model`'s for target kind
    `kind`) so that per-pass flags (`--print-ir-after-all`, `--time-passes`)
    see every stage."""
    from ember.passes.pass_context import PassContext
    from ember.passes.pipelines import EMBER_CPU, graph_pipeline, model_passes

    spec = re.sub(r"(?<![\w-])ember-cpu(?![\w{-])", ",".join(EMBER_CPU), spec)

    def level(m: re.Match[str]) -> PassContext:
        return PassContext(opt_level=int(m.group(1)) if m.group(1) is not None else 2)

    def named(name: str, passes: Callable[[PassContext], tuple[str, ...]]) -> None:
        nonlocal spec
        spec = re.sub(
            rf"(?<![\w-]){name}(?:\{{\s*opt-level\s*=\s*(\d+)\s*\}})?(?![\w{{-])",
            lambda m: ",".join(passes(level(m))),
            spec,
        )

    named("ember-graph", graph_pipeline)
    named("ember-model", lambda ctx: model_passes(ctx, kind=kind))
    return ",".join(p for p in re.split(r",(?![^{]*\})", spec) if p.strip())


def _append_pass_list_to_help(
    parser: argparse.ArgumentParser, available: dict[str, Callable]
) -> None:
    """`--help` ends with the passes and their summaries, computed only when
    help is printed (it imports every pass)."""
    format_help = parser.format_help

    def with_passes() -> str:
        return f"{format_help()}\n{list_passes(available)}"

    parser.format_help = with_passes


def list_pipelines() -> str:
    """The named pipelines with their passes, and the --emit stages."""
    from ember.passes.pipelines import named_pipelines

    lines = ["Named pipelines (-p NAME):"]
    for name, (summary, passes) in named_pipelines().items():
        lines.append(f"  {name}")
        lines.append(f"      {summary}")
        lines.append(f"      = {','.join(passes) or '(no pass)'}")
    lines.append("")
    lines.append("Stages (--emit=STAGE), in order: " + ", ".join(STAGES))
    lines.append(
        "  te/loop input: te, loop (convert-te-to-loop...), llvm (ember-cpu), "
        "llvm-ir, asm, obj"
    )
    lines.append(
        "  graph input: the segments of ember-model{opt-level=N}: graph, te "
        "(kernels + graph.call_kernel), loop (kernels + default_run), llvm, "
        "llvm-ir, asm, obj"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run ember-opt; returns the process exit status."""
    raw = sys.argv[1:] if argv is None else argv
    show_tb = "--show-traceback" in raw or bool(os.environ.get("EMBER_TRACEBACK"))
    try:
        from ember.passes.api import load_plugins_from_argv

        argv = load_plugins_from_argv(argv)  # --load-pass-plugin, before passes list
        EmberOptMain(description="ember's modular optimizer driver", args=argv).run()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else INPUT_ERROR
    except UsageError as e:
        print(f"ember-opt: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except EmberDiagnostic as e:
        print(e.render(), file=sys.stderr)
        return INPUT_ERROR
    except (DiagnosticException, ParseError) as e:
        print(f"ember-opt: error: {str(e).strip()}", file=sys.stderr)
        return INPUT_ERROR
    except ArgSpecParseError as e:  # a BaseException in xDSL: catch it by name
        print(f"ember-opt: error: {e}", file=sys.stderr)
        return INPUT_ERROR
    except (ValueError, LookupError, NotImplementedError, OSError, EmberError) as e:
        if show_tb:
            raise
        print(f"ember-opt: error: {e}", file=sys.stderr)
        return INPUT_ERROR
    except KeyboardInterrupt:
        print("ember-opt: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug in ember or xDSL, reported as one line
        if show_tb:
            raise
        upstream = _upstream_pass(e)
        if upstream is not None:  # xDSL's pass refusing this input its own way
            print(
                f"ember-opt: error: xDSL's pass ({upstream}) failed on this input: "
                f"{type(e).__name__}{f': {e}' if str(e) else ''}",
                file=sys.stderr,
            )
            return INPUT_ERROR
        print(internal_error("ember-opt", e), file=sys.stderr)
        return INTERNAL_ERROR
    return OK


def _upstream_pass(e: BaseException) -> str | None:
    """Where in xDSL's transforms `e` was raised (`file.py:line`), if it was:
    the upstream passes ember-opt offers assert what they expect of their
    input and options (apply-eqsat-pdl of a missing file), which is not a
    bug of ember's."""
    frames = traceback.extract_tb(e.__traceback__)
    if frames and "/xdsl/transforms/" in frames[-1].filename.replace(os.sep, "/"):
        return f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}"
    return None


if __name__ == "__main__":
    sys.exit(main())
