"""Exact individual fairness in numpy, without pairwise matrices (spec badr.md 3.2, 3.9).

The numerator of individual fairness is the cross-group pair sum

    C = sum_{g<h} sum_{i in g, j in h} w_i w_j K(y_i, y_j) (s_i - s_j)**2,
    K(y, y') = exp(-|y - y'|),

computed as ``C = (E(all) - sum_g E(group g)) / 2`` with the ordered-pair energy

    E(S) = sum_{i,j in S} w_i w_j K_ij (s_i - s_j)**2
         = 2 sum_i w_i s_i**2 (K w)_i - 2 sum_i w_i s_i (K (w s))_i.

Only sums weighted by the Laplace kernel on scalar labels are needed:

* labels with few distinct values (binary labels in particular): sums per (group, label)
  cell, O(n + G m**2) for m distinct labels;
* real labels: after sorting by label, each unordered pair is visited once as
  ``j <= k``, and ``sum_{j <= k} K_jk w_j s_j**m`` (m = 0, 1, 2) is a forward first-order
  linear recursion ``P[k] = v[k] + exp(-(y_k - y_{k-1})) P[k-1]``: an associative scan
  of affine maps, O(n log n) with the sort. Every factor is at most 1, so the recursion
  is stable, and ties (factor 1) need no special case. (Spec 3.9 writes ``K v`` as a
  forward plus a backward recursion; by symmetry the forward one is enough.)

Weights act as frequency weights (integer weights equal repeated rows); zero-weight rows
contribute nothing.
"""

from __future__ import annotations

import numpy as np

from fairest.metrics._defaults import MAX_DISCRETE_LABELS
from fairest.metrics._group_stats import group_totals

__all__ = [
    "cross_group_pair_weight",
    "cross_group_energy",
    "cross_group_energy_cells",
    "cross_group_energy_sorted",
    "affine_prefix_scan",
]


def cross_group_pair_weight(weights, codes, num_groups) -> float:
    """Total weight of ordered cross-group pairs, ``W**2 - sum_g W_g**2``."""
    group_weight = group_totals(codes, weights, num_groups)
    total = group_weight.sum()
    return float(total**2 - np.sum(group_weight**2))


def cross_group_energy(y, scores, weights, codes, num_groups) -> float:
    """Cross-group pair sum ``C`` (see module docstring), by the fastest exact route."""
    centred = scores - np.dot(weights, scores) / weights.sum()  # C is shift-invariant
    if np.unique(y).size <= MAX_DISCRETE_LABELS:
        return cross_group_energy_cells(y, centred, weights, codes, num_groups)
    return cross_group_energy_sorted(y, centred, weights, codes, num_groups)


# ---------------------------------------------------------------------------------------
# discrete labels: per (group, label) cells


def _cell_energy(kernel, counts, first, second) -> float:
    """Sum over the rows (sets) of ``E(row)`` from cell sums of shape (rows, m)."""
    return float(2.0 * np.sum(second * (counts @ kernel)) - 2.0 * np.sum(first * (first @ kernel)))


def cross_group_energy_cells(y, scores, weights, codes, num_groups) -> float:
    """``C`` from per-(group, label) weights, score sums and squared-score sums."""
    labels, label_codes = np.unique(y, return_inverse=True)
    n_labels = labels.size
    kernel = np.exp(-np.abs(labels[:, None] - labels[None, :]))
    cells = codes.astype(np.int64) * n_labels + label_codes
    shape = (num_groups, n_labels)

    def cell_sums(values):
        return group_totals(cells, values, num_groups * n_labels).reshape(shape)

    counts = cell_sums(weights)
    first = cell_sums(weights * scores)
    second = cell_sums(weights * scores**2)
    total = _cell_energy(
        kernel,
        counts.sum(0, keepdims=True),
        first.sum(0, keepdims=True),
        second.sum(0, keepdims=True),
    )
    within = _cell_energy(kernel, counts, first, second)
    return 0.5 * (total - within)


# ---------------------------------------------------------------------------------------
# real labels: sorted recursions


def affine_prefix_scan(decay: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Solve ``F_k = values_k + decay_k F_{k-1}`` (``F_{-1} = 0``) for every k.

    Hillis-Steele doubling over the affine maps ``x -> decay_k x + values_k``: log2(n)
    vectorised passes, each composing a map with the one ``shift`` places earlier.

    Parameters
    ----------
    decay : ndarray of shape (n,)
        Factors in [0, 1]; ``decay[0]`` is ignored.
    values : ndarray of shape (n,) or (n, k)
        Inputs; several columns share one recursion.

    Returns
    -------
    ndarray of the shape of ``values``
    """
    factor = np.array(decay, dtype=np.float64)
    result = np.array(values, dtype=np.float64)
    factor[0] = 0.0
    broadcast = (slice(None),) + (None,) * (result.ndim - 1)
    shift = 1
    while shift < factor.size:
        result[shift:] = result[shift:] + factor[shift:][broadcast] * result[:-shift]
        factor[shift:] = factor[shift:] * factor[:-shift]
        shift *= 2
    return result


def _lower_pair_sum(sorted_y, sorted_scores, sorted_weights, same_segment) -> float:
    """``sum_{j <= k} w_j w_k exp(-|y_k - y_j|) (s_k - s_j)**2`` over pairs of one segment.

    Rows are label-sorted within segments and ``same_segment[k]`` (length n-1) says
    whether rows k and k+1 share a segment; each unordered pair is counted once. With
    ``P_m[k] = sum_{j <= k} K_jk w_j s_j**m`` (one forward recursion, three columns), the
    sum is ``sum_k w_k (s_k**2 P_0[k] - 2 s_k P_1[k] + P_2[k])``.
    """
    link = np.exp(-np.diff(sorted_y)) * same_segment  # factor between rows k and k + 1
    powers = np.stack(
        [sorted_weights, sorted_weights * sorted_scores, sorted_weights * sorted_scores**2],
        axis=1,
    )
    prefix = affine_prefix_scan(np.concatenate([[0.0], link]), powers)
    per_row = sorted_scores**2 * prefix[:, 0] - 2.0 * sorted_scores * prefix[:, 1] + prefix[:, 2]
    return float(np.dot(sorted_weights, per_row))


def cross_group_energy_sorted(y, scores, weights, codes, num_groups) -> float:
    """``C`` from forward Laplace-kernel recursions on label-sorted rows, O(n log n).

    ``C`` is the pair sum over all rows (sorted by label) minus the pair sum within
    groups (rows sorted by group, then label; no link across a group boundary).
    """
    del num_groups  # the segments are read off the sorted codes
    order = np.argsort(y, kind="stable")
    total = _lower_pair_sum(y[order], scores[order], weights[order], np.ones(y.size - 1))
    order = np.lexsort((y, codes))
    sorted_codes = codes[order]
    same_group = (sorted_codes[1:] == sorted_codes[:-1]).astype(np.float64)
    within = _lower_pair_sum(y[order], scores[order], weights[order], same_group)
    return total - within
