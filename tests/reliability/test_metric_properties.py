"""Property-based checks of the exact metrics (hypothesis): invariances, fairlearn
agreement and error behaviour on generated inputs."""

import numpy as np
import pytest
from fairlearn import metrics as fl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairest import metrics

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def labelled_groups(draw, min_per_group=2, max_size=60, max_groups=4):
    """Binary targets, hard predictions, scores, group codes and weights; every group
    holds at least one row of each class, so every rate is defined."""
    n_groups = draw(st.integers(2, max_groups))
    per_group = draw(
        st.lists(
            st.integers(min_per_group, max(min_per_group, max_size // n_groups)),
            min_size=n_groups,
            max_size=n_groups,
        )
    )
    groups = np.repeat(np.arange(n_groups), per_group)
    n = groups.size
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    for g in range(n_groups):  # one positive and one negative per group
        rows = np.flatnonzero(groups == g)
        y[rows[0]], y[rows[1]] = 0, 1
    scores = rng.normal(size=n)
    y_pred = rng.integers(0, 2, n)
    weights = rng.uniform(0.1, 3.0, n)
    return y, y_pred, scores, groups, weights, rng


RATE_METRICS = [
    (metrics.demographic_parity_difference, fl.demographic_parity_difference),
    (metrics.equalized_odds_difference, fl.equalized_odds_difference),
    (metrics.equal_opportunity_difference, getattr(fl, "equal_opportunity_difference", None)),
    (metrics.demographic_parity_ratio, fl.demographic_parity_ratio),
]


@pytest.mark.parametrize("ours, theirs", RATE_METRICS, ids=lambda f: getattr(f, "__name__", "none"))
@SETTINGS
@given(data=labelled_groups())
def test_rate_metrics_agree_with_fairlearn(ours, theirs, data):
    if theirs is None:
        pytest.skip("this fairlearn version has no equal_opportunity_difference")
    y, y_pred, _, groups, weights, _ = data
    expected = theirs(y, y_pred, sensitive_features=groups, sample_weight=weights)
    value = ours(y, y_pred, sensitive_features=groups, sample_weight=weights)
    assert value == pytest.approx(
        expected, abs=1e-12, nan_ok=True
    )  # 0 / 0 rates: nan on both sides


@pytest.mark.parametrize("metric", [m for m, _ in RATE_METRICS], ids=lambda f: f.__name__)
@SETTINGS
@given(data=labelled_groups())
def test_rate_metrics_ignore_row_order_and_group_names(metric, data):
    y, y_pred, _, groups, weights, rng = data
    value = metric(y, y_pred, sensitive_features=groups, sample_weight=weights)
    order = rng.permutation(y.size)
    renamed = np.array([f"group-{code}" for code in rng.permutation(groups.max() + 1)])[groups]
    permuted = metric(
        y[order], y_pred[order], sensitive_features=renamed[order], sample_weight=weights[order]
    )
    np.testing.assert_allclose(permuted, value, atol=1e-12, equal_nan=True)


RANK_METRICS = [metrics.partial_statistical_parity, metrics.individual_fairness]


@SETTINGS
@given(
    data=labelled_groups(min_per_group=10),
    interval=st.sampled_from([(0.0, 1.0), (0.0, 0.3), (0.2, 0.6)]),
)
def test_partial_statistical_parity_is_rank_based(data, interval):
    """A strictly increasing transform of the scores keeps every group's ranks, so pSP."""
    y, _, scores, groups, weights, _ = data
    value = metrics.partial_statistical_parity(
        y, scores, sensitive_features=groups, interval=interval, sample_weight=weights
    )
    transformed = metrics.partial_statistical_parity(
        y,
        np.exp(2.0 * scores) + 3.0,
        sensitive_features=groups,
        interval=interval,
        sample_weight=weights,
    )
    assert transformed == pytest.approx(value, abs=1e-9, nan_ok=True)
    assert 0.0 <= value <= 1.0


@pytest.mark.parametrize("metric", RANK_METRICS, ids=lambda f: f.__name__)
@SETTINGS
@given(data=labelled_groups())
def test_score_metrics_ignore_row_order_and_group_names(metric, data):
    y, _, scores, groups, weights, rng = data
    value = metric(y, scores, sensitive_features=groups, sample_weight=weights)
    order = rng.permutation(y.size)
    renamed = (groups.max() - groups)[order]
    permuted = metric(
        y[order], scores[order], sensitive_features=renamed, sample_weight=weights[order]
    )
    assert permuted == pytest.approx(value, rel=1e-9, abs=1e-12, nan_ok=True)


@SETTINGS
@given(
    data=labelled_groups(),
    position=st.integers(0, 7),
    bad=st.sampled_from([np.nan, np.inf, -np.inf]),
)
def test_non_finite_input_is_a_clear_error(data, position, bad):
    y, _, scores, groups, _, _ = data
    scores = scores.copy()
    scores[position % scores.size] = bad
    for metric in RANK_METRICS:
        with pytest.raises(ValueError, match="NaN or infinite") as error:
            metric(y, scores, sensitive_features=groups)
        assert len(str(error.value)) < 500


@SETTINGS
@given(data=labelled_groups(), cut=st.integers(1, 5))
def test_length_mismatch_is_a_clear_error(data, cut):
    y, y_pred, _, groups, _, _ = data
    cut = 1 + cut % (y.size - 1)
    for metric, _ in RATE_METRICS:
        with pytest.raises(ValueError, match="same length") as error:
            metric(y, y_pred[:-cut], sensitive_features=groups)
        assert len(str(error.value)) < 500
