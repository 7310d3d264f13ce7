"""Exact group-threshold search: per-group cumulative counts, band sweeps and an LP.

Every group's candidate classifiers are the thresholds between its distinct scores
("points": select the top-k scores of the group, k at the end of a tie block, plus
k = 0). A point carries its weighted true / false positive counts, hence its rates and its
weighted number of correct decisions. Rates of one group are nondecreasing in k.

* Deterministic, one rate (demographic parity, equal opportunity): the group rates must lie
  in a band ``[b, b + tolerance]``. For a given band each group independently takes its
  most accurate point in the band (a range maximum over a contiguous run of its points);
  an optimal band can be slid up until its lower edge is some point's rate, so sweeping
  ``b`` over all point rates is exact: ``O(G n log n)`` with a sparse table.
* Deterministic, two rates (equalized odds): a band pair ``[b1, b1 + tol] x
  [b2, b2 + tol]`` on (TPR, FPR); the points of a group inside it are again a contiguous
  run (both rates are monotone in k). Every pair of lower edges is swept when there are
  at most :data:`PAIR_BUDGET` (pair, group) evaluations, else a quantile grid of them.
* Randomized (any metric): a linear program over the mixing weights of every group's
  points, ``max sum correct`` subject to the mixed rates lying in the band(s): the exact
  optimum over the convex hulls of the groups' (rate, accuracy) / ROC points (Hardt et
  al. 2016; error-parity's relaxation, Cruz & Hardt 2024), solved by HiGHS.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

__all__ = [
    "GroupPoints",
    "group_points",
    "solve_thresholds",
    "threshold_path",
    "best_thresholds",
    "mixed_positive_probability",
]

METRIC_RATES = {
    "demographic_parity": ("selection",),
    "equal_opportunity": ("tpr",),
    "equalized_odds": ("tpr", "fpr"),
}
PAIR_BUDGET = 4_000_000  # (b1, b2, group) evaluations of the exact equalized-odds sweep
RATE_SLACK = 1e-12  # float rounding allowed when testing whether a rate lies in a band


class GroupPoints(NamedTuple):
    """The candidate thresholds of every group, concatenated group after group."""

    group: np.ndarray  # (M,) group code of the point
    threshold: np.ndarray  # (M,) predict positive where score > threshold
    rates: dict  # name -> (M,) rate of the point ("selection", "tpr", "fpr", "precision")
    correct: np.ndarray  # (M,) weighted number of correct decisions in the group
    num_groups: int


def group_points(scores, y01, sample_weight, codes, num_groups, bonus=None) -> GroupPoints:
    """All candidate thresholds of every group, with their rates (vectorised).

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        Scores of the wrapped classifier (higher means more positive).
    y01 : ndarray of shape (n_samples,)
        Labels coded 0 / 1.
    sample_weight : ndarray of shape (n_samples,)
        Non-negative weights.
    codes : ndarray of shape (n_samples,)
        Group codes ``0..num_groups-1``.
    num_groups : int
        Number of groups.
    bonus : ndarray of shape (n_samples,), default=None
        Per-sample value added to ``correct`` of every point that selects the sample
        (a Lagrangian penalty of the group-blind mode).

    Returns
    -------
    GroupPoints
    """
    order = np.lexsort((-scores, codes))
    s, y, w, g = scores[order], y01[order], sample_weight[order], codes[order]
    tp = np.cumsum(w * y)
    fp = np.cumsum(w * (1.0 - y))
    group_tp = np.bincount(g, w * y, minlength=num_groups)
    group_fp = np.bincount(g, w * (1.0 - y), minlength=num_groups)
    start_tp = np.cumsum(group_tp) - group_tp  # cumulative counts before each group
    start_fp = np.cumsum(group_fp) - group_fp
    n = s.size
    # a cut after row i is valid where the next row is another group or another score
    is_cut = np.ones(n, dtype=bool)
    is_cut[:-1] = (g[1:] != g[:-1]) | (s[1:] != s[:-1])
    cut = np.flatnonzero(is_cut)
    next_score = np.full(n, -np.inf)
    next_score[:-1] = np.where(g[1:] == g[:-1], s[1:], -np.inf)
    cut_threshold = np.where(
        np.isfinite(next_score[cut]), 0.5 * (s[cut] + next_score[cut]), -np.inf
    )
    groups_all = np.arange(num_groups)
    # points: k = 0 of every group, then the valid cuts; sorted by (group, k)
    point_group = np.concatenate([groups_all, g[cut]])
    point_tp = np.concatenate([np.zeros(num_groups), tp[cut] - start_tp[g[cut]]])
    point_fp = np.concatenate([np.zeros(num_groups), fp[cut] - start_fp[g[cut]]])
    point_threshold = np.concatenate([np.full(num_groups, np.inf), cut_threshold])
    rank = np.concatenate([np.full(num_groups, -1), cut])
    order_points = np.lexsort((rank, point_group))
    point_group = point_group[order_points]
    point_tp = np.maximum(point_tp[order_points], 0.0)
    point_fp = np.maximum(point_fp[order_points], 0.0)
    pos, neg = group_tp[point_group], group_fp[point_group]
    rates = {
        "selection": _safe_divide(point_tp + point_fp, pos + neg),
        "tpr": _safe_divide(point_tp, pos),  # 0 where a group has no positive (as the metrics)
        "fpr": _safe_divide(point_fp, neg),
        # 0 where nobody is selected (scikit-learn's zero_division default, as the metrics)
        "precision": _safe_divide(point_tp, point_tp + point_fp),
    }
    rates = {name: np.minimum(rate, 1.0) for name, rate in rates.items()}
    correct = point_tp + (neg - point_fp)
    if bonus is not None:
        gain = np.cumsum(bonus[order])
        start_gain = np.bincount(g, bonus[order], minlength=num_groups)
        start_gain = np.cumsum(start_gain) - start_gain
        point_gain = np.concatenate([np.zeros(num_groups), gain[cut] - start_gain[g[cut]]])
        correct = correct + point_gain[order_points]
    return GroupPoints(point_group, point_threshold[order_points], rates, correct, int(num_groups))


def _safe_divide(numerator, denominator):
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, 0.0)


# ---------------------------------------------------------------------------------------
# range maximum (sparse table over the concatenated points)


def _sparse_table(values: np.ndarray) -> np.ndarray:
    """``table[j, i]``: index of the maximum of ``values[i : i + 2**j]`` (first on ties)."""
    m = values.size
    levels = [np.arange(m)]
    span = 1
    while 2 * span <= m:
        previous = levels[-1]
        left, right = previous[: m - 2 * span + 1], previous[span : m - span + 1]
        better = np.where(values[right] > values[left], right, left)
        levels.append(np.concatenate([better, previous[m - 2 * span + 1 :]]))
        span *= 2
    return np.stack(levels)


def _range_argmax(values, table, lo, hi):
    """Index of the maximum of ``values[lo:hi]`` (arrays of queries); -1 where empty."""
    length = hi - lo
    empty = length <= 0
    level = np.floor(np.log2(np.where(empty, 1, length))).astype(np.int64)
    lo_c = np.where(empty, 0, lo)
    left = table[level, lo_c]
    right = table[level, np.where(empty, 0, hi - (1 << level))]
    best = np.where(values[right] > values[left], right, left)
    return np.where(empty, -1, best)


# ---------------------------------------------------------------------------------------
# deterministic band sweeps


def _band_bounds(key, offsets, edges, tolerance):
    """``[lo, hi)`` point indices of every (edge, group) whose rate is in the band."""
    lower = edges[:, None] + offsets[None, :]
    lo = np.searchsorted(key, lower - RATE_SLACK, side="left")
    hi = np.searchsorted(key, lower + tolerance + RATE_SLACK, side="right")
    return lo, hi


def _best_choice(points, lo, hi, table):
    """Per row of (lo, hi) queries of shape (..., G): chosen points and the total."""
    chosen = _range_argmax(points.correct, table, lo, hi)
    feasible = np.all(chosen >= 0, axis=-1)
    total = np.where(chosen >= 0, points.correct[np.maximum(chosen, 0)], 0.0).sum(axis=-1)
    return chosen, np.where(feasible, total, -np.inf)


def _sorted_key(points, rate_name):
    # rates lie in [0, 1]: adding 2 * group makes the concatenated rates globally sorted
    offsets = 2.0 * np.arange(points.num_groups)
    return points.rates[rate_name] + offsets[points.group], offsets


def _one_rate_bands(points, rate_name):
    """What the one-rate sweep needs before the tolerance: the sorted key, the lower band
    edges of every (edge, group) and their first point indices (``lo`` of
    :func:`_band_bounds`, which does not depend on the tolerance)."""
    key, offsets = _sorted_key(points, rate_name)
    lower = np.unique(points.rates[rate_name])[:, None] + offsets[None, :]
    return key, lower, np.searchsorted(key, lower - RATE_SLACK, side="left")


def _deterministic_one_rate(points, tolerance, table, bands):
    """The deterministic support at ``tolerance`` of one rate, from its
    :func:`_one_rate_bands` ``bands``."""
    key, lower, lo = bands
    hi = np.searchsorted(key, lower + tolerance + RATE_SLACK, side="right")
    chosen, total = _best_choice(points, lo, hi, table)
    return chosen[int(np.argmax(total))]


def _edge_grid(values, size):
    """All distinct values, or ``size`` quantiles of them (0 always kept)."""
    edges = np.unique(values)
    if edges.size <= size:
        return edges
    picks = np.unique(np.round(np.linspace(0, edges.size - 1, size)).astype(np.int64))
    return np.unique(np.concatenate([[0.0], edges[picks]]))


def _deterministic_two_rates(points, tolerance, table):
    key_tpr, offsets = _sorted_key(points, "tpr")
    key_fpr, _ = _sorted_key(points, "fpr")
    n_pairs = np.unique(points.rates["tpr"]).size * np.unique(points.rates["fpr"]).size
    size = max(2, int(np.sqrt(PAIR_BUDGET / points.num_groups)))
    if n_pairs * points.num_groups <= PAIR_BUDGET:
        size = max(np.unique(points.rates["tpr"]).size, np.unique(points.rates["fpr"]).size)
    edges_tpr = _edge_grid(points.rates["tpr"], size)
    edges_fpr = _edge_grid(points.rates["fpr"], size)
    lo_t, hi_t = _band_bounds(key_tpr, offsets, edges_tpr, tolerance)
    lo_f, hi_f = _band_bounds(key_fpr, offsets, edges_fpr, tolerance)
    chunk = max(1, PAIR_BUDGET // max(1, edges_fpr.size * points.num_groups) // 4)
    best_total, best_choice = -np.inf, None
    for start in range(0, edges_tpr.size, chunk):  # chunks of band pairs, bounded memory
        lo = np.maximum(lo_t[start : start + chunk, None, :], lo_f[None, :, :])
        hi = np.minimum(hi_t[start : start + chunk, None, :], hi_f[None, :, :])
        chosen, total = _best_choice(points, lo, hi, table)
        flat = int(np.argmax(total))
        if total.ravel()[flat] > best_total:
            best_total = total.ravel()[flat]
            best_choice = chosen.reshape(-1, points.num_groups)[flat]
    return best_choice


# ---------------------------------------------------------------------------------------
# randomized: linear program over mixing weights


def _randomized_lp(points, rate_names, tolerance):
    """Mixing weights of every point (``(M,)``, summing to one per group)."""
    m, num_groups = points.group.size, points.num_groups
    n_bands = len(rate_names)
    # variables: weights of the M points, then one lower band edge per rate
    cost = np.concatenate([-points.correct / max(points.correct.max(), 1e-300), np.zeros(n_bands)])
    columns = np.arange(m)
    simplex = sparse.csr_matrix(
        (np.ones(m), (points.group, columns)), shape=(num_groups, m + n_bands)
    )
    blocks, upper = [], []
    for j, name in enumerate(rate_names):
        rate = sparse.csr_matrix(
            (points.rates[name], (points.group, columns)), shape=(num_groups, m)
        )
        edge = sparse.csr_matrix(
            (np.ones(num_groups), (np.arange(num_groups), np.full(num_groups, j))),
            shape=(num_groups, n_bands),
        )
        blocks += [sparse.hstack([-rate, edge]), sparse.hstack([rate, -edge])]
        upper += [np.zeros(num_groups), np.full(num_groups, tolerance)]
    result = linprog(
        cost,
        A_ub=sparse.vstack(blocks).tocsr(),
        b_ub=np.concatenate(upper),
        A_eq=simplex,
        b_eq=np.ones(num_groups),
        bounds=[(0, None)] * m + [(0, 1)] * n_bands,
        method="highs",
    )
    if result.status != 0:  # pragma: no cover - the all-negative classifier is feasible
        raise RuntimeError(f"the threshold LP failed: {result.message}")
    weights = np.clip(result.x[:m], 0.0, None)
    weights[weights < 1e-12] = 0.0
    return weights / np.bincount(points.group, weights, minlength=num_groups)[points.group]


# ---------------------------------------------------------------------------------------
# public entry points


def solve_thresholds(points: GroupPoints, metric: str, tolerance: float, randomized: bool):
    """Per-group thresholds and mixing probabilities of the most accurate fair classifier.

    Parameters
    ----------
    points : GroupPoints
        From :func:`group_points`.
    metric : {"demographic_parity", "equal_opportunity", "equalized_odds"}
        Which group rates must lie within ``tolerance`` of each other.
    tolerance : float
        Largest allowed difference between the groups' rates.
    randomized : bool
        Mix thresholds (LP) instead of one threshold per group.

    Returns
    -------
    thresholds : ndarray of shape (G, m)
        Thresholds of each group's mixture (padded with ``inf``).
    probabilities : ndarray of shape (G, m)
        Probability of each threshold (padded with 0); one column when deterministic.
    """
    return threshold_path(points, metric, [tolerance], randomized)[0]


def threshold_path(points: GroupPoints, metric: str, tolerances, randomized: bool) -> list:
    """:func:`solve_thresholds` at every tolerance, sharing what does not depend on it.

    The range-maximum table of the points and, for one rate, the sorted rates, the band
    edges and their first points are built once; each tolerance then costs one
    ``searchsorted`` of the band ends and one batch of range maxima (the same
    computations as :func:`solve_thresholds`, so the same thresholds).

    Returns
    -------
    solutions : list of (thresholds, probabilities)
        As :func:`solve_thresholds` returns them, one per tolerance, in order.
    """
    rate_names = METRIC_RATES[metric]
    if randomized:
        return [
            _thresholds_of(points, _randomized_lp(points, rate_names, float(tolerance)))
            for tolerance in tolerances
        ]
    table = _sparse_table(points.correct)
    bands = _one_rate_bands(points, rate_names[0]) if len(rate_names) == 1 else None
    solutions = []
    for tolerance in tolerances:
        if bands is not None:
            support = _deterministic_one_rate(points, tolerance, table, bands)
        else:
            support = _deterministic_two_rates(points, tolerance, table)
        weights = np.zeros(points.group.size)
        weights[support] = 1.0
        solutions.append(_thresholds_of(points, weights))
    return solutions


def _thresholds_of(points: GroupPoints, weights):
    """``(thresholds, probabilities)`` of shape (G, m) from the points' mixing weights."""
    support = np.flatnonzero(weights > 0)
    group = points.group[support]
    slot = np.arange(support.size) - np.searchsorted(group, group, side="left")
    width = int(slot.max()) + 1
    thresholds = np.full((points.num_groups, width), np.inf)
    probabilities = np.zeros((points.num_groups, width))
    thresholds[group, slot] = points.threshold[support]
    probabilities[group, slot] = weights[support]
    return thresholds, probabilities


def best_thresholds(points: GroupPoints) -> np.ndarray:
    """Each group's most valuable threshold, no constraint: shape (G, 1)."""
    order = np.lexsort((-points.correct, points.group))
    _, first = np.unique(points.group[order], return_index=True)
    thresholds = np.full((points.num_groups, 1), np.inf)
    thresholds[points.group[order][first], 0] = points.threshold[order][first]
    return thresholds


def mixed_positive_probability(scores, codes, thresholds, probabilities) -> np.ndarray:
    """``P(predict 1)`` of every sample: its group's threshold probabilities summed over the
    thresholds its score exceeds."""
    above = scores[:, None] > thresholds[codes]
    return np.minimum((above * probabilities[codes]).sum(axis=1), 1.0)
