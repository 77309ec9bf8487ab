"""Scalar expression trees of the TE language: the node classes and the typing
rules of their operators (`ember.te` re-exports the nodes and builds on them).

    i >= 1            Compare("ge", i, Const(1, "index"))      a bool
    A[i] * 2          Binary("mul", Read(A, [i]), Const(2.0, "float32"))

A number takes the type of the other operand; a loop index used with data takes
the data's type (as in TVM); other mixed types need `.astype`.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ember.runtime.errors import EmberTypeError, EmberValueError
from ember.runtime.shape_expr import SymExpr

if TYPE_CHECKING:
    from ember.te.operation import CommReducer, Tensor


SIGNED_DTYPES = ("int8", "int16", "int32", "int64")
UNSIGNED_DTYPES = ("uint8", "uint16", "uint32", "uint64")
"""Unsigned integers are signless in te IR (as in `arith`): the operators
below choose the unsigned ops for them (`divui`, `cmpi ult`, `uitofp`, ...)."""
INT_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
FLOAT_DTYPES = ("float16", "float32", "float64")
DTYPES = (*FLOAT_DTYPES, *INT_DTYPES, "bool")


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise EmberValueError(f"unsupported dtype '{dtype}'; expected one of {DTYPES}")
    return dtype


class Expr:
    """A scalar expression; `dtype` is a dtype name or "index" for loop indices.

    Comparisons build bool expressions. `a == b` and `a != b` do too, as in TVM,
    and like TVM's they also answer Python's own questions (`x in axes`,
    `axes.index(x)`) by identity when both sides are te expressions.
    """

    dtype: str
    # `==` builds an expression, so hashing stays by identity.
    __hash__ = object.__hash__
    # numpy scalars on the left (`np.float32(2) * x`) defer to te's operators.
    __array_ufunc__ = None

    @property
    def children(self) -> list[Expr]:
        """The operands of this expression."""
        return []

    def __add__(self, other: ExprLike) -> Expr:
        return binary("add", self, other)

    def __radd__(self, other: ExprLike) -> Expr:
        return binary("add", other, self)

    def __sub__(self, other: ExprLike) -> Expr:
        return binary("sub", self, other)

    def __rsub__(self, other: ExprLike) -> Expr:
        return binary("sub", other, self)

    def __mul__(self, other: ExprLike) -> Expr:
        return binary("mul", self, other)

    def __rmul__(self, other: ExprLike) -> Expr:
        return binary("mul", other, self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return binary("div", self, other)

    def __rtruediv__(self, other: ExprLike) -> Expr:
        return binary("div", other, self)

    def __floordiv__(self, other: ExprLike) -> Expr:
        return binary("floordiv", self, other)

    def __mod__(self, other: ExprLike) -> Expr:
        return binary("mod", self, other)

    def __neg__(self) -> Expr:
        return binary("sub", make_const(0, self.dtype), self)

    def __and__(self, other: ExprLike) -> Expr:
        return binary("and", self, other)

    def __rand__(self, other: ExprLike) -> Expr:
        return binary("and", other, self)

    def __or__(self, other: ExprLike) -> Expr:
        return binary("or", self, other)

    def __ror__(self, other: ExprLike) -> Expr:
        return binary("or", other, self)

    def __xor__(self, other: ExprLike) -> Expr:
        return binary("xor", self, other)

    def __rxor__(self, other: ExprLike) -> Expr:
        return binary("xor", other, self)

    def __lshift__(self, other: ExprLike) -> Expr:
        return binary("shl", self, other)

    def __rshift__(self, other: ExprLike) -> Expr:
        """Arithmetic shift of a signed integer, logical of an unsigned one."""
        return binary("shr", self, other)

    def __invert__(self) -> Expr:
        """Logical not of a bool, bitwise not of an integer (numpy's `~`)."""
        if self.dtype in FLOAT_DTYPES:
            raise EmberTypeError(
                f"'~' needs a bool or integer operand, got {self.dtype}"
            )
        # every bit set: true, -1, or an unsigned type's largest value
        ones = -1 if self.dtype in SIGNED_DTYPES else _INT_RANGES[self.dtype][1]
        return binary("xor", self, make_const(ones, self.dtype))

    def __lt__(self, other: ExprLike) -> Expr:
        return compare("lt", self, other)

    def __le__(self, other: ExprLike) -> Expr:
        return compare("le", self, other)

    def __gt__(self, other: ExprLike) -> Expr:
        return compare("gt", self, other)

    def __ge__(self, other: ExprLike) -> Expr:
        return compare("ge", self, other)

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        if not is_operand(other):
            return NotImplemented
        return compare("eq", self, other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        if not is_operand(other):
            return NotImplemented
        return compare("ne", self, other)  # type: ignore[arg-type]

    def astype(self, dtype: str) -> Expr:
        """This expression converted to `dtype`; an integer value converts to
        "index" too, to index a tensor by a value read from another (a gather)."""
        if dtype == "index":
            if self.dtype not in (*INT_DTYPES, "index"):
                raise EmberTypeError(
                    f"only integers index tensors; convert the {self.dtype} value "
                    "to an int dtype first"
                )
            return self if self.dtype == "index" else Cast("index", self)
        return Cast(check_dtype(dtype), self)

    def __bool__(self) -> bool:
        raise EmberTypeError(
            "a te expression has no truth value; use te.if_then_else / te.select "
            "for conditions, te.all / te.any to combine them, te.max / te.min"
        )


ExprLike = Expr | int | float | SymExpr


class Const(Expr):
    def __init__(self, value: int | float, dtype: str):
        self.value, self.dtype = value, dtype


class Var(Expr):
    """A loop index: an axis of a compute or a reduction axis; its extent is
    an int or a symbolic size (`te.var`)."""

    def __init__(
        self, name: str, lower: int, extent: int | SymExpr, reduce: bool = False
    ):
        self.name, self.dtype = name, "index"
        self.lower, self.extent, self.reduce = lower, extent, reduce

    def __repr__(self) -> str:
        kind = "reduce_axis" if self.reduce else "axis"
        return f"{kind}({self.name}, [{self.lower}, {self.lower + self.extent}))"


class Size(Expr):
    """A symbolic size (`te.var("n")`, `n + 1`) used as a value: an index known
    when the function is called."""

    def __init__(self, value: SymExpr):
        self.value, self.dtype = value, "index"

    def __repr__(self) -> str:
        return f"Size({self.value})"


class Param(Expr):
    """An argument of a combiner built by `comm_reducer`: the accumulated value
    or the next one."""

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype

    def __repr__(self) -> str:
        return f"Param({self.name}: {self.dtype})"


class Binary(Expr):
    def __init__(self, op: str, lhs: Expr, rhs: Expr):
        self.op, self.lhs, self.rhs, self.dtype = op, lhs, rhs, lhs.dtype

    @property
    def children(self) -> list[Expr]:
        return [self.lhs, self.rhs]


COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")


class Compare(Expr):
    """`lhs <op> rhs` as a bool: op is lt, le, gt, ge, eq or ne; floats compare
    as numpy does (NaN is unequal to everything, and only `ne` holds for it)."""

    def __init__(self, op: str, lhs: Expr, rhs: Expr, written: tuple[object, object]):
        self.op, self.lhs, self.rhs, self.dtype = op, lhs, rhs, "bool"
        self.written = written

    @property
    def children(self) -> list[Expr]:
        return [self.lhs, self.rhs]

    def __bool__(self) -> bool:
        # TVM's answer for `==` between expressions: are they the same object?
        # It keeps `x in axes` and `axes.index(x)` working; anything else (an `if`
        # on a comparison with a number) is a mistake worth a clear error.
        a, b = self.written
        if self.op in ("eq", "ne") and isinstance(a, Expr) and isinstance(b, Expr):
            return (a is b) == (self.op == "eq")
        return Expr.__bool__(self)


class Call(Expr):
    """An intrinsic such as exp, or max/min of two values."""

    def __init__(self, fn: str, args: Sequence[Expr]):
        self.fn, self.args, self.dtype = fn, list(args), args[0].dtype

    @property
    def children(self) -> list[Expr]:
        return self.args


class Cast(Expr):
    def __init__(self, dtype: str, value: Expr):
        self.dtype, self.value = dtype, value

    @property
    def children(self) -> list[Expr]:
        return [self.value]


class Select(Expr):
    """`true_value` where `cond` holds, else `false_value`.

    `guarded` (te.if_then_else) evaluates only the side that is taken, so a side
    may read a tensor out of bounds when not taken (padding); te.select evaluates
    both, which avoids a branch.
    """

    def __init__(self, cond: Expr, true_value: Expr, false_value: Expr, guarded: bool):
        self.cond, self.true_value, self.false_value = cond, true_value, false_value
        self.guarded, self.dtype = guarded, true_value.dtype

    @property
    def children(self) -> list[Expr]:
        return [self.cond, self.true_value, self.false_value]


class Read(Expr):
    def __init__(self, tensor: Tensor, indices: Sequence[Expr]):
        self.tensor, self.indices, self.dtype = tensor, list(indices), tensor.dtype

    @property
    def children(self) -> list[Expr]:
        return self.indices


class Reduce(Expr):
    """`combiner` of `body` over `axes`; only valid as the whole body of a compute.

    `combiner` is sum, max, min or the name of a `comm_reducer`, whose `reducer`
    then gives the combining expression and the identity for this dtype.
    """

    def __init__(
        self,
        combiner: str,
        body: Expr,
        axes: Sequence[Var],
        reducer: CommReducer | None = None,
    ):
        self.combiner, self.body, self.axes = combiner, body, list(axes)
        self.dtype = body.dtype
        self.custom = None if reducer is None else reducer.instantiate(self.dtype)

    @property
    def children(self) -> list[Expr]:
        return [self.body]


_INT_RANGES = {
    **{f"int{b}": (-(2 ** (b - 1)), 2 ** (b - 1) - 1) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (0, 2**b - 1) for b in (8, 16, 32, 64)},
    "index": (-(2**63), 2**63 - 1),
    "bool": (0, 1),
}


def int_range(dtype: str) -> tuple[int, int]:
    """The lowest and highest value of an integer dtype (or index, bool)."""
    return _INT_RANGES[dtype]


def make_const(value: int | float, dtype: str) -> Const:
    if dtype in FLOAT_DTYPES:
        return Const(float(value), dtype)
    if isinstance(value, float) and not value.is_integer():
        raise EmberTypeError(f"cannot use the float {value} in a {dtype} expression")
    low, high = _INT_RANGES[dtype]
    if not low <= int(value) <= high:
        raise EmberTypeError(f"the constant {value} does not fit {dtype}")
    return Const(int(value), dtype)


def is_number(value: object) -> bool:
    return isinstance(value, numbers.Real)


def is_operand(value: object) -> bool:
    return isinstance(value, Expr | SymExpr) or is_number(value)


def as_expr(value: ExprLike, like: str) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, SymExpr):
        return Size(value)
    if isinstance(value, numbers.Integral):
        return make_const(int(value), like)
    if isinstance(value, numbers.Real):
        return make_const(float(value), like)
    raise EmberTypeError(f"expected a te expression or a number, got {type(value)}")


def unify(what: str, lhs: ExprLike, rhs: ExprLike) -> tuple[Expr, Expr]:
    """Both operands as expressions of one dtype: a number takes the other side's
    type, an index used with data takes the data's type (as in TVM)."""
    if not isinstance(lhs, Expr | SymExpr):
        lhs = as_expr(lhs, as_expr(rhs, "float32").dtype)
    lhs = as_expr(lhs, "index")
    rhs = as_expr(rhs, lhs.dtype)
    if lhs.dtype != rhs.dtype:
        if lhs.dtype == "index":
            lhs = Cast(rhs.dtype, lhs)
        elif rhs.dtype == "index":
            rhs = Cast(lhs.dtype, rhs)
        else:
            raise EmberTypeError(
                f"{what} of {lhs.dtype} and {rhs.dtype}: convert one side "
                "with .astype(...)"
            )
    return lhs, rhs


_LOGIC = {"and": "&", "or": "|", "xor": "^"}
_SHIFTS = {"shl": "<<", "shr": ">>"}


def binary(op: str, lhs: ExprLike, rhs: ExprLike) -> Expr:
    lhs, rhs = unify(f"'{op}'", lhs, rhs)
    if op in _LOGIC:
        if lhs.dtype in FLOAT_DTYPES:
            raise EmberTypeError(
                f"'{_LOGIC[op]}' needs bool or integer operands, got {lhs.dtype}"
            )
    elif op in _SHIFTS:
        if lhs.dtype not in INT_DTYPES:
            raise EmberTypeError(
                f"'{_SHIFTS[op]}' needs integer operands, got {lhs.dtype}"
            )
    elif lhs.dtype == "bool" and op not in ("max", "min"):
        raise EmberTypeError(f"'{op}' of bool values: convert them with .astype(...)")
    if lhs.dtype in FLOAT_DTYPES and op in ("floordiv", "mod"):
        # numpy's float floor division and modulo are built on fmod, which the
        # arith dialect of this xDSL version lacks; refuse rather than differ.
        raise EmberTypeError(f"'//' and '%' need integer operands, got {lhs.dtype}")
    return Binary(op, lhs, rhs)


def compare(op: str, lhs: ExprLike, rhs: ExprLike) -> Expr:
    a, b = unify(f"comparison '{op}'", lhs, rhs)
    return Compare(op, a, b, (lhs, rhs))


def walk(e: Expr) -> list[Expr]:
    """Every expression under `e` (itself included) once, operands first."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children))
    return order
