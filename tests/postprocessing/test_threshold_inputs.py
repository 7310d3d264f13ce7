"""GroupThresholdClassifier judges its input and its result: regressors and continuous
predictions are refused, thresholds are always finite, an undefined group rate and a
(near-)constant result warn, naming the groups that caused them."""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairest.postprocessing import GroupThresholdClassifier
from fairest.utils import FairnessWarning

# the fits here are on a few hundred rows per group, where every group's rate is too
# uncertain for small tolerances to hold beyond the fit rows; that warning is tested in
# tests/reliability/test_meta_passthrough.py
pytestmark = pytest.mark.filterwarnings(
    "ignore:GroupThresholdClassifier has too few rows:fairest.utils.FairnessWarning"
)


def make_data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.choice(["a", "b"], size=n)
    X = rng.normal(size=(n, 3)) + 1.0 * (groups == "a")[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, groups


class _Scores(ClassifierMixin, BaseEstimator):
    """A classifier whose only output is ``decision_function = X[:, 0]``."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return np.asarray(X)[:, 0]

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


# ---------------------------------------------------------------------------------------
# refused inputs


def test_a_regressor_is_refused():
    X, y, groups = make_data()
    with pytest.raises(ValueError, match=r"estimator is a regressor \(LinearRegression\)"):
        GroupThresholdClassifier(LinearRegression()).fit(X, y, sensitive_features=groups)
    with pytest.raises(ValueError, match="estimator is a regressor"):
        GroupThresholdClassifier(make_pipeline(StandardScaler(), LinearRegression())).fit(
            X, y, sensitive_features=groups
        )
    fitted = LinearRegression().fit(X, y)
    with pytest.raises(ValueError, match="estimator is a regressor"):
        GroupThresholdClassifier(fitted, prefit=True).fit(X, y, sensitive_features=groups)
    with pytest.raises(ValueError, match="group_estimator is a regressor"):
        GroupThresholdClassifier(LogisticRegression(), group_estimator=LinearRegression()).fit(
            X, y, sensitive_features=groups
        )


def test_continuous_predict_without_scores_is_refused():
    X, y, groups = make_data()

    class Continuous(BaseEstimator):  # untagged: only its output tells
        def fit(self, X, y):
            return self

        def predict(self, X):
            return np.asarray(X)[:, 0]

    with pytest.raises(ValueError, match=r"neither predict_proba nor decision_function.*outside"):
        GroupThresholdClassifier(Continuous()).fit(X, y, sensitive_features=groups)


def test_a_prefit_estimator_of_other_labels_is_refused():
    X, y, groups = make_data()
    fitted = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"classes_ \[0, 1\], but y holds the labels \['no'"):
        GroupThresholdClassifier(fitted, prefit=True).fit(
            X, np.where(y == 1, "yes", "no"), sensitive_features=groups
        )


def test_nan_scores_are_refused():
    X, y, groups = make_data()

    class Holes(_Scores):
        def decision_function(self, X):
            scores = super().decision_function(X).copy()
            scores[:3] = np.nan
            return scores

    with pytest.raises(ValueError, match=r"decision_function returned NaN for 3 row\(s\)"):
        GroupThresholdClassifier(Holes()).fit(X, y, sensitive_features=groups)


# ---------------------------------------------------------------------------------------
# finite thresholds


def _with_a_single_score_group(X, y, groups, size=4):
    """A group of ``size`` identical rows: its only rates are 0 and 1."""
    groups = groups.astype(object).copy()
    X = X.copy()
    groups[:size] = "same"
    X[:size] = X[0]
    y = y.copy()
    y[:size] = [0, 1] * (size // 2)
    return X, y, groups


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
@pytest.mark.parametrize("randomized", [False, True])
@pytest.mark.parametrize("metric", ["demographic_parity", "equal_opportunity", "equalized_odds"])
def test_thresholds_are_finite_and_select_as_the_solver_chose(metric, randomized):
    X, y, groups = _with_a_single_score_group(*make_data())
    clf = GroupThresholdClassifier(
        LogisticRegression(), metric=metric, randomized=randomized, tolerance=0.0
    )
    clf.fit(X, y, sensitive_features=groups)
    assert np.all(np.isfinite(clf.thresholds_))
    scores = clf.estimator_.predict_proba(X)[:, 1]
    # the exact tolerance-0 solution: the same fit predictions as with infinite ends
    from fairest.postprocessing._thresholds import (
        group_points,
        mixed_positive_probability,
        solve_thresholds,
    )

    codes = np.unique(groups, return_inverse=True)[1]
    points = group_points(scores, y.astype(float), np.ones(y.size), codes, 3)
    raw = solve_thresholds(points, metric, 0.0, randomized)
    np.testing.assert_allclose(
        mixed_positive_probability(scores, codes, *raw), clf._positive_probability(scores, codes)
    )
    if not randomized:
        assert np.all(np.isfinite(clf.decision_function(X, sensitive_features=groups)))


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
def test_nobody_and_everybody_are_the_ends_of_the_score_range():
    X, y, groups = _with_a_single_score_group(*make_data())
    y = y.copy()
    y[4:] = (X[4:, 0] > -2.5).astype(int)  # mostly positives: everybody is selected
    probabilities = GroupThresholdClassifier(LogisticRegression(), tolerance=0.0).fit(
        X, y, sensitive_features=groups
    )
    assert probabilities.predict(X, sensitive_features=groups).mean() == 1.0
    # probabilities: everybody is a threshold below 0, never reached from above
    assert np.all(probabilities.thresholds_ < 0.0)
    scores = GroupThresholdClassifier(_Scores(), tolerance=0.0).fit(X, y, sensitive_features=groups)
    assert np.all(scores.thresholds_ < X[:, 0].min())
    assert np.all(np.isfinite(scores.thresholds_))
    nobody = GroupThresholdClassifier(LogisticRegression(), tolerance=0.0).fit(
        X, 1 - y, sensitive_features=groups
    )
    assert nobody.predict(X, sensitive_features=groups).mean() == 0.0
    np.testing.assert_array_equal(nobody.thresholds_, 1.0)  # no probability is above 1


# ---------------------------------------------------------------------------------------
# warnings: undefined rates, (near-)constant results


def test_equalized_odds_with_a_single_class_group_names_it():
    X, y, groups = make_data()
    groups = groups.astype(object).copy()
    groups[:20] = "c"
    y = y.copy()
    y[:20] = 0  # group c has no positive: its true positive rate is undefined
    with pytest.warns(FairnessWarning) as caught:
        clf = GroupThresholdClassifier(
            LogisticRegression(), metric="equalized_odds", tolerance=0.0
        ).fit(X, y, sensitive_features=groups)
    messages = [str(w.message) for w in caught]
    assert any("the true positive rate of group(s) 'c' (no row with y = 1)" in m for m in messages)
    # at tolerance 0 every TPR is pinned to c's 0: nobody is selected, with finite thresholds
    assert np.all(np.isfinite(clf.thresholds_))
    degenerate = [m for m in messages if "near-constant" in m]
    assert degenerate and "group(s) 'c' (20 rows)" in degenerate[0]
    # demographic parity has no rate that a single-class group lacks: no such warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GroupThresholdClassifier(LogisticRegression(), tolerance=0.05).fit(
            X, y, sensitive_features=groups
        )
    assert not [w for w in caught if "undefined" in str(w.message)]


def test_a_group_of_one_score_forces_a_constant_classifier_and_is_named():
    X, y, groups = _with_a_single_score_group(*make_data())
    # the large groups' rates move in steps below the tolerance; the group of one score
    # reaches 0 and 1 only, so the band holds 0 (or 1) and at most 0.5% are selected
    with pytest.warns(FairnessWarning, match="near-constant") as caught:
        clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.005).fit(
            X, y, sensitive_features=groups
        )
    message = str(caught[0].message)
    assert "group(s) 'same' (4 rows) miss the most bands" in message
    assert f"accuracy {np.mean(clf.predict(X, sensitive_features=groups) == y):.3g}" in message
    assert "The unconstrained group thresholds reach accuracy" in message


def test_many_small_groups_at_tolerance_zero_warn_and_explain():
    """150 groups of ~13 rows at tolerance 0: one deterministic threshold per group can only
    equalise selection rates k / n_g that all groups reach exactly, which for different
    group sizes are only 0 and 1; the more accurate of the two is kept (here everybody)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = (X[:, 0] + rng.normal(size=2000) > -0.05).astype(int)
    groups = rng.integers(0, 150, size=2000)
    with pytest.warns(FairnessWarning, match="near-constant") as caught:
        clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.0).fit(
            X, y, sensitive_features=groups
        )
    y_pred = clf.predict(X, sensitive_features=groups)
    assert np.all(y_pred == y_pred[0])
    message = str(caught[0].message)
    assert "(150 groups)" in message and "miss the most bands" in message
    assert "Raise tolerance, use randomized=True" in message
    # the fixes the message names give non-constant classifiers (groups of 13 rows are
    # still too small for these tolerances beyond the fit rows: that warning remains)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GroupThresholdClassifier(LogisticRegression(), tolerance=0.1).fit(
            X, y, sensitive_features=groups
        )
        GroupThresholdClassifier(LogisticRegression(), randomized=True, tolerance=0.0).fit(
            X, y, sensitive_features=groups
        )
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "near-constant" in m]
    assert len([m for m in messages if "too few rows in some groups" in m]) == 2


def test_scores_that_are_near_constant_without_the_constraint_say_so():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 2))
    y = (rng.random(3000) < 0.004).astype(int)  # a rare class, uninformative features
    groups = rng.choice(["a", "b"], size=3000)
    with pytest.warns(FairnessWarning, match="near-constant too"):
        GroupThresholdClassifier(LogisticRegression(), tolerance=0.05).fit(
            X, y, sensitive_features=groups
        )


def test_a_tolerance_path_does_not_warn_about_its_near_constant_points():
    from fairest import fairness_path

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = (X[:, 0] + rng.normal(size=2000) > -0.05).astype(int)
    groups = rng.integers(0, 150, size=2000)
    estimator = GroupThresholdClassifier(LogisticRegression())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor about its points' small groups
        path = fairness_path(estimator, X, y, sensitive_features=groups, values=[0.0, 0.1])
    assert path.strategy == "shared_scores"
    # the point at 0 is the near-constant fit above, which its accuracy shows
    constant = path.estimators[0].predict(X, sensitive_features=groups)
    assert np.all(constant == constant[0])
