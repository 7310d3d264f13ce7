"""BADR estimators: scikit-learn compatibility, routing, lower-level references (spec 10.2-10.4)."""

import logging
import pickle
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from fairest.reweighting import BADRClassifier, BADRRegressor

# parametrize_with_checks runs for BADR in tests/estimators/test_common.py (discovered).


def _data(task="classification", n=300, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 0.3 * g
    signal = X @ np.array([1.0, -0.5, 0.3]) + np.array([0.0, 1.0, -0.5])[g]
    if task == "classification":
        return X, (signal + rng.normal(size=n) > 0).astype(int), g
    return X, signal + rng.normal(size=n), g


def test_lower_level_matches_sklearn():
    """Weighted refits equal scikit-learn at c_i = lambda_g / n_g (spec 10.2)."""
    from fairest.reweighting import GroupWeightedClassifier, GroupWeightedRegressor

    X, y, g = _data()
    lam = np.array([0.2, 0.5, 0.3])
    c = lam[g] / np.bincount(g)[g]
    alpha = 0.05
    ours = GroupWeightedClassifier(weights=lam, alpha=alpha).fit(X, y, sensitive_features=g)
    ref = LogisticRegression(C=1 / alpha, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=c)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    svm = GroupWeightedClassifier(
        "squared_hinge", weights=lam, alpha=alpha, penalize_intercept=True
    )
    svm.fit(X, y, sensitive_features=g)
    ref = LinearSVC(C=1 / alpha, dual=False, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=c)
    np.testing.assert_allclose(svm.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(svm.intercept_, ref.intercept_, atol=1e-6)
    Xr, yr, gr = _data("regression")
    c = lam[gr] / np.bincount(gr)[gr]
    ridge = GroupWeightedRegressor(weights=lam, alpha=alpha).fit(Xr, yr, sensitive_features=gr)
    ref = Ridge(alpha=alpha).fit(Xr, yr, sample_weight=c)
    np.testing.assert_allclose(ridge.coef_, ref.coef_, atol=1e-8)


def test_badr_model_is_the_weighted_refit_and_pareto_efficient():
    from fairest.reweighting import GroupWeightedClassifier

    X, y, g = _data()
    est = BADRClassifier(metric="demographic_parity_deviation", alpha=0.05).fit(
        X, y, sensitive_features=g
    )
    refit = GroupWeightedClassifier(weights=est.group_weights_, alpha=0.05).fit(
        X, y, sensitive_features=g
    )
    np.testing.assert_allclose(est.coef_, refit.coef_, atol=1e-8)

    # Pareto efficiency (spec 10.4): no model from a pool beats it on every group loss
    def losses(coef, b):
        s = X @ coef + b
        pointwise = np.logaddexp(0, s) - y * s
        return np.array([pointwise[g == k].mean() for k in range(3)]) + 0.025 * coef @ coef

    mine = losses(est.coef_[0], est.intercept_[0])
    rng = np.random.default_rng(0)
    pool = [
        GroupWeightedClassifier(weights=rng.dirichlet(np.ones(3)), alpha=0.05).fit(
            X, y, sensitive_features=g
        )
        for _ in range(5)
    ]
    candidates = [(m.coef_[0], m.intercept_[0]) for m in pool]
    candidates += [
        (est.coef_[0] + 1e-3 * rng.normal(size=3), est.intercept_[0] + 1e-3 * rng.normal())
        for _ in range(20)
    ]
    for coef, b in candidates:
        other = losses(coef, b)
        assert not (np.all(other <= mine) and np.any(other < mine))


def test_fitted_attributes_and_pickle():
    X, y, g = _data()
    est = BADRClassifier(metric="equal_opportunity_range", record_history=True).fit(
        X, y, sensitive_features=g
    )
    assert est.group_weights_.shape == (3,) and np.isclose(est.group_weights_.sum(), 1.0)
    assert est.group_losses_.shape == (3,)
    np.testing.assert_array_equal(est.groups_, [0, 1, 2])
    assert 0.0 <= est.unfairness_exact_ <= 1.0
    assert est.n_iter_ >= 1 and est.n_evaluations_ >= 1
    assert set(est.history_) == {"unfairness", "group_weights"}
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.predict_proba(X), est.predict_proba(X))
    np.testing.assert_array_equal(clone.decision_function(X), est.decision_function(X))


def test_verbose_logs_a_summary_and_history_is_numpy(caplog):
    X, y, g = _data("regression")
    with caplog.at_level(logging.INFO, logger="fairest"):
        BADRRegressor(metric="group_loss_variance").fit(X, y, sensitive_features=g)
    assert not caplog.records
    with caplog.at_level(logging.INFO, logger="fairest"):
        est = BADRRegressor(
            metric="group_loss_variance", solver="gd", max_iter=50, verbose=1, record_history=True
        ).fit(X, y, sensitive_features=g)
    lines = [r.getMessage() for r in caplog.records if r.name == "fairest.reweighting._badr"]
    assert len(lines) == 1 and lines[0].startswith("[BADRRegressor] BADR gd:")
    assert all(isinstance(v, np.ndarray) for v in est.history_.values())
    assert est.history_["unfairness"].shape == (2,)


def test_string_groups_and_callable_metric():
    import jax
    import jax.numpy as jnp

    X, y, g = _data("regression")
    labels = np.array(["a", "b", "c"])[g]

    def mean_gap(s, y_, groups):
        sums = jax.ops.segment_sum(s, groups, num_segments=3)
        counts = jax.ops.segment_sum(jnp.ones_like(s), groups, num_segments=3)
        means = sums / counts
        return jnp.max(means) - jnp.min(means)

    est = BADRRegressor(metric=mean_gap).fit(X, y, sensitive_features=labels)
    np.testing.assert_array_equal(est.groups_, ["a", "b", "c"])
    pred = est.predict(X)
    gap = max(pred[g == k].mean() for k in range(3)) - min(pred[g == k].mean() for k in range(3))
    assert gap == pytest.approx(est.unfairness_, rel=1e-8)
    assert est.unfairness_ <= est.baseline_unfairness_["uniform"]


@pytest.mark.parametrize(
    "params,match",
    [
        ({"metric": "equal_opportunity_range"}, "not available for regression"),
        ({"metric_params": {"temperature": -1.0}}, "positive"),
        ({"metric_params": {"rho": 1.0}}, "accepts"),
    ],
)
def test_bad_parameters(params, match):
    X, y, g = _data("regression")
    with pytest.raises(ValueError, match=match):
        BADRRegressor(**params).fit(X, y, sensitive_features=g)


def test_bad_input():
    X, y, g = _data()
    with pytest.raises(ValueError, match="binary"):
        BADRClassifier().fit(X, g, sensitive_features=y)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError):
        BADRClassifier().fit(X_nan, y, sensitive_features=g)
    with pytest.raises(ValueError, match="same length"):
        BADRClassifier().fit(X, y, sensitive_features=g[:-1])


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_over_alpha_and_metric(routing):
    X, y, g = _data()
    pipe = make_pipeline(StandardScaler(), BADRClassifier(max_iter=20))
    grid = {
        "badrclassifier__alpha": [0.01, 0.1],
        "badrclassifier__metric": ["demographic_parity_deviation", "group_loss_variance"],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with sklearn.config_context(enable_metadata_routing=routing):
            if routing:
                pipe = make_pipeline(
                    StandardScaler(),
                    BADRClassifier(max_iter=20).set_fit_request(sensitive_features=True),
                )
                search = GridSearchCV(pipe, grid, cv=2).fit(X, y, sensitive_features=g)
            else:
                search = GridSearchCV(pipe, grid, cv=2).fit(
                    X, y, badrclassifier__sensitive_features=g
                )
    best = search.best_estimator_[-1]
    assert best.group_weights_.shape == (3,)
    assert search.cv_results_["mean_test_score"].shape == (4,)


def test_reference_compat_scores_the_metrics_without_the_intercept():
    """reference_compat=True: the reported unfairness is the metric of ``X coef_`` (the
    published toolbox's scoring, spec 3.0), predictions still use the intercept."""
    from fairest.metrics import demographic_parity_deviation

    rng = np.random.default_rng(3)
    g = rng.integers(0, 2, 400)
    X = rng.normal(size=(400, 3)) + 0.5 * g[:, None]
    y = (X @ np.array([1.0, -0.5, 0.3]) + 0.6 * g + rng.normal(size=400) > 0.8).astype(int)
    compat = BADRClassifier(metric="demographic_parity_deviation", reference_compat=True).fit(
        X, y, sensitive_features=g
    )
    default = BADRClassifier(metric="demographic_parity_deviation").fit(X, y, sensitive_features=g)
    no_intercept = X @ compat.coef_.ravel()
    assert compat.unfairness_exact_ == pytest.approx(
        demographic_parity_deviation(y, no_intercept, sensitive_features=g), abs=1e-12
    )
    assert abs(compat.intercept_[0]) > 1e-3
    np.testing.assert_array_equal(
        compat.predict(X), (X @ compat.coef_.ravel() + compat.intercept_[0] >= 0).astype(int)
    )
    assert default.unfairness_exact_ == pytest.approx(
        demographic_parity_deviation(y, default.decision_function(X), sensitive_features=g),
        abs=1e-12,
    )
    assert compat.unfairness_exact_ != pytest.approx(
        demographic_parity_deviation(y, compat.decision_function(X), sensitive_features=g)
    )
