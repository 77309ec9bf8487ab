"""numpy semantics of the graph dialect: `evaluate(op, inputs)` computes one op
(each op's own `reference`), `run_graph(func, inputs, params)` a whole `@main`.

Constant folding evaluates ops with it, and tests use it as the reference a
compiled graph must match (it follows ONNX's definitions, which onnxruntime
checks in tests).
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from ember.dialects import graph
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_numpy import conv2d, erf, pool2d
from ember.runtime.errors import EmberValueError

Array = np.ndarray


def evaluate(op: Operation, inputs: Sequence[Array]) -> Array:
    """The value of graph op `op` on `inputs` (its operands' values)."""
    if isinstance(op, graph.ConstantOp):
        return op.numpy()
    if isinstance(op, graph.FusedOp):
        (y,) = _run_block(op.body.block, inputs, {})
        return np.asarray(y, dtype=_result_dtype(op))
    if not inputs or not isinstance(op, graph.GraphOp):
        raise NotImplementedError(f"no numpy semantics for {op.name}")
    return np.asarray(op.reference(list(inputs)), dtype=_result_dtype(op))


def _result_dtype(op: Operation) -> str:
    """The dtype of `op`'s result (a cast's or a compare's is not its input's)."""
    return dtype_of(op.results[0].type.element_type)  # type: ignore[attr-defined]


def _run_block(
    block: Any, inputs: Sequence[Array], params: Mapping[str, Array]
) -> list[Array]:
    env: dict[SSAValue, Array] = dict(zip(block.args, inputs, strict=True))
    for op in block.ops:
        if isinstance(op, func.ReturnOp | graph.YieldOp):
            return [env[v] for v in op.operands]
        if isinstance(op, graph.ParamOp):
            name = op.param_name.data
            if name not in params:
                raise KeyError(f"expected a value for param '{name}', got none")
            env[op.result] = np.asarray(params[name])
            continue
        outs = evaluate(op, [env[v] for v in op.operands])
        env[op.results[0]] = outs
    raise EmberValueError("expected the block to end in func.return or graph.yield")


def run_graph(
    fn: func.FuncOp, inputs: Sequence[Array], params: Mapping[str, Array]
) -> list[Array]:
    """The results of graph function `fn` on `inputs`, params bound from `params`."""
    return _run_block(fn.body.block, [np.asarray(a) for a in inputs], params)


__all__ = ["conv2d", "erf", "evaluate", "pool2d", "run_graph"]
