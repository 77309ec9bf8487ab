"""Operator strategies: which `ember.topi` kernel computes a graph op or a fusion
group, and how the group's elementwise ops become the kernel's epilogue.

A `graph.fused` group (or a lone op, a group of one) lowers to one kernel, one te
function whose last stage writes the group's result:

- **anchored** (conv2d / dense / matmul / batch_matmul, then elementwise ops on
  its result): the anchor's topi builder with an `epilogue(value, indices)`
  composed from topi's scalar forms of the ops after it. Their other operands
  (a bias, batch-norm scale and shift after folding, a residual) are read at
  the output indices, broadcast numpy-style.
- **injective** (elementwise, broadcast and layout ops): topi's tensor forms
  composed on placeholders, made one loop nest by `topi.elementwise.injective`.
- **other** (pooling, softmax, reductions): the op's topi builder, with the
  group's elementwise tail as its epilogue.

Single-element constants become literals. Placeholders are named by position
(`data0`, `data1`, ...) and kernels by op kind, so structurally identical layers
give identical te IR, which the compile cache (keyed by its hash) compiles once.

    spec = lower_group(fused_op, constant_of)
    spec.kernel       # topi.Kernel: output, placeholders, weight transforms
    spec.operands     # the graph value each placeholder reads, in call order
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from ember import te
from ember.dialects import graph
from ember.topi import elementwise, transform
from ember.topi.kernel import Kernel

ConstantOf = Callable[[SSAValue], np.ndarray | None]
"""The value of a graph value known at compile time (a param or constant), or
None; the strategy inlines single-element ones."""

Value = te.Expr | float


class StrategyError(ValueError):
    """A graph op or group no strategy can lower; the message names the op."""


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


def _shape(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _short(op: Operation) -> str:
    return op.name.removeprefix("graph.")


def is_elementwise(op: Operation) -> bool:
    """Whether `op` has a scalar form (it can join an epilogue)."""
    short = _short(op)
    return short in elementwise.UNARY or short in elementwise.BINARY or short == "clip"


def _expr(value: Value) -> te.Expr:
    return value if isinstance(value, te.Expr) else te.const(float(value))


def _scalar(op: Operation, args: list[Value]) -> te.Expr:
    """An elementwise graph op on scalars (topi's scalar forms)."""
    short = _short(op)
    if short == "clip":
        cfg = op.config  # type: ignore[attr-defined]
        return elementwise.clip_expr(_expr(args[0]), cfg["min"], cfg["max"])
    if short in elementwise.UNARY:
        return elementwise.UNARY[short](_expr(args[0]))
    return elementwise.BINARY[short](_expr(args[0]), args[1])


class _Reads:
    """The placeholders of a kernel for the outside values a group reads, one
    per distinct value in order of first use; single-element constants are
    literals instead."""

    def __init__(self, known: ConstantOf, first: int):
        self.known = known
        self.values: list[SSAValue] = []
        self.tensors: list[te.Tensor] = []
        self.first = first

    def operand(self, value: SSAValue, inline: bool = True) -> te.Tensor | float:
        constant = self.known(value) if inline else None
        if constant is not None and constant.size == 1:
            return float(constant.reshape(()))
        if value in self.values:
            return self.tensors[self.values.index(value)]
        t = te.placeholder(_shape(value), name=f"data{self.first + len(self.values)}")
        self.values.append(value)
        self.tensors.append(t)
        return t


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


ANCHORS = ("graph.conv2d", "graph.dense", "graph.matmul", "graph.batch_matmul")


def lower_group(op: Operation, constant_of: ConstantOf) -> KernelSpec:
    """The kernel computing a `graph.fused` group or a lone graph op.

    Args:
        op: the `graph.fused` op or the lone graph op.
        constant_of: values known at compile time (params, constants).

    Raises:
        StrategyError: naming the group and the op no strategy covers.
    """
    g = _group(op, constant_of)
    head, tail = g.ops[0], g.ops[1:]
    kind = "_".join(_short(o) for o in g.ops[:3])
    if len(g.ops) > 3:
        kind += f"_{len(g.ops) - 3}more"
    if head.name in ANCHORS or head.name in _OTHER:
        for t in tail:
            if not is_elementwise(t):
                raise StrategyError(
                    f"{g.label}: expected elementwise ops after '{head.name}', "
                    f"got '{t.name}'"
                )
        spec = _anchored(g, head, tail)
    elif all(_short(o) in _INJECTIVE or is_elementwise(o) for o in g.ops):
        spec = _injective(g)
    else:
        bad = next(
            o for o in g.ops if not (is_elementwise(o) or _short(o) in _INJECTIVE)
        )
        raise StrategyError(f"{g.label}: no strategy for '{bad.name}' on this target")
    spec.kind = kind
    return spec


def _epilogue(g: _Group, anchor: Operation, tail: list[Operation], reads: _Reads):
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
                env[v]
                if v in env
                else elementwise.broadcast_read(operands[v], indices, out_shape)
                for v in t.operands
            ]
            env[t.results[0]] = _scalar(t, args)
        return _expr(env[tail[-1].results[0]])

    return epilogue


def _anchored(g: _Group, head: Operation, tail: list[Operation]) -> KernelSpec:
    data_operands, weight_operands, call = (
        _ANCHOR_CALLS.get(head.name) or _OTHER[head.name]
    )
    data = [
        te.placeholder(_shape(head.operands[i]), name=f"data{n}")
        for n, i in enumerate(data_operands)
    ]
    weights = [i for i in weight_operands if i < len(head.operands)]
    reads = _Reads(g.known, first=len(data))
    try:
        kernel = call(head, data, _epilogue(g, head, tail, reads), reads.tensors)
    except ImportError as e:  # a builder topi does not have (yet)
        raise StrategyError(
            f"{g.label}: no strategy for '{head.name}' on this target ({e})"
        ) from None
    operands = [g.outside(head.operands[i]) for i in (*data_operands, *weights)]
    return KernelSpec(kernel, [*operands, *reads.values])


def _conv2d(op, data, epilogue, epilogue_inputs) -> Kernel:
    from ember.topi import conv2d

    cfg = op.config
    return conv2d(
        data[0],
        _shape(op.operands[1]),
        strides=cfg["strides"],
        padding=cfg["padding"],
        dilation=cfg["dilation"],
        groups=cfg["groups"],
        bias=len(op.operands) > 2,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name="conv2d",
    )


def _dense(op, data, epilogue, epilogue_inputs) -> Kernel:
    from ember.topi import dense

    return dense(
        data[0],
        _shape(op.operands[1]),
        bias=len(op.operands) > 2,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name="dense",
    )


def _topi(name: str) -> Callable[..., Kernel]:
    """A topi anchor builder over data tensors: `builder(*data, epilogue=...)`."""

    def call(op, data, epilogue, epilogue_inputs) -> Kernel:
        builder = getattr(import_module("ember.topi"), name)
        return builder(
            *data, epilogue=epilogue, epilogue_inputs=epilogue_inputs, name=name
        )

    return call


# graph op -> (operands that are data placeholders, operands that are weights
# the builder makes placeholders for, builder)
_ANCHOR_CALLS: dict[str, tuple[tuple[int, ...], tuple[int, ...], Callable]] = {
    "graph.conv2d": ((0,), (1, 2), _conv2d),
    "graph.dense": ((0,), (1, 2), _dense),
    "graph.matmul": ((0, 1), (), _topi("matmul")),
    "graph.batch_matmul": ((0, 1), (), _topi("batch_matmul")),
}


def _other(module: str, name: str, **fixed) -> Callable[..., Kernel]:
    """A topi builder of a non-injective op taking the graph op's attributes
    (its `config`) as keywords, and an epilogue."""

    def call(op, data, epilogue, epilogue_inputs) -> Kernel:
        builder = getattr(import_module(f"ember.topi.{module}"), name)
        return builder(
            *data,
            **fixed,
            **op.config,
            epilogue=epilogue,
            epilogue_tensors=epilogue_inputs,
            name=op.name.removeprefix("graph."),
        )

    return call


_OTHER: dict[str, tuple[tuple[int, ...], tuple[int, ...], Callable]] = {
    "graph.max_pool2d": ((0,), (), _other("pool", "max_pool2d")),
    "graph.avg_pool2d": ((0,), (), _other("pool", "avg_pool2d")),
    "graph.global_avg_pool2d": ((0,), (), _other("pool", "global_avg_pool2d")),
    "graph.softmax": ((0,), (), _other("reduce", "softmax")),
    "graph.reduce_sum": ((0,), (), _other("reduce", "reduce", kind="sum")),
    "graph.reduce_mean": ((0,), (), _other("reduce", "reduce", kind="mean")),
    "graph.reduce_max": ((0,), (), _other("reduce", "reduce", kind="max")),
}
"""Non-injective ops (pooling, softmax, reductions): topi builders taking the
group's elementwise tail as their epilogue."""


def _tensor_form(op: Operation, args: list[te.Tensor | float]) -> te.Tensor:
    """An injective graph op as a te compute over `args` (topi's tensor forms)."""
    short = _short(op)
    name = short
    if short == "clip":
        cfg = op.config  # type: ignore[attr-defined]
        return elementwise.clip(_tensor(args[0], op), cfg["min"], cfg["max"], name)
    if short in elementwise.UNARY:
        return elementwise.map_unary(
            elementwise.UNARY[short], _tensor(args[0], op), name
        )
    if short in elementwise.BINARY:
        return elementwise.map_binary(elementwise.BINARY[short], args[0], args[1], name)
    cfg = op.config  # type: ignore[attr-defined]
    x = _tensor(args[0], op)
    if short == "reshape":
        return transform.reshape(x, _shape(op.results[0]), name)
    if short == "flatten":
        return transform.flatten(x, cfg["axis"], name)
    if short == "transpose":
        return transform.transpose(x, cfg["perm"], name)
    if short == "concat":
        return transform.concat([_tensor(a, op) for a in args], cfg["axis"], name)
    if short == "pad":
        return transform.pad(x, cfg["pads"], cfg["value"] or 0.0, name)
    if short == "batch_norm":
        tensors = [_tensor(a, op) for a in args]
        return elementwise.batch_norm(*tensors, epsilon=cfg["epsilon"], name=name)
    raise StrategyError(f"'{op.name}': no injective form")


def _tensor(value: te.Tensor | float, op: Operation) -> te.Tensor:
    if isinstance(value, te.Tensor):
        return value
    raise StrategyError(
        f"'{op.name}': expected a tensor operand, got the constant {value}"
    )


_INJECTIVE = ("reshape", "flatten", "transpose", "concat", "pad", "batch_norm")


def _injective(g: _Group) -> KernelSpec:
    reads = _Reads(g.known, first=0)
    env: dict[SSAValue, te.Tensor | float] = {}
    for o in g.ops:
        inline = _short(o) != "batch_norm"  # its statistics stay tensors
        args = [
            env[v] if v in env else reads.operand(g.outside(v), inline)
            for v in o.operands
        ]
        env[o.results[0]] = _tensor_form(o, args)
    out = env[g.result]
    assert isinstance(out, te.Tensor)
    return KernelSpec(elementwise.injective(out, reads.tensors), list(reads.values))


def copy_kernel(shape: Sequence[int]) -> Kernel:
    """A kernel copying a tensor (a model output that is an input, a param or
    another output)."""
    x = te.placeholder(tuple(shape), name="data0")
    out = te.compute(tuple(shape), lambda *i: x[i], name="copy")
    return elementwise.injective(out, [x])


__all__ = [
    "ANCHORS",
    "KernelSpec",
    "StrategyError",
    "copy_kernel",
    "is_elementwise",
    "lower_group",
]
