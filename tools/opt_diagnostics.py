"""ember-opt's diagnostics: `file:line:col: error: message`, the offending line and
a caret, as mlir-opt prints them, for parse errors, verifier errors and pass
failures; MLIR's `expected-error` annotations for `--verify-diagnostics`.

    kernel.mlir:10:8: error: 'te.compute' op expected 1 index block arguments, got 2
      %B = te.compute "B" (%i, %j) -> tensor<4xf32> {
           ^

xDSL's parser keeps no location on the ops it builds, so `LocatingParser`
records where each op began; a verifier error is placed by re-verifying the ops
one by one to find the one that fails.
"""

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError

ELIDED = "dense_resource<__elided__>"
"""What `--mlir-elide-elementsattrs-if-larger` prints in place of the data."""


@dataclass(frozen=True)
class SourceLoc:
    """A position in an input: 1-based line and column, and the line's text."""

    file: str
    line: int
    col: int
    text: str

    def render(self, message: str, kind: str = "error") -> str:
        caret = " " * (self.col - 1) + "^"
        return f"{self.file}:{self.line}:{self.col}: {kind}: {message}\n{self.text}\n{caret}"


def loc_of_offset(
    name: str, source: str, offset: int, line_offset: int = 0
) -> SourceLoc:
    """The `SourceLoc` of character `offset` of `source`."""
    offset = max(0, min(offset, len(source)))
    start = source.rfind("\n", 0, offset) + 1
    end = source.find("\n", offset)
    text = source[start : end if end >= 0 else len(source)]
    line = source.count("\n", 0, start) + 1 + line_offset
    return SourceLoc(name, line, offset - start + 1, text)


class LocatingParser(Parser):
    """xDSL's parser, remembering the character offset where each op began."""

    def __init__(self, ctx: Context, text: str, name: str):
        super().__init__(ctx, text, name)
        self.op_offsets: dict[Operation, int] = {}

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        self.op_offsets[op] = start
        return op


@dataclass
class ParsedChunk:
    """One input chunk: its text, where it starts in the file, its op offsets."""

    name: str
    text: str
    line_offset: int
    op_offsets: dict[Operation, int]

    def loc_of(self, op: Operation | None) -> SourceLoc | None:
        """Where `op` (or its nearest parsed ancestor) was written, if known."""
        while op is not None:
            if op in self.op_offsets:
                return loc_of_offset(
                    self.name, self.text, self.op_offsets[op], self.line_offset
                )
            op = op.parent_op()
        return None


def check_no_elided(chunk: ParsedChunk) -> None:
    """Refuse IR printed with elided constants: its data is gone."""
    at = chunk.text.find(ELIDED)
    if at >= 0:
        loc = loc_of_offset(chunk.name, chunk.text, at, chunk.line_offset)
        raise EmberDiagnostic(
            f"{ELIDED} has no data: this IR was printed with "
            "--mlir-elide-elementsattrs-if-larger; print it again without the flag",
            loc,
        )


class EmberDiagnostic(Exception):
    """An error with a source location, printed as mlir-opt prints one."""

    def __init__(self, message: str, loc: SourceLoc | None = None, note: str = ""):
        super().__init__(message)
        self.message, self.loc, self.note = message, loc, note

    def render(self, fallback_file: str = "ember-opt") -> str:
        if self.loc is None:
            text = f"{fallback_file}: error: {self.message}"
        else:
            text = self.loc.render(self.message)
        return text + (f"\n{self.note}" if self.note else "")


def from_parse_error(e: ParseError, chunk: ParsedChunk) -> EmberDiagnostic:
    span = e.span
    content = span.input.content
    text = content.decode(errors="replace") if isinstance(content, bytes) else content
    return EmberDiagnostic(
        e.msg, loc_of_offset(chunk.name, text, span.start, chunk.line_offset)
    )


def failing_op(module: ModuleOp) -> Operation | None:
    """The first op (in walk order) whose own verification fails."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception:
            return op
    return None


def from_verify_error(
    e: Exception, module: ModuleOp, chunk: ParsedChunk
) -> EmberDiagnostic:
    """A verifier error placed at the op that fails, or at its parsed ancestor."""
    op = failing_op(module)
    message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if op is not None and not message.startswith("'"):
        message = f"'{op.name}' op {message}"
    return EmberDiagnostic(message, chunk.loc_of(op))


def from_pass_error(
    e: DiagnosticException, pass_name: str | None, chunk: ParsedChunk
) -> EmberDiagnostic:
    """A pass failure: the pass's message, the pass named."""
    message = str(e).strip() or type(e).__name__
    if pass_name:
        message = f"{message} (in pass '{pass_name}')"
    return EmberDiagnostic(message)


# ------------------------------------------------------- expected-error checks

_EXPECTED = re.compile(
    r"//\s*expected-(error|warning|note)\s*(@[+-]?\d+|@above|@below)?\s*\{\{(.*?)\}\}"
)


@dataclass(frozen=True)
class Expectation:
    line: int
    message: str


def expectations(chunk: ParsedChunk) -> list[Expectation]:
    """The chunk's `// expected-error@+N {{message}}` annotations (lines of the
    whole file)."""
    found: list[Expectation] = []
    for i, line in enumerate(chunk.text.split("\n")):
        for m in _EXPECTED.finditer(line):
            if m.group(1) != "error":
                continue
            where = m.group(2) or "@+0"
            delta = {"@above": -1, "@below": 1}.get(where)
            if delta is None:
                delta = int(where[1:])
            found.append(Expectation(i + 1 + chunk.line_offset + delta, m.group(3)))
    return found


def check_expectations(
    expected: list[Expectation], got: EmberDiagnostic | None, name: str
) -> list[str]:
    """Mismatches between the annotations and the error produced (empty: all met)."""
    problems: list[str] = []
    matched = False
    for exp in expected:
        ok = (
            got is not None
            and got.loc is not None
            and got.loc.line == exp.line
            and exp.message in got.message
        )
        if ok and not matched:
            matched = True
        else:
            problems.append(
                f"{name}:{exp.line}: error: expected error "
                f'"{exp.message}" was not produced'
            )
    if got is not None and not matched:
        problems.append("unexpected error: " + got.render(name))
    return problems
