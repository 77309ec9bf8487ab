"""Data movement past reshape and transpose, as injective computes (each output
element reads one input element, so they join fused chains): slice,
broadcast_to, tile, trilu, depth_to_space, space_to_depth, arange (each
element its index's value) and sizes (symbolic sizes as values); and cumsum and cumprod, scans written as a masked
sum or product along the axis (each a kernel of its own).

    x = te.placeholder((2, 8), name="x")
    y = slice_(x, starts=(0, 7), steps=(1, -2), shape=(2, 4))   # x[:, 7::-2]
    k = injective(tile(y, (1, 3)), [x])                          # (2, 12)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ember import te
from ember.runtime.shape_expr import Dim, SymExpr, sym_le
from ember.te import Expr
from ember.topi.elementwise import broadcast_read
from ember.topi.kernel import Epilogue, Kernel, apply_epilogue, epilogue_inputs
from ember.topi.reduce import PROD_REDUCER


def slice_(
    x: te.Tensor,
    starts: Sequence[int],
    steps: Sequence[int],
    shape: Sequence[int],
    name: str = "slice",
) -> te.Tensor:
    """Output element i of each axis reads x at start + i * step; on an axis
    whose symbolic extent may reach past x's (an end the caller bounds, see
    `graph.slice`) the read is clamped to x's last element."""
    clamped = [
        not sym_le(start + (m - 1) * step, n - 1)
        for start, step, m, n in zip(starts, steps, shape, x.shape, strict=True)
    ]

    def element(*i: Expr) -> Expr:
        index = []
        for v, start, step, n, clamp in zip(
            i, starts, steps, x.shape, clamped, strict=True
        ):
            at = (v * step if step != 1 else v) + start if start else v * step
            index.append(te.min(at, n - 1) if clamp else at)
        return x[tuple(index)]

    return te.compute(tuple(shape), element, name=name)


def broadcast_to(
    x: te.Tensor, shape: Sequence[int], name: str = "broadcast_to"
) -> te.Tensor:
    """`x` broadcast to `shape` (numpy's rule: right-aligned, 1 stretches)."""
    return te.compute(
        tuple(shape), lambda *i: broadcast_read(x, i, tuple(shape)), name=name
    )


def tile(x: te.Tensor, repeats: Sequence[int], name: str = "tile") -> te.Tensor:
    """`x` repeated `repeats[d]` times along each axis d (a count may be
    symbolic)."""
    shape = tuple(n * r for n, r in zip(x.shape, repeats, strict=True))

    def element(*i: Expr) -> Expr:
        return x[
            tuple(
                v if r == 1 else v % n
                for v, n, r in zip(i, x.shape, repeats, strict=True)
            )
        ]

    return te.compute(shape, element, name=name)


def arange(
    start: int, delta: int, shape: Sequence[Dim], name: str = "range"
) -> te.Tensor:
    """start + i * delta at index i of the 1-D `shape`, as int64."""
    return te.compute(
        tuple(shape), lambda i: (i * delta + start).astype("int64"), name=name
    )


def sizes(
    values: Sequence[Dim], shape: Sequence[int], name: str = "sizes"
) -> te.Tensor:
    """The sizes `values` (row-major) as an int64 tensor of `shape`, each
    computed from the size symbols when the function is called."""
    flat = [
        te.Size(v).astype("int64") if isinstance(v, SymExpr) else te.const(v, "int64")
        for v in values
    ]
    strides = [math.prod(shape[a + 1 :]) for a in range(len(shape))]

    def element(*i: Expr) -> Expr:
        at: Any = sum(v * s for v, s in zip(i, strides, strict=True))
        value = flat[-1]
        for k in range(len(flat) - 2, -1, -1):
            value = te.select(te.equal(at, k), flat[k], value)
        return value

    return te.compute(tuple(shape), element, name=name)


def trilu(x: te.Tensor, upper: bool, k: int, name: str = "trilu") -> te.Tensor:
    """The upper (j - i >= k) or lower (j - i <= k) triangle of the last two
    axes, zero elsewhere."""

    def element(*idx: Expr) -> Expr:
        i, j = idx[-2], idx[-1]
        keep = j >= i + k if upper else j <= i + k
        return te.select(keep, x[idx], 0.0)

    return te.compute(x.shape, element, name=name)


def depth_to_space(
    x: te.Tensor, blocksize: int, crd: bool = False, name: str = "depth_to_space"
) -> te.Tensor:
    """(N, C b², H, W) to (N, C, H b, W b); the input channel of output
    channel c at block offset (i, j) is c b² + i b + j (CRD) or
    (i b + j) C + c (DCR)."""
    b = blocksize
    n, c, h, w = x.shape
    out_c = c // (b * b)

    def element(bn: Expr, oc: Expr, y: Expr, z: Expr) -> Expr:
        i, j = y % b, z % b
        ch = oc * (b * b) + i * b + j if crd else (i * b + j) * out_c + oc
        return x[bn, ch, y // b, z // b]

    return te.compute((n, out_c, h * b, w * b), element, name=name)


def space_to_depth(
    x: te.Tensor, blocksize: int, crd: bool = False, name: str = "space_to_depth"
) -> te.Tensor:
    """(N, C, H b, W b) to (N, C b², H, W): output channel c b² + i b + j
    (CRD) or (i b + j) C + c (DCR) holds x[c] at block offset (i, j)."""
    b = blocksize
    n, c, h, w = x.shape

    def element(bn: Expr, ch: Expr, y: Expr, z: Expr) -> Expr:
        if crd:
            offset, cc = ch % (b * b), ch // (b * b)
        else:
            offset, cc = ch // c, ch % c
        return x[bn, cc, y * b + offset // b, z * b + offset % b]

    return te.compute((n, c * b * b, h // b, w // b), element, name=name)


def cumsum(
    x: te.Tensor,
    axis: int,
    exclusive: bool = False,
    reverse: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_tensors: Sequence[te.Tensor] | None = None,
    name: str = "cumsum",
    product: bool = False,
) -> Kernel:
    """Running sums (products with `product`) of `x` along `axis`: element i
    combines the elements k <= i (k < i exclusive; k >= i or k > i reversed),
    as a masked reduction over the axis (quadratic in its extent, which suits
    masks and positions; not long sequences)."""
    combine = PROD_REDUCER if product else te.sum
    identity = te.const(1 if product else 0, x.dtype)
    axis %= x.ndim
    k = te.reduce_axis((0, x.shape[axis]), "k")

    def element(*idx: Expr) -> Expr:
        i = idx[axis]
        if reverse:
            keep = k > i if exclusive else k >= i
        else:
            keep = k < i if exclusive else k <= i
        read = x[(*idx[:axis], k, *idx[axis + 1 :])]
        return combine(te.if_then_else(keep, read, identity), axis=k)

    total = te.compute(x.shape, element, name=f"{name}.sum")
    out = te.compute(
        x.shape, lambda *i: apply_epilogue(epilogue, total[i], i), name=name
    )
    return Kernel(
        out, [x, *epilogue_inputs(epilogue_tensors)], attrs={"pattern": "cumsum"}
    )
