"""convert-call-packed-to-llvm: `loop.call_packed` calls the host through a hook.

A module that calls host functions gets the weak pointer global
`@__ember_call_packed` (null until a host installs its callback there, see
`ember.runtime.callbacks`) of C type

    int32_t (*)(const char* name, EmberValue* args, int32_t* type_codes,
                int32_t num_args, EmberValue* ret, int32_t* ret_type_code);

Each `loop.call_packed` becomes a call through it with packed arguments (buffers
as DLPack DLTensors built on the stack, integers as int64, floats as double,
strings as constant C strings). A call can fail (no hook installed, or the host
function raised), so a function holding one returns the failure: it gets the
result `!llvm.ptr`, a message on failure and null on success, and is marked
`ember.fallible`; func-packed-abi turns a message into return code -100. Runs
after convert-scf-to-cf, where an early exit from inside loops is a branch to a
return.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, cf, func, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    Float64Type,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
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

from ember.dialects import loop
from ember.dialects.llvm import SelectOp
from ember.passes.convert_memref_to_llvm import bare_pointer_error
from ember.passes.func_packed_abi import (
    DLTENSOR,
    DTYPES,
    FALLIBLE,
    TYPE_DLTENSOR,
    TYPE_STR,
    dtype_of,
)
from ember.runtime.abi import TypeCode
from ember.runtime.callbacks import HOOK_SYMBOL

PTR = llvm.LLVMPointerType()
TYPE_INT, TYPE_FLOAT = int(TypeCode.INT), int(TypeCode.FLOAT)
TYPE_NULL = int(TypeCode.NULL)
HOOK_TYPE = llvm.LLVMFunctionType([PTR, PTR, PTR, i32, PTR, PTR], i32)


def _fail(where: str, what: str) -> PassFailedException:
    return PassFailedException(f"convert-call-packed-to-llvm: {where}: {what}")


@dataclass(frozen=True)
class ConvertCallPackedToLLVMPass(ModulePass):
    """Lower `loop.call_packed` to a checked call through `@__ember_call_packed`.

    Before (after convert-scf-to-cf):

        func.func @f(%A: memref<16xf32>, %B: memref<16xf32>) {
          loop.call_packed "my.sort"(%A, %B, "asc") : memref<16xf32>, memref<16xf32>
          func.return
        }

    After:

        llvm.mlir.global weak @__ember_call_packed() : !llvm.ptr  // null
        func.func @f(%A: memref<16xf32>, %B: memref<16xf32>) -> !llvm.ptr
            attributes {ember.fallible} {
          // entry block: llvm.alloca of two DLTensors, their shape arrays, the
          // EmberValue and type-code arrays and the hook's return slots
          ...  // DLTensors filled: data (the buffer), cpu, ndim, dtype, shape,
               // strides null, byte_offset 0; args = {&A, &B, "asc"}, codes 7, 7, 11
          %hook = llvm.load (llvm.mlir.addressof @__ember_call_packed) : !llvm.ptr
          cf.cond_br (%hook == null), ^no_hook, ^call
        ^no_hook:   // "f: no host function table: cannot call 'my.sort'"
          func.return %message : !llvm.ptr
        ^call:
          %rc = llvm.call %hook(@"my.sort", %args, %codes, 3, %ret, %ret_code)
          cf.cond_br (%rc != 0), ^failed, ^next
        ^failed:    // the host's message if it returned a string, else ours
          func.return %message : !llvm.ptr
        ^next:
          %null = llvm.mlir.zero : !llvm.ptr
          func.return %null : !llvm.ptr
        }

    Integers are sign-extended to int64 (i1 zero-extended, index cast), floats
    extended to double. A function that calls a fallible function (`func.call`)
    becomes fallible too and returns the callee's message. Calls must sit in a
    function's CFG (a `loop.call_packed` left in a region is a diagnostic), in a
    function without results.
    """

    name = "convert-call-packed-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [
            f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks
        ]
        calls = {
            f: [c for c in f.walk() if isinstance(c, loop.CallPackedOp)]
            for f in functions
        }
        fallible = {
            f.sym_name.data for f in functions if calls[f] or FALLIBLE in f.attributes
        }
        changed = True
        while changed:  # callers of fallible functions are fallible
            changed = False
            for f in functions:
                name = f.sym_name.data
                if name not in fallible and _callees(f) & fallible:
                    fallible.add(name)
                    changed = True
        if not any(calls.values()):
            return
        _declare_hook(op)
        for f in functions:
            if f.sym_name.data in fallible and FALLIBLE not in f.attributes:
                _Lowering(op, f, fallible).run(calls[f])


def _callees(f: func.FuncOp) -> set[str]:
    return {c.callee.string_value() for c in f.walk() if isinstance(c, func.CallOp)}


def _declare_hook(module: ModuleOp) -> None:
    existing = SymbolTable.lookup_symbol(module, HOOK_SYMBOL)
    if existing is None:
        body = Region(Block())
        zero = llvm.ZeroOp(result_types=[PTR])
        body.block.add_ops([zero, llvm.ReturnOp(zero.res)])
        hook = llvm.GlobalOp(PTR, HOOK_SYMBOL, "weak", alignment=8, body=body)
        module.body.block.add_op(hook)
    elif not (isinstance(existing, llvm.GlobalOp) and existing.global_type == PTR):
        raise _fail(
            f"@{HOOK_SYMBOL}",
            f"expected a !llvm.ptr llvm.mlir.global, got '{existing.name}'",
        )


class _Lowering:
    """Makes one function fallible and lowers its calls."""

    def __init__(self, module: ModuleOp, f: func.FuncOp, fallible: set[str]):
        self.module, self.f, self.fallible = module, f, fallible
        self.name = f.sym_name.data
        self.where = f"@{self.name}"
        self.strings: dict[str, str] = {}
        self.entry = f.body.blocks[0]
        self.entry_at = InsertPoint.at_start(self.entry)

    def run(self, calls: list[loop.CallPackedOp]) -> None:
        f = self.f
        if f.function_type.outputs.data:
            raise _fail(
                self.where,
                "expected a function without results to call the host, got "
                f"results ({', '.join(map(str, f.function_type.outputs.data))})",
            )
        f.function_type = FunctionType.from_lists(f.function_type.inputs.data, [PTR])
        f.attributes[FALLIBLE] = UnitAttr()
        for ret in [r for r in f.walk() if isinstance(r, func.ReturnOp)]:
            zero = llvm.ZeroOp(result_types=[PTR])
            Rewriter.insert_op(zero, InsertPoint.before(ret))
            Rewriter.replace_op(ret, func.ReturnOp(zero.res))
        for n, call in enumerate(calls):
            if call.parent_op() is not f:
                parent = call.parent_op()
                raise _fail(
                    self.where,
                    f'loop.call_packed "{call.callee.data}" is inside '
                    f"'{parent.name if parent else '?'}'; expected it in the "
                    "function's blocks (run convert-loop-to-scf and convert-scf-to-cf "
                    "first)",
                )
            self._lower(call, n)
        for call in [c for c in f.walk() if isinstance(c, func.CallOp)]:
            if call.callee.string_value() in self.fallible and not call.res:
                self._check_call(call)

    # --- helpers -----------------------------------------------------------------

    def _alloca(self, t: Attribute, count: int = 1, align: int = 8) -> SSAValue:
        size = llvm.ConstantOp(IntegerAttr(count, i64), i64)
        alloca = llvm.AllocaOp(size, t, alignment=align)
        Rewriter.insert_op([size, alloca], self.entry_at)
        self.entry_at = InsertPoint.after(alloca)
        return alloca.res

    def _string(self, text: str, kind: str) -> SSAValue:
        """The address of a constant C string (one global per distinct text)."""
        symbol = self.strings.get(text)
        if symbol is None:
            from ember.passes.convert_cf_to_llvm import define_string

            symbol = f"__ember_{kind}.{self.name}.{len(self.strings)}"
            symbol = define_string(self.module, symbol, text)
            self.strings[text] = symbol
        return self._add(llvm.AddressOfOp(symbol, PTR))

    def _add(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, self.at)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def _const(self, value: int, t: IntegerType = i32) -> SSAValue:
        return self._add(llvm.ConstantOp(IntegerAttr(value, t), t))

    def _store(self, value: SSAValue, ptr: SSAValue, align: int) -> None:
        self._add(llvm.StoreOp(value, ptr, alignment=align))

    def _gep(self, ptr: SSAValue, indices: list[int], t: Attribute) -> SSAValue:
        return self._add(llvm.GEPOp(ptr, indices, t))

    def _return(self, block: Block, text: str) -> None:
        self.at = InsertPoint.at_end(block)
        self._add(func.ReturnOp(self._string(text, "err")))

    # --- one call ----------------------------------------------------------------

    def _lower(self, call: loop.CallPackedOp, n: int) -> None:
        callee = call.callee.data
        args = call.call_args
        values = self._alloca(i64, max(len(args), 1))
        codes = self._alloca(i32, max(len(args), 1), align=4)
        ret = self._alloca(i64)
        ret_code = self._alloca(i32, align=4)
        slots = [self._argument(call, k, arg) for k, arg in enumerate(args)]
        self.at = InsertPoint.before(call)
        for k, (value, code) in enumerate(slots):
            self._store(value, self._gep(values, [k], i64), 8)
            self._store(self._const(code), self._gep(codes, [k], i32), 4)
        name = self._string(callee, "callee")
        address = self._add(llvm.AddressOfOp(HOOK_SYMBOL, PTR))
        hook = self._add(llvm.LoadOp(address, PTR, alignment=8))
        hook_int = self._add(llvm.PtrToIntOp(hook, i64))
        flag = llvm.ICmpPredicateFlag("eq").to_int()
        no_hook = self._add(
            llvm.ICmpOp(hook_int, self._const(0, i64), IntegerAttr(flag, i64))
        )
        block = call.parent_block()
        assert block is not None
        rest = block.split_before(call)
        region = rest.parent
        assert region is not None
        missing, calling, failed = Block(), Block(), Block()
        for b, hint in ((missing, "no_hook"), (calling, "call"), (failed, "failed")):
            b.name_hint = f"{hint}{n}"
        region.insert_block_before([missing, calling, failed], rest)
        rest.name_hint = f"after_call{n}"
        self.at = InsertPoint.at_end(block)
        self._add(cf.ConditionalBranchOp(no_hook, missing, [], calling, []))
        self._return(
            missing, f"{self.name}: no host function table: cannot call '{callee}'"
        )

        self.at = InsertPoint.at_end(calling)
        self._store(self._const(TYPE_NULL), ret_code, 4)
        count = self._const(len(args))
        rc = llvm.CallOp(
            "hook",
            hook,
            name,
            values,
            codes,
            count,
            ret,
            ret_code,
            return_type=i32,
            var_callee_type=HOOK_TYPE,
        )
        del rc.properties["callee"]
        status = self._add(rc)
        flag = llvm.ICmpPredicateFlag("ne").to_int()
        bad = self._add(llvm.ICmpOp(status, self._const(0), IntegerAttr(flag, i64)))
        self._add(cf.ConditionalBranchOp(bad, failed, [], rest, []))

        # The host's message when it returned a string, else ours.
        self.at = InsertPoint.at_end(failed)
        code = self._add(llvm.LoadOp(ret_code, i32, alignment=4))
        text = self._add(llvm.LoadOp(ret, PTR, alignment=8))
        flag_eq = IntegerAttr(llvm.ICmpPredicateFlag("eq").to_int(), i64)
        flag_ne = IntegerAttr(llvm.ICmpPredicateFlag("ne").to_int(), i64)
        is_str = self._add(llvm.ICmpOp(code, self._const(TYPE_STR), flag_eq))
        text_int = self._add(llvm.PtrToIntOp(text, i64))
        non_null = self._add(llvm.ICmpOp(text_int, self._const(0, i64), flag_ne))
        usable = self._add(llvm.AndOp(is_str, non_null))
        ours = self._string(f"{self.name}: callback '{callee}' failed", "err")
        message = self._add(SelectOp(usable, text, ours))
        self._add(func.ReturnOp(message))
        Rewriter.erase_op(call)

    def _argument(
        self, call: loop.CallPackedOp, k: int, arg: SSAValue | str
    ) -> tuple[SSAValue, int]:
        """The EmberValue (as the value to store) and type code of argument `k`;
        buffers get their DLTensor built before the call."""
        self.at = InsertPoint.before(call)
        if isinstance(arg, str):
            return self._string(arg, "str"), TYPE_STR
        t = arg.type
        what = f'argument {k} of loop.call_packed "{call.callee.data}"'
        if isinstance(t, MemRefType):
            return self._tensor(arg, t, what), TYPE_DLTENSOR
        if isinstance(t, IndexType):
            return self._add(arith.IndexCastOp(arg, i64)), TYPE_INT
        if isinstance(t, IntegerType):
            width = t.width.data
            if width > 64:
                raise _fail(self.where, f"{what}: expected at most 64 bits, got {t}")
            if width == 64:
                return arg, TYPE_INT
            extend = arith.ExtUIOp if width == 1 else arith.ExtSIOp
            return self._add(extend(arg, i64)), TYPE_INT
        if isinstance(t, AnyFloat):
            if isinstance(t, Float64Type):
                return arg, TYPE_FLOAT
            return self._add(arith.ExtFOp(arg, Float64Type())), TYPE_FLOAT
        raise _fail(self.where, f"{what}: cannot pass a {t}")

    def _tensor(self, buffer: SSAValue, t: MemRefType, what: str) -> SSAValue:
        if (error := bare_pointer_error(t)) is not None:
            raise _fail(self.where, f"{what}: {error}")
        dtype = dtype_of(t.element_type)
        if dtype is None:
            raise _fail(self.where, f"{what}: no DLPack dtype for {t.element_type}")
        code, bits = DTYPES[dtype]
        shape = t.get_shape()
        tensor = self._alloca(DLTENSOR)
        extents = self._alloca(i64, len(shape)) if shape else None
        data = self._add(UnrealizedConversionCastOp.get([buffer], [PTR]))
        fields: list[tuple[int, SSAValue, int]] = [
            (0, data, 8),
            (1, self._const(1), 4),  # kDLCPU
            (2, self._const(0), 4),
            (3, self._const(len(shape)), 4),
            (4, self._const(code, i8), 1),
            (5, self._const(bits, i8), 1),
            (6, self._const(1, i16), 2),
            (
                7,
                extents
                if extents is not None
                else self._add(llvm.ZeroOp(result_types=[PTR])),
                8,
            ),
            (8, self._add(llvm.ZeroOp(result_types=[PTR])), 8),
            (9, self._const(0, i64), 8),
        ]
        for index, value, align in fields:
            self._store(value, self._gep(tensor, [0, index], DLTENSOR), align)
        for d, extent in enumerate(shape):
            assert extents is not None
            self._store(self._const(extent, i64), self._gep(extents, [d], i64), 8)
        return tensor

    def _check_call(self, call: func.CallOp) -> None:
        """A call of a fallible function: return its message if it has one."""
        new = func.CallOp(call.callee, list(call.arguments), [PTR])
        Rewriter.replace_op(call, new, [])
        block = new.parent_block()
        assert block is not None and new.next_op is not None
        rest = block.split_before(new.next_op)
        failed = Block()
        failed.add_op(func.ReturnOp(new.res[0]))
        region = rest.parent
        assert region is not None
        region.insert_block_before(failed, rest)
        self.at = InsertPoint.at_end(block)
        as_int = self._add(llvm.PtrToIntOp(new.res[0], i64))
        flag = IntegerAttr(llvm.ICmpPredicateFlag("ne").to_int(), i64)
        bad = self._add(llvm.ICmpOp(as_int, self._const(0, i64), flag))
        self._add(cf.ConditionalBranchOp(bad, failed, [], rest, []))
