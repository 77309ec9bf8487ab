"""convert-vector-to-llvm: 1-D vector ops to LLVM's vector instructions.

Shares the builders and the one-walk conversion of `to_llvm.py` with the scalar
lowerings. `vector.load` and `vector.store` are accesses to buffers, so they are
left to convert-memref-to-llvm, which owns ember's addressing of memrefs.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    ModuleOp,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from ember.dialects.llvm import ExtractElementOp
from ember.passes.to_llvm import (
    Builder,
    ConvertToLLVMPass,
    Handler,
    Lowering,
    Unsupported,
    cannot_lower,
    element_type,
    fastmath,
    handlers_for,
    llvm_type,
)

# Vector ops on buffers: lowered with memref's addressing by convert-memref-to-llvm.
_ACCESSES = (vector.LoadOp, vector.StoreOp)


def _lanes(t: Attribute) -> int:
    assert isinstance(t, VectorType)
    return t.get_shape()[0]


def _shuffle(e: Builder, v1: SSAValue, v2: SSAValue, mask: list[int]) -> SSAValue:
    return e.op(
        llvm.ShuffleVectorOp,
        v1,
        v2,
        result=VectorType(element_type(v1.type), [len(mask)]),
        mask=DenseArrayBase.from_list(i32, mask),
    )


def splat(e: Builder, scalar: SSAValue, t: Attribute) -> SSAValue:
    """`scalar` in every lane of a vector of type `t`: LLVM's idiom, an
    insertelement into lane 0 and a shufflevector of lane 0 everywhere."""
    undef = e.op(llvm.UndefOp, result=t)
    first = e.op(llvm.InsertElementOp, undef, scalar, e.constant(0, i64), result=t)
    return _shuffle(e, first, undef, [0] * _lanes(t))


def _broadcast(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, vector.BroadcastOp)
    t = llvm_type(op.vector.type)
    (source,) = args
    if not isinstance(source.type, VectorType):
        return [splat(e, source, t)]
    if source.type == t:
        return [source]
    if _lanes(source.type) != 1:
        raise Unsupported(
            f"expected a scalar or a 1-lane vector to broadcast to {op.vector.type}, "
            f"got {op.source.type}"
        )
    return [_shuffle(e, source, source, [0] * _lanes(t))]


def _position(
    op: vector.ExtractOp | vector.InsertOp, dynamic: list[SSAValue], e: Builder
) -> SSAValue | None:
    """The lane an extract or insert names as an i64, None if it names none."""
    positions = op.get_mixed_position()
    if not positions:
        return None
    (position,) = positions
    if isinstance(position, int):
        return e.constant(position, i64)
    (index,) = dynamic
    return index


def _extract(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, vector.ExtractOp)
    source, *dynamic = args
    index = _position(op, dynamic, e)
    if index is None:
        return [source]
    return [e.op(ExtractElementOp, source, index, result=element_type(source.type))]


def _insert(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, vector.InsertOp)
    source, dest, *dynamic = args
    index = _position(op, dynamic, e)
    if index is None:
        return [source]
    return [e.op(llvm.InsertElementOp, dest, source, index, result=dest.type)]


def _shuffle_op(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    assert isinstance(op, vector.ShuffleOp)
    v1, v2 = args
    if v1.type != v2.type:
        raise Unsupported(
            f"expected operands of one type (LLVM's shufflevector), got "
            f"{op.v1.type} and {op.v2.type}"
        )
    return [_shuffle(e, v1, v2, list(op.mask.get_values()))]


def _fma(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    return [e.intrinsic("llvm.fma", args, args[0].type)]


def _bitcast(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    t = llvm_type(op.results[0].type)
    return [args[0] if args[0].type == t else e.op(llvm.BitcastOp, args[0], result=t)]


def _create_mask(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    """Lane i is set where i < n: a comparison of the lane numbers with n."""
    assert isinstance(op, vector.CreateMaskOp)
    (n,) = args
    t = op.mask_vector.type
    lanes = VectorType(i64, [_lanes(t)])
    numbers = DenseIntOrFPElementsAttr.from_list(lanes, list(range(_lanes(t))))
    iota = e.op(llvm.ConstantOp, result=lanes, value=numbers)
    return [e.icmp("slt", iota, splat(e, n, lanes))]


# kind → (integer intrinsic or None, float intrinsic or None) of llvm.vector.reduce
_REDUCE: dict[str, tuple[str | None, str | None]] = {
    "add": ("add", "fadd"),
    "mul": ("mul", "fmul"),
    "and": ("and", None),
    "or": ("or", None),
    "xor": ("xor", None),
    "minsi": ("smin", None),
    "maxsi": ("smax", None),
    "minui": ("umin", None),
    "maxui": ("umax", None),
    "minnumf": (None, "fmin"),
    "maxnumf": (None, "fmax"),
    "minimumf": (None, "fminimum"),
    "maximumf": (None, "fmaximum"),
}

# How an accumulator joins the reduced lanes.
_COMBINE: dict[str, type[Operation] | str] = {
    "add": llvm.AddOp,
    "mul": llvm.MulOp,
    "and": llvm.AndOp,
    "or": llvm.OrOp,
    "xor": llvm.XOrOp,
    "minsi": "llvm.smin",
    "maxsi": "llvm.smax",
    "minui": "llvm.umin",
    "maxui": "llvm.umax",
    "minnumf": "llvm.minnum",
    "maxnumf": "llvm.maxnum",
    "minimumf": "llvm.minimum",
    "maximumf": "llvm.maximum",
}


def _reduction(op: Operation, args: list[SSAValue], e: Builder) -> list[SSAValue]:
    """`llvm.vector.reduce.*`; float add and mul take the accumulator as their
    start value (-0.0 and 1.0 without one) and keep the op's fastmath flags (with
    `reassoc` LLVM reduces as a tree, without it lane by lane in order)."""
    assert isinstance(op, vector.ReductionOp)
    kind = op.kind.data.value
    source, *acc = args
    t = element_type(source.type)
    is_float = isinstance(t, AnyFloat)
    name = _REDUCE[kind][1 if is_float else 0]
    if name is None:
        expected = "a float" if is_float else "an integer"
        raise Unsupported(
            f"expected {expected} combining kind, got '{kind}' on {op.vector.type}"
        )
    flags = fastmath(op)
    intrinsic = f"llvm.vector.reduce.{name}"
    if name in ("fadd", "fmul"):
        start = acc[0] if acc else e.constant(-0.0 if name == "fadd" else 1.0, t)
        return [e.intrinsic(intrinsic, [start, source], t, flags, source.type)]
    reduced = e.intrinsic(intrinsic, [source], t, flags, source.type)
    if not acc:
        return [reduced]
    combine = _COMBINE[kind]
    if isinstance(combine, str):
        return [e.intrinsic(combine, [reduced, acc[0]], t, flags)]
    return [e.op(combine, reduced, acc[0])]


_VECTOR: dict[type[Operation], Lowering] = {
    vector.BroadcastOp: _broadcast,
    vector.ExtractOp: _extract,
    vector.InsertOp: _insert,
    vector.ShuffleOp: _shuffle_op,
    vector.FMAOp: _fma,
    vector.BitcastOp: _bitcast,
    vector.CreateMaskOp: _create_mask,
    vector.ReductionOp: _reduction,
}


@dataclass(frozen=True)
class ConvertVectorToLLVMPass(ConvertToLLVMPass):
    """Lower 1-D vector ops to LLVM's vector instructions and intrinsics.

        %v = vector.broadcast %x : f32 to vector<4xf32>
        %y = vector.extract %v[2] : f32 from vector<4xf32>
        %w = vector.insert %y, %v [0] : f32 into vector<4xf32>
        %s = vector.reduction <add>, %w : vector<4xf32> into f32
      ──►
        %u = llvm.mlir.undef : vector<4xf32>
        %0 = llvm.insertelement %x, %u[%c0 : i64] : vector<4xf32>
        %v = llvm.shufflevector %0, %u [0, 0, 0, 0] : vector<4xf32>
        %y = llvm.extractelement %v[%c2 : i64] : vector<4xf32>
        %w = llvm.insertelement %y, %v[%c0 : i64] : vector<4xf32>
        %s = llvm.call_intrinsic "llvm.vector.reduce.fadd.v4f32"(%m0, %w)

    `vector.broadcast` splats a scalar (insertelement + shufflevector, which x86
    turns into one broadcast instruction); `extract`/`insert` with a static or
    dynamic lane become extractelement/insertelement; `shuffle` is shufflevector;
    `fma` is `llvm.fma`; `create_mask` compares the lane numbers with its bound;
    `reduction` is `llvm.vector.reduce.*`, joined with its accumulator. Vectors of
    index become vectors of i64. `vector.load`/`store` are left to
    convert-memref-to-llvm; any other vector op (masked or transfer accesses, n-D
    vectors) is a diagnostic naming it.
    """

    name = "convert-vector-to-llvm"
    dialect = "vector"

    def handlers(self) -> dict[type[Operation], Handler]:
        return handlers_for(self.name, _VECTOR)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = self.handlers()
        for inner in list(op.walk()):
            handler = table.get(type(inner))
            if handler is not None:
                handler(inner)
        for left in op.walk():
            if left.dialect_name() == "vector" and not isinstance(left, _ACCESSES):
                raise cannot_lower(
                    self.name, left, "ember has no lowering of it to the llvm dialect"
                )
