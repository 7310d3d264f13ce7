"""Exact partial statistical / demographic parity (partial_fairness.md 2, 12)."""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp

from fairest.metrics import (
    partial_demographic_parity,
    partial_fairness_score,
    partial_parity_matrix,
    partial_statistical_parity,
    rank_curve,
    suggest_interval,
)
from fairest.metrics._partial import _percentile_bands, _rank_within_groups


def _scores_and_groups(seed, n=200, n_groups=2, shift=0.4, rounding=None):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, size=n)
    scores = rng.normal(size=n) + shift * groups
    if rounding is not None:  # create ties
        scores = np.round(scores, rounding)
    return scores, groups


def _band_by_sorting(scores, interval):
    """Reference band: sorted positions ceil(alpha n)+1 .. ceil(beta n), stable ties."""
    alpha, beta = (Fraction(str(v)) for v in interval)
    n = scores.size
    order = np.argsort(-scores, kind="stable")
    return scores[order[math.ceil(alpha * n) : math.ceil(beta * n)]]


def _psp_by_sorting(scores, groups, interval):
    labels = np.unique(groups)
    bands = [_band_by_sorting(scores[groups == g], interval) for g in labels]
    return max(
        ks_2samp(bands[i], bands[j]).statistic
        for i in range(len(bands))
        for j in range(i + 1, len(bands))
    )


# ---- oracle 1 and 2: full SP / DP


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rounding", [None, 1])
def test_full_interval_is_kolmogorov_smirnov(seed, rounding):
    scores, groups = _scores_and_groups(seed, rounding=rounding)
    expected = ks_2samp(scores[groups == 0], scores[groups == 1]).statistic
    value = partial_statistical_parity(None, scores, sensitive_features=groups, interval=(0.0, 1.0))
    assert value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("threshold", [0.0, 0.3, -1.0])
def test_full_interval_pdp_is_demographic_parity(threshold):
    scores, groups = _scores_and_groups(7, rounding=1)
    rates = [np.mean(scores[groups == g] > threshold) for g in (0, 1)]
    value = partial_demographic_parity(
        None, scores, sensitive_features=groups, interval=(0, 1), threshold=threshold
    )
    assert value == pytest.approx(abs(rates[0] - rates[1]), abs=1e-12)


# ---- oracle 3: band sizes, clip form


@pytest.mark.parametrize("n", [1, 7, 10, 20, 33, 100])
@pytest.mark.parametrize("interval", [(0.05, 0.3), (0.2, 0.4), (0.7, 1.0), (0.0, 0.25), (0.1, 0.3)])
def test_band_sizes_follow_the_ceiling_convention(n, interval):
    alpha, beta = (Fraction(str(v)) for v in interval)
    expected = math.ceil(beta * n) - math.ceil(alpha * n)
    ranked = _rank_within_groups(
        np.arange(n, dtype=float), np.zeros(n, dtype=np.int32), np.ones(n), np.array(["g"])
    )
    if expected == 0:
        with pytest.raises(ValueError, match="empty"):
            _percentile_bands(ranked, interval)
        return
    _, _, _, band_mass = _percentile_bands(ranked, interval)
    assert band_mass[0] == expected


@pytest.mark.parametrize("interval", [(0.05, 0.3), (0.2, 0.4), (0.7, 1.0), (0.3, 0.35)])
@pytest.mark.parametrize("rounding", [None, 1])
def test_psp_equals_ks_of_sorted_bands(interval, rounding):
    scores, groups = _scores_and_groups(3, n=300, n_groups=3, rounding=rounding)
    value = partial_statistical_parity(None, scores, sensitive_features=groups, interval=interval)
    assert value == pytest.approx(_psp_by_sorting(scores, groups, interval), abs=1e-12)


def test_psp_equals_clip_formula_when_band_edges_are_integers():
    rng = np.random.default_rng(11)
    scores = rng.normal(size=120)  # 60 per group: 0.05 * 60, 0.3 * 60 are integers
    groups = np.repeat([0, 1], 60)
    scores[groups == 1] += 0.5
    alpha, beta = 0.05, 0.3
    thresholds = np.unique(scores)

    def clipped_exceedance(group_scores):
        rate = (group_scores[None, :] > thresholds[:, None]).mean(axis=1)
        return (np.clip(rate, alpha, beta) - alpha) / (beta - alpha)

    expected = np.abs(
        clipped_exceedance(scores[groups == 0]) - clipped_exceedance(scores[groups == 1])
    ).max()
    value = partial_statistical_parity(
        None, scores, sensitive_features=groups, interval=(alpha, beta)
    )
    assert value == pytest.approx(expected, abs=1e-12)


# ---- oracle 4: symmetry, range, invariance


@pytest.mark.parametrize("transform", [np.exp, lambda s: s**3, np.arctan, lambda s: 5 * s - 2])
def test_psp_invariant_under_strictly_increasing_maps(transform):
    scores, groups = _scores_and_groups(5, n=250, n_groups=3, rounding=1)
    for interval in [(0.0, 1.0), (0.1, 0.45), (0.6, 1.0)]:
        before = partial_parity_matrix(None, scores, sensitive_features=groups, interval=interval)
        after = partial_parity_matrix(
            None, transform(scores), sensitive_features=groups, interval=interval
        )
        np.testing.assert_allclose(after.to_numpy(), before.to_numpy(), atol=1e-12)


@pytest.mark.parametrize("metric", ["psp", "pdp"])
def test_matrix_is_symmetric_in_unit_range_and_matches_scalars(metric):
    scores, groups = _scores_and_groups(9, n=400, n_groups=4)
    labels = np.array(["w", "x", "y", "z"])[groups]
    matrix = partial_parity_matrix(
        None, scores, sensitive_features=labels, interval=(0.2, 0.6), metric=metric
    )
    values = matrix.to_numpy()
    assert list(matrix.index) == ["w", "x", "y", "z"]
    np.testing.assert_array_equal(values, values.T)
    np.testing.assert_array_equal(np.diag(values), 0.0)
    assert ((values >= 0) & (values <= 1)).all()
    scalar = (partial_statistical_parity if metric == "psp" else partial_demographic_parity)(
        None, scores, sensitive_features=labels, interval=(0.2, 0.6)
    )
    assert scalar == values.max()
    score = partial_fairness_score(
        None, scores, sensitive_features=labels, interval=(0.2, 0.6), metric=metric
    )
    assert score == pytest.approx(1.0 - values.max())


# ---- oracle 5: tied scores


def test_all_tied_scores_are_perfectly_fair():
    groups = np.repeat(["a", "b"], [30, 50])
    scores = np.zeros(80)
    for metric in ("psp", "pdp"):
        score = partial_fairness_score(
            None, scores, sensitive_features=groups, interval=(0.05, 0.3), metric=metric
        )
        assert score == 1.0


# ---- oracle 6: Lemma 5.1


def _smallest_kappa_with_shared_thresholds(scores, groups, interval, n_levels=400):
    """Smallest kappa such that every level p on a dense grid of [alpha, beta - c) has a
    threshold shared by all groups with every group CCDF in [p, p + c], c = kappa width."""
    alpha, beta = interval
    width = beta - alpha
    _, ranks, _ = rank_curve(scores, sensitive_features=groups)
    ranks = np.vstack([ranks, np.ones(ranks.shape[1])])  # threshold below every score
    lowest, highest = ranks.min(axis=1), ranks.max(axis=1)
    levels = np.linspace(alpha, beta, n_levels, endpoint=False)
    feasible_lowest = lowest[None, :] >= levels[:, None] - 1e-12
    needed = np.where(feasible_lowest, highest[None, :] - levels[:, None], np.inf).min(axis=1)

    def holds(kappa):
        active = levels < beta - kappa * width
        return bool((needed[active] <= kappa * width + 1e-12).all())

    low, high = 0.0, 1.0
    for _ in range(40):
        middle = 0.5 * (low + high)
        low, high = (low, middle) if holds(middle) else (middle, high)
    return high


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("interval", [(0.05, 0.3), (0.2, 0.6), (0.0, 1.0)])
def test_lemma_5_1_grid_condition_matches_psp(seed, interval):
    scores, groups = _scores_and_groups(seed, n=600, shift=0.3)
    value = partial_statistical_parity(None, scores, sensitive_features=groups, interval=interval)
    kappa = _smallest_kappa_with_shared_thresholds(scores, groups, interval)
    n_min = np.bincount(groups).min()
    assert abs(kappa - value) <= 2.0 / (n_min * (interval[1] - interval[0]))


# ---- weights, inputs, errors


def test_unit_and_rescaled_weights_change_nothing():
    scores, groups = _scores_and_groups(2, n=150, rounding=1)
    plain = partial_statistical_parity(
        None, scores, sensitive_features=groups, interval=(0.1, 0.35)
    )
    for weights in (np.ones(150), np.full(150, 0.1), np.full(150, 3.0)):
        weighted = partial_statistical_parity(
            None,
            scores,
            sensitive_features=groups,
            interval=(0.1, 0.35),
            sample_weight=weights,
        )
        assert weighted == pytest.approx(plain, abs=1e-12)


def test_integer_weights_on_full_interval_equal_repetition():
    scores, groups = _scores_and_groups(4, n=60, rounding=1)
    weights = np.random.default_rng(0).integers(0, 4, size=60)
    weights[:2] = 1  # keep both groups weighted
    repeated = np.repeat(np.arange(60), weights)
    for function in (partial_statistical_parity, partial_demographic_parity):
        weighted = function(None, scores, sensitive_features=groups, sample_weight=weights)
        expected = function(None, scores[repeated], sensitive_features=groups[repeated])
        assert weighted == pytest.approx(expected, abs=1e-12)


def test_dataframe_and_intersectional_groups():
    scores, groups = _scores_and_groups(6, n=300, n_groups=4)
    frame = pd.DataFrame({"a": groups // 2, "b": np.where(groups % 2, "u", "v")})
    joined = frame["a"].astype(str) + "|" + frame["b"]
    by_columns = partial_statistical_parity(
        pd.Series(scores), pd.Series(scores), sensitive_features=frame, interval=(0.0, 0.5)
    )
    by_joined = partial_statistical_parity(
        None, scores, sensitive_features=joined, interval=(0.0, 0.5)
    )
    assert by_columns == by_joined
    matrix = partial_parity_matrix(None, scores, sensitive_features=frame)
    assert (0, "u") in matrix.index


def test_polars_inputs():
    polars = pytest.importorskip("polars")
    scores, groups = _scores_and_groups(10, n=120)
    expected = partial_statistical_parity(
        None, scores, sensitive_features=groups, interval=(0.1, 0.6)
    )
    value = partial_statistical_parity(
        None,
        polars.Series(scores),
        sensitive_features=polars.Series(groups),
        interval=(0.1, 0.6),
    )
    assert value == expected


def test_single_group_is_vacuously_fair():
    assert partial_statistical_parity(None, [3.0, 1.0, 2.0], sensitive_features=[1, 1, 1]) == 0.0


def test_rank_curve_matches_direct_ccdf():
    scores, groups = _scores_and_groups(8, n=50, rounding=1)
    thresholds, ranks, labels = rank_curve(scores, sensitive_features=groups)
    assert np.all(np.diff(thresholds) < 0)
    for column, label in enumerate(labels):
        member = scores[groups == label]
        direct = (member[None, :] > thresholds[:, None]).mean(axis=1)
        np.testing.assert_allclose(ranks[:, column], direct, atol=1e-12)


def test_suggest_interval_picks_the_least_fair_candidate_around_the_positive_rate():
    scores, groups = _scores_and_groups(12, n=500, shift=0.6)
    widths = (0.1, 0.2)
    alpha, beta = suggest_interval(scores, sensitive_features=groups, widths=widths)
    rate = np.mean(scores > 0)
    assert alpha <= rate < beta
    chosen = partial_statistical_parity(
        None, scores, sensitive_features=groups, interval=(alpha, beta)
    )
    for width in widths:
        for start in np.round(np.arange(0, 1, 0.05), 12):
            if start <= rate < start + width <= 1 + 1e-12:
                other = partial_statistical_parity(
                    None,
                    scores,
                    sensitive_features=groups,
                    interval=(start, min(start + width, 1.0)),
                )
                assert other <= chosen + 1e-12


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"y_score": [0.1, np.nan, 0.3, 0.4]}, "NaN or infinite"),
        ({"y_score": [0.1, np.inf, 0.3, 0.4]}, "NaN or infinite"),
        ({"sensitive_features": [0, 1, 0]}, "same length|rows"),
        ({"y_true": [0, 1]}, "same length"),
        ({"interval": (0.5, 0.5)}, "alpha < beta"),
        ({"interval": (-0.1, 0.5)}, "alpha < beta"),
        ({"interval": 0.5}, "pair"),
        ({"interval": (0.6, 0.7)}, "empty"),
        ({"sample_weight": [1, 1, -1, 1]}, "non-negative"),
        ({"sample_weight": [1, 1, 1]}, "sample_weight"),
        ({"sample_weight": [0, 0, 1, 1]}, "zero total"),
        ({"sensitive_features": None}, "required"),
    ],
)
def test_invalid_inputs_raise_clear_errors(kwargs, message):
    arguments = {
        "y_true": None,
        "y_score": [0.4, 0.1, 0.3, 0.2],
        "sensitive_features": [0, 0, 1, 1],
    }
    arguments.update(kwargs)
    y_true, y_score = arguments.pop("y_true"), arguments.pop("y_score")
    with pytest.raises(ValueError, match=message):
        partial_statistical_parity(y_true, y_score, **arguments)


def test_invalid_metric_and_threshold():
    with pytest.raises(ValueError, match="metric"):
        partial_fairness_score(None, [1.0, 2.0], sensitive_features=[0, 1], metric="sp")
    with pytest.raises(ValueError, match="threshold"):
        partial_demographic_parity(None, [1.0, 2.0], sensitive_features=[0, 1], threshold=np.nan)
