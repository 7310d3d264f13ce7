"""Certificates judge their input: regressors and continuous predictions, labels the model
never had, (near-)constant models and candidate / safety splits too small to fit on."""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV

from fairest.certified import CertifiedFairClassifier, certify_fairness, fairness_interval
from fairest.postprocessing import GroupThresholdClassifier
from fairest.utils import FairnessWarning

DP = [("demographic_parity_difference", 0.1)]


@pytest.fixture(scope="module")
def data():
    """Two groups whose outcome rates differ a lot: a thresholded model is very unfair."""
    rng = np.random.default_rng(0)
    n = 4000
    groups = rng.choice(["a", "b"], size=n)
    X = rng.normal(size=(n, 3)) + 2.0 * (groups == "a")[:, None]
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 1.0).astype(int)
    return X, y, groups


class _Constant(ClassifierMixin, BaseEstimator):
    """Predicts ``label`` for every row but the first ``n_other`` ones."""

    def __init__(self, label=0, n_other=0):
        self.label = label
        self.n_other = n_other

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        out = np.full(len(X), self.label)
        out[: self.n_other] = 1 - self.label
        return out


# ---------------------------------------------------------------------------------------
# regressors and continuous predictions


def test_certify_fairness_refuses_a_regressor(data):
    X, y, groups = data
    regressor = LinearRegression().fit(X[:2000], y[:2000])
    with pytest.raises(ValueError, match=r"fitted_model is a regressor \(LinearRegression\)"):
        certify_fairness(
            regressor, X[2000:], y[2000:], sensitive_features=groups[2000:], constraints=DP
        )
    # the fix the message names: threshold explicitly and certify the labels
    labels = (regressor.predict(X[2000:]) > 0.5).astype(int)
    interval = fairness_interval(
        "demographic_parity_difference", y[2000:], labels, sensitive_features=groups[2000:]
    )
    assert interval.estimate > 0.5  # the gap the regressor's 0 hid


def test_certify_fairness_refuses_continuous_predictions_of_a_duck_typed_model(data):
    X, y, groups = data

    class Scores:  # no scikit-learn tags, no classes_: its predict gives scores
        def predict(self, X):
            return X[:, 0] / 10.0

    with pytest.raises(ValueError, match="continuous outputs"):
        certify_fairness(Scores(), X, y, sensitive_features=groups, constraints=DP)

    class Outside(_Constant):  # classes_ [0, 1], but predicts 2 for some rows
        def predict(self, X):
            return np.where(X[:, 0] > 0, 2, 0)

    model = Outside().fit(X, y)
    with pytest.raises(ValueError, match=r"outside its classes \[0, 1\], e\.g\. \[2\]"):
        certify_fairness(model, X, y, sensitive_features=groups, constraints=DP)


def test_certified_classifier_refuses_a_regressor(data):
    X, y, groups = data
    for estimator in (
        LinearRegression(),
        GridSearchCV(LinearRegression(), {"fit_intercept": [True]}),
    ):
        with pytest.raises(ValueError, match="estimator is a regressor.*Wrap a classifier"):
            CertifiedFairClassifier(estimator, constraints=DP, random_state=0).fit(
                X, y, sensitive_features=groups
            )


# ---------------------------------------------------------------------------------------
# labels the model never had


def test_labels_outside_the_models_classes_raise(data):
    X, y, groups = data
    model = LogisticRegression().fit(X[:2000], y[:2000])
    three = y[2000:].copy()
    three[:5] = 2
    with pytest.raises(ValueError, match=r"y holds label\(s\) \[2\].*classes are \[0, 1\]"):
        certify_fairness(
            model,
            X[2000:],
            three,
            sensitive_features=groups[2000:],
            constraints=[("zero_one_loss_gap", 0.5)],
        )
    strings = np.where(y[2000:] == 1, "yes", "no")
    with pytest.raises(ValueError, match=r"\['no', 'yes'\] that fitted_model never had"):
        certify_fairness(
            model,
            X[2000:],
            strings,
            sensitive_features=groups[2000:],
            constraints=[("zero_one_loss_gap", 0.5)],
        )


def test_a_model_with_more_or_fewer_than_two_classes_is_refused(data):
    X, y, groups = data
    model = _Constant().fit(X, y)
    model.classes_ = np.array([0, 1, 2])
    with pytest.raises(ValueError, match="3 class"):
        certify_fairness(model, X, y, sensitive_features=groups, constraints=DP)
    model.classes_ = np.array([0])
    with pytest.raises(ValueError, match="1 class"):
        certify_fairness(model, X, y, sensitive_features=groups, constraints=DP)


# ---------------------------------------------------------------------------------------
# (near-)constant models


def test_a_constant_model_warns_with_the_selection_rates(data):
    X, y, groups = data
    model = _Constant(label=0).fit(X, y)
    with pytest.warns(FairnessWarning, match="share predicted 1: 0 overall") as caught:
        certificate = certify_fairness(model, X, y, sensitive_features=groups, constraints=DP)
    assert certificate.passed  # the verdict stands; the warning says what it is worth
    message = str(caught[0].message)
    assert "predicts 0 for 100.0% of the 4,000 held-out rows" in message
    assert f"'a' 0 (n={np.sum(groups == 'a')})" in message


def test_a_near_constant_model_warns_and_names_the_constant_group(data):
    X, y, groups = data
    order = np.argsort(groups, kind="stable")  # group 'a' first: its first rows get a 1
    X, y, groups = X[order], y[order], groups[order]
    model = _Constant(label=0, n_other=20).fit(X, y)  # 0.5% positives, all in group 'a'
    with pytest.warns(FairnessWarning, match=r"Every row of group\(s\) \['b'\]"):
        certify_fairness(model, X, y, sensitive_features=groups, constraints=DP)
    # an ordinary model does not warn (warnings are errors in this test suite)
    fitted = LogisticRegression().fit(X, y)
    certify_fairness(fitted, X, y, sensitive_features=groups, constraints=DP)


def test_certified_classifier_that_ends_constant_warns_with_the_cause(data):
    X, y, groups = data
    grid = {"class_weight": [{0: 1.0, 1: w} for w in (1e-4, 1.0)]}
    with pytest.warns(FairnessWarning) as caught:
        model = CertifiedFairClassifier(
            LogisticRegression(), constraints=DP, param_grid=grid, random_state=0
        ).fit(X, y, sensitive_features=groups)
    assert model.certified_ and model.best_params_ == {"class_weight": {0: 1.0, 1: 1e-4}}
    message = str(caught[0].message)
    assert "the certified candidate" in message and "safety rows" in message
    # the cause: the accurate candidate is unfair, between these two groups
    assert "The most accurate candidate, {'class_weight': {0: 1.0, 1: 1.0}}" in message
    assert "selection rates range from" in message and "(group 'b')" in message


def test_certified_classifier_of_a_useful_model_does_not_warn(data):
    X, y, groups = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = CertifiedFairClassifier(
            LogisticRegression(),
            constraints=[("demographic_parity_difference", 1.0)],
            random_state=0,
        ).fit(X, y, sensitive_features=groups)
    assert model.certified_


# ---------------------------------------------------------------------------------------
# the candidate / safety split


ONE_GROUP = "ignore:sensitive_features holds a single group:fairest.utils.FairnessWarning"


@pytest.mark.filterwarnings(ONE_GROUP)
def test_too_few_rows_name_the_split_and_the_missing_class(data):
    X, y, groups = data
    rows = np.r_[np.flatnonzero(y == 0)[:2], np.flatnonzero(y == 1)[:1]]  # one positive
    model = CertifiedFairClassifier(LogisticRegression(), random_state=0)
    with pytest.raises(ValueError, match="candidate part holds no row of class 1") as info:
        model.fit(X[rows], y[rows], sensitive_features=np.zeros(3))
    message = str(info.value)
    assert "safety_fraction=0.6" in message and "Lower safety_fraction" in message
    assert "2 safety row(s) and 1 candidate row(s) of 3" in message


@pytest.mark.filterwarnings(ONE_GROUP)
def test_an_empty_part_names_the_split(data):
    X, y, groups = data
    rows = np.r_[np.flatnonzero(y == 0)[:3], np.flatnonzero(y == 1)[:3]]
    with pytest.raises(ValueError, match="the candidate part is empty.*Lower safety_fraction"):
        CertifiedFairClassifier(LogisticRegression(), safety_fraction=0.9).fit(
            X[rows], y[rows], sensitive_features=np.zeros(6)
        )
    with pytest.raises(ValueError, match="the safety part is empty.*Raise safety_fraction"):
        CertifiedFairClassifier(LogisticRegression(), safety_fraction=0.1).fit(
            X[rows], y[rows], sensitive_features=np.zeros(6)
        )


def test_one_class_in_y_is_refused_up_front(data):
    X, y, groups = data
    with pytest.raises(ValueError, match="2 classes and has 1 class"):
        CertifiedFairClassifier(LogisticRegression()).fit(
            X[:50], np.zeros(50), sensitive_features=groups[:50]
        )


def test_a_group_aware_estimator_needs_every_group_in_the_candidate_part(data):
    X, y, groups = data
    groups = groups.astype(object)
    # one positive and one negative: each stratum's round(0.6 * 1) = 1 row is a safety row
    groups[[np.flatnonzero(y == 1)[0], np.flatnonzero(y == 0)[0]]] = "tiny"
    model = CertifiedFairClassifier(
        GroupThresholdClassifier(LogisticRegression(), tolerance=0.1),
        constraints=DP,
        param_grid={"tolerance": [0.1]},
        random_state=0,
    )
    with pytest.raises(ValueError, match="candidate part holds no row of group 'tiny'"):
        model.fit(X, y, sensitive_features=groups)


# ---------------------------------------------------------------------------------------
# the candidates' own warnings


class _Warns(LogisticRegression):
    """Warns a FairnessWarning naming its C at every fit."""

    def fit(self, X, y, sample_weight=None):
        warnings.warn(f"fit with C={self.C}", FairnessWarning, stacklevel=2)
        return super().fit(X, y, sample_weight=sample_weight)


def test_only_the_kept_candidates_fit_warnings_are_shown(data):
    X, y, groups = data
    with pytest.warns(FairnessWarning) as caught:
        model = CertifiedFairClassifier(
            _Warns(),
            constraints=[("demographic_parity_difference", 1.0)],
            param_grid={"C": [0.01, 1.0, 100.0]},
            random_state=0,
        ).fit(X, y, sensitive_features=groups)
    messages = [str(w.message) for w in caught]
    assert messages == [
        f"the fit of the kept candidate {model.best_params_}: fit with C={model.best_params_['C']}"
    ]


def test_a_post_processor_swept_down_to_tolerance_zero_does_not_warn(data):
    """The default sweep of GroupThresholdClassifier reaches tolerance 0, where the
    thresholds of two large groups collapse to nobody selected: that candidate is not
    kept, so its warning is not shown."""
    X, y, groups = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = CertifiedFairClassifier(
            GroupThresholdClassifier(LogisticRegression()),
            constraints=[("demographic_parity_difference", 0.2)],
            random_state=0,
        ).fit(X, y, sensitive_features=groups)
    assert model.certified_ and model.best_params_["tolerance"] > 0
