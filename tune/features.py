"""Features of a scheduled loop nest for the cost model.

Read from the loop IR that `convert-te-to-loop` makes of a candidate (what
`get_source("loop")` shows), one fixed-length vector per candidate, in the
spirit of Ansor's per-store features summed over the program: work weighted
by how often it runs, how much of it is vectorized, parallel or unrolled, how
each load walks memory in its innermost loop (contiguous, invariant,
strided), local buffers and how much each load is reused by the loops that
do not index it. Counts are log2(1 + x), fractions as they are.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue

from ember.dialects import loop

NAMES = (
    "float_ops",
    "int_ops",
    "loads",
    "stores",
    "vectorized_fraction",
    "vector_extent",
    "parallel_extent",
    "parallel_fraction",
    "unrolled_fraction",
    "contiguous_loads",
    "invariant_loads",
    "strided_loads",
    "local_loads",
    "local_bytes",
    "global_bytes",
    "depth",
    "loops",
    "innermost_extent",
    "reuse",
    "loads_per_flop",
)


_INT_OPS = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.FloorDivSIOp: lambda a, b: a // b if b else None,
    arith.DivSIOp: lambda a, b: int(a / b) if b else None,
    arith.DivUIOp: lambda a, b: a // b if b else None,
    arith.CeilDivSIOp: lambda a, b: -(-a // b) if b else None,
    arith.CeilDivUIOp: lambda a, b: -(-a // b) if b else None,
    arith.RemSIOp: lambda a, b: a % b if b else None,
    arith.RemUIOp: lambda a, b: a % b if b else None,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
}


def _constant(value: SSAValue, symbols: dict[SSAValue, int]) -> int | None:
    """`value` as an int: a constant, a size symbol at its representative
    size, or integer arithmetic on those (a loop bound over a symbolic
    extent, computed at the function's entry); None otherwise."""
    if value in symbols:
        return symbols[value]
    op = value.owner
    if isinstance(op, arith.ConstantOp):
        attr = op.value
        return getattr(getattr(attr, "value", None), "data", None)
    if isinstance(op, arith.IndexCastOp):
        return _constant(op.input, symbols)
    rule = _INT_OPS.get(type(op))
    if rule is not None:
        a, b = (_constant(v, symbols) for v in op.operands)  # type: ignore[union-attr]
        return None if a is None or b is None else rule(a, b)
    return None


def _symbols(fn: func.FuncOp) -> dict[SSAValue, int]:
    """A loop function's size symbols (`ember.symbol` arguments), each at
    `PLANNING_SIZE`: a symbolic kernel's features are those at the sizes its
    schedule is planned for."""
    from ember.passes.convert_graph_to_te import PLANNING_SIZE

    attrs = fn.arg_attrs.data if fn.arg_attrs else []
    return {
        arg: PLANNING_SIZE
        for arg, a in zip(fn.args, attrs, strict=False)
        if "ember.symbol" in a.data
    }


def _ivs(value: SSAValue, ivs: set[SSAValue]) -> set[SSAValue]:
    """The loop induction variables `value` is computed from."""
    found: set[SSAValue] = set()
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v in ivs:
            found.add(v)
        elif isinstance(v.owner, Operation):
            stack.extend(v.owner.operands)
    return found


class _Walk:
    def __init__(self):
        self.symbols: dict[SSAValue, int] = {}
        self.f = dict.fromkeys(NAMES, 0.0)
        self.ivs: set[SSAValue] = set()
        self.local: set[SSAValue] = set()
        self.load_weight = 0.0
        self.op_weight = 0.0

    def visit(self, ops, stack: list[tuple[loop.ForOp, int]]) -> None:
        f = self.f
        trips = math.prod(e for _, e in stack)
        kinds = {op.kind.data for op, _ in stack}
        for op in ops:
            if isinstance(op, loop.ForOp):
                extent = self._extent(op)
                f["loops"] += 1
                if op.kind.data == "parallel" and "parallel" not in kinds:
                    f["parallel_extent"] = max(f["parallel_extent"], extent)
                self.ivs.add(op.induction_var)
                self.visit(op.body.block.ops, [*stack, (op, extent)])
                continue
            if isinstance(op, loop.AllocOp):
                t = op.buffer.type
                assert isinstance(t, MemRefType)
                bits = getattr(t.element_type, "bitwidth", 8)
                dynamic = iter(op.sizes)
                dims = [
                    d if d >= 0 else _constant(next(dynamic), self.symbols) or 1
                    for d in t.get_shape()
                ]
                size = math.prod(dims) * max(1, bits // 8)
                key = "local_bytes" if op.scope_name != "global" else "global_bytes"
                f[key] += size
                if op.scope_name != "global":
                    self.local.add(op.buffer)
                continue
            f["depth"] = max(f["depth"], len(stack))
            if isinstance(op, memref.LoadOp | memref.StoreOp):
                self._access(op, stack, trips)
            elif op.name.startswith(("arith.", "math.")) and op.results:
                is_float = not str(op.results[0].type).startswith(("i", "index"))
                f["float_ops" if is_float else "int_ops"] += trips
                if is_float:
                    self.op_weight += trips
                    if "vectorized" in kinds:
                        f["vectorized_fraction"] += trips
                        f["vector_extent"] += trips * stack[-1][1]
                    if "parallel" in kinds:
                        f["parallel_fraction"] += trips
                    if "unrolled" in kinds:
                        f["unrolled_fraction"] += trips
            if stack:
                f["innermost_extent"] += trips * stack[-1][1]

    def _extent(self, op: loop.ForOp) -> int:
        lo, hi, st = (_constant(v, self.symbols) for v in (op.lower, op.upper, op.step))
        if lo is None or hi is None or not st:
            return 1
        return max(1, -(-(hi - lo) // st))

    def _access(self, op, stack, trips: float) -> None:
        f = self.f
        is_load = isinstance(op, memref.LoadOp)
        f["loads" if is_load else "stores"] += trips
        if not is_load:
            return
        self.load_weight += trips
        indices = list(op.indices)
        used = [_ivs(i, self.ivs) for i in indices]
        if op.memref in self.local:
            f["local_loads"] += trips
        if stack:
            inner = stack[-1][0].induction_var
            if not any(inner in u for u in used):
                f["invariant_loads"] += trips
            elif indices and all(inner not in u for u in used[:-1]):
                f["contiguous_loads"] += trips
            else:
                f["strided_loads"] += trips
        everything = set().union(*used) if used else set()
        reuse = math.prod(e for o, e in stack if o.induction_var not in everything)
        f["reuse"] += trips * math.log2(reuse)


def extract(module: ModuleOp) -> list[float]:
    """The feature vector (in `NAMES` order) of a module of loop IR."""
    w = _Walk()
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks:
            w.symbols = _symbols(op)
            w.visit(op.body.block.ops, [])
    f = w.f
    flops = max(w.op_weight, 1.0)
    loads = max(w.load_weight, 1.0)
    f["loads_per_flop"] = f["loads"] / flops
    for key in ("vectorized_fraction", "parallel_fraction", "unrolled_fraction"):
        f[key] /= flops
    if w.op_weight:
        f["vector_extent"] = math.log2(1 + f["vector_extent"] / flops)
    for key in ("contiguous_loads", "invariant_loads", "strided_loads", "local_loads"):
        f[key] /= loads
    f["reuse"] /= loads
    total = max(f["float_ops"] + f["int_ops"] + f["loads"] + f["stores"], 1.0)
    f["innermost_extent"] = math.log2(1 + f["innermost_extent"] / total)
    for key in (
        "float_ops",
        "int_ops",
        "loads",
        "stores",
        "parallel_extent",
        "local_bytes",
        "global_bytes",
        "loops",
    ):
        f[key] = math.log2(1 + f[key])
    return [float(f[n]) for n in NAMES]


def candidate_features(task_text_with_schedule: str) -> list[float]:
    """Features of a candidate (te IR text with its schedule): lowered to loop
    IR by `TE_TO_LOOP`, then `extract`."""
    from xdsl.parser import Parser

    from ember.passes import get_context, run
    from ember.passes.pipelines import TE_TO_LOOP

    ctx = get_context()
    module = Parser(ctx, task_text_with_schedule, "<candidate>").parse_module()
    run(module, ",".join(TE_TO_LOOP), ctx)
    return extract(module)
