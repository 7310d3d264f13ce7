"""Baselines of the paper: penalty method (114)/(119) and the pairwise constrained
models (102), (105), (107) (spec oracle 19)."""

import numpy as np
import pytest
from _partial_helpers import PDP, PSP, make_data

from fairest.metrics import partial_demographic_parity, partial_statistical_parity
from fairest.partial import (
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
    PartialParityPenaltyClassifier,
    pairwise_quadratic_mean,
)

CONSTRAINED = [
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
]


def test_closed_form_pairwise_mean_equals_brute_force():
    """Oracle 19: (1/2)((1 + mean a - mean b)^2 + Var a + Var b) = mean over all pairs."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.normal(size=rng.integers(1, 40)), 2 * rng.normal(size=rng.integers(1, 40))
        brute = np.mean(0.5 * (1 + a[:, None] - b[None, :]) ** 2)
        assert abs(pairwise_quadratic_mean(a, b) - brute) < 1e-10
        wa, wb = rng.integers(1, 4, a.size), rng.integers(1, 4, b.size)
        brute_w = np.mean(0.5 * (1 + np.repeat(a, wa)[:, None] - np.repeat(b, wb)[None, :]) ** 2)
        assert abs(pairwise_quadratic_mean(a, b, wa, wb) - brute_w) < 1e-10


@pytest.mark.parametrize("cls", CONSTRAINED)
def test_zero_model_feasible_and_projection_satisfies_constraints(cls):
    """Oracle 19: w = 0 is feasible for every kappa >= 0 and the PGD output (after each
    projection) satisfies the constraints to 1e-6, checked by brute force over pairs."""
    X, y, g = make_data(150, 2, 0, shift=1.5)
    zero = cls(tolerance=0.0, max_iter=1, tol=0).fit(X, y, sensitive_features=g)
    zero.coef_, zero.intercept_ = np.zeros((1, 2)), np.array([0.3])
    assert np.all(zero.constraint_values(X, g, y) <= 1e-12)
    unconstrained = cls(tolerance=100.0, max_iter=200, tol=0).fit(X, y, sensitive_features=g)
    loose = unconstrained.constraint_values(X, g, y).max()
    kappa = 0.5 * loose if loose > 0 else 0.1 * abs(loose)
    clf = cls(tolerance=kappa, max_iter=200, tol=0).fit(X, y, sensitive_features=g)
    assert clf.constraint_values(X, g, y).max() <= kappa + 1e-6
    assert clf.objective_ >= unconstrained.objective_ - 1e-9


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_penalty_reduces_partial_unfairness(metric):
    X, y, g = make_data(400, 3, 0)
    interval = (0.0, 0.5)
    measure = partial_statistical_parity if metric == PSP else (partial_demographic_parity)
    values, losses = [], []
    for weight in (0.0, 2.0):
        clf = PartialParityPenaltyClassifier(
            metric, interval=interval, fairness_weight=weight, learning_rate=0.5, max_iter=3000
        )
        clf.fit(X, y, sensitive_features=g)
        values.append(
            measure(None, clf.decision_function(X), sensitive_features=g, interval=interval)
        )
        losses.append(clf.objective_)
    assert values[1] < values[0] - 0.1
    assert losses[1] > losses[0]


def test_penalty_stops_on_convergence_near_the_full_run():
    """``tol``: the run stops at the end of a 1,000-step window whose best penalised
    objective barely improved on the previous one's; its model is the one of the run cut
    at that step (same iterates), and its penalised objective is at most 1e-3 (relative)
    above the one after all ``max_iter`` steps (the last iterates of a constant-step
    subgradient method oscillate: here the stopped one is lower). ``tol=0`` runs every
    step, as the paper does."""
    X, y, g = make_data(400, 3, 0)
    common = dict(interval=(0.0, 0.5), fairness_weight=0.5, learning_rate=0.5, solver="subgradient")

    def total(model):
        return model.objective_ + model.fairness_weight * model.penalty_

    full = PartialParityPenaltyClassifier(max_iter=20_000, tol=0, **common)
    full.fit(X, y, sensitive_features=g)
    assert full.n_iter_ == 20_000
    stopped = PartialParityPenaltyClassifier(max_iter=20_000, tol=1e-4, **common)
    stopped.fit(X, y, sensitive_features=g)
    assert 2_000 <= stopped.n_iter_ < 20_000 and stopped.n_iter_ % 1_000 == 0
    cut = PartialParityPenaltyClassifier(max_iter=stopped.n_iter_, tol=0, **common)
    cut.fit(X, y, sensitive_features=g)
    np.testing.assert_array_equal(stopped.coef_, cut.coef_)
    assert total(stopped) <= total(full) * (1.0 + 1e-3)


# ------------------------------------------------------------------------------------
# solver="lbfgs": the smoothed continuation
# ------------------------------------------------------------------------------------


def _numpy_penalised(model, X, y, g, w=None):
    """(f_0, penalty) of (114) / (119) at the fitted model, by brute force in numpy: the
    independent oracle of the estimator's ``objective_`` and ``penalty_``."""
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    s = model.decision_function(X)
    y01 = (y == model.classes_[1]).astype(float)
    loss = np.sum(w * (np.logaddexp(0.0, s) - y01 * s)) / w.sum()
    loss += 0.5 * model.alpha * np.sum(model.coef_**2)
    lo, hi = model.interval
    ramp = lambda z: np.clip(z + 0.5, 0.0, 1.0)  # noqa: E731
    groups = np.unique(g)
    if model.metric == PSP:
        gaps = [
            abs(np.average(ramp(s[g == k] - t), weights=w[g == k]) - p)
            for k in groups
            for t, p in zip(model.thresholds_, model.grid_, strict=True)
        ]
        return loss, 2.0 / (hi - lo) * max(gaps)
    S = np.array([np.average(ramp(s[g == k] - model.threshold), weights=w[g == k]) for k in groups])
    T = np.minimum(S, hi) - np.minimum(S, lo)
    return loss, np.max(np.abs(T[:, None] - T[None, :])) / (hi - lo)


@pytest.mark.parametrize("metric", [PSP, PDP])
@pytest.mark.parametrize("weighted", [False, True])
def test_lbfgs_reports_the_exact_objective_and_beats_the_subgradient_run(metric, weighted):
    """The default solver's ``objective_`` / ``penalty_`` are the exact (114) / (119) at
    the returned model (numpy oracle, float64: 1e-9), and its exact penalised objective
    is no higher than the paper's subgradient run's after 20,000 steps, nor than the
    start ``w = 0``'s, on three groups with sample weights."""
    X, y, g = make_data(600, 3, 1, n_groups=3)
    w = np.random.default_rng(2).integers(1, 4, len(y)).astype(float) if weighted else None
    common = dict(interval=(0.0, 0.5), fairness_weight=1.0)
    fitted = {
        solver: PartialParityPenaltyClassifier(
            metric, solver=solver, learning_rate=0.5, max_iter=20_000, **common
        ).fit(X, y, sensitive_features=g, sample_weight=w)
        for solver in ("lbfgs", "subgradient")
    }
    total = {}
    for solver, model in fitted.items():
        loss, penalty = _numpy_penalised(model, X, y, g, w)
        if solver == "lbfgs":
            assert model.objective_ == pytest.approx(loss, rel=1e-9)
            assert model.penalty_ == pytest.approx(penalty, rel=1e-9, abs=1e-12)
        total[solver] = loss + common["fairness_weight"] * penalty
    start = PartialParityPenaltyClassifier(metric, **common).fit(
        X, y, sensitive_features=g, sample_weight=w
    )
    start.coef_[:] = 0.0
    start.intercept_[:] = 0.0
    start.thresholds_ = 0.5 - start.grid_
    loss0, penalty0 = _numpy_penalised(start, X, y, g, w)
    assert total["lbfgs"] <= total["subgradient"] + 1e-6
    assert total["lbfgs"] <= loss0 + common["fairness_weight"] * penalty0
    assert fitted["lbfgs"].n_iter_ < 3_000


def test_lbfgs_without_penalty_is_logistic_regression():
    """``fairness_weight=0``: the L2-regularised logistic regression of scikit-learn
    (``C = 1 / (n alpha)``), to the float32 solve's accuracy."""
    from sklearn.linear_model import LogisticRegression

    X, y, g = make_data(800, 4, 3)
    alpha = 1e-2
    model = PartialParityPenaltyClassifier(fairness_weight=0.0, alpha=alpha).fit(
        X, y, sensitive_features=g
    )
    reference = LogisticRegression(C=1.0 / (len(y) * alpha), tol=1e-10, max_iter=1000)
    reference.fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=2e-3)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=2e-3)


def test_lbfgs_integer_weights_equal_repeated_rows():
    """Integer sample weights are repetitions in the objective: the weighted fit's exact
    ``objective_`` / ``penalty_`` are (114) on the repeated rows without weights (numpy
    oracle, 1e-9). The objective is not convex, and the float32 L-BFGS paths on the two
    data may stop at different stationary points, so the fits are compared by their
    values only (within 2 %)."""
    X, y, g = make_data(300, 3, 4, n_groups=3)
    w = np.random.default_rng(5).integers(1, 4, len(y))
    rows = np.repeat(np.arange(len(y)), w)
    params = dict(interval=(0.0, 0.5), fairness_weight=1.0)
    weighted = PartialParityPenaltyClassifier(**params).fit(
        X, y, sensitive_features=g, sample_weight=w
    )
    loss, penalty = _numpy_penalised(weighted, X[rows], y[rows], g[rows])
    assert weighted.objective_ == pytest.approx(loss, rel=1e-9)
    assert weighted.penalty_ == pytest.approx(penalty, rel=1e-9)
    repeated = PartialParityPenaltyClassifier(**params).fit(
        X[rows], y[rows], sensitive_features=g[rows]
    )
    total = lambda m: m.objective_ + m.fairness_weight * m.penalty_  # noqa: E731
    assert total(weighted) == pytest.approx(total(repeated), rel=2e-2)
