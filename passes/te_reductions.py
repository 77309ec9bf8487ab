"""How a `te.compute` reduction combines: its combiner ops and its identity.

Shared by the lowerings of te (today `convert-te-to-loop`): `identity` is the value
a reduction buffer starts from, `combine` folds one more value into it. The builtin
combiners (sum, max, min) are one arith op each (a sum of byte dot products
accumulates in the `dot.u8i8` itself); a custom combiner's `combine`
region is cloned where the value is folded:

    te.compute "P" (%i) reduce prod (%k : 8) -> tensor<4xf32> { ... }
        combine (%acc, %x) identity 1.000000e+00 : f32 {
      %p = arith.mulf %acc, %x : f32
      te.yield %p : f32
    }

    combine(op, %a, %v, at) inserts at `at`:   %p = arith.mulf %a, %v : f32
    and returns %p; identity(op) is 1.000000e+00 : f32.
"""

import math
from typing import NoReturn

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ember.dialects import dot, te
from ember.runtime.errors import EmberValueError

_FLOAT_COMBINERS = {
    "sum": arith.AddfOp,
    "max": arith.MaximumfOp,
    "min": arith.MinimumfOp,
}
_INT_COMBINERS = {"sum": arith.AddiOp, "max": arith.MaxSIOp, "min": arith.MinSIOp}
# As a signed integer, i1's true is -1: booleans combine unsigned (any / all).
_BOOL_COMBINERS = {"max": arith.MaxUIOp, "min": arith.MinUIOp}


def _fail(op: te.ComputeOp, message: str) -> NoReturn:
    raise ReductionError(f"'{op.tensor_name.data}': {message}")


class ReductionError(EmberValueError):
    """A reduction that cannot be lowered; the message names the compute."""


def identity(op: te.ComputeOp) -> Attribute:
    """The constant `x` with `combine(x, y) == y` for every `y`, as an attribute."""
    if op.identity is not None:
        return op.identity
    reduce = op.reduce.data  # type: ignore[union-attr]
    element = op.output_type.element_type
    if isinstance(element, AnyFloat):
        value = {"sum": 0.0, "max": -math.inf, "min": math.inf}[reduce]
        return FloatAttr(value, element)
    if isinstance(element, IntegerType) and element == i1:
        _check_bool(op, reduce)
        return IntegerAttr({"max": 0, "min": 1}[reduce], element)
    if isinstance(element, IntegerType | IndexType):
        width = element.width.data if isinstance(element, IntegerType) else 64
        low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1
        return IntegerAttr({"sum": 0, "max": low, "min": high}[reduce], element)
    _fail(op, f"expected a float or integer type to reduce, got {element}")


def combine(
    op: te.ComputeOp, acc: SSAValue, value: SSAValue, at: InsertPoint
) -> SSAValue:
    """Insert at `at` the ops folding `value` into the accumulated `acc`."""
    reduce = op.reduce.data  # type: ignore[union-attr]
    block = op.combine_block
    if block is not None:
        return _clone_combiner(block, acc, value, at)
    if reduce == "sum" and (summed := _accumulating(value)) is not None:
        new = type(summed)(acc, summed.lhs, summed.rhs)
        Rewriter.insert_op(new, at)
        Rewriter.erase_op(summed)
        return new.result
    element = op.output_type.element_type
    if isinstance(element, AnyFloat):
        cls = _FLOAT_COMBINERS[reduce]
    elif element == i1:
        _check_bool(op, reduce)
        cls = _BOOL_COMBINERS[reduce]
    elif isinstance(element, IntegerType | IndexType):
        cls = _INT_COMBINERS[reduce]
    else:
        _fail(op, f"expected a float or integer type to reduce, got {element}")
    new: Operation = cls(acc, value)
    new.results[0].name_hint = reduce
    Rewriter.insert_op(new, at)
    return new.results[0]


def _accumulating(value: SSAValue) -> dot.U8I8Op | dot.BF16Op | None:
    """The dot product `value` is, where it adds to zero and nothing else
    uses it: a sum of it accumulates in the instruction instead."""
    owner = value.owner
    if not isinstance(owner, dot.U8I8Op | dot.BF16Op) or value.uses:
        return None
    zero = owner.acc.owner
    if not isinstance(zero, arith.ConstantOp) or not isinstance(
        zero.value, IntegerAttr | FloatAttr
    ):
        return None
    return owner if zero.value.value.data == 0 else None


def _clone_combiner(
    block: Block, acc: SSAValue, value: SSAValue, at: InsertPoint
) -> SSAValue:
    """The custom combiner's ops cloned at `at` on (`acc`, `value`)."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, (acc, value), strict=True))
    *ops, end = block.ops
    assert isinstance(end, te.YieldOp), "a verified combine region ends in te.yield"
    Rewriter.insert_op([op.clone(value_mapper=mapping) for op in ops], at)
    return mapping.get(end.value, end.value)


def _check_bool(op: te.ComputeOp, reduce: str) -> None:
    if reduce not in _BOOL_COMBINERS:
        _fail(
            op,
            f"expected max (any) or min (all) to reduce i1, got {reduce} (a count "
            "of booleans needs an integer result type)",
        )
