"""Indexing by values: gather (`graph.gather`, TVM's `take`). Injective, so a
gather joins the elementwise ops around it in one loop nest: an embedding
lookup and the position embeddings added to it are one kernel."""

from __future__ import annotations

from ember import te
from ember.dialects import graph
from ember.dialects.graph_index import gather_axis
from ember.strategy import injective_strategy, tensor_operand


def gather(data: te.Tensor, indices: te.Tensor, axis: int, name: str = "gather"):
    """data's entries along `axis` at `indices` (negative ones counted from
    the end, out-of-range ones clamped, as `graph.gather` defines)."""
    axis = gather_axis(axis, len(data.shape))
    n = data.shape[axis]
    k = len(indices.shape)
    shape = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])

    def element(*i: te.Expr) -> te.Expr:
        v = indices[tuple(i[axis : axis + k])].astype("index")
        v = te.if_then_else(v < 0, v + n, v)
        v = te.min(te.max(v, 0), n - 1)
        return data[(*i[:axis], v, *i[axis + k :])]

    return te.compute(shape, element, name=name)


@injective_strategy(graph.GatherOp)
def _gather_form(op, args: list, name: str) -> te.Tensor:
    data, indices = (tensor_operand(a, op) for a in args)
    return gather(data, indices, op.config["axis"], name)
