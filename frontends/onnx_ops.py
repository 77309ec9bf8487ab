"""ONNX operators to graph ops: one converter per ONNX op type and the attribute
checks that run over the whole model before anything is built (the numpy
evaluators that fold shape computations at import time are in `onnx_fold.py`).

A converter receives a `NodeContext` and returns the node's outputs, each an
`SSAValue` (a graph op's result) or an `np.ndarray` (a value known at import time).
It builds ops with the graph dialect's shape-inferring builders and never computes a
result shape itself; what it normalises are ONNX's attributes (auto_pad to explicit
padding, axes as attributes or inputs by opset, Gemm's flags).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Block, SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_shapes import is_static
from ember.frontends.onnx_fold import (
    SHAPE_ONLY,
    ConversionError,
    Empty,
    axes_of,
    fold_squeeze,
    fold_unsqueeze,
    shape_of,
    to_array,
)

Value = SSAValue | np.ndarray
Converter = Callable[["NodeContext"], Sequence[Value | Empty]]

# Import-time values this small become graph.constant literals, larger ones params.
MAX_LITERAL_ELEMENTS = 16


class NodeContext:
    """One node during conversion: its attributes, its inputs (as import-time
    arrays or as SSA values) and a way to append graph ops."""

    def __init__(
        self,
        node: onnx.NodeProto,
        opset: int,
        inputs: list[Value | None],
        block: Block,
        materialize: Callable[[str, np.ndarray], SSAValue],
    ):
        self.node = node
        self.opset = opset
        self.inputs = inputs
        self.block = block
        self._materialize = materialize
        self.attrs = {a.name: _attribute(a) for a in node.attribute}

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def has(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def is_const(self, i: int) -> bool:
        return isinstance(self.inputs[i], np.ndarray)

    def const(self, i: int, what: str) -> np.ndarray:
        """Input `i`, which must be known at import time (an initializer, a Constant
        or a folded shape computation)."""
        value = self.inputs[i]
        if not isinstance(value, np.ndarray):
            raise ConversionError(
                f"expected {what} (input {i}, '{self.node.input[i]}') known at import "
                "time, got a tensor computed by the model"
            )
        return value

    def ints(self, i: int, what: str) -> list[int]:
        """Input `i`, a 1-D integer tensor known at import time (a shape, axes,
        pads), as Python ints; a shape computed from symbolic dims gives its
        expressions (`onnx_fold.shape_array`)."""
        value = self.const(i, what)
        if value.ndim == 1 and value.dtype == object:
            return list(value)
        if value.ndim != 1 or value.dtype.kind not in "iu":
            raise ConversionError(
                f"expected {what} (input {i}, '{self.node.input[i]}') as a 1-D "
                f"integer tensor, got {value.dtype} of shape {value.shape}"
            )
        return [int(v) for v in value]

    def value(self, i: int) -> SSAValue:
        """Input `i` as an SSA value; import-time arrays become params or literals."""
        value = self.inputs[i]
        if value is None:
            raise ConversionError(f"expected input {i}, got none")
        if isinstance(value, np.ndarray):
            value = self._materialize(self.node.input[i], value)
            self.inputs[i] = value
        return value

    def constant(self, value: float | np.ndarray) -> SSAValue:
        """A float32 graph.constant (a scalar or a small literal)."""
        return self.emit_op(G.ConstantOp(literal(np.asarray(value, np.float32))))

    def array(self, value: np.ndarray, what: str) -> SSAValue:
        """An array the converter makes at import time (a class range, a mask) as
        a literal or, past a few elements, a param named after the node's first
        output and `what`."""
        return self._materialize(f"{self.node.output[0]}.{what}", value)

    def emit(self, op: type[G.GraphOp], *operands: SSAValue, **attrs: Any) -> SSAValue:
        """Append `op` built on `operands` with `attrs`, its type inferred."""
        return self.emit_op(op.build_inferred(*operands, **attrs))

    def emit_op(self, op) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]


def literal(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    try:
        return G.ConstantOp.from_numpy(array).value
    except ValueError as e:
        raise ConversionError(str(e)) from None


def _attribute(attr: onnx.AttributeProto) -> Any:
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, onnx.TensorProto):
        try:
            return to_array(value)
        except ConversionError as e:
            raise ConversionError(f"attribute '{attr.name}': {e}") from None
    return value


# -- checks before building -----------------------------------------------------------

AttributeCheck = Callable[[dict[str, Any], int], list[str]]


def _attr_values(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: _attribute(a) for a in node.attribute}


def _one_of(name: str, allowed: Sequence[Any], default: Any) -> AttributeCheck:
    def check(attrs: dict[str, Any], _opset: int) -> list[str]:
        value = attrs.get(name, default)
        return [] if value in allowed else [f"{name}={value!r}"]

    return check


def _all(*checks: AttributeCheck) -> AttributeCheck:
    return lambda attrs, opset: [p for c in checks for p in c(attrs, opset)]


def _spatial_2d(attrs: dict[str, Any], _opset: int) -> list[str]:
    kernel = attrs.get("kernel_shape")
    if kernel is not None and len(kernel) != 2:
        return [f"kernel_shape={list(kernel)} (only 2-D)"]
    return []


_AUTO_PAD = _one_of(
    "auto_pad", ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"], "NOTSET"
)


def _constant_attrs(attrs: dict[str, Any], _opset: int) -> list[str]:
    kinds = {"value", "value_float", "value_floats", "value_int", "value_ints"}
    return [f"{name} attribute" for name in attrs if name not in kinds]


CHECKS: dict[str, AttributeCheck] = {
    "Conv": _all(_AUTO_PAD, _spatial_2d),
    "MaxPool": _all(_AUTO_PAD, _spatial_2d),
    "AveragePool": _all(_AUTO_PAD, _spatial_2d),
    "BatchNormalization": _one_of("training_mode", [0, 1], 0),
    "Pad": _one_of("mode", ["constant", "edge", "reflect", "wrap"], "constant"),
    "Gelu": _one_of("approximate", ["none", "tanh"], "none"),
    "com.microsoft.Gelu": lambda attrs, opset: [],
    "Constant": _constant_attrs,
}


# Inputs that must be import-time constants, by op: (index, what).
CONST_INPUTS: dict[str, list[tuple[int, str]]] = {
    "Reshape": [(1, "the target shape")],
    "Pad": [(1, "pads"), (2, "the padding value"), (3, "axes")],
    "Clip": [(1, "min"), (2, "max")],
    "Unsqueeze": [(1, "axes")],
    "Squeeze": [(1, "axes")],
    "ReduceSum": [(1, "axes")],
    "ReduceMean": [(1, "axes")],
    "ReduceMax": [(1, "axes")],
    "Dropout": [(1, "ratio"), (2, "training_mode")],
}


# Optional inputs ember does not take, by op: (index, what).
ABSENT_INPUTS: dict[str, list[tuple[int, str]]] = {}


def unsupported_attributes(key: str, node: onnx.NodeProto, opset: int) -> list[str]:
    """What in `node`'s attributes ember cannot convert (empty when all is fine)."""
    check = CHECKS.get(key)
    if check is None:
        return []
    try:
        return check(_attr_values(node), opset)
    except ConversionError as e:
        return [str(e)]


# -- converters -----------------------------------------------------------------------

CONVERTERS: dict[str, Converter] = {}


def converter(*keys: str):
    def register(fn: Converter) -> Converter:
        for key in keys:
            CONVERTERS[key] = fn
        return fn

    return register


def _same_padding(
    c: NodeContext, spatial: Sequence[int], kernel: Sequence[int]
) -> list[int]:
    """ONNX's explicit padding [top, left, bottom, right] from auto_pad and pads."""
    auto_pad = c.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        return list(c.attr("pads", [0, 0, 0, 0]))
    if auto_pad == "VALID":
        return [0, 0, 0, 0]
    strides = c.attr("strides", [1, 1])
    dilations = c.attr("dilations", [1, 1])
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        upper = auto_pad == "SAME_UPPER"
        begin.append(small if upper else large)
        end.append(large if upper else small)
    return begin + end


def _data_4d(c: NodeContext) -> SSAValue:
    x = c.value(0)
    if len(shape_of(x)) != 4:
        raise ConversionError(f"expected 4-D NCHW data, got shape {shape_of(x)}")
    return x


@converter("Conv")
def _conv(c: NodeContext):
    x, w = _data_4d(c), c.value(1)
    kernel = c.attr("kernel_shape") or shape_of(w)[2:]
    operands = [x, w] + ([c.value(2)] if c.has(2) else [])
    y = c.emit(
        G.Conv2DOp,
        *operands,
        strides=c.attr("strides", [1, 1]),
        padding=_same_padding(c, shape_of(x)[2:], kernel),
        dilation=c.attr("dilations", [1, 1]),
        groups=c.attr("group", 1),
    )
    return [y]


@converter("Gemm")
def _gemm(c: NodeContext):
    alpha, beta = c.attr("alpha", 1.0), c.attr("beta", 1.0)
    a = c.value(0)
    if c.attr("transA", 0):
        a = c.emit(G.TransposeOp, a, perm=[1, 0])
    trans_b = c.attr("transB", 0)
    b_is_weight = c.is_const(1)
    b = c.value(1)
    bias = None
    if c.has(2) and beta != 0.0:
        bias = c.value(2)
        if beta != 1.0:
            bias = c.emit(G.MulOp, bias, c.constant(beta))
    if trans_b and not b_is_weight:  # dense packs its weight at compile time
        b, trans_b = c.emit(G.TransposeOp, b, perm=[1, 0]), 0
    if trans_b or b_is_weight:
        # dense takes the weight as (N, K); a constant (K, N) weight's transpose
        # folds into a new param in graph-fold-constants
        w = b if trans_b else c.emit(G.TransposeOp, b, perm=[1, 0])
        if bias is not None and alpha == 1.0 and shape_of(bias) == (shape_of(w)[0],):
            return [c.emit(G.DenseOp, a, w, bias)]
        y = c.emit(G.DenseOp, a, w)
    else:
        y = c.emit(G.MatmulOp, a, b)
    if alpha != 1.0:
        y = c.emit(G.MulOp, y, c.constant(alpha))
    if bias is not None:
        y = c.emit(G.AddOp, y, bias)
    return [y]


@converter("MatMul")
def _matmul(c: NodeContext):
    a, b = c.value(0), c.value(1)
    if len(shape_of(a)) == len(shape_of(b)) == 1:  # a dot product: a reduction
        product = c.emit(G.MulOp, a, b)
        return [c.emit(G.ReduceSumOp, product, axes=[0], keepdims=False)]
    return [c.emit(G.MatmulOp, a, b)]


@converter("BatchNormalization")
def _batch_norm(c: NodeContext):
    operands = [c.value(i) for i in range(5)]
    epsilon = c.attr("epsilon", 1e-5)
    if not c.attr("training_mode", 0):
        if any(name for name in c.node.output[1:]):
            raise ConversionError(
                "expected only the inference output, got training outputs"
            )
        return [c.emit(G.BatchNormOp, *operands, epsilon=epsilon)]
    # training: normalize with the batch's statistics (the biased variance)
    # and blend them into the running ones by momentum
    x, *_, mean, var = operands
    axes = [a for a in range(len(shape_of(x))) if a != 1]
    batch_mean = c.emit(G.ReduceMeanOp, x, axes=axes, keepdims=True)
    centered = c.emit(G.SubOp, x, batch_mean)
    batch_var = c.emit(
        G.ReduceMeanOp, c.emit(G.MulOp, centered, centered), axes=axes, keepdims=True
    )
    stats = [
        c.emit(G.ReshapeOp, v, shape=[shape_of(x)[1]]) for v in (batch_mean, batch_var)
    ]
    y = c.emit(G.BatchNormOp, x, *operands[1:3], *stats, epsilon=epsilon)
    momentum = float(c.attr("momentum", 0.9))
    running = [
        c.emit(
            G.AddOp,
            c.emit(G.MulOp, old, c.constant(momentum)),
            c.emit(G.MulOp, new, c.constant(1 - momentum)),
        )
        for old, new in zip((mean, var), stats, strict=True)
    ]
    return [y, *running][: len(c.node.output)]


_BINARY = {
    "Add": G.AddOp,
    "Sub": G.SubOp,
    "Mul": G.MulOp,
    "Div": G.DivOp,
    "Pow": G.PowOp,
    "Max": G.MaximumOp,
    "Min": G.MinimumOp,
    "Sum": G.AddOp,
}


def _chain(c: NodeContext, op: type[G.GraphOp]) -> SSAValue:
    """`op` over every input, left to right (Max, Min, Sum and Mean are variadic)."""
    y = c.value(0)
    for i in range(1, len(c.inputs)):
        y = c.emit(op, y, c.value(i))
    return y


@converter(*_BINARY)
def _binary(c: NodeContext):
    return [_chain(c, _BINARY[c.node.op_type])]


@converter("Mean")
def _mean(c: NodeContext):
    total = _chain(c, G.AddOp)
    dtype = dtype_of(total.type.element_type)  # type: ignore[attr-defined]
    count = G.ConstantOp.from_numpy(np.asarray(len(c.inputs), dtype))
    return [c.emit(G.DivOp, total, c.emit_op(count))]


_UNARY = {
    "Relu": G.ReluOp,
    "Sigmoid": G.SigmoidOp,
    "Tanh": G.TanhOp,
    "Exp": G.ExpOp,
    "Sqrt": G.SqrtOp,
    "Erf": G.ErfOp,
    "com.microsoft.Gelu": G.GeluOp,
    "Neg": G.NegOp,
    "Abs": G.AbsOp,
    "Log": G.LogOp,
    "HardSwish": G.HardSwishOp,
    "Softplus": G.SoftplusOp,
    "Mish": G.MishOp,
}


@converter(*_UNARY)
def _unary(c: NodeContext):
    key = (
        c.node.op_type
        if c.node.domain in ("", "ai.onnx")
        else (f"{c.node.domain}.{c.node.op_type}")
    )
    return [c.emit(_UNARY[key], c.value(0))]


_ACTIVATIONS = {
    "LeakyRelu": G.LeakyReluOp,
    "Elu": G.EluOp,
    "Selu": G.SeluOp,
    "HardSigmoid": G.HardSigmoidOp,
}


@converter(*_ACTIVATIONS)
def _activation(c: NodeContext):
    """Activations with float attributes (alpha, beta, gamma); an absent one
    takes the op's default, which is ONNX's."""
    op = _ACTIVATIONS[c.node.op_type]
    attrs = {name: float(c.attrs[name]) for name in op.ATTRS if name in c.attrs}
    return [c.emit(op, c.value(0), **attrs)]


@converter("PRelu")
def _prelu(c: NodeContext):
    return [c.emit(G.PReluOp, c.value(0), c.value(1))]


@converter("Gelu")
def _gelu(c: NodeContext):
    tanh = c.attr("approximate", "none") == "tanh"
    return [c.emit(G.GeluTanhOp if tanh else G.GeluOp, c.value(0))]


def _bound(c: NodeContext, i: int, what: str, infinite: float) -> float | None:
    if not c.has(i):
        return None
    value = c.const(i, what)
    if value.size != 1:
        raise ConversionError(f"expected a scalar {what}, got shape {value.shape}")
    bound = float(value.ravel()[0])
    return None if bound == infinite else bound


@converter("Clip")
def _clip(c: NodeContext):
    x = c.value(0)
    lo = _bound(c, 1, "min", -math.inf)
    hi = _bound(c, 2, "max", math.inf)
    if lo is None and hi is None:
        return [x]
    if lo is not None and hi is not None and lo > hi:
        lo = hi  # min(max(x, lo), hi) is hi everywhere, as onnxruntime computes
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    if not np.issubdtype(dtype, np.floating):  # graph.clip computes floats
        for bound, op in ((lo, G.MaximumOp), (hi, G.MinimumOp)):
            if bound is not None:
                value = G.ConstantOp.from_numpy(np.asarray(bound, dtype))
                x = c.emit(op, x, c.emit_op(value))
        return [x]
    if lo == 0.0 and hi is None:
        return [c.emit(G.ReluOp, x)]
    return [c.emit(G.ClipOp, x, min=lo, max=hi)]


def _pool(c: NodeContext, op: type[G.GraphOp], **extra: Any) -> SSAValue:
    if len(c.node.output) > 1 and c.node.output[1]:
        raise ConversionError("expected no Indices output, got one")
    x = _data_4d(c)
    kernel = c.attr("kernel_shape")
    return c.emit(
        op,
        x,
        kernel=kernel,
        strides=c.attr("strides", [1, 1]),
        padding=_same_padding(c, shape_of(x)[2:], kernel),
        ceil_mode=bool(c.attr("ceil_mode", 0)),
        **extra,
    )


@converter("MaxPool")
def _max_pool(c: NodeContext):
    return [_pool(c, G.MaxPool2DOp, dilation=c.attr("dilations", [1, 1]))]


@converter("AveragePool")
def _avg_pool(c: NodeContext):
    include = bool(c.attr("count_include_pad", 0))
    dilation = list(c.attr("dilations", [1, 1]))
    extra = {"dilation": dilation} if dilation != [1, 1] else {}
    return [_pool(c, G.AvgPool2DOp, count_include_pad=include, **extra)]


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(c: NodeContext):
    """A mean or max over every spatial axis of (N, C, ...) data, of any rank."""
    x = c.value(0)
    rank = len(shape_of(x))
    if rank < 3:
        raise ConversionError(f"expected (N, C, ...) data, got shape {shape_of(x)}")
    if c.node.op_type == "GlobalMaxPool":
        return [c.emit(G.ReduceMaxOp, x, axes=list(range(2, rank)), keepdims=True)]
    if rank == 4:
        return [c.emit(G.GlobalAvgPool2DOp, x)]
    return [c.emit(G.ReduceMeanOp, x, axes=list(range(2, rank)), keepdims=True)]


@converter("Softmax", "LogSoftmax")
def _softmax(c: NodeContext):
    op = G.LogSoftmaxOp if c.node.op_type == "LogSoftmax" else G.SoftmaxOp
    return [c.emit(op, c.value(0), axis=c.attr("axis", -1))]


@converter("Reshape")
def _reshape(c: NodeContext):
    target = c.ints(1, "the target shape")
    if c.attr("allowzero", 0) and 0 in target:
        # torch's exporter writes allowzero=1 on every reshape; only a 0 differs
        raise ConversionError(
            f"expected no 0 in the target shape with allowzero=1 (an empty "
            f"dimension), got {target}"
        )
    return [c.emit(G.ReshapeOp, c.value(0), shape=target)]


@converter("Flatten")
def _flatten(c: NodeContext):
    return [c.emit(G.FlattenOp, c.value(0), axis=c.attr("axis", 1))]


@converter("Transpose")
def _transpose(c: NodeContext):
    x = c.value(0)
    perm = c.attr("perm") or list(reversed(range(len(shape_of(x)))))
    return [c.emit(G.TransposeOp, x, perm=perm)]


@converter("Concat")
def _concat(c: NodeContext):
    """Inputs of no elements (an empty slice) add nothing and are dropped."""
    kept = [
        i
        for i, x in enumerate(c.inputs)
        if not isinstance(x, Empty)
        and not (isinstance(x, np.ndarray) and x.dtype != object and x.size == 0)
    ]
    if not kept:
        raise ConversionError("expected an input with elements, got only empty ones")
    operands = [c.value(i) for i in kept]
    if len(operands) == 1:
        return operands
    return [c.emit(G.ConcatOp, *operands, axis=c.attr("axis"))]


@converter("Unsqueeze", "Squeeze")
def _squeeze(c: NodeContext):
    # With static shapes both are reshapes; the result shape is numpy's rule.
    x = c.value(0)
    dims = shape_of(x)
    if not is_static(dims):
        return [c.emit(G.ReshapeOp, x, shape=_squeezed(c, list(dims)))]
    probe = np.broadcast_to(np.False_, dims)  # a shape, no memory
    fold = fold_unsqueeze if c.node.op_type == "Unsqueeze" else fold_squeeze
    try:
        shape = fold(c, probe).shape
    except ValueError as e:  # numpy's: an axis out of range, past 64 dimensions
        raise ConversionError(f"cannot apply it to {shape_of(x)}: {e}") from None
    return [c.emit(G.ReshapeOp, x, shape=list(shape))]


def _squeezed(c: NodeContext, dims: list) -> list:
    """Unsqueeze's or Squeeze's result dims for symbolic `dims` (numpy's rule
    on a shape with expressions: a squeezed axis must be a known 1)."""
    axes = axes_of(c, 1)
    if c.node.op_type == "Unsqueeze":
        rank = len(dims) + len(axes or [])
        for a in sorted(set(a % rank for a in axes or [])):
            dims.insert(a, 1)
        return dims
    if axes is None:
        raise ConversionError(f"expected axes to squeeze {dims}, which is symbolic")
    chosen = {a % len(dims) for a in axes}
    if any(dims[a] != 1 for a in chosen):
        raise ConversionError(f"cannot squeeze axes {sorted(chosen)} of {dims}")
    return [d for i, d in enumerate(dims) if i not in chosen]


_REDUCE = {
    "ReduceSum": G.ReduceSumOp,
    "ReduceMean": G.ReduceMeanOp,
}


@converter(*_REDUCE)
def _reduce(c: NodeContext):
    x = c.value(0)
    axes = axes_of(c, 1) or []
    if not axes and c.attr("noop_with_empty_axes", 0):
        return [x]
    keepdims = bool(c.attr("keepdims", 1))
    return [c.emit(_REDUCE[c.node.op_type], x, axes=axes, keepdims=keepdims)]


@converter("Identity")
def _identity(c: NodeContext):
    return [c.value(0)]


@converter("Dropout")
def _dropout(c: NodeContext):
    """The identity in inference, and in training with ratio 0 (random masks
    are refused); the mask output is all true then."""
    if c.has(2) and bool(c.const(2, "training_mode").ravel()[0]):
        ratio = float(c.const(1, "ratio").ravel()[0]) if c.has(1) else 0.5
        if ratio != 0:
            raise ConversionError(
                f"expected inference (training_mode false) or a ratio of 0, got "
                f"training with ratio {ratio}"
            )
    x = c.value(0)
    if len(c.node.output) < 2:
        return [x]
    # the mask as an op, not an array: unread, it is erased before any kernel
    true = c.emit_op(G.ConstantOp.from_numpy(np.array(True)))
    return [x, c.emit(G.BroadcastToOp, true, shape=list(shape_of(x)))]


@converter("Constant")
def _constant(c: NodeContext):
    for name in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if name in c.attrs:
            value = c.attrs[name]
            dtype = np.float32 if name.startswith("value_f") else None
            dtype = np.int64 if name.startswith("value_i") else dtype
            return [np.asarray(value, dtype)]
    raise ConversionError("expected a value attribute, got none")


def _fold_only(c: NodeContext):
    raise ConversionError(
        "expected inputs known at import time (it is folded, never computed), "
        "got a tensor computed by the model"
    )


for _op in SHAPE_ONLY:
    CONVERTERS.setdefault(_op, _fold_only)
