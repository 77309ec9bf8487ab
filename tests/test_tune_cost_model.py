"""ember.tune's cost models: each one fitted on synthetic data ranks it, the
fallback (LightGBM, else ridge in numpy), and, marked
slow, the proof that the model pays: on a fixed task and trial budget the
evolutionary search reaches 95% of the best time found in fewer measured
trials than random search (benchmarks/tuning_cost_model.py, more seeds)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from ember.runtime.errors import EmberValueError
from ember.tune.cost_model import (
    LightGBMModel,
    RidgeModel,
    default_model,
    throughput_targets,
)
from ember.tune.features import NAMES
from ember.tune.measure import LocalBuilder, LocalRunner
from ember.tune.search import tune

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _synthetic(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Throughput-like targets in (0, 1) of two of six features."""
    x = rng.normal(size=(n, 6))
    return x, 1 / (1 + np.exp(-(2 * x[:, 0] - x[:, 1])))


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(
        np.corrcoef(np.argsort(np.argsort(a)), np.argsort(np.argsort(b)))[0, 1]
    )


def _lightgbm(objective: str, ridge: bool = True):
    pytest.importorskip("lightgbm")
    return LightGBMModel(objective, ridge=ridge)


@pytest.mark.parametrize(
    "make",
    [
        RidgeModel,
        lambda: _lightgbm("regression"),
        lambda: _lightgbm("lambdarank"),
        lambda: _lightgbm("regression", ridge=False),
    ],
    ids=["ridge", "lightgbm", "lightgbm-lambdarank", "lightgbm-trees-alone"],
)
def test_a_model_fitted_on_tens_of_samples_ranks_unseen_ones(make):
    rng = np.random.default_rng(0)
    x, y = _synthetic(48, rng)
    unseen, truth = _synthetic(200, rng)
    model = make()
    assert list(model.predict(unseen[:3])) == [0, 0, 0]  # not fitted: no order
    model.fit(x, y)
    predicted = model.predict(unseen)
    assert predicted.shape == (200,)
    assert _spearman(predicted, truth) > 0.85
    top = np.argsort(-predicted)[:10]
    assert truth[top].min() > np.quantile(truth, 0.75)  # its top ten are good
    again = make()
    again.fit(x, y)
    np.testing.assert_array_equal(again.predict(unseen), predicted)  # deterministic


def test_lightgbm_from_its_ridge_fit_scores_past_the_best_measured():
    """Trees alone give every candidate beyond the measured ones the score
    of the best leaf; boosted from the ridge fit, the better one ranks higher."""
    pytest.importorskip("lightgbm")
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 0, size=(32, 4))
    y = 0.5 + 0.4 * x[:, 0]  # faster as feature 0 grows, all measured <= 0
    beyond = np.zeros((2, 4))
    beyond[:, 0] = [0.5, 1.0]
    model = LightGBMModel()
    model.fit(x, y)
    low, high = model.predict(beyond)
    assert high > low > y.max()
    trees = LightGBMModel(ridge=False)
    trees.fit(x, y)
    low, high = trees.predict(beyond)
    assert high == low


def test_lambdarank_ranks_failures_last():
    pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    x, y = _synthetic(40, rng)
    y[x[:, 2] > 0.5] = 0.0  # crashed or wrong: throughput 0
    model = LightGBMModel("lambdarank")
    model.fit(x, y)
    predicted = model.predict(x)
    assert predicted[y == 0].mean() < predicted[y > 0].mean()


def test_an_unknown_objective_is_refused():
    pytest.importorskip("lightgbm")
    with pytest.raises(EmberValueError, match="expected objective"):
        LightGBMModel("poisson")


def test_the_default_model_falls_back_from_lightgbm_to_ridge(monkeypatch):
    pytest.importorskip("lightgbm")
    assert isinstance(default_model(), LightGBMModel)
    monkeypatch.setitem(sys.modules, "lightgbm", None)  # import fails
    assert isinstance(default_model(), RidgeModel)
    with pytest.raises(ImportError, match=r"lightgbm: pip install 'ember\[tune\]'"):
        LightGBMModel()


def test_throughput_targets():
    assert list(throughput_targets([2.0, 1.0, float("inf")])) == [0.5, 1.0, 0.0]
    assert list(throughput_targets([float("inf")])) == [0.0]


class _Recording(RidgeModel):
    def __init__(self):
        super().__init__()
        self.fitted: list[int] = []

    def fit(self, x, y):
        assert x.shape[1] == len(NAMES) and len(y) == len(x)
        self.fitted.append(len(x))
        super().fit(x, y)


def test_the_search_retrains_the_model_it_is_given_as_measurements_arrive():
    from ember import te

    A = te.placeholder((16, 8), name="A")
    B = te.placeholder((8, 32), name="B")
    r = te.reduce_axis((0, 8), name="k")
    C = te.compute((16, 32), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    model = _Recording()
    tune(
        [A, B, C],
        trials=12,
        batch=4,
        population=8,
        generations=1,
        cost_model=model,
        builder=LocalBuilder(workers=2),
        runner=LocalRunner(timeout_s=5),
    )
    assert model.fitted == [4, 8]  # before the second and third batches


def _benchmark():
    path = BENCH / "tuning_cost_model.py"
    spec = importlib.util.spec_from_file_location("bench_tuning_cost_model", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_cost_model_pays(capsys):
    """Two seeds of the benchmark (about a minute each on 2 vCPUs); the table
    and the ratio go to the log whether the test passes or not."""
    pytest.importorskip("lightgbm")
    bench = _benchmark()
    rows = bench.compare(seeds=(0, 1), trials=bench.TRIALS)
    with capsys.disabled():
        print(f"\n{bench.table(rows)}")
    model = sum(r.model_trials for r in rows)
    random = sum(r.random_trials for r in rows)
    assert model < random, bench.table(rows)
