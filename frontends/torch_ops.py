"""Core aten operators to graph ops: one converter per aten op (all overloads of
a name share it), and the checks of argument values that run over the whole
graph before anything is built. Here are the registry and the compute ops;
the ops that move, select and compare data are in `torch_data.py`.

A converter receives an `OpContext` and the node's arguments, each fx node among
them replaced by its value: an `SSAValue` (a graph op's result), an `np.ndarray`
(a parameter, buffer or constant not yet used), a tuple (a multi-output op's
results, read with `getitem`) or a Python scalar or list. It returns the node's
value. Shapes come from the graph dialect's shape-inferring builders; only the
pure reshapes (view, squeeze, flatten, ...) take the shape torch recorded on the
node (`node.meta["val"]`).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Block, SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_shapes import dims_of
from ember.runtime.shape_expr import (
    Sym,
    SymExpr,
    sym_floordiv,
    sym_max,
    sym_min,
    sym_mod,
    sym_prod,
)

Value = SSAValue | np.ndarray | tuple


class ConversionError(Exception):
    """A node cannot be converted; the importer adds the node's name and op."""


DTYPES = {"float32", "int64", "int32", "bool"}
"""The element types (numpy names) of the tensors the torch frontend imports:
float32 computation, integer token ids and positions, boolean masks."""


def literal(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """An array (a dtype of `DTYPES`) as a dense attribute (a graph.constant's
    value)."""
    if array.dtype.name not in DTYPES:
        raise ConversionError(
            f"expected a tensor of {', '.join(sorted(DTYPES))}, got {array.dtype}"
        )
    return G.ConstantOp.from_numpy(array).value


class OpContext:
    """One fx node during conversion: a way to append graph ops and to turn
    import-time arrays and scalars into operands."""

    def __init__(
        self,
        node: Any,
        block: Block,
        materialize: Callable[[np.ndarray, str | None], SSAValue],
        symbols: dict[str, str] | None = None,
    ):
        self.node = node
        self.symbols = symbols or {}
        self.op = op_name(node.target)
        self.block = block
        self._materialize = materialize

    def value(self, x: Any) -> SSAValue:
        """`x` as an SSA value: arrays become params (or literals), scalars
        float32 literals."""
        if isinstance(x, SSAValue):
            return x
        if isinstance(x, tuple):
            raise ConversionError("expected a tensor, got a tuple of results")
        if isinstance(x, np.ndarray):
            return self._materialize(x, None)
        if isinstance(x, bool | int | float):
            return self.constant(float(x))
        raise ConversionError(f"expected a tensor, got {type(x).__name__}")

    def constant(self, value: float | np.ndarray) -> SSAValue:
        return self.emit_op(G.ConstantOp(literal(np.asarray(value, np.float32))))

    def emit(self, op: type[G.GraphOp], *operands: Any, **attrs: Any) -> SSAValue:
        """Append `op` on `operands` (values, arrays or scalars) with `attrs`.
        A scalar beside an integer tensor is of its type (`ids + 1`, `mask *
        seq`), as torch computes; a size is computed at run time."""
        tensors = [o for o in operands if isinstance(o, SSAValue)]
        like = dtype_of(tensors[0].type.element_type) if tensors else "float32"  # type: ignore[attr-defined]
        values = [self.scalar(o, like) for o in operands]
        return self.emit_op(op.build_inferred(*values, **attrs))

    def scalar(self, x: Any, like: str) -> SSAValue:
        """`x` as an operand beside tensors of type `like`: a size (a
        `SymExpr`) computed at run time, an integral number of an integer
        `like` of that type, anything else as `value` makes it."""
        if isinstance(x, SymExpr):
            size = self.emit_op(G.SizesOp.build_inferred(values=[x], shape=[]))
            if like == "int64":
                return size
            return self.emit_op(G.CastOp.build_inferred(size, to=like))
        integral = isinstance(x, int) or isinstance(x, float) and x.is_integer()
        if (
            isinstance(x, bool | int | float)
            and like in ("int64", "int32")
            and integral
        ):
            return self.emit_op(G.ConstantOp(literal(np.asarray(x, like))))
        return self.value(x)

    def emit_op(self, op) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    @property
    def out_shape(self) -> tuple[int, ...]:
        """The shape torch recorded for the node's (first) result."""
        val = self.node.meta["val"]
        val = val[0] if isinstance(val, list | tuple) else val
        where = f"the result of '{self.node.name}'"
        return tuple(size_of(d, self.symbols, where) for d in val.shape)


def shape_of(x: Any) -> tuple[int, ...]:
    """A value's dims (symbolic ones as expressions, typed as ints: see
    `graph_shapes.Shape`)."""
    if isinstance(x, np.ndarray):
        return x.shape
    if isinstance(x, SSAValue) and isinstance(x.type, TensorType):
        return dims_of(x.type)
    return ()


def size_of(value: Any, symbols: dict[str, str], where: str) -> Any:
    """A size torch recorded (an int or a `torch.SymInt`) as an int or a
    `SymExpr` over ember's names of its symbols (`symbols`: torch's symbol ->
    ember's name); never the example value a SymInt's `int()` gives."""
    if isinstance(value, int):
        return value
    expr = getattr(getattr(value, "node", None), "expr", None)
    if expr is None:
        raise ConversionError(f"{where}: expected a size, got {value!r}")
    try:
        return _from_sympy(expr, symbols)
    except (KeyError, TypeError) as e:
        raise ConversionError(
            f"{where}: the size {expr} is not an expression ember computes ({e})"
        ) from None


def _from_sympy(expr: Any, symbols: dict[str, str]) -> Any:
    import sympy
    from torch.utils._sympy.functions import FloorDiv, Mod, PythonMod

    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return Sym(symbols[str(expr)])
    args = [_from_sympy(a, symbols) for a in expr.args]
    if isinstance(expr, sympy.Add):
        return sum(args[1:], args[0])
    if isinstance(expr, sympy.Mul):
        return sym_prod(args)
    if isinstance(expr, FloorDiv):
        return sym_floordiv(args[0], args[1])
    if isinstance(expr, Mod | PythonMod):
        return sym_mod(args[0], args[1])
    if isinstance(expr, sympy.Max):
        return functools.reduce(sym_max, args)
    if isinstance(expr, sympy.Min):
        return functools.reduce(sym_min, args)
    raise TypeError(f"{type(expr).__name__} is not +, *, //, %, min or max")


def _pair(v: int | Sequence[int], default: Sequence[int] = ()) -> list[int]:
    if isinstance(v, int):
        return [v, v]
    v = list(v) or list(default)
    return v * 2 if len(v) == 1 else v


Converter = Callable[..., Value]
CONVERTERS: dict[str, Converter] = {}

KEPT = frozenset(
    ["hardsigmoid", "hardswish", "leaky_relu", "mish", "silu", "softplus"]
    + ["prelu", "_prelu_kernel", "matmul"]
)
"""Ops left as they are when the program is decomposed to the core aten opset:
each is one graph op here, and its decomposition is several (softplus's has a
`where`, which ember has not; matmul's is expand + view + bmm)."""


def converter(*names: str):
    """Register a converter for the aten op names (overloads share it)."""

    def register(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS[name] = fn
        return fn

    return register


# -- checks before building -----------------------------------------------------------
#
# Argument values ember cannot convert, by op name; each check gets the node's
# args and kwargs (fx nodes where tensors go) and returns what is wrong.

Check = Callable[[tuple, dict], list[str]]


def _arg(args: tuple, kwargs: dict, i: int, name: str, default: Any) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


def _rank(x: Any) -> int:
    val = getattr(x, "meta", {}).get("val")
    return len(val.shape) if val is not None and hasattr(val, "shape") else -1


def _check_conv(args: tuple, kwargs: dict) -> list[str]:
    problems = []
    if _rank(args[0]) != 4:
        problems.append(f"{_rank(args[0]) - 2}-D (only 2-D)")
    return problems


def _check_pool(args: tuple, kwargs: dict) -> list[str]:
    return [] if _rank(args[0]) == 4 else ["not on 4-D NCHW data"]


def _check_avg_pool(args: tuple, kwargs: dict) -> list[str]:
    problems = _check_pool(args, kwargs)
    if _arg(args, kwargs, 6, "divisor_override", None) is not None:
        problems.append("divisor_override")
    return problems


def _check_gelu(args: tuple, kwargs: dict) -> list[str]:
    approximate = kwargs.get("approximate", "none")
    return [] if approximate in ("none", "tanh") else [f"approximate={approximate!r}"]


def _check_div(args: tuple, kwargs: dict) -> list[str]:
    mode = kwargs.get("rounding_mode")
    return [] if mode is None else [f"rounding_mode={mode!r}"]


def _check_dropout(args: tuple, kwargs: dict) -> list[str]:
    return ["in training"] if _arg(args, kwargs, 2, "train", False) else []


def _check_to_copy(args: tuple, kwargs: dict) -> list[str]:
    dtype = kwargs.get("dtype")
    name = str(dtype).removeprefix("torch.")
    return [] if dtype is None or name in DTYPES else [f"to {name}"]


def _check_softplus(args: tuple, kwargs: dict) -> list[str]:
    beta = _arg(args, kwargs, 1, "beta", 1.0)
    return [] if beta == 1 else [f"beta={beta}"]


CHECKS: dict[str, Check] = {
    "convolution": _check_conv,
    "max_pool2d_with_indices": _check_pool,
    "max_pool2d": _check_pool,
    "avg_pool2d": _check_avg_pool,
    "gelu": _check_gelu,
    "div": _check_div,
    "dropout": _check_dropout,
    "_to_copy": _check_to_copy,
    "softplus": _check_softplus,
}


# -- converters -----------------------------------------------------------------------


@converter("getitem")
def _getitem(c: OpContext, results: Any, index: int):
    if not isinstance(results, tuple) or results[index] is None:
        raise ConversionError(
            f"expected only the first result to be used, got result {index}"
        )
    return results[index]


@converter("convolution")
def _convolution(c, x, w, b, stride, padding, dilation, transposed, out_pad, groups):
    operands = [x, w] + ([b] if b is not None else [])
    ph, pw = _pair(padding)
    attrs = dict(
        strides=_pair(stride),
        padding=[ph, pw, ph, pw],
        dilation=_pair(dilation),
        groups=groups,
    )
    if transposed:
        return c.emit(
            G.Conv2DTransposeOp, *operands, output_padding=_pair(out_pad), **attrs
        )
    return c.emit(G.Conv2DOp, *operands, **attrs)


def _ones_if_none(x: Any, like: Any, value: float) -> Any:
    return np.full(shape_of(like)[1:2], value, np.float32) if x is None else x


@converter("_native_batch_norm_legit_no_training")
def _batch_norm(c: OpContext, x, w, b, mean, var, momentum=0.1, eps=1e-5):
    w, b = _ones_if_none(w, mean, 1.0), _ones_if_none(b, mean, 0.0)
    return (c.emit(G.BatchNormOp, x, w, b, mean, var, epsilon=eps), None, None)


@converter("native_layer_norm")
def _layer_norm(c: OpContext, x, normalized_shape, w, b, eps):
    rank = len(shape_of(x))
    if w is None:
        w = np.ones(tuple(normalized_shape), np.float32)
    operands = [x, w] + ([b] if b is not None else [])
    axis = rank - len(normalized_shape)
    return (c.emit(G.LayerNormOp, *operands, axis=axis, epsilon=eps), None, None)


def _weight_of(x: Any) -> SSAValue | None:
    """The (N, K) weight of `x` when `x` is its transpose (torch's Linear
    writes `permute(w, [1, 0])` for dense's weight; the transpose is dead then)."""
    if isinstance(x, SSAValue) and isinstance(x.owner, G.TransposeOp):
        if x.owner.config["perm"] == (1, 0):
            return x.owner.operands[0]
    return None


@converter("addmm")
def _addmm(c: OpContext, bias, a, b, beta=1, alpha=1):
    w = _weight_of(b)
    n = shape_of(b)[1]
    if w is not None and beta == 1 and alpha == 1 and shape_of(bias) in ((n,), ()):
        return c.emit(G.DenseOp, a, w, bias)
    y = c.emit(G.DenseOp, a, w) if w is not None else c.emit(G.MatmulOp, a, b)
    if alpha != 1:
        y = c.emit(G.MulOp, y, alpha)
    return c.emit(G.AddOp, y, c.emit(G.MulOp, bias, beta) if beta != 1 else bias)


@converter("mm", "matmul")
def _mm(c: OpContext, a, b):
    w = _weight_of(b)
    if w is not None and len(shape_of(a)) == 2:
        return c.emit(G.DenseOp, a, w)
    return c.emit(G.MatmulOp, a, b)


@converter("bmm")
def _bmm(c: OpContext, a, b):
    return c.emit(G.BatchMatmulOp, a, b)


@converter("linear")
def _linear(c: OpContext, x, w, b=None):
    if len(shape_of(x)) == 2:
        return c.emit(G.DenseOp, x, w, *([b] if b is not None else []))
    y = c.emit(G.MatmulOp, x, c.emit(G.TransposeOp, w, perm=[1, 0]))
    return y if b is None else c.emit(G.AddOp, y, b)


_BINARY = {
    "mul": G.MulOp,
    "div": G.DivOp,
    "pow": G.PowOp,
    "maximum": G.MaximumOp,
    "minimum": G.MinimumOp,
}


@converter(*_BINARY)
def _binary(c: OpContext, a, b, **_kwargs):
    return c.emit(_BINARY[c.op], a, b)


@converter("add", "sub")
def _add_sub(c: OpContext, a, b, alpha=1):
    if alpha != 1:
        b = c.emit(G.MulOp, b, alpha)
    sub = c.op == "sub"
    return c.emit(G.SubOp if sub else G.AddOp, a, b)


@converter("rsub")
def _rsub(c: OpContext, a, b, alpha=1):
    return c.emit(G.SubOp, b, c.emit(G.MulOp, a, alpha) if alpha != 1 else a)


_UNARY = {
    "relu": G.ReluOp,
    "sigmoid": G.SigmoidOp,
    "tanh": G.TanhOp,
    "exp": G.ExpOp,
    "sqrt": G.SqrtOp,
    "erf": G.ErfOp,
    "neg": G.NegOp,
    "abs": G.AbsOp,
    "log": G.LogOp,
    "hardswish": G.HardSwishOp,
    "mish": G.MishOp,
    "sin": G.SinOp,  # rotary embeddings of positions known at run time
    "cos": G.CosOp,
}


@converter(*_UNARY)
def _unary(c: OpContext, x):
    return c.emit(_UNARY[c.op], x)


@converter("rsqrt", "reciprocal")
def _reciprocal(c: OpContext, x):
    if c.op == "rsqrt":
        x = c.emit(G.SqrtOp, x)
    return c.emit(G.DivOp, 1.0, x)


@converter("silu")
def _silu(c: OpContext, x):
    return c.emit(G.MulOp, x, c.emit(G.SigmoidOp, x))


@converter("gelu")
def _gelu(c: OpContext, x, approximate="none"):
    return c.emit(G.GeluTanhOp if approximate == "tanh" else G.GeluOp, x)


@converter("hardtanh", "clamp")
def _clip(c: OpContext, x, lo=None, hi=None):
    if c.op == "hardtanh":
        lo, hi = (-1.0 if lo is None else lo), (1.0 if hi is None else hi)
    if lo == 0 and hi is None:
        return c.emit(G.ReluOp, x)
    lo, hi = (None if v is None else float(v) for v in (lo, hi))
    return c.emit(G.ClipOp, x, min=lo, max=hi)


@converter("hardsigmoid")
def _hard_sigmoid(c: OpContext, x):
    return c.emit(G.HardSigmoidOp, x, alpha=1 / 6, beta=0.5)


@converter("leaky_relu")
def _leaky_relu(c: OpContext, x, negative_slope=0.01):
    return c.emit(G.LeakyReluOp, x, alpha=float(negative_slope))


@converter("elu")
def _elu(c: OpContext, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if input_scale != 1:
        x = c.emit(G.MulOp, x, input_scale)
    if scale != 1:  # selu decomposes to elu with its scale
        return c.emit(G.SeluOp, x, alpha=float(alpha), gamma=float(scale))
    return c.emit(G.EluOp, x, alpha=float(alpha))


@converter("softplus")
def _softplus(c: OpContext, x, beta=1.0, threshold=20.0):
    # Above `threshold` torch returns x; log(1 + exp(x)) differs from x there
    # by under exp(-20) = 2e-9, below float32's resolution of x.
    return c.emit(G.SoftplusOp, x)


@converter("_prelu_kernel", "prelu")
def _prelu(c: OpContext, x, slope):
    rank, channels = len(shape_of(x)), shape_of(slope)
    if rank > 2 and len(channels) == 1:
        slope = c.emit(G.ReshapeOp, slope, shape=[channels[0]] + [1] * (rank - 2))
    return c.emit(G.PReluOp, x, slope)


@converter("_softmax", "softmax", "_log_softmax", "log_softmax")
def _softmax(c: OpContext, x, dim, *_rest, **_kwargs):
    log = c.op.endswith("log_softmax")
    return c.emit(G.LogSoftmaxOp if log else G.SoftmaxOp, x, axis=dim)


def _pool(c: OpContext, op, x, kernel, stride, padding, ceil_mode, **extra):
    ph, pw = _pair(padding)
    return c.emit(
        op,
        x,
        kernel=_pair(kernel),
        strides=_pair(stride, default=_pair(kernel)),
        padding=[ph, pw, ph, pw],
        ceil_mode=bool(ceil_mode),
        **extra,
    )


@converter("max_pool2d_with_indices", "max_pool2d")
def _max_pool(c: OpContext, x, kernel, stride=(), padding=0, dilation=1, ceil=False):
    y = _pool(
        c, G.MaxPool2DOp, x, kernel, stride, padding, ceil, dilation=_pair(dilation)
    )
    return (y, None) if c.op == "max_pool2d_with_indices" else y


@converter("avg_pool2d")
def _avg_pool(
    c, x, kernel, stride=(), padding=0, ceil=False, include_pad=True, _d=None
):
    return _pool(
        c,
        G.AvgPool2DOp,
        x,
        kernel,
        stride,
        padding,
        ceil,
        count_include_pad=include_pad,
    )


@converter("_adaptive_avg_pool2d", "adaptive_avg_pool2d")
def _adaptive_avg_pool(c: OpContext, x, output_size):
    h, w = shape_of(x)[2:]
    oh, ow = _pair(output_size)
    if (oh, ow) == (1, 1):
        return c.emit(G.GlobalAvgPool2DOp, x)
    if h % oh or w % ow:
        raise ConversionError(
            f"expected an output size dividing the input's {h}x{w}, got {oh}x{ow}"
        )
    kernel = [h // oh, w // ow]
    return c.emit(G.AvgPool2DOp, x, kernel=kernel, strides=kernel)


_REDUCE = {"mean": G.ReduceMeanOp, "sum": G.ReduceSumOp, "amax": G.ReduceMaxOp}


@converter(*_REDUCE)
def _reduce(c: OpContext, x, dims=None, keepdim=False, **_kwargs):
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    axes = dims or list(range(len(shape_of(x))))
    op = _REDUCE[c.op]
    return c.emit(op, x, axes=axes, keepdims=bool(keepdim))


def op_name(target: Any) -> str:
    """The converter key of an fx node's target: the aten op's name without
    its overload ("add" for aten.add.Tensor), "getitem" for operator.getitem."""
    if target is operator.getitem:
        return "getitem"
    name = getattr(target, "name", None)
    if callable(name):
        return str(name()).split("::")[-1].split(".")[0]
    return getattr(target, "__name__", str(target))


def display_name(target: Any) -> str:
    """The target as torch prints it: aten.where.self."""
    return "getitem" if target is operator.getitem else str(target)


__all__ = [
    "CHECKS",
    "CONVERTERS",
    "KEPT",
    "ConversionError",
    "OpContext",
    "display_name",
    "literal",
    "op_name",
]
