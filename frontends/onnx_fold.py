"""Folding at import time: numpy evaluators of ONNX ops whose inputs are all known
when the model is imported (initializers, Constant nodes, earlier folds), and
Shape, which static shapes always answer. They turn the shape computations
exporters write (Shape, Gather, Unsqueeze, Concat, Cast, Slice, ...) into arrays
the converters read as attributes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from ember.dialects.graph_base import MAX_FOLDED_BYTES, NUMPY_TYPES

if TYPE_CHECKING:
    from ember.frontends.onnx_ops import NodeContext

# Float constants larger than this are not folded at import: the graph op is built
# on params and graph-fold-constants decides.
MAX_FOLDED_ELEMENTS = 4096


class ConversionError(Exception):
    """A node cannot be converted; the importer adds the node's name and type."""


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
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _fold_shape(c: NodeContext, data: Any) -> np.ndarray:
    shape = np.array(shape_of(data) if isinstance(data, SSAValue) else data.shape)
    start, end = c.attr("start", 0), c.attr("end", None)
    return shape[start:end].astype(np.int64)


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
    return data.astype(onnx.helper.tensor_dtype_to_np_dtype(c.attr("to")))


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
    "Max": np.maximum,
    "Min": np.minimum,
}


def _flatten_axis(c: NodeContext, x: np.ndarray) -> int:
    axis = c.attr("axis", 1)
    return axis + x.ndim if axis < 0 else axis


def _numpy_binary(f: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def fold(_c: NodeContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dtype = np.result_type(a, b)
        checked_shape(np.broadcast_shapes(a.shape, b.shape), dtype, "the result")
        return f(a, b).astype(dtype)

    return fold


def _fold_div(_c: NodeContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return np.trunc(a / b).astype(a.dtype)  # ONNX's integer Div truncates
    return a / b


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
    "Neg": lambda c, x: -x,
    "Div": _fold_div,
    **{op: _numpy_binary(f) for op, f in _BINARY_NUMPY.items()},
}
"""numpy evaluators of ops whose inputs are all known at import time."""

SHAPE_ONLY = {"Shape", "ConstantOfShape", "Range"}
"""Ops converted only by folding: their inputs must be known at import time (Shape
needs only its input's static shape)."""


def fold(c: NodeContext) -> np.ndarray | None:
    """The node's value computed with numpy, or None when it is not folded: not
    every input is known at import time, or a float computation is large enough
    to leave to graph-fold-constants."""
    op = c.node.op_type
    if op not in FOLDERS or c.node.domain not in ("", "ai.onnx"):
        return None
    present = [x for x in c.inputs if x is not None]
    if op == "Shape":
        return _fold_shape(c, present[0])
    if not all(isinstance(x, np.ndarray) for x in present):
        return None
    arrays: list[np.ndarray] = present  # type: ignore[assignment]
    big_float = any(
        a.dtype.kind == "f" and a.size > MAX_FOLDED_ELEMENTS for a in arrays
    )
    if big_float and op not in SHAPE_ONLY | {"Cast", "CastLike", "Identity", "Dropout"}:
        return None
    try:
        return np.asarray(FOLDERS[op](c, *arrays))
    except (
        ValueError,
        IndexError,
        TypeError,
        OverflowError,
    ) as e:
        # numpy's complaint about the model's data: out-of-range indices,
        # shapes that do not reshape or broadcast
        raise ConversionError(f"cannot fold it with numpy: {e}") from None
