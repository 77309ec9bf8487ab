"""Strategies of the reductions and scans: reduce_sum / mean / max / prod,
argmax / argmin (`dialects/graph_index.py`) and cumsum / cumprod
(`graph_data.py`), anchors whose elementwise consumers fuse as the epilogue.

    graph.reduce_mean {axes, keepdims}(x)   topi.reduce.reduce(x, "mean", ...)
"""

from __future__ import annotations

from ember.dialects import graph
from ember.strategy.registry import NUMBERS, anchor_strategy
from ember.topi import data as topi_data
from ember.topi import index
from ember.topi import reduce as topi_reduce
from ember.topi.kernel import Kernel

REDUCTIONS = {
    graph.ReduceSumOp: "sum",
    graph.ReduceMeanOp: "mean",
    graph.ReduceMaxOp: "max",
    graph.ReduceProdOp: "prod",
}


@anchor_strategy(*REDUCTIONS, dtypes=("float32", "float64"))
def _reduce_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    return topi_reduce.reduce(
        data[0],
        kind=REDUCTIONS[type(op)],
        **op.config,
        epilogue=epilogue,
        epilogue_tensors=epilogue_inputs,
        name=op.name.removeprefix("graph."),
        target=target,
    )


@anchor_strategy(graph.ArgMaxOp, graph.ArgMinOp, dtypes=(*NUMBERS, "float64"))
def _arg_reduce_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    kind = "max" if isinstance(op, graph.ArgMaxOp) else "min"
    return index.arg_reduce(
        data[0],
        kind,
        **op.config,
        epilogue=epilogue,
        epilogue_tensors=epilogue_inputs,
        name=op.name.removeprefix("graph."),
    )


@anchor_strategy(
    graph.CumSumOp, graph.CumProdOp, dtypes=("float32", "float64", "int32", "int64")
)
def _cumsum_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    return topi_data.cumsum(
        data[0],
        **op.config,
        epilogue=epilogue,
        epilogue_tensors=epilogue_inputs,
        name=op.name.removeprefix("graph."),
        product=isinstance(op, graph.CumProdOp),
    )
