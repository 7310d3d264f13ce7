"""``fairness_weight="auto"``: the ERMI weight that halves the unconstrained parity gap.

The penalty's scale depends on the data (ERMI is a chi-square dependence, small next to
the cross-entropy, and weighs each group by its share of the rows), so no fixed weight
mitigates everywhere: 1.0 already more than halves the demographic-parity gap on
ACSPublicCoverage but moves it by a tenth on the whole of it. ``"auto"`` searches the
weight instead: the smallest one (within a factor of about 1.19) whose fitted model has a
train parity gap (:func:`parity_gap`) at most :data:`GAP_SHARE` of the unconstrained
fit's, by a geometric bracket from 1 and a few bisections on a log scale, every solve
warm-started from the nearest solved weight.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fairest.utils._linear import score_codes

__all__ = [
    "GAP_SHARE",
    "AutoWeight",
    "parity_gap",
    "predicted_codes",
    "search_weight",
    "train_accuracy",
    "warn_degenerate",
]

GAP_SHARE = 0.5  # "auto" halves the unconstrained fit's train parity gap
START = 1.0  # the search's first weight (the paper's default)
FACTOR = 4.0  # the bracket's step
LOWEST, HIGHEST = FACTOR**-4, FACTOR**6  # searched range of weights (1/256 to 4096)
BISECTIONS = 3  # on a log scale: the bracket's factor 4 down to 4 ** (1 / 8), about 1.19
KEEP_MARGIN = 0.5  # of the unconstrained fit's train accuracy margin over the majority class


class AutoWeight(NamedTuple):
    """Outcome of :func:`search_weight`."""

    weight: float  # the chosen fairness_weight
    theta: np.ndarray  # its fitted parameters
    gaps: dict  # train parity gap at every solved weight (0.0: the unconstrained fit)
    accuracies: dict  # train accuracy at every solved weight
    floor: float  # the accuracy a weight's fit must keep (KEEP_MARGIN)
    reached: bool  # the chosen weight's gap is at most GAP_SHARE of the unconstrained one


def parity_gap(theta, X, strata, groups, weight, n_groups: int) -> tuple[float, np.ndarray]:
    """Train parity gap of the hard predictions of ``theta`` (``(d + 1, q)``, intercept row
    first; ``predict``'s rule: score >= 0 for one logit, else the arg-max) and the rates it
    compares.

    The rate of predicted class ``j`` in group ``r`` within stratum ``t`` (one stratum:
    demographic parity; the true labels: equalized odds) is the weighted share of the
    group's rows of that stratum predicted ``j``; the gap is the largest range of a rate
    over the groups present in a stratum (for two classes, demographic parity's and
    equalized odds' differences as fairlearn defines them). Returns ``(gap, rates)`` with
    ``rates`` of shape ``(n_strata, n_groups, n_classes)`` (NaN where a group has no row).
    """
    predicted, n_classes = predicted_codes(theta, X)
    n_strata = int(np.max(strata)) + 1
    cell = (strata * n_groups + groups) * n_classes + predicted
    mass = np.bincount(cell, weights=weight, minlength=n_strata * n_groups * n_classes)
    mass = mass.reshape(n_strata, n_groups, n_classes)
    totals = mass.sum(axis=2, keepdims=True)
    rates = np.divide(mass, totals, out=np.full(mass.shape, np.nan), where=totals > 0)
    if np.all(np.isnan(rates)):
        return 0.0, rates
    spread = np.nanmax(rates, axis=1) - np.nanmin(rates, axis=1)
    return float(np.nanmax(spread)), rates


def train_accuracy(predicted, y_codes, weight) -> float:
    """Weighted share of the rows predicted their label."""
    return float(weight @ (predicted == y_codes) / weight.sum())


def predicted_codes(theta, X) -> tuple[np.ndarray, int]:
    """Class codes ``predict`` gives (:func:`~fairest.utils._linear.score_codes`: score
    >= 0 for one logit, else the arg-max) and the number of classes."""
    theta = np.asarray(theta, dtype=np.float64)
    scores = np.asarray(X @ theta[1:]) + theta[0]
    return score_codes(scores), 2 if theta.shape[1] == 1 else theta.shape[1]


def search_weight(solve, evaluate, majority: float) -> AutoWeight:
    """The weight of ``"auto"``.

    ``solve(weight)`` returns the fitted parameters at a weight and ``evaluate(theta)``
    their train ``(parity gap, accuracy)``; ``majority`` is the train share of the most
    common class. The unconstrained fit (weight 0) sets the target, ``GAP_SHARE`` times
    its gap, and the accuracy floor: a weight's fit must keep ``KEEP_MARGIN`` of the
    unconstrained fit's accuracy margin over the majority class (a larger weight can
    always shrink the gap by predicting one class more and more, which is no
    mitigation). A weight meets the target when its gap is at most the target and its
    accuracy at least the floor.

    From ``START`` the weight is multiplied (or divided) by ``FACTOR`` until the gap is
    met or the floor is crossed (down to a weight whose gap is above the target), then
    ``BISECTIONS`` geometric bisections narrow that bracket; its upper end is returned
    when it meets the target. Otherwise (no weight up to ``HIGHEST``, or none above the
    floor, halves the gap: groups too small for a penalty that weighs them by their
    share, or a disparity no linear model removes at this accuracy) the weight of the
    smallest gap among those above the floor is returned, ``reached`` False. A gap of 0
    returns weight 0.
    """
    found = {}
    theta0 = solve(0.0)
    found[0.0] = (*evaluate(theta0), theta0)
    gap0, accuracy0, _ = found[0.0]
    floor = majority + KEEP_MARGIN * (accuracy0 - majority)
    target = GAP_SHARE * gap0

    def state(weight):
        """ "met", "above" (gap above the target) or "below" (accuracy below the floor)."""
        if weight not in found:
            theta = solve(weight)
            found[weight] = (*evaluate(theta), theta)
        gap, accuracy, _ = found[weight]
        if accuracy < floor:
            return "below"
        return "met" if gap <= target else "above"

    def outcome(weight, reached):
        if not reached:  # the smallest gap above the accuracy floor
            kept = [w for w in found if found[w][1] >= floor] or [0.0]
            weight = min(kept, key=lambda w: (found[w][0], w))
        table = {w: found[w] for w in sorted(found)}
        return AutoWeight(
            float(weight),
            found[weight][2],
            {w: float(v[0]) for w, v in table.items()},
            {w: float(v[1]) for w, v in table.items()},
            float(floor),
            reached,
        )

    if gap0 <= 0.0:
        return outcome(0.0, True)
    if state(START) == "above":
        low = START
        while True:
            high = low * FACTOR
            if high > HIGHEST:
                return outcome(None, False)
            if state(high) != "above":
                break
            low = high
    else:  # met or below at START: the smallest weight that is not "above"
        high = START
        while True:
            low = high / FACTOR
            if low < LOWEST:
                return outcome(high, True) if state(high) == "met" else outcome(None, False)
            if state(low) == "above":
                break
            high = low
    for _ in range(BISECTIONS):
        middle = float(np.sqrt(low * high))
        low, high = (middle, high) if state(middle) == "above" else (low, middle)
    return outcome(high, True) if state(high) == "met" else outcome(None, False)


def warn_degenerate(estimator, data, y_codes, strata_codes, theta, full, stacklevel=3):
    """The ``FairnessWarning`` s of a fit, with the achieved figures: ``"auto"`` that did
    not halve the train parity gap (``full``: the full-batch result of the search, or
    None), and a (nearly) constant fitted model."""
    import warnings

    from fairest.utils._degenerate import (
        NEAR_CONSTANT_SHARE,
        near_constant,
        plain_label,
        prediction_figures,
    )
    from fairest.utils._validation import FairnessWarning

    name, weight = type(estimator).__name__, data.sample_weight
    labels, lam = data.group_labels, estimator.fairness_weight_
    if full is not None and full.auto is not None and not full.auto.reached:
        gap, rates = parity_gap(theta, data.X, strata_codes, data.groups, weight, len(labels))
        spread = np.nanmax(rates, axis=1) - np.nanmin(rates, axis=1)
        if spread.shape[1] == 2:  # two classes: the same range for both, shown for the positive
            spread[:, 0] = -np.inf
        stratum, column = np.unravel_index(np.nanargmax(spread), spread.shape)
        high, low = (int(pick(rates[stratum, :, column])) for pick in (np.nanargmax, np.nanargmin))
        sizes = np.bincount(data.groups, minlength=len(labels))
        kind = "equalized odds" if estimator.metric == "equalized_odds" else "demographic parity"
        search = full.auto
        floor = [w for w, a in search.accuracies.items() if a < search.floor]
        limit = (
            f"at fairness_weight={min(floor):.4g} and above the train accuracy falls below "
            f"{search.floor:.4f} (half the unconstrained fit's margin over the majority class; "
            f"{search.accuracies[min(floor)]:.4f} there, {search.accuracies[0.0]:.4f} "
            "unconstrained)"
            if floor
            else f"weights searched up to {HIGHEST:g}"
        )
        warnings.warn(
            f"{name}: fairness_weight='auto' did not halve the train {kind} difference: "
            f"{search.gaps[0.0]:.4f} for the unconstrained fit, {gap:.4f} at "
            f"fairness_weight={lam:.4g}, the smallest gap found ({limit}). It is held by "
            f"groups {plain_label(labels[high])!r} "
            f"({sizes[high]} rows, rate {rates[stratum, high, column]:.3f}) and "
            f"{plain_label(labels[low])!r} ({sizes[low]} rows, rate "
            f"{rates[stratum, low, column]:.3f}): the ERMI penalty weighs a group by its "
            "share of the rows, so the rate of a small group barely moves. Merge small "
            "groups, or use a method that sets every group's rate "
            "(GroupThresholdClassifier).",
            FairnessWarning,
            stacklevel=stacklevel,
        )
    predicted, n_classes = predicted_codes(theta, data.X)
    if n_classes == 2:
        constant = near_constant(predicted, y_codes, weight)
        if constant:
            shown = prediction_figures(
                predicted,
                y_codes,
                data.groups,
                weight,
                labels,
                plain_label(estimator.classes_[1]),
            )
    else:
        shares = np.bincount(predicted, weights=weight, minlength=n_classes) / weight.sum()
        truth = np.bincount(y_codes, weights=weight, minlength=n_classes) / weight.sum()
        constant = 1 - shares.max() <= NEAR_CONSTANT_SHARE < 1 - truth.max()
        shown = f"share predicted {plain_label(estimator.classes_[np.argmax(shares)])!r} "
        shown += (
            f"{shares.max():.3f}, accuracy {weight @ (predicted == y_codes) / weight.sum():.3f}"
        )
    if constant:
        warnings.warn(
            f"{name}: the fitted model predicts one class nearly everywhere ({shown}) at "
            f"fairness_weight={lam:.4g}: the penalty makes the constant model, which is "
            "trivially fair, nearly optimal. Lower fairness_weight (or leave it at 'auto').",
            FairnessWarning,
            stacklevel=stacklevel,
        )
