"""Translate an llvm-dialect module (xDSL) into an llvmlite `ir.Module`.

xDSL's translator (`xdsl.backend.llvm`) converts most instructions; ember drives the
module and the function bodies itself so that its own handlers run first:

- ember's ops (`llvm.fptosi`, `llvm.fptoui`, `llvm.uitofp`, `llvm.extractelement`,
  `llvm.switch`, and `llvm.select` / `llvm.fcmp`, which take vectors), with their
  fast-math flags;
- every intrinsic (`llvm.call_intrinsic` and the `llvm.intr.*` ops), declared under
  the name LLVM mangles for the operand types, so `llvm.exp` on `f32` and on
  `vector<8xf32>` can share a module, with their fast-math flags;
- indirect `llvm.call`, `llvm.intr.stacksave` / `llvm.intr.stackrestore`;
- function linkage, visibility, calling convention, attributes (`nounwind` on
  every function: ember's code never unwinds) and result attributes;
- globals with visibility, alignment, sections, byte-string initializers and
  constant initializer regions.

Blocks are converted in reverse post-order, so a value is always translated before
its uses whatever the order of blocks in the region. Anything that cannot be
translated raises `TranslationError` naming the op.
"""

import hashlib
from collections.abc import Callable
from functools import cache
from typing import Any

import llvmlite.binding as llvm_binding
from llvmlite import ir
from llvmlite.ir import instructions
from llvmlite.ir.values import FunctionAttributes
from xdsl.backend.llvm.convert import _declare_func
from xdsl.backend.llvm.convert_op import convert_op, create_constant
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    ModuleOp,
    StringAttr,
    VectorType,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import LLVMTranslationException

from ember.dialects import llvm as ember_llvm


class TranslationError(LLVMTranslationException):
    """An op, type or attribute that has no LLVM IR translation.

    `op_name` names the op it happened in (`None` for module-level problems).
    """

    def __init__(self, message: str, op_name: str | None = None):
        self.op_name = op_name
        super().__init__(f"'{op_name}': {message}" if op_name else message)


# llvmlite's values carry attributes its classes do not declare: typed as Any.
Values = dict[SSAValue, Any]
Blocks = dict[Block, ir.Block]
Handler = Callable[[Any, ir.IRBuilder, Values, Blocks], None]

_VISIBILITY = {0: "", 1: "hidden", 2: "protected"}
_LOCAL_LINKAGES = ("private", "internal")
_FLAG_ATTRIBUTES = FunctionAttributes._known  # pyright: ignore[reportPrivateUsage]
_RESULT_ATTRIBUTES = {
    "llvm.noalias": "noalias",
    "llvm.nonnull": "nonnull",
    "llvm.noundef": "noundef",
    "llvm.signext": "signext",
    "llvm.zeroext": "zeroext",
}


class _Attributes(FunctionAttributes):
    """llvmlite's function attributes plus string attributes (`"key"="value"`)."""

    def __init__(self) -> None:
        super().__init__()
        self.strings: dict[str, str | None] = {}

    def __bool__(self) -> bool:
        return len(self) > 0 or bool(self.strings)

    def _to_list(self, ret_type: ir.Type) -> list[str]:
        strings = [
            f'"{key}"' if value is None else f'"{key}"="{value}"'
            for key, value in sorted(self.strings.items())
        ]
        return [*super()._to_list(ret_type), *strings]


def translate(
    module: ModuleOp,
    *,
    triple: str | None = None,
    data_layout: str = "",
    nounwind: bool = True,
) -> ir.Module:
    """Translate an llvm-dialect module to an llvmlite IR module.

    Args:
        module: a `builtin.module` holding only `llvm.func` and `llvm.mlir.global`.
        triple: the target triple; an `llvm.target_triple` attribute on the module
            wins over it, the host's triple is the default.
        data_layout: the target's data layout string, left unset when empty.
        nounwind: mark every function `nounwind`.

    Returns:
        The llvmlite module, not yet parsed nor verified by LLVM.

    Raises:
        TranslationError: naming the first op that cannot be translated.
    """
    out = ir.Module(name=str(module.sym_name.data) if module.sym_name else "ember")
    module_triple = module.attributes.get("llvm.target_triple")
    if isinstance(module_triple, StringAttr):
        out.triple = module_triple.data
    else:
        out.triple = triple or llvm_binding.get_process_triple()
    if data_layout:
        out.data_layout = data_layout

    globals_: list[llvm.GlobalOp] = []
    funcs: list[llvm.FuncOp] = []
    for op in module.ops:
        if isinstance(op, llvm.GlobalOp):
            globals_.append(op)
        elif isinstance(op, llvm.FuncOp):
            funcs.append(op)
        else:
            raise TranslationError(_unsupported_reason(op), op.name)
    # Declare every symbol before any body so that uses may come first.
    for op in globals_:
        _convert_global(op, out)
    for op in funcs:
        _declare_function(op, out, nounwind)
    for op in funcs:
        if op.body.blocks:
            _convert_body(op, out)
    return out


def _unsupported_reason(op: Operation) -> str:
    if op.name == "builtin.unrealized_conversion_cast":
        return "left over from a conversion; run reconcile-unrealized-casts"
    if not op.name.startswith("llvm."):
        return "not in the llvm dialect; lower it to llvm first"
    return "no translation to LLVM IR"


def _declare_function(op: llvm.FuncOp, out: ir.Module, nounwind: bool) -> None:
    name = op.sym_name.data
    try:
        _declare_func(op, out)
    except (LLVMTranslationException, ValueError, KeyError) as e:
        raise TranslationError(f"@{name}: {e}", op.name) from e
    fn = out.get_global(name)
    assert isinstance(fn, ir.Function)
    linkage = op.linkage.linkage.data
    if not op.body.blocks and linkage != "extern_weak":
        # A declaration is external whatever its op says (xDSL's FuncOp defaults
        # to internal when built in Python).
        linkage = "external"
    visibility = _VISIBILITY.get(op.visibility_.value.data, "")
    if linkage in _LOCAL_LINKAGES:
        visibility = ""
    fn.linkage = " ".join(x for x in (linkage, visibility) if x != "external" and x)
    if op.CConv.cconv_name != "ccc":
        fn.calling_convention = op.CConv.cconv_name
    fn.attributes = attrs = _Attributes()
    if nounwind or _func_attr(op, "no_unwind") is not None:
        attrs.add("nounwind")
    if _func_attr(op, "no_inline") is not None:
        attrs.add("noinline")
    if _func_attr(op, "optimize_none") is not None:
        attrs.add("noinline")
        attrs.add("optnone")
    frame_pointer = _func_attr(op, "frame_pointer")
    if isinstance(frame_pointer, llvm.FramePointerKindAttr):
        attrs.strings["frame-pointer"] = frame_pointer.data.value
    for key, attr_name in (("target-cpu", "target_cpu"), ("tune-cpu", "tune_cpu")):
        value = _func_attr(op, attr_name)
        if isinstance(value, StringAttr):
            attrs.strings[key] = value.data
    features = _func_attr(op, "target_features")
    if isinstance(features, llvm.TargetFeaturesAttr):
        attrs.strings["target-features"] = ",".join(f.data for f in features.features)
    passthrough = _func_attr(op, "passthrough")
    for entry in passthrough.data if isinstance(passthrough, ArrayAttr) else ():
        _add_passthrough(op, attrs, entry)
    if op.res_attrs is not None and op.res_attrs.data:
        for key in op.res_attrs.data[0].data:
            if key not in _RESULT_ATTRIBUTES:
                raise TranslationError(
                    f"@{name}: unsupported result attribute {key}", op.name
                )
            fn.return_value.add_attribute(_RESULT_ATTRIBUTES[key])


def _func_attr(op: llvm.FuncOp, name: str) -> Attribute | None:
    """An optional property of llvm.func, also found among its attributes when
    parsed from `attributes {...}`."""
    return op.properties.get(name) or op.attributes.get(name)


def _add_passthrough(op: llvm.FuncOp, attrs: _Attributes, entry: Attribute) -> None:
    if isinstance(entry, StringAttr):
        if entry.data in _FLAG_ATTRIBUTES:
            attrs.add(entry.data)
        else:
            attrs.strings[entry.data] = None
        return
    if isinstance(entry, ArrayAttr) and len(entry.data) == 2:
        key, value = entry.data
        if isinstance(key, StringAttr) and isinstance(value, StringAttr):
            attrs.strings[key.data] = value.data
            return
    raise TranslationError(
        f"@{op.sym_name.data}: expected a passthrough string or [key, value], "
        f"got {entry}",
        op.name,
    )


def _convert_global(op: llvm.GlobalOp, out: ir.Module) -> None:
    name = op.sym_name.data
    try:
        value_type = convert_type(op.global_type)
        gvar: Any = ir.GlobalVariable(
            out, value_type, name=name, addrspace=op.addr_space.value.data
        )
        if op.value is not None:
            gvar.initializer = _global_constant(value_type, op.global_type, op.value)
        elif op.body.blocks:
            gvar.initializer = _initializer_region(op)
    except (LLVMTranslationException, ValueError, TypeError) as e:
        if isinstance(e, TranslationError):
            raise
        raise TranslationError(f"@{name}: {e}", op.name) from e
    linkage = op.linkage.linkage.data
    gvar.linkage = "" if linkage == "external" and gvar.initializer else linkage
    gvar.global_constant = op.constant is not None
    visibility = _VISIBILITY.get(op.visibility_.value.data if op.visibility_ else 0)
    storage = [
        "dso_local" if op.dso_local is not None else "",
        "" if linkage in _LOCAL_LINKAGES else visibility or "",
        "thread_local" if op.thread_local_ is not None else "",
    ]
    gvar.storage_class = " ".join(s for s in storage if s)
    gvar.unnamed_addr = op.unnamed_addr is not None and op.unnamed_addr.value.data == 2
    if op.alignment is not None:
        gvar.align = op.alignment.value.data
    if op.section is not None:
        gvar.section = op.section.data


def _global_constant(
    value_type: ir.Type, global_type: Attribute, value: Attribute
) -> ir.Constant:
    if isinstance(value, StringAttr | BytesAttr):
        raw = value.data.encode() if isinstance(value, StringAttr) else value.data
        expected = ir.ArrayType(ir.IntType(8), len(raw))
        if value_type != expected:
            raise TranslationError(
                f"expected a string of type {value_type}, got {len(raw)} bytes",
                "llvm.mlir.global",
            )
        return ir.Constant(value_type, bytearray(raw))
    if isinstance(value, DenseIntOrFPElementsAttr) and isinstance(
        value_type, ir.ArrayType
    ):
        return _nested_array(value_type, iter(value.get_values()))
    return create_constant(global_type, value)


def _nested_array(array_type: ir.Type, values: Any) -> ir.Constant:
    if isinstance(array_type, ir.ArrayType):
        elems = [
            _nested_array(array_type.element, values) for _ in range(len(array_type))
        ]
        return ir.Constant(array_type, elems)
    return ir.Constant(array_type, next(values))


def _initializer_region(op: llvm.GlobalOp) -> ir.Constant:
    """Evaluate an initializer region made of constants ending in `llvm.return`."""
    values: dict[SSAValue, ir.Constant] = {}
    for inner in op.body.ops:
        match inner:
            case llvm.ConstantOp():
                values[inner.result] = create_constant(inner.result.type, inner.value)
            case llvm.ZeroOp():
                values[inner.res] = ir.Constant(convert_type(inner.res.type), None)
            case llvm.UndefOp():
                values[inner.res] = ir.Constant(
                    convert_type(inner.res.type), ir.Undefined
                )
            case llvm.ReturnOp() if inner.arg is not None:
                return values[inner.arg]
            case _:
                break
    raise TranslationError(
        f"@{op.sym_name.data}: an initializer region may hold only "
        "llvm.mlir.constant, llvm.mlir.zero and llvm.mlir.undef before llvm.return",
        op.name,
    )


def _reverse_post_order(blocks: list[Block]) -> list[Block]:
    seen: set[Block] = set()
    order: list[Block] = []
    stack: list[tuple[Block, int]] = [(blocks[0], 0)]
    seen.add(blocks[0])
    while stack:
        block, i = stack.pop()
        succs = block.last_op.successors if block.last_op else ()
        if i < len(succs):
            stack.append((block, i + 1))
            if succs[i] not in seen:
                seen.add(succs[i])
                stack.append((succs[i], 0))
        else:
            order.append(block)
    order.reverse()
    return order + [b for b in blocks if b not in seen]


MAX_LOCAL_NAME = 200
"""The longest name (UTF-8 bytes) a value or block keeps in LLVM IR. LLVM cuts
local names at 1024 bytes when it parses them, so two long hints that share a
prefix (ONNX tensor names, which may be any length) would define one name
twice; a longer hint keeps its head and a hash of the whole."""


def _local_name(hint: str | None) -> str:
    if not hint:
        return ""
    data = hint.encode()
    if len(data) <= MAX_LOCAL_NAME:
        return hint
    digest = hashlib.sha256(data).hexdigest()[:12]
    head = data[: MAX_LOCAL_NAME - len(digest) - 1].decode(errors="ignore")
    return f"{head}.{digest}"


def _convert_body(op: llvm.FuncOp, out: ir.Module) -> None:
    fn = out.get_global(op.sym_name.data)
    assert isinstance(fn, ir.Function)
    blocks = list(op.body.blocks)
    block_map: Blocks = {
        b: fn.append_basic_block(_local_name(b.name_hint) or ("" if i else "entry"))
        for i, b in enumerate(blocks)
    }
    values: Values = dict(zip(blocks[0].args, fn.args, strict=True))
    for arg, llvm_arg in values.items():
        llvm_arg.name = _local_name(arg.name_hint)
    for block in blocks[1:]:
        # xDSL's br and cond_br handlers add the incoming values of these phis.
        builder = ir.IRBuilder(block_map[block])
        for arg in block.args:
            name = _local_name(arg.name_hint)
            values[arg] = builder.phi(_type(arg.type, op), name=name)
    for block in _reverse_post_order(blocks):
        builder = ir.IRBuilder(block_map[block])
        for inner in block.ops:
            _convert_op(inner, builder, values, block_map)


class BFloatType(ir.types._BaseFloatType):  # pyright: ignore[reportPrivateUsage]
    """LLVM's `bfloat`, which llvmlite's IR builder lacks: the type of an
    `fptrunc` to bfloat16 (`te.to_bf16`), one instruction where the target
    has one (`vcvtneps2bf16`, aarch64's `bfcvtn`), expanded by LLVM elsewhere."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"


BFloatType._create_instance()  # pyright: ignore[reportAttributeAccessIssue]


def _type(t: Attribute, op: Operation) -> ir.Type:
    if isinstance(t, BFloat16Type):
        return BFloatType()
    if isinstance(t, VectorType) and isinstance(t.element_type, BFloat16Type):
        return ir.VectorType(BFloatType(), t.get_shape()[0])
    try:
        return convert_type(t)
    except LLVMTranslationException as e:
        raise TranslationError(str(e), op.name) from e


def _convert_op(op: Operation, b: ir.IRBuilder, values: Values, blocks: Blocks):
    handler = _HANDLERS.get(type(op))
    try:
        if handler is not None:
            handler(op, b, values, blocks)
        elif type(op) in _XDSL_OPS:
            convert_op(op, b, values, blocks)
        else:
            raise TranslationError(_unsupported_reason(op), op.name)
    except TranslationError:
        raise
    except KeyError as e:
        raise TranslationError(
            f"uses a value not defined before it: {e.args[0]}", op.name
        ) from e
    except (NotImplementedError, LLVMTranslationException, TypeError) as e:
        raise TranslationError(str(e), op.name) from e
    for result in op.results:
        value = values.get(result)
        if result.name_hint and isinstance(value, ir.Instruction):
            value.name = _local_name(result.name_hint)


def _fastmath(op: Operation) -> list[str]:
    """`op`'s fast-math flags in LLVM's order (a set has none: the IR must not
    depend on hashing), `fast` when it has them all."""
    flags = op.properties.get("fastmathFlags")
    if not isinstance(flags, llvm.FastMathAttr) or not flags.data:
        return []
    if len(flags.data) == len(FastMathFlag):
        return ["fast"]
    return [f.value for f in FastMathFlag if f in flags.data]


def _float_binary(opname: str) -> Handler:
    """fadd, fsub, fmul, fdiv, frem with their fast-math flags (`contract` lets
    LLVM fuse a multiply and an add into an FMA)."""

    def handle(op: Any, b: ir.IRBuilder, values: Values, _: Blocks) -> None:
        build = getattr(b, opname)
        values[op.res] = build(values[op.lhs], values[op.rhs], flags=_fastmath(op))

    return handle


def _fneg(op: llvm.FNegOp, b: ir.IRBuilder, values: Values, _: Blocks) -> None:
    values[op.res] = b.fneg(values[op.arg], flags=_fastmath(op))


@cache
def _intrinsic_name(name: str, fn_type: str) -> str:
    """The name LLVM gives intrinsic `name` at `fn_type`, e.g. `llvm.fma.v8f32`.

    LLVM's parser mangles overloaded intrinsics declared without their suffix, and
    fixes a wrong suffix; asking it keeps ember free of LLVM's overloading tables.
    An intrinsic whose operand types LLVM has since changed comes back renamed
    for the new types (`bfdot.v4f32.v16i8` as `.v8bf16`): then `name` stays,
    and LLVM upgrades the call when it parses the module.
    """
    ret, _, args = fn_type.partition(" (")
    try:
        parsed = llvm_binding.parse_assembly(f"declare {ret} @{name}({args}")
    except RuntimeError:
        return name
    declared = next(iter(parsed.functions))
    if str(declared.global_value_type) != fn_type:
        return name
    return declared.name


def _call_intrinsic(
    b: ir.IRBuilder, name: str, args: list[Any], ret: ir.Type, op: Operation
) -> instructions.CallInstr:
    fn_type = ir.FunctionType(ret, [a.type for a in args])
    full = _intrinsic_name(name, str(fn_type))
    fn = b.module.globals.get(full)
    if fn is None:
        fn = ir.Function(b.module, fn_type, name=full)
    elif not isinstance(fn, ir.Function) or fn.function_type != fn_type:
        raise TranslationError(f"{full} is declared with another type", op.name)
    return b.call(fn, args, fastmath=_fastmath(op))


def _intrinsic_op(name: str) -> Handler:
    def handle(op: Operation, b: ir.IRBuilder, values: Values, _: Blocks) -> None:
        args = [values[x] for x in op.operands]
        ret = _type(op.results[0].type, op) if op.results else ir.VoidType()
        call = _call_intrinsic(b, name, args, ret, op)
        if op.results:
            values[op.results[0]] = call

    return handle


def _call_intrinsic_op(
    op: llvm.CallIntrinsicOp, b: ir.IRBuilder, values: Values, _: Blocks
) -> None:
    if op.op_bundle_operands:
        raise TranslationError("operand bundles are not supported", op.name)
    ret = _type(op.ress.type, op) if op.ress is not None else ir.VoidType()
    call = _call_intrinsic(b, op.intrin.data, [values[a] for a in op.args], ret, op)
    if op.ress is not None:
        values[op.ress] = call


def _call(op: llvm.CallOp, b: ir.IRBuilder, values: Values, blocks: Blocks) -> None:
    if op.callee is not None:
        convert_op(op, b, values, blocks)
        return
    if op.op_bundle_operands:
        raise TranslationError("operand bundles are not supported", op.name)
    ptr, *args = (values[a] for a in op.args)
    ret = _type(op.returned.type, op) if op.returned else ir.VoidType()
    if op.var_callee_type is not None:
        fn_type = _type(op.var_callee_type, op)
    else:
        fn_type = ir.FunctionType(ret, [a.type for a in args])
    # llvmlite reads the callee's type from a typed pointer; the bitcast (which
    # LLVM folds away) gives it one. b.bitcast would return `ptr` unchanged.
    callee = instructions.CastInstr(b.block, "bitcast", ptr, fn_type.as_pointer())
    b._insert(callee)  # pyright: ignore[reportPrivateUsage]
    call = b.call(callee, args, cconv=op.CConv.cconv_name, fastmath=_fastmath(op))
    if op.returned:
        values[op.returned] = call


def _store(op: llvm.StoreOp, b: ir.IRBuilder, values: Values, _: Blocks) -> None:
    # Built by hand: llvmlite's builder refuses a store through a pointer it has
    # typed (a global's address, a byte-offset GEP) to a value of another type.
    store: Any = instructions.StoreInstr(b.block, values[op.value], values[op.ptr])
    store.align = op.alignment.value.data if op.alignment else None
    b._insert(store)  # pyright: ignore[reportPrivateUsage]


def _cast(opname: str) -> Handler:
    def handle(op: Any, b: ir.IRBuilder, values: Values, _: Blocks) -> None:
        build = getattr(b, opname)
        values[op.result] = build(values[op.arg], _type(op.result.type, op))

    return handle


def _extractelement(
    op: ember_llvm.ExtractElementOp, b: ir.IRBuilder, values: Values, _: Blocks
) -> None:
    values[op.res] = b.extract_element(values[op.vector], values[op.index])


def _select(
    op: ember_llvm.SelectOp, b: ir.IRBuilder, values: Values, _: Blocks
) -> None:
    lhs = values[op.lhs]
    # LLVM takes fast-math flags on a select of floats only.
    is_float = not isinstance(
        getattr(lhs.type, "element", lhs.type), ir.IntType | ir.PointerType
    )
    flags = _fastmath(op) if is_float else []
    values[op.res] = b.select(values[op.cond], lhs, values[op.rhs], flags=flags)


def _fcmp(op: ember_llvm.FCmpOp, b: ir.IRBuilder, values: Values, _: Blocks) -> None:
    cmp: Any = instructions.FCMPInstr(
        b.block,
        op.predicate_name.lstrip("_"),  # xDSL spells false and true _false, _true
        values[op.lhs],
        values[op.rhs],
        flags=_fastmath(op),
    )
    b._insert(cmp)  # pyright: ignore[reportPrivateUsage]
    values[op.res] = cmp


def _switch(
    op: ember_llvm.SwitchOp, b: ir.IRBuilder, values: Values, blocks: Blocks
) -> None:
    # llvm.switch carries no successor operands, so a destination with block
    # arguments would leave its phis without an incoming value from this block.
    for dest in (op.default_dest, *op.case_dests):
        if dest.args:
            raise TranslationError(
                "expected destinations without block arguments", op.name
            )
    switch = b.switch(values[op.value], blocks[op.default_dest])
    for case, dest in zip(op.case_values.get_values(), op.case_dests, strict=True):
        switch.add_case(int(case), blocks[dest])


_HANDLERS: dict[type[Operation], Handler] = {
    ember_llvm.FPToSIOp: _cast("fptosi"),
    ember_llvm.FPToUIOp: _cast("fptoui"),
    ember_llvm.UIToFPOp: _cast("uitofp"),
    # ember's types: a bfloat16 value (`BFloatType`) is made and read by these
    llvm.FPTruncOp: _cast("fptrunc"),
    llvm.BitcastOp: _cast("bitcast"),
    ember_llvm.ExtractElementOp: _extractelement,
    ember_llvm.SelectOp: _select,
    ember_llvm.FCmpOp: _fcmp,
    ember_llvm.SwitchOp: _switch,
    llvm.FAddOp: _float_binary("fadd"),
    llvm.FSubOp: _float_binary("fsub"),
    llvm.FMulOp: _float_binary("fmul"),
    llvm.FDivOp: _float_binary("fdiv"),
    llvm.FRemOp: _float_binary("frem"),
    llvm.FNegOp: _fneg,
    llvm.CallIntrinsicOp: _call_intrinsic_op,
    llvm.CallOp: _call,
    llvm.StoreOp: _store,
    # xDSL declares these without type suffixes, so one module cannot use an
    # intrinsic at two types; they go through ember's mangling instead.
    **{
        cls: _intrinsic_op(cls.name.replace("llvm.intr.", "llvm."))
        for cls in llvm.LLVM.operations
        if cls.name.startswith("llvm.intr.") and cls is not llvm.MaskedStoreOp
    },
}

# Ops that xDSL's convert_op translates (it raises NotImplementedError otherwise).
_XDSL_OPS = frozenset(llvm.LLVM.operations) - {llvm.FuncOp, llvm.GlobalOp}

__all__ = ["TranslationError", "translate"]
