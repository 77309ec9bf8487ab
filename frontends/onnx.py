"""ONNX models to graph IR (TVM's `relay.frontend.from_onnx`).

    mod, params = from_onnx("mobilenet_v2.onnx", shape={"input": (1, 3, 224, 224)})

`mod` is a builtin.module holding `func.func @main` over statically shaped
tensors of the model's dtypes (float32, float16, float64, int64, int32, int8,
bool; inputs named after the ONNX inputs in `ember.name` argument attributes,
outputs likewise in result attributes); `params` maps each `graph.param` name to its
numpy array. The import runs in three steps:

1. load and validate: a path or a ModelProto; a file that is not ONNX, a model the
   checker rejects is refused with a message naming it; a model at an opset
   outside 13..28 goes through `onnx.version_converter` to 13 or 28 (a model the
   converter cannot take is refused naming the opset and the converter's error);
2. check the whole graph: every op type ember cannot convert, every unsupported
   attribute value (Pad mode='reflect', auto_pad='XYZ', ...) and every shape input
   computed at run time are collected into one `UnsupportedOperatorError` before
   any IR is built;
3. convert node by node in topological order (`frontends/onnx_ops.py`,
   `frontends/onnx_fold.py`): shape computations whose inputs are known at
   import time (Shape, Gather, Unsqueeze, Concat, Cast, Constant, Mod, Where,
   ...: numpy for the common ops, onnx's reference evaluator for the others)
   fold to numpy arrays; everything else becomes graph ops built with the
   dialect's shape-inferring builders. A zero-size tensor that one of those
   ops would read or write is refused naming its node (ember's kernels and
   buffers take positive extents); one only typed from is fine. So
   is a tensor of more than `MAX_RANK` dimensions, and an array made at import
   past `MAX_FOLDED_BYTES` (a 10^12-element ConstantOfShape), before numpy
   allocates it.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import version_converter
from onnx.defs import onnx_opset_version
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ember.dialects import graph as G
from ember.dialects.graph_base import NUMPY_TYPES
from ember.dialects.graph_shapes import Dim, dims_of, is_static, tensor_of
from ember.frontends import (
    onnx_attention,
    onnx_data,
    onnx_dtype,
    onnx_fold,
    onnx_grid,
    onnx_im2col,
    onnx_index,
    onnx_loss,
    onnx_math,
    onnx_ops,
    onnx_qdq,
    onnx_quant,
    onnx_reduce,
    onnx_rnn,
    onnx_signal,
    onnx_spatial,
    onnx_tensor,
    unsupported_message,
)
from ember.frontends.onnx_data import implied_bounds
from ember.frontends.onnx_fold import DEFAULT_DOMAINS, dtype_name, to_array
from ember.frontends.onnx_ops import ConversionError, NodeContext
from ember.runtime.errors import EmberError
from ember.runtime.shape_expr import Sym

# imported for their converters (onnx_ops registers)
del onnx_attention, onnx_data, onnx_dtype, onnx_grid, onnx_im2col, onnx_index
del onnx_loss, onnx_math, onnx_quant, onnx_reduce, onnx_rnn, onnx_signal
del onnx_spatial, onnx_tensor

__all__ = [
    "InputShapeError",
    "OnnxImportError",
    "UnsupportedOperatorError",
    "from_onnx",
    "load_model",
]

NEWEST_REVIEWED_OPSET = 28
"""The newest default-domain opset whose changes to the converted ops were
read (onnx 1.23's schemas). From 13 on, the converted ops changed only in
types ember does not take (uint, int16, bfloat16, float8, int4, string...),
in Mod (28: fmod=0 on floats, numpy's mod, computed) or in ways the
attribute checks and converters handle: axes as an input of ReduceMax/ReduceMean
and Pad (18), Pad's 'wrap' mode and AveragePool's dilations (19, refused), Gelu
(20), Cast's round_mode (25, float8 only). tests/test_onnx_frontend.py lists
every change point so that a newer onnx package names what to read."""

SUPPORTED_OPSETS = range(13, min(NEWEST_REVIEWED_OPSET, onnx_opset_version()) + 1)
"""Opsets whose semantics the converters follow; a model outside goes through
`onnx.version_converter` to the nearest end first."""

MAX_RANK = 64
"""The most dimensions a tensor may have: numpy's limit (NPY_MAXDIMS), which
the runtime's arrays share; deeper loop nests are refused before they are
built."""


class OnnxImportError(EmberError):
    """The model cannot be imported: not an ONNX file, an invalid model, an opset
    outside the supported range, or a node that does not convert."""


class InputShapeError(OnnxImportError):
    """Inputs whose shape the model leaves open (a dynamic dimension, or no
    shape at all), so the caller must give it.

    `shapes` maps each such input to an example to give: its fixed extents with
    1 for each open one, or None where the model gives no rank. The message
    says how in Python (`shape={...}`); a tool words it its own way with
    `hint(...)` (ember-compile: `--input-shapes NAME:D0,D1,...`).
    """

    def __init__(
        self,
        problem: str,
        shapes: Mapping[str, tuple[int, ...] | None],
        hint: str | None = None,
    ):
        self.problem, self.shapes = problem, dict(shapes)
        if hint is None:
            dims = {k: "(...)" if v is None else str(v) for k, v in self.shapes.items()}
            hint = "shape={" + ", ".join(f"{k!r}: {v}" for k, v in dims.items()) + "}"
        super().__init__(f"{problem}; pass the shapes to compile for, e.g. {hint}")

    def hint(self, hint: str) -> InputShapeError:
        """The same error, its remedy spelled `hint`."""
        return InputShapeError(self.problem, self.shapes, hint)


class UnsupportedOperatorError(OnnxImportError):
    """The model uses operators (or attribute values) ember does not convert.

    `unsupported` maps each op type, with the attribute values at fault where the
    op itself is supported ("Pad (mode='reflect')"), to the names of its nodes.
    """

    def __init__(self, model: str, unsupported: Mapping[str, Sequence[str]]):
        self.unsupported = {key: list(nodes) for key, nodes in unsupported.items()}
        super().__init__(unsupported_message(model, "ONNX", self.unsupported))


def load_model(
    model: onnx.ModelProto | str | os.PathLike,
) -> tuple[onnx.ModelProto, str]:
    """The ModelProto and a label naming it in messages; a path is read with its
    external data. Raises OnnxImportError for anything that is not a valid model."""
    if isinstance(model, onnx.ModelProto):
        label = f"ONNX model '{model.graph.name or 'unnamed'}'"
    else:
        path = Path(model)
        label = f"'{path}'"
        if not path.is_file():
            raise OnnxImportError(f"{label}: no such file")
        try:
            model = onnx.load_model(str(path))
        except onnx.checker.ValidationError as e:  # external data missing or unsafe
            raise OnnxImportError(
                f"{label}: cannot load its external data: {e}"
            ) from None
        except (
            DecodeError,
            ValueError,
            RuntimeError,
            OSError,
            UnicodeDecodeError,
        ) as e:
            raise OnnxImportError(
                f"{label} is not an ONNX model (it does not decode as one: {e})"
            ) from None
        # protobuf decodes some arbitrary bytes to an empty or near-empty message
        if not model.HasField("graph") or model.ir_version <= 0:
            raise OnnxImportError(
                f"{label} is not an ONNX model (no graph or IR version in it)"
            )
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0]
        raise OnnxImportError(f"{label} is not a valid ONNX model: {first}") from None
    return model, label


def _opset(model: onnx.ModelProto, label: str) -> tuple[onnx.ModelProto, int]:
    """The model at a supported opset, and that opset: one outside the range is
    converted by `onnx.version_converter` to the nearest supported one."""
    versions = [o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS]
    if not versions:
        # a model of another domain only (ai.onnx.ml, ai.onnx.preview.training):
        # name its ops as _check_graph names them beside default-domain ones
        foreign: dict[str, list[str]] = {}
        for index, node in enumerate(model.graph.node):
            if node.domain not in DEFAULT_DOMAINS:
                foreign.setdefault(_key(node), []).append(_node_name(node, index))
        if foreign:
            raise UnsupportedOperatorError(label, foreign)
        raise OnnxImportError(f"{label}: expected an import of the default ONNX opset")
    opset = versions[0]
    if opset in SUPPORTED_OPSETS:
        return model, opset
    first, last = SUPPORTED_OPSETS.start, SUPPORTED_OPSETS.stop - 1
    target = first if opset < first else last
    try:
        converted = version_converter.convert_version(model, target)
        onnx.checker.check_model(converted)
    except Exception as e:  # the converter raises its C++ errors untyped
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise OnnxImportError(
            f"{label}: expected opset {first}..{last}, got {opset}, and "
            f"onnx.version_converter could not convert it to opset {target}: "
            f"{reason}"
        ) from None
    return converted, target


def _key(node: onnx.NodeProto) -> str:
    if node.domain in DEFAULT_DOMAINS:
        return node.op_type
    return f"{node.domain}.{node.op_type}"


def _node_name(node: onnx.NodeProto, index: int) -> str:
    if node.name:
        return node.name
    return f"#{index} (output '{node.output[0]}')" if node.output else f"#{index}"


def _frozen(
    model: onnx.ModelProto, values: Mapping[str, np.ndarray], label: str
) -> onnx.ModelProto:
    """`model` with the graph inputs named in `values` as initializers."""
    inputs = {i.name: i for i in model.graph.input}
    chosen = {name: v for name, v in values.items() if name in inputs}
    if not chosen:
        return model
    model = copy.deepcopy(model)
    for name, value in chosen.items():
        t = inputs[name].type.tensor_type
        array = np.asarray(value)
        declared = dtype_name(t.elem_type)
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if (
            array.dtype.name != declared
            or len(dims) != array.ndim
            or any(
                d is not None and d != n
                for d, n in zip(dims, array.shape, strict=False)
            )
        ):
            raise OnnxImportError(
                f"{label}: input '{name}' is {declared} {tuple(dims)}; the value "
                f"given to freeze it is {array.dtype} {array.shape}"
            )
        model.graph.initializer.append(onnx.numpy_helper.from_array(array, name))
    kept = [i for i in model.graph.input if i.name not in chosen]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model


def _check_graph(graph: onnx.GraphProto, opset: int, label: str) -> None:
    """Raise one UnsupportedOperatorError listing every node that cannot convert."""
    known = {t.name for t in graph.initializer}
    unsupported: dict[str, list[str]] = {}
    for index, node in enumerate(graph.node):
        key = _key(node)
        problems: list[str] = []
        folds = onnx_fold.folds(node, known.__contains__)
        if key not in onnx_ops.CONVERTERS and not folds:
            unsupported.setdefault(key, []).append(_node_name(node, index))
            continue
        problems += onnx_ops.unsupported_attributes(key, node, opset)
        inputs = list(node.input)
        if key == "Constant" or folds:
            known.update(node.output)
        elif key in onnx_fold.SHAPE_ONLY:
            problems.append("on a tensor computed by the model")
        for i, what in onnx_ops.CONST_INPUTS.get(key, []):
            if i < len(inputs) and inputs[i] and inputs[i] not in known:
                problems.append(f"{what} computed by the model")
        for i, what in onnx_ops.ABSENT_INPUTS.get(key, []):
            if i < len(inputs) and inputs[i]:
                problems.append(what)
        if problems:
            entry = f"{key} ({', '.join(problems)})"
            unsupported.setdefault(entry, []).append(_node_name(node, index))
    if unsupported:
        raise UnsupportedOperatorError(label, unsupported)


def _readers(graph: onnx.GraphProto, name: str) -> str:
    ops = sorted({n.op_type for n in graph.node if name in n.input})
    return f" (read by {', '.join(ops)})" if ops else ""


def _input_dtype(
    graph: onnx.GraphProto, value: onnx.ValueInfoProto, want: str | None, label: str
) -> str:
    """The numpy dtype of input `value`: its declared one, which `want` (the
    caller's dtype for it, if any) must name."""
    kind = value.type.WhichOneof("value")
    elem = value.type.tensor_type.elem_type
    if kind != "tensor_type" or not elem:
        declared = f"a {kind or 'value'} of no tensor element type"
    else:
        declared = dtype_name(elem)
    if declared not in NUMPY_TYPES:
        raise OnnxImportError(
            f"{label}: input '{value.name}'{_readers(graph, value.name)}: expected "
            f"a dtype among {', '.join(NUMPY_TYPES)}, got {declared}"
        )
    if want is not None and want != declared:
        raise OnnxImportError(
            f"{label}: expected dtype {declared} for input '{value.name}', got {want}"
        )
    return declared


def _input_shapes(
    graph: onnx.GraphProto,
    shape: Mapping[str, Sequence[int]] | None,
    dtype: str | Mapping[str, str] | None,
    label: str,
    symbolic: bool = False,
) -> dict[str, tuple[tuple[Dim, ...], str]]:
    initializers = {t.name for t in graph.initializer}
    inputs = [v for v in graph.input if v.name not in initializers]
    names = [v.name for v in inputs]
    overrides = dict(shape or {})
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise OnnxImportError(
            f"{label}: expected shapes for inputs among {names}, got {unknown}"
        )
    result = {}
    problems: list[str] = []
    examples: dict[str, tuple[int, ...] | None] = {}
    for value in inputs:
        want = dtype if isinstance(dtype, str | None) else dtype.get(value.name)
        element = _input_dtype(graph, value, want, label)
        tensor = value.type.tensor_type
        declared = list(tensor.shape.dim)
        if value.name in overrides:
            dims = tuple(int(d) for d in overrides[value.name])
            if tensor.HasField("shape") and len(dims) != len(declared):
                raise OnnxImportError(
                    f"{label}: expected a shape of rank {len(declared)} for input "
                    f"'{value.name}', got {list(dims)}"
                )
            if any(d < 1 for d in dims):
                raise OnnxImportError(
                    f"{label}: expected positive dims for input '{value.name}', "
                    f"got {list(dims)}"
                )
        elif symbolic and tensor.HasField("shape"):
            dims = tuple(
                _symbolic_dim(value.name, i, d) for i, d in enumerate(declared)
            )
        else:
            problem = _open_shape(value.name, tensor)
            if problem is not None:
                problems.append(problem)
                examples[value.name] = (
                    tuple(
                        d.dim_value if d.HasField("dim_value") else 1 for d in declared
                    )
                    if tensor.HasField("shape")
                    else None
                )
                continue
            dims = tuple(d.dim_value for d in declared)
        if len(dims) > MAX_RANK:
            raise OnnxImportError(
                f"{label}: input '{value.name}': expected at most {MAX_RANK} "
                f"dimensions, got {len(dims)}"
            )
        result[value.name] = (dims, element)
    if problems:
        raise InputShapeError(f"{label}: " + "; ".join(problems), examples)
    return result


def _symbolic_dim(name: str, axis: int, dim: onnx.TensorShapeProto.Dimension) -> Dim:
    """An input's dim: its value, else the symbol its `dim_param` names, else
    one named after the input and axis (`input_ids.dim1`), made an identifier."""
    if dim.HasField("dim_value"):
        return dim.dim_value
    text = dim.dim_param or f"{name}.dim{axis}"
    text = re.sub(r"[^A-Za-z0-9_.]", "_", text)
    return Sym(text if re.match(r"[A-Za-z_]", text) else f"d_{text}")


def _open_shape(name: str, tensor: onnx.TypeProto.Tensor) -> str | None:
    """Why input `name` has no shape to compile for, or None."""
    if not tensor.HasField("shape"):
        return f"input '{name}' has no shape"
    for axis, dim in enumerate(tensor.shape.dim):
        if not dim.HasField("dim_value"):
            symbol = f"'{dim.dim_param}'" if dim.dim_param else "unknown"
            return f"input '{name}' has a dynamic dimension {symbol} at axis {axis}"
    return None


def _symbolic(value) -> bool:
    """Whether an input of a node holds symbolic dims (in its type, or as
    values of a shape computation)."""
    if isinstance(value, np.ndarray):
        return value.dtype == object
    return isinstance(value, SSAValue) and not is_static(dims_of(value.type))


class _Importer:
    def __init__(self, graph: onnx.GraphProto, opset: int, label: str):
        self.graph = graph
        self.opset = opset
        self.label = label
        self.block = Block()
        self.params: dict[str, np.ndarray] = {}
        self.initializers = {t.name for t in graph.initializer}
        self.env: dict[str, SSAValue | np.ndarray | onnx_fold.Empty] = {}
        for t in graph.initializer:
            try:
                self.env[t.name] = to_array(t)
            except ConversionError as e:
                raise OnnxImportError(f"{label}: initializer '{t.name}': {e}") from None
        self.materialized: dict[str, SSAValue] = {}

    def materialize(self, name: str, array: np.ndarray) -> SSAValue:
        """An import-time array as a tensor operand: a graph.param bound to `name`
        (initializers, and folded values past a few elements) or a literal; a
        shape value with symbolic dims, a graph.sizes computed at run time.
        A converter's reshaped copy of a value materialized already (a scale
        another node read as it is) is a value of its own."""
        if name in self.materialized:
            known = self.materialized[name]
            if tuple(dims_of(known.type)) == array.shape:
                return known
            name = f"{name}.{'x'.join(map(str, array.shape))}"
            if name in self.materialized:
                return self.materialized[name]
        if onnx_fold.symbolic(array):  # sizes used as data: computed at run time
            sizes = G.SizesOp.build_inferred(values=list(array.flat), shape=array.shape)
            self.block.add_op(sizes)
            self.materialized[name] = sizes.results[0]
            return sizes.results[0]
        array = onnx_fold.concrete(array, f"'{name}'")
        _refuse_shape([name], [array], "tensor")
        if array.dtype.name not in NUMPY_TYPES:
            raise ConversionError(
                f"expected a tensor of {', '.join(NUMPY_TYPES)} for '{name}', got "
                f"{array.dtype}"
            )
        small = array.size <= 1 or (
            name not in self.initializers
            and array.size <= onnx_ops.MAX_LITERAL_ELEMENTS
        )
        if small:
            op = G.ConstantOp(onnx_ops.literal(array))
        else:
            self.params[name] = array
            op = G.ParamOp(name, TensorType(NUMPY_TYPES[array.dtype.name], array.shape))
        self.block.add_op(op)
        self.materialized[name] = op.results[0]
        return op.results[0]

    def convert(self, index: int, node: onnx.NodeProto) -> None:
        inputs = [self.env[name] if name else None for name in node.input]
        empty = [v for v in inputs if isinstance(v, onnx_fold.Empty)]
        if empty and node.op_type not in ("Concat", "Shape", "Size"):
            raise OnnxImportError(
                f"{self.label}: {node.op_type} node '{_node_name(node, index)}': "
                f"expected inputs with elements, got an empty tensor of shape "
                f"{list(empty[0].shape)} (ember's tensors have elements; only "
                "Concat, Shape and Size take one)"
            )
        try:
            context = NodeContext(
                node, self.opset, cast(list, inputs), self.block, self.materialize
            )
            convert = onnx_ops.CONVERTERS.get(_key(node))
            folded = onnx_fold.fold(context, computed=convert is not None)
            last = self.block.last_op
            if folded is not None:
                outputs: Sequence = folded
            elif convert is None:  # the check expected an input to fold
                raise ConversionError(
                    "expected inputs known at import time (ember folds it, never "
                    "computes it), got a tensor computed by the model"
                )
            else:
                outputs = convert(context)
                self.check_operands(node, inputs, outputs, last)
        except TypeError as e:  # a converter that computes with sizes as ints
            if not any(map(_symbolic, inputs)):
                raise
            raise OnnxImportError(
                f"{self.label}: {node.op_type} node '{_node_name(node, index)}': "
                f"does not take symbolic dimensions yet ({e}); give the inputs' "
                "shapes (shape=...)"
            ) from None
        except (ConversionError, VerifyException) as e:
            raise OnnxImportError(
                f"{self.label}: {node.op_type} node '{_node_name(node, index)}': {e}"
            ) from None
        for name, value in zip(node.output, outputs, strict=False):
            if name and value is not None:
                self.env[name] = value
        if folded is None:
            self.locate(index, node, outputs, last)

    def locate(self, index: int, node: onnx.NodeProto, outputs: Sequence, last):
        """Give the ops `node` became (those after `last`) its name as their
        location, `loc("node")`, and `loc("node"("tensor"))` to the op whose
        result is the node's output `tensor`: what `ember debug` and the
        profile name."""
        tensors = {
            v: n
            for n, v in zip(node.output, outputs, strict=False)
            if n and isinstance(v, SSAValue)
        }
        here = StringAttr(_node_name(node, index))
        op = last.next_op if last is not None else self.block.first_op
        while op is not None:
            name = next((tensors[r] for r in op.results if r in tensors), None)
            inner = NameLoc(StringAttr(name), NoneAttr()) if name else NoneAttr()
            op.location = NameLoc(here, inner)
            op = op.next_op

    def check_operands(
        self, node: onnx.NodeProto, inputs: Sequence, outputs: Sequence, last
    ) -> None:
        """Refuse a zero-size tensor, or one of more than MAX_RANK dimensions,
        read or written by the ops `node` became (ops after `last`); a
        zero-size one only typed or shaped from (CastLike's `like`) is fine."""
        names = {
            v: name
            for name, v in [
                *zip(node.input, inputs, strict=False),
                *zip(node.output, outputs, strict=False),
            ]
            if isinstance(v, SSAValue)
        }
        op = last.next_op if last is not None else self.block.first_op
        while op is not None:
            for what, values in (("input", op.operands), ("output", op.results)):
                for v in values:
                    if v in names:
                        _refuse_shape([names[v]], [v], what)
                    else:
                        _refuse_shape([""], [v], f"{what} of {op.name}")
            op = op.next_op

    def output(self, name: str) -> SSAValue:
        value = self.env[name]
        if isinstance(value, onnx_fold.Empty):
            raise OnnxImportError(
                f"{self.label}: output '{name}' is empty (shape "
                f"{list(value.shape)}); ember's tensors have elements"
            )
        if isinstance(value, np.ndarray):
            try:
                return self.materialize(name, value)
            except ConversionError as e:
                producers = [
                    f"{node.op_type} node '{_node_name(node, index)}'"
                    for index, node in enumerate(self.graph.node)
                    if name in node.output
                ]
                where = f"{producers[0]}: " if producers else ""
                raise OnnxImportError(
                    f"{self.label}: {where}output '{name}': {e}"
                ) from None
        return value


def _refuse_shape(
    names: Sequence[str], values: Sequence[SSAValue | np.ndarray | None], what: str
) -> None:
    """Refuse a zero-size tensor (ember's kernels and buffers take positive
    extents) or one of more than MAX_RANK dimensions. Only tensors a kernel
    would touch count: an array folded at import may be empty (Resize's
    absent roi, a shape on its way to a non-empty one) until it is
    materialized."""
    for name, value in zip(names, values, strict=False):
        if isinstance(value, np.ndarray):
            shape = value.shape
        elif isinstance(value, SSAValue) and isinstance(value.type, TensorType):
            shape = tuple(value.type.get_shape())
        else:
            continue
        named = f" '{name}'" if name else ""
        if len(shape) > MAX_RANK:
            raise ConversionError(
                f"expected tensors of at most {MAX_RANK} dimensions, got "
                f"{what}{named} of {len(shape)}"
            )
        if 0 in shape:
            extents = "x".join(map(str, shape))
            raise ConversionError(
                f"expected tensors of positive extents, got a zero-size "
                f"{what}{named} ({extents})"
            )


def from_onnx(
    model: onnx.ModelProto | str | os.PathLike,
    shape: Mapping[str, Sequence[int]] | None = None,
    dtype: str | Mapping[str, str] | None = None,
    freeze: Mapping[str, np.ndarray] | None = None,
    symbolic: bool = False,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Import an ONNX model as graph IR and its params.

    Args:
        model: an onnx.ModelProto or the path of a .onnx file.
        shape: input name -> shape, for inputs with dynamic dimensions (or to
            override the declared ones).
        dtype: the inputs' dtype ("float32", "int64", ...), or one per input:
            each must be the declared one (None: the declared ones). An input
            of a dtype ember does not compute (uint8, bfloat16, string, ...)
            is refused naming the ops that read it.
        freeze: values for graph inputs that are fixed at compile time (as
            TVM's `relay.build(params=...)` binds them): each becomes a
            constant, so an input giving a shape, axes, pads or scales folds
            like an initializer. Names that are not graph inputs are ignored
            here (`compile_model` applies them as params).
        symbolic: keep the inputs' open dims as symbols (their `dim_param`,
            else `<input>.dim<axis>`) instead of asking for `shape=`: the
            graph's types carry them (`tensor<?x768xf32, ["seq"]>`) and shape
            computations on them become expressions; a converter that needs a
            known size refuses naming its node. Ops sized by such
            expressions (a Range to `seq`, a stored tensor sliced to `seq`, a
            ConstantOfShape of `[seq, seq]`) are computed at run time, not
            folded; a slice of N rows to `seq` bounds seq by N
            (`ember.bounds`: the library refuses a longer sequence).

    Returns:
        (module, params): a builtin.module with `func.func @main`, and the
        `graph.param` values by name.

    Raises:
        OnnxImportError: the file is not an ONNX model, its opset is outside
            13..28 and onnx.version_converter cannot convert it, an input has
            an unknown dimension, or a node does not convert.
        UnsupportedOperatorError: the model uses ops or attribute values ember
            does not support (every one is listed, with its nodes).

    Example:
        >>> mod, params = from_onnx("resnet18.onnx")  # doctest: +SKIP
    """
    model, label = load_model(model)
    model, opset = _opset(model, label)
    if freeze:
        model = _frozen(model, freeze, label)
    model = onnx_qdq.fuse_qdq(onnx_qdq.expand_qoperators(model))
    graph = model.graph
    if not graph.output:
        raise OnnxImportError(f"{label}: expected at least one graph output, got none")
    _check_graph(graph, opset, label)
    shapes = _input_shapes(graph, shape, dtype, label, symbolic)

    importer = _Importer(graph, opset, label)
    args = [
        importer.block.insert_arg(tensor_of(NUMPY_TYPES[t], s), i)
        for i, (s, t) in enumerate(shapes.values())
    ]
    for name, arg in zip(shapes, args, strict=True):
        importer.env[name] = arg
    for index, node in enumerate(graph.node):
        importer.convert(index, node)
    results = [importer.output(v.name) for v in graph.output]
    importer.block.add_op(func.ReturnOp(*results))

    def names(values: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
        return ArrayAttr(
            [DictionaryAttr({"ember.name": StringAttr(n)}) for n in values]
        )

    main = func.FuncOp(
        "main",
        ([a.type for a in args], [r.type for r in results]),
        Region(importer.block),
        arg_attrs=names(list(shapes)),
        res_attrs=names([v.name for v in graph.output]),
    )
    module = ModuleOp([main])
    bounds = implied_bounds(importer.block.ops)
    if bounds:
        from ember.passes.convert_graph_to_te import BOUNDS_ATTR

        module.attributes[BOUNDS_ATTR] = DictionaryAttr(
            {name: IntegerAttr(bound, i64) for name, bound in bounds.items()}
        )
    try:
        module.verify()
    except VerifyException as e:
        raise OnnxImportError(
            f"{label}: the imported graph does not verify: {e}"
        ) from e
    return module, importer.params
