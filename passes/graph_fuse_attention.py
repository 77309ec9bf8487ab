"""`graph-fuse-attention`: attention written out becomes `graph.attention`.

Exporters write scaled dot-product attention as two matmuls around a softmax:
the scores (S x T a head) are one kernel's result, the softmax's input and
output, and the second matmul's operand. `graph.attention` is one kernel that
keeps a tile of query rows' scores in L1 (`topi.attention`). The pattern, each
intermediate read only by the next op, the softmax along the keys:

    %s = graph.matmul %q, %kt        (q (..., S, D), kt (..., D, T))
    %d = graph.div %s, %c            (or graph.mul by c, either side; optional)
    %a = graph.add %d, %mask         (either side; or graph.where %cond, %d,
                                      -inf: a boolean mask; optional)
    %p = graph.softmax %a {axis = -1}
                                     (then graph.where(graph.is_nan %p, 0, %p):
                                      nan_to_zero, as torch exports SDPA)
    %o = graph.matmul %p, %v         (v (..., T, E))
becomes
    %o = graph.attention %q, %kt, %v, %mask {scale = 1/c}

`c` is a single-element float32 constant (scale = 1 / c for a division: the
same products where c is a power of two, as sqrt(64) = 8, else within an
ulp); q, kt and v have the same batch dims
(no broadcasting between them), static shapes and float32 elements. A select
by a boolean mask joins only with -inf: a finite fill (HF's float32 minimum)
differs from adding it where a row is masked whole.
"""

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FusedLoc, ModuleOp, NoneAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ember.dialects import graph
from ember.dialects.graph_dtype import WhereOp
from ember.dialects.graph_math import IsNaNOp
from ember.dialects.graph_shapes import dims_of
from ember.passes.graph_fuse_layer_norm import (
    only_reader,
    replace_chain,
    scalar_value,
)

_MATMULS = (graph.MatmulOp, graph.BatchMatmulOp)


def _shape(value: SSAValue, elements: tuple[str, ...] = ("f32",)) -> tuple | None:
    """The static shape of a value of one of `elements`, else None."""
    if str(value.type.element_type) not in elements:  # type: ignore[attr-defined]
        return None
    shape = tuple(dims_of(value.type))
    return shape if all(isinstance(d, int) for d in shape) else None


def _scaled(value: SSAValue) -> tuple[SSAValue, float, Operation | None]:
    """(x, scale, the op) when `value` is x / c or x * c, else (value, 1, None)."""
    op = value.owner
    if isinstance(op, graph.DivOp):
        c = scalar_value(op.rhs)
        if c is not None and c != 0:
            return op.lhs, 1.0 / c, op
    if isinstance(op, graph.MulOp):
        for x, c in ((op.lhs, scalar_value(op.rhs)), (op.rhs, scalar_value(op.lhs))):
            if c is not None:
                return x, c, op
    return value, 1.0, None


def _nan_to_zero(
    value: SSAValue, reader: Operation
) -> tuple[SSAValue, list[Operation]] | None:
    """(p, [the where, the is_nan]) when `value` is where(is_nan(p), 0, p)
    read by `reader` alone, p read by those two alone."""
    where = value.owner
    if not isinstance(where, WhereOp) or not only_reader(value, reader):
        return None
    test, zero, p = where.cond, where.lhs, where.rhs
    check = test.owner
    if not isinstance(check, IsNaNOp) or check.operands[0] is not p:
        return None
    if scalar_value(zero) != 0.0 or not only_reader(test, where):
        return None
    if any(use.operation not in (where, check) for use in p.uses):
        return None
    return p, [where, check]


def _match(out: Operation) -> tuple[list[SSAValue], dict, list[Operation]] | None:
    """([q, kt, v, mask?], the attributes, the ops replaced) when `out` ends
    the pattern."""
    if not isinstance(out, _MATMULS):
        return None
    probs, v = out.operands
    dead: list[Operation] = [out]
    attrs: dict = {}
    zeroed = _nan_to_zero(probs, out)
    if zeroed is not None:  # torch's exported SDPA: where(isnan(p), 0, p)
        probs, ops = zeroed
        dead += ops
        attrs["nan_to_zero"] = True
    softmax = probs.owner
    if not isinstance(softmax, graph.SoftmaxOp):
        return None
    if zeroed is None and not only_reader(probs, out):
        return None
    scores = softmax.operands[0]
    rank = len(dims_of(scores.type))
    if softmax.config["axis"] not in (-1, rank - 1):
        return None
    dead.append(softmax)
    mask, fill = None, -math.inf
    masking = scores.owner
    if isinstance(masking, graph.AddOp) and only_reader(scores, softmax):
        for x, m in ((masking.lhs, masking.rhs), (masking.rhs, masking.lhs)):
            if isinstance(_scaled(x)[0].owner, _MATMULS):  # the scores' side
                scores, mask = x, m
                dead.append(masking)
                break
    elif isinstance(masking, WhereOp) and only_reader(scores, softmax):
        # a causal or padding mask: the scores where it holds, else the fill
        value = scalar_value(masking.rhs)
        element = masking.cond.type.element_type  # type: ignore[attr-defined]
        if value is not None and str(element) == "i1":
            scores, mask, fill = masking.lhs, masking.cond, value
            dead.append(masking)
    value, scale, op = _scaled(scores)
    if op is not None and only_reader(scores, dead[-1]):
        dead.append(op)
        scores = value
    qk = scores.owner
    if not isinstance(qk, _MATMULS) or not only_reader(scores, dead[-1]):
        return None
    q, kt = qk.operands
    shapes = [_shape(t) for t in (q, kt, v)]
    if mask is not None:
        shapes.append(_shape(mask, ("f32", "i1")))
    if any(s is None for s in shapes) or not _shape(out.results[0]):
        return None
    sq, sk, sv = shapes[:3]
    assert sq is not None and sk is not None and sv is not None
    if not (len(sq) == len(sk) == len(sv) >= 2) or not sq[:-2] == sk[:-2] == sv[:-2]:
        return None
    if mask is not None and not _broadcasts(shapes[3], (*sq[:-1], sk[-1])):
        return None
    operands = [q, kt, v, *([mask] if mask is not None else [])]
    chain = [*dead, qk]
    if any(value.owner in chain for value in operands):  # softmax(d + d)
        return None
    attrs["scale"] = scale
    if fill != -math.inf:
        attrs["fill"] = fill
    return operands, attrs, chain


def _broadcasts(shape, to: tuple) -> bool:
    if shape is None or len(shape) > len(to):
        return False
    return all(d in (1, t) for d, t in zip(reversed(shape), reversed(to), strict=False))


def fuse_attention(module: ModuleOp) -> int:
    """Rewrite every written-out attention of `module`; returns how many."""
    count = 0
    for out in [op for op in module.walk() if isinstance(op, _MATMULS)]:
        if out.parent is None:  # erased as another match's first matmul
            continue
        found = _match(out)
        if found is None:
            continue
        operands, attrs, dead = found
        fused = graph.AttentionOp.build_inferred(*operands, **attrs)
        # the nodes it computes, in program order (a profile names them)
        fused.location = FusedLoc(
            tuple(op.location for op in reversed(dead)), NoneAttr()
        )
        replace_chain([fused], out, dead)
        count += 1
    return count


@dataclass(frozen=True)
class GraphFuseAttention(ModulePass):
    """Written-out scaled dot-product attention into graph.attention.

    ember-opt model.mlir -p graph-fuse-attention,graph-fuse-ops
    """

    name = "graph-fuse-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_attention(op)
