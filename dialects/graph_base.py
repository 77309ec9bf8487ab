"""The machinery the computing ops of the `graph` dialect share: an attribute
schema (`ATTRS`), shape inference through `dialects/graph_shapes.py`, the
verifier that checks the declared result type, and one custom syntax
(`%y = graph.op %a, %b {attrs} : (types) -> type`, i64 integers printed bare).
"""

from collections.abc import Sequence
from typing import Any, ClassVar, Self

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, opt_prop_def, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ember.dialects.graph_shapes import (
    Shape,
    ShapeError,
    dims_of,
    is_static,
    tensor_of,
)
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import SymExpr
from ember.runtime.shape_expr import parse as parse_dim

REQUIRED = object()
i1 = IntegerType(1)
NUMPY_TYPES: dict[str, IntegerType | AnyFloat] = {
    "float32": f32,
    "float16": f16,
    "float64": f64,
    "int8": i8,
    "int16": i16,
    "int32": i32,
    "int64": i64,
    **{f"uint{b}": IntegerType(b, Signedness.UNSIGNED) for b in (8, 16, 32, 64)},
    "bool": i1,
}
"""The element type of each numpy dtype a graph tensor may hold: unsigned
integers are MLIR's `ui<N>` at the graph level (an op's semantics depend on
it); kernels compute them signless, choosing the unsigned arith ops."""

MAX_FOLDED_BYTES = 1 << 32
"""The largest array ember computes with numpy while compiling (4 GiB): a
value an ONNX model asks the importer to make (ConstantOfShape, Range, a
mask, a window) past it is refused naming its node, and graph-fold-constants
leaves an op whose result would outgrow it to a kernel."""


def dtype_of(element: Attribute) -> str:
    """The numpy dtype name of a graph element type (`i1` is "bool").

    Raises:
        ShapeError: for an element type no graph tensor holds (ui8, bf16, ...).
    """
    for name, t in NUMPY_TYPES.items():
        if t == element:
            return name
    raise ShapeError(
        f"expected an element type among {', '.join(map(str, NUMPY_TYPES.values()))}"
        f", got {element}"
    )


_PROPERTY_TYPES: dict[str, Any] = {
    "ints": ArrayAttr[IntegerAttr],
    # sizes that may be symbolic: an int, or an expression's text
    "dims": ArrayAttr[IntegerAttr | StringAttr],
    "dim": IntegerAttr | StringAttr,
    "int": IntegerAttr,
    "float": FloatAttr,
    "bool": IntegerAttr,
}
"""The property constraint of each attribute kind."""


def _encode(kind: str, value: Any) -> Attribute:
    if kind == "ints":
        return ArrayAttr([IntegerAttr(int(v), i64) for v in value])
    if kind == "dims":
        return ArrayAttr([_encode("dim", v) for v in value])
    if kind == "dim":
        if isinstance(value, SymExpr):
            return StringAttr(str(value))
        return IntegerAttr(int(value), i64)
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
    if kind == "dims":
        assert isinstance(attr, ArrayAttr)
        return tuple(_decode("dim", a) for a in attr.data)
    if kind == "dim":
        if isinstance(attr, StringAttr):
            return _parse_dim(attr.data)
        assert isinstance(attr, IntegerAttr)
        return attr.value.data
    if kind == "float":
        assert isinstance(attr, FloatAttr)
        return float(attr.value.data)
    assert isinstance(attr, IntegerAttr)
    return bool(attr.value.data) if kind == "bool" else int(attr.value.data)


def _parse_dim(text: str) -> Any:
    try:
        return parse_dim(text)
    except EmberValueError as e:
        raise VerifyException(str(e)) from None


def static_tensor(value: SSAValue, what: str) -> TensorType:
    t = value.type
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        raise VerifyException(
            f"expected a statically shaped tensor for {what}, got {t}"
        )
    return t


def graph_tensor(value: SSAValue, what: str) -> TensorType:
    """`value`'s tensor type, whose dynamic dims each have their expression
    (`graph_shapes.dims_of`)."""
    t = value.type
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a tensor for {what}, got {t}")
    dims_of(t)
    return t


def _print_value(printer: Printer, attr: Attribute) -> None:
    # i64 integers print bare (`[2, 2]`, `1`), as MLIR does, not `2 : i64`
    if isinstance(attr, IntegerAttr) and attr.type == i64:
        printer.print_string(str(attr.value.data))
    elif isinstance(attr, ArrayAttr) and all(
        isinstance(a, IntegerAttr) and a.type == i64 or isinstance(a, StringAttr)
        for a in attr.data
    ):  # `[2, "seq"]`: sizes, some symbolic
        printer.print_string("[")
        for i, a in enumerate(attr.data):
            printer.print_string(", " if i else "")
            if isinstance(a, StringAttr):
                printer.print_string_literal(a.data)
            else:
                printer.print_string(str(a.value.data))  # type: ignore[union-attr]
        printer.print_string("]")
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

    `ATTRS` maps each attribute to its kind ("ints", "int", "float", "bool";
    "dims" and "dim" for sizes that may be expressions) and default
    (`REQUIRED` when it has none); subclasses define `_infer`.
    """

    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {}
    PATTERN: ClassVar[str] = "opaque"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each attribute of `ATTRS` becomes the op's property (required when
        its default is `REQUIRED`), so an attribute is declared once."""
        super().__init_subclass__(**kwargs)
        declared = {name for c in cls.__mro__ for name in vars(c)}
        for key, (kind, default) in cls.ATTRS.items():
            if key not in declared:
                define = prop_def if default is REQUIRED else opt_prop_def
                setattr(cls, key, define(_PROPERTY_TYPES[kind]))

    @classmethod
    def _infer(cls, shapes_: list[Shape], cfg: dict[str, Any], /) -> Shape:
        raise NotImplementedError

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        """The result's element type: the operands' one element type (ops that
        compare, select or convert say otherwise)."""
        if len(set(elements)) > 1:
            got = ", ".join(map(str, elements))
            raise ShapeError(f"expected operands of one element type, got {got}")
        return elements[0]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        """The op's numpy semantics on its operands' values (ONNX's definition);
        constant folding and the tests' reference evaluate ops with it."""
        raise NotImplementedError(f"no numpy semantics for {self.name}")

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
            if value is REQUIRED:
                raise ShapeError(f"expected attribute '{key}' of {cls.name}, got none")
            listed = kind in ("ints", "dims") and value is not None
            cfg[key] = tuple(value) if listed else value  # type: ignore[arg-type]
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
        shapes_ = [dims_of(t) for t in tensors]
        try:
            shape = cls._infer(shapes_, cfg)
        except TypeError as e:  # a rule that compares symbolic dims as ints
            if all(map(is_static, shapes_)):
                raise
            got = ", ".join(str(t) for t in tensors)
            raise ShapeError(
                f"{cls.name} does not take symbolic dimensions yet, got {got} ({e})"
            ) from None
        element = cls._infer_element([t.element_type for t in tensors], cfg)
        return tensor_of(element, shape)

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
            graph_tensor(v, f"operand {i}") for i, v in enumerate(self.operands)
        ]
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
