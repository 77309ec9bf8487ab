"""`graph-plan-memory`: a model function becomes `default_run` over one workspace.

Runs after the kernels are loop functions (`convert-te-to-loop{scratch-args=
true}`), or declarations of them, whose signatures say what each call needs:
its operands, its result (`ember.output`), then its scratch buffers
(`ember.scratch`). The graph function (`@main`) of `graph.call_kernel`s, params
and views becomes

    func.func @default_run(%inputs..., %outputs..., %workspace: memref<Nxi8>,
                           %params: memref<Mxi8>)

calling each kernel on `memref.view`s at planned offsets:

- every intermediate gets an offset in the workspace, reused by liveness
  (`ember.passes.memory_plan`); a kernel's scratch buffers live during its call only;
- a result that is a model output is written straight into the output buffer
  (through any reshapes: views are free with bare pointers);
- every param a kernel reads gets an offset in the params blob, in order of
  first use.

The description of the entry (inputs, outputs, sizes, the params layout, and
the call plan: each kernel call in order with its buffers and the graph ops it
computes) goes into the module's `ember.model` attribute, which
`func-packed-abi` puts into the library's metadata; the runtime runs a model
kernel by kernel from the plan (`GraphModule.profile`, `ember debug`). Kernel arguments are marked `llvm.noalias`: the plan never
gives a call overlapping buffers.

    ember-opt model.mlir -p 'ember-graph,convert-graph-to-te,convert-te-to-loop{scratch-args=true},graph-plan-memory'
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    FusedLoc,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    i8,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ember.dialects import graph
from ember.dialects.graph_shapes import dims_of, emit_dim
from ember.passes.bound_params import bound_params
from ember.passes.convert_graph_to_te import (
    LAYOUT_ATTR,
    PLANNING_SIZE,
    module_bounds,
)
from ember.passes.convert_te_to_loop import dims_attr
from ember.passes.func_packed_abi import DIMS_ATTR, SYMBOL_ATTR
from ember.passes.memory_plan import (
    ALIGNMENT,
    TensorLife,
    plan_buffers,
    plan_memory,
    plan_symbolic,
)
from ember.runtime.abi import MODEL_ATTR, MODEL_ENTRY
from ember.runtime.shape_expr import SymExpr, evaluate, sym_max

ENTRY = MODEL_ENTRY


@dataclass(frozen=True)
class GraphPlanMemory(ModulePass):
    """A model function to `default_run` over a planned workspace and params blob.

    ember-opt model.mlir -p '...,te-compile-kernels,graph-plan-memory'

    `embed-params`: whether the library will carry the params blob (the
    metadata's `params_embedded`); params of a text model with none bound
    (`ember.passes.bound_params`) cannot be embedded, and the library then
    expects them from `load_params`.

    `memory`: the backend's rule (`Backend.memory`): "workspace" plans one
    arena, "buffers" a buffer per slot, slots reused by liveness; the entry
    then takes a `memref<Nxi8>` per slot (`slot<i>`) where it took the
    workspace, and the plan places a value as `{"buffer": "slot", "index": i}`.

    `debug`: the call plan also names, for each graph op of a kernel, the
    source nodes and the source tensor its result is (from the calls'
    locations, which the ONNX frontend gives), so that `ember debug` can
    compare each kernel's result with the source model's tensor.
    """

    name = "graph-plan-memory"

    embed_params: bool = True
    debug: bool = False
    memory: str = "workspace"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.passes.convert_graph_to_te import is_graph_function

        if self.memory not in MEMORY_RULES:
            _fail(f"memory={self.memory!r}: expected one of {', '.join(MEMORY_RULES)}")

        models = [
            f for f in op.ops if isinstance(f, func.FuncOp) and is_graph_function(f)
        ]
        if not models:
            return
        if len(models) > 1:
            names = ", ".join(f"@{f.sym_name.data}" for f in models)
            _fail(f"expected one model function, got {names}")
        _Planner(op, models[0], self.embed_params, self.debug, self.memory).run()


MEMORY_RULES = ("workspace", "buffers")
"""The memory rules `graph-plan-memory{memory=...}` takes."""


def _fail(message: str) -> None:
    raise PassFailedException(f"graph-plan-memory: {message}")


def memref_of(t: Attribute) -> MemRefType:
    """The identity-layout memref with `t`'s shape and element type."""
    assert isinstance(t, TensorType | MemRefType)
    return MemRefType(t.element_type, t.get_shape())


def nbytes(t: MemRefType, dims: tuple | None = None) -> int:
    """The bytes a buffer of type `t` takes (of `dims`, where symbolic: then
    an expression over the size symbols)."""
    from ember.passes.convert_memref_to_llvm import element_bytes

    size = element_bytes(t.element_type)
    assert size is not None
    if dims is not None and any(isinstance(d, SymExpr) for d in dims):
        return math.prod(dims) * size  # type: ignore[return-value]
    return int(np.prod(t.get_shape(), dtype=np.int64)) * size


def _buffer_dims(t: MemRefType, attrs: Mapping[str, Attribute]) -> tuple:
    """A kernel argument's dims: its type's, symbolic ones as `ember.dims`
    names them."""
    names = attrs.get(DIMS_ATTR)
    if not isinstance(names, ArrayAttr):
        return tuple(t.get_shape())
    return tuple(dims_of(TensorType(t.element_type, t.get_shape(), names)))


def dtype_name(t: Attribute) -> str:
    """The numpy dtype name of a tensor or memref type's elements."""
    from ember.passes.func_packed_abi import dtype_of

    assert isinstance(t, TensorType | MemRefType)
    name = dtype_of(t.element_type)
    if name is None:
        _fail(f"unsupported element type {t.element_type}")
    assert name is not None
    return name


@dataclass(frozen=True)
class _Scratch:
    step: int
    index: int


@dataclass
class _Call:
    callee: str
    args: list[tuple[SSAValue | _Scratch, MemRefType]]
    op: graph.CallKernelOp
    dims: list[tuple] = field(default_factory=list)
    """Each argument's dims (expressions where symbolic)."""
    symbols: list[str] = field(default_factory=list)
    """The kernel's size symbols, passed after its buffers."""
    variants: list[tuple[str, Any, int]] = field(default_factory=list)
    """(callee, size, equals): the function called instead where the size
    (an expression over the symbols) is `equals` (`ember.variants`)."""


def _signature(kernel: func.FuncOp) -> tuple:
    """A kernel's argument types and attributes, names aside."""
    attrs = kernel.arg_attrs.data if kernel.arg_attrs is not None else ()
    return (
        kernel.function_type,
        [{k: v for k, v in a.data.items() if k != "ember.name"} for a in attrs],
    )


@dataclass
class _Planner:
    module: ModuleOp
    main: func.FuncOp
    embed_params: bool
    debug: bool
    memory: str = "workspace"
    calls: list[_Call] = field(default_factory=list)

    def root(self, value: SSAValue) -> SSAValue:
        while isinstance(value.owner, graph.ReshapeOp | graph.FlattenOp):
            value = value.owner.operands[0]
        return value

    def kernel(self, symbol: str) -> func.FuncOp:
        found = next(
            (
                o
                for o in self.module.ops
                if isinstance(o, func.FuncOp) and o.sym_name.data == symbol
            ),
            None,
        )
        if found is None:
            _fail(f"no kernel function @{symbol}")
        assert found is not None
        return found

    def run(self) -> None:
        block = self.main.body.block
        ret = block.last_op
        if not isinstance(ret, func.ReturnOp):
            _fail(f"@{self.main.sym_name.data}: expected func.return at the end")
        assert isinstance(ret, func.ReturnOp)
        for op in block.ops:
            if isinstance(op, graph.CallKernelOp):
                self._call(op)
            elif not isinstance(
                op, graph.ParamOp | graph.ReshapeOp | graph.FlattenOp | func.ReturnOp
            ):
                _fail(
                    f"'{op.name}' in @{self.main.sym_name.data}: expected only "
                    "graph.call_kernel, graph.param, views and func.return "
                    "(run convert-graph-to-te first)"
                )
        self.outputs = list(ret.arguments)
        self.storage: dict[SSAValue, tuple[str, Any]] = {}
        for i, arg in enumerate(block.args):
            self.storage[arg] = ("input", i)
        for i, value in enumerate(self.outputs):
            root = self.root(value)
            if not isinstance(root.owner, graph.CallKernelOp) or root in self.storage:
                _fail(
                    f"result {i} of @{self.main.sym_name.data} is not computed by a "
                    "kernel of its own (convert-graph-to-te copies such results)"
                )
            self.storage[root] = ("output", i)
        self.within: dict[SSAValue, tuple[SSAValue, int]] = {}
        if self.memory == "workspace":
            self._elide_concats()
        self._plan()
        entry = self._entry()
        block_ops = self.module.body.block
        block_ops.insert_op_before(entry, self.main)
        block_ops.erase_op(self.main)
        if self.memory == "workspace":  # a CPU's kernels, compiled apart
            self._thread_count_global()
        self._mark_noalias()

    def _call(self, op: graph.CallKernelOp) -> None:
        symbol = op.callee.string_value()
        kernel = self.kernel(symbol)
        inputs = list(kernel.function_type.inputs.data)
        attrs = (
            [d.data for d in kernel.arg_attrs.data]
            if kernel.arg_attrs is not None
            else [{}] * len(inputs)
        )
        if any(isinstance(t, TensorType) for t in inputs):
            _fail(
                f"kernel @{symbol} is still a te function: run "
                "convert-te-to-loop{scratch-args=true} first"
            )
        symbols = [
            name.data
            for a in attrs
            if isinstance(name := a.get(SYMBOL_ATTR), StringAttr)
        ]
        scratch = [
            t for t, a in zip(inputs, attrs, strict=True) if "ember.scratch" in a
        ]
        n = len(op.args)
        if len(inputs) != n + 1 + len(scratch) + len(symbols):
            _fail(
                f"kernel @{symbol}: expected {n} operands, the result and "
                f"{len(scratch)} scratch buffers, got {len(inputs)} arguments"
            )
        args: list[tuple[SSAValue | _Scratch, MemRefType]] = []
        for value, t in zip([*op.args, op.result], inputs, strict=False):
            assert isinstance(t, MemRefType)
            args.append((value, t))
        step = len(self.calls)
        args += [
            (_Scratch(step, i), t)  # type: ignore[misc]
            for i, t in enumerate(scratch)
        ]
        dims = [_buffer_dims(t, a) for (_, t), a in zip(args, attrs, strict=False)]
        variants = self._variants(op, kernel)
        self.calls.append(_Call(symbol, args, op, dims, symbols, variants))

    def _variants(
        self, op: graph.CallKernelOp, kernel: func.FuncOp
    ) -> list[tuple[str, Any, int]]:
        """The call's size-class variants (`ember.variants`), each a function of
        the kernel's very signature (the same computation scheduled apart)."""
        found = []
        for callee, size, equals in op.variants():
            other = self.kernel(callee)
            if _signature(other) != _signature(kernel):
                _fail(
                    f"variant @{callee} of kernel @{op.callee.string_value()} "
                    "takes other arguments than it (expected the same "
                    "computation scheduled apart)"
                )
            found.append((callee, size, equals))
        return found

    def _elide_concats(self) -> None:
        """Drop the calls that only concatenate results each of which the
        concatenation alone reads, along an axis after which each is one
        contiguous slab (all dims before it 1: channels at batch 1, NCHW or
        blocked): their producers write into the slabs of its result in
        place (`within`), and no kernel copies them (SqueezeNet's fire
        modules, DenseNet's blocks)."""
        kept = []
        for call in self.calls:
            slabs = self._slabs(call)
            if slabs is None:
                kept.append(call)
                continue
            for value, at in slabs:
                self.within[value] = (call.op.result, at)
        from ember.passes.te_compile_kernels import OBJECTS_ATTR, object_keys

        unused = {c.callee for c in self.calls} - {c.callee for c in kept}
        for symbol in unused:
            self.module.body.block.erase_op(self.kernel(symbol))
        objects = object_keys(self.module)
        if unused & objects.keys():  # compiled apart: not linked either
            self.module.attributes[OBJECTS_ATTR] = DictionaryAttr(
                {k: StringAttr(v) for k, v in objects.items() if k not in unused}
            )
        self.calls = kept

    def _slabs(self, call: _Call) -> list[tuple[SSAValue, int]] | None:
        """(operand, byte offset in the result) of a call that `_elide_concats`
        drops, else None."""
        if [o["op"] for o in ops_of(call.op.location, False)] != ["graph.concat"]:
            return None
        if len(call.args) != len(call.op.args) + 1 or call.symbols or call.variants:
            return None
        *parts, (result, out_t) = call.args
        values = [v for v, _ in parts]
        if (
            not isinstance(result, SSAValue)
            or self._kind(result)[0] != "work"
            or len(set(values)) < len(values)
        ):
            return None
        shape = list(out_t.get_shape())
        if any(d < 0 for _, t in parts for d in t.get_shape()) or min(shape) < 0:
            return None
        axis = next(
            (
                a
                for a in range(len(shape))
                if all(
                    list(t.get_shape())[:a] + list(t.get_shape())[a + 1 :]
                    == shape[:a] + shape[a + 1 :]
                    for _, t in parts
                )
                and sum(t.get_shape()[a] for _, t in parts) == shape[a]
            ),
            None,
        )
        if axis is None or math.prod(shape[:axis]) != 1:
            return None
        slabs, at = [], 0
        for value, t in parts:
            if not (
                isinstance(value, SSAValue)
                and isinstance(value.owner, graph.CallKernelOp)
                and value.has_one_use()
                and value not in self.storage
                and at % ALIGNMENT == 0
            ):
                return None
            slabs.append((value, at))
            at += nbytes(t)
        return slabs

    def _base(self, value: SSAValue) -> tuple[SSAValue, int]:
        """The root of `value`'s storage and its byte offset there: a slab
        of a concatenation's result (`within`), else its own."""
        root, extra = self.root(value), 0
        while root in self.within:
            outer, at = self.within[root]
            root, extra = self.root(outer), extra + at
        return root, extra

    def _kind(self, value: SSAValue) -> tuple[str, Any]:
        root = self._base(value)[0]
        if root in self.storage:
            return self.storage[root]
        if isinstance(root.owner, graph.ParamOp):
            return ("param", root.owner.param_name.data)
        return ("work", root)

    def _plan(self) -> None:
        lives: dict[SSAValue | _Scratch, list[int]] = {}
        sizes: dict[SSAValue | _Scratch, Any] = {}
        self.layout: dict[str, dict] = {}
        offset = 0
        for step, call in enumerate(self.calls):
            for (value, t), dims in zip(call.args, call.dims, strict=True):
                if isinstance(value, _Scratch):
                    lives[value], sizes[value] = [step, step], nbytes(t, dims)
                    continue
                kind, key = self._kind(value)
                if kind == "work":
                    span = lives.setdefault(key, [step, step])
                    span[0], span[1] = min(span[0], step), max(span[1], step)
                    sizes[key] = sym_max(sizes.get(key, 0), nbytes(t, dims))
                elif kind == "param" and key not in self.layout:
                    root_type = self.root(value).type
                    assert isinstance(root_type, TensorType)
                    self.layout[key] = {
                        "offset": offset,
                        "shape": list(root_type.get_shape()),
                        "dtype": dtype_name(root_type),
                    }
                    size = max(nbytes(memref_of(root_type)), 1)
                    offset += -(-size // ALIGNMENT) * ALIGNMENT
        self.params_bytes = max(offset, ALIGNMENT)
        names = {key: f"t{i}" for i, key in enumerate(lives)}
        self.symbolic = any(isinstance(size, SymExpr) for size in sizes.values())
        self.symbolic |= any(
            isinstance(d, SymExpr) for a in self.main.args for d in dims_of(a.type)
        )
        if self.symbolic:
            self._plan_symbolic(lives, sizes, names)
            return
        tensors = [
            TensorLife(names[k], sizes[k], lives[k][0], lives[k][1]) for k in lives
        ]
        if self.memory == "buffers":
            slots = plan_buffers(tensors)
            self.slot_of = {k: slots.slots[names[k]] for k in lives}
            self.slot_bytes = slots.sizes
            self.offsets = dict.fromkeys(lives, 0)
            self.workspace_bytes = sum(slots.sizes)
            self.intermediate_bytes = slots.total_bytes
            return
        plan = plan_memory(tensors)
        self.slot_of = dict.fromkeys(lives, 0)
        self.offsets = {k: plan.offsets[names[k]] for k in lives}
        self.workspace_bytes = max(plan.workspace_bytes, ALIGNMENT)
        self.slot_bytes = [self.workspace_bytes]
        self.intermediate_bytes = plan.total_bytes

    def _plan_symbolic(self, lives: dict, sizes: dict, names: dict) -> None:
        """The workspace over symbolic sizes: planned once at the bounds when
        every symbol has one (offsets and size then ints), else offsets and
        size as expressions (`plan_symbolic`)."""
        if self.memory != "workspace":
            _fail(
                "a model with symbolic shapes plans one workspace; this "
                "target's memory rule (buffers) needs fixed sizes: give the "
                "inputs' shapes"
            )
        bounds = module_bounds(self.module)
        used = set().union(
            *(s.symbols() for s in sizes.values() if isinstance(s, SymExpr))
        )
        self.slot_of = dict.fromkeys(lives, 0)
        if used and used <= bounds.keys():
            tensors = [
                TensorLife(names[k], evaluate(sizes[k], bounds), *lives[k])
                for k in lives
            ]
            plan = plan_memory(tensors)
            self.offsets = {k: plan.offsets[names[k]] for k in lives}
            self.workspace_bytes = max(plan.workspace_bytes, ALIGNMENT)
            self.intermediate_bytes = plan.total_bytes
        else:
            representative = {n: bounds.get(n, PLANNING_SIZE) for n in used}
            symbolic = plan_symbolic(
                [(names[k], sizes[k], *lives[k]) for k in lives], representative
            )
            self.offsets = {k: symbolic.offsets[names[k]] for k in lives}
            self.workspace_bytes = symbolic.workspace_bytes
            self.intermediate_bytes = symbolic.total_bytes
        self.slot_bytes = [self.workspace_bytes]

    def _symbols(self) -> list[str]:
        """The model's size symbols, in order of first appearance in its
        inputs' dims (each is some input's dim by itself)."""
        found: dict[str, None] = {}
        for a in self.main.args:
            for d in dims_of(a.type):
                if isinstance(d, SymExpr):
                    found.update(dict.fromkeys(sorted(d.symbols())))
        return list(found)

    def _entry(self) -> func.FuncOp:
        main = self.main
        inputs = list(main.body.block.args)
        in_names = io_names(main.arg_attrs, len(inputs), "input")
        out_names = io_names(main.res_attrs, len(self.outputs), "output")
        symbols = self._symbols() if self.symbolic else []
        types = [
            *(memref_of(v.type) for v in inputs),
            *(memref_of(v.type) for v in self.outputs),
            *(
                MemRefType(i8, [n if isinstance(n, int) else DYNAMIC_INDEX])
                for n in self.slot_bytes
            ),
            MemRefType(i8, [self.params_bytes]),
            *([IndexType()] * len(symbols)),
        ]
        block = Block(arg_types=types)
        args = list(block.args)
        n_io = len(inputs) + len(self.outputs)
        n_buffers = len(types) - len(symbols)
        slots, params = args[n_io : n_buffers - 1], args[n_buffers - 1]
        size_of = dict(zip(symbols, args[n_buffers:], strict=True))
        for name, arg in size_of.items():
            arg.name_hint = name
        ops: list[Operation] = []
        constants: dict[Any, SSAValue] = {}

        def index(value) -> SSAValue:
            """An int or expression over the symbols, as an index value."""
            if value not in constants:

                def constant(k: int) -> SSAValue:
                    c = arith.ConstantOp(IntegerAttr(k, IndexType()))
                    ops.append(c)
                    return c.result

                def add(op: Operation) -> SSAValue:
                    ops.append(op)
                    return op.results[0]

                constants[value] = emit_dim(value, size_of.__getitem__, constant, add)
            return constants[value]

        def dispatch(call: _Call, operands: list[SSAValue]) -> list[Operation]:
            """The call of the kernel, or of the variant whose size class holds
            (`scf.if` on the size, the default last)."""
            out: list[Operation] = [func.CallOp(call.callee, operands, [])]
            for callee, size, equals in reversed(call.variants):
                test = arith.CmpiOp(index(size), index(equals), "eq")
                then = Block([func.CallOp(callee, operands, []), scf.YieldOp()])
                other = Block([*out, scf.YieldOp()])
                out = [test, scf.IfOp(test.result, [], Region(then), Region(other))]
            return out

        def view(buffer: SSAValue, at, t: MemRefType, dims=()) -> SSAValue:
            sizes = [index(d) for d in dims if isinstance(d, SymExpr)]
            v = memref.ViewOp(buffer, index(at), sizes, t)
            ops.append(v)
            return v.result

        def cast(value: BlockArgument, t: MemRefType) -> SSAValue:
            if value.type == t:
                return value
            # The same bytes seen with another shape (a view of an input or
            # output): free with bare pointers; the casts reconcile away.
            c = UnrealizedConversionCastOp.get([value], [t])
            ops.append(c)
            return c.results[0]

        def buffer(value: SSAValue | _Scratch, t: MemRefType, dims) -> SSAValue:
            if isinstance(value, _Scratch):
                return view(slots[self.slot_of[value]], self.offsets[value], t, dims)
            kind, key = self._kind(value)
            if kind == "input":
                return cast(args[key], t)
            if kind == "output":
                return cast(args[len(inputs) + key], t)
            if kind == "param":
                return view(params, self.layout[key]["offset"], t)
            at = self.offsets[key] + self._base(value)[1]
            return view(slots[self.slot_of[key]], at, t, dims)

        for call in self.calls:
            operands = [
                buffer(v, t, d) for (v, t), d in zip(call.args, call.dims, strict=True)
            ]
            operands += [size_of[name] for name in call.symbols]
            ops.extend(dispatch(call, operands))
        ops.append(func.ReturnOp())
        block.add_ops(ops)
        entry = func.FuncOp(ENTRY, FunctionType.from_lists(types, []), Region(block))
        entry.arg_attrs = ArrayAttr(
            [
                *(
                    DictionaryAttr({"ember.name": StringAttr(n), **dims_attr(v.type)})
                    for n, v in zip(in_names, inputs, strict=True)
                ),
                *(
                    DictionaryAttr(
                        {
                            "ember.name": StringAttr(n),
                            "ember.output": UnitAttr(),
                            **dims_attr(v.type),
                        }
                    )
                    for n, v in zip(out_names, self.outputs, strict=True)
                ),
                *(
                    DictionaryAttr(
                        {"ember.name": StringAttr(name), "ember.output": UnitAttr()}
                        | _size_dims(size)
                    )
                    for name, size in zip(
                        self._slot_names(), self.slot_bytes, strict=True
                    )
                ),
                DictionaryAttr({"ember.name": StringAttr("params")}),
                *(DictionaryAttr({SYMBOL_ATTR: StringAttr(n)}) for n in symbols),
            ]
        )
        model = {
            "inputs": [
                _describe(n, v.type) for n, v in zip(in_names, inputs, strict=True)
            ],
            "outputs": [
                _describe(n, v.type)
                for n, v in zip(out_names, self.outputs, strict=True)
            ],
            "workspace_bytes": _json_dim(self.workspace_bytes),
            "params_bytes": self.params_bytes,
            "params": self.layout,
            # values exist to embed only where params are bound (or none needed)
            "params_embedded": self.embed_params
            and (bound_params() is not None or not self.layout),
            "intermediate_bytes": self.intermediate_bytes,
            "calls": [self._plan_entry(c) for c in self.calls],
        }
        if self.memory == "buffers":
            model["slots"] = self.slot_bytes
        bounds = module_bounds(self.module)
        if bounds:
            model["bounds"] = bounds
        self.module.attributes[MODEL_ATTR] = StringAttr(json.dumps(model))
        return entry

    def _plan_entry(self, call: _Call) -> dict:
        """A kernel call as the runtime runs it alone: its symbol, its
        arguments' places (`result` is the index of its result; scratch
        buffers follow it; offsets and dims may be expressions), the size
        symbols it takes after them, the graph ops it computes, and its
        result's layout when blocked."""
        entry: dict[str, Any] = {
            "kernel": call.callee,
            "args": [
                self._place(v, t, d)
                for (v, t), d in zip(call.args, call.dims, strict=True)
            ],
            "result": len(call.op.args),
            "ops": ops_of(call.op.location, self.debug),
        }
        if call.symbols:  # passed after the buffers, as the entry does
            entry["symbols"] = list(call.symbols)
        layout = call.op.attributes.get(LAYOUT_ATTR)
        if isinstance(layout, StringAttr):
            entry["layout"] = layout.data
        return entry

    def _slot_names(self) -> list[str]:
        if self.memory == "buffers":
            return [f"slot{i}" for i in range(len(self.slot_bytes))]
        return ["workspace"]

    def _place(self, value: SSAValue | _Scratch, t: MemRefType, dims) -> dict:
        kind, key = (
            ("work", value) if isinstance(value, _Scratch) else self._kind(value)
        )
        if kind in ("input", "output"):
            where: dict[str, Any] = {"buffer": kind, "index": key, "offset": 0}
        elif kind == "param":
            assert isinstance(key, str)  # a param's name
            where = {"buffer": "params", "offset": self.layout[key]["offset"]}
            where["name"] = key
        elif self.memory == "buffers":
            where = {"buffer": "slot", "index": self.slot_of[key], "offset": 0}
        else:
            at = self.offsets[key]
            if not isinstance(value, _Scratch):
                at = at + self._base(value)[1]
            where = {"buffer": "workspace", "offset": _json_dim(at)}
        shape = [_json_dim(d) for d in dims]
        return {**where, "shape": shape, "dtype": dtype_name(t)}

    def _thread_count_global(self) -> None:
        """The model defines the thread count its kernels' parallel loops read
        (kernels compiled apart declare it)."""
        from ember.passes.loop_outline_parallel import define_thread_count

        define_thread_count(self.module, GraphPlanMemory.name)

    def _mark_noalias(self) -> None:
        for symbol in {c.callee for c in self.calls}:
            kernel = self.kernel(symbol)
            if kernel.is_declaration:
                continue
            types = kernel.function_type.inputs.data
            old = (
                kernel.arg_attrs.data
                if kernel.arg_attrs is not None
                else [DictionaryAttr({})] * len(types)
            )
            kernel.arg_attrs = ArrayAttr(
                [
                    DictionaryAttr({**d.data, "llvm.noalias": UnitAttr()})
                    if isinstance(t, MemRefType)
                    else d
                    for d, t in zip(old, types, strict=True)
                ]
            )


def ops_of(location: Attribute, sources: bool) -> list[dict]:
    """The graph ops a kernel call computes, from its location (see
    `convert_graph_to_te.provenance`): `{"op"}` each, and with `sources` the
    `"nodes"` it came from and the `"tensor"` its result is, where known."""
    ops = []
    for loc in _parts(location) or (location,):
        if not isinstance(loc, NameLoc):
            continue
        entry: dict[str, Any] = {"op": loc.desc.data}
        if sources:
            nodes, tensor = _sources(loc.location)
            if nodes:
                entry["nodes"] = nodes
            if tensor is not None:
                entry["tensor"] = tensor
        ops.append(entry)
    return ops


def _sources(loc: Attribute) -> tuple[list[str], str | None]:
    """The node names of a graph op's location, `"node"("tensor")` or a
    fused list of them, and the tensor its result is (the last one named)."""
    if isinstance(loc, FusedLoc):
        nodes, tensor = [], None
        for inner in _parts(loc):
            more, named = _sources(inner)
            nodes += more
            tensor = named if named is not None else tensor
        return nodes, tensor
    if not isinstance(loc, NameLoc):
        return [], None
    child = loc.location
    return [loc.desc.data], child.desc.data if isinstance(child, NameLoc) else None


def _parts(loc: Attribute) -> tuple[Attribute, ...]:
    """The locations a fused location joins (none for any other)."""
    if isinstance(loc, FusedLoc) and isinstance(loc.locations, ArrayAttr):
        return loc.locations.data
    return ()


def _describe(name: str, t: Attribute) -> dict:
    assert isinstance(t, TensorType)
    shape = [_json_dim(d) for d in dims_of(t)]
    return {"name": name, "shape": shape, "dtype": dtype_name(t)}


def _json_dim(value) -> int | str:
    """A size in the metadata: an int, or an expression's text."""
    return value if isinstance(value, int) else str(value)


def _size_dims(size) -> dict[str, Attribute]:
    """`ember.dims` of a `memref<?xi8>` workspace of symbolic `size`."""
    if isinstance(size, int):
        return {}
    return {DIMS_ATTR: ArrayAttr([StringAttr(str(size))])}


def io_names(attrs: ArrayAttr | None, n: int, prefix: str) -> list[str]:
    """The `ember.name`s of a function's arguments or results (`attrs`), or
    `<prefix><i>` where one has none."""
    dicts = attrs.data if attrs is not None else [DictionaryAttr({})] * n
    names = []
    for i, d in enumerate(dicts):
        assert isinstance(d, DictionaryAttr)
        name = d.data.get("ember.name")
        names.append(name.data if isinstance(name, StringAttr) else f"{prefix}{i}")
    return names


__all__ = [
    "ENTRY",
    "MODEL_ATTR",
    "GraphPlanMemory",
    "dtype_name",
    "io_names",
    "memref_of",
    "nbytes",
    "ops_of",
]
