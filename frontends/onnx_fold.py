"""Folding at import time: numpy evaluators of ONNX ops whose inputs are all known
when the model is imported (initializers, Constant nodes, earlier folds), and
Shape, which static shapes always answer. They turn the shape computations
exporters write (Shape, Gather, Unsqueeze, Concat, Cast, Slice, ...) into arrays
the converters read as attributes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

if TYPE_CHECKING:
    from ember.frontends.onnx_ops import NodeContext

# Float constants larger than this are not folded at import: the graph op is built
# on params and graph-fold-constants decides.
MAX_FOLDED_ELEMENTS = 4096


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
        return [int(a) for a in c.const(i, "axes")]
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
    return np.full([int(d) for d in shape], value.ravel()[0], value.dtype)


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
    return lambda c, a, b: f(a, b).astype(np.result_type(a, b))


def _fold_div(_c: NodeContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return np.trunc(a / b).astype(a.dtype)  # ONNX's integer Div truncates
    return a / b


FOLDERS: dict[str, Callable[..., np.ndarray]] = {
    "Identity": lambda c, x: x,
    "Dropout": lambda c, x, *rest: x,
    "Shape": _fold_shape,
    "Gather": lambda c, x, i: np.take(x, i, axis=c.attr("axis", 0)),
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
    "Range": lambda c, start, limit, delta: np.arange(
        start.item(), limit.item(), delta.item(), dtype=start.dtype
    ),
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
    return np.asarray(FOLDERS[op](c, *arrays))
