"""`graph.dense_dequant` (issue 26's weight-only quantization): a dense layer
whose weight is stored as 8- or 4-bit integers with a float scale per group
of K, dequantized inside the product. Compiled results equal numpy's
dequantize-then-multiply at random shapes, group sizes and row counts, at one
row (the GEMV variant) and several (the GEMM), static and symbolic."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.dialects.graph_nn import dequantize
from ember.runtime import GraphModule, cpu


def quantized(n: int, k: int, bits: int, group: int, seed: int):
    rng = np.random.default_rng(seed)
    if bits == 4:
        w = rng.integers(0, 256, (n, k // 2)).astype(np.uint8)
    else:
        w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    scale = rng.uniform(0.001, 0.02, (n, k // group)).astype(np.float32)
    return w, scale, rng.standard_normal(n).astype(np.float32)


def model(rows, n: int, k: int, bits: int, group: int) -> str:
    m = "?" if rows is None else str(rows)
    enc = ', ["rows"]' if rows is None else ""
    x, y = f"tensor<{m}x{k}xf32{enc}>", f"tensor<{m}x{n}xf32{enc}>"
    wt = f"tensor<{n}x{k * bits // 8}x{'ui8' if bits == 4 else 'i8'}>"
    st_ = f"tensor<{n}x{k // group}xf32>"
    return f"""func.func @main(%x: {x}) -> {y} {{
  %w = graph.param "w" : {wt}
  %s = graph.param "s" : {st_}
  %b = graph.param "b" : tensor<{n}xf32>
  %y = graph.dense_dequant %x, %w, %s, %b {{bits = {bits}, group = {group}}} : ({x}, {wt}, {st_}, tensor<{n}xf32>) -> {y}
  func.return %y : {y}
}}"""


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 50),
    groups=st.integers(1, 4),
    group=st.sampled_from([2, 8, 32]),
    bits=st.sampled_from([4, 8]),
    rows=st.sampled_from([None, 1, 3]),
)
def test_dequantized_products_match_numpy(n, groups, group, bits, rows):
    k = groups * group
    w, scale, b = quantized(n, k, bits, group, seed=n * 7 + k)
    lib = ember.compile_model(
        model(rows, n, k, bits, group), {"w": w, "s": scale, "b": b}
    )
    gm = GraphModule(lib["default"](cpu()))
    full = dequantize(w, scale, bits, group)
    for r in [1, 5] if rows is None else [rows]:
        x = np.random.default_rng(r).standard_normal((r, k)).astype(np.float32)
        (y,) = gm(input0=x)
        np.testing.assert_allclose(y, x @ full.T + b, rtol=1e-5, atol=1e-5)


def test_the_low_nibble_is_the_even_element():
    w = np.array([[0x9F, 0x08]], np.uint8)  # elements 15, 9, 8, 0, stored + 8
    values = dequantize(w, np.ones((1, 1), np.float32), bits=4, group=4)
    assert values.tolist() == [[7.0, 1.0, 0.0, -8.0]]
