"""What the group-threshold post-processor accepts, and what it says about its result.

* The wrapped estimator must score a binary classification: a regressor's ``predict``
  compared with a label gives one class everywhere and a train unfairness of 0.
* Thresholds are finite: the solver's "nobody" (``+inf``) and "everybody" (``-inf``)
  become the ends of the score range, which select the same fit rows.
* A rate a group cannot have (no positive row: TPR; no negative row: FPR) counts as 0,
  as in :mod:`fairest.metrics`, and so pins every group's rate near 0: a warning names it.
* A fit that ends with a (near-)constant classifier warns with its accuracy, its
  selection rates and the groups that forced it.
* A group whose fitted rate is too uncertain for the tolerance to hold beyond the fit
  rows (its Clopper-Pearson interval reaches further than the tolerance from the fit
  rate) is named, with that interval.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.base import is_regressor

from fairest.metrics._intervals import effective_size, proportion_interval
from fairest.postprocessing._thresholds import (
    METRIC_RATES,
    GroupPoints,
    _band_bounds,
    _edge_grid,
    _sorted_key,
)
from fairest.utils._degenerate import NEAR_CONSTANT_SHARE, plain_label
from fairest.utils._validation import FairnessWarning

__all__ = [
    "THRESHOLD_RATES",
    "check_not_regressor",
    "threshold_metric",
    "threshold_rule",
    "check_predicted_labels",
    "finite_thresholds",
    "warn_undefined_rates",
    "warn_if_near_constant",
    "group_uncertainty",
    "warn_small_groups",
    "NEAR_CONSTANT_MESSAGE",
    "SMALL_GROUPS_MESSAGE",
]

# how the near-constant warning starts (a sweep over tolerances filters it on this)
NEAR_CONSTANT_MESSAGE = "GroupThresholdClassifier: the fitted thresholds give a near-constant"
# how the small-group warning starts (a sweep over tolerances filters it on this)
# (no colon, so that a pytest filterwarnings mark can name it)
SMALL_GROUPS_MESSAGE = "GroupThresholdClassifier has too few rows in some groups for tolerance"
UNCERTAINTY_LEVEL = 0.95  # confidence level of the groups' rate intervals
EDGE_GRID = 1000  # band edges scanned when looking for the groups that force a result
SHOWN = 5  # labels or groups quoted in a message
SHOWN_GROUPS = 8  # per-group rates listed in a warning
# the catalogue's label rates that group thresholds move, by the thresholds' rate they
# equal or complement on the same rows (FNR = 1 - TPR, TNR = 1 - FPR: the same
# between-group difference wherever the group has eligible rows)
THRESHOLD_RATES = {
    "selection_rate": "selection",
    "true_positive_rate": "tpr",
    "false_negative_rate": "tpr",
    "false_positive_rate": "fpr",
    "true_negative_rate": "fpr",
}
RATE_WORDS = {
    "selection": "selection rate",
    "tpr": "true positive rate",
    "fpr": "false positive rate",
}


def _quoted(values) -> str:
    shown = ", ".join(repr(plain_label(v)) for v in list(values)[:SHOWN])
    return shown + (", ..." if len(values) > SHOWN else "")


def check_not_regressor(estimator, name: str) -> None:
    """Refuse a regressor as the scored (or group) classifier, naming the parameter."""
    try:
        regressor = bool(is_regressor(estimator))
    except (AttributeError, TypeError):  # an object without scikit-learn tags
        regressor = getattr(estimator, "_estimator_type", None) == "regressor"
    if regressor:
        raise ValueError(
            f"{name} is a regressor ({type(estimator).__name__}): GroupThresholdClassifier "
            "thresholds the scores of a binary classifier (predict_proba, "
            "decision_function, or predict labels), and a regressor's continuous predict "
            "compared with a label gives one class for everybody. Pass a classifier (e.g. "
            "LogisticRegression); to threshold a regressor's output, wrap it in a "
            "classifier whose decision_function returns that output."
        )


def check_predicted_labels(predicted, classes, name: str) -> None:
    """A ``predict`` used as the score must return labels of ``classes``."""
    expected = {plain_label(c) for c in classes}
    found = np.unique(predicted)
    outside = [v for v in found if plain_label(v) not in expected]
    if outside:
        raise ValueError(
            f"{name} has neither predict_proba nor decision_function, and its predict "
            f"returns {len(outside)} value(s) outside classes_ [{_quoted(classes)}], e.g. "
            f"{_quoted(outside)}: continuous outputs cannot be thresholded per group this "
            "way. Pass a classifier, or one whose decision_function returns the scores."
        )


def score_range(scores, bounded: bool) -> tuple[float, float]:
    """The ends of the scores a classifier can give: [0, 1] for probabilities and labels,
    else the extremes of the fit scores."""
    finite = scores[np.isfinite(scores)]
    low = float(finite.min()) if finite.size else 0.0
    high = float(finite.max()) if finite.size else 0.0
    if bounded:
        low, high = min(low, 0.0), max(high, 1.0)
    return low, high


def finite_thresholds(thresholds, low: float, high: float) -> np.ndarray:
    """``+inf`` ("nobody") becomes ``high`` (a score is selected when it is strictly
    above its threshold, and none of the range is), ``-inf`` ("everybody") a value below
    ``low``; the selections of the scores in ``[low, high]`` are unchanged."""
    below = low - max(1.0, abs(low))
    return np.where(
        np.isposinf(thresholds), high, np.where(np.isneginf(thresholds), below, thresholds)
    )


def _rule_of(record) -> str | None:
    """The thresholds' rule (a key of ``METRIC_RATES``) of a catalogue record, or None
    when group thresholds cannot take it."""
    if record.aggregate != "difference" or "labels" not in record.kinds:
        return None
    if any(rate.name not in THRESHOLD_RATES for rate in record.rates):
        return None
    moved = {THRESHOLD_RATES[rate.name] for rate in record.rates}
    return next((rule for rule, rates in METRIC_RATES.items() if set(rates) == moved), None)


def threshold_metric(metric: str):
    """The catalogue record of the post-processor's ``metric`` (a short name of
    :data:`~fairest.metrics._catalogue.METRIC_ALIASES` or a catalogue name); ``ValueError``
    naming the metrics it takes otherwise."""
    from fairest.metrics._catalogue import METRIC_ALIASES, catalogue

    records = catalogue()
    record = records.get(METRIC_ALIASES.get(metric, metric)) if isinstance(metric, str) else None
    if record is None or _rule_of(record) is None:
        taken = [*METRIC_ALIASES, *(n for n, r in records.items() if _rule_of(r) is not None)]
        why = (
            f" ({record.name!r} is a {record.aggregate or 'non-rate'} metric of "
            f"{'/'.join(record.kinds)})"
            if record is not None
            else ""
        )
        raise ValueError(
            f"GroupThresholdClassifier cannot take metric={metric!r}{why}: group thresholds "
            "hold between-group differences of label rates they move (selection, true / "
            f"false positive and negative rates). Use one of {tuple(taken)}."
        )
    return record


def threshold_rule(metric: str) -> str:
    """The thresholds' rule (``"demographic_parity"``, ``"equal_opportunity"``,
    ``"equalized_odds"``: which of their rates must agree) of ``metric``."""
    return _rule_of(threshold_metric(metric))


def undefined_rates(y01, sample_weight, codes, num_groups, metric) -> dict:
    """``rate name -> group codes`` where the rate of ``metric`` has no row to be a mean
    over (TPR: no positive; FPR: no negative)."""
    masks = {"tpr": y01, "fpr": 1.0 - y01}
    undefined = {}
    for name in METRIC_RATES[threshold_rule(metric)]:
        if name in masks:
            mass = np.bincount(codes, sample_weight * masks[name], minlength=num_groups)
            present = np.bincount(codes, sample_weight, minlength=num_groups) > 0
            missing = np.flatnonzero(present & (mass <= 0))
            if missing.size:
                undefined[name] = missing
    return undefined


def warn_undefined_rates(undefined, group_labels, metric, tolerance, stacklevel=3) -> None:
    """One :class:`FairnessWarning` naming the groups whose rate is undefined."""
    if not undefined:
        return
    parts = []
    for name, missing in undefined.items():
        label = "y = 1" if name == "tpr" else "y = 0"
        parts.append(
            f"the {RATE_WORDS[name]} of group(s) {_quoted(group_labels[missing])} (no row "
            f"with {label})"
        )
    warnings.warn(
        f"GroupThresholdClassifier: {' and '.join(parts)} is undefined. As in "
        "fairest.metrics and fairlearn it counts as 0, so metric="
        f"{metric!r} holds every group's rate within tolerance={tolerance:g} of 0, which "
        "can leave nobody (or everybody) selected. Merge or drop the group(s), or use "
        "metric='demographic_parity'.",
        FairnessWarning,
        stacklevel=stacklevel,
    )


def blocking_counts(points: GroupPoints, metric: str, tolerance: float) -> np.ndarray:
    """Per group, how many bands ``[b, b + tolerance]`` of a rate of ``metric`` away from
    the ends (``b >= 0.01``, ``b + tolerance <= 0.99``) hold none of its points' rates:
    the groups that miss the most such bands are those that force a (near-)constant
    deterministic solution (too few rows for their rates to reach the others', or an
    undefined rate stuck at 0)."""
    counts = np.zeros(points.num_groups)
    for name in METRIC_RATES[threshold_rule(metric)]:
        edges = _edge_grid(points.rates[name], EDGE_GRID)  # reached rates (a subset if many)
        edges = edges[
            (edges >= NEAR_CONSTANT_SHARE) & (edges + tolerance <= 1.0 - NEAR_CONSTANT_SHARE)
        ]
        if not edges.size:
            continue
        lo, hi = _band_bounds(*_sorted_key(points, name), edges, tolerance)
        counts += (hi <= lo).sum(axis=0)
    return counts


def warn_if_near_constant(
    positive,
    y01,
    sample_weight,
    codes,
    group_labels,
    classes,
    *,
    unconstrained,
    points: GroupPoints,
    metric: str,
    tolerance: float,
    randomized: bool,
    stacklevel: int = 3,
) -> bool:
    """Warn when the fitted classifier is (near-)constant on the fit rows.

    The warning gives its accuracy and selection rates (overall and per group), those of
    the unconstrained group thresholds (``unconstrained``: their ``P(predict 1)`` per
    row), and the groups that forced it (those missing the most bands, see
    :func:`blocking_counts`) when the unconstrained thresholds are not near-constant too.

    Returns whether it warned.
    """
    w = sample_weight
    share = float(np.average(positive, weights=w))
    if min(share, 1.0 - share) > NEAR_CONSTANT_SHARE:
        return False
    num_groups = len(group_labels)
    mass = np.bincount(codes, w, minlength=num_groups)
    rates = np.bincount(codes, w * positive, minlength=num_groups) / np.maximum(mass, 1e-300)
    majority = classes[1] if share >= 0.5 else classes[0]
    shown = ", ".join(
        f"{plain_label(label)!r} {rate:.3g}"
        for label, rate in zip(group_labels[:SHOWN_GROUPS], rates[:SHOWN_GROUPS])
    )
    if num_groups > SHOWN_GROUPS:
        shown += f", ... ({num_groups} groups)"
    free_share = float(np.average(unconstrained, weights=w))
    message = (
        f"{NEAR_CONSTANT_MESSAGE} classifier: it predicts {plain_label(majority)!r} for "
        f"{100 * max(share, 1 - share):.1f}% of the fit rows (accuracy "
        f"{_accuracy(positive, y01, w):.3g}; share predicted "
        f"{plain_label(classes[1])!r}: {share:.3g} overall, per group: {shown}). The unconstrained "
        f"group thresholds reach accuracy {_accuracy(unconstrained, y01, w):.3g} with share "
        f"{free_share:.3g}."
    )
    if min(free_share, 1.0 - free_share) <= NEAR_CONSTANT_SHARE:
        message += (
            " They are near-constant too: the wrapped estimator's scores, not the "
            "constraint, make it so (e.g. a rare class or uninformative scores)."
        )
    else:
        counts = blocking_counts(points, metric, tolerance)
        if counts.max() > 0:
            order = np.lexsort((mass, -counts))
            worst = order[counts[order] == counts.max()]
            unit = "rows" if np.all(w == 1.0) else "total weight"
            sizes = ", ".join(
                f"{plain_label(group_labels[g])!r} ({mass[g]:.4g} {unit})" for g in worst[:SHOWN]
            )
            more = f" and {worst.size - SHOWN} more" if worst.size > SHOWN else ""
            kind = "mixed thresholds" if randomized else "one deterministic threshold"
            message += (
                f" {metric} at tolerance={tolerance:g} with {kind} per group needs rates "
                f"that every group can reach; group(s) {sizes}{more} miss the most bands "
                "[b, b + tolerance] away from 0 and 1 (a group of n rows moves its rates in "
                "steps of 1/n; a group without positives or negatives has its TPR or FPR "
                "stuck at 0)."
            )
    message += " Raise tolerance, use randomized=True, or merge small or single-class groups."
    warnings.warn(message, FairnessWarning, stacklevel=stacklevel)
    return True


def _accuracy(positive, y01, sample_weight) -> float:
    return float(np.average(np.where(y01 == 1, positive, 1.0 - positive), weights=sample_weight))


def group_uncertainty(positive, y01, sample_weight, codes, group_labels, metric, tolerance):
    """Per group and rate of ``metric``: the fitted rate on the fit rows and its
    Clopper-Pearson interval at :data:`UNCERTAINTY_LEVEL`.

    ``positive`` is every row's probability of a positive prediction (0/1 when
    deterministic); a rate is a weighted mean of it over the group's rows (all of them for
    the selection rate, those with ``y = 1`` for the TPR, ``y = 0`` for the FPR), over an
    effective number of rows (Kish's, 1 per row without weights). ``exceeds_tolerance`` is
    whether the interval reaches further than ``tolerance`` from the fit rate on either
    side: the group's rate on new rows from the same population can then differ from the
    fit rate by more than the tolerance, so the tolerance says nothing about it beyond
    the fit rows. An undefined rate (no row in its condition) has NaN figures and is not
    flagged (:func:`warn_undefined_rates` names it).

    Returns
    -------
    pandas.DataFrame
        One row per (group, rate): ``group``, ``rate`` (``"selection"``, ``"tpr"`` or
        ``"fpr"``), ``rows`` (effective), ``value``, ``lower``, ``upper``,
        ``half_width`` and ``exceeds_tolerance``.
    """
    masks = {"selection": np.ones_like(y01), "tpr": y01, "fpr": 1.0 - y01}
    num_groups = len(group_labels)
    frames = []
    for name in METRIC_RATES[threshold_rule(metric)]:
        w = sample_weight * masks[name]
        mass = np.bincount(codes, w, minlength=num_groups)
        rows = effective_size(mass, np.bincount(codes, w * w, minlength=num_groups))
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.bincount(codes, w * positive, minlength=num_groups) / mass
        value = np.where(mass > 0, np.clip(value, 0.0, 1.0), np.nan)
        lower, upper = proportion_interval(value, rows, UNCERTAINTY_LEVEL)
        reach = np.fmax(value - lower, upper - value)
        frames.append(
            pd.DataFrame(
                {
                    "group": [plain_label(label) for label in group_labels],
                    "rate": name,
                    "rows": rows,
                    "value": value,
                    "lower": lower,
                    "upper": upper,
                    "half_width": (upper - lower) / 2.0,
                    "exceeds_tolerance": np.nan_to_num(reach, nan=0.0) > tolerance,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def warn_small_groups(uncertainty: pd.DataFrame, tolerance: float, stacklevel: int = 3) -> bool:
    """One :class:`FairnessWarning` naming the groups (and rates) of ``uncertainty`` (see
    :func:`group_uncertainty`) whose interval reaches further than ``tolerance``, with
    their rows, fit rate, interval and half-width. Returns whether it warned."""
    flagged = uncertainty[uncertainty["exceeds_tolerance"]]
    if flagged.empty:
        return False
    flagged = flagged.sort_values("half_width", ascending=False)
    shown = "; ".join(
        f"{row.group!r} {RATE_WORDS[row.rate]} {row.value:.3g} on {row.rows:.4g} rows, "
        f"interval [{row.lower:.3g}, {row.upper:.3g}] (half-width {row.half_width:.3g})"
        for row in flagged.head(SHOWN).itertuples()
    )
    more = f"; and {len(flagged) - SHOWN} more" if len(flagged) > SHOWN else ""
    warnings.warn(
        f"{SMALL_GROUPS_MESSAGE}={tolerance:g} to hold beyond the fit rows: the "
        f"{100 * UNCERTAINTY_LEVEL:g}% Clopper-Pearson interval of the fitted rate reaches "
        f"further than the tolerance for {shown}{more}. On new rows these rates can move "
        "by that much, so the groups' difference can exceed the tolerance there. Merge "
        "small groups, collect more rows of them, or loosen tolerance; group_uncertainty_ "
        "lists every group's interval.",
        FairnessWarning,
        stacklevel=stacklevel,
    )
    return True
