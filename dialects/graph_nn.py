"""`graph` dialect ops of neural networks: conv2d, dense (and dense_dequant),
matmul, batch_matmul, batch_norm, pooling, softmax and attention (the dialect
is assembled in `graph.py`)."""

import math
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import (
    Pure,
)

from ember.dialects import graph_numpy as gn
from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_base import NUMPY_TYPES, REQUIRED, GraphOp
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import Shape, ShapeError

# ---------------------------------------------------------------- anchors


@irdl_op_definition
class Conv2DOp(GraphOp):
    """2-D convolution, NCHW data and OIHW weight (O, C/groups, kh, kw), bias (O).

    %y = graph.conv2d %x, %w, %b {strides = [1, 1], padding = [1, 1, 1, 1],
           dilation = [1, 1], groups = 1} : (...) -> tensor<1x16x8x8xf32>
    `padding` is [top, left, bottom, right].
    """

    name = "graph.conv2d"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "strides": ("ints", (1, 1)),
        "padding": ("ints", (0, 0, 0, 0)),
        "dilation": ("ints", (1, 1)),
        "groups": ("int", 1),
    }
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) not in (2, 3):
            raise ShapeError(f"expected 2 or 3 operands, got {len(s)}")
        return shapes.conv2d(s[0], s[1], s[2] if len(s) == 3 else None, **cfg)

    def reference(self, inputs: list[Array]) -> Array:
        return gn.conv2d(inputs[0], inputs[1], (inputs[2:] or [None])[0], **self.config)


Conv2dOp = Conv2DOp


@irdl_op_definition
class QConv2DOp(GraphOp):
    """A quantized 2-D convolution (onnxruntime's QLinearConv, and QDQ's
    DequantizeLinear -> Conv -> QuantizeLinear): NCHW data of ui8 or i8, an
    OIHW weight of i8, an i32 bias (O) and an f32 scale (O); one group.

        acc = sum over (c, i, j) of (x_padded - x_zero) * w     (exact, int32)
        y   = clamp(roundeven(f32(acc + bias[o]) * scale[o]) + y_zero, clip)

    The data is padded with `x_zero` (a real zero); `clip` is [lo, hi] within
    the result's type, ui8 or i8 as `signed` says (a ReLU after the
    convolution raises lo to y_zero). `scale` is x_scale * w_scale[o] /
    y_scale.

    %y = graph.qconv2d %x, %w, %b, %s {padding = [1, 1, 1, 1], x_zero = 128,
           y_zero = 0, clip = [0, 255]} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xi8>,
           tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x6x6xui8>
    """

    name = "graph.qconv2d"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "strides": ("ints", (1, 1)),
        "padding": ("ints", (0, 0, 0, 0)),
        "dilation": ("ints", (1, 1)),
        "groups": ("int", 1),
        "x_zero": ("int", REQUIRED),
        "y_zero": ("int", REQUIRED),
        "clip": ("ints", REQUIRED),
        "signed": ("bool", False),
    }
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    scale = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) != 4:
            raise ShapeError(f"expected 4 operands, got {len(s)}")
        geometry = {k: cfg[k] for k in ("strides", "padding", "dilation", "groups")}
        out = shapes.conv2d(s[0], s[1], None, **geometry)
        o, terms = s[1][0], math.prod(s[1][1:])
        if cfg["groups"] > 1 and terms > GROUPED_TERMS:
            raise ShapeError(
                f"expected at most {GROUPED_TERMS} products per output of a "
                f"grouped convolution, got {terms}"
            )
        for what, shape in (("bias", s[2]), ("scale", s[3])):
            if tuple(shape) != (o,):
                raise ShapeError(f"expected a {what} ({o},), got {tuple(shape)}")
        _check_requantization(cfg)
        return out

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        return _quantized_element(elements, cfg)

    def reference(self, inputs: list[Array]) -> Array:
        x, w, bias, scale = inputs
        cfg = self.config
        shifted = x.astype(np.float64) - cfg["x_zero"]
        geometry = {k: cfg[k] for k in ("strides", "padding", "dilation", "groups")}
        acc = gn.conv2d(shifted, w.astype(np.float64), None, **geometry)
        return _requantized(acc.astype(np.int64) + bias[:, None, None], scale, cfg, 1)


@irdl_op_definition
class QDenseOp(GraphOp):
    """A quantized dense layer (QDQ's DequantizeLinear -> MatMul or Gemm ->
    QuantizeLinear, QLinearMatMul by a known weight): data (M, K) of ui8 or
    i8, weight (N, K) of i8, an i32 bias (N) and an f32 scale (N).

        acc = sum over k of (x[m, k] - x_zero) * w[n, k]         (exact, int32)
        y   = clamp(roundeven(f32(acc + bias[n]) * scale[n]) + y_zero, clip)

    %y = graph.qdense %x, %w, %b, %s {x_zero = 128, y_zero = 0, clip = [0, 255]}
           : (tensor<?x64xui8, ["m"]>, tensor<10x64xi8>, tensor<10xi32>,
              tensor<10xf32>) -> tensor<?x10xui8, ["m"]>
    """

    name = "graph.qdense"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "x_zero": ("int", REQUIRED),
        "y_zero": ("int", REQUIRED),
        "clip": ("ints", REQUIRED),
        "signed": ("bool", False),
    }
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    scale = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) != 4:
            raise ShapeError(f"expected 4 operands, got {len(s)}")
        out = shapes.dense(s[0], s[1], None)
        n = s[1][0]
        for what, shape in (("bias", s[2]), ("scale", s[3])):
            if tuple(shape) != (n,):
                raise ShapeError(f"expected a {what} ({n},), got {tuple(shape)}")
        _check_requantization(cfg)
        return out

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        return _quantized_element(elements, cfg)

    def reference(self, inputs: list[Array]) -> Array:
        x, w, bias, scale = inputs
        cfg = self.config
        acc = (x.astype(np.int64) - cfg["x_zero"]) @ w.astype(np.int64).T
        return _requantized(acc + bias, scale, cfg, axis=-1)


def _check_requantization(cfg: dict[str, Any]) -> None:
    """A quantized op's clip range and output zero point, within its type."""
    lo, hi = _range(cfg["signed"])
    clip = list(cfg["clip"])
    if len(clip) != 2 or not lo <= clip[0] <= clip[1] <= hi:
        raise ShapeError(f"expected clip [lo, hi] within [{lo}, {hi}], got {clip}")
    if not lo <= cfg["y_zero"] <= hi:
        raise ShapeError(f"expected y_zero within [{lo}, {hi}], got {cfg['y_zero']}")


def _quantized_element(elements: list[Attribute], cfg: dict[str, Any]) -> Attribute:
    """A quantized op's result element type, its operands' checked."""
    data, weight, bias, scale = map(str, elements)
    if data not in ("ui8", "i8") or (weight, bias, scale) != ("i8", "i32", "f32"):
        raise ShapeError(
            "expected ui8 or i8 data, an i8 weight, an i32 bias and an f32 "
            f"scale, got {data}, {weight}, {bias}, {scale}"
        )
    lo, hi = _range(data == "i8")
    if not lo <= cfg["x_zero"] <= hi:
        raise ShapeError(f"expected x_zero within [{lo}, {hi}], got {cfg['x_zero']}")
    return NUMPY_TYPES["int8" if cfg["signed"] else "uint8"]


def _requantized(acc: Array, scale: Array, cfg: dict[str, Any], axis: int) -> Array:
    """The int64 accumulator, bias added, requantized: scaled in float32 per
    output channel (on `axis`), rounded half to even, y_zero added, clipped."""
    shape = [1] * acc.ndim
    shape[axis] = -1
    y = np.rint(acc.astype(np.float32) * scale.reshape(shape)) + cfg["y_zero"]
    return np.clip(y, *cfg["clip"]).astype(np.int8 if cfg["signed"] else np.uint8)


GROUPED_TERMS = 2**24 // (255 * 128)
"""Products per output of a grouped `graph.qconv2d`: what a float32 sum of
integers of magnitude up to 255 * 128 holds exactly."""


def _range(signed: bool) -> tuple[int, int]:
    return (-128, 127) if signed else (0, 255)


@irdl_op_definition
class DenseOp(GraphOp):
    """y = x wᵀ + b: x (M, K), weight (N, K), optional bias (N).

    %y = graph.dense %x, %w, %b : (tensor<1x64xf32>, tensor<10x64xf32>,
           tensor<10xf32>) -> tensor<1x10xf32>
    """

    name = "graph.dense"
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) not in (2, 3):
            raise ShapeError(f"expected 2 or 3 operands, got {len(s)}")
        return shapes.dense(s[0], s[1], s[2] if len(s) == 3 else None)

    def reference(self, inputs: list[Array]) -> Array:
        y = gn.matmul(inputs[0], inputs[1].T)
        return y + inputs[2] if len(inputs) == 3 else y


@irdl_op_definition
class DenseDequantOp(GraphOp):
    """y = x dequant(w)ᵀ (+ b) with the weight stored as integers and float
    scales (weight-only quantization, onnxruntime's MatMulNBits): x (M, K),
    scale (N, K / group), and w (N, K) of i8 (`bits = 8`) or (N, K / 2) of
    ui8 holding two 4-bit values a byte (`bits = 4`: element 2k in the low
    nibble, 2k + 1 in the high one, each stored + 8); optional bias (N).
    dequant(w)[n, k] = int(w[n, k]) * scale[n, k // group].

    %y = graph.dense_dequant %x, %w, %s {bits = 4, group = 32}
           : (tensor<1x64xf32>, tensor<10x32xui8>, tensor<10x2xf32>) -> tensor<1x10xf32>
    """

    name = "graph.dense_dequant"
    PATTERN: ClassVar[str] = "out-elemwise-fusable"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "bits": ("int", REQUIRED),
        "group": ("int", REQUIRED),
    }

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) not in (3, 4):
            raise ShapeError(f"expected 3 or 4 operands, got {len(s)}")
        bits, group = cfg["bits"], cfg["group"]
        if bits not in (4, 8):
            raise ShapeError(f"expected bits 4 or 8, got {bits}")
        x, w, scale = s[:3]
        shapes.expect_rank("the data", x, 2)
        shapes.expect_rank("the weight", w, 2)
        k = x[1]
        if (
            not isinstance(k, int)
            or group < 1
            or k % group
            or (bits == 4 and group % 2)
        ):
            raise ShapeError(
                f"expected a group that divides K {k} (and is even for 4 bits), "
                f"got {group}"
            )
        n = w[0]
        if tuple(w) != (n, k * bits // 8):
            raise ShapeError(
                f"expected a weight ({n}, {k * bits // 8}) for K {k} at {bits} "
                f"bits, got {tuple(w)}"
            )
        if tuple(scale) != (n, k // group):
            raise ShapeError(
                f"expected a scale ({n}, {k // group}), got {tuple(scale)}"
            )
        if len(s) == 4 and tuple(s[3]) != (n,):
            raise ShapeError(f"expected a bias ({n},), got {tuple(s[3])}")
        return (x[0], n)

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        data, weight, *floats = elements
        want = "ui8" if cfg["bits"] == 4 else "i8"
        if str(weight) != want:
            raise ShapeError(
                f"expected a {want} weight at {cfg['bits']} bits, got {weight}"
            )
        if any(f != data for f in floats) or str(data) != "f32":
            raise ShapeError(
                f"expected f32 data, scale and bias, got {', '.join(map(str, elements))}"
            )
        return data

    def reference(self, inputs: list[Array]) -> Array:
        x, w, scale = inputs[:3]
        y = gn.matmul(x, dequantize(w, scale, **self.config).T)
        return y + inputs[3] if len(inputs) == 4 else y


def quantize(w: Array, bits: int, group: int) -> tuple[Array, Array]:
    """A float weight (N, K) as `graph.dense_dequant` stores it: symmetric
    integers per group of K (the group's largest magnitude maps to 127 at 8
    bits, 7 at 4), and the scales (N, K / group)."""
    w = np.asarray(w, np.float32)
    n, k = w.shape
    top = 2 ** (bits - 1) - 1
    groups = w.reshape(n, k // group, group)
    scale = np.abs(groups).max(axis=2) / top
    safe = np.where(scale > 0, scale, 1.0)
    q = np.clip(np.rint(groups / safe[..., None]), -top, top).reshape(n, k)
    if bits == 8:
        return q.astype(np.int8), scale.astype(np.float32)
    nibbles = (q + 8).astype(np.uint8)
    return nibbles[:, 0::2] | (nibbles[:, 1::2] << 4), scale.astype(np.float32)


def dequantize(w: Array, scale: Array, bits: int, group: int) -> Array:
    """`graph.dense_dequant`'s weight as float32 (N, K)."""
    if bits == 4:
        w = np.asarray(w, np.uint8)
        q = np.stack([w & 15, w >> 4], axis=-1).reshape(w.shape[0], -1)
        values = q.astype(np.float32) - 8
    else:
        values = np.asarray(w, np.int8).astype(np.float32)
    return values * np.repeat(np.asarray(scale, np.float32), group, axis=1)


@irdl_op_definition
class MatmulOp(GraphOp):
    """numpy's matmul (batch dims broadcast, 1-D operands promoted then dropped).

    %y = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    """

    name = "graph.matmul"
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.matmul(s[0], s[1])

    def reference(self, inputs: list[Array]) -> Array:
        return gn.matmul(inputs[0], inputs[1])


@irdl_op_definition
class BatchMatmulOp(GraphOp):
    """(B, M, K) x (B, K, N) -> (B, M, N); a batch of 1 broadcasts.

    %y = graph.batch_matmul %a, %b : (tensor<2x4x8xf32>, tensor<2x8x3xf32>)
           -> tensor<2x4x3xf32>
    """

    name = "graph.batch_matmul"
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.batch_matmul(s[0], s[1])

    def reference(self, inputs: list[Array]) -> Array:
        return gn.matmul(inputs[0], inputs[1])


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Inference batch norm on axis 1: (x - mean) / sqrt(var + epsilon) * gamma + beta.

    %y = graph.batch_norm %x, %gamma, %beta, %mean, %var {epsilon = 1.0e-05 : f32}
           : (tensor<1x16x8x8xf32>, tensor<16xf32>, ...) -> tensor<1x16x8x8xf32>
    """

    name = "graph.batch_norm"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"epsilon": ("float", 1e-5)}
    PATTERN: ClassVar[str] = "broadcast"

    data = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if cfg["epsilon"] < 0:
            raise ShapeError(f"expected a non-negative epsilon, got {cfg['epsilon']}")
        return shapes.batch_norm(s[0], *s[1:])

    def reference(self, inputs: list[Array]) -> Array:
        x, gamma, beta, mean, var = inputs
        return gn.batch_norm(x, gamma, beta, mean, var, self.config["epsilon"])


# ---------------------------------------------------------------- pooling, softmax


class _Pool2DOp(GraphOp):
    PATTERN: ClassVar[str] = "comm-reduce"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())


@irdl_op_definition
class MaxPool2DOp(_Pool2DOp):
    """Max over windows of NCHW data; padding never wins.

    %y = graph.max_pool2d %x {kernel = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1],
           dilation = [1, 1], ceil_mode = false} : (...) -> tensor<1x64x56x56xf32>
    """

    name = "graph.max_pool2d"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "kernel": ("ints", REQUIRED),
        "strides": ("ints", (1, 1)),
        "padding": ("ints", (0, 0, 0, 0)),
        "dilation": ("ints", (1, 1)),
        "ceil_mode": ("bool", False),
    }

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.pool2d(s[0], **cfg)

    def reference(self, inputs: list[Array]) -> Array:
        return gn.pool2d(inputs[0], "max", **self.config)


@irdl_op_definition
class AvgPool2DOp(_Pool2DOp):
    """Mean over windows of NCHW data (`dilation` spreads a window's taps);
    `count_include_pad` counts padding in the divisor.

    %y = graph.avg_pool2d %x {kernel = [2, 2], strides = [2, 2], padding = [0, 0, 0, 0],
           ceil_mode = false, count_include_pad = false} : (...) -> tensor<1x8x4x4xf32>
    """

    name = "graph.avg_pool2d"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "kernel": ("ints", REQUIRED),
        "strides": ("ints", (1, 1)),
        "padding": ("ints", (0, 0, 0, 0)),
        "ceil_mode": ("bool", False),
        "count_include_pad": ("bool", False),
        "dilation": ("ints", (1, 1)),
    }

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        cfg = {k: v for k, v in cfg.items() if k != "count_include_pad"}
        return shapes.pool2d(s[0], **cfg)

    def reference(self, inputs: list[Array]) -> Array:
        return gn.pool2d(inputs[0], "avg", **self.config)


@irdl_op_definition
class GlobalAvgPool2DOp(GraphOp):
    """Mean over H and W of NCHW data.

    %y = graph.global_avg_pool2d %x : (tensor<1x1280x7x7xf32>) -> tensor<1x1280x1x1xf32>
    """

    name = "graph.global_avg_pool2d"
    PATTERN: ClassVar[str] = "comm-reduce"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        shapes.expect_rank("data (NCHW)", s[0], 4)
        return (*s[0][:2], 1, 1)

    def reference(self, inputs: list[Array]) -> Array:
        return inputs[0].mean(axis=(2, 3), keepdims=True)


class _SoftmaxBase(GraphOp):
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"axis": ("int", -1)}
    PATTERN: ClassVar[str] = "opaque"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        shapes.normalize_axis(cfg["axis"], len(s[0]))
        return s[0]


@irdl_op_definition
class SoftmaxOp(_SoftmaxBase):
    """exp(x - max) / sum(exp(x - max)) along `axis`.

    %y = graph.softmax %x {axis = -1} : (tensor<2x10xf32>) -> tensor<2x10xf32>
    """

    name = "graph.softmax"

    def reference(self, inputs: list[Array]) -> Array:
        return gn.softmax(inputs[0], self.config["axis"])


@irdl_op_definition
class AttentionOp(GraphOp):
    """Scaled dot-product attention: softmax(q @ kt * scale + mask) @ v, the
    softmax along the keys. q (..., S, D), kt the keys transposed (..., D, T),
    v (..., T, E), the same batch dims; the optional mask broadcasts to
    (..., S, T): added when it has their element type, or a boolean one that
    keeps the scores where it is true and makes them `fill` elsewhere (-inf
    by default: ONNX Attention's two kinds; a finite fill, as HF models'
    float32 minimum, makes a row masked whole uniform, not NaN). With
    `nan_to_zero`, probabilities that are NaN (a row masked whole) are 0,
    as torch's exported scaled_dot_product_attention writes it. `graph-fuse-attention` forms it from the matmuls,
    the scale, the mask's add or select and the softmax that models export.

    %o = graph.attention %q, %kt, %v {scale = 1.250000e-01 : f32}
           : (tensor<1x2x8x64xf32>, tensor<1x2x64x8xf32>, tensor<1x2x8x64xf32>)
           -> tensor<1x2x8x64xf32>
    """

    name = "graph.attention"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "scale": ("float", 1.0),
        "fill": ("float", None),  # None: -inf
        "nan_to_zero": ("bool", None),  # None: false
    }
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    query = operand_def(TensorType)
    keys = operand_def(TensorType)
    values = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) not in (3, 4):
            raise ShapeError(f"expected 3 or 4 operands, got {len(s)}")
        q, kt, v = s[:3]
        for shape, what in ((q, "the query"), (kt, "the keys"), (v, "the values")):
            if len(shape) < 2:
                raise ShapeError(f"expected {what} of rank 2 or more, got {shape}")
        if not len(q) == len(kt) == len(v) or not q[:-2] == kt[:-2] == v[:-2]:
            raise ShapeError(
                f"expected the same batch dims, got query {q}, keys {kt}, values {v}"
            )
        *batch, rows, depth = q
        if kt[-2] != depth or v[-2] != kt[-1]:
            raise ShapeError(
                f"expected keys (..., {depth}, T) and values (..., T, E), got keys "
                f"{kt} and values {v}"
            )
        if len(s) == 4:
            shapes.broadcast_to(s[3], (*batch, rows, kt[-1]), "a mask")
        return (*batch, rows, v[-1])

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        element = super()._infer_element(elements[:3], cfg)
        if len(elements) == 4 and elements[3] not in (element, IntegerType(1)):
            raise ShapeError(f"expected a mask of {element} or i1, got {elements[3]}")
        return element

    def reference(self, inputs: list[Array]) -> Array:
        q, kt, v, *mask = inputs
        scores = gn.matmul(q, kt) * np.asarray(self.config["scale"], q.dtype)
        if mask and mask[0].dtype == np.bool_:
            fill = self.config["fill"]
            fill = np.asarray(-np.inf if fill is None else fill, q.dtype)
            scores = np.where(mask[0], scores, fill)
        elif mask:
            scores = scores + mask[0]
        probs = gn.softmax(scores, -1)
        if self.config["nan_to_zero"]:
            probs = np.where(np.isnan(probs), np.asarray(0, q.dtype), probs)
        return gn.matmul(probs, v).astype(q.dtype)


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxBase):
    """x - max - log(sum(exp(x - max))) along `axis`: log(softmax(x)), without
    its underflow to log(0).

    %y = graph.log_softmax %x {axis = -1} : (tensor<2x10xf32>) -> tensor<2x10xf32>
    """

    name = "graph.log_softmax"

    def reference(self, inputs: list[Array]) -> Array:
        return gn.log_softmax(inputs[0], self.config["axis"])
