"""convert-math-to-llvm: math ops on scalars and 1-D vectors to LLVM intrinsics and
libm calls."""

from dataclasses import dataclass

from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    VectorType,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Operation, SSAValue

from ember.dialects.llvm import ExtractElementOp
from ember.passes.to_llvm import (
    Builder,
    ConvertToLLVMPass,
    Handler,
    Lowering,
    Unsupported,
    element_type,
    fastmath,
    handlers_for,
    intrinsic,
    with_element,
)


def _int_intrinsic(name: str, poison_flag: bool = False) -> Lowering:
    """An integer intrinsic; `poison_flag` passes its trailing `i1 false` (the
    result is defined for every input: abs(INT_MIN), ctlz(0), cttz(0))."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        if poison_flag:
            args = [*args, e.constant(0, i1)]
        return [e.intrinsic(name, args, args[0].type)]

    return lower


def _rsqrt(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    flags = fastmath(op)
    t = args[0].type
    root = e.intrinsic("llvm.sqrt", args, t, flags)
    return [e.op(llvm.FDivOp, e.constant(1.0, t), root, fastmathFlags=flags)]


def _fpowi(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    # pow with the exponent converted to float, not llvm.powi: powi becomes a call
    # to compiler-rt's __powisf2/__powidf2, which a JIT cannot always resolve, and
    # x86 only lowers it for an i32 exponent. pow is exact for any exponent the
    # float type holds exactly (|n| < 2^24 for f32, 2^53 for f64).
    base, exponent = args
    as_float = e.op(
        llvm.SIToFPOp,
        exponent,
        result=with_element(exponent.type, element_type(base.type)),
    )
    return [e.intrinsic("llvm.pow", [base, as_float], base.type, fastmath(op))]


_LIBM_TYPES = (Float16Type, BFloat16Type, Float32Type, Float64Type)


def _libm(function: str) -> Lowering:
    """A call to libm's `function` (double) or `function`f (float); f16 and bf16
    go through float. Vectors are scalarized: one call per lane."""

    def lower(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
        t = args[0].type
        scalar = element_type(t)
        if not isinstance(scalar, _LIBM_TYPES):
            raise Unsupported(f"expected f16, bf16, f32 or f64 for libm, got {scalar}")
        flags = fastmath(op)
        wide = f64 if isinstance(scalar, Float64Type) else f32
        name = function if wide is f64 else function + "f"

        def call(lanes: list[SSAValue]) -> SSAValue:
            if scalar == wide:
                return e.call(name, lanes, wide, flags)
            wider = [e.op(llvm.FPExtOp, x, result=wide) for x in lanes]
            narrow = e.call(name, wider, wide, flags)
            return e.op(llvm.FPTruncOp, narrow, result=scalar)

        if not isinstance(t, VectorType):
            return [call(args)]
        vector = e.op(llvm.UndefOp, result=t)
        for lane in range(t.get_shape()[0]):
            index = e.constant(lane, i64)
            lanes = [e.op(ExtractElementOp, x, index, result=scalar) for x in args]
            vector = e.op(llvm.InsertElementOp, vector, call(lanes), index, result=t)
        return [vector]

    return lower


def _ipowi(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    raise Unsupported("LLVM has no integer power; expand it to a loop first")


_MATH: dict[type[Operation], Lowering] = {
    # LLVM intrinsics, element-wise on vectors.
    math.AbsFOp: intrinsic("llvm.fabs"),
    math.CeilOp: intrinsic("llvm.ceil"),
    math.FloorOp: intrinsic("llvm.floor"),
    math.RoundOp: intrinsic("llvm.round"),
    math.RoundEvenOp: intrinsic("llvm.roundeven"),
    math.TruncOp: intrinsic("llvm.trunc"),
    math.SqrtOp: intrinsic("llvm.sqrt"),
    math.ExpOp: intrinsic("llvm.exp"),
    math.Exp2Op: intrinsic("llvm.exp2"),
    math.LogOp: intrinsic("llvm.log"),
    math.Log2Op: intrinsic("llvm.log2"),
    math.Log10Op: intrinsic("llvm.log10"),
    math.SinOp: intrinsic("llvm.sin"),
    math.CosOp: intrinsic("llvm.cos"),
    math.TanOp: intrinsic("llvm.tan"),
    math.AsinOp: intrinsic("llvm.asin"),
    math.AcosOp: intrinsic("llvm.acos"),
    math.AtanOp: intrinsic("llvm.atan"),
    math.SinhOp: intrinsic("llvm.sinh"),
    math.CoshOp: intrinsic("llvm.cosh"),
    math.TanhOp: intrinsic("llvm.tanh"),
    math.Atan2Op: intrinsic("llvm.atan2"),
    math.PowFOp: intrinsic("llvm.pow"),
    math.CopySignOp: intrinsic("llvm.copysign"),
    math.FmaOp: intrinsic("llvm.fma"),
    math.AbsIOp: _int_intrinsic("llvm.abs", poison_flag=True),
    math.CountLeadingZerosOp: _int_intrinsic("llvm.ctlz", poison_flag=True),
    math.CountTrailingZerosOp: _int_intrinsic("llvm.cttz", poison_flag=True),
    math.CtPopOp: _int_intrinsic("llvm.ctpop"),
    # Expansions.
    math.RsqrtOp: _rsqrt,
    math.FPowIOp: _fpowi,
    math.IPowIOp: _ipowi,
    # libm: LLVM has no intrinsic for these.
    math.ErfOp: _libm("erf"),
    math.CbrtOp: _libm("cbrt"),
    math.ExpM1Op: _libm("expm1"),
    math.Log1pOp: _libm("log1p"),
    math.AsinhOp: _libm("asinh"),
    math.AcoshOp: _libm("acosh"),
    math.AtanhOp: _libm("atanh"),
}


@dataclass(frozen=True)
class ConvertMathToLLVMPass(ConvertToLLVMPass):
    """Lower math ops on scalars and 1-D vectors to LLVM intrinsics, or to libm
    where LLVM has none (declared once per module as external `llvm.func`s).

        %e = math.exp %x : vector<8xf32>     %e = llvm.call_intrinsic "llvm.exp.v8f32"(%x)
        %t = math.tanh %y : f64          ──► %t = llvm.call_intrinsic "llvm.tanh.f64"(%y)
        %r = math.erf %z : f32               %r = llvm.call @erff(%z) : (f32) -> f32
                                             llvm.func @erff(f32) -> f32

    Intrinsics work lane by lane on vectors (LLVM turns the transcendental ones into
    libm calls itself); the libm calls are scalarized with
    `llvm.extractelement`/`llvm.insertelement`, and f16/bf16 go through f32.
    Fastmath flags are carried to the intrinsic calls and libm calls. `math.rsqrt`
    is `1 / sqrt`, `math.fpowi` is `llvm.pow` on the exponent converted to float.
    Not converted, and named in the diagnostic: `math.ipowi`, ops on tensors or n-D
    vectors, and libm functions of f80/f128.
    """

    name = "convert-math-to-llvm"
    dialect = "math"

    def handlers(self) -> dict[type[Operation], Handler]:
        return handlers_for(self.name, _MATH)
