"""convert-arith-to-llvm: arith ops on scalars and 1-D vectors to the llvm dialect.

Also the small builders the other scalar lowerings (`convert-math-to-llvm`,
`convert-index-to-llvm`) share: constants, intrinsic calls, fastmath flags, and the
expansions of the integer ops LLVM has no instruction for.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from typing import TypeVar

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    Float80Type,
    Float128Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.dialects.builtin import UnrealizedConversionCastOp as Cast
from xdsl.dialects.utils import FastMathAttrBase
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from ember.dialects.llvm import FPToSIOp, FPToUIOp, UIToFPOp
from ember.passes.to_llvm import (
    ConvertToLLVMPass,
    Handler,
    cannot_lower,
    declare_function,
    llvm_type,
)

# --- shared builders ---------------------------------------------------------------

_FLOAT_SUFFIX: dict[type[Attribute], str] = {
    Float16Type: "f16",
    BFloat16Type: "bf16",
    Float32Type: "f32",
    Float64Type: "f64",
    Float80Type: "f80",
    Float128Type: "f128",
}


def intrinsic_suffix(t: Attribute) -> str:
    """LLVM's name mangling of an overloaded intrinsic's type: i32, f64, v8f32."""
    if isinstance(t, VectorType):
        return f"v{t.get_shape()[0]}{intrinsic_suffix(t.element_type)}"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    return _FLOAT_SUFFIX[type(t)]


def element_type(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def bitwidth(t: Attribute) -> int:
    e = element_type(t)
    assert isinstance(e, IntegerType)
    return e.width.data


def with_element(t: Attribute, element: Attribute) -> Attribute:
    """`t` with its element type replaced (`t` itself if scalar)."""
    if isinstance(t, VectorType):
        return VectorType(element, t.get_shape())
    return element


_NO_FASTMATH = llvm.FastMathAttr(None)


def fastmath(op: Operation) -> llvm.FastMathAttr:
    """`op`'s arith fastmath flags as llvm's (none if it has none)."""
    # Some xDSL constructors (negf, fma, fpowi) put the flags in the attributes.
    flags = op.properties.get("fastmath", op.attributes.get("fastmath"))
    if not isinstance(flags, FastMathAttrBase) or not flags.data:
        return _NO_FASTMATH
    return llvm.FastMathAttr(flags.data)


@cache
def _constant_attr(value: int | float, t: Attribute) -> Attribute:
    e = element_type(t)
    if isinstance(t, VectorType):
        return DenseIntOrFPElementsAttr.from_list(t, [value])  # pyright: ignore
    if isinstance(e, IntegerType):
        return IntegerAttr(int(value), e, truncate_bits=True)
    assert isinstance(e, AnyFloat)
    return FloatAttr(float(value), e)


@cache
def _predicate(flag: llvm.ICmpPredicateFlag) -> IntegerAttr:
    return IntegerAttr(flag.to_int(), i64)


@cache
def _segments(count: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, [count, 0])


class Builder(list[Operation]):
    """The ops a lowering emits, in order. Ops are made with `create`, which skips
    the argument processing of their constructors: this is the hot loop of every
    conversion, and the ops are verified like any other afterwards."""

    def __init__(self) -> None:
        super().__init__()
        self.externals: dict[str, tuple[list[Attribute], Attribute]] = {}
        """Functions the ops call, declared in the module by the handler."""

    def op(
        self,
        cls: type[Operation],
        *operands: SSAValue,
        result: Attribute | None = None,
        **properties: Attribute,
    ) -> SSAValue:
        """Append a `cls` op; its result type defaults to the first operand's."""
        new = cls.create(
            operands=operands,
            result_types=[operands[0].type if result is None else result],
            properties=properties,
        )
        self.append(new)
        return new.results[0]

    def constant(self, value: int | float, t: Attribute) -> SSAValue:
        """`llvm.mlir.constant` of type `t`, splat over the lanes of a vector."""
        e = element_type(t)
        if t is e or not isinstance(e, IntegerType) or e.width.data <= 64:
            return self.op(llvm.ConstantOp, result=t, value=_constant_attr(value, t))
        # xDSL cannot hold dense integers wider than 64 bits: built lane by lane.
        assert isinstance(t, VectorType)
        lane = self.constant(value, e)
        vector = self.op(llvm.UndefOp, result=t)
        for i in range(t.get_shape()[0]):
            index = self.constant(i, i64)
            vector = self.op(llvm.InsertElementOp, vector, lane, index, result=t)
        return vector

    def icmp(self, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.op(
            llvm.ICmpOp,
            lhs,
            rhs,
            result=with_element(lhs.type, i1),
            predicate=_predicate(llvm.ICmpPredicateFlag(predicate)),
        )

    def select(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.op(llvm.SelectOp, cond, lhs, rhs, result=lhs.type)

    def intrinsic(
        self,
        name: str,
        args: Sequence[SSAValue],
        result: Attribute,
        flags: llvm.FastMathAttr = _NO_FASTMATH,
    ) -> SSAValue:
        """Call the intrinsic `name` mangled for `result`'s type: `intrinsic(
        "llvm.smax", [x, y], i32)` calls `llvm.smax.i32`."""
        return self.op(
            llvm.CallIntrinsicOp,
            *args,
            result=result,
            intrin=StringAttr(f"{name}.{intrinsic_suffix(result)}"),
            fastmathFlags=flags,
            operandSegmentSizes=_segments(len(args)),
        )

    def call(
        self,
        function: str,
        args: Sequence[SSAValue],
        result: Attribute,
        flags: llvm.FastMathAttr = _NO_FASTMATH,
    ) -> SSAValue:
        """Call the external function `function` (declared once per module)."""
        self.externals[function] = ([a.type for a in args], result)
        return self.op(
            llvm.CallOp,
            *args,
            result=result,
            callee=SymbolRefAttr(function),
            fastmathFlags=flags,
            operandSegmentSizes=_segments(len(args)),
        )


_LEGAL: dict[Attribute, bool] = {}
_EXPECTED = "expected integers, index or floats, 1-D vectors of them, or memrefs"


def is_lowerable(t: Attribute) -> bool:
    """Whether these lowerings handle values of type `t`: integers, index, floats,
    fixed 1-D vectors of them, and memrefs (bare pointers, which arith.select and
    arith.bitcast may take); not tensors, n-D or scalable vectors."""
    legal = _LEGAL.get(t)
    if legal is None:
        element = t
        if isinstance(t, VectorType):
            element = t.element_type
            legal = t.get_num_dims() == 1 and not t.get_num_scalable_dims()
        else:
            legal = True
        legal = legal and isinstance(element, IntegerType | IndexType | AnyFloat)
        legal = legal or isinstance(t, MemRefType)
        _LEGAL[t] = legal
    return legal


Lowering = Callable[[Operation, list[SSAValue], Builder], list[SSAValue]]
Key = TypeVar("Key")


class Unsupported(Exception):
    """Raised by a lowering that cannot lower its op, saying why; the handler turns
    it into the pass's diagnostic."""


def _replace(op: Operation, new_ops: list[Operation], results: list[SSAValue]) -> None:
    """`to_llvm.replace`, for the hot path of these conversions: new results of a new
    type are cast back for the users not converted yet (only if there are any), and
    only the results taking the place of `op`'s inherit their names. Twice as fast
    as going through `Rewriter.replace_op`."""
    block = op.parent
    assert block is not None
    block.insert_ops_before(new_ops, op)
    for old, new in zip(op.results, results, strict=True):
        if new.name_hint is None:
            new.name_hint = old.name_hint
        if old.type != new.type:
            if not old.uses:
                continue
            back = Cast.create(operands=[new], result_types=[old.type])
            block.insert_op_before(back, op)
            new = back.results[0]
        old.replace_all_uses_with(new)
    block.erase_op(op)


def handlers_for(pass_name: str, table: Mapping[Key, Lowering]) -> dict[Key, Handler]:
    """Handlers that lower an op with `table[key](op, operands, builder)`, given
    the operands in their llvm types, and declare the functions it calls. An op on
    a type outside `is_lowerable`, or whose lowering raises `Unsupported`, is a
    diagnostic naming it.

    An operand not converted yet is cast once, right after its definition, and the
    cast is shared by all its users; an operand that is the cast back to the old
    type an earlier conversion left is looked through, so cast pairs never pile up.
    """
    casts: dict[SSAValue, SSAValue] = {}
    arg_casts: dict[Block, Operation] = {}  # the last cast of a block argument
    declared: set[str] = set()

    def llvm_value(value: SSAValue) -> SSAValue:
        t = llvm_type(value.type)
        if t == value.type:
            return value
        owner = value.owner
        if isinstance(owner, Cast) and owner.inputs[0].type == t:
            return owner.inputs[0]
        cast = casts.get(value)
        if cast is None:
            op = Cast.create(operands=[value], result_types=[t])
            if isinstance(owner, Operation):
                Rewriter.insert_op(op, InsertPoint.after(owner))
            elif (last := arg_casts.get(owner)) is not None:
                Rewriter.insert_op(op, InsertPoint.after(last))  # in argument order
            else:
                Rewriter.insert_op(op, InsertPoint.at_start(owner))
            if not isinstance(owner, Operation):
                arg_casts[owner] = op
            cast = casts[value] = op.results[0]
        return cast

    def handler(lower: Lowering) -> Handler:
        def convert(op: Operation) -> None:
            for v in chain(op.operands, op.results):
                if not is_lowerable(v.type):
                    raise cannot_lower(pass_name, op, f"{_EXPECTED}, got {v.type}")
            b = Builder()
            try:
                results = lower(op, [llvm_value(v) for v in op.operands], b)
            except Unsupported as e:
                raise cannot_lower(pass_name, op, str(e)) from None
            for function, (inputs, output) in b.externals.items():
                if function not in declared:
                    try:
                        declare_function(op, function, inputs, output)
                    except PassFailedException as e:
                        raise cannot_lower(pass_name, op, str(e)) from None
                    declared.add(function)
            looked_through = {v.owner for v in op.operands if isinstance(v.owner, Cast)}
            _replace(op, b, results)
            for cast in looked_through:
                if not cast.results[0].uses:
                    Rewriter.erase_op(cast)

        return convert

    return {cls: handler(lower) for cls, lower in table.items()}


def _adjusted(e: Builder, q: SSAValue, adjust: SSAValue, by: int) -> SSAValue:
    """`q + by` where `adjust` holds, `q` elsewhere; by extending the i1 rather
    than with a select, which xDSL's llvm.select only has for scalar conditions."""
    if bitwidth(q.type) == 1:
        return q  # i1 divides only by -1 or 1: every rounding is exact
    step = e.op(llvm.SExtOp if by < 0 else llvm.ZExtOp, adjust, result=q.type)
    return e.op(llvm.AddOp, q, step)


def floordiv_signed(e: Builder, a: SSAValue, b: SSAValue) -> SSAValue:
    """a / b rounded toward negative infinity: the truncated quotient, less one when
    the remainder is not zero and its sign differs from the divisor's."""
    q = e.op(llvm.SDivOp, a, b)
    r = e.op(llvm.SRemOp, a, b)
    zero = e.constant(0, a.type)
    inexact = e.icmp("ne", r, zero)
    signs_differ = e.icmp("slt", e.op(llvm.XOrOp, r, b), zero)
    return _adjusted(e, q, e.op(llvm.AndOp, inexact, signs_differ), -1)


def ceildiv_signed(e: Builder, a: SSAValue, b: SSAValue) -> SSAValue:
    """a / b rounded toward positive infinity: the truncated quotient, plus one when
    the remainder is not zero and has the divisor's sign."""
    q = e.op(llvm.SDivOp, a, b)
    r = e.op(llvm.SRemOp, a, b)
    zero = e.constant(0, a.type)
    inexact = e.icmp("ne", r, zero)
    signs_agree = e.icmp("sge", e.op(llvm.XOrOp, r, b), zero)
    return _adjusted(e, q, e.op(llvm.AndOp, inexact, signs_agree), 1)


def ceildiv_unsigned(e: Builder, a: SSAValue, b: SSAValue) -> SSAValue:
    """a / b (unsigned) rounded up: the quotient plus one when inexact."""
    q = e.op(llvm.UDivOp, a, b)
    inexact = e.icmp("ne", e.op(llvm.URemOp, a, b), e.constant(0, a.type))
    return _adjusted(e, q, inexact, 1)


def resize_int(e: Builder, x: SSAValue, t: Attribute, signed: bool) -> SSAValue:
    """`x` as integer type `t`: truncated, or sign-/zero-extended."""
    have, want = bitwidth(x.type), bitwidth(t)
    if have == want:
        return x
    if have > want:
        return e.op(llvm.TruncOp, x, result=t)
    return e.op(llvm.SExtOp if signed else llvm.ZExtOp, x, result=t)


def binary(cls: type[Operation]) -> Lowering:
    """A lowering to the llvm op `cls` on the same two operands."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        return [e.op(cls, *args)]

    return lower


def expanded(fn: Callable[[Builder, SSAValue, SSAValue], SSAValue]) -> Lowering:
    """A lowering of a binary op by the expansion `fn(builder, lhs, rhs)`."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        return [fn(e, *args)]

    return lower


def intrinsic(name: str) -> Lowering:
    """A lowering to a call of the intrinsic `name` (mangled for the result type),
    carrying the op's fastmath flags."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        return [e.intrinsic(name, args, args[0].type, fastmath(op))]

    return lower


# --- arith -------------------------------------------------------------------------


def _with_overflow(cls: type[Operation]) -> Lowering:
    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        flags = op.properties.get("overflowFlags")
        if isinstance(flags, arith.IntegerOverflowAttr) and flags.data:
            bits = llvm.OverflowAttr(
                tuple(llvm.OverflowFlag(f.value) for f in flags.data)
            ).to_int()
            return [e.op(cls, *args, overflowFlags=IntegerAttr(bits, i32))]
        return [e.op(cls, *args)]

    return lower


def _float_binary(cls: type[Operation]) -> Lowering:
    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        return [e.op(cls, *args, fastmathFlags=fastmath(op))]

    return lower


def _cast(cls: type[Operation]) -> Lowering:
    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        return [e.op(cls, args[0], result=llvm_type(op.results[0].type))]

    return lower


def _constant(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, arith.ConstantOp)
    t = llvm_type(op.result.type)
    value = op.value
    if isinstance(value, IntegerAttr):
        if value.type != t:  # index
            value = IntegerAttr(value.value.data, t)
    elif isinstance(value, DenseIntOrFPElementsAttr):
        if value.get_element_type() != element_type(t):  # vector<index>: same bytes
            value = DenseIntOrFPElementsAttr(t, value.data)  # pyright: ignore
    elif not isinstance(value, FloatAttr):
        raise Unsupported(f"expected an integer, float or dense value, got {value}")
    return [e.op(llvm.ConstantOp, result=t, value=value)]


def _cmpi(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, arith.CmpiOp)
    predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    return [e.icmp(predicate, *args)]


def _cmpf(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, arith.CmpfOp)
    predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    if predicate in ("false", "true"):
        return [e.constant(int(predicate == "true"), op.result.type)]
    if isinstance(args[0].type, VectorType):
        raise Unsupported(f"xDSL's llvm.fcmp compares scalars, got {args[0].type}")
    flag = llvm.FCmpPredicateFlag(predicate)
    return [
        e.op(
            llvm.FCmpOp,
            *args,
            result=i1,
            predicate=IntegerAttr(flag.to_int(), i64),
            fastmathFlags=fastmath(op),
        )
    ]


def _negf(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    return [e.op(llvm.FNegOp, args[0], fastmathFlags=fastmath(op))]


def _select(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    return [e.select(*args)]


def _index_cast(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    return [resize_int(e, args[0], llvm_type(op.results[0].type), signed=True)]


def _bitcast(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    t = llvm_type(op.results[0].type)
    return [args[0] if args[0].type == t else e.op(llvm.BitcastOp, args[0], result=t)]


def _addui_extended(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    total = e.op(llvm.AddOp, *args)
    return [total, e.icmp("ult", total, args[0])]


def _mul_extended(signed: bool) -> Lowering:
    """Low and high halves of the product, computed at twice the width."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        t = args[0].type
        width = bitwidth(t)
        wide = with_element(t, IntegerType(2 * width))
        product = e.op(llvm.MulOp, *(resize_int(e, x, wide, signed) for x in args))
        high = e.op(llvm.LShrOp, product, e.constant(width, wide))
        return [
            e.op(llvm.TruncOp, product, result=t),
            e.op(llvm.TruncOp, high, result=t),
        ]

    return lower


_ARITH: dict[type[Operation], Lowering] = {
    arith.ConstantOp: _constant,
    arith.AddiOp: _with_overflow(llvm.AddOp),
    arith.SubiOp: _with_overflow(llvm.SubOp),
    arith.MuliOp: _with_overflow(llvm.MulOp),
    arith.ShLIOp: _with_overflow(llvm.ShlOp),
    arith.DivSIOp: binary(llvm.SDivOp),
    arith.DivUIOp: binary(llvm.UDivOp),
    arith.RemSIOp: binary(llvm.SRemOp),
    arith.RemUIOp: binary(llvm.URemOp),
    arith.AndIOp: binary(llvm.AndOp),
    arith.OrIOp: binary(llvm.OrOp),
    arith.XOrIOp: binary(llvm.XOrOp),
    arith.ShRSIOp: binary(llvm.AShrOp),
    arith.ShRUIOp: binary(llvm.LShrOp),
    arith.FloorDivSIOp: expanded(floordiv_signed),
    arith.CeilDivSIOp: expanded(ceildiv_signed),
    arith.CeilDivUIOp: expanded(ceildiv_unsigned),
    arith.AddUIExtendedOp: _addui_extended,
    arith.MulSIExtendedOp: _mul_extended(signed=True),
    arith.MulUIExtendedOp: _mul_extended(signed=False),
    arith.MaxSIOp: intrinsic("llvm.smax"),
    arith.MinSIOp: intrinsic("llvm.smin"),
    arith.MaxUIOp: intrinsic("llvm.umax"),
    arith.MinUIOp: intrinsic("llvm.umin"),
    arith.AddfOp: _float_binary(llvm.FAddOp),
    arith.SubfOp: _float_binary(llvm.FSubOp),
    arith.MulfOp: _float_binary(llvm.FMulOp),
    arith.DivfOp: _float_binary(llvm.FDivOp),
    arith.NegfOp: _negf,
    arith.MaximumfOp: intrinsic("llvm.maximum"),
    arith.MinimumfOp: intrinsic("llvm.minimum"),
    arith.MaxnumfOp: intrinsic("llvm.maxnum"),
    arith.MinnumfOp: intrinsic("llvm.minnum"),
    arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf,
    arith.SelectOp: _select,
    arith.ExtSIOp: _cast(llvm.SExtOp),
    arith.ExtUIOp: _cast(llvm.ZExtOp),
    arith.TruncIOp: _cast(llvm.TruncOp),
    arith.ExtFOp: _cast(llvm.FPExtOp),
    arith.TruncFOp: _cast(llvm.FPTruncOp),
    arith.SIToFPOp: _cast(llvm.SIToFPOp),
    arith.UIToFPOp: _cast(UIToFPOp),
    arith.FPToSIOp: _cast(FPToSIOp),
    arith.FPToUIOp: _cast(FPToUIOp),
    arith.IndexCastOp: _index_cast,
    arith.BitcastOp: _bitcast,
}


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ConvertToLLVMPass):
    """Lower arith ops on integers, index and floats (scalars or 1-D vectors) to the
    llvm dialect; index becomes i64.

        %q = arith.floordivsi %a, %b : i32     %0 = llvm.sdiv %a, %b : i32
        %m = arith.maxsi %q, %a : i32          %1 = llvm.srem %a, %b : i32
        %f = arith.addf %x, %y                 ...    (-1 where the remainder is not
             fastmath<fast> : f32      ──►             0 and its sign is not b's)
                                               %q = llvm.add %0, %6 : i32
                                               %m = llvm.call_intrinsic
                                                    "llvm.smax.i32"(%q, %a)
                                               %f = llvm.fadd %x, %y
                                                    {fastmathFlags = #llvm.fastmath<fast>}

    Integer min/max and float minimum/maximum/minnum/maxnum become intrinsic calls;
    floordivsi, ceildivsi, ceildivui and the *_extended ops are expanded; overflow
    and fastmath flags are kept. Ops on tensors, n-D or scalable vectors
    and dense-resource constants are named in the diagnostic.
    """

    name = "convert-arith-to-llvm"
    dialect = "arith"

    def handlers(self) -> dict[type[Operation], Handler]:
        return handlers_for(self.name, _ARITH)
