"""Elementwise operators with numpy broadcasting, and the injective schedule.

Each operator has a scalar form (`UNARY`, `BINARY`, by the name of the graph
op it computes: te expression to te expression, for anchor epilogues) and a
tensor form (`add(a, b)`, `relu(x)`: a `te.compute` over the broadcast shape). A fused chain of injective ops is
written by composing tensor forms on placeholders, and `injective(out, inputs)`
turns it into one kernel: `schedule_injective` inlines every intermediate stage,
so the chain is one loop nest reading its inputs once and writing its output
once.

    x = te.placeholder((1, 64, 56, 56), name="x")
    r = te.placeholder((1, 64, 56, 56), name="r")
    b = te.placeholder((64, 1, 1), name="b")
    k = injective(relu(add(add(x, b), r)), [x, b, r])
    mod = ember.build(k.schedule(), k.args, name="add_relu")

transcendental functions come from `fastmath` (polynomials that vectorize);
`log` and non-integer `pow` stay libm calls (rare in models).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ember import te
from ember.backends.llvm.target import Target
from ember.runtime.errors import EmberTypeError, EmberValueError
from ember.te import Expr
from ember.te.schedule import Schedule, Stage
from ember.topi import fastmath
from ember.topi.kernel import Kernel

Operand = te.Tensor | Expr | float | int

PARALLEL_MIN_WORK = 1 << 18
"""Work (elements x `body_cost`) below which a kernel runs on one thread.
Measured on the 2-core Zen 5 (best of many calls): libgomp's fork and join
cost ~0.5-1 us plus the uneven split, so a relu (cost ~3) pays for a second
thread from ~100k elements (65k: 3.7 us serial, 4.0 parallel; 262k: 22 vs 11)
and a polynomial exp (cost ~14) from ~14k."""

CHUNK = 1024
"""About the inner chunk (elements) a long innermost axis is split into when the
outer axes alone cannot feed the threads; rounded to whole vectors of the
target."""

MIN_PARALLEL_ITERATIONS = 8


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy's broadcast of `shapes` (aligned on the right; 1 stretches).

    Raises:
        ValueError: naming the shapes, when two extents differ and neither is 1.
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for d, extent in enumerate(shape, ndim - len(shape)):
            if extent == 1 or extent == out[d]:
                continue
            if out[d] != 1:  # symbolic sizes too: equal expressions only
                raise EmberValueError(
                    "expected shapes that broadcast, got "
                    + " and ".join(str(tuple(s)) for s in shapes)
                )
            out[d] = extent
    return tuple(out)


def broadcast_read(
    t: Operand, indices: Sequence[Expr], out_shape: Sequence[int]
) -> Expr | float:
    """`t` at output position `indices` under broadcasting: `t`'s axes align
    with the last of the output's, an axis of extent 1 reads index 0. A number
    (or a scalar expression) is itself."""
    if isinstance(t, Expr):
        return t
    if not isinstance(t, te.Tensor):
        return float(t)
    offset = len(out_shape) - t.ndim
    idx = [
        0 if extent == 1 and out_shape[offset + d] != 1 else indices[offset + d]
        for d, extent in enumerate(t.shape)
    ]
    return t[tuple(idx)]


def _pow(x: Expr, y: Expr | float) -> Expr:
    """x ** y as numpy: exact small integer exponents by multiplication, else
    e^(y log|x|) with the sign of odd integer powers of negative x, NaN for
    other negative bases, and x ** 0 = 1."""
    if isinstance(y, float | int):
        special = {1.0: lambda: x, 2.0: lambda: x * x, 3.0: lambda: x * x * x}
        if float(y) in special:
            return special[float(y)]()
        if y == 0.5:
            return te.sqrt(x)
        if y == -1.0:
            return 1.0 / x
        if y == 0.0:
            return te.const(1.0)
        y = te.const(float(y))
    magnitude = fastmath.exp(y * te.log(te.abs(x)))
    whole = y.astype("int32")
    is_int = whole.astype("float32") == y
    odd = te.not_equal(whole % 2, 0)
    negative = te.select(is_int, te.select(odd, 0.0 - magnitude, magnitude), math.nan)
    result = te.select(x < 0.0, negative, magnitude)
    return te.select(y == 0.0, 1.0, result)


def nan_max(a: Expr, b: Expr | float) -> Expr:
    """The larger of a and b, NaN if either is NaN (numpy's maximum but for
    the sign of a zero result): compares and a blend, where `te.max`'s
    `arith.maximumf` expands on x86 to twice the instructions and latency
    (it also orders -0 below +0)."""
    return te.select((a < b) | te.not_equal(b, b), b, a)


def nan_min(a: Expr, b: Expr | float) -> Expr:
    """The smaller of a and b, NaN if either is NaN (see `nan_max`)."""
    return te.select((b < a) | te.not_equal(b, b), b, a)


MAX_REDUCER = te.comm_reducer(nan_max, lambda t: -math.inf, "nanmax")
"""`nan_max` as a reducer: `MAX_REDUCER(expr, axis=k)` like `te.max`."""


def _relu(x: Expr) -> Expr:
    return te.select(x < 0.0, 0.0, x)  # NaN is not < 0: it stays


def _abs(x: Expr) -> Expr:
    if x.dtype in ("float16", "float32", "float64"):
        return te.abs(x)
    return te.select(x < 0, 0 - x, x)  # MIN wraps to itself, as in numpy


UNARY: dict[str, Callable[[Expr], Expr]] = {
    "relu": _relu,
    "sigmoid": fastmath.sigmoid,
    "tanh": fastmath.tanh,
    "exp": fastmath.exp,
    "erf": fastmath.erf,
    "gelu": fastmath.gelu,
    "sqrt": te.sqrt,
    "log": te.log,
    "abs": _abs,
    "neg": lambda x: 0.0 - x,
}
"""Scalar forms of the unary operators, by name (`graph.relu` is "relu")."""

BINARY: dict[str, Callable[[Expr, Expr | float], Expr]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": nan_max,
    "minimum": nan_min,
    "pow": _pow,
}
"""Scalar forms of the binary operators; the right operand may be a number,
which `pow` specializes (2 -> x * x, 0.5 -> sqrt)."""


def clip_expr(x: Expr, lo: float | None, hi: float | None) -> Expr:
    """numpy.clip of a scalar (NaN stays NaN); a missing bound is no bound."""
    if lo is not None:
        x = te.select(x < float(lo), float(lo), x)
    if hi is not None:
        x = te.select(x > float(hi), float(hi), x)
    return x


def _name(op: str, name: str | None) -> str:
    return name or op


def map_unary(fn: Callable[[Expr], Expr], x: te.Tensor, name: str) -> te.Tensor:
    """`fn` applied to every element of `x`."""
    return te.compute(x.shape, lambda *i: fn(x[i]), name=name)


def map_binary(
    fn: Callable[[Expr, Expr | float], Expr], a: Operand, b: Operand, name: str
) -> te.Tensor:
    """`fn(a, b)` elementwise under numpy broadcasting; a number operand is a
    constant (one side must be a tensor)."""
    shapes = [t.shape for t in (a, b) if isinstance(t, te.Tensor)]
    if not shapes:
        raise EmberTypeError(
            f"{name}: expected at least one tensor operand, got {a}, {b}"
        )
    shape = broadcast_shape(*shapes)

    def element(*i: Expr) -> Expr:
        x, y = broadcast_read(a, i, shape), broadcast_read(b, i, shape)
        return fn(x if isinstance(x, Expr) else te.const(x), y)

    return te.compute(shape, element, name=name)


def _binary(op: str) -> Callable[..., te.Tensor]:
    def apply(a: Operand, b: Operand, name: str | None = None) -> te.Tensor:
        return map_binary(BINARY[op], a, b, _name(op, name))

    apply.__name__ = op
    apply.__doc__ = f"`{op}` of `a` and `b` with numpy broadcasting (graph.{op})."
    return apply


def _unary(op: str) -> Callable[..., te.Tensor]:
    def apply(x: te.Tensor, name: str | None = None) -> te.Tensor:
        return map_unary(UNARY[op], x, _name(op, name))

    apply.__name__ = op
    apply.__doc__ = f"`{op}` of every element of `x` (graph.{op})."
    return apply


add, sub, mul, div = _binary("add"), _binary("sub"), _binary("mul"), _binary("div")
maximum, minimum, power = _binary("maximum"), _binary("minimum"), _binary("pow")
relu, sigmoid, tanh = _unary("relu"), _unary("sigmoid"), _unary("tanh")
exp, erf, gelu = _unary("exp"), _unary("erf"), _unary("gelu")
sqrt, log = _unary("sqrt"), _unary("log")
negative, absolute = _unary("neg"), _unary("abs")


def clip(
    x: te.Tensor, lo: float | None, hi: float | None, name: str | None = None
) -> te.Tensor:
    """Every element of `x` clipped to [lo, hi] (graph.clip; relu6 is 0..6)."""
    return map_unary(lambda v: clip_expr(v, lo, hi), x, _name("clip", name))


def batch_norm(
    x: te.Tensor,
    gamma: te.Tensor,
    beta: te.Tensor,
    mean: te.Tensor,
    var: te.Tensor,
    epsilon: float = 1e-5,
    name: str | None = None,
) -> te.Tensor:
    """Inference batch norm over channel axis 1 (graph.batch_norm when it was
    not folded): (x - mean) / sqrt(var + eps) * gamma + beta, per channel."""
    channels = x.shape[1]
    for t in (gamma, beta, mean, var):
        if t.shape != (channels,):
            raise EmberValueError(
                f"batch_norm: expected ({channels},) statistics for "
                f"{x.shape}, got {t.name} of {t.shape}"
            )

    def element(*i: Expr) -> Expr:
        c = i[1]
        scale = gamma[c] / te.sqrt(var[c] + float(epsilon))
        return (x[i] - mean[c]) * scale + beta[c]

    return te.compute(x.shape, element, name=_name("batch_norm", name))


# --- schedules ----------------------------------------------------------------


def compute_of(x: Stage | te.Tensor) -> te.ComputeOp:
    """The compute op of a stage or computed tensor (schedules only touch those)."""
    op = x.op
    if not isinstance(op, te.ComputeOp):
        raise EmberTypeError(f"expected a computed tensor, got '{op.name}'")
    return op


def inline_injective(s: Schedule, keep: Sequence[te.Tensor] = ()) -> None:
    """Inline every compute stage of `s` that is not an output, not in `keep`
    and not a reduction, into its readers."""
    kept = {id(t.op) for t in keep} | {id(op) for op in s.outputs}
    for stage in list(s.stages.values()):
        op = stage.op
        if type(op) is te.ComputeOp and id(op) not in kept and not op.reduce_axis:
            stage.compute_inline()


def body_cost(t: te.Tensor) -> int:
    """A rough per-element cost of computing `t` with its injective producers
    inlined: polynomial math counts as ~20 simple ops."""
    cost, seen, stack = 0, set(), [t]
    while stack:
        cur = stack.pop()
        if id(cur) in seen or not isinstance(cur.op, te.ComputeOp):
            continue
        seen.add(id(cur))
        for e in te.walk(cur.op.body):
            cost += 1
            if isinstance(e, te.Read):
                stack.append(e.tensor)
    return max(1, cost // 4)


def schedule_elementwise(
    stage: Stage, shape: Sequence[int], cost: int = 1, target: Target | None = None
) -> None:
    """The default CPU schedule of one stage over `shape` (row-major): the
    innermost axis vectorized (`loop-vectorize` strip-mines it into vectors of
    the target's width), the outer axes fused and run in parallel when the work
    pays for the threads. A long innermost axis under few outer iterations is
    split into chunks of whole `target` vectors (None: `Target.current()`) so
    the threads still get work."""
    axes = list(compute_of(stage).axis)
    if not axes:  # a scalar: nothing to split
        return
    # The innermost axis of extent > 1 is contiguous when the axes after it
    # are all 1 ((1, 1280, 1, 1) vectorizes its channels).
    last = max((d for d, e in enumerate(shape) if e > 1), default=len(shape) - 1)
    numel = math.prod(shape)
    inner = axes[last]
    outer_iterations = numel // shape[last]
    parallel = numel * cost >= PARALLEL_MIN_WORK
    if parallel and outer_iterations < MIN_PARALLEL_ITERATIONS and shape[last] > CHUNK:
        lanes = Target.resolve(target).vector_lanes(compute_of(stage).body.dtype)
        chunk, inner = stage.split(inner, factor=max(lanes, CHUNK // lanes * lanes))
        axes = [*axes[:last], chunk]
    else:
        axes = axes[:last]
    if shape[last] > 1:
        stage.vectorize(inner)
    if parallel and axes:
        _parallel(stage, axes)


def _parallel(stage: Stage, axes: Sequence) -> None:
    """Run the outer `axes` (fused when several) in parallel."""
    stage.parallel(stage.fuse(*axes) if len(axes) > 1 else axes[0])


def schedule_injective(
    s: Schedule, output: te.Tensor, target: Target | None = None
) -> None:
    """The default schedule of an injective kernel: intermediates inlined, the
    output scheduled by `schedule_elementwise` for `target`; where it
    transposes (`transposed_axis`), by tiles of a vector by a vector of the
    two axes (`schedule_transpose`); where its innermost axis indexes an
    input modulo or divided by a period (`innermost_period`: a reshape after
    a transpose, attention's heads merged), by rows of that period."""
    inline_injective(s)
    across = transposed_axis(output)
    if across is not None and schedule_transpose(s[output], output, across, target):
        return
    lanes = Target.resolve(target).vector_lanes(output.dtype)
    period = innermost_period(output, lanes)
    stage, shape = s[output], list(output.shape)
    if period is None:
        schedule_elementwise(stage, shape, body_cost(output), target)
        return
    outer, inner = stage.split(compute_of(stage).axis[-1], factor=period)
    stage.vectorize(inner)
    if math.prod(shape) * body_cost(output) >= PARALLEL_MIN_WORK:
        _parallel(stage, [*compute_of(stage).axis[:-1], outer])


def _exprs_through(t: te.Tensor):
    """Every expression of `t`'s body and of the injective stages it reads
    (inlined into it), each with the map from its stage's axes (by id) to
    the axes of `t` they follow."""
    op = compute_of(t)
    stack = [(op.body, {id(v): {i} for i, v in enumerate(op.axis)})]
    while stack:
        expr, env = stack.pop()
        for e in te.walk(expr):
            yield e, env
            if not isinstance(e, te.Read) or not _inlined(e.tensor):
                continue
            producer = e.tensor.op
            assert isinstance(producer, te.ComputeOp)
            deps = [_axes_of(i, env) for i in e.indices]
            axes = zip(producer.axis, deps, strict=True)
            stack.append((producer.body, {id(v): d for v, d in axes}))


def _inlined(t: te.Tensor) -> bool:
    return isinstance(t.op, te.ComputeOp) and not t.op.reduce_axis


def transposed_axis(t: te.Tensor) -> int | None:
    """The axis of `t` (a computed tensor, its injective producers read
    through) that some input's contiguous last index follows (the innermost
    of the axes it depends on) where `t`'s innermost axis does not: a
    transpose's; None where every input's last index follows the innermost
    axis, or inputs follow different axes."""
    inner = len(t.shape) - 1
    found: set[int] = set()
    if inner < 0:
        return None
    for e, env in _exprs_through(t):
        if isinstance(e, te.Read) and not _inlined(e.tensor) and e.indices:
            last = _axes_of(e.indices[-1], env)
            strided = any(inner in _axes_of(i, env) for i in e.indices[:-1])
            if last and inner not in last and strided:  # not a broadcast
                found.add(max(last))  # the innermost: it varies fastest
    return found.pop() if len(found) == 1 else None


def innermost_period(t: te.Tensor, lanes: int) -> int | None:
    """The least period P (at least a vector of `lanes`, dividing the extent,
    shorter than it) by which an index of `t`'s innermost axis is taken
    modulo or divided (through its injective producers): rows of P keep such
    an index affine, a vector load, where the whole axis would be a gather
    (BERT's heads merged, (4, 128, 64) -> (128, 256): 10.8 -> 3.1 us on Zen
    5); None where there is none."""
    if not t.shape or not isinstance(t.shape[-1], int):
        return None
    inner, extent = len(t.shape) - 1, t.shape[-1]
    periods = {
        e.rhs.value
        for e, env in _exprs_through(t)
        if isinstance(e, te.Binary)
        and e.op in ("mod", "floordiv")
        and isinstance(e.rhs, te.Const)
        and inner in _axes_of(e.lhs, env)
    }
    fits = [
        p
        for p in periods
        if isinstance(p, int) and lanes <= p < extent and extent % p == 0
    ]
    return min(fits, default=None)


def _axes_of(index: te.Expr, env: dict) -> set[int]:
    """The output axes an index expression depends on."""
    deps: set[int] = set()
    for e in te.walk(index):
        if isinstance(e, te.Var):
            deps |= env.get(id(e), set())
    return deps


def schedule_transpose(
    stage: Stage, t: te.Tensor, across: int, target: Target | None
) -> bool:
    """Tile the innermost axis and `across` by the target's vector: each tile
    reads a vector's worth of input rows a vector at a time (its strided
    lanes from lines that stay in cache), writes contiguous vectors. BERT's
    K^T, (128, 4 x 64) -> (4, 64, 128) on Zen 5: 28.7 -> 5.7 us on one
    thread. False (nothing scheduled) where either axis is under a vector."""
    op = compute_of(stage)
    axes = list(op.axis)
    shape = list(t.shape)
    lanes = Target.resolve(target).vector_lanes(t.dtype)
    if (
        not all(isinstance(d, int) for d in shape)
        or min(shape[-1], shape[across]) < lanes
    ):
        return False  # (symbolic sizes: the rows' schedule)
    ao, ai = stage.split(axes[across], factor=lanes)
    lo, li = stage.split(axes[-1], factor=lanes)
    outer = [ao if i == across else a for i, a in enumerate(axes[:-1])]
    stage.reorder(*outer, lo, ai, li)
    stage.vectorize(li)
    if math.prod(shape) * body_cost(t) >= PARALLEL_MIN_WORK:
        _parallel(stage, outer)
    return True


def injective(
    output: te.Tensor,
    placeholders: Sequence[te.Tensor],
    target: Target | None = None,
) -> Kernel:
    """The kernel computing `output`, a chain of injective ops (elementwise,
    broadcast, transform ops) over `placeholders`, as one loop nest.

    Args:
        output: the last tensor of the chain.
        placeholders: the kernel's inputs in call order; every placeholder the
            chain reads must be among them.
        target: the machine the schedule is for (None: `Target.current()`,
            taken now, not when the schedule is made).

    Returns:
        The kernel; its default schedule is `schedule_injective`.
    """
    machine = Target.resolve(target)
    if not isinstance(output.op, te.ComputeOp):
        raise EmberValueError(
            f"kernel: expected a computed output, got the placeholder "
            f"'{output.name}'; copy it with te.compute"
        )
    missing = [
        t.name
        for t in _placeholders_of(output)
        if all(t is not p for p in placeholders)
    ]
    if missing:
        raise EmberValueError(
            f"kernel '{output.name}': expected every input among the placeholders, "
            f"got reads of {', '.join(missing)} that are not"
        )
    unique_stage_names(output)
    return Kernel(
        output,
        list(placeholders),
        schedule_fn=lambda s: schedule_injective(s, output, machine),
        attrs={"pattern": "injective"},
    )


def unique_stage_names(output: te.Tensor) -> None:
    """Rename the compute stages feeding `output` so no two share a name (a
    schedule names stages): the second `add` becomes `add.1`, and so on."""
    taken: set[str] = set()
    for op in _computes_of(output):
        name, n = op.name, 1
        while name in taken:
            name, n = f"{op.name}.{n}", n + 1
        op.name = name
        taken.add(name)


def _computes_of(t: te.Tensor) -> list[te.ComputeOp]:
    """The compute ops `t` depends on, producers first."""
    order: list[te.ComputeOp] = []
    seen: set[int] = set()

    def visit(cur: te.Tensor) -> None:
        if id(cur.op) in seen or not isinstance(cur.op, te.ComputeOp):
            return
        seen.add(id(cur.op))
        for t in cur.op.input_tensors:
            visit(t)
        order.append(cur.op)

    visit(t)
    return order


def _placeholders_of(t: te.Tensor) -> list[te.Tensor]:
    found: dict[int, te.Tensor] = {}
    stack, seen = [t], set()
    while stack:
        cur = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur.op, te.PlaceholderOp):
            found[id(cur)] = cur
        elif isinstance(cur.op, te.ComputeOp):
            stack.extend(cur.op.input_tensors)
    return list(found.values())
