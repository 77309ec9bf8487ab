"""`loop-simplify`: remove what a schedule made trivial from loop nests."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, StringAttr, i1
from xdsl.ir import Block, BlockArgument, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from ember.dialects import loop
from ember.passes.affine import constant_value


class RemoveTrivialLoop(RewritePattern):
    """A loop that runs once becomes its body (unless a GPU thread axis is bound
    to it); a loop that never runs goes."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ForOp, rewriter: PatternRewriter) -> None:
        lower, upper, step = (constant_value(v) for v in (op.lower, op.upper, op.step))
        if lower is None or upper is None or step is None or step <= 0:
            return
        if upper <= lower:
            rewriter.erase(op)
            return
        if upper - lower > step:
            return
        thread = op.attributes.get("ember.thread")
        if thread is not None and thread != StringAttr("vthread"):
            return  # a launch dimension of a GPU kernel, even of extent 1
        first = arith.ConstantOp(IntegerAttr(lower, IndexType()))
        first.result.name_hint = op.induction_var.name_hint
        rewriter.insert(first)
        body = op.body.block
        end = body.last_op
        assert isinstance(end, loop.YieldOp)
        rewriter.erase(end)
        rewriter.inline_block(body, rewriter.insertion_point, [first.result])
        rewriter.erase(op)


_SIGNED = {"slt": 2, "sle": 3, "sgt": 4, "sge": 5}


def _range(value: SSAValue, depth: int = 8) -> tuple[int, int] | None:
    """Bounds of an index value built from loop variables with constant bounds
    and constants by add, sub and multiplication by a constant."""
    const = constant_value(value)
    if const is not None:
        return const, const
    if depth == 0:
        return None
    owner = value.owner
    if isinstance(value, BlockArgument) and isinstance(owner, Block):
        parent = owner.parent_op()
        if isinstance(parent, loop.ForOp) and value is parent.induction_var:
            lower, upper = constant_value(parent.lower), constant_value(parent.upper)
            if lower is not None and upper is not None and upper > lower:
                return lower, upper - 1
        return None
    if not isinstance(owner, arith.AddiOp | arith.SubiOp | arith.MuliOp):
        return None
    a, b = _range(owner.lhs, depth - 1), _range(owner.rhs, depth - 1)
    if a is None or b is None:
        return None
    if isinstance(owner, arith.AddiOp):
        return a[0] + b[0], a[1] + b[1]
    if isinstance(owner, arith.SubiOp):
        return a[0] - b[1], a[1] - b[0]
    products = [x * y for x in a for y in b]
    return min(products), max(products)


class FoldRangeCompare(RewritePattern):
    """A signed comparison that the operands' ranges decide becomes a constant."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter) -> None:
        predicate = op.predicate.value.data
        if predicate not in _SIGNED.values():
            return
        a, b = _range(op.lhs), _range(op.rhs)
        if a is None or b is None:
            return
        outcomes = {
            2: (a[1] < b[0], a[0] >= b[1]),
            3: (a[1] <= b[0], a[0] > b[1]),
            4: (a[0] > b[1], a[1] <= b[0]),
            5: (a[0] >= b[1], a[1] < b[0]),
        }[predicate]
        if outcomes[0] or outcomes[1]:
            rewriter.replace(op, arith.ConstantOp(IntegerAttr(int(outcomes[0]), i1)))


@dataclass(frozen=True)
class LoopSimplifyPass(ModulePass):
    """Inline loops that run once, drop loops that never run, and fold what that
    makes constant (index arithmetic, guards that always hold, as canonicalize
    does), so the loop IR shows only the loops that matter.

    Before:

        loop.for %io = %c0 to %c1 step %c1 {
          loop.for %ii = %c0 to %c16 step %c1 vectorized {
            %x = arith.muli %io, %c16 : index
            %i = arith.addi %x, %ii : index
            %in = arith.cmpi slt, %i, %c16 : index
            scf.if %in {
              memref.store %v, %B[%i] : memref<16xf32>
            }
          }
        }

    After:

        loop.for %ii = %c0 to %c16 step %c1 vectorized {
          memref.store %v, %B[%ii] : memref<16xf32>
        }
    """

    name = "loop-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = GreedyRewritePatternApplier(
            [RemoveTrivialLoop(), FoldRangeCompare(), CanonicalizationRewritePattern()],
            ctx=ctx,
            folding_enabled=True,
        )
        PatternRewriteWalker(pattern, post_walk_func=region_dce).rewrite_module(op)
