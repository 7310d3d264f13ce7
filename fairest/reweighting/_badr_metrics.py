"""BADR's unfairness ``U(s; y, groups, weight)``, read from the metric catalogue.

``s = b + X w`` are the scores of one split (intercept INCLUDED, spec section 3.0),
``groups`` int32 codes ``0..G-1`` and ``weight`` non-negative sample weights (0 on padding
rows, 1 for an unweighted split). A :class:`MetricSpec` names the metric by its catalogue
name (:mod:`fairest.metrics._catalogue`); :func:`smooth_unfairness` evaluates the record's
jittable smooth surrogate (the upper-level objective) and :func:`exact_unfairness` its
exact numpy function with hard predictions ``1[s >= 0]`` (host-side, for reporting). The
metric definitions, normalisations (spec section 3) and the exact fast individual fairness
(spec 3.9) live in :mod:`fairest.metrics` only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from fairest.metrics._catalogue import get_metric
from fairest.metrics._smooth import _affine_prefix_scan, _pair_orders, smooth_individual_fairness

__all__ = [
    "CLASSIFICATION_METRICS",
    "RENAMED",
    "REGRESSION_METRICS",
    "MetricSpec",
    "smooth_unfairness",
    "exact_unfairness",
]

# BADR's metrics by task, under their catalogue names: each names the quantity it is, as
# the exact function of :mod:`fairest.metrics` of that name (fairlearn's
# demographic_parity_difference is max - min of the selection rates, BADR's default the
# largest deviation from their mean). The catalogue record gives the exact function and
# the smooth surrogate.
CLASSIFICATION_METRICS = (
    "group_loss_variance",
    "individual_fairness",
    "demographic_parity_deviation",
    "disparate_mistreatment",
    "equal_opportunity_range",
    "equalized_odds_range",
)
REGRESSION_METRICS = (
    "group_loss_variance",
    "individual_fairness",
    "demographic_parity_deviation",
    "hsic_linear",
)
# Names of the previous release, accepted with a FutureWarning until the next one.
RENAMED = {
    "group_variance": "group_loss_variance",
    "hsic": "hsic_linear",
    "demographic_parity": "demographic_parity_deviation",
    "equal_opportunity": "equal_opportunity_range",
    "equalized_odds": "equalized_odds_range",
}
# what each metric's surrogate and exact function take beyond the data (the temperatures
# only where the metric smooths hard predictions)
_SMOOTHED = ("demographic_parity_deviation", "equal_opportunity_range", "equalized_odds_range")


def _options(spec: MetricSpec) -> dict:
    """The keywords of the metric's functions that the spec sets."""
    if spec.name == "group_loss_variance":
        return {"loss": spec.loss}
    if spec.name == "demographic_parity_deviation":
        return {"task": spec.task}
    if spec.name in ("disparate_mistreatment", "hsic_linear"):
        return {"encoding": spec.encoding}
    return {}


@dataclass(frozen=True)
class MetricSpec:
    """Static description of a metric (hashable: a static argument of jitted code).

    ``name`` is a catalogue name of :data:`CLASSIFICATION_METRICS` /
    :data:`REGRESSION_METRICS`, or ``"callable"``; ``task`` is
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

    ``temperature`` (traced) is the sigmoid and smooth-max temperature of DP / EO / EOdds:
    a scalar for both, or the pair ``(sigmoid, max)``; individual fairness uses the O(n)
    cell algorithm for classification labels {0, 1} and the O(n log n) scan for real
    labels.
    """
    name = spec.name
    if name == "callable":
        return _callable_value(spec, s, y, groups)
    if name == "individual_fairness":
        if spec.task == "classification":
            return smooth_individual_fairness(
                s, y, groups, num_groups, weights=weight, label_kind="binary"
            )
        return continuous_individual_fairness(s, y, groups, weight, num_groups)
    options = _options(spec)
    if name in _SMOOTHED:
        pair = jnp.reshape(jnp.asarray(temperature, dtype=s.dtype), (-1,))
        options.update(temperature_sigmoid=pair[0], temperature_max=pair[-1])
    return get_metric(name).smooth(s, y, groups, num_groups, weights=weight, **options)


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
    # equal opportunity / equalized odds warn when a group has no positives / negatives
    return get_metric(name).exact(
        y, s, sensitive_features=groups, sample_weight=weight[keep], **_options(spec)
    )


@partial(jax.custom_vjp, nondiff_argnums=(4,))
def continuous_individual_fairness(s, y, groups, weight, num_groups: int):
    """:func:`~fairest.metrics.smooth_individual_fairness` for real labels, with its
    score gradient by two scans instead of reverse-mode autodiff.

    Autodiff through the metric's Hillis-Steele scan keeps every one of its
    ``ceil(log2 n)`` steps, about 1.3 KB a row (1.2 GB at n = 1e6, issue 19). The pair
    sum ``S = sum_{j<k} w_j w_k K_jk (s_k - s_j)**2`` of each row ordering has
    ``dS/ds_k = 2 w_k (s_k (P0_k + Q0_k) - (P1_k + Q1_k))`` with ``P_m`` the forward scan
    ``sum_{j<=k} K_jk w_j s_j**m`` and ``Q_m`` the same scan on the reversed rows, so the
    gradient takes one forward and one backward scan and no stored steps. Differentiable
    in ``s`` only (the BADR objective's argument): ``y`` and ``weight`` get no cotangent.
    """
    return smooth_individual_fairness(
        s, y, groups, num_groups, weights=weight, label_kind="continuous"
    )


def _continuous_if_forward(s, y, groups, weight, num_groups):
    value = continuous_individual_fairness(s, y, groups, weight, num_groups)
    return value, (s, y, groups, weight)


def _continuous_if_backward(num_groups, residuals, cotangent):
    s, y, groups, weight = residuals
    y, weight = jnp.asarray(y, s.dtype), jnp.asarray(weight, s.dtype)
    groups = jnp.asarray(groups)
    total_weight = jnp.sum(weight)
    centred = s - jnp.sum(weight * s) / total_weight
    orders, same_segment = _pair_orders(y, groups, s.dtype)
    sorted_y, sorted_s, sorted_w = y[orders], centred[orders], weight[orders]
    link = jnp.exp(-jnp.diff(sorted_y, axis=0)) * same_segment  # (n - 1, 2)
    forward = _pair_prefix(link, sorted_s, sorted_w)
    backward = _pair_prefix(link[::-1], sorted_s[::-1], sorted_w[::-1])[::-1]
    both = forward + backward  # (n, 2, 2): orderings x powers 0, 1
    per_sorted = 2.0 * sorted_w * (sorted_s * both[..., 0] - both[..., 1])
    signed = per_sorted * jnp.array([1.0, -1.0], s.dtype)  # all pairs minus within groups
    grad = jnp.zeros_like(s).at[orders].add(signed)
    grad = grad - weight * (jnp.sum(grad) / total_weight)  # through the centring
    group_weight = jax.ops.segment_sum(weight, groups, num_segments=num_groups)
    pair_weight = total_weight**2 - jnp.sum(group_weight**2)
    has_pairs = pair_weight > 0
    scale = jnp.where(has_pairs, cotangent / jnp.where(has_pairs, pair_weight, 1.0), 0.0)
    return grad * scale, None, None, None


def _pair_prefix(link, sorted_s, sorted_w):
    """``sum_{j<=k} K_jk w_j s_j**m`` for m = 0, 1 and each ordering: (n, o, 2)."""
    decay = jnp.concatenate([jnp.zeros_like(link[:1]), link], axis=0)
    powers = jnp.stack([sorted_w, sorted_w * sorted_s], axis=-1)
    return _affine_prefix_scan(decay, powers)


continuous_individual_fairness.defvjp(_continuous_if_forward, _continuous_if_backward)
