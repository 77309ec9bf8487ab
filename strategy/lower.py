"""Lowering a graph group to a topi kernel through the registered strategies.

A `graph.fused` group (or a lone op, a group of one) lowers to one kernel:

- **anchored**: an anchor then elementwise ops on its result; their other
  operands (a bias, batch-norm scale and shift after folding, a residual) are
  read at the output indices, broadcast numpy-style;
- **injective**: elementwise and injective ops composed on placeholders, made
  one loop nest by `topi.elementwise.injective`.

Single-element constants become literals. Placeholders are named by position
(`data0`, `data1`, ...) and kernels by op kind, so structurally identical layers
give identical te IR, which `convert-graph-to-te` shares and the compile cache
compiles once.

    spec = lower_group(fused_op, constant_of, target)
    spec.kernel       # topi.Kernel: output, placeholders, weight transforms
    spec.operands     # the graph value each placeholder reads, in call order
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from ember import te
from ember.dialects import graph
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_shapes import Shape, dims_of
from ember.strategy.registry import (
    ANCHORS,
    DTYPES,
    SCALARS,
    TENSORS,
    StrategyError,
    Value,
    as_expr,
    registered,
)
from ember.topi import elementwise
from ember.topi.elementwise import broadcast_read, broadcast_shape
from ember.topi.gpu import schedule_gpu

if TYPE_CHECKING:
    from ember.backends.llvm import Target
    from ember.backends.source import DeviceTarget
    from ember.topi.kernel import Epilogue, Kernel

ConstantOf = Callable[[SSAValue], np.ndarray | None]
"""The value of a graph value known at compile time (a param or constant), or
None; the strategy inlines single-element ones."""

BlockOf = Callable[[SSAValue], int | None] | None
"""The channel block of a graph value held as a blocked activation,
(N, C/b, H, W, b), or None for one in its own (NCHW) layout."""


def blocked_view(t: te.Tensor) -> te.Tensor:
    """The NCHW tensor a blocked activation `t` (N, C/b, H, W, b) holds, as a
    stage to inline: epilogues read it at NCHW indices."""
    n, blocks, h, w, b = t.shape
    return te.compute(
        (n, blocks * b, h, w),
        lambda i, c, y, x: t[i, c // b, y, x, c % b],
        name=f"{t.name}.nchw",
    )


@dataclass
class KernelSpec:
    """A kernel for a group and the graph values its placeholders read.

    Attributes:
        kernel: the topi kernel (placeholders in call order, then the output).
        operands: for each placeholder, the graph value it reads (a value
            outside the group: an operand of the `graph.fused` op).
        kind: a short name for the kernel's symbol ("conv2d_add_relu").
    """

    kernel: Kernel
    operands: list[SSAValue]
    kind: str = ""


def _shape(value: SSAValue) -> Shape:
    """`value`'s dims, symbolic ones as expressions over the size symbols
    (typed for ints, as the shape rules are: `graph_shapes.Shape`)."""
    t = value.type
    assert isinstance(t, TensorType)
    return dims_of(t)


def _dtype(value: SSAValue) -> str:
    t = value.type
    assert isinstance(t, TensorType)
    return dtype_of(t.element_type)


def _check_dtypes(label: str, op: Operation) -> None:
    """Refuse `op` on a dtype its registered kernel does not compute."""
    allowed = DTYPES.get(type(op), ("float32",))
    for value in (*op.operands, *op.results):
        try:
            dtype = _dtype(value)
        except ValueError as e:
            raise StrategyError(f"{label}: '{op.name}': {e}") from None
        if dtype not in allowed:
            raise StrategyError(
                f"{label}: no {dtype} kernel for '{op.name}' (its strategy "
                f"computes {', '.join(allowed)})"
            )


def _short(op: Operation) -> str:
    return op.name.removeprefix("graph.")


def is_elementwise(op: Operation) -> bool:
    """Whether `op` has a scalar form (it can join an epilogue)."""
    registered()
    return type(op) in SCALARS


def _scalar(op: Operation, args: list[Value]) -> te.Expr:
    """The op's scalar form on `args`, float16 operands computed in float32."""
    args = [
        a.astype("float32") if isinstance(a, te.Expr) and a.dtype == "float16" else a
        for a in args
    ]
    return as_expr(SCALARS[type(op)](op, args))


def _exact(t: te.Tensor | te.Expr | float, value: SSAValue) -> Any:
    """`t` in `value`'s dtype: a float16 value a scalar form kept in float32
    rounds here."""
    dtype = _dtype(value)
    if not isinstance(t, te.Tensor) or t.dtype == dtype:
        return t
    return te.compute(t.shape, lambda *i: t[i].astype(dtype), name="round")


class _Reads:
    """The placeholders of a kernel for the outside values a group reads, one
    per distinct value in order of first use; single-element constants are
    literals instead."""

    def __init__(
        self, known: ConstantOf, first: int, block_of: BlockOf = None, raw=False
    ):
        self.known = known
        self.raw = raw
        """Whether a blocked activation is read as it lies, (N, C/b, H, W, b),
        not through its NCHW view."""
        self.values: list[SSAValue] = []
        self.tensors: list[te.Tensor] = []
        self.first = first
        self.block_of = block_of or (lambda value: None)
        self.views: dict[int, te.Tensor] = {}
        """By index of `tensors`: the NCHW view of a blocked activation,
        which the kernel's schedule inlines."""

    def operand(
        self, value: SSAValue, inline: bool = True
    ) -> te.Tensor | te.Expr | float:
        constant = self.known(value) if inline else None
        if constant is not None and constant.size == 1:
            scalar = constant.reshape(()).item()
            if constant.dtype == np.float32:
                return float(scalar)
            return te.const(scalar, constant.dtype.name)
        if value in self.values:
            n = self.values.index(value)
            return self.views.get(n, self.tensors[n])
        t = te.placeholder(
            _shape(value),
            dtype=_dtype(value),
            name=f"data{self.first + len(self.values)}",
        )
        self.values.append(value)
        self.tensors.append(t)
        if self.block_of(value) is None or self.raw:
            return t
        view = blocked_view(t)
        self.views[len(self.tensors) - 1] = view
        return view

    def inline_views(self, kernel: Kernel) -> None:
        """Have `kernel`'s schedule inline the views of blocked activations."""
        views = list(self.views.values())

        def inline(s) -> None:
            for view in views:
                s[view].compute_inline()

        if views:
            kernel.wrap_schedule(inline)


@dataclass
class _Group:
    label: str
    ops: list[Operation]
    result: SSAValue
    outer: dict[SSAValue, SSAValue]
    """Block argument → the value outside (identity for a lone op)."""
    known: ConstantOf

    def outside(self, value: SSAValue) -> SSAValue:
        return self.outer.get(value, value)

    def is_input(self, value: SSAValue) -> bool:
        return all(value.owner is not o for o in self.ops)


def _group(op: Operation, constant_of: ConstantOf) -> _Group:
    if isinstance(op, graph.FusedOp):
        label = f'graph.fused "{op.group_name.data}"'
        if len(op.outputs) != 1:
            raise StrategyError(f"{label}: expected one result, got {len(op.outputs)}")
        block = op.body.block
        outer: dict[SSAValue, SSAValue] = dict(zip(block.args, op.inputs, strict=True))
        ops = [o for o in block.ops if not isinstance(o, graph.YieldOp)]
        yielded = block.last_op
        assert isinstance(yielded, graph.YieldOp)
        result = yielded.values[0]
    else:
        label, ops, result, outer = f"'{op.name}'", [op], op.results[0], {}
    local: dict[SSAValue, np.ndarray] = {
        o.results[0]: o.numpy() for o in ops if isinstance(o, graph.ConstantOp)
    }
    ops = [o for o in ops if not isinstance(o, graph.ConstantOp)]
    if not ops:
        raise StrategyError(f"{label}: expected an op to compute, got none")

    def known(value: SSAValue) -> np.ndarray | None:
        if value in local:
            return local[value]
        return constant_of(outer.get(value, value))

    return _Group(label, ops, result, outer, known)


def lower_group(
    op: Operation,
    constant_of: ConstantOf,
    target: Target | DeviceTarget | None = None,
    block_of: BlockOf = None,
    out_block: int | None = None,
    out_bf16: bool = False,
) -> KernelSpec:
    """The kernel computing a `graph.fused` group or a lone graph op.

    Args:
        op: the `graph.fused` op or the lone graph op.
        constant_of: values known at compile time (params, constants).
        target: the machine the kernel's schedule is for (None:
            `Target.current()`); a GPU `DeviceTarget` takes the host's
            computation with the generic GPU schedule (`ember.topi.gpu`).
        block_of: the channel block of each outside value that is a blocked
            activation (see `plan_blocks`); their placeholders are blocked.
        out_block: write the result blocked (its anchor's strategy must
            offer that block).
        out_bf16: write the blocked result as bfloat16 bits (`plan_bf16`).

    Raises:
        StrategyError: naming the group and the op no strategy covers.
    """
    from ember.backends.llvm import Target
    from ember.backends.source import DeviceTarget

    if isinstance(target, DeviceTarget):
        if target.is_gpu:
            return _for_gpu(op, constant_of, target)
        target = None  # the c kind: the host's CPU schedules, printed as C
    registered()
    machine = Target.resolve(target)
    g = _group(op, constant_of)
    head, tail = g.ops[0], g.ops[1:]
    kind = "_".join(_short(o) for o in g.ops[:3])
    if len(g.ops) > 3:
        kind += f"_{len(g.ops) - 3}more"
    for o in g.ops:
        _check_dtypes(g.label, o)
    with machine:
        if type(head) in ANCHORS:
            for t in tail:
                if not is_elementwise(t):
                    raise StrategyError(
                        f"{g.label}: expected elementwise ops after '{head.name}', "
                        f"got '{t.name}'"
                    )
            spec = _anchored(g, head, tail, machine, block_of, out_block, out_bf16)
        else:
            bad = next((o for o in g.ops if not _is_injective(o)), None)
            if bad is not None:
                raise StrategyError(
                    f"{g.label}: no strategy for '{bad.name}' on this target"
                )
            spec = _injective(g, machine, block_of if out_block else None)
    spec.kind = kind
    return spec


def _for_gpu(
    op: Operation, constant_of: ConstantOf, target: DeviceTarget
) -> KernelSpec:
    """The group's computation as the host's strategy defines it, scheduled by
    the generic GPU schedule (`topi.gpu`): the strategies' layouts are facts of
    the computation, their schedules facts of a CPU."""
    from ember.passes.pass_context import PassContext

    # algorithms that pay only under a CPU schedule (Winograd's transforms
    # would be inlined into every product) give way to the direct sums
    ctx = PassContext.current()
    direct = PassContext(
        ctx.opt_level, ctx.disabled_pass, {**ctx.config, "conv2d.algorithm": "direct"}
    )
    with direct:
        spec = lower_group(op, constant_of, target.host)
    spec.kernel.schedule_fn = lambda s: schedule_gpu(s, target) and None
    spec.kernel.knobs = None  # the CPU template's knobs
    return spec


def _is_injective(op: Operation) -> bool:
    return type(op) in TENSORS or type(op) in SCALARS


def _epilogue(
    g: _Group, anchor: Operation, tail: list[Operation], reads: _Reads
) -> Epilogue | None:
    """The epilogue evaluating `tail` on the anchor's value per output element,
    reading the ops' other operands through `reads`; None without a tail."""
    if not tail:
        return None
    out_shape = _shape(anchor.results[0])
    for t in tail:
        if _shape(t.results[0]) != out_shape:
            raise StrategyError(
                f"{g.label}: '{t.name}' after '{anchor.name}': expected the "
                f"anchor's shape {out_shape}, got {_shape(t.results[0])}"
            )
    produced = {anchor.results[0], *(t.results[0] for t in tail)}
    operands = {
        v: reads.operand(g.outside(v))
        for t in tail
        for v in t.operands
        if v not in produced
    }

    def epilogue(value: te.Expr, indices: tuple[te.Expr, ...]) -> te.Expr:
        env: dict[SSAValue, Value] = {anchor.results[0]: value}
        for t in tail:
            args = [
                env[v] if v in env else broadcast_read(operands[v], indices, out_shape)
                for v in t.operands
            ]
            env[t.results[0]] = _scalar(t, args)
        return as_expr(env[tail[-1].results[0]])

    return epilogue


def _anchor_of(op: Operation) -> Operation | None:
    """The anchor op of a `graph.fused` group (its first op, when it has an
    anchor strategy), or None."""
    if not isinstance(op, graph.FusedOp):
        return None
    head = next(
        (o for o in op.body.block.ops if not isinstance(o, graph.ConstantOp)), None
    )
    return head if head is not None and type(head) in ANCHORS else None


def _offered(head: Operation | None, target: Target):
    """The blocks `head`'s strategy offers (see `AnchorStrategy.blocks`)."""
    if head is None or ANCHORS[type(head)].blocks is None:
        return None
    return ANCHORS[type(head)].blocks(head, target)  # type: ignore[misc]


def plan_blocks(ops: Sequence[Operation], target: Target) -> dict[SSAValue, int]:
    """Which group results are kept as blocked activations, (N, C/b, H, W, b),
    between kernels: those of a group whose anchor can write them blocked
    when every use of them is a fused group whose anchor reads that operand
    blocked (its data) or whose epilogue reads it (a residual); a value
    returned, viewed or read by any other kernel keeps its layout. No pass
    over memory then packs the data of the next convolution (ORT's NCHWc
    transformer, decided per value rather than per graph). A group that is
    the same in any layout (`_layout_free`: a quantized model's residual add)
    reads and writes blocked activations where all its inputs are blocked
    alike and its readers take its result blocked."""
    registered()
    planned: dict[SSAValue, int] = {}
    free = {op for op in ops if _layout_free(op)}
    for op in ops:
        offered = _offered(_anchor_of(op), target)
        if offered is not None and offered.out is not None and len(op.results) == 1:
            planned[op.results[0]] = offered.out
        elif op in free:  # after its inputs: program order
            blocks = {planned.get(v) for v in _tensor_inputs(op)}
            if len(blocks) == 1:
                (block,) = blocks
                if block is not None:
                    planned[op.results[0]] = block
    changed = True
    while changed:  # drop what a reader cannot take blocked, until none is left
        changed = False
        for value, block in list(planned.items()):
            owner = value.owner
            if (
                not value.uses
                or not all(
                    _takes(use, block, planned, free, target) for use in value.uses
                )
                or (
                    isinstance(owner, Operation)
                    and owner in free
                    and any(planned.get(v) != block for v in _tensor_inputs(owner))
                )
            ):
                del planned[value]
                changed = True
    return planned


BF16_ACTIVATIONS = "bf16.activations"
"""The `PassContext` config key that, set False, keeps a bfloat16
compilation's activations float32 between kernels (`plan_bf16`)."""


def plan_bf16(ops: Sequence[Operation], planned: dict[SSAValue, int]) -> set[SSAValue]:
    """Which blocked activations (`plan_blocks`) are stored as bfloat16 bits
    between kernels, half the bytes of float32 (OpenVINO's bf16 inference
    precision): in a `precision="bf16"` compilation, those a convolution
    writes where every use is the data of a convolution. A bfloat16 kernel
    rounds its data to bfloat16 anyway, so there the rounding only moves
    from its pack to the writer's epilogue; a depthwise or grouped one
    (float32 arithmetic) then reads rounded data, as every product of the
    model's does. `precision="auto"` keeps float32 activations: its
    calibration measured each layer on float32 inputs."""
    from ember.passes.pass_context import PassContext

    config = PassContext.current().config
    if config.get("precision") != "bf16" or not config.get(BF16_ACTIVATIONS, True):
        return set()
    return {
        value
        for value in planned
        if isinstance(value.owner, Operation)
        and isinstance(_anchor_of(value.owner), graph.Conv2DOp)
        and all(_convolution_data(use) for use in value.uses)
    }


def _convolution_data(use) -> bool:
    """Whether a use is the data of a convolution group's anchor, and only
    that (no epilogue reads it), a convolution not marked float32 by hand
    (`ember.precision`: its input stays float32 too)."""
    from ember.passes.graph_mixed_precision import marked_precision

    user = use.operation
    head = _anchor_of(user)
    if not isinstance(head, graph.Conv2DOp) or marked_precision(head) == "float32":
        return False
    assert isinstance(user, graph.FusedOp)
    arg = user.body.block.args[use.index]
    return all(u.operation is head and u.index == 0 for u in arg.uses)


def _takes(
    use,
    block: int,
    planned: dict[SSAValue, int],
    free: set[Operation],
    target: Target,
) -> bool:
    """Whether a use of a value can read it blocked by `block` (`free`: the
    `_layout_free` groups)."""
    user = use.operation
    if user in free:
        return planned.get(user.results[0]) == block
    return _reads_blocked(user, use.index, block, target)


def _layout_free(op: Operation) -> bool:
    """Whether `op` is a `graph.fused` group of elementwise ops over 4-D
    tensors of its result's shape, one-element tensors and operands of one
    value a channel, (N, C, 1, 1) (a squeeze-and-excitation gate), or a
    concatenation along channels (`_channel_concat`): the same computation
    in any layout of its tensors, where those operands are blocked alike
    ((N, C/b, 1, 1, b) broadcasts over H and W as (N, C, 1, 1) does)."""
    if not isinstance(op, graph.FusedOp) or len(op.results) != 1:
        return False
    shape = _static_shape(op.results[0])
    inside = [
        o
        for o in op.body.block.ops
        if not isinstance(o, graph.YieldOp | graph.ConstantOp)
    ]
    if shape is None or len(shape) != 4 or not inside:
        return False
    if len(inside) == 1 and isinstance(inside[0], graph.ConcatOp):
        return _channel_concat(inside[0], shape)
    for o in inside:
        if not is_elementwise(o) or _static_shape(o.results[0]) != shape:
            return False
        for v in o.operands:
            if _static_shape(v) != shape and not (
                _one_element(v) or _per_channel(v, shape)
            ):
                return False
    return True


def _channel_concat(op: graph.ConcatOp, shape: tuple[int, ...]) -> bool:
    """Whether `op` joins inputs of its group along channels: blocked alike
    (each one's block divides its channels), (N, C_i/b, H, W, b) joined along
    their blocks is the blocked result (SqueezeNet's fire modules)."""
    others = [*shape[:1], *shape[2:]]
    return op.config["axis"] % 4 == 1 and all(
        isinstance(v, BlockArgument)
        and (s := _static_shape(v)) is not None
        and len(s) == 4
        and [*s[:1], *s[2:]] == others
        for v in op.operands
    )


def _per_channel(value: SSAValue, shape: tuple[int, ...]) -> bool:
    """Whether `value` is an input of its group (not a literal copied in,
    which no plan blocks) holding one value per channel of `shape`."""
    return isinstance(value, BlockArgument) and _static_shape(value) == (
        *shape[:2],
        1,
        1,
    )


def _tensor_inputs(op: Operation) -> list[SSAValue]:
    """The operands of a group that are not one-element tensors."""
    return [v for v in op.operands if not _one_element(v)]


def _static_shape(value: SSAValue) -> tuple[int, ...] | None:
    t = value.type
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        return None
    return tuple(t.get_shape())


def _one_element(value: SSAValue) -> bool:
    shape = _static_shape(value)
    return shape is not None and all(d == 1 for d in shape)


def _reads_blocked(user: Operation, index: int, block: int, target: Target) -> bool:
    """Whether operand `index` of `user` can be a blocked activation."""
    head = _anchor_of(user)
    offered = _offered(head, target)
    if offered is None:
        return False
    assert isinstance(user, graph.FusedOp)
    arg = user.body.block.args[index]
    tail = [o for o in user.body.block.ops if o is not head]
    for use in arg.uses:
        if use.operation is head:
            if use.index != 0 or offered.data != block:
                return False
        elif use.operation not in tail or not is_elementwise(use.operation):
            return False
    return True


def _anchored(
    g: _Group,
    head: Operation,
    tail: list[Operation],
    target: Target,
    block_of: BlockOf = None,
    out_block: int | None = None,
    out_bf16: bool = False,
) -> KernelSpec:
    strategy = ANCHORS[type(head)]
    block_of = block_of or (lambda value: None)
    data_block = block_of(g.outside(head.operands[0]))
    layout = {}
    if data_block or out_block:
        offered = _offered(head, target)
        if (
            offered is None
            or (data_block and data_block != offered.data)
            or (out_block and out_block != offered.out)
        ):
            raise StrategyError(
                f"{g.label}: '{head.name}' takes no blocked activations here"
            )
        layout = {"layout": replace(offered, data=data_block, out=out_block)}
    present = [i for i in strategy.data if i < len(head.operands)]  # optional ones
    data = [
        None
        if i in strategy.packable and _is_weight(g.outside(head.operands[i]))
        else te.placeholder(
            _shape(g.outside(head.operands[i]))
            if i == 0 and data_block
            else _shape(head.operands[i]),
            # a blocked activation's own: bfloat16 bits where it is stored so
            dtype=_dtype(
                g.outside(head.operands[i])
                if i == 0 and data_block
                else head.operands[i]
            ),
            name=f"data{n}",
        )
        for n, i in enumerate(present)
    ]
    weights = [i for i in strategy.weights if i < len(head.operands)]
    reads = _Reads(g.known, first=len(data), block_of=block_of)
    epilogue = _epilogue(g, head, tail, reads)
    if out_bf16:
        epilogue = _rounded(epilogue)
    kernel = strategy.build(head, data, epilogue, reads.tensors, target, **layout)
    reads.inline_views(kernel)
    operands = [g.outside(head.operands[i]) for i in (*present, *weights)]
    return KernelSpec(kernel, [*operands, *reads.values])


def _rounded(epilogue: Epilogue | None) -> Epilogue:
    """`epilogue` (or none), its value then stored as bfloat16 bits."""
    from ember.topi.bf16 import to_bits

    if epilogue is None:
        return lambda value, indices: to_bits(value)
    inner = epilogue
    return lambda value, indices: to_bits(inner(value, indices))


def _is_weight(value: SSAValue) -> bool:
    """A param or literal: known when the kernel is built from bound params,
    and decided by the IR alone, so text and bound compiles agree."""
    return isinstance(value.owner, graph.ParamOp | graph.ConstantOp)


def _tensor_form(op: Operation, args: list[te.Tensor | te.Expr | float]) -> te.Tensor:
    """An injective graph op as a te compute over `args`: its registered tensor
    form, or its scalar form mapped over the broadcast shape."""
    name = _short(op)
    if type(op) in TENSORS:
        return TENSORS[type(op)](op, args, name)
    tensors = [a for a in args if isinstance(a, te.Tensor)]
    if not tensors:
        raise StrategyError(f"'{op.name}': expected a tensor operand, got {args}")
    shape = broadcast_shape(*(t.shape for t in tensors))

    def element(*i: te.Expr) -> te.Expr:
        return _scalar(op, [broadcast_read(a, i, shape) for a in args])

    return te.compute(shape, element, name=name)


def _injective(g: _Group, target: Target, block_of: BlockOf = None) -> KernelSpec:
    """An injective group's kernel; with `block_of` (a `_layout_free` group
    planned blocked), over its blocked activations as they lie."""
    reads = _Reads(g.known, first=0, block_of=block_of, raw=True)
    env: dict[SSAValue, te.Tensor | te.Expr | float] = {}
    for o in g.ops:
        inline = type(o) not in TENSORS  # tensor forms read their operands whole
        args = [
            env[v] if v in env else reads.operand(g.outside(v), inline)
            for v in o.operands
        ]
        if not inline:
            args = [_exact(a, v) for a, v in zip(args, o.operands, strict=True)]
        env[o.results[0]] = _tensor_form(o, args)
    out = _exact(env[g.result], g.result)
    assert isinstance(out, te.Tensor)
    kernel = elementwise.injective(out, reads.tensors, target=target)
    return KernelSpec(kernel, list(reads.values))


def copy_kernel(shape: Sequence[int], dtype: str = "float32") -> Kernel:
    """A kernel copying a tensor (a model output that is an input, a param or
    another output)."""
    x = te.placeholder(tuple(shape), dtype=dtype, name="data0")
    out = te.compute(tuple(shape), lambda *i: x[i], name="copy")
    return elementwise.injective(out, [x])
