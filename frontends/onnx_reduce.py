"""The ONNX reductions beyond ReduceSum and ReduceMean, written in
the graph ops they are defined by (what onnx's function bodies say, and what
each kernel then fuses): L1 = sum |x|, L2 = sqrt(sum x²), SumSquare = sum x²,
LogSum = log(sum x), LogSumExp = m + log(sum exp(x - m)) with m the max (no
overflow where exp(x) would), Min = -max(-x); Max and Prod are graph.reduce_max
and graph.reduce_prod. The max kernels compute floats: Max and Min of bool
(any, all) and of integers up to 32 bits run in a float that holds every value
exactly and cast back; 64-bit integers are refused.

Axes come as the attribute (before opset 18) or the input; no axes reduce
every axis, unless `noop_with_empty_axes` makes the op the identity.

RMSNormalization (opset 23) is x / sqrt(mean(x², axes) + epsilon) * scale over
the axes from `axis` to the last, computed in `stash_type` (float32 by default:
a float16 x is cast up, normalized, and cast back before the scale), as
onnx's function body defines it."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import dtype_of
from ember.frontends.onnx_fold import axes_of, graph_dtype, shape_of
from ember.frontends.onnx_ops import ConversionError, NodeContext, converter


def _reduce(c: NodeContext, op: type[G.GraphOp], x: SSAValue, keepdims: bool):
    return c.emit(op, x, axes=axes_of(c, 1) or [], keepdims=keepdims)


def _square(c: NodeContext, x: SSAValue) -> SSAValue:
    return c.emit(G.MulOp, x, x)


_FORMS = {
    "ReduceL1": lambda c, x, k: _reduce(c, G.ReduceSumOp, c.emit(G.AbsOp, x), k),
    "ReduceL2": lambda c, x, k: c.emit(
        G.SqrtOp, _reduce(c, G.ReduceSumOp, _square(c, x), k)
    ),
    "ReduceSumSquare": lambda c, x, k: _reduce(c, G.ReduceSumOp, _square(c, x), k),
    "ReduceLogSum": lambda c, x, k: c.emit(G.LogOp, _reduce(c, G.ReduceSumOp, x, k)),
    "ReduceProd": lambda c, x, k: _reduce(c, G.ReduceProdOp, x, k),
    "ReduceMax": lambda c, x, k: _reduce(c, G.ReduceMaxOp, x, k),
    "ReduceMin": lambda c, x, k: c.emit(
        G.NegOp, _reduce(c, G.ReduceMaxOp, c.emit(G.NegOp, x), k)
    ),
}


_EXACT_FLOAT = {
    "bool": "float32",
    "int8": "float32",
    "uint8": "float32",
    "int16": "float32",
    "uint16": "float32",
    "int32": "float64",
    "uint32": "float64",
}
"""The float that holds every value of a non-float dtype exactly."""


def _extremum(c: NodeContext, x: SSAValue, keepdims: bool) -> SSAValue:
    """ReduceMax or ReduceMin; bool and integers through an exact float."""
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    form = _FORMS[c.node.op_type]
    if dtype.startswith("float"):
        return form(c, x, keepdims)
    if dtype not in _EXACT_FLOAT:
        raise ConversionError(
            f"expected a float, bool or integer of up to 32 bits, got {dtype} "
            "(the max kernels compute floats, which do not hold every "
            f"{dtype} exactly)"
        )
    y = form(c, c.emit(G.CastOp, x, to=_EXACT_FLOAT[dtype]), keepdims)
    return c.emit(G.CastOp, y, to=dtype)


@converter(*_FORMS, "ReduceLogSumExp")
def _reduction(c: NodeContext):
    x = c.value(0)
    if not axes_of(c, 1) and c.attr("noop_with_empty_axes", 0):
        return [x]
    keepdims = bool(c.attr("keepdims", 1))
    if c.node.op_type in ("ReduceMax", "ReduceMin"):
        return [_extremum(c, x, keepdims)]
    if c.node.op_type != "ReduceLogSumExp":
        return [_FORMS[c.node.op_type](c, x, keepdims)]
    top = _reduce(c, G.ReduceMaxOp, x, True)
    shifted = c.emit(G.ExpOp, c.emit(G.SubOp, x, top))
    total = c.emit(G.LogOp, _reduce(c, G.ReduceSumOp, shifted, keepdims))
    if not keepdims:
        top = c.emit(G.ReshapeOp, top, shape=tuple(shape_of(total)))
    return [c.emit(G.AddOp, total, top)]


@converter("RMSNormalization")
def _rms_normalization(c: NodeContext):
    x = c.value(0)
    rank = len(shape_of(x))
    axis = c.attr("axis", -1)
    if not -rank <= axis < rank:
        raise ConversionError(f"expected an axis in [{-rank}, {rank}), got {axis}")
    stash = graph_dtype(c.attr("stash_type", 1), "stash_type")
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    if stash != dtype:
        x = c.emit(G.CastOp, x, to=stash)
    axes = list(range(axis % rank, rank))
    mean = c.emit(G.ReduceMeanOp, _square(c, x), axes=axes, keepdims=True)
    eps = c.emit_op(G.ConstantOp.from_numpy(np.asarray(c.attr("epsilon", 1e-5), stash)))
    y = c.emit(G.DivOp, x, c.emit(G.SqrtOp, c.emit(G.AddOp, mean, eps)))
    if stash != dtype:
        y = c.emit(G.CastOp, y, to=dtype)
    return [c.emit(G.MulOp, y, c.value(1))]
