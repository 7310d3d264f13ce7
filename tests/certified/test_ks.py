"""The certified KS gap: its DKW interval covers the population gap by simulation.

Known truth: groups drawn from normal laws, so the population KS gap is a closed form
(``2 Phi(d / 2) - 1`` for a mean shift ``d``), or 0 under exact parity; small groups and
discrete predictions (atoms) included. The same coverage test rejects a broken variant
(half the half-widths, no union bound over the groups).
"""

import numpy as np
import pytest
from scipy.stats import ks_2samp, norm

from fairest.certified import _ks
from fairest.certified._ks import certify_ks_gap
from fairest.metrics import prediction_ks_distance

DELTA = 0.1
REPLICATES = 400


def _draw(rng, sizes, shifts, discrete):
    values = np.concatenate([rng.normal(s, 1.0, n) for n, s in zip(sizes, shifts)])
    if discrete:
        values = np.round(values)  # atoms: a tree's or a rounded score's predictions
    groups = np.repeat(np.arange(len(sizes)), sizes)
    return values, groups


def _true_gap(shifts, discrete):
    shifts = np.asarray(shifts, dtype=float)
    if not discrete:
        return float(2 * norm.cdf(np.ptp(shifts) / 2) - 1)
    # CDF of round(N(s, 1)) at the integers k: Phi(k + 0.5 - s)
    grid = np.arange(-10, 11) + 0.5
    cdfs = norm.cdf(grid[None, :] - shifts[:, None])
    return float((cdfs.max(axis=0) - cdfs.min(axis=0)).max())


CASES = [
    ((30, 30, 30), (0.0, 0.0, 0.0), False),  # exact parity, small groups
    ((400, 60, 25), (0.0, 0.5, 0.0), False),  # unequal and small groups
    ((200, 200), (0.0, 0.3), True),  # atoms
]


def _miss_rate(sizes, shifts, discrete, seed=0):
    rng = np.random.default_rng(seed)
    truth = _true_gap(shifts, discrete)
    misses = 0
    for _ in range(REPLICATES):
        values, groups = _draw(rng, sizes, shifts, discrete)
        result = certify_ks_gap(values, sensitive_features=groups, delta=DELTA)
        misses += not (result.lower <= truth <= result.upper)
    return misses / REPLICATES


# the binomial 99.9 % upper limit of a miss rate of DELTA over REPLICATES draws
SLACK = 3.1 * np.sqrt(DELTA * (1 - DELTA) / REPLICATES)


@pytest.mark.parametrize(("sizes", "shifts", "discrete"), CASES)
def test_the_interval_covers_the_population_gap(sizes, shifts, discrete):
    assert _miss_rate(sizes, shifts, discrete) <= DELTA + SLACK


def _broken(rows, delta, num_groups):
    """Half the half-width, and no union bound over the groups."""
    return np.sqrt(np.log(2.0 / delta) / (2.0 * rows)) / 2


@pytest.mark.parametrize(("sizes", "shifts", "discrete"), CASES[:2])
def test_the_same_coverage_test_rejects_a_broken_bound(sizes, shifts, discrete, monkeypatch):
    monkeypatch.setattr(_ks, "_dkw_epsilon", _broken)
    assert _miss_rate(sizes, shifts, discrete) > DELTA + SLACK


def test_estimate_and_half_widths():
    rng = np.random.default_rng(1)
    values, groups = _draw(rng, (300, 100, 50), (0.0, 0.4, -0.2), False)
    labels = np.array(["x", "y", "z"])[groups]
    result = certify_ks_gap(values, sensitive_features=labels, delta=0.05, tolerance=0.5)
    pairs = [("x", "y"), ("x", "z"), ("y", "z")]
    expected = max(ks_2samp(values[labels == a], values[labels == b]).statistic for a, b in pairs)
    assert result.estimate == pytest.approx(expected, abs=1e-12)
    assert result.estimate == pytest.approx(
        prediction_ks_distance(None, values, sensitive_features=labels)
    )
    np.testing.assert_array_equal(result.rows, [300, 100, 50])
    np.testing.assert_allclose(result.epsilon, np.sqrt(np.log(2 * 3 / 0.05) / (2 * result.rows)))
    gap = {(a, b): ks_2samp(values[labels == a], values[labels == b]).statistic for a, b in pairs}
    eps = dict(zip("xyz", result.epsilon))
    upper = max(gap[p] + eps[p[0]] + eps[p[1]] for p in pairs)
    assert result.upper == pytest.approx(min(1.0, upper))
    assert set(result.worst_pair) == set(max(pairs, key=lambda p: gap[p] + eps[p[0]] + eps[p[1]]))
    assert result.certified is (result.upper <= 0.5)
    assert certify_ks_gap(values, sensitive_features=labels).certified is None


def test_bad_arguments_raise_naming_them():
    values, groups = np.arange(10.0), np.repeat(["a", "b"], 5)
    with pytest.raises(ValueError, match="delta must be in"):
        certify_ks_gap(values, sensitive_features=groups, delta=1.0)
    with pytest.raises(ValueError, match="tolerance must be in"):
        certify_ks_gap(values, sensitive_features=groups, tolerance=2)
    with pytest.raises(ValueError, match="y_pred"):
        certify_ks_gap(np.r_[values[:-1], np.nan], sensitive_features=groups)
    with pytest.raises(ValueError, match="2"):
        certify_ks_gap(values, sensitive_features=["a"] * 10)
