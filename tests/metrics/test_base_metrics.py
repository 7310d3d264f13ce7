"""fairlearn's base metrics in fairest.metrics: fairlearn's values (random, string-label,
weighted, no-positive and one-row inputs, probabilities), no warning where fairlearn gives
none, and one definition shared with the frame's weighted-rate records."""

import warnings

import numpy as np
import pytest
from fairlearn import metrics as flm

from fairest import metrics
from fairest.metrics._frame_eval import known_rate_form
from fairest.metrics._rates import RATE_METRICS
from fairest.utils import FairnessWarning

CONFUSION = [
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "true_negative_rate",
]
RATES = ["selection_rate", *CONFUSION, "mean_prediction"]


def _both(name, *args, **kwargs):
    """(fairest's value, fairlearn's value); fairest's evaluated with every warning an
    error, fairlearn's warnings recorded and returned."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = getattr(metrics, name)(*args, **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theirs = getattr(flm, name)(*args, **kwargs)
    return ours, theirs, caught


def _binary(seed, n=200):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, n), rng.integers(0, 2, n), rng.uniform(0.1, 3.0, n)


@pytest.mark.parametrize("name", [*RATES, "count"])
@pytest.mark.parametrize("seed", range(5))
def test_random_binary_labels_match_fairlearn(name, seed):
    y_true, y_pred, _ = _binary(seed)
    ours, theirs, caught = _both(name, y_true, y_pred)
    assert not caught
    assert ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("name", RATES)
@pytest.mark.parametrize("seed", range(3))
def test_weighted_rates_match_fairlearn(name, seed):
    y_true, y_pred, weights = _binary(seed)
    ours, theirs, caught = _both(name, y_true, y_pred, sample_weight=weights)
    assert not caught
    assert ours == pytest.approx(theirs, abs=1e-12)
    unweighted = getattr(metrics, name)(y_true, y_pred)
    assert ours != pytest.approx(unweighted, abs=1e-6)  # the weights are used


@pytest.mark.parametrize("name", ["selection_rate", *CONFUSION])
@pytest.mark.parametrize("weighted", [False, True])
def test_string_labels_with_pos_label_match_fairlearn(name, weighted):
    rng = np.random.default_rng(7)
    y_true = rng.choice(["denied", "granted"], 60)
    y_pred = rng.choice(["denied", "granted"], 60)
    weights = rng.uniform(0.5, 2.0, 60) if weighted else None
    ours, theirs, caught = _both(name, y_true, y_pred, pos_label="granted", sample_weight=weights)
    assert not caught
    assert ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("name", [*RATES, "count"])
@pytest.mark.parametrize(
    "y_true, y_pred",
    [
        ([0, 0, 0], [0, 1, 0]),  # no positives: TPR, FNR undefined (0)
        ([1, 1], [1, 0]),  # no negatives: FPR, TNR undefined (0)
        ([1], [1]),  # one row
        ([0], [0]),
        ([0], [1]),
        ([-1, 1, 1, -1], [1, 1, -1, -1]),  # {-1, 1} coding
        ([True, False, True], [True, True, False]),
        ([0.0, 1.0, 1.0], [1.0, 1.0, 0.0]),
    ],
    ids=[
        "no-positive",
        "no-negative",
        "one-row-1",
        "one-row-0",
        "one-row-01",
        "pm1",
        "bool",
        "float",
    ],
)
def test_edge_cases_match_fairlearn_without_warnings(name, y_true, y_pred):
    ours, theirs, caught = _both(name, np.asarray(y_true), np.asarray(y_pred))
    assert not caught
    assert ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("name", CONFUSION)
@pytest.mark.parametrize(
    "y_true, y_pred, pos_label",
    [
        (["b", "b"], ["b", "b"], "b"),  # one label, the positive one
        (["a", "a"], ["a", "a"], "b"),  # one label, not the positive one
        ([2, 5, 5], [5, 5, 2], 5),  # numbers other than {0, 1} with pos_label
        ([1, 0, 1], [0, 1, 1], 0),  # 0 as the positive label
    ],
)
def test_pos_label_cases_match_fairlearn(name, y_true, y_pred, pos_label):
    ours, theirs, caught = _both(name, y_true, y_pred, pos_label=pos_label)
    assert not caught
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_zero_weight_positives_give_zero_like_fairlearn():
    y_true, y_pred, weights = [1, 0, 1], [1, 1, 0], [0.0, 1.0, 0.0]
    for name in CONFUSION:
        ours, theirs, caught = _both(name, y_true, y_pred, sample_weight=weights)
        assert not caught
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_selection_rate_of_probabilities_is_fairlearns_with_a_warning():
    """fairlearn counts a prediction as selected when it equals pos_label, so of
    probabilities only the exact 1.0 counts; fairest gives that value and says so."""
    y_true, y_proba = [0, 1, 1, 0], [0.2, 0.9, 1.0, 0.4]
    with pytest.warns(FairnessWarning, match="probabilities or scores"):
        ours = metrics.selection_rate(y_true, y_proba)
    assert ours == flm.selection_rate(y_true, y_proba) == 0.25


@pytest.mark.parametrize("seed", range(3))
def test_mean_prediction_of_probabilities_matches_fairlearn(seed):
    rng = np.random.default_rng(seed)
    y_true, y_proba, weights = rng.integers(0, 2, 50), rng.uniform(size=50), rng.uniform(size=50)
    for kwargs in ({}, {"sample_weight": weights}):
        ours, theirs, caught = _both("mean_prediction", y_true, y_proba, **kwargs)
        assert not caught
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_strings_against_the_default_pos_label_select_nothing_like_fairlearn():
    ours, theirs, _ = _both("selection_rate", ["a", "b"], ["b", "b"])
    assert ours == theirs == 0.0


@pytest.mark.parametrize("name", ["selection_rate", "mean_prediction"])
def test_zero_total_weight_is_nan_with_a_fairness_warning(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # fairlearn's 0 / 0
        theirs = getattr(flm, name)([1, 0], [1, 0], sample_weight=[0.0, 0.0])
    with pytest.warns(FairnessWarning, match="sums to 0"):
        ours = getattr(metrics, name)([1, 0], [1, 0], sample_weight=[0.0, 0.0])
    assert np.isnan(ours) and np.isnan(theirs)


@pytest.mark.parametrize(
    "y_true, y_pred, kwargs, match",
    [
        (["a", "b"], ["b", "b"], {}, "without pos_label"),  # fairlearn raises too
        ([0, 1, 2], [0, 1, 1], {"pos_label": 1}, "at most two distinct labels"),
        ([0, 2], [2, 0], {"pos_label": 1}, "pos_label=1 is not one of the labels"),
        ([0, 1, 1], [0.2, 0.9, 1.0], {}, "without pos_label"),  # probabilities
        ([], [], {}, "empty"),
        ([0, 1, 1], [0, 1], {}, "same length"),
        ([0, 1], [0, 1], {"sample_weight": [1.0, -1.0]}, "non-negative"),
    ],
)
def test_confusion_rates_refuse_what_fairlearn_refuses(y_true, y_pred, kwargs, match):
    with pytest.raises(ValueError, match=match):
        metrics.true_positive_rate(y_true, y_pred, **kwargs)


def test_selection_rate_and_count_check_lengths():
    with pytest.raises(ValueError, match="empty"):
        metrics.selection_rate([], [])
    with pytest.raises(ValueError, match="same length"):
        metrics.selection_rate([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="same length"):
        metrics.count([0, 1, 1], [0, 1])
    assert metrics.count([0, 1, 1], [1, 1, 0]) == 3
    assert isinstance(metrics.count([0, 1, 1], [1, 1, 0]), int)


@pytest.mark.parametrize("name", RATES)
def test_base_metrics_are_known_rate_forms(name):
    """fairest's functions map to the same records as fairlearn's, so the frame's fast
    path (and its bootstrap) evaluates them from segment sums."""
    y_true, y_pred, _ = _binary(0, n=20)
    rate = known_rate_form(getattr(metrics, name), y_true, y_pred)
    assert rate is not None and rate.name == name
    assert rate == known_rate_form(getattr(flm, name), y_true, y_pred)
    assert known_rate_form(metrics.count, y_true, y_pred) is None


@pytest.mark.parametrize("name", RATES)
@pytest.mark.parametrize(
    "y_true, y_pred, weights",
    [
        ([0, 0, 0], [0, 1, 0], None),
        ([1, 1], [1, 0], None),
        ([1, 0, 1, 1], [1, 1, 0, 1], [0.5, 2.0, 1.0, 0.0]),
        ([1, 0, 1], [1, 1, 0], [0.0, 1.0, 0.0]),
        ([1, 0], [1, 1], [0.0, 0.0]),  # zero total weight
    ],
)
def test_rate_records_give_the_functions_values(name, y_true, y_pred, weights):
    """The record the frame evaluates gives, on every group, the value of the function
    it stands for (fairest's and fairlearn's), the undefined cases included."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    rate = known_rate_form(getattr(flm, name), y_true, y_pred)
    record = rate(y_true, y_pred, sample_weight=weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 0 / 0 total weight: NaN with a warning
        ours = getattr(metrics, name)(y_true, y_pred, sample_weight=weights)
        try:
            theirs = getattr(flm, name)(y_true, y_pred, sample_weight=weights)
        except ValueError:  # scikit-learn refuses an all-zero weight vector
            theirs = ours
    np.testing.assert_allclose([record, ours], [theirs, theirs], atol=1e-12)


def test_the_new_records_are_built_in_rates():
    y_true, y_pred = np.array([1, 1, 0, 0, 1]), np.array([1, 0, 0, 1, 0])
    assert RATE_METRICS["false_negative_rate"](y_true, y_pred) == pytest.approx(2 / 3)
    assert RATE_METRICS["true_negative_rate"](y_true, y_pred) == pytest.approx(1 / 2)
    assert np.isnan(RATE_METRICS["true_negative_rate"]([1, 1], [1, 0]))  # built-in: NaN


def test_frame_takes_the_base_metrics_by_the_fast_path_with_fairlearns_values():
    rng = np.random.default_rng(3)
    y_true, y_pred = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    groups, weights = rng.choice(["a", "b", "c"], 300), rng.uniform(0.1, 2.0, 300)
    ours = metrics.MetricFrame(
        metrics={name: getattr(metrics, name) for name in RATES},
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
        sample_weight=weights,
    )
    theirs = flm.MetricFrame(
        metrics={name: getattr(flm, name) for name in RATES},
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
        sample_params={name: {"sample_weight": weights} for name in RATES},
    )
    np.testing.assert_allclose(ours.by_group.to_numpy(), theirs.by_group.to_numpy(), atol=1e-12)
    np.testing.assert_allclose(ours.overall.to_numpy(), theirs.overall.to_numpy(), atol=1e-12)
