"""Named group weightings on the simplex (badr spec section 6)."""

from __future__ import annotations

import numpy as np

__all__ = ["ADAPTIVE_WEIGHTS", "NAMED_WEIGHTS", "resolve_group_weights"]

NAMED_WEIGHTS = ("pooled", "uniform", "balanced", "balanced_complement")
# weightings that need the data and the model (spec 6.3, 6.4); resolved by the estimators
ADAPTIVE_WEIGHTS = ("minimax", "best_single_group")


def complement_weights(group_totals: np.ndarray) -> np.ndarray:
    """``(W - W_g) / ((G - 1) W)``: each group weighted by the size of the others."""
    num_groups = group_totals.size
    if num_groups == 1:
        return np.ones(1)
    total = group_totals.sum()
    return (total - group_totals) / ((num_groups - 1) * total)


def resolve_group_weights(weights, group_totals: np.ndarray, group_labels) -> np.ndarray:
    """Group weights ``lambda`` on the simplex.

    ``"pooled"``: ``W_g / W`` (plain ERM); ``"uniform"``: ``1/G``; ``"balanced"``:
    ``(1/W_g) / sum_h (1/W_h)``; ``"balanced_complement"``: ``(W - W_g) / ((G - 1) W)``,
    the variant of the reference code's experiment 3 (equal to ``"balanced"`` for two
    groups; spec section 6.2); an array of length G or a dict ``{label: weight}``:
    non-negative, normalised to sum to one. ``W_g`` is the (sample-weighted) group size.
    """
    if isinstance(weights, str):
        if weights == "pooled":
            return group_totals / group_totals.sum()
        if weights == "uniform":
            return np.full(group_totals.shape, 1.0 / group_totals.size)
        if weights == "balanced":
            inverse = 1.0 / group_totals
            return inverse / inverse.sum()
        if weights == "balanced_complement":
            return complement_weights(group_totals)
        if weights in ADAPTIVE_WEIGHTS:
            raise ValueError(f"weights={weights!r} depends on the data; the estimator resolves it.")
        raise ValueError(
            f"weights must be one of {NAMED_WEIGHTS}, an array or a dict; got {weights!r}."
        )
    if isinstance(weights, dict):
        unknown = set(weights) - set(group_labels.tolist())
        if unknown:
            raise ValueError(
                f"weights has labels that are not groups: {sorted(map(repr, unknown))}."
            )
        missing = [g for g in group_labels.tolist() if g not in weights]
        if missing:
            raise ValueError(f"weights is missing the groups {missing!r}.")
        weights = [weights[g] for g in group_labels.tolist()]
    values = np.asarray(weights, dtype=np.float64)
    if values.shape != group_totals.shape:
        raise ValueError(
            f"weights has shape {values.shape} but there are {group_totals.size} groups."
        )
    if not np.all(np.isfinite(values)) or np.any(values < 0) or values.sum() <= 0:
        raise ValueError("weights must be finite, non-negative and not all zero.")
    return values / values.sum()
