"""Vectorised per-group weighted sums and rates (numpy, one ``np.bincount`` each)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["GroupRates", "group_totals", "group_rates"]


class GroupRates(NamedTuple):
    """Weighted rates per group and overall (see :func:`group_rates`)."""

    rates: np.ndarray  # (G,)
    denominators: np.ndarray  # (G,) eligible weight per group
    defined: np.ndarray  # (G,) bool: the group has eligible weight
    overall: float


def group_totals(codes: np.ndarray, values: np.ndarray, num_groups: int) -> np.ndarray:
    """Sum of ``values`` within every group, shape (G,)."""
    return np.bincount(codes, weights=values, minlength=num_groups)


def group_rates(codes, num_groups, hits, weights, eligible=None) -> GroupRates:
    """Weighted rate of ``hits`` among eligible rows, per group and overall.

    ``rates[g] = sum_{i in g} w_i e_i h_i / sum_{i in g} w_i e_i``, where ``e`` marks the
    eligible rows (all rows when ``None``, or the positives, or the negatives). A group
    without eligible weight gets the rate 0, scikit-learn's convention for an empty row of
    a normalised confusion matrix, and ``defined[g] = False``.
    """
    eligible_weight = weights if eligible is None else weights * eligible
    denominators = group_totals(codes, eligible_weight, num_groups)
    numerators = group_totals(codes, eligible_weight * hits, num_groups)
    defined = denominators > 0
    rates = np.divide(numerators, denominators, out=np.zeros(num_groups), where=defined)
    total = denominators.sum()
    overall = float(numerators.sum() / total) if total > 0 else 0.0
    return GroupRates(rates, denominators, defined, overall)
