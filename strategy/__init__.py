"""Operator strategies: how a graph op, or a fusion group, becomes a topi kernel.

The operator library (`ember.topi`) knows te and nothing of graph ops; a
strategy says which of its builders computes a graph op class and how the op's
attributes become the builder's arguments, as TVM keeps `relay/op/strategy`
apart from topi. The registry (`registry.py`: `anchor_strategy`,
`scalar_strategy`, `injective_strategy`) holds them; the modules named by what
they register hold ember's own:

- `nn.py`: conv2d, conv2d_transpose, dense, matmul, pooling, softmax,
  layer_norm (anchors, which take an elementwise epilogue);
- `reduce.py`: reductions, argmax / argmin, cumsum / cumprod (anchors);
- `elementwise.py`: arithmetic, activations and unary math (scalar forms),
  batch_norm (a tensor form);
- `logic.py`: comparisons, logic and bitwise ops, shifts, where, sign, mod,
  cast and bitcast (scalar forms on every dtype);
- `tensor.py`: reshape, transpose, concat, pad, slice, tile, gather, resize,
  ... (tensor forms) and scatter_nd.

`lower.py` lowers a `graph.fused` group (or a lone op) to one kernel through
them, which `convert-graph-to-te` calls:

    spec = lower_group(fused_op, constant_of, target)
    spec.kernel       # topi.Kernel: output, placeholders, weight transforms
    spec.operands     # the graph value each placeholder reads, in call order
"""

from ember.strategy.lower import (
    KernelSpec,
    copy_kernel,
    is_elementwise,
    lower_group,
    plan_bf16,
    plan_blocks,
)
from ember.strategy.registry import (
    ALL_DTYPES,
    FLOATS,
    INTEGERS,
    NUMBERS,
    AnchorStrategy,
    StrategyError,
    anchor_strategy,
    injective_strategy,
    scalar_strategy,
    tensor_operand,
)

__all__ = [
    "ALL_DTYPES",
    "FLOATS",
    "INTEGERS",
    "NUMBERS",
    "AnchorStrategy",
    "KernelSpec",
    "StrategyError",
    "anchor_strategy",
    "copy_kernel",
    "injective_strategy",
    "is_elementwise",
    "lower_group",
    "plan_bf16",
    "plan_blocks",
    "scalar_strategy",
    "tensor_operand",
]
