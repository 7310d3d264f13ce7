"""Oracle tests of the anytime-valid fairness monitor.

Streams are simulated through their sufficient statistics (per batch and group: rows,
selected rows; per label cell where labels exist), vectorised over many streams, so
``N_STREAMS`` streams of 1e6 predictions checked after every batch of 1e4 take seconds.
The monitor's own bounds (``FairnessMonitor`` fed the rows) are checked to equal the
vectorised ones on whole streams, so the oracle figures are the monitor's.

Margins: with ``N_STREAMS = 1000`` streams and ``delta = 0.05``, a rate of failing streams
above ``FAIL_LIMIT = 0.075`` has probability below 1e-4 when the true rate is 0.05
(binomial upper tail, Bin(1000, 0.05) >= 75); the broken variant must exceed it.
"""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, norm

from fairest.monitoring import FairnessMonitor, bernoulli_confidence_sequence
from fairest.monitoring._monitor import retained_starts, window_alpha
from fairest.utils import FairnessWarning

N_STREAMS = 1000
N_BATCHES = 100
BATCH = 10_000  # 100 batches of 1e4: 1e6 predictions per stream, checked after each batch
DELTA = 0.05
FAIL_LIMIT = 0.075
TOLERANCE = 0.05


def simulate_selections(rng, rates, n_streams=N_STREAMS, shares=(0.5, 0.5)):
    """Cumulative (selected, rows) per stream, batch and group; ``rates`` is (G,) or
    (n_batches, G) (a rate that changes over the stream)."""
    counts = rng.multinomial(BATCH, shares, size=(n_streams, N_BATCHES))
    selected = rng.binomial(counts, np.broadcast_to(rates, counts.shape))
    return selected.cumsum(1), counts.cumsum(1)


def gap_lower_bound(successes, trials, alpha):
    lower, upper = bernoulli_confidence_sequence(successes, trials, alpha)
    return np.maximum(lower.max(-1) - upper.min(-1), 0.0)


def repeated_fixed_sample_alarm(successes, trials, alpha=DELTA):
    """The broken variant: a one-sided normal test of ``gap > tolerance`` at level
    ``alpha``, re-run on the data so far after every batch (as weekly checks do)."""
    rate = successes / trials
    se = np.sqrt((rate * (1 - rate) / trials).sum(-1))
    z = (rate[..., 1] - rate[..., 0] - TOLERANCE) / se
    return z > norm.ppf(1 - alpha)


def test_false_alarms_at_most_delta_and_repeated_tests_fail():
    """Null at the edge: true gap = tolerance exactly, 1e6 predictions per stream."""
    rng = np.random.default_rng(0)
    successes, trials = simulate_selections(rng, [0.30, 0.35])
    alpha = DELTA / 2  # the monitor's share: 2 groups x 1 rate (rates=())
    alarms = gap_lower_bound(successes, trials, alpha) > TOLERANCE
    false_alarm_rate = alarms.any(1).mean()
    assert false_alarm_rate <= FAIL_LIMIT
    broken_rate = repeated_fixed_sample_alarm(successes, trials).any(1).mean()
    assert broken_rate > FAIL_LIMIT, broken_rate  # the check has power
    # the same test at a single look is fine: the failure comes from looking repeatedly
    assert repeated_fixed_sample_alarm(successes, trials)[:, -1].mean() <= FAIL_LIMIT


def test_planted_violation_is_detected_within_the_stated_delay():
    """Gap 0 for 2e5 predictions, then 0.10 (tolerance 0.05): every stream alarms, within
    5e5 predictions of the change (the cumulative gap must pass tolerance + width)."""
    rng = np.random.default_rng(1)
    change = 20
    rates = np.where(np.arange(N_BATCHES)[:, None] < change, [0.30, 0.30], [0.30, 0.40])
    successes, trials = simulate_selections(rng, rates, n_streams=200)
    alarms = gap_lower_bound(successes, trials, DELTA / 2) > TOLERANCE
    assert alarms.any(1).all()
    first = alarms.argmax(1)
    assert first.min() >= change  # no alarm before the change
    delay = (first - change + 1) * BATCH
    assert delay.max() <= 500_000, delay.max()


def test_group_rate_intervals_cover_at_all_times_with_labels():
    """Three unequal groups, selection / TPR / FPR from the label cells: every interval of
    every check covers its true rate in at least 1 - delta of the streams."""
    rng = np.random.default_rng(2)
    shares = np.array([0.6, 0.3, 0.1])
    # P(y, y_pred) cells (0,0), (0,1), (1,0), (1,1) per group
    cells = np.array([[0.5, 0.1, 0.1, 0.3], [0.6, 0.05, 0.2, 0.15], [0.3, 0.3, 0.1, 0.3]])
    n_streams = 400
    groups = rng.multinomial(BATCH, shares, size=(n_streams, N_BATCHES))
    counts = rng.multinomial(groups, cells).cumsum(1)  # (streams, batches, G, 4)
    successes = np.stack(
        [counts[..., [1, 3]].sum(-1), counts[..., 3], counts[..., 1]], -1
    )  # selection, TPR, FPR
    trials = np.stack([counts.sum(-1), counts[..., 2:].sum(-1), counts[..., :2].sum(-1)], -1)
    truth = np.stack(
        [
            cells[:, [1, 3]].sum(1),
            cells[:, 3] / cells[:, 2:].sum(1),
            cells[:, 1] / cells[:, :2].sum(1),
        ],
        -1,
    )
    lower, upper = bernoulli_confidence_sequence(successes, trials, DELTA / 9)
    missed = ((lower > truth) | (upper < truth)).any((1, 2, 3))
    assert missed.mean() <= FAIL_LIMIT


def test_the_monitor_fed_rows_gives_the_vectorised_bounds():
    """Whole streams of rows through FairnessMonitor.update match the oracle's figures."""
    rng = np.random.default_rng(3)
    for _ in range(2):
        monitor = FairnessMonitor(tolerance=TOLERANCE, delta=DELTA, rates=())
        successes, trials = [], []
        for _ in range(N_BATCHES):
            group = rng.integers(0, 2, BATCH)
            y_pred = rng.random(BATCH) < np.where(group == 1, 0.35, 0.30)
            monitor.update(y_pred, group)
            successes.append(np.bincount(group, weights=y_pred, minlength=2))
            trials.append(np.bincount(group, minlength=2))
        expected = gap_lower_bound(np.cumsum(successes, 0), np.cumsum(trials, 0), DELTA / 2)
        np.testing.assert_allclose(monitor.history_["lower"], expected, rtol=0, atol=1e-12)
        assert monitor.n_predictions_ == N_BATCHES * BATCH
        assert monitor.alarm_ == bool(expected[-1] > TOLERANCE)


@pytest.mark.parametrize("n, s", [(10, 0), (10, 3), (1000, 300), (10_000, 9_999), (1, 1)])
def test_beta_binomial_ends_solve_robbins_equation(n, s):
    """Uniform prior: the ends solve (n + 1) binom.pmf(s; n, p) = alpha, Robbins' form."""
    alpha = 0.01
    lower, upper = bernoulli_confidence_sequence(s, n, alpha)
    for end, edge in ((float(lower), 0.0), (float(upper), 1.0)):
        if end == edge:  # the whole side is inside: the mixture stays below 1/alpha
            assert (n + 1) * binom.pmf(s, n, edge) >= alpha
        else:
            np.testing.assert_allclose((n + 1) * binom.pmf(s, n, end), alpha, rtol=1e-6)
    inside = np.linspace(float(lower), float(upper), 9)[1:-1]
    assert np.all((n + 1) * binom.pmf(s, n, inside) > alpha)


def test_normal_mixture_covers_at_all_times():
    rng = np.random.default_rng(4)
    successes, trials = simulate_selections(rng, [0.5, 0.5], n_streams=300)
    lower, upper = bernoulli_confidence_sequence(
        successes, trials, DELTA / 2, boundary="normal-mixture"
    )
    assert ((lower > 0.5) | (upper < 0.5)).any((1, 2)).mean() <= FAIL_LIMIT
    width = upper - lower
    assert np.all(width[:, 0] < 0.1) and np.all(width[:, -1] < 0.01)  # 5e3 and 5e5 rows


def test_report_matches_fairlearn_and_labels_may_arrive_late():
    fairlearn_metrics = pytest.importorskip("fairlearn.metrics")
    rng = np.random.default_rng(5)
    n = 30_000
    group = rng.choice(np.array(["a", "b", "c"]), n, p=[0.5, 0.3, 0.2])
    y_true = rng.integers(0, 2, n)
    y_pred = (rng.random(n) < 0.2 + 0.3 * y_true + 0.1 * (group == "c")).astype(int)
    late = rng.random(n) < 0.4
    y_seen = np.where(late, np.nan, y_true)

    complete = FairnessMonitor("equalized_odds_difference", tolerance=0.2)
    partial = FairnessMonitor("equalized_odds_difference", tolerance=0.2)
    for rows in np.array_split(np.arange(n), 3):
        complete.update(y_pred[rows], group[rows], y_true=y_true[rows])
        partial.update(y_pred[rows], pd.Series(group[rows]), y_true=y_seen[rows])
    assert partial.n_labels_ == int((~late).sum())
    partial.update_labels(y_true[late], y_pred[late], group[late])
    pd.testing.assert_frame_equal(partial.report(), complete.report())
    assert partial.n_labels_ == complete.n_labels_ == n

    report = complete.report()
    assert report.loc[("equalized_odds_difference", "all"), "estimate"] == pytest.approx(
        fairlearn_metrics.equalized_odds_difference(y_true, y_pred, sensitive_features=group)
    )
    frame = fairlearn_metrics.MetricFrame(
        metrics={
            "selection_rate": fairlearn_metrics.selection_rate,
            "true_positive_rate": fairlearn_metrics.true_positive_rate,
            "false_positive_rate": fairlearn_metrics.false_positive_rate,
        },
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=group,
    )
    for rate in complete.rates_:
        np.testing.assert_allclose(
            report.loc[rate, "estimate"].to_numpy(), frame.by_group[rate].to_numpy()
        )
        rows = report.loc[rate]
        assert np.all((rows["lower"] <= rows["estimate"]) & (rows["estimate"] <= rows["upper"]))
    assert report.loc[("selection_rate", "c"), "n"] == int((group == "c").sum())
    assert report.loc[("true_positive_rate", "a"), "n"] == int(
        ((group == "a") & (y_true == 1)).sum()
    )


def test_masked_labels_are_missing_labels():
    rng = np.random.default_rng(6)
    group, y_pred = rng.integers(0, 2, 1000), rng.integers(0, 2, 1000)
    y_true = rng.integers(0, 2, 1000)
    mask = rng.random(1000) < 0.5
    masked = FairnessMonitor().update(y_pred, group, y_true=np.ma.masked_array(y_true, mask))
    nan = FairnessMonitor().update(y_pred, group, y_true=np.where(mask, np.nan, y_true))
    pd.testing.assert_frame_equal(masked.report(), nan.report())
    assert masked.n_labels_ == int((~mask).sum())


def test_string_and_integer_groups_give_the_same_report():
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 4, 5000)
    y_pred = rng.integers(0, 2, 5000).astype(bool)
    by_code = FairnessMonitor(groups=[0, 1, 2, 3]).update(y_pred, codes)
    by_name = FairnessMonitor().update(y_pred, np.array(list("wxyz"))[codes])
    np.testing.assert_array_equal(by_code.report().to_numpy(), by_name.report().to_numpy())
    assert by_name.groups_.tolist() == ["w", "x", "y", "z"]
    # pandas categoricals (categories in any order, unused ones) take their codes' path
    labels = pd.Categorical(np.array(list("wxyz"))[codes], categories=list("zyxwv"))
    by_category = FairnessMonitor(groups=list("wxyz")).update(y_pred, pd.Series(labels))
    pd.testing.assert_frame_equal(by_category.report(), by_name.report())
    with pytest.raises(ValueError, match=r"\['v'\] were not in the groups"):
        by_category.update([1], pd.Categorical(["v"], categories=list("vw")))


def test_alarm_certified_and_first_alarm():
    monitor = FairnessMonitor(tolerance=0.1, rates=())
    group = np.repeat([0, 1], 50_000)
    fair = np.tile([0, 1], 50_000)  # both groups select half their rows
    unfair = np.r_[np.ones(50_000, int), np.zeros(50_000, int)]
    monitor.update(fair, group)
    assert monitor.certified_ and not monitor.alarm_ and monitor.first_alarm_at_ is None
    monitor.update(unfair, group)  # group rates 0.75 and 0.25 over the 2e5 rows so far
    assert monitor.alarm_ and not monitor.certified_
    assert monitor.first_alarm_at_ == 200_000
    for _ in range(20):
        monitor.update(fair, group)
    assert not monitor.alarm_  # the average gap so far fell back under the tolerance
    assert monitor.first_alarm_at_ == 200_000  # the first alarm is kept

    ratio = FairnessMonitor("demographic_parity_ratio", tolerance=0.8).update(unfair, group)
    assert ratio.alarm_ and ratio.report().loc[("demographic_parity_ratio", "all"), "upper"] < 0.8
    ratio = FairnessMonitor("demographic_parity_ratio").update(fair, group)
    assert ratio.certified_ and ratio.tolerance_ == 0.8


def test_update_stream_with_io_chunks():
    from sklearn.linear_model import LogisticRegression

    from fairest.io import iter_chunks

    rng = np.random.default_rng(8)
    X = rng.normal(size=(4000, 2))
    y = (X[:, 0] > 0).astype(int)
    group = (X[:, 1] > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    chunks = [(X[k : k + 1000], y[k : k + 1000], group[k : k + 1000]) for k in range(0, 4000, 1000)]
    streamed = FairnessMonitor().update_stream(iter_chunks(chunks), model)
    looped = FairnessMonitor()
    for X_chunk, y_chunk, group_chunk in chunks:
        looped.update(model.predict(X_chunk), group_chunk, y_true=y_chunk)
    assert streamed.n_checks_ == 4
    pd.testing.assert_frame_equal(streamed.report(), looped.report())
    with pytest.raises(ValueError, match="sample_weight"):
        FairnessMonitor().update_stream([(X, y, group, np.ones(4000))], model)


def test_history_and_plot():
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(9)
    monitor = FairnessMonitor(tolerance=0.01)
    for _ in range(5):
        group = rng.integers(0, 3, 2000)
        monitor.update((rng.random(2000) < 0.2 + 0.1 * group).astype(int), group)
    history = monitor.history_
    assert history["n_predictions"].tolist() == [2000, 4000, 6000, 8000, 10_000]
    assert history["rate_lower"].shape == (5, 3, 3)
    assert np.all(history["lower"] <= history["estimate"])
    assert np.all(history["estimate"] <= history["upper"])
    ax = monitor.plot()
    assert ax.get_xlabel() == "predictions seen"
    assert monitor.plot(rate="selection_rate").get_ylabel() == "selection_rate"
    assert FairnessMonitor(record_history=False).update([0, 1], [0, 1]).history_["lower"].shape == (
        0,
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"metric": "prediction_ks_distance"}, "not a comparison of group rates"),
        ({"tolerance": 1.5}, "tolerance must lie in"),
        ({"tolerance": "0.1"}, "tolerance must be a number"),
        ({"delta": 0}, "delta must be a probability"),
        ({"boundary": "bootstrap"}, "boundary must be one of"),
        ({"rates": ["recall"]}, "not known rates"),
        ({"rates": ["mean_prediction"]}, "binary rates only"),
        ({"restarts": "yes"}, "restarts must be True or False"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        FairnessMonitor(**kwargs)


def test_bad_batches():
    monitor = FairnessMonitor(groups=["a", "b"])
    with pytest.raises(ValueError, match="y_pred must hold 0 and 1"):
        monitor.update([0, 2], ["a", "b"])
    with pytest.raises(ValueError, match="sensitive_features is required"):
        monitor.update([0, 1], None)
    with pytest.raises(ValueError, match="sensitive_features has 3 rows"):
        monitor.update([0, 1], ["a", "b", "a"])
    with pytest.raises(ValueError, match=r"\['c'\] were not in the groups"):
        monitor.update([0, 1], ["a", "c"])
    with pytest.raises(ValueError, match="y_true must hold 0 and 1"):
        monitor.update([0, 1], ["a", "b"], y_true=[0, 3])
    with pytest.raises(ValueError, match="join them into one label"):
        monitor.update([0, 1], pd.DataFrame({"s": ["a", "b"], "r": [1, 2]}))
    with pytest.raises(ValueError, match="seen no batch"):
        monitor.report()
    with pytest.raises(ValueError, match="first batch is empty"):
        FairnessMonitor().update([], [])
    with pytest.raises(ValueError, match="update_labels before any update"):
        FairnessMonitor().update_labels([1], [1], ["a"])
    integer = FairnessMonitor(groups=[0, 1])
    with pytest.raises(ValueError, match=r"\[2\] were not in the groups"):
        integer.update([0, 1], np.array([0, 2]))
    assert monitor.n_checks_ == 0 and integer.n_predictions_ == 0  # nothing was counted


def test_a_single_group_warns():
    with pytest.warns(FairnessWarning, match="single group"):
        FairnessMonitor().update([0, 1, 1], ["a", "a", "a"])
    # the label as the user wrote it, not numpy's repr of its scalar (np.str_('a'))
    with pytest.warns(FairnessWarning, match=r"single group \('a'\)"):
        FairnessMonitor().update([0, 1, 1], np.array(["a", "a", "a"]))


def restart_alarms(successes, trials, n_sequences, delta=DELTA):
    """Alarms of ``FairnessMonitor(restarts=True)`` from cumulative counts (streams, checks,
    G), built from the monitor's own pieces: cumulative sequences at ``delta / 2`` shared
    by ``n_sequences``, and every retained window after check ``k`` at ``window_alpha``."""
    lower, upper = bernoulli_confidence_sequence(successes, trials, delta / 2 / n_sequences)
    alarms = np.maximum(lower.max(-1) - upper.min(-1), 0.0) > TOLERANCE
    starts = np.zeros(0, np.int64)
    for t in range(1, trials.shape[1] + 1):
        if starts.size:
            window = successes[:, [t - 1]] - successes[:, starts - 1]
            rows = trials[:, [t - 1]] - trials[:, starts - 1]
            alpha = window_alpha(starts, delta, n_sequences)[None, :, None]
            lower, upper = bernoulli_confidence_sequence(window, rows, alpha)
            low = np.maximum(lower.max(-1) - upper.min(-1), 0.0)
            alarms[:, t - 1] |= (low > TOLERANCE).any(1)
        starts = retained_starts(np.r_[starts, t], t + 1)
    return alarms


def windowed_fixed_sample_alarms(successes, trials):
    """The broken variant of restarts: the same windows, each tested after every batch
    with the one-sided normal test at level ``delta``."""
    alarms = np.zeros(trials.shape[:2], bool)
    starts = np.zeros(0, np.int64)
    for t in range(1, trials.shape[1] + 1):
        if starts.size:
            window = successes[:, [t - 1]] - successes[:, starts - 1]
            rows = trials[:, [t - 1]] - trials[:, starts - 1]
            alarms[:, t - 1] = repeated_fixed_sample_alarm(window, rows).any(1)
        starts = retained_starts(np.r_[starts, t], t + 1)
    return alarms


def test_restarts_keep_false_alarms_at_most_delta():
    rng = np.random.default_rng(10)
    successes, trials = simulate_selections(rng, [0.30, 0.35])
    alarms = restart_alarms(successes, trials, n_sequences=2)
    assert alarms.any(1).mean() <= FAIL_LIMIT
    broken = windowed_fixed_sample_alarms(successes, trials).any(1).mean()
    assert broken > FAIL_LIMIT, broken  # the check has power against per-window tests


def test_restarts_detect_a_change_within_a_few_batches():
    """Gap 0 for 5e5 predictions, then 0.10 (tolerance 0.05): with restarts every stream
    alarms within 1e5 predictions of the change; the running average needs over 4e5."""
    rng = np.random.default_rng(11)
    change = 50
    rates = np.where(np.arange(N_BATCHES)[:, None] < change, [0.30, 0.30], [0.30, 0.40])
    successes, trials = simulate_selections(rng, rates, n_streams=200)
    alarms = restart_alarms(successes, trials, n_sequences=2)
    assert alarms.any(1).all() and not alarms[:, :change].any()
    delay = (alarms.argmax(1) - change + 1) * BATCH
    assert delay.max() <= 100_000, delay.max()
    cumulative = gap_lower_bound(successes, trials, DELTA / 2) > TOLERANCE
    cumulative_delay = (
        np.where(cumulative.any(1), cumulative.argmax(1), N_BATCHES) - change + 1
    ) * BATCH
    assert cumulative_delay.min() > 400_000


def test_restarts_of_the_monitor_fed_rows_match_the_oracle():
    rng = np.random.default_rng(12)
    rates = np.where(np.arange(40)[:, None] < 25, [0.30, 0.33], [0.30, 0.45])
    monitor = FairnessMonitor(tolerance=TOLERANCE, rates=(), restarts=True)
    counts, alarms, windows = [], [], []
    for batch_rates in rates:
        group = rng.integers(0, 2, 5000)
        y_pred = rng.random(5000) < batch_rates[group]
        monitor.update(y_pred, group)
        counts.append(
            [np.bincount(group, weights=y_pred, minlength=2), np.bincount(group, minlength=2)]
        )
        alarms.append(monitor.alarm_)
        windows.append(monitor.alarm_window_)
    counts = np.cumsum(counts, 0)
    expected = restart_alarms(counts[None, :, 0], counts[None, :, 1], n_sequences=2)[0]
    np.testing.assert_array_equal(alarms, expected)
    assert expected[-1] and not expected[:25].any()
    start, end = windows[-1]
    assert end == 40 * 5000 and start >= 25 * 5000  # the alarm comes from a recent window
    assert len(monitor._snapshots) < 40  # old starts thinned out
