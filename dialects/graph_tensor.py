"""`graph` dialect ops on tensors: elementwise with numpy broadcasting, layout
(reshape, flatten, transpose, concat, pad) and reductions (the dialect is
assembled in `graph.py`)."""

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Self

import numpy as np
from xdsl.dialects.builtin import (
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import (
    Pure,
)
from xdsl.utils.exceptions import VerifyException

from ember.dialects import graph_numpy as gn
from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_base import REQUIRED, GraphOp, graph_tensor
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import Shape, ShapeError

# ---------------------------------------------------------------- elementwise


class _BinaryOp(GraphOp):
    PATTERN: ClassVar[str] = "broadcast"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    NUMPY: ClassVar[Any]
    """The op's numpy function (numpy broadcasting)."""

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.broadcast(s[0], s[1])

    def reference(self, inputs: list[Array]) -> Array:
        return self.NUMPY(inputs[0], inputs[1])


@irdl_op_definition
class AddOp(_BinaryOp):
    """lhs + rhs with numpy broadcasting.

    %z = graph.add %x, %b : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
    """

    name = "graph.add"
    NUMPY = staticmethod(np.add)


@irdl_op_definition
class SubOp(_BinaryOp):
    """lhs - rhs with numpy broadcasting.

    %z = graph.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.sub"
    NUMPY = staticmethod(np.subtract)


@irdl_op_definition
class MulOp(_BinaryOp):
    """lhs * rhs with numpy broadcasting.

    %z = graph.mul %x, %y : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
    """

    name = "graph.mul"
    NUMPY = staticmethod(np.multiply)


@irdl_op_definition
class DivOp(_BinaryOp):
    """lhs / rhs with numpy broadcasting; integers truncate toward zero (C's
    and ONNX's integer division, not numpy's floor).

    %z = graph.div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.div"
    NUMPY = staticmethod(np.divide)

    def reference(self, inputs: list[Array]) -> Array:
        a, b = inputs
        if a.dtype.kind in "iu":
            with np.errstate(divide="ignore"):
                q = np.abs(a) // np.abs(b)
            return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)
        return np.divide(a, b)


@irdl_op_definition
class MaximumOp(_BinaryOp):
    """Elementwise max with numpy broadcasting (NaN propagates).

    %z = graph.maximum %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.maximum"
    NUMPY = staticmethod(np.maximum)


@irdl_op_definition
class MinimumOp(_BinaryOp):
    """Elementwise min with numpy broadcasting (NaN propagates).

    %z = graph.minimum %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.minimum"
    NUMPY = staticmethod(np.minimum)


@irdl_op_definition
class PowOp(_BinaryOp):
    """lhs ** rhs with numpy broadcasting.

    %z = graph.pow %x, %y : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    """

    name = "graph.pow"
    NUMPY = staticmethod(np.power)


class _UnaryOp(GraphOp):
    PATTERN: ClassVar[str] = "elemwise"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    NUMPY: ClassVar[Any]
    """The op's numpy function."""

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return s[0]

    def reference(self, inputs: list[Array]) -> Array:
        return self.NUMPY(inputs[0])


def _unary(
    op_name: str, summary: str, class_name: str, numpy: Callable[[Array], Array]
) -> type[_UnaryOp]:
    """An elementwise op on one tensor: its name, summary and numpy semantics."""
    doc = f"""{summary}

    %y = {op_name} %x : (tensor<4xf32>) -> tensor<4xf32>
    """
    attrs = {"name": op_name, "__doc__": doc, "NUMPY": staticmethod(numpy)}
    return irdl_op_definition(type(class_name, (_UnaryOp,), attrs))


def _gelu(x: Array) -> Array:
    return x * (1 + gn.erf(x / np.asarray(math.sqrt(2), x.dtype))) / 2


ReluOp = _unary(
    "graph.relu", "max(x, 0).", "ReluOp", lambda x: np.maximum(x, np.zeros((), x.dtype))
)
SigmoidOp = _unary(
    "graph.sigmoid", "1 / (1 + exp(-x)).", "SigmoidOp", lambda x: 1 / (1 + np.exp(-x))
)
TanhOp = _unary("graph.tanh", "tanh(x).", "TanhOp", np.tanh)
ExpOp = _unary("graph.exp", "exp(x).", "ExpOp", np.exp)
SqrtOp = _unary("graph.sqrt", "sqrt(x).", "SqrtOp", np.sqrt)
ErfOp = _unary("graph.erf", "The error function erf(x).", "ErfOp", gn.erf)
GeluOp = _unary(
    "graph.gelu", "x * (1 + erf(x / sqrt(2))) / 2 (exact GELU).", "GeluOp", _gelu
)
NegOp = _unary("graph.neg", "-x.", "NegOp", np.negative)
AbsOp = _unary("graph.abs", "|x|.", "AbsOp", np.abs)
LogOp = _unary("graph.log", "The natural logarithm log(x).", "LogOp", np.log)


@irdl_op_definition
class ClipOp(_UnaryOp):
    """min(max(x, min), max); a missing bound does not clip (relu6 is 0..6).

    %y = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.clip"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "min": ("float", None),
        "max": ("float", None),
    }

    @classmethod
    def _config(cls, attrs: dict[str, Any]) -> dict[str, Any]:
        cfg = super()._config(attrs)
        lo, hi = cfg["min"], cfg["max"]
        if lo is not None and hi is not None and lo > hi:
            raise ShapeError(f"expected min <= max, got min {lo} and max {hi}")
        return cfg

    def reference(self, inputs: list[Array]) -> Array:
        return gn.clip(inputs[0], self.config["min"], self.config["max"])


# ---------------------------------------------------------------- layout


@irdl_op_definition
class ReshapeOp(GraphOp):
    """The same elements in row-major order under the result's shape.

    %y = graph.reshape %x : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
    Build with `ReshapeOp.build_inferred(x, shape=(1, -1))`.
    """

    name = "graph.reshape"
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def infer_type(cls, operand_types: Sequence[Attribute], **attrs: Any) -> TensorType:
        (t,) = operand_types
        if not isinstance(t, TensorType):
            raise ShapeError(f"expected a tensor for operand 0, got {t}")
        if set(attrs) != {"shape"}:
            raise ShapeError(f"expected only 'shape' for reshape, got {sorted(attrs)}")
        return shapes.tensor_of(
            t.element_type, shapes.reshape(shapes.dims_of(t), attrs["shape"])
        )

    @classmethod
    def build_inferred(cls, *operands: SSAValue | Operation, **attrs: Any) -> Self:
        (x,) = [SSAValue.get(o) for o in operands]
        return cls.create(
            operands=[x], result_types=[cls.infer_type([x.type], **attrs)]
        )

    def verify_(self) -> None:
        x = graph_tensor(self.input, "operand 0")
        y = graph_tensor(self.result, "the result")
        if x.element_type != y.element_type:
            raise VerifyException(
                f"expected result element type {x.element_type}, got {y.element_type}"
            )
        shapes.reshape(shapes.dims_of(x), shapes.dims_of(y))

    def reference(self, inputs: list[Array]) -> Array:
        return inputs[0].reshape(self.result.type.get_shape())  # type: ignore[attr-defined]


@irdl_op_definition
class FlattenOp(GraphOp):
    """Reshape to 2-D: dims before `axis` multiply into rows, the rest into columns.

    %y = graph.flatten %x {axis = 1} : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
    """

    name = "graph.flatten"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"axis": ("int", 1)}
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.flatten(s[0], cfg["axis"])

    def reference(self, inputs: list[Array]) -> Array:
        return inputs[0].reshape(self.result.type.get_shape())  # type: ignore[attr-defined]


@irdl_op_definition
class TransposeOp(GraphOp):
    """Permuted axes: result dim i is input dim perm[i] (reversed by default).

    %y = graph.transpose %x {perm = [0, 2, 1]} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
    """

    name = "graph.transpose"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"perm": ("ints", None)}
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        perm = cfg["perm"]
        return shapes.transpose(s[0], range(len(s[0]))[::-1] if perm is None else perm)

    @classmethod
    def build_inferred(cls, *operands: SSAValue | Operation, **attrs: Any) -> Self:
        if attrs.get("perm") is None:
            rank = len(SSAValue.get(operands[0]).type.get_shape())  # type: ignore[attr-defined]
            attrs["perm"] = tuple(range(rank))[::-1]
        return super().build_inferred(*operands, **attrs)

    @property
    def permutation(self) -> tuple[int, ...]:
        perm = self.config["perm"]
        rank = len(self.result.type.get_shape())  # type: ignore[attr-defined]
        return tuple(range(rank))[::-1] if perm is None else perm

    def reference(self, inputs: list[Array]) -> Array:
        return inputs[0].transpose(self.permutation)


@irdl_op_definition
class ConcatOp(GraphOp):
    """Operands joined along `axis`.

    %y = graph.concat %a, %b {axis = 1} : (tensor<1x8xf32>, tensor<1x4xf32>) -> tensor<1x12xf32>
    """

    name = "graph.concat"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"axis": ("int", 0)}
    PATTERN: ClassVar[str] = "injective"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.concat(s, cfg["axis"])

    def reference(self, inputs: list[Array]) -> Array:
        return np.concatenate(inputs, axis=self.config["axis"])


@irdl_op_definition
class PadOp(GraphOp):
    """Constant padding: `pads` is [begin..., end...] per axis (ONNX's order).

    %y = graph.pad %x {pads = [0, 0, 1, 1, 0, 0, 1, 1], value = 0.0 : f32}
           : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
    """

    name = "graph.pad"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "pads": ("ints", REQUIRED),
        "value": ("float", 0.0),
    }
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.pad(s[0], cfg["pads"])

    def reference(self, inputs: list[Array]) -> Array:
        return gn.pad(inputs[0], self.config["pads"], self.config["value"])


# ---------------------------------------------------------------- reductions


class _ReduceOp(GraphOp):
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "axes": ("ints", ()),
        "keepdims": ("bool", False),
    }
    PATTERN: ClassVar[str] = "comm-reduce"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.reduce(s[0], cfg["axes"], cfg["keepdims"])

    @property
    def reduced_axes(self) -> tuple[int, ...]:
        """The reduced axes, non-negative and sorted (every axis when `axes` is [])."""
        rank = len(self.input.type.get_shape())  # type: ignore[attr-defined]
        axes = self.config["axes"] or range(rank)
        return tuple(sorted(a % rank for a in axes))

    NUMPY: ClassVar[Any]
    """The numpy reduction (`np.sum`, ...)."""

    def reference(self, inputs: list[Array]) -> Array:
        return self.NUMPY(
            inputs[0], axis=self.reduced_axes, keepdims=self.config["keepdims"]
        )


@irdl_op_definition
class ReduceSumOp(_ReduceOp):
    """Sum over `axes` (every axis when empty).

    %y = graph.reduce_sum %x {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
    """

    name = "graph.reduce_sum"
    NUMPY = staticmethod(np.sum)


@irdl_op_definition
class ReduceMeanOp(_ReduceOp):
    """Mean over `axes` (every axis when empty).

    %y = graph.reduce_mean %x {axes = [-1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
    """

    name = "graph.reduce_mean"
    NUMPY = staticmethod(np.mean)


@irdl_op_definition
class ReduceMaxOp(_ReduceOp):
    """Max over `axes` (every axis when empty).

    %y = graph.reduce_max %x {axes = [0]} : (tensor<2x8xf32>) -> tensor<8xf32>
    """

    name = "graph.reduce_max"
    NUMPY = staticmethod(np.max)


@irdl_op_definition
class ReduceProdOp(_ReduceOp):
    """Product over `axes` (every axis when empty).

    %y = graph.reduce_prod %x {axes = [1]} : (tensor<2x8xf32>) -> tensor<2xf32>
    """

    name = "graph.reduce_prod"
    NUMPY = staticmethod(np.prod)
