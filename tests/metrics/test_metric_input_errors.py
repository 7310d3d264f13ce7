"""Every metric names the real problem of a bad input, in one wording, briefly."""

import numpy as np
import pytest

from fairest import metrics
from fairest.utils import check_sensitive_features, encode_groups

rng = np.random.default_rng(0)
N = 200
Y = rng.integers(0, 2, N)
GROUPS = rng.integers(0, 2, N)
PROBA = rng.random(N)
LABELS = (PROBA > 0.5).astype(int)

HARD_LABEL_METRICS = [
    metrics.demographic_parity_violation,
    metrics.equalized_odds_violation,
    metrics.demographic_parity_difference,
    metrics.equalized_odds_difference,
]


@pytest.mark.parametrize(
    "metric",
    HARD_LABEL_METRICS + [metrics.loss_gap, metrics.ermi, metrics.individual_fairness],
    ids=lambda f: f.__name__,
)
def test_empty_input_says_empty(metric):
    with pytest.raises(ValueError, match="is empty") as error:
        metric([], [], sensitive_features=[])
    assert "sample_weight" not in str(error.value)


@pytest.mark.parametrize(
    "metric",
    HARD_LABEL_METRICS + [metrics.loss_gap, metrics.partial_statistical_parity],
    ids=lambda f: f.__name__,
)
def test_length_mismatch_names_the_inputs_not_X(metric):
    with pytest.raises(ValueError, match="same length") as error:
        metric(Y, LABELS[:150], sensitive_features=GROUPS)
    assert "X has" not in str(error.value)
    assert "150" in str(error.value) and "200" in str(error.value)


def test_sensitive_feature_length_mismatch_names_y_true():
    with pytest.raises(ValueError, match="but y_true has 200"):
        metrics.demographic_parity_difference(Y, LABELS, sensitive_features=GROUPS[:150])


@pytest.mark.parametrize(
    "metric",
    [metrics.demographic_parity_violation, metrics.equalized_odds_violation],
    ids=lambda f: f.__name__,
)
def test_violation_metrics_refuse_probabilities(metric):
    with pytest.raises(ValueError, match="hard labels"):
        metric(Y, PROBA, sensitive_features=GROUPS)
    assert metric(Y, LABELS, sensitive_features=GROUPS) >= 0.0


def test_loss_gap_refuses_logits():
    logits = rng.normal(scale=5.0, size=N)
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        metrics.loss_gap(Y, logits, sensitive_features=GROUPS)
    assert metrics.loss_gap(Y, PROBA, sensitive_features=GROUPS) >= 0.0


def test_group_report_refuses_probabilities_for_binary_targets():
    with pytest.raises(ValueError, match="hard labels"):
        metrics.group_report(Y, PROBA, sensitive_features=GROUPS)
    report = metrics.group_report(Y, LABELS, sensitive_features=GROUPS)
    assert "selection_rate" in report.columns
    continuous = metrics.group_report(rng.normal(size=N), PROBA, sensitive_features=GROUPS)
    assert "mean_squared_error" in continuous.columns


def test_weightless_group_message_names_the_group_plainly():
    weights = np.where(GROUPS == 0, 0.0, 1.0)
    with pytest.raises(ValueError, match=r"zero total weight for: 0\.") as error:
        metrics.loss_gap(Y, PROBA, sensitive_features=GROUPS, sample_weight=weights)
    assert "np.int64" not in str(error.value)


def test_labels_that_print_alike_are_refused():
    mixed = np.array([1, "1"] * (N // 2), dtype=object)
    with pytest.raises(ValueError, match="mixes types"):
        metrics.demographic_parity_difference(Y, LABELS, sensitive_features=mixed)
    with pytest.raises(ValueError, match="mixes types"):
        encode_groups([1, "1", 2, 2])


def test_continuous_sensitive_feature_error_is_short_and_says_so():
    continuous = rng.normal(size=1000)
    with pytest.raises(ValueError, match="continuous") as error:
        check_sensitive_features(continuous, 1000)
    assert len(str(error.value)) < 500
