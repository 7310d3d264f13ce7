"""What a certificate accepts, and what it says about a degenerate model.

A certificate is about the hard predictions of a binary classifier: a regressor (or any
model whose ``predict`` returns values outside its classes) would be compared with the
positive label, find no positives and certify a gap of 0. Labels outside the model's
classes would be coded as negatives. Both are refused here, with the labels found and the
ones expected. A (near-)constant predictor passes every parity constraint whatever the
population, so a certificate of one warns with the achieved selection rates.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import is_regressor

from fairest.utils._degenerate import NEAR_CONSTANT_SHARE, plain_label
from fairest.utils._validation import FairnessWarning

__all__ = [
    "check_not_regressor",
    "model_classes",
    "check_within",
    "warn_if_near_constant",
    "format_group_rates",
]

_SHOWN = 5  # labels quoted in an error message
_SHOWN_GROUPS = 8  # groups listed in a warning


def _is_regressor(model) -> bool:
    """scikit-learn's ``is_regressor``; an object without scikit-learn tags is one when it
    says so through the older ``_estimator_type`` attribute."""
    try:
        return bool(is_regressor(model))
    except (AttributeError, TypeError):
        return getattr(model, "_estimator_type", None) == "regressor"


def check_not_regressor(model, name: str, caller: str, fix: str | None = None) -> None:
    """Refuse a regressor where a binary classifier's hard predictions are needed."""
    if _is_regressor(model):
        fix = fix or (
            "Pass a classifier (e.g. LogisticRegression), or threshold the predictions "
            "yourself and certify the labels with fairness_interval(metric, y, "
            "(model.predict(X) > threshold).astype(int), sensitive_features=...)."
        )
        raise ValueError(
            f"{name} is a regressor ({type(model).__name__}): {caller} needs a binary "
            "classifier's hard predictions; continuous predictions compared with the "
            f"positive label would find no positives and report a gap of 0. {fix}"
        )


def _labels(values) -> str:
    shown = ", ".join(repr(plain_label(v)) for v in values[:_SHOWN])
    return f"[{shown}{', ...' if len(values) > _SHOWN else ''}]"


def _outside(values, classes) -> list:
    expected = {plain_label(c) for c in classes}
    try:
        found = np.unique(values)
    except TypeError:  # mixed types cannot be sorted
        found = list(dict.fromkeys(values.tolist()))
    return [v for v in found if plain_label(v) not in expected]


def model_classes(model, y, prediction, name: str) -> np.ndarray:
    """The two classes of a binary certificate: ``model.classes_``, else the labels of
    ``y`` (with the predictions' when ``y`` holds one label)."""
    classes = getattr(model, "classes_", None)
    if classes is not None:
        classes = np.asarray(classes)
        if classes.size != 2:
            raise ValueError(
                f"certification covers binary classifiers; {name} has {classes.size} "
                f"class(es) {_labels(classes)}. Fit it on two classes."
            )
        return classes
    classes = np.unique(y)
    if classes.size > 2:
        raise ValueError(
            f"certification covers binary classifiers; y holds {classes.size} labels "
            f"{_labels(classes)}. Keep two classes (e.g. one against the rest)."
        )
    if classes.size == 2:
        return classes
    joined = np.concatenate([classes, _outside(prediction, classes)])
    if joined.size > 2:
        raise ValueError(
            f"the predictions of {name} hold {joined.size - 1} values besides y's label "
            f"{_labels(classes)}, e.g. {_labels(joined[1:])}: a certificate needs the hard "
            "labels of a binary classifier (give the model a classes_ attribute)."
        )
    try:
        return np.sort(joined)
    except TypeError:
        return joined


def check_within(values, classes, what: str, name: str) -> None:
    """Refuse labels outside ``classes``, naming the labels found and the expected ones."""
    outside = _outside(np.asarray(values), classes)
    if not outside:
        return
    if what == "y":
        raise ValueError(
            f"y holds label(s) {_labels(outside)} that {name} never had: its classes are "
            f"{_labels(classes)}. They would count as negatives; recode y to these classes "
            "(or certify a model fitted on these labels)."
        )
    continuous = len(outside) > 2 or any(
        isinstance(plain_label(v), float) and not float(plain_label(v)).is_integer()
        for v in outside
    )
    hint = (
        " These look like continuous outputs (a regressor's or a score): certify a "
        "classifier, or threshold them yourself and use fairness_interval on the labels."
        if continuous
        else " Recode the predictions to the model's classes."
    )
    raise ValueError(
        f"the predictions of {name} hold {len(outside)} value(s) outside its classes "
        f"{_labels(classes)}, e.g. {_labels(outside)}.{hint}"
    )


def format_group_rates(rates, counts, group_labels) -> str:
    """``"'a' 0.12 (n=40), 'b' 0.3 (n=55), ..."``: at most a few groups, then a count."""
    parts = [
        f"{plain_label(label)!r} {rate:.3g} (n={count:g})"
        for label, rate, count in zip(group_labels[:_SHOWN_GROUPS], rates, counts)
    ]
    more = len(group_labels) - _SHOWN_GROUPS
    return ", ".join(parts) + (f", ... ({len(group_labels)} groups)" if more > 0 else "")


def warn_if_near_constant(
    pred01, codes, group_labels, classes, *, who: str, rows: str, cause: str = "", stacklevel=3
) -> bool:
    """Warn (:class:`FairnessWarning`) when at most :data:`NEAR_CONSTANT_SHARE` of the rows
    get the minority prediction, with the selection rates of ``classes[1]`` overall and per
    group, and ``cause`` (what made it so, where known).

    Returns whether it warned.
    """
    share = float(np.mean(pred01))
    if min(share, 1.0 - share) > NEAR_CONSTANT_SHARE:
        return False
    counts = np.bincount(codes, minlength=len(group_labels))
    rates = np.bincount(codes, pred01, minlength=len(group_labels)) / np.maximum(counts, 1)
    majority = classes[1] if share >= 0.5 else classes[0]
    constant = np.flatnonzero((counts > 0) & ((rates == 0.0) | (rates == 1.0)))
    within = ""
    if 0 < constant.size < len(group_labels):
        within = (
            f" Every row of group(s) {_labels(group_labels[constant])} gets the same prediction."
        )
    warnings.warn(
        f"{who} predicts {plain_label(majority)!r} for {100 * max(share, 1 - share):.1f}% of the "
        f"{pred01.size:,} {rows} (share predicted {plain_label(classes[1])!r}: {share:.3g} overall; "
        f"per group: {format_group_rates(rates, counts, group_labels)}): a (near-)constant "
        "predictor meets every parity constraint whatever the population, so a certificate "
        f"of it says little about a useful model.{within}{cause}",
        FairnessWarning,
        stacklevel=stacklevel,
    )
    return True
