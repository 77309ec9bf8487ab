"""`Kernel`: what an operator builder in `ember.topi` returns.

A kernel is one te function for one graph op (or one fusion group anchored on it):
its output tensor, the placeholders it takes in call order, the numpy transforms
that turn graph-layout params into the layouts its placeholders expect (applied
once, at compile time), and its default schedule.

    k = topi.conv2d(x, (64, 64, 3, 3), strides=(1, 1), padding=(1, 1, 1, 1),
                    bias=True, epilogue=lambda v, idx: te.max(v, 0.0))
    s = k.schedule()                       # the default CPU schedule
    mod = ember.build(s, k.args, name="conv")
    w_packed = k.transform("conv.weight", w_oihw)
    mod(x_np, w_packed, k.transform("conv.bias", b), y)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ember import te
from ember.backends.llvm.target import Target
from ember.runtime.errors import EmberValueError
from ember.te.schedule import Schedule

# epilogue(value, indices) -> expr: applied to every output element of an anchor op;
# `indices` are the op's logical output indices in the graph layout ((n, c, h, w)
# for conv2d, (m, n) for dense).
Epilogue = Callable[[te.Expr, tuple[te.Expr, ...]], te.Expr]


@dataclass
class Kernel:
    """One compiled unit of the operator library.

    Attributes:
        output: the tensor the kernel writes, in the graph's layout.
        placeholders: the kernel's inputs in call order: data inputs, then each
            weight placeholder (packed layouts), then the epilogue's inputs.
        weight_transforms: for each placeholder whose layout differs from the
            graph param's, by placeholder name, a numpy function from the param
            (graph layout, e.g. OIHW) to the placeholder's layout. Placeholders not
            listed take the param as it is.
        schedule_fn: applies the default schedule to a schedule of `output`.
        attrs: free-form facts about the choice made (layout, tile sizes), for
            tests, benchmarks and logs.
        knobs: the schedule's tunable choices, when its template has any
            (`Knobs`): `schedule(config=...)` applies another point of the
            space; the computation, and so the workload, stays the same.
        variants: schedules of the same computation for a size class of a
            symbolic kernel, each `Variant(size, equals, schedule_fn)`: the
            call runs it where `size` (an expression over the symbols) is
            `equals` at run time (a GEMM of one row as a GEMV), the default
            schedule otherwise. Results never depend on which runs.
    """

    output: te.Tensor
    placeholders: list[te.Tensor]
    weight_transforms: dict[str, Callable[[np.ndarray], np.ndarray]] = field(
        default_factory=dict
    )
    schedule_fn: Callable[[Schedule], None] | None = None
    attrs: dict = field(default_factory=dict)
    knobs: Knobs | None = None
    variants: list[Variant] = field(default_factory=list)

    @property
    def args(self) -> list[te.Tensor]:
        """The arguments of the built function: placeholders, then the output."""
        return [*self.placeholders, self.output]

    def schedule(
        self, s: Schedule | None = None, config: dict | None = None
    ) -> Schedule:
        """Apply the default schedule to `s` (a new schedule of `output` when
        None), or the knobs' schedule at `config` (knobs it leaves out keep
        their defaults).

        Returns:
            The schedule.
        """
        if s is None:
            s = te.create_schedule(self.output.op)
        if config is not None:
            if self.knobs is None:
                raise EmberValueError(
                    f"kernel '{self.output.name}' has no knobs; got config {config}"
                )
            self.knobs.apply(s, config)
        elif self.schedule_fn is not None:
            self.schedule_fn(s)
        return s

    def wrap_schedule(self, before: Callable[[Schedule], None]) -> None:
        """Run `before(s)` ahead of the schedule, the default and every knob
        config alike (a stage the template's caller added)."""
        default = self.schedule_fn
        self.schedule_fn = before if default is None else _before(before, default)
        self.variants = [
            Variant(v.size, v.equals, _before(before, v.schedule_fn))
            for v in self.variants
        ]
        if self.knobs is not None:
            knobs = self.knobs
            self.knobs = Knobs(
                knobs.space,
                knobs.default,
                lambda s, config: (before(s), knobs.fn(s, config)) and None,
            )

    def transform(self, name: str, value: np.ndarray) -> np.ndarray:
        """The param `value` in the layout placeholder `name` expects."""
        if not any(p.name == name for p in self.placeholders):
            raise KeyError(
                f"kernel '{self.output.name}' has no placeholder '{name}'; "
                f"it has {', '.join(p.name for p in self.placeholders)}"
            )
        fn = self.weight_transforms.get(name)
        out = value if fn is None else fn(value)
        dtype = next(p.dtype for p in self.placeholders if p.name == name)
        return np.ascontiguousarray(out, dtype=dtype)


@dataclass(frozen=True)
class Variant:
    """A schedule of a kernel's computation for the run-time size class
    `size == equals` (see `Kernel.variants`)."""

    size: Any
    equals: int
    schedule_fn: Callable[[Schedule], None]

    def schedule(self, kernel: Kernel) -> Schedule:
        s = te.create_schedule(kernel.output.op)
        self.schedule_fn(s)
        return s


def _before(
    before: Callable[[Schedule], None], fn: Callable[[Schedule], None]
) -> Callable[[Schedule], None]:
    def scheduled(s: Schedule) -> None:
        before(s)
        fn(s)

    return scheduled


@dataclass(frozen=True)
class Knobs:
    """A template's tunable schedule: each knob's legal values, from the
    target's facts, and the schedule as a function of a config (AutoTVM's
    knobs, but every point is applied as schedule IR, so a tuned choice is
    saved, replayed and checked like a written schedule).

    Attributes:
        space: knob name -> its choices (JSON values: ints, bools, lists).
        default: the config the template picks without tuning; in `space`.
        fn: `fn(s, config)` schedules `s` at `config`.
    """

    space: dict[str, tuple]
    default: dict
    fn: Callable[[Schedule, dict], None]

    def apply(self, s: Schedule, config: dict) -> None:
        unknown = sorted(set(config) - set(self.space))
        if unknown:
            raise EmberValueError(
                f"unknown knob(s) {', '.join(unknown)}; the knobs are "
                f"{', '.join(sorted(self.space))}"
            )
        full = {**self.default, **_tuples(config)}
        for name, value in full.items():
            if value not in self.space[name]:
                raise EmberValueError(
                    f"knob '{name}': expected one of {list(self.space[name])}, "
                    f"got {value!r}"
                )
        self.fn(s, full)

    def size(self) -> int:
        """How many configs the space holds."""
        n = 1
        for choices in self.space.values():
            n *= len(choices)
        return n


def _tuples(config: dict) -> dict:
    """`config` with its lists as tuples (a config read back from JSON)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}


def epilogue_inputs(epilogue_tensors: Sequence[te.Tensor] | None) -> list[te.Tensor]:
    """The epilogue's extra input tensors as a list (None is no inputs)."""
    return list(epilogue_tensors or ())


def apply_epilogue(
    epilogue: Epilogue | None, value: te.Expr, indices: tuple[te.Expr, ...]
) -> te.Expr:
    """`epilogue(value, indices)`, or `value` when there is no epilogue."""
    return value if epilogue is None else epilogue(value, indices)


def accumulator_registers(target: Target) -> int:
    """Vector registers a register tile may fill with accumulators: three
    quarters of them (AVX-512: 24 of 32 zmm; AVX2, SSE2: 12 of 16), the rest
    holding the operands each step loads and broadcasts."""
    return target.vector_registers * 3 // 4
