"""`graph-lookup-tables`: an elementwise chain whose one varying input is a
byte tensor becomes a table of its 256 values and a gather.

    %d = graph.cast %q : (tensor<128x1024xui8>) -> tensor<128x1024xi32>
    ... dequantize, erf, quantize, multiply, quantize ...
    %y = graph.cast %c : (tensor<128x1024xf32>) -> tensor<128x1024xui8>
becomes
    %t = graph.constant dense<[...256 values...]> : tensor<256xui8>
    %y = graph.gather %t, %q {axis = 0} : (tensor<256xui8>, tensor<128x1024xui8>) -> tensor<128x1024xui8>

A quantized model computes its activations between quantized ops in float:
QDQ's DequantizeLinear, the op, QuantizeLinear, once per op (a GELU is five
such rounds, with an erf and five divisions an element). Every such value is
a function of one uint8 or int8 tensor: there are 256 inputs, so the chain is
computed once for each at compile time (in numpy, `graph_reference`, the
model's own semantics) and the kernel reads the answer, as onnxruntime's
QLinearSigmoid and TFLite's int8 activations do.

A chain (the region of a byte value `q`) takes the ops that follow `q` whose
operands are `q`, values of the region (of one shape) or one-element
constants: elementwise ops and reshapes (which keep the elements' order). Its
outputs are the values it computes that ops outside it read; each becomes a
256-entry table gathered at `q` (reshaped to the output's shape; an int8's
negative values index from the end, as gather wraps them). A table costs a
load an element, so only a chain with a transcendental function
(`EXPENSIVE`) becomes one: additions, casts, clips and divisions are cheaper
computed.
"""

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from ember.dialects import graph
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_shapes import dims_of
from ember.passes.graph_reference import evaluate
from ember.runtime.errors import EmberValueError

EXPENSIVE = frozenset(
    f"graph.{name}"
    for name in (
        "pow exp log erf sigmoid tanh softplus gelu gelu_tanh elu selu celu mish "
        "sin cos tan asin acos atan sinh cosh asinh acosh atanh"
    ).split()
)
"""The transcendental functions: each a polynomial of tens of instructions an
element, where a table costs one load. A division or a square root is one
instruction: a QDQ round trip around a division (128x1024) took 28.6 us
computed and 36 us looked up, a GELU's five 154 us and 36 us."""

_ELEMENTWISE = frozenset(op.name for op in graph.ELEMENTWISE_OPS)


@dataclass(frozen=True)
class GraphLookupTables(ModulePass):
    """Chains of elementwise ops on one byte tensor become 256-entry tables
    (see the module's doc).

    ember-opt model.mlir -p graph-lookup-tables
    """

    name = "graph-lookup-tables"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                _tabulate_block(f.body.block)


def _tabulate_block(block: Block) -> None:
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    roots = [*block.args, *(r for op in block.ops for r in op.results)]
    for root in roots:
        owner = root.owner
        if isinstance(owner, Operation) and owner.parent is None:
            continue  # erased with an earlier region
        if _is_byte(root) and not isinstance(owner, graph.ConstantOp | graph.ParamOp):
            _tabulate(block, root, ops, position)


def _is_byte(value: SSAValue) -> bool:
    t = value.type
    return (
        isinstance(t, TensorType)
        and isinstance(t.element_type, IntegerType)
        and t.element_type.width.data == 8
    )


def _scalar(value: SSAValue) -> np.ndarray | None:
    """The value of a one-element constant, as a 0-d array; else None."""
    owner = value.owner
    if isinstance(owner, graph.ConstantOp):
        array = owner.numpy()
        if array.size == 1:
            return array.reshape(())
    return None


def _region(
    root: SSAValue, ops: list[Operation], position: dict[Operation, int]
) -> list[Operation]:
    """The ops after `root` that compute elementwise from it alone, in program
    order: its readers, theirs, ... (the walk is as long as the region)."""
    values = {root}
    region: list[Operation] = []
    waiting = [position[u.operation] for u in root.uses if u.operation in position]
    heapq.heapify(waiting)
    seen: set[int] = set()
    while waiting:
        i = heapq.heappop(waiting)  # first in program order: its operands decided
        if i in seen:
            continue
        seen.add(i)
        op = ops[i]
        if not _joins(op, values):
            continue
        region.append(op)
        values.add(op.results[0])
        for use in op.results[0].uses:
            if use.operation in position:
                heapq.heappush(waiting, position[use.operation])
    return region


def _joins(op: Operation, values: set[SSAValue]) -> bool:
    """Whether `op` computes elementwise from `values` and one-element
    constants, its operands of `values` of one shape."""
    if op.name not in _ELEMENTWISE and not isinstance(op, graph.ReshapeOp):
        return False
    if len(op.results) != 1:
        return False
    inside = [v for v in op.operands if v in values]
    scalars = sum(_scalar(v) is not None for v in op.operands if v not in values)
    if len(inside) + scalars != len(op.operands):
        return False
    return len({v.type.get_shape() for v in inside}) == 1  # type: ignore[attr-defined]


def _tabulate(
    block: Block,
    root: SSAValue,
    ops: list[Operation],
    position: dict[Operation, int],
) -> None:
    region = _region(root, ops, position)
    if not any(op.name in EXPENSIVE for op in region):
        return
    members = set(region)
    outputs = [
        op.results[0]
        for op in region
        if any(use.operation not in members for use in op.results[0].uses)
    ]
    tables = _tables(root, region, outputs)
    if tables is None:
        return
    for value, table in zip(outputs, tables, strict=True):
        gathered = _gather(root, value, table)
        if gathered is None:
            return  # the region stays whole: its values are read as before
        value.replace_uses_with_if(gathered, lambda use: use.operation not in members)
    for op in reversed(region):
        if not any(r.uses for r in op.results):
            block.erase_op(op)


def _tables(
    root: SSAValue, region: list[Operation], outputs: Sequence[SSAValue]
) -> list[np.ndarray] | None:
    """Each output's value for the 256 bytes (in index order: an int8's
    negative values last), or None where numpy cannot compute the region."""
    dtype = np.dtype(dtype_of(root.type.element_type))  # type: ignore[attr-defined]
    env: dict[SSAValue, np.ndarray] = {root: np.arange(256, dtype=np.uint8).view(dtype)}
    try:
        for op in region:
            inputs = [env[v] if v in env else _scalar(v) for v in op.operands]
            known = [v for v in inputs if v is not None]
            if isinstance(op, graph.ReshapeOp):
                env[op.results[0]] = known[0]
            else:
                env[op.results[0]] = evaluate(op, known)
    except (NotImplementedError, ValueError, TypeError, ArithmeticError):
        return None
    return [np.asarray(env[v]).reshape(256) for v in outputs]


def _gather(root: SSAValue, value: SSAValue, table: np.ndarray) -> SSAValue | None:
    """`table` gathered at `root`, reshaped to `value`'s shape, inserted before
    `value`'s op; None where the types do not come out as `value`'s."""
    anchor = value.owner
    assert isinstance(anchor, Operation)
    block = anchor.parent_block()
    assert block is not None
    index = root
    try:
        new: list[Operation] = [graph.ConstantOp.from_numpy(table)]
        if root.type != value.type and (
            root.type.get_shape() != value.type.get_shape()  # type: ignore[attr-defined]
        ):
            reshape = graph.ReshapeOp.build_inferred(root, shape=dims_of(value.type))
            new.append(reshape)
            index = reshape.results[0]
        gather = graph.GatherOp.build_inferred(new[0].results[0], index, axis=0)
    except EmberValueError:  # a table of a type constants cannot hold
        return None
    if gather.results[0].type != value.type:
        return None
    new.append(gather)
    for op in new:
        block.insert_op_before(op, anchor)
    gather.results[0].name_hint = value.name_hint
    return gather.results[0]


__all__ = ["EXPENSIVE", "GraphLookupTables"]
