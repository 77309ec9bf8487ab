"""dense, matmul and batch_matmul for CPUs with wide SIMD: te computes and default
schedules.

    k = dense(x, (1000, 1280), bias=True)          # y = x w^T + b
    mod = ember.build(k.schedule(), k.args, name="fc")
    mod(x_np, k.transform("dense.weight", w), b, y)

All three compute a register tile of `mt` rows x `nb` columns (`nb / lanes`
vectors, lanes the target's float32 lanes: 16 on AVX-512, 8 on AVX2) with the
reduction over K outside the tile, the rows unrolled and the columns vectorized:
each loaded element of the left operand is broadcast to `nb / lanes` vectors, each
vector of the right operand used `mt` times. The tile is
computed inside the output's tile loop, whose copy-out adds the bias and applies
the epilogue: the output is written once. Outer tiles run in parallel.

- `dense` packs the weight (N, K) at compile time to (N'/nb, K, nb) (N' = N
  rounded up to nb, zeros), so a tile reads its weights sequentially. With M = 1
  (a classifier head) it is a matrix-vector product bound by reading the weight:
  nb = four vectors of columns a tile, four independent accumulators; else two.
- `matmul` has numpy's semantics (1-D operands, batch dimensions broadcast); its
  right operand is a tensor of the graph, read in place: a row of it is already
  `nb` contiguous floats. A 2-D right operand known at compile time (an ONNX
  MatMul by an initializer, as transformers export their linear layers) is a
  weight instead: `matmul_weight` packs it as dense packs its weight.
- `batch_matmul` is (B, M, K) x (B, K, N), TVM's, as a matmul.

The epilogue is `epilogue(value, indices)`, indices (m, n) for dense, the output's
(..., m, n) for matmul; the tensors it reads go in `epilogue_inputs`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ember import te
from ember.backends.llvm.target import Target
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import SymExpr, planned
from ember.te.schedule import Schedule
from ember.topi import quantized
from ember.topi.elementwise import PARALLEL_MIN_WORK, broadcast_shape
from ember.topi.kernel import (
    Epilogue,
    Kernel,
    Knobs,
    Variant,
    accumulator_registers,
    apply_epilogue,
)

BYTES = quantized.BYTES

NIBBLES_PER_BYTE = 2
"""4-bit weights a byte holds (`graph.dense_dequant`'s format, not the
machine's): the k steps a byte serves."""


def _row_tile(m: int, vectors: int, target: Target) -> tuple[int, int]:
    """The register tile's rows and M padded to a multiple of them. The
    tile's accumulators, rows x `vectors` (a tile one vector wide counts as
    two), fill the target's accumulator registers: each step loads `vectors`
    vectors and broadcasts a value a row, so the more rows, the fewer loads
    an FMA (Zen 5, 128 x 256 x 1024: 4 rows x 2 vectors 218 GMAC/s, 8 x 2
    251). Of the tiles from half the full one to the full one, the one with
    the least padding of M, then the most rows: a divisor of M where one is
    that large (128 tokens: 8), else the fewest padded rows (197 tokens, a
    prime: 11 rows, 198; one-row tiles were 3.7x slower); the padded rows
    read the last row again and are never copied out."""
    full = max(1, accumulator_registers(target) // max(vectors, 2))
    size = planned(m) if isinstance(m, SymExpr) else m  # a representative M
    full = min(size, full)
    mt = min(range(-(-full // 2), full + 1), key=lambda t: (-(-size // t) * t, -t))
    if isinstance(m, SymExpr):
        return mt, (m + mt - 1) // mt * mt
    return mt, -(-m // mt) * mt


def _panels(m: int, n: int, lanes: int) -> tuple[int, int]:
    """Columns of a weight panel and the number of panels: four vectors for
    one row (a GEMV bound by reading the weight), else two; no wider than N
    rounded up to whole vectors."""
    nb = 4 * lanes if m == 1 else 2 * lanes
    nb = min(nb, -(-n // lanes) * lanes)
    return nb, -(-n // nb)


def _pack_panels(w: np.ndarray, nb: int) -> np.ndarray:
    """A weight (N, K) as (N'/nb, K, nb) panels, N' = N rounded up to nb with
    zero columns: a tile reads its weights sequentially. Integer weights
    (and their scales) keep their type."""
    w = np.asarray(w)
    w = w if w.dtype.kind in "iu" else w.astype(np.float32)
    n, k = w.shape
    blocks = -(-n // nb)
    if blocks * nb != n:
        w = np.concatenate([w, np.zeros((blocks * nb - n, k), w.dtype)])
    return np.ascontiguousarray(w.reshape(blocks, nb, k).transpose(0, 2, 1))


def _panel_outer(k: int, nb: int, dtype: str, target: Target) -> bool:
    """Whether the column panels are the outer tile loop: a panel (K x nb) is
    then read once from memory and reused by every row tile from L2, and the
    left operand re-read once a panel: nb / mt times less traffic than the
    whole right operand once a row tile (ViT's 197 x 768 x 3072: 8-17% faster
    on Zen 5). Only while a panel fits in half of L2, beside the rows."""
    return k * nb * np.dtype(dtype).itemsize <= target.l2_bytes // 2


def _gemm_knobs(
    z: te.Tensor,
    output: te.Tensor,
    tile: tuple[int, int],
    mp: int,
    panel_outer: bool,
    target: Target,
    k_pairs: bool = False,
) -> Knobs:
    """A GEMM template's knobs (`_schedule_gemm` of `z` into `output`): the
    register tile's rows (divisors of the padded M `mp`, within the
    accumulator registers, so the computation and its padding stay as they
    are) and whether column panels are the outer tile loop. `tile` is the
    default (rows, panel width)."""
    mt, nb = tile
    vectors = nb // target.vector_lanes(z.dtype)
    most = max(1, accumulator_registers(target) // max(vectors, 1))
    if isinstance(mp, SymExpr):  # M padded to whole tiles of mt: its divisors
        rows = {d for d in range(1, mt + 1) if mt % d == 0}
    else:
        rows = {d for d in range(1, min(mp, most) + 1) if mp % d == 0} | {mt}
    return Knobs(
        {"rows": tuple(sorted(rows)), "panel_outer": (False, True)},
        {"rows": mt, "panel_outer": panel_outer},
        lambda s, c: _schedule_gemm(
            s, z, output, c["rows"], nb, c["panel_outer"], k_pairs
        ),
    )


def _schedule_gemm(
    s,
    z: te.Tensor,
    output: te.Tensor,
    mt: int,
    nb: int,
    panel_outer: bool = False,
    k_pairs: bool = False,
) -> None:
    """Tile (..., M, N) by (mt, nb), column panels outside the row tiles with
    `panel_outer`, else inside; compute z's tile at each output tile (k
    outside, rows unrolled, columns vectorized; `k_pairs`: k by pairs, the
    pair unrolled); copy out with columns vectorized."""
    *batch, m, n = s[output].op.axis
    mo, mi = s[output].split(m, factor=mt)
    no, ni = s[output].split(n, factor=nb)
    if panel_outer:
        first, second, tiles = no, mo, -(-output.shape[-1] // nb)
    else:
        first, second, tiles = mo, no, output.shape[-2] // mt
    s[output].reorder(*batch, first, second, mi, ni)
    outer = [*batch, first]
    par = s[output].fuse(*outer) if len(outer) > 1 else first
    if tiles < 4:  # too few tiles to share out: add the inner tile loop
        par = s[output].fuse(par, second)
        attach = par
    else:
        attach = second
    s[output].parallel(par)
    s[output].unroll(mi)
    s[output].vectorize(ni)
    s[z].compute_at(s[output], attach)
    *zb, zm, zn = s[z].op.axis
    s[z].reorder(*zb, *_k_loops(s, z, k_pairs), zm, zn)
    s[z].unroll(zm)
    s[z].vectorize(zn)


def _k_loops(s, z: te.Tensor, pairs: bool) -> list:
    """z's reduction loops, k split into unrolled pairs with `pairs` (two
    4-bit weights share a byte: one load, shifts by constants)."""
    (rk,) = s[z].op.reduce_axis
    if not pairs:
        return [rk]
    ko, ki = s[z].split(rk, factor=NIBBLES_PER_BYTE)
    s[z].unroll(ki)
    return [ko, ki]


def _schedule_gemv(
    s, z: te.Tensor, output: te.Tensor, nb: int, k_pairs: bool = False
) -> None:
    """The GEMM's computation for rows that are few at run time (one: a
    decode step's matrix-vector product): the column panels shared out, z
    only for the rows the output has, each panel's weights read once (k
    outside, its columns vectorized), never the padded rows of a tile."""
    *batch, m, n = s[output].op.axis
    no, ni = s[output].split(n, factor=nb)
    s[output].reorder(*batch, m, no, ni)
    s[output].parallel(no)
    s[output].vectorize(ni)
    s[z].compute_at(s[output], no)
    *zb, zm, zn = s[z].op.axis
    s[z].reorder(*zb, zm, *_k_loops(s, z, k_pairs), zn)
    s[z].vectorize(zn)


def dense(
    data: te.Tensor,
    weight_shape: Sequence[int],
    *,
    bias: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "dense",
    target: Target | None = None,
) -> Kernel:
    """y = data . weight^T (+ bias), then the epilogue; data (M, K), weight (N, K).
    The tile follows `target`'s vector lanes and registers (None:
    `Target.current()`).

    Returns:
        The Kernel: placeholders [data, <name>.weight (packed (N'/nb, K, nb)),
        (<name>.bias (N,)), *epilogue_inputs].
    """
    if data.ndim != 2 or len(weight_shape) != 2:
        raise EmberValueError(
            f"dense '{name}': expected data (M, K) and weight (N, K), got "
            f"{tuple(data.shape)} and {tuple(weight_shape)}"
        )
    m, k = data.shape
    n, kw = weight_shape
    if k != kw:
        raise EmberValueError(
            f"dense '{name}': expected weight (N, {k}) to match data's K, got "
            f"{tuple(weight_shape)}"
        )
    machine = Target.resolve(target)
    nb, blocks = _panels(m, n, machine.vector_lanes(data.dtype))
    weight = te.placeholder((blocks, k, nb), name=f"{name}.weight")
    return _gemm_by_panels(
        data,
        n,
        nb,
        lambda j, r: weight[j // nb, r, j % nb],
        {weight: lambda w: _pack_panels(w, nb)},
        bias=bias,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name=name,
        target=machine,
    )


def dense_int8(
    data: te.Tensor,
    n: int,
    *,
    x_zero: int,
    y_zero: int,
    out_dtype: str,
    clip: tuple[int, int] | None = None,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "dense",
    target: Target | None = None,
) -> Kernel:
    """A quantized dense layer: data (M, K) of uint8 or int8, an int8 weight
    (N, K), int32 accumulation on byte dot products, requantized as
    `graph.qdense` defines (`topi.quantized`).

    The data's rows are read as words of four bytes (int8 data flipped to
    uint8 by the word; K padded with the zero point), the weight packed at
    compile time to (N'/nb, K/4, nb) words, and each multiply-add is
    `te.dot_u8i8` in `dense`'s GEMM template (and its GEMV variant).
    x_zero times each column's weight sum is taken off before the
    requantization.

    Returns:
        The Kernel: placeholders [data, <name>.weight, <name>.bias (N,)
        int32, <name>.scale (N,) float32, *epilogue_inputs].
    """
    if data.ndim != 2:
        raise EmberValueError(
            f"dense_int8 '{name}': expected data (M, K), got {tuple(data.shape)}"
        )
    q = quantized.check(
        f"dense_int8 '{name}'", data.dtype, out_dtype, x_zero, y_zero, clip
    )
    machine = Target.resolve(target)
    m, k = data.shape
    k4 = -(-k // BYTES)
    raw_zero = q.zero ^ q.flip  # the byte that reads as the zero point once flipped

    def byte(i: te.Expr, c: int | te.Expr) -> te.Expr:
        value = data[i, c]
        if data.dtype == "int8":
            value = value.astype("uint8")
        value = value.astype("int32")
        if k % BYTES:
            value = te.if_then_else(c < k, value, te.const(raw_zero, "int32"))
        return value

    def word(i, r):
        total = byte(i, r * BYTES)
        for j in range(1, BYTES):
            total = total | (byte(i, r * BYTES + j) << (8 * j))
        if not q.flip:
            return total
        flips = q.flip * quantized.ONES  # every byte's sign bit, as an int32
        return total ^ te.const(flips - (1 << 32) if flips >> 31 else flips, "int32")

    words = te.compute((m, k4), word, name=f"{name}.words")
    nb, blocks = _panels(m, n, machine.vector_lanes("int32"))
    weight = te.placeholder((blocks, k4, nb), "int32", name=f"{name}.weight")
    bias = te.placeholder((n,), "int32", name=f"{name}.bias")
    scale = te.placeholder((n,), "float32", name=f"{name}.scale")
    rs = te.reduce_axis((0, k4), name="rs")
    weight_sum = te.compute(
        (blocks * nb,),
        lambda j: te.sum(
            te.dot_u8i8(te.const(quantized.ONES, "int32"), weight[j // nb, rs, j % nb]),
            axis=rs,
        ),
        name=f"{name}.weight_sum",
    )
    requantize = quantized.requantizer(
        bias, scale, y_zero, q.clip, out_dtype, epilogue, axis=-1
    )

    def finish(acc: te.Expr, index: tuple) -> te.Expr:
        if q.zero:
            acc = acc - weight_sum[index[-1]] * q.zero
        return requantize(acc, index)

    def pack(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w)
        if w.dtype != np.int8 or w.shape != (n, k):
            raise EmberValueError(
                f"dense_int8 '{name}': expected an int8 weight ({n}, {k}), got "
                f"{w.dtype} {w.shape}"
            )
        full = np.zeros((n, k4 * BYTES), np.int8)
        full[:, :k] = w
        return _pack_panels(full.view(np.int32), nb)

    gemm = _gemm_by_panels(
        words,
        n,
        nb,
        lambda j, r: weight[j // nb, r, j % nb],
        {weight: pack},
        bias=False,
        epilogue=finish,
        epilogue_inputs=[bias, scale, *epilogue_inputs],
        name=name,
        target=machine,
        kind="dense_int8",
        product=te.dot_u8i8,
    )

    def also(s) -> None:
        """The words read inline (LLVM loads each as one i32), the weight
        sums vectorized."""
        s[words].compute_inline()
        if q.zero:
            s[weight_sum].vectorize(s[weight_sum].op.axis[0])

    return on_words(gemm, data, also)


def on_words(gemm: Kernel, data: te.Tensor, also: Callable[[Schedule], None]) -> Kernel:
    """`gemm`, a GEMM over words computed from `data`, as a kernel of `data`:
    its placeholders with `data` first, and `also` scheduling the words'
    stages after each of its schedules (the default, the knobs', the
    variants')."""

    def around(schedule: Callable[[Schedule], None]) -> Callable[[Schedule], None]:
        def apply(s) -> None:
            schedule(s)
            also(s)

        return apply

    knobs = gemm.knobs
    if knobs is not None:
        inner = knobs.fn
        knobs = Knobs(
            knobs.space,
            knobs.default,
            lambda s, config: around(lambda s2: inner(s2, config))(s),
        )
    assert gemm.schedule_fn is not None
    return Kernel(
        gemm.output,
        [data, *gemm.placeholders[1:]],
        gemm.weight_transforms,
        around(gemm.schedule_fn),
        gemm.attrs,
        knobs,
        [Variant(v.size, v.equals, around(v.schedule_fn)) for v in gemm.variants],
    )


def dense_dequant(
    data: te.Tensor,
    n: int,
    *,
    bits: int,
    group: int,
    bias: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "dense",
    target: Target | None = None,
) -> Kernel:
    """`graph.dense_dequant`: y = data . dequant(weight)^T (+ bias), the
    weight's integers widened and scaled inside the product, so a step reads
    `bits` a weight (a decode step is bound by those bytes). Packed as
    `dense`'s panels: (N'/nb, K, nb) of int8, or (N'/nb, K/2, nb) bytes of
    two 4-bit values of one column (k even low, k odd high), scales (N'/nb,
    K/group, nb).

    Returns:
        The Kernel: placeholders [data, <name>.weight, <name>.scale,
        (<name>.bias (N,)), *epilogue_inputs].
    """
    m, k = data.shape
    machine = Target.resolve(target)
    nb, blocks = _panels(m, n, machine.vector_lanes(data.dtype))
    if bits == 4:
        weight = te.placeholder((blocks, k // 2, nb), "uint8", name=f"{name}.weight")
    else:
        weight = te.placeholder((blocks, k, nb), "int8", name=f"{name}.weight")
    scale = te.placeholder((blocks, k // group, nb), name=f"{name}.scale")

    def dequantized(j: te.Expr, r: te.Expr) -> te.Expr:
        p, c = j // nb, j % nb
        if bits == 4:
            shift = ((r % 2) * 4).astype("uint8")
            nibble = (weight[p, r // 2, c] >> shift) & te.const(15, "uint8")
            q = nibble.astype("float32") - 8.0
        else:
            q = weight[p, r, c].astype("float32")
        return q * scale[p, r // group, c]

    return _gemm_by_panels(
        data,
        n,
        nb,
        dequantized,
        {
            weight: lambda w: _pack_panels(w, nb),
            scale: lambda s: _pack_panels(s, nb),
        },
        bias=bias,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name=name,
        target=machine,
        kind="dense_dequant",
        k_pairs=bits == 4,
    )


def _gemm_by_panels(
    data: te.Tensor,
    n: int,
    nb: int,
    right: Callable[[te.Expr, te.Expr], te.Expr],
    packed: dict[te.Tensor, Callable[[np.ndarray], np.ndarray]],
    *,
    bias: bool,
    epilogue: Epilogue | None,
    epilogue_inputs: Sequence[te.Tensor],
    name: str,
    target: Target,
    kind: str = "dense",
    k_pairs: bool = False,
    product: Callable[[te.Expr, te.Expr], te.Expr] = lambda a, b: a * b,
) -> Kernel:
    """data (M, K) times the right operand's panels, `right(j, k)` the
    element (k, j) read from the packed `packed` placeholders (weights and
    their transforms, in call order), (+ bias), then the epilogue: the GEMM
    template, and a GEMV variant where M is one symbol that is 1. `product`
    multiplies an element of each (`te.dot_u8i8` for words of bytes)."""
    m, k = data.shape
    lanes = target.vector_lanes(data.dtype)
    blocks = -(-n // nb)
    b = te.placeholder((n,), name=f"{name}.bias") if bias else None
    rk = te.reduce_axis((0, k), name="rk")
    mt, mp = _row_tile(m, nb // lanes, target)
    outer = _panel_outer(k, nb, data.dtype, target)

    def row(i: te.Expr, r: te.Expr) -> te.Expr:
        # the padded rows repeat the last one: their sums are never copied out
        return data[i, r] if mp == m else data[te.min(i, m - 1), r]

    z = te.compute(
        (mp, blocks * nb),
        lambda i, j: te.sum(product(row(i, rk), right(j, rk)), axis=rk),
        name=f"{name}.gemm",
    )

    def out(i, j):
        v = z[i, j]
        if b is not None:
            v = v + b[j]
        return apply_epilogue(epilogue, v, (i, j))

    output = te.compute((m, n), out, name=name)

    placeholders = [data, *packed, *([b] if b is not None else []), *epilogue_inputs]
    variants = []
    if isinstance(m, SymExpr) and m.is_symbol():  # one row: a decode step

        def gemv(s: Schedule) -> None:
            _schedule_gemv(s, z, output, nb, k_pairs)

        variants.append(Variant(m, 1, gemv))
    return Kernel(
        output,
        placeholders,
        {p.name: fn for p, fn in packed.items()},
        lambda s: _schedule_gemm(s, z, output, mt, nb, outer, k_pairs),
        {"kernel": kind, "tile": (mt, nb), "flops": 2 * m * n * k},
        _gemm_knobs(z, output, (mt, nb), mp, outer, target, k_pairs),
        variants,
    )


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """numpy's matmul result shape; ValueError naming the mismatch."""
    if not a or not b:
        raise EmberValueError("matmul: expected operands of at least 1 dimension")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise EmberValueError(
            f"matmul: expected the left operand's K {a2[-1]} to equal the right "
            f"operand's {b2[-2]}, got shapes {tuple(a)} and {tuple(b)}"
        )
    batch = broadcast_shape(a2[:-2], b2[:-2])
    shape = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape


def matmul(
    a: te.Tensor,
    b: te.Tensor,
    *,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "matmul",
    target: Target | None = None,
) -> Kernel:
    """numpy's `a @ b` (batch dimensions broadcast), then the epilogue; the tile
    follows `target` (None: `Target.current()`).

    Returns:
        The Kernel: placeholders [a, b, *epilogue_inputs] (those that are
        placeholders), no weight transforms.
    """
    result = matmul_shape(a.shape, b.shape)
    if a.ndim == 1 and b.ndim == 1:
        raise EmberValueError(
            f"matmul '{name}': expected a matrix operand, got two vectors (a dot "
            "product: a reduction)"
        )
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    m = 1 if a_vec else a.shape[-2]
    n = 1 if b_vec else b.shape[-1]
    k = a.shape[-1]
    batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
    machine = Target.resolve(target)
    lanes = machine.vector_lanes(a.dtype)
    nb = lanes if isinstance(n, SymExpr) or n < 2 * lanes else 2 * lanes
    mt, mp = _row_tile(m, nb // lanes, machine)
    # N not a whole number of panels (197 tokens' scores): a column tile would
    # end in a partial one, computed serially (3x slower at 197 x 64 x 197), so
    # b is copied to zero-padded panels first, when its rows are reused
    panels = not (a_vec or b_vec) and n % nb != 0 and mt > 1
    blocks = -(-n // nb)
    full = (*batch, mp, blocks * nb if panels else n)  # vectors as 1-row matrices
    rk = te.reduce_axis((0, k), name="rk")
    bp = None
    if panels:
        *bb, kb, _ = b.shape

        def panel(*idx):
            *lead, jo, r, ji = idx
            j = jo * nb + ji
            return te.if_then_else(j < n, b[(*lead, r, j)], te.const(0.0, b.dtype))

        bp = te.compute((*bb, blocks, kb, nb), panel, name=f"{name}.panels")

    def operand(t: te.Tensor, idx: tuple, tail: tuple):
        lead = idx[len(idx) - (t.ndim - len(tail)) :] if t.ndim > len(tail) else ()
        lead = tuple(0 if d == 1 else i for d, i in zip(t.shape, lead, strict=False))
        return t[(*lead, *tail)]

    def body(*idx):
        *bi, i, j = idx
        row = i if mp == m else te.min(i, m - 1)  # padded rows: never copied out
        left = a[rk] if a_vec else operand(a, tuple(bi), (row, rk))
        if bp is not None:
            right = operand(bp, tuple(bi), (j // nb, rk, j % nb))
        else:
            right = b[rk] if b_vec else operand(b, tuple(bi), (rk, j))
        return te.sum(left * right, axis=rk)

    z = te.compute(full, body, name=f"{name}.gemm")

    def out(*idx):
        *bi, i, j = idx
        zi = (*bi, 0 if a_vec else i, 0 if b_vec else j)
        return apply_epilogue(epilogue, z[zi], tuple(idx))

    def out_result(*idx):
        # drop the unit dimensions numpy drops for 1-D operands
        idx = list(idx)
        if b_vec:
            idx.append(0)
        if a_vec:
            idx.insert(len(idx) - 1, 0)
        return out(*idx)

    output = te.compute(result, out_result, name=name)

    def schedule(s) -> None:
        if a_vec or b_vec:  # a matrix-vector product: parallel rows, nothing more
            s[output].parallel(s[output].op.axis[0])
            return
        if bp is not None:
            *outer, ji = s[bp].op.axis
            if planned(math.prod(bp.shape)) >= PARALLEL_MIN_WORK:  # a copy: cost 1
                fused = s[bp].fuse(*outer[:-1]) if len(outer) > 2 else outer[0]
                s[bp].parallel(fused)
            s[bp].vectorize(ji)
        _schedule_gemm(s, z, output, mt, nb, _panel_outer(k, nb, a.dtype, machine))

    inputs = [t for t in (a, b) if isinstance(t.op, te.PlaceholderOp)]
    return Kernel(
        output,
        [*inputs, *epilogue_inputs],
        {},
        schedule,
        {
            "kernel": "matmul",
            "tile": (mt, nb),
            "flops": 2 * planned(math.prod((*batch, m, n)) * k),
        },
    )


def matmul_weight(
    a: te.Tensor,
    weight_shape: Sequence[int],
    *,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "matmul",
    target: Target | None = None,
    bf16: bool = False,
) -> Kernel:
    """numpy's `a @ w` for a weight w (K, N) known at compile time (an ONNX
    MatMul by an initializer), a (..., M, K): dense's GEMM over a's batch
    dimensions, the weight packed to (N'/nb, K, nb) panels. Read in place, a
    (768, 3072) weight's column tile strides 12 KiB a row: 2.6x slower at
    M = 197 (ViT's MLP). With `bf16`, on bfloat16 pairs (`topi.bf16`): a's
    rows rounded into a stage of words, the panels (N'/nb, K/2, nb) words.

    Returns:
        The Kernel: placeholders [a, <name>.weight (packed), *epilogue_inputs].
    """
    if a.ndim < 2 or len(weight_shape) != 2 or a.shape[-1] != weight_shape[0]:
        raise EmberValueError(
            f"matmul '{name}': expected a (..., M, K) and a weight (K, N), got "
            f"{tuple(a.shape)} and {tuple(weight_shape)}"
        )
    *batch, m, k = a.shape
    n = weight_shape[1]
    machine = Target.resolve(target)
    lanes = machine.vector_lanes(a.dtype)
    nb, blocks = _panels(planned(m * math.prod(batch)), n, lanes)
    mt, mp = _row_tile(m, nb // lanes, machine)
    outer = _panel_outer(k, nb, a.dtype, machine)
    left, product, words = a, (lambda x, y: x * y), None
    if bf16:
        from ember.topi.bf16 import pair_words  # it builds on this module

        words = left = pair_words(a, f"{name}.words")
        product = te.dot_bf16
    kw = left.shape[-1]
    weight = te.placeholder((blocks, kw, nb), left.dtype, name=f"{name}.weight")
    rk = te.reduce_axis((0, kw), name="rk")

    def body(*idx):
        *bi, i, j = idx
        row = i if mp == m else te.min(i, m - 1)  # padded rows: never copied out
        return te.sum(
            product(left[(*bi, row, rk)], weight[j // nb, rk, j % nb]), axis=rk
        )

    z = te.compute((*batch, mp, blocks * nb), body, name=f"{name}.gemm")
    output = te.compute(
        (*batch, m, n),
        lambda *idx: apply_epilogue(epilogue, z[idx], tuple(idx)),
        name=name,
    )

    def pack(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, np.float32).T
        if bf16:
            from ember.topi.bf16 import pairs

            w = pairs(w, 1)
        return _pack_panels(w, nb)

    knobs = _gemm_knobs(z, output, (mt, nb), mp, outer, machine)

    def schedule(s, config: dict) -> None:
        knobs.fn(s, config)
        if words is not None:
            schedule_words(s, words, lanes)

    return Kernel(
        output,
        [a, weight, *epilogue_inputs],
        {weight.name: pack},
        lambda s: schedule(s, knobs.default),
        {
            "kernel": "matmul_bf16" if bf16 else "matmul",
            "tile": (mt, nb),
            "flops": 2 * planned(math.prod((*batch, m, n)) * k),
        },
        Knobs(knobs.space, knobs.default, schedule),
    )


def schedule_words(s, words: te.Tensor, lanes: int) -> None:
    """A stage of words computed from rows of floats (`topi.bf16`'s pairs):
    its rows in parallel, vectors of words."""
    *rows, r = s[words].op.axis
    s[words].parallel(s[words].fuse(*rows) if len(rows) > 1 else rows[0])
    _, ri = s[words].split(r, factor=lanes)
    s[words].vectorize(ri)


def batch_matmul(
    a: te.Tensor,
    b: te.Tensor,
    *,
    epilogue: Epilogue | None = None,
    epilogue_inputs: Sequence[te.Tensor] = (),
    name: str = "batch_matmul",
    target: Target | None = None,
) -> Kernel:
    """(B, M, K) x (B, K, N) -> (B, M, N), then the epilogue."""
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise EmberValueError(
            f"batch_matmul '{name}': expected (B, M, K) and (B, K, N), got "
            f"{tuple(a.shape)} and {tuple(b.shape)}"
        )
    return matmul(
        a,
        b,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name=name,
        target=target,
    )
