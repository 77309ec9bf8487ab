"""`graph-fuse-layer-norm`: layer norms written out become `graph.layer_norm`.

Exporters before ONNX's LayerNormalization (opset 17) write it out, and so do
many models since: mean, difference, square, mean, epsilon, square root,
quotient. That is four kernels (two reductions and their elementwise chains);
`graph.layer_norm` is one, whose scale and shift (the Mul and Add that follow)
join as its epilogue in `graph-fuse-ops`. The pattern, over trailing axes with
kept dims, each intermediate read only inside it:

    %m = graph.reduce_mean %x {axes = [-1], keepdims = true}
    %d = graph.sub %x, %m
    %s = graph.pow %d, %two          (or graph.mul %d, %d)
    %v = graph.reduce_mean %s {axes = [-1], keepdims = true}
    %e = graph.add %v, %eps          (a single-element constant, either side)
    %r = graph.sqrt %e
    %n = graph.div %d, %r
becomes
    %one = graph.constant dense<1.0> : tensor<1xf32>
    %n = graph.layer_norm %x, %one {axis = 2, epsilon = ...}
"""

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ember.dialects import graph


def scalar_value(value: SSAValue) -> float | None:
    """The value of a single-element float constant, else None."""
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp):
        return None
    array = owner.numpy()
    return float(array.reshape(())) if array.size == 1 else None


def only_reader(value: SSAValue, op: Operation) -> bool:
    """Whether `op` is the only op that reads `value` (it may read it twice)."""
    return all(use.operation is op for use in value.uses)


def replace_chain(new: list[Operation], last: Operation, dead: list[Operation]) -> None:
    """A matched chain's rewrite: `new` inserted before `last`, the chain's
    result (`last`'s) replaced by the last new op's, the chain's ops `dead`
    (consumers first) erased."""
    block = last.parent_block()
    assert block is not None
    block.insert_ops_before(new, last)
    last.results[0].replace_all_uses_with(new[-1].results[0])
    for op in dead:
        op.detach()
        op.erase()


def _trailing(op: Operation) -> int | None:
    """The first reduced axis of a keepdims reduce_mean over trailing axes."""
    if not isinstance(op, graph.ReduceMeanOp) or not op.config["keepdims"]:
        return None
    axes = op.reduced_axes
    rank = len(op.input.type.get_shape())  # type: ignore[attr-defined]
    return axes[0] if axes == tuple(range(axes[0], rank)) else None


def _match(div: graph.DivOp) -> tuple[SSAValue, int, float, list[Operation]] | None:
    """(x, axis, epsilon, the ops replaced) when `div` ends the pattern."""
    d, root = div.lhs, div.rhs
    sqrt, sub = root.owner, d.owner
    if not isinstance(sqrt, graph.SqrtOp) or not isinstance(sub, graph.SubOp):
        return None
    add = sqrt.input.owner
    if not isinstance(add, graph.AddOp):
        return None
    var, eps = add.lhs, scalar_value(add.rhs)
    if eps is None:
        var, eps = add.rhs, scalar_value(add.lhs)
    var_op, mean = var.owner, sub.rhs.owner
    if eps is None or eps < 0 or not isinstance(var_op, graph.ReduceMeanOp):
        return None
    square = var_op.input.owner
    squares = (
        isinstance(square, graph.PowOp)
        and square.lhs is d
        and scalar_value(square.rhs) == 2.0
        or isinstance(square, graph.MulOp)
        and square.lhs is d
        and square.rhs is d
    )
    x = sub.lhs
    axis = _trailing(var_op)
    if not squares or axis is None or not isinstance(mean, graph.ReduceMeanOp):
        return None
    if mean.input is not x or _trailing(mean) != axis:
        return None
    assert isinstance(square, Operation)
    chain = [
        (mean.results[0], sub),
        (var, add),
        (add.results[0], sqrt),
        (root, div),
        (square.results[0], var_op),
    ]
    if not all(only_reader(v, op) for v, op in chain):
        return None
    if any(use.operation not in (square, div) for use in d.uses):
        return None
    return x, axis, eps, [div, sqrt, add, var_op, square, sub, mean]


def fuse_layer_norms(module: ModuleOp) -> int:
    """Rewrite every written-out layer norm of `module`; returns how many."""
    count = 0
    for div in [op for op in module.walk() if isinstance(op, graph.DivOp)]:
        found = _match(div)
        if found is None:
            continue
        x, axis, eps, dead = found
        if str(x.type.element_type) != "f32":  # type: ignore[attr-defined]
            continue
        one = graph.ConstantOp.from_numpy(np.ones(1, np.float32))
        norm = graph.LayerNormOp.build_inferred(x, one, axis=axis, epsilon=eps)
        replace_chain([one, norm], div, dead)
        count += 1
    return count


@dataclass(frozen=True)
class GraphFuseLayerNorm(ModulePass):
    """Written-out layer norms into graph.layer_norm.

    ember-opt model.mlir -p graph-fuse-layer-norm,graph-fuse-ops
    """

    name = "graph-fuse-layer-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_layer_norms(op)
