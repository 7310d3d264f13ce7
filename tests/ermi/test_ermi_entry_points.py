"""ERMI's solver entry points and privacy calibration, called without an estimator."""

import math

import numpy as np
import pytest
from sklearn.utils import check_random_state

from fairest.ermi import ERMIClassifier
from fairest.ermi._dp import calibrate_privacy, dp_fermi_noise
from fairest.ermi._solvers import run_full_batch, run_sgda, sgda_iterations
from fairest.ermi._strata import strata_constants


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + s[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, s


def _problem(X, y, s):
    t = np.zeros(X.shape[0], np.int32)
    weight = np.ones(X.shape[0])
    strata, _, rho = strata_constants(t, s, weight, 1, 2, "label_prior")
    return (X, y, s, t, weight, strata), rho


@pytest.mark.parametrize(
    "params",
    [
        dict(lipschitz_constant="auto"),
        dict(privacy_unit="all", accounting="joint", dp_delta=1e-6),
        dict(clip_mode="batch", noise_scaling="paper_text", min_group_fraction=0.3),
    ],
)
def test_calibrate_privacy_is_what_the_estimator_uses(params):
    # the closed-form calibration (no longer the default) with its paper constants
    params = {"accounting": "paper", "dual_radius": 5.0, "clip_norm": 5.0, **params}
    X, y, s = _data()
    n = X.shape[0]
    est = ERMIClassifier(
        fairness_weight=1.5, dp_epsilon=1.0, n_epochs=2, batch_size=64, random_state=0, **params
    ).fit(X, y, sensitive_features=s)
    m, n_iter = sgda_iterations(n, 64, 2)
    assert (m, n_iter) == (64, est.n_iter_)
    rho = (np.bincount(s).min() - 1) / n  # the data's own minority fraction
    options = {k: v for k, v in params.items() if k not in ("dp_delta", "lipschitz_constant")}
    calibration = calibrate_privacy(
        X,
        m,
        n_iter,
        epsilon=1.0,
        delta=params.get("dp_delta"),
        data_min_group_fraction=rho,
        fairness_weight=1.5,
        lipschitz_constant=params.get("lipschitz_constant", 5.0),
        **options,
    )
    assert calibration.sigma_theta == est.sigma_theta_ > 0
    assert calibration.sigma_w == est.sigma_w_ > 0
    assert calibration.epsilon_spent == est.epsilon_spent_ == 1.0
    assert calibration.delta == est.delta_ == params.get("dp_delta", 1 / n**2)
    assert calibration.min_group_fraction == est.min_group_fraction_
    np.testing.assert_array_equal(calibration.noise_multipliers, est.noise_multipliers_)
    if params.get("lipschitz_constant") == "auto":  # c max ||(1, x_i)||, c = 1/4 binary
        lipschitz = 0.25 * np.sqrt(1 + np.max(np.sum(X * X, axis=1)))
        assert calibration.lipschitz_constant == pytest.approx(lipschitz, rel=1e-15)
        raw = dp_fermi_noise(n, m, n_iter, 1.0, 1 / n**2, rho, lipschitz=lipschitz)
        assert calibration.sigma_theta == pytest.approx(1.5 * raw[0], rel=1e-14)


def test_calibrate_privacy_non_private_and_invalid():
    X, _, s = _data()
    plain = calibrate_privacy(X, 64, 14, epsilon=None, data_min_group_fraction=0.4)
    assert (plain.delta, plain.sigma_theta, plain.sigma_w) == (None, 0.0, 0.0)
    assert plain.epsilon_spent == math.inf and plain.clip_sample == math.inf
    with pytest.raises(ValueError, match="exceeds the data's own"):
        calibrate_privacy(
            X, 64, 14, epsilon=1.0, data_min_group_fraction=0.2, min_group_fraction=0.3
        )
    with pytest.raises(ValueError, match="needs clip_mode='per_sample'"):
        calibrate_privacy(
            X,
            64,
            14,
            epsilon=1.0,
            data_min_group_fraction=0.4,
            privacy_unit="all",
            clip_mode="none",
        )


def test_run_full_batch_and_run_sgda_are_what_the_estimator_fits():
    X, y, s = _data()
    problem, rho = _problem(X, y, s)
    est = ERMIClassifier(fairness_weight=2.0).fit(X, y, sensitive_features=s)
    result = run_full_batch(*problem, n_classes=2, fairness_weight=2.0)
    assert result.converged and result.history is None
    np.testing.assert_array_equal(result.theta[0], est.intercept_)
    np.testing.assert_array_equal(result.theta[1:].T, est.coef_)
    np.testing.assert_array_equal(result.W[0], est.W_)
    assert (result.n_iter, result.objective) == (est.n_iter_, est.objective_)

    params = dict(
        n_epochs=3, batch_size=64, dual_init="normal", record_history=True, dual_radius=5.0
    )
    est = ERMIClassifier(  # the closed-form calibration (no longer the default)
        dp_epsilon=2.0, random_state=3, accounting="paper", clip_norm=5.0, **params
    ).fit(X, y, sensitive_features=s)
    m, n_iter = sgda_iterations(X.shape[0], 64, 3)
    privacy = calibrate_privacy(
        X, m, n_iter, epsilon=2.0, data_min_group_fraction=rho, fairness_weight=1.0
    )
    result = run_sgda(
        *problem,
        n_classes=2,
        fairness_weight=1.0,
        seed=int(check_random_state(3).randint(2**31)),
        clip_sample=privacy.clip_sample,
        clip_batch=privacy.clip_batch,
        sigma_theta=privacy.sigma_theta,
        sigma_w=privacy.sigma_w,
        **params,
    )
    np.testing.assert_array_equal(result.theta[0], est.intercept_)
    np.testing.assert_array_equal(result.theta[1:].T, est.coef_)
    np.testing.assert_array_equal(result.W[0], est.W_)
    assert result.n_iter == est.n_iter_ == n_iter and np.isnan(result.objective)
    assert result.history.keys() == est.history_.keys()
    for key, values in result.history.items():
        np.testing.assert_array_equal(values, est.history_[key])
