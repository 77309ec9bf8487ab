"""Winograd convolution F(m x m, 3 x 3) for CPUs with wide SIMD.

A 3x3 stride-1 convolution computes each m x m tile of outputs from an
(m + 2) x (m + 2) tile of inputs with (m + 2)^2 multiplies per channel pair
instead of 9 m^2 (Lavin and Gray, "Fast Algorithms for Convolutional Neural
Networks", 2015): 2.25x fewer for m = 2, 4x for m = 4. With a = m + 2, P the
number of tiles and the transform matrices B, G, A of the chosen m:

    U[e, v, k, c] = (G w[k, c] G^T)[e, v]       at compile time (a weight transform)
    V[e, v, p, c] = (B^T d[p, c] B)[e, v]       input tiles, one parallel stage
    M[e, v, p, k] = sum_c V[e, v, p, c] U[e, v, k, c]   a^2 GEMMs
    y[p, k]       = A^T M[:, :, p, k] A         m x m outputs, with bias and epilogue

The GEMMs take dense's register tile (rows of tiles, panels of output
channels, `_schedule_gemm`); both transforms run separably, the constant
coefficients written out as adds and multiplies (zeros dropped) and chosen by
unrolled loops, so LLVM folds the choice away. Channels are the vector lanes
throughout: the input is read channel-blocked ((N, C/b, H, W, b), packed
first when it is NCHW), the output is written NCHW or blocked.

Fewer multiplies cost transform passes over memory and larger weights
((m + 2)^2 / 9 times the 3x3 ones), and F(4, 3)'s results differ from the
direct sum by rounding of a few ulps more. Whether a layer gains is the
target's call (`winograd_tile`).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np

from ember import te
from ember.backends.llvm.target import Target
from ember.runtime.errors import EmberValueError
from ember.topi.bf16 import PAIR, pairs
from ember.topi.conv2d import (
    Blocks,
    Conv2dShape,
    _output,
    _padded,
    _schedule_pack,
    channel_block,
)
from ember.topi.dense import _gemm_knobs, _panel_outer, _row_tile
from ember.topi.kernel import Epilogue, Kernel, Knobs

F = Fraction

# (B^T, G, A^T) of F(m, 3), m = 2 and 4: interpolation points 0, +-1 (and +-2), inf.
TRANSFORMS: dict[int, tuple[list[list[int | Fraction]], ...]] = {
    2: (
        [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [
            [1, 0, 0],
            [F(1, 2), F(1, 2), F(1, 2)],
            [F(1, 2), F(-1, 2), F(1, 2)],
            [0, 0, 1],
        ],
        [[1, 1, 1, 0], [0, 1, -1, -1]],
    ),
    4: (
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ],
        [
            [F(1, 4), 0, 0],
            [F(-1, 6), F(-1, 6), F(-1, 6)],
            [F(-1, 6), F(1, 6), F(-1, 6)],
            [F(1, 24), F(1, 12), F(1, 6)],
            [F(1, 24), F(-1, 12), F(1, 6)],
            [0, 0, 1],
        ],
        [
            [1, 1, 1, 1, 1, 0],
            [0, 1, -1, 2, -2, 0],
            [0, 1, 1, 4, 4, 0],
            [0, 1, -1, 8, -8, 1],
        ],
    ),
}


def winograd_applies(shape: Conv2dShape) -> bool:
    """Whether the shape is one Winograd computes: 3x3, stride 1, no
    dilation, one group."""
    return (
        shape.groups == 1
        and (shape.kh, shape.kw) == (3, 3)
        and shape.strides == (1, 1)
        and shape.dilation == (1, 1)
    )


def _combine(row: list, value: Callable[[int], te.Expr]) -> te.Expr:
    """sum_i row[i] * value(i), the zero coefficients dropped and +-1 an add or
    a subtract."""
    total: te.Expr | None = None
    for i, coef in enumerate(row):
        if coef == 0:
            continue
        term = value(i)
        if abs(coef) != 1:
            term = term * float(abs(coef))
        if total is None:
            total = term if coef > 0 else -term
        else:
            total = total + term if coef > 0 else total - term
    assert total is not None
    return total


def _choose(index: te.Expr, rows: list, value: Callable[[int], te.Expr]) -> te.Expr:
    """`_combine(rows[index], value)` for a loop variable `index` the schedule
    unrolls: a select per row, which LLVM folds once the index is constant.
    Each `value(i)` is one expression, read once however many rows use it."""
    values = [value(i) for i in range(len(rows[0]))]
    out = _combine(rows[-1], values.__getitem__)
    for i in range(len(rows) - 2, -1, -1):
        out = te.select(te.equal(index, i), _combine(rows[i], values.__getitem__), out)
    return out


def algorithm_tile(
    algorithm: str, shape: Conv2dShape, target: Target, name: str
) -> int:
    """The Winograd tile m that `algorithm` asks for (0: not Winograd), checked
    against the shape; "auto" is `winograd_tile`."""
    if algorithm == "auto":
        return winograd_tile(shape, target)
    if algorithm == "direct":
        return 0
    m = {"winograd-2": 2, "winograd-4": 4}.get(algorithm)
    if m is None:
        raise EmberValueError(
            f"conv2d '{name}': expected algorithm 'auto', 'direct', 'winograd-2' or "
            f"'winograd-4', got {algorithm!r}"
        )
    if not winograd_applies(shape):
        raise EmberValueError(
            f"conv2d '{name}': {algorithm} computes 3x3 convolutions of stride 1, "
            f"dilation 1 and one group, got {shape.kh}x{shape.kw}, strides "
            f"{shape.strides}, dilation {shape.dilation}, groups {shape.groups}"
        )
    return m


MIN_MACS = 1 << 20
"""Multiply-adds below which a layer keeps the direct kernel: Winograd would
save it microseconds a run and cost a second more of compiling (its kernel
builds in about 1.3 s, a direct one in about 0.5)."""


def winograd_tile(shape: Conv2dShape, target: Target) -> int:
    """The tile m the target computes `shape` with by Winograd, 0 for none.

    Winograd where it applies, the layer has `MIN_MACS` or more, and both
    channel counts fill vectors (the input's channel block at least half a
    vector, at least a vector of output channels): the GEMMs' rows and the
    transforms' lanes are then whole. m = 4 (4x fewer multiplies) while its transformed weights,
    36 / 9 times the 3x3 ones, fit in the last-level cache, else m = 2 (16 / 9)
    while those fit, else none: a layer whose weights stream from memory
    gains little by multiplying less. Measured on Zen 4 (2 cores, 32 MiB
    L3), ResNet-18: the direct kernels 17.7 ms; F(4, 3) everywhere 11.5;
    F(2, 3) everywhere 12.1; F(4, 3) but the 7x7 layers' (512 channels,
    37.7 MB of weights) F(2, 3) 10.0.
    """
    lanes = target.vector_lanes("float32")
    if not (
        winograd_applies(shape)
        and shape.flops >= 2 * MIN_MACS
        and lanes >= 4
        and channel_block(shape.c, target) >= max(4, lanes // 2)
        and shape.o >= lanes
    ):
        return 0
    cache = target.l3_bytes or 8 * target.l2_bytes
    for m in (4, 2):
        if (m + 2) ** 2 * shape.c * shape.o * 4 <= cache:
            return m
    return 0


def winograd(
    data: te.Tensor,
    shape: Conv2dShape,
    bias: bool,
    epilogue: Epilogue | None,
    name: str,
    target: Target,
    layout: Blocks,
    m: int = 4,
    bf16: bool = False,
) -> Kernel:
    """The F(m x m, 3 x 3) kernel of `shape` (see the module docstring);
    with `bf16`, its GEMMs on bfloat16 pairs (`topi.bf16`): the transformed
    input rounded into words of two channels as it is computed, the
    transformed weight paired at compile time, `te.dot_bf16` the product."""
    bt, g, at = TRANSFORMS[m]
    step = PAIR if bf16 else 1  # channels in an element of the GEMMs' operands
    a = m + 2
    lanes = target.vector_lanes(data.dtype)
    cb = layout.data or channel_block(shape.c, target)
    th, tw = -(-shape.oh // m), -(-shape.ow // m)
    tiles = shape.n * th * tw
    # zero border and tails: every input tile whole
    padded = _padded(data, shape, cb, f"{name}.data_pad", (th * m + 2, tw * m + 2))

    def tile_of(p):
        return p // (th * tw), p // tw % th, p % tw

    # V = B^T d B, by rows (d B) then columns
    def row_times_b(p, co, r, v, ci):
        n, ty, tx = tile_of(p)
        y, x = ty * m + r, tx * m
        return _choose(v, bt, lambda j: padded[n, co, y, x + j, ci])

    rows_b = te.compute(
        (tiles, shape.c // cb, a, a, cb), row_times_b, name=f"{name}.data_rows"
    )

    def transformed(e, v, p, c):
        return _choose(e, bt, lambda r: rows_b[p, c // cb, r, v, c % cb])

    def element(e, v, p, c):
        if not bf16:
            return transformed(e, v, p, c)
        return te.bf16_word(
            transformed(e, v, p, c * PAIR), transformed(e, v, p, c * PAIR + 1)
        )

    data_t = te.compute(
        (a, a, tiles, shape.c // step), element, name=f"{name}.data_transform"
    )
    # the GEMMs: rows of tiles x panels of output channels
    nb = 2 * lanes if shape.o > lanes else lanes
    kp = -(-shape.o // nb) * nb
    mt, mp = _row_tile(tiles, nb // lanes, target)
    weight = te.placeholder(
        (a, a, kp // nb, shape.c // step, nb),
        "int32" if bf16 else "float32",
        name=f"{name}.weight",
    )
    rc = te.reduce_axis((0, shape.c // step), name="rc")
    product = te.dot_bf16 if bf16 else (lambda x, y: x * y)

    def tile_row(e, v, p, c):
        return data_t[e, v, p if mp == tiles else te.min(p, tiles - 1), c]

    gemm = te.compute(
        (a, a, mp, kp),
        lambda e, v, p, k: te.sum(
            product(tile_row(e, v, p, rc), weight[e, v, k // nb, rc, k % nb]), axis=rc
        ),
        name=f"{name}.gemm",
    )
    products = te.compute(
        (a, a, tiles, kp), lambda e, v, p, k: gemm[e, v, p, k], name=f"{name}.products"
    )
    # y = A^T M A, by columns (M A) then rows, at each output tile
    cols_a = te.compute(
        (a, m, tiles, kp),
        lambda e, j, p, k: _choose(j, at, lambda v: products[e, v, p, k]),
        name=f"{name}.out_cols",
    )

    def conv_value(n, k, y, x):
        p = n * (th * tw) + y // m * tw + x // m
        return _choose(y % m, at, lambda e: cols_a[e, x % m, p, k])

    b = te.placeholder((shape.o,), name=f"{name}.bias") if bias else None
    output = _output(conv_value, b, epilogue, shape, layout.out, name)
    outer = _panel_outer(shape.c, nb, data.dtype, target)
    gemm_knobs = _gemm_knobs(gemm, products, (mt, nb), mp, outer, target)
    vector = layout.out or lanes

    def schedule(s, config: dict) -> None:
        _schedule_pack(s, padded, cb)
        _schedule_data_transform(s, rows_b, data_t, cb // step)
        gemm_knobs.fn(s, config)
        _schedule_inverse(s, cols_a, output, m, vector)

    def transform(wt: np.ndarray) -> np.ndarray:
        u = _transform_weight(wt, g, nb, kp)
        return pairs(u, 3) if bf16 else u

    placeholders = [data, weight] + ([b] if b is not None else [])
    return Kernel(
        output,
        placeholders,
        {weight.name: transform},
        lambda s: schedule(s, gemm_knobs.default),
        {
            "kernel": "winograd_bf16" if bf16 else "winograd",
            "m": m,
            "cb": cb,
            "tile": (mt, nb),
        },
        Knobs(gemm_knobs.space, gemm_knobs.default, schedule),
    )


def _transform_weight(w: np.ndarray, g: list, nb: int, kp: int) -> np.ndarray:
    """OIHW 3x3 weights as U = G w G^T, (a, a, K'/nb, C, nb), K' = K rounded
    up to the panel with zero filters."""
    w = np.asarray(w, np.float64)
    k, c = w.shape[:2]
    gm = np.array([[float(x) for x in row] for row in g])
    u = np.einsum("ei,kcij,vj->evkc", gm, w, gm)
    if kp != k:
        u = np.concatenate([u, np.zeros((*u.shape[:2], kp - k, c))], axis=2)
    a = gm.shape[0]
    u = u.reshape(a, a, kp // nb, nb, c).transpose(0, 1, 2, 4, 3)
    return np.ascontiguousarray(u, dtype=np.float32)


def _schedule_data_transform(s, rows_b: te.Tensor, data_t: te.Tensor, cb: int) -> None:
    """Per tile and channel block (in parallel): d B into a small buffer,
    then B^T of it, both with the a x a coefficients unrolled and the channel
    block vectorized."""
    e, v, p, c = s[data_t].op.axis
    co, ci = s[data_t].split(c, factor=cb)
    s[data_t].reorder(p, co, v, e, ci)
    fused = s[data_t].fuse(p, co)
    s[data_t].parallel(fused)
    s[data_t].unroll(e)
    s[data_t].vectorize(ci)
    s[rows_b].compute_at(s[data_t], fused)
    _, _, _, v2, ci2 = s[rows_b].op.axis
    s[rows_b].unroll(v2)
    s[rows_b].vectorize(ci2)


def _schedule_inverse(
    s, cols_a: te.Tensor, output: te.Tensor, m: int, vector: int
) -> None:
    """Per output tile of m x m (rows of tiles in parallel): M A for the
    tile's channels into a small buffer, then A^T of it, the bias and the
    epilogue, outputs unrolled and channels vectorized."""
    if output.ndim == 5:
        n, kb, y, x, ki = s[output].op.axis
    else:
        n, k, y, x = s[output].op.axis
        kb, ki = s[output].split(k, factor=vector)
    yo, yi = s[output].split(y, factor=m)
    xo, xi = s[output].split(x, factor=m)
    s[output].reorder(n, kb, yo, xo, yi, xi, ki)
    s[output].parallel(s[output].fuse(n, kb, yo))
    s[output].unroll(yi)
    s[output].vectorize(ki)
    s[cols_a].compute_at(s[output], xo)
    _, j, _, kc = s[cols_a].op.axis
    s[cols_a].unroll(j)
    s[cols_a].vectorize(kc)
