"""Degenerate results of a fit: a (nearly) constant classifier and the figures its
``FairnessWarning`` gives (accuracy and share predicted positive, overall and per group)."""

from __future__ import annotations

import numpy as np

__all__ = ["NEAR_CONSTANT_SHARE", "near_constant", "plain_label", "prediction_figures"]

# The one near-constant test of every family: a classifier whose rarer predicted class
# holds at most this share of the (weighted) rows, while the data's rarer label holds more,
# has stopped separating the classes; it meets every parity constraint trivially, so a fit
# or certificate that ends there warns with its figures.
NEAR_CONSTANT_SHARE = 0.01


def plain_label(label):
    """A label as it prints best: numpy scalars as Python scalars."""
    return label.item() if isinstance(label, np.generic) else label


def near_constant(pred01, y01, weight, share: float = NEAR_CONSTANT_SHARE) -> bool:
    """Whether hard predictions ``pred01`` in {0, 1} are (nearly) one class: the rarer
    predicted class holds at most ``share`` of the weight while the rarer label holds
    more."""
    weight = np.asarray(weight, dtype=np.float64)
    total = weight.sum()
    predicted, labelled = weight @ pred01 / total, weight @ y01 / total
    return min(predicted, 1.0 - predicted) <= share < min(labelled, 1.0 - labelled)


def prediction_figures(pred01, y01, codes, weight, labels, positive) -> str:
    """Accuracy and share predicted ``positive`` overall and per group (weighted), as one
    line of a warning; at most 12 groups are listed."""
    weight = np.asarray(weight, dtype=np.float64)
    hit = weight * (pred01 == y01)
    num_groups = len(labels)
    totals = np.bincount(codes, weights=weight, minlength=num_groups)
    selected = np.bincount(codes, weights=weight * pred01, minlength=num_groups) / totals
    accuracy = np.bincount(codes, weights=hit, minlength=num_groups) / totals
    parts = [
        f"{plain_label(labels[g])!r}: {selected[g]:.3f} / {accuracy[g]:.3f}"
        for g in range(min(num_groups, 12))
    ]
    more = f", ... ({num_groups - 12} more)" if num_groups > 12 else ""
    return (
        f"accuracy {hit.sum() / weight.sum():.3f}, share predicted {positive!r} "
        f"{weight @ pred01 / weight.sum():.3f}; by group (share predicted {positive!r} / "
        f"accuracy): {', '.join(parts)}{more}"
    )
