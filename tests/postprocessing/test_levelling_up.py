"""LevellingUpClassifier: minimum-rate constraints and the worst group's rate within an
accuracy budget, checked against brute force over every per-group threshold
combination, scikit-learn's metrics, monotonicity, weights as repeated rows, and its
errors and warnings."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import accuracy_score, precision_score, recall_score

from fairest.postprocessing import LevellingUpClassifier
from fairest.utils import FairnessWarning

RATES = ["selection_rate", "recall", "precision"]
SLACK = 1e-12


class _Scores(ClassifierMixin, BaseEstimator):
    """A classifier whose only output is ``decision_function = X[:, 0]``."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return np.asarray(X)[:, 0]

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


def small_problem(n_groups, seed, per_group=9, levels=4):
    """Few rows and few distinct scores per group (ties on purpose), labels drawn with the
    score as probability, and weights."""
    rng = np.random.default_rng(seed)
    groups = np.repeat([f"g{k}" for k in range(n_groups)], per_group)
    scores = rng.integers(0, levels, size=groups.size) / (levels - 1)
    y = (rng.uniform(size=groups.size) < 0.2 + 0.6 * scores).astype(int)
    weights = rng.uniform(0.5, 2.0, size=groups.size)
    return scores[:, None], y, groups, weights


def _enumerate(scores, y, groups, w, rate):
    """Every combination of per-group thresholds: ``(correct, rates)`` with shapes (C,)
    and (C, G), counted directly from the rows."""
    per_group_correct, per_group_rate = [], []
    for g in np.unique(groups):
        s, yy, ww = scores[groups == g], y[groups == g], w[groups == g]
        correct, rates = [], []
        for cut in np.concatenate([[np.inf], np.unique(s)]):  # nobody, then scores >= each
            pred = s >= cut
            tp, fp = np.sum(ww * yy * pred), np.sum(ww * (1 - yy) * pred)
            correct.append(np.sum(ww * (pred == yy)))
            positives = np.sum(ww * yy)
            rates.append(
                {
                    "selection_rate": (tp + fp) / ww.sum(),
                    "recall": tp / positives if positives > 0 else 0.0,
                    "precision": tp / (tp + fp) if tp + fp > 0 else 0.0,
                }[rate]
            )
        per_group_correct.append(np.array(correct))
        per_group_rate.append(np.array(rates))
    combos = np.array(list(itertools.product(*[range(c.size) for c in per_group_correct])))
    correct = sum(c[combos[:, k]] for k, c in enumerate(per_group_correct))
    rates = np.stack([r[combos[:, k]] for k, r in enumerate(per_group_rate)], axis=1)
    return correct, rates


def _fit(X, y, groups, w, **params):
    clf = LevellingUpClassifier(_Scores().fit(X, y), prefit=True, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        return clf.fit(X, y, sensitive_features=groups, sample_weight=w)


def _achieved(clf, X, y, groups, w):
    """Weighted accuracy and per-group rates of ``predict``, with scikit-learn."""
    y_pred = clf.predict(X, sensitive_features=groups)
    metric = {
        "selection_rate": lambda yt, yp, sample_weight: np.average(yp, weights=sample_weight),
        "recall": lambda yt, yp, sample_weight: recall_score(
            yt, yp, sample_weight=sample_weight, zero_division=0
        ),
        "precision": lambda yt, yp, sample_weight: precision_score(
            yt, yp, sample_weight=sample_weight, zero_division=0
        ),
    }[clf.rate]
    rates = np.array(
        [metric(y[groups == g], y_pred[groups == g], w[groups == g]) for g in clf.groups_]
    )
    return accuracy_score(y, y_pred, sample_weight=w), rates


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("n_groups, seed", [(2, 0), (3, 1), (4, 2)])
def test_min_rate_matches_brute_force(rate, n_groups, seed):
    X, y, groups, w = small_problem(n_groups, seed)
    correct, rates = _enumerate(X[:, 0], y, groups, w, rate)
    for min_rate in (0.0, 0.3, 0.5, 0.7):
        feasible = np.all(rates >= min_rate - SLACK, axis=1)
        if not feasible.any():
            continue
        clf = _fit(X, y, groups, w, rate=rate, min_rate=min_rate)
        accuracy, achieved = _achieved(clf, X, y, groups, w)
        assert accuracy == pytest.approx(correct[feasible].max() / w.sum(), abs=1e-12)
        assert clf.train_accuracy_ == pytest.approx(accuracy, abs=1e-12)
        assert np.all(achieved >= min_rate - 1e-12)
        np.testing.assert_allclose(clf.group_rates_["value"], achieved, atol=1e-12)
        assert clf.worst_rate_ == pytest.approx(achieved.min(), abs=1e-12)
        assert clf.infeasible_groups_.size == 0


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("n_groups, seed", [(2, 3), (3, 4), (4, 5)])
def test_accuracy_budget_matches_brute_force(rate, n_groups, seed):
    X, y, groups, w = small_problem(n_groups, seed)
    correct, rates = _enumerate(X[:, 0], y, groups, w, rate)
    worst = rates.min(axis=1)
    for budget in (0.0, 0.02, 0.05, 0.1, 0.3):
        allowed = correct >= correct.max() - (budget + 1e-9) * w.sum()
        best_worst = worst[allowed].max()
        at_best = allowed & (worst >= best_worst - SLACK)
        clf = _fit(X, y, groups, w, rate=rate, accuracy_budget=budget)
        accuracy, achieved = _achieved(clf, X, y, groups, w)
        assert achieved.min() == pytest.approx(best_worst, abs=1e-12)
        assert clf.target_rate_ == pytest.approx(best_worst, abs=1e-12)
        assert accuracy == pytest.approx(correct[at_best].max() / w.sum(), abs=1e-12)
        assert clf.unconstrained_accuracy_ == pytest.approx(correct.max() / w.sum())


def test_no_objective_is_the_fairest_of_the_most_accurate():
    X, y, groups, w = small_problem(3, 6)
    default = _fit(X, y, groups, w)
    zero = _fit(X, y, groups, w, accuracy_budget=0.0)
    np.testing.assert_array_equal(default.thresholds_, zero.thresholds_)
    assert default.train_accuracy_ == pytest.approx(default.unconstrained_accuracy_)
    assert default.rate == "recall"


def make_data(n=4000, n_groups=4, seed=0):
    rng = np.random.default_rng(seed)
    groups = np.array([f"g{k}" for k in range(n_groups)])[rng.integers(0, n_groups, size=n)]
    shift = np.searchsorted(np.unique(groups), groups) / n_groups
    X = rng.normal(size=(n, 2)) + shift[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.8).astype(int)
    return X, y, groups


@pytest.mark.parametrize("rate", RATES)
def test_monotone_in_min_rate_and_in_the_budget(rate):
    X, y, groups = make_data()
    model = LogisticRegression().fit(X, y)
    accuracies = []
    for min_rate in np.linspace(0.0, 0.75, 6):
        clf = LevellingUpClassifier(model, rate=rate, min_rate=min_rate, prefit=True)
        clf.fit(X, y, sensitive_features=groups)
        assert clf.worst_rate_ >= min_rate - 1e-12
        accuracies.append(clf.train_accuracy_)
    assert np.all(np.diff(accuracies) <= 1e-12)
    worst, previous = [], None
    for budget in (0.0, 0.005, 0.01, 0.03, 0.1):
        clf = LevellingUpClassifier(model, rate=rate, accuracy_budget=budget, prefit=True)
        clf.fit(X, y, sensitive_features=groups)
        assert clf.train_accuracy_ >= clf.unconstrained_accuracy_ - budget - 1e-9
        worst.append(clf.worst_rate_)
        previous = clf
    assert np.all(np.diff(worst) >= -1e-12)
    assert previous.worst_rate_ > worst[0]  # a 10-point budget raises the worst group


def test_integer_weights_are_repeated_rows():
    X, y, groups, _ = small_problem(3, 7, per_group=30, levels=6)
    counts = np.random.default_rng(8).integers(1, 4, size=y.size)
    for params in (
        {"rate": "recall", "min_rate": 0.6},
        {"rate": "precision", "accuracy_budget": 0.05},
    ):
        weighted = _fit(X, y, groups, counts.astype(float), **params)
        repeat = np.repeat(np.arange(y.size), counts)
        repeated = _fit(X[repeat], y[repeat], groups[repeat], None, **params)
        np.testing.assert_allclose(weighted.thresholds_, repeated.thresholds_)
        assert weighted.train_accuracy_ == pytest.approx(repeated.train_accuracy_)
        assert weighted.worst_rate_ == pytest.approx(repeated.worst_rate_)


def test_fits_the_wrapped_classifier_and_predicts_with_the_group_thresholds():
    X, y, groups = make_data(n=1500, n_groups=3, seed=1)
    clf = LevellingUpClassifier(LogisticRegression(), rate="recall", min_rate=0.7)
    clf.fit(X, y, sensitive_features=groups)
    assert isinstance(clf.estimator_, LogisticRegression)
    margin = clf.decision_function(X, sensitive_features=groups)
    np.testing.assert_array_equal(
        clf.predict(X, sensitive_features=groups), clf.classes_[(margin > 0).astype(int)]
    )
    assert np.all(np.isfinite(clf.thresholds_))
    assert clone(clf).get_params()["min_rate"] == 0.7
    assert list(clf.group_rates_.columns) == ["group", "rate", "rows", "value", "lower", "upper"]
    assert np.all(clf.group_rates_["lower"] <= clf.group_rates_["value"])


# ---------------------------------------------------------------------------------------
# errors and warnings


def test_both_objectives_raise_naming_them():
    X, y, groups = make_data(n=300)
    clf = LevellingUpClassifier(LogisticRegression(), min_rate=0.5, accuracy_budget=0.01)
    with pytest.raises(ValueError, match="min_rate=0.5 and accuracy_budget=0.01"):
        clf.fit(X, y, sensitive_features=groups)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"rate": "tpr"}, "'rate' parameter"),
        ({"min_rate": 1.5}, "'min_rate' parameter"),
        ({"accuracy_budget": -0.1}, "'accuracy_budget' parameter"),
    ],
)
def test_invalid_parameters_raise(params, match):
    X, y, groups = make_data(n=300)
    with pytest.raises(ValueError, match=match):
        LevellingUpClassifier(LogisticRegression(), **params).fit(X, y, sensitive_features=groups)


def test_a_regressor_is_refused():
    X, y, groups = make_data(n=300)
    with pytest.raises(ValueError, match="estimator is a regressor"):
        LevellingUpClassifier(LinearRegression()).fit(X, y, sensitive_features=groups)


def test_a_group_that_cannot_reach_the_rate_is_named_with_its_best():
    X, y, groups = make_data(n=1200, n_groups=3)
    y = np.where(groups == "g0", 0, y)  # g0 has no positives: its recall stays 0
    clf = LevellingUpClassifier(LogisticRegression(), rate="recall", min_rate=0.6)
    with pytest.warns(FairnessWarning, match=r"'g0' 0 .*cannot reach min_rate=0.6"):
        clf.fit(X, y, sensitive_features=groups)
    assert list(clf.infeasible_groups_) == ["g0"]
    rates = clf.group_rates_.set_index("group")["value"]
    assert rates["g0"] == 0.0 and rates["g1"] >= 0.6 and rates["g2"] >= 0.6
    # the other groups are solved as without g0
    keep = groups != "g0"
    alone = LevellingUpClassifier(LogisticRegression(), rate="recall", min_rate=0.6, prefit=True)
    alone.set_params(estimator=clf.estimator_).fit(
        X[keep], y[keep], sensitive_features=groups[keep]
    )
    np.testing.assert_allclose(clf.thresholds_[1:], alone.thresholds_)


def test_precision_above_a_groups_best_is_infeasible():
    X, y, groups, w = small_problem(2, 9, per_group=20)
    clf = LevellingUpClassifier(_Scores().fit(X, y), rate="precision", min_rate=1.0, prefit=True)
    with pytest.warns(FairnessWarning, match="highest precision"):
        clf.fit(X, y, sensitive_features=groups)
    assert clf.worst_rate_ < 1.0


def test_a_rate_only_everybody_reaches_warns_near_constant():
    X, y, groups = make_data(n=800)
    clf = LevellingUpClassifier(LogisticRegression(), rate="selection_rate", min_rate=1.0)
    with pytest.warns(FairnessWarning, match=r"predict 1 for 100.0% .*unconstrained"):
        clf.fit(X, y, sensitive_features=groups)
    assert clf.worst_rate_ == 1.0
    assert clf.train_accuracy_ == pytest.approx(y.mean())


def test_group_blind_mode_meets_the_floor_on_the_inferred_groups():
    """With group_estimator, predict needs no groups; the floor holds for the groups the
    classifier infers on the fit rows (exactly, as with known groups), and the true
    groups' rates under that routing are what group_rates_ reports."""
    from sklearn.linear_model import LogisticRegression

    from fairest.postprocessing import LevellingUpClassifier

    rng = np.random.default_rng(3)
    g = rng.choice(["a", "b", "c"], 3000)
    X = rng.normal(size=(3000, 3)) + np.c_[(g == "a") * 1.0, (g == "b") * 2.0, np.zeros(3000)]
    y = (X[:, 0] + rng.normal(size=3000) > 0.7).astype(int)
    clf = LevellingUpClassifier(
        LogisticRegression(), min_rate=0.8, group_estimator=LogisticRegression()
    ).fit(X, y, sensitive_features=g)
    inferred = clf._inferred_codes(X)
    pred = clf.predict(X)  # no sensitive_features
    positives = y == 1
    for code in np.unique(inferred):
        rows = positives & (inferred == code)
        assert pred[rows].mean() >= 0.8 - 1e-12
    codes = np.searchsorted(clf.groups_, g)
    true_recalls = [pred[positives & (codes == k)].mean() for k in range(3)]
    np.testing.assert_allclose(clf.group_rates_["value"], true_recalls)
    assert clf.worst_rate_ == pytest.approx(min(true_recalls))
    assert np.all(np.isfinite(clf.thresholds_))
