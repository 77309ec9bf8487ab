"""Every schedule primitive, through the TVM-style Python API, against numpy.

Each primitive gets a small kernel whose results are compared with numpy, and, where
the primitive's effect is visible in the loop IR (loop kinds, attributes, the
shape of an intermediate buffer after bound inference, where a reduction's init
goes), a look at the nest `convert-te-to-loop` makes. Then every illegal request:
the message names the primitive and the loop, raised at the Python call where the
API checks (`ScheduleError`) and by `convert-te-to-loop` for schedule IR written by
hand (`PassFailedException`).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

import ember
from ember import te
from ember.passes import get_context
from ember.te.schedule import ScheduleError

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype("float32")


def run(s, args, inputs, name="f") -> list[np.ndarray]:
    """Build `s` and run it on `inputs`; the outputs, in argument order."""
    mod = ember.build(s, args, name=name)
    outputs = [np.zeros(t.shape, "float32") for t in args[len(inputs) :]]
    mod(*inputs, *outputs)
    return outputs


def loop_ir(s, args) -> str:
    """The loop nest `convert-te-to-loop` makes of `s`, as text."""
    return str(
        ember.passes.run(
            ember.lower(s, args, name="f", emit="te"), "convert-te-to-loop"
        )
    )


def close(actual, expected) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def vecadd(n: int):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return A, B, C


def matmul(n: int, m: int, k: int):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def check_vecadd(s, A, B, C, n):
    a, b = rand(n), rand(n)
    (c,) = run(s, [A, B, C], [a, b])
    close(c, a + b)


def check_matmul(s, A, B, C):
    a, b = rand(*A.shape), rand(*B.shape)
    (c,) = run(s, [A, B, C], [a, b])
    close(c, a @ b)


# --- split, tile, fuse, reorder --------------------------------------------------------


@pytest.mark.parametrize(
    "n, by, amount",
    [
        (16, "factor", 4),  # divides
        (10, "factor", 3),  # a tail of 1
        (5, "factor", 8),  # factor larger than the loop
        (12, "nparts", 3),  # divides
        (10, "nparts", 4),  # inner 3, the last part short
        (7, "nparts", 7),
        (3, "nparts", 5),  # more parts than iterations
    ],
)
def test_split(n, by, amount):
    A, B, C = vecadd(n)
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], **{by: amount})
    assert (outer.name, inner.name) == ("i.outer", "i.inner")
    assert s[C].leaves == [outer, inner]
    check_vecadd(s, A, B, C, n)


def test_split_tail_is_guarded_only_when_needed():
    A, B, C = vecadd(10)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=5)
    assert "scf.if" not in loop_ir(s, [A, B, C])
    A, B, C = vecadd(10)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=3)
    assert "arith.cmpi slt" in loop_ir(s, [A, B, C])


def test_split_a_reduction_loop_with_a_tail():
    A, B, C = matmul(3, 4, 10)
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=3)
    s[C].reorder(ko, *C.op.axis, ki)
    check_matmul(s, A, B, C)


def test_split_the_outer_part_again():
    A, B, C = vecadd(50)
    s = te.create_schedule(C.op)
    outer, _ = s[C].split(C.op.axis[0], factor=4)
    oo, oi = s[C].split(outer, nparts=3)
    assert [v.name for v in s[C].leaves] == [
        "i.outer.outer",
        "i.outer.inner",
        "i.inner",
    ]
    check_vecadd(s, A, B, C, 50)


@pytest.mark.parametrize("shape, factors", [((8, 12), (4, 4)), ((7, 10), (3, 4))])
def test_tile(shape, factors):
    A = te.placeholder(shape, name="A")
    B = te.compute(shape, lambda i, j: A[i, j] * 3.0 - A[i, j] * A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(*B.op.axis, *factors)
    assert s[B].leaves == [xo, yo, xi, yi]
    a = rand(*shape)
    (b,) = run(s, [A, B], [a])
    close(b, a * 3 - a * a)


def test_fuse_two_loops_then_split_the_fused_loop():
    A = te.placeholder((6, 7), name="A")
    B = te.compute((6, 7), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    assert fused.name == "i.j.fused"
    s[B].split(fused, factor=5)  # 42 = 8 * 5 + 2: a tail over the fused loop
    a = rand(6, 7)
    (b,) = run(s, [A, B], [a])
    close(b, a + 1)


def test_fuse_three_loops():
    A = te.placeholder((3, 4, 5), name="A")
    B = te.compute((3, 4, 5), lambda i, j, k: A[i, j, k] * 2.0, name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    fo, fi = s[B].split(fused, nparts=7)
    s[B].reorder(fi, fo)
    a = rand(3, 4, 5)
    (b,) = run(s, [A, B], [a])
    close(b, a * 2)


def test_fuse_inner_loops_of_a_tile():
    A = te.placeholder((9, 8), name="A")
    B = te.compute((9, 8), lambda i, j: A[i, j] - 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(*B.op.axis, 4, 3)
    s[B].fuse(xo, yo)
    s[B].fuse(xi, yi)
    a = rand(9, 8)
    (b,) = run(s, [A, B], [a])
    close(b, a - 1)


def test_fuse_reduction_loops():
    A = te.placeholder((4, 5, 6), name="A")
    r1 = te.reduce_axis((0, 5), name="r1")
    r2 = te.reduce_axis((0, 6), name="r2")
    R = te.compute((4,), lambda i: te.sum(A[i, r1, r2], axis=[r1, r2]), name="R")
    s = te.create_schedule(R.op)
    fused = s[R].fuse(r1, r2)
    s[R].split(fused, factor=7)
    a = rand(4, 5, 6)
    (r,) = run(s, [A, R], [a])
    close(r, a.sum(axis=(1, 2)))


def test_reorder_data_loops():
    A = te.placeholder((5, 6), name="A")
    B = te.compute((6, 5), lambda i, j: A[j, i], name="B")
    s = te.create_schedule(B.op)
    s[B].reorder(B.op.axis[1], B.op.axis[0])
    assert s[B].leaves == [B.op.axis[1], B.op.axis[0]]
    a = rand(5, 6)
    (b,) = run(s, [A, B], [a])
    close(b, a.T)


def init_and_update(ir: str) -> tuple[int, int]:
    """Positions of the reduction's init store and of its k loop in the IR."""
    return ir.index("memref.store %sum_init"), ir.index("loop.for %k")


def test_reorder_reduction_outermost_keeps_the_init_right():
    A, B, C = matmul(5, 6, 7)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    s[C].reorder(k, i, j)
    ir = loop_ir(s, [A, B, C])
    init, update = init_and_update(ir)
    # The identity is stored over the whole output before the k loop starts.
    assert init < update
    assert ir[:init].count("loop.for") == 2
    check_matmul(s, A, B, C)


def test_reorder_reduction_between_data_loops():
    A, B, C = matmul(5, 6, 7)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    s[C].reorder(i, k, j)
    ir = loop_ir(s, [A, B, C])
    init, update = init_and_update(ir)
    assert init < update
    # One loop (i) encloses both, the init has its own j loop.
    assert ir[:init].count("loop.for") == 2
    assert re.search(r"loop.for %i .*\n.*loop.for %j .*\n.*memref.store %sum_init", ir)
    check_matmul(s, A, B, C)


def test_reorder_split_reduction_loops_among_tiles():
    A, B, C = matmul(9, 10, 11)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(*C.op.axis, 4, 3)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(ko, xo, yo, ki, xi, yi)
    check_matmul(s, A, B, C)


def test_reduction_with_max():
    A = te.placeholder((6, 9), name="A")
    r = te.reduce_axis((0, 9), name="r")
    M = te.compute((6,), lambda i: te.max(A[i, r], axis=r), name="M")
    s = te.create_schedule(M.op)
    ro, ri = s[M].split(r, factor=4)
    s[M].reorder(ro, M.op.axis[0], ri)
    a = rand(6, 9) - 2  # all negative: a zero init would be wrong
    (m,) = run(s, [A, M], [a])
    close(m, a.max(axis=1))


# --- annotations ----------------------------------------------------------------------


def test_vectorize():
    A, B, C = vecadd(37)
    s = te.create_schedule(C.op)
    _, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(inner)
    assert re.search(r"loop.for %i_inner = .* vectorized", loop_ir(s, [A, B, C]))
    check_vecadd(s, A, B, C, 37)


def test_vectorize_the_data_loop_of_a_reduction():
    A, B, C = matmul(4, 16, 5)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    s[C].reorder(i, k, j)
    s[C].vectorize(j)
    ir = loop_ir(s, [A, B, C])
    assert ir.count("vectorized") == 2  # the init's j loop keeps the kind
    check_matmul(s, A, B, C)


def test_parallel():
    A, B, C = matmul(13, 6, 5)
    s = te.create_schedule(C.op)
    outer, _ = s[C].split(C.op.axis[0], nparts=4)
    s[C].parallel(outer)
    assert re.search(r"loop.for %i_outer = .* parallel", loop_ir(s, [A, B, C]))
    check_matmul(s, A, B, C)


def test_unroll():
    A, B, C = matmul(5, 6, 4)
    s = te.create_schedule(C.op)
    s[C].unroll(C.op.reduce_axis[0])
    assert re.search(r"loop.for %k = .* unrolled", loop_ir(s, [A, B, C]))
    check_matmul(s, A, B, C)


def test_pragma_auto_unroll_max_step_unrolls_small_inner_nests():
    A, B, C = matmul(8, 6, 4)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].pragma(i, "auto_unroll_max_step", 24)
    ir = loop_ir(s, [A, B, C])
    # j runs 6 * 4 = 24 steps with k inside: both unrolled, i (8 * 24) is not.
    assert re.search(r"loop.for %i = [^\n]*step %c1 {", ir)
    assert re.search(r"loop.for %j = .* unrolled", ir)
    assert re.search(r"loop.for %k = .* unrolled", ir)
    assert "{ember.pragma.auto_unroll_max_step = 24 : i64}" in ir
    check_matmul(s, A, B, C)


def test_pragma_below_the_limit_of_one_loop_unrolls_nothing():
    A, B, C = matmul(8, 6, 4)
    s = te.create_schedule(C.op)
    s[C].pragma(C.op.axis[0], "auto_unroll_max_step", 3)
    assert "unrolled" not in loop_ir(s, [A, B, C])


def test_bind_records_the_thread_axis():
    A, B, C = vecadd(64)
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=16)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    ir = loop_ir(s, [A, B, C])
    assert '{ember.thread = "threadIdx.x"}' in ir
    assert '{ember.thread = "blockIdx.x"}' in ir
    with pytest.raises(
        ScheduleError,
        match=r"loop 'i.outer' of stage 'C' is bound to blockIdx.x; bind needs a GPU "
        r"target: build with target='cuda' or 'opencl'",
    ):
        ember.build(s, [A, B, C], target="llvm")  # a CPU has no thread hierarchy


def test_bind_of_a_reduction_axis_is_refused():
    A, B, C = matmul(8, 6, 4)
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"loop 'k' of stage 'C' is a reduction"):
        s[C].bind(C.op.reduce_axis[0], te.thread_axis("threadIdx.x"))


# --- compute_at, compute_inline, compute_root ------------------------------------------


def producer_consumer(n: int, m: int, stencil: bool = False):
    """B = 2A + 1; C = B * B, or with a stencil C[i, j] = B[i, j] + B[i, j + 1]."""
    A = te.placeholder((n, m + stencil), name="A")
    B = te.compute((n, m + stencil), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    if stencil:
        C = te.compute((n, m), lambda i, j: B[i, j] + B[i, j + 1], name="C")
    else:
        C = te.compute((n, m), lambda i, j: B[i, j] * B[i, j], name="C")
    return A, B, C


def expected_producer_consumer(a, stencil):
    b = a * 2 + 1
    return b[:, :-1] + b[:, 1:] if stencil else b * b


def local_buffers(ir: str) -> dict[str, str]:
    """The shape of each `local` buffer by its SSA name."""
    return dict(re.findall(r"%(\S+) = loop.alloc local : memref<([^>]*)>", ir))


@pytest.mark.parametrize(
    "depth, stencil, shape",
    [
        ("i.outer", False, "4x10xf32"),  # a row block
        ("i.inner", False, "1x10xf32"),  # a row
        ("j.outer", False, "1x3xf32"),  # a tile of one row
        ("j.inner", False, "1x1xf32"),  # a point
        ("i.outer", True, "4x11xf32"),  # the stencil needs one more column
        ("j.outer", True, "1x4xf32"),
        ("j.inner", True, "1x2xf32"),
    ],
)
def test_compute_at_depths_bound_the_buffer(depth, stencil, shape):
    A, B, C = producer_consumer(10, 10, stencil)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)  # 10 = 2 * 4 + 2: a tail
    yo, yi = s[C].split(C.op.axis[1], factor=3)
    loops = {"i.outer": xo, "i.inner": xi, "j.outer": yo, "j.inner": yi}
    s[B].compute_at(s[C], loops[depth])
    assert local_buffers(loop_ir(s, [A, C])) == {"B": shape}
    a = rand(10, 10 + stencil)
    (c,) = run(s, [A, C], [a])
    close(c, expected_producer_consumer(a, stencil))


def test_compute_at_a_reduction_loop():
    """A producer computed inside the k loop: only the slice one k step reads."""
    n, m, k = 5, 6, 7
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    AA = te.compute((n, k), lambda i, j: A[i, j] * 2.0, name="AA")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(AA[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].reorder(r, i, j)
    s[AA].compute_at(s[C], r)
    assert local_buffers(loop_ir(s, [A, B, C])) == {"AA": "5x1xf32"}
    a, b = rand(n, k), rand(k, m)
    (c,) = run(s, [A, B, C], [a, b])
    close(c, (a * 2) @ b)


def chain(n: int):
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((n, n), lambda i, j: C[i, j] * C[j, i], name="D")
    return A, B, C, D


def expected_chain(a):
    c = a * 2 + 1
    return c * c.T


def test_compute_at_two_producers_at_the_same_loop():
    """B and C both at D's i.outer: B, which C reads, is computed first and
    covers what C needs."""
    A = te.placeholder((10, 10), name="A")
    B = te.compute((10, 10), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((10, 10), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((10, 10), lambda i, j: C[i, j] * C[i, j], name="D")
    s = te.create_schedule(D.op)
    io, _ = s[D].split(D.op.axis[0], factor=3)
    s[C].compute_at(s[D], io)
    s[B].compute_at(s[D], io)
    assert local_buffers(loop_ir(s, [A, D])) == {"B": "3x10xf32", "C": "3x10xf32"}
    a = rand(10, 10)
    (d,) = run(s, [A, D], [a])
    close(d, (a * 2 + 1) ** 2)


def test_compute_at_nested():
    """B inside C's loop, C inside D's: B's region follows C's tile."""
    A = te.placeholder((12, 12), name="A")
    B = te.compute((12, 12), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((12, 12), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((12, 12), lambda i, j: C[i, j] - 3.0, name="D")
    s = te.create_schedule(D.op)
    xo, yo, _, _ = s[D].tile(*D.op.axis, 4, 6)
    s[C].compute_at(s[D], yo)
    s[B].compute_at(s[C], C.op.axis[0])
    assert local_buffers(loop_ir(s, [A, D])) == {"C": "4x6xf32", "B": "1x6xf32"}
    a = rand(12, 12)
    (d,) = run(s, [A, D], [a])
    close(d, a * 2 + 1 - 3)


def test_compute_at_outside_a_nested_attachment():
    """B at D's outer tile loop, read by C, which runs inside E, which runs inside
    D's inner tile loop: B covers what C needs over a whole row of tiles."""
    A = te.placeholder((8, 9), name="A")
    B = te.compute((8, 9), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] + B[i, j + 1], name="C")
    E = te.compute((8, 8), lambda i, j: C[i, j] - 1.0, name="E")
    D = te.compute((8, 8), lambda i, j: E[i, j] * 3.0, name="D")
    s = te.create_schedule(D.op)
    xo, yo, _, _ = s[D].tile(*D.op.axis, 2, 4)
    s[E].compute_at(s[D], yo)
    s[C].compute_at(s[E], E.op.axis[0])
    s[B].compute_at(s[D], xo)
    assert local_buffers(loop_ir(s, [A, D])) == {
        "B": "2x9xf32",
        "E": "2x4xf32",
        "C": "1x4xf32",
    }
    a = rand(8, 9)
    (d,) = run(s, [A, D], [a])
    b = a * 2
    close(d, (b[:, :-1] + b[:, 1:] - 1) * 3)


def test_compute_at_a_producer_read_transposed_needs_its_whole_region():
    A, B, C, D = chain(6)
    s = te.create_schedule(D.op)
    xo, _ = s[D].split(D.op.axis[0], factor=2)
    s[C].compute_at(s[D], xo)  # D reads C[i, j] and C[j, i]
    s[B].compute_inline()
    assert local_buffers(loop_ir(s, [A, D])) == {"C": "6x6xf32"}
    a = rand(6, 6)
    (d,) = run(s, [A, D], [a])
    close(d, expected_chain(a))


@pytest.mark.parametrize("shift", [-1, 8])
def test_compute_at_a_region_leaving_the_tensor_is_guarded(shift):
    """Y reads X[j + shift] only where that is inside X (te.if_then_else). X's
    region for one row of Y starts at the constant `shift`: the points of it
    outside X are not computed, so X's nest never reads A out of bounds."""
    A = te.placeholder((10,), name="A")
    X = te.compute((10,), lambda i: A[i] * 2.0, name="X")
    Y = te.compute(
        (4, 3),
        lambda i, j: (
            te.if_then_else(te.all(j + shift >= 0, j + shift < 10), X[j + shift], 0.0)
            * (i + 1).astype("float32")
        ),
        name="Y",
    )
    s = te.create_schedule(Y.op)
    s[X].compute_at(s[Y], Y.op.axis[0])
    ir = loop_ir(s, [A, Y])
    assert local_buffers(ir) == {"X": "3xf32"}
    assert "scf.if" in ir[ir.index("%X = loop.alloc") : ir.index("memref.load %A")]
    a = rand(10)
    (y,) = run(s, [A, Y], [a])
    x = np.concatenate([np.zeros(1), a * 2, np.zeros(1)])[1 + shift : 4 + shift]
    close(y, np.outer(np.arange(1, 5), x))


@pytest.mark.parametrize(
    "index, reference, shape",
    [
        (lambda i: i // 2, lambda b: b[np.arange(10) // 2], "2xf32"),
        (lambda i: (i + 1) // 2, lambda b: b[(np.arange(10) + 1) // 2], "3xf32"),
        (lambda i: 9 - i, lambda b: b[::-1], "4xf32"),
        (lambda i: (i + 3) % 10, lambda b: b[(np.arange(10) + 3) % 10], "10xf32"),
    ],
    ids=["half", "half-up", "reversed", "rotated"],
)
def test_compute_at_with_divided_and_reversed_reads(index, reference, shape):
    """A tile of 4 reads B[(4*io + ii) // 2]: `2*io + ii // 2`, two elements."""
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((10,), lambda i: B[index(i)] + 1.0, name="C")
    s = te.create_schedule(C.op)
    io, _ = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    assert local_buffers(loop_ir(s, [A, C])) == {"B": shape}
    a = rand(10)
    (c,) = run(s, [A, C], [a])
    close(c, reference(a * 2) + 1)


def test_softmax_reductions_at_the_row_loop():
    """Row max and row sum, each a reduction computed at the consumer's row block;
    the exponential is inlined into both of its readers."""
    n, m = 5, 7
    A = te.placeholder((n, m), name="A")
    k1 = te.reduce_axis((0, m), name="k1")
    M = te.compute((n,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    E = te.compute((n, m), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, m), name="k2")
    S = te.compute((n,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    Y = te.compute((n, m), lambda i, j: E[i, j] / S[i], name="Y")
    s = te.create_schedule(Y.op)
    io, _ = s[Y].split(Y.op.axis[0], factor=2)
    s[E].compute_inline()
    s[S].compute_at(s[Y], io)
    s[M].compute_at(s[Y], io)
    assert local_buffers(loop_ir(s, [A, Y])) == {"M": "2xf32", "S": "2xf32"}
    a = rand(n, m)
    (y,) = run(s, [A, Y], [a])
    e = np.exp(a - a.max(axis=1, keepdims=True))
    close(y, e / e.sum(axis=1, keepdims=True))


def test_compute_inline_chain():
    A, B, C, D = chain(7)
    s = te.create_schedule(D.op)
    s[B].compute_inline()
    s[C].compute_inline()
    ir = loop_ir(s, [A, D])
    assert "loop.alloc" not in ir
    assert ir.count("loop.for") == 2
    a = rand(7, 7)
    (d,) = run(s, [A, D], [a])
    close(d, expected_chain(a))


def test_compute_inline_chain_consumer_first():
    A, B, C, D = chain(7)
    s = te.create_schedule(D.op)
    s[C].compute_inline()
    s[B].compute_inline()
    assert "loop.alloc" not in loop_ir(s, [A, D])
    a = rand(7, 7)
    (d,) = run(s, [A, D], [a])
    close(d, expected_chain(a))


def test_compute_inline_into_a_scheduled_consumer():
    A, B, C = producer_consumer(9, 8, stencil=True)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(*C.op.axis, 4, 3)
    s[C].parallel(xo)
    s[B].compute_inline()
    a = rand(9, 9)
    (c,) = run(s, [A, C], [a])
    close(c, expected_producer_consumer(a, True))


def test_compute_root_undoes_compute_at():
    A, B, C = producer_consumer(6, 5)
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    s[B].compute_root()
    ir = loop_ir(s, [A, C])
    assert local_buffers(ir) == {}
    assert "%B = loop.alloc : memref<6x5xf32>" in ir
    a = rand(6, 5)
    (c,) = run(s, [A, C], [a])
    close(c, expected_producer_consumer(a, False))


# --- cache_read, cache_write ----------------------------------------------------------


def test_cache_read_at_the_reduction_loop():
    A, B, C = matmul(8, 12, 16)
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", [C])
    BL = s.cache_read(B, "local", [C])
    assert AL.name == "A.local"
    xo, yo, xi, yi = s[C].tile(*C.op.axis, 4, 4)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=8)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[AL].compute_at(s[C], ko)
    s[BL].compute_at(s[C], ko)
    # per (xo, yo, ko): a 4x8 block of A and an 8x4 block of B
    assert local_buffers(loop_ir(s, [A, B, C])) == {
        "A.local": "4x8xf32",
        "B.local": "8x4xf32",
    }
    check_matmul(s, A, B, C)


def test_cache_read_at_root():
    A, B, C = producer_consumer(5, 6)
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "global", [B])
    s[AL].split(AL.op.axis[1], factor=4)
    a = rand(5, 6)
    (c,) = run(s, [A, C], [a])
    close(c, expected_producer_consumer(a, False))


def test_cache_read_of_one_tensor_for_two_readers():
    """Each reader gets its own copy, computed where that reader needs it."""
    A = te.placeholder((6, 5), name="A")
    B = te.compute((6, 5), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((6, 5), lambda i, j: B[i, j] + A[i, j], name="C")
    s = te.create_schedule(C.op)
    AB = s.cache_read(A, "local", [B])
    AC = s.cache_read(A, "local", [C])
    assert (AB.name, AC.name) == ("A.local", "A.local.1")
    s[AB].compute_at(s[B], B.op.axis[0])
    s[AC].compute_at(s[C], C.op.axis[1])
    assert local_buffers(loop_ir(s, [A, C])) == {
        "A.local": "1x5xf32",
        "A.local.1": "1x1xf32",
    }
    a = rand(6, 5)
    (c,) = run(s, [A, C], [a])
    close(c, a * 3)


def test_cache_write_register_tile():
    A, B, C = matmul(16, 12, 10)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    assert CC.name == "C.local"
    xo, yo, xi, yi = s[C].tile(*C.op.axis, 4, 4)
    s[CC].compute_at(s[C], yo)
    ic, jc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    s[CC].reorder(k, ic, jc)
    s[CC].vectorize(jc)
    ir = loop_ir(s, [A, B, C])
    assert local_buffers(ir) == {"C.local": "4x4xf32"}
    # the tile's init comes before its k loop
    assert ir.index("memref.store %sum_init") < ir.index("loop.for %k")
    check_matmul(s, A, B, C)


def test_cache_write_with_a_tail_tile():
    A, B, C = matmul(10, 7, 5)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(*C.op.axis, 4, 4)
    s[C].parallel(xo)
    s[CC].compute_at(s[C], yo)
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=2)
    s[CC].reorder(ko, *s[CC].op.axis, ki)
    check_matmul(s, A, B, C)


# --- several outputs, conv2d ----------------------------------------------------------


def test_multi_output_schedule():
    A = te.placeholder((6, 8), name="A")
    B = te.compute((6, 8), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((6, 8), lambda i, j: B[i, j] + 1.0, name="C")
    r = te.reduce_axis((0, 8), name="r")
    D = te.compute((6,), lambda i: te.sum(B[i, r], axis=r), name="D")
    s = te.create_schedule([C.op, D.op])
    s[C].split(C.op.axis[1], factor=3)
    s[D].split(r, factor=5)
    s[B].compute_inline()
    a = rand(6, 8)
    c, d = run(s, [A, C, D], [a])
    close(c, a * 2 + 1)
    close(d, (a * 2).sum(axis=1))


def conv2d(c: int, h: int, w: int, f: int, k: int, pad: int):
    X = te.placeholder((1, c, h, w), name="X")
    W = te.placeholder((f, c, k, k), name="W")
    ph, pw = h + 2 * pad, w + 2 * pad
    P = te.compute(
        (1, c, ph, pw),
        lambda n, ci, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
            X[n, ci, y - pad, x - pad],
            0.0,
        ),
        name="P",
    )
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, k), name="ry")
    rx = te.reduce_axis((0, k), name="rx")
    Y = te.compute(
        (1, f, ph - k + 1, pw - k + 1),
        lambda n, fo, y, x: te.sum(
            P[n, rc, y + ry, x + rx] * W[fo, rc, ry, rx], axis=[rc, ry, rx]
        ),
        name="Y",
    )
    return X, W, P, Y


def check_conv2d(s, X, W, Y, pad):
    x, w = rand(*X.shape), rand(*W.shape)
    (y,) = run(s, [X, W, Y], [x, w])
    k = W.shape[2]
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))
    close(y, np.einsum("ncyxab,fcab->nfyx", windows, w))


def test_conv2d_padding_inlined():
    X, W, P, Y = conv2d(3, 6, 6, 4, 3, pad=1)
    s = te.create_schedule(Y.op)
    s[P].compute_inline()
    n, f, y, x = Y.op.axis
    xo, xi = s[Y].split(x, factor=4)
    s[Y].reorder(n, f, y, xo, *Y.op.reduce_axis, xi)
    s[Y].vectorize(xi)
    check_conv2d(s, X, W, Y, pad=1)


def test_conv2d_padding_computed_at_a_row():
    X, W, P, Y = conv2d(3, 6, 6, 4, 3, pad=1)
    s = te.create_schedule(Y.op)
    n, f, y, x = Y.op.axis
    s[P].compute_at(s[Y], y)
    # one output row reads 3 channels x 3 padded rows x all 8 padded columns
    assert local_buffers(loop_ir(s, [X, W, Y])) == {"P": "1x3x3x8xf32"}
    check_conv2d(s, X, W, Y, pad=1)


def test_conv2d_cache_write_and_padding_at_the_tile():
    X, W, P, Y = conv2d(2, 7, 7, 4, 3, pad=1)
    s = te.create_schedule(Y.op)
    YL = s.cache_write(Y, "local")
    n, f, y, x = Y.op.axis
    yo, xo, yi, xi = s[Y].tile(y, x, 2, 4)
    s[YL].compute_at(s[Y], xo)
    s[P].compute_at(s[YL], s[YL].op.reduce_axis[0])
    check_conv2d(s, X, W, Y, pad=1)


# --- illegal requests at the Python call ---------------------------------------------


def test_split_twice_names_the_loop():
    A, B, C = vecadd(16)
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    s[C].split(i, factor=4)
    with pytest.raises(ScheduleError, match=r"split: 'i' is not a loop of stage 'C'"):
        s[C].split(i, factor=2)


def test_split_a_fused_axis_twice():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    s[B].split(fused, factor=2)
    with pytest.raises(ScheduleError, match=r"split: 'i.j.fused' is not a loop of"):
        s[B].split(fused, factor=2)
    with pytest.raises(ScheduleError, match=r"split: 'i' is not a loop of stage 'B'"):
        s[B].split(B.op.axis[0], factor=2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, r"split: give exactly one of factor= or nparts= for 'i'"),
        ({"factor": 2, "nparts": 2}, r"split: give exactly one of .* for 'i'"),
        ({"factor": 0}, r"split: expected a positive int to split 'i', got 0"),
        ({"nparts": 2.5}, r"split: expected a positive int to split 'i', got 2.5"),
    ],
)
def test_split_arguments(kwargs, message):
    A, B, C = vecadd(8)
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=message):
        s[C].split(C.op.axis[0], **kwargs)


def test_fuse_errors():
    A, B, C = matmul(4, 4, 4)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    with pytest.raises(ScheduleError, match=r"fuse: loops j, i of stage 'C' must be"):
        s[C].fuse(j, i)
    with pytest.raises(ScheduleError, match=r"fuse: cannot fuse a reduction loop"):
        s[C].fuse(j, k)
    with pytest.raises(ScheduleError, match=r"fuse: expected at least two loops"):
        s[C].fuse(i)


def test_reorder_errors():
    A, B, C = matmul(4, 4, 4)
    D = te.compute((4, 4), lambda i, j: C[i, j], name="D")
    s = te.create_schedule(D.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match=r"reorder: a loop of 'C' is named twice"):
        s[C].reorder(i, i)
    with pytest.raises(ScheduleError, match=r"reorder: 'j' is not a loop of stage 'D'"):
        s[D].reorder(j, i)


@pytest.mark.parametrize("primitive", ["vectorize", "parallel"])
def test_annotating_a_reduction_loop(primitive):
    A, B, C = matmul(4, 4, 4)
    s = te.create_schedule(C.op)
    with pytest.raises(
        ScheduleError, match=rf"{primitive}: 'k' of stage 'C' is a reduction loop"
    ):
        getattr(s[C], primitive)(C.op.reduce_axis[0])


def test_annotation_and_bind_arguments():
    A, B, C = vecadd(8)
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    with pytest.raises(ScheduleError, match=r"bind: expected a te.thread_axis for 'i'"):
        s[C].bind(i, i)
    with pytest.raises(ScheduleError, match=r"thread_axis: unknown tag 'warp.x'"):
        te.thread_axis("warp.x")
    with pytest.raises(ScheduleError, match=r"pragma: expected an int or str value"):
        s[C].pragma(i, "auto_unroll_max_step", 1.5)
    with pytest.raises(ScheduleError, match=r"unroll: expected an axis of stage 'C'"):
        s[C].unroll("i")


def test_compute_at_errors():
    A, B, C = producer_consumer(4, 4)
    s = te.create_schedule(C.op)
    with pytest.raises(
        ScheduleError, match=r"compute_at: 'i' is not a loop of stage 'C'"
    ):
        s[B].compute_at(s[C], B.op.axis[0])  # a loop of B itself, not of C
    with pytest.raises(ScheduleError, match=r"compute_at: stage 'B' cannot attach"):
        s[B].compute_at(s[B], B.op.axis[0])
    with pytest.raises(ScheduleError, match=r"compute_at: expected a stage"):
        s[B].compute_at(C, C.op.axis[0])


def test_stage_level_errors():
    A, B, C = matmul(4, 4, 4)
    D = te.compute((4, 4), lambda i, j: C[i, j] * 2.0, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(
        ScheduleError, match=r"compute_inline: stage 'C' is a reduction"
    ):
        s[C].compute_inline()
    with pytest.raises(ScheduleError, match=r"'A' is not a compute stage"):
        s[A].split(A.op, factor=2)
    with pytest.raises(ScheduleError, match=r"cache_read: unknown scope 'texture'"):
        s.cache_read(A, "texture", [C])
    with pytest.raises(ScheduleError, match=r"cache_read: stage 'D' does not read 'A'"):
        s.cache_read(A, "local", [D])
    s[D].split(D.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match=r"cache_write: schedule stage 'D' after"):
        s.cache_write(D, "local")


# --- illegal requests found by convert-te-to-loop ------------------------------------


def fails_at_lowering(s, args, message):
    with pytest.raises(PassFailedException, match=message):
        ember.passes.run(
            ember.lower(s, args, name="f", emit="te"), "convert-te-to-loop"
        )


def test_compute_at_a_stage_that_does_not_read_it():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, 4), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((4, 4), lambda i, j: C[i, j] - 1.0, name="D")
    s = te.create_schedule(D.op)
    s[B].compute_at(s[D], D.op.axis[0])
    fails_at_lowering(
        s,
        [A, D],
        r"te.compute_at: stage 'B' is read by 'C', which does not run inside loop "
        r"'i' of stage 'D'",
    )


def test_compute_at_one_of_two_readers():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, 4), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((4, 4), lambda i, j: B[i, j] - 1.0, name="D")
    s = te.create_schedule([C.op, D.op])
    s[B].compute_at(s[C], C.op.axis[1])
    fails_at_lowering(
        s, [A, C, D], r"stage 'B' is read by 'D', which does not run inside loop 'j'"
    )


def test_compute_at_then_split_the_loop():
    A, B, C = producer_consumer(4, 4)
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].split(C.op.axis[0], factor=2)
    fails_at_lowering(
        s,
        [A, C],
        r"te.compute_at: loop 'i' of stage 'C' was split or fused after 'B' was "
        r"attached to it",
    )


def test_compute_at_or_inline_an_output():
    """Outputs of the schedule are refused at the call; a stage the function
    returns that the schedule does not list as an output, by the pass."""
    A, B, C = producer_consumer(4, 4)
    s = te.create_schedule([B.op, C.op])
    with pytest.raises(ScheduleError, match=r"compute_at: stage 'B' is an output"):
        s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ScheduleError, match=r"compute_inline: stage 'B' is an output"):
        s[B].compute_inline()
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    fails_at_lowering(
        s, [A, B, C], r"te.compute_at: stage 'B' is an output of the function"
    )
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    fails_at_lowering(
        s, [A, B, C], r"te.compute_inline: stage 'B' is an output of the function"
    )


def test_compute_at_in_a_cycle():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((4,), lambda i: B[i] + 1.0, name="C")
    D = te.compute((4,), lambda i: C[i] + 1.0, name="D")
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].compute_at(s[B], B.op.axis[0])
    fails_at_lowering(s, [A, D], r"te.compute_at: stages B, C are attached in a cycle")


def test_annotating_a_loop_twice():
    A, B, C = vecadd(8)
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    s[C].vectorize(C.op.axis[0])  # the same annotation again is harmless
    with pytest.raises(
        ScheduleError, match=r"parallel: 'i' of stage 'C' is already annotated with "
    ):
        s[C].parallel(C.op.axis[0])


def te_function(schedule: str) -> str:
    """A matmul C and its consumer D in te IR, with a hand-written schedule."""
    return f"""
    func.func @f(%A: tensor<8x4xf32>, %B: tensor<4x6xf32>) -> tensor<8x6xf32> {{
      %C = te.compute "C" (%i, %j) reduce sum (%k : 4) -> tensor<8x6xf32> {{
        %a = te.read %A[%i, %k] : tensor<8x4xf32>
        %b = te.read %B[%k, %j] : tensor<4x6xf32>
        %m = arith.mulf %a, %b : f32
        te.yield %m : f32
      }}
      %D = te.compute "D" (%x, %y) -> tensor<8x6xf32> {{
        %c = te.read %C[%x, %y] : tensor<8x6xf32>
        te.yield %c : f32
      }}
      te.schedule {{
        {schedule}
      }}
      func.return %D : tensor<8x6xf32>
    }}
    """


@pytest.mark.parametrize(
    "schedule, message",
    [
        (
            'te.split "C" "i" factor 2 -> "i.o", "i.i"\n'
            'te.split "C" "i" factor 2 -> "i.o2", "i.i2"',
            r"te.split: loop 'i' of stage 'C' was already split or fused; its loops "
            r"are i.o, i.i, j, k",
        ),
        (
            'te.fuse "C" ["i", "j"] -> "f"\nte.split "C" "i" factor 2 -> "a", "b"',
            r"te.split: loop 'i' of stage 'C' was already split or fused",
        ),
        (
            'te.split "C" "q" factor 2 -> "q.o", "q.i"',
            r"te.split: stage 'C' has no loop 'q'; its loops are i, j, k",
        ),
        (
            'te.split "C" "i" factor 2 -> "j", "i.i"',
            r"te.split: stage 'C' already has a loop named 'j'",
        ),
        (
            'te.fuse "C" ["i", "k"] -> "f"',
            r"te.fuse: loops i, k of stage 'C' must be adjacent",
        ),
        (
            'te.fuse "C" ["j", "k"] -> "f"',
            r"te.fuse: cannot fuse reduction and data-parallel loops of stage 'C'",
        ),
        (
            'te.vectorize "C" "k"',
            r"te.vectorize: loop 'k' of stage 'C' is a reduction loop",
        ),
        (
            'te.parallel "C" "k"',
            r"te.parallel: loop 'k' of stage 'C' is a reduction loop",
        ),
        ('te.unroll "E" "i"', r"te.unroll: no stage 'E'; the stages are C, D"),
        (
            'te.vectorize "D" "y"\nte.parallel "D" "y"',
            r"te.parallel: loop 'y' of stage 'D' is already vectorized",
        ),
        (
            'te.compute_at "C" at "D" "k"',
            r"te.compute_at: stage 'D' has no loop 'k'; its loops are x, y",
        ),
        (
            'te.compute_at "D" at "C" "i"',
            r"te.compute_at: stage 'D' is an output of the function",
        ),
        (
            'te.compute_at "C" at "C" "i"',
            r"te.compute_at: stage 'C' cannot be computed inside itself",
        ),
        (
            'te.compute_inline "C"',
            r"te.compute_inline: stage 'C' is a reduction and cannot be inlined",
        ),
        (
            'te.split "C" "i" factor 2 -> "i.o", "i.i"\n'
            'te.cache_write "C" "local" -> "C.local"',
            r"te.cache_write: stage 'C' already has loop primitives; apply "
            r"te.cache_write first",
        ),
        (
            'te.cache_read "A" "local" readers ["D"] -> "A.local"',
            r"te.cache_read: stage 'D' does not read 'A'",
        ),
        (
            'te.cache_write "C" "local" -> "C.local"\nte.compute_inline "C"\n'
            'te.split "C" "i" factor 2 -> "a", "b"',
            r"te.split: stage 'C' was inlined",
        ),
    ],
)
def test_illegal_schedule_ir(schedule, message):
    module = Parser(get_context(), te_function(schedule)).parse_module()
    with pytest.raises(PassFailedException, match=f"convert-te-to-loop: @f: {message}"):
        ember.passes.run(module, "convert-te-to-loop")


def test_hand_written_schedule_ir_runs():
    """The same schedule IR, legal this time, agrees with numpy."""
    schedule = """
        te.cache_write "C" "local" -> "C.local"
        te.split "D" "x" factor 3 -> "x.o", "x.i"
        te.compute_at "C.local" at "D" "x.o"
        te.compute_inline "C"
        te.reorder "C.local" ["k", "i.c", "j.c"]
        te.vectorize "D" "y"
    """
    mod = ember.build(te_function(schedule), name="f")
    a, b = rand(8, 4), rand(4, 6)
    d = np.zeros((8, 6), "float32")
    mod(a, b, d)
    close(d, a @ b)
