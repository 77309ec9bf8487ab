"""Cost models: predict how fast a candidate is from its loop-IR features.

The model is trained on the measured candidates of a task, the target being
the throughput relative to the best one seen (best cost / cost, in (0, 1];
0 for a candidate that computed a wrong result or crashed), and ranks the
unmeasured ones; only the order matters. `default_model` gives
`LightGBMModel` (gradient-boosted trees as Ansor and TVM use, the `tune`
extra) when lightgbm imports, else `RidgeModel`, a ridge regression in numpy
over the standardized features and their squares, which ranks the obvious
knobs (vectorized, parallel, reuse) and needs no dependency.
"""

from __future__ import annotations

import numpy as np

from ember.runtime.errors import EmberValueError

LEVELS = 16
"""Relevance levels of the lambdarank objective (LightGBM's default gains
reach 31)."""


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


class LightGBMModel:
    """Gradient-boosted trees by LightGBM (the `tune` extra), boosted from a
    `RidgeModel` fit, sized for the tens of measurements a search has.

    Trees alone cannot score a candidate above the best one measured (a leaf
    holds an average of measured targets): fitted on a first batch of slow
    candidates they kept the search among those, and ranked unseen ones
    worse than ridge (docs/architecture.md, "The cost model"). So the ridge
    fit is the trees' starting score (LightGBM's `init_score`), and few,
    small trees (7 leaves of at least 5 samples, 30 rounds) learn what it
    misses. Deterministic: seeded, one thread.

    Args:
        objective: "regression" (squared error on the throughput) or
            "lambdarank" (the order only: the throughput in 16 relevance
            levels, all candidates one query).
        ridge: boost from a ridge fit (False: from zero, trees alone).
        rounds: boosting rounds.
        seed: of the trees' sampling.
    """

    def __init__(
        self,
        objective: str = "regression",
        ridge: bool = True,
        rounds: int = 30,
        seed: int = 0,
    ):
        _require("lightgbm")
        if objective not in ("regression", "lambdarank"):
            raise EmberValueError(
                "LightGBMModel: expected objective 'regression' or 'lambdarank', "
                f"got {objective!r}"
            )
        self.objective, self.rounds = objective, rounds
        self.ridge = RidgeModel() if ridge else None
        self.params = {
            "objective": objective,
            "learning_rate": 0.1,
            "num_leaves": 7,
            "min_data_in_leaf": 5,
            "min_data_in_bin": 1,
            "num_threads": 1,
            "seed": seed,
            "deterministic": True,
            "force_col_wise": True,
            "verbose": -1,
        }
        self.booster = None

    def _base(self, x: np.ndarray) -> np.ndarray:
        return np.zeros(len(x)) if self.ridge is None else self.ridge.predict(x)

    def fit(self, x: np.ndarray, y: np.ndarray) -> None:
        import lightgbm

        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if self.ridge is not None:
            self.ridge.fit(x, y)
        label = y
        if self.objective == "lambdarank":
            label = np.rint(np.clip(y, 0.0, 1.0) * (LEVELS - 1))
        data = lightgbm.Dataset(
            x,
            label=label,
            init_score=self._base(x),
            params={"min_data_in_bin": 1, "verbose": -1},
        )
        if self.objective == "lambdarank":
            data.set_group([len(x)])
        self.booster = lightgbm.train(self.params, data, num_boost_round=self.rounds)

    def predict(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float64)
        if self.booster is None:
            return np.zeros(len(x))
        trees = np.asarray(self.booster.predict(x), np.float64)
        return self._base(x) + trees


def _require(module: str) -> None:
    """Import `module` or raise an ImportError naming how to install it."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"ember.tune's cost model needs {module}: pip install 'ember[tune]'"
        ) from e


def default_model():
    """`LightGBMModel` when lightgbm imports, else `RidgeModel`."""
    try:
        return LightGBMModel()
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
