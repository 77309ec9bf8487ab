"""`convert-graph-to-te`: every fusion group becomes a te kernel and a call of it.

Each `graph.fused` group (or lone compute op) of a graph function is lowered by
the strategy registered for its op class (`ember.strategy`) for the module's
target (`ember.target`, the host by default) into a topi kernel: a te function
with its schedule, added to the module as `func.func private
@ember_<kind>_<hash>` (the hash is of its te IR, so structurally identical
layers share one function), and the group becomes a `graph.call_kernel` of it.

    %y = graph.fused "fused_conv2d_relu_0" (%x, %w) ({ ... })
           : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
becomes
    func.func private @ember_conv2d_relu_3f2a...(%data0: tensor<1x3x8x8xf32>,
        %conv2d.weight: tensor<...>) -> tensor<1x4x6x6xf32> { te.compute ... }
    ...
    %p = graph.param "w.packed.3f2a..." : tensor<...>
    %y = graph.call_kernel @ember_conv2d_relu_3f2a...(%x, %p) : (...) -> ...

- A weight the kernel takes in another layout (packed convolution or dense
  weights) becomes a new `graph.param "<name>.packed.<hash>"` of that layout;
  with params bound (`ember.passes.bound_params`) its value is computed now.
- A literal a kernel reads as a tensor becomes a param too (`constant<i>`):
  after this pass every weight is a `graph.param`, for `graph-plan-memory`.
- Reshapes and flattens stay graph ops: they are views of their operand.
- A returned value that no kernel computes (an input, a param) or that is
  returned a second time gets a copy kernel, so each result has its own buffer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FusedLoc,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    Signedness,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnknownLoc,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ember.dialects import graph
from ember.dialects.graph_shapes import tensor_of
from ember.passes.graph_mixed_precision import (
    PRECISION_ATTR,
    marked_precision,
    takes_bf16,
)
from ember.passes.pass_context import PassContext
from ember.runtime.shape_expr import planning

ALIASES = (graph.ReshapeOp, graph.FlattenOp)
"""Graph ops that are views of their operand's bytes, never kernels."""

KERNEL_ATTR = "ember.kernel"
"""The unit attribute marking the kernel functions this pass adds."""

LAYOUT_ATTR = "ember.layout"
"""On a `graph.call_kernel` whose result is a blocked activation: its layout,
`NCHW<b>c` (the buffer is (N, C/b, H, W, b))."""

BF16_BITS = IntegerType(16, Signedness.UNSIGNED)
"""The element type of a blocked activation a `precision="bf16"` compilation
stores as bfloat16 (`strategy.plan_bf16`): `ui16`, each the number's bits."""

_observers: list[dict] = []


@contextmanager
def observe_kernels() -> Iterator[dict]:
    """A dict that this pass, while the block runs, fills with each kernel
    function's symbol -> the topi `Kernel` it was lowered from: the tuner
    schedules them again at other knob configs.

        with observe_kernels() as kernels:
            run(module, "convert-graph-to-te")
    """
    seen: dict = {}
    _observers.append(seen)
    try:
        yield seen
    finally:
        _observers.remove(seen)


def is_graph_function(f: func.FuncOp) -> bool:
    """Whether `f` is a model function, not a kernel: it holds graph ops, or
    it holds none at all and returns tensors (a model whose outputs are its
    inputs or constants: an ONNX Identity, Dropout or Squeeze alone, folded
    away on import; its outputs are copied like any other)."""
    if KERNEL_ATTR in f.attributes:
        return False
    if any(op.dialect_name() == "graph" for op in f.walk()):
        return True
    body = list(f.body.block.ops) if f.body.blocks else []
    results = f.function_type.outputs.data
    return (
        len(body) == 1
        and isinstance(body[0], func.ReturnOp)
        and bool(results)
        and all(isinstance(t, TensorType) for t in results)
    )


def provenance(op: Operation) -> LocationAttr:
    """The location of the kernel call made of `op` (a fusion group or a lone
    op): each graph op it computes, the group's result last, named with its
    own location (the ONNX node, and the tensor its result is, where the
    frontend gave them): `loc(fused["graph.conv2d"("conv1"("c1")),
    "graph.relu"("relu1"("r1"))])`. `graph-plan-memory` reads it."""
    ops = [op]
    if isinstance(op, graph.FusedOp):
        body = op.body.block
        result = body.last_op.operands[0].owner if body.last_op else None
        ops = [
            o
            for o in body.ops
            if not isinstance(o, graph.YieldOp | graph.ConstantOp | graph.ParamOp)
            and o is not result
        ]
        ops += [result] if isinstance(result, Operation) else []
    locs = [
        NameLoc(
            StringAttr(o.name),
            NoneAttr() if isinstance(o.location, UnknownLoc) else o.location,
        )
        for o in ops
    ]
    return locs[0] if len(locs) == 1 else FusedLoc(tuple(locs), NoneAttr())


BOUNDS_ATTR = "ember.bounds"
"""The module's upper bounds of its size symbols (`{seq = 512 : i64}`), from
`compile_model(bounds=...)`."""

VARIANT_OF_ATTR = "ember.variant_of"
"""On a variant's kernel function: the kernel it is a variant of (its
schedule is no tuning task of its own)."""

PLANNING_SIZE = 128
"""The size a schedule plans a symbolic extent for when the symbol has no
bound (`shape_expr.planning`): how many threads a loop pays for, whether a
long axis is split into chunks. It decides speed only, never results: loops
over symbolic extents run to the symbols' values, guarded."""


def module_bounds(module: ModuleOp) -> dict[str, int]:
    """The module's symbol bounds (`ember.bounds`), by name."""
    attr = module.attributes.get(BOUNDS_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {
        name: value.value.data
        for name, value in attr.data.items()
        if isinstance(value, IntegerAttr)
    }


def is_alias(op: Operation) -> bool:
    """Whether `op` (or the one op of a fusion group) is a view of its operand."""
    if isinstance(op, graph.FusedOp):
        inner = [o for o in op.body.block.ops if not isinstance(o, graph.YieldOp)]
        return len(inner) == 1 and isinstance(inner[0], ALIASES)
    return isinstance(op, ALIASES)


@dataclass(frozen=True)
class ConvertGraphToTe(ModulePass):
    """Fusion groups to te kernel functions and `graph.call_kernel`s.

    ember-opt model.mlir -p 'ember-graph,convert-graph-to-te'
    ember-opt model.mlir -p 'ember-graph,convert-graph-to-te{precision=bf16}'

    `precision` is that of the products: "float32", or "bf16": convolutions
    of one group, dense layers and matmuls by a weight multiply bfloat16
    roundings of their operands on the target's bfloat16 dot product and sum
    in float32 (`topi.bf16`); refused on a target without one. A layer
    marked `ember.precision` ("float32" or "bf16", as `graph-mixed-precision`
    marks them) takes its mark's precision instead.
    """

    name = "convert-graph-to-te"

    precision: str = "float32"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.backends.llvm.target import MODULE_ATTR, module_target
        from ember.backends.source import DeviceTarget, resolve_target
        from ember.passes.bound_params import bound_params

        attr = op.attributes.get(MODULE_ATTR)
        try:
            if isinstance(attr, StringAttr):
                target = resolve_target(attr.data)
            else:
                target = module_target(op)
        except ValueError as e:
            raise PassFailedException(f"convert-graph-to-te: {e}") from None
        problem = precision_problem(self.precision, target, auto=False)
        problem = problem or _marks_problem(op, target)
        if problem:
            raise PassFailedException(f"convert-graph-to-te: {problem}")
        context = PassContext.current()
        config = {**context.config, "precision": self.precision}
        bound = bound_params()
        functions = [
            f for f in op.ops if isinstance(f, func.FuncOp) and is_graph_function(f)
        ]
        with (
            target.host if isinstance(target, DeviceTarget) else target,
            planning(module_bounds(op), PLANNING_SIZE),
            PassContext(context.opt_level, context.disabled_pass, config),
        ):
            for f in functions:
                _Converter(op, f, target, bound.values if bound else None).run()


PRECISIONS = ("float32", "bf16", "auto")
"""A model's precisions: "auto" marks each layer "float32" or "bf16"
(`graph-mixed-precision`), which a kernel's precision is."""


def precision_problem(precision: str, target, auto: bool = True) -> str:
    """Why `precision` cannot be compiled for `target` ("" if it can): an
    unknown name ("auto" one where not `auto`), or bfloat16 products on a
    target without a bfloat16 dot product, where they would be slower than
    float32's."""
    known = PRECISIONS if auto else PRECISIONS[:2]
    if precision not in known:
        names = " or ".join(repr(p) for p in known)
        return f"expected precision {names}, got {precision!r}"
    if precision == "bf16" and not _has_bf16(target):
        return (
            f"precision 'bf16' needs a CPU with a bfloat16 dot product (x86 "
            f"avx512bf16, aarch64 bf16); target '{target}' has none"
        )
    return ""


def _has_bf16(target) -> bool:
    from ember.backends.llvm.target import Target
    from ember.passes.convert_dot_to_llvm import bf16_instructions

    return isinstance(target, Target) and bool(bf16_instructions(target))


def _marks_problem(module: ModuleOp, target) -> str:
    """Why a layer's `ember.precision` mark cannot be built ("" if every one
    can): a name other than "float32" or "bf16", "bf16" on an op with no
    bfloat16 kernel or for a target without a bfloat16 dot product."""
    for op in module.walk():
        marked = marked_precision(op)
        if marked is None or marked == "float32":
            continue
        if marked != "bf16":
            return (
                f"{op.name}: expected {PRECISION_ATTR} 'float32' or 'bf16', "
                f"got {marked!r}"
            )
        if not takes_bf16(op):
            return f"{op.name} has no bfloat16 kernel ({PRECISION_ATTR} = 'bf16')"
        if not _has_bf16(target):
            return precision_problem("bf16", target)
    return ""


class _Converter:
    def __init__(
        self,
        module: ModuleOp,
        f: func.FuncOp,
        target,
        values: dict[str, np.ndarray] | None,
    ):
        self.module = module
        self.target = target
        self.f = f
        self.block = f.body.block
        self.values = values
        self.kernels = {
            o.sym_name.data
            for o in module.ops
            if isinstance(o, func.FuncOp) and KERNEL_ATTR in o.attributes
        }
        self.params: dict[str, SSAValue] = {}
        self.constants = 0
        self.taken = {
            o.param_name.data for o in f.walk() if isinstance(o, graph.ParamOp)
        }

    def where(self, op: Operation) -> str:
        if isinstance(op, graph.FusedOp):
            return f'graph.fused "{op.group_name.data}"'
        return f"'{op.name}'"

    def fail(self, message: str) -> None:
        raise PassFailedException(
            f"convert-graph-to-te: @{self.f.sym_name.data}: {message}"
        )

    # -- values known now

    def constant_of(self, value: SSAValue) -> np.ndarray | None:
        """A literal's value, or a param's when params are bound."""
        owner = value.owner
        if isinstance(owner, graph.ConstantOp):
            return owner.numpy()
        if isinstance(owner, graph.ParamOp) and self.values is not None:
            name = owner.param_name.data
            if name not in self.values:
                self.fail(f'graph.param "{name}": no value among the bound params')
            return np.asarray(self.values[name])
        return None

    # -- the walk

    def run(self) -> None:
        from ember.backends.llvm.target import Target
        from ember.strategy import lower_group, plan_bf16, plan_blocks

        ops = list(self.block.ops)
        cpu = isinstance(self.target, Target)
        planned = plan_blocks(ops, self.target) if cpu else {}
        bf16 = plan_bf16(ops, planned)
        blocked: dict[SSAValue, int] = {}
        for op in ops:
            if isinstance(op, graph.ParamOp | graph.ConstantOp | func.ReturnOp):
                continue
            if isinstance(op, graph.CallKernelOp):
                continue
            if is_alias(op):
                self._unwrap_alias(op)
                continue
            if op.dialect_name() != "graph":
                self.fail(f"expected graph ops, got '{op.name}'")
            out_block = planned.get(op.results[0]) if op.results else None
            bits = bool(op.results) and op.results[0] in bf16
            try:
                spec = lower_group(
                    op, self.constant_of, self.target, blocked.get, out_block, bits
                )
            except ValueError as e:
                self.fail(str(e))
                raise AssertionError from None  # fail raised
            result = op.results[0].type
            assert isinstance(result, TensorType)
            if out_block is not None:  # the buffer holds (N, C/b, H, W, b)
                element = BF16_BITS if bits else result.element_type
                result = tensor_of(element, spec.kernel.output.shape)
            call = self._call(spec.kernel, spec.operands, spec.kind, op, result)
            call.location = provenance(op)
            if out_block is not None:
                blocked[call.result] = out_block
                call.attributes[LAYOUT_ATTR] = StringAttr(f"NCHW{out_block}c")
            op.results[0].replace_all_uses_with(call.result)
            self.block.erase_op(op)
        self._copy_outputs()
        self._literals_to_params()
        for op in reversed(list(self.block.ops)):  # what kernels inlined or packed
            if isinstance(op, graph.ParamOp | graph.ConstantOp) and not op.result.uses:
                self.block.erase_op(op)

    def _unwrap_alias(self, op: Operation) -> None:
        """A fused view becomes the plain view op on the group's operand."""
        if not isinstance(op, graph.FusedOp):
            return
        inner = next(o for o in op.body.block.ops if not isinstance(o, graph.YieldOp))
        view = inner.clone()
        for i, operand in enumerate(inner.operands):
            arg = op.body.block.args.index(operand)  # type: ignore[arg-type]
            view.operands[i] = op.inputs[arg]
        self.block.insert_op_before(view, op)
        op.results[0].replace_all_uses_with(view.results[0])
        self.block.erase_op(op)

    def _call(
        self,
        kernel,
        operands: list[SSAValue],
        kind: str,
        at: Operation,
        result: TensorType,
    ) -> graph.CallKernelOp:
        """A call of the kernel before `at`, giving the graph's `result` type
        (unsigned integers are `ui<N>` there and signless in the kernel)."""
        symbol, _ = self._kernel_function(kernel, kind)
        variants = self._variants(kernel, kind, symbol)
        args: list[SSAValue] = []
        for placeholder, value in zip(kernel.placeholders, operands, strict=True):
            if (
                isinstance(value.owner, graph.ConstantOp)
                and value.owner.parent_block() is not self.block
            ):
                # a literal inside the group that the kernel reads as a tensor
                literal = value.owner.clone()
                self.block.insert_op_before(literal, at)
                value = literal.result
            if placeholder.name not in kernel.weight_transforms:
                args.append(value)
                continue
            args.append(self._packed(kernel, placeholder, value, symbol, at))
        call = graph.CallKernelOp(symbol, args, result)
        if variants:
            call.attributes[graph.VARIANTS_ATTR] = variants
        self.block.insert_op_before(call, at)
        return call

    def _kernel_function(self, kernel, kind: str) -> tuple[str, func.FuncOp]:
        from ember.backends.kernels import HASHED_NAME
        from ember.te.lowering import lower

        te_module = lower(kernel.schedule(), kernel.args, HASHED_NAME)
        digest = hashlib.sha256(str(te_module).encode()).hexdigest()[:16]
        symbol = f"ember_{kind or 'kernel'}_{digest}"
        for seen in _observers:
            seen.setdefault(symbol, kernel)
        self._insert(te_module, symbol, kind)
        found = next(
            o
            for o in self.module.ops
            if isinstance(o, func.FuncOp) and o.sym_name.data == symbol
        )
        return symbol, found

    def _insert(
        self, te_module: ModuleOp, symbol: str, kind: str, variant_of: str = ""
    ) -> None:
        """The kernel function of `te_module` into the module as `symbol`
        (once)."""
        from ember.backends.kernels import HASHED_NAME

        if symbol in self.kernels:
            return
        for o in list(te_module.ops):
            o.detach()
            if isinstance(o, func.FuncOp) and o.sym_name.data == HASHED_NAME:
                o.sym_name = StringAttr(symbol)
                o.sym_visibility = StringAttr("private")
                o.attributes[KERNEL_ATTR] = StringAttr(kind)
                if variant_of:
                    o.attributes[VARIANT_OF_ATTR] = StringAttr(variant_of)
            self.module.body.block.insert_op_before(o, self.f)
        self.kernels.add(symbol)

    def _variants(self, kernel, kind: str, symbol: str) -> ArrayAttr | None:
        """The functions of the kernel's size-class variants (`Kernel.variants`:
        the same computation scheduled for `size == equals`), as the call's
        `ember.variants`: which to call when."""
        from ember.backends.kernels import HASHED_NAME
        from ember.te.lowering import lower

        entries = []
        for i, variant in enumerate(kernel.variants):
            name = f"{symbol}_v{i}"
            self._insert(
                lower(variant.schedule(kernel), kernel.args, HASHED_NAME),
                name,
                kind,
                variant_of=symbol,
            )
            entries.append(
                DictionaryAttr(
                    {
                        "callee": SymbolRefAttr(name),
                        "size": StringAttr(str(variant.size)),
                        "equals": IntegerAttr(variant.equals, i64),
                    }
                )
            )
        return ArrayAttr(entries) if entries else None

    def _packed(
        self, kernel, placeholder, value: SSAValue, symbol: str, at
    ) -> SSAValue:
        """A param holding `value` in the layout `placeholder` takes."""
        owner = value.owner
        if isinstance(owner, graph.ParamOp):
            base = owner.param_name.data
        elif isinstance(owner, graph.ConstantOp):
            # literals have no name: their bytes tell two packed ones apart
            digest = hashlib.sha256(owner.numpy().tobytes()).hexdigest()[:8]
            base = f"constant.{digest}"
        else:
            self.fail(
                f"{self.where(at)}: the kernel's weight '{placeholder.name}' must be "
                "a param or constant (it is packed at compile time), got a value "
                "computed at run time"
            )
            raise AssertionError  # fail raised
        name = f"{base}.packed.{symbol.rsplit('_', 1)[-1][:8]}"
        if name in self.params:
            return self.params[name]
        from ember.te.lowering import tensor_type

        if self.values is not None:
            array = self.constant_of(value)
            assert array is not None
            self.values[name] = kernel.transform(placeholder.name, array)
        return self._param(name, tensor_type(placeholder))

    def _param(self, name: str, t: TensorType) -> SSAValue:
        from ember.passes.graph_fold_constants import unique_name

        if name in self.taken and name not in self.params:
            name = unique_name(name, self.taken)
        self.taken.add(name)
        op = graph.ParamOp(name, t)
        self.block.insert_op_before(op, self.block.first_op)  # type: ignore[arg-type]
        self.params[name] = op.result
        return op.result

    def _copy_outputs(self) -> None:
        """Each returned value gets a buffer of its own, written by a kernel."""
        from ember.dialects.graph_base import dtype_of
        from ember.strategy import copy_kernel

        ret = self.block.last_op
        if not isinstance(ret, func.ReturnOp):
            self.fail("expected the function to end in func.return")
            return
        claimed: set[SSAValue] = set()
        for i, value in enumerate(list(ret.arguments)):
            root = value
            while isinstance(root.owner, ALIASES):
                root = root.owner.operands[0]
            computed = isinstance(root.owner, graph.CallKernelOp)
            if computed and root not in claimed:
                claimed.add(root)
                continue
            t = value.type
            assert isinstance(t, TensorType)
            kernel = copy_kernel(tuple(t.get_shape()), dtype_of(t.element_type))
            call = self._call(kernel, [value], "copy", ret, t)
            ret.operands[i] = call.result
            claimed.add(call.result)

    def _literals_to_params(self) -> None:
        """Literals kernels read as tensors become params (`constant<i>`)."""
        for op in list(self.block.ops):
            if not isinstance(op, graph.ConstantOp) or not op.result.uses:
                continue
            name = unique_name_for(self.taken, "constant")
            self.taken.add(name)
            if self.values is not None:
                self.values[name] = op.numpy()
            param = graph.ParamOp(name, op.result.type)  # type: ignore[arg-type]
            self.block.insert_op_before(param, op)
            op.result.replace_all_uses_with(param.result)
            self.block.erase_op(op)


def unique_name_for(taken: set[str], base: str) -> str:
    """`base<i>` with the first `i` not in `taken`."""
    i = 0
    while f"{base}{i}" in taken:
        i += 1
    return f"{base}{i}"
