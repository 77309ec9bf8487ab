"""Size-class variants of a symbolic kernel (issue 25): a dense layer over a
symbolic row count compiles to its GEMM over rows padded to whole tiles and
a matrix-vector variant the library calls where the rows are one at run
time (a decode step). Both compute numpy's result at every size, and the
kernel-by-kernel plan (`profile`) still runs."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.runtime import GraphModule, cpu, load_module


def dense_relu(k: int, n: int) -> str:
    x, y = f'tensor<?x{k}xf32, ["rows"]>', f'tensor<?x{n}xf32, ["rows"]>'
    return f"""func.func @main(%x: {x}) -> {y} {{
  %w = graph.param "w" : tensor<{n}x{k}xf32>
  %b = graph.param "b" : tensor<{n}xf32>
  %y = graph.dense %x, %w, %b : ({x}, tensor<{n}x{k}xf32>, tensor<{n}xf32>) -> {y}
  %z = graph.relu %y : ({y}) -> {y}
  func.return %z : {y}
}}"""


def compiled(k: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {
        "w": rng.standard_normal((n, k)).astype(np.float32),
        "b": rng.standard_normal(n).astype(np.float32),
    }
    lib = ember.compile_model(dense_relu(k, n), params)
    return lib, params


def reference(x, params):
    return np.maximum(x @ params["w"].T + params["b"], 0)


def test_one_library_runs_the_variant_at_one_row_and_the_gemm_otherwise():
    lib, params = compiled(48, 72)
    assert len(lib.imported_modules) == 2  # the kernel and its variant
    assert "scf.if" in lib.get_source("loop") and "_v0(" in lib.get_source("loop")
    gm = GraphModule(lib["default"](cpu()))
    for rows in (1, 2, 7, 13, 1):
        x = np.random.default_rng(rows).standard_normal((rows, 48)).astype(np.float32)
        (y,) = gm(input0=x)
        np.testing.assert_allclose(y, reference(x, params), rtol=1e-5, atol=1e-5)
    x = np.ones((1, 48), np.float32)
    profile = gm.profile(repeat=2, input0=x)  # the plan's kernel: the default
    assert profile.calls and np.allclose(
        gm(input0=x)[0], reference(x, params), atol=1e-5
    )


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(1, 70), n=st.integers(1, 70), rows=st.integers(1, 9))
def test_both_schedules_compute_numpys_result(k, n, rows):
    lib, params = compiled(k, n, seed=k * 71 + n)
    gm = GraphModule(lib["default"](cpu()))
    for r in (1, rows):
        x = np.random.default_rng(r).standard_normal((r, k)).astype(np.float32)
        (y,) = gm(input0=x)
        np.testing.assert_allclose(y, reference(x, params), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 5])
def test_the_c_runtime_entry_dispatches_too(rows, tmp_path):
    """The test is in `default_run` itself: an exported library reloaded
    runs it without the Python plan."""
    lib, params = compiled(32, 40)
    path = tmp_path / "m.so"
    lib.export_library(str(path))
    gm = GraphModule(load_module(str(path))["default"](cpu()))
    x = np.random.default_rng(rows).standard_normal((rows, 32)).astype(np.float32)
    np.testing.assert_allclose(gm(input0=x)[0], reference(x, params), atol=1e-5)
