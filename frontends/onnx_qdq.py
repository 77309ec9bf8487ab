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
int32 at it. A MatMul by a 2-D weight, or a Gemm, between the same nodes
becomes `ai.ember.QLinearDense` (`graph.qdense`), and a MaxPool between a
DequantizeLinear and a QuantizeLinear of one scale and zero point the MaxPool
of the bytes. Groups that do not match stay as they are (and compute exactly
in float).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ember.frontends.onnx_quant import signed_weight

INT32 = np.iinfo(np.int32)
RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


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
        """The value of `name` where it is known: an initializer, or the
        QuantizeLinear of initializers (a weight exporters quantize in the
        graph, as PyTorch's PT2E export writes it)."""
        t = self.init.get(name)
        if t is not None:
            return numpy_helper.to_array(t)
        node = self.producer.get(name)
        if node is None or node.op_type != "QuantizeLinear" or node.domain:
            return None
        x, scale, zero = (self.array(i) if i else None for i in [*node.input, ""][:3])
        if x is None or scale is None or zero is None or zero.dtype.name not in RANGES:
            return None
        axis = _attr(node, "axis", 1)
        shape = [1] * x.ndim
        if scale.size > 1:
            if not -x.ndim <= axis < x.ndim or _attr(node, "block_size", 0):
                return None
            shape[axis] = -1
        quotient = x.astype(np.float32) / scale.astype(np.float32).reshape(shape)
        q = np.rint(quotient) + zero.astype(np.float32).reshape(shape)
        return np.clip(q, *RANGES[zero.dtype.name]).astype(zero.dtype)

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
    plans = [
        p
        for n in model.graph.node
        if (p := _conv_plan(g, n) or _dense_plan(g, n) or _pool_plan(g, n)) is not None
    ]
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


@dataclass(frozen=True)
class _Operands:
    """A QDQ product's data and weight, each the DequantizeLinear of a
    quantized tensor: `names` (xq, xs, xz, wq, ws, wz; "" for an absent
    zero point), the weight's DequantizeLinear, and the values known."""

    names: tuple[str, str, str, str, str, str]
    w_node: onnx.NodeProto
    weight: np.ndarray
    w_scale: np.ndarray
    x_scale: np.ndarray


def _operands(g: _Graph, node: onnx.NodeProto, rank: int) -> _Operands | None:
    """`node`'s inputs 0 and 1 as a QDQ product's operands: a weight of
    `rank` and its scale known, the data's scale and zero point one value
    each and known; None otherwise."""
    x, w = g.dequantized(node.input[0]), g.dequantized(node.input[1])
    if x is None or w is None:
        return None
    (_, (xq, xs, xz)), (w_node, (wq, ws, wz)) = x, w
    weight, w_scale = g.array(wq), g.array(ws)
    x_scale, x_zero = g.array(xs), g.array(xz) if xz else None
    if weight is None or w_scale is None or x_scale is None or x_zero is None:
        return None
    if weight.ndim != rank or x_scale.size != 1 or x_zero.size != 1:
        return None
    return _Operands((xq, xs, xz, wq, ws, wz), w_node, weight, w_scale, x_scale)


def _conv_plan(g: _Graph, conv: onnx.NodeProto) -> dict | None:
    """How a QDQ Conv becomes a QLinearConv: the nodes to remove, those to
    put where its QuantizeLinear was, the initializers they add; None where
    the pattern does not hold."""
    if conv.op_type != "Conv" or conv.domain or len(conv.input) < 2:
        return None
    found = _operands(g, conv, rank=4)
    if found is None:
        return None
    xq, xs, xz, wq, ws, wz = found.names
    weight, w_scale, x_scale = found.weight, found.w_scale, found.x_scale
    if weight.dtype.name not in ("int8", "uint8"):
        return None
    if w_scale.size not in (1, weight.shape[0]):
        return None
    if wz and g.array(wz) is None:
        return None  # QLinearConv's converter decides by the zero points
    after = _requantized_output(g, conv)
    if after is None:
        return None
    relu, quantize, ys, yz = after
    bias_name = conv.input[2] if len(conv.input) > 2 else ""
    step = float(x_scale.reshape(()))
    usable, bias = _bias(g, bias_name, step, w_scale, weight.shape[0])
    if not usable:
        return None
    prefix = f"{conv.output[0]}.qlinear"
    inits = []

    def constant(suffix: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(array, f"{prefix}.{suffix}"))
        return inits[-1].name

    w_zero = wz or constant("w_zero", np.zeros(w_scale.shape, weight.dtype))
    inputs = [xq, xs, xz, wq, ws, w_zero, ys, yz]
    if bias is not None:
        inputs.append(constant("bias", bias))
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    fused = helper.make_node(
        "QLinearConv", inputs, [f"{prefix}.out"], name=conv.name or prefix, **attrs
    )
    return _plan(conv, fused, relu, quantize, ys, yz, prefix, inits)


def _pool_plan(g: _Graph, pool: onnx.NodeProto) -> dict | None:
    """A MaxPool between a DequantizeLinear and a QuantizeLinear of the same
    scale and zero point is the MaxPool of the quantized tensor (the maximum
    commutes with a monotone map, and the padding's -inf is the type's
    lowest value): the bytes stay bytes."""
    if pool.op_type != "MaxPool" or pool.domain or len(pool.output) != 1:
        return None
    x = g.dequantized(pool.input[0])
    reader = g.only_reader(pool.output[0])
    if x is None or reader is None or reader.op_type != "QuantizeLinear":
        return None
    _, (xq, xs, xz) = x
    ys, yz = [*reader.input, "", ""][1:3]
    pairs = [
        (g.array(xs), g.array(ys)),
        (g.array(xz) if xz else None, g.array(yz) if yz else None),
    ]
    for a, b in pairs:
        if (
            a is None
            or b is None
            or a.size != 1
            or a.dtype != b.dtype
            or a.reshape(()) != b.reshape(())
        ):
            return None
    attrs = {a.name: helper.get_attribute_value(a) for a in pool.attribute}
    fused = helper.make_node(
        "MaxPool", [xq], list(reader.output), name=pool.name, **attrs
    )
    return {
        "remove": [_identity(pool), _identity(reader)],
        "at": _identity(reader),
        "nodes": [fused],
        "inits": [],
    }


def _requantized_output(g: _Graph, node: onnx.NodeProto):
    """The (Relu or None, QuantizeLinear, y_scale name, y_zero name) that
    alone read `node`'s output, the scale and zero point one value each
    and known; None otherwise."""
    relu = None
    reader = g.only_reader(node.output[0])
    if reader is not None and reader.op_type == "Relu" and not reader.domain:
        relu, reader = reader, g.only_reader(reader.output[0])
    if reader is None or reader.op_type != "QuantizeLinear" or reader.domain:
        return None
    ys, yz = [*reader.input, "", ""][1:3]
    y_scale, y_zero = g.array(ys), g.array(yz) if yz else None
    if y_scale is None or y_zero is None or y_scale.size != 1 or y_zero.size != 1:
        return None
    return relu, reader, ys, yz


def _plan(
    node: onnx.NodeProto,
    fused: onnx.NodeProto,
    relu,
    quantize: onnx.NodeProto,
    ys: str,
    yz: str,
    prefix: str,
    inits: list,
) -> dict:
    """The rewrite of `node` (and its Relu and QuantizeLinear) into `fused`:
    the nodes removed, those put where the QuantizeLinear was, the
    initializers added."""
    remove = [_identity(node), _identity(quantize)]
    if relu is not None:
        remove.append(_identity(relu))
    return {
        "remove": remove,
        "at": _identity(quantize),
        "nodes": _with_output(fused, relu, quantize, ys, yz, prefix),
        "inits": inits,
    }


def _with_output(
    fused: onnx.NodeProto, relu, quantize: onnx.NodeProto, ys: str, yz: str, prefix: str
) -> list[onnx.NodeProto]:
    """`fused` writing the QuantizeLinear's output, or through a quantized
    ReLU (DequantizeLinear -> Relu -> QuantizeLinear: exactly max(q, yz))."""
    if relu is None:
        fused.output[:] = quantize.output
        return [fused]
    real, rectified = f"{prefix}.real", f"{prefix}.relu"
    return [
        fused,
        helper.make_node("DequantizeLinear", [fused.output[0], ys, yz], [real]),
        helper.make_node("Relu", [real], [rectified]),
        helper.make_node("QuantizeLinear", [rectified, ys, yz], quantize.output),
    ]


DOMAIN = "ai.ember"
"""The domain of the one node `fuse_qdq` makes that ONNX has no op for:
`QLinearDense(x, x_scale, x_zero, w, w_scale, y_scale, y_zero[, bias])`, a
dense layer with an int8 weight (N, K) of zero zero points, an int32 bias at
x_scale * w_scale, on data (..., K)."""


def _dense_plan(g: _Graph, node: onnx.NodeProto) -> dict | None:
    """How a QDQ MatMul (by a 2-D weight) or Gemm becomes a QLinearDense."""
    if node.domain or node.op_type not in ("MatMul", "Gemm") or len(node.input) < 2:
        return None
    if node.op_type == "Gemm" and (
        _attr(node, "transA", 0)
        or _attr(node, "alpha", 1.0) != 1.0
        or _attr(node, "beta", 1.0) != 1.0
    ):
        return None
    found = _operands(g, node, rank=2)
    if found is None:
        return None
    xq, xs, xz, wq, ws, wz = found.names
    weight, w_scale, x_scale = found.weight, found.w_scale, found.x_scale
    w_node = found.w_node
    transposed = node.op_type == "Gemm" and _attr(node, "transB", 0)
    n = weight.shape[0] if transposed else weight.shape[1]
    w_zero = g.array(wz) if wz else np.zeros((), weight.dtype)
    if w_zero is None:
        return None
    weight = signed_weight(weight, w_zero, axis=0 if transposed else 1)
    if weight is None:
        return None
    if w_scale.size not in (1, n):
        return None
    if w_scale.size > 1 and _attr(w_node, "axis", 1) % 2 != (0 if transposed else 1):
        return None  # a scale per row of K, not per output
    after = _requantized_output(g, node)
    if after is None:
        return None
    relu, quantize, ys, yz = after
    prefix = f"{node.output[0]}.qlinear"
    inits = [
        numpy_helper.from_array(
            np.ascontiguousarray(weight if transposed else weight.T), f"{prefix}.w"
        )
    ]
    inputs = [xq, xs, xz, inits[0].name, ws, ys, yz]
    if len(node.input) > 2 and node.input[2]:
        usable, bias = _bias(g, node.input[2], float(x_scale.reshape(())), w_scale, n)
        if not usable or bias is None:
            return None
        inits.append(numpy_helper.from_array(bias, f"{prefix}.bias"))
        inputs.append(inits[-1].name)
    fused = helper.make_node(
        "QLinearDense", inputs, [f"{prefix}.out"], domain=DOMAIN, name=node.name
    )
    return _plan(node, fused, relu, quantize, ys, yz, prefix, inits)


def _bias(
    g: _Graph, name: str, x_scale: float, w_scale: np.ndarray, o: int
) -> tuple[bool, np.ndarray | None]:
    """Whether the bias `name` ("": none) can be an int32 at scale x_scale *
    w_scale (an initializer, or its dequantization, of O values that fit),
    and that int32 bias (None without one)."""
    if not name:
        return True, None
    dq = g.dequantized(name)
    if dq is not None:
        _, (bq, bs, bz) = dq
        values, scale = g.array(bq), g.array(bs)
        zero = g.array(bz) if bz else np.zeros((), np.int32)
        if values is None or scale is None or zero is None:
            return False, None
        real = (values.astype(np.float64) - zero.astype(np.float64)) * scale
    else:
        real = g.array(name)
        if real is None:
            return False, None
        real = real.astype(np.float64)
    if real.shape != (o,):
        return False, None
    step = x_scale * w_scale.astype(np.float64).reshape(-1)
    quantized = np.rint(real / np.where(step == 0, 1.0, step))
    if np.any(np.abs(quantized) > INT32.max):
        return False, None
    return True, quantized.astype(np.int32)


# -- QOperator ops of onnxruntime's contrib domain ----------------------------------

MS = "com.microsoft"


def expand_qoperators(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with onnxruntime's contrib quantized ops (QGemm, QLinearAdd,
    QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat,
    QLinearSigmoid, QLinearLeakyRelu, as its quantizer's QOperator format
    writes them) as the DequantizeLinear -> float op -> QuantizeLinear they
    define (a copy; the model itself when it has none). Convolutions
    (QLinearConv) are a standard op and stay."""
    if not any(n.domain == MS and n.op_type in EXPANSIONS for n in model.graph.node):
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    shapes = {t.name: tuple(t.dims) for t in graph.initializer}
    nodes: list[onnx.NodeProto] = []
    for index, node in enumerate(model.graph.node):
        expand = EXPANSIONS.get(node.op_type) if node.domain == MS else None
        if expand is None:
            nodes.append(node)
            continue
        prefix = f"{node.output[0]}.{node.op_type}{index}"
        made, inits = expand(node, prefix, shapes)
        nodes.extend(made)
        graph.initializer.extend(inits)
    del graph.node[:]
    graph.node.extend(nodes)
    return out


def _dq(x: str, scale: str, zero: str, out: str, axis: int | None = None):
    inputs = [x, scale] + ([zero] if zero else [])
    attrs: dict[str, Any] = {} if axis is None else {"axis": axis}
    return helper.make_node("DequantizeLinear", inputs, [out], **attrs)


def _q(x: str, scale: str, zero: str, out: str):
    return helper.make_node(
        "QuantizeLinear", [x, scale] + ([zero] if zero else []), [out]
    )


def _inputs(node: onnx.NodeProto, count: int) -> list[str]:
    return [*node.input, *[""] * count][:count]


def _elementwise(op: str):
    """QLinearAdd/QLinearMul (A, As, Az, B, Bs, Bz, Cs, Cz)."""

    def expand(node, prefix, shapes):
        a, a_s, a_z, b, b_s, b_z, c_s, c_z = _inputs(node, 8)
        real_a, real_b, real_c = (f"{prefix}.{n}" for n in "abc")
        return [
            _dq(a, a_s, a_z, real_a),
            _dq(b, b_s, b_z, real_b),
            helper.make_node(op, [real_a, real_b], [real_c]),
            _q(real_c, c_s, c_z, node.output[0]),
        ], []

    return expand


def _unary(op: str, **fixed):
    """QLinearSigmoid/QLinearLeakyRelu/QLinearGlobalAveragePool/
    QLinearAveragePool (X, Xs, Xz, Ys, Yz), the node's attributes passed on
    (but channels_last, which must be 0)."""

    def expand(node, prefix, shapes):
        x, x_s, x_z, y_s, y_z = _inputs(node, 5)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attrs.pop("channels_last", 0):
            return [node], []  # left for the unsupported-op report
        real, done = f"{prefix}.x", f"{prefix}.y"
        return [
            _dq(x, x_s, x_z, real),
            helper.make_node(op, [real], [done], **{**attrs, **fixed}),
            _q(done, y_s, y_z, node.output[0]),
        ], []

    return expand


def _concat(node, prefix, shapes):
    """QLinearConcat(Ys, Yz, X0, X0s, X0z, X1, ...)."""
    y_s, y_z, *rest = node.input
    made, reals = [], []
    for i in range(0, len(rest), 3):
        x, x_s, x_z = [*rest[i : i + 3], "", ""][:3]
        reals.append(f"{prefix}.x{i // 3}")
        made.append(_dq(x, x_s, x_z, reals[-1]))
    axis = _attr(node, "axis", 0)
    joined = f"{prefix}.y"
    made.append(helper.make_node("Concat", reals, [joined], axis=axis))
    made.append(_q(joined, y_s, y_z, node.output[0]))
    return made, []


def _qgemm(node, prefix, shapes):
    """QGemm(A, As, Az, B, Bs, Bz, C, Ys, Yz): C is int32 at As * Bs; without
    Ys the output is float."""
    a, a_s, a_z, b, b_s, b_z, c, y_s, y_z = _inputs(node, 9)
    trans_b = _attr(node, "transB", 0)
    per_column = len(shapes.get(b_s, ())) == 1 and shapes.get(b_s) != (1,)
    real_a, real_b, real_c, real_y = (f"{prefix}.{n}" for n in "abcy")
    made = [
        _dq(a, a_s, a_z, real_a),
        _dq(b, b_s, b_z, real_b, axis=(0 if trans_b else 1) if per_column else None),
    ]
    gemm_inputs = [real_a, real_b]
    if c:
        step = f"{prefix}.c_scale"
        made.append(helper.make_node("Mul", [a_s, b_s], [step]))
        made.append(_dq(c, step, "", real_c, axis=0 if per_column else None))
        gemm_inputs.append(real_c)
    attrs: dict[str, Any] = {
        k: _attr(node, k, d) for k, d in (("alpha", 1.0), ("transA", 0), ("transB", 0))
    }
    out = node.output[0] if not y_s else real_y
    made.append(helper.make_node("Gemm", gemm_inputs, [out], **attrs))
    if y_s:
        made.append(_q(real_y, y_s, y_z, node.output[0]))
    return made, []


EXPANSIONS = {
    "QLinearAdd": _elementwise("Add"),
    "QLinearMul": _elementwise("Mul"),
    "QLinearSigmoid": _unary("Sigmoid"),
    "QLinearLeakyRelu": _unary("LeakyRelu"),
    "QLinearGlobalAveragePool": _unary("GlobalAveragePool"),
    "QLinearAveragePool": _unary("AveragePool"),
    "QLinearConcat": _concat,
    "QGemm": _qgemm,
}
