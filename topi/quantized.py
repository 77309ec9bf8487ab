"""What the quantized kernels share (`conv2d_int8`, `dense.dense_int8`):
their operands' checks, the words of four bytes their products take, and
the requantization of their int32 accumulators.

    acc -> clamp(roundeven(float32(acc + bias[c]) * scale[c]) + y_zero, clip)

int8 data becomes uint8 by adding `FLIP` (its zero point too), so every
product is `te.dot_u8i8` of unsigned data bytes and signed weight bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ember import te
from ember.runtime.errors import EmberValueError
from ember.te.expr import int_range
from ember.topi.kernel import Epilogue, apply_epilogue

BYTES = 4
"""Bytes a word holds: those an int32 lane of a byte dot product sums."""

ONES = 0x01010101
"""A word of four bytes of 1: its dot product with a weight word is the sum of
the weight's bytes."""

FLIP = 128
"""What turns int8 data into uint8 (the byte's sign bit flipped)."""

DATA_TYPES = ("uint8", "int8")


@dataclass(frozen=True)
class Quantized:
    """A kernel's checked quantization: its data as uint8 is data + `flip`,
    whose zero point is `zero`; the output is clamped to `clip`."""

    flip: int
    zero: int
    clip: tuple[int, int]


def check(
    kind: str,
    data_dtype: str,
    out_dtype: str,
    x_zero: int,
    y_zero: int,
    clip: tuple[int, int] | None,
) -> Quantized:
    """The operands of quantized kernel `kind`, checked: uint8 or int8 data
    and output, zero points and the clip range within their types."""
    for what, dtype in (("data", data_dtype), ("output", out_dtype)):
        if dtype not in DATA_TYPES:
            raise EmberValueError(
                f"{kind}: expected {what} of uint8 or int8, got {dtype}"
            )
    lo, hi = int_range(out_dtype)
    clip = clip or (lo, hi)
    if not lo <= clip[0] <= clip[1] <= hi:
        raise EmberValueError(
            f"{kind}: expected a clip range within {out_dtype}'s [{lo}, {hi}], "
            f"got {list(clip)}"
        )
    flip = FLIP if data_dtype == "int8" else 0
    zero = x_zero + flip
    if not 0 <= zero <= 255 or not lo <= y_zero <= hi:
        raise EmberValueError(
            f"{kind}: zero points out of range: x_zero {x_zero} ({data_dtype}), "
            f"y_zero {y_zero} ({out_dtype})"
        )
    return Quantized(flip, zero, clip)


def requantizer(
    bias: te.Tensor,
    scale: te.Tensor,
    y_zero: int,
    clip: tuple[int, int],
    out_dtype: str,
    epilogue: Epilogue | None,
    axis: int,
) -> Epilogue:
    """The final stage's expression of an int32 accumulator at `index`, whose
    `axis` is the output channel: the bias added, scaled, rounded half to
    even, shifted by y_zero, clamped and cast, then the epilogue."""

    def requantize(acc: te.Expr, index: tuple) -> te.Expr:
        c = index[axis]
        scaled = (acc + bias[c]).astype("float32") * scale[c]
        value = te.roundeven(scaled) + float(y_zero)
        clamped = te.min(te.max(value, float(clip[0])), float(clip[1]))
        return apply_epilogue(epilogue, clamped.astype(out_dtype), index)

    return requantize
