"""The confidence bounds and metric intervals, against independent references."""

import numpy as np
import pytest
from fairlearn import metrics as fl_metrics
from scipy import stats

from fairest.certified import fairness_interval, rows_needed
from fairest.certified._bounds import (
    LOG_LOSS_CLIP,
    LOG_LOSS_MAX,
    RateStatistics,
    rate_bounds,
)


def _binary_statistics(k, n):
    k, n = np.atleast_2d(np.asarray(k, float)), np.atleast_2d(np.asarray(n, float))
    return RateStatistics(n, k, k, binary=True, seed=0)


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (1, 1), (47, 300), (999, 1000)])
@pytest.mark.parametrize("delta", [0.001, 0.025, 0.1])
def test_clopper_pearson_is_scipys_exact_interval(k, n, delta):
    lower, upper = rate_bounds(_binary_statistics(k, n), delta, "clopper-pearson")
    # a two-sided exact interval at level 1 - 2 delta has one-sided ends at delta each
    reference = stats.binomtest(k, n).proportion_ci(1 - 2 * delta, method="exact")
    np.testing.assert_allclose(
        [lower[0, 0], upper[0, 0]], [reference.low, reference.high], atol=1e-12
    )


def test_clopper_pearson_covers_at_its_level():
    """Exhaustive: P(p <= upper) >= 1 - delta for every p on a grid (exact binomial sums)."""
    n, delta = 40, 0.05
    k = np.arange(n + 1)
    _, upper = rate_bounds(_binary_statistics(k, np.full(n + 1, n)), delta, "clopper-pearson")
    for p in np.linspace(0.01, 0.99, 99):
        coverage = stats.binom.pmf(k, n, p)[upper[0] >= p].sum()
        assert coverage >= 1 - delta - 1e-12


def test_hoeffding_width_and_clipping():
    lower, upper = rate_bounds(_binary_statistics([50, 0], [100, 100]), 0.05, "hoeffding")
    width = np.sqrt(np.log(1 / 0.05) / 200)
    np.testing.assert_allclose(upper[0], [0.5 + width, width])
    np.testing.assert_allclose(lower[0], [0.5 - width, 0.0])  # clipped at 0


def test_empirical_bernstein_formula_and_coverage():
    """Maurer and Pontil (2009), Theorem 4, computed independently; Monte Carlo coverage
    on Beta(2, 5) values (not binary), the lower tail too."""
    rng = np.random.default_rng(0)
    n, delta, true_mean = 200, 0.05, 2 / 7
    values = rng.beta(2, 5, size=(2000, n))
    count = np.full((1, 2000), float(n))
    statistics = RateStatistics(count, values.sum(1)[None], (values**2).sum(1)[None], binary=False)
    lower, upper = rate_bounds(statistics, delta, "bernstein")
    variance = values.var(axis=1, ddof=1)
    term = np.log(2 / delta)
    expected = values.mean(1) + np.sqrt(2 * variance * term / n) + 7 * term / (3 * (n - 1))
    np.testing.assert_allclose(upper[0], np.minimum(expected, 1.0))
    assert np.mean(upper[0] < true_mean) <= delta
    assert np.mean(lower[0] > true_mean) <= delta


def test_student_t_is_scipys_one_sided_interval():
    rng = np.random.default_rng(1)
    values = rng.beta(2, 5, size=80)
    statistics = RateStatistics(
        np.array([[80.0]]), np.array([[values.sum()]]), np.array([[(values**2).sum()]]), False
    )
    lower, upper = rate_bounds(statistics, 0.05, "student-t")
    test = stats.ttest_1samp(values, 0.0, alternative="less")
    np.testing.assert_allclose(upper[0, 0], test.confidence_interval(0.95).high)
    np.testing.assert_allclose(
        lower[0, 0],
        stats.ttest_1samp(values, 0.0, alternative="greater").confidence_interval(0.95).low,
    )


def test_bootstrap_is_near_scipys_percentile_bootstrap():
    rng = np.random.default_rng(2)
    y_pred = (rng.random(600) < 0.3).astype(int)
    groups = np.repeat(["a", "b"], 300)
    ours = fairness_interval(
        "demographic_parity_difference",
        np.zeros(600),
        y_pred,
        sensitive_features=groups,
        delta=0.1,
        bound="bootstrap",
        random_state=0,
    )
    for g, label in enumerate(["a", "b"]):
        reference = stats.bootstrap(
            (y_pred[groups == label],),
            np.mean,
            confidence_level=1 - 2 * 0.1 / 4,
            method="percentile",
            random_state=0,
            n_resamples=4000,
        ).confidence_interval
        assert abs(ours.group_lower[0, g] - reference.low) < 0.015
        assert abs(ours.group_upper[0, g] - reference.high) < 0.015


METRIC_REFERENCES = {
    "demographic_parity_difference": fl_metrics.demographic_parity_difference,
    "demographic_parity_ratio": fl_metrics.demographic_parity_ratio,
    "equalized_odds_difference": fl_metrics.equalized_odds_difference,
    "equalized_odds_ratio": fl_metrics.equalized_odds_ratio,
    "equal_opportunity_difference": fl_metrics.equal_opportunity_difference,
    "equal_opportunity_ratio": fl_metrics.equal_opportunity_ratio,
}


def _data(n=3000, seed=0, groups=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, len(groups), n)
    y = (rng.random(n) < 0.4 + 0.1 * codes).astype(int)
    y_pred = (rng.random(n) < 0.3 + 0.2 * y + 0.05 * codes).astype(int)
    return y, y_pred, np.asarray(groups)[codes]


@pytest.mark.parametrize("metric", list(METRIC_REFERENCES))
@pytest.mark.parametrize("bound", ["clopper-pearson", "hoeffding", "bernstein", "student-t"])
def test_estimate_is_fairlearns_and_lies_in_the_interval(metric, bound):
    y, y_pred, groups = _data()
    interval = fairness_interval(metric, y, y_pred, sensitive_features=groups, bound=bound)
    reference = METRIC_REFERENCES[metric](y, y_pred, sensitive_features=groups)
    assert interval.estimate == pytest.approx(reference, abs=1e-12)
    assert interval.lower <= interval.estimate <= interval.upper
    rates = len(interval.rate_names)
    assert interval.delta_per_bound == pytest.approx(0.05 / (2 * rates * 3))
    assert interval.exact == (bound != "student-t")


def test_loss_gaps_estimates():
    y, y_pred, groups = _data()
    error = fairness_interval("zero_one_loss_gap", y, y_pred, sensitive_features=groups)
    rates = [np.mean(y[groups == g] != y_pred[groups == g]) for g in "abc"]
    assert error.estimate == pytest.approx(max(rates) - min(rates))
    proba = np.clip(np.random.default_rng(0).random(y.size), 0.001, 0.999)
    interval = fairness_interval(
        "log_loss_gap", y, y_pred, sensitive_features=groups, y_proba=proba, bound="hoeffding"
    )
    clipped = np.clip(proba, LOG_LOSS_CLIP, 1 - LOG_LOSS_CLIP)
    loss = -np.log(np.where(y == 1, clipped, 1 - clipped))
    means = [loss[groups == g].mean() for g in "abc"]
    assert interval.estimate == pytest.approx(max(means) - min(means))
    assert interval.upper <= LOG_LOSS_MAX
    with pytest.raises(ValueError, match="0/1 outcomes only"):
        fairness_interval("log_loss_gap", y, y_pred, sensitive_features=groups, y_proba=proba)


@pytest.mark.parametrize("metric", ["demographic_parity_difference", "equalized_odds_ratio"])
@pytest.mark.parametrize("bound", ["clopper-pearson", "hoeffding"])
def test_simultaneous_coverage_by_simulation(metric, bound):
    """Draw many samples from known group rates: the true metric leaves the interval in
    at most delta of them (binomial margin: P(Binom(800, 0.1) >= observed) > 1e-3)."""
    rng = np.random.default_rng(3)
    delta, draws, n = 0.1, 800, 150
    p_y = np.array([0.5, 0.4, 0.6])
    p_pred = np.array([[0.2, 0.3, 0.25], [0.6, 0.55, 0.7]])  # given y = 0 / 1, per group
    selection = p_y * p_pred[1] + (1 - p_y) * p_pred[0]
    if metric == "demographic_parity_difference":
        truth = np.ptp(selection)
    else:
        truth = min(p_pred[1].min() / p_pred[1].max(), p_pred[0].min() / p_pred[0].max())
    misses = 0
    for _ in range(draws):
        codes = np.repeat(np.arange(3), n)
        y = (rng.random(3 * n) < p_y[codes]).astype(int)
        y_pred = (rng.random(3 * n) < p_pred[y, codes]).astype(int)
        interval = fairness_interval(
            metric, y, y_pred, sensitive_features=codes, delta=delta, bound=bound
        )
        misses += not interval.lower <= truth <= interval.upper
    assert stats.binom.sf(misses - 1, draws, delta) > 1e-3


def test_one_group_is_exactly_fair():
    y, y_pred, _ = _data()
    interval = fairness_interval(
        "demographic_parity_difference", y, y_pred, sensitive_features=np.zeros(y.size)
    )
    assert interval.upper == 0.0 and interval.lower == 0.0


def test_rows_needed_hoeffding_closed_form_and_minimality():
    # two groups, DP: 2 sqrt(log(4 / delta) / (2 n)) <= tolerance
    expected = int(np.ceil(2 * np.log(4 / 0.05) / 0.05**2))
    assert rows_needed("demographic_parity_difference", 0.05, 0.05, "hoeffding") == expected
    needed = rows_needed("demographic_parity_difference", 0.05, 0.05, "clopper-pearson")
    for n, passes in ((needed, True), (needed - 1, False)):
        half = n // 2
        y_pred = np.r_[np.ones(half), np.zeros(n - half), np.ones(half), np.zeros(n - half)]
        interval = fairness_interval(
            "demographic_parity_difference",
            np.zeros(2 * n),
            y_pred.astype(int),
            sensitive_features=np.repeat([0, 1], n),
        )
        assert (interval.upper <= 0.05) == passes
    assert rows_needed("demographic_parity_difference", 0.05, 0.05, "bernstein") > expected > needed


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.5}, "delta"),
        ({"bound": "normal"}, "bound must be one of"),
    ],
)
def test_bad_interval_inputs(kwargs, match):
    y, y_pred, groups = _data(n=100)
    with pytest.raises(ValueError, match=match):
        fairness_interval(
            "demographic_parity_difference", y, y_pred, sensitive_features=groups, **kwargs
        )
    with pytest.raises(ValueError, match="metric must be one of"):
        fairness_interval("accuracy", y, y_pred, sensitive_features=groups)
