"""From Python tensor expressions to te IR, the first printable stage.

mod = lower(s, [A, B, C], name="vecadd")   # a builtin.module of te IR

`ember.lower(..., emit="te")` gives the same; `ember.lower` alone goes on to loops.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, func, math, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from ember import te
from ember.dialects import dot, loop
from ember.dialects import te as te_ir
from ember.dialects.graph_shapes import emit_dim, tensor_of
from ember.runtime.errors import EmberTypeError, EmberValueError
from ember.runtime.shape_expr import SymExpr
from ember.te.expr import int_range

_TYPES: dict[str, Attribute] = {
    "float16": Float16Type(),
    "float32": Float32Type(),
    "float64": Float64Type(),
    **{f"{sign}int{b}": IntegerType(b) for sign in ("", "u") for b in (8, 16, 32, 64)},
    "bool": IntegerType(1),
    "index": IndexType(),
}

# Op constructors by name: binary ones take (lhs, rhs), unary ones the operand.
_Binary = Callable[[SSAValue, SSAValue], Operation]
_Unary = Callable[[SSAValue], Operation]

_FLOAT_OPS: dict[str, _Binary] = {
    "add": arith.AddfOp,
    "sub": arith.SubfOp,
    "mul": arith.MulfOp,
    "div": arith.DivfOp,
    "max": arith.MaximumfOp,
    "min": arith.MinimumfOp,
}
_INT_OPS: dict[str, _Binary] = {
    "add": arith.AddiOp,
    "sub": arith.SubiOp,
    "mul": arith.MuliOp,
    "shl": arith.ShLIOp,
}
_SIGNED_OPS: dict[str, _Binary] = {
    "max": arith.MaxSIOp,
    "min": arith.MinSIOp,
    "shr": arith.ShRSIOp,
}
# Unsigned integers and bools (true is 1 unsigned, -1 signed).
_UNSIGNED_OPS: dict[str, _Binary] = {
    "max": arith.MaxUIOp,
    "min": arith.MinUIOp,
    "shr": arith.ShRUIOp,
}
# bitwise on integers, logical on bools
_LOGIC_OPS: dict[str, _Binary] = {
    "and": arith.AndIOp,
    "or": arith.OrIOp,
    "xor": arith.XOrIOp,
}
# Ordered: a comparison with NaN is false, except `!=` which is true (numpy).
_FLOAT_PREDICATES = {
    "lt": "olt",
    "le": "ole",
    "gt": "ogt",
    "ge": "oge",
    "eq": "oeq",
    "ne": "une",
}
_MATH: dict[str, _Unary] = {
    "exp": math.ExpOp,
    "log": math.LogOp,
    "sqrt": math.SqrtOp,
    "tanh": math.TanhOp,
    "abs": math.AbsFOp,
    "sin": math.SinOp,
    "cos": math.CosOp,
    "tan": math.TanOp,
    "asin": math.AsinOp,
    "acos": math.AcosOp,
    "atan": math.AtanOp,
    "sinh": math.SinhOp,
    "cosh": math.CoshOp,
    "asinh": math.AsinhOp,
    "acosh": math.AcoshOp,
    "atanh": math.AtanhOp,
    "floor": math.FloorOp,
    "ceil": math.CeilOp,
    "roundeven": math.RoundEvenOp,
}


def ir_type(dtype: str) -> Attribute:
    """The IR element type of a dtype name."""
    return _TYPES[dtype]


def tensor_type(t: te.Tensor) -> TensorType:
    """`t`'s type; symbolic dims are dynamic, named by the encoding."""
    return tensor_of(ir_type(t.dtype), t.shape)


SYMBOL_ATTR = "ember.symbol"
"""The attribute marking a trailing `index` argument as a size symbol."""


def _symbols(inputs: list[te.Tensor], stages: list[te.Tensor]) -> list[str]:
    """The size symbols the function's shapes, extents and bodies read, in
    order of first appearance."""
    found: dict[str, None] = {}

    def note(value: object) -> None:
        if isinstance(value, SymExpr):
            found.update((name, None) for name in sorted(value.symbols()))

    for t in [*inputs, *stages]:
        for d in t.shape:
            note(d)
        if isinstance(t.op, te.ComputeOp):
            for v in t.op.reduce_axis:
                note(v.extent)
            for e in te.walk(t.op.body):
                if isinstance(e, te.Size):
                    note(e.value)
    return list(found)


def lower(
    sched: te.Schedule, args: Sequence[te.Tensor], name: str = "default_function"
) -> ModuleOp:
    """The te IR of a scheduled computation, as one `func.func @name`.

    Args:
        sched: the schedule (its outputs must be among `args`).
        args: the function's tensors: the inputs (placeholders) first, then the
            outputs, like TVM's `build(s, [A, B, C])`.
        name: the function's name.

    Returns:
        A module holding the function.
    """
    if not isinstance(name, str) or not _SYMBOL.fullmatch(name):
        raise EmberValueError(
            f"expected a function name of letters, digits, '_', '$' or '.' that "
            f"does not start with a digit, got {name!r}"
        )
    inputs, outputs = _split_args(args, name)
    for op in sched.outputs:
        if all(op is not t.op for t in outputs):
            raise EmberValueError(
                f"{name}: the schedule's output '{op.name}' is not among the arguments"
            )
    stages = _topological(outputs, inputs, name)
    symbols = _symbols(inputs, stages)
    arg_attrs = ArrayAttr(
        [
            DictionaryAttr({"ember.name": StringAttr(t.name), **_dtype_attr(t)})
            for t in inputs
        ]
        + [DictionaryAttr({SYMBOL_ATTR: StringAttr(n)}) for n in symbols]
    )
    arg_types = [tensor_type(t) for t in inputs] + [IndexType()] * len(symbols)
    body = Block(arg_types=arg_types)
    values: dict[int, SSAValue] = {}
    for t, arg in zip(inputs, body.args, strict=False):
        arg.name_hint = _ssa_name(t.name)
        values[id(t)] = arg
    sizes: dict[str, SSAValue] = dict(
        zip(symbols, body.args[len(inputs) :], strict=True)
    )
    for n, arg in sizes.items():
        arg.name_hint = _ssa_name(n)
    axis_names = _AxisNames()
    for t in stages:
        if isinstance(t.op, te.ExternOp):
            op = _emit_extern(t, values)
        else:
            op = _emit_compute(t, values, axis_names, sizes)
        op.result.name_hint = _ssa_name(t.name)
        body.add_op(op)
        values[id(t)] = op.result
    if sched.steps:
        from ember.te.schedule import schedule_ir

        body.add_op(schedule_ir(sched, axis_names.names))
    body.add_op(func.ReturnOp(*[values[id(t)] for t in outputs]))
    fn = func.FuncOp(
        name,
        (arg_types, [tensor_type(t) for t in outputs]),
        Region(body),
        arg_attrs=arg_attrs,
    )
    if any(_dtype_attr(t) for t in outputs):
        fn.res_attrs = ArrayAttr([DictionaryAttr(_dtype_attr(t)) for t in outputs])
    return ModuleOp([fn])


def _unsigned(dtype: str) -> bool:
    """Whether integers of `dtype` compare, divide, shift and widen unsigned
    (te IR's integers are signless: the op says)."""
    return dtype in te.UNSIGNED_DTYPES or dtype == "bool"


def _dtype_attr(t: te.Tensor) -> dict[str, Attribute]:
    """`ember.dtype` for a tensor of unsigned integers, whose IR type is
    signless: the packed ABI then expects (and the metadata says) uint<N>."""
    if t.dtype in te.UNSIGNED_DTYPES:
        return {"ember.dtype": StringAttr(t.dtype)}
    return {}


def _split_args(
    args: Sequence[te.Tensor], name: str
) -> tuple[list[te.Tensor], list[te.Tensor]]:
    if not args:
        raise EmberValueError(f"{name}: expected the argument tensors, got none")
    for a in args:
        if not isinstance(a, te.Tensor):
            raise EmberTypeError(f"{name}: expected te tensors as arguments, got {a!r}")
    inputs = [a for a in args if isinstance(a.op, te.PlaceholderOp)]
    outputs = [a for a in args if isinstance(a.op, te.ComputeOp | te.ExternOp)]
    if list(args) != inputs + outputs:
        raise EmberValueError(
            f"{name}: expected the inputs (placeholders) first, then the outputs; "
            f"got {[a.name for a in args]}"
        )
    if not outputs:
        raise EmberValueError(f"{name}: expected at least one computed output")
    return inputs, outputs


def _topological(
    outputs: list[te.Tensor], inputs: list[te.Tensor], name: str
) -> list[te.Tensor]:
    """The computes that produce `outputs`, each after the tensors it reads."""
    order: list[te.Tensor] = []
    seen: set[int] = {id(t) for t in inputs}

    def visit(t: te.Tensor) -> None:
        if id(t) in seen:
            return
        if isinstance(t.op, te.PlaceholderOp):
            raise EmberValueError(
                f"{name}: placeholder '{t.name}' is used but not among the arguments"
            )
        seen.add(id(t))
        assert isinstance(t.op, te.ComputeOp | te.ExternOp)
        for dep in t.op.input_tensors:
            visit(dep)
        order.append(t)

    for t in outputs:
        visit(t)
    return order


_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def _ssa_name(name: str) -> str | None:
    """`name` as an SSA name hint (ASCII letters, digits, `_$.`), or None."""
    cleaned = re.sub(r"[^A-Za-z0-9_$.]", "_", name)
    return cleaned if _SYMBOL.fullmatch(cleaned) else None


class _AxisNames:
    """Names the axes of each compute as its block arguments will be named, unique
    within the compute, so that schedule IR can refer to them. (xDSL drops a
    `_<digits>` suffix from value names and adds one when printing duplicates, so
    names are made unique with a plain digit suffix.)"""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()

    def start_compute(self) -> None:
        self.used = set()

    def name(self, var: te.Var) -> str:
        base = SSAValue.extract_valid_name(_ssa_name(var.name) or "ax")
        unique, n = base, 1
        while unique in self.used or SSAValue.extract_valid_name(unique) != unique:
            unique, n = f"{base}{'x' if base.endswith('_') else ''}{n}", n + 1
        self.used.add(unique)
        self.names[id(var)] = unique
        return unique


def _emit_compute(
    t: te.Tensor,
    values: dict[int, SSAValue],
    axis_names: _AxisNames,
    sizes: dict[str, SSAValue],
) -> te_ir.ComputeOp:
    op = t.op
    assert isinstance(op, te.ComputeOp)
    axes = [*op.axis, *op.reduce_axis]
    block = Block(arg_types=[IndexType()] * len(axes))
    emitter = _BodyEmitter(block, values, t.name, sizes)
    axis_names.start_compute()
    for var, arg in zip(axes, block.args, strict=True):
        arg.name_hint = axis_names.name(var)
        emitter.bind(var, arg)
    body = op.body
    reduce = None
    if isinstance(body, te.Reduce):
        reduce, body = body.combiner, body.body
    block.add_op(te_ir.YieldOp(emitter.emit(body)))
    combiner, identity = _combiner(op.body)
    if reduce in ("max", "min") and t.dtype in te.UNSIGNED_DTYPES:
        reduce, combiner, identity = _unsigned_combiner(reduce, t.dtype)
    return te_ir.ComputeOp(
        t.name,
        tensor_type(t),
        block,
        reduce,
        [v.extent for v in op.reduce_axis],
        combiner,
        identity,
    )


def _emit_extern(t: te.Tensor, values: dict[int, SSAValue]) -> te_ir.ExternOp:
    """The te.extern of `t`: its calls, as `loop.call_packed` over the buffers of
    the inputs and the result (block arguments) and constants."""
    op = t.op
    assert isinstance(op, te.ExternOp)
    buffers = [*op.input_buffers, op.output_buffer]
    block = Block(
        arg_types=[
            MemRefType(ir_type(b.dtype), b.shape)  # type: ignore[arg-type]
            for b in buffers
        ]
    )
    for b, arg in zip(buffers, block.args, strict=True):
        arg.name_hint = _ssa_name(b.name)
    constants: dict[tuple[type, float | int], SSAValue] = {}

    def constant(value: int | float) -> SSAValue:
        key = (type(value), value)
        if key not in constants:
            attr = (
                FloatAttr(value, Float64Type())
                if isinstance(value, float)
                else IntegerAttr(value, IntegerType(64))
            )
            block.add_op(c := arith.ConstantOp(attr))
            constants[key] = c.result
        return constants[key]

    for call in op.calls:
        args: list[SSAValue | str] = []
        for a in call.args:
            if isinstance(a, te.ExternBuffer):
                args.append(
                    block.args[next(i for i, b in enumerate(buffers) if b is a)]
                )
            elif isinstance(a, str):
                args.append(a)
            else:
                args.append(constant(a))  # type: ignore[arg-type]
        block.add_op(loop.CallPackedOp(call.name, args))
    inputs = [values[id(i)] for i in op.inputs]
    return te_ir.ExternOp(t.name, inputs, tensor_type(t), block)


def _combiner(body: te.Expr) -> tuple[Block | None, Attribute | None]:
    """The combine block and identity of a `comm_reducer` reduction; (None, None)
    for a plain compute or a builtin combiner."""
    if not isinstance(body, te.Reduce) or body.custom is None:
        return None, None
    x, y, combined, identity = body.custom
    t = ir_type(body.dtype)
    block = Block(arg_types=[t, t])
    emitter = _BodyEmitter(block, {})
    for param, arg, hint in ((x, block.args[0], "acc"), (y, block.args[1], "x")):
        arg.name_hint = hint
        emitter.bind(param, arg)
    block.add_op(te_ir.YieldOp(emitter.emit(combined)))
    return block, _const_attr(identity)


def _unsigned_combiner(reduce: str, dtype: str) -> tuple[str, Block, Attribute]:
    """te IR's builtin max and min compare signed (its integers are signless):
    an unsigned one is a custom combiner `umax`/`umin` over `arith.maxui`/`minui`
    starting from 0 or all ones."""
    t = ir_type(dtype)
    block = Block(arg_types=[t, t])
    block.args[0].name_hint, block.args[1].name_hint = "acc", "x"
    combined = _UNSIGNED_OPS[reduce](*block.args)
    block.add_ops([combined, te_ir.YieldOp(combined.results[0])])
    start = 0 if reduce == "max" else int_range(dtype)[1]
    return f"u{reduce}", block, IntegerAttr(start, t)  # type: ignore[arg-type]


MAX_BRANCH_DEPTH = 64
"""How deep guarded branches (`te.if_then_else` sides that read tensors, each
an `scf.if` region) may nest: the compiler's walks over nested regions recurse
(ember's and xDSL's), and 64 levels leave them room under Python's default
recursion limit. Expressions are otherwise unlimited in depth."""

_VISIT, _CONDITION, _EMIT = range(3)
"""`_BodyEmitter.emit`'s states of an expression: its operands to emit, a
guarded select's condition emitted (its sides not yet decided), ready."""


def _is_guarded(e: te.Expr) -> bool:
    return isinstance(e, te.Select) and e.guarded


def _operands(e: te.Expr) -> list[te.Expr]:
    """The subexpressions `_BodyEmitter._emit` emits in `e`'s scope before `e`."""
    if _is_guarded(e):
        assert isinstance(e, te.Select)
        return [e.cond]  # the sides may belong to branches of their own
    if isinstance(e, (te.Read, te.Binary, te.Compare, te.Call, te.Cast, te.Select)):
        return e.children
    return []  # leaves, and a misplaced reduction (an error of its own)


def _const_attr(c: te.Const) -> FloatAttr | IntegerAttr:
    t = ir_type(c.dtype)
    if c.dtype in te.FLOAT_DTYPES:
        return FloatAttr(float(c.value), t)  # type: ignore[arg-type]
    return IntegerAttr(int(c.value), t)  # type: ignore[arg-type]


class _BodyEmitter:
    """Emits one compute body (or combiner); shared subexpressions are emitted
    once per scope. The side of a guarded select that reads tensors is emitted in
    a region of its own (an `scf.if` branch): what is emitted there is visible only
    there."""

    def __init__(
        self,
        block: Block,
        tensors: dict[int, SSAValue],
        name: str = "",
        sizes: dict[str, SSAValue] | None = None,
    ):
        self.block, self.tensors, self.name = block, tensors, name
        self.sizes = sizes or {}
        # Keyed by id(); holding the expression keeps the id from being reused.
        # One dictionary per open scope, innermost last.
        self.scopes: list[dict[int, tuple[te.Expr, SSAValue]]] = [{}]

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def bind(self, var: te.Var | te.Param, arg: SSAValue) -> None:
        if isinstance(var, te.Var) and var.lower:
            offset = self.add(arith.ConstantOp(IntegerAttr(var.lower, IndexType())))
            arg = self.add(arith.AddiOp(arg, offset))
        self.scopes[-1][id(var)] = (var, arg)

    def _lookup(self, e: te.Expr) -> SSAValue | None:
        for scope in reversed(self.scopes):
            if id(e) in scope:
                return scope[id(e)][1]
        return None

    def emit(self, e: te.Expr) -> SSAValue:
        value = self._lookup(e)
        if value is not None:
            return value
        # Operands first, deepest first, from an explicit stack: `_emit` then
        # finds them emitted, so an expression thousands of operations deep
        # needs no Python recursion. Only a guarded select whose sides read
        # tensors recurses, once per branch nested in a branch (`_scoped`).
        stack: list[tuple[te.Expr, int]] = [(e, _VISIT)]
        while stack:
            node, state = stack.pop()
            if self._lookup(node) is not None:
                continue
            if state == _VISIT:
                stack.append((node, _CONDITION if _is_guarded(node) else _EMIT))
                stack.extend((o, _VISIT) for o in reversed(_operands(node)))
            elif state == _CONDITION:  # decided once the condition is emitted
                assert isinstance(node, te.Select)
                sides = [node.true_value, node.false_value]
                stack.append((node, _EMIT))
                if not any(self._reads(side) for side in sides):
                    stack.extend((side, _VISIT) for side in reversed(sides))
            else:
                self.scopes[-1][id(node)] = (node, self._emit(node))
        value = self._lookup(e)
        assert value is not None
        return value

    def _emit(self, e: te.Expr) -> SSAValue:
        if isinstance(e, te.Var):
            raise EmberValueError(
                f"loop index '{e.name}' is used outside the compute that defines it"
            )
        if isinstance(e, te.Param):
            raise EmberValueError(
                f"combiner argument '{e.name}' is used outside its combiner"
            )
        if isinstance(e, te.Const):
            return self.add(arith.ConstantOp(_const_attr(e)))
        if isinstance(e, te.Size):
            return emit_dim(
                e.value,
                self.sizes.__getitem__,
                lambda k: self.emit(te.Const(k, "index")),
                self.add,
            )
        if isinstance(e, te.Read):
            if id(e.tensor) not in self.tensors:
                raise EmberValueError(f"tensor '{e.tensor.name}' is not available here")
            indices = [self.emit(i) for i in e.indices]
            return self.add(te_ir.ReadOp(self.tensors[id(e.tensor)], indices))
        if isinstance(e, te.Binary):
            return self._binary(e.op, e.dtype, self.emit(e.lhs), self.emit(e.rhs))
        if isinstance(e, te.Compare):
            return self._compare(e.op, e.lhs.dtype, self.emit(e.lhs), self.emit(e.rhs))
        if isinstance(e, te.Select):
            return self._select(e)
        if isinstance(e, te.Call):
            args = [self.emit(a) for a in e.args]
            if e.fn in ("max", "min"):
                return self._binary(e.fn, e.dtype, args[0], args[1])
            if e.fn == "reinterpret":
                return self.add(arith.BitcastOp(args[0], ir_type(e.dtype)))
            if e.fn == "dot_u8i8":
                return self.add(dot.U8I8Op(self._constant(0, "int32"), *args))
            if e.fn == "dot_bf16":
                return self.add(dot.BF16Op(self._constant(0, "float32"), *args))
            if e.fn == "to_bf16":
                half = self.add(arith.TruncFOp(args[0], BFloat16Type()))
                return self.add(arith.BitcastOp(half, ir_type(e.dtype)))
            return self.add(_MATH[e.fn](args[0]))
        if isinstance(e, te.Cast):
            return self._cast(self.emit(e.value), e.value.dtype, e.dtype)
        if isinstance(e, te.Reduce):
            raise EmberValueError("a reduction must be the whole body of a compute")
        raise EmberTypeError(f"cannot lower expression {e!r}")

    def _binary(self, op: str, dtype: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        if op in _LOGIC_OPS:
            return self.add(_LOGIC_OPS[op](lhs, rhs))
        if dtype in te.FLOAT_DTYPES:
            return self.add(_FLOAT_OPS[op](lhs, rhs))
        if op in ("div", "floordiv", "mod"):
            return self._int_division(op, dtype, lhs, rhs)
        if op in _INT_OPS:
            return self.add(_INT_OPS[op](lhs, rhs))
        ops = _UNSIGNED_OPS if _unsigned(dtype) else _SIGNED_OPS
        return self.add(ops[op](lhs, rhs))

    def _compare(self, op: str, dtype: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        if dtype in te.FLOAT_DTYPES:
            return self.add(arith.CmpfOp(lhs, rhs, _FLOAT_PREDICATES[op]))
        sign = "u" if _unsigned(dtype) else "s"
        predicate = op if op in ("eq", "ne") else sign + op
        return self.add(arith.CmpiOp(lhs, rhs, predicate))

    def _select(self, e: te.Select) -> SSAValue:
        cond = self.emit(e.cond)
        sides = (e.true_value, e.false_value)
        if not (e.guarded and any(self._reads(side) for side in sides)):
            return self.add(arith.SelectOp(cond, *[self.emit(s) for s in sides]))
        # Only the taken side runs: a read there may be out of bounds otherwise.
        then, otherwise = (Region(self._scoped(side)) for side in sides)
        return self.add(scf.IfOp(cond, [ir_type(e.dtype)], then, otherwise))

    def _scoped(self, e: te.Expr) -> Block:
        """A block computing `e` and yielding it, with its own scope."""
        if len(self.scopes) > MAX_BRANCH_DEPTH:
            raise EmberValueError(
                f"compute '{self.name}': te.if_then_else branches that read "
                f"tensors nest more than {MAX_BRANCH_DEPTH} deep; ember's limit "
                "is that depth (te.select evaluates both sides without a branch)"
            )
        outer, self.block = self.block, Block()
        self.scopes.append({})
        try:
            self.block.add_op(scf.YieldOp(self.emit(e)))
            return self.block
        finally:
            self.scopes.pop()
            self.block = outer

    def _reads(self, e: te.Expr) -> bool:
        """Whether emitting `e` here would read a tensor."""
        stack, seen = [e], set()
        while stack:
            node = stack.pop()
            if id(node) in seen or self._lookup(node) is not None:
                continue
            if isinstance(node, te.Read):
                return True
            seen.add(id(node))
            stack.extend(node.children)
        return False

    def _int_division(self, op: str, dtype: str, lhs: SSAValue, rhs: SSAValue):
        """Integer `/`, `//` and `%` as numpy computes them: `%` takes the sign of
        the divisor, dividing by 0 gives 0, and MIN // -1 wraps to MIN. The hardware
        traps on the last two, so the division runs on a divisor of 1 there and the
        result is selected afterwards; constant divisors fold all of it away."""
        zero = self._constant(0, dtype)
        if dtype == "index":  # sizes and indices: never MIN, so only 0 traps
            by_zero = self.add(arith.CmpiOp(rhs, zero, "eq"))
            safe = self.add(arith.SelectOp(by_zero, self._constant(1, dtype), rhs))
            kind = arith.FloorDivSIOp if op != "div" else arith.DivSIOp
            quotient = self.add(kind(lhs, safe))
            if op == "mod":
                product = self.add(arith.MuliOp(quotient, safe))
                quotient = self.add(arith.SubiOp(lhs, product))
            return self.add(arith.SelectOp(by_zero, zero, quotient))
        if dtype in te.UNSIGNED_DTYPES:  # only a divisor of 0 traps
            by_zero = self.add(arith.CmpiOp(rhs, zero, "eq"))
            safe = self.add(arith.SelectOp(by_zero, self._constant(1, dtype), rhs))
            quotient = self.add(arith.DivUIOp(lhs, safe))
            if op == "mod":
                quotient = self.add(arith.RemUIOp(lhs, safe))
            return self.add(arith.SelectOp(by_zero, zero, quotient))
        minus_one = self._constant(-1, dtype)
        by_zero = self.add(arith.CmpiOp(rhs, zero, "eq"))
        by_minus_one = self.add(arith.CmpiOp(rhs, minus_one, "eq"))
        traps = self.add(arith.OrIOp(by_zero, by_minus_one))
        safe = self.add(arith.SelectOp(traps, self._constant(1, dtype), rhs))
        quotient_op = arith.DivSIOp if op == "div" else arith.FloorDivSIOp
        quotient = self.add(quotient_op(lhs, safe))
        negated = self.add(arith.SubiOp(zero, lhs))
        quotient = self.add(arith.SelectOp(by_minus_one, negated, quotient))
        if op == "mod":
            product = self.add(arith.MuliOp(quotient, rhs))
            result = self.add(arith.SubiOp(lhs, product))
        else:
            result = quotient
        return self.add(arith.SelectOp(by_zero, zero, result))

    def _constant(self, value: int, dtype: str) -> SSAValue:
        number = float(value) if dtype in te.FLOAT_DTYPES else value
        return self.emit(te.Const(number, dtype))

    def _cast(self, value: SSAValue, src: str, dst: str) -> SSAValue:
        if src == dst:
            return value
        to = ir_type(dst)
        if src == "index":
            wide = self.add(arith.IndexCastOp(value, IntegerType(64)))
            return self._cast(wide, "int64", dst)
        if dst == "index":  # an integer read used as an index
            if src in te.UNSIGNED_DTYPES and src != "uint64":
                value = self._cast(value, src, "int64")  # zero-extended
            return self.add(arith.IndexCastOp(value, IndexType()))
        src_float, dst_float = src in te.FLOAT_DTYPES, dst in te.FLOAT_DTYPES
        if dst == "bool":
            zero = self._constant(0, src)
            if src_float:
                return self.add(arith.CmpfOp(value, zero, "one"))
            return self.add(arith.CmpiOp(value, zero, "ne"))
        if src_float and dst_float:
            wider = te.FLOAT_DTYPES.index(dst) > te.FLOAT_DTYPES.index(src)
            return self.add((arith.ExtFOp if wider else arith.TruncFOp)(value, to))
        if src_float:
            op = arith.FPToUIOp if dst in te.UNSIGNED_DTYPES else arith.FPToSIOp
            return self.add(op(value, to))  # type: ignore[arg-type]
        if dst_float:
            op = arith.UIToFPOp if _unsigned(src) else arith.SIToFPOp
            return self.add(op(value, to))  # type: ignore[arg-type]
        # integer to integer: float and bool targets returned above, an index
        # source was widened to int64 first
        src_type = ir_type(src)
        assert isinstance(src_type, IntegerType) and isinstance(to, IntegerType), (
            f"expected an integer cast, got {src} -> {dst}"
        )
        if to.width.data > src_type.width.data:
            op = arith.ExtUIOp if _unsigned(src) else arith.ExtSIOp
            return self.add(op(value, to))
        if to.width.data == src_type.width.data:
            return value  # int8 <-> uint8: the same signless bits
        return self.add(arith.TruncIOp(value, to))  # type: ignore[arg-type]
