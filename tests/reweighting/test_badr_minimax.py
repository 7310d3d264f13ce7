"""Minimax and best-single-group baselines (badr spec 6.3, 6.4, 10.5)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from fairest.reweighting import GroupWeightedClassifier, GroupWeightedRegressor

PENALTY_SCALE = {"logistic": 0.5, "squared_hinge": 0.5, "squared_error": 1.0}


def _data(task, seed=0, n=300):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 0.5 * g
    signal = X @ np.array([1.0, -0.5, 0.3]) + np.array([0.0, 1.0, -0.5])[g]
    if task == "classification":
        return X, (signal + rng.normal(size=n) > 0).astype(int), g
    return X, signal + rng.normal(size=n) * (1 + g), g


def _regularised_group_losses(est, X, y, g):
    coef, intercept = np.ravel(est.coef_), float(np.ravel(est.intercept_)[0])
    s = X @ coef + intercept
    if isinstance(est, GroupWeightedRegressor):
        loss, pointwise = "squared_error", (s - y) ** 2
    elif est.loss == "logistic":
        loss, pointwise = "logistic", np.logaddexp(0, s) - y * s
    else:
        loss, pointwise = "squared_hinge", np.maximum(0, 1 - (2 * y - 1) * s) ** 2
    penalty = (
        PENALTY_SCALE[loss]
        * est.alpha
        * (coef @ coef + (intercept**2 if est.penalize_intercept else 0.0))
    )
    return np.array([pointwise[g == k].mean() for k in range(3)]) + penalty


CASES = [
    (GroupWeightedClassifier, {"loss": "logistic"}, "classification"),
    (
        GroupWeightedClassifier,
        {"loss": "squared_hinge", "penalize_intercept": True},
        "classification",
    ),
    (GroupWeightedRegressor, {}, "regression"),
]


@pytest.mark.parametrize("cls,params,task", CASES)
def test_minimax_oracles(cls, params, task):
    X, y, g = _data(task)
    est = cls(weights="minimax", alpha=0.1, minimax_solver="cvxpy", **params).fit(
        X, y, sensitive_features=g
    )
    mu = est.group_weights_
    assert np.all(mu >= 0) and np.isclose(mu.sum(), 1.0)
    losses = _regularised_group_losses(est, X, y, g)
    worst = losses.max()
    # the refit at mu is the minimax model: its worst loss is the epigraph optimum
    assert worst == pytest.approx(est.minimax_objective_, rel=1e-5)
    active = mu > 1e-6
    np.testing.assert_allclose(losses[active], worst, rtol=1e-5)
    assert np.all(losses[~active] <= worst + 1e-7)
    for weights in ("uniform", "balanced"):
        other = cls(weights=weights, alpha=0.1, **params).fit(X, y, sensitive_features=g)
        assert worst <= _regularised_group_losses(other, X, y, g).max() + 1e-8
    # the first-order dual path (large n) gives the same weights and value
    dual = cls(weights="minimax", alpha=0.1, minimax_solver="dual", **params).fit(
        X, y, sensitive_features=g
    )
    np.testing.assert_allclose(dual.group_weights_, mu, atol=1e-3)
    np.testing.assert_allclose(dual.coef_, est.coef_, atol=1e-4)
    assert dual.minimax_objective_ == pytest.approx(est.minimax_objective_, rel=1e-5)


@pytest.mark.parametrize(
    "cls,task,metric",
    [
        (GroupWeightedClassifier, "classification", "demographic_parity_deviation"),
        (GroupWeightedRegressor, "regression", "hsic_linear"),
    ],
)
def test_best_single_group(cls, task, metric):
    from fairest.reweighting import BADRClassifier, BADRRegressor

    X, y, g = _data(task, seed=1)
    est = cls(weights="best_single_group", metric=metric, alpha=0.1).fit(X, y, sensitive_features=g)
    values = est.single_group_unfairness_
    k = int(np.argmin(values))
    np.testing.assert_array_equal(est.group_weights_, np.eye(3)[k])
    # same numbers as BADR's safeguard evaluates for the vertices
    badr_cls = BADRClassifier if task == "classification" else BADRRegressor
    badr = badr_cls(metric=metric, alpha=0.1, max_iter=1, max_weight_ratio=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        badr.fit(X, y, sensitive_features=g)
    for j in range(3):
        assert badr.baseline_unfairness_[f"group_{j}"] == pytest.approx(values[j], rel=1e-8)
    assert badr.unfairness_ <= values.min() + 1e-12


def test_adaptive_weights_need_the_estimator():
    from fairest.reweighting._group_weights import resolve_group_weights

    with pytest.raises(ValueError, match="depends on the data"):
        resolve_group_weights("minimax", np.ones(2), np.array([0, 1]))


def test_auto_minimax_falls_back_to_the_dual_path_when_clarabel_fails(monkeypatch):
    from fairest.reweighting import _minimax

    def failing(*args, **kwargs):
        raise _minimax.MinimaxSolverError(
            "Minimax program not solved accurately: cvxpy status 'optimal_inaccurate'."
        )

    X, y, g = _data("classification")
    reference = GroupWeightedClassifier(weights="minimax", alpha=0.1, minimax_solver="dual").fit(
        X, y, sensitive_features=g
    )
    monkeypatch.setattr(_minimax, "minimax_cvxpy", failing)
    with pytest.warns(ConvergenceWarning, match="dual path"):
        auto = GroupWeightedClassifier(weights="minimax", alpha=0.1).fit(X, y, sensitive_features=g)
    np.testing.assert_allclose(auto.group_weights_, reference.group_weights_, atol=1e-12)
    with pytest.raises(_minimax.MinimaxSolverError):
        GroupWeightedClassifier(weights="minimax", alpha=0.1, minimax_solver="cvxpy").fit(
            X, y, sensitive_features=g
        )


def test_balanced_complement_weights():
    """(W - W_g) / ((G - 1) W): the balanced sampling of the BADR code's experiment 3."""
    from fairest.reweighting._group_weights import resolve_group_weights

    totals = np.array([10.0, 30.0, 60.0])
    labels = np.arange(3)
    complement = resolve_group_weights("balanced_complement", totals, labels)
    np.testing.assert_allclose(complement, [90 / 200, 70 / 200, 40 / 200])
    # two groups: the same as inverse-size balancing
    two = np.array([25.0, 75.0])
    np.testing.assert_allclose(
        resolve_group_weights("balanced_complement", two, labels[:2]),
        resolve_group_weights("balanced", two, labels[:2]),
    )
    X, y, g = _data("classification")
    est = GroupWeightedClassifier(weights="balanced_complement", alpha=0.1).fit(
        X, y, sensitive_features=g
    )
    sizes = np.bincount(np.unique(g, return_inverse=True)[1]).astype(float)
    np.testing.assert_allclose(est.group_weights_, (sizes.sum() - sizes) / (2 * sizes.sum()))
