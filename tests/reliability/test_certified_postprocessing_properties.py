"""Property-based checks (hypothesis) of certificates and group thresholds: row order,
group relabelling and strictly increasing score maps change nothing they should not;
thresholds are always finite; the near-constant warning fires exactly when it should."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin

from fairest.certified import certify_fairness
from fairest.postprocessing import GroupThresholdClassifier
from fairest.utils import FairnessWarning

# near-constant draws warn; the properties below are about values, one test about warnings
pytestmark = pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
METRICS = ["demographic_parity", "equal_opportunity", "equalized_odds"]
CONSTRAINTS = [
    ("demographic_parity_difference", 0.5),
    ("equalized_odds_ratio", 0.2),
    ("zero_one_loss_gap", 0.5),
]
MAPS = {
    "affine": lambda s: 3.0 * s - 7.0,
    "cubic": lambda s: s**3 + s,  # exact on the integer scores drawn below
    "exp": np.exp,
    "arctan": np.arctan,
}


class _Column(ClassifierMixin, BaseEstimator):
    """A prefit binary classifier reading its output off ``X``: ``predict`` is column 0
    (hard labels), ``decision_function`` is ``score_map`` of column 1 (scores)."""

    def __init__(self, score_map=None):
        self.score_map = score_map

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(np.int64)

    def decision_function(self, X):
        scores = np.asarray(X)[:, 1]
        return scores if self.score_map is None else self.score_map(scores)


@st.composite
def grouped(draw, max_groups=4, max_per_group=14):
    """Labels, hard predictions and tied scores over 2-4 groups, every group with both
    classes (every rate defined)."""
    n_groups = draw(st.integers(2, max_groups))
    sizes = draw(st.lists(st.integers(3, max_per_group), min_size=n_groups, max_size=n_groups))
    groups = np.repeat(np.arange(n_groups), sizes)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = rng.integers(0, 2, groups.size)
    for g in range(n_groups):
        rows = np.flatnonzero(groups == g)
        y[rows[0]], y[rows[1]] = 0, 1
    # integer scores: ties, some signal, and no two scores a rounding error apart (a map
    # could merge those into one float and so change the candidate thresholds)
    scores = (rng.integers(-15, 16, groups.size) + 4 * y).astype(np.float64)
    y_pred = (scores + rng.normal(scale=5.0, size=groups.size) > 2.0).astype(np.int64)
    X = np.column_stack([y_pred, scores]).astype(np.float64)
    return X, y, groups, rng


def _names(groups, permutation):
    """Group labels ``"g<k>"`` renamed through ``permutation`` (a relabelling)."""
    return np.array([f"g{k}" for k in permutation])[groups]


def _certificate(X, y, groups, bound):
    return certify_fairness(
        _Column().fit(X, y),
        X,
        y,
        sensitive_features=groups,
        constraints=CONSTRAINTS,
        bound=bound,
    )


# ---------------------------------------------------------------------------------------
# certificates


@pytest.mark.parametrize("bound", ["clopper-pearson", "hoeffding", "bernstein"])
@SETTINGS
@given(data=grouped())
def test_certificate_bounds_do_not_depend_on_row_order(bound, data):
    X, y, groups, rng = data
    order = rng.permutation(y.size)
    first = _certificate(X, y, groups, bound)
    second = _certificate(X[order], y[order], groups[order], bound)
    for a, b in zip(first.constraints, second.constraints):
        for name in ("lower_bound", "upper_bound", "estimate"):
            assert getattr(a, name) == pytest.approx(getattr(b, name), abs=1e-12, nan_ok=True)
        np.testing.assert_allclose(a.group_lower, b.group_lower, atol=1e-12)
        np.testing.assert_allclose(a.group_upper, b.group_upper, atol=1e-12)
        np.testing.assert_array_equal(a.group_count, b.group_count)
        assert a.passed == b.passed


@pytest.mark.parametrize("bound", ["clopper-pearson", "bernstein"])
@SETTINGS
@given(data=grouped())
def test_relabelling_groups_permutes_the_group_results_only(bound, data):
    X, y, groups, rng = data
    n_groups = groups.max() + 1
    permutation = rng.permutation(n_groups)
    first = _certificate(X, y, _names(groups, np.arange(n_groups)), bound)
    second = _certificate(X, y, _names(groups, permutation), bound)
    for a, b in zip(first.constraints, second.constraints):
        assert a.lower_bound == pytest.approx(b.lower_bound, abs=1e-12, nan_ok=True)
        assert a.upper_bound == pytest.approx(b.upper_bound, abs=1e-12, nan_ok=True)
        assert a.passed == b.passed
        # group g of the first run is group "g<permutation[g]>" of the second
        where = [list(b.group_labels).index(f"g{permutation[g]}") for g in range(n_groups)]
        np.testing.assert_allclose(a.group_upper, b.group_upper[:, where], atol=1e-12)
        np.testing.assert_allclose(a.group_lower, b.group_lower[:, where], atol=1e-12)
        np.testing.assert_array_equal(a.group_count, b.group_count[:, where])


# ---------------------------------------------------------------------------------------
# group thresholds


def _thresholds(X, y, groups, metric, tolerance, randomized, score_map=None):
    return GroupThresholdClassifier(
        _Column(score_map).fit(X, y),
        metric=metric,
        tolerance=tolerance,
        prefit=True,
        randomized=randomized,
        random_state=0,
    ).fit(X, y, sensitive_features=groups)


TOLERANCES = st.sampled_from([0.0, 0.05, 0.2])


@pytest.mark.parametrize("randomized", [False, True])
@pytest.mark.parametrize("metric", METRICS)
@SETTINGS
@given(data=grouped(), tolerance=TOLERANCES)
def test_thresholds_do_not_depend_on_row_order(metric, randomized, data, tolerance):
    X, y, groups, rng = data
    order = rng.permutation(y.size)
    first = _thresholds(X, y, groups, metric, tolerance, randomized)
    second = _thresholds(X[order], y[order], groups[order], metric, tolerance, randomized)
    np.testing.assert_array_equal(first.thresholds_, second.thresholds_)
    assert first.train_unfairness_ == pytest.approx(second.train_unfairness_, abs=1e-12)
    assert np.all(np.isfinite(first.thresholds_))  # never inf, whatever the draw


@pytest.mark.parametrize("metric", METRICS)
@SETTINGS
@given(data=grouped(), tolerance=TOLERANCES)
def test_relabelling_groups_permutes_the_thresholds(metric, data, tolerance):
    X, y, groups, rng = data
    n_groups = groups.max() + 1
    permutation = rng.permutation(n_groups)
    first = _thresholds(X, y, _names(groups, np.arange(n_groups)), metric, tolerance, False)
    second = _thresholds(X, y, _names(groups, permutation), metric, tolerance, False)
    where = [list(second.groups_).index(f"g{permutation[g]}") for g in range(n_groups)]
    np.testing.assert_array_equal(first.thresholds_, second.thresholds_[where])
    assert first.train_unfairness_ == pytest.approx(second.train_unfairness_, abs=1e-12)


@pytest.mark.parametrize("score_map", sorted(MAPS))
@pytest.mark.parametrize("randomized", [False, True])
@pytest.mark.parametrize("metric", METRICS)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=grouped(), tolerance=TOLERANCES)
def test_a_strictly_increasing_score_map_gives_the_same_predictions(
    metric, randomized, score_map, data, tolerance
):
    X, y, groups, _ = data
    plain = _thresholds(X, y, groups, metric, tolerance, randomized)
    mapped = _thresholds(X, y, groups, metric, tolerance, randomized, MAPS[score_map])
    np.testing.assert_array_equal(
        plain.predict(X, sensitive_features=groups), mapped.predict(X, sensitive_features=groups)
    )
    assert plain.train_unfairness_ == pytest.approx(mapped.train_unfairness_, abs=1e-12)


@pytest.mark.parametrize("metric", METRICS)
@SETTINGS
@given(data=grouped(max_groups=6, max_per_group=6), tolerance=TOLERANCES)
def test_the_near_constant_warning_fires_exactly_when_the_result_is(metric, data, tolerance):
    X, y, groups, _ = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = _thresholds(X, y, groups, metric, tolerance, False)
    share = clf.predict(X, sensitive_features=groups).mean()
    warned = any(
        issubclass(w.category, FairnessWarning) and "near-constant classifier" in str(w.message)
        for w in caught
    )
    assert warned == (min(share, 1.0 - share) <= 0.01)
