"""Confidence intervals of per-group metrics and of their gaps that hold at exact parity.

The frame's intervals are built in two steps (Bonferroni / Sidak combination of
per-group intervals):

1. an interval per group (and one for all rows): exact Clopper-Pearson intervals for
   rates of hits among eligible rows, Student-t intervals for means of a per-row
   quantity, or bootstrap percentile intervals for any other metric;
2. the gap (max - min, min / max, or the largest contrast to the overall value) is bounded
   by its smallest and largest values over the box of the per-group intervals. If every
   group's interval holds, so does the gap's: with the groups' intervals at the
   simultaneous level ``ci ** (1 / G)`` (Sidak: the groups' estimates are independent
   given the group sizes), the gap's interval holds with probability at least ``ci``.

A percentile bootstrap interval of the max - min gap does not have this property: the
estimated gap is biased upwards (a maximum of noisy differences), so at exact parity the
interval excludes 0 almost always. Weighted rows enter through Kish's effective sample size
``(sum w)^2 / sum w^2``.

References
----------
.. [1] C. J. Clopper and E. S. Pearson. "The use of confidence or fiducial limits
   illustrated in the case of the binomial". Biometrika 26(4), 1934.
.. [2] Z. Sidak. "Rectangular confidence regions for the means of multivariate normal
   distributions". JASA 62(318), 1967.
.. [3] L. Kish. "Survey Sampling". Wiley, 1965 (effective sample size).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = [
    "IntervalWarning",
    "between_groups_interval",
    "effective_size",
    "group_extreme",
    "group_level",
    "mean_interval",
    "proportion_interval",
    "to_overall_interval",
]


class IntervalWarning(UserWarning):
    """An interval that is wide or unbounded because a group has too few rows."""


def group_level(ci: float, num_groups, *, with_overall: bool = False):
    """Per-interval level so that ``num_groups`` intervals (plus the overall one when
    ``with_overall``) hold together with probability at least ``ci``.

    Groups alone: Sidak, ``ci ** (1 / G)`` (independent estimates given the group sizes).
    With the overall value, which depends on every group: Bonferroni over ``G + 1``.
    """
    count = np.maximum(np.asarray(num_groups, dtype=np.float64), 1.0)
    if with_overall:
        return 1.0 - (1.0 - ci) / (count + 1.0)
    return ci ** (1.0 / count)


def effective_size(total_weight, total_squared_weight):
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` (0 where no weight)."""
    total_weight = np.asarray(total_weight, dtype=np.float64)
    squared = np.asarray(total_squared_weight, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(squared > 0, total_weight**2 / np.where(squared > 0, squared, 1), 0.0)


def proportion_interval(rate, size, level):
    """Two-sided Clopper-Pearson interval of a proportion (arrays broadcast).

    ``rate`` is the observed proportion and ``size`` the (effective) number of trials; a
    non-integer effective count ``rate * size`` uses the beta quantiles at real
    arguments. No trials: ``[0, 1]``; an undefined (NaN) rate gives NaN.
    """
    rate, size, level = np.broadcast_arrays(
        np.asarray(rate, dtype=np.float64),
        np.asarray(size, dtype=np.float64),
        np.asarray(level, dtype=np.float64),
    )
    tail = (1.0 - level) / 2.0
    hits = np.clip(rate * size, 0.0, size)
    misses = size - hits
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(
            hits > 0, stats.beta.ppf(tail, np.maximum(hits, 1e-300), misses + 1.0), 0.0
        )
        upper = np.where(
            misses > 0, stats.beta.ppf(1.0 - tail, hits + 1.0, np.maximum(misses, 1e-300)), 1.0
        )
    empty = size <= 0
    lower = np.where(empty, 0.0, lower)
    upper = np.where(empty, 1.0, upper)
    undefined = np.isnan(rate)
    return np.where(undefined, np.nan, lower), np.where(undefined, np.nan, upper)


def mean_interval(mean, variance, size, level):
    """Two-sided Student-t interval of a mean (arrays broadcast).

    ``variance`` is the (weighted) population variance of the per-row values and ``size``
    the (effective) number of rows; the standard error is
    ``sqrt(variance / (size - 1))``. Fewer than two rows: ``(-inf, inf)``.
    """
    mean, variance, size, level = np.broadcast_arrays(
        np.asarray(mean, dtype=np.float64),
        np.asarray(variance, dtype=np.float64),
        np.asarray(size, dtype=np.float64),
        np.asarray(level, dtype=np.float64),
    )
    enough = size > 1.0
    dof = np.where(enough, size - 1.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = stats.t.ppf(0.5 + level / 2.0, dof) * np.sqrt(np.maximum(variance, 0.0) / dof)
    half = np.where(enough, half, np.inf)
    return mean - half, mean + half


def group_extreme(function, values):
    """NaN-skipping np.max / np.min over the group axis (-2); NaN (no warning) if all NaN."""
    present = ~np.isnan(values)
    fill = -np.inf if function is np.max else np.inf
    result = function(np.where(present, values, fill), axis=-2)
    return np.where(present.any(axis=-2), result, np.nan)


def between_groups_interval(lower, upper, kind: str):
    """Interval of ``max - min`` (``kind="difference"``) or ``min / max`` (``"ratio"``)
    over the group axis (-2) from a box of per-group intervals.

    Groups whose interval is NaN (their value is undefined) are left out, as the point
    estimate leaves them out. The difference's lower end is clipped at 0 and the
    ratio's upper end at 1 (their ranges).
    """
    top_low, top_high = group_extreme(np.max, lower), group_extreme(np.max, upper)
    bottom_low, bottom_high = group_extreme(np.min, lower), group_extreme(np.min, upper)
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "difference":
            low = np.maximum(top_low - bottom_high, 0.0)
            high = top_high - bottom_low
        else:
            low = np.where(top_high > 0, bottom_low / top_high, 0.0)
            high = np.where(top_low > 0, np.minimum(bottom_high / top_low, 1.0), 1.0)
            low = np.maximum(low, 0.0)
    missing = np.isnan(top_low) | np.isnan(top_high)
    return np.where(missing, np.nan, low), np.where(missing, np.nan, high)


def _absolute(low, high):
    """Interval of ``|x|`` for ``x`` in ``[low, high]``."""
    straddles = (low <= 0) & (high >= 0)
    small = np.where(straddles, 0.0, np.minimum(np.abs(low), np.abs(high)))
    return small, np.maximum(np.abs(low), np.abs(high))


def _fold_ratio(low, high):
    """Interval of ``min(r, 1 / r)`` for ``r`` in ``[low, high]`` (``r >= 0``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        at_low = np.where(low > 1, 1.0 / low, low)
        at_high = np.where(high > 1, 1.0 / high, high)
    contains_one = (low <= 1) & (high >= 1)
    return np.minimum(at_low, at_high), np.where(contains_one, 1.0, np.maximum(at_low, at_high))


def to_overall_interval(lower, upper, overall_lower, overall_upper, kind: str):
    """Interval of ``max_g |v_g - overall|`` (``"difference"``) or of the smallest
    ``v_g / overall`` folded below 1 (``"ratio"``), from per-group intervals ``(..., G, M)``
    and the overall value's interval ``(..., M)``, all holding together."""
    overall_lower = overall_lower[..., None, :]
    overall_upper = overall_upper[..., None, :]
    if kind == "difference":
        low, high = _absolute(lower - overall_upper, upper - overall_lower)
        return group_extreme(np.max, low), group_extreme(np.max, high)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio_low = np.where(overall_upper > 0, lower / overall_upper, 0.0)
        ratio_high = np.where(overall_lower > 0, upper / overall_lower, np.inf)
    low, high = _fold_ratio(np.maximum(ratio_low, 0.0), ratio_high)
    low = np.where(np.isnan(lower), np.nan, low)
    high = np.where(np.isnan(upper), np.nan, high)
    return group_extreme(np.min, low), group_extreme(np.min, high)
