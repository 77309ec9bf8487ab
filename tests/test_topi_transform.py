"""topi data movement (reshape, flatten, transpose, concat, pad) against numpy,
alone and inside fused chains, and their argument errors."""

from __future__ import annotations

import numpy as np
import pytest
from topi_util import close, rand, run_kernel

from ember import te
from ember.topi import elementwise as ew
from ember.topi import transform as tr


def one(fn, *arrays):
    ts = [te.placeholder(a.shape, name=f"x{n}") for n, a in enumerate(arrays)]
    return run_kernel(ew.injective(fn(*ts), ts), *arrays)


@pytest.mark.parametrize(
    ("shape", "new"),
    [
        ((2, 3, 4), (6, 4)),
        ((1, 512, 1, 1), (1, 512)),
        ((4, 6), (2, -1, 3)),
        ((24,), (2, 3, 4)),
        ((2, 12), (0, 3, -1)),
    ],
)
def test_reshape(shape, new):
    a = rand(*shape)
    expected_shape = tr.reshape_shape(shape, new)
    close(one(lambda x: tr.reshape(x, new), a), a.reshape(expected_shape))


def test_reshape_shape_errors():
    with pytest.raises(
        ValueError,
        match=r"expected a shape of 24 elements for \(2, 3, 4\), got \(5, -1\)",
    ):
        tr.reshape_shape((2, 3, 4), (5, -1))
    with pytest.raises(ValueError, match="at most one -1"):
        tr.reshape_shape((2, 3), (-1, -1))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(axis):
    a = rand(2, 3, 5)
    n = axis % 3 if axis < 0 else axis
    close(
        one(lambda x: tr.flatten(x, axis), a), a.reshape(int(np.prod(a.shape[:n])), -1)
    )


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (0, 2, 1, 3), (3, 2, 1, 0), None])
def test_transpose(perm):
    a = rand(2, 3, 4, 5)
    close(one(lambda x: tr.transpose(x, perm), a), np.transpose(a, perm))


@pytest.mark.parametrize(
    ("shape", "perm", "across"),
    [
        ((1, 37, 4, 20), (0, 2, 3, 1), 2),  # K^T: tiles of (head dim, sequence)
        ((3, 40, 33), (0, 2, 1), 1),  # tails on both tiled axes
        ((2, 3, 4, 5), (0, 2, 1, 3), None),  # the last axis stays: rows
        ((8, 9), None, 0),
    ],
)
def test_a_transpose_is_tiled_and_exact(shape, perm, across):
    """An injective kernel whose input's contiguous index follows another
    axis than its innermost runs in tiles of the two (a broadcast read does
    not count); results are numpy's, tails included."""
    x = te.placeholder(shape, name="x")
    out = tr.transpose(x, perm)
    assert ew.transposed_axis(out) == across
    a = rand(*shape)
    close(run_kernel(ew.injective(out, [x]), a), np.transpose(a, perm))


@pytest.mark.parametrize(
    ("heads", "seq", "dim", "period"),
    [(4, 8, 32, 32), (3, 5, 16, 16), (2, 4, 3, None)],  # a period under a vector: none
)
def test_merged_heads_run_by_rows_of_their_period(heads, seq, dim, period):
    """Attention's heads merged, (H, S, D) -> (S, H * D) through a transpose
    and a reshape: the innermost axis indexes the input modulo D, so the
    kernel runs rows of D (vector loads) where D is a vector or more; results
    are numpy's."""
    x = te.placeholder((1, heads, seq, dim), name="x")
    out = tr.reshape(tr.transpose(x, (0, 2, 1, 3)), (1, seq, heads * dim))
    assert ew.innermost_period(out, 16) == period
    a = rand(1, heads, seq, dim)
    want = a.transpose(0, 2, 1, 3).reshape(1, seq, heads * dim)
    close(run_kernel(ew.injective(out, [x]), a), want)


def test_a_broadcast_read_is_no_transpose():
    x = te.placeholder((2, 16, 32), name="x")
    b = te.placeholder((16,), name="b")
    out = te.compute(x.shape, lambda n, c, w: x[n, c, w] + b[c], name="y")
    assert ew.transposed_axis(out) is None
    assert ew.innermost_period(out, 16) is None


def test_transpose_rejects_non_permutations():
    with pytest.raises(
        ValueError, match=r"expected a permutation of 0..2, got \[0, 0, 1\]"
    ):
        tr.transpose(te.placeholder((2, 3, 4), name="x"), (0, 0, 1))


@pytest.mark.parametrize("axis", [0, 1, 3, -1])
def test_concat(axis):
    shapes = [[2, 3, 4, 5] for _ in range(3)]
    for n, s in enumerate(shapes):
        s[axis] = n + 1
    arrays = [rand(*s) for s in shapes]
    close(one(lambda *ts: tr.concat(ts, axis), *arrays), np.concatenate(arrays, axis))


def test_concat_rejects_mismatched_shapes():
    a, b = te.placeholder((2, 3), name="a"), te.placeholder((3, 3), name="b")
    with pytest.raises(ValueError, match="expected shapes equal but for axis 1"):
        tr.concat([a, b], 1)


@pytest.mark.parametrize(
    "pads",
    [
        [0, 0, 1, 1, 0, 0, 1, 1],
        [0, 1, 0, 2, 0, 0, 3, 0],
        [0, 0, -1, 0, 0, 0, 0, -2],
        [0, 0, 0, 0, 0, 0, 0, 0],
    ],
)
def test_pad(pads):
    a = rand(1, 2, 5, 6)
    ref = a
    for d in range(4):
        b, e = pads[d], pads[4 + d]
        ref = np.pad(
            ref,
            [(max(b, 0), max(e, 0)) if k == d else (0, 0) for k in range(4)],
            constant_values=-3.5,
        )
        sl = [slice(None)] * 4
        sl[d] = slice(-b if b < 0 else 0, ref.shape[d] + e if e < 0 else None)
        ref = ref[tuple(sl)]
    close(one(lambda x: tr.pad(x, pads, -3.5), a), ref)


def test_pad_errors():
    x = te.placeholder((2, 3), name="x")
    with pytest.raises(ValueError, match="expected 4 pads"):
        tr.pad(x, [1, 1])
    with pytest.raises(ValueError, match="leave nothing"):
        tr.pad(x, [0, -3, 0, 0])


def test_movement_in_a_chain_with_broadcasting():
    a, b = rand(1, 4, 3, 3), rand(4, 1, 1)
    got = one(
        lambda x, y: ew.add(
            tr.flatten(ew.mul(tr.pad(x, [0, 0, 1, 1, 0, 0, 1, 1]), y), 1), 1.0
        ),
        a,
        b,
    )
    close(got, (np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1))) * b).reshape(1, -1) + 1.0)
