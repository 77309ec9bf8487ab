"""ONNX ops that index by values: Gather on computed tensors (the embedding
lookup of every transformer; a Gather whose inputs are all known at import is
folded by `onnx_fold`); ArgMax and ArgMin."""

from __future__ import annotations

from ember.dialects import graph as G
from ember.frontends.onnx_ops import NodeContext, converter


@converter("Gather")
def _gather(c: NodeContext):
    return [c.emit(G.GatherOp, c.value(0), c.value(1), axis=c.attr("axis", 0))]


@converter("ArgMax", "ArgMin")
def _arg_reduce(c: NodeContext):
    op = G.ArgMaxOp if c.node.op_type == "ArgMax" else G.ArgMinOp
    return [
        c.emit(
            op,
            c.value(0),
            axis=c.attr("axis", 0),
            keepdims=bool(c.attr("keepdims", 1)),
            select_last_index=bool(c.attr("select_last_index", 0)),
        )
    ]
