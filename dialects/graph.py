"""The `graph` dialect: operators on tensors, Relay's level.

A model is a `func.func @main` over ranked, statically shaped `tensor`s (f32; i64
only in constants the frontend folds away). Weights are bound by name with
`graph.param` (their values live outside the IR, in a `dict[str, np.ndarray]` of
params); small literals are `graph.constant`. A fusion group is a `graph.fused`
region op.

    %w = graph.param "conv1.weight" : tensor<32x3x3x3xf32>
    %y = graph.conv2d %x, %w {strides = [2, 2], padding = [1, 1, 1, 1],
           dilation = [1, 1], groups = 1}
           : (tensor<1x3x224x224xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x112x112xf32>
    %r = graph.relu %y : (tensor<1x32x112x112xf32>) -> tensor<1x32x112x112xf32>

Building ops (shape inference). Every computing op class offers

- `Op.build_inferred(*operands, **attrs)`: the op with its result type inferred,
  attributes given as Python values (`strides=(2, 2)`, `epsilon=1e-5`,
  `keepdims=True`); omitted ones take the defaults in `Op.ATTRS`. Reshape takes
  `shape=` (ONNX's rule: one -1 inferred, 0 copies the input's dim).
- `Op.infer_type(operand_types, **attrs) -> TensorType`, the same without an op.
- `op.config`: the attributes as Python values (ints, tuples, floats, bools).
- `Op.PATTERN`: the op's fusion pattern, TVM's `TOpPattern` names
  ("elemwise", "broadcast", "injective", "comm-reduce", "out-elemwise-fusable",
  "opaque").

Both raise `ShapeError` (a `VerifyException`) with an "expected X, got Y" message
when operands or attributes do not fit; the verifier checks the same rules and that
the declared result type is the inferred one.
"""

from collections.abc import Sequence
from typing import Any, ClassVar, Self

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
)
from xdsl.utils.exceptions import VerifyException

from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_shapes import Shape, ShapeError

__all__ = ["ShapeError", "Graph", "infer_type"]

_REQUIRED = object()
i1 = IntegerType(1)
_NUMPY_TYPES: dict[str, Attribute] = {
    "float32": f32,
    "float64": f64,
    "int32": i32,
    "int64": i64,
}


def _encode(kind: str, value: Any) -> Attribute:
    if kind == "ints":
        return ArrayAttr([IntegerAttr(int(v), i64) for v in value])
    if kind == "int":
        return IntegerAttr(int(value), i64)
    if kind == "float":
        return FloatAttr(float(value), f32)
    if kind == "bool":
        return IntegerAttr(int(bool(value)), i1)
    raise AssertionError(kind)


def _decode(kind: str, attr: Attribute) -> Any:
    if kind == "ints":
        assert isinstance(attr, ArrayAttr)
        return tuple(a.value.data for a in attr.data)  # type: ignore[union-attr]
    if kind == "float":
        assert isinstance(attr, FloatAttr)
        return float(attr.value.data)
    assert isinstance(attr, IntegerAttr)
    return bool(attr.value.data) if kind == "bool" else int(attr.value.data)


def _static_tensor(value: SSAValue, what: str) -> TensorType:
    t = value.type
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        raise VerifyException(
            f"expected a statically shaped tensor for {what}, got {t}"
        )
    return t


def _print_value(printer: Printer, attr: Attribute) -> None:
    # i64 integers print bare (`[2, 2]`, `1`), as MLIR does, not `2 : i64`
    if isinstance(attr, IntegerAttr) and attr.type == i64:
        printer.print_string(str(attr.value.data))
    elif isinstance(attr, ArrayAttr) and all(
        isinstance(a, IntegerAttr) and a.type == i64 for a in attr.data
    ):
        printer.print_string(
            "[" + ", ".join(str(a.value.data) for a in attr.data) + "]"  # type: ignore[union-attr]
        )
    else:
        printer.print_attribute(attr)


def _print_attrs(printer: Printer, attrs: dict[str, Attribute]) -> None:
    if not attrs:
        return
    printer.print_string(" {")
    for i, (key, value) in enumerate(attrs.items()):
        printer.print_string(", " if i else "")
        printer.print_identifier_or_string_literal(key)
        printer.print_string(" = ")
        _print_value(printer, value)
    printer.print_string("}")


class GraphOp(IRDLOperation):
    """A computing graph op: custom syntax, attributes schema, shape inference.

    `ATTRS` maps each attribute to its kind ("ints", "int", "float", "bool") and
    default (`_REQUIRED` when it has none); subclasses define `_infer`.
    """

    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {}
    PATTERN: ClassVar[str] = "opaque"

    @classmethod
    def _infer(cls, shapes_: list[Shape], cfg: dict[str, Any]) -> Shape:
        raise NotImplementedError

    @classmethod
    def _config(cls, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(attrs) - set(cls.ATTRS)
        if unknown:
            raise ShapeError(
                f"expected attributes of {cls.name} among {sorted(cls.ATTRS)}, "
                f"got {sorted(unknown)}"
            )
        cfg = {}
        for key, (kind, default) in cls.ATTRS.items():
            value = attrs.get(key, default)
            if value is _REQUIRED:
                raise ShapeError(f"expected attribute '{key}' of {cls.name}, got none")
            cfg[key] = tuple(value) if kind == "ints" and value is not None else value
        return cfg

    @classmethod
    def infer_type(cls, operand_types: Sequence[Attribute], **attrs: Any) -> TensorType:
        """The result type for operands of `operand_types` and attributes `attrs`."""
        tensors = []
        for i, t in enumerate(operand_types):
            if not isinstance(t, TensorType):
                raise ShapeError(f"expected a tensor for operand {i}, got {t}")
            tensors.append(t)
        cfg = cls._config(attrs)
        shape = cls._infer([tuple(t.get_shape()) for t in tensors], cfg)
        return TensorType(tensors[0].element_type, shape)

    @classmethod
    def build_inferred(cls, *operands: SSAValue | Operation, **attrs: Any) -> Self:
        """The op on `operands` with attributes `attrs`, its result type inferred."""
        values = [SSAValue.get(o) for o in operands]
        result = cls.infer_type([v.type for v in values], **attrs)
        cfg = cls._config(attrs)
        props = {
            k: _encode(cls.ATTRS[k][0], v) for k, v in cfg.items() if v is not None
        }
        return cls.create(operands=values, result_types=[result], properties=props)

    @property
    def config(self) -> dict[str, Any]:
        """The attributes as Python values, defaults filled in."""
        cfg = {}
        for key, (kind, default) in self.ATTRS.items():
            attr = self.properties.get(key)
            cfg[key] = default if attr is None else _decode(kind, attr)
        return cfg

    def _expected_type(self) -> TensorType:
        operand_types = [
            _static_tensor(v, f"operand {i}") for i, v in enumerate(self.operands)
        ]
        elements = {t.element_type for t in operand_types}
        if len(elements) > 1:
            got = ", ".join(str(t.element_type) for t in operand_types)
            raise VerifyException(f"expected operands of one element type, got {got}")
        return self.infer_type(operand_types, **self.config)

    def verify_(self) -> None:
        expected = self._expected_type()
        got = self.results[0].type
        if got != expected:
            raise VerifyException(f"expected {expected}, got {got}")

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_ssa_value)
        _print_attrs(printer, {**self.properties, **self.attributes})
        printer.print_string(" : ")
        printer.print_operation_type(self)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands = []
        if (first := parser.parse_optional_unresolved_operand()) is not None:
            operands.append(first)
            while parser.parse_optional_punctuation(","):
                operands.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ftype = parser.parse_function_type()
        if len(ftype.inputs) != len(operands):
            parser.raise_error(
                f"expected {len(operands)} operand types, got {len(ftype.inputs)}",
                pos,
                parser.pos,
            )
        values = [
            parser.resolve_operand(o, t)
            for o, t in zip(operands, ftype.inputs, strict=True)
        ]
        props = {}
        for key, (kind, _) in cls.ATTRS.items():
            if key in attrs:
                attr = attrs.pop(key)
                # `epsilon = 1.0e-05` parses as f64; the op keeps f32
                if kind == "float" and isinstance(attr, FloatAttr):
                    attr = FloatAttr(attr.value.data, f32)
                props[key] = attr
        return cls.create(
            operands=values,
            result_types=list(ftype.outputs),
            properties=props,
            attributes=attrs,
        )


# ---------------------------------------------------------------- leaves


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A weight bound by name; its value lives in the params mapping.

    %w = graph.param "conv1.weight" : tensor<32x3x3x3xf32>
    """

    name = "graph.param"

    param_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)

    assembly_format = "$name attr-dict `:` type($result)"

    traits = traits_def(Pure())

    def __init__(self, name: str, type: TensorType):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[type])

    def verify_(self) -> None:
        if not self.param_name.data:
            raise VerifyException("expected a non-empty param name, got ''")
        _static_tensor(self.result, "the param")


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A literal tensor.

    %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
    """

    name = "graph.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    @classmethod
    def from_numpy(cls, array: "np.ndarray") -> "ConstantOp":
        """A constant holding `array` (float32, float64, int32 or int64)."""
        array = np.asarray(array)
        if array.dtype.name not in _NUMPY_TYPES:
            raise ValueError(
                f"expected a float32, float64, int32 or int64 array, got {array.dtype}"
            )
        element = _NUMPY_TYPES[array.dtype.name]
        data = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
        return cls(
            DenseIntOrFPElementsAttr(TensorType(element, array.shape), BytesAttr(data))
        )

    def numpy(self) -> "np.ndarray":
        """The value as a numpy array (a fresh copy)."""
        t = self.value.type
        dtype = next(k for k, v in _NUMPY_TYPES.items() if v == t.element_type)
        flat = np.frombuffer(self.value.data.data, np.dtype(dtype).newbyteorder("<"))
        return flat.astype(dtype).reshape(t.get_shape())

    def verify_(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException(f"expected {self.value.type}, got {self.result.type}")
        _static_tensor(self.result, "the constant")

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> "ConstantOp":
        attrs = parser.parse_optional_attr_dict()
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr) or not isinstance(
            value.type, TensorType
        ):
            parser.raise_error(f"expected a dense tensor literal, got {value}")
        op = cls(value)
        op.attributes.update(attrs)
        return op


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
    strides = opt_prop_def(ArrayAttr[IntegerAttr])
    padding = opt_prop_def(ArrayAttr[IntegerAttr])
    dilation = opt_prop_def(ArrayAttr[IntegerAttr])
    groups = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s) not in (2, 3):
            raise ShapeError(f"expected 2 or 3 operands, got {len(s)}")
        return shapes.conv2d(s[0], s[1], s[2] if len(s) == 3 else None, **cfg)


Conv2dOp = Conv2DOp


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
    epsilon = opt_prop_def(FloatAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if cfg["epsilon"] < 0:
            raise ShapeError(f"expected a non-negative epsilon, got {cfg['epsilon']}")
        return shapes.batch_norm(s[0], *s[1:])


# ---------------------------------------------------------------- elementwise


class _BinaryOp(GraphOp):
    PATTERN: ClassVar[str] = "broadcast"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.broadcast(s[0], s[1])


@irdl_op_definition
class AddOp(_BinaryOp):
    """lhs + rhs with numpy broadcasting.

    %z = graph.add %x, %b : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
    """

    name = "graph.add"


@irdl_op_definition
class SubOp(_BinaryOp):
    """lhs - rhs with numpy broadcasting.

    %z = graph.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.sub"


@irdl_op_definition
class MulOp(_BinaryOp):
    """lhs * rhs with numpy broadcasting.

    %z = graph.mul %x, %y : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
    """

    name = "graph.mul"


@irdl_op_definition
class DivOp(_BinaryOp):
    """lhs / rhs with numpy broadcasting.

    %z = graph.div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.div"


@irdl_op_definition
class MaximumOp(_BinaryOp):
    """Elementwise max with numpy broadcasting (NaN propagates).

    %z = graph.maximum %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.maximum"


@irdl_op_definition
class MinimumOp(_BinaryOp):
    """Elementwise min with numpy broadcasting (NaN propagates).

    %z = graph.minimum %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "graph.minimum"


@irdl_op_definition
class PowOp(_BinaryOp):
    """lhs ** rhs with numpy broadcasting.

    %z = graph.pow %x, %y : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    """

    name = "graph.pow"


class _UnaryOp(GraphOp):
    PATTERN: ClassVar[str] = "elemwise"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return s[0]


def _unary(op_name: str, summary: str, class_name: str) -> type[_UnaryOp]:
    doc = f"""{summary}

    %y = {op_name} %x : (tensor<4xf32>) -> tensor<4xf32>
    """
    cls = type(class_name, (_UnaryOp,), {"name": op_name, "__doc__": doc})
    return irdl_op_definition(cls)


ReluOp = _unary("graph.relu", "max(x, 0).", "ReluOp")
SigmoidOp = _unary("graph.sigmoid", "1 / (1 + exp(-x)).", "SigmoidOp")
TanhOp = _unary("graph.tanh", "tanh(x).", "TanhOp")
ExpOp = _unary("graph.exp", "exp(x).", "ExpOp")
SqrtOp = _unary("graph.sqrt", "sqrt(x).", "SqrtOp")
ErfOp = _unary("graph.erf", "The error function erf(x).", "ErfOp")
GeluOp = _unary("graph.gelu", "x * (1 + erf(x / sqrt(2))) / 2 (exact GELU).", "GeluOp")
NegOp = _unary("graph.neg", "-x.", "NegOp")
AbsOp = _unary("graph.abs", "|x|.", "AbsOp")
LogOp = _unary("graph.log", "The natural logarithm log(x).", "LogOp")


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

    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)

    @classmethod
    def _config(cls, attrs: dict[str, Any]) -> dict[str, Any]:
        cfg = super()._config(attrs)
        lo, hi = cfg["min"], cfg["max"]
        if lo is not None and hi is not None and lo > hi:
            raise ShapeError(f"expected min <= max, got min {lo} and max {hi}")
        return cfg


# ---------------------------------------------------------------- pooling, softmax


class _Pool2DOp(GraphOp):
    PATTERN: ClassVar[str] = "comm-reduce"

    input = operand_def(TensorType)
    kernel = prop_def(ArrayAttr[IntegerAttr])
    strides = opt_prop_def(ArrayAttr[IntegerAttr])
    padding = opt_prop_def(ArrayAttr[IntegerAttr])
    ceil_mode = opt_prop_def(IntegerAttr)
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
        "kernel": ("ints", _REQUIRED),
        "strides": ("ints", (1, 1)),
        "padding": ("ints", (0, 0, 0, 0)),
        "dilation": ("ints", (1, 1)),
        "ceil_mode": ("bool", False),
    }

    dilation = opt_prop_def(ArrayAttr[IntegerAttr])

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.pool2d(s[0], **cfg)


@irdl_op_definition
class AvgPool2DOp(_Pool2DOp):
    """Mean over windows of NCHW data; `count_include_pad` counts padding in the
    divisor.

    %y = graph.avg_pool2d %x {kernel = [2, 2], strides = [2, 2], padding = [0, 0, 0, 0],
           ceil_mode = false, count_include_pad = false} : (...) -> tensor<1x8x4x4xf32>
    """

    name = "graph.avg_pool2d"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "kernel": ("ints", _REQUIRED),
        "strides": ("ints", (1, 1)),
        "padding": ("ints", (0, 0, 0, 0)),
        "ceil_mode": ("bool", False),
        "count_include_pad": ("bool", False),
    }

    count_include_pad = opt_prop_def(IntegerAttr)

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        cfg = {k: v for k, v in cfg.items() if k != "count_include_pad"}
        return shapes.pool2d(s[0], dilation=(1, 1), **cfg)


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


@irdl_op_definition
class SoftmaxOp(GraphOp):
    """exp(x - max) / sum(exp(x - max)) along `axis`.

    %y = graph.softmax %x {axis = -1} : (tensor<2x10xf32>) -> tensor<2x10xf32>
    """

    name = "graph.softmax"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"axis": ("int", -1)}
    PATTERN: ClassVar[str] = "opaque"

    input = operand_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        shapes.normalize_axis(cfg["axis"], len(s[0]))
        return s[0]


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
        return TensorType(
            t.element_type, shapes.reshape(tuple(t.get_shape()), attrs["shape"])
        )

    @classmethod
    def build_inferred(cls, *operands: SSAValue | Operation, **attrs: Any) -> Self:
        (x,) = [SSAValue.get(o) for o in operands]
        return cls.create(
            operands=[x], result_types=[cls.infer_type([x.type], **attrs)]
        )

    def verify_(self) -> None:
        x = _static_tensor(self.input, "operand 0")
        y = _static_tensor(self.result, "the result")
        if x.element_type != y.element_type:
            raise VerifyException(
                f"expected result element type {x.element_type}, got {y.element_type}"
            )
        shapes.reshape(tuple(x.get_shape()), y.get_shape())


@irdl_op_definition
class FlattenOp(GraphOp):
    """Reshape to 2-D: dims before `axis` multiply into rows, the rest into columns.

    %y = graph.flatten %x {axis = 1} : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
    """

    name = "graph.flatten"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"axis": ("int", 1)}
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.flatten(s[0], cfg["axis"])


@irdl_op_definition
class TransposeOp(GraphOp):
    """Permuted axes: result dim i is input dim perm[i] (reversed by default).

    %y = graph.transpose %x {perm = [0, 2, 1]} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
    """

    name = "graph.transpose"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"perm": ("ints", None)}
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    perm = opt_prop_def(ArrayAttr[IntegerAttr])
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


@irdl_op_definition
class ConcatOp(GraphOp):
    """Operands joined along `axis`.

    %y = graph.concat %a, %b {axis = 1} : (tensor<1x8xf32>, tensor<1x4xf32>) -> tensor<1x12xf32>
    """

    name = "graph.concat"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"axis": ("int", 0)}
    PATTERN: ClassVar[str] = "injective"

    inputs = var_operand_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.concat(s, cfg["axis"])


@irdl_op_definition
class PadOp(GraphOp):
    """Constant padding: `pads` is [begin..., end...] per axis (ONNX's order).

    %y = graph.pad %x {pads = [0, 0, 1, 1, 0, 0, 1, 1], value = 0.0 : f32}
           : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x6xf32>
    """

    name = "graph.pad"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "pads": ("ints", _REQUIRED),
        "value": ("float", 0.0),
    }
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    pads = prop_def(ArrayAttr[IntegerAttr])
    value = opt_prop_def(FloatAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        return shapes.pad(s[0], cfg["pads"])


# ---------------------------------------------------------------- reductions


class _ReduceOp(GraphOp):
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "axes": ("ints", ()),
        "keepdims": ("bool", False),
    }
    PATTERN: ClassVar[str] = "comm-reduce"

    input = operand_def(TensorType)
    axes = opt_prop_def(ArrayAttr[IntegerAttr])
    keepdims = opt_prop_def(IntegerAttr)
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


@irdl_op_definition
class ReduceSumOp(_ReduceOp):
    """Sum over `axes` (every axis when empty).

    %y = graph.reduce_sum %x {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
    """

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(_ReduceOp):
    """Mean over `axes` (every axis when empty).

    %y = graph.reduce_mean %x {axes = [-1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
    """

    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(_ReduceOp):
    """Max over `axes` (every axis when empty).

    %y = graph.reduce_max %x {axes = [0]} : (tensor<2x8xf32>) -> tensor<8xf32>
    """

    name = "graph.reduce_max"


# ---------------------------------------------------------------- fusion


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The results of a `graph.fused` region.

    graph.yield %v : tensor<1x16x8x8xf32>
    """

    name = "graph.yield"

    values = var_operand_def(TensorType)

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(FusedOp)))

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class FusedOp(IRDLOperation):
    """One fusion group: its region holds the group's ops over the block arguments
    (one per operand) and yields the group's results.

    %r = graph.fused "fused_conv2d_add_relu_0" (%x, %w, %b) ({
    ^bb0(%a: tensor<...>, %b: tensor<...>, %c: tensor<...>):
      ...
      graph.yield %v : tensor<...>
    }) : (tensor<...>, tensor<...>, tensor<...>) -> tensor<...>
    """

    name = "graph.fused"

    group_name = prop_def(StringAttr, prop_name="name")
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), Pure())

    def __init__(
        self,
        name: str,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        body: Region | Block,
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties={"name": StringAttr(name)},
            regions=[body if isinstance(body, Region) else Region(body)],
        )

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [a.type for a in block.args]
        in_types = list(self.inputs.types)
        if arg_types != in_types:
            raise VerifyException(
                f"expected block arguments of types ({', '.join(map(str, in_types))}), "
                f"got ({', '.join(map(str, arg_types))})"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(
                f"expected the region to end in graph.yield, got "
                f"{last.name if last else 'an empty block'}"
            )
        yielded = list(last.values.types)
        out_types = list(self.outputs.types)
        if yielded != out_types:
            raise VerifyException(
                f"expected graph.yield of types ({', '.join(map(str, out_types))}), "
                f"got ({', '.join(map(str, yielded))})"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.group_name.data)
        printer.print_string(" (")
        printer.print_list(self.inputs, printer.print_ssa_value)
        printer.print_string(") (")
        printer.print_region(self.body, print_entry_block_args=True)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_operation_type(self)

    @classmethod
    def parse(cls, parser: Parser) -> "FusedOp":
        name = parser.parse_str_literal("expected the group's name")
        operands = parser.parse_op_args_list()
        parser.parse_punctuation("(")
        body = parser.parse_region()
        parser.parse_punctuation(")")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        if len(ftype.inputs) != len(operands):
            parser.raise_error(
                f"expected {len(operands)} operand types, got {len(ftype.inputs)}"
            )
        values = [
            parser.resolve_operand(o, t)
            for o, t in zip(operands, ftype.inputs, strict=True)
        ]
        op = cls(name, values, list(ftype.outputs), body)
        op.attributes.update(attrs)
        return op


COMPUTE_OPS: tuple[type[GraphOp], ...] = (
    Conv2DOp,
    DenseOp,
    MatmulOp,
    BatchMatmulOp,
    BatchNormOp,
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaximumOp,
    MinimumOp,
    PowOp,
    ReluOp,
    SigmoidOp,
    TanhOp,
    ExpOp,
    SqrtOp,
    ErfOp,
    GeluOp,
    NegOp,
    AbsOp,
    LogOp,
    ClipOp,
    MaxPool2DOp,
    AvgPool2DOp,
    GlobalAvgPool2DOp,
    SoftmaxOp,
    ReshapeOp,
    FlattenOp,
    TransposeOp,
    ConcatOp,
    PadOp,
    ReduceSumOp,
    ReduceMeanOp,
    ReduceMaxOp,
)
"""Every op that computes a tensor from tensors (all but param, constant, fused)."""

ELEMENTWISE_OPS = tuple(
    op for op in COMPUTE_OPS if op.PATTERN in ("elemwise", "broadcast")
)
"""Unary and binary elementwise ops (numpy broadcasting)."""


def infer_type(
    op: type[GraphOp], operand_types: Sequence[Attribute], **attrs: Any
) -> TensorType:
    """`op.infer_type(operand_types, **attrs)`: the result type of a graph op."""
    return op.infer_type(operand_types, **attrs)


Graph = Dialect(
    "graph",
    [ParamOp, ConstantOp, *COMPUTE_OPS, FusedOp, YieldOp],
)
