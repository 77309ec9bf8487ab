"""numpy semantics of the graph dialect: `evaluate(op, inputs)` computes one op,
`run_graph(func, inputs, params)` a whole `@main`.

Constant folding evaluates ops with it, and tests use it as the reference a
compiled graph must match (it follows ONNX's definitions, which onnxruntime
checks in tests).
"""

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from ember.dialects import graph
from ember.dialects import graph_shapes as shapes

Array = np.ndarray

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: Array) -> Array:
    return _erf(x).astype(x.dtype)


def conv2d(
    x: Array,
    w: Array,
    b: Array | None,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """Direct convolution, one einsum per kernel tap (exact enough for tests)."""
    t, left, bot, r = padding
    xp = np.pad(x, ((0, 0), (0, 0), (t, bot), (left, r)))
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    og = o // groups
    out = np.zeros((n, groups, og, oh, ow), np.float64)
    xg = xp.reshape(n, groups, cg, *xp.shape[2:]).astype(np.float64)
    wg = w.reshape(groups, og, cg, kh, kw).astype(np.float64)
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dilation[0], j * dilation[1]
            patch = xg[
                :,
                :,
                :,
                h0 : h0 + strides[0] * (oh - 1) + 1 : strides[0],
                w0 : w0 + strides[1] * (ow - 1) + 1 : strides[1],
            ]
            out += np.einsum("ngchw,goc->ngohw", patch, wg[:, :, :, i, j])
    y = out.reshape(n, o, oh, ow)
    if b is not None:
        y += b.reshape(1, o, 1, 1)
    return y.astype(x.dtype)


def pool2d(
    x: Array,
    kind: str,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool = False,
) -> Array:
    out_shape = shapes.pool2d(x.shape, kernel, strides, padding, dilation, ceil_mode)
    oh, ow = out_shape[2:]
    t, left = padding[0], padding[1]
    # pad enough on the far side for ceil_mode's last window
    need_h = (oh - 1) * strides[0] + dilation[0] * (kernel[0] - 1) + 1
    need_w = (ow - 1) * strides[1] + dilation[1] * (kernel[1] - 1) + 1
    extra_h = max(0, need_h - x.shape[2] - t)
    extra_w = max(0, need_w - x.shape[3] - left)
    fill = -np.inf if kind == "max" else 0.0
    pads = ((0, 0), (0, 0), (t, extra_h), (left, extra_w))
    xp = np.pad(x.astype(np.float64), pads, constant_values=fill)
    # the divisor counts real elements, plus the declared padding if asked (never
    # the extra padding a ceil_mode window hangs over)
    counter = np.zeros(xp.shape[2:])
    if count_include_pad:
        counter[: t + x.shape[2] + padding[2], : left + x.shape[3] + padding[3]] = 1
    else:
        counter[t : t + x.shape[2], left : left + x.shape[3]] = 1
    acc = np.full((*x.shape[:2], oh, ow), fill)
    count = np.zeros((oh, ow))
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            h0, w0 = i * dilation[0], j * dilation[1]
            sl = (
                slice(h0, h0 + strides[0] * (oh - 1) + 1, strides[0]),
                slice(w0, w0 + strides[1] * (ow - 1) + 1, strides[1]),
            )
            window = xp[:, :, sl[0], sl[1]]
            if kind == "max":
                acc = np.maximum(acc, window)
            else:
                acc = acc + window
                count += counter[sl]
    if kind == "avg":
        acc = acc / np.maximum(count, 1)
    return acc.astype(x.dtype)


def _matmul(a: Array, b: Array) -> Array:
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def _softmax(x: Array, axis: int) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _clip(x: Array, lo: float | None, hi: float | None) -> Array:
    if lo is not None:
        x = np.maximum(x, np.asarray(lo, x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi, x.dtype))
    return x


def _batch_norm(x: Array, g: Array, b: Array, m: Array, v: Array, eps: float) -> Array:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = (g / np.sqrt(v + np.asarray(eps, v.dtype))).reshape(shape)
    return (x - m.reshape(shape)) * scale + b.reshape(shape)


def _pad(x: Array, pads: Sequence[int], value: float) -> Array:
    r = x.ndim
    return np.pad(x, list(zip(pads[:r], pads[r:], strict=True)), constant_values=value)


_UNARY: dict[type, Callable[[Array], Array]] = {
    graph.ReluOp: lambda x: np.maximum(x, np.zeros((), x.dtype)),
    graph.SigmoidOp: lambda x: 1 / (1 + np.exp(-x)),
    graph.TanhOp: np.tanh,
    graph.ExpOp: np.exp,
    graph.SqrtOp: np.sqrt,
    graph.ErfOp: erf,
    graph.GeluOp: lambda x: x * (1 + erf(x / np.asarray(math.sqrt(2), x.dtype))) / 2,
    graph.NegOp: np.negative,
    graph.AbsOp: np.abs,
    graph.LogOp: np.log,
}

_BINARY: dict[type, Callable[[Array, Array], Array]] = {
    graph.AddOp: np.add,
    graph.SubOp: np.subtract,
    graph.MulOp: np.multiply,
    graph.DivOp: np.divide,
    graph.MaximumOp: np.maximum,
    graph.MinimumOp: np.minimum,
    graph.PowOp: np.power,
}


def evaluate(op: Operation, inputs: Sequence[Array]) -> Array:
    """The value of graph op `op` on `inputs` (its operands' values)."""
    cfg: dict[str, Any] = op.config if isinstance(op, graph.GraphOp) else {}
    if isinstance(op, graph.ConstantOp):
        return op.numpy()
    if isinstance(op, graph.FusedOp):
        (y,) = _run_block(op.body.block, inputs, {})
        return np.asarray(y, dtype=inputs[0].dtype if inputs else y.dtype)
    if not inputs:
        raise NotImplementedError(f"no numpy semantics for {op.name}")
    x = inputs[0]
    t = type(op)
    if t in _UNARY:
        y = _UNARY[t](x)
    elif t in _BINARY:
        y = _BINARY[t](inputs[0], inputs[1])
    elif isinstance(op, graph.Conv2DOp):
        y = conv2d(inputs[0], inputs[1], (inputs[2:] or [None])[0], **cfg)
    elif isinstance(op, graph.DenseOp):
        y = _matmul(inputs[0], inputs[1].T)
        if len(inputs) == 3:
            y = y + inputs[2]
    elif isinstance(op, graph.MatmulOp | graph.BatchMatmulOp):
        y = _matmul(inputs[0], inputs[1])
    elif isinstance(op, graph.BatchNormOp):
        x, gamma, beta, mean, var = inputs
        y = _batch_norm(x, gamma, beta, mean, var, cfg["epsilon"])
    elif isinstance(op, graph.ClipOp):
        y = _clip(x, cfg["min"], cfg["max"])
    elif isinstance(op, graph.MaxPool2DOp):
        y = pool2d(x, "max", **cfg)
    elif isinstance(op, graph.AvgPool2DOp):
        y = pool2d(x, "avg", dilation=(1, 1), **cfg)
    elif isinstance(op, graph.GlobalAvgPool2DOp):
        y = x.mean(axis=(2, 3), keepdims=True)
    elif isinstance(op, graph.SoftmaxOp):
        y = _softmax(x, cfg["axis"])
    elif isinstance(op, graph.ReshapeOp | graph.FlattenOp):
        y = x.reshape(op.results[0].type.get_shape())  # type: ignore[attr-defined]
    elif isinstance(op, graph.TransposeOp):
        y = x.transpose(op.permutation)
    elif isinstance(op, graph.ConcatOp):
        y = np.concatenate(inputs, axis=cfg["axis"])
    elif isinstance(op, graph.PadOp):
        y = _pad(x, cfg["pads"], cfg["value"])
    elif isinstance(op, graph.ReduceSumOp | graph.ReduceMeanOp | graph.ReduceMaxOp):
        fn = {
            graph.ReduceSumOp: np.sum,
            graph.ReduceMeanOp: np.mean,
            graph.ReduceMaxOp: np.max,
        }[t]
        y = fn(x, axis=op.reduced_axes, keepdims=cfg["keepdims"])
    else:
        raise NotImplementedError(f"no numpy semantics for {op.name}")
    return np.asarray(y, dtype=x.dtype)


def _run_block(
    block: Any, inputs: Sequence[Array], params: Mapping[str, Array]
) -> list[Array]:
    env: dict[SSAValue, Array] = dict(zip(block.args, inputs, strict=True))
    for op in block.ops:
        if isinstance(op, func.ReturnOp | graph.YieldOp):
            return [env[v] for v in op.operands]
        if isinstance(op, graph.ParamOp):
            name = op.param_name.data
            if name not in params:
                raise KeyError(f"expected a value for param '{name}', got none")
            env[op.result] = np.asarray(params[name])
            continue
        outs = evaluate(op, [env[v] for v in op.operands])
        env[op.results[0]] = outs
    raise ValueError("expected the block to end in func.return or graph.yield")


def run_graph(
    fn: func.FuncOp, inputs: Sequence[Array], params: Mapping[str, Array]
) -> list[Array]:
    """The results of graph function `fn` on `inputs`, params bound from `params`."""
    return _run_block(fn.body.block, [np.asarray(a) for a in inputs], params)
