"""`graph` dialect data movement past reshape and transpose: slice, broadcast_to
(ONNX Expand), tile, trilu, depth_to_space / space_to_depth (all injective:
each output element reads one input element), range (ONNX Range of a symbolic
length: each element computed from its index), sizes (symbolic sizes as
data), and cumsum and cumprod (scans,
each a kernel of its own, whose elementwise consumers join as an epilogue). The
dialect is assembled in `graph.py`.

    %y = graph.slice %x {starts = [0, 1], ends = [2, 7], steps = [1, 2]}
           : (tensor<2x8xf32>) -> tensor<2x3xf32>
    %z = graph.tile %y {repeats = [1, 2]} : (tensor<2x3xf32>) -> tensor<2x6xf32>
"""

from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, i64
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from ember.dialects import graph_shapes as shapes
from ember.dialects.graph_base import REQUIRED, GraphOp
from ember.dialects.graph_numpy import Array
from ember.dialects.graph_shapes import Shape, ShapeError
from ember.runtime.shape_expr import sym_max


class _DataOp(GraphOp):
    PATTERN: ClassVar[str] = "injective"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())


def _ranked(name: str, values: tuple[int, ...], rank: int) -> None:
    if len(values) != rank:
        raise ShapeError(f"expected {rank} '{name}' (one per axis), got {len(values)}")


def slice_ranges(
    shape: Shape, starts: tuple[int, ...], ends: tuple[int, ...], steps: tuple[int, ...]
) -> list[range]:
    """The indices each axis reads: range(start, end, step), start a valid
    index and end in [-1, n] (-1: a negative step runs through index 0)."""
    out = []
    for d, (n, start, end, step) in enumerate(
        zip(shape, starts, ends, steps, strict=True)
    ):
        if step == 0:
            raise ShapeError(f"expected non-zero steps, got 0 on axis {d}")
        if not isinstance(n, int) or not isinstance(end, int):
            out.append(_symbolic_range(d, n, start, end, step))
            continue
        if not (0 <= start < n and -1 <= end <= n):
            raise ShapeError(
                f"expected a start in [0, {n}) and an end in [-1, {n}] on axis "
                f"{d}, got {start} and {end}"
            )
        indices = range(start, end, step)
        if not indices:
            raise ShapeError(f"expected a non-empty slice on axis {d}, got {indices}")
        out.append(indices)
    return out


class _SymbolicRange:
    """The indices of a slice of a symbolic axis, or up to a symbolic end:
    from a known start by a known positive step, up to an end that is the
    axis' extent (`end` == n), a known index below it, or another expression
    (`seq` on an axis of 1024: GPT-2's causal mask `bias[:, :, :t, :t]`). Such
    an end must not pass the extent at run time: the importer bounds its
    symbol (`ember.bounds`), and the kernel clamps its reads into x anyway."""

    def __init__(self, start: int, end: Any, step: int):
        self.start, self.end, self.step = start, end, step

    def __len__(self) -> Any:  # an expression: len() itself needs an int
        raise TypeError("a symbolic range has no int length")

    def count(self) -> Any:
        return (self.end - self.start + self.step - 1) // self.step


def _symbolic_range(d: int, n: Any, start: Any, end: Any, step: Any) -> _SymbolicRange:
    known = isinstance(start, int) and isinstance(step, int)
    if not (known and start >= 0 < step) or isinstance(n, int) and start >= n:
        raise ShapeError(
            f"expected a known start in [0, {n}) and step > 0 on axis {d} sliced "
            f"symbolically, got {start} and {step}"
        )
    if isinstance(end, int) and end <= start:
        raise ShapeError(
            f"expected an end past the start {start} on axis {d} ({n}), got {end}"
        )
    return _SymbolicRange(start, end, step)


def _extent(r: Any) -> Any:
    return r.count() if isinstance(r, _SymbolicRange) else len(r)


@irdl_op_definition
class SliceOp(_DataOp):
    """x[start:end:step] on every axis, with resolved bounds (ONNX's negative and
    clamped ones are resolved by the importer): start a valid index, end in
    [-1, n]; an end may be an expression (`_SymbolicRange`).

    %y = graph.slice %x {starts = [3], ends = [-1], steps = [-1]} : (tensor<8xf32>) -> tensor<4xf32>
    """

    name = "graph.slice"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "starts": ("ints", REQUIRED),
        "ends": ("dims", REQUIRED),
        "steps": ("ints", REQUIRED),
    }

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        for key in ("starts", "ends", "steps"):
            _ranked(key, cfg[key], len(s[0]))
        ranges = slice_ranges(s[0], cfg["starts"], cfg["ends"], cfg["steps"])
        return tuple(_extent(r) for r in ranges)

    def reference(self, inputs: list[Array]) -> Array:
        cfg = self.config
        ranges = slice_ranges(inputs[0].shape, cfg["starts"], cfg["ends"], cfg["steps"])
        return inputs[0][np.ix_(*[np.array(r) for r in ranges])]


@irdl_op_definition
class BroadcastToOp(_DataOp):
    """x broadcast with `shape` (numpy's rule both ways, ONNX Expand's).

    %y = graph.broadcast_to %x {shape = [2, 3]} : (tensor<3xf32>) -> tensor<2x3xf32>
    """

    name = "graph.broadcast_to"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"shape": ("dims", REQUIRED)}

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if any(isinstance(d, int) and d < 1 for d in cfg["shape"]):
            raise ShapeError(f"expected positive dims, got {list(cfg['shape'])}")
        return shapes.broadcast(s[0], cfg["shape"])

    def reference(self, inputs: list[Array]) -> Array:
        out = self.result.type.get_shape()  # type: ignore[attr-defined]
        return np.broadcast_to(inputs[0], out).copy()


@irdl_op_definition
class TileOp(_DataOp):
    """x repeated `repeats[d]` times along each axis d (numpy's tile); a
    count may be an expression (`mask.repeat(batch, 1)`).

    %y = graph.tile %x {repeats = [2, 1]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    """

    name = "graph.tile"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {"repeats": ("dims", REQUIRED)}

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        _ranked("repeats", cfg["repeats"], len(s[0]))
        if any(isinstance(r, int) and r < 1 for r in cfg["repeats"]):
            raise ShapeError(f"expected positive repeats, got {list(cfg['repeats'])}")
        return tuple(n * r for n, r in zip(s[0], cfg["repeats"], strict=True))

    def reference(self, inputs: list[Array]) -> Array:
        return np.tile(inputs[0], self.config["repeats"])


@irdl_op_definition
class TriluOp(_DataOp):
    """The upper (j - i >= k) or lower (j - i <= k) triangle of the last two
    axes; the rest zero.

    %y = graph.trilu %x {upper = true, k = 1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    """

    name = "graph.trilu"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "upper": ("bool", True),
        "k": ("int", 0),
    }

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        if len(s[0]) < 2:
            raise ShapeError(f"expected a rank of at least 2, got {len(s[0])}")
        return s[0]

    def reference(self, inputs: list[Array]) -> Array:
        cfg = self.config
        return (np.triu if cfg["upper"] else np.tril)(inputs[0], cfg["k"])


@irdl_op_definition
class RangeOp(GraphOp):
    """start, start + delta, ... below `limit` (ONNX Range, numpy's arange) as
    i64: max(0, ceil((limit - start) / delta)) elements. The limit is an
    expression: a range of known length is a graph.constant (the importer
    folds it), so there is no numpy reference to fold this one with.

    %r = graph.range {start = 0, limit = "seq", delta = 1} : () -> tensor<?xi64, ["seq"]>
    """

    name = "graph.range"
    PATTERN: ClassVar[str] = "injective"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "start": ("int", 0),
        "limit": ("dim", REQUIRED),
        "delta": ("int", 1),
    }

    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        start, limit, delta = cfg["start"], cfg["limit"], cfg["delta"]
        if isinstance(limit, int):
            raise ShapeError(
                f"expected a symbolic limit (a range of known length is a "
                f"graph.constant), got {limit}"
            )
        if delta == 0:
            raise ShapeError("expected a non-zero delta, got 0")
        span, step = (limit - start, delta) if delta > 0 else (start - limit, -delta)
        count: Any = sym_max(0, (span + step - 1) // step)
        return (count,)

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        return i64


@irdl_op_definition
class SizesOp(GraphOp):
    """Sizes as an i64 tensor of `shape` (row-major `values`): a shape value
    the model computes from symbolic dims and then uses as data (HF's
    `batch_idx * seq + kv_idx`, a scale of `1 / seq`), known when the
    function is called. Sizes all known are a graph.constant (the importer
    folds them), so at least one value is an expression. TVM Relax's
    `R.shape_to_tensor`.

    %n = graph.sizes {values = ["seq"], shape = []} : () -> tensor<i64>
    """

    name = "graph.sizes"
    PATTERN: ClassVar[str] = "injective"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "values": ("dims", REQUIRED),
        "shape": ("ints", ()),
    }

    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        values, shape = cfg["values"], tuple(cfg["shape"])
        if all(isinstance(v, int) for v in values):
            raise ShapeError(
                f"expected a symbolic value (sizes all known are a "
                f"graph.constant), got {list(values)}"
            )
        if any(d < 0 for d in shape) or int(np.prod(shape)) != len(values):
            raise ShapeError(
                f"expected one value per element of shape {list(shape)}, got "
                f"{len(values)} values"
            )
        return shape

    @classmethod
    def _infer_element(
        cls, elements: list[Attribute], cfg: dict[str, Any]
    ) -> Attribute:
        return i64


class _BlockOp(_DataOp):
    @classmethod
    def _block(cls, s: list[Shape], cfg: dict[str, Any]) -> tuple[int, ...]:
        shapes.expect_rank("data (NCHW)", s[0], 4)
        if cfg["blocksize"] < 1:
            raise ShapeError(f"expected a positive blocksize, got {cfg['blocksize']}")
        return s[0]


@irdl_op_definition
class DepthToSpaceOp(_BlockOp):
    """NCHW channels moved into b x b spatial blocks: (N, C b², H, W) to
    (N, C, H b, W b); `crd` orders the channels (c, i, j), else (i, j, c)
    (ONNX's DCR).

    %y = graph.depth_to_space %x {blocksize = 2} : (tensor<1x8x2x2xf32>) -> tensor<1x2x4x4xf32>
    """

    name = "graph.depth_to_space"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "blocksize": ("int", REQUIRED),
        "crd": ("bool", False),
    }

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        n, c, h, w = cls._block(s, cfg)
        b = cfg["blocksize"]
        if c % (b * b):
            raise ShapeError(f"expected channels divisible by {b * b}, got {c}")
        return (n, c // (b * b), h * b, w * b)

    def reference(self, inputs: list[Array]) -> Array:
        x, b = inputs[0], self.config["blocksize"]
        n, c, h, w = x.shape
        if self.config["crd"]:
            y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        else:
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        return y.reshape(n, c // (b * b), h * b, w * b)


@irdl_op_definition
class SpaceToDepthOp(_BlockOp):
    """DepthToSpace's inverse: (N, C, H b, W b) to (N, C b², H, W), the value at
    block offset (i, j) of channel c in channel c b² + i b + j (`crd`) or
    (i b + j) C + c (ONNX's default DCR).

    %y = graph.space_to_depth %x {blocksize = 2} : (tensor<1x2x4x4xf32>) -> tensor<1x8x2x2xf32>
    """

    name = "graph.space_to_depth"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "blocksize": ("int", REQUIRED),
        "crd": ("bool", False),
    }

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        n, c, h, w = cls._block(s, cfg)
        b = cfg["blocksize"]
        if h % b or w % b:
            raise ShapeError(f"expected H and W divisible by {b}, got {h} and {w}")
        return (n, c * b * b, h // b, w // b)

    def reference(self, inputs: list[Array]) -> Array:
        x, b = inputs[0], self.config["blocksize"]
        n, c, h, w = x.shape
        y = x.reshape(n, c, h // b, b, w // b, b)
        if self.config["crd"]:
            y = y.transpose(0, 1, 3, 5, 2, 4)
        else:
            y = y.transpose(0, 3, 5, 1, 2, 4)
        return y.reshape(n, c * b * b, h // b, w // b)


class _ScanOp(_DataOp):
    PATTERN: ClassVar[str] = "out-elemwise-fusable"
    ATTRS: ClassVar[dict[str, tuple[str, Any]]] = {
        "axis": ("int", 0),
        "exclusive": ("bool", False),
        "reverse": ("bool", False),
    }

    NUMPY: ClassVar[Any]
    """`np.cumsum` or `np.cumprod`."""
    IDENTITY: ClassVar[int]
    """What an exclusive scan's first element holds."""

    @classmethod
    def _infer(cls, s: list[Shape], cfg: dict[str, Any]) -> Shape:
        shapes.normalize_axis(cfg["axis"], len(s[0]))
        return s[0]

    def reference(self, inputs: list[Array]) -> Array:
        cfg = self.config
        x = inputs[0]
        axis = cfg["axis"] % x.ndim
        if cfg["reverse"]:
            x = np.flip(x, axis)
        y = self.NUMPY(x, axis=axis, dtype=x.dtype)
        if cfg["exclusive"]:
            y = np.roll(y, 1, axis)
            y[(slice(None),) * axis + (0,)] = self.IDENTITY
        return np.flip(y, axis) if cfg["reverse"] else y


@irdl_op_definition
class CumSumOp(_ScanOp):
    """Running sums along `axis`; `exclusive` leaves the element itself out,
    `reverse` sums from the end.

    %y = graph.cumsum %x {axis = 1, exclusive = false, reverse = true}
           : (tensor<2x5xf32>) -> tensor<2x5xf32>
    """

    name = "graph.cumsum"
    NUMPY = staticmethod(np.cumsum)
    IDENTITY: ClassVar[int] = 0


@irdl_op_definition
class CumProdOp(_ScanOp):
    """Running products along `axis`; `exclusive` leaves the element itself
    out (the first product is 1), `reverse` multiplies from the end.

    %y = graph.cumprod %x {axis = 0, exclusive = true}
           : (tensor<2x5xf32>) -> tensor<2x5xf32>
    """

    name = "graph.cumprod"
    NUMPY = staticmethod(np.cumprod)
    IDENTITY: ClassVar[int] = 1
