"""ONNX unary math (`dialects/graph_math.py`): trigonometric and hyperbolic
functions, rounding, Reciprocal, Softsign, IsNaN, IsInf and the thresholding
activations ThresholdedRelu, Shrink and Celu (their float attributes; an
absent one takes the op's default, which is ONNX's); Det of small matrices
by the Leibniz formula."""

from __future__ import annotations

import itertools

import numpy as np

from ember.dialects import graph as G
from ember.dialects import graph_math as gm
from ember.dialects.graph_base import dtype_of
from ember.frontends.onnx_fold import shape_of
from ember.frontends.onnx_ops import ConversionError, NodeContext, converter

_PLAIN = {
    "Sin": gm.SinOp,
    "Cos": gm.CosOp,
    "Tan": gm.TanOp,
    "Asin": gm.AsinOp,
    "Acos": gm.AcosOp,
    "Atan": gm.AtanOp,
    "Sinh": gm.SinhOp,
    "Cosh": gm.CoshOp,
    "Asinh": gm.AsinhOp,
    "Acosh": gm.AcoshOp,
    "Atanh": gm.AtanhOp,
    "Floor": gm.FloorOp,
    "Ceil": gm.CeilOp,
    "Round": gm.RoundOp,
    "Reciprocal": gm.ReciprocalOp,
    "Softsign": gm.SoftsignOp,
    "IsNaN": gm.IsNaNOp,
}

_WITH_ATTRS = {
    "ThresholdedRelu": gm.ThresholdedReluOp,
    "Shrink": gm.ShrinkOp,
    "Celu": gm.CeluOp,
    "IsInf": gm.IsInfOp,
}


@converter(*_PLAIN, *_WITH_ATTRS)
def _math(c: NodeContext):
    key = c.node.op_type
    op = _PLAIN.get(key) or _WITH_ATTRS[key]
    attrs = {
        name: (bool if kind == "bool" else float)(c.attrs[name])
        for name, (kind, _) in op.ATTRS.items()
        if name in c.attrs
    }
    return [c.emit(op, c.value(0), **attrs)]


MAX_DET_ORDER = 5
"""Det's largest matrix: the Leibniz formula sums n! products."""


@converter("Det")
def _det(c: NodeContext):
    """The sum over permutations p of sign(p) prod_i x[i, p(i)]: one gather
    of the n! index rows of the flattened matrices, a product and a signed
    sum."""
    x = c.value(0)
    *batch, n, m = shape_of(x)
    if n != m or not 1 <= n <= MAX_DET_ORDER:
        raise ConversionError(
            f"expected square matrices of order 1 to {MAX_DET_ORDER}, got {n}x{m}"
        )
    perms = list(itertools.permutations(range(n)))
    index = np.array([[i * n + p[i] for i in range(n)] for p in perms], np.int64)
    signs = [
        (-1) ** sum(p[j] > p[i] for i in range(n) for j in range(i)) for p in perms
    ]
    flat = c.emit(G.ReshapeOp, x, shape=[*batch, n * n])
    terms = c.emit(G.GatherOp, flat, c.array(index, "permutations"), axis=-1)
    products = c.emit(G.ReduceProdOp, terms, axes=[-1], keepdims=False)
    dtype = dtype_of(x.type.element_type)  # type: ignore[attr-defined]
    signed = c.emit(G.MulOp, products, c.array(np.array(signs, dtype), "signs"))
    y = c.emit(G.ReduceSumOp, signed, axes=[-1], keepdims=False)
    return [y]
