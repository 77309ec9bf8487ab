"""`dot.bf16` and `te.bf16_word` on the `c` target: the printed helper widens
each word's bfloat16 halves by their bits and adds the odd pair's product
first, matching numpy's widened words; the words packed in C round as
numpy's reference rounding does."""

import re

import numpy as np
import pytest

import ember
from ember import te
from ember.runtime.cc import compiler
from ember.runtime.errors import CompilerNotFoundError


def _has_compiler() -> bool:
    try:
        compiler()
    except CompilerNotFoundError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    not _has_compiler(),
    reason="no C compiler ($CC, else cc) to compile the c target's source",
)

RNG = np.random.default_rng(29)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 `x` (finite) rounded to the nearest bfloat16, ties to even, as
    uint32 bits whose low half is zero."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32)


def words(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """int32 words of two bfloat16 numbers: `low`'s in the low half."""
    return (bf16_bits(high) | (bf16_bits(low) >> 16)).view(np.int32)


def halves(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (even, odd) bfloat16 numbers of int32 words, widened to float32."""
    u = w.view(np.uint32)
    return (u << 16).view(np.float32), (u & 0xFFFF0000).view(np.float32)


def word_gemm(m: int, n: int, pairs: int, vector: bool):
    """C[i, j] = sum_k dot_bf16(A[i, k], B[j, k]): a GEMM on (m, pairs) and
    (n, pairs) words; `vector` splits j by 4 and vectorizes it."""
    A = te.placeholder((m, pairs), "int32", name="A")
    B = te.placeholder((n, pairs), "int32", name="B")
    k = te.reduce_axis((0, pairs), name="k")
    C = te.compute(
        (m, n), lambda i, j: te.sum(te.dot_bf16(A[i, k], B[j, k]), axis=k), name="C"
    )
    s = te.create_schedule(C.op)
    if vector:
        jo, ji = s[C].split(C.op.axis[1], factor=4)
        s[C].reorder(C.op.axis[0], jo, k, ji)
        s[C].vectorize(ji)
    return ember.build(s, [A, B, C], target="c", name="word_gemm")


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vectorized"])
def test_bf16_word_gemm_in_c_matches_the_widened_words(vector):
    """Against float64 sums of the widened halves, and exactly against float32
    sums in the instruction's order (the products of bfloat16 numbers are
    exact in float32: only the order of the additions can differ)."""
    m, n, pairs = 5, 12, 19
    a = words(*RNG.standard_normal((2, m, pairs)).astype(np.float32))
    b = words(*RNG.standard_normal((2, n, pairs)).astype(np.float32))
    mod = word_gemm(m, n, pairs, vector)
    source = mod.get_source()
    assert "float ember_dot_bf16(float acc, int32_t a, int32_t b) {" in source
    assert re.search(r"= ember_dot_bf16\(\w+, \w+, \w+\);", source), source
    got = np.zeros((m, n), np.float32)
    mod(a, b, got)

    (a0, a1), (b0, b1) = halves(a), halves(b)
    wide = [x.astype(np.float64) for x in (a0, a1, b0, b1)]
    want = wide[0] @ wide[2].T + wide[1] @ wide[3].T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    ordered = np.zeros((m, n), np.float32)
    for k in range(pairs):  # acc + odd product, then + even, each rounded
        ordered = ordered + np.outer(a1[:, k], b1[:, k])
        ordered = ordered + np.outer(a0[:, k], b0[:, k])
    np.testing.assert_array_equal(got, ordered)


def test_bf16_word_in_c_rounds_to_nearest_even():
    """te.bf16_word's bits in C: the nearest bfloat16 of each value, ties
    (exactly half an ulp, either parity) to even, the low value in the low
    half."""
    n = 64
    lo, hi = RNG.standard_normal((2, n)).astype(np.float32) * 100
    one = np.float32(1).view(np.uint32)
    ties = np.array([one + 0x8000, one + 0x18000, one + 0x7FFF, one + 0x8001])
    lo[: len(ties)] = ties.astype(np.uint32).view(np.float32)
    hi[-len(ties) :] = -lo[: len(ties)]
    L, H = te.placeholder((n,), name="L"), te.placeholder((n,), name="H")
    W = te.compute((n,), lambda i: te.bf16_word(L[i], H[i]), name="W")
    mod = ember.build(te.create_schedule(W.op), [L, H, W], target="c", name="pack")
    got = np.zeros(n, np.int32)
    mod(lo, hi, got)
    np.testing.assert_array_equal(got, words(lo, hi))
    assert list(bf16_bits(lo[:4]) - one) == [0, 0x20000, 0, 0x10000]
