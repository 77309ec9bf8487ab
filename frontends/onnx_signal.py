"""ONNX window functions (BlackmanWindow, HammingWindow, HannWindow) as
arrays computed at import time: their only input is the window's length,
which must be known then; OptionalHasElement and OptionalGetElement on plain
tensors (an optional-typed graph input is refused on import). The converters
register with `onnx_ops.converter`."""

from __future__ import annotations

import numpy as np

from ember.frontends.onnx_fold import checked_shape, graph_dtype
from ember.frontends.onnx_ops import (
    CHECKS,
    CONST_INPUTS,
    ConversionError,
    NodeContext,
    _one_of,
    converter,
)

# the cosine series' coefficients a0, a1, a2: a0 - a1 cos(x) + a2 cos(2 x)
_SERIES = {
    "BlackmanWindow": (0.42, 0.5, 0.08),
    "HammingWindow": (25 / 46, 21 / 46, 0.0),
    "HannWindow": (0.5, 0.5, 0.0),
}

for _op in _SERIES:
    CHECKS[_op] = _one_of("periodic", [0, 1], 1)
    CONST_INPUTS[_op] = [(0, "size")]


@converter(*_SERIES)
def _window(c: NodeContext):
    """a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) for n in [0, size), N
    the size (periodic) or the size - 1 (symmetric)."""
    size = c.const(0, "size").reshape(-1)
    if size.size != 1 or int(size[0]) < 0:
        raise ConversionError(f"expected one size >= 0, got {list(size)}")
    dtype = graph_dtype(c.attr("output_datatype", 1), "output_datatype")
    (length,) = checked_shape(size, np.float64, "the window")
    period = length if c.attr("periodic", 1) else length - 1
    a0, a1, a2 = _SERIES[c.node.op_type]
    x = 2 * np.pi * np.arange(length) / period if period else np.zeros(length)
    y = a0 - a1 * np.cos(x) + a2 * np.cos(2 * x)
    return [y.astype(dtype)]


@converter("OptionalHasElement")
def _optional_has_element(c: NodeContext):
    """Whether the input is there: ember's values are plain tensors, so an
    input given is one that holds an element."""
    return [np.array(c.has(0), np.bool_)]


@converter("OptionalGetElement")
def _optional_get_element(c: NodeContext):
    return [c.value(0)]
