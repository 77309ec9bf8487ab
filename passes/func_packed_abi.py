"""func-packed-abi: the packed, type-erased C entry of every public function.

Runs on functions over memrefs, before convert-func-to-llvm. Each public `@f` whose
arguments are all static-shape memrefs (and which returns nothing) becomes the
private `@f_impl`, and a new `llvm.func @f` with ember's packed signature

    int32_t f(EmberValue* args, int32_t* type_codes, int32_t num_args,
              EmberValue* ret, int32_t* ret_type_code);

checks every argument against the buffer types of `@f_impl`, and that no output
(`ember.output`) shares a byte with another argument, and calls it with bare
pointers (docs/architecture.md, "The packed ABI"). The module also gets the packed
function `__ember_metadata`, which returns a JSON description of the entries.

The entry is llvm-dialect code except for its call of `@f_impl`: that is a
`func.call` on buffers cast from pointers, because `llvm.call` must name an
`llvm.func` and `@f_impl` is still a `func.func`; convert-func-to-llvm lowers it.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException

from ember.passes.convert_memref_to_llvm import bare_pointer_error, element_bytes
from ember.passes.names import ssa_name
from ember.passes.to_llvm import floor_size
from ember.runtime.abi import METADATA_FUNCTION, MODEL_ATTR, MODEL_ENTRY, TypeCode
from ember.runtime.callbacks import CALLBACK_ERROR
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import SymExpr, sym_prod
from ember.runtime.shape_expr import parse as parse_dim

DIMS_ATTR = "ember.dims"
"""A buffer argument's expressions for its dynamic dims, in order (`["n"]` for
`memref<?x8xf32>`), as a graph tensor type's encoding names them."""
SYMBOL_ATTR = "ember.symbol"
"""A trailing `index` argument that is a size symbol (`ember.symbol = "n"`)."""

FALLIBLE = "ember.fallible"
"""The unit attribute of a function that returns a failure message, null when it
succeeded (convert-call-packed-to-llvm)."""

PTR = llvm.LLVMPointerType()
DLTENSOR = llvm.LLVMStructType.from_type_list(
    [PTR, i32, i32, i32, i8, i8, i16, PTR, PTR, i64]
)
"""DLPack's DLTensor: data, device {type, id}, ndim, dtype {code, bits, lanes},
shape, strides, byte_offset (48 bytes on 64-bit machines)."""
# Field indices in DLTENSOR; device_id (2) is not checked.
DATA, DEVICE_TYPE, NDIM, CODE, BITS, LANES, SHAPE, STRIDES, OFFSET = 0, 1, *range(3, 10)

TYPE_NULL, TYPE_DLTENSOR = int(TypeCode.NULL), int(TypeCode.DLTENSOR_HANDLE)
TYPE_STR, TYPE_NDARRAY = int(TypeCode.STR), int(TypeCode.NDARRAY_HANDLE)
"""Type codes (TVM's) the entry accepts or returns."""
DEVICE_CPU = 1

DTYPES: dict[str, tuple[int, int]] = {
    "bool": (6, 8),
    **{f"int{b}": (0, b) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (1, b) for b in (8, 16, 32, 64)},
    "float16": (2, 16),
    "bfloat16": (4, 16),
    "float32": (2, 32),
    "float64": (2, 64),
}
"""numpy-style dtype name → DLPack (type code, bits); lanes are always 1. `i1`
buffers hold one byte per element and take DLPack's kDLBool (code 6, 8 bits)."""

_FLOATS: dict[type[Attribute], str] = {
    Float16Type: "float16",
    BFloat16Type: "bfloat16",
    Float32Type: "float32",
    Float64Type: "float64",
}


def dtype_of(element: Attribute) -> str | None:
    """The dtype name of a buffer element type: signless and signed integers are
    `int<N>`, unsigned ones `uint<N>`, `i1` is `bool`, `index` is `int64`."""
    if isinstance(element, IndexType):
        return "int64"
    if isinstance(element, IntegerType):
        width = element.width.data
        if width == 1:
            return "bool"
        unsigned = element.signedness.data == Signedness.UNSIGNED
        name = f"{'u' if unsigned else ''}int{width}"
        return name if name in DTYPES else None
    return _FLOATS.get(type(element))


def _reinterprets(natural: str, wanted: str) -> bool:
    """Whether a buffer of dtype `natural` may be passed as `wanted`: the same dtype,
    or an integer of the same width and the other signedness."""
    a, b = DTYPES[natural], DTYPES.get(wanted)
    return a == b or (b is not None and {a[0], b[0]} == {0, 1} and a[1] == b[1])


@dataclass(frozen=True)
class PackedArg:
    name: str
    type: MemRefType
    dtype: str
    output: bool
    dims: tuple = ()
    """Its dims, symbolic ones as expressions (`ember.dims`); () when static."""

    @property
    def shape(self) -> tuple:
        return self.dims or self.type.get_shape()

    @property
    def symbolic(self) -> bool:
        return any(isinstance(d, SymExpr) for d in self.shape)

    @property
    def nbytes(self):
        """Its size in bytes: an int, or an expression over the symbols."""
        size = element_bytes(self.type.element_type)
        assert size is not None  # a bare pointer's element type has a size
        return sym_prod(self.shape) * size

    def describe(self) -> str:
        dims = ", ".join(map(str, self.shape))
        return f"{self.dtype} tensor of shape ({dims}{',' if len(self.shape) == 1 else ''})"


def _fail(f: func.FuncOp, what: str) -> PassFailedException:
    return PassFailedException(f"func-packed-abi: @{f.sym_name.data}: {what}")


def packed_args(f: func.FuncOp) -> list[PackedArg] | None:
    """The arguments of `f` if it gets a packed entry, else None.

    An argument's name is its `ember.name` attribute, any string (else, or if it is
    empty, `arg<i>`); its dtype may be overridden by `ember.dtype` (e.g. "uint8" for
    an i8 buffer); `ember.output` marks an output."""
    private = f.sym_visibility is not None and f.sym_visibility.data != "public"
    ftype = f.function_type
    results = list(ftype.outputs.data)
    if _fallible(f):
        results.remove(PTR)  # the failure message convert-call-packed-to-llvm added
    if private or not f.body.blocks or results:
        return None
    n_buffers = len(ftype.inputs.data) - len(symbol_args(f))
    if not all(isinstance(t, MemRefType) for t in ftype.inputs.data[:n_buffers]):
        return None
    args: list[PackedArg] = []
    for i, t in enumerate(ftype.inputs.data[:n_buffers]):
        assert isinstance(t, MemRefType)
        try:
            dims = buffer_dims(f, i)
        except EmberValueError as e:
            raise _fail(f, f"argument {i}: {e}") from None
        if (error := bare_pointer_error(t, symbolic=True)) is not None:
            raise _fail(f, f"argument {i}: {error}")
        attrs = f.arg_attrs.data[i].data if f.arg_attrs is not None else {}
        name = attrs.get("ember.name")
        dtype = dtype_of(t.element_type)
        assert dtype is not None  # every element type of a bare pointer has one
        override = attrs.get("ember.dtype")
        if isinstance(override, StringAttr):
            if not _reinterprets(dtype, override.data):
                raise _fail(f, f"argument {i}: ember.dtype {override} does not fit {t}")
            dtype = override.data
        label = name.data if isinstance(name, StringAttr) and name.data else f"arg{i}"
        symbolic = dims if any(isinstance(d, SymExpr) for d in dims) else ()
        args.append(PackedArg(label, t, dtype, "ember.output" in attrs, symbolic))
    _check_symbols(f, args)
    return args


def symbol_args(f: func.FuncOp) -> list[str]:
    """The names of `f`'s trailing `index` arguments marked `ember.symbol`: the
    sizes its symbolic buffers are of, which the packed entry binds from the
    buffers' shapes."""
    names: list[str] = []
    inputs = f.function_type.inputs.data
    attrs = f.arg_attrs.data if f.arg_attrs is not None else [None] * len(inputs)
    for t, d in reversed(list(zip(inputs, attrs, strict=True))):
        symbol = d.data.get(SYMBOL_ATTR) if d is not None else None
        if not isinstance(t, IndexType) or not isinstance(symbol, StringAttr):
            break
        names.insert(0, symbol.data)
    return names


def buffer_dims(f: func.FuncOp, i: int) -> tuple:
    """The dims of `f`'s buffer argument `i`: its static ones, and for each `?`
    the expression its `ember.dims` names (as a tensor type's encoding)."""
    t = f.function_type.inputs.data[i]
    assert isinstance(t, MemRefType)
    shape = t.get_shape()
    dynamic = [k for k, d in enumerate(shape) if d < 0]
    if not dynamic:
        return tuple(shape)
    attrs = f.arg_attrs.data[i].data if f.arg_attrs is not None else {}
    names = attrs.get(DIMS_ATTR)
    if not isinstance(names, ArrayAttr) or len(names.data) != len(dynamic):
        raise EmberValueError(
            f"expected a static shape, or {DIMS_ATTR} naming each dynamic dim "
            f'of {t} (as ["n"] for memref<?x8xf32>), got '
            + ("none" if names is None else str(names))
        )
    dims: list = list(shape)
    for k, name in zip(dynamic, names.data, strict=True):
        if not isinstance(name, StringAttr):
            raise EmberValueError(f"expected dimension expression strings, got {name}")
        dims[k] = parse_dim(name.data)
    return tuple(dims)


def _check_symbols(f: func.FuncOp, args: list[PackedArg]) -> None:
    """Every symbol a buffer's dims read is one of `f`'s symbol arguments, and
    each is some buffer's dim by itself, so the entry can bind it."""
    declared = symbol_args(f)
    used: set[str] = set()
    plain: set[str] = set()
    for arg in args:
        for d in arg.shape:
            if isinstance(d, SymExpr):
                used |= d.symbols()
                if d.is_symbol():
                    plain |= d.symbols()
    if unknown := sorted(used - set(declared)):
        raise _fail(
            f,
            f"dims read {', '.join(unknown)}, which no index argument "
            f"marked {SYMBOL_ATTR} gives",
        )
    if unbound := [s for s in declared if s not in plain]:
        raise _fail(
            f,
            f"symbol {unbound[0]} is no buffer's dim by itself, so no "
            "shape gives its value",
        )


def _fallible(f: func.FuncOp) -> bool:
    """Whether `f` returns a failure message (null on success): it calls the host
    (convert-call-packed-to-llvm)."""
    return FALLIBLE in f.attributes and list(f.function_type.outputs.data) == [PTR]


def _string(symbol: str, text: str) -> llvm.GlobalOp:
    """An internal constant NUL-terminated string."""
    data = text.encode() + b"\0"
    return llvm.GlobalOp(
        llvm.LLVMArrayType(len(data), i8),
        symbol,
        "internal",
        constant=True,
        value=StringAttr(data.decode()),
    )


class _Builder:
    """Appends llvm ops to the end of one block."""

    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def const(self, value: int, t: Attribute = i32) -> SSAValue:
        assert isinstance(t, IntegerType)
        return self.add(llvm.ConstantOp(IntegerAttr(value, t), t))

    def load(self, ptr: SSAValue, t: Attribute, index: int = 0) -> SSAValue:
        """`((t*)ptr)[index]`."""
        if index:
            ptr = self.add(llvm.GEPOp(ptr, [index], t))
        align = 8 if t == PTR else t.width.data // 8  # type: ignore[attr-defined]
        return self.add(llvm.LoadOp(ptr, t, alignment=align))

    def field(self, tensor: SSAValue, index: int) -> SSAValue:
        """`tensor->field` for the DLTensor field `index`."""
        t = DLTENSOR.types.data[index]
        return self.load(self.add(llvm.GEPOp(tensor, [0, index], DLTENSOR)), t)

    def eq(self, value: SSAValue, expected: int, predicate: str = "eq") -> SSAValue:
        flag = llvm.ICmpPredicateFlag(predicate)
        rhs = self.const(expected, value.type)
        return self.add(llvm.ICmpOp(value, rhs, IntegerAttr(flag.to_int(), i64)))

    def cmp(self, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        flag = llvm.ICmpPredicateFlag(predicate)
        return self.add(llvm.ICmpOp(lhs, rhs, IntegerAttr(flag.to_int(), i64)))

    def is_null(self, ptr: SSAValue, predicate: str = "eq") -> SSAValue:
        return self.eq(self.add(llvm.PtrToIntOp(ptr, i64)), 0, predicate)

    def all(self, conditions: list[SSAValue]) -> SSAValue:
        result = conditions[0]
        for cond in conditions[1:]:
            result = self.add(llvm.AndOp(result, cond))
        return result

    def store(self, value: SSAValue, ptr: SSAValue) -> None:
        align = 8 if value.type in (PTR, i64) else 4
        self.add(llvm.StoreOp(value, ptr, alignment=align))


class _Entry:
    """The packed entry of one function: a chain of check blocks, each branching to
    the next or to one shared failure block that reports a message and a code.
    `self.b` appends to the block being built."""

    def __init__(self, name: str):
        self.name = name
        self.region = Region()
        entry = Block(arg_types=[PTR, PTR, i32, PTR, PTR])
        hints = ("args", "type_codes", "num_args", "ret", "ret_code")
        for arg, hint in zip(entry.args, hints, strict=True):
            arg.name_hint = hint
        self.region.add_block(entry)
        self.args, self.codes, self.count, self.ret, self.ret_code = entry.args
        self.b = _Builder(entry)
        self.globals: list[llvm.GlobalOp] = []
        self.failed = Block(arg_types=[PTR, i32])
        self.failed.name_hint = "fail"
        self.failed.args[0].name_hint = "message"
        self.failed.args[1].name_hint = "code"
        self.sizes: dict[str, SSAValue] = {}
        """Each symbol's value (i64), bound from the first buffer it is a dim of."""

    def message(self, key: str, text: str) -> str:
        symbol = f"__ember_err.{self.name}.{key}"
        self.globals.append(_string(symbol, f"{self.name}: {text}"))
        return symbol

    def block(self, name: str) -> Block:
        block = Block()
        block.name_hint = name
        self.region.add_block(block)
        return block

    def check(self, ok: SSAValue, message: str, code: int, then: Block | str) -> None:
        """Go on in block `then` (a new one if given a name) if `ok`, else fail."""
        if isinstance(then, str):
            then = self.block(then)
        text = self.b.add(llvm.AddressOfOp(message, PTR))
        code_value = self.b.const(code)
        self.b.add(llvm.CondBrOp(ok, then, [], self.failed, [text, code_value]))
        self.b = _Builder(then)

    def check_arg(self, i: int, arg: PackedArg, after: str) -> SSAValue:
        """Check argument `i` against `arg`, then go on in a block named `after`;
        returns the argument's DLTensor*."""
        b, code, at = self.b, -2 - i, f"arg{i}"
        prefix = f"argument {i} ({arg.name}): expected"
        # Strides matter only for extents other than 1, and not at all when empty.
        strided_dims = [k for k, n in enumerate(arg.shape) if n != 1]
        if sym_prod(arg.shape) == 0:
            strided_dims = []

        type_code = b.load(self.codes, i32, i)
        # EmberValue is 8 bytes on every target: index the slots as i64, not as
        # pointers (4 bytes on wasm32), then read the handle at the slot's start.
        slot = b.add(llvm.GEPOp(self.args, [i], i64)) if i else self.args
        tensor = b.load(slot, PTR)
        tensor.name_hint = ssa_name(arg.name)
        is_tensor = b.add(
            llvm.OrOp(b.eq(type_code, TYPE_DLTENSOR), b.eq(type_code, TYPE_NDARRAY))
        )
        ok = b.all([is_tensor, b.is_null(tensor, "ne")])
        self.check(
            ok, self.message(f"{i}.type", f"{prefix} a tensor"), code, f"{at}_device"
        )

        b = self.b
        ok = b.eq(b.field(tensor, DEVICE_TYPE), DEVICE_CPU)
        message = self.message(f"{i}.device", f"{prefix} a CPU tensor")
        self.check(ok, message, code, f"{at}_dtype")

        b = self.b
        dtype_code, bits = DTYPES[arg.dtype]
        meta = [
            b.eq(b.field(tensor, NDIM), len(arg.shape)),
            b.eq(b.field(tensor, CODE), dtype_code),
            b.eq(b.field(tensor, BITS), bits),
            b.eq(b.field(tensor, LANES), 1),
        ]
        message = self.message(f"{i}.tensor", f"{prefix} {arg.describe()}")
        self.check(b.all(meta), message, code, f"{at}_shape" if arg.shape else after)
        if arg.shape:  # the shape array is read only once ndim is known to match
            b = self.b
            shape = b.field(tensor, SHAPE)
            extents = []
            for k, n in enumerate(arg.shape):
                given = b.load(shape, i64, k)
                if (
                    isinstance(n, SymExpr)
                    and n.is_symbol()
                    and str(n) not in self.sizes
                ):
                    self.sizes[str(n)] = given  # bound by its first buffer
                    extents.append(b.cmp("sge", given, b.const(0, i64)))
                else:
                    extents.append(b.cmp("eq", given, self.size(n)))
            self.check(
                b.all(extents),
                message,
                code,
                f"{at}_strides" if strided_dims else after,
            )
        if strided_dims:
            b = self.b
            given = b.field(tensor, STRIDES)
            strided, compact = self.block(f"{at}_strided"), self.block(after)
            b.add(llvm.CondBrOp(b.is_null(given), compact, [], strided, []))
            self.b = b = _Builder(strided)
            expected = compact_strides(arg.shape)
            ok = b.all(
                [
                    b.cmp("eq", b.load(given, i64, k), self.size(expected[k]))
                    for k in strided_dims
                ]
            )
            if arg.symbolic:  # an empty tensor's strides are anything
                empty = b.cmp("eq", self.size(sym_prod(arg.shape)), b.const(0, i64))
                ok = b.add(llvm.OrOp(ok, empty))
            message = self.message(
                f"{i}.strides", f"{prefix} compact row-major strides"
            )
            self.check(ok, message, code, compact)
        return tensor

    def check_overlaps(
        self,
        args: list[PackedArg],
        starts: list[SSAValue],
        pairs: list[tuple[int, int]],
    ) -> None:
        """Check that output `i`'s bytes and argument `j`'s are disjoint for each
        pair `(i, j)` (block `arg<i>_vs<j>`), then go on in block `call`."""
        b = self.b
        bounds: dict[int, tuple[SSAValue, SSAValue]] = {}
        for k in sorted({k for pair in pairs for k in pair}):
            first = b.add(llvm.PtrToIntOp(starts[k], i64))
            bounds[k] = first, b.add(llvm.AddOp(first, self.size(args[k].nbytes)))
        after = [f"arg{i}_vs{j}" for i, j in pairs[1:]] + ["call"]
        for (i, j), then in zip(pairs, after, strict=True):
            b = self.b
            (first_i, end_i), (first_j, end_j) = bounds[i], bounds[j]
            apart = b.add(
                llvm.OrOp(b.cmp("ule", end_i, first_j), b.cmp("ule", end_j, first_i))
            )
            text = (
                f"argument {i} ({args[i].name}): output overlaps argument {j} "
                f"({args[j].name}); in-place calls are not supported"
            )
            self.check(apart, self.message(f"{i}.overlaps.{j}", text), -2 - i, then)

    def size(self, value) -> SSAValue:
        """An int or an expression over the bound symbols, as i64 (sizes are
        never negative: floor division is LLVM's signed one)."""
        b = self.b
        if isinstance(value, int):
            return b.const(value, i64)
        total: SSAValue | None = None
        for monomial, coeff in value.terms:
            term: SSAValue | None = None if coeff == 1 else b.const(coeff, i64)
            for atom in monomial:
                x = self._atom(atom)
                term = x if term is None else b.add(llvm.MulOp(term, x))
            assert term is not None
            total = term if total is None else b.add(llvm.AddOp(total, term))
        assert total is not None  # an expression has a term
        if value.const:
            total = b.add(llvm.AddOp(total, b.const(value.const, i64)))
        return total

    def _atom(self, atom) -> SSAValue:
        b = self.b
        if atom.op is None:
            return self.sizes[atom.name]
        x, y = (self.size(a) for a in atom.args)
        if atom.op in ("floordiv", "mod"):
            return floor_size(atom.op, x, y, b.add)
        pick = b.cmp("slt" if atom.op == "min" else "sgt", x, y)
        return b.add(llvm.SelectOp(pick, x, y))

    def build(
        self,
        args: list[PackedArg],
        impl: str,
        fallible: bool,
        symbols: Sequence[str] = (),
    ) -> llvm.FuncOp:
        names = ", ".join(a.name for a in args)
        plural = "" if len(args) == 1 else "s"
        expected = f"expected {len(args)} argument{plural} ({names})"
        pairs = overlap_pairs(args)
        checked = f"arg{pairs[0][0]}_vs{pairs[0][1]}" if pairs else "call"
        after = [f"arg{i}" for i in range(1, len(args))] + [checked]
        self.check(
            self.b.eq(self.count, len(args)),
            self.message("count", expected),
            -1,
            "arg0" if args else checked,
        )
        tensors = [self.check_arg(i, arg, after[i]) for i, arg in enumerate(args)]
        b = self.b
        starts: list[SSAValue] = []
        for tensor in tensors:
            data, offset = b.field(tensor, DATA), b.field(tensor, OFFSET)
            starts.append(b.add(llvm.GEPOp.from_mixed_indices(data, [offset], i8)))
        if pairs:
            self.check_overlaps(args, starts, pairs)
        b = self.b
        pointers = [
            b.add(UnrealizedConversionCastOp.get([start], [arg.type]))
            for start, arg in zip(starts, args, strict=True)
        ]
        pointers += [  # the symbols, bound from the buffers' shapes
            b.add(UnrealizedConversionCastOp.get([self.sizes[name]], [IndexType()]))
            for name in symbols
        ]
        if fallible:  # a host function it called failed: its message, -100
            message = b.add(func.CallOp(impl, pointers, [PTR]))
            done = self.block("done")
            code = b.const(CALLBACK_ERROR)
            b.add(
                llvm.CondBrOp(
                    b.is_null(message), done, [], self.failed, [message, code]
                )
            )
            self.b = b = _Builder(done)
        else:
            b.add(func.CallOp(impl, pointers, []))
        b.store(b.const(0, i64), self.ret)
        b.store(b.const(TYPE_NULL), self.ret_code)
        b.add(llvm.ReturnOp(b.const(0)))

        on_fail = _Builder(self.failed)
        on_fail.store(self.failed.args[0], self.ret)
        on_fail.store(on_fail.const(TYPE_STR), self.ret_code)
        on_fail.add(llvm.ReturnOp(self.failed.args[1]))
        self.region.add_block(self.failed)
        return packed_function(self.name, self.region)


def overlap_pairs(args: list[PackedArg]) -> list[tuple[int, int]]:
    """The (output, other argument) pairs whose bytes must be disjoint: each output
    against every other argument, each pair of outputs once; empty buffers overlap
    nothing."""

    def sized(arg: PackedArg) -> bool:  # a symbolic size may be 0 or not
        return isinstance(arg.nbytes, SymExpr) or arg.nbytes > 0

    return [
        (i, j)
        for i, out in enumerate(args)
        if out.output and sized(out)
        for j, other in enumerate(args)
        if j != i and sized(other) and not (other.output and j < i)
    ]


def compact_strides(shape: tuple) -> list:
    return [sym_prod(shape[k + 1 :]) for k in range(len(shape))]


def packed_function(name: str, body: Region) -> llvm.FuncOp:
    """An external `llvm.func` with the packed signature and `body`."""
    signature = llvm.LLVMFunctionType([PTR, PTR, i32, PTR, PTR], i32)
    return llvm.FuncOp(name, signature, llvm.LinkageAttr("external"), body=body)


def metadata_document(
    entries: dict[str, list[PackedArg]], entry: str | None = None
) -> dict:
    """The JSON description of the packed entries that `__ember_metadata`
    returns (and the `c` target's library too): each function's arguments,
    and the entry (the only function when `entry` is None and there is one)."""
    if entry is None and len(entries) == 1:
        entry = next(iter(entries))
    return {
        "entry": entry,
        "functions": {
            name: {
                "args": [
                    {
                        "name": a.name,
                        "shape": [d if isinstance(d, int) else str(d) for d in a.shape],
                        "dtype": a.dtype,
                        "output": a.output,
                    }
                    for a in args
                ]
            }
            for name, args in entries.items()
        },
    }


def _metadata(
    entries: dict[str, list[PackedArg]], model: dict | None
) -> list[Operation]:
    """`__ember_metadata`: returns the JSON description of the entries (type 11),
    with the `ember.model` description under "model" when there is one."""
    document = metadata_document(entries)
    if model is not None:
        document["model"] = model
    text = _string("__ember_metadata.json", json.dumps(document))
    body = Region(Block(arg_types=[PTR, PTR, i32, PTR, PTR]))
    hints = ("args", "type_codes", "num_args", "ret", "ret_code")
    for arg, hint in zip(body.block.args, hints, strict=True):
        arg.name_hint = hint
    _, _, _, ret, ret_code = body.block.args
    b = _Builder(body.block)
    b.store(b.add(llvm.AddressOfOp(text.sym_name, PTR)), ret)
    b.store(b.const(TYPE_STR), ret_code)
    b.add(llvm.ReturnOp(b.const(0)))
    return [text, packed_function(METADATA_FUNCTION, body)]


@dataclass(frozen=True)
class FuncPackedABIPass(ModulePass):
    """Give every public function over static buffers a packed, checked C entry.

    Before:
        func.func @vecadd(%A: memref<1024xf32> {ember.name = "A"}, ...) { ... }

    After:
        func.func private @vecadd_impl(%A: memref<1024xf32> {ember.name = "A"}, ...)
        llvm.func @vecadd(%args: !llvm.ptr, %type_codes: !llvm.ptr, %num_args: i32,
                          %ret: !llvm.ptr, %ret_code: !llvm.ptr) -> i32 {
          // num_args == 3, else ^fail(@"__ember_err.vecadd.count", -1)
          // per argument i: type code 7 or 13 and a non-null handle, device_type 1,
          //   ndim, dtype code/bits/lanes, every extent, strides null or compact;
          //   else ^fail(<message>, -2 - i)
          // per output i (ember.output) and other argument j: their bytes
          //   [data + byte_offset, + nbytes) are disjoint; else ^fail(..., -2 - i)
          // func.call @vecadd_impl(data + byte_offset, ...); *ret_code = 4; return 0
          // (an impl marked ember.fallible returns a message, null on success;
          //  a message goes to ^fail(message, -100))
        ^fail(%message: !llvm.ptr, %code: i32):
          // ret->v_handle = message; *ret_code = 11; return code
        }
        llvm.func @__ember_metadata(...) -> i32   // ret->v_handle = JSON, code 11

    Functions with results or non-memref arguments are left as they are. Calls to
    `@f` in the module are redirected to `@f_impl`.
    """

    name = "func-packed-abi"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        model = _model(op)
        entries: dict[str, list[PackedArg]] = {}
        for f in list(op.ops):
            if not isinstance(f, func.FuncOp) or (args := packed_args(f)) is None:
                continue
            name = f.sym_name.data
            if model is not None and name == MODEL_ENTRY:
                args = _model_args(f, args, model)
            impl = f"{name}_impl"
            if SymbolTable.lookup_symbol(op, impl) is not None:
                raise _fail(f, f"cannot rename it: @{impl} already exists")
            f.sym_name = StringAttr(impl)
            f.sym_visibility = StringAttr("private")
            entry = _Entry(name)
            wrapper = entry.build(args, impl, _fallible(f), symbol_args(f))
            Rewriter.insert_op([*entry.globals, wrapper], InsertPoint.after(f))
            entries[name] = args
        called: set[str] = set()
        if entries:  # calls of @f inside the module keep calling the bare function
            for call in op.walk():
                if isinstance(call, func.CallOp):
                    callee = call.callee.string_value()
                    if callee in entries:
                        call.callee = SymbolRefAttr(f"{callee}_impl")
                        called.add(callee)
        for name, args in entries.items():
            if name not in called and any(a.output for a in args):
                _mark_noalias(op, f"{name}_impl")
        if model is not None:
            if MODEL_ENTRY not in entries:
                raise PassFailedException(
                    f"func-packed-abi: the module has {MODEL_ATTR} but no public "
                    f"@{MODEL_ENTRY} over static buffers to run the model"
                )
            op.body.block.add_ops(_model_globals(op, model))
        if SymbolTable.lookup_symbol(op, METADATA_FUNCTION) is None:
            op.body.block.add_ops(_metadata(entries, model))
        elif entries:
            raise PassFailedException(
                "func-packed-abi: the module already has @__ember_metadata"
            )


def _mark_noalias(module: ModuleOp, impl: str) -> None:
    """Mark every buffer of `impl` noalias. Sound only when the checking entry is
    its one caller: the entry has proven that no output shares a byte with any
    other argument, and inputs that alias each other are only read. It lets LLVM
    keep accumulators in registers and vectorize without runtime alias checks."""
    f = SymbolTable.lookup_symbol(module, impl)
    assert isinstance(f, func.FuncOp)
    old = (
        f.arg_attrs.data
        if f.arg_attrs is not None
        else [DictionaryAttr({})] * len(f.args)
    )
    f.arg_attrs = ArrayAttr(
        [
            DictionaryAttr({**d.data, "llvm.noalias": UnitAttr()})
            if isinstance(t, MemRefType)
            else d  # a symbol: a size, not a pointer
            for d, t in zip(old, f.function_type.inputs.data, strict=True)
        ]
    )


MODEL_GLOBALS = {
    "workspace_bytes": "__ember_model_workspace_bytes",
    "params_bytes": "__ember_model_params_bytes",
}
"""int64 constants a C host reads instead of the metadata's JSON."""
MODEL_IO = "__ember_model_io"
"""An int64 array describing the inputs and outputs for a C host: the number of
inputs, the number of outputs, then for each input and each output its DLPack
dtype code and bits, its ndim and its extents."""


def _model(module: ModuleOp) -> dict | None:
    """The parsed `ember.model` attribute, checked; None without one."""
    attr = module.attributes.get(MODEL_ATTR)
    if attr is None:
        return None
    where = f"func-packed-abi: {MODEL_ATTR}"
    if not isinstance(attr, StringAttr):
        raise PassFailedException(f"{where}: expected a string of JSON, got {attr}")
    try:
        model = json.loads(attr.data)
    except ValueError as e:
        raise PassFailedException(f"{where}: invalid JSON: {e}") from None
    if not isinstance(model, dict):
        raise PassFailedException(f"{where}: expected a JSON object")
    for key in ("inputs", "outputs"):
        tensors = model.get(key)
        if not isinstance(tensors, list) or not all(
            isinstance(t, dict)
            and isinstance(t.get("name"), str)
            and isinstance(t.get("shape"), list)
            and all(_is_dim(n) for n in t["shape"])
            and t.get("dtype") in DTYPES
            for t in tensors
        ):
            raise PassFailedException(
                f'{where}: expected "{key}" to be a list of '
                '{"name", "shape", "dtype"} objects'
            )
    for key in MODEL_GLOBALS:
        value = model.get(key)
        if not _is_dim(value) or (key == "params_bytes" and type(value) is not int):
            raise PassFailedException(
                f'{where}: expected "{key}" to be a non-negative integer, got {value!r}'
            )
    if not isinstance(model.get("params", {}), dict):
        raise PassFailedException(f'{where}: expected "params" to be an object')
    if not isinstance(model.get("params_embedded", False), bool):
        raise PassFailedException(f'{where}: expected "params_embedded" to be a bool')
    return model


def _is_dim(value: object) -> bool:
    """A size in the model's metadata: a non-negative int, or an expression's
    text over the size symbols."""
    if isinstance(value, str):
        try:
            parse_dim(value)
        except EmberValueError:
            return False
        return True
    return type(value) is int and value >= 0


def _model_args(f: func.FuncOp, args: list[PackedArg], model: dict) -> list[PackedArg]:
    """`default_run`'s arguments checked against the model: its inputs, its
    outputs, then the workspace and params as uint8 buffers of their sizes."""
    inputs, outputs = model["inputs"], model["outputs"]
    expected = [
        *((t, False) for t in inputs),
        *((t, True) for t in outputs),
        ({"name": "workspace", "shape": [model["workspace_bytes"]]}, None),
        ({"name": "params", "shape": [model["params_bytes"]]}, False),
    ]
    if len(args) != len(expected):
        raise _fail(
            f,
            f"expected {len(expected)} arguments for a model with "
            f"{len(inputs)} input(s) and {len(outputs)} output(s) (inputs, "
            f"outputs, workspace, params), got {len(args)}",
        )
    checked = []
    for i, (arg, (tensor, output)) in enumerate(zip(args, expected, strict=True)):
        what = tensor["name"]
        dtype = tensor.get("dtype")
        if dtype is None:  # the workspace and params: bytes
            if arg.dtype not in ("int8", "uint8"):
                raise _fail(
                    f, f"argument {i} ({what}): expected an i8 buffer, got {arg.type}"
                )
            arg = PackedArg(arg.name, arg.type, "uint8", arg.output, arg.dims)
        elif dtype != arg.dtype:
            raise _fail(f, f"argument {i} ({what}): expected {dtype}, got {arg.dtype}")
        shape = [parse_dim(d) if isinstance(d, str) else d for d in tensor["shape"]]
        if list(arg.shape) != shape:
            raise _fail(
                f,
                f"argument {i} ({what}): expected shape {tuple(tensor['shape'])} "
                f"(from {MODEL_ATTR}), got {arg.shape}",
            )
        if output is not None and arg.output != output:
            kind = "an output" if output else "not an output"
            raise _fail(f, f"argument {i} ({what}): expected {kind} (ember.output)")
        checked.append(arg)
    return checked


def _known(size: int | str) -> int:
    """A size for a C host: its value, or -1 where it is symbolic (known
    only from the inputs' shapes)."""
    return size if isinstance(size, int) else -1


def _model_globals(module: ModuleOp, model: dict) -> list[llvm.GlobalOp]:
    """The int64 constants a C host reads: the workspace and params sizes and
    the inputs' and outputs' dtypes and shapes (`MODEL_IO`)."""
    io = [len(model["inputs"]), len(model["outputs"])]
    for tensor in (*model["inputs"], *model["outputs"]):
        code, bits = DTYPES[tensor["dtype"]]
        io += [code, bits, len(tensor["shape"]), *map(_known, tensor["shape"])]
    globals_: list[llvm.GlobalOp] = [
        llvm.GlobalOp(
            i64,
            symbol,
            "external",
            constant=True,
            value=IntegerAttr(_known(model[key]), i64),
            alignment=8,
        )
        for key, symbol in MODEL_GLOBALS.items()
    ]
    array = llvm.LLVMArrayType(len(io), i64)
    globals_.append(
        llvm.GlobalOp(
            array,
            MODEL_IO,
            "external",
            constant=True,
            value=DenseIntOrFPElementsAttr.from_list(TensorType(i64, [len(io)]), io),
            alignment=8,
        )
    )
    for g in globals_:
        name = g.sym_name.data
        if SymbolTable.lookup_symbol(module, name) is not None:
            raise PassFailedException(
                f"func-packed-abi: the module already has @{name}"
            )
    return globals_
