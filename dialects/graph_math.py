"""`graph` dialect unary math: ONNX's trigonometric and hyperbolic functions,
rounding (Floor, Ceil, Round half to even), Reciprocal, Softsign, the
thresholding activations (ThresholdedRelu, Shrink, Celu) and the float tests
IsNaN and IsInf (i1 results). All are elementwise, so each fuses into an
anchor's epilogue or an injective group; the dialect is assembled in `graph.py`.

    %y = graph.sin %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
    %m = graph.is_inf %y {detect_negative = false} : (tensor<3x4xf32>) -> tensor<3x4xi1>
"""

from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition

from ember.dialects.graph_activation import _ParametricOp
from ember.dialects.graph_base import i1
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import ShapeError
from ember.dialects.graph_tensor import _unary, _UnaryOp


def _wide(fn):
    """`fn` computed in float64 and rounded to the input's type once."""
    return lambda x: fn(x.astype(np.float64)).astype(x.dtype)


SinOp = _unary("graph.sin", "sin(x).", "SinOp", _wide(np.sin))
CosOp = _unary("graph.cos", "cos(x).", "CosOp", _wide(np.cos))
TanOp = _unary("graph.tan", "tan(x).", "TanOp", _wide(np.tan))
AsinOp = _unary(
    "graph.asin", "arcsin(x), in [-pi/2, pi/2].", "AsinOp", _wide(np.arcsin)
)
AcosOp = _unary("graph.acos", "arccos(x), in [0, pi].", "AcosOp", _wide(np.arccos))
AtanOp = _unary("graph.atan", "arctan(x).", "AtanOp", _wide(np.arctan))
SinhOp = _unary("graph.sinh", "sinh(x).", "SinhOp", _wide(np.sinh))
CoshOp = _unary("graph.cosh", "cosh(x).", "CoshOp", _wide(np.cosh))
AsinhOp = _unary("graph.asinh", "arsinh(x).", "AsinhOp", _wide(np.arcsinh))
AcoshOp = _unary("graph.acosh", "arcosh(x), x >= 1.", "AcoshOp", _wide(np.arccosh))
AtanhOp = _unary("graph.atanh", "artanh(x), |x| < 1.", "AtanhOp", _wide(np.arctanh))
FloorOp = _unary("graph.floor", "The largest integer <= x.", "FloorOp", np.floor)
CeilOp = _unary("graph.ceil", "The smallest integer >= x.", "CeilOp", np.ceil)
RoundOp = _unary(
    "graph.round",
    "x rounded to the nearest integer, half to even.",
    "RoundOp",
    np.round,
)
ReciprocalOp = _unary(
    "graph.reciprocal", "1 / x.", "ReciprocalOp", lambda x: np.ones((), x.dtype) / x
)
SoftsignOp = _unary(
    "graph.softsign", "x / (1 + |x|).", "SoftsignOp", _wide(lambda x: x / (1 + abs(x)))
)


@irdl_op_definition
class ThresholdedReluOp(_ParametricOp):
    """x for x > alpha, 0 otherwise.

    %y = graph.thresholded_relu %x {alpha = 2.000000e+00 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.thresholded_relu"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"alpha": ("float", 1.0)}
    NUMPY = staticmethod(lambda x, alpha: np.where(x > alpha, x, 0))


@irdl_op_definition
class ShrinkOp(_ParametricOp):
    """x - bias for x > lambd, x + bias for x < -lambd, 0 between.

    %y = graph.shrink %x {lambd = 1.500000e+00 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.shrink"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "bias": ("float", 0.0),
        "lambd": ("float", 0.5),
    }
    NUMPY = staticmethod(
        lambda x, bias, lambd: np.where(
            x < -lambd, x + bias, np.where(x > lambd, x - bias, 0)
        )
    )


@irdl_op_definition
class CeluOp(_ParametricOp):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)).

    %y = graph.celu %x {alpha = 2.000000e+00 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.celu"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"alpha": ("float", 1.0)}
    NUMPY = staticmethod(
        lambda x, alpha: np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha))
    )

    @classmethod
    def _config(cls, attrs: dict[str, Any]) -> dict[str, Any]:
        cfg = super()._config(attrs)
        if cfg["alpha"] == 0:
            raise ShapeError("expected a non-zero alpha, got 0.0")
        return cfg


_FLOATS = (Float16Type, Float32Type, Float64Type)


class _FloatTestOp(_UnaryOp):
    """A test of a float's class: a float operand, an `i1` result."""

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        if not isinstance(elements[0], _FLOATS):
            raise ShapeError(f"expected a float operand, got {elements[0]}")
        return i1


@irdl_op_definition
class IsNaNOp(_FloatTestOp):
    """Whether x is NaN, as i1.

    %m = graph.is_nan %x : (tensor<4xf32>) -> tensor<4xi1>
    """

    name = "graph.is_nan"
    NUMPY = staticmethod(np.isnan)


@irdl_op_definition
class IsInfOp(_FloatTestOp):
    """Whether x is +inf (when detect_positive) or -inf (when detect_negative), as i1.

    %m = graph.is_inf %x {detect_negative = false} : (tensor<4xf32>) -> tensor<4xi1>
    """

    name = "graph.is_inf"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "detect_negative": ("bool", True),
        "detect_positive": ("bool", True),
    }

    def reference(self, inputs: list[Array]) -> Array:
        x, cfg = inputs[0], self.config
        return (cfg["detect_positive"] & np.isposinf(x)) | (
            cfg["detect_negative"] & np.isneginf(x)
        )
