"""The `graph` dialect: operators on tensors, Relay's level.

A model is a `func.func @main` over ranked, statically shaped `tensor`s of f32,
f16, f64, i64, i32, i16, i8, ui64, ui32, ui16, ui8 or i1 (bool): unsigned
integers are `ui<N>` here and signless in kernels, whose ops say the signedness;
which dtypes an op's kernel computes is its strategy's (`ember.strategy`).
Weights are bound by name with `graph.param` (their values live outside the IR,
in a `dict[str, np.ndarray]` of params); small literals are `graph.constant`. A
fusion group is a `graph.fused` region op.

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

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
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
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from ember.dialects.graph_activation import (
    EluOp,
    GeluTanhOp,
    HardSigmoidOp,
    HardSwishOp,
    LeakyReluOp,
    MishOp,
    PReluOp,
    SeluOp,
    SoftplusOp,
)
from ember.dialects.graph_base import NUMPY_TYPES, GraphOp, graph_tensor, static_tensor
from ember.dialects.graph_nn import (
    AvgPool2DOp,
    BatchMatmulOp,
    BatchNormOp,
    Conv2DOp,
    Conv2dOp,
    DenseDequantOp,
    DenseOp,
    GlobalAvgPool2DOp,
    LogSoftmaxOp,
    MatmulOp,
    MaxPool2DOp,
    QConv2DOp,
    QDenseOp,
    SoftmaxOp,
)
from ember.dialects.graph_shapes import ShapeError
from ember.dialects.graph_tensor import (
    AbsOp,
    AddOp,
    ClipOp,
    ConcatOp,
    DivOp,
    ErfOp,
    ExpOp,
    FlattenOp,
    GeluOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    NegOp,
    PadOp,
    PowOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceSumOp,
    ReluOp,
    ReshapeOp,
    SigmoidOp,
    SqrtOp,
    SubOp,
    TanhOp,
    TransposeOp,
)
from ember.runtime.errors import EmberValueError

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
        static_tensor(self.result, "the param")


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
        """A constant holding `array` (a dtype of `NUMPY_TYPES`)."""
        array = np.asarray(array)
        if array.dtype.name not in NUMPY_TYPES:
            raise EmberValueError(
                f"expected an array of {', '.join(NUMPY_TYPES)}, got {array.dtype}"
            )
        element = NUMPY_TYPES[array.dtype.name]
        data = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
        return cls(
            DenseIntOrFPElementsAttr(TensorType(element, array.shape), BytesAttr(data))
        )

    def numpy(self) -> "np.ndarray":
        """The value as a numpy array (a fresh copy)."""
        t = self.value.type
        dtype = next(k for k, v in NUMPY_TYPES.items() if v == t.element_type)
        if dtype == "bool":  # xDSL writes true as 0xff
            flat = np.frombuffer(self.value.data.data, np.uint8) != 0
        else:
            flat = np.frombuffer(
                self.value.data.data, np.dtype(dtype).newbyteorder("<")
            )
        return flat.astype(dtype).reshape(t.get_shape())

    def verify_(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException(f"expected {self.value.type}, got {self.result.type}")
        static_tensor(self.result, "the constant")

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        array = self.numpy()
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            # xDSL prints inf and NaN as MLIR's hex float literals (0xff800000),
            # which its parser reads back as integers (4.29e9): the raw bytes
            # in a hex string read back exact
            printer.print_string(f'dense<"0x{self.value.data.data.hex().upper()}"> : ')
            printer.print_attribute(self.value.type)
            return
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> "ConstantOp":
        attrs = parser.parse_optional_attr_dict()
        start = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr) or not isinstance(
            value.type, TensorType
        ):
            parser.raise_error(f"expected a dense tensor literal, got {value}")
        text = parser.lexer.input.content[start : parser.pos]
        op = cls(_hex_floats(value, text))
        op.attributes.update(attrs)
        return op


_ELEMENT = re.compile(
    r"0[xX][0-9a-fA-F]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|true|false"
)


def _hex_floats(value: DenseIntOrFPElementsAttr, text: str) -> DenseIntOrFPElementsAttr:
    """`value` parsed from `text` (`dense<...> : type`), with MLIR's meaning of
    a hex literal among float elements: its bits (`dense<0xff800000>` is
    -inf; xDSL reads the integer 4286578688)."""
    t = value.type
    assert isinstance(t, TensorType)
    dtype = next((k for k, v in NUMPY_TYPES.items() if v == t.element_type), None)
    if dtype is None or np.dtype(dtype).kind != "f" or not text.startswith("dense<"):
        return value
    body = text[len("dense<") : text.find(">")]
    if body.lstrip().startswith('"') or not re.search(r"0[xX]", body):
        return value  # raw bytes, or no hex literal: as xDSL read it
    width = np.dtype(dtype)
    bits = np.dtype(f"u{width.itemsize}")
    elements = [
        np.array(int(e, 16), bits).view(width)
        if e[:2] in ("0x", "0X")
        else width.type(e)
        for e in _ELEMENT.findall(body)
    ]
    shape = t.get_shape()
    if len(elements) not in (1, math.prod(shape)):
        return value  # xDSL's own count check stands
    array = np.broadcast_to(np.array(elements, width), (math.prod(shape),))
    return ConstantOp.from_numpy(array.reshape(shape)).value


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


# ---------------------------------------------------------------- kernels


VARIANTS_ATTR = "ember.variants"
"""On a `graph.call_kernel`: its size-class variants (`CallKernelOp.variants`)."""


@irdl_op_definition
class CallKernelOp(IRDLOperation):
    """A graph value computed by a kernel function of the module (what
    `convert-graph-to-te` makes of a fusion group; Relax's `call_tir`). The
    callee is a te function over the same tensors, or, once lowered, a loop
    function taking the operands, then the result as an out-parameter, then
    its scratch buffers.

    %y = graph.call_kernel @ember_conv2d_relu_0f3a(%x, %w)
           : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

    A symbolic kernel may have size-class variants (`ember.variants`): each
    `{callee = @f, size = "n", equals = 1}` names a function computing the
    same (the kernel scheduled for that class), called where the size, an
    expression over the symbols, is `equals` at run time.
    """

    name = "graph.call_kernel"

    callee = prop_def(SymbolRefAttr)
    args = var_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$callee `(` $args `)` attr-dict `:` functional-type($args, $result)"
    )

    def __init__(self, callee: str, args: Sequence[SSAValue], result: TensorType):
        super().__init__(
            operands=[list(args)],
            result_types=[result],
            properties={"callee": SymbolRefAttr(callee)},
        )

    def verify_(self) -> None:
        for callee in [self.callee, *(SymbolRefAttr(c) for c, _, _ in self.variants())]:
            found = SymbolTable.lookup_symbol(self, callee)
            if not isinstance(found, func.FuncOp):
                raise VerifyException(
                    f"expected @{callee.string_value()} to be a func.func of "
                    f"the module, got {found.name if found else 'nothing'}"
                )
        graph_tensor(self.result, "the result")

    def variants(self) -> list[tuple[str, Any, int]]:
        """(callee, size, equals) of each size-class variant (`ember.variants`).

        Raises:
            VerifyException: the attribute is not a list of such entries.
        """
        from ember.runtime.errors import EmberValueError
        from ember.runtime.shape_expr import parse

        attr = self.attributes.get(VARIANTS_ATTR)
        if attr is None:
            return []
        expected = (
            f'expected {VARIANTS_ATTR} as [{{callee = @f, size = "n", equals = 1}}, '
            f"...]"
        )
        if not isinstance(attr, ArrayAttr):
            raise VerifyException(f"{expected}, got {attr}")
        found = []
        for entry in attr.data:
            fields = entry.data if isinstance(entry, DictionaryAttr) else {}
            callee, size, equals = (fields.get(k) for k in ("callee", "size", "equals"))
            if not (
                isinstance(callee, SymbolRefAttr)
                and isinstance(size, StringAttr)
                and isinstance(equals, IntegerAttr)
                and len(fields) == 3
            ):
                raise VerifyException(f"{expected}, got {entry}")
            try:
                found.append(
                    (callee.string_value(), parse(size.data), equals.value.data)
                )
            except EmberValueError as e:
                raise VerifyException(f"{VARIANTS_ATTR}: {e}") from None
        return found


def _compute_ops() -> tuple[type[GraphOp], ...]:
    from ember.dialects import (
        graph_activation,
        graph_data,
        graph_dtype,
        graph_index,
        graph_math,
        graph_nn,
        graph_norm,
        graph_spatial,
        graph_tensor,
    )

    modules = (
        graph_nn,
        graph_tensor,
        graph_activation,
        graph_norm,
        graph_data,
        graph_dtype,
        graph_index,
        graph_math,
        graph_spatial,
    )
    ops = (
        op
        for module in modules
        for op in vars(module).values()
        if isinstance(op, type) and issubclass(op, GraphOp) and "name" in vars(op)
    )
    return tuple(dict.fromkeys(ops))  # Conv2dOp is Conv2DOp


COMPUTE_OPS: tuple[type[GraphOp], ...] = _compute_ops()
"""Every op that computes a tensor from tensors (all but param, constant, fused,
call_kernel): each op class defined in `graph_nn.py`, `graph_tensor.py` and
`graph_activation.py`, `graph_norm.py`, `graph_data.py`, `graph_dtype.py`,
`graph_index.py` and `graph_spatial.py`, so a new op is declared in one place."""

ELEMENTWISE_OPS = tuple(
    op for op in COMPUTE_OPS if op.PATTERN in ("elemwise", "broadcast")
)
"""Unary and binary elementwise ops (numpy broadcasting)."""


def __getattr__(name: str) -> type[GraphOp]:
    """`graph.<Op>` for every compute op, those not imported above included."""
    for op in COMPUTE_OPS:
        if op.__name__ == name:
            return op
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def infer_type(
    op: type[GraphOp], operand_types: Sequence[Attribute], **attrs: Any
) -> TensorType:
    """`op.infer_type(operand_types, **attrs)`: the result type of a graph op."""
    return op.infer_type(operand_types, **attrs)


# The ops imported above, re-exported for pyright; an op added later is reached
# as `graph.<Op>` through `__getattr__` without being listed here.
__all__ = [
    "LogSoftmaxOp",
    "SoftplusOp",
    "SeluOp",
    "PReluOp",
    "MishOp",
    "LeakyReluOp",
    "HardSwishOp",
    "HardSigmoidOp",
    "GeluTanhOp",
    "EluOp",
    "AbsOp",
    "AddOp",
    "AvgPool2DOp",
    "BatchMatmulOp",
    "BatchNormOp",
    "ClipOp",
    "ConcatOp",
    "Conv2DOp",
    "Conv2dOp",
    "DenseDequantOp",
    "DenseOp",
    "QConv2DOp",
    "QDenseOp",
    "DivOp",
    "ErfOp",
    "ExpOp",
    "FlattenOp",
    "GeluOp",
    "GlobalAvgPool2DOp",
    "LogOp",
    "MatmulOp",
    "MaxPool2DOp",
    "MaximumOp",
    "MinimumOp",
    "MulOp",
    "NegOp",
    "PadOp",
    "PowOp",
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceSumOp",
    "ReluOp",
    "ReshapeOp",
    "SigmoidOp",
    "SoftmaxOp",
    "SqrtOp",
    "SubOp",
    "TanhOp",
    "TransposeOp",
    "CallKernelOp",
    "ParamOp",
    "ConstantOp",
    "FusedOp",
    "YieldOp",
    "GraphOp",
    "ShapeError",
    "COMPUTE_OPS",
    "ELEMENTWISE_OPS",
    "infer_type",
    "Graph",
]

Graph = Dialect(
    "graph",
    [ParamOp, ConstantOp, *COMPUTE_OPS, FusedOp, YieldOp, CallKernelOp],
)
