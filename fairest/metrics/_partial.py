"""Exact partial statistical parity (pSP) and partial demographic parity (pDP).

Partial fairness compares the groups' score distributions only inside a band of
within-group percentiles ``interval = (alpha, beta)`` in CCDF units: ``alpha = 0`` is the
top of every group's scores, so ``(0, 0.25)`` compares the top 25 % of each group.

Every group keeps the samples whose within-group rank lies in ``[alpha, beta)`` (the
"band"); pSP is the largest gap between two bands' exceedance rates over all thresholds
(the two-sample Kolmogorov-Smirnov statistic of the bands), pDP the gap at one threshold.
With ``interval=(0, 1)`` they are full statistical parity (the KS distance between the
groups' score laws) and demographic parity at the threshold.

This module also holds the small input checks that the other family metrics
(``_ermi.py``, ``_constrained.py``) share.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
import pandas as pd

from fairest.metrics._checks import check_score_inputs
from fairest.metrics._group_stats import group_totals

__all__ = [
    "partial_statistical_parity",
    "partial_demographic_parity",
    "partial_parity_matrix",
    "partial_fairness_score",
    "rank_curve",
    "suggest_interval",
]

# Relative tolerance on within-group ranks: a sample whose rank equals a band edge up
# to floating-point error of the cumulative weights counts as being on the edge
# (spec partial_fairness.md section 2.1: "ceil(a*n - 1e-12)").
_RANK_TOL = 1e-9


def _max_pairwise(matrix: np.ndarray) -> float:
    """Largest entry of a symmetric pairwise matrix (0 for a single group)."""
    return float(matrix.max()) if matrix.size else 0.0


# --------------------------------------------------------------------------------------
# percentile bands
# --------------------------------------------------------------------------------------


def _check_interval(interval) -> tuple[float, float]:
    try:
        alpha, beta = interval
    except (TypeError, ValueError) as error:
        raise ValueError(f"interval must be a pair (alpha, beta); got {interval!r}.") from error
    if not all(isinstance(v, numbers.Real) for v in (alpha, beta)):
        raise ValueError(f"interval must hold two real numbers; got {interval!r}.")
    alpha, beta = float(alpha), float(beta)
    if not (0.0 <= alpha < beta <= 1.0):
        raise ValueError(f"interval must satisfy 0 <= alpha < beta <= 1; got ({alpha}, {beta}).")
    return alpha, beta


class _RankedScores(NamedTuple):
    """Validated scores with their descending within-group order, computed once."""

    scores: np.ndarray  # (n,) float64
    codes: np.ndarray  # (n,) int32 group codes
    weights: np.ndarray  # (n,) float64
    groups: np.ndarray  # (G,) group labels
    order: np.ndarray  # (n,) permutation: by group, then decreasing score, stable ties
    start_rank: np.ndarray  # (n,) share of the group's weight before each sorted sample


def _rank_within_groups(scores, codes, weights, groups) -> _RankedScores:
    """Sort by group, then by decreasing score (ties keep their original order).

    The start rank of a sample is the share of its group's weight placed strictly before
    it in that order: ``(i - 1) / n_k`` for the ``i``-th largest score without weights.
    """
    by_score = np.argsort(-scores, kind="stable")
    order = by_score[np.argsort(codes[by_score], kind="stable")]
    sorted_codes = codes[order]
    sorted_weights = weights[order]
    mass = group_totals(codes, weights, len(groups))
    mass_before_group = np.cumsum(mass) - mass
    weight_before = np.cumsum(sorted_weights) - sorted_weights
    within_group = weight_before - mass_before_group[sorted_codes]
    start_rank = within_group / mass[sorted_codes]
    return _RankedScores(scores, codes, weights, groups, order, start_rank)


def _band_mask(start_rank: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """Samples whose start rank lies in ``[alpha, beta)`` (up to rounding)."""
    return (start_rank >= alpha - _RANK_TOL) & (start_rank < beta - _RANK_TOL)


def _percentile_bands(ranked: _RankedScores, interval):
    """Scores, group codes and weights of every group's percentile band, and its mass.

    Without sample weights group ``k`` keeps its sorted positions
    ``ceil(alpha n_k) + 1 .. ceil(beta n_k)`` (1-based, descending scores, stable ties).
    With weights a sample is kept when the weight share of its group strictly above it in
    that order lies in ``[alpha, beta)``.
    """
    alpha, beta = interval
    keep = ranked.order[_band_mask(ranked.start_rank, alpha, beta)]
    codes, weights = ranked.codes[keep], ranked.weights[keep]
    band_mass = group_totals(codes, weights, len(ranked.groups))
    empty = np.flatnonzero(~(band_mass > 0))
    if empty.size:
        group = ranked.groups[empty[0]]
        count = int(np.sum(ranked.codes == empty[0]))
        raise ValueError(
            f"the percentile band {interval} of group {group!r} ({count} samples) is "
            "empty; widen the interval or merge small groups."
        )
    return ranked.scores[keep], codes, weights, band_mass


def _exceedance_table(band_scores, band_codes, band_weights, band_mass, n_groups):
    """Share of every band strictly above every distinct band score.

    Returns the increasing distinct scores (thresholds) and an array of shape
    (n_groups, n_thresholds) whose entry ``[k, t]`` is the weighted share of band ``k``
    with score ``> thresholds[t]``. The thresholds are where the exceedance step
    functions jump, so they contain the maximiser of every pairwise gap.
    """
    thresholds, position = np.unique(band_scores, return_inverse=True)
    n_thresholds = thresholds.size
    mass_at = np.bincount(
        band_codes * n_thresholds + position,
        weights=band_weights,
        minlength=n_groups * n_thresholds,
    ).reshape(n_groups, n_thresholds)
    mass_at_or_above = np.cumsum(mass_at[:, ::-1], axis=1)[:, ::-1]
    return thresholds, (mass_at_or_above - mass_at) / band_mass[:, None]


def _pairwise_max_gap(table: np.ndarray) -> np.ndarray:
    """Matrix of ``max_t |table[k, t] - table[k', t]|`` over all group pairs."""
    n_groups = table.shape[0]
    gaps = np.zeros((n_groups, n_groups))
    for k in range(n_groups - 1):  # a loop over groups, not samples
        gaps[k, k + 1 :] = np.abs(table[k + 1 :] - table[k]).max(axis=1)
    return gaps + gaps.T


def _prepare(y_true, y_score, sensitive_features, sample_weight) -> _RankedScores:
    inputs = check_score_inputs(y_true, y_score, sensitive_features, sample_weight)
    return _rank_within_groups(*inputs)


def _psp_matrix(ranked: _RankedScores, interval) -> np.ndarray:
    band = _percentile_bands(ranked, interval)
    _, table = _exceedance_table(*band, len(ranked.groups))
    return _pairwise_max_gap(table)


def _pdp_matrix(ranked: _RankedScores, interval, threshold) -> np.ndarray:
    band_scores, band_codes, band_weights, band_mass = _percentile_bands(ranked, interval)
    above = band_weights * (band_scores > threshold)
    rate = group_totals(band_codes, above, len(ranked.groups)) / band_mass
    return np.abs(rate[:, None] - rate[None, :])


def _check_threshold(threshold) -> float:
    if not isinstance(threshold, numbers.Real) or not np.isfinite(threshold):
        raise ValueError(f"threshold must be a finite real number; got {threshold!r}.")
    return float(threshold)


# --------------------------------------------------------------------------------------
# public metrics
# --------------------------------------------------------------------------------------


def partial_statistical_parity(
    y_true,
    y_score,
    *,
    sensitive_features,
    interval=(0.0, 1.0),
    sample_weight=None,
):
    r"""Partial statistical parity (pSP): largest between-group gap of in-band CCDFs.

    For every group :math:`k` keep the band :math:`S_k` of samples whose within-group
    rank (share of the group scored strictly higher) lies in
    :math:`[\alpha, \beta)`; then

    .. math::

        \mathrm{pSP}_{k,k'} = \max_\theta \big| \Pr(s > \theta \mid S_k)
                               - \Pr(s > \theta \mid S_{k'}) \big|,

    the two-sample Kolmogorov-Smirnov statistic of the two bands. The function returns
    the maximum over all pairs of groups (0 for a single group).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored; accepted for a fairlearn-like signature. Its length is checked when
        given.
    y_score : array-like of shape (n_samples,)
        Real-valued scores (decision function, probabilities or regression outputs).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership; several columns define intersectional groups.
    interval : tuple (alpha, beta), default=(0.0, 1.0)
        Percentile interval in CCDF units, ``0 <= alpha < beta <= 1``; ``alpha = 0`` is
        the top of each group. ``(0, 1)`` gives full statistical parity (the KS distance
        between the groups' score distributions).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights. Ranks become weight shares, and a sample belongs to the
        band when the weight share strictly above it lies in ``[alpha, beta)``. With unit
        weights this is exactly the unweighted rule (positions
        ``ceil(alpha n_k) + 1 .. ceil(beta n_k)``); integer weights are not the same as
        repeating samples at the band edges.

    Returns
    -------
    float
        Value in ``[0, 1]``; 0 means the bands have identical score distributions.

    Raises
    ------
    ValueError
        On NaN/inf scores, length mismatches, an invalid interval or an empty band.

    See Also
    --------
    partial_demographic_parity : the gap at one fixed threshold.
    partial_parity_matrix : all pairwise values as a DataFrame.
    partial_fairness_score : the paper's reported ``1 - max pSP``.

    Notes
    -----
    Scores are sorted in decreasing order within each group, ties broken by the original
    position, so the result is deterministic; it is invariant under any strictly
    increasing transformation of the scores. Cost: :math:`O(n \log n + G^2 T)` with
    :math:`T` the number of distinct in-band scores.

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Definition 4.2 and Appendix A.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([0.9, 0.8, 0.3, 0.1, 0.7, 0.6, 0.5, 0.4])
    >>> groups = np.array(["a"] * 4 + ["b"] * 4)
    >>> partial_statistical_parity(None, scores, sensitive_features=groups,
    ...                            interval=(0.0, 0.5))
    1.0
    """
    interval = _check_interval(interval)
    ranked = _prepare(y_true, y_score, sensitive_features, sample_weight)
    return _max_pairwise(_psp_matrix(ranked, interval))


def partial_demographic_parity(
    y_true,
    y_score,
    *,
    sensitive_features,
    interval=(0.0, 1.0),
    threshold=0.0,
    sample_weight=None,
):
    r"""Partial demographic parity (pDP): gap of in-band positive rates at a threshold.

    With the same per-group percentile bands :math:`S_k` as
    :func:`partial_statistical_parity`,

    .. math::

        \mathrm{pDP}_{k,k'} = \big| \Pr(s > \hat\theta \mid S_k)
                               - \Pr(s > \hat\theta \mid S_{k'}) \big|,

    and the function returns the maximum over all pairs of groups.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored; accepted for a fairlearn-like signature.
    y_score : array-like of shape (n_samples,)
        Real-valued scores.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    interval : tuple (alpha, beta), default=(0.0, 1.0)
        Percentile interval in CCDF units; ``(0, 1)`` gives full demographic parity
        ``|Pr(s > threshold | k) - Pr(s > threshold | k')|``.
    threshold : float, default=0.0
        Decision threshold :math:`\hat\theta`; a sample is positive when its score is
        strictly above it (the paper uses 0 on decision-function scores).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights, as in :func:`partial_statistical_parity`.

    Returns
    -------
    float
        Value in ``[0, 1]``.

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Definition 4.3 and Lemma 5.2.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([0.9, 0.8, -0.3, -0.1, 0.7, 0.6, 0.5, -0.4])
    >>> groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    >>> partial_demographic_parity(None, scores, sensitive_features=groups)
    0.25
    """
    interval = _check_interval(interval)
    threshold = _check_threshold(threshold)
    ranked = _prepare(y_true, y_score, sensitive_features, sample_weight)
    return _max_pairwise(_pdp_matrix(ranked, interval, threshold))


def partial_parity_matrix(
    y_true,
    y_score,
    *,
    sensitive_features,
    interval=(0.0, 1.0),
    metric="psp",
    threshold=0.0,
    sample_weight=None,
):
    """All pairwise pSP or pDP values, as a symmetric group-by-group table.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored; accepted for a fairlearn-like signature.
    y_score : array-like of shape (n_samples,)
        Real-valued scores.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    interval : tuple (alpha, beta), default=(0.0, 1.0)
        Percentile interval in CCDF units.
    metric : {"psp", "pdp"}, default="psp"
        Partial statistical parity or partial demographic parity.
    threshold : float, default=0.0
        Decision threshold of pDP; ignored for pSP.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.

    Returns
    -------
    pandas.DataFrame of shape (n_groups, n_groups)
        Entry ``[k, k']`` is the metric between groups ``k`` and ``k'`` (zero diagonal);
        index and columns are the group labels.

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Section 7.
    """
    interval = _check_interval(interval)
    if metric not in ("psp", "pdp"):
        raise ValueError(f"metric must be 'psp' or 'pdp'; got {metric!r}.")
    ranked = _prepare(y_true, y_score, sensitive_features, sample_weight)
    if metric == "psp":
        matrix = _psp_matrix(ranked, interval)
    else:
        matrix = _pdp_matrix(ranked, interval, _check_threshold(threshold))
    labels = pd.Index(list(ranked.groups), tupleize_cols=False)
    return pd.DataFrame(matrix, index=labels, columns=labels)


def partial_fairness_score(
    y_true,
    y_score,
    *,
    sensitive_features,
    interval=(0.0, 1.0),
    metric="psp",
    threshold=0.0,
    sample_weight=None,
):
    """The paper's reported fairness: ``1 - max over group pairs of pSP`` (or pDP).

    Larger is fairer; 1 means identical in-band distributions (pSP) or in-band positive
    rates (pDP). The paper evaluates it on the test set, the bands recomputed from the
    test set's own within-group ranks, which is what passing test scores here does.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored; accepted for a fairlearn-like signature.
    y_score : array-like of shape (n_samples,)
        Real-valued scores.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    interval : tuple (alpha, beta), default=(0.0, 1.0)
        Percentile interval in CCDF units.
    metric : {"psp", "pdp"}, default="psp"
        Which partial metric to subtract from 1.
    threshold : float, default=0.0
        Decision threshold of pDP; ignored for pSP.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.

    Returns
    -------
    float
        Value in ``[0, 1]``.

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Section 7 (the "fairness" axis of Figure 1 and Tables 2-4).
    """
    if metric == "psp":
        value = partial_statistical_parity(
            y_true,
            y_score,
            sensitive_features=sensitive_features,
            interval=interval,
            sample_weight=sample_weight,
        )
    elif metric == "pdp":
        value = partial_demographic_parity(
            y_true,
            y_score,
            sensitive_features=sensitive_features,
            interval=interval,
            threshold=threshold,
            sample_weight=sample_weight,
        )
    else:
        raise ValueError(f"metric must be 'psp' or 'pdp'; got {metric!r}.")
    return 1.0 - value


def rank_curve(y_score, *, sensitive_features, sample_weight=None):
    r"""Every group's full empirical CCDF (its "rank") at every distinct score.

    Sweeping the threshold :math:`\theta` from the largest score down, the curve of
    pairs :math:`(\bar F_1(\theta), \bar F_2(\theta))` shows partial fairness: inside the
    interval (on both axes) a pSP-fair model has a curve of slope close to 1.

    Parameters
    ----------
    y_score : array-like of shape (n_samples,)
        Real-valued scores.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.

    Returns
    -------
    thresholds : ndarray of shape (n_thresholds,)
        Distinct scores in decreasing order.
    ranks : ndarray of shape (n_thresholds, n_groups)
        ``ranks[t, k]`` is the weighted share of group ``k`` scored strictly above
        ``thresholds[t]``.
    groups : ndarray of shape (n_groups,)
        Group labels, the column order of ``ranks``.

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Figure 2.
    """
    ranked = _prepare(None, y_score, sensitive_features, sample_weight)
    n_groups = len(ranked.groups)
    mass = group_totals(ranked.codes, ranked.weights, n_groups)
    thresholds, table = _exceedance_table(
        ranked.scores, ranked.codes, ranked.weights, mass, n_groups
    )
    return thresholds[::-1], table[:, ::-1].T, ranked.groups


def suggest_interval(
    y_score,
    *,
    sensitive_features,
    threshold=0.0,
    widths=(0.1, 0.2, 0.25, 0.3),
    step=0.05,
    sample_weight=None,
):
    """Interval around the positive-decision rate on which the scores are least fair.

    The paper's recipe when no target interval is given: take the pooled share ``p`` of
    scores above ``threshold``, form candidate intervals containing ``p`` and keep the
    one with the largest pSP. Candidates are ``[a, a + w)`` for every width ``w`` in
    ``widths`` and every ``a`` on the lattice ``0, step, 2 step, ...`` with
    ``a <= p < a + w`` and ``a + w <= 1``; ties go to the first candidate in that order
    (widths as given, then increasing ``a``).

    Parameters
    ----------
    y_score : array-like of shape (n_samples,)
        Scores of the unconstrained model, usually on training data.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    threshold : float, default=0.0
        Decision threshold defining ``p``.
    widths : sequence of float, default=(0.1, 0.2, 0.25, 0.3)
        Candidate interval widths in ``(0, 1]``.
    step : float, default=0.05
        Lattice spacing of the interval starts.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.

    Returns
    -------
    tuple of float
        The chosen ``(alpha, beta)``.

    Raises
    ------
    ValueError
        When no candidate contains ``p`` or every candidate has an empty band.

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Section 7.1 and Appendix B.
    """
    threshold = _check_threshold(threshold)
    if not (isinstance(step, numbers.Real) and 0 < step <= 1):
        raise ValueError(f"step must be in (0, 1]; got {step!r}.")
    ranked = _prepare(None, y_score, sensitive_features, sample_weight)
    weights = ranked.weights
    positive_rate = float(weights @ (ranked.scores > threshold) / weights.sum())
    best, best_value = None, -1.0
    for alpha, beta in _candidate_intervals(positive_rate, widths, step):
        try:
            value = _max_pairwise(_psp_matrix(ranked, (alpha, beta)))
        except ValueError:  # a band is empty: not a usable candidate
            continue
        if value > best_value:
            best, best_value = (alpha, beta), value
    if best is None:
        raise ValueError(
            f"no candidate interval contains the positive rate {positive_rate:.4f} "
            "with non-empty bands; pass other widths or a smaller step."
        )
    return best


def _candidate_intervals(positive_rate, widths, step):
    """Lattice intervals ``[a, a + w)`` inside [0, 1] that contain ``positive_rate``."""
    candidates = []
    n_starts = int(np.floor(1.0 / step + 1e-9)) + 1
    starts = np.round(np.arange(n_starts) * step, 12)
    for width in widths:
        if not (isinstance(width, numbers.Real) and 0 < width <= 1):
            raise ValueError(f"every width must be in (0, 1]; got {width!r}.")
        ends = np.round(starts + width, 12)
        contains = (positive_rate < ends) | ((ends == 1.0) & (positive_rate == 1.0))
        fits = (ends <= 1.0) & (starts <= positive_rate) & contains
        candidates.extend(zip(starts[fits].tolist(), ends[fits].tolist(), strict=True))
    return candidates
