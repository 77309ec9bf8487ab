"""The operations of the TE language: `placeholder`, `compute`, `reduce_axis`,
the reducers and the scalar functions on expressions; `ember.te` re-exports
them."""

from __future__ import annotations

import builtins
import inspect
import numbers
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from ember.runtime.errors import EmberTypeError, EmberValueError
from ember.runtime.shape_expr import Sym, SymExpr
from ember.te import expr as _x
from ember.te.expr import (
    FLOAT_DTYPES,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    ExprLike,
    Param,
    Read,
    Reduce,
    Select,
    Var,
    walk,
)

if TYPE_CHECKING:
    from ember.te.schedule import Schedule


BUILTIN_COMBINERS = ("sum", "max", "min")


Dim = int | SymExpr
"""A tensor's extent: an int, or a symbolic size over `te.var`s."""


def var(name: str) -> SymExpr:
    """A size known only when the function is called (TVM's `te.var` and
    `te.size_var`), for shapes and extents: `n + 1`, `n * 4`, `(n + 7) // 8`.

        n = te.var("n")
        A = te.placeholder((n, 64), name="A")
        B = te.compute((n, 64), lambda i, j: A[i, j] * 2.0, name="B")

    The compiled function takes no argument for it: it reads `n` from the
    shapes of the tensors it is given (some argument must have `n` alone as a
    dim), checks every other dim against it, and a body may use it as a value
    (`A[n - 1 - i]`).
    """
    return Sym(name)


def const(value: int | float | bool, dtype: str = "float32") -> Expr:
    """The constant `value` of type `dtype` (TVM's `tvm.tir.const`)."""
    if not _x.is_number(value):
        raise EmberTypeError(f"te.const: expected a number, got {value!r}")
    return _x.make_const(value, _x.check_dtype(dtype))  # type: ignore[arg-type]


def equal(a: ExprLike, b: ExprLike) -> Expr:
    """`a == b` as a bool expression."""
    return _x.compare("eq", a, b)


def not_equal(a: ExprLike, b: ExprLike) -> Expr:
    """`a != b` as a bool expression (true when either side is NaN)."""
    return _x.compare("ne", a, b)


def _condition(value: ExprLike, what: str) -> Expr:
    if isinstance(value, bool):
        return Const(int(value), "bool")
    cond = _x.as_expr(value, "bool")
    if cond.dtype != "bool":
        raise EmberTypeError(
            f"{what}: expected a bool condition, got {cond.dtype}; compare it "
            "first (x > 0, x != 0)"
        )
    return cond


def all(*conds: ExprLike) -> Expr:  # noqa: A001 - TVM's name
    """True where every condition holds (TVM's `tvm.tir.all`)."""
    return _fold_conditions("all", "and", conds)


def any(*conds: ExprLike) -> Expr:  # noqa: A001 - TVM's name
    """True where at least one condition holds (TVM's `tvm.tir.any`)."""
    return _fold_conditions("any", "or", conds)


def _fold_conditions(fn: str, op: str, conds: Sequence[ExprLike]) -> Expr:
    if not conds:
        raise EmberValueError(f"te.{fn} expects at least one condition")
    result = _condition(conds[0], f"te.{fn}")
    for c in conds[1:]:
        result = Binary(op, result, _condition(c, f"te.{fn}"))
    return result


def logical_not(cond: ExprLike) -> Expr:
    """The negation of a bool condition (also written `~cond`)."""
    return ~_condition(cond, "te.logical_not")


def if_then_else(cond: ExprLike, t: ExprLike, f: ExprLike) -> Expr:
    """`t` where `cond` holds, else `f`; only the taken side is evaluated, so
    padding may read out of bounds on the other side:

        te.if_then_else(te.all(i >= 1, i < n + 1), A[i - 1], 0.0)

    A side that reads tensors becomes a branch (`scf.if`); see `select`.
    """
    return _select("te.if_then_else", cond, t, f, guarded=True)


def select(cond: ExprLike, t: ExprLike, f: ExprLike) -> Expr:
    """`t` where `cond` holds, else `f`, both evaluated (TVM's `tir.Select`):
    branch-free (`arith.select`), so both sides must be safe to compute."""
    return _select("te.select", cond, t, f, guarded=False)


def _select(fn: str, cond: ExprLike, t: ExprLike, f: ExprLike, guarded: bool) -> Expr:
    condition = _condition(cond, fn)
    true_value, false_value = _x.unify(f"{fn}", t, f)
    return Select(condition, true_value, false_value, guarded)


class Operation:
    """A stage of the computation: a placeholder, a compute or an extern."""

    name: str
    output: Tensor

    @property
    def input_tensors(self) -> list[Tensor]:
        """The tensors this stage reads, each once, in first-read order (TVM's
        `op.input_tensors`); a placeholder reads none."""
        return []


class PlaceholderOp(Operation):
    def __init__(self, name: str):
        self.name = name


class ComputeOp(Operation):
    """`axis` holds the output's loop indices, `reduce_axis` the reduction's."""

    def __init__(self, name: str, axis: list[Var], body: Expr):
        self.name, self.axis, self.body = name, axis, body
        self.reduce_axis = body.axes if isinstance(body, Reduce) else []

    @property
    def input_tensors(self) -> list[Tensor]:
        found: dict[int, Tensor] = {}
        for e in walk(self.body):
            if isinstance(e, Read):
                found.setdefault(id(e.tensor), e.tensor)
        return list(found.values())


class Tensor:
    """The result of a placeholder or a compute; index it to read an element.

    `shape` is typed for ints, the common case: a symbolic dim (`te.var`) is
    a `SymExpr`, which computes as ints do (`+ - * // %`) and refuses to be
    compared as one (`sym_eq` decides), as the graph's shape rules see it."""

    shape: tuple[int, ...]

    def __init__(self, shape: tuple[Dim, ...], dtype: str, op: Operation):
        check_size(op.name, shape, dtype)
        self.shape = cast("tuple[int, ...]", shape)
        self.dtype, self.op = dtype, op
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


MAX_BYTES = 2**63 - 1
"""The largest tensor, in bytes: compiled code computes sizes, offsets and
indices in int64 (the packed ABI's overlap check, byte offsets, loop bounds)."""

_ITEM_BYTES = {"bool": 1, "int8": 1, "uint8": 1, "float16": 2, "int16": 2, "uint16": 2}


def check_size(name: str, shape: Sequence[Dim], dtype: str) -> None:
    """Refuse a tensor whose byte size does not fit in int64 (a symbolic one
    is checked when called).

    Raises:
        EmberValueError: naming the tensor, its size and the limit.
    """
    count = 1
    for d in shape:
        if isinstance(d, SymExpr):
            return
        count *= d
    size = count * _ITEM_BYTES.get(dtype, 8 if dtype.endswith("64") else 4)
    if size > MAX_BYTES:
        raise EmberValueError(
            f"tensor '{name}' of shape {tuple(shape)} and dtype {dtype} has "
            f"{count} elements ({size} bytes); ember's limit is {MAX_BYTES} bytes "
            "(2**63 - 1: sizes and indices are int64)"
        )


def _index(value: ExprLike, tensor: str) -> Expr:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return Const(int(value), "index")
    if isinstance(value, Expr) and value.dtype == "index":
        return value
    if isinstance(value, SymExpr):
        return _x.Size(value)
    raise EmberTypeError(
        f"indices of '{tensor}' must be loop indices or ints, got {value}"
    )


def _shape(shape: Dim | Sequence[Dim], what: str) -> tuple[Dim, ...]:
    dims = (shape,) if isinstance(shape, int | SymExpr) else tuple(shape)
    for d in dims:
        if isinstance(d, SymExpr):
            continue
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise EmberValueError(
                f"{what}: expected positive int extents or te.var sizes, got "
                f"{tuple(map(str, dims))}"
            )
    return dims


def placeholder(
    shape: Dim | Sequence[Dim], dtype: str = "float32", name: str = "placeholder"
) -> Tensor:
    """An input tensor of the computation.

    Args:
        shape: extents: ints, or sizes from `te.var` and expressions over them.
        dtype: element type name, e.g. "float32".
        name: the argument's name, used in error messages of compiled functions.

    Returns:
        The tensor.
    """
    dims = _shape(shape, f"placeholder '{name}'")
    return Tensor(dims, _x.check_dtype(dtype), PlaceholderOp(name))


def reduce_axis(dom: tuple[int, Dim], name: str = "rv") -> Var:
    """A reduction axis over `[dom[0], dom[1])`, for `te.sum`, `te.max`, `te.min`
    and reducers made by `te.comm_reducer`; the end may be symbolic (`(0, n)`)."""
    lower, upper = dom
    if isinstance(upper, SymExpr):
        if not isinstance(lower, int) or isinstance(lower, bool):
            raise EmberValueError(
                f"reduce_axis '{name}': expected an int start, got {lower!r}"
            )
        return Var(name, lower, upper - lower, reduce=True)
    if upper <= lower:
        raise EmberValueError(f"reduce_axis '{name}': empty range [{lower}, {upper})")
    if not -(2**63) <= lower < upper <= MAX_BYTES:
        raise EmberValueError(
            f"reduce_axis '{name}': range [{lower}, {upper}) does not fit in int64"
        )
    return Var(name, lower, upper - lower, reduce=True)


def _check_arity(fcompute: Callable[..., object], ndim: int, name: str) -> None:
    """`fcompute` must take one index per dimension (a raw TypeError from the
    call would name neither the compute nor the shape)."""
    try:
        inspect.signature(fcompute).bind(*range(ndim))
    except TypeError:
        raise EmberTypeError(
            f"compute '{name}': fcompute must take {ndim} index argument(s), one "
            f"per dimension of the shape; its signature is "
            f"{inspect.signature(fcompute)}"
        ) from None
    except ValueError:  # a builtin without a signature: the call will tell
        pass


def compute(
    shape: Dim | Sequence[Dim],
    fcompute: Callable[..., ExprLike],
    name: str = "compute",
    dtype: str | None = None,
) -> Tensor:
    """A tensor defined by `fcompute(*indices)` at every point of `shape`.

    Args:
        shape: extents of the result: ints, or sizes from `te.var`.
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
    _check_arity(fcompute, len(dims), name)
    body = _x.as_expr(fcompute(*axis), dtype or "float32")
    if body.dtype == "index":
        body = Cast(dtype or "int32", body)
    if dtype is not None and body.dtype != dtype:
        body = Cast(_x.check_dtype(dtype), body)
    _check_body(body, name)
    return Tensor(dims, body.dtype, ComputeOp(name, axis, body))


def _check_body(body: Expr, name: str) -> None:
    for e in walk(body):
        if isinstance(e, Reduce) and e is not body:
            raise EmberValueError(
                f"compute '{name}': a reduction must be the whole body of a compute"
            )
        if isinstance(e, Param):
            raise EmberValueError(
                f"compute '{name}': the combiner argument '{e.name}' is used outside "
                "its combiner"
            )


def _axes(fn: str, axis: Var | Sequence[Var]) -> list[Var]:
    axes = [axis] if isinstance(axis, Var) else list(axis)
    if not axes or not builtins.all(isinstance(a, Var) and a.reduce for a in axes):
        raise EmberValueError(f"te.{fn}: axis must be reduce_axis variables")
    return axes


def _reducer(combiner: str) -> Callable[..., Expr]:
    def reduce(expr: ExprLike, axis: Var | Sequence[Var]) -> Expr:
        return Reduce(combiner, _x.as_expr(expr, "float32"), _axes(combiner, axis))

    reduce.__name__ = combiner
    reduce.__doc__ = f"The {combiner} of `expr` over the reduction axes `axis`."
    return reduce


sum = _reducer("sum")  # noqa: A001 - TVM's name
_max_reduce = _reducer("max")
_min_reduce = _reducer("min")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


class CommReducer:
    """A reduction with a user-defined combiner, made by `te.comm_reducer`;
    `reducer(expr, axis=k)` reduces `expr` over the reduction axes `k`."""

    def __init__(
        self,
        fcombine: Callable[[Expr, Expr], ExprLike],
        fidentity: Callable[[str], ExprLike],
        name: str,
    ):
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name

    def __call__(self, expr: ExprLike, axis: Var | Sequence[Var]) -> Expr:
        return Reduce(
            self.name, _x.as_expr(expr, "float32"), _axes(self.name, axis), self
        )

    def instantiate(self, dtype: str) -> tuple[Param, Param, Expr, Const]:
        """The combiner for `dtype`: its two arguments (accumulated value, next
        value), the expression combining them, and the identity."""
        what = f"te.comm_reducer '{self.name}'"
        if dtype == "index":
            raise EmberTypeError(
                f"{what}: convert loop indices with .astype(...) first"
            )
        x, y = Param("x", dtype), Param("y", dtype)
        combined = _x.as_expr(self.fcombine(x, y), dtype)
        if combined.dtype != dtype:
            raise EmberTypeError(
                f"{what}: expected the combiner to return {dtype}, got {combined.dtype}"
            )
        for e in walk(combined):
            if isinstance(e, Read | Var | Reduce) or (
                isinstance(e, Param) and e is not x and e is not y
            ):
                raise EmberValueError(
                    f"{what}: a combiner may only use its two arguments and "
                    f"constants, got {_describe(e)}"
                )
        identity = self.fidentity(dtype)
        if isinstance(identity, Expr):
            if not isinstance(identity, Const) or identity.dtype != dtype:
                raise EmberTypeError(
                    f"{what}: expected the identity to be a {dtype} constant, "
                    f"got a {identity.dtype} {type(identity).__name__.lower()}"
                )
        elif _x.is_number(identity):
            identity = _x.make_const(cast(float, identity), dtype)
        else:
            raise EmberTypeError(
                f"{what}: expected a constant identity, got {identity!r}"
            )
        return x, y, combined, identity


def _describe(e: Expr) -> str:
    if isinstance(e, Read):
        return f"a read of tensor '{e.tensor.name}'"
    if isinstance(e, Var):
        return f"the loop index '{e.name}'"
    if isinstance(e, Param):
        return "an argument of another combiner"
    return "a reduction"


def comm_reducer(
    fcombine: Callable[[Expr, Expr], ExprLike],
    fidentity: Callable[[str], ExprLike],
    name: str = "reducer",
) -> CommReducer:
    """A reduction with a user-defined combiner, as TVM's `te.comm_reducer`.

    Args:
        fcombine: `fcombine(acc, x)` builds the combination of the accumulated
            value and the next one; it must be commutative and associative.
        fidentity: `fidentity(dtype)` gives the identity: a number or `te.const`
            with `fcombine(identity, x) == x`.
        name: the reduction's name in the IR (an identifier other than sum, max
            and min).

    Returns:
        The reducer; `reducer(expr, axis=k)` reduces like `te.sum`.

    Example:
        >>> prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t))
        >>> P = te.compute((n,), lambda i: prod(A[i, k], axis=k), name="P")
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise EmberValueError(
            f"te.comm_reducer: expected a name of letters, digits, '_', '$' or '.' "
            f"that does not start with a digit, got {name!r}"
        )
    if name in BUILTIN_COMBINERS:
        raise EmberValueError(
            f"te.comm_reducer: '{name}' is the name of te.{name}; choose another"
        )
    if not callable(fcombine) or not callable(fidentity):
        raise EmberTypeError(
            "te.comm_reducer: expected fcombine and fidentity functions"
        )
    return CommReducer(fcombine, fidentity, name)


def max(  # noqa: A001 - TVM's name
    a: ExprLike, b: ExprLike | None = None, axis: Var | Sequence[Var] | None = None
) -> Expr:
    """`te.max(expr, axis=k)` reduces; `te.max(a, b)` is the larger of two values."""
    if axis is not None:
        return _max_reduce(a, axis)
    if b is None:
        raise EmberTypeError("te.max takes two values, or an expression and axis=")
    return _call2("max", a, b)


def min(  # noqa: A001 - TVM's name
    a: ExprLike, b: ExprLike | None = None, axis: Var | Sequence[Var] | None = None
) -> Expr:
    """`te.min(expr, axis=k)` reduces; `te.min(a, b)` is the smaller of two values."""
    if axis is not None:
        return _min_reduce(a, axis)
    if b is None:
        raise EmberTypeError("te.min takes two values, or an expression and axis=")
    return _call2("min", a, b)


def _call2(fn: str, a: ExprLike, b: ExprLike) -> Expr:
    pair = _x.binary(fn, a, b)
    assert isinstance(pair, Binary)
    return Call(fn, [pair.lhs, pair.rhs])


def _unary_math(fn: str) -> Callable[[Expr], Expr]:
    def call(x: Expr) -> Expr:
        x = _x.as_expr(x, "float32")
        if x.dtype not in FLOAT_DTYPES:
            raise EmberTypeError(f"te.{fn} expects a float expression, got {x.dtype}")
        return Call(fn, [x])

    call.__name__ = fn
    call.__doc__ = f"Elementwise {fn} of a float expression."
    return call


exp = _unary_math("exp")
log = _unary_math("log")
sqrt = _unary_math("sqrt")
tanh = _unary_math("tanh")
abs = _unary_math("abs")  # noqa: A001
MATH_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh")
MATH_FUNCTIONS += ("asinh", "acosh", "atanh", "floor", "ceil", "roundeven")
"""Further unary math (`math` dialect names; roundeven rounds half to even)."""
sin, cos, tan, asin, acos, atan, sinh, cosh = map(_unary_math, MATH_FUNCTIONS[:8])
asinh, acosh, atanh, floor, ceil, roundeven = map(_unary_math, MATH_FUNCTIONS[8:])

_BITS = {"float16": 16, "float32": 32, "float64": 64}
_BITS |= {f"{s}int{b}": b for s in ("", "u") for b in (16, 32, 64)}


def reinterpret(dtype: str, value: ExprLike) -> Expr:
    """The bits of `value` read as `dtype` of the same width (TVM's
    `tir.reinterpret`), e.g. a float32's IEEE bits as an int32."""
    value = _x.as_expr(value, "float32")
    if _BITS.get(value.dtype) is None or _BITS.get(dtype) != _BITS[value.dtype]:
        raise EmberTypeError(
            f"te.reinterpret: expected {value.dtype} and {dtype} of one bit width "
            f"(float16/32/64, [u]int16/32/64), got {value.dtype} -> {dtype}"
        )
    call = Call("reinterpret", [value])
    call.dtype = dtype
    return call


def dot_u8i8(a: ExprLike, b: ExprLike) -> Expr:
    """The int32 sum of the products of the four bytes of int32 `a`, read
    unsigned, with the four bytes of int32 `b`, read signed: the multiply-add
    of int8 kernels (x86 VNNI's `vpdpbusd`, aarch64's `usdot`, widening
    multiplies elsewhere). `te.sum(te.dot_u8i8(a, b), axis=k)` accumulates in
    the instruction."""
    a, b = _x.as_expr(a, "int32"), _x.as_expr(b, "int32")
    if a.dtype != "int32" or b.dtype != "int32":
        raise EmberTypeError(
            f"te.dot_u8i8: expected int32 words of four bytes, got {a.dtype} "
            f"and {b.dtype}"
        )
    return Call("dot_u8i8", [a, b])


def dot_bf16(a: ExprLike, b: ExprLike) -> Expr:
    """The float32 sum of the products of the two bfloat16 numbers in int32
    `a` with the two in int32 `b` (`bf16_word`'s pairs): the multiply-add of
    bfloat16 kernels (x86's `vdpbf16ps`, aarch64's `bfdot`, two fused
    multiply-adds elsewhere). `te.sum(te.dot_bf16(a, b), axis=k)` accumulates
    in the instruction."""
    a, b = _x.as_expr(a, "int32"), _x.as_expr(b, "int32")
    if a.dtype != "int32" or b.dtype != "int32":
        raise EmberTypeError(
            f"te.dot_bf16: expected int32 words of two bfloat16 numbers, got "
            f"{a.dtype} and {b.dtype}"
        )
    call = Call("dot_bf16", [a, b])
    call.dtype = "float32"
    return call


BF16_ROUND = 0x7FFF
"""Added to a float32's bits (with the kept part's lowest bit) before the
low 16 are cut: rounding to the nearest bfloat16, ties to even."""


def bf16_bits(value: ExprLike) -> Expr:
    """float32 `value` rounded to the nearest bfloat16 (ties to even), as the
    int32 whose high 16 bits are the bfloat16's and low 16 bits are zero. A
    NaN stays a NaN; infinities and overflow to them as the rounding says."""
    x = _x.as_expr(value, "float32")
    if x.dtype != "float32":
        raise EmberTypeError(f"te.bf16_bits: expected float32, got {x.dtype}")
    bits = reinterpret("int32", x)
    odd = (bits >> 16) & 1
    rounded = (bits + (odd + BF16_ROUND)) & -(1 << 16)
    quiet = bits | (1 << 22)  # a NaN keeps its sign and payload's top, quiet
    return select(not_equal(x, x), quiet & -(1 << 16), rounded)


def to_bf16(value: ExprLike) -> Expr:
    """float32 `value` rounded to the nearest bfloat16 (ties to even), as the
    uint16 of its bits: `bf16_bits`'s high half, in one instruction where the
    target has it (LLVM's `fptrunc` to bfloat: `vcvtneps2bf16` with
    AVX512-BF16, which reads and writes subnormals as zero, as `vdpbf16ps`
    reads them). LLVM targets only."""
    x = _x.as_expr(value, "float32")
    if x.dtype != "float32":
        raise EmberTypeError(f"te.to_bf16: expected float32, got {x.dtype}")
    call = Call("to_bf16", [x])
    call.dtype = "uint16"
    return call


def bf16_word(low: ExprLike, high: ExprLike) -> Expr:
    """The int32 word of two float32 values rounded to bfloat16 (`bf16_bits`):
    `low`'s in the low half, `high`'s in the high half, the pair
    `te.dot_bf16` multiplies."""
    return bf16_bits(high) | ((bf16_bits(low) >> 16) & 0xFFFF)


def create_schedule(ops: Operation | Sequence[Operation]) -> Schedule:
    """A schedule for the stages computing `ops` (see `ember.te.schedule`)."""
    from ember.te.schedule import create_schedule as create

    return create(ops)


def thread_axis(tag: str) -> Var:
    """A GPU thread axis such as "threadIdx.x", for `Stage.bind`."""
    from ember.te.schedule import thread_axis as axis

    return axis(tag)
