"""ONNX unary math (`dialects/graph_math.py`): trigonometric and hyperbolic
functions, rounding, Reciprocal, Softsign, IsNaN, IsInf and the thresholding
activations ThresholdedRelu, Shrink and Celu (their float attributes; an
absent one takes the op's default, which is ONNX's)."""

from __future__ import annotations

from ember.dialects import graph_math as gm
from ember.frontends.onnx_ops import NodeContext, converter

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
