"""BADR's solver entry point ``solve_badr``, called without an estimator."""

from types import SimpleNamespace

import jax
import numpy as np
import pytest

from fairest._solvers._lbfgs import single_threaded_blas
from fairest.reweighting import BADRClassifier, BADRRegressor
from fairest.reweighting import _defaults as defaults
from fairest.reweighting._common import baseline_weights, build_metric_spec, make_problem
from fairest.reweighting._solve import BADRSettings, solve_badr


def _data(task, n=240, seed=0, num_groups=3):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, num_groups, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 0.3 * g
    signal = X @ np.array([1.0, -0.5, 0.3]) + np.array([0.0, 1.0, -0.5])[g]
    if task == "classification":
        return X, (signal + rng.normal(size=n) > 0).astype(np.float64), g
    return X, signal + rng.normal(size=n), g


def _solve(X, y, g, loss, metric, settings, alpha=defaults.ALPHA):
    task = "regression" if loss == "squared_error" else "classification"
    spec, temperature = build_metric_spec(metric, None, task, loss, X.shape[0])
    data = SimpleNamespace(X=X, groups=g, sample_weight=np.ones(X.shape[0]))
    with jax.enable_x64(True), single_threaded_blas():  # as the estimator's fit
        problem = make_problem(
            data, y, alpha, False, temperature, defaults.NEWTON_TOL, defaults.INNER_MAX_ITER
        )
        return solve_badr(loss, spec, problem, g, int(g.max()) + 1, settings)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=50
@pytest.mark.parametrize(
    "task, solver, metric, safeguard",
    [
        ("classification", "slsqp", "demographic_parity_deviation", False),
        ("classification", "sgd", "individual_fairness", True),
        ("regression", "frank-wolfe", "group_loss_variance", True),
    ],
)
def test_solve_badr_is_what_the_estimator_fits(task, solver, metric, safeguard):
    X, y, g = _data(task)
    settings = BADRSettings(
        solver=solver, max_iter=50, check_every=10, safeguard=safeguard, random_state=0
    )
    result = _solve(
        X, y, g, "squared_error" if task == "regression" else "logistic", metric, settings
    )
    params = dict(settings._asdict(), metric=metric)
    est = (BADRClassifier if task == "classification" else BADRRegressor)(**params)
    est.fit(X, y, sensitive_features=g)
    np.testing.assert_array_equal(result.group_weights, est.group_weights_)
    np.testing.assert_array_equal(result.theta[1:], np.ravel(est.coef_))
    np.testing.assert_array_equal(result.theta[0], np.ravel(est.intercept_)[0])
    assert result.unfairness == est.unfairness_
    assert result.unfairness_exact == est.unfairness_exact_
    assert (result.n_iter, result.n_evaluations) == (est.n_iter_, est.n_evaluations_)
    assert result.selected == est.selected_
    assert result.converged == est.converged_
    assert result.baseline_unfairness == est.baseline_unfairness_
    np.testing.assert_array_equal(result.group_losses, est.group_losses_)


def test_safeguard_returns_a_baseline_that_beats_the_solver():
    """One badr-gd iteration barely leaves uniform weights; the best one-group vertex is
    fairer, and the safeguard returns it, with its own model and unfairness."""
    X, y, g = _data("classification", seed=1)
    plain = _solve(
        X,
        y,
        g,
        "logistic",
        "individual_fairness",
        BADRSettings(solver="gd", max_iter=1, safeguard=False),
    )
    assert plain.selected == "gd" and plain.baseline_unfairness == {}
    guarded = _solve(
        X, y, g, "logistic", "individual_fairness", BADRSettings(solver="gd", max_iter=1)
    )
    best = min(guarded.baseline_unfairness, key=guarded.baseline_unfairness.get)
    assert guarded.baseline_unfairness[best] < plain.unfairness
    assert guarded.selected == best != "gd"
    assert guarded.unfairness == guarded.baseline_unfairness[best]
    totals = np.bincount(g).astype(float)
    np.testing.assert_array_equal(guarded.group_weights, baseline_weights(totals)[best])


@pytest.mark.filterwarnings("ignore:sensitive_features holds a single group")
def test_one_group_is_the_plain_model():
    X, y, _ = _data("regression")
    g = np.zeros(X.shape[0], dtype=np.int64)
    result = _solve(X, y, g, "squared_error", "individual_fairness", BADRSettings())
    est = BADRRegressor().fit(X, y, sensitive_features=g)
    assert result.selected == "one group" and result.unfairness == 0.0
    np.testing.assert_array_equal(result.group_weights, [1.0])
    np.testing.assert_array_equal(result.theta[1:], est.coef_)
