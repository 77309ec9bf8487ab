"""Folding at import time: ONNX ops whose inputs are all known when the model is
imported (initializers, Constant nodes, earlier folds), and Shape and Size, which
static shapes always answer. They turn the shape computations exporters write
(Shape, Gather, Unsqueeze, Concat, Cast, Slice, Mod, Equal, Where, Expand, ...)
into arrays the converters read as attributes. The common ops have numpy
evaluators here; any other standard op is run by onnx's reference evaluator on
a one-node model, when its inputs and its result (by onnx's shape inference)
are small.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from ember.dialects.graph_base import MAX_FOLDED_BYTES, NUMPY_TYPES
from ember.dialects.graph_shapes import dims_of
from ember.runtime.shape_expr import SymExpr, sym_eq, sym_le

if TYPE_CHECKING:
    from ember.frontends.onnx_ops import NodeContext

# Float constants larger than this are not folded at import: the graph op is built
# on params and graph-fold-constants decides. Ops without a numpy evaluator fold
# only when every input and output is at most this large.
MAX_FOLDED_ELEMENTS = 4096

DEFAULT_DOMAINS = ("", "ai.onnx")


class ConversionError(Exception):
    """A node cannot be converted; the importer adds the node's name and type."""


@dataclass(frozen=True)
class Empty:
    """A tensor of no elements (Phi-3's rotary pass-through `q[..., 16:]` of
    16): never a graph value, as graph tensors have elements. Shape reads its
    shape (symbolic dims included) and Concat drops it; any other use is
    refused."""

    shape: tuple
    dtype: str


def dtype_name(onnx_type: int) -> str:
    """ONNX element type `onnx_type` by its numpy name ("float32"), else by
    ONNX's ("bfloat16", "string"), else as "unknown type N"."""
    try:
        name = onnx.TensorProto.DataType.Name(onnx_type).lower()
    except ValueError:
        return f"unknown type {onnx_type}"
    if onnx_type == onnx.TensorProto.STRING:
        return name
    try:
        return str(onnx.helper.tensor_dtype_to_np_dtype(onnx_type))
    except (KeyError, ValueError):
        return name


def graph_dtype(onnx_type: int, what: str) -> str:
    """The numpy name of `onnx_type`, which must be a dtype graph tensors hold."""
    name = dtype_name(onnx_type)
    if name not in NUMPY_TYPES:
        raise ConversionError(
            f"expected {what} among {', '.join(NUMPY_TYPES)}, got {name}"
        )
    return name


def to_array(tensor: onnx.TensorProto) -> np.ndarray:
    """An ONNX tensor (an initializer, a tensor attribute) as numpy."""
    try:
        return numpy_helper.to_array(tensor)
    except (KeyError, ValueError, TypeError) as e:
        reason = "" if isinstance(e, KeyError) else f": {e}"
        raise ConversionError(
            f"cannot read its data ({dtype_name(tensor.data_type)}, dims "
            f"{list(tensor.dims)}){reason}"
        ) from None


def checked_shape(shape: Iterable[Any], dtype: Any, what: str) -> list[int]:
    """`shape` as ints once an array of it and `dtype` fits MAX_FOLDED_BYTES:
    checked before numpy allocates an array a model asks for."""
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise ConversionError(f"expected non-negative dims for {what}, got {dims}")
    nbytes = math.prod(dims) * np.dtype(dtype).itemsize
    if nbytes > MAX_FOLDED_BYTES:
        raise ConversionError(
            f"expected {what} of at most {MAX_FOLDED_BYTES >> 30} GiB (ember's "
            f"limit on arrays made at import), got {np.dtype(dtype)} {dims}: "
            f"{nbytes} bytes"
        )
    return dims


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """A value's dims: ints, and expressions where they are symbolic (typed as
    ints: see `graph_shapes.Shape`)."""
    assert isinstance(value.type, TensorType)
    return dims_of(value.type)


def shape_array(dims) -> np.ndarray:
    """Dims as a shape value: int64, or an object array where some are
    symbolic (Shape of a symbolic tensor: what the shape computations on it
    then compute with, as expressions)."""
    dims = list(dims)
    if any(isinstance(d, SymExpr) for d in dims):
        return np.array(dims + [None], dtype=object)[:-1]  # 1-D, even of one
    return np.array(dims, dtype=np.int64)


def symbolic(array: np.ndarray) -> bool:
    """Whether `array` is a shape value with some dims symbolic."""
    return array.dtype == object and any(isinstance(v, SymExpr) for v in array.flat)


def concrete(array: np.ndarray, what: str) -> np.ndarray:
    """`array`, which must hold numbers: a shape value with symbolic dims is
    refused where it would become a tensor of the model."""
    if array.dtype != object:
        return array
    if all(isinstance(v, int) for v in array.flat):
        return array.astype(np.int64)
    symbolic = sorted({str(v) for v in array.flat if isinstance(v, SymExpr)})
    raise ConversionError(
        f"expected {what} known at import time, got one computed from symbolic "
        f"dimensions ({', '.join(symbolic)}); give the inputs' shapes (shape=...)"
    )


def _fold_shape(c: NodeContext, data: Any) -> np.ndarray:
    dims = shape_of(data) if isinstance(data, SSAValue) else data.shape
    start, end = c.attr("start", 0), c.attr("end", None)
    return shape_array(dims)[start:end]


def axes_of(c: NodeContext, i: int) -> list[int] | None:
    """Axes from the attribute (older opsets) or input `i`, None when absent."""
    if "axes" in c.attrs:
        return list(c.attrs["axes"])
    if c.has(i):
        return c.ints(i, "axes")
    return None


def _fold_slice(c: NodeContext, data: np.ndarray, *_: np.ndarray) -> np.ndarray:
    starts, ends = c.const(1, "starts"), c.const(2, "ends")
    axes = c.const(3, "axes") if c.has(3) else range(len(starts))
    steps = c.const(4, "steps") if c.has(4) else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        index[int(axis)] = slice(int(start), int(end), int(step))
    return data[tuple(index)]


def _fold_cast(c: NodeContext, data: np.ndarray) -> np.ndarray:
    to = onnx.helper.tensor_dtype_to_np_dtype(c.attr("to"))
    if data.dtype == object:  # symbolic sizes stay integers (`_to_float`)
        return data
    return data.astype(to)


def _to_float(c: NodeContext) -> bool:
    """Whether the node is a cast to a type other than integers."""
    if c.node.op_type != "Cast":
        return False
    return onnx.helper.tensor_dtype_to_np_dtype(c.attr("to")).kind not in "iu"


def _fold_cast_like(_c: NodeContext, data: np.ndarray, like: np.ndarray) -> np.ndarray:
    return data.astype(like.dtype)


def _fold_reshape(c: NodeContext, data: np.ndarray, *_: np.ndarray) -> np.ndarray:
    target = c.const(1, "shape")
    copy = not c.attr("allowzero", 0)  # allowzero=1: a 0 is an empty dim
    dims = [data.shape[i] if d == 0 and copy else int(d) for i, d in enumerate(target)]
    return data.reshape(dims)


def fold_unsqueeze(c: NodeContext, data: np.ndarray, *_: np.ndarray) -> np.ndarray:
    axes = axes_of(c, 1) or []
    rank = data.ndim + len(axes)
    return np.expand_dims(data, tuple(sorted(a % rank for a in axes)))


def fold_squeeze(c: NodeContext, data: np.ndarray, *_: np.ndarray) -> np.ndarray:
    axes = axes_of(c, 1)
    return np.squeeze(data, None if axes is None else tuple(axes))


def _fold_constant_of_shape(c: NodeContext, shape: np.ndarray) -> np.ndarray:
    value = c.attr("value", np.zeros(1, np.float32))
    dims = checked_shape(shape.reshape(-1), value.dtype, "the filled tensor")
    return np.full(dims, value.ravel()[0], value.dtype)


def _fold_range(
    _c: NodeContext, start: np.ndarray, limit: np.ndarray, delta: np.ndarray
) -> np.ndarray:
    first, last, step = start.item(), limit.item(), delta.item()
    if step == 0:
        raise ConversionError("expected a non-zero delta, got 0")
    checked_shape([max(0, math.ceil((last - first) / step))], start.dtype, "the range")
    return np.arange(first, last, step, dtype=start.dtype)


def _fold_gather(c: NodeContext, x: np.ndarray, i: np.ndarray) -> np.ndarray:
    axis = c.attr("axis", 0)
    shape = [*x.shape[:axis], *i.shape, *x.shape[axis:][1:]]
    checked_shape(shape, x.dtype, "the gathered tensor")
    return np.take(x, i, axis=axis)


_BINARY_NUMPY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
}


def _flatten_axis(c: NodeContext, x: np.ndarray) -> int:
    axis = c.attr("axis", 1)
    return axis + x.ndim if axis < 0 else axis


def _numpy_binary(f: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def fold(_c: NodeContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dtype = np.result_type(a, b)
        checked_shape(np.broadcast_shapes(a.shape, b.shape), dtype, "the result")
        return _simplified(np.asarray(f(a, b)).astype(dtype))

    return fold


def _simplified(array) -> np.ndarray:
    """An object array whose values all became ints, as int64 (numpy gives a
    0-d result as the scalar itself)."""
    array = (
        np.asarray(array, dtype=object) if not isinstance(array, np.ndarray) else array
    )
    if array.dtype == object and all(isinstance(v, int) for v in array.flat):
        return array.astype(np.int64)
    return array


def _fold_div(_c: NodeContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.object_ in (a.dtype.type, b.dtype.type):
        # sizes are never negative: ONNX's truncating Div is floor division
        return _simplified(np.floor_divide(a, b))
    if a.dtype.kind in "iu":
        return np.trunc(a / b).astype(a.dtype)  # ONNX's integer Div truncates
    return a / b


def _fold_symbolic(op: str, c: NodeContext, arrays: list[np.ndarray]) -> np.ndarray:
    """Mod, Equal and Where on shape values with symbolic dims: floor modulo
    (ONNX's for integers), and equality only where it is decided (`sym_eq`,
    or one side known to be the smaller, sizes being never negative):
    `seq == -1` is false, `seq == batch` unknown and refused."""
    if op == "Mod":
        return _simplified(np.mod(arrays[0], arrays[1]))
    if op == "Where":
        return _simplified(np.where(arrays[0], arrays[1], arrays[2]))
    a, b = np.broadcast_arrays(arrays[0], arrays[1])
    out = np.empty(a.shape, bool)
    for index in np.ndindex(a.shape):
        x, y = (v if isinstance(v, SymExpr) else int(v) for v in (a[index], b[index]))
        decided = sym_eq(x, y)
        if decided is None and (sym_le(x + 1, y) or sym_le(y + 1, x)):
            decided = False
        if decided is None:
            raise ConversionError(
                f"cannot decide {a[index]} == {b[index]} at import time; give the "
                "inputs' shapes (shape=...)"
            )
        out[index] = decided
    return out


FOLDERS: dict[str, Callable[..., np.ndarray]] = {
    "Identity": lambda c, x: x,
    "Dropout": lambda c, x, *rest: x,
    "Shape": _fold_shape,
    "Gather": _fold_gather,
    "Unsqueeze": fold_unsqueeze,
    "Squeeze": fold_squeeze,
    "Cast": _fold_cast,
    "CastLike": _fold_cast_like,
    "Concat": lambda c, *xs: np.concatenate(xs, axis=c.attr("axis")),
    "Reshape": _fold_reshape,
    "Flatten": lambda c, x: x.reshape(math.prod(x.shape[: _flatten_axis(c, x)]), -1),
    "Transpose": lambda c, x: np.transpose(x, c.attr("perm")),
    "Slice": _fold_slice,
    "ConstantOfShape": _fold_constant_of_shape,
    "Range": _fold_range,
    "Div": _fold_div,
    **{op: _numpy_binary(f) for op, f in _BINARY_NUMPY.items()},
}
"""numpy evaluators of ops whose inputs are all known at import time."""

SHAPE_ONLY = {"Shape", "ConstantOfShape", "Range"}
"""Ops whose inputs must be known at import time (Shape needs only its input's
static shape): they fold, but for sizes that are expressions
(`SYMBOLIC_SIZES`)."""

SYMBOLIC_SIZES = {
    "Slice": range(1, 5),
    "Expand": range(1, 2),
    "Tile": range(1, 2),
    "ConstantOfShape": range(0, 1),
    "Range": range(0, 3),
}
"""Inputs of each op that are sizes (Slice's ends, Expand's shape, Range's
limit): when one is computed from symbolic dims and the op's data (the rest)
are numbers, the node does not fold but becomes a graph op computed at run
time (GPT-2's `bias[:, :, :t, :t]`, `torch.arange(t)`, `torch.ones(t, t)`).
A shape value sliced by known bounds still folds."""

_NOT_FOLDED = {
    *("Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike"),
    *("RandomUniform", "RandomUniformLike", "ConcatFromSequence", "SplitToSequence"),
    "Constant",
}
"""Standard ops never folded: random ones (one draw is not the op), those of
sequences (not tensors), as every Sequence* and Optional* op, and Constant,
whose converter reads its attribute."""


def folds(node: onnx.NodeProto, known: Callable[[str], bool]) -> bool:
    """Whether `node` folds at import, `known` telling which tensors are known
    then: Shape and Size always (static shapes), any other standard op without
    subgraphs, randomness or sequences when every input is known (a folder or
    the reference evaluator may still leave a large one to its converter)."""
    op = node.op_type
    if node.domain not in DEFAULT_DOMAINS:
        return False
    if op in ("Shape", "Size"):
        return True
    graphs = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    if (
        op in _NOT_FOLDED
        or op.startswith(("Sequence", "Optional"))
        or any(a.type in graphs for a in node.attribute)
    ):
        return False
    return all(known(name) for name in node.input if name)


def fold(c: NodeContext, computed: bool = True) -> list[np.ndarray | None] | None:
    """The node's outputs computed at import (None for an output the node does
    not name), or None when it is not folded: not every input is known, a float
    computation is large enough to leave to graph-fold-constants, or an op
    without a numpy evaluator is too large for the reference evaluator or fails
    in it. `computed`: whether a converter can build the node instead; if not,
    why the reference evaluator did not fold it is raised."""
    known = {
        name
        for name, x in zip(c.node.input, c.inputs, strict=False)
        if isinstance(x, np.ndarray)
    }
    if not folds(c.node, lambda name: name in known):
        return None
    op = c.node.op_type
    present = [x for x in c.inputs if x is not None]
    if op in ("Shape", "Size"):
        shape = _fold_shape(c, present[0])
        return [shape if op == "Shape" else np.array(math.prod(shape), np.int64)]
    arrays: list[np.ndarray] = present  # type: ignore[assignment]
    if _sized_symbolically(op, c.inputs):
        return None
    symbolic = any(a.dtype == object for a in arrays)
    if op in ("Mod", "Equal", "Where") and symbolic:
        return [_fold_symbolic(op, c, arrays)]
    if symbolic and (op not in FOLDERS or _to_float(c)):
        # sizes stay integers at import (no evaluator of its own, or a cast
        # to float, `1 / sqrt(seq)`): its converter computes it at run time
        # on the sizes (graph.sizes)
        if computed:
            return None
        raise ConversionError(
            f"cannot compute {op} on shape values with symbolic dimensions; "
            "give the inputs' shapes (shape=...)"
        )
    if op not in FOLDERS:
        try:
            return _fold_reference(c, arrays)
        except ConversionError:
            if computed:  # its converter builds it, or says better what is wrong
                return None
            raise
    big_float = any(
        a.dtype.kind == "f" and a.size > MAX_FOLDED_ELEMENTS for a in arrays
    )
    if big_float and op not in SHAPE_ONLY | {"Cast", "CastLike", "Identity", "Dropout"}:
        return None
    try:
        return [np.asarray(FOLDERS[op](c, *arrays))]
    except (
        ValueError,
        IndexError,
        TypeError,
        OverflowError,
    ) as e:
        # numpy's complaint about the model's data: out-of-range indices,
        # shapes that do not reshape or broadcast
        raise ConversionError(f"cannot fold it with numpy: {e}") from None


def _sized_symbolically(op: str, inputs: list) -> bool:
    """Whether `op`'s sizes hold expressions while its data are numbers."""
    sizes = SYMBOLIC_SIZES.get(op, range(0))
    arrays = [(i, x) for i, x in enumerate(inputs) if isinstance(x, np.ndarray)]
    return any(i in sizes and x.dtype == object for i, x in arrays) and all(
        i in sizes or x.dtype != object for i, x in arrays
    )


def _one_node_model(c: NodeContext, arrays: list[np.ndarray]) -> onnx.ModelProto:
    """The node alone, its known inputs as initializers (so that shape
    inference reads them), its outputs renamed o0, o1, ..."""
    inputs = [f"i{k}" if c.has(k) else "" for k in range(len(c.inputs))]
    outputs = [f"o{k}" if name else "" for k, name in enumerate(c.node.output)]
    node = helper.make_node(c.node.op_type, inputs, outputs)
    node.attribute.extend(c.node.attribute)
    graph = helper.make_graph(
        [node],
        "fold",
        [],
        [helper.make_value_info(name, onnx.TypeProto()) for name in outputs if name],
        [
            numpy_helper.from_array(x, n)
            for n, x in zip([n for n in inputs if n], arrays, strict=True)
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", c.opset)])


def _output_sizes(model: onnx.ModelProto) -> list[int]:
    """The outputs' sizes over the dims onnx's shape inference knows (those it
    does not are data-dependent selections, NonZero's, no larger than an
    input); raises when it gives an output no rank."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as e:  # onnx raises its C++ errors untyped
        raise ConversionError(f"onnx's shape inference fails on it: {e}") from None
    sizes = []
    for output in inferred.graph.output:
        tensor = output.type.tensor_type
        if not tensor.HasField("shape"):
            raise ConversionError("expected a result shape onnx infers, got none")
        dims = tensor.shape.dim
        sizes.append(math.prod(d.dim_value for d in dims if d.HasField("dim_value")))
    return sizes


def _small(sizes: list[int]) -> None:
    if max(sizes, default=0) > MAX_FOLDED_ELEMENTS:
        raise ConversionError(
            f"expected inputs and results of at most {MAX_FOLDED_ELEMENTS} "
            f"elements to fold it at import, got {max(sizes)}"
        )


def _fold_reference(
    c: NodeContext, arrays: list[np.ndarray]
) -> list[np.ndarray | None]:
    """The node's outputs by onnx's reference evaluator, its inputs and results
    at most MAX_FOLDED_ELEMENTS elements each (else a ConversionError)."""
    _small([x.size for x in arrays])  # before a large one is written out
    model = _one_node_model(c, arrays)
    _small(_output_sizes(model))
    # imported here: it adds 0.2 s to importing ember, for models that need it
    from onnx.reference import ReferenceEvaluator

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            results = iter(ReferenceEvaluator(model).run(None, {}))
    except Exception as e:  # the evaluator raises whatever its numpy code does
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ConversionError(
            f"cannot fold it with onnx's reference evaluator: {reason}"
        ) from None
    outputs = [np.asarray(next(results)) if name else None for name in c.node.output]
    for x in outputs:
        if x is not None and (x.dtype == object or x.size > MAX_FOLDED_ELEMENTS):
            raise ConversionError(
                f"expected results of at most {MAX_FOLDED_ELEMENTS} numbers to "
                f"fold it at import, got {x.dtype} {list(x.shape)}"
            )
    return outputs
