"""Excess accuracy gaps, Ind/Sp/Sf, loss gap, Wasserstein (constrained.md 2.1, 3.9, 5)."""

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    false_positive_rate,
    true_positive_rate,
)
from scipy.stats import wasserstein_distance
from sklearn.metrics import log_loss, precision_score

from fairest.metrics import (
    excess_accuracy_gaps,
    independence_gap,
    loss_gap,
    max_excess_accuracy_gap,
    pairwise_disparity,
    prediction_wasserstein,
    separation_gap,
    sufficiency_gap,
)


def _pruning_problem(seed, n=300, n_groups=4, n_classes=3):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, size=n)
    labels = rng.integers(0, n_classes, size=n)
    dense = np.where(rng.random(n) < 0.85, labels, rng.integers(0, n_classes, size=n))
    flip = rng.random(n) < 0.1 + 0.1 * groups  # later groups lose more accuracy
    sparse = np.where(flip, (dense + 1) % n_classes, dense)
    return labels, dense, sparse, groups, rng.uniform(0.5, 2.0, size=n)


def _binary_problem(seed, n=400, n_groups=2):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, size=n)
    labels = (rng.random(n) < 0.3 + 0.1 * groups).astype(int)
    predictions = np.where(rng.random(n) < 0.2 + 0.05 * groups, 1 - labels, labels)
    return labels, predictions, groups, rng.uniform(0.5, 2.0, size=n)


# ---- paper A: oracle 5


def test_identical_models_have_no_gaps():
    labels, dense, _, groups, _ = _pruning_problem(0)
    table = excess_accuracy_gaps(labels, dense, dense, sensitive_features=groups)
    np.testing.assert_array_equal(table["excess_accuracy_gap"], 0.0)
    assert max_excess_accuracy_gap(labels, dense, dense, sensitive_features=groups) == 0.0
    assert pairwise_disparity(labels, dense, dense, sensitive_features=groups) == 0.0


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weighted", [False, True])
def test_excess_gap_identities(seed, weighted):
    labels, dense, sparse, groups, weights = _pruning_problem(seed)
    weights = weights if weighted else None
    table = excess_accuracy_gaps(
        labels, dense, sparse, sensitive_features=groups, sample_weight=weights
    )
    psi, delta, share = (
        table["excess_accuracy_gap"],
        table["accuracy_gap"],
        table["share"],
    )
    assert share @ psi == pytest.approx(0.0, abs=1e-12)
    largest = max_excess_accuracy_gap(
        labels, dense, sparse, sensitive_features=groups, sample_weight=weights
    )
    spread = pairwise_disparity(
        labels, dense, sparse, sensitive_features=groups, sample_weight=weights
    )
    assert largest == pytest.approx(psi.max()) and largest >= 0
    assert spread == pytest.approx(psi.max() - psi.min(), abs=1e-12)
    assert spread == pytest.approx(delta.max() - delta.min(), abs=1e-12)


def test_excess_gaps_by_hand():
    labels = np.array([1, 1, 0, 0, 1, 0])
    dense = np.array([1, 1, 0, 0, 1, 1])  # group a: 4/4, group b: 1/2
    sparse = np.array([1, 0, 1, 0, 1, 1])  # group a: 2/4, group b: 1/2
    groups = np.array(["a", "a", "a", "a", "b", "b"])
    table = excess_accuracy_gaps(labels, dense, sparse, sensitive_features=groups)
    overall_gap = 5 / 6 - 3 / 6
    np.testing.assert_allclose(table["dense_accuracy"], [1.0, 0.5])
    np.testing.assert_allclose(table["sparse_accuracy"], [0.5, 0.5])
    np.testing.assert_allclose(table["accuracy_gap"], [0.5, 0.0])
    np.testing.assert_allclose(table["excess_accuracy_gap"], [0.5 - overall_gap, -overall_gap])
    assert list(table.index) == ["a", "b"]


def test_excess_gaps_with_string_labels_and_intersectional_groups():
    labels, dense, sparse, groups, _ = _pruning_problem(5, n_groups=4)
    names = np.array(["cat", "dog", "emu"])
    frame = pd.DataFrame({"a": groups // 2, "b": groups % 2})
    table = excess_accuracy_gaps(
        names[labels], names[dense], names[sparse], sensitive_features=frame
    )
    numeric = excess_accuracy_gaps(labels, dense, sparse, sensitive_features=groups)
    np.testing.assert_allclose(
        table["excess_accuracy_gap"].to_numpy(), numeric["excess_accuracy_gap"].to_numpy()
    )
    assert list(table.index) == [(0, 0), (0, 1), (1, 0), (1, 1)]


# ---- paper B: Ind / Sp / Sf


def _rate_spread(metric, labels, predictions, groups, weights):
    frame = MetricFrame(
        metrics=metric,
        y_true=labels,
        y_pred=predictions,
        sensitive_features=groups,
        sample_params=None if weights is None else {"sample_weight": weights},
    )
    return frame.difference(method="between_groups")


def _negative_predictive_value(y_true, y_pred, sample_weight=None):
    return precision_score(1 - y_true, 1 - y_pred, sample_weight=sample_weight)


@pytest.mark.parametrize(
    ("seed", "n_groups", "weighted"),
    [(0, 2, False), (1, 3, False), (2, 2, True), (3, 3, True)],
)
def test_independence_separation_sufficiency_match_fairlearn(seed, n_groups, weighted):
    labels, predictions, groups, weights = _binary_problem(seed, n_groups=n_groups)
    weights = weights if weighted else None
    kwargs = {"sensitive_features": groups, "sample_weight": weights}
    assert independence_gap(labels, predictions, **kwargs) == pytest.approx(
        demographic_parity_difference(labels, predictions, **kwargs), abs=1e-12
    )
    separation = _rate_spread(
        true_positive_rate, labels, predictions, groups, weights
    ) + _rate_spread(false_positive_rate, labels, predictions, groups, weights)
    assert separation_gap(labels, predictions, **kwargs) == pytest.approx(separation, abs=1e-12)
    sufficiency = _rate_spread(
        precision_score, labels, predictions, groups, weights
    ) + _rate_spread(_negative_predictive_value, labels, predictions, groups, weights)
    assert sufficiency_gap(labels, predictions, **kwargs) == pytest.approx(sufficiency, abs=1e-12)


def test_two_group_gaps_by_hand():
    labels = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    predictions = np.array([1, 1, 1, 0, 1, 0, 0, 0])
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    # group 0: PR 3/4, TPR 1, FPR 1/2, PPV 2/3, NPV 1; group 1: PR 1/4, TPR 1/2, FPR 0,
    # PPV 1, NPV 2/3
    assert independence_gap(labels, predictions, sensitive_features=groups) == 0.5
    assert separation_gap(labels, predictions, sensitive_features=groups) == pytest.approx(1.0)
    assert sufficiency_gap(labels, predictions, sensitive_features=groups) == pytest.approx(2 / 3)


def test_pos_label_and_label_coding():
    labels, predictions, groups, _ = _binary_problem(7)
    words = np.array(["no", "yes"])
    for function in (independence_gap, separation_gap, sufficiency_gap):
        numeric = function(labels, predictions, sensitive_features=groups)
        named = function(
            words[labels], words[predictions], sensitive_features=groups, pos_label="yes"
        )
        signed = function(2 * labels - 1, 2 * predictions - 1, sensitive_features=groups)
        assert named == pytest.approx(numeric, abs=1e-12)
        assert signed == pytest.approx(numeric, abs=1e-12)
    with pytest.raises(ValueError, match="pos_label"):
        independence_gap(words[labels], words[predictions], sensitive_features=groups)
    with pytest.raises(ValueError, match="binary"):
        separation_gap([0, 1, 2], [0, 1, 1], sensitive_features=[0, 1, 1])


def test_undefined_rates_and_single_group():
    labels = np.array([0, 0, 1, 1])
    predictions = np.array([0, 1, 1, 1])
    groups = np.array(["a", "a", "b", "b"])  # a has no positives, b no negatives
    assert np.isnan(separation_gap(labels, predictions, sensitive_features=groups))
    # only the PPV spread is defined for both groups (a: 0/1, b: 2/2)
    assert sufficiency_gap(labels, predictions, sensitive_features=groups) == 1.0
    for function in (independence_gap, separation_gap, sufficiency_gap):
        assert function(labels, predictions, sensitive_features=np.zeros(4)) == 0.0


# ---- loss gap


@pytest.mark.parametrize("n_groups", [2, 3])
def test_loss_gap_matches_sklearn_log_loss(n_groups):
    rng = np.random.default_rng(n_groups)
    n = 300
    groups = rng.integers(0, n_groups, size=n)
    labels = rng.integers(0, 3, size=n)
    logits = rng.normal(size=(n, 3))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    weights = rng.uniform(0.5, 2.0, size=n)
    losses = [
        log_loss(
            labels[groups == g],
            proba[groups == g],
            labels=[0, 1, 2],
            sample_weight=weights[groups == g],
        )
        for g in range(n_groups)
    ]
    value = loss_gap(labels, proba, sensitive_features=groups, sample_weight=weights)
    assert value == pytest.approx(max(losses) - min(losses), abs=1e-12)
    binary = (labels > 0).astype(int)
    positive = proba[:, 1:].sum(axis=1)
    binary_losses = [log_loss(binary[groups == g], positive[groups == g]) for g in range(n_groups)]
    assert loss_gap(binary, positive, sensitive_features=groups) == pytest.approx(
        max(binary_losses) - min(binary_losses), abs=1e-12
    )
    with pytest.raises(ValueError, match="columns"):
        loss_gap(labels, proba[:, :2], sensitive_features=groups)


# ---- Wasserstein


def _score_problem(seed, n=300, n_groups=2):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, size=n)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + 0.5 * groups)))
    return scores, groups, rng.uniform(0.1, 3.0, size=n)


def _north_west_corner_cost(support, a, b, p):
    """W_p^p of two histograms on one sorted support, by the north-west corner rule."""
    a, b = list(a), list(b)
    i = j = 0
    cost = 0.0
    while i < len(a) and j < len(b):
        moved = min(a[i], b[j])
        cost += moved * abs(support[i] - support[j]) ** p
        a[i] -= moved
        b[j] -= moved
        if a[i] <= 1e-15:
            i += 1
        else:
            j += 1
    return cost


@pytest.mark.parametrize("seed", range(3))
def test_exact_w1_matches_scipy(seed):
    scores, groups, weights = _score_problem(seed)
    a, b = groups == 0, groups == 1
    for sample_weight in (None, weights):
        value = prediction_wasserstein(
            None,
            scores,
            sensitive_features=groups,
            sample_weight=sample_weight,
            bins=None,
            p=1,
        )
        expected = wasserstein_distance(
            scores[a],
            scores[b],
            None if sample_weight is None else weights[a],
            None if sample_weight is None else weights[b],
        )
        assert value == pytest.approx(expected, abs=1e-12)


def test_binned_w1_matches_scipy_on_the_histograms():
    scores, groups, _ = _score_problem(4)
    reference, edges = np.histogram(scores[groups == 0], bins=50)
    other, _ = np.histogram(scores[groups == 1], bins=edges)
    expected = wasserstein_distance(edges[1:], edges[1:], reference, other)
    value = prediction_wasserstein(None, scores, sensitive_features=groups, p=1)
    assert value == pytest.approx(expected, abs=1e-12)


def test_binned_squared_w2_matches_north_west_corner_transport():
    scores, groups, _ = _score_problem(5)
    reference, edges = np.histogram(scores[groups == 0], bins=50)
    other, _ = np.histogram(scores[groups == 1], bins=edges)
    expected = _north_west_corner_cost(
        edges[1:], reference / reference.sum(), other / other.sum(), p=2
    )
    value = prediction_wasserstein(None, scores, sensitive_features=groups)
    assert value == pytest.approx(expected, abs=1e-12)
    root = prediction_wasserstein(None, scores, sensitive_features=groups, squared=False)
    assert root == pytest.approx(np.sqrt(expected), abs=1e-12)


def test_exact_w2_of_equal_sized_samples_pairs_sorted_values():
    rng = np.random.default_rng(6)
    u, v = rng.normal(size=40), rng.normal(1.0, 2.0, size=40)
    scores, groups = np.concatenate([u, v]), np.repeat([0, 1], 40)
    expected = np.mean((np.sort(u) - np.sort(v)) ** 2)
    value = prediction_wasserstein(None, scores, sensitive_features=groups, bins=None)
    assert value == pytest.approx(expected, abs=1e-12)
    cubic = prediction_wasserstein(None, scores, sensitive_features=groups, bins=None, p=3)
    assert cubic == pytest.approx(np.mean(np.abs(np.sort(u) - np.sort(v)) ** 3), abs=1e-12)


def test_wasserstein_multi_group_is_largest_pair_and_zero_for_equal_laws():
    scores, groups, _ = _score_problem(7, n=450, n_groups=3)
    value = prediction_wasserstein(None, scores, sensitive_features=groups, bins=None, p=1)
    pairs = [
        wasserstein_distance(scores[groups == g], scores[groups == h])
        for g, h in ((0, 1), (0, 2), (1, 2))
    ]
    assert value == pytest.approx(max(pairs), abs=1e-12)
    same = np.tile(scores[:50], 2)
    halves = np.repeat(["a", "b"], 50)
    assert prediction_wasserstein(None, same, sensitive_features=halves) == 0.0
    assert prediction_wasserstein(None, same, sensitive_features=halves, bins=None) == 0.0


def test_wasserstein_errors():
    with pytest.raises(ValueError, match="outside|inside"):
        prediction_wasserstein(None, [0.1, 0.2, 0.8, 0.9], sensitive_features=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="p must"):
        prediction_wasserstein(None, [0.1, 0.2], sensitive_features=[0, 1], p=0.5)
    with pytest.raises(ValueError, match="bins"):
        prediction_wasserstein(None, [0.1, 0.2], sensitive_features=[0, 1], bins=0)
    with pytest.raises(ValueError, match="NaN"):
        prediction_wasserstein(None, [0.1, np.nan], sensitive_features=[0, 1])


@pytest.mark.parametrize(
    ("function", "args", "message"),
    [
        (excess_accuracy_gaps, ([0, 1, 1], [0, 1], [0, 1, 1]), "same length"),
        (max_excess_accuracy_gap, ([0, 1, None], [0, 1, 1], [0, 1, 1]), "missing"),
        (independence_gap, (None, [0, 1]), "same length|rows"),
        (separation_gap, (None, [0, 1, 1]), "y_true"),
        (sufficiency_gap, ([0, 1, 1], [0, 1, np.nan]), "missing"),
    ],
)
def test_invalid_inputs_raise_clear_errors(function, args, message):
    with pytest.raises(ValueError, match=message):
        function(*args, sensitive_features=[0, 1, 1])
