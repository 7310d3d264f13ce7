"""Coverage of MetricFrame's intervals, by simulation against known truth.

Each case draws ``DRAWS`` samples from a population with known per-group rates and counts
how often the interval contains the true quantity. The claim is coverage at least the
nominal level ``CI``; the test accepts an observed coverage down to ``CI - MARGIN``, where
``MARGIN`` is three binomial standard errors of a coverage estimated from ``DRAWS`` draws
(``3 * sqrt(CI (1 - CI) / DRAWS)`` = 0.064 at 0.9 and 200 draws): a method whose true
coverage is the nominal level fails with probability about 0.1 %. The same check applied
to the percentile bootstrap of the gap (``ci_method="percentile"``) at exact parity fails:
the test has power against the interval the frame used to print.
"""

import numpy as np
import pytest

from fairest.metrics import MetricFrame

CI = 0.9
DRAWS = 200
MARGIN = 3 * np.sqrt(CI * (1 - CI) / DRAWS)


def _draw(rng, sizes, rates, weighted):
    """Predictions with selection rate ``rates[g]`` in group g of ``sizes[g]`` rows."""
    groups = np.repeat(np.arange(len(sizes)), sizes)
    y_pred = (rng.random(groups.size) < np.asarray(rates)[groups]).astype(int)
    y_true = rng.integers(0, 2, groups.size)
    weights = rng.uniform(0.5, 2.0, groups.size) if weighted else None
    return y_true, y_pred, groups, weights


def _truth(sizes, rates):
    rates, shares = np.asarray(rates, float), np.asarray(sizes, float) / np.sum(sizes)
    overall = float(shares @ rates)
    return {
        ("difference", "between_groups"): rates.max() - rates.min(),
        ("ratio", "between_groups"): rates.min() / rates.max(),
        ("difference", "to_overall"): np.abs(rates - overall).max(),
        ("ratio", "to_overall"): np.minimum(rates / overall, overall / rates).min(),
    }


def _coverage(sizes, rates, *, weighted=False, ci_method="auto", seed=0, draws=DRAWS):
    rng = np.random.default_rng(seed)
    truth = _truth(sizes, rates)
    hits = dict.fromkeys(truth, 0)
    for draw in range(draws):
        y_true, y_pred, groups, weights = _draw(rng, sizes, rates, weighted)
        frame = MetricFrame(
            metrics="selection_rate",
            y_true=y_true,
            y_pred=y_pred,
            sensitive_features=groups,
            sample_weight=weights,
            ci=CI,
            ci_method=ci_method,
            n_boot=200 if ci_method == "percentile" else None,
            random_state=draw,
        )
        for (kind, method), value in truth.items():
            interval = getattr(frame, f"{kind}_ci")(method)
            hits[(kind, method)] += interval["lower"] <= value + 1e-12 and (
                value - 1e-12 <= interval["upper"]
            )
    return {key: count / draws for key, count in hits.items()}


CASES = {
    "2 groups, exact parity": ([1000, 1000], [0.3, 0.3], False),
    "2 groups, gap 0.05": ([1000, 1000], [0.3, 0.35], False),
    "5 unequal groups, parity": ([40, 100, 300, 800, 2000], [0.3] * 5, False),
    "10 small groups, gaps": ([30] * 5 + [150] * 5, [0.2, 0.25, 0.3, 0.3, 0.35] * 2, False),
    "3 groups, weighted rows, parity": ([200, 500, 1000], [0.4] * 3, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_gap_intervals_cover_at_least_their_level(case):
    sizes, rates, weighted = CASES[case]
    coverage = _coverage(sizes, rates, weighted=weighted, seed=len(case))
    assert min(coverage.values()) >= CI - MARGIN, coverage


def test_the_percentile_bootstrap_of_the_gap_fails_the_same_check_at_parity():
    """The broken variant: percentile intervals of max - min never reach down to 0."""
    coverage = _coverage([1000, 1000], [0.3, 0.3], ci_method="percentile", draws=60)
    assert coverage[("difference", "between_groups")] < CI - MARGIN


def test_per_group_and_overall_intervals_cover():
    rng = np.random.default_rng(11)
    sizes, rates = [25, 60, 400], [0.1, 0.5, 0.8]
    overall = float(np.dot(sizes, rates) / np.sum(sizes))
    hits_groups, hits_overall = np.zeros(3), 0
    for _ in range(DRAWS):
        y_true, y_pred, groups, _ = _draw(rng, sizes, rates, False)
        frame = MetricFrame(
            metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=groups, ci=CI
        )
        low, high = frame.by_group_ci
        hits_groups += (low.to_numpy() <= rates) & (np.asarray(rates) <= high.to_numpy())
        hits_overall += frame.overall_ci["lower"] <= overall <= frame.overall_ci["upper"]
    assert (hits_groups / DRAWS).min() >= CI - MARGIN
    assert hits_overall / DRAWS >= CI - MARGIN


def test_mean_prediction_gap_covers_at_parity():
    """Student-t intervals of group means (scores), four groups with equal means."""
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(DRAWS):
        groups = np.repeat(np.arange(4), [30, 60, 120, 500])
        scores = rng.normal(0.5, 0.2, groups.size)
        frame = MetricFrame(
            metrics="mean_prediction",
            y_true=np.zeros(groups.size),
            y_pred=scores,
            sensitive_features=groups,
            ci=CI,
        )
        covered += frame.difference_ci()["lower"] <= 0.0
    assert covered / DRAWS >= CI - MARGIN


def test_any_metric_gap_covers_through_per_group_bootstrap():
    """A callable without a rate form: per-group percentile intervals at the
    simultaneous level (approximate; groups of 300 rows)."""
    rng = np.random.default_rng(8)
    draws, covered = 60, 0
    for draw in range(draws):
        y_true, y_pred, groups, _ = _draw(rng, [300, 300], [0.3, 0.3], False)
        frame = MetricFrame(
            metrics=lambda y, p: float(np.mean(p)),
            y_true=y_true,
            y_pred=y_pred,
            sensitive_features=groups,
            n_boot=400,
            random_state=draw,
            stratify=True,
            ci=CI,
        )
        covered += frame.difference_ci()["lower"] <= 0.0
    assert covered / draws >= CI - 3 * np.sqrt(CI * (1 - CI) / draws)


def test_a_one_row_group_gets_a_wide_interval_and_a_warning():
    y_pred = np.array([1] + [0, 1] * 50)
    groups = np.array(["solo"] + ["many"] * 100)
    frame = MetricFrame(
        metrics="selection_rate",
        y_true=np.zeros(101, dtype=int),
        y_pred=y_pred,
        sensitive_features=groups,
    )
    with pytest.warns(UserWarning, match="solo"):
        low, high = frame.by_group_ci
    assert high["solo"] - low["solo"] > 0.9
    with pytest.warns(UserWarning, match="fewer than 2"):
        gap = frame.difference_ci()
    assert gap["lower"] == 0.0 and gap["upper"] > 0.5
