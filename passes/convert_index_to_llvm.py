"""convert-index-to-llvm: MLIR's `index` dialect to the llvm dialect on i64.

xDSL (0.74) does not define the `index` dialect, so its ops reach ember only as
unregistered ops (text parsed with `--allow-unregistered-dialect`, or IR built by
other tools). This pass therefore dispatches on op names, not classes, and reads
the ops' properties in MLIR's generic form; it works unchanged on a registered
dialect that keeps MLIR's names and properties.
"""

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, Operation, SSAValue

from ember.passes.to_llvm import (
    Builder,
    ConvertToLLVMPass,
    Lowering,
    Unsupported,
    binary,
    cannot_lower,
    ceildiv_signed,
    ceildiv_unsigned,
    expanded,
    floordiv_signed,
    handlers_for,
    intrinsic,
    llvm_type,
    op_name,
    resize_int,
)

_PREDICATE = re.compile(r"(\w+)\s*>$")
_PREDICATES = frozenset(f.value for f in llvm.ICmpPredicateFlag)


def _property(op: Operation, name: str) -> Attribute:
    value = op.properties.get(name, op.attributes.get(name))
    if value is None:
        raise Unsupported(f"expected a '{name}' property")
    return value


def _cmp(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    # `#index<cmp_predicate slt>`, printed alike registered or not.
    found = _PREDICATE.search(str(_property(op, "pred")))
    predicate = found.group(1) if found else ""
    if predicate not in _PREDICATES:
        raise Unsupported(
            f"expected a predicate among {sorted(_PREDICATES)}, "
            f"got {_property(op, 'pred')}"
        )
    return [e.icmp(predicate, *args)]


def _constant(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    value = _property(op, "value")
    if not isinstance(value, IntegerAttr):
        raise Unsupported(f"expected an integer value, got {value}")
    return [e.constant(value.value.data, llvm_type(op.results[0].type))]


def _cast(signed: bool) -> Lowering:
    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        return [resize_int(e, args[0], llvm_type(op.results[0].type), signed)]

    return lower


def _sizeof(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    return [e.constant(i64.width.data, i64)]


_INDEX: dict[str, Lowering] = {
    "index.add": binary(llvm.AddOp),
    "index.sub": binary(llvm.SubOp),
    "index.mul": binary(llvm.MulOp),
    "index.divs": binary(llvm.SDivOp),
    "index.divu": binary(llvm.UDivOp),
    "index.rems": binary(llvm.SRemOp),
    "index.remu": binary(llvm.URemOp),
    "index.ceildivs": expanded(ceildiv_signed),
    "index.ceildivu": expanded(ceildiv_unsigned),
    "index.floordivs": expanded(floordiv_signed),
    "index.maxs": intrinsic("llvm.smax"),
    "index.maxu": intrinsic("llvm.umax"),
    "index.mins": intrinsic("llvm.smin"),
    "index.minu": intrinsic("llvm.umin"),
    "index.shl": binary(llvm.ShlOp),
    "index.shrs": binary(llvm.AShrOp),
    "index.shru": binary(llvm.LShrOp),
    "index.and": binary(llvm.AndOp),
    "index.or": binary(llvm.OrOp),
    "index.xor": binary(llvm.XOrOp),
    "index.cmp": _cmp,
    "index.constant": _constant,
    "index.bool.constant": _constant,
    "index.casts": _cast(signed=True),
    "index.castu": _cast(signed=False),
    "index.sizeof": _sizeof,
}


@dataclass(frozen=True)
class ConvertIndexToLLVMPass(ConvertToLLVMPass):
    """Lower MLIR's `index` dialect to llvm ops on i64 (ember's index width).

        %s = "index.floordivs"(%a, %b)           %q = llvm.sdiv %a, %b : i64
             : (index, index) -> index      ──►  ...  (minus one by the remainder)
        %c = "index.cmp"(%s, %a)                 %c = llvm.icmp "slt" %s, %a : i64
             <{pred = #index<cmp_predicate slt>}> : (index, index) -> i1

    Every op of the dialect is converted: arithmetic, division with each rounding,
    min/max, shifts, bitwise ops, `cmp`, `constant`, `bool.constant`, `casts`
    (sign-extend or truncate), `castu` (zero-extend or truncate) and `sizeof` (64).
    An `index.*` op it does not know is named in the diagnostic.
    """

    name = "convert-index-to-llvm"
    dialect = "index"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = handlers_for(self.name, _INDEX)
        for inner in list(op.walk()):
            handler = table.get(op_name(inner))
            if handler is not None:
                handler(inner)
        for left in op.walk():
            if op_name(left).startswith("index."):
                raise cannot_lower(self.name, left, "unknown op of the index dialect")
