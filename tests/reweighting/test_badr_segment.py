"""BADR's two-group outer search (issue 19: fewer lower-level solves than SLSQP): the
bracket search against closed-form minimisers, and the fit against SLSQP on the same
problem (same optimum, checked by the exact hypergradient, in no more oracle calls)."""

import jax
import numpy as np
import pytest

from fairest.reweighting import BADRClassifier, BADRRegressor, _oracle
from fairest.reweighting._defaults import ORACLE_TUNING
from fairest.reweighting._segment import SegmentPoint, hermite_minimiser, search_bracket


def _curve(t_star, width):
    """``Phi(t) = log cosh((t - t_star) / width)``: quadratic near its minimiser, linear
    away from it (the shape of a smoothed absolute disparity)."""

    def evaluate(t):
        z = (t - t_star) / width
        log_cosh = abs(z) + np.log1p(np.exp(-2 * abs(z))) - np.log(2.0)
        return SegmentPoint(t, float(log_cosh), float(np.tanh(z) / width))

    return evaluate


def test_hermite_minimiser_is_exact_for_a_cubic():
    def point(t):  # Phi = (t - 0.3)^2 (t + 1): local minimiser at 0.3
        return SegmentPoint(t, (t - 0.3) ** 2 * (t + 1), 2 * (t - 0.3) * (t + 1) + (t - 0.3) ** 2)

    assert hermite_minimiser(point(0.0), point(1.0)) == pytest.approx(0.3, abs=1e-12)


@pytest.mark.parametrize("t_star, width", [(0.3, 0.5), (0.0704, 0.01), (0.93, 1e-3)])
def test_search_bracket_finds_the_minimiser(t_star, width):
    evaluate = _curve(t_star, width)
    calls = []

    def counted(t):
        calls.append(t)
        return evaluate(t)

    lo, hi = evaluate(0.0), evaluate(1.0)
    point, n_iter, ok = search_bracket(counted, lo, hi, hi, max_iter=100, xtol=1e-9, ftol=0.0)
    assert ok and n_iter == len(calls) < 40
    assert point.t == pytest.approx(t_star, abs=1e-8)


def _data(n, seed, task):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 5))
    X[:, 0] += 0.5 * g
    s = X @ np.array([1.0, -0.5, 0.3, 0.2, 0.0]) + 0.4 * g + rng.normal(size=n)
    return X, ((s > 0).astype(int) if task == "classification" else s), g


def _slope_at(est, X, y, g, monkeypatch):
    """dPhi/dt of a fresh exact oracle at the estimator's weights (t = weight of group 0)."""
    oracles = []
    init = _oracle.ImplicitOracle.__init__

    def keep(orc, *args, **kwargs):
        init(orc, *args, **kwargs)
        oracles.append(orc)

    monkeypatch.setattr(_oracle.ImplicitOracle, "__init__", keep)
    type(est)(**est.get_params()).fit(X, y, sensitive_features=g)
    with jax.enable_x64(True):
        _, grad, _ = oracles[-1].evaluate(est.group_weights_)
    return grad[0] - grad[1]


@pytest.mark.parametrize(
    "Est, task, metric, seed",
    [
        (BADRRegressor, "regression", "group_loss_variance", 1),
        (BADRClassifier, "classification", "group_loss_variance", 1),
        (BADRClassifier, "classification", "demographic_parity_deviation", 0),
    ],
)
def test_two_groups_reach_the_slsqp_optimum_in_fewer_calls(
    Est, task, metric, seed, monkeypatch, oracle_tuning
):
    """The default (segment search) and SLSQP select the same model: weights within the
    outer tolerance, exact unfairness equal, the segment's point at least as low and
    stationary (interior) by the exact hypergradient; in no more oracle calls."""
    X, y, g = _data(400, seed, task)
    search = Est(metric=metric).fit(X, y, sensitive_features=g)
    with ORACLE_TUNING.override(segment_search=False):
        slsqp = Est(metric=metric).fit(X, y, sensitive_features=g)
    assert search.selected_ == slsqp.selected_
    np.testing.assert_allclose(search.group_weights_, slsqp.group_weights_, atol=1e-6)
    assert search.unfairness_exact_ == pytest.approx(slsqp.unfairness_exact_, abs=1e-10)
    assert search.unfairness_ <= slsqp.unfairness_ + 1e-12
    assert search.n_evaluations_ <= slsqp.n_evaluations_
    if search.selected_ == "slsqp":  # interior: the slope vanishes there
        assert abs(_slope_at(search, X, y, g, monkeypatch)) < 1e-6
