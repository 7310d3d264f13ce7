"""Exact projection of the pairwise baselines (spec section 8.5): quadratic forms from
per-cell moments, projected Newton on the dual, agreement with cvxpy + Clarabel."""

import warnings

import numpy as np
import pytest
from _partial_helpers import make_data

from fairest.partial import (
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
    _qcqp,
)

CONSTRAINED = [
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
]


def _instance(seed, cls, n_groups, d, n=90):
    """Quadratic forms of ``cls``'s constraints on a small weighted random sample."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + rng.normal(size=d)
    groups = np.arange(n) % n_groups
    y01 = ((np.arange(n) // n_groups) % 2).astype(float)
    weights = rng.uniform(0.5, 2.0, n)
    forms = cls()._quadratic_forms(X, y01, groups, weights, n_groups)
    return forms, X, y01, groups, weights, rng


def _kkt_residuals(v, w, mu, forms, kappa):
    """Stationarity, primal feasibility and complementarity of a projection."""
    grads = np.einsum("kij,j->ki", forms.hessians, w) + forms.linear
    slack = _qcqp.constraint_values(forms, w) - kappa
    return np.abs(w - v + mu @ grads).max(), slack.max(), np.abs(mu * slack).max()


@pytest.mark.parametrize("cls", CONSTRAINED)
@pytest.mark.parametrize("n_groups", [2, 3])
def test_quadratic_forms_equal_weighted_pairwise_average(cls, n_groups):
    """1/2 w^T Q w + q^T w + c equals the weighted mean of (1 + s_i - s_j)^2 / 2 over the
    pairs of every term, minus the offset, enumerated by brute force."""
    forms, X, y01, groups, weights, rng = _instance(0, cls, n_groups, d=4, n=40)
    clf = cls()
    for _ in range(3):
        w = rng.normal(size=4)
        s = X @ w + rng.normal()  # the intercept cancels
        brute = []
        for terms in clf._sets(groups, y01, n_groups):
            total = 0.0
            for a, b in terms:
                pair_weights = weights[a][:, None] * weights[b][None, :]
                values = 0.5 * (1.0 + s[a][:, None] - s[b][None, :]) ** 2
                total += np.sum(pair_weights * values) / pair_weights.sum()
            brute.append(total - clf._offset)
        np.testing.assert_allclose(_qcqp.constraint_values(forms, w), brute, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", CONSTRAINED)
@pytest.mark.parametrize("n_groups", [2, 3])
def test_exact_projection_equals_clarabel(cls, n_groups):
    """On random instances with active constraints the exact projection satisfies the KKT
    conditions to 1e-9 and equals cvxpy + Clarabel (tolerance 1e-10, itself accurate to
    ~1e-6 in w) to 2e-5."""
    for seed in range(4):
        forms, *_, rng = _instance(seed, cls, n_groups, d=int(2 + seed))
        kappa = float(rng.choice([0.05, 0.3, 1.0]))
        v = 2.0 * rng.normal(size=forms.linear.shape[1])
        assert np.any(_qcqp.constraint_values(forms, v) > kappa)
        w, mu, _ = _qcqp.project(v, forms, kappa)
        stationarity, violation, complementarity = _kkt_residuals(v, w, mu, forms, kappa)
        assert stationarity <= 1e-9 and violation <= 1e-9 and complementarity <= 1e-9
        assert np.all(mu >= 0) and np.any(mu > 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Clarabel may call 1e-10 "inaccurate"
            reference = _qcqp.clarabel_projector(forms, kappa, 1e-10)(v)
        np.testing.assert_allclose(w, reference, atol=2e-5)
        assert np.sum((w - v) ** 2) <= np.sum((reference - v) ** 2) + 1e-8


def test_feasible_point_returned_unchanged():
    forms, *_, rng = _instance(1, GroupAUCConstrainedClassifier, 2, d=5)
    v = 1e-3 * rng.normal(size=5)  # w = 0 is strictly feasible for kappa > 0
    w, mu, n_iter = _qcqp.project(v, forms, 0.1)
    assert np.array_equal(w, v) and w is not v
    assert np.all(mu == 0) and n_iter == 0


def test_warm_start_gives_the_same_projection():
    forms, *_, rng = _instance(2, InterGroupPairwiseConstrainedClassifier, 2, d=4)
    v = 3.0 * rng.normal(size=4)
    cold, mu, _ = _qcqp.project(v, forms, 0.2)
    warm, mu_warm, n_iter = _qcqp.project(v, forms, 0.2, multipliers=mu * 1.01)
    np.testing.assert_allclose(warm, cold, atol=1e-10)
    np.testing.assert_allclose(mu_warm, mu, rtol=1e-8)
    assert n_iter <= 3


def test_empty_feasible_set_raises():
    forms, *_, rng = _instance(3, GroupAUCConstrainedClassifier, 2, d=3)
    with pytest.raises(RuntimeError, match="projection failed"):
        _qcqp.project(rng.normal(size=3), forms, -10.0)  # every g_k >= -1/2 q^T Q^+ q


@pytest.mark.parametrize("cls", CONSTRAINED)
def test_fitted_models_agree_across_projections(cls):
    """PGD with the exact projection and with cvxpy + Clarabel gives the same model, up to
    Clarabel's tolerance 1e-6 (about 1e-5 in w per projection, accumulated over 60 steps)."""
    X, y, g = make_data(150, 2, 0, shift=1.5)
    loose = cls(tolerance=100.0, max_iter=60, tol=0).fit(X, y, sensitive_features=g)
    kappa = 0.5 * max(loose.constraint_values(X, g, y).max(), 0.05)
    fits = [
        cls(tolerance=kappa, max_iter=60, tol=0, projection=projection).fit(
            X, y, sensitive_features=g
        )
        for projection in ("exact", "clarabel")
    ]
    np.testing.assert_allclose(fits[0].coef_, fits[1].coef_, atol=2e-4)
    np.testing.assert_allclose(fits[0].intercept_, fits[1].intercept_, atol=2e-4)
    assert abs(fits[0].objective_ - fits[1].objective_) <= 1e-6
    assert fits[0].constraint_values(X, g, y).max() <= kappa + 1e-9


def test_degenerate_tolerance_zero_with_three_groups():
    """tolerance=0 with more constraints (6) than features (2): F = {0} has no interior
    point and the dual no maximiser; the multipliers grow until w(mu) is feasible to
    1e-12 and the fitted coefficients are zero to rounding."""
    X, y, g = make_data(150, 2, 0, shift=1.5, n_groups=3)
    clf = GroupAUCConstrainedClassifier(tolerance=0.0, max_iter=5, tol=0).fit(
        X, y, sensitive_features=g
    )
    assert np.abs(clf.coef_).max() <= 1e-9


def test_failed_exact_projection_falls_back_to_clarabel(monkeypatch):
    X, y, g = make_data(150, 2, 0, shift=1.5)
    reference = GroupAUCConstrainedClassifier(0.05, max_iter=20, tol=0, projection="clarabel").fit(
        X, y, sensitive_features=g
    )

    def failing(*args, **kwargs):
        raise RuntimeError("projection failed")

    monkeypatch.setattr(_qcqp, "project", failing)
    clf = GroupAUCConstrainedClassifier(0.05, max_iter=20, tol=0).fit(X, y, sensitive_features=g)
    np.testing.assert_allclose(clf.coef_, reference.coef_, rtol=0, atol=1e-12)
