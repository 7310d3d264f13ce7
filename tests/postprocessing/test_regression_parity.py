"""WassersteinParityRegressor against the exact barycenter and the exact trade-off.

On the line the Wasserstein-2 barycenter of the groups' distributions has the weighted
mean of their quantile functions as quantile function: for groups of equal sizes with
distinct predictions it is the distribution of the averaged order statistics, for
discrete distributions a step function built by hand below. The interpolation of
Chzhen and Schreuder (2022) has a closed-form unfairness and risk, checked exactly.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame as FairlearnFrame
from fairlearn.metrics import mean_prediction
from sklearn import config_context
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from fairest.metrics import (
    prediction_ks_distance,
    prediction_w1_distance,
    prediction_w2_unfairness,
)
from fairest.postprocessing import WassersteinParityRegressor
from fairest.utils import FairnessWarning


class ColumnModel(RegressorMixin, BaseEstimator):
    """A fitted "regressor" predicting column 0 of X: the predictions are set by hand."""

    def fit(self, X, y, sample_weight=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        return np.asarray(X, dtype=np.float64)[:, 0]


def _prefit(**params):
    model = ColumnModel().fit(np.zeros((1, 1)), [0.0])
    return WassersteinParityRegressor(model, prefit=True, **params)


def _equal_sized(n=400, seed=0):
    rng = np.random.default_rng(seed)
    groups = np.repeat(["a", "b", "c"], n)
    f = np.concatenate([rng.normal(0, 1, n), rng.exponential(2.0, n), rng.uniform(-1, 3, n)])
    return f[:, None], groups


def test_equal_groups_map_onto_the_averaged_order_statistics():
    X, groups = _equal_sized()
    model = _prefit().fit(X, X[:, 0], sensitive_features=groups)
    fair = model.predict(X, sensitive_features=groups)
    barycenter = np.mean([np.sort(X[groups == g, 0]) for g in "abc"], axis=0)
    for g in "abc":
        np.testing.assert_allclose(np.sort(fair[groups == g]), barycenter, rtol=0, atol=1e-12)
        # the map is monotone: each group's order is kept
        order = np.argsort(X[groups == g, 0])
        assert np.all(np.diff(fair[groups == g][order]) >= 0)
    assert prediction_ks_distance(None, fair, sensitive_features=groups) == 0.0
    assert model.train_unfairness_ == pytest.approx(0.0, abs=1e-24)
    # fairlearn's per-group mean prediction: equal after the map
    frame = FairlearnFrame(
        metrics=mean_prediction, y_true=X[:, 0], y_pred=fair, sensitive_features=groups
    )
    assert frame.difference() == pytest.approx(0.0, abs=1e-12)


def _discrete(n, seed):
    """Group a: 0 or 1 with probabilities 0.3 / 0.7; group b: 2 or 4, 0.5 / 0.5."""
    rng = np.random.default_rng(seed)
    a = (rng.uniform(size=n) < 0.7).astype(float)
    b = np.where(rng.uniform(size=n) < 0.5, 2.0, 4.0)
    return np.concatenate([a, b])[:, None], np.repeat(["a", "b"], n)


# the barycenter of the two populations (equal shares): its quantile function is
# (Q_a + Q_b) / 2 = 1 on (0, 0.3], 1.5 on (0.3, 0.5], 2.5 on (0.5, 1]
BARYCENTER = {1.0: 0.3, 1.5: 0.2, 2.5: 0.5}


def _frequencies(values):
    return {v: float(np.mean(values == v)) for v in BARYCENTER}


def test_discrete_distributions_reach_the_exact_barycenter_with_randomized_ties():
    X, groups = _discrete(4000, seed=1)
    model = _prefit(randomized=True, random_state=0).fit(X, X[:, 0], sensitive_features=groups)
    # the fitted barycenter is the exact one up to the empirical shares (about 0.01)
    jumps = dict(zip(model.barycenter_values_, np.diff(model.barycenter_levels_, prepend=0)))
    assert set(np.round(model.barycenter_values_, 6)) <= set(BARYCENTER) | {
        np.round(v, 6) for v in model.barycenter_values_
    }
    for value, share in BARYCENTER.items():
        assert jumps.get(value, 0.0) == pytest.approx(share, abs=0.02)
    # on new draws of the same populations, every group's outputs have its law
    X_new, groups_new = _discrete(20000, seed=2)
    fair = model.predict(X_new, sensitive_features=groups_new)
    assert set(np.unique(fair)) <= set(model.barycenter_values_)
    for g in "ab":
        for value, share in _frequencies(fair[groups_new == g]).items():
            assert share == pytest.approx(BARYCENTER[value], abs=0.03), (g, value)
    assert prediction_ks_distance(None, fair, sensitive_features=groups_new) < 0.03
    # the same seed gives the same predictions
    np.testing.assert_array_equal(model.predict(X_new, sensitive_features=groups_new), fair)


def test_without_randomization_an_atom_is_not_split():
    """The mid level of group a's atom at 1 (levels (0.3, 1]) maps it whole to 2.5: the
    deterministic map leaves a KS gap of the barycenter's mass on (0.3, 0.5]."""
    X, groups = _discrete(4000, seed=1)
    model = _prefit().fit(X, X[:, 0], sensitive_features=groups)
    fair = model.predict(X, sensitive_features=groups)
    assert np.all(fair[(groups == "a") & (X[:, 0] == 1)] == 2.5)
    assert prediction_ks_distance(None, fair, sensitive_features=groups) == pytest.approx(
        0.2, abs=0.03
    )


@pytest.mark.parametrize("tolerance", [0.0, 0.04, 0.25, 0.5, 0.81, 1.0])
def test_the_interpolation_gives_the_exact_risk_fairness_trade_off(tolerance):
    """Chzhen and Schreuder (2022): with t = 1 - sqrt(tolerance), U(g) = tolerance U(f)
    and E (g - f)^2 = t^2 U(f); for the Bayes regressor f the excess risk is the latter.
    Exact on the fit rows (equal group sizes, distinct predictions): every row comes
    twice, with y = f + e and y = f - e, so that E[y | x, s] = f on the rows."""
    X, groups = _equal_sized(seed=3)
    noise = np.random.default_rng(4).normal(size=groups.size)
    X, groups = np.vstack([X, X]), np.concatenate([groups, groups])
    f = X[:, 0]
    y = f + np.concatenate([noise, -noise])
    model = _prefit(tolerance=tolerance).fit(X, y, sensitive_features=groups)
    g = model.predict(X, sensitive_features=groups)
    base = prediction_w2_unfairness(None, f, sensitive_features=groups)
    assert model.estimator_unfairness_ == pytest.approx(base, rel=1e-12)
    assert model.train_unfairness_ == pytest.approx(tolerance * base, rel=1e-9, abs=1e-12)
    step = 1 - np.sqrt(tolerance)
    assert np.mean((g - f) ** 2) == pytest.approx(step**2 * base, rel=1e-9, abs=1e-12)
    excess = np.mean((y - g) ** 2) - np.mean((y - f) ** 2)
    assert excess == pytest.approx(step**2 * base, rel=1e-6, abs=1e-9)
    # a linear schedule (t = 1 - tolerance) misses the promised unfairness
    if 0 < tolerance < 1:
        linear = (1 - (1 - tolerance)) * f + (1 - tolerance) * _prefit().fit(
            X, y, sensitive_features=groups
        ).predict(X, sensitive_features=groups)
        off = prediction_w2_unfairness(None, linear, sensitive_features=groups)
        assert abs(off - tolerance * base) > 0.05 * tolerance * base


@pytest.mark.filterwarnings("ignore:.*effective rows:fairest.utils.FairnessWarning")
def test_weights_equal_repeated_rows():
    X, groups = _equal_sized(n=150, seed=5)
    counts = np.random.default_rng(6).integers(0, 4, size=groups.size)
    counts[[0, 150, 300]] = 1
    rows = np.repeat(np.arange(groups.size), counts)
    y = X[:, 0]
    weighted = _prefit().fit(X, y, sensitive_features=groups, sample_weight=counts)
    repeated = _prefit().fit(X[rows], y[rows], sensitive_features=groups[rows])
    np.testing.assert_allclose(
        weighted.predict(X, sensitive_features=groups),
        repeated.predict(X, sensitive_features=groups),
        rtol=0,
        atol=1e-12,
    )
    np.testing.assert_allclose(weighted.group_proportions_, repeated.group_proportions_)
    assert weighted.train_unfairness_ == pytest.approx(
        prediction_w2_unfairness(
            None,
            weighted.predict(X, sensitive_features=groups),
            sensitive_features=groups,
            sample_weight=counts,
        )
    )


def _regression_data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.choice(["f", "m", "x"], size=n, p=[0.4, 0.4, 0.2])
    X = rng.normal(size=(n, 3)) + (groups == "f")[:, None] * 0.8
    y = X @ np.array([1.0, -0.5, 0.3]) + rng.normal(scale=0.5, size=n)
    return X, y, groups


def test_fitted_model_is_fair_on_new_rows_and_outputs_stay_finite():
    X, y, groups = _regression_data(n=6000)
    model = WassersteinParityRegressor().fit(X, y, sensitive_features=groups)
    assert isinstance(model.estimator_, LinearRegression)
    base = model.estimator_.predict(X)
    assert prediction_ks_distance(None, base, sensitive_features=groups) > 0.2
    # new rows: parity up to the sampling error of both samples' CDFs (about 0.06 at 95 %)
    X_new, _, groups_new = _regression_data(n=6000, seed=1)
    fair = model.predict(X_new, sensitive_features=groups_new)
    assert prediction_ks_distance(None, fair, sensitive_features=groups_new) < 0.08
    assert prediction_w1_distance(None, fair, sensitive_features=groups_new) < 0.15
    far = model.predict(np.full((2, 3), 1e12) * [[1], [-1]], sensitive_features=["f", "m"])
    assert np.all(np.isfinite(far))
    assert far[0] == model.barycenter_values_[-1] and far[1] == model.barycenter_values_[0]


def test_one_group_gives_the_wrapped_predictions():
    X, y, _ = _regression_data(n=300)
    with pytest.warns(FairnessWarning, match="one group"):
        model = WassersteinParityRegressor().fit(X, y)
    np.testing.assert_array_equal(model.predict(X), model.estimator_.predict(X))


def _separable(n=3000, seed=7):
    rng = np.random.default_rng(seed)
    groups = rng.choice(["a", "b"], size=n)
    X = np.column_stack([rng.normal(size=n) + 3.0 * (groups == "a"), rng.normal(size=n)])
    y = X[:, 0] + X[:, 1] + rng.normal(scale=0.3, size=n)
    return X, y, groups


def test_group_blind_mode_needs_no_groups_at_predict():
    X, y, groups = _separable()
    model = WassersteinParityRegressor(
        LinearRegression(), group_estimator=LogisticRegression()
    ).fit(X, y, sensitive_features=groups)
    fair = model.predict(X)
    inferred = model.group_estimator_.predict(X)
    assert prediction_ks_distance(None, fair, sensitive_features=inferred) < 0.01
    # the group classifier is accurate (about 93 %), so the true groups are near parity too
    base = prediction_ks_distance(None, model.estimator_.predict(X), sensitive_features=groups)
    assert prediction_ks_distance(None, fair, sensitive_features=groups) < 0.25 * base
    assert model.train_unfairness_ == pytest.approx(
        prediction_w2_unfairness(None, fair, sensitive_features=groups)
    )
    np.testing.assert_array_equal(model.predict(X, sensitive_features=groups), fair)


def test_prefit_group_estimator_predicts_labels_of_groups():
    X, y, groups = _separable()
    base = LinearRegression().fit(X, y)
    classifier = LogisticRegression().fit(X, groups)  # predicts "a", "b"
    model = WassersteinParityRegressor(base, prefit=True, group_estimator=classifier)
    model.fit(X, y, sensitive_features=groups)
    assert model.estimator_ is base and model.group_estimator_ is classifier
    assert np.all(np.isfinite(model.predict(X)))


def test_ties_of_a_tree_are_split_by_the_seeded_draws():
    X, y, groups = _regression_data()
    tree = DecisionTreeRegressor(max_depth=2, random_state=0)
    det = WassersteinParityRegressor(tree).fit(X, y, sensitive_features=groups)
    rnd = WassersteinParityRegressor(tree, randomized=True, random_state=1)
    rnd.fit(X, y, sensitive_features=groups)
    ks = prediction_ks_distance(
        None, det.predict(X, sensitive_features=groups), sensitive_features=groups
    )
    ks_rnd = prediction_ks_distance(
        None, rnd.predict(X, sensitive_features=groups), sensitive_features=groups
    )
    assert ks_rnd < 0.08 < ks
    again = clone(rnd).fit(X, y, sensitive_features=groups)
    np.testing.assert_array_equal(
        again.predict(X, sensitive_features=groups), rnd.predict(X, sensitive_features=groups)
    )


def test_small_groups_warn_with_their_rows_and_half_widths():
    X, y, groups = _regression_data(n=1200)
    groups = groups.astype(object)
    groups[:40] = "tiny"
    with pytest.warns(FairnessWarning, match=r"'tiny' \(40 rows, \+-0\.21\)"):
        WassersteinParityRegressor().fit(X, y, sensitive_features=groups)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WassersteinParityRegressor().fit(X[40:], y[40:], sensitive_features=groups[40:])


class _NaNModel(ColumnModel):
    def predict(self, X):
        out = super().predict(X).copy()
        out[0] = np.nan
        return out


class _Unweighted(RegressorMixin, BaseEstimator):
    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.zeros(len(X))


def test_bad_inputs_raise_naming_the_argument():
    X, y, groups = _regression_data(n=1200)
    model = WassersteinParityRegressor().fit(X, y, sensitive_features=groups)
    with pytest.raises(ValueError, match="predict needs sensitive_features"):
        model.predict(X)
    with pytest.raises(ValueError, match="unseen during fit: 'z'"):
        model.predict(X[:2], sensitive_features=["f", "z"])
    bad_y = y.copy()
    bad_y[3] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        WassersteinParityRegressor().fit(X, bad_y, sensitive_features=groups)
    with pytest.raises(ValueError, match="estimator's predict returned 1 NaN"):
        WassersteinParityRegressor(_NaNModel()).fit(X, y, sensitive_features=groups)
    with pytest.raises(ValueError, match="group_estimator must be a classifier"):
        WassersteinParityRegressor(group_estimator=LinearRegression()).fit(
            X, y, sensitive_features=groups
        )
    with pytest.raises(ValueError, match="does not accept sample_weight"):
        WassersteinParityRegressor(_Unweighted()).fit(
            X, y, sensitive_features=groups, sample_weight=np.ones(y.size)
        )
    with pytest.raises(ValueError, match="tolerance"):
        WassersteinParityRegressor(tolerance=1.5).fit(X, y, sensitive_features=groups)


@pytest.mark.parametrize("routing", [True, False])
@pytest.mark.filterwarnings("ignore:.*effective rows:fairest.utils.FairnessWarning")
def test_groups_reach_fit_predict_and_score_in_a_search(routing):
    X, y, groups = _regression_data(n=600)
    with config_context(enable_metadata_routing=routing):
        pipe = make_pipeline(StandardScaler(), WassersteinParityRegressor())
        key = "sensitive_features" if routing else "wassersteinparityregressor__sensitive_features"
        pipe.fit(X, y, **{key: groups})
        assert len(pipe[-1].groups_) == 3
        if routing:
            search = GridSearchCV(WassersteinParityRegressor(), {"tolerance": [0.0, 0.5]}, cv=3)
            search.fit(X, y, sensitive_features=groups)
            assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
            result = cross_validate(
                WassersteinParityRegressor(), X, y, cv=3, params={"sensitive_features": groups}
            )
            assert np.all(result["test_score"] > 0.5)


def test_dataframes_reach_the_wrapped_pipeline_as_given():
    X, y, groups = _regression_data(n=1200)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(city=np.where(X[:, 0] > 0, "x", "y"))
    inner = make_pipeline(
        ColumnTransformer([("city", OneHotEncoder(), ["city"])], remainder="passthrough"),
        LinearRegression(),
    )
    model = WassersteinParityRegressor(inner).fit(frame, y, sensitive_features=groups)
    assert list(model.feature_names_in_) == ["a", "b", "c", "city"]
    assert np.all(np.isfinite(model.predict(frame, sensitive_features=groups)))


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
@parametrize_with_checks(
    [
        WassersteinParityRegressor(),
        WassersteinParityRegressor(LinearRegression(), group_estimator=LogisticRegression()),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
