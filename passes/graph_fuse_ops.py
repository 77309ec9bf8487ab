"""`graph-fuse-ops`: TVM's FuseOps on the graph dialect.

Each graph op of a function body ends up in exactly one `graph.fused` op, a fusion
group that compiles to one kernel. Groups form by the ops' `PATTERN`s, in program
order:

- an anchor (conv2d, dense, matmul, batch_matmul: "out-elemwise-fusable") opens a
  group that takes its chain of elementwise and broadcast consumers as an epilogue,
  as long as each link is the only reader of the value before it (x * x reads
  it once) and keeps the
  anchor's output shape (a residual add reading another tensor is fine: that
  tensor becomes an extra input of the group); where several elementwise ops
  read the anchor's output, the ones that close on one value join whole, a
  DAG (GELU's x * 0.5 * (1 + erf(x / sqrt 2)), SiLU's x * sigmoid(x));
- elementwise, broadcast and injective ops (reshape, flatten, transpose, pad,
  concat) with no anchor to join form injective chains, on the same single-reader
  rule (an injective op never joins an anchor's group: the epilogue works on the
  anchor's output elements in place); an op of such a chain also takes in the
  injective chains of its other operands that only it reads (TVM fuses
  injective producers into their consumer the same way): `a * s + b * t`
  of two dequantizations is one kernel, not three;
- reductions, pooling and softmax are groups of their own.

A group's operands are the values its ops read from outside (inputs, params, other
groups' results); literal `graph.constant`s are copied into the region. Groups are
named after their ops and numbered in program order.

    %y = graph.conv2d %x, %w, %b {...} : (...) -> tensor<1x16x8x8xf32>
    %r = graph.relu %y : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
becomes
    %r = graph.fused "fused_conv2d_relu_0" (%x, %w, %b) ({
    ^bb0(%x_1: tensor<1x3x8x8xf32>, %w_1: tensor<16x3x3x3xf32>, %b_1: tensor<16xf32>):
      %y = graph.conv2d %x_1, %w_1, %b_1 {...} : (...) -> tensor<1x16x8x8xf32>
      %r_1 = graph.relu %y : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
      graph.yield %r_1 : tensor<1x16x8x8xf32>
    }) : (...) -> tensor<1x16x8x8xf32>
"""

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from ember.dialects import graph
from ember.passes.graph_fold_constants import erase_dead_ops

_ELEMENTWISE = ("elemwise", "broadcast")
_CHAINABLE = (*_ELEMENTWISE, "injective")


@dataclass
class _Group:
    kind: str  # "anchor", "injective" or "closed"
    ops: list[Operation] = field(default_factory=list)

    @property
    def output(self) -> SSAValue:
        return self.ops[-1].results[0]


def _can_join(group: _Group, value: SSAValue, op: graph.GraphOp, limit: int) -> bool:
    if value is not group.output or len(group.ops) >= limit:
        return False
    # the joining op must be the value's only reader (it may read it twice: x * x)
    if any(use.operation is not op for use in value.uses):
        return False
    if group.kind == "anchor":
        # an epilogue keeps the anchor's shape and dtype (its kernels are float32)
        return op.PATTERN in _ELEMENTWISE and op.results[0].type == value.type
    return group.kind == "injective" and op.PATTERN in _CHAINABLE


def _joins_epilogue(op: Operation, value: SSAValue) -> bool:
    return (
        isinstance(op, graph.GraphOp)
        and op.PATTERN in _ELEMENTWISE
        and len(op.results) == 1
        and op.results[0].type == value.type
    )


def _epilogue_dag(
    group: _Group, value: SSAValue, after: list[Operation], limit: int
) -> list[Operation]:
    """The elementwise ops, in program order from `after`'s first, that read
    an anchor group's output `value` of several readers and close on one
    value: every value among them but the last read by them alone (GELU's
    x * 0.5 * (1 + erf(x / sqrt 2)), SiLU's x * sigmoid(x)); none where
    another op reads one of them or the anchor's output."""
    if group.kind != "anchor" or value is not group.output:
        return []
    joined: list[Operation] = []
    members: set[Operation] = set()
    open_values = {value}
    for op in after:
        if not any(v in open_values for v in op.operands):
            continue
        if not _joins_epilogue(op, value) or len(group.ops) + len(joined) >= limit:
            return []
        joined.append(op)
        members.add(op)
        result = op.results[0]
        open_values = {
            v
            for v in (*open_values, result)
            if any(use.operation not in members for use in v.uses)
        }
        if open_values == {result}:
            return joined
    return []


def partition(block: Block, max_group_size: int = 256) -> list[_Group]:
    """The fusion groups of the graph ops of `block`, in program order of their
    last op."""
    groups: list[_Group] = []
    group_of: dict[Operation, _Group] = {}
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    for op in ops:
        if not isinstance(op, graph.GraphOp) or op in group_of:
            continue  # (an op of an epilogue that joined whole)
        target = None
        for value in op.operands:
            owner = value.owner
            if isinstance(owner, Operation) and owner in group_of:
                group = group_of[owner]
                if _can_join(group, value, op, max_group_size):
                    target = group
                    break
                joined = _epilogue_dag(
                    group, value, ops[position[op] :], max_group_size
                )
                if joined:
                    group.ops += joined
                    group_of.update((o, group) for o in joined)
                    break
        if op in group_of:
            continue
        if target is None:
            kind = {
                "out-elemwise-fusable": "anchor",
                "elemwise": "injective",
                "broadcast": "injective",
                "injective": "injective",
            }.get(op.PATTERN, "closed")
            target = _Group(kind)
            groups.append(target)
        if target.kind == "injective":
            for other in _producers(op, target, group_of, max_group_size):
                target.ops = sorted(target.ops + other.ops, key=position.__getitem__)
                groups.remove(other)
                for moved in other.ops:
                    group_of[moved] = target
        target.ops.append(op)
        group_of[op] = target
    return sorted(groups, key=lambda g: position[g.ops[-1]])


def _producers(
    op: Operation, target: _Group, group_of: dict[Operation, _Group], limit: int
) -> list[_Group]:
    """The injective chains other than `target` that compute an operand of
    `op` read by `op` alone: they join `op`'s chain."""
    found: list[_Group] = []
    size = len(target.ops)
    for value in op.operands:
        group = (
            group_of.get(value.owner) if isinstance(value.owner, Operation) else None
        )
        if (
            group is None
            or group is target
            or group in found
            or group.kind != "injective"
            or value is not group.output
            or any(use.operation is not op for use in value.uses)
            or size + len(group.ops) >= limit
        ):
            continue
        found.append(group)
        size += len(group.ops)
    return found


def _group_name(group: _Group, index: int) -> str:
    parts = [op.name.removeprefix("graph.") for op in group.ops]
    if len(parts) > 6:
        parts = [*parts[:5], "etc"]
    return "fused_" + "_".join(parts) + f"_{index}"


def _outline(block: Block, group: _Group, name: str) -> graph.FusedOp:
    members = set(group.ops)
    inputs: list[SSAValue] = []
    constants: list[graph.ConstantOp] = []
    for op in group.ops:
        for value in op.operands:
            owner = value.owner
            if owner in members or value in inputs:
                continue
            if isinstance(owner, graph.ConstantOp):
                if owner not in constants:
                    constants.append(owner)
            else:
                inputs.append(value)
    body = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for value, arg in zip(inputs, body.args, strict=True):
        arg.name_hint = value.name_hint
        mapping[value] = arg
    for const in constants:
        body.add_op(copy := const.clone())
        mapping[const.result] = copy.result
    for op in group.ops:
        body.add_op(op.clone(mapping))
    body.add_op(graph.YieldOp(mapping[group.output]))
    fused = graph.FusedOp(name, inputs, [group.output.type], Region(body))
    block.insert_op_before(fused, group.ops[-1])
    fused.outputs[0].name_hint = group.output.name_hint
    group.output.replace_all_uses_with(fused.outputs[0])
    for op in reversed(group.ops):
        block.erase_op(op)
    return fused


def fuse_ops(module: ModuleOp, max_group_size: int = 256) -> list[graph.FusedOp]:
    """Put every graph op of `module`'s functions into a `graph.fused` group.

    Returns:
        The fused ops, in program order.
    """
    fused: list[graph.FusedOp] = []
    for fn in [op for op in module.walk() if isinstance(op, func.FuncOp)]:
        if not fn.body.blocks:
            continue
        block = fn.body.block
        for group in partition(block, max_group_size):
            fused.append(_outline(block, group, _group_name(group, len(fused))))
        erase_dead_ops(block)
    return fused


@dataclass(frozen=True)
class GraphFuseOps(ModulePass):
    """Group graph ops into `graph.fused` kernels (anchor + epilogue, injective
    chains, one group per reduction).

    ember-opt model.mlir -p 'graph-fuse-ops{max-group-size=64}'
    """

    name = "graph-fuse-ops"

    max_group_size: int = 256

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_group_size < 1:
            raise DiagnosticException(
                f"graph-fuse-ops: expected a positive max-group-size, got "
                f"{self.max_group_size}"
            )
        fuse_ops(op, self.max_group_size)
