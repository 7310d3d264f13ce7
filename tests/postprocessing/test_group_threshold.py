"""GroupThresholdClassifier: exact optimum (enumeration), references (fairlearn,
error-parity), the tolerance promise, groups at predict and model selection."""

import itertools
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairest import metrics
from fairest.postprocessing import GroupThresholdClassifier, make_group_scorer
from fairest.utils import FairnessWarning

# the fits here are on a few hundred rows per group, where every group's rate is too
# uncertain for small tolerances to hold beyond the fit rows; that warning is tested in
# tests/reliability/test_meta_passthrough.py
pytestmark = pytest.mark.filterwarnings(
    "ignore:GroupThresholdClassifier has too few rows:fairest.utils.FairnessWarning"
)

METRICS = ["demographic_parity", "equal_opportunity", "equalized_odds"]
METRIC_FUNCTIONS = {
    "demographic_parity": metrics.demographic_parity_difference,
    "equal_opportunity": metrics.equal_opportunity_difference,
    "equalized_odds": metrics.equalized_odds_difference,
}
FAIRLEARN_CONSTRAINTS = {
    "demographic_parity": "demographic_parity",
    "equal_opportunity": "true_positive_rate_parity",
    "equalized_odds": "equalized_odds",
}


def make_data(n=600, n_groups=3, seed=0, shift=0.8):
    rng = np.random.default_rng(seed)
    names = np.array([f"g{k}" for k in range(n_groups)])
    groups = names[rng.integers(0, n_groups, size=n)]
    offset = shift * (np.searchsorted(names, groups) / max(n_groups - 1, 1))
    X = rng.normal(size=(n, 3)) + offset[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.6).astype(int)
    return X, y, groups


def _unfairness(metric, y, y_pred, groups, sample_weight=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return METRIC_FUNCTIONS[metric](
            y, y_pred, sensitive_features=groups, sample_weight=sample_weight
        )


# ---------------------------------------------------------------------------------------
# exact optimum: brute-force enumeration of every per-group threshold combination


def _brute_force(scores, y, groups, weights, metric, tolerance):
    """Best weighted accuracy over every combination of per-group thresholds."""
    labels = np.unique(groups)
    options = []
    for g in labels:
        s = np.unique(scores[groups == g])
        options.append(np.concatenate([[-np.inf], (s[:-1] + s[1:]) / 2, [np.inf]]))
    best = -np.inf
    for combo in itertools.product(*options):
        threshold = np.select([groups == g for g in labels], combo)
        y_pred = (scores > threshold).astype(int)
        if _unfairness(metric, y, y_pred, groups, weights) <= tolerance + 1e-12:
            best = max(best, np.average(y_pred == y, weights=weights))
    return best


# tolerance 0 on ~10 rows per group: the optimum is often nobody or everybody selected,
# which warns (tests/postprocessing/test_threshold_inputs.py checks the warning)
@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("n_groups", [2, 3])
@pytest.mark.parametrize("tolerance", [0.0, 0.1, 0.3])
def test_deterministic_thresholds_match_enumeration(metric, n_groups, tolerance):
    X, y, groups = make_data(n=27 if n_groups == 3 else 30, n_groups=n_groups, seed=1)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, size=y.size)
    base = LogisticRegression().fit(X, y)
    scores = np.round(base.predict_proba(X)[:, 1], 2)  # ties between scores, on purpose

    class Rounded(LogisticRegression):
        def predict_proba(self, X):
            return np.round(super().predict_proba(X), 2)

    rounded = Rounded().fit(X, y)
    clf = GroupThresholdClassifier(rounded, metric=metric, tolerance=tolerance, prefit=True)
    clf.fit(X, y, sensitive_features=groups, sample_weight=weights)
    y_pred = clf.predict(X, sensitive_features=groups)
    ours = np.average(y_pred == y, weights=weights)
    expected = _brute_force(scores, y, groups, weights, metric, tolerance)
    assert ours == pytest.approx(expected, abs=1e-12)
    achieved = _unfairness(metric, y, y_pred, groups, weights)
    assert clf.train_unfairness_ == pytest.approx(achieved, abs=1e-12)
    assert clf.train_unfairness_ <= tolerance + 1e-12


@pytest.mark.parametrize("metric", METRICS)
def test_randomized_is_at_least_as_accurate_as_deterministic(metric):
    X, y, groups = make_data(n=500, n_groups=4, seed=3)
    common = dict(metric=metric, tolerance=0.05)
    det = GroupThresholdClassifier(LogisticRegression(), **common).fit(
        X, y, sensitive_features=groups
    )
    rnd = GroupThresholdClassifier(LogisticRegression(), randomized=True, **common).fit(
        X, y, sensitive_features=groups
    )
    assert rnd.train_unfairness_ <= 0.05 + 1e-9
    assert (
        _expected_accuracy(rnd, X, y, groups) >= det.score(X, y, sensitive_features=groups) - 1e-9
    )


def _expected_accuracy(clf, X, y, groups):
    scores = clf._scores(X)
    positive = clf._positive_probability(scores, clf._predict_codes(X, groups))
    return float(np.mean(np.where(y == 1, positive, 1 - positive)))


# ---------------------------------------------------------------------------------------
# references: fairlearn's ThresholdOptimizer, error-parity's RelaxedThresholdOptimizer


@pytest.mark.parametrize("metric", METRICS)
def test_randomized_matches_or_beats_fairlearn(metric):
    postprocessing = pytest.importorskip("fairlearn.postprocessing")
    X, y, groups = make_data(n=800, n_groups=3, seed=4)
    base = LogisticRegression().fit(X, y)
    reference = postprocessing.ThresholdOptimizer(
        estimator=base,
        constraints=FAIRLEARN_CONSTRAINTS[metric],
        objective="accuracy_score",
        prefit=True,
        predict_method="predict_proba",
    ).fit(X, y, sensitive_features=groups)
    pmf = reference._pmf_predict(X, sensitive_features=groups)[:, 1]
    reference_accuracy = np.mean(np.where(y == 1, pmf, 1 - pmf))
    reference_unfairness = _expected_metric(metric, y, pmf, groups)
    ours = GroupThresholdClassifier(
        base, metric=metric, tolerance=reference_unfairness, prefit=True, randomized=True
    ).fit(X, y, sensitive_features=groups)
    assert ours.train_unfairness_ <= reference_unfairness + 1e-8
    assert _expected_accuracy(ours, X, y, groups) >= reference_accuracy - 1e-9


def _expected_metric(metric, y, positive, groups):
    n = y.size
    return _unfairness(
        metric,
        np.concatenate([y, y]),
        np.concatenate([np.ones(n), np.zeros(n)]),
        np.concatenate([groups, groups]),
        np.concatenate([positive, 1 - positive]),
    )


@pytest.mark.parametrize("tolerance", [0.0, 0.05])
def test_randomized_equalized_odds_matches_error_parity(tolerance):
    error_parity = pytest.importorskip("error_parity")
    X, y, groups = make_data(n=900, n_groups=3, seed=5)
    base = LogisticRegression().fit(X, y)
    scores = base.predict_proba(X)[:, 1]
    codes = np.unique(groups, return_inverse=True)[1]
    reference = error_parity.RelaxedThresholdOptimizer(
        predictor=lambda Z: base.predict_proba(Z)[:, 1],
        constraint="equalized_odds",
        tolerance=tolerance,
        max_roc_ticks=None,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference.fit(X, y, group=codes, y_scores=scores)
    reference_accuracy = 1.0 - reference.cost()
    ours = GroupThresholdClassifier(
        base, metric="equalized_odds", tolerance=tolerance, prefit=True, randomized=True
    ).fit(X, y, sensitive_features=groups)
    assert ours.train_unfairness_ <= tolerance + 1e-8
    # error-parity solves the same LP over the ROC convex hulls (with cvxpy)
    assert _expected_accuracy(ours, X, y, groups) == pytest.approx(reference_accuracy, abs=2e-4)


# ---------------------------------------------------------------------------------------
# the tolerance promise, multi-group and intersectional groups


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("n_groups", [2, 5, 16])
def test_train_unfairness_within_tolerance(metric, n_groups):
    X, y, groups = make_data(n=1600, n_groups=n_groups, seed=n_groups)
    clf = GroupThresholdClassifier(LogisticRegression(), metric=metric, tolerance=0.08)
    clf.fit(X, y, sensitive_features=groups)
    y_pred = clf.predict(X, sensitive_features=groups)
    assert clf.train_unfairness_ == pytest.approx(_unfairness(metric, y, y_pred, groups))
    assert clf.train_unfairness_ <= 0.08
    assert clf.thresholds_.shape == (n_groups,)
    plain = LogisticRegression().fit(X, y).score(X, y)
    assert clf.score(X, y, sensitive_features=groups) > 0.5 * plain


def test_intersectional_groups_from_two_columns():
    X, y, groups = make_data(n=800, n_groups=2, seed=6)
    second = np.where(np.random.default_rng(6).random(800) < 0.4, "old", "young")
    frame = pd.DataFrame({"sex": groups, "age": second})
    clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.05)
    clf.fit(X, y, sensitive_features=frame)
    assert len(clf.groups_) == 4 and isinstance(clf.groups_[0], tuple)
    y_pred = clf.predict(X, sensitive_features=frame)
    joint = [f"{a}|{b}" for a, b in zip(groups, second)]
    assert _unfairness("demographic_parity", y, y_pred, joint) <= 0.05
    np.testing.assert_array_equal(y_pred, clf.predict(X, sensitive_features=frame.to_numpy()))


# ---------------------------------------------------------------------------------------
# fitting: prefit, sample_weight routing, randomized seeding


def test_prefit_uses_the_given_estimator():
    X, y, groups = make_data()
    base = LogisticRegression(C=0.1).fit(X, y)
    clf = GroupThresholdClassifier(base, prefit=True, tolerance=0.1)
    clf.fit(X, y, sensitive_features=groups)
    assert clf.estimator_ is base
    with pytest.raises(NotFittedError):
        GroupThresholdClassifier(LogisticRegression(), prefit=True).fit(
            X, y, sensitive_features=groups
        )


def test_sample_weight_reaches_the_estimator():
    X, y, groups = make_data()
    weights = np.random.default_rng(0).uniform(0.1, 3.0, size=y.size)
    clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.1)
    clf.fit(X, y, sensitive_features=groups, sample_weight=weights)
    reference = LogisticRegression().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(clf.estimator_.coef_, reference.coef_)
    with pytest.raises(ValueError, match="does not accept sample_weight"):
        GroupThresholdClassifier(KNeighborsClassifier()).fit(
            X, y, sensitive_features=groups, sample_weight=weights
        )


def test_randomized_predictions_are_seeded():
    X, y, groups = make_data(n=1000)
    clf = GroupThresholdClassifier(LogisticRegression(), randomized=True, random_state=3).fit(
        X, y, sensitive_features=groups
    )
    first = clf.predict(X, sensitive_features=groups)
    np.testing.assert_array_equal(first, clf.predict(X, sensitive_features=groups))
    other = clone(clf).set_params(random_state=4).fit(X, y, sensitive_features=groups)
    assert not np.array_equal(first, other.predict(X, sensitive_features=groups))
    assert not hasattr(clf, "decision_function")
    np.testing.assert_allclose(clf.threshold_probabilities_.sum(axis=1), 1.0)


def test_decision_function_is_score_minus_group_threshold():
    X, y, groups = make_data()
    clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.1)
    clf.fit(X, y, sensitive_features=groups)
    margin = clf.decision_function(X, sensitive_features=groups)
    y_pred = clf.predict(X, sensitive_features=groups)
    np.testing.assert_array_equal(y_pred, np.where(margin > 0, 1, 0))
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict(X, sensitive_features=groups), y_pred)


# ---------------------------------------------------------------------------------------
# bad inputs


def test_unseen_group_and_missing_groups_raise():
    X, y, groups = make_data()
    clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.1)
    clf.fit(X, y, sensitive_features=groups)
    unseen = groups.astype(object)
    unseen[0] = "martian"
    with pytest.raises(ValueError, match="unseen during fit: 'martian'"):
        clf.predict(X, sensitive_features=unseen)
    with pytest.raises(ValueError, match="predict needs sensitive_features"):
        clf.predict(X)
    with pytest.raises(ValueError, match="same length"):
        clf.predict(X, sensitive_features=groups[:-1])


def test_non_binary_target_raises():
    X, y, groups = make_data()
    with pytest.raises(ValueError, match="Only binary classification"):
        GroupThresholdClassifier(LogisticRegression()).fit(
            X, y + (X[:, 2] > 1), sensitive_features=groups
        )


# ---------------------------------------------------------------------------------------
# group-blind mode


def test_group_blind_mode_needs_no_groups_at_predict():
    X, y, groups = make_data(n=1500, n_groups=2, shift=2.5, seed=8)
    clf = GroupThresholdClassifier(
        LogisticRegression(), tolerance=0.05, group_estimator=LogisticRegression()
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    y_pred = clf.predict(X)
    achieved = _unfairness("demographic_parity", y, y_pred, groups)
    assert clf.train_unfairness_ == pytest.approx(achieved)
    warned = any(issubclass(w.category, FairnessWarning) for w in caught)
    assert warned or achieved <= 0.05
    np.testing.assert_array_equal(y_pred, clf.predict(X, sensitive_features=groups))
    plain = LogisticRegression().fit(X, y)
    assert _unfairness("demographic_parity", y, plain.predict(X), groups) > 0.1


def test_group_blind_mode_warns_with_the_achieved_value():
    X, y, groups = make_data(n=600, n_groups=3, shift=0.3, seed=9)
    clf = GroupThresholdClassifier(
        LogisticRegression(), tolerance=0.0, group_estimator=LogisticRegression()
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    if clf.train_unfairness_ > 1e-9:
        messages = [str(w.message) for w in caught if issubclass(w.category, FairnessWarning)]
        assert any(f"{clf.train_unfairness_:.4g}" in m for m in messages)


# ---------------------------------------------------------------------------------------
# model selection: groups routed to fit, predict, score and a scorer


def test_pipeline_grid_search_and_cross_validate_route_groups():
    X, y, groups = make_data(n=900)
    with config_context(enable_metadata_routing=True):
        pipe = make_pipeline(
            StandardScaler(), GroupThresholdClassifier(LogisticRegression(), tolerance=0.05)
        )
        pipe.fit(X, y, sensitive_features=groups)
        direct = pipe[-1].predict(pipe[0].transform(X), sensitive_features=groups)
        np.testing.assert_array_equal(pipe.predict(X, sensitive_features=groups), direct)
        scoring = {
            "accuracy": make_group_scorer(accuracy_score),
            "dp": make_group_scorer(metrics.demographic_parity_difference, greater_is_better=False),
        }
        search = GridSearchCV(
            pipe,
            {"groupthresholdclassifier__tolerance": [0.02, 0.2]},
            scoring=scoring,
            refit="accuracy",
            cv=3,
        ).fit(X, y, sensitive_features=groups)
        assert np.all(-search.cv_results_["mean_test_dp"] < 0.3)
        assert search.best_estimator_[-1].tolerance in (0.02, 0.2)
        result = cross_validate(pipe, X, y, cv=3, params={"sensitive_features": groups})
        # the default score routes the groups to predict: accuracy of the group thresholds
        manual = [
            clone(pipe)
            .fit(X[train], y[train], sensitive_features=groups[train])
            .score(X[test], y[test], sensitive_features=groups[test])
            for train, test in StratifiedKFold(3).split(X, y)
        ]
        np.testing.assert_allclose(result["test_score"], manual)


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
def test_refit_without_group_estimator_needs_groups_again():
    X, y, groups = make_data(n=500, n_groups=2)
    clf = GroupThresholdClassifier(
        LogisticRegression(), tolerance=0.1, group_estimator=LogisticRegression()
    ).fit(X, y, sensitive_features=groups)
    clf.set_params(group_estimator=None).fit(X, y, sensitive_features=groups)
    assert not hasattr(clf, "group_estimator_")
    with pytest.raises(ValueError, match="predict needs sensitive_features"):
        clf.predict(X)


@pytest.mark.parametrize("metric", METRICS)
def test_threshold_path_matches_enumeration_at_every_tolerance(metric):
    """The path's shared search (range-maximum table and band starts built once, only
    the band ends per tolerance): every tolerance's thresholds reach the brute-force
    optimum, and equal a solve_thresholds call at that tolerance alone."""
    from fairest.postprocessing._thresholds import group_points, solve_thresholds, threshold_path

    X, y, groups = make_data(n=30, n_groups=3, seed=3)
    weights = np.random.default_rng(4).uniform(0.5, 2.0, size=y.size)
    scores = np.round(LogisticRegression().fit(X, y).predict_proba(X)[:, 1], 2)
    codes = np.unique(groups, return_inverse=True)[1]
    points = group_points(scores, y.astype(float), weights, codes, 3)
    tolerances = [0.3, 0.0, 0.05, 0.1, 0.2]  # unsorted: nothing carried between values
    for tolerance, (thresholds, _) in zip(
        tolerances, threshold_path(points, metric, tolerances, randomized=False)
    ):
        alone, _ = solve_thresholds(points, metric, tolerance, randomized=False)
        np.testing.assert_array_equal(thresholds, alone)
        y_pred = (scores > thresholds[codes, 0]).astype(int)
        expected = _brute_force(scores, y, groups, weights, metric, tolerance)
        assert np.average(y_pred == y, weights=weights) == pytest.approx(expected, abs=1e-12)
        assert _unfairness(metric, y, y_pred, groups, weights) <= tolerance + 1e-12
