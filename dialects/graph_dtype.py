"""`graph` dialect ops about element types: comparisons (giving `i1`), logical
ops on `i1`, bitwise ops and shifts on integers, `where`, `mod`, `sign`, and
`cast` and `bitcast` between the element types graph tensors hold (`graph_base.NUMPY_TYPES`:
f32, f16, f64, i64, i32, i16, i8, ui64, ui32, ui16, ui8, i1). All
are elementwise with numpy broadcasting, so each fuses into an anchor's
epilogue or an injective group; the dialect is assembled in `graph.py`.

    %m = graph.greater %x, %y : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
    %z = graph.where %m, %x, %y : (tensor<4xi1>, tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
"""

from collections.abc import Sequence
from typing import Any, ClassVar, Self

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_base import NUMPY_TYPES, GraphOp, dtype_of, graph_tensor, i1
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import Shape, ShapeError
from ember.dialects.graph_tensor import _BinaryOp, _UnaryOp


class _CompareOp(_BinaryOp):
    """A comparison: operands of one element type, an `i1` result."""

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        super()._infer_element(elements, cfg)
        return i1


@irdl_op_definition
class EqualOp(_CompareOp):
    """lhs == rhs with numpy broadcasting, as i1.

    %z = graph.equal %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    """

    name = "graph.equal"
    NUMPY = staticmethod(np.equal)


@irdl_op_definition
class LessOp(_CompareOp):
    """lhs < rhs with numpy broadcasting, as i1 (false where either is NaN).

    %z = graph.less %x, %y : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
    """

    name = "graph.less"
    NUMPY = staticmethod(np.less)


@irdl_op_definition
class LessEqualOp(_CompareOp):
    """lhs <= rhs with numpy broadcasting, as i1.

    %z = graph.less_equal %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    """

    name = "graph.less_equal"
    NUMPY = staticmethod(np.less_equal)


@irdl_op_definition
class GreaterOp(_CompareOp):
    """lhs > rhs with numpy broadcasting, as i1.

    %z = graph.greater %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    """

    name = "graph.greater"
    NUMPY = staticmethod(np.greater)


@irdl_op_definition
class GreaterEqualOp(_CompareOp):
    """lhs >= rhs with numpy broadcasting, as i1.

    %z = graph.greater_equal %x, %y : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
    """

    name = "graph.greater_equal"
    NUMPY = staticmethod(np.greater_equal)


def _expect_bool(op: type[GraphOp], elements: list[Attribute]) -> None:
    for i, t in enumerate(elements):
        if t != i1:
            raise ShapeError(f"expected i1 for operand {i} of {op.name}, got {t}")


class _LogicalOp(_BinaryOp):
    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        _expect_bool(cls, elements)
        return i1


@irdl_op_definition
class LogicalAndOp(_LogicalOp):
    """lhs and rhs (i1) with numpy broadcasting.

    %z = graph.logical_and %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    """

    name = "graph.logical_and"
    NUMPY = staticmethod(np.logical_and)


@irdl_op_definition
class LogicalOrOp(_LogicalOp):
    """lhs or rhs (i1) with numpy broadcasting.

    %z = graph.logical_or %x, %y : (tensor<4xi1>, tensor<i1>) -> tensor<4xi1>
    """

    name = "graph.logical_or"
    NUMPY = staticmethod(np.logical_or)


@irdl_op_definition
class LogicalXorOp(_LogicalOp):
    """lhs xor rhs (i1) with numpy broadcasting.

    %z = graph.logical_xor %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    """

    name = "graph.logical_xor"
    NUMPY = staticmethod(np.logical_xor)


@irdl_op_definition
class LogicalNotOp(_UnaryOp):
    """not x (i1).

    %y = graph.logical_not %x : (tensor<4xi1>) -> tensor<4xi1>
    """

    name = "graph.logical_not"
    NUMPY = staticmethod(np.logical_not)

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        _expect_bool(cls, elements)
        return i1


@irdl_op_definition
class SignOp(_UnaryOp):
    """-1, 0 or 1 by the sign of x (NaN stays NaN).

    %y = graph.sign %x : (tensor<4xi64>) -> tensor<4xi64>
    """

    name = "graph.sign"
    NUMPY = staticmethod(np.sign)


@irdl_op_definition
class ModOp(_BinaryOp):
    """The remainder of lhs / rhs with numpy broadcasting: with the divisor's
    sign (numpy's `mod`, Python's `%`) or, `fmod = true`, with the dividend's
    (C's `fmod`).

    %z = graph.mod %x, %y {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.mod"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"fmod": ("bool", False)}

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        element = super()._infer_element(elements, cfg)
        if element == i1:
            raise ShapeError(f"expected numbers for {cls.name}, got {element}")
        return element

    def reference(self, inputs: list[Array]) -> Array:
        a, b = inputs
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.fmod if self.config["fmod"] else np.mod)(a, b)


def _expect_integers(op: type[GraphOp], elements: list[Attribute]) -> Attribute:
    if len(set(elements)) > 1:
        got = ", ".join(map(str, elements))
        raise ShapeError(f"expected operands of one element type, got {got}")
    element = elements[0]
    if not isinstance(element, IntegerType) or element == i1:
        raise ShapeError(f"expected integers for {op.name}, got {element}")
    return element


class _BitwiseOp(_BinaryOp):
    """A bitwise op: integer operands of one type, their type."""

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        return _expect_integers(cls, elements)


@irdl_op_definition
class BitwiseAndOp(_BitwiseOp):
    """lhs & rhs (integers) with numpy broadcasting.

    %z = graph.bitwise_and %x, %y : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    """

    name = "graph.bitwise_and"
    NUMPY = staticmethod(np.bitwise_and)


@irdl_op_definition
class BitwiseOrOp(_BitwiseOp):
    """lhs | rhs (integers) with numpy broadcasting.

    %z = graph.bitwise_or %x, %y : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
    """

    name = "graph.bitwise_or"
    NUMPY = staticmethod(np.bitwise_or)


@irdl_op_definition
class BitwiseXorOp(_BitwiseOp):
    """lhs ^ rhs (integers) with numpy broadcasting.

    %z = graph.bitwise_xor %x, %y : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
    """

    name = "graph.bitwise_xor"
    NUMPY = staticmethod(np.bitwise_xor)


@irdl_op_definition
class BitwiseNotOp(_UnaryOp):
    """~x, every bit flipped (integers).

    %y = graph.bitwise_not %x : (tensor<4xui64>) -> tensor<4xui64>
    """

    name = "graph.bitwise_not"
    NUMPY = staticmethod(np.invert)

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        return _expect_integers(cls, elements)


def _shift(x: Array, y: Array, left: bool) -> Array:
    """ONNX's BitShift: a shift outside [0, bits) leaves what the fill alone
    gives, -1 for a right shift of a negative signed x, else 0."""
    bits = x.dtype.itemsize * 8
    inside = (y >= 0) & (y < bits)
    amount = np.where(inside, y, 0).astype(x.dtype)
    shifted = np.left_shift(x, amount) if left else np.right_shift(x, amount)
    fill = np.where(x < 0, -1, 0).astype(x.dtype) if not left else np.zeros_like(x)
    return np.where(inside, shifted, fill).astype(x.dtype)


@irdl_op_definition
class LeftShiftOp(_BitwiseOp):
    """lhs << rhs (integers) with numpy broadcasting; a shift outside
    [0, bits) gives 0 (ONNX's BitShift LEFT).

    %z = graph.left_shift %x, %y : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
    """

    name = "graph.left_shift"

    def reference(self, inputs: list[Array]) -> Array:
        x, y = np.broadcast_arrays(*inputs)
        return _shift(x, y, left=True)


@irdl_op_definition
class RightShiftOp(_BitwiseOp):
    """lhs >> rhs with numpy broadcasting: logical for unsigned integers,
    arithmetic for signed ones; a shift outside [0, bits) gives -1 for a
    negative lhs, else 0 (ONNX's BitShift RIGHT).

    %z = graph.right_shift %x, %y : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
    """

    name = "graph.right_shift"

    def reference(self, inputs: list[Array]) -> Array:
        x, y = np.broadcast_arrays(*inputs)
        return _shift(x, y, left=False)


@irdl_op_definition
class WhereOp(GraphOp):
    """x where cond holds, else y, with numpy broadcasting of all three.

    %z = graph.where %c, %x, %y : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    """

    name = "graph.where"
    PATTERN: ClassVar[str] = "broadcast"

    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.broadcast(shapes.broadcast(s[0], s[1]), s[2])

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        if elements[0] != i1:
            raise ShapeError(
                f"expected an i1 condition for {cls.name}, got {elements[0]}"
            )
        return super()._infer_element(elements[1:], cfg)

    def reference(self, inputs: list[Array]) -> Array:
        return np.where(*inputs)


class _ConversionOp(GraphOp):
    """An elementwise op to the element type named by `to` when built, the
    result's element type once built."""

    PATTERN: ClassVar[str] = "elemwise"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def infer_type(cls, operand_types: Sequence[Attribute], **attrs: Any) -> TensorType:
        (t,) = operand_types
        if not isinstance(t, TensorType):
            raise ShapeError(f"expected a tensor for operand 0, got {t}")
        if set(attrs) != {"to"}:
            raise ShapeError(f"expected only 'to' for {cls.name}, got {sorted(attrs)}")
        to = attrs["to"]
        element = NUMPY_TYPES.get(np.dtype(to).name) if isinstance(to, str) else to
        if element is None or element not in NUMPY_TYPES.values():
            dtype_of(t.element_type)
            raise ShapeError(
                f"expected a target among {', '.join(NUMPY_TYPES)} for {cls.name}, "
                f"got {to}"
            )
        dtype_of(t.element_type)
        return shapes.tensor_of(element, shapes.dims_of(t))

    @classmethod
    def build_inferred(cls, *operands: SSAValue | Operation, **attrs: Any) -> Self:
        (x,) = [SSAValue.get(o) for o in operands]
        return cls.create(
            operands=[x], result_types=[cls.infer_type([x.type], **attrs)]
        )

    def verify_(self) -> None:
        x = graph_tensor(self.input, "operand 0")
        y = graph_tensor(self.result, "the result")
        expected = self.infer_type([x], to=y.element_type)
        if expected != y:
            raise VerifyException(f"expected {expected}, got {y}")


@irdl_op_definition
class CastOp(_ConversionOp):
    """x converted elementwise to the result's element type, as numpy's
    `astype` (and ONNX's Cast): floats to integers truncate toward zero, to i1
    anything nonzero (NaN too) is true, integers narrow by wrapping.

    %y = graph.cast %x : (tensor<4xf32>) -> tensor<4xi64>
    Build with `CastOp.build_inferred(x, to="int64")`.
    """

    name = "graph.cast"

    def reference(self, inputs: list[Array]) -> Array:
        to = dtype_of(self.result.type.element_type)  # type: ignore[attr-defined]
        with np.errstate(invalid="ignore"):
            return inputs[0].astype(to)


@irdl_op_definition
class BitcastOp(_ConversionOp):
    """x's bits read as the result's element type, of the same width (ONNX's
    BitCast, numpy's `view`): integers of the other signedness keep their
    bits, floats give their IEEE encoding and back; `i1` is a byte.

    %y = graph.bitcast %x : (tensor<4xf32>) -> tensor<4xi32>
    Build with `BitcastOp.build_inferred(x, to="int32")`.
    """

    name = "graph.bitcast"

    @classmethod
    def infer_type(cls, operand_types: Sequence[Attribute], **attrs: Any) -> TensorType:
        result = super().infer_type(operand_types, **attrs)
        (t,) = operand_types
        assert isinstance(t, TensorType)
        widths = [
            np.dtype(dtype_of(e)).itemsize * 8
            for e in (t.element_type, result.element_type)
        ]
        if widths[0] != widths[1]:
            raise ShapeError(
                f"expected a target of {widths[0]} bits for {cls.name}, got "
                f"{result.element_type} of {widths[1]}"
            )
        return result

    def reference(self, inputs: list[Array]) -> Array:
        to = dtype_of(self.result.type.element_type)  # type: ignore[attr-defined]
        return np.ascontiguousarray(inputs[0]).view(to)
