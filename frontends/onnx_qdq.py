"""QDQ models to quantized operators, before conversion.

Quantizers (onnxruntime's `quantize_static` in QDQ format, PyTorch's PT2E
export) write a quantized convolution as float ops between
DequantizeLinear and QuantizeLinear:

    xq ─ DequantizeLinear(xs, xz) ─┐
    wq ─ DequantizeLinear(ws, 0) ──┼─ Conv ─ [Relu] ─ QuantizeLinear(ys, yz) ─ yq
    bq ─ DequantizeLinear(xs·ws) ──┘

`fuse_qdq` rewrites each such group into the QOperator form onnxruntime fuses
it to, `QLinearConv(xq, xs, xz, wq, ws, wz, ys, yz, B)`, which the converter
computes on integer instructions (`graph.qconv2d`). The rewrite is onnxruntime's
QDQ semantics up to the rounding of float sums: the products are exact integers
either way, and the requantization multiplies by xs·ws/ys where the float graph
divides the float sum by ys. A Relu between the Conv and its QuantizeLinear
stays as DequantizeLinear -> Relu -> QuantizeLinear on the fused result, exactly
max(q, yz). The quantized weight, its scales and the zero points must be
initializers; a bias not quantized at xs·ws (or a float one) is requantized to
int32 at it. Groups that do not match stay as they are (and compute exactly in
float).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

INT32 = np.iinfo(np.int32)


class _Graph:
    """The nodes, their producers and readers, and the initializers of a graph."""

    def __init__(self, graph: onnx.GraphProto):
        self.graph = graph
        self.init = {t.name: t for t in graph.initializer}
        self.producer = {o: n for n in graph.node for o in n.output}
        self.readers: dict[str, list[onnx.NodeProto]] = {}
        for n in graph.node:
            for i in n.input:
                self.readers.setdefault(i, []).append(n)
        self.outputs = {o.name for o in graph.output}

    def array(self, name: str) -> np.ndarray | None:
        t = self.init.get(name)
        return None if t is None else numpy_helper.to_array(t)

    def dequantized(self, name: str) -> tuple[onnx.NodeProto, list] | None:
        """The DequantizeLinear producing `name` and its (x, scale, zero)
        input names (zero "" when absent)."""
        node = self.producer.get(name)
        if node is None or node.op_type != "DequantizeLinear" or node.domain:
            return None
        inputs = [*node.input, "", ""][:3]
        return node, inputs

    def only_reader(self, name: str) -> onnx.NodeProto | None:
        readers = self.readers.get(name, [])
        if len(readers) != 1 or name in self.outputs:
            return None
        return readers[0]


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def fuse_qdq(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its QDQ convolutions as QLinearConv nodes (a copy; the
    model itself when nothing matches)."""
    g = _Graph(model.graph)
    plans = [p for n in model.graph.node if (p := _conv_plan(g, n)) is not None]
    if not plans:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    removed = {id_ for p in plans for id_ in p["remove"]}
    new_inits: list[onnx.TensorProto] = []
    at_quantize = {p["at"]: p for p in plans}
    nodes: list[onnx.NodeProto] = []
    for node in model.graph.node:
        key = _identity(node)
        if key in at_quantize:
            plan = at_quantize[key]
            nodes.extend(plan["nodes"])
            new_inits.extend(plan["inits"])
        elif key not in removed:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_inits)
    return out


def _identity(node: onnx.NodeProto) -> tuple[str, ...]:
    return (node.op_type, *node.output)


def _conv_plan(g: _Graph, conv: onnx.NodeProto) -> dict | None:
    """How a QDQ Conv becomes a QLinearConv: the nodes to remove, those to
    put where its QuantizeLinear was, the initializers they add; None where
    the pattern does not hold."""
    if conv.op_type != "Conv" or conv.domain or len(conv.input) < 2:
        return None
    x = g.dequantized(conv.input[0])
    w = g.dequantized(conv.input[1])
    if x is None or w is None:
        return None
    (_, (xq, xs, xz)), (_, (wq, ws, wz)) = x, w
    weight, w_scale = g.array(wq), g.array(ws)
    x_scale, x_zero = g.array(xs), g.array(xz) if xz else None
    if weight is None or w_scale is None or x_scale is None or x_zero is None:
        return None
    if weight.dtype != np.int8 or weight.ndim != 4 or x_zero.size != 1:
        return None
    if x_scale.size != 1 or w_scale.size not in (1, weight.shape[0]):
        return None
    if wz and (g.array(wz) is None or np.any(g.array(wz))):
        return None
    relu = None
    reader = g.only_reader(conv.output[0])
    if reader is not None and reader.op_type == "Relu" and not reader.domain:
        relu, reader = reader, g.only_reader(reader.output[0])
    if reader is None or reader.op_type != "QuantizeLinear" or reader.domain:
        return None
    quantize = reader
    ys, yz = [*quantize.input, "", ""][1:3]
    y_scale, y_zero = g.array(ys), g.array(yz) if yz else None
    if y_scale is None or y_zero is None or y_scale.size != 1 or y_zero.size != 1:
        return None
    if _attr(quantize, "axis", 1) != 1 and y_scale.size != 1:
        return None
    bias = _bias(g, conv, float(x_scale.reshape(())), w_scale, weight.shape[0])
    if bias is False:
        return None
    prefix = f"{conv.output[0]}.qlinear"
    inits = []

    def constant(suffix: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(array, f"{prefix}.{suffix}"))
        return inits[-1].name

    w_zero = wz or constant("w_zero", np.zeros(w_scale.shape, np.int8))
    inputs = [xq, xs, xz, wq, ws, w_zero, ys, yz]
    if bias is not None:
        inputs.append(constant("bias", bias))
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    fused = quantize.output[0] if relu is None else f"{prefix}.out"
    nodes = [
        helper.make_node(
            "QLinearConv", inputs, [fused], name=conv.name or prefix, **attrs
        )
    ]
    if relu is not None:  # max(q, yz), as the float graph quantizes a relu
        real, rectified = f"{prefix}.real", f"{prefix}.relu"
        nodes += [
            helper.make_node("DequantizeLinear", [fused, ys, yz], [real]),
            helper.make_node("Relu", [real], [rectified]),
            helper.make_node("QuantizeLinear", [rectified, ys, yz], quantize.output),
        ]
    remove = [_identity(conv), _identity(quantize)]
    if relu is not None:
        remove.append(_identity(relu))
    return {"remove": remove, "at": _identity(quantize), "nodes": nodes, "inits": inits}


def _bias(
    g: _Graph, conv: onnx.NodeProto, x_scale: float, w_scale: np.ndarray, o: int
) -> np.ndarray | None | bool:
    """The Conv's bias as int32 at scale x_scale * w_scale (None without one;
    False where it is not an initializer, or its dequantization, of O values
    that fit)."""
    if len(conv.input) < 3 or not conv.input[2]:
        return None
    name = conv.input[2]
    dq = g.dequantized(name)
    if dq is not None:
        _, (bq, bs, bz) = dq
        values, scale = g.array(bq), g.array(bs)
        zero = g.array(bz) if bz else np.zeros((), np.int32)
        if values is None or scale is None or zero is None:
            return False
        real = (values.astype(np.float64) - zero.astype(np.float64)) * scale
    else:
        real = g.array(name)
        if real is None:
            return False
        real = real.astype(np.float64)
    if real.shape != (o,):
        return False
    step = x_scale * w_scale.astype(np.float64).reshape(-1)
    quantized = np.rint(real / np.where(step == 0, 1.0, step))
    if np.any(np.abs(quantized) > INT32.max):
        return False
    return quantized.astype(np.int32)
