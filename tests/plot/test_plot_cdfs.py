"""Per-group score CDFs: drawn curves are the empirical CDFs, bands follow the spec."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairest.metrics import partial_statistical_parity
from fairest.plot import group_percentile_bands, plot_group_score_cdfs


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    group = rng.choice(np.array(["a", "b", "c"]), n, p=[0.5, 0.3, 0.2])
    shift = pd.Series(group).map({"a": 0.0, "b": 0.7, "c": -0.4}).to_numpy()
    scores = np.round(rng.standard_normal(n) + shift, 1)  # rounding creates ties
    return scores, group


def _line(ax, gid):
    lines = [line for line in ax.lines if line.get_gid() == gid]
    assert len(lines) == 1
    return lines[0]


def band_oracle(scores, group, alpha, beta):
    """Spec partial_fairness.md 2.1: sorted positions ceil(alpha n)+1..ceil(beta n)."""
    keep = np.zeros(scores.size, dtype=bool)
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        order = members[np.argsort(-scores[members], kind="stable")]
        n = members.size
        lo, hi = math.ceil(alpha * n - 1e-12), math.ceil(beta * n - 1e-12)
        keep[order[lo:hi]] = True
    return keep


@pytest.mark.parametrize(
    "interval", [(0.0, 0.25), (0.1, 0.4), (0.5, 1.0), (0.0, 1.0), (1 / 3, 2 / 3)]
)
def test_bands_match_spec_and_metric(interval):
    scores, group = _data()
    in_band, groups = group_percentile_bands(scores, sensitive_features=group, interval=interval)
    np.testing.assert_array_equal(in_band, band_oracle(scores, group, *interval))
    assert groups.tolist() == ["a", "b", "c"]
    # pSP is the largest pairwise KS statistic of the bands
    bands = [scores[in_band & (group == g)] for g in groups]
    ks = max(
        stats.ks_2samp(bands[i], bands[j]).statistic for i in range(3) for j in range(i + 1, 3)
    )
    expected = partial_statistical_parity(None, scores, sensitive_features=group, interval=interval)
    assert ks == pytest.approx(expected, abs=1e-12)


def test_unit_weights_equal_no_weights():
    scores, group = _data(1)
    plain, _ = group_percentile_bands(scores, sensitive_features=group, interval=(0.2, 0.6))
    weighted, _ = group_percentile_bands(
        scores,
        sensitive_features=group,
        interval=(0.2, 0.6),
        sample_weight=np.full(scores.size, 2.5),
    )
    np.testing.assert_array_equal(plain, weighted)


def test_cdf_curves_are_the_empirical_cdfs(tmp_path):
    scores, group = _data(2)
    ax = plot_group_score_cdfs(scores, sensitive_features=group, interval=(0.1, 0.4), threshold=0.0)
    in_band = band_oracle(scores, group, 0.1, 0.4)
    for k, g in enumerate(["a", "b", "c"]):
        s = scores[group == g]
        x, y = _line(ax, f"cdf:{k}").get_data()
        # the step curve starts at 0 and, at each drawn score, equals P(score <= x | g)
        assert y[0] == 0.0 and y[-1] == pytest.approx(1.0)
        ecdf = np.searchsorted(np.sort(s), x[1:], side="right") / s.size
        last_of_ties = np.r_[x[2:] != x[1:-1], True]
        np.testing.assert_allclose(y[1:][last_of_ties], ecdf[last_of_ties])
        assert _line(ax, f"cdf:{k}").get_drawstyle() == "steps-post"
        # the thick piece is the band's part of the curve
        bx, by = _line(ax, f"band:{k}").get_data()
        np.testing.assert_array_equal(bx[1:], np.sort(scores[in_band & (group == g)]))
        assert by[0] == pytest.approx(np.mean(s < bx[1]))  # the curve just below the band
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[1:4] == [
        f"a (n={(group == 'a').sum()})",
        f"b (n={(group == 'b').sum()})",
        f"c (n={(group == 'c').sum()})",
    ]
    assert "percentile interval [0.1, 0.4)" in legend[0] and "threshold = 0" in legend[-1]
    ax.figure.savefig(tmp_path / "cdfs.png")
    assert (tmp_path / "cdfs.png").stat().st_size > 5_000


@pytest.mark.parametrize("alpha, beta", [(0.1, 0.4), (0.0, 0.25), (0.3, 1.0)])
def test_band_piece_spans_the_cdf_levels_without_ties(alpha, beta):
    rng = np.random.default_rng(5)
    scores = rng.standard_normal(97)
    group = rng.integers(0, 2, 97)
    ax = plot_group_score_cdfs(scores, sensitive_features=group, interval=(alpha, beta))
    for k in range(2):
        n = int(np.sum(group == k))
        lo, hi = math.ceil(alpha * n - 1e-12), math.ceil(beta * n - 1e-12)
        _, by = _line(ax, f"band:{k}").get_data()
        # descending positions lo+1..hi are ascending ranks n-hi+1..n-lo
        assert by[0] == pytest.approx((n - hi) / n) and by[-1] == pytest.approx((n - lo) / n)
        assert abs(by[0] - (1 - beta)) <= 1 / n and abs(by[-1] - (1 - alpha)) <= 1 / n


def test_weighted_cdf_and_intersectional_groups():
    rng = np.random.default_rng(4)
    n = 120
    scores = rng.standard_normal(n)
    sensitive = pd.DataFrame(
        {"sex": rng.choice(["F", "M"], n), "age": rng.choice(["old", "young"], n)}
    )
    weights = rng.integers(1, 4, n).astype(float)
    ax = plot_group_score_cdfs(
        scores, sensitive_features=sensitive, sample_weight=weights, xlim=None
    )
    labels = [t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()]
    assert labels == ["F & old", "F & young", "M & old", "M & young"]
    mask = ((sensitive["sex"] == "F") & (sensitive["age"] == "old")).to_numpy()
    x, y = _line(ax, "cdf:0").get_data()
    order = np.argsort(scores[mask], kind="stable")
    np.testing.assert_allclose(y[1:], np.cumsum(weights[mask][order]) / weights[mask].sum())
    assert not [line for line in ax.lines if str(line.get_gid()).startswith("band:")]
    assert ax.get_xlim()[0] <= scores.min()  # xlim=None keeps every score in view


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"interval": (0.5, 0.2)}, "alpha < beta"),
        ({"interval": (0.0, 1.5)}, "alpha < beta"),
        ({"interval": 0.3}, "pair"),
        ({"interval": (0.501, 0.502)}, "is empty"),
    ],
)
def test_bad_intervals(kwargs, message):
    scores, group = _data(n=40)
    with pytest.raises(ValueError, match=message):
        plot_group_score_cdfs(scores, sensitive_features=group, **kwargs)


def test_bad_scores_and_weights():
    scores, group = _data(n=40)
    with pytest.raises(ValueError, match="NaN"):
        plot_group_score_cdfs(np.r_[np.nan, scores[1:]], sensitive_features=group)
    with pytest.raises(ValueError):
        plot_group_score_cdfs(scores, sensitive_features=group[:-1])
    with pytest.raises(ValueError, match="non-negative"):
        plot_group_score_cdfs(scores, sensitive_features=group, sample_weight=-np.ones(40))
    weights = (group != "a").astype(float)
    with pytest.raises(ValueError, match="zero total"):
        plot_group_score_cdfs(scores, sensitive_features=group, sample_weight=weights)
