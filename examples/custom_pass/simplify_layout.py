"""graph-simplify-layout: an ember pass written outside ember, the tutorial's
(docs/tutorial_custom_pass.md). Load it with

    ember-opt model.mlir --load-pass-plugin examples/custom_pass/simplify_layout.py \
        -p 'graph-simplify-layout{transposes=false}'
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import Rewriter
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from ember.dialects import graph
from ember.passes import ModulePass, PatternPass, register_pass


def simplify_reshape(op: Operation) -> Operation | SSAValue | None:
    """A reshape or flatten that keeps the shape is its input; one of another
    reshape or flatten reshapes the first input once (both keep row-major order)."""
    if not isinstance(op, graph.ReshapeOp | graph.FlattenOp):
        return None
    if op.input.type == op.result.type:
        return op.input
    producer = op.input.owner
    if isinstance(producer, graph.ReshapeOp | graph.FlattenOp):
        return graph.ReshapeOp.create(
            operands=[producer.input], result_types=[op.result.type]
        )
    return None


def simplify_transpose(op: Operation) -> Operation | SSAValue | None:
    """A transpose of a transpose is one transpose, by the composed permutation;
    an identity permutation is the input itself, and one that moves only unit
    dims is a reshape."""
    if not isinstance(op, graph.TransposeOp):
        return None
    perm, source = op.permutation, op.input
    producer = source.owner
    if isinstance(producer, graph.TransposeOp):
        # result dim i is the inner result's dim perm[i], the source's inner[perm[i]]
        inner = producer.permutation
        perm, source = tuple(inner[p] for p in perm), producer.input
    if perm == tuple(range(len(perm))):
        return source
    shape = source.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
    moved = [p for p in perm if shape[p] != 1]
    if moved == sorted(moved):  # only unit dims move: the same row-major order
        return graph.ReshapeOp.create(operands=[source], result_types=[op.result.type])
    if source is op.input:
        return None
    return graph.TransposeOp.build_inferred(source, perm=perm)


class SimplifyLayoutPattern(RewritePattern):
    """Rewrites one op with `simplify_reshape` and `simplify_transpose`."""

    def __init__(self, reshapes: bool, transposes: bool):
        self.rules = [simplify_reshape] * reshapes + [simplify_transpose] * transposes

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        new = next(filter(None, (rule(op) for rule in self.rules)), None)
        if isinstance(new, Operation):
            rewriter.replace(op, new)
        elif new is not None:
            rewriter.replace(op, [], [new])


@register_pass
@dataclass(frozen=True)
class SimplifyLayout(PatternPass):
    """Cancels the layout ops that model exporters leave behind.

        %a = graph.reshape %x : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
        %b = graph.reshape %a : (tensor<1x64xf32>) -> tensor<64xf32>
        %t = graph.transpose %y {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
        %u = graph.transpose %t {perm = [1, 0]} : (tensor<3x2xf32>) -> tensor<2x3xf32>
    becomes
        %b = graph.reshape %x : (tensor<1x64x1x1xf32>) -> tensor<64xf32>
        (uses of %u read %y)
    """

    name = "graph-simplify-layout"

    reshapes: bool = True
    transposes: bool = True

    def patterns(self) -> list[RewritePattern]:
        return [SimplifyLayoutPattern(self.reshapes, self.transposes)]


@register_pass
@dataclass(frozen=True)
class SimplifyLayoutWalk(ModulePass):
    """graph-simplify-layout as one walk in program order: an op's producer is
    already simplified when the walk reaches it, so one pass over the ops is
    enough. The dead ops left behind go afterwards, users first."""

    name = "graph-simplify-layout-walk"

    reshapes: bool = True
    transposes: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rules = [simplify_reshape] * self.reshapes
        rules += [simplify_transpose] * self.transposes
        for child in list(op.walk()):
            while child is not None:  # an op a rule creates may simplify again
                new = next(filter(None, (rule(child) for rule in rules)), None)
                if isinstance(new, Operation):
                    Rewriter.replace_op(child, new)
                elif new is not None:
                    Rewriter.replace_op(child, [], [new])
                child = new if isinstance(new, Operation) else None
        for child in reversed(list(op.walk())):
            if is_trivially_dead(child):
                Rewriter.erase_op(child)
