"""Exact numpy metrics: spec golden values, fairlearn parity, fast IF, identities, errors."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import UndefinedMetricWarning

import fairest.metrics as fm
from fairest.metrics._individual import (
    affine_prefix_scan,
    cross_group_energy_cells,
    cross_group_energy_sorted,
)

fairlearn_metrics = pytest.importorskip("fairlearn.metrics")

# spec badr.md 3.10: G = 2, intercept 0, w = (0.8, -0.6)
GOLDEN_SCORES = np.array([0.5, -1.0, 0.96, 1.54, -0.56, 0.02, -0.34, 1.68])
GOLDEN_Y = np.array([1, 0, 0, 1, 0, 1, 1, 0])
GOLDEN_Y_REAL = np.array([1.2, -0.3, 0.5, 2.1, -1.0, 0.8, 0.1, -0.6])
GOLDEN_GROUPS = np.array([0, 0, 0, 0, 1, 1, 1, 1])
GOLDEN_TOL = 1e-8


def test_golden_scores_follow_from_the_toy_model():
    features = np.array(
        [
            [1.0, 0.5],
            [-0.5, 1.0],
            [0.3, -1.2],
            [2.0, 0.1],
            [-1.0, -0.4],
            [0.7, 0.9],
            [-0.2, 0.3],
            [1.5, -0.8],
        ]
    )
    np.testing.assert_allclose(features @ np.array([0.8, -0.6]), GOLDEN_SCORES, atol=1e-12)


@pytest.mark.parametrize(
    ("metric", "y", "kwargs", "expected"),
    [
        (fm.individual_fairness, GOLDEN_Y, {}, 0.657203376),
        (fm.individual_fairness, GOLDEN_Y_REAL, {}, 0.3307111627),
        (fm.disparate_mistreatment, GOLDEN_Y, {}, 0.005625),
        (fm.hsic_linear, GOLDEN_Y, {}, 0.007346938776),
        (fm.demographic_parity_deviation, GOLDEN_Y, {}, 0.125),
        (fm.equal_opportunity_range, GOLDEN_Y, {}, 0.5),
        (fm.equalized_odds_range, GOLDEN_Y, {}, 0.25),
        (fm.group_loss_variance, GOLDEN_Y, {"loss": "logistic"}, 0.03988615405),
        (fm.group_loss_variance, GOLDEN_Y, {"loss": "squared_hinge"}, 0.5701005025),
        (fm.group_loss_variance, GOLDEN_Y_REAL, {"loss": "squared_error"}, 0.34351321),
    ],
)
def test_golden_values(metric, y, kwargs, expected):
    value = metric(y, GOLDEN_SCORES, sensitive_features=GOLDEN_GROUPS, **kwargs)
    assert isinstance(value, float)
    assert value == pytest.approx(expected, abs=GOLDEN_TOL)


# ---------------------------------------------------------------------------------------
# fairlearn parity


def _random_classification(seed, n_groups, n=240):
    rng = np.random.default_rng(seed)
    groups = rng.choice([f"g{k}" for k in range(n_groups)], size=n)
    y_true = rng.integers(0, 2, n)
    y_pred = (rng.random(n) < 0.3 + 0.1 * (groups == "g0")).astype(int)
    weights = rng.uniform(0.1, 3.0, n)
    return y_true, y_pred, groups, weights


FAIRLEARN_CASES = [(0, 2, False), (1, 3, True), (2, 4, True), (3, 5, False), (4, 5, True)]
PARITY_NAMES = [
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equal_opportunity_difference",
    "equal_opportunity_ratio",
]


@pytest.mark.parametrize(("seed", "n_groups", "weighted"), FAIRLEARN_CASES)
def test_parity_metrics_match_fairlearn(seed, n_groups, weighted):
    y_true, y_pred, groups, weights = _random_classification(seed, n_groups)
    sample_weight = weights if weighted else None
    for name in PARITY_NAMES:
        for method in ("between_groups", "to_overall"):
            kwargs = dict(sensitive_features=groups, method=method, sample_weight=sample_weight)
            ours = getattr(fm, name)(y_true, y_pred, **kwargs)
            theirs = getattr(fairlearn_metrics, name)(y_true, y_pred, **kwargs)
            assert ours == pytest.approx(theirs, abs=1e-12), (name, method)


@pytest.mark.parametrize(("seed", "n_groups", "weighted"), FAIRLEARN_CASES[::2])
def test_equalized_odds_matches_fairlearn(seed, n_groups, weighted):
    y_true, y_pred, groups, weights = _random_classification(seed, n_groups)
    sample_weight = weights if weighted else None
    for name in ("equalized_odds_difference", "equalized_odds_ratio"):
        for method in ("between_groups", "to_overall"):
            for agg in ("worst_case", "mean"):
                kwargs = dict(
                    sensitive_features=groups,
                    method=method,
                    sample_weight=sample_weight,
                    agg=agg,
                )
                ours = getattr(fm, name)(y_true, y_pred, **kwargs)
                theirs = getattr(fairlearn_metrics, name)(y_true, y_pred, **kwargs)
                assert ours == pytest.approx(theirs, abs=1e-12), (name, method, agg)


def test_fairlearn_parity_with_intersectional_groups_and_signed_labels():
    rng = np.random.default_rng(7)
    n = 300
    features = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "age": rng.integers(0, 3, n)})
    y_true = rng.choice([-1, 1], n)
    y_pred = rng.choice([-1, 1], n)
    for name in PARITY_NAMES + ["equalized_odds_difference", "equalized_odds_ratio"]:
        ours = getattr(fm, name)(y_true, y_pred, sensitive_features=features)
        theirs = getattr(fairlearn_metrics, name)(y_true, y_pred, sensitive_features=features)
        assert ours == pytest.approx(theirs, abs=1e-12), name


def test_ratio_is_nan_when_nothing_is_selected_like_fairlearn():
    y_true = np.array([0, 1, 0, 1])
    y_pred = np.zeros(4)
    groups = np.array([0, 0, 1, 1])
    for method in ("between_groups", "to_overall"):
        ours = fm.demographic_parity_ratio(y_true, y_pred, sensitive_features=groups, method=method)
        theirs = fairlearn_metrics.demographic_parity_ratio(
            y_true, y_pred, sensitive_features=groups, method=method
        )
        assert np.isnan(ours) and np.isnan(theirs)


@pytest.mark.parametrize("zero_rate", ["tpr", "fpr"])
def test_equalized_odds_ratio_handles_a_nan_ratio_like_fairlearn(zero_rate):
    y_true = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    groups = np.repeat(["a", "b"], 4)
    # every positive (negative) is predicted negative: the TPR (FPR) ratio is 0/0
    y_pred = {
        "tpr": np.array([0, 0, 1, 0, 0, 0, 0, 1]),
        "fpr": np.array([1, 1, 0, 0, 0, 1, 0, 0]),
    }[zero_rate]
    for method in ("between_groups", "to_overall"):
        for agg in ("worst_case", "mean"):
            kwargs = dict(sensitive_features=groups, method=method, agg=agg)
            ours = fm.equalized_odds_ratio(y_true, y_pred, **kwargs)
            theirs = fairlearn_metrics.equalized_odds_ratio(y_true, y_pred, **kwargs)
            np.testing.assert_allclose(ours, theirs, atol=1e-12, err_msg=f"{method} {agg}")


def test_group_without_positives_counts_as_rate_zero_like_fairlearn():
    """Rate 0 and, as in fairlearn, no warning (the suite turns warnings into errors)."""
    y_true = np.array([1, 1, 0, 0, 0, 0])
    y_pred = np.array([1, 0, 1, 0, 0, 1])
    groups = np.array(["a", "a", "a", "b", "b", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = fm.equal_opportunity_difference(y_true, y_pred, sensitive_features=groups)
        odds = fm.equalized_odds_difference(y_true, y_pred, sensitive_features=groups)
    theirs = fairlearn_metrics.equal_opportunity_difference(
        y_true, y_pred, sensitive_features=groups
    )
    assert ours == pytest.approx(theirs) == pytest.approx(0.5)
    assert odds == pytest.approx(
        fairlearn_metrics.equalized_odds_difference(y_true, y_pred, sensitive_features=groups)
    )


# ---------------------------------------------------------------------------------------
# BADR score metrics versus their definitions


def _random_scores(seed, n_groups, n=150, real_labels=False):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n)
    scores = rng.normal(size=n) + 0.3 * groups
    y = rng.normal(size=n) if real_labels else rng.integers(0, 2, n).astype(float)
    weights = rng.uniform(0.2, 2.0, n)
    return y, scores, groups, weights


def test_score_parity_metrics_relate_to_fairlearn_on_hard_predictions():
    y, scores, groups, weights = _random_scores(11, 4)
    hard = (scores >= 0).astype(int)
    kwargs = dict(sensitive_features=groups, sample_weight=weights)
    assert fm.equal_opportunity_range(y, scores, **kwargs) == pytest.approx(
        fairlearn_metrics.equal_opportunity_difference(y, hard, **kwargs), abs=1e-12
    )
    assert fm.equalized_odds_range(y, scores, **kwargs) == pytest.approx(
        fairlearn_metrics.equalized_odds_difference(y, hard, agg="mean", **kwargs), abs=1e-12
    )


def test_demographic_parity_deviation_definition():
    y, scores, groups, weights = _random_scores(12, 3)
    rates = np.array(
        [np.average(scores[groups == g] >= 0.2, weights=weights[groups == g]) for g in range(3)]
    )
    expected = np.max(np.abs(rates - rates.mean()))
    value = fm.demographic_parity_deviation(
        y, scores, sensitive_features=groups, sample_weight=weights, threshold=0.2
    )
    assert value == pytest.approx(expected, abs=1e-14)
    means = np.array([scores[groups == g].mean() for g in range(3)])
    value = fm.demographic_parity_deviation(y, scores, sensitive_features=groups, task="regression")
    assert value == pytest.approx(np.max(np.abs(means - means.mean())), abs=1e-14)


def test_group_without_positives_is_left_out_of_equal_opportunity_range():
    scores = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    y = np.array([1, 1, 0, 0, 0])
    groups = np.array([0, 0, 1, 1, 1])
    with pytest.warns(UndefinedMetricWarning, match="left out"):
        assert fm.equal_opportunity_range(y, scores, sensitive_features=groups) == 0.0
    with pytest.raises(ValueError, match="no group has a positive"):
        fm.equal_opportunity_range(np.zeros(5), scores, sensitive_features=groups)


def test_group_loss_variance_definition_and_zero_when_losses_equal():
    y, scores, groups, weights = _random_scores(13, 3)
    losses = np.logaddexp(0, scores) - y * scores
    group_losses = [np.average(losses[groups == g], weights=weights[groups == g]) for g in range(3)]
    value = fm.group_loss_variance(y, scores, sensitive_features=groups, sample_weight=weights)
    assert value == pytest.approx(np.var(group_losses), abs=1e-14)
    mirrored = np.concatenate([scores, scores])
    assert fm.group_loss_variance(
        np.concatenate([y, y]), mirrored, sensitive_features=np.repeat([0, 1], y.size)
    ) == pytest.approx(0.0, abs=1e-15)


def test_metric_identities():
    y, scores, groups, _ = _random_scores(14, 2)
    kwargs = dict(sensitive_features=groups)
    n = y.size
    dm = fm.disparate_mistreatment(y, scores, **kwargs)
    hsic = fm.hsic_linear(y, scores, **kwargs)
    assert hsic == pytest.approx((n / (n - 1)) ** 2 * dm, rel=1e-12)
    onehot = fm.hsic_linear(y, scores, encoding="onehot", **kwargs)
    assert onehot == pytest.approx(2 * hsic, rel=1e-12)
    # one-hot encoding does not depend on the numbering of the groups (G = 4)
    y4, scores4, groups4, _ = _random_scores(15, 4)
    relabelled = np.array([3, 0, 2, 1])[groups4]
    for metric in (fm.disparate_mistreatment, fm.hsic_linear):
        a = metric(y4, scores4, sensitive_features=groups4, encoding="onehot")
        b = metric(y4, scores4, sensitive_features=relabelled, encoding="onehot")
        assert a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize(
    ("metric", "kwargs"),
    [
        (fm.individual_fairness, {}),
        (fm.disparate_mistreatment, {}),
        (fm.hsic_linear, {"encoding": "onehot"}),
        (fm.demographic_parity_deviation, {"task": "regression"}),
    ],
)
def test_shift_invariant_metrics(metric, kwargs):
    y, scores, groups, _ = _random_scores(16, 3, real_labels=True)
    base = metric(y, scores, sensitive_features=groups, **kwargs)
    shifted = metric(y, scores + 3.7, sensitive_features=groups, **kwargs)
    assert shifted == pytest.approx(base, rel=1e-10, abs=1e-14)


BADR_METRICS = [
    (fm.individual_fairness, {}, False),
    (fm.individual_fairness, {}, True),
    (fm.disparate_mistreatment, {"encoding": "index"}, False),
    (fm.hsic_linear, {"encoding": "onehot"}, False),
    (fm.demographic_parity_deviation, {}, False),
    (fm.equal_opportunity_range, {}, False),
    (fm.equalized_odds_range, {}, False),
    (fm.group_loss_variance, {"loss": "squared_hinge"}, False),
    (fm.group_loss_variance, {"loss": "squared_error"}, True),
]


@pytest.mark.parametrize(("metric", "kwargs", "real_labels"), BADR_METRICS)
def test_integer_weights_equal_repeated_rows_and_permutation_invariance(
    metric, kwargs, real_labels
):
    y, scores, groups, _ = _random_scores(17, 3, n=60, real_labels=real_labels)
    counts = np.random.default_rng(0).integers(0, 4, y.size)
    counts[:3] = 1  # keep every group non-empty
    weighted = metric(y, scores, sensitive_features=groups, sample_weight=counts, **kwargs)
    rows = np.repeat(np.arange(y.size), counts)
    repeated = metric(y[rows], scores[rows], sensitive_features=groups[rows], **kwargs)
    assert weighted == pytest.approx(repeated, rel=1e-10, abs=1e-14)
    order = np.random.default_rng(1).permutation(y.size)
    permuted = metric(
        y[order],
        scores[order],
        sensitive_features=groups[order],
        sample_weight=counts[order],
        **kwargs,
    )
    assert permuted == pytest.approx(weighted, rel=1e-10, abs=1e-14)


# ---------------------------------------------------------------------------------------
# fast individual fairness versus the O(n^2) double sum


def brute_force_individual_fairness(y, scores, groups, weights):
    kernel = np.exp(-np.abs(y[:, None] - y[None, :]))
    cross = groups[:, None] != groups[None, :]
    pair_weight = weights[:, None] * weights[None, :]
    squared_gaps = (scores[:, None] - scores[None, :]) ** 2
    numerator = 0.5 * np.sum(pair_weight * kernel * squared_gaps * cross)
    return numerator / np.sum(pair_weight * cross)


def _labels(kind, rng, n):
    if kind == "binary":
        return rng.integers(0, 2, n).astype(float)
    if kind == "ties":
        return rng.integers(-3, 4, n) * 0.5  # heavy ties, few distinct values
    return rng.normal(scale=2.0, size=n)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("label_kind", ["binary", "ties", "real"])
def test_fast_individual_fairness_equals_brute_force(seed, label_kind):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 90))
    n_groups = 2 + seed % 3
    groups = rng.integers(0, n_groups, n)
    groups[:n_groups] = np.arange(n_groups)
    y = _labels(label_kind, rng, n)
    scores = rng.normal(size=n) * 2 + 5
    weights = rng.uniform(0.0, 2.0, n)
    expected = brute_force_individual_fairness(y, scores, groups, weights)
    value = fm.individual_fairness(y, scores, sensitive_features=groups, sample_weight=weights)
    assert value == pytest.approx(expected, rel=1e-12)
    # both private algorithms agree with the double sum whatever the labels
    numerator = expected * (weights.sum() ** 2 - np.sum(np.bincount(groups, weights) ** 2))
    centred = scores - np.average(scores, weights=weights)
    for algorithm in (cross_group_energy_cells, cross_group_energy_sorted):
        assert algorithm(y, centred, weights, groups, n_groups) == pytest.approx(
            numerator, rel=1e-11
        )


def test_affine_prefix_scan_matches_the_sequential_recursion():
    rng = np.random.default_rng(3)
    decay = rng.random(37)
    values = rng.normal(size=(37, 2))
    expected = np.zeros_like(values)
    previous = np.zeros(2)
    for k in range(37):
        previous = values[k] + (decay[k] if k else 0.0) * previous
        expected[k] = previous
    np.testing.assert_allclose(affine_prefix_scan(decay, values), expected, rtol=1e-13)


# ---------------------------------------------------------------------------------------
# input validation


def test_clear_errors_for_bad_input():
    y = np.array([0, 1, 0, 1])
    pred = np.array([0, 1, 1, 1])
    groups = np.array(["a", "a", "b", "b"])
    with pytest.raises(ValueError, match="same length"):
        fm.demographic_parity_difference(y, pred[:3], sensitive_features=groups)
    with pytest.raises(ValueError, match="rows"):
        fm.demographic_parity_difference(y, pred, sensitive_features=groups[:3])
    with pytest.raises(ValueError, match="NaN or infinite.*position 2"):
        fm.individual_fairness(y, np.array([0.1, 0.2, np.nan, 0.3]), sensitive_features=groups)
    with pytest.raises(ValueError, match="scores contains NaN or infinite"):
        fm.disparate_mistreatment(y, np.array([0.1, np.inf, 0, 0]), sensitive_features=groups)
    with pytest.raises(ValueError, match="binary labels"):
        fm.equal_opportunity_difference(y, np.array([0, 2, 1, 1]), sensitive_features=groups)
    with pytest.raises(ValueError, match="binary labels"):
        fm.group_loss_variance(np.array([0, 2, 0, 1]), pred * 1.0, sensitive_features=groups)
    with pytest.raises(ValueError, match="method"):
        fm.demographic_parity_difference(y, pred, sensitive_features=groups, method="overall")
    with pytest.raises(ValueError, match="agg"):
        fm.equalized_odds_difference(y, pred, sensitive_features=groups, agg="max")
    with pytest.raises(ValueError, match="loss"):
        fm.group_loss_variance(y, pred * 1.0, sensitive_features=groups, loss="hinge")
    with pytest.raises(ValueError, match="encoding"):
        fm.hsic_linear(y, pred * 1.0, sensitive_features=groups, encoding="ordinal")
    with pytest.raises(ValueError, match="task"):
        fm.demographic_parity_deviation(y, pred * 1.0, sensitive_features=groups, task="ranking")
    with pytest.raises(ValueError, match="non-negative"):
        fm.demographic_parity_difference(
            y, pred, sensitive_features=groups, sample_weight=[1, -1, 1, 1]
        )
    with pytest.raises(ValueError, match="positive total sample_weight.*'b'"):
        fm.demographic_parity_difference(
            y, pred, sensitive_features=groups, sample_weight=[1, 1, 0, 0]
        )
    with pytest.raises(ValueError, match="at least 2"):
        fm.individual_fairness(y, pred * 1.0, sensitive_features=["a"] * 4)
    with pytest.raises(ValueError, match="above 1"):
        fm.hsic_linear(y, pred * 1.0, sensitive_features=groups, sample_weight=[0.2] * 4)
    with pytest.raises(ValueError, match="one-dimensional"):
        fm.disparate_mistreatment(y, np.ones((4, 2)), sensitive_features=groups)
    with pytest.raises(ValueError, match="numeric"):
        fm.demographic_parity_difference(y, ["no", "yes", "no", "yes"], sensitive_features=groups)
    with pytest.raises(ValueError, match="empty"):
        fm.demographic_parity_difference([], [], sensitive_features=[])
    with pytest.raises(ValueError, match="missing"):
        fm.demographic_parity_difference(y, pred, sensitive_features=["a", None, "b", "b"])


def test_pandas_inputs_and_missing_values():
    frame = pd.DataFrame({"y": [0, 1, 0, 1], "s": [0.3, -0.2, 1.0, 0.5], "g": list("aabb")})
    value = fm.disparate_mistreatment(frame["y"], frame["s"], sensitive_features=frame["g"])
    assert value == pytest.approx(
        fm.disparate_mistreatment(
            [0, 1, 0, 1], [0.3, -0.2, 1.0, 0.5], sensitive_features=[0, 0, 1, 1]
        )
    )
    with pytest.raises(ValueError, match="NaN"):
        fm.disparate_mistreatment(
            frame["y"],
            pd.Series([0.3, None, 1.0, 0.5], dtype="Float64"),
            sensitive_features=frame["g"],
        )
