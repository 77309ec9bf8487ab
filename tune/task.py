"""A tuning task: one te function without a schedule, what its stages look like,
and how a schedule written as IR text is put back on it.

    task = Task.from_tensors([A, B, C], target="llvm")
    task.workload          # sha256 of the unscheduled te IR (function `@kernel`)
    task.with_schedule('te.schedule { te.parallel "C" "i" }')   # te IR text

A kernel over size symbols (`te.var`, a dynamic model's kernels) is tuned at
representative sizes, `task.sizes`: by default the ones its schedule was
planned for (the symbol's bound, else `PLANNING_SIZE`), so that a model
compiled later, which plans at the same sizes, finds the record. The sizes
are part of the workload: a schedule measured at seq 128 is not taken as the
best at seq 384. The one library still runs at every size.

The task is read from te IR, not from Python tensors, so a function from
`convert-graph-to-te` or from text is tuned the same way as one from `ember.te`.
Stages are described by what the search-space rules need: their axes and
extents, the reduction axes, the tensors each reads and by which axes, their
readers, and whether they are outputs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    IndexType,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from ember.dialects import te as te_ir
from ember.dialects.graph_shapes import dims_of
from ember.dialects.te_schedule import ScheduleOp
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import SymExpr, evaluate

KERNEL = "kernel"
"""The name a task's function carries, so the workload hash is its structure."""


@dataclass
class Read:
    """A `te.read` of `tensor`; `axes[d]` is the set of the stage's axes (by
    name) that index dimension `d` depends on."""

    tensor: str
    axes: list[frozenset[str]]


@dataclass
class StageInfo:
    """A `te.compute` as the search-space rules see it."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    axes: list[str]
    reduce_axes: list[str]
    reduce_extents: tuple[int, ...]
    reads: list[Read] = field(default_factory=list)
    readers: list[str] = field(default_factory=list)
    output: bool = False
    read_by_extern: bool = False

    @property
    def is_reduction(self) -> bool:
        return bool(self.reduce_axes)

    def has_reuse(self) -> bool:
        """Some read leaves out a data axis: each element it reads is used by
        several outputs (matmul's A[i, k] for every j), so tiling pays."""
        for read in self.reads:
            used = frozenset().union(*read.axes) if read.axes else frozenset()
            if any(a not in used for a in self.axes):
                return True
        return False


def _dtype(element, attrs: dict) -> str:
    """The numpy dtype name of an IR element type (`ember.dtype` for unsigned)."""
    named = attrs.get("ember.dtype")
    if isinstance(named, StringAttr):
        return named.data
    if isinstance(element, IntegerType):
        width = element.width.data
        return "bool" if width == 1 else f"int{width}"
    return {"f16": "float16", "f32": "float32", "f64": "float64"}[str(element)]


def _depends_on(value: SSAValue, args: dict[SSAValue, str]) -> frozenset[str]:
    """The axes (block arguments, by name) that `value` is computed from."""
    seen: set[str] = set()
    stack = [value]
    visited: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in visited:
            continue
        visited.add(id(v))
        if v in args:
            seen.add(args[v])
        elif isinstance(v.owner, Operation):
            stack.extend(v.owner.operands)
    return frozenset(seen)


class Task:
    """One te function to tune, for one target.

    Args:
        text: te IR of a module with one function (its schedule, if any, is
            dropped: the task is the computation).
        target: a target string, dict or `Target`; None is `Target.current()`.
        sizes: the values its size symbols are measured at (`planning_sizes`
            for the ones not given); refused for a kernel without symbols.
    """

    def __init__(self, text: str, target=None, sizes: Mapping[str, int] | None = None):
        from ember.backends.kernel_cache import target_fingerprint
        from ember.backends.llvm import Target
        from ember.passes import get_context

        self.target = Target.resolve(target)
        self.target_key = target_fingerprint(self.target)
        module = Parser(get_context(), text, "<task>").parse_module()
        funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
        if len(funcs) != 1:
            raise EmberValueError(
                f"auto_schedule: expected one te function, got {len(funcs)}"
            )
        fn = funcs[0]
        self.sizes = _sizes(fn, sizes)
        self.text = unscheduled_text(fn)
        self.workload = workload(fn, self.sizes)
        self.stages = _stages(fn, self.sizes)
        self.args = _arg_specs(fn, self.sizes)

    @classmethod
    def from_tensors(
        cls, args: Sequence, target=None, sizes: Mapping[str, int] | None = None
    ) -> Task:
        """The task of the te tensors `args` (inputs, then outputs)."""
        from ember import te
        from ember.te.lowering import lower

        outputs = [t.op for t in args if not isinstance(t.op, te.PlaceholderOp)]
        text = str(lower(te.create_schedule(outputs), args, KERNEL))
        return cls(text, target, sizes)

    def stage(self, name: str) -> StageInfo:
        return next(s for s in self.stages if s.name == name)

    def with_schedule(self, schedule: str) -> str:
        """The task's te IR text with `schedule` (a `te.schedule` op's text)."""
        module = self.module_with(schedule)
        return str(module)

    def module_with(self, schedule: str) -> ModuleOp:
        from ember.passes import get_context

        ctx = get_context()
        module = Parser(ctx, self.text, "<task>").parse_module()
        return splice(module, parse_schedule(schedule))

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Inputs for measuring: small values, so sums stay well inside the
        dtype (integers in [-3, 3], or [0, 3] unsigned; floats in [-1, 1]);
        uint16 as bfloat16 bits of floats in [-1, 1] (the activations a
        bfloat16 compilation stores between convolutions: tiny integers
        would be subnormals, which products flush and float32 arithmetic may
        take slow paths on)."""
        rng = np.random.default_rng(seed)
        arrays = []
        for shape, dtype, is_output in self.args:
            if is_output:
                arrays.append(np.zeros(shape, dtype))
            elif dtype == "uint16":
                floats = rng.uniform(-1, 1, shape).astype(np.float32)
                arrays.append((floats.view(np.uint32) >> 16).astype(np.uint16))
            elif dtype == "bool":
                arrays.append(rng.integers(0, 2, shape).astype(bool))
            elif np.issubdtype(np.dtype(dtype), np.integer):
                low = 0 if np.dtype(dtype).kind == "u" else -3
                arrays.append(rng.integers(low, 4, shape).astype(dtype))
            else:
                arrays.append(rng.uniform(-1, 1, shape).astype(dtype))
        return arrays


def parse_schedule(text: str) -> ScheduleOp:
    """A verified `te.schedule` op from its text: a schedule from a log or a
    file is input like any IR, so every primitive's verifier runs (a split
    by a negative factor is refused here, never lowered).

    Raises:
        EmberValueError: the text is not a te.schedule op, or one of its
            primitives does not verify.
    """
    from ember.passes import get_context

    try:
        op = Parser(get_context(), text, "<schedule>").parse_op()
        if not isinstance(op, ScheduleOp):
            raise EmberValueError(f"expected a te.schedule op, got {op.name}")
        op.verify()
    except (ParseError, VerifyException) as e:
        raise EmberValueError(f"invalid schedule: {e}") from None
    except RecursionError:
        raise EmberValueError("invalid schedule: nested too deeply") from None
    return op


def splice(module: ModuleOp, schedule: ScheduleOp) -> ModuleOp:
    """`module`'s one te function with `schedule` instead of its own."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    set_schedule(fn, schedule)
    return module


def set_schedule(fn: func.FuncOp, schedule: ScheduleOp) -> None:
    """Put `schedule` in `fn` (before its return), replacing any it had."""
    block = fn.body.block
    for op in list(block.ops):
        if isinstance(op, ScheduleOp):
            block.erase_op(op)
    if schedule.body.block.ops:
        assert block.last_op is not None
        block.insert_op_before(schedule, block.last_op)


def unscheduled_text(fn: func.FuncOp) -> str:
    """The text a task of function `fn` hashes: `fn` without its schedule,
    named `@kernel`, public and unmarked (a model's kernel function is private
    and marked `ember.kernel`), alone in a module."""
    clone = fn.clone()
    for op in list(clone.body.block.ops):
        if isinstance(op, ScheduleOp):
            clone.body.block.erase_op(op)
    clone.sym_name = StringAttr(KERNEL)
    clone.sym_visibility = None
    clone.attributes.pop("ember.kernel", None)
    return str(ModuleOp([clone]))


def _arg_specs(
    fn: func.FuncOp, sizes: Mapping[str, int]
) -> list[tuple[tuple[int, ...], str, bool]]:
    """(shape, dtype, is_output) of each buffer argument of the compiled
    function at `sizes`: the te function's tensor arguments (its size symbols
    are bound from them), then its results."""
    specs = []
    in_attrs = fn.arg_attrs.data if fn.arg_attrs else [None] * len(fn.args)
    for arg, attrs in zip(fn.args, in_attrs, strict=True):
        t = arg.type
        if isinstance(t, IndexType):
            continue
        assert isinstance(t, TensorType)
        specs.append((_shape(t, sizes), _dtype(t.element_type, _d(attrs)), False))
    outs = fn.function_type.outputs.data
    out_attrs = fn.res_attrs.data if fn.res_attrs else [None] * len(outs)
    for t, attrs in zip(outs, out_attrs, strict=True):
        assert isinstance(t, TensorType)
        specs.append((_shape(t, sizes), _dtype(t.element_type, _d(attrs)), True))
    return specs


def _shape(t: TensorType, sizes: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(evaluate(d, sizes) for d in dims_of(t))


def _d(attrs) -> dict:
    return dict(attrs.data) if attrs is not None else {}


def size_symbols(fn: func.FuncOp) -> list[str]:
    """The size symbols a te function's types and reduction extents name, in
    order of first appearance."""
    values: list = []
    types = [*fn.body.block.arg_types, *fn.function_type.outputs.data]
    for op in fn.body.block.ops:
        if isinstance(op, te_ir.ComputeOp):
            types.append(op.output_type)
            values += op.extents
    values += [d for t in types if isinstance(t, TensorType) for d in dims_of(t)]
    named = [s for v in values if isinstance(v, SymExpr) for s in sorted(v.symbols())]
    return list(dict.fromkeys(named))


def planning_sizes(fn: func.FuncOp, bounds: Mapping[str, int]) -> dict[str, int]:
    """The sizes a symbolic kernel's schedule is planned for, and tuned at:
    each symbol's bound, else `PLANNING_SIZE` (`convert-graph-to-te`)."""
    from ember.passes.convert_graph_to_te import PLANNING_SIZE

    return {s: int(bounds.get(s, PLANNING_SIZE)) for s in size_symbols(fn)}


def workload(fn: func.FuncOp, sizes: Mapping[str, int] | None = None) -> str:
    """The key of `fn`'s tuning records: sha256 of its unscheduled text and,
    for a symbolic kernel, of the sizes it is measured at (`planning_sizes`
    with no bounds when None)."""
    text = unscheduled_text(fn)
    symbols = size_symbols(fn)
    if symbols:
        sizes = planning_sizes(fn, sizes or {})
        text += "// sizes " + ", ".join(f"{s} = {sizes[s]}" for s in symbols) + "\n"
    return hashlib.sha256(text.encode()).hexdigest()


def _sizes(fn: func.FuncOp, given: Mapping[str, int] | None) -> dict[str, int]:
    """The sizes a task measures `fn` at: `given`, the rest planned."""
    sizes = planning_sizes(fn, given or {})
    unknown = sorted(set(given or {}) - set(sizes))
    if unknown:
        raise EmberValueError(
            f"sizes: the kernel has no symbol {', '.join(map(repr, unknown))}"
            + (f" (its symbols: {', '.join(sizes)})" if sizes else "")
        )
    bad = [f"{k} = {v!r}" for k, v in sizes.items() if not isinstance(v, int) or v < 1]
    if bad:
        raise EmberValueError(f"sizes: expected positive ints, got {', '.join(bad)}")
    return sizes


def _stages(fn: func.FuncOp, sizes: Mapping[str, int]) -> list[StageInfo]:
    block = fn.body.block
    names: dict[SSAValue, str] = {}
    in_attrs = fn.arg_attrs.data if fn.arg_attrs else []
    for n, arg in enumerate(block.args):
        attr = _d(in_attrs[n]).get("ember.name") if n < len(in_attrs) else None
        names[arg] = attr.data if isinstance(attr, StringAttr) else f"arg{n}"
    returned = set(block.last_op.operands) if block.last_op is not None else set()
    stages: dict[str, StageInfo] = {}
    for op in block.ops:
        if isinstance(op, te_ir.ExternOp):
            names[op.result] = op.tensor_name.data
            for value in op.operands:
                if value in names and names[value] in stages:
                    stages[names[value]].read_by_extern = True
        if not isinstance(op, te_ir.ComputeOp):
            continue
        name = op.tensor_name.data
        names[op.result] = name
        t = op.output_type
        args = list(op.body.block.args)
        axis = [a.name_hint or f"ax{n}" for n, a in enumerate(args)]
        rank = t.get_num_dims()
        by_arg: dict[SSAValue, str] = dict(zip(args, axis, strict=True))
        info = StageInfo(
            name,
            tuple(evaluate(d, sizes) for d in dims_of(t)),
            _dtype(t.element_type, {}),
            axis[:rank],
            axis[rank:],
            tuple(evaluate(e, sizes) for e in op.extents),
            output=op.result in returned,
        )
        for inner in op.body.walk():
            if isinstance(inner, te_ir.ReadOp):
                source = names.get(inner.tensor, "?")
                dims = [_depends_on(i, by_arg) for i in inner.indices]
                info.reads.append(Read(source, dims))
                if source in stages:
                    stages[source].readers.append(name)
        stages[name] = info
    return list(stages.values())
