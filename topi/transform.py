"""Data movement: reshape, flatten, transpose, concat and pad, as injective
computes (they join fused chains; `elementwise.injective` makes them a kernel).

    x = te.placeholder((1, 32, 14, 14), name="x")
    y = pad(x, [0, 0, 1, 1, 0, 0, 1, 1])           # (1, 32, 16, 16), zeros around
    k = injective(transpose(y, (0, 2, 3, 1)), [x])   # NHWC copy

A reshape or flatten of a row-major tensor moves no data: the ahead-of-time
compiler may alias its output to its input instead of running the copy kernel
made here (which exists for chains that mix a reshape with other ops).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ember import te
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import sym_eq
from ember.te import Expr


def _strides(shape: Sequence[int]) -> list[int]:
    strides, acc = [], 1
    for extent in reversed(shape):
        strides.append(acc)
        acc *= extent
    return strides[::-1]


def reshape_shape(shape: Sequence[int], new_shape: Sequence[int]) -> tuple[int, ...]:
    """`new_shape` with ONNX's conventions resolved: 0 copies the input's
    extent, -1 takes what is left.

    Raises:
        ValueError: the element counts differ, or more than one -1.
    """
    out = [
        shape[d] if e == 0 and d < len(shape) else e for d, e in enumerate(new_shape)
    ]
    if out.count(-1) > 1:
        raise EmberValueError(
            f"reshape: expected at most one -1, got {tuple(new_shape)}"
        )
    known = math.prod(e for e in out if e != -1)
    if -1 in out and known and math.prod(shape) % known == 0:
        out[out.index(-1)] = math.prod(shape) // known
    if math.prod(out) != math.prod(shape) or any(e <= 0 for e in out):
        raise EmberValueError(
            f"reshape: expected a shape of {math.prod(shape)} elements for "
            f"{tuple(shape)}, got {tuple(new_shape)}"
        )
    return tuple(out)


def reshape(x: te.Tensor, new_shape: Sequence[int], name: str = "reshape") -> te.Tensor:
    """`x`'s elements in row-major order, in `new_shape` (graph.reshape).

    The dims are matched in groups whose extents have equal products
    (`[b, s, 256]` to `[b, s, 4, 64]`: `b`, `s`, then `256` as `4 x 64`), so
    each input index is computed from its own group's output indices: a
    symbolic dim a reshape keeps is read as is, never divided by."""
    shape = reshape_shape(x.shape, new_shape)

    def element(*i: Expr) -> Expr:
        index: list[Expr | int] = []
        for (a, b), (c, d) in _groups(x.shape, shape):
            index += _regroup(list(i[c:d]), shape[c:d], x.shape[a:b])
        return x[tuple(index)]

    return te.compute(shape, element, name=name)


def _groups(
    src: Sequence, dst: Sequence
) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Consecutive groups of `src` and `dst` dims with equal products, each
    as small as possible: ((src start, end), (dst start, end)) each; one
    group of everything where the products cannot be matched."""
    groups = []
    i = j = 0
    while i < len(src) and j < len(dst):
        match = next(
            (
                (a, b)
                for size in range(2, len(src) - i + len(dst) - j + 1)
                for a in range(
                    max(1, size - (len(dst) - j)), min(size, len(src) - i + 1)
                )
                for b in (size - a,)
                if sym_eq(math.prod(src[i : i + a]), math.prod(dst[j : j + b])) is True
            ),
            None,
        )
        if match is None:
            return [((0, len(src)), (0, len(dst)))]
        groups.append(((i, i + match[0]), (j, j + match[1])))
        i, j = i + match[0], j + match[1]
    if i < len(src) or j < len(dst):  # trailing 1s
        if groups:
            (a, _), (c, _) = groups.pop()
            groups.append(((a, len(src)), (c, len(dst))))
        else:
            groups.append(((0, len(src)), (0, len(dst))))
    return groups


def _regroup(indices: list[Expr], dst: Sequence, src: Sequence) -> list[Expr | int]:
    """The indices into dims `src` of the element at `indices` of dims
    `dst` (row-major, equal products)."""
    if len(dst) == len(src) and all(
        sym_eq(a, b) is True for a, b in zip(dst, src, strict=True)
    ):
        return list(indices)
    flat: Expr | int = 0
    for idx, stride in zip(indices, _strides(dst), strict=True):
        flat = idx * stride + flat if stride != 1 else idx + flat
    index: list[Expr | int] = []
    for d, (stride, extent) in enumerate(zip(_strides(src), src, strict=True)):
        if extent == 1:
            index.append(0)
            continue
        quotient = flat if stride == 1 else flat // stride
        # the group's first index needs no remainder: flat < its product
        index.append(quotient if d == 0 else quotient % extent)
    return index


def flatten(x: te.Tensor, axis: int = 1, name: str = "flatten") -> te.Tensor:
    """`x` as 2-D: the axes before `axis` and from `axis` on each become one
    (graph.flatten, ONNX Flatten)."""
    if axis < 0:
        axis += x.ndim
    if not 0 <= axis <= x.ndim:
        raise EmberValueError(f"flatten: expected an axis in [0, {x.ndim}], got {axis}")
    shape = (math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
    return reshape(x, shape, name=name)


def transpose(
    x: te.Tensor, perm: Sequence[int] | None = None, name: str = "transpose"
) -> te.Tensor:
    """`x` with its axes permuted: output axis k is input axis perm[k]
    (graph.transpose; no perm reverses the axes)."""
    perm = list(reversed(range(x.ndim))) if perm is None else list(perm)
    if sorted(perm) != list(range(x.ndim)):
        raise EmberValueError(
            f"transpose: expected a permutation of 0..{x.ndim - 1}, got {perm}"
        )
    shape = tuple(x.shape[p] for p in perm)

    def element(*i: Expr) -> Expr:
        index: list[Expr] = [i[0]] * x.ndim
        for k, p in enumerate(perm):
            index[p] = i[k]
        return x[tuple(index)]

    return te.compute(shape, element, name=name)


def concat(tensors: Sequence[te.Tensor], axis: int, name: str = "concat") -> te.Tensor:
    """`tensors` joined along `axis` (graph.concat); the other extents must match."""
    if not tensors:
        raise EmberValueError("concat: expected at least one tensor")
    ndim = tensors[0].ndim
    if axis < 0:
        axis += ndim
    if not 0 <= axis < ndim:
        raise EmberValueError(f"concat: expected an axis in [0, {ndim}), got {axis}")
    for t in tensors:
        rest = [e for d, e in enumerate(t.shape) if d != axis]
        first = [e for d, e in enumerate(tensors[0].shape) if d != axis]
        if t.ndim != ndim or rest != first:
            raise EmberValueError(
                f"concat: expected shapes equal but for axis {axis}, got "
                + ", ".join(str(u.shape) for u in tensors)
            )
    offsets = [0]
    for t in tensors:
        offsets.append(offsets[-1] + t.shape[axis])
    shape = tuple(
        offsets[-1] if d == axis else e for d, e in enumerate(tensors[0].shape)
    )

    def element(*i: Expr) -> Expr:
        def read(first: int, end: int) -> Expr:
            """The element from one of tensors[first:end], chosen by a binary
            search over the offsets: branches nest log2(n) deep, not n."""
            if end - first > 1:
                middle = (first + end) // 2
                return te.if_then_else(
                    i[axis] < offsets[middle],
                    read(first, middle),
                    read(middle, end),
                )
            index = list(i)
            at = offsets[first]  # an int, or an expression of the sizes
            index[axis] = i[axis] if isinstance(at, int) and at == 0 else i[axis] - at
            return tensors[first][tuple(index)]

        return read(0, len(tensors))

    return te.compute(shape, element, name=name)


def pad(
    x: te.Tensor, pads: Sequence[int], value: float = 0.0, name: str = "pad"
) -> te.Tensor:
    """`x` with `pads = [begin..., end...]` elements of `value` around it
    (graph.pad, constant mode); a negative pad crops."""
    if len(pads) != 2 * x.ndim:
        raise EmberValueError(
            f"pad: expected {2 * x.ndim} pads (begin..., end...) for {x.shape}, "
            f"got {len(pads)}"
        )
    begin, end = pads[: x.ndim], pads[x.ndim :]
    shape = tuple(n + b + e for n, b, e in zip(x.shape, begin, end, strict=True))
    if any(e <= 0 for e in shape):
        raise EmberValueError(f"pad: pads {list(pads)} leave nothing of {x.shape}")

    def element(*i: Expr) -> Expr:
        inside: list[Expr] = []
        for idx, n, b, e in zip(i, x.shape, begin, end, strict=True):
            if b > 0:
                inside.append(idx >= b)
            if e > 0:
                inside.append(idx < n + b)
        read = x[tuple(idx - b if b else idx for idx, b in zip(i, begin, strict=True))]
        if not inside:
            return read
        return te.if_then_else(te.all(*inside), read, float(value))

    return te.compute(shape, element, name=name)
