"""ONNX's losses, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, in
graph ops. There is no gather-elements op: the class each target names is
picked by comparing the target with the class range along axis 1 and summing
over that axis, which fuses into one reduction. For x (N, C, d1, ...), target
t (N, d1, ...) and an optional weight (C,):

    hit[n, c, d]  = t[n, d] == c  and  t[n, d] != ignore_index
    picked[n, d]  = sum_c where(hit, x, 0)           x[n, t[n, d], d], or 0
    w[n, d]       = sum_c where(hit, weight[c], 0)   weight[t], 0 where ignored
    loss          = -picked * w                      (-picked with neither)

reduction "none" gives loss, "sum" its sum, "mean" sum(loss) / sum(w): the
mean over the non-ignored targets' weights (with neither weight nor
ignore_index the plain mean), as onnx's reference computes it. A target
outside [0, C) that is not ignore_index (undefined in ONNX) adds 0 to the loss
and its weights. SoftmaxCrossEntropyLoss is the NLL of log_softmax(x) over the
class axis, which is its optional second output, log_prob.

Two small composites live here too: LpNormalization, x / norm along one axis
with the norm sum |x| (p=1) or sqrt(sum x²) (p=2), x divided by 1 where the
norm is 0 (the output 0, as opset 22 defines it); and EyeLike, which reads only
its input's static shape: its output is an import-time array (a literal or a
param) whatever computes the input."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_base import NUMPY_TYPES, dtype_of
from ember.frontends.onnx_fold import checked_shape, dtype_name, shape_of
from ember.frontends.onnx_ops import (
    CHECKS,
    ConversionError,
    NodeContext,
    _one_of,
    converter,
)

_REDUCTION = _one_of("reduction", ["none", "sum", "mean"], "mean")


def _eye_like_dtype(attrs: dict[str, Any], _opset: int) -> list[str]:
    if "dtype" not in attrs:
        return []
    dtype = dtype_name(attrs["dtype"])
    return [] if dtype in NUMPY_TYPES else [f"dtype={dtype}"]


CHECKS.update(
    {
        "NegativeLogLikelihoodLoss": _REDUCTION,
        "SoftmaxCrossEntropyLoss": _REDUCTION,
        "LpNormalization": _one_of("p", [1, 2], 2),
        "EyeLike": _eye_like_dtype,
    }
)


def _dtype(x: SSAValue) -> str:
    return dtype_of(x.type.element_type)  # type: ignore[attr-defined]


def _scalar(c: NodeContext, value: float, dtype: str) -> SSAValue:
    return c.emit_op(G.ConstantOp.from_numpy(np.asarray(value, dtype)))


def _shapes(c: NodeContext) -> tuple[int, ...]:
    """The input's shape, (N, C, d1, ...), checked against the target's."""
    shape, target = shape_of(c.value(0)), shape_of(c.value(1))
    if len(shape) < 2 or target != (shape[0], *shape[2:]):
        raise ConversionError(
            f"expected input (N, C, d1, ...) and target (N, d1, ...), got "
            f"{shape} and {target}"
        )
    return shape


def _nll(c: NodeContext, x: SSAValue) -> SSAValue:
    """The loss of log-probabilities `x` (N, C, d1, ...) for the node's target
    (input 1), weight (input 2) and attributes."""
    shape, target = _shapes(c), c.value(1)
    classes, dtype, index = shape[1], _dtype(x), _dtype(target)
    spread = (1, classes) + (1,) * (len(shape) - 2)
    t = c.emit(G.ReshapeOp, target, shape=[shape[0], 1, *shape[2:]])
    hit = c.emit(
        G.EqualOp,
        t,
        c.array(np.arange(classes, dtype=index).reshape(spread), "classes"),
    )
    ignore = c.attr("ignore_index")
    if ignore is not None and 0 <= ignore < classes:
        # an ignore_index outside [0, C) never matches a class anyway
        kept = c.emit(G.LogicalNotOp, c.emit(G.EqualOp, t, _scalar(c, ignore, index)))
        hit = c.emit(G.LogicalAndOp, hit, kept)
    zero = _scalar(c, 0.0, dtype)
    picked = c.emit(
        G.ReduceSumOp, c.emit(G.WhereOp, hit, x, zero), axes=[1], keepdims=False
    )
    loss = c.emit(G.NegOp, picked)
    weights = None
    if c.has(2) or ignore is not None:
        weight = (
            c.emit(G.ReshapeOp, c.value(2), shape=list(spread))
            if c.has(2)
            else _scalar(c, 1.0, dtype)
        )
        weights = c.emit(
            G.ReduceSumOp,
            c.emit(G.WhereOp, hit, weight, zero),
            axes=[1],
            keepdims=False,
        )
        loss = c.emit(G.MulOp, loss, weights)
    reduction = c.attr("reduction", "mean")
    if reduction == "none":
        return loss
    total = c.emit(G.ReduceSumOp, loss, axes=[], keepdims=False)
    if reduction == "sum":
        return total
    if weights is None:
        return c.emit(G.ReduceMeanOp, loss, axes=[], keepdims=False)
    count = c.emit(G.ReduceSumOp, weights, axes=[], keepdims=False)
    return c.emit(G.DivOp, total, count)


@converter("NegativeLogLikelihoodLoss")
def _negative_log_likelihood_loss(c: NodeContext):
    return [_nll(c, c.value(0))]


@converter("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy_loss(c: NodeContext):
    _shapes(c)
    log_prob = c.emit(G.LogSoftmaxOp, c.value(0), axis=1)
    return [_nll(c, log_prob), log_prob]


# -- small composites ---------------------------------------------------------------


@converter("LpNormalization")
def _lp_normalization(c: NodeContext):
    x = c.value(0)
    rank = len(shape_of(x))
    axis = c.attr("axis", -1)
    if not -rank <= axis < rank:
        raise ConversionError(f"expected an axis in [{-rank}, {rank}), got {axis}")
    if c.attr("p", 2) == 1:
        norm = c.emit(G.ReduceSumOp, c.emit(G.AbsOp, x), axes=[axis], keepdims=True)
    else:
        squares = c.emit(G.MulOp, x, x)
        norm = c.emit(
            G.SqrtOp, c.emit(G.ReduceSumOp, squares, axes=[axis], keepdims=True)
        )
    dtype = _dtype(x)
    zero = c.emit(G.EqualOp, norm, _scalar(c, 0, dtype))
    return [c.emit(G.DivOp, x, c.emit(G.WhereOp, zero, _scalar(c, 1, dtype), norm))]


@converter("EyeLike")
def _eye_like(c: NodeContext):
    x = c.inputs[0]
    shape = x.shape if isinstance(x, np.ndarray) else shape_of(c.value(0))
    if len(shape) != 2:
        raise ConversionError(f"expected a 2-D input, got shape {tuple(shape)}")
    if "dtype" in c.attrs:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(c.attr("dtype"))
    else:
        dtype = x.dtype if isinstance(x, np.ndarray) else np.dtype(_dtype(c.value(0)))
    rows, columns = checked_shape(shape, dtype, "the identity")
    return [np.eye(rows, columns, k=c.attr("k", 0), dtype=dtype)]
