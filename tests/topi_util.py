"""Shared by the topi tests: build a kernel with its default schedule, run it on
numpy arrays, compare with numpy."""

from __future__ import annotations

import numpy as np

import ember
from ember.topi.kernel import Kernel

RNG = np.random.default_rng(5)


def rand(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype("float32")


def run_kernel(k: Kernel, *inputs: np.ndarray, name: str = "k") -> np.ndarray:
    """`k` built with its default schedule and run on `inputs` (placeholder order)."""
    mod = ember.build(k.schedule(), k.args, name=name)
    out = np.full(k.output.shape, np.nan, "float32")
    mod(*[np.ascontiguousarray(a, "float32") for a in inputs], out)
    return out


def close(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-5) -> None:
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-6)
