"""ember-opt's pass instrumentation, as mlir-opt's: IR dumps before and after
passes and a timing report, both on stderr so that stdout stays the IR.

    // -----// IR Dump After convert-te-to-loop //----- //
    builtin.module { ... }

    ===-------------------------------------------------------------------------===
                             ... Execution time report ...
    ===-------------------------------------------------------------------------===
      Total Execution Time: 0.0123 seconds

      ----Wall Time----  ----Name----
        0.0021 ( 17.1%)  parse
        ...
        0.0123 (100.0%)  Total
"""

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import prod
from typing import IO

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.printer import Printer

from ember.tools.opt_diagnostics import ELIDED


@dataclass(eq=False, repr=False)
class ElidingPrinter(Printer):
    """xDSL's printer, printing `dense<...>` data of more than `elide_above`
    elements as `dense_resource<__elided__>` (MLIR's
    `--mlir-elide-elementsattrs-if-larger`); ember-opt refuses such IR as input."""

    elide_above: int | None = None

    def print_attribute(self, attribute: Attribute) -> None:
        if (
            self.elide_above is not None
            and isinstance(attribute, DenseIntOrFPElementsAttr)
            and prod(attribute.get_shape()) > self.elide_above
        ):
            self.print_string(f"{ELIDED} : ")
            self.print_attribute(attribute.type)
            return
        super().print_attribute(attribute)


def print_module(
    module: ModuleOp,
    stream: IO[str],
    elide_above: int | None = None,
    generic: bool = False,
) -> None:
    printer = ElidingPrinter(
        stream=stream, elide_above=elide_above, print_generic_format=generic
    )
    printer.print_op(module)
    stream.write("\n")


@dataclass
class Timer:
    """Wall time per named step, in first-seen order, summed over chunks."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def time(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def report(self) -> str:
        total = sum(self.seconds.values())
        bar = "===" + "-" * 73 + "==="
        lines = [
            bar,
            "... Execution time report ...".center(len(bar)).rstrip(),
            bar,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for name, s in [*self.seconds.items(), ("Total", total)]:
            pct = 100.0 * s / total if total > 0 else 0.0
            lines.append(f"  {s:10.4f} ({pct:5.1f}%)  {name}")
        return "\n".join(lines)


@dataclass
class Instrumentation:
    """What to print around passes, and the timer passes report to."""

    print_before: set[str] = field(default_factory=set)
    print_after: set[str] = field(default_factory=set)
    print_before_all: bool = False
    print_after_all: bool = False
    elide_above: int | None = None
    verify: bool = True
    timer: Timer | None = None
    stream: IO[str] = field(default_factory=lambda: sys.stderr)
    current: str | None = None
    """The pass running now, for diagnostics."""
    _started: float = 0.0

    def dump(self, when: str, p: ModulePass, module: ModuleOp) -> None:
        self.stream.write(f"// -----// IR Dump {when} {p.name} //----- //\n")
        print_module(module, self.stream, self.elide_above)
        self.stream.write("\n")
        self.stream.flush()

    def callback(
        self,
    ) -> Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]:
        """The callback `PassPipeline` calls between passes."""

        def between(
            prev: ModulePass | None, module: ModuleOp, next_: ModulePass | None
        ) -> None:
            now = time.perf_counter()
            if prev is not None:
                if self.verify:
                    module.verify()
                if self.timer is not None:
                    self.timer.add(prev.name, time.perf_counter() - self._started)
                if self.print_after_all or prev.name in self.print_after:
                    self.dump("After", prev, module)
            elif self.verify:
                module.verify()
            if next_ is not None:
                if self.print_before_all or next_.name in self.print_before:
                    self.dump("Before", next_, module)
                self.current = next_.name
                now = time.perf_counter()
            else:
                self.current = None
            self._started = now

        return between
