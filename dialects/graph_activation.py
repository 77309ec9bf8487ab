"""`graph` dialect activations past relu, sigmoid and tanh: ONNX's activation
ops (LeakyRelu, PRelu, Elu, Selu, HardSigmoid, HardSwish, Mish, Softplus, Gelu's
tanh form). All are elementwise, so each fuses into an anchor's epilogue or an
injective group; the dialect is assembled in `graph.py`.

    %y = graph.hard_swish %x : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    %z = graph.prelu %y, %slope : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
"""

import math
from typing import Any, ClassVar

import numpy as np
from xdsl.irdl import irdl_op_definition

from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import Shape
from ember.dialects.graph_tensor import _BinaryOp, _unary, _UnaryOp

SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875
GELU_TANH_SCALE = math.sqrt(2 / math.pi)


class _ParametricOp(_UnaryOp):
    """A unary op whose formula takes its float attributes by name."""

    def reference(self, inputs: list[Array]) -> Array:
        x = inputs[0]
        return self.NUMPY(x.astype(np.float64), **self.config).astype(x.dtype)


@irdl_op_definition
class LeakyReluOp(_ParametricOp):
    """x for x >= 0, alpha * x below.

    %y = graph.leaky_relu %x {alpha = 1.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.leaky_relu"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"alpha": ("float", 0.01)}
    NUMPY = staticmethod(lambda x, alpha: np.where(x < 0, alpha * x, x))


@irdl_op_definition
class EluOp(_ParametricOp):
    """x for x >= 0, alpha * (exp(x) - 1) below.

    %y = graph.elu %x {alpha = 1.000000e+00 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.elu"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"alpha": ("float", 1.0)}
    NUMPY = staticmethod(lambda x, alpha: np.where(x < 0, alpha * np.expm1(x), x))


@irdl_op_definition
class SeluOp(_ParametricOp):
    """gamma * x for x > 0, gamma * alpha * (exp(x) - 1) otherwise.

    %y = graph.selu %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.selu"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "alpha": ("float", SELU_ALPHA),
        "gamma": ("float", SELU_GAMMA),
    }
    NUMPY = staticmethod(
        lambda x, alpha, gamma: gamma * np.where(x > 0, x, alpha * np.expm1(x))
    )


@irdl_op_definition
class HardSigmoidOp(_ParametricOp):
    """max(0, min(1, alpha * x + beta)).

    %y = graph.hard_sigmoid %x {alpha = 2.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.hard_sigmoid"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "alpha": ("float", 0.2),
        "beta": ("float", 0.5),
    }
    NUMPY = staticmethod(lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1))


def _softplus(x: Array) -> Array:
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


HardSwishOp = _unary(
    "graph.hard_swish",
    "x * max(0, min(1, x / 6 + 1/2)) (MobileNetV3's h-swish).",
    "HardSwishOp",
    lambda x: x * np.clip(x / 6 + 0.5, 0, 1).astype(x.dtype),
)
SoftplusOp = _unary(
    "graph.softplus",
    "log(1 + exp(x)).",
    "SoftplusOp",
    lambda x: _softplus(x.astype(np.float64)).astype(x.dtype),
)
MishOp = _unary(
    "graph.mish",
    "x * tanh(softplus(x)).",
    "MishOp",
    lambda x: (x * np.tanh(_softplus(x.astype(np.float64)))).astype(x.dtype),
)
GeluTanhOp = _unary(
    "graph.gelu_tanh",
    "x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Gelu approximate='tanh').",
    "GeluTanhOp",
    lambda x: (
        x
        / 2
        * (1 + np.tanh(GELU_TANH_SCALE * (x + 0.044715 * x.astype(np.float64) ** 3)))
    ).astype(x.dtype),
)


@irdl_op_definition
class PReluOp(_BinaryOp):
    """x for x >= 0, slope * x below; the slope broadcasts to x (one per
    channel: shape (C, 1, 1) for NCHW), never x to the slope.

    %y = graph.prelu %x, %s : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
    """

    name = "graph.prelu"
    NUMPY = staticmethod(lambda x, slope: np.where(x < 0, slope * x, x))

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.broadcast_to(s[1], s[0], "a slope")
