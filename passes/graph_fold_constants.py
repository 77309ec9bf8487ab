"""`graph-fold-constants`: ops whose operands are all known are computed now.

Literal constants are always known; `graph.param` values are known only when the
params are given (`fold_constants(module, params)`, the Python API). An op on
literals folds into a `graph.constant`; an op on params (and literals) folds into a
new param whose value is computed with numpy (`passes/graph_reference.py`), e.g. a
transposed weight or a batch norm's scale. Only the values the rest of the graph
reads are materialized; what they replace is erased.

    %w = graph.param "fc.weight" : tensor<64x10xf32>
    %t = graph.transpose %w {perm = [1, 0]} : (tensor<64x10xf32>) -> tensor<10x64xf32>
    %y = graph.dense %x, %t : (...) -> tensor<1x10xf32>
becomes, with params,
    %t = graph.param "fc.weight.folded" : tensor<10x64xf32>
    %y = graph.dense %x, %t : (...) -> tensor<1x10xf32>
and
    %c = graph.constant dense<[1.0, 4.0]> : tensor<2xf32>
    %s = graph.sqrt %c : (tensor<2xf32>) -> tensor<2xf32>
becomes `%s = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>` with or without.
A reshape to its operand's own type and a transpose by the identity permutation
fold to their operand, known or not.

A literal result larger than `max-elements` stays unfolded in the pass form (the
IR holds literals as text); with params it becomes a param instead. A result past
`MAX_FOLDED_BYTES` (4 GiB) is never computed here: its op stays, a kernel.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from ember.dialects import graph
from ember.dialects.graph_base import MAX_FOLDED_BYTES, dtype_of
from ember.passes.graph_reference import evaluate

Params = dict[str, np.ndarray]


def _param_names(module: ModuleOp) -> set[str]:
    return {op.param_name.data for op in module.walk() if isinstance(op, graph.ParamOp)}


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, or `base.1`, `base.2`, ... : the first not in `taken` (then taken)."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}.{k}"
    taken.add(name)
    return name


def erase_dead_ops(block: Block) -> None:
    """Erase graph ops (and params, constants) whose results nobody reads."""
    for op in reversed(list(block.ops)):
        if isinstance(op, graph.GraphOp | graph.ParamOp | graph.ConstantOp) and not any(
            r.uses for r in op.results
        ):
            block.erase_op(op)


def prune_params(module: ModuleOp, params: Mapping[str, np.ndarray]) -> Params:
    """The entries of `params` that `module` still binds."""
    used = _param_names(module)
    return {k: v for k, v in params.items() if k in used}


def _result_bytes(op: Operation) -> float:
    """The result's size in bytes; infinite where it is symbolic (its size,
    known when the model runs, cannot be computed now)."""
    t = op.results[0].type
    assert isinstance(t, TensorType)
    if any(d < 0 for d in t.get_shape()):
        return math.inf
    return math.prod(t.get_shape()) * np.dtype(dtype_of(t.element_type)).itemsize


def _is_identity(op: Operation) -> bool:
    """A reshape to its operand's type or a transpose by the identity
    permutation (exporters and importers write them: ONNX Attention's 4-D
    form reshapes to the shape it has): a copy kernel of nothing."""
    if not isinstance(op, graph.ReshapeOp | graph.TransposeOp):
        return False
    if op.results[0].type != op.operands[0].type:
        return False
    if isinstance(op, graph.ReshapeOp):
        return True
    axes = list(range(len(op.results[0].type.get_shape())))  # type: ignore[attr-defined]
    perm = op.config["perm"]
    return (axes[::-1] if perm is None else list(perm)) == axes


def _fold_block(
    block: Block,
    params: Mapping[str, np.ndarray] | None,
    new_params: Params,
    taken: set[str],
    max_elements: int,
) -> None:
    known: dict[SSAValue, np.ndarray] = {}
    # for values computed from params: the name of the first param they read
    origin: dict[SSAValue, str] = {}
    folded: list[Operation] = []
    for op in block.ops:
        if _is_identity(op):  # its operand as it is
            op.results[0].replace_all_uses_with(op.operands[0])
        elif isinstance(op, graph.ConstantOp):
            known[op.result] = op.numpy()
        elif isinstance(op, graph.ParamOp):
            name = op.param_name.data
            if params is not None and name in params:
                known[op.result] = np.asarray(params[name])
                origin[op.result] = name
        elif (
            isinstance(op, graph.GraphOp)
            and len(op.results) == 1
            # an op of no operands computes from the size symbols
            and op.operands
            and all(v in known for v in op.operands)
            and _result_bytes(op) <= MAX_FOLDED_BYTES
        ):
            roots = [origin[v] for v in op.operands if v in origin]
            value = evaluate(op, [known[v] for v in op.operands])
            if not roots and params is None and value.size > max_elements:
                continue
            known[op.results[0]] = value
            if roots:
                origin[op.results[0]] = roots[0]
            folded.append(op)
    # materialize what the unfolded rest of the graph reads
    folded_set = set(folded)
    for op in folded:
        result = op.results[0]
        if all(use.operation in folded_set for use in result.uses):
            continue
        value = known[result]
        if result in origin or value.size > max_elements:
            name = unique_name(f"{origin.get(result, 'constant')}.folded", taken)
            new_params[name] = value
            assert isinstance(result.type, TensorType)
            new: Operation = graph.ParamOp(name, result.type)
        else:
            new = graph.ConstantOp.from_numpy(value)
        block.insert_op_before(new, op)
        new.results[0].name_hint = result.name_hint
        result.replace_all_uses_with(new.results[0])
    erase_dead_ops(block)


def fold_constants(
    module: ModuleOp,
    params: Mapping[str, np.ndarray] | None = None,
    max_elements: int = 1024,
) -> Params:
    """Fold, in place, every op of `module` whose operands are known.

    Args:
        module: graph IR (`func.func`s of graph ops).
        params: the values of the module's `graph.param`s; without them only
            literals fold.
        max_elements: the largest literal folded into a `graph.constant`.

    Returns:
        The params the folded module binds: the given ones still read, plus the
        new folded ones.
    """
    new_params: Params = dict(params or {})
    taken = _param_names(module) | set(new_params)
    for fn in module.walk():
        if isinstance(fn, func.FuncOp) and fn.body.blocks:
            _fold_block(fn.body.block, params, new_params, taken, max_elements)
    return prune_params(module, new_params) if params is not None else new_params


@dataclass(frozen=True)
class GraphFoldConstants(ModulePass):
    """Fold graph ops on literal constants, and on params when their values are
    bound (`ember.passes.bound_params`).

    ember-opt model.mlir -p 'graph-fold-constants{max-elements=4096}'
    """

    name = "graph-fold-constants"

    max_elements: int = 1024

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.passes.bound_params import bound_params

        bound = bound_params()
        if bound is None:
            fold_constants(op, None, self.max_elements)
        else:
            bound.values = fold_constants(op, bound.values, self.max_elements)
