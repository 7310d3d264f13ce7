"""BADR's unfairness ``U(s; y, groups, weight)``: a static dispatch onto :mod:`fairest.metrics`.

``s = b + X w`` are the scores of one split (intercept INCLUDED, spec section 3.0),
``groups`` int32 codes ``0..G-1`` and ``weight`` non-negative sample weights (0 on padding
rows, 1 for an unweighted split). A :class:`MetricSpec` names the metric;
:func:`smooth_unfairness` evaluates the jittable smooth version (the upper-level
objective: :mod:`fairest.metrics` ``smooth_*``) and :func:`exact_unfairness` the exact
numpy version with hard predictions ``1[s >= 0]`` (host-side, for reporting). The metric
definitions, normalisations (spec section 3) and the exact fast individual fairness (spec
3.9) live in :mod:`fairest.metrics` only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from fairest.metrics import (
    demographic_parity_deviation,
    disparate_mistreatment,
    equal_opportunity_range,
    equalized_odds_range,
    group_loss_variance,
    hsic_linear,
    individual_fairness,
    smooth_demographic_parity,
    smooth_disparate_mistreatment,
    smooth_equal_opportunity,
    smooth_equalized_odds,
    smooth_group_loss_variance,
    smooth_hsic_linear,
    smooth_individual_fairness,
)

__all__ = [
    "CLASSIFICATION_METRICS",
    "REGRESSION_METRICS",
    "MetricSpec",
    "smooth_unfairness",
    "exact_unfairness",
]

CLASSIFICATION_METRICS = (
    "group_variance",
    "individual_fairness",
    "demographic_parity",
    "disparate_mistreatment",
    "equal_opportunity",
    "equalized_odds",
)
REGRESSION_METRICS = (
    "group_variance",
    "individual_fairness",
    "demographic_parity",
    "hsic",
)


@dataclass(frozen=True)
class MetricSpec:
    """Static description of a metric (hashable: a static argument of jitted code).

    ``name`` is one of the metric names or ``"callable"``; ``task`` is
    ``"classification"`` or ``"regression"``; ``loss`` is the model's pointwise loss (for
    group variance); ``encoding`` is ``"index"`` or ``"onehot"`` (DM, HSIC); ``fn`` is the
    user callable ``fn(scores, y, groups)`` and ``n_valid`` the number of real (non
    padding) rows it sees.
    """

    name: str
    task: str
    loss: str
    encoding: str = "index"
    fn: Callable | None = None
    n_valid: int = 0


def _callable_value(spec: MetricSpec, s, y, groups):
    n = spec.n_valid
    return jnp.asarray(spec.fn(s[:n], y[:n], groups[:n]), dtype=s.dtype).reshape(())


def smooth_unfairness(spec: MetricSpec, s, y, groups, weight, num_groups: int, temperature):
    """Smooth (differentiable, jittable) unfairness: the BADR upper-level objective.

    ``temperature`` (traced) is the sigmoid and smooth-max temperature of DP / EO / EOdds;
    individual fairness uses the O(n) cell algorithm for classification labels {0, 1} and
    the O(n log n) scan for real labels.
    """
    name = spec.name
    if name == "callable":
        return _callable_value(spec, s, y, groups)
    data = (s, y, groups, num_groups)
    if name == "group_variance":
        return smooth_group_loss_variance(*data, loss=spec.loss, weights=weight)
    if name == "individual_fairness":
        kind = "binary" if spec.task == "classification" else "continuous"
        return smooth_individual_fairness(*data, weights=weight, label_kind=kind)
    if name == "demographic_parity":
        return smooth_demographic_parity(
            *data, temperature=temperature, weights=weight, task=spec.task
        )
    if name == "disparate_mistreatment":
        return smooth_disparate_mistreatment(*data, weights=weight, encoding=spec.encoding)
    if name == "hsic":
        return smooth_hsic_linear(*data, weights=weight, encoding=spec.encoding)
    if name == "equal_opportunity":
        return smooth_equal_opportunity(*data, temperature=temperature, weights=weight)
    if name == "equalized_odds":
        return smooth_equalized_odds(*data, temperature=temperature, weights=weight)
    raise ValueError(f"Unknown metric {name!r}.")


def exact_unfairness(spec: MetricSpec, s, y, groups, weight, num_groups: int) -> float:
    """Exact unfairness (hard predictions for DP / EO / EOdds), on the host in numpy.

    Rows of zero weight (padding) are dropped. Groups without positives (negatives) are
    left out of the TPR (FPR) range silently, as in the smooth objective. ``num_groups``
    is unused (kept for the signature of :func:`smooth_unfairness`).
    """
    name = spec.name
    if name == "callable":
        return float(_callable_value(spec, jnp.asarray(s), jnp.asarray(y), jnp.asarray(groups)))
    weight = np.asarray(weight, dtype=np.float64)
    keep = weight > 0
    s, y, groups = (np.asarray(a)[keep] for a in (s, y, groups))
    data = (y, s)
    common = {"sensitive_features": groups, "sample_weight": weight[keep]}
    if name == "group_variance":
        return group_loss_variance(*data, loss=spec.loss, **common)
    if name == "individual_fairness":
        return individual_fairness(*data, **common)
    if name == "demographic_parity":
        return demographic_parity_deviation(*data, task=spec.task, **common)
    if name == "disparate_mistreatment":
        return disparate_mistreatment(*data, encoding=spec.encoding, **common)
    if name == "hsic":
        return hsic_linear(*data, encoding=spec.encoding, **common)
    if name in ("equal_opportunity", "equalized_odds"):
        metric = equal_opportunity_range if name == "equal_opportunity" else equalized_odds_range
        return metric(*data, **common)  # warns when a group has no positives / negatives
    raise ValueError(f"Unknown metric {name!r}.")
