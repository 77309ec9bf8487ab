"""`ember-opt -t dot`: a graph-level (or te) function as a Graphviz graph.

    ember-opt block.mlir -p graph-fuse-ops -t dot | dot -Tsvg > block.svg

One node per op (its name, key attributes, result shape), edges labelled with
the tensor's shape, params as small grey boxes, inputs and outputs as
house-shaped nodes, and each `graph.fused` group as a `cluster_<name>` box
holding its ops. A te function shows one node per `te.compute`.

Every edge is written after the clusters, at the function's level: Graphviz
puts both ends of an edge written inside a cluster into that cluster, which
pulled a model's input into its first group and stacked a whole network into
one column. A node belongs to the cluster where it is declared, and only there.
"""

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    ShapedType,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.target import Target

from ember.runtime.errors import EmberValueError

_KEY_ATTRS = 4  # attributes shown on a node, at most


def _shape(t: Attribute) -> str:
    if isinstance(t, ShapedType):
        dims = "x".join(str(d) for d in t.get_shape())
        elem = getattr(t, "element_type", "")
        return f"{dims}x{elem}" if dims else str(elem)
    return str(t)


def _attr_text(a: Attribute) -> str | None:
    if isinstance(a, IntegerAttr):
        return str(a.value.data)
    if isinstance(a, FloatAttr):
        return f"{a.value.data:g}"
    if isinstance(a, StringAttr):
        return a.data
    if isinstance(a, SymbolRefAttr):  # a graph.call_kernel's kernel
        return "@" + a.string_value()
    if isinstance(a, ArrayAttr) and len(a.data) <= 8:
        items = [_attr_text(x) for x in a.data]
        if all(i is not None for i in items):
            return "[" + ",".join(items) + "]"  # type: ignore[arg-type]
    return None


def _quote(s: str) -> str:
    """A DOT string; labels keep their `\\n` line breaks."""
    return '"' + s.replace('"', '\\"') + '"'


@dataclass
class _DotWriter:
    lines: list[str]
    source: dict[SSAValue, str]
    count: int = 0
    edges: list[str] | None = None
    """Edges, written after every node and cluster of the function."""

    def node(self, label: str, indent: str, **style: str) -> str:
        name = f"n{self.count}"
        self.count += 1
        attrs = ", ".join(
            [f"label={_quote(label)}", *(f"{k}={v}" for k, v in style.items())]
        )
        self.lines.append(f"{indent}{name} [{attrs}];")
        return name

    def edge(self, value: SSAValue, to: str) -> None:
        if value in self.source:
            label = _quote(_shape(value.type))
            if self.edges is None:
                self.edges = []
            self.edges.append(f"{self.source[value]} -> {to} [label={label}];")


def _op_label(op: Operation) -> str:
    from ember.dialects import graph

    if isinstance(op, graph.ParamOp):
        return f"param {op.param_name.data}\\n{_shape(op.result.type)}"
    parts = [op.name.removeprefix("graph.")]
    shown = 0
    for key, value in [*op.properties.items(), *op.attributes.items()]:
        text = _attr_text(value)
        if text is not None and shown < _KEY_ATTRS:
            parts.append(f"{key}={text}")
            shown += 1
    if op.results:
        parts.append(" ".join(_shape(r.type) for r in op.results))
    return "\\n".join(parts)


def _graph_ops(w: _DotWriter, ops: list[Operation], indent: str) -> None:
    from ember.dialects import graph

    for op in ops:
        if isinstance(op, func.ReturnOp):
            continue
        if isinstance(op, graph.FusedOp):
            name = op.group_name.data
            w.lines.append(f"{indent}subgraph {_quote('cluster_' + name)} {{")
            inner = indent + "  "
            w.lines.append(f"{inner}label={_quote(name)}; style=rounded; color=blue;")
            block = op.body.block
            for arg, operand in zip(block.args, op.inputs, strict=True):
                if operand in w.source:
                    w.source[arg] = w.source[operand]
            _graph_ops(
                w, [o for o in block.ops if not isinstance(o, graph.YieldOp)], inner
            )
            w.lines.append(f"{indent}}}")
            last = block.last_op
            if isinstance(last, graph.YieldOp):
                for result, value in zip(op.outputs, last.values, strict=True):
                    if value in w.source:
                        w.source[result] = w.source[value]
            continue
        style = (
            {"shape": "box", "fontsize": "9", "style": "filled", "fillcolor": "grey90"}
            if isinstance(op, graph.ParamOp | graph.ConstantOp)
            else {"shape": "box", "style": "rounded"}
        )
        node = w.node(_op_label(op), indent, **style)
        for operand in op.operands:
            w.edge(operand, node)
        for r in op.results:
            w.source[r] = node


def _te_ops(w: _DotWriter, f: func.FuncOp, indent: str) -> None:
    from ember.dialects import te

    for op in f.body.block.ops:
        if not isinstance(op, te.ComputeOp):
            continue
        label = f"te.compute {op.tensor_name.data}\\n{_shape(op.result.type)}"
        if op.reduce is not None:
            label += f"\\nreduce {op.reduce.data}"
        node = w.node(label, indent, shape="box", style="rounded")
        reads = {r.operands[0] for r in op.walk() if r.name == "te.read"}
        reads |= {v for v in op.operands if v in w.source}
        for value in sorted(reads, key=lambda v: w.source.get(v, "")):
            w.edge(value, node)
        for r in op.results:
            w.source[r] = node


def module_to_dot(module: ModuleOp) -> str:
    """The DOT text of every `func.func` holding graph or te ops in `module`.

    Raises:
        ValueError: no function holds graph or te ops.
    """
    out = ["digraph ember {", "  rankdir=TB;", '  node [fontname="Helvetica"];']
    out.append('  edge [fontname="Helvetica", fontsize=9];')
    drawn = 0
    for f in module.walk():
        if not isinstance(f, func.FuncOp) or not f.body.blocks:
            continue
        names = {op.name.split(".")[0] for op in f.walk()}
        if not names & {"graph", "te"}:
            continue
        fname = f.sym_name.data
        w = _DotWriter([], {})
        w.count = drawn * 1000
        indent = "    "
        for i, arg in enumerate(f.body.block.args):
            w.source[arg] = w.node(
                f"input {i}\\n{_shape(arg.type)}",
                indent,
                shape="invhouse",
                color="darkgreen",
            )
        if "graph" in names:
            _graph_ops(w, list(f.body.block.ops), indent)
        else:
            _te_ops(w, f, indent)
        ret = f.body.block.last_op
        if isinstance(ret, func.ReturnOp):
            for i, value in enumerate(ret.arguments):
                node = w.node(f"output {i}", indent, shape="house", color="darkred")
                w.edge(value, node)
        out.append(f"  subgraph {_quote('cluster_func_' + fname)} {{")
        out.append(f"    label={_quote('@' + fname)}; style=dashed;")
        out.extend(w.lines)
        out.append("  }")
        out.extend(f"  {e}" for e in w.edges or ())
        drawn += 1
    if not drawn:
        raise EmberValueError(
            "-t dot draws graph or te functions; expected a func.func holding "
            "graph.* or te.* ops, got none"
        )
    out.append("}")
    return "\n".join(out)


@dataclass(frozen=True)
class DotTarget(Target):
    """`-t dot`: Graphviz DOT of the module's graph and te functions."""

    name = "dot"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        print(module_to_dot(module), file=output)
