"""What every `convert-<dialect>-to-llvm` pass shares (this file is not a pass).

Each conversion is one walk over the module with a table from op class to handler;
no recursive type-conversion patterns. Where a converted op meets a value of the old
type, `as_llvm` (or `handlers_for`, once per value) inserts a
`builtin.unrealized_conversion_cast`; `replace` casts new results back to the old
types for users not converted yet. xDSL's `reconcile-unrealized-casts` removes the
cast pairs at the end of the pipeline.

The scalar lowerings (arith, math, index) describe each op by a `Lowering` that
appends llvm ops to a `Builder`; `handlers_for` turns a table of them into handlers.
The integer expansions LLVM has no instruction for (rounding divisions) are here
because more than one dialect needs them.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from typing import ClassVar, TypeVar

from xdsl.context import Context
from xdsl.dialects import llvm
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
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnregisteredOp,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.dialects.builtin import UnrealizedConversionCastOp as Cast
from xdsl.dialects.utils import FastMathAttrBase, FastMathFlag
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException

from ember.dialects.llvm import SelectOp

# --- types and casts ---------------------------------------------------------------


def llvm_type(t: Attribute) -> Attribute:
    """The llvm-dialect type ember lowers `t` to: index → i64, memref → !llvm.ptr."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return llvm.LLVMPointerType()
    if isinstance(t, VectorType) and isinstance(t.element_type, IndexType):
        return VectorType(i64, t.get_shape())
    return t


def cast(value: SSAValue, to: Attribute, before: Operation) -> SSAValue:
    """`value` as type `to`, through an unrealized cast inserted before `before`."""
    if value.type == to:
        return value
    op = Cast.get([value], [to])
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.results[0]


def as_llvm(value: SSAValue, before: Operation) -> SSAValue:
    """`value` in its llvm-dialect type, cast before `before` if it is not yet."""
    return cast(value, llvm_type(value.type), before)


def replace(op: Operation, new_ops: list[Operation], results: list[SSAValue]) -> None:
    """Replace `op` by `new_ops`; `results` stand for its results and inherit their
    names. A result of a new type is cast back to the old one for the users not
    converted yet, if it has any. (This is the hot path of every conversion: twice
    as fast as `Rewriter.replace_op`.)"""
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


def retype_block_args(block: Block) -> None:
    """Give `block`'s arguments their llvm-dialect types in place; users not converted
    yet see the old type through a cast at the top of the block."""
    for arg in block.args:
        new_type = llvm_type(arg.type)
        if new_type == arg.type:
            continue
        old_type = arg.type
        new = Rewriter.replace_value_with_new_type(arg, new_type)
        if not new.uses:
            continue
        back = Cast.get([new], [old_type])
        Rewriter.insert_op(back, InsertPoint.at_start(block))
        new.replace_uses_with_if(
            back.results[0], lambda use, back=back: use.operation is not back
        )


def declare_function(
    anchor: Operation, name: str, inputs: list[Attribute], output: Attribute
) -> None:
    """Declare the external `llvm.func @name` in `anchor`'s module unless it exists.

    An existing symbol of that name that is not an `llvm.func` is a diagnostic.
    """
    existing = SymbolTable.lookup_symbol(anchor, name)
    if isinstance(existing, llvm.FuncOp):
        return
    if existing is not None:
        raise PassFailedException(
            f"cannot declare llvm.func @{name}: the symbol is taken by "
            f"'{existing.name}'"
        )
    module = anchor.get_toplevel_object()
    assert isinstance(module, ModuleOp)
    ftype = llvm.LLVMFunctionType(inputs, output)
    module.body.block.add_op(
        llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external"))
    )


# --- the pass and its diagnostics -------------------------------------------------

Handler = Callable[[Operation], None]


@dataclass(frozen=True)
class ConvertToLLVMPass(ModulePass):
    """Base of the `convert-<dialect>-to-llvm` passes.

    Subclasses set `dialect` and return their handlers from `handlers()`; a handler
    replaces one op (use `as_llvm` and `replace`). After the walk, any op of
    `dialect` that is left is reported as a diagnostic naming it.
    """

    dialect: ClassVar[str]

    def handlers(self) -> dict[type[Operation], Handler]:
        raise NotImplementedError

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.convert(op, self.handlers())

    def convert(self, op: ModuleOp, table: dict[type[Operation], Handler]) -> None:
        """Replace each op of `op` that `table` has a handler for, then check
        that no op of the dialect is left."""
        for inner in list(op.walk()):
            handler = table.get(type(inner))
            if handler is not None:
                handler(inner)
        check_converted(op, self.dialect, self.name)


def op_name(op: Operation) -> str:
    """The name of `op`, also when it is unregistered."""
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def cannot_lower(pass_name: str, op: Operation, why: str) -> PassFailedException:
    """The diagnostic of a conversion that rejects `op`, naming its symbol (the
    function it is in, or its own)."""
    where, anchor = "", op
    while anchor is not None:
        if isinstance(name := anchor.properties.get("sym_name"), StringAttr):
            where = f" in @{name.data}" if anchor is not op else f" @{name.data}"
            break
        anchor = anchor.parent_op()
    return PassFailedException(
        f"{pass_name}: cannot lower '{op_name(op)}'{where}: {why}"
    )


def check_converted(module: ModuleOp, dialect: str, pass_name: str) -> None:
    """Fail with a diagnostic naming the first op of `dialect` left in `module`."""
    prefix = dialect + "."
    for left in module.walk():
        if left.name.startswith(prefix):
            raise PassFailedException(
                f"{pass_name}: failed to convert '{left.name}' to the llvm dialect: "
                f"{left}"
            )


# --- scalar lowerings: builders, handlers, expansions ------------------------------

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


_CONTRACT = frozenset({FastMathFlag.ALLOW_CONTRACT})


def with_contract(flags: llvm.FastMathAttr) -> llvm.FastMathAttr:
    """`flags` with LLVM's `contract` added: the op may be fused with another
    (a multiply and an add into an FMA), which only removes a rounding."""
    return llvm.FastMathAttr(flags.data | _CONTRACT)


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
        """`lhs` where `cond` holds, else `rhs`; lane by lane if `cond` is a vector."""
        return self.op(SelectOp, cond, lhs, rhs, result=lhs.type)

    def intrinsic(
        self,
        name: str,
        args: Sequence[SSAValue],
        result: Attribute,
        flags: llvm.FastMathAttr = _NO_FASTMATH,
        overload: Attribute | None = None,
        mangle: bool = True,
    ) -> SSAValue:
        """Call the intrinsic `name` mangled for the type `overload` (by default
        `result`'s): `intrinsic("llvm.smax", [x, y], i32)` calls `llvm.smax.i32`,
        `intrinsic("llvm.vector.reduce.add", [v], i32, overload=v.type)` calls
        `llvm.vector.reduce.add.v8i32`. Without `mangle`, `name` is called as
        it is (a target's own intrinsic, `llvm.x86.avx512.vpdpbusd.512`)."""
        if mangle:
            name = f"{name}.{intrinsic_suffix(overload or result)}"
        return self.op(
            llvm.CallIntrinsicOp,
            *args,
            result=result,
            intrin=StringAttr(name),
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
            replace(op, b, results)
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


def floor_size(op: str, x: SSAValue, y: SSAValue, add) -> SSAValue:
    """`x // y` or `x % y` ("floordiv", "mod") on i64 with Python's floor
    semantics, for size expressions (`-((-n) // 32)` rounds up); `add(op)`
    places an op and gives its result."""

    def flag(name: str):
        return IntegerAttr(llvm.ICmpPredicateFlag(name).to_int(), i64)

    q = add(llvm.SDivOp(x, y))
    r = add(llvm.SRemOp(x, y))
    zero = add(llvm.ConstantOp(IntegerAttr(0, i64), i64))
    inexact = add(llvm.ICmpOp(r, zero, flag("ne")))
    differ = add(llvm.ICmpOp(add(llvm.XOrOp(r, y)), zero, flag("slt")))
    adjust = add(llvm.AndOp(inexact, differ))
    if op == "floordiv":
        return add(llvm.SubOp(q, add(llvm.ZExtOp(adjust, i64))))
    return add(llvm.AddOp(r, add(llvm.SelectOp(adjust, y, zero))))


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
