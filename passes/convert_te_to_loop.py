"""`convert-te-to-loop`: tensor expressions become naive loop nests over buffers.

The TVM-style default lowering, before any schedule: every `te.compute` becomes a
serial `loop.for` nest over its output (then over its reduction axes) that writes
one buffer, and the function moves from tensors to buffers. A `te.extern` becomes
its body (`loop.call_packed`s) on the whole buffers of its inputs and its result.
"""

from dataclasses import dataclass, field
from math import prod
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, memref
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrankedTensorType,
    i32,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from ember.dialects import loop, te
from ember.dialects.graph_shapes import ShapeError, dims_of
from ember.dialects.llvm import SelectOp
from ember.dialects.te_schedule import ScheduleOp
from ember.passes.affine import Extent, emit_size
from ember.passes.convert_cf_to_llvm import define_string
from ember.passes.convert_memref_to_llvm import element_bytes
from ember.passes.func_packed_abi import DIMS_ATTR, FALLIBLE, SYMBOL_ATTR
from ember.passes.names import ssa_name
from ember.passes.te_nests import BoundsChecks, NestEmitter, out_of_bounds
from ember.passes.te_reductions import ReductionError
from ember.passes.te_stages import Schedule, ScheduleError, Stage
from ember.runtime.shape_expr import SymExpr

PTR = llvm.LLVMPointerType()
MAX_BYTES = 2**63 - 1
"""The largest buffer: sizes, offsets and indices are int64 (`ember.te.MAX_BYTES`)."""


@dataclass(frozen=True)
class ConvertTeToLoopPass(ModulePass):
    """Lower te functions to loop nests over memrefs; outputs become out-parameters.

    Before:

        func.func @rowmax(%X: tensor<4x8xf32>) -> tensor<4xf32> {
          %M = te.compute "M" (%i) reduce max (%k : 8) -> tensor<4xf32> {
            %x = te.read %X[%i, %k] : tensor<4x8xf32>
            te.yield %x : f32
          }
          func.return %M : tensor<4xf32>
        }

    After:

        func.func @rowmax(%X: memref<4x8xf32> {ember.name = "X"},
                          %M: memref<4xf32> {ember.name = "M", ember.output}) {
          %c0 = arith.constant 0 : index
          %c4 = arith.constant 4 : index
          %c1 = arith.constant 1 : index
          %max_init = arith.constant 0xff800000 : f32
          %c8 = arith.constant 8 : index
          loop.for %i = %c0 to %c4 step %c1 {
            memref.store %max_init, %M[%i] : memref<4xf32>
            loop.for %k = %c0 to %c8 step %c1 {
              %x = memref.load %X[%i, %k] : memref<4x8xf32>
              %acc = memref.load %M[%i] : memref<4xf32>
              %max = arith.maximumf %acc, %x : f32
              memref.store %max, %M[%i] : memref<4xf32>
            }
          }
          func.return
        }

    The new signature is the inputs, tensors turned into memrefs of the same shape
    and element type, then one out-parameter per result. Every argument keeps its
    attribute dictionary and gets `ember.name`: an input keeps its own (else its SSA
    name, else `arg<i>`); an output takes the name of its te.compute (a returned
    input, copied, keeps that input's name) and is marked `ember.output`, which
    func-packed-abi reads to reject calls whose outputs overlap other arguments. Computes that are not results write a
    `loop.alloc` at the top of the function (with `scratch-args`, a global one
    becomes an out-parameter marked `ember.scratch` after the outputs, which
    the caller provides). A reduction stores the combiner's
    identity (sum 0, max -inf or the smallest integer, min +inf or the largest)
    and then folds into the buffer. max/min combine with `arith.maximumf`/
    `minimumf` on floats, which propagate NaN as numpy's `max`/`min` do (`maxnumf`
    would drop it), `maxsi`/`minsi` on integers, and `maxui`/`minui` on i1 (any
    and all, from false and true). A sum of i1 is an error: numpy counts booleans,
    which an i1 cannot hold. Functions without te ops or tensors are left alone;
    anything else over tensors is an error, and so is a read that bound
    inference proves out of its tensor's range (`te.read of 'A' index 0
    ranges over [1, 1024], outside [0, 1023]`), and a tensor whose byte size
    overflows int64.
    """

    name = "convert-te-to-loop"

    scratch_args: bool = False
    """Root-stage global buffers (a padded or packed input, a pooling column
    pass) become out-parameters marked `ember.scratch`, after the outputs and in
    stage order, instead of `loop.alloc`s (heap allocations on every call): the
    caller gives them memory, as an ahead-of-time model gives each a slice of
    its workspace. `scratch_buffers` lists them without lowering."""

    bounds_check: bool = False
    """The bounds-checked build mode: each load whose index bound inference
    cannot prove in range (an index read from a tensor, a clamp, a division)
    is checked; an index outside its tensor loads element 0 instead and the
    function returns a message naming the read (its result becomes
    `!llvm.ptr`, marked `ember.fallible`: func-packed-abi turns the message
    into an error the caller sees). Reads proven out of range are refused in
    either mode.

    Symbolic shapes: a tensor type with dynamic dims named by its encoding
    (`tensor<?x64xf32, ["n"]>`) becomes `memref<?x64xf32>` with the argument
    attribute `ember.dims = ["n"]`, and every size symbol the function's types
    or bodies name is a trailing `index` argument marked `ember.symbol`, after
    the buffers (the te function's own, or added): the loop-level convention
    func-packed-abi binds from the buffers' shapes. Loops over symbolic
    extents run to values computed once at the entry from the symbols; a
    split of one is guarded where it does not divide. A symbolic intermediate
    at the root is a heap `loop.alloc(%sizes)` placed after its sizes (marked
    `ember.dims` as an argument is), or with `scratch-args` an argument the
    caller provides; one attached inside loops must have a static region
    there.
    """

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _lower_block(op.body.block, self.scratch_args, self.bounds_check)


def scratch_buffers(
    function: func.FuncOp,
) -> list[tuple[str, MemRefType, dict[str, Attribute]]]:
    """The buffers `convert-te-to-loop{scratch-args=true}` makes out-parameters
    of te function `function`, in argument order: (stage name, type, its
    `ember.dims` where symbolic) each.

    The schedule is applied to a copy; `function` is left as it is.

    Raises:
        PassFailedException: the schedule cannot be applied.
    """
    copy = function.clone()
    lowering = _FunctionLowering(copy, scratch=True)
    ret = lowering.block.last_op
    if not isinstance(ret, func.ReturnOp):
        _fail(lowering.where, "expected the function body to end in func.return")
    try:
        schedule = lowering._apply_schedule(ret)
    except ScheduleError as error:
        _fail(lowering.where, str(error))
    outputs = set(ret.arguments)
    return [
        (
            stage.name,
            lowering._buffer_type(stage.op.output_type, stage.name),
            dims_attr(stage.op.output_type),
        )
        for stage in schedule.ordered()
        if stage.attach is None
        and stage.op.result not in outputs
        and _is_scratch(stage)
    ]


def _is_scratch(stage: Stage) -> bool:
    return stage.scope == "global"


def _lower_block(block: Block, scratch: bool, bounds_check: bool = False) -> None:
    for op in list(block.ops):
        if isinstance(op, ModuleOp):
            _lower_block(op.body.block, scratch, bounds_check)
        elif isinstance(op, func.FuncOp):
            if _is_te_function(op):
                _FunctionLowering(op, scratch, bounds_check).run()
        else:
            _reject_te(op, "module")


def _is_te_function(f: func.FuncOp) -> bool:
    if f.is_declaration or any(o.dialect_name() == "graph" for o in f.walk()):
        return False  # a model function: graph-plan-memory lowers it
    types = (*f.function_type.inputs, *f.function_type.outputs)
    if any(isinstance(t, TensorType | UnrankedTensorType) for t in types):
        return True
    return any(o.dialect_name() == "te" for o in f.walk())


def _fail(where: str, message: str) -> NoReturn:
    raise PassFailedException(f"convert-te-to-loop: {where}: {message}")


def _reject_te(op: Operation, where: str) -> None:
    """Fail on any te op at or under `op`, which this pass cannot lower."""
    for inner in op.walk():
        if inner.dialect_name() == "te":
            parent = inner.parent_op()
            assert parent is not None
            _fail(
                where,
                f"'{inner.name}' in '{parent.name}' cannot be lowered; te.compute "
                "must sit directly in the body of a func.func",
            )


@dataclass
class _FunctionLowering:
    """Lowers one te function in place."""

    function: func.FuncOp
    scratch: bool = False
    """Root-stage global buffers become `ember.scratch` out-parameters."""
    bounds_check: bool = False
    """Loads not proven in range are checked (see `ConvertTeToLoopPass`)."""
    block: Block = field(init=False)
    where: str = field(init=False)
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    """The buffer of each tensor value (argument or compute result)."""
    outputs: dict[te.ComputeOp | te.ExternOp, SSAValue] = field(
        default_factory=dict[te.ComputeOp | te.ExternOp, SSAValue]
    )
    constants: dict[tuple[float, Attribute], SSAValue] = field(
        default_factory=dict[tuple[float, Attribute], SSAValue]
    )
    scratch_attrs: list[DictionaryAttr] = field(default_factory=list[DictionaryAttr])
    last_alloc: Operation | None = None
    last_const: Operation | None = None
    error_cell: SSAValue | None = None
    symbols: dict[str, SSAValue] = field(default_factory=dict[str, SSAValue])
    """The function's size symbols, by name."""
    sizes: dict[Extent, SSAValue] = field(default_factory=dict[Extent, SSAValue])

    def __post_init__(self):
        self.where = f"@{self.function.sym_name.data}"
        if len(self.function.body.blocks) != 1:
            _fail(self.where, "expected a te function with a single block")
        self.block = self.function.body.block

    def _prologue(self, op: Operation) -> None:
        """Insert `op` at the top of the function: buffers first, then constants."""
        after = self.last_alloc
        if isinstance(op, arith.ConstantOp):
            after = self.last_const or after
            self.last_const = op
        else:
            self.last_alloc = op
        Rewriter.insert_op(
            op,
            InsertPoint.at_start(self.block)
            if after is None
            else InsertPoint.after(after),
        )

    def run(self) -> None:
        ret = self.block.last_op
        if not isinstance(ret, func.ReturnOp):
            _fail(self.where, "expected the function body to end in func.return")
        for op in self.block.ops:
            if isinstance(op, te.ComputeOp):
                self._check_body(op)
                if message := out_of_bounds(op, self._tensor_name):
                    _fail(self.where, message)
        try:
            schedule = self._apply_schedule(ret)
        except ScheduleError as error:
            _fail(self.where, str(error))
        self._find_symbols()
        copies = self._convert_signature(ret)
        for op in list(self.block.ops):
            if not isinstance(op, te.ComputeOp | te.ExternOp) and op is not ret:
                self._check_scalar(op)
        stages = schedule.ordered()
        checks = None
        if self.bounds_check:
            checks = BoundsChecks(self._error_cell, self._tensor_name)
        try:
            emitter = NestEmitter(
                stages,
                self._stage_buffer,
                self.buffers.get,
                self._index,
                self._const_attr,
                checks,
                self._size,
                {value: name for name, value in self.symbols.items()},
                self._dims,
            )
            for stage in stages:
                if stage.attach is None:
                    emitter.emit_root(stage, InsertPoint.before(ret))
        except (ScheduleError, ReductionError) as error:
            _fail(self.where, str(error))
        for src, dst in copies:
            self._copy(
                emitter.buffers[src][0] if src in emitter.buffers else src, dst, ret
            )
        if checks is not None and checks.messages:
            self._return_failure(checks, ret)
        else:
            Rewriter.replace_op(ret, func.ReturnOp())
        for stage in reversed(stages):
            Rewriter.erase_op(stage.op)
        if self.scratch_attrs:
            attrs = self.function.arg_attrs
            assert attrs is not None
            self.function.arg_attrs = ArrayAttr([*attrs.data, *self.scratch_attrs])
            self.function.function_type = FunctionType.from_lists(
                self.block.arg_types, self.function.function_type.outputs.data
            )
        self._symbols_last()

    def _find_symbols(self) -> None:
        """The function's size symbols: its `index` arguments marked
        `ember.symbol`, and one added for each other symbol its tensor types
        name."""
        attrs = self.function.arg_attrs
        for arg in self.block.args:
            own = attrs.data[arg.index].data if attrs is not None else {}
            name = own.get(SYMBOL_ATTR)
            if isinstance(name, StringAttr) and isinstance(arg.type, IndexType):
                self.symbols[name.data] = arg
        named: list[str] = []
        types = [*self.block.arg_types, *self.function.function_type.outputs.data]
        types += [
            op.result.type for op in self.block.ops if isinstance(op, te.ComputeOp)
        ]
        for op in self.block.ops:
            if isinstance(op, te.ComputeOp):
                for e in op.extents:
                    named += sorted(e.symbols()) if isinstance(e, SymExpr) else []
        for t in types:
            if isinstance(t, TensorType):
                try:
                    dims = dims_of(t)
                except ShapeError as e:
                    _fail(self.where, str(e))
                for d in dims:
                    named += sorted(d.symbols()) if isinstance(d, SymExpr) else []
        added = [n for n in dict.fromkeys(named) if n not in self.symbols]
        for name in added:
            arg = self.block.insert_arg(IndexType(), len(self.block.args))
            arg.name_hint = ssa_name(name)
            self.symbols[name] = arg
        if added:
            old = list(attrs.data) if attrs is not None else []
            old += [
                DictionaryAttr({})
                for _ in range(len(self.block.args) - len(old) - len(added))
            ]
            old += [DictionaryAttr({SYMBOL_ATTR: StringAttr(n)}) for n in added]
            self.function.arg_attrs = ArrayAttr(old)
            self.function.function_type = FunctionType.from_lists(
                self.block.arg_types, self.function.function_type.outputs.data
            )

    def _symbols_last(self) -> None:
        """Move the symbol arguments after every buffer, in name order of first
        appearance (the loop-level convention)."""
        if not self.symbols:
            return
        attrs = self.function.arg_attrs
        assert attrs is not None
        keep = [a for a in self.block.args if a not in self.symbols.values()]
        moved = [a for a in self.block.args if a in self.symbols.values()]
        new_attrs = [attrs.data[a.index] for a in keep + moved]
        for arg in moved:
            new = self.block.insert_arg(IndexType(), len(self.block.args))
            new.name_hint = arg.name_hint
            arg.replace_all_uses_with(new)
            self.block.erase_arg(arg)
        self.function.arg_attrs = ArrayAttr(new_attrs)
        self.function.function_type = FunctionType.from_lists(
            self.block.arg_types, self.function.function_type.outputs.data
        )

    def _size(self, value: Extent) -> SSAValue:
        """A symbolic extent's value, computed once at the function's entry."""
        if isinstance(value, int):
            return self._index(value)
        if value not in self.sizes:
            # After the constants; the constants the expression needs join
            # them as it is emitted, so the ops go before a marker that stays
            # after them all (a point after the last constant would move).
            start = self.last_const or self.last_alloc
            at = (
                InsertPoint.after(start)
                if start is not None
                else InsertPoint.at_start(self.block)
            )
            marker = arith.ConstantOp(IntegerAttr(0, IndexType()))
            Rewriter.insert_op(marker, at)
            result = emit_size(
                value, self._symbol, self._index, InsertPoint.before(marker)
            )
            Rewriter.erase_op(marker)
            self.sizes[value] = result
        return self.sizes[value]

    def _dims(self, value: SSAValue) -> tuple[Extent, ...]:
        """The dims of a tensor value or of the buffer argument it became."""
        t = value.type
        if isinstance(value, BlockArgument) and isinstance(t, MemRefType):
            attrs = self.function.arg_attrs
            names = attrs.data[value.index].data.get(DIMS_ATTR) if attrs else None
            return _memref_dims(t, names)
        return tuple(dims_of(t))

    def _symbol(self, name: str) -> SSAValue:
        if name not in self.symbols:
            _fail(self.where, f"size symbol {name} is not an argument")
        return self.symbols[name]

    def _tensor_name(self, tensor: SSAValue) -> str:
        owner = tensor.owner
        if isinstance(owner, te.ComputeOp | te.ExternOp):
            return owner.tensor_name.data
        if isinstance(tensor, BlockArgument) and tensor.block is self.block:
            attrs = self.function.arg_attrs
            if attrs is not None and tensor.index < len(attrs.data):
                name = attrs.data[tensor.index].data.get("ember.name")
                if isinstance(name, StringAttr):
                    return name.data
            return tensor.name_hint or f"arg{tensor.index}"
        return tensor.name_hint or "?"

    def _error_cell(self) -> SSAValue:
        """The bounds-checked mode's error cell, 0 (no failure) on entry."""
        if self.error_cell is None:
            cell = loop.AllocOp(MemRefType(i32, [1]), "local")
            cell.buffer.name_hint = "bounds_error"
            self._prologue(cell)
            zero = self._const(0, i32, "c0_i32")
            init = memref.StoreOp.get(zero, cell.buffer, [self._index(0)])
            last = self.last_const or self.last_alloc
            assert last is not None
            Rewriter.insert_op(init, InsertPoint.after(last))
            self.error_cell = cell.buffer
        return self.error_cell

    def _return_failure(self, checks: BoundsChecks, ret: func.ReturnOp) -> None:
        """End the function returning the failed check's message, null if none."""
        if any(isinstance(op, te.ExternOp) for op in self.block.ops):
            _fail(
                self.where,
                "bounds-check: a function with te.extern stages cannot be "
                "checked (its host calls already return their own failures)",
            )
        name = self.function.sym_name.data
        module = self.function.parent_op()
        assert isinstance(module, ModuleOp)
        at = InsertPoint.before(ret)
        site = memref.LoadOp.get(self._error_cell(), [self._index(0)])
        message = llvm.ZeroOp(result_types=[PTR])
        Rewriter.insert_op([site, message], at)
        for k, text in enumerate(checks.messages, 1):
            symbol = define_string(
                module, f"__ember_bounds.{name}.{k}", f"{name}: {text}"
            )
            address = llvm.AddressOfOp(symbol, PTR)
            hit = arith.CmpiOp(site.res, self._const(k, i32, "site"), "eq")
            message = SelectOp(hit, address.result, message.results[0])
            Rewriter.insert_op([address, hit, message], at)
        Rewriter.replace_op(ret, func.ReturnOp(message.results[0]))
        self.function.function_type = FunctionType.from_lists(
            self.block.arg_types, [PTR]
        )
        self.function.attributes[FALLIBLE] = UnitAttr()

    def _apply_schedule(self, ret: func.ReturnOp) -> Schedule:
        found = [op for op in self.block.ops if isinstance(op, ScheduleOp)]
        if len(found) > 1:
            _fail(self.where, f"expected at most one te.schedule, got {len(found)}")
        outputs = {
            v for v in ret.arguments if isinstance(v.owner, te.ComputeOp | te.ExternOp)
        }
        schedule = Schedule(self.function, self.block, outputs)
        if found:
            schedule.apply(found[0])
            Rewriter.erase_op(found[0])
        return schedule

    def _stage_buffer(self, stage: Stage) -> SSAValue:
        out = self.outputs.get(stage.op)
        if out is not None:
            return out
        if self.scratch and _is_scratch(stage):
            t = self._buffer_type(stage.op.output_type, stage.name)
            arg = self.block.insert_arg(t, len(self.block.args))
            arg.name_hint = ssa_name(stage.name)
            self.scratch_attrs.append(
                DictionaryAttr(
                    {
                        "ember.name": StringAttr(stage.name),
                        "ember.output": UnitAttr(),
                        "ember.scratch": UnitAttr(),
                        **dims_attr(stage.op.output_type),
                    }
                )
            )
            return arg
        t = stage.op.output_type
        if dims_attr(t):
            return self._dynamic_alloc(stage)
        alloc = loop.AllocOp(self._buffer_type(t, stage.name), stage.scope)
        alloc.buffer.name_hint = stage.op.result.name_hint
        self._prologue(alloc)
        return alloc.buffer

    def _dynamic_alloc(self, stage: Stage) -> SSAValue:
        """A heap buffer of a symbolic intermediate at the root: its sizes are
        computed at the entry from the symbols, and it follows them (after the
        allocations and constants of the prologue). `ember.dims` names its
        dims, as a symbolic argument's does, for the passes that outline its
        users."""
        t = stage.op.output_type
        if stage.scope != "global":
            raise ScheduleError(
                f"stage '{stage.name}' of symbolic shape {t} cannot be a "
                f"{stage.scope} buffer: only a global (heap) one has dynamic dims"
            )
        dims = dims_of(t)
        sizes = [self._size(d) for d in dims if isinstance(d, SymExpr)]
        alloc = loop.AllocOp(self._buffer_type(t, stage.name), sizes=sizes)
        alloc.buffer.name_hint = stage.op.result.name_hint
        alloc.attributes.update(dims_attr(t))
        defined = [v.owner for v in sizes if isinstance(v.owner, Operation)]
        last = max(defined, key=self.block.get_operation_index, default=None)
        last = last or self.last_const or self.last_alloc
        Rewriter.insert_op(
            alloc,
            InsertPoint.after(last) if last else InsertPoint.at_start(self.block),
        )
        return alloc.buffer

    def _convert_signature(self, ret: func.ReturnOp) -> list[tuple[SSAValue, SSAValue]]:
        """Retype tensor arguments to memrefs, append the out-parameters; return the
        (tensor, out-parameter) pairs that need a copy loop."""
        old_attrs = self.function.arg_attrs
        attrs: list[DictionaryAttr] = []
        for i, arg in enumerate(list(self.block.args)):
            own = dict(old_attrs.data[i].data) if old_attrs is not None else {}
            if arg in self.symbols.values():
                attrs.append(DictionaryAttr(own))
                continue
            name = own.get("ember.name")
            if not isinstance(name, StringAttr):
                name = StringAttr(arg.name_hint or f"arg{i}")
            dims = dims_attr(arg.type)
            attrs.append(DictionaryAttr({**own, "ember.name": name, **dims}))
            if isinstance(arg.type, TensorType | UnrankedTensorType):
                new = Rewriter.replace_value_with_new_type(
                    arg, self._buffer_type(arg.type, f"argument {i}")
                )
                self.buffers[new] = new
        res_attrs = self.function.res_attrs
        copies: list[tuple[SSAValue, SSAValue]] = []
        results = self.function.function_type.outputs.data
        for j, (value, t) in enumerate(zip(ret.arguments, results, strict=True)):
            what = f"result {j}"
            out = self.block.insert_arg(
                self._buffer_type(t, what), len(self.block.args)
            )
            producer = value.owner
            if isinstance(producer, te.ComputeOp | te.ExternOp):
                name = producer.tensor_name
                if producer not in self.outputs:
                    self.outputs[producer] = out
                else:
                    copies.append((value, out))
            elif value in self.buffers:
                assert isinstance(value, BlockArgument)
                name = attrs[value.index].data["ember.name"]
                copies.append((value, out))
            else:
                _fail(self.where, f"{what} is {_origin(value)}")
            assert isinstance(name, StringAttr)
            out.name_hint = ssa_name(name.data)
            own = dict(res_attrs.data[j].data) if res_attrs is not None else {}
            output = {"ember.name": name, "ember.output": UnitAttr()}
            output |= dims_attr(t)
            attrs.append(DictionaryAttr({**own, **output}))
        self.function.function_type = FunctionType.from_lists(self.block.arg_types, [])
        self.function.arg_attrs = ArrayAttr(attrs)
        self.function.res_attrs = None
        return copies

    def _buffer_type(self, t: Attribute, what: str) -> MemRefType:
        if not isinstance(t, TensorType):
            _fail(self.where, f"expected a ranked tensor for {what}, got {t}")
        shape = t.get_shape()
        if any(d < 0 for d in shape):
            try:
                dims_of(t)
            except ShapeError as e:
                _fail(self.where, f"{what}: {e}")
            return MemRefType(t.element_type, shape)
        size = prod(shape) * (element_bytes(t.element_type) or 1)
        if size > MAX_BYTES:
            _fail(
                self.where,
                f"{what} ({t}) has {prod(shape)} elements ({size} bytes); ember's "
                f"limit is {MAX_BYTES} bytes (2**63 - 1: sizes and indices are int64)",
            )
        return MemRefType(t.element_type, shape)

    def _check_scalar(self, op: Operation) -> None:
        """Ops other than te.compute may stay if no tensor reaches them."""
        _reject_te(op, self.where)
        for inner in op.walk():
            self._check_tensors(inner, "in a te function")

    def _check_tensors(self, op: Operation, where: str) -> None:
        for verb, values in (("uses", op.operands), ("produces", op.results)):
            if any(
                v in self.buffers or isinstance(v.type, TensorType | UnrankedTensorType)
                for v in values
            ):
                _fail(
                    self.where,
                    f"'{op.name}' {verb} a tensor {where}; only te.compute, te.read "
                    "and func.return may touch tensors",
                )

    def _const(self, value: float, t: Attribute, name: str) -> SSAValue:
        key = (value, t)
        if key not in self.constants:
            attr = (
                FloatAttr(value, t)  # type: ignore[arg-type]
                if isinstance(t, AnyFloat)
                else IntegerAttr(int(value), t)  # type: ignore[arg-type]
            )
            op = arith.ConstantOp(attr, t)
            op.result.name_hint = name
            self._prologue(op)
            self.constants[key] = op.result
        return self.constants[key]

    def _const_attr(self, attr: Attribute, name: str) -> SSAValue:
        assert isinstance(attr, FloatAttr | IntegerAttr)
        return self._const(attr.value.data, attr.type, name)

    def _index(self, value: int) -> SSAValue:
        return self._const(value, IndexType(), f"c{value}")

    def _nest(
        self,
        extents: tuple[Extent, ...],
        names: list[str | None],
        at: InsertPoint,
    ) -> tuple[list[SSAValue], InsertPoint]:
        """A serial loop nest over `extents` at `at`: its induction variables and the
        insertion point inside the innermost body."""
        ivs: list[SSAValue] = []
        for extent, name in zip(extents, names, strict=True):
            end = loop.YieldOp()
            body = Block([end], arg_types=[IndexType()])
            body.args[0].name_hint = name
            for_op = loop.ForOp(
                self._index(0), self._size(extent), self._index(1), body
            )
            Rewriter.insert_op(for_op, at)
            ivs.append(body.args[0])
            at = InsertPoint.before(end)
        return ivs, at

    def _check_body(self, compute: te.ComputeOp) -> None:
        for inner in compute.body.walk():
            if isinstance(inner, te.ReadOp | te.YieldOp):
                continue
            if inner.dialect_name() == "te":
                _fail(
                    self.where,
                    f"'{inner.name}' inside a te.compute body cannot be lowered",
                )
            self._check_tensors(inner, "in a te.compute body")

    def _copy(self, src: SSAValue, dst: SSAValue, before: Operation) -> None:
        assert isinstance(dst, BlockArgument) and isinstance(dst.type, MemRefType)
        attrs = self.function.arg_attrs
        dims = attrs.data[dst.index].data.get(DIMS_ATTR) if attrs is not None else None
        shape = _memref_dims(dst.type, dims)
        names: list[str | None] = [f"i{d}" for d in range(len(shape))]
        ivs, at = self._nest(shape, names, InsertPoint.before(before))
        load = memref.LoadOp.get(src, ivs)
        Rewriter.insert_op([load, memref.StoreOp.get(load.res, dst, ivs)], at)


def _origin(value: SSAValue) -> str:
    if isinstance(value, BlockArgument):
        where = "a block argument"
    else:
        where = f"'{value.owner.name}'"  # type: ignore[union-attr]
    return f"defined by {where}; expected a function argument or a te.compute result"


def dims_attr(t: Attribute) -> dict[str, Attribute]:
    """`ember.dims` for a buffer of symbolic tensor type `t`, else nothing."""
    names = getattr(t, "encoding", None)
    if not isinstance(t, TensorType) or not isinstance(names, ArrayAttr):
        return {}
    if all(d >= 0 for d in t.get_shape()):
        return {}
    return {DIMS_ATTR: names}


def _memref_dims(t: MemRefType, names: Attribute | None) -> tuple[Extent, ...]:
    """The dims of a buffer argument of type `t` and `ember.dims` `names`."""
    if not isinstance(names, ArrayAttr):
        return tuple(t.get_shape())
    return tuple(dims_of(TensorType(t.element_type, t.get_shape(), names)))
