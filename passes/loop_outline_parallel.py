"""`loop-outline-parallel`: parallel loops run on every core, through libgomp."""

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException

from ember.dialects import loop
from ember.passes.convert_memref_to_llvm import bare_pointer_error
from ember.passes.func_packed_abi import DIMS_ATTR, SYMBOL_ATTR, symbol_args
from ember.passes.to_llvm import llvm_type
from ember.runtime.parallel import NUM_THREADS_SYMBOL
from ember.runtime.shape_expr import parse as parse_dim

PTR = llvm.LLVMPointerType()
SERIAL_REASON = "nested in a parallel loop: libgomp runs one level of parallelism"
"""The `ember.serial_reason` of a parallel loop that runs serially."""

_EXTERNALS: dict[str, tuple[list[Attribute], list[Attribute]]] = {
    "GOMP_parallel": ([PTR, PTR, i32, i32], []),
    "omp_get_thread_num": ([], [i32]),
    "omp_get_num_threads": ([], [i32]),
}
"""libgomp's functions the outlined code calls: `void GOMP_parallel(void (*fn)(void
*), void *data, unsigned num_threads, unsigned flags)` runs `fn(data)` on a team of
threads, the caller included, and returns when all are done."""


@dataclass(frozen=True)
class LoopOutlineParallelPass(ModulePass):
    """Outline each outermost `loop.for ... parallel` into a function libgomp runs
    on a team of threads, each over its own contiguous block of iterations.

    Before:

        func.func @f(%A: memref<100xf32>, %S: memref<f32>,
                     %B: memref<100xf32> {ember.output}) {
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %c100 = arith.constant 100 : index
          %s = memref.load %S[] : memref<f32>
          loop.for %i = %c0 to %c100 step %c1 parallel {
            %a = memref.load %A[%i] : memref<100xf32>
            %b = arith.mulf %a, %s : f32
            memref.store %b, %B[%i] : memref<100xf32>
          }
          func.return
        }

    After (constants folded for brevity):

        func.func @f(%A: memref<100xf32>, %S: memref<f32>,
                     %B: memref<100xf32> {ember.output}) {
          %data = llvm.alloca %c1_i64 x !llvm.struct<(!llvm.ptr, f32, !llvm.ptr)>
          %s = memref.load %S[] : memref<f32>
          ...  // %A, %s and %B (buffers cast to !llvm.ptr) stored in %data
          %fn = llvm.mlir.addressof @f_parallel0_worker : !llvm.ptr
          %n = llvm.load (llvm.mlir.addressof @__ember_num_threads) : i32
          func.call @GOMP_parallel(%fn, %data, %n, %c0_i32)
          func.return
        }
        func.func private @f_parallel0(%lo: index, %hi: index,
            %A: memref<100xf32> {llvm.noalias}, %s: f32,
            %B: memref<100xf32> {llvm.noalias}) {
          loop.for %i = %lo to %hi step %c1 { ... }
          func.return
        }
        func.func private @f_parallel0_worker(%data: !llvm.ptr) {
          ...  // %A, %s, %B loaded from %data
          %t = func.call @omp_get_thread_num() : () -> i32
          %n = func.call @omp_get_num_threads() : () -> i32
          ...  // thread %t of %n runs iterations [%first, %last)
          func.call @f_parallel0(%first, %last, %A, %s, %B)
          func.return
        }

    Values the loop uses from outside it are captured: memrefs (bare pointers),
    index values, integers, floats and vectors of them, each a field of a struct on
    the caller's stack (allocated in its entry block); `arith.constant`s are cloned
    instead. Thread `t` of `n` runs the iterations `[t*q + min(t, r), (t+1)*q +
    min(t+1, r))` of the loop's `k` iterations (`k = q*n + r`): blocks as even as
    possible, some empty when `k < n` (the step must be positive, as for
    `scf.for`). A captured buffer is `llvm.noalias` in
    `@<f>_parallel<N>` when it is a distinct allocation (`loop.alloc`,
    `memref.alloc`/`alloca`) or an argument of a function whose packed entry proves
    its buffers disjoint (see func-packed-abi), so LLVM keeps its alias information
    in the outlined body. Parallel loops nested in a parallel loop run serially:
    their kind becomes `serial`, with `ember.serial_reason`. The module gets the
    int32 global `@__ember_num_threads` (0: libgomp's default), read before every
    `GOMP_parallel`: the runtime keeps it current (`set_num_threads`,
    `EMBER_NUM_THREADS`, else the cores other processes leave free; see
    `ember.runtime.parallel`).

    Symbolic sizes: a captured buffer of symbolic type keeps its `ember.dims`
    and the size symbols they name follow every other capture, marked
    `ember.symbol` (the outlined function computes its strides from them). A
    loop whose trip count is known only at run time calls `GOMP_parallel`
    only when its work (the body's ops times its trips) reaches
    `PARALLEL_MIN_OPS`; otherwise the worker runs on the caller, one chunk.
    """

    name = "loop-outline-parallel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in list(op.ops):
            if isinstance(f, func.FuncOp) and f.body.blocks:
                outliner = _Outliner(op, f)
                for par in _outermost_parallel(f):
                    outliner.outline(par)


def _outermost_parallel(op: Operation) -> list[loop.ForOp]:
    found: list[loop.ForOp] = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                if isinstance(inner, loop.ForOp) and inner.kind.data == "parallel":
                    found.append(inner)
                else:
                    found.extend(_outermost_parallel(inner))
    return found


def _serialize_nested(par: loop.ForOp) -> None:
    for inner in par.body.walk():
        if isinstance(inner, loop.ForOp) and inner.kind.data == "parallel":
            inner.kind = StringAttr("serial")
            inner.attributes["ember.serial_reason"] = StringAttr(SERIAL_REASON)


def _constant(value: SSAValue) -> arith.ConstantOp | None:
    return value.owner if isinstance(value.owner, arith.ConstantOp) else None


def _used_from_outside(par: loop.ForOp) -> list[SSAValue]:
    """The values `par`'s body and step use that are defined outside `par`, in
    order of first use."""
    inside: set[SSAValue] = set(par.body.block.args)
    for op in par.body.walk():
        inside.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                inside.update(block.args)
    used: dict[SSAValue, None] = {par.step: None}
    for op in par.body.walk():
        used.update((v, None) for v in op.operands if v not in inside)
    return list(used)


def _field_type(t: Attribute) -> Attribute | None:
    """The llvm type a value of type `t` is captured as, or None if it cannot be."""
    if isinstance(t, MemRefType):
        return PTR if bare_pointer_error(t, symbolic=True) is None else None
    element = t.element_type if isinstance(t, VectorType) else t
    if isinstance(element, IndexType | IntegerType | AnyFloat):
        return llvm_type(t)
    return None


class _Outliner:
    """Outlines the parallel loops of one function `@f` into `@f_parallel<N>`."""

    def __init__(self, module: ModuleOp, f: func.FuncOp):
        self.module = module
        self.f = f
        self.count = 0
        self.last: Operation = f  # outlined functions follow @f in order
        self.disjoint_args = _has_disjoint_args(module, f)

    def fail(self, message: str) -> PassFailedException:
        return PassFailedException(
            f"loop-outline-parallel: parallel loop in @{self.f.sym_name.data}: "
            f"{message}"
        )

    def fresh_name(self) -> str:
        while True:
            name = f"{self.f.sym_name.data}_parallel{self.count}"
            self.count += 1
            taken = (name, f"{name}_worker")
            if all(SymbolTable.lookup_symbol(self.module, n) is None for n in taken):
                return name

    def outline(self, par: loop.ForOp) -> None:
        for call in par.body.walk():
            if isinstance(call, loop.CallPackedOp):
                # A worker thread could neither report its failure nor stop the
                # other threads; a host function is called from the caller only.
                raise self.fail(
                    f'loop.call_packed "{call.callee.data}" cannot run in a parallel '
                    "loop; make the loop serial"
                )
        _serialize_nested(par)
        captures: list[SSAValue] = []
        constants: list[arith.ConstantOp] = []
        for value in _used_from_outside(par):
            if (const := _constant(value)) is not None:
                constants.append(const)
                continue
            if _field_type(value.type) is None:
                raise self.fail(
                    f"cannot capture a value of type {value.type}: expected "
                    "memrefs, index, integers, floats or vectors of them"
                )
            captures.append(value)
        captures = self.symbols_last(captures)
        fields = list(captures)
        fields += [
            v
            for v in dict.fromkeys((par.lower, par.upper))
            if v not in captures and _constant(v) is None
        ]
        name = self.fresh_name()
        self.declare_externals()
        typed = self.typed_function(name, par, captures, constants)
        worker = self.worker(name, par, fields, captures)
        Rewriter.insert_op([typed, worker], InsertPoint.after(self.last))
        self.last = worker
        self.call_site(par, fields, f"{name}_worker")

    def arg_attrs(self, value: SSAValue) -> dict[str, Attribute]:
        """The attributes of `@f`'s argument `value` that say what it is to
        the outlined function: a symbolic buffer's dims (also those of a
        `loop.alloc` marked `ember.dims`), a size symbol."""
        owner = value.owner
        attrs = self.f.arg_attrs
        if isinstance(owner, loop.AllocOp) and DIMS_ATTR in owner.attributes:
            return {DIMS_ATTR: owner.attributes[DIMS_ATTR]}
        if not isinstance(owner, Block) or owner is not self.f.body.blocks.first:
            return {}
        own = attrs.data[owner.args.index(value)].data if attrs is not None else {}
        return {k: v for k, v in own.items() if k in (DIMS_ATTR, SYMBOL_ATTR)}

    def symbols_last(self, captures: list[SSAValue]) -> list[SSAValue]:
        """`captures` with the size symbols that symbolic buffers among them
        need after everything else (the loop-level convention: the outlined
        function computes those buffers' strides from them)."""
        symbolic = [
            v
            for v in captures
            if isinstance(v.type, MemRefType) and not v.type.has_static_shape()
        ]
        if not symbolic:
            return captures
        sizes = {
            name: arg
            for name, arg in zip(
                reversed(symbol_args(self.f)),
                reversed(self.f.body.block.args),
                strict=False,
            )
        }
        needed: dict[SSAValue, None] = {}
        for v in symbolic:
            dims = self.arg_attrs(v).get(DIMS_ATTR)
            if not isinstance(dims, ArrayAttr):
                raise self.fail(
                    f"cannot capture {v.type}: a symbolic buffer must be an "
                    f"argument of @{self.f.sym_name.data} or a loop.alloc, with "
                    "ember.dims"
                )
            for name in dims.data:
                for symbol in sorted(parse_dim(name.data).symbols()):  # type: ignore[union-attr]
                    if symbol not in sizes:
                        raise self.fail(f"no size symbol argument {symbol}")
                    needed[sizes[symbol]] = None
        return [v for v in captures if v not in needed] + list(needed)

    def typed_function(
        self,
        name: str,
        par: loop.ForOp,
        captures: list[SSAValue],
        constants: list[arith.ConstantOp],
    ) -> func.FuncOp:
        """`@<name>(%lo, %hi, captures...)`: the loop over `[%lo, %hi)`."""
        types = [IndexType(), IndexType(), *(v.type for v in captures)]
        block = Block(arg_types=types)
        lo, hi, *params = block.args
        lo.name_hint, hi.name_hint = "lo", "hi"
        mapping: dict[SSAValue, SSAValue] = {}
        for value, param in zip(captures, params, strict=True):
            param.name_hint = value.name_hint
            mapping[value] = param
        for const in constants:
            clone = const.clone()
            block.add_op(clone)
            mapping[const.result] = clone.result
        body = par.clone(value_mapper=mapping)
        body.operands = (lo, hi, body.step)
        body.kind = StringAttr("serial")
        block.add_ops([body, func.ReturnOp()])
        noalias: dict[str, Attribute] = {"llvm.noalias": UnitAttr()}
        attrs = [DictionaryAttr({})] * 2 + [
            DictionaryAttr(
                (noalias if self.distinct_buffer(v) else {}) | self.arg_attrs(v)
            )
            for v in captures
        ]
        return func.FuncOp(
            name,
            FunctionType.from_lists(types, []),
            Region(block),
            "private",
            arg_attrs=ArrayAttr(attrs),
        )

    def distinct_buffer(self, value: SSAValue) -> bool:
        """Whether no other value the loop captures can reach `value`'s bytes (or
        only to read bytes nobody writes), so it may be `llvm.noalias`."""
        if not isinstance(value.type, MemRefType):
            return False
        owner = value.owner
        if isinstance(owner, loop.AllocOp | memref.AllocOp | memref.AllocaOp):
            return True
        if isinstance(owner, Block) and owner is self.f.body.blocks.first:
            index = owner.args.index(value)
            attrs = self.f.arg_attrs
            marked = attrs is not None and "llvm.noalias" in attrs.data[index].data
            return marked or self.disjoint_args
        return False

    def worker(
        self,
        name: str,
        par: loop.ForOp,
        fields: list[SSAValue],
        captures: list[SSAValue],
    ) -> func.FuncOp:
        """`@<name>_worker(%data)`: what each thread of the team runs."""
        block = Block(arg_types=[PTR])
        data = block.args[0]
        data.name_hint = "data"
        struct = _struct(fields)
        ops: list[Operation] = []
        values: dict[SSAValue, SSAValue] = {}
        for k, value in enumerate(fields):
            field_type = _field_type(value.type)
            assert field_type is not None
            gep = llvm.GEPOp(data, [0, k], struct, inbounds=True)
            load = llvm.LoadOp(gep, field_type)
            ops += [gep, load]
            loaded = load.dereferenced_value
            if field_type != value.type:
                cast = UnrealizedConversionCastOp.get([loaded], [value.type])
                ops.append(cast)
                loaded = cast.results[0]
            loaded.name_hint = value.name_hint
            values[value] = loaded

        def get(value: SSAValue) -> SSAValue:
            if value not in values:
                const = _constant(value)
                assert const is not None
                ops.append(clone := const.clone())
                values[value] = clone.result
            return values[value]

        lo, hi, step = get(par.lower), get(par.upper), get(par.step)
        first, last = _chunk(ops, lo, hi, step)
        args = [first, last, *(values[v] for v in captures)]
        ops += [func.CallOp(name, args, []), func.ReturnOp()]
        block.add_ops(ops)
        return func.FuncOp(
            f"{name}_worker",
            FunctionType.from_lists([PTR], []),
            Region(block),
            "private",
        )

    def call_site(self, par: loop.ForOp, fields: list[SSAValue], worker: str) -> None:
        """Replace `par` by packing its captured values and `GOMP_parallel`."""
        ops: list[Operation] = []
        if fields:
            struct = _struct(fields)
            one = llvm.ConstantOp(IntegerAttr(1, i64), i64)
            # Fields are read with their types' ABI alignment, up to a 64-byte vector.
            alloca = llvm.AllocaOp(one, struct, alignment=64)
            data = alloca.res
            data.name_hint = "data"
            entry = self.f.body.blocks.first
            assert entry is not None
            Rewriter.insert_op([one, alloca], InsertPoint.at_start(entry))
            for k, value in enumerate(fields):
                field_type = _field_type(value.type)
                assert field_type is not None
                if field_type != value.type:
                    cast = UnrealizedConversionCastOp.get([value], [field_type])
                    ops.append(cast)
                    value = cast.results[0]
                gep = llvm.GEPOp(data, [0, k], struct, inbounds=True)
                ops += [gep, llvm.StoreOp(value, gep)]
        else:
            ops.append(null := llvm.ZeroOp(result_types=[PTR]))
            data = null.res
        fn = llvm.AddressOfOp(worker, PTR)
        threads = llvm.AddressOfOp(NUM_THREADS_SYMBOL, PTR)
        count = llvm.LoadOp(threads, i32, alignment=4)
        flags = arith.ConstantOp(IntegerAttr(0, i32))
        ops += [fn, threads, count, flags]
        args = [fn.result, data, count.dereferenced_value, flags]
        call: Operation = func.CallOp("GOMP_parallel", args, [])
        if _constant(par.lower) is None or _constant(par.upper) is None:
            # a trip count known only at run time (a symbolic extent)
            enough = self.pays(par, ops)
            serial = func.CallOp(worker, [data], [])
            parallel = Block([call, scf.YieldOp()])
            call = scf.IfOp(enough, [], [parallel], [Block([serial, scf.YieldOp()])])
        Rewriter.insert_op([*ops, call], InsertPoint.before(par))
        Rewriter.erase_op(par)

    @staticmethod
    def pays(par: loop.ForOp, ops: list[Operation]) -> SSAValue:
        """Whether a loop whose trip count is known only at run time does
        work enough to pay for the threads (`PARALLEL_MIN_OPS`); when not,
        its worker runs on the caller alone, as one chunk, without waking
        the team (a batch of one runs its small kernels serially, as a
        static build of that size would)."""

        def add(op: Operation) -> SSAValue:
            ops.append(op)
            return op.results[0]

        def index(value: int) -> SSAValue:
            return add(arith.ConstantOp(IntegerAttr(value, IndexType())))

        trips = add(arith.SubiOp(par.upper, par.lower))
        work = add(arith.MuliOp(trips, index(_work(par.body.block))))
        return add(arith.CmpiOp(work, index(PARALLEL_MIN_OPS), "sge"))

    def declare_externals(self) -> None:
        module = self.module
        for name, (inputs, outputs) in _EXTERNALS.items():
            existing = SymbolTable.lookup_symbol(module, name)
            expected = FunctionType.from_lists(inputs, outputs)
            if existing is None:
                module.body.block.add_op(func.FuncOp.external(name, inputs, outputs))
            elif not (
                isinstance(existing, func.FuncOp) and existing.function_type == expected
            ):
                got = (
                    existing.function_type
                    if isinstance(existing, func.FuncOp)
                    else f"'{existing.name}'"
                )
                raise PassFailedException(
                    f"loop-outline-parallel: @{name} must be a function of type "
                    f"{expected}, got {got}"
                )
        define_thread_count(module, LoopOutlineParallelPass.name)


def define_thread_count(module: ModuleOp, by: str) -> None:
    """Define `@__ember_num_threads` (0: the runtime's choice) in `module`
    unless it is there; one of another kind is an error naming pass `by`."""
    existing = SymbolTable.lookup_symbol(module, NUM_THREADS_SYMBOL)
    if existing is None:
        module.body.block.add_op(
            llvm.GlobalOp(
                i32,
                NUM_THREADS_SYMBOL,
                "external",
                value=IntegerAttr(0, i32),
                alignment=4,
            )
        )
    elif not (isinstance(existing, llvm.GlobalOp) and existing.global_type == i32):
        raise PassFailedException(
            f"{by}: @{NUM_THREADS_SYMBOL} must be an i32 llvm.mlir.global, "
            f"got '{existing.name}'"
        )


PARALLEL_MIN_OPS = 1 << 20
"""Operations (body ops times inner trip counts, times the trip count)
below which a parallel loop of run-time trip count runs on the calling
thread alone: about the work (`topi.elementwise.PARALLEL_MIN_WORK`, 2**18
elements of cost ~4 ops) at which a static kernel is made parallel."""

UNKNOWN_TRIPS = 16
"""The trip count an inner loop of run-time extent counts for in `_work`."""


def _work(block: Block) -> int:
    """The operations one iteration of a loop with body `block` runs: its
    ops, inner loops' bodies times their trip counts (constant ones; a
    run-time one counts `UNKNOWN_TRIPS`)."""
    total = 0
    for op in block.ops:
        total += 1
        if isinstance(op, loop.ForOp):
            low, high = _constant(op.lower), _constant(op.upper)
            if low is not None and high is not None:
                trips = max(0, int(high.value.value.data) - int(low.value.value.data))  # type: ignore[union-attr]
            else:
                trips = UNKNOWN_TRIPS
            total += trips * _work(op.body.block)
        else:
            for region in op.regions:
                for inner in region.blocks:
                    total += _work(inner)
    return total


def _struct(fields: Sequence[SSAValue]) -> llvm.LLVMStructType:
    types = [_field_type(v.type) for v in fields]
    return llvm.LLVMStructType.from_type_list(types)  # pyright: ignore


def _chunk(
    ops: list[Operation], lo: SSAValue, hi: SSAValue, step: SSAValue
) -> tuple[SSAValue, SSAValue]:
    """Append to `ops` the bounds `[first, last)` of this thread's iterations."""

    def emit(op: Operation, hint: str) -> SSAValue:
        ops.append(op)
        op.results[0].name_hint = hint
        return op.results[0]

    index = IndexType()
    c0 = emit(arith.ConstantOp(IntegerAttr(0, index)), "c0")
    c1 = emit(arith.ConstantOp(IntegerAttr(1, index)), "c1")
    tid = emit(func.CallOp("omp_get_thread_num", [], [i32]), "thread")
    team = emit(func.CallOp("omp_get_num_threads", [], [i32]), "threads")
    tid = emit(arith.IndexCastOp(tid, index), "t")
    team = emit(arith.IndexCastOp(team, index), "n")
    span = emit(arith.SubiOp(hi, lo), "span")
    trips = emit(arith.CeilDivSIOp(span, step), "trips")
    trips = emit(arith.MaxSIOp(trips, c0), "trips")
    base = emit(arith.DivUIOp(trips, team), "quot")
    rest = emit(arith.RemUIOp(trips, team), "rem")
    skew = emit(arith.MinUIOp(tid, rest), "skew")
    begin = emit(arith.AddiOp(emit(arith.MuliOp(tid, base), "start"), skew), "begin")
    longer = emit(arith.CmpiOp(tid, rest, "ult"), "longer")
    extra = emit(arith.SelectOp(longer, c1, c0), "extra")
    end = emit(arith.AddiOp(begin, emit(arith.AddiOp(base, extra), "len")), "end")
    first = emit(arith.AddiOp(lo, emit(arith.MuliOp(begin, step), "off")), "first")
    last = emit(arith.AddiOp(lo, emit(arith.MuliOp(end, step), "off")), "last")
    return first, last


def _has_disjoint_args(module: ModuleOp, f: func.FuncOp) -> bool:
    """Whether func-packed-abi will prove `f`'s buffers disjoint: it gives `f` a
    checking packed entry and makes that entry its only caller (the condition
    under which it marks them `llvm.noalias`; see `_mark_noalias` there)."""
    if f.sym_visibility is not None and f.sym_visibility.data != "public":
        return False
    ftype = f.function_type
    if ftype.outputs.data or not ftype.inputs.data:
        return False
    if not all(isinstance(t, MemRefType) for t in ftype.inputs.data):
        return False
    attrs = f.arg_attrs.data if f.arg_attrs is not None else ()
    if not any("ember.output" in d.data for d in attrs):
        return False
    name = f.sym_name.data
    return not any(
        isinstance(op, func.CallOp) and op.callee.string_value() == name
        for op in module.walk()
    )
