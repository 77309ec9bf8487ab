"""`graph` dialect ops that index by values: gather (ONNX Gather, TVM's
`take`), an embedding lookup when the data is a param and the indices the
model's token ids; argmax and argmin, which give indices (i64); scatter_nd,
which writes slices of its data at indices (ONNX ScatterND and, through it,
ScatterElements). Gather is injective: each output element reads one data
element, at an index read from the indices tensor. The dialect is assembled in
`graph.py`.

    %y = graph.gather %table, %ids {axis = 0}
           : (tensor<1000x64xf32>, tensor<1x16xi64>) -> tensor<1x16x64xf32>

Indices may be negative (counted from the end, as in ONNX); an index outside
[-n, n) is clamped into range, as TVM's `take` does by default (mode "clip"),
so a bad token id reads the first or last row instead of memory outside the
tensor. onnxruntime raises an error there instead.
"""

from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_base import GraphOp
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import Shape, ShapeError


def gather_axis(axis: int, rank: int) -> int:
    """`axis` in [0, rank), from ONNX's [-rank, rank)."""
    if not -rank <= axis < rank:
        raise ShapeError(f"expected an axis in [{-rank}, {rank}), got {axis}")
    return axis % rank


@irdl_op_definition
class GatherOp(GraphOp):
    """Entries of `data` along `axis` at `indices`: the result's shape is
    data.shape[:axis] + indices.shape + data.shape[axis + 1:].

    %y = graph.gather %x, %i {axis = 1} : (tensor<2x5xf32>, tensor<3xi64>) -> tensor<2x3xf32>
    """

    name = "graph.gather"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"axis": ("int", 0)}
    PATTERN: ClassVar[str] = "injective"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        data, indices = s
        if not data:
            raise ShapeError("expected data of rank 1 or more, got a scalar")
        axis = gather_axis(cfg["axis"], len(data))
        return (*data[:axis], *indices, *data[axis + 1 :])

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        index = elements[1]
        if not isinstance(index, IntegerType) or index.width.data not in (8, 32, 64):
            raise ShapeError(f"expected i32 or i64 indices, got {index}")
        return elements[0]

    def reference(self, inputs: list[Array]) -> Array:
        data, indices = inputs
        axis = gather_axis(self.config["axis"], data.ndim)
        n = data.shape[axis]
        wrapped = np.where(indices < 0, indices + n, indices)
        return np.take(data, np.clip(wrapped, 0, n - 1), axis=axis)


class _ArgReduceOp(GraphOp):
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "axis": ("int", 0),
        "keepdims": ("bool", True),
        "select_last_index": ("bool", False),
    }
    PATTERN: ClassVar[str] = "comm-reduce"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    NUMPY: ClassVar[Any]
    """`np.argmax` or `np.argmin`."""

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if not s[0]:
            raise ShapeError("expected data of rank 1 or more, got a scalar")
        axis = gather_axis(cfg["axis"], len(s[0]))
        return shapes.reduce(s[0], [axis], cfg["keepdims"])

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        return IntegerType(64)

    def reference(self, inputs: list[Array]) -> Array:
        x, cfg = inputs[0], self.config
        axis = gather_axis(cfg["axis"], x.ndim)
        if cfg["select_last_index"]:
            last = self.NUMPY(np.flip(x, axis), axis=axis, keepdims=cfg["keepdims"])
            return (x.shape[axis] - 1 - last).astype(np.int64)
        return self.NUMPY(x, axis=axis, keepdims=cfg["keepdims"]).astype(np.int64)


@irdl_op_definition
class ArgMaxOp(_ArgReduceOp):
    """The index of the largest element along `axis` (the first one, or the
    last with select_last_index), as i64.

    %i = graph.argmax %x {axis = 1, keepdims = false} : (tensor<2x5xf32>) -> tensor<2xi64>
    """

    name = "graph.argmax"
    NUMPY = staticmethod(np.argmax)


@irdl_op_definition
class ArgMinOp(_ArgReduceOp):
    """The index of the smallest element along `axis` (the first one, or the
    last with select_last_index), as i64.

    %i = graph.argmin %x : (tensor<2x5xf32>) -> tensor<1x5xi64>
    """

    name = "graph.argmin"
    NUMPY = staticmethod(np.argmin)


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")
"""`graph.scatter_nd`'s `reduction` attribute indexes this tuple."""


@irdl_op_definition
class ScatterNDOp(GraphOp):
    """`data` with `updates` written at the rows of `indices` (ONNX ScatterND
    with its indices flattened to rows): row m of indices (M, q) names the
    slice data[i_0, ..., i_{q-1}], which updates[m] (shape data.shape[q:])
    replaces, in order (the last write wins), or is combined into by
    `reduction` (1 add, 2 mul, 3 max, 4 min; 0 replaces). Negative indices
    count from the end; a row outside the data writes nothing.

    %y = graph.scatter_nd %x, %i, %u {reduction = 1}
           : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
    """

    name = "graph.scatter_nd"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"reduction": ("int", 0)}
    PATTERN: ClassVar[str] = "out-elemwise-fusable"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        data, indices, updates = s
        if not 0 <= cfg["reduction"] < len(SCATTER_REDUCTIONS):
            raise ShapeError(
                f"expected a reduction in [0, {len(SCATTER_REDUCTIONS)}), "
                f"got {cfg['reduction']}"
            )
        if len(indices) != 2 or not 1 <= indices[1] <= len(data):
            raise ShapeError(
                f"expected indices (M, q) with 1 <= q <= {len(data)}, got {indices}"
            )
        wanted = (indices[0], *data[indices[1] :])
        if tuple(updates) != wanted:
            raise ShapeError(f"expected updates of shape {wanted}, got {updates}")
        return data

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        data, index, updates = elements
        if not isinstance(index, IntegerType) or index.width.data not in (32, 64):
            raise ShapeError(f"expected i32 or i64 indices, got {index}")
        if updates != data:
            raise ShapeError(f"expected updates of {data}, got {updates}")
        return data

    def reference(self, inputs: list[Array]) -> Array:
        data, indices, updates = inputs
        q = indices.shape[1]
        dims = np.asarray(data.shape[:q])
        y = data.copy()
        combine = {
            1: np.add,
            2: np.multiply,
            3: np.maximum,
            4: np.minimum,
        }.get(self.config["reduction"])
        for row, update in zip(indices, updates, strict=True):
            at = np.where(row < 0, row + dims, row)
            if np.any(at < 0) or np.any(at >= dims):
                continue
            where = tuple(int(i) for i in at)
            y[where] = update if combine is None else combine(y[where], update)
        return y
