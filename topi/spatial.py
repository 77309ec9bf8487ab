"""conv2d_transpose and resize (`dialects/graph_spatial.py`) as te computes.

conv2d_transpose gathers: output (oh, ow) sums the input pixels whose strided
position, shifted by a kernel tap, lands on it (no zero-inserted copy of the
input); an anchor, its elementwise consumers fuse as the epilogue. resize
computes each output index's source position with integer arithmetic on the
scale's fraction (exact, as ONNX's formulas read), then reads the nearest
input element or blends the two (per axis) around it; it is injective.

    x = te.placeholder((1, 8, 4, 4), name="x")
    k = conv2d_transpose(x, (8, 4, 3, 3), strides=(2, 2), padding=(1, 1, 1, 1),
                         output_padding=(1, 1))   # (1, 4, 8, 8)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember import te
from ember.backends.llvm.target import Target
from ember.dialects.graph_spatial import COORDINATE_MODES, NEAREST_MODES
from ember.te import Expr
from ember.topi.kernel import Epilogue, Kernel, apply_epilogue, epilogue_inputs


def conv2d_transpose(
    x: te.Tensor,
    weight_shape: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    output_padding: Sequence[int] = (0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
    bias: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_inputs_: Sequence[te.Tensor] | None = None,
    name: str = "conv2d_transpose",
) -> Kernel:
    """graph.conv2d_transpose: placeholders x, the weight (C_in, C_out/groups,
    kh, kw) and the bias (C_out) when `bias`."""
    from ember.dialects.graph_spatial import conv2d_transpose_shape

    w = te.placeholder(tuple(weight_shape), name=f"{name}.weight")
    shape = conv2d_transpose_shape(
        x.shape,
        w.shape,
        tuple(strides),
        tuple(padding),
        tuple(output_padding),
        tuple(dilation),
        groups,
    )
    _, cin, h, wd = x.shape
    _, cout_g, kh, kw = w.shape
    cin_g = cin // groups
    b = te.placeholder((shape[1],), name=f"{name}.bias") if bias else None
    rc = te.reduce_axis((0, cin_g), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    (sh, sw), (dh, dw) = strides, dilation
    top, left = padding[0], padding[1]

    def tap(o: Expr, r: Expr, pad: int, d: int, s: int, n: int):
        """(the input index, whether it exists) for output o and tap r."""
        t = o + pad - r * d if d != 1 else o + pad - r
        index = t // s if s != 1 else t
        valid = [t >= 0, index < n]
        if s != 1:
            valid.append(t % s == 0)
        return index, valid

    def element(n: Expr, co: Expr, oh: Expr, ow: Expr) -> Expr:
        ih, vh = tap(oh, ry, top, dh, sh, h)
        iw, vw = tap(ow, rx, left, dw, sw, wd)
        ci = (co // cout_g) * cin_g + rc if groups > 1 else rc
        co_g = co % cout_g if groups > 1 else co
        read = x[n, ci, ih, iw] * w[ci, co_g, ry, rx]
        return te.sum(te.if_then_else(te.all(*vh, *vw), read, 0.0), axis=[rc, ry, rx])

    total = te.compute(shape, element, name=f"{name}.sum")

    def finish(*i: Expr) -> Expr:
        value = total[i] + b[i[1]] if b is not None else total[i]
        return apply_epilogue(epilogue, value, i)

    out = te.compute(shape, finish, name=name)
    weights = [w] + ([b] if b is not None else [])
    return Kernel(
        out,
        [x, *weights, *epilogue_inputs(epilogue_inputs_)],
        attrs={"pattern": "conv2d_transpose"},
    )


def _source(i: Expr, n_in: int, n_out: int, num: int, den: int, coord: int):
    """Output index i's source position as (p, q): the integer expression p
    over the constant q > 0 (`graph_spatial.source_position` in te)."""
    mode = COORDINATE_MODES[coord]
    if mode == "align_corners":
        q = n_in * num - den
        return (i * ((n_in - 1) * den), q) if q > 0 else (i * 0, 1)
    if mode == "asymmetric":
        return (i * den, num)
    if mode == "pytorch_half_pixel" and n_out == 1:
        return (i * 0, 1)
    return (i * (2 * den) + (den - num), 2 * num)


def _clamp(index: Expr, n: int) -> Expr:
    low = te.select(index < 0, 0, index)
    return te.select(low > n - 1, n - 1, low)


def _nearest(p: Expr, q: int, nearest: int) -> Expr:
    mode = NEAREST_MODES[nearest]
    if mode == "floor":
        return p // q
    if mode == "ceil":
        return (p + (q - 1)) // q
    if mode == "round_prefer_ceil":
        return (p * 2 + q) // (2 * q)
    return (p * 2 + (q - 1)) // (2 * q)


def resize(
    x: te.Tensor,
    shape: Sequence[int],
    scale_num: Sequence[int],
    scale_den: Sequence[int],
    coord: int = 0,
    nearest: int = 0,
    linear: bool = False,
    name: str = "resize",
) -> te.Tensor:
    """graph.resize as an injective compute: every axis resampled to `shape`,
    axis d scaled by scale_num[d] / scale_den[d]; `coord` and `nearest` index
    `COORDINATE_MODES` and `NEAREST_MODES`, `linear` blends two taps."""
    shape = tuple(shape)
    changed = [
        d
        for d in range(x.ndim)
        if x.shape[d] != shape[d] or scale_num[d] != scale_den[d]
    ]

    def taps(d: int, i: Expr) -> list[tuple[Expr, Expr | float]]:
        n_in = x.shape[d]
        p, q = _source(i, n_in, shape[d], scale_num[d], scale_den[d], coord)
        if not linear:
            return [(_clamp(_nearest(p, q, nearest), n_in), 1.0)]
        lo = p // q
        frac = (p - lo * q).astype(x.dtype) * (1.0 / q)
        inside = te.all(lo >= 0, lo < n_in - 1)
        frac = te.select(inside, frac, 0.0)
        lo = _clamp(lo, n_in)
        hi = te.select(lo < n_in - 1, lo + 1, lo)
        return [(lo, 1.0 - frac), (hi, frac)]

    def element(*i: Expr) -> Expr:
        terms: list[tuple[list[Expr], Expr | float]] = [(list(i), 1.0)]
        for d in changed:
            terms = [
                (
                    index[:d] + [k] + index[d + 1 :],
                    w if isinstance(weight, float) else weight * w,
                )
                for index, weight in terms
                for k, w in taps(d, i[d])
            ]
        value: Expr | None = None
        for index, weight in terms:
            read = x[tuple(index)]
            part = read * weight if not isinstance(weight, float) else read
            value = part if value is None else value + part
        assert value is not None
        return value

    return te.compute(shape, element, name=name)


def flipped_weight(w: np.ndarray, groups: int) -> np.ndarray:
    """A transposed convolution's weight (C_in, C_out/groups, kh, kw) as the
    OIHW weight of the convolution it equals: output and input channels
    swapped within each group, the kernel turned by 180 degrees."""
    cin, cout_g, kh, kw = w.shape
    grouped = w.reshape(groups, cin // groups, cout_g, kh, kw).transpose(0, 2, 1, 3, 4)
    return grouped.reshape(groups * cout_g, cin // groups, kh, kw)[:, :, ::-1, ::-1]


def conv2d_transpose_as_conv2d(
    x: te.Tensor,
    weight_shape: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    output_padding: Sequence[int] = (0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
    bias: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_inputs_: Sequence[te.Tensor] | None = None,
    name: str = "conv2d_transpose",
    target: Target | None = None,
) -> Kernel:
    """graph.conv2d_transpose as `topi.conv2d` (its packed, vectorized kernel)
    over x with stride - 1 zeros between its elements and d (k - 1) - pad
    around them (a negative amount crops), and the flipped weight
    (`flipped_weight`, applied at compile time: the weight must be a param).
    It computes the zeros a gather skips (stride² times the work) at the
    speed of the tuned convolution."""
    from ember.topi.conv2d import conv2d

    _, cin, h, wd = x.shape
    _, cout_g, kh, kw = weight_shape
    (sh, sw), (dh, dw) = strides, dilation
    before = (dh * (kh - 1) - padding[0], dw * (kw - 1) - padding[1])
    after = (
        dh * (kh - 1) - padding[2] + output_padding[0],
        dw * (kw - 1) - padding[3] + output_padding[1],
    )
    extent = ((h - 1) * sh + 1, (wd - 1) * sw + 1)
    shape = (
        x.shape[0],
        cin,
        *(e + b + a for e, b, a in zip(extent, before, after, strict=True)),
    )

    def spread(n: Expr, c: Expr, y: Expr, z: Expr) -> Expr:
        valid: list[Expr] = []
        index: list[Expr] = []
        for v, b, s_, e, a in (
            (y, before[0], sh, extent[0], after[0]),
            (z, before[1], sw, extent[1], after[1]),
        ):
            t = v - b if b else v
            if b > 0:
                valid.append(t >= 0)
            if a > 0:  # zeros after the spread input
                valid.append(t < e)
            if s_ != 1:
                valid.append(t % s_ == 0)
                t = t // s_
            index.append(t)
        read = x[n, c, index[0], index[1]]
        return te.if_then_else(te.all(*valid), read, 0.0) if valid else read

    spread_x = te.compute(shape, spread, name=f"{name}.spread")
    kernel = conv2d(
        spread_x,
        (cout_g * groups, cin // groups, kh, kw),
        strides=1,
        padding=0,
        dilation=(dh, dw),
        groups=groups,
        bias=bias,
        epilogue=epilogue,
        epilogue_inputs=list(epilogue_inputs_ or ()),
        name=name,
        target=target,
    )
    kernel.placeholders[0] = x
    key = f"{name}.weight"
    packed = kernel.weight_transforms.get(key)
    kernel.weight_transforms[key] = lambda w: (
        packed(flipped_weight(w, groups)) if packed else flipped_weight(w, groups)
    )
    kernel.wrap_schedule(lambda s: s[spread_x].compute_inline())
    kernel.attrs["pattern"] = "conv2d_transpose"
    return kernel
