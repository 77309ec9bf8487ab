"""Cost models: predict how fast a candidate is from its loop-IR features.

The model is trained on the measured candidates of a task, the target being
the throughput relative to the best one seen (best cost / cost, in (0, 1];
0 for a candidate that computed a wrong result or crashed), and ranks the
unmeasured ones; only the order matters. `XGBoostModel` (gradient-boosted
trees, as Ansor and TVM use) when `xgboost` is installed; otherwise
`RidgeModel`, a ridge regression in numpy over the standardized features and
their squares, which ranks the obvious knobs (vectorized, parallel, reuse) and
needs no dependency.
"""

from __future__ import annotations

import numpy as np


class RidgeModel:
    """Ridge regression over standardized features and their squares."""

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha
        self.weights: np.ndarray | None = None

    @staticmethod
    def _expand(x: np.ndarray) -> np.ndarray:
        return np.concatenate([x, x * x], axis=1)

    def fit(self, x: np.ndarray, y: np.ndarray) -> None:
        x = self._expand(np.asarray(x, np.float64))
        self.mean = x.mean(axis=0)
        self.scale = x.std(axis=0) + 1e-9
        z = (x - self.mean) / self.scale
        z = np.concatenate([z, np.ones((len(z), 1))], axis=1)
        ridge = self.alpha * np.eye(z.shape[1])
        ridge[-1, -1] = 0.0  # the intercept is not shrunk
        self.weights = np.linalg.solve(z.T @ z + ridge, z.T @ np.asarray(y, np.float64))

    def predict(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float64)
        if self.weights is None:
            return np.zeros(len(x))
        z = (self._expand(x) - self.mean) / self.scale
        return np.concatenate([z, np.ones((len(z), 1))], axis=1) @ self.weights


class XGBoostModel:
    """Gradient-boosted trees (`xgboost`, an optional dependency)."""

    def __init__(self, rounds: int = 100):
        import xgboost  # noqa: F401  # pyright: ignore[reportMissingImports]

        self.rounds = rounds
        self.booster = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> None:
        import xgboost  # pyright: ignore[reportMissingImports]

        data = xgboost.DMatrix(np.asarray(x, np.float32), label=np.asarray(y))
        params = {"max_depth": 6, "eta": 0.2, "objective": "reg:squarederror"}
        self.booster = xgboost.train(params, data, self.rounds)

    def predict(self, x: np.ndarray) -> np.ndarray:
        import xgboost  # pyright: ignore[reportMissingImports]

        if self.booster is None:
            return np.zeros(len(x))
        return self.booster.predict(xgboost.DMatrix(np.asarray(x, np.float32)))


def default_model():
    """`XGBoostModel` when xgboost is installed, else `RidgeModel`."""
    try:
        return XGBoostModel()
    except ImportError:
        return RidgeModel()


def throughput_targets(costs: list[float]) -> np.ndarray:
    """Training targets: best cost / cost (0 where the cost is infinite)."""
    c = np.asarray(costs, np.float64)
    finite = np.isfinite(c)
    best = c[finite].min() if finite.any() else 1.0
    out = np.zeros(len(c))
    out[finite] = best / c[finite]
    return out
