"""Fairness metrics of regression outputs: distances between the groups' prediction
distributions and gaps between the groups' losses.

* :func:`prediction_ks_distance`: the Kolmogorov-Smirnov distance between the groups'
  (weighted) empirical prediction distributions, the largest over pairs of groups
  (demographic parity for regression in the sense of Agarwal et al. 2019);
* :func:`prediction_w1_distance`: the Wasserstein-1 distance between them;
* :func:`prediction_w2_unfairness`: the weighted mean squared Wasserstein-2 distance of
  the groups' prediction distributions to their barycenter, the unfairness of Chzhen and
  Schreuder (2022) whose exact trade-off with the risk
  :class:`~fairest.postprocessing.WassersteinParityRegressor` follows;
* :func:`mean_squared_error_gap`, :func:`mean_absolute_error_gap`: the between-group
  difference of the groups' mean squared / absolute errors (bounded group loss).

All take fairlearn's signature ``f(y_true, y_pred, *, sensitive_features,
method="between_groups", sample_weight=None)``; ``method="to_overall"`` compares every
group with the whole data (its distribution, or its loss). Distances are exact: every
group's weighted empirical CDF is evaluated at every distinct prediction, in blocks of
columns so that memory stays bounded for many groups.
"""

from __future__ import annotations

import numpy as np

from fairest.metrics._rates import RateMetric
from fairest.utils._tuning import HOST_TUNING

__all__ = [
    "ABSOLUTE_ERROR",
    "SQUARED_ERROR",
    "group_cdfs",
    "mean_absolute_error_gap",
    "mean_squared_error_gap",
    "prediction_ks_distance",
    "prediction_w1_distance",
    "prediction_w2_unfairness",
    "quantile_tables",
    "barycenter_quantiles",
]

METHODS = ("between_groups", "to_overall")

SQUARED_ERROR = RateMetric(
    "squared_error",
    lambda y, p: (np.asarray(y) - np.asarray(p)) ** 2,
    binary=False,
    label="mse",
)
ABSOLUTE_ERROR = RateMetric(
    "absolute_error",
    lambda y, p: np.abs(np.asarray(y) - np.asarray(p)),
    binary=False,
    label="mae",
)


def _inputs(y_true, y_pred, sensitive_features, sample_weight, method):
    # imported on use: the catalogue imports this module for its rates, without pandas
    from fairest.metrics._checks import check_metric_inputs, check_option

    check_option(method, "method", METHODS)
    if y_true is None:  # the distances do not use it
        y_true = np.zeros(np.shape(y_pred)[:1])
    return check_metric_inputs(y_true, y_pred, sensitive_features, sample_weight)


def group_cdfs(values, codes, weights, num_groups):
    """Blocks of the groups' weighted empirical CDFs at the sorted distinct values.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Finite predictions.
    codes : ndarray of shape (n,)
        Group codes ``0..num_groups-1``.
    weights : ndarray of shape (n,)
        Non-negative weights, a positive total in every group.
    num_groups : int
        Number of groups.

    Yields
    ------
    points : ndarray of shape (m,)
        Consecutive distinct values, increasing.
    widths : ndarray of shape (m,)
        Distance from each point to the next distinct value (0 after the last one).
    cdfs : ndarray of shape (num_groups + 1, m)
        ``F_g(point)`` for every group, and in the last row the CDF of all rows.
    """
    order = np.argsort(values, kind="stable")
    values, codes, weights = values[order], codes[order], weights[order]
    points, index = np.unique(values, return_inverse=True)
    totals = np.bincount(codes, weights, minlength=num_groups)
    totals = np.append(totals, totals.sum())
    widths = np.append(np.diff(points), 0.0)
    rows = num_groups + 1
    block = max(1, HOST_TUNING.cdf_block_cells // rows)
    carry = np.zeros(rows)
    for lo in range(0, points.size, block):
        hi = min(points.size, lo + block)
        first, last = np.searchsorted(index, [lo, hi])
        cells = codes[first:last] * (hi - lo) + (index[first:last] - lo)
        mass = np.bincount(cells, weights[first:last], minlength=num_groups * (hi - lo))
        mass = mass.reshape(num_groups, hi - lo)
        mass = np.vstack([mass, mass.sum(axis=0)])
        cumulative = carry[:, None] + np.cumsum(mass, axis=1)
        carry = cumulative[:, -1].copy()
        yield points[lo:hi], widths[lo:hi], np.minimum(cumulative / totals[:, None], 1.0)


def prediction_ks_distance(
    y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
) -> float:
    r"""Kolmogorov-Smirnov distance between the groups' prediction distributions.

    ``sup_t |F_a(t) - F_b(t)|`` for the (weighted) empirical CDFs ``F_a`` of the
    predictions of group ``a``, the largest over pairs of groups
    (``method="between_groups"``), or over groups against the CDF of all rows
    (``"to_overall"``). 0 means the groups' prediction distributions are equal
    (demographic parity of a regressor); 1 that two groups' predictions do not overlap.
    Unweighted, a pair's value is ``scipy.stats.ks_2samp``'s statistic.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored (fairlearn's signature).
    y_pred : array-like of shape (n_samples,)
        Predictions (finite numbers).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership.
    method : {"between_groups", "to_overall"}, default="between_groups"
        Compare pairs of groups, or every group with the whole data.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the empirical distributions.

    Returns
    -------
    float
        The distance, in [0, 1]; 0 with one group.

    References
    ----------
    .. [1] A. Agarwal, M. Dudik, Z. S. Wu. "Fair Regression: Quantitative Definitions and
       Reduction-Based Algorithms". ICML 2019.

    Examples
    --------
    >>> from fairest.metrics import prediction_ks_distance
    >>> prediction_ks_distance(None, [1, 2, 3, 3, 4, 5], sensitive_features=list("aaabbb"))
    0.6666666666666667
    """
    inputs = _inputs(y_true, y_pred, sensitive_features, sample_weight, method)
    num_groups = inputs.num_groups
    worst = 0.0
    for _, _, cdfs in group_cdfs(inputs.y_pred, inputs.codes, inputs.weights, num_groups):
        groups = cdfs[:num_groups]
        if method == "between_groups":
            gap = groups.max(axis=0) - groups.min(axis=0)
        else:
            gap = np.abs(groups - cdfs[num_groups]).max(axis=0)
        worst = max(worst, float(gap.max()))
    return worst


def prediction_w1_distance(
    y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
) -> float:
    r"""Wasserstein-1 distance between the groups' prediction distributions.

    ``W_1(a, b) = \int |F_a(t) - F_b(t)| dt`` for the (weighted) empirical CDFs of the
    predictions of the groups ``a`` and ``b`` (the mean shift a transport of one group's
    predictions onto the other's needs), the largest over pairs of groups
    (``method="between_groups"``), or over groups against all rows (``"to_overall"``).
    In the units of the predictions. A pair's value is
    ``scipy.stats.wasserstein_distance`` with the groups' weights.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored (fairlearn's signature).
    y_pred : array-like of shape (n_samples,)
        Predictions (finite numbers).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership.
    method : {"between_groups", "to_overall"}, default="between_groups"
        Compare pairs of groups, or every group with the whole data.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the empirical distributions.

    Returns
    -------
    float
        The distance (non-negative); 0 with one group.

    References
    ----------
    .. [1] E. Chzhen, C. Denis, M. Hebiri, L. Oneto, M. Pontil. "Fair Regression with
       Wasserstein Barycenters". NeurIPS 2020.

    Examples
    --------
    >>> from fairest.metrics import prediction_w1_distance
    >>> prediction_w1_distance(None, [1, 2, 3, 3, 4, 5], sensitive_features=list("aaabbb"))
    2.0
    """
    inputs = _inputs(y_true, y_pred, sensitive_features, sample_weight, method)
    num_groups = inputs.num_groups
    if method == "to_overall":
        totals = np.zeros(num_groups)
    else:
        totals = np.zeros((num_groups, num_groups))
    for _, widths, cdfs in group_cdfs(inputs.y_pred, inputs.codes, inputs.weights, num_groups):
        groups = cdfs[:num_groups]
        if method == "to_overall":
            totals += np.abs(groups - cdfs[num_groups]) @ widths
        else:
            for a in range(num_groups - 1):
                totals[a, a + 1 :] += np.abs(groups[a + 1 :] - groups[a]) @ widths
    return float(totals.max()) if totals.size else 0.0


def quantile_tables(values, codes, weights, num_groups):
    """Every group's (weighted) empirical distribution as its support and CDF levels.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Finite predictions.
    codes : ndarray of shape (n,)
        Group codes ``0..num_groups-1``, every group present with a positive weight.
    weights : ndarray of shape (n,)
        Non-negative weights.
    num_groups : int
        Number of groups.

    Returns
    -------
    list of (ndarray, ndarray) or None
        Per group, its distinct values ``v`` (increasing) and ``F(v)`` (its CDF at them,
        the last one exactly 1); its quantile function is
        ``Q(u) = v[searchsorted(F, u, "left")]``, left-continuous. ``None`` for a group
        without rows of positive weight.
    """
    tables = []
    for group in range(num_groups):
        mask = codes == group
        points, index = np.unique(values[mask], return_inverse=True)
        mass = np.bincount(index, weights[mask], minlength=points.size)
        keep = mass > 0  # zero-weight rows are not in the distribution
        if not keep.any():
            tables.append(None)
            continue
        points, levels = points[keep], np.cumsum(mass[keep])
        levels = levels / levels[-1]
        levels[-1] = 1.0
        tables.append((points, levels))
    return tables


def barycenter_quantiles(tables, proportions):
    """The Wasserstein-2 barycenter of the groups' distributions, as a quantile function.

    On the line the barycenter's quantile function is the proportion-weighted mean of
    the groups' quantile functions (Agueh and Carlier 2011); for empirical distributions
    it is a step function, constant on every interval between consecutive CDF levels of
    any group.

    Parameters
    ----------
    tables : list of (ndarray, ndarray)
        The groups' supports and CDF levels (:func:`quantile_tables`).
    proportions : ndarray of shape (num_groups,)
        Weights of the groups (summing to 1).

    Returns
    -------
    levels : ndarray of shape (m,)
        Increasing levels in (0, 1], the last one 1.
    group_values : ndarray of shape (num_groups, m)
        ``Q_s(u)`` of every group on ``(levels[j - 1], levels[j]]``.
    values : ndarray of shape (m,)
        The barycenter's quantile function there, ``sum_s proportions[s] Q_s``.
    """
    levels = np.unique(np.concatenate([table[1] for table in tables]))
    group_values = np.stack(
        [
            points[np.minimum(np.searchsorted(cdf, levels, "left"), points.size - 1)]
            for points, cdf in tables
        ]
    )
    return levels, group_values, np.asarray(proportions) @ group_values


def prediction_w2_unfairness(y_true, y_pred, *, sensitive_features, sample_weight=None) -> float:
    r"""Mean squared Wasserstein-2 distance of the groups' predictions to their barycenter.

    ``U(f) = min_nu sum_s p_s W_2^2(law(f | S = s), nu) = sum_s p_s \int_0^1 (Q_s(u) -
    Q(u))^2 du``, with ``p_s`` the groups' (weighted) shares, ``Q_s`` their quantile
    functions and ``Q = sum_s p_s Q_s`` the barycenter's. 0 exactly when the groups'
    prediction distributions are equal; the least mean squared change of the predictions
    that equalises them (Chzhen et al. 2020), and the unfairness that the risk trades off
    against along the interpolation of Chzhen and Schreuder (2022). In squared units of
    the predictions; exact (a sum over the merged CDF levels).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored (fairlearn's signature).
    y_pred : array-like of shape (n_samples,)
        Predictions (finite numbers).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the empirical distributions and of the group shares.

    Returns
    -------
    float
        The unfairness (non-negative); 0 with one group.

    References
    ----------
    .. [1] E. Chzhen, N. Schreuder. "A minimax framework for quantifying risk-fairness
       trade-off in regression". Annals of Statistics 50(4), 2022.
    .. [2] E. Chzhen, C. Denis, M. Hebiri, L. Oneto, M. Pontil. "Fair Regression with
       Wasserstein Barycenters". NeurIPS 2020.

    Examples
    --------
    >>> from fairest.metrics import prediction_w2_unfairness
    >>> prediction_w2_unfairness(None, [0, 2, 2, 4], sensitive_features=list("aabb"))
    1.0
    """
    inputs = _inputs(y_true, y_pred, sensitive_features, sample_weight, "between_groups")
    num_groups = inputs.num_groups
    mass = np.bincount(inputs.codes, inputs.weights, minlength=num_groups)
    proportions = mass / mass.sum()
    tables = quantile_tables(inputs.y_pred, inputs.codes, inputs.weights, num_groups)
    levels, group_values, values = barycenter_quantiles(tables, proportions)
    widths = np.diff(levels, prepend=0.0)
    return float(proportions @ ((group_values - values) ** 2 @ widths))


def _loss_gap(inputs, rate, method) -> float:
    numerator, denominator = rate.terms(inputs.y_true, inputs.y_pred, inputs.weights)
    sums = np.bincount(inputs.codes, numerator, minlength=inputs.num_groups)
    mass = np.bincount(inputs.codes, denominator, minlength=inputs.num_groups)
    losses = sums / mass
    if method == "between_groups":
        return float(losses.max() - losses.min())
    return float(np.max(np.abs(losses - numerator.sum() / denominator.sum())))


def mean_squared_error_gap(
    y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
) -> float:
    """Between-group difference of the mean squared errors (bounded group loss).

    ``max_a MSE_a - min_a MSE_a`` over the groups' (weighted) mean squared errors, or
    ``max_a |MSE_a - MSE|`` against the whole data (``method="to_overall"``): fairlearn's
    ``MetricFrame(metrics=mean_squared_error, ...).difference(method)``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets.
    y_pred : array-like of shape (n_samples,)
        Predictions.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership.
    method : {"between_groups", "to_overall"}, default="between_groups"
        Compare pairs of groups, or every group with the whole data.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the means.

    Returns
    -------
    float
        The gap, in squared units of the target.

    References
    ----------
    .. [1] A. Agarwal, M. Dudik, Z. S. Wu. "Fair Regression: Quantitative Definitions and
       Reduction-Based Algorithms". ICML 2019 (bounded group loss).

    Examples
    --------
    >>> from fairest.metrics import mean_squared_error_gap
    >>> mean_squared_error_gap([0, 0, 0, 0], [1, 1, 0, 2], sensitive_features=list("aabb"))
    1.0
    """
    inputs = _inputs(y_true, y_pred, sensitive_features, sample_weight, method)
    return _loss_gap(inputs, SQUARED_ERROR, method)


def mean_absolute_error_gap(
    y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
) -> float:
    """Between-group difference of the mean absolute errors (bounded group loss).

    ``max_a MAE_a - min_a MAE_a`` over the groups' (weighted) mean absolute errors, or
    ``max_a |MAE_a - MAE|`` against the whole data (``method="to_overall"``): fairlearn's
    ``MetricFrame(metrics=mean_absolute_error, ...).difference(method)``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets.
    y_pred : array-like of shape (n_samples,)
        Predictions.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership.
    method : {"between_groups", "to_overall"}, default="between_groups"
        Compare pairs of groups, or every group with the whole data.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the means.

    Returns
    -------
    float
        The gap, in units of the target.

    Examples
    --------
    >>> from fairest.metrics import mean_absolute_error_gap
    >>> mean_absolute_error_gap([0, 0, 0, 0], [1, 1, 0, 2], sensitive_features=list("aabb"))
    0.0
    """
    inputs = _inputs(y_true, y_pred, sensitive_features, sample_weight, method)
    return _loss_gap(inputs, ABSOLUTE_ERROR, method)
