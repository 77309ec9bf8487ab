"""`graph` dialect normalizations over a tensor's trailing axes: layer_norm, the
anchor that ONNX's LayerNormalization imports as and InstanceNormalization and
GroupNormalization decompose into (the dialect is assembled in `graph.py`).

    %y = graph.layer_norm %x, %g, %b {axis = -1, epsilon = 1.0e-05 : f32}
           : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
"""

from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_base import GraphOp
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import Shape, ShapeError


@irdl_op_definition
class LayerNormOp(GraphOp):
    """(x - mean) / sqrt(var + epsilon) * scale + bias, mean and variance over
    the axes from `axis` on; scale and the optional bias broadcast to x (numpy's
    rule, so a (C, 1, 1) scale is InstanceNormalization's).

    %y = graph.layer_norm %x, %g {axis = -1, epsilon = 1.0e-05 : f32}
           : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
    """

    name = "graph.layer_norm"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "axis": ("int", -1),
        "epsilon": ("float", 1e-5),
    }
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    data = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) not in (2, 3):
            raise ShapeError(f"expected 2 or 3 operands, got {len(s)}")
        shapes.normalize_axis(cfg["axis"], len(s[0]))
        if cfg["epsilon"] < 0:
            raise ShapeError(f"expected a non-negative epsilon, got {cfg['epsilon']}")
        for shape, what in zip(s[1:], ("a scale", "a bias"), strict=False):
            shapes.broadcast_to(shape, s[0], what)
        return s[0]

    @property
    def normalized_axes(self) -> tuple[int, ...]:
        """The axes mean and variance run over (non-negative)."""
        rank = len(self.data.type.get_shape())  # type: ignore[attr-defined]
        return tuple(range(self.config["axis"] % rank, rank))

    def reference(self, inputs: list[Array]) -> Array:
        x = inputs[0].astype(np.float64)
        axes = self.normalized_axes
        centred = x - x.mean(axis=axes, keepdims=True)
        var = (centred * centred).mean(axis=axes, keepdims=True)
        y = centred / np.sqrt(var + self.config["epsilon"]) * inputs[1]
        if len(inputs) > 2:
            y = y + inputs[2]
        return y.astype(inputs[0].dtype)
