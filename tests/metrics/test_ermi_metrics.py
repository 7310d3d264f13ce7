"""Exact ERMI, conditional ERMI, DP-FERMI violation measures (ermi.md 2, 8, 12)."""

import itertools

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

from fairest.metrics import (
    conditional_ermi,
    demographic_parity_violation,
    equalized_odds_violation,
    ermi,
)

HAND_GROUPS = [0, 0, 0, 0, 1, 1, 1, 1]
HAND_LABELS = [1, 1, 0, 0, 1, 1, 0, 0]
HAND_PREDICTIONS = [1, 1, 1, 0, 1, 0, 0, 0]


def _random_problem(seed, n=60, n_groups=3, n_classes=3):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, size=n)
    labels = rng.integers(0, n_classes, size=n)
    predictions = np.where(rng.random(n) < 0.6, labels, rng.integers(0, n_classes, size=n))
    logits = rng.normal(size=(n, n_classes)) + groups[:, None] * np.arange(n_classes)
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    weights = rng.uniform(0.2, 2.0, size=n)
    return groups, labels, predictions, proba, weights


def _one_hot(predictions, n_classes):
    return np.eye(n_classes)[predictions]


def _ermi_brute_force(proba, groups, weights):
    """sum_{j,r} p(j,r)^2 / (p(j) p(r)) - 1 with explicit loops over samples."""
    total = sum(weights)
    n_classes = proba.shape[1]
    joint, p_class, p_group = {}, [0.0] * n_classes, {}
    for row, group, weight in zip(proba, groups, weights, strict=True):
        p_group[group] = p_group.get(group, 0.0) + weight / total
        for j in range(n_classes):
            p_class[j] += weight * row[j] / total
            joint[(j, group)] = joint.get((j, group), 0.0) + weight * row[j] / total
    value = -1.0
    for (j, group), mass in joint.items():
        if p_class[j] > 0:
            value += mass**2 / (p_class[j] * p_group[group])
    return value


# ---- oracle 4: the hand example


def test_hand_example_values():
    s, y, y_hat = HAND_GROUPS, HAND_LABELS, HAND_PREDICTIONS
    assert ermi(None, y_hat, sensitive_features=s) == pytest.approx(0.25, abs=1e-12)
    assert demographic_parity_violation(y, y_hat, sensitive_features=s) == 0.5
    assert equalized_odds_violation(y, y_hat, sensitive_features=s) == 0.5
    assert conditional_ermi(y, y_hat, sensitive_features=s) == pytest.approx(1 / 3, abs=1e-12)
    uniform = conditional_ermi(y, y_hat, sensitive_features=s, weighting="uniform")
    assert uniform == pytest.approx(2 / 3, abs=1e-12)


def test_hand_example_soft_predictions():
    positive = np.array([0.8, 0.7, 0.4, 0.1, 0.5, 0.6, 0.2, 0.3])
    proba = np.column_stack([1 - positive, positive])
    value = ermi(None, proba, sensitive_features=HAND_GROUPS)
    assert value == pytest.approx(1 / 99, abs=1e-12)


def test_hard_labels_equal_their_one_hot_probabilities():
    groups, _, predictions, _, weights = _random_problem(0)
    hard = ermi(None, predictions, sensitive_features=groups, sample_weight=weights)
    soft = ermi(None, _one_hot(predictions, 3), sensitive_features=groups, sample_weight=weights)
    assert hard == pytest.approx(soft, abs=1e-12)


# ---- brute force and identities


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
def test_ermi_matches_brute_force(seed, weighted):
    groups, _, predictions, proba, weights = _random_problem(seed)
    weights = weights if weighted else np.ones_like(weights)
    for matrix, y_pred in ((proba, proba), (_one_hot(predictions, 3), predictions)):
        expected = _ermi_brute_force(matrix, groups, weights)
        value = ermi(
            None,
            y_pred,
            sensitive_features=groups,
            sample_weight=weights if weighted else None,
        )
        assert value == pytest.approx(expected, abs=1e-12)


def test_chi_square_identity():
    groups, _, _, proba, _ = _random_problem(5, n=80, n_groups=4, n_classes=3)
    n = len(groups)
    joint = np.eye(4)[groups].T @ proba / n
    p_group, p_class = joint.sum(axis=1), joint.sum(axis=0)
    independent = np.outer(p_group, p_class)
    chi_square = ((joint - independent) ** 2 / independent).sum()
    plug_in = (joint**2 / independent).sum() - 1
    value = ermi(None, proba, sensitive_features=groups)
    assert value == pytest.approx(chi_square, abs=1e-12)
    assert value == pytest.approx(plug_in, abs=1e-12)


# ---- oracles 1 and 3: zero and range


def test_independent_predictions_give_zero():
    rng = np.random.default_rng(3)
    constant = np.tile([0.2, 0.5, 0.3], (40, 1))
    groups = rng.integers(0, 3, size=40)
    assert ermi(None, constant, sensitive_features=groups) <= 1e-12
    # the same multiset of predictions in every group: equal group-conditional means
    block = rng.integers(0, 3, size=15)
    predictions = np.tile(block, 3)
    groups = np.repeat(["a", "b", "c"], 15)
    assert ermi(None, predictions, sensitive_features=groups) <= 1e-12
    assert demographic_parity_violation(None, predictions, sensitive_features=groups) == 0.0


def test_upper_bound_reached_when_prediction_reveals_the_group():
    groups = np.repeat([0, 1, 2], 10)
    assert ermi(None, groups, sensitive_features=groups) == pytest.approx(2.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_range_on_random_inputs(seed):
    groups, labels, predictions, proba, weights = _random_problem(seed, n_groups=2)
    for y_pred in (predictions, proba):
        value = ermi(None, y_pred, sensitive_features=groups, sample_weight=weights)
        assert -1e-12 <= value <= min(2, 3) - 1 + 1e-12


def test_relabelling_groups_and_classes_changes_nothing():
    groups, _, predictions, proba, _ = _random_problem(8)
    base_hard = ermi(None, predictions, sensitive_features=groups)
    base_soft = ermi(None, proba, sensitive_features=groups)
    renamed_groups = np.array(["z", "y", "x"])[groups]
    renamed_predictions = np.array(["c", "a", "b"])[predictions]
    permuted = proba[:, [2, 0, 1]]
    assert ermi(None, renamed_predictions, sensitive_features=renamed_groups) == (
        pytest.approx(base_hard, abs=1e-12)
    )
    assert ermi(None, permuted, sensitive_features=renamed_groups) == (
        pytest.approx(base_soft, abs=1e-12)
    )


def test_integer_weights_equal_repetition():
    groups, labels, predictions, proba, _ = _random_problem(9)
    weights = np.random.default_rng(1).integers(1, 4, size=len(groups))
    repeat = np.repeat(np.arange(len(groups)), weights)
    for function, args in (
        (ermi, (None, proba)),
        (conditional_ermi, (labels, proba)),
        (demographic_parity_violation, (labels, predictions)),
        (equalized_odds_violation, (labels, predictions)),
    ):
        weighted = function(*args, sensitive_features=groups, sample_weight=weights)
        repeated_args = tuple(None if a is None else np.asarray(a)[repeat] for a in args)
        repeated = function(*repeated_args, sensitive_features=groups[repeat])
        assert weighted == pytest.approx(repeated, abs=1e-12)


# ---- oracle 16: conditional ERMI


@pytest.mark.parametrize("seed", range(3))
def test_conditional_ermi_is_label_weighted_stratum_ermi(seed):
    groups, labels, predictions, proba, _ = _random_problem(seed, n=90)
    for y_pred in (predictions, proba):
        strata = [
            ermi(
                None,
                np.asarray(y_pred)[labels == y],
                sensitive_features=groups[labels == y],
            )
            for y in range(3)
        ]
        shares = np.bincount(labels) / len(labels)
        value = conditional_ermi(labels, y_pred, sensitive_features=groups)
        uniform = conditional_ermi(labels, y_pred, sensitive_features=groups, weighting="uniform")
        assert value == pytest.approx(shares @ strata, abs=1e-12)
        assert uniform == pytest.approx(sum(strata), abs=1e-12)


def test_conditional_ermi_zero_when_independent_within_strata():
    rng = np.random.default_rng(4)
    rows = []
    for label in (0, 1):
        block = rng.integers(0, 2, size=6)
        for group in ("a", "b"):
            rows.extend((label, group, prediction) for prediction in block)
    labels, groups, predictions = map(np.array, zip(*rows, strict=True))
    assert conditional_ermi(labels, predictions, sensitive_features=groups) <= 1e-12
    assert equalized_odds_violation(labels, predictions, sensitive_features=groups) == 0.0


def test_conditional_ermi_with_a_group_missing_from_a_stratum():
    labels = np.array([0, 0, 0, 1, 1, 1, 1])
    groups = np.array([0, 1, 1, 0, 0, 1, 2])  # group 2 only has label 1
    predictions = np.array([0, 1, 0, 1, 0, 1, 1])
    strata = [
        ermi(None, predictions[labels == y], sensitive_features=groups[labels == y]) for y in (0, 1)
    ]
    expected = (3 * strata[0] + 4 * strata[1]) / 7
    value = conditional_ermi(labels, predictions, sensitive_features=groups)
    assert value == pytest.approx(expected, abs=1e-12)


# ---- oracle 14: violation reductions


@pytest.mark.parametrize("seed", range(4))
def test_binary_violations_match_fairlearn(seed):
    rng = np.random.default_rng(seed)
    n = 200
    groups = rng.integers(0, 3, size=n)
    labels = rng.integers(0, 2, size=n)
    predictions = np.where(rng.random(n) < 0.3 + 0.2 * groups, 1 - labels, labels)
    weights = rng.uniform(0.5, 1.5, size=n)
    for sample_weight in (None, weights):
        dp = demographic_parity_violation(
            labels, predictions, sensitive_features=groups, sample_weight=sample_weight
        )
        eo = equalized_odds_violation(
            labels, predictions, sensitive_features=groups, sample_weight=sample_weight
        )
        assert dp == pytest.approx(
            demographic_parity_difference(
                labels, predictions, sensitive_features=groups, sample_weight=sample_weight
            ),
            abs=1e-12,
        )
        assert eo == pytest.approx(
            equalized_odds_difference(
                labels, predictions, sensitive_features=groups, sample_weight=sample_weight
            ),
            abs=1e-12,
        )


def test_multiclass_violations_are_one_vs_rest_maxima():
    groups, labels, predictions, _, _ = _random_problem(12, n=150, n_groups=3, n_classes=4)
    dp_binary, eo_binary = [], []
    for c in range(4):
        binary_true, binary_pred = (labels == c).astype(int), (predictions == c).astype(int)
        dp_binary.append(
            demographic_parity_violation(binary_true, binary_pred, sensitive_features=groups)
        )
        eo_binary.append(
            equalized_odds_violation(binary_true, binary_pred, sensitive_features=groups)
        )
    assert demographic_parity_violation(
        labels, predictions, sensitive_features=groups
    ) == pytest.approx(max(dp_binary), abs=1e-12)
    assert equalized_odds_violation(
        labels, predictions, sensitive_features=groups
    ) == pytest.approx(max(eo_binary), abs=1e-12)


def test_pairwise_violation_matches_the_definition_by_enumeration():
    groups, labels, predictions, _, _ = _random_problem(13, n=120, n_groups=3, n_classes=3)

    def rate(mask, c):
        return np.mean(predictions[mask] == c) if mask.any() else None

    dp, eo = 0.0, 0.0
    for c, g1, g2 in itertools.product(range(3), range(3), range(3)):
        in1, in2 = groups == g1, groups == g2
        dp = max(dp, abs(rate(in1, c) - rate(in2, c)))
        for condition in (labels == c, labels != c):
            r1, r2 = rate(in1 & condition, c), rate(in2 & condition, c)
            if r1 is not None and r2 is not None:
                eo = max(eo, abs(r1 - r2))
    assert demographic_parity_violation(labels, predictions, sensitive_features=groups) == (
        pytest.approx(dp, abs=1e-12)
    )
    assert equalized_odds_violation(labels, predictions, sensitive_features=groups) == (
        pytest.approx(eo, abs=1e-12)
    )


@pytest.mark.parametrize("seed", range(5))
def test_ermi_bounds_the_demographic_parity_violation(seed):
    groups, labels, predictions, _, _ = _random_problem(seed, n=100, n_groups=3)
    value = ermi(None, predictions, sensitive_features=groups)
    p_group = np.bincount(groups) / len(groups)
    for c in range(3):
        pooled = np.mean(predictions == c)
        for g in range(3):
            gap = abs(np.mean(predictions[groups == g] == c) - pooled)
            assert gap <= np.sqrt(value / p_group[g]) + 1e-12
    bound = np.sqrt(value / p_group.min())
    marginal = demographic_parity_violation(
        None, predictions, sensitive_features=groups, reference="marginal"
    )
    pairwise = demographic_parity_violation(None, predictions, sensitive_features=groups)
    assert marginal <= bound + 1e-12
    assert pairwise <= 2 * bound + 1e-12


def test_equalized_odds_without_comparable_groups_is_nan():
    labels = [0, 0, 1, 1]
    groups = ["a", "a", "b", "b"]  # no label is shared by both groups
    assert np.isnan(equalized_odds_violation(labels, [0, 1, 1, 0], sensitive_features=groups))
    assert equalized_odds_violation(labels, [0, 1, 1, 0], sensitive_features=[0, 0, 0, 0]) == 0.0


# ---- oracle 15 and inputs


def test_several_sensitive_columns_equal_their_joined_column():
    groups, labels, predictions, proba, _ = _random_problem(14, n=120, n_groups=4)
    frame = pd.DataFrame({"a": groups % 2, "b": np.where(groups < 2, "x", "y")})
    joined = frame["a"].astype(str) + "|" + frame["b"]
    for function, y_pred in (
        (ermi, proba),
        (conditional_ermi, proba),
        (demographic_parity_violation, predictions),
        (equalized_odds_violation, predictions),
    ):
        by_columns = function(labels, y_pred, sensitive_features=frame)
        by_joined = function(labels, y_pred, sensitive_features=joined)
        assert by_columns == pytest.approx(by_joined, abs=1e-12)


@pytest.mark.parametrize(
    ("function", "y_true", "y_pred", "message"),
    [
        (ermi, None, [[0.5, 0.6], [0.5, 0.5], [1.0, 0.0]], "probabilities"),
        (ermi, None, [[1.5, -0.5], [0.5, 0.5], [1.0, 0.0]], "probabilities"),
        (ermi, None, [[np.nan, 1.0], [0.5, 0.5], [1.0, 0.0]], "NaN"),
        (ermi, None, [[0.5], [0.5], [1.0]], "at least 2"),
        (ermi, [0, 1], [0, 1, 1], "same length"),
        (ermi, None, [0, np.nan, 1], "missing"),
        (ermi, None, [0.2, 0.7, 0.9], "2-D"),
        (conditional_ermi, None, [0, 1, 1], "y_true"),
        (conditional_ermi, [0, 1], [0, 1, 1], "same length"),
        (demographic_parity_violation, None, [[0.5, 0.5]] * 3, "1-D"),
        (equalized_odds_violation, None, [0, 1, 1], "y_true"),
        (equalized_odds_violation, [0, 1, None], [0, 1, 1], "missing"),
    ],
)
def test_invalid_inputs_raise_clear_errors(function, y_true, y_pred, message):
    with pytest.raises(ValueError, match=message):
        function(y_true, y_pred, sensitive_features=[0, 1, 1])


def test_invalid_options():
    with pytest.raises(ValueError, match="weighting"):
        conditional_ermi([0, 1], [0, 1], sensitive_features=[0, 1], weighting="sum")
    with pytest.raises(ValueError, match="reference"):
        demographic_parity_violation(None, [0, 1], sensitive_features=[0, 1], reference="x")
    with pytest.raises(ValueError, match="sample_weight"):
        ermi(None, [0, 1], sensitive_features=[0, 1], sample_weight=[0, 0])
