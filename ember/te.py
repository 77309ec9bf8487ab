"""Tensor expressions in Python, TVM's TE: `placeholder`, `compute`, `reduce_axis`.

    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)

Expressions are small Python trees; `ember.lower` turns them into te IR
(`te.compute` ops in a `func.func`), the first text stage of every compilation.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ember.schedule import Schedule

DTYPES = ("float16", "float32", "float64", "int8", "int32", "int64", "bool")
FLOAT_DTYPES = ("float16", "float32", "float64")


def _check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype '{dtype}'; expected one of {DTYPES}")
    return dtype


class Expr:
    """A scalar expression; `dtype` is a dtype name or "index" for loop indices."""

    dtype: str

    def __add__(self, other: ExprLike) -> Expr:
        return _binary("add", self, other)

    def __radd__(self, other: ExprLike) -> Expr:
        return _binary("add", other, self)

    def __sub__(self, other: ExprLike) -> Expr:
        return _binary("sub", self, other)

    def __rsub__(self, other: ExprLike) -> Expr:
        return _binary("sub", other, self)

    def __mul__(self, other: ExprLike) -> Expr:
        return _binary("mul", self, other)

    def __rmul__(self, other: ExprLike) -> Expr:
        return _binary("mul", other, self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return _binary("div", self, other)

    def __rtruediv__(self, other: ExprLike) -> Expr:
        return _binary("div", other, self)

    def __floordiv__(self, other: ExprLike) -> Expr:
        return _binary("floordiv", self, other)

    def __mod__(self, other: ExprLike) -> Expr:
        return _binary("mod", self, other)

    def __neg__(self) -> Expr:
        return _binary("sub", _const(0, self.dtype), self)

    def astype(self, dtype: str) -> Expr:
        """This expression converted to `dtype`."""
        return Cast(_check_dtype(dtype), self)

    def __bool__(self) -> bool:
        raise TypeError(
            "a te expression has no truth value; use te.max/te.min or arithmetic"
        )


ExprLike = Expr | int | float


class Const(Expr):
    def __init__(self, value: int | float, dtype: str):
        self.value, self.dtype = value, dtype


class Var(Expr):
    """A loop index: an axis of a compute or a reduction axis."""

    def __init__(self, name: str, lower: int, extent: int, reduce: bool = False):
        self.name, self.dtype = name, "index"
        self.lower, self.extent, self.reduce = lower, extent, reduce

    def __repr__(self) -> str:
        kind = "reduce_axis" if self.reduce else "axis"
        return f"{kind}({self.name}, [{self.lower}, {self.lower + self.extent}))"


class Binary(Expr):
    def __init__(self, op: str, lhs: Expr, rhs: Expr):
        self.op, self.lhs, self.rhs, self.dtype = op, lhs, rhs, lhs.dtype


class Call(Expr):
    """An intrinsic such as exp, or max/min of two values."""

    def __init__(self, fn: str, args: Sequence[Expr]):
        self.fn, self.args, self.dtype = fn, list(args), args[0].dtype


class Cast(Expr):
    def __init__(self, dtype: str, value: Expr):
        self.dtype, self.value = dtype, value


class Read(Expr):
    def __init__(self, tensor: Tensor, indices: Sequence[Expr]):
        self.tensor, self.indices, self.dtype = tensor, list(indices), tensor.dtype


class Reduce(Expr):
    """`combiner` of `body` over `axes`; only valid as the whole body of a compute."""

    def __init__(self, combiner: str, body: Expr, axes: Sequence[Var]):
        self.combiner, self.body, self.axes = combiner, body, list(axes)
        self.dtype = body.dtype


_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "index": (-(2**63), 2**63 - 1),
    "bool": (0, 1),
}


def _const(value: int | float, dtype: str) -> Const:
    if dtype in FLOAT_DTYPES:
        return Const(float(value), dtype)
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"cannot use the float {value} in a {dtype} expression")
    low, high = _INT_RANGES[dtype]
    if not low <= int(value) <= high:
        raise TypeError(f"the constant {value} does not fit {dtype}")
    return Const(int(value), dtype)


def _as_expr(value: ExprLike, like: str) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool | int | float):
        return _const(value, like)
    raise TypeError(f"expected a te expression or a number, got {type(value)}")


def _binary(op: str, lhs: ExprLike, rhs: ExprLike) -> Expr:
    if not isinstance(lhs, Expr):
        lhs = _as_expr(lhs, _as_expr(rhs, "float32").dtype)
    rhs = _as_expr(rhs, lhs.dtype)
    if lhs.dtype != rhs.dtype:
        # An index used in arithmetic with data takes the data's type, as in TVM.
        if lhs.dtype == "index":
            lhs = Cast(rhs.dtype, lhs)
        elif rhs.dtype == "index":
            rhs = Cast(lhs.dtype, rhs)
        else:
            raise TypeError(
                f"'{op}' of {lhs.dtype} and {rhs.dtype}: convert one side "
                "with .astype(...)"
            )
    if lhs.dtype == "bool" and op not in ("max", "min"):
        raise TypeError(f"'{op}' of bool values: convert them with .astype(...)")
    if lhs.dtype in FLOAT_DTYPES and op in ("floordiv", "mod"):
        # numpy's float floor division and modulo are built on fmod, which the
        # arith dialect of this xDSL version lacks; refuse rather than differ.
        raise TypeError(f"'//' and '%' need integer operands, got {lhs.dtype}")
    return Binary(op, lhs, rhs)


class Operation:
    """A stage of the computation: a placeholder or a compute."""

    name: str
    output: Tensor


class PlaceholderOp(Operation):
    def __init__(self, name: str):
        self.name = name


class ComputeOp(Operation):
    """`axis` holds the output's loop indices, `reduce_axis` the reduction's."""

    def __init__(self, name: str, axis: list[Var], body: Expr):
        self.name, self.axis, self.body = name, axis, body
        self.reduce_axis = body.axes if isinstance(body, Reduce) else []

    def input_tensors(self) -> list[Tensor]:
        found: dict[int, Tensor] = {}

        def visit(e: Expr) -> None:
            if isinstance(e, Read):
                found.setdefault(id(e.tensor), e.tensor)
                for i in e.indices:
                    visit(i)
            elif isinstance(e, Binary):
                visit(e.lhs)
                visit(e.rhs)
            elif isinstance(e, Call):
                for a in e.args:
                    visit(a)
            elif isinstance(e, Cast):
                visit(e.value)
            elif isinstance(e, Reduce):
                visit(e.body)

        visit(self.body)
        return list(found.values())


class Tensor:
    """The result of a placeholder or a compute; index it to read an element."""

    def __init__(self, shape: tuple[int, ...], dtype: str, op: Operation):
        self.shape, self.dtype, self.op = shape, dtype, op
        op.output = self

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: ExprLike | tuple[ExprLike, ...]) -> Expr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise IndexError(
                f"tensor '{self.name}' has {self.ndim} dimensions, "
                f"got {len(indices)} indices"
            )
        index_exprs = [_index(i, self.name) for i in indices]
        return Read(self, index_exprs)

    def __repr__(self) -> str:
        return f"Tensor({self.name}, shape={self.shape}, dtype={self.dtype})"


def _index(value: ExprLike, tensor: str) -> Expr:
    if isinstance(value, int) and not isinstance(value, bool):
        return Const(value, "index")
    if isinstance(value, Expr) and value.dtype == "index":
        return value
    raise TypeError(f"indices of '{tensor}' must be loop indices or ints, got {value}")


def _shape(shape: int | Sequence[int], what: str) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise ValueError(f"{what}: expected positive int extents, got {dims}")
    return dims


def placeholder(
    shape: int | Sequence[int], dtype: str = "float32", name: str = "placeholder"
) -> Tensor:
    """An input tensor of the computation.

    Args:
        shape: static extents.
        dtype: element type name, e.g. "float32".
        name: the argument's name, used in error messages of compiled functions.

    Returns:
        The tensor.
    """
    dims = _shape(shape, f"placeholder '{name}'")
    return Tensor(dims, _check_dtype(dtype), PlaceholderOp(name))


def reduce_axis(dom: tuple[int, int], name: str = "rv") -> Var:
    """A reduction axis over `[dom[0], dom[1])`, for `te.sum`, `te.max`, `te.min`."""
    lower, upper = dom
    if upper <= lower:
        raise ValueError(f"reduce_axis '{name}': empty range [{lower}, {upper})")
    return Var(name, lower, upper - lower, reduce=True)


def compute(
    shape: int | Sequence[int],
    fcompute: Callable[..., ExprLike],
    name: str = "compute",
    dtype: str | None = None,
) -> Tensor:
    """A tensor defined by `fcompute(*indices)` at every point of `shape`.

    Args:
        shape: static extents of the result.
        fcompute: takes one loop index per dimension, returns its element.
        name: the tensor's name.
        dtype: element type when `fcompute` returns a plain number.

    Returns:
        The tensor.
    """
    dims = _shape(shape, f"compute '{name}'")
    names = "ijklmnpqrs"
    axis = [
        Var(names[d] if d < len(names) else f"i{d}", 0, extent)
        for d, extent in enumerate(dims)
    ]
    body = _as_expr(fcompute(*axis), dtype or "float32")
    if body.dtype == "index":
        body = Cast(dtype or "int32", body)
    if dtype is not None and body.dtype != dtype:
        body = Cast(_check_dtype(dtype), body)
    _check_reduce_placement(body, top=True, name=name)
    return Tensor(dims, body.dtype, ComputeOp(name, axis, body))


def _check_reduce_placement(e: Expr, top: bool, name: str) -> None:
    children: list[Expr] = []
    if isinstance(e, Reduce):
        if not top:
            raise ValueError(
                f"compute '{name}': a reduction must be the whole body of a compute"
            )
        children = [e.body]
    elif isinstance(e, Binary):
        children = [e.lhs, e.rhs]
    elif isinstance(e, Call):
        children = e.args
    elif isinstance(e, Cast):
        children = [e.value]
    elif isinstance(e, Read):
        children = e.indices
    for c in children:
        _check_reduce_placement(c, top=False, name=name)


def _reducer(combiner: str) -> Callable[..., Expr]:
    def reduce(expr: ExprLike, axis: Var | Sequence[Var]) -> Expr:
        axes = [axis] if isinstance(axis, Var) else list(axis)
        if not axes or not builtins.all(isinstance(a, Var) and a.reduce for a in axes):
            raise ValueError(f"te.{combiner}: axis must be reduce_axis variables")
        return Reduce(combiner, _as_expr(expr, "float32"), axes)

    reduce.__name__ = combiner
    reduce.__doc__ = f"The {combiner} of `expr` over the reduction axes `axis`."
    return reduce


sum = _reducer("sum")  # noqa: A001 - TVM's name
_max_reduce = _reducer("max")
_min_reduce = _reducer("min")


def max(  # noqa: A001 - TVM's name
    a: ExprLike, b: ExprLike | None = None, axis: Var | Sequence[Var] | None = None
) -> Expr:
    """`te.max(expr, axis=k)` reduces; `te.max(a, b)` is the larger of two values."""
    if axis is not None:
        return _max_reduce(a, axis)
    if b is None:
        raise TypeError("te.max takes two values, or an expression and axis=")
    return _call2("max", a, b)


def min(  # noqa: A001 - TVM's name
    a: ExprLike, b: ExprLike | None = None, axis: Var | Sequence[Var] | None = None
) -> Expr:
    """`te.min(expr, axis=k)` reduces; `te.min(a, b)` is the smaller of two values."""
    if axis is not None:
        return _min_reduce(a, axis)
    if b is None:
        raise TypeError("te.min takes two values, or an expression and axis=")
    return _call2("min", a, b)


def _call2(fn: str, a: ExprLike, b: ExprLike) -> Expr:
    pair = _binary(fn, a, b)
    assert isinstance(pair, Binary)
    return Call(fn, [pair.lhs, pair.rhs])


def _unary_math(fn: str) -> Callable[[Expr], Expr]:
    def call(x: Expr) -> Expr:
        x = _as_expr(x, "float32")
        if x.dtype not in FLOAT_DTYPES:
            raise TypeError(f"te.{fn} expects a float expression, got {x.dtype}")
        return Call(fn, [x])

    call.__name__ = fn
    call.__doc__ = f"Elementwise {fn} of a float expression."
    return call


exp = _unary_math("exp")
log = _unary_math("log")
sqrt = _unary_math("sqrt")
tanh = _unary_math("tanh")
abs = _unary_math("abs")  # noqa: A001


def create_schedule(ops: Operation | Sequence[Operation]) -> Schedule:
    """A schedule for the stages computing `ops` (see `ember.schedule`)."""
    from ember.schedule import create_schedule as create

    return create(ops)


def thread_axis(tag: str) -> Var:
    """A GPU thread axis such as "threadIdx.x", for `Stage.bind`."""
    from ember.schedule import thread_axis as axis

    return axis(tag)


def __getattr__(name: str):
    if name == "Schedule":
        from ember.schedule import Schedule

        return Schedule
    raise AttributeError(f"module 'ember.te' has no attribute '{name}'")
