"""`graph-fold-batch-norm`: inference batch norms become a scale and a shift.

With scale = gamma / sqrt(var + epsilon) and shift = beta - mean * scale (per
channel), a batch norm whose input is a conv2d or dense read by nothing else, and
whose weight and statistics are params or literals, folds into that op: the weight
is multiplied by the scale along its output channels and the bias becomes
bias * scale + shift. Any other batch norm becomes `x * scale + shift`, a mul and an
add that `graph-fuse-ops` can put into the preceding anchor's epilogue.

The pass rewrites symbolically: scale, shift and the new weight are graph ops on
the params, which `graph-fold-constants` with the param values (the Python API
`fold_batch_norm(module, params)` does both) turns into new params.

    %y = graph.conv2d %x, %w {...} : (...) -> tensor<1x16x8x8xf32>
    %z = graph.batch_norm %y, %g, %b, %m, %v {epsilon = 1.0e-05 : f32} : (...) -> ...
becomes
    %e = graph.constant dense<1.0e-05> : tensor<f32>
    %0 = graph.add %v, %e        %1 = graph.sqrt %0        %s = graph.div %g, %1
    %2 = graph.mul %m, %s        %t = graph.sub %b, %2     (the shift)
    %3 = graph.reshape %s : (tensor<16xf32>) -> tensor<16x1x1x1xf32>
    %w2 = graph.mul %w, %3
    %z = graph.conv2d %x, %w2, %t {...} : (...) -> tensor<1x16x8x8xf32>
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import FusedLoc, ModuleOp, NoneAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from ember.dialects import graph
from ember.passes.graph_fold_constants import Params, fold_constants


def _is_known(value: SSAValue) -> bool:
    return isinstance(value.owner, graph.ParamOp | graph.ConstantOp)


class _Builder:
    """Inserts graph ops before `anchor`, inferring their types."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def __call__(
        self, cls: type[graph.GraphOp], *operands: SSAValue, **attrs
    ) -> SSAValue:
        op = cls.build_inferred(*operands, **attrs)
        self.insert(op)
        return op.results[0]

    def insert(self, op: Operation) -> None:
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_op_before(op, self.anchor)


def _scale_shift(bn: graph.BatchNormOp, build: _Builder) -> tuple[SSAValue, SSAValue]:
    var_type = bn.var.type
    assert isinstance(var_type, TensorType)
    dtype = {"f32": np.float32, "f64": np.float64}.get(str(var_type.element_type))
    if dtype is None:
        raise DiagnosticException(
            f"graph-fold-batch-norm: expected f32 or f64 statistics, got {var_type}"
        )
    eps = graph.ConstantOp.from_numpy(np.asarray(bn.config["epsilon"], dtype))
    build.insert(eps)
    scale = build(
        graph.DivOp,
        bn.gamma,
        build(graph.SqrtOp, build(graph.AddOp, bn.var, eps.result)),
    )
    shift = build(graph.SubOp, bn.beta, build(graph.MulOp, bn.mean, scale))
    return scale, shift


def _fold_into_anchor(bn: graph.BatchNormOp) -> bool:
    anchor = bn.data.owner
    if not isinstance(anchor, graph.Conv2DOp | graph.DenseOp):
        return False
    stats = (bn.gamma, bn.beta, bn.mean, bn.var)
    if (
        not anchor.results[0].has_one_use()
        or not _is_known(anchor.weight)
        or not all(_is_known(v) for v in stats)
        or (anchor.bias is not None and not _is_known(anchor.bias))
    ):
        return False
    build = _Builder(bn)
    scale, shift = _scale_shift(bn, build)
    w_shape = anchor.weight.type.get_shape()  # type: ignore[attr-defined]
    scale_w = build(
        graph.ReshapeOp, scale, shape=(w_shape[0],) + (1,) * (len(w_shape) - 1)
    )
    weight = build(graph.MulOp, anchor.weight, scale_w)
    bias = shift
    if anchor.bias is not None:
        bias = build(graph.AddOp, build(graph.MulOp, anchor.bias, scale), shift)
    attrs = anchor.config if isinstance(anchor, graph.Conv2DOp) else {}
    new = type(anchor).build_inferred(anchor.data, weight, bias, **attrs)
    new.attributes.update(anchor.attributes)
    # it computes the batch norm's tensor: its node last (`ember debug`)
    new.location = FusedLoc((anchor.location, bn.location), NoneAttr())
    build.insert(new)
    new.result.name_hint = bn.result.name_hint
    bn.result.replace_all_uses_with(new.result)
    block = bn.parent_block()
    assert block is not None
    block.erase_op(bn)
    block.erase_op(anchor)
    return True


def _decompose(bn: graph.BatchNormOp) -> None:
    build = _Builder(bn)
    scale, shift = _scale_shift(bn, build)
    rank = len(bn.data.type.get_shape())  # type: ignore[attr-defined]
    if rank > 2:
        channels = (-1,) + (1,) * (rank - 2)
        scale = build(graph.ReshapeOp, scale, shape=channels)
        shift = build(graph.ReshapeOp, shift, shape=channels)
    y = build(graph.AddOp, build(graph.MulOp, bn.data, scale), shift)
    y.name_hint = bn.result.name_hint
    if isinstance(y.owner, Operation):  # the tensor the batch norm computed
        y.owner.location = bn.location
    bn.result.replace_all_uses_with(y)
    block = bn.parent_block()
    assert block is not None
    block.erase_op(bn)


def rewrite_batch_norms(module: ModuleOp) -> int:
    """Rewrite every `graph.batch_norm` of `module`; returns how many folded into an
    anchor."""
    folded = 0
    for bn in [op for op in module.walk() if isinstance(op, graph.BatchNormOp)]:
        if _fold_into_anchor(bn):
            folded += 1
        else:
            _decompose(bn)
    return folded


def fold_batch_norm(module: ModuleOp, params: Mapping[str, np.ndarray]) -> Params:
    """Rewrite the batch norms of `module` in place and fold the new weights, biases,
    scales and shifts into params.

    Returns:
        The params the module binds afterwards (see `fold_constants`).
    """
    rewrite_batch_norms(module)
    return fold_constants(module, params)


@dataclass(frozen=True)
class GraphFoldBatchNorm(ModulePass):
    """Batch norms into the preceding conv2d/dense, or into a mul and an add.

    ember-opt model.mlir -p graph-fold-batch-norm,graph-fold-constants
    """

    name = "graph-fold-batch-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_batch_norms(op)
