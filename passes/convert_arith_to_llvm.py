"""convert-arith-to-llvm: arith ops on scalars and 1-D vectors to the llvm dialect.

The builders and integer expansions it shares with convert-math-to-llvm and
convert-index-to-llvm live in `to_llvm.py`.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    i1,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from ember.dialects.llvm import FCmpOp, FPToSIOp, FPToUIOp, UIToFPOp
from ember.passes.to_llvm import (
    Builder,
    ConvertToLLVMPass,
    Handler,
    Lowering,
    Unsupported,
    binary,
    bitwidth,
    ceildiv_signed,
    ceildiv_unsigned,
    element_type,
    expanded,
    fastmath,
    floordiv_signed,
    handlers_for,
    intrinsic,
    llvm_type,
    resize_int,
    with_contract,
    with_element,
)

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


def _float_binary(cls: type[Operation], contract: bool = False) -> Lowering:
    """A float op keeping the op's fastmath flags; with `contract`, also LLVM's
    `contract`, so that a multiply feeding an add becomes one FMA."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        flags = fastmath(op)
        if contract:
            flags = with_contract(flags)
        return [e.op(cls, *args, fastmathFlags=flags)]

    return lower


def _cast(cls: type[Operation]) -> Lowering:
    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        return [e.op(cls, args[0], result=llvm_type(op.results[0].type))]

    return lower


def _truncf(native_bf16: bool) -> Lowering:
    """`llvm.fptrunc`; to bfloat16 on a target without a conversion
    instruction (LLVM would call compiler-rt's `__truncsfbf2`, which ember's
    libraries do not link), the rounding in integers instead, as MLIR's
    `arith-expand{include-bf16}`: the float32's bits plus 0x7FFF and the kept
    part's lowest bit (to nearest, ties to even), a NaN made quiet, the high
    half kept."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        result = llvm_type(op.results[0].type)
        (x,) = args
        if native_bf16 or not (
            isinstance(element_type(result), BFloat16Type)
            and isinstance(element_type(x.type), Float32Type)
        ):
            return [e.op(llvm.FPTruncOp, x, result=result)]
        words, halves = with_element(x.type, i32), with_element(x.type, i16)
        bits = e.op(llvm.BitcastOp, x, result=words)
        sixteen = e.constant(16, words)
        odd = e.op(llvm.AndOp, e.op(llvm.LShrOp, bits, sixteen), e.constant(1, words))
        bias = e.op(llvm.AddOp, odd, e.constant(0x7FFF, words))
        rounded = e.op(llvm.AddOp, bits, bias)
        quiet = e.op(llvm.OrOp, bits, e.constant(1 << 22, words))
        nan = e.op(
            FCmpOp,
            x,
            x,
            result=with_element(x.type, i1),
            predicate=IntegerAttr(llvm.FCmpPredicateFlag("uno").to_int(), i64),
        )
        chosen = e.select(nan, quiet, rounded)
        high = e.op(llvm.TruncOp, e.op(llvm.LShrOp, chosen, sixteen), result=halves)
        return [e.op(llvm.BitcastOp, high, result=result)]

    return lower


def _constant(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, arith.ConstantOp)
    t = llvm_type(op.result.type)
    value = op.value
    if isinstance(value, IntegerAttr):
        if value.type != t:  # index
            assert isinstance(t, IntegerType)  # llvm_type(index) is i64
            value = IntegerAttr(value.value.data, t)
    elif isinstance(value, DenseIntOrFPElementsAttr):
        if value.get_element_type() != element_type(t):  # vector<index>: same bytes
            value = DenseIntOrFPElementsAttr(t, value.data)  # pyright: ignore
    elif not isinstance(value, FloatAttr):
        raise Unsupported(f"expected an integer, float or dense value, got {value}")
    return [e.op(llvm.ConstantOp, result=t, value=value)]


def _check_lanes(op: Operation, operand: Attribute) -> None:
    """A comparison of vectors must have a vector of i1 as its result. xDSL's
    arith.cmpi/cmpf give every comparison an i1 result, so an arith comparison of
    vectors is refused; lane-wise comparisons are llvm.icmp/llvm.fcmp."""
    want = with_element(operand, i1)
    if op.results[0].type != want:
        raise Unsupported(
            f"expected a {want} result for a comparison of {operand}, got "
            f"{op.results[0].type}; compare lanes with llvm.icmp / llvm.fcmp"
        )


def _cmpi(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, arith.CmpiOp)
    _check_lanes(op, op.lhs.type)
    predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    return [e.icmp(predicate, *args)]


def _cmpf(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, arith.CmpfOp)
    _check_lanes(op, op.lhs.type)
    predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    if predicate in ("false", "true"):
        return [e.constant(int(predicate == "true"), op.result.type)]
    flag = llvm.FCmpPredicateFlag(predicate)
    return [
        e.op(
            FCmpOp,
            *args,
            result=with_element(args[0].type, i1),
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
    arith.AddfOp: _float_binary(llvm.FAddOp, contract=True),
    arith.SubfOp: _float_binary(llvm.FSubOp, contract=True),
    arith.MulfOp: _float_binary(llvm.FMulOp, contract=True),
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
             fastmath<nnan> : f32      ──►             0 and its sign is not b's)
                                               %q = llvm.add %0, %6 : i32
                                               %m = llvm.call_intrinsic
                                                    "llvm.smax.i32"(%q, %a)
                                               %f = llvm.fadd %x, %y {fastmathFlags
                                                    = #llvm.fastmath<nnan,contract>}

    `truncf` to bf16 is LLVM's `fptrunc` where the module's target converts
    in one instruction (AVX512-BF16, aarch64 bf16), else the rounding in
    integer ops (`_truncf`).
    Integer min/max and float minimum/maximum/minnum/maxnum become intrinsic calls;
    floordivsi, ceildivsi, ceildivui and the *_extended ops are expanded; overflow
    and fastmath flags are kept. addf, subf and mulf also get LLVM's `contract`
    flag, so a multiply feeding an add becomes a fused multiply-add (one rounding
    instead of two, as in BLAS and TVM). Ops on tensors, n-D or scalable vectors,
    dense-resource constants and comparisons of vectors (xDSL's arith gives them
    an i1 result) are named in the diagnostic.
    """

    name = "convert-arith-to-llvm"
    dialect = "arith"

    def handlers(self, native_bf16: bool = True) -> dict[type[Operation], Handler]:
        """The lowerings; `native_bf16`: the target converts float32 to
        bfloat16 in one instruction."""
        truncf = {arith.TruncFOp: _truncf(native_bf16)}
        return handlers_for(self.name, {**_ARITH, **truncf})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.backends.llvm.target import module_target
        from ember.passes.convert_dot_to_llvm import bf16_instructions

        self.convert(op, self.handlers(bool(bf16_instructions(module_target(op)))))
