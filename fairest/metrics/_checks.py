"""Input validation shared by the exact (numpy) metrics.

Every exact metric goes through :func:`check_metric_inputs`: targets and predictions
become finite float64 vectors of one length, sensitive features become int32 codes via
:func:`fairest.utils.encode_groups`, and sample weights a non-negative float64 vector with
positive total weight in every group.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from fairest.metrics._group_stats import group_totals
from fairest.utils._validation import encode_groups, raise_if_weightless_group

__all__ = [
    "MetricInputs",
    "check_metric_inputs",
    "as_finite_vector",
    "check_sample_weight",
    "as_binary_labels",
    "check_option",
    "check_labels",
    "check_hard_labels",
    "check_probabilities",
    "check_same_length",
    "check_score_inputs",
    "encode_sensitive_features",
    "raise_if_not_finite",
    "raise_if_weightless_group",
]


class MetricInputs(NamedTuple):
    """Validated inputs of an exact metric."""

    y_true: np.ndarray  # (n,) float64
    y_pred: np.ndarray  # (n,) float64: hard predictions or scores
    codes: np.ndarray  # (n,) int32 in 0..G-1
    groups: np.ndarray  # (G,) group labels, in code order
    weights: np.ndarray  # (n,) float64, non-negative

    @property
    def num_groups(self) -> int:
        return len(self.groups)


def check_option(value, name: str, options) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``options``."""
    if value not in options:
        raise ValueError(f"{name} must be one of {tuple(options)}; got {value!r}.")


def as_finite_vector(values, name: str) -> np.ndarray:
    """Convert ``values`` to a finite float64 array of shape (n,).

    Accepts lists, numpy arrays, pandas and polars Series (and single-column 2-D data).

    Raises
    ------
    ValueError
        If the values are not numeric, not one-dimensional, empty, or not all finite.
    """
    try:
        if isinstance(values, (pd.Series, pd.DataFrame, pd.Index)):
            array = values.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"{name} must be numeric (labels coded as numbers); conversion to float failed: {error}"
        ) from None
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be one-dimensional of shape (n_samples,); got shape {array.shape}."
        )
    if array.size == 0:
        raise ValueError(f"{name} is empty.")
    finite = np.isfinite(array)
    if not finite.all():
        first = int(np.flatnonzero(~finite)[0])
        raise ValueError(
            f"{name} contains NaN or infinite values (first at position {first}, "
            f"value {array[first]}); metrics need finite inputs."
        )
    return array


def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray:
    """Validate sample weights; ``None`` means unit weights."""
    if sample_weight is None:
        return np.ones(n_samples)
    weights = as_finite_vector(sample_weight, "sample_weight")
    if weights.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight has {weights.shape[0]} entries but there are {n_samples} "
            "samples; they must have the same length."
        )
    if (weights < 0).any():
        raise ValueError("sample_weight must be non-negative.")
    if not weights.sum() > 0:
        raise ValueError("sample_weight sums to zero; at least one sample needs a positive weight.")
    return weights


def raise_if_not_finite(array: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` naming the first NaN or infinite entry of ``array``."""
    finite = np.isfinite(array)
    if not finite.all():
        first = int(np.flatnonzero(~finite.ravel())[0])
        raise ValueError(
            f"{name} contains NaN or infinite values (first at flat position {first}); "
            "metrics need finite inputs."
        )


def check_labels(values, name: str) -> np.ndarray:
    """A non-empty 1-D array of class labels (numbers or strings) without missing values."""
    array = np.asarray(values)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of labels; got an array of shape {array.shape}."
        )
    if array.size == 0:
        raise ValueError(f"{name} is empty.")
    missing = pd.isna(array)
    if missing.any() or (array.dtype.kind == "f" and not np.isfinite(array).all()):
        raise ValueError(f"{name} contains missing (NaN/None) or infinite labels.")
    return array


def check_hard_labels(values, name: str = "y_pred", hint: str = "") -> np.ndarray:
    """:func:`check_labels`, refusing non-integer numbers (probabilities or scores);
    ``hint`` ends the error message."""
    labels = check_labels(values, name)
    if labels.dtype.kind == "f" and (labels != np.round(labels)).any():
        example = labels[np.flatnonzero(labels != np.round(labels))[0]]
        raise ValueError(
            f"{name} must hold hard labels (e.g. predict(X)); it has non-integer values "
            f"such as {example:g}, which look like probabilities or scores.{hint}"
        )
    return labels


def check_probabilities(proba: np.ndarray, name: str = "y_proba") -> None:
    """Raise ``ValueError`` unless every entry of ``proba`` lies in ``[0, 1]``."""
    outside = (proba < 0.0) | (proba > 1.0)
    if outside.any():
        raise ValueError(
            f"{name} must hold probabilities in [0, 1] (e.g. predict_proba(X)); it has "
            f"values from {proba.min():g} to {proba.max():g}, which look like scores or "
            "logits."
        )


def check_same_length(reference: str, n_samples: int, **arrays) -> None:
    """Raise ``ValueError`` unless every non-``None`` array has ``n_samples`` rows."""
    for name, array in arrays.items():
        if array is not None and len(array) != n_samples:
            raise ValueError(
                f"{reference} has {n_samples} samples but {name} has {len(array)}; "
                "they must have the same length."
            )


def encode_sensitive_features(
    sensitive_features, n_samples: int, *, reference: str = "y_true", min_groups: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Group codes ``0..G-1`` and labels of a metric's sensitive features."""
    if sensitive_features is None:
        raise ValueError("sensitive_features is required to evaluate a fairness metric.")
    return encode_groups(
        sensitive_features, n_samples=n_samples, min_groups=min_groups, reference=reference
    )


def check_score_inputs(y_true, y_score, sensitive_features, sample_weight):
    """``(scores, codes, weights, groups)`` of a metric of scores alone: ``y_true`` is only
    checked to have the length of ``y_score``; every group needs a positive total weight."""
    scores = as_finite_vector(y_score, "y_score")
    n_samples = scores.shape[0]
    check_same_length("y_score", n_samples, y_true=y_true)
    weights = check_sample_weight(sample_weight, n_samples)
    codes, groups = encode_sensitive_features(sensitive_features, n_samples, reference="y_score")
    raise_if_weightless_group(group_totals(codes, weights, len(groups)), groups)
    return scores, codes, weights, groups


def as_binary_labels(values: np.ndarray, name: str) -> np.ndarray:
    """Map binary labels coded {0, 1} or {-1, 1} (1 is positive) to a 0/1 float array."""
    unique = np.unique(values)
    if not (set(unique) <= {0.0, 1.0} or set(unique) <= {-1.0, 1.0}):
        shown = ", ".join(f"{v:g}" for v in unique[:6]) + (", ..." if unique.size > 6 else "")
        raise ValueError(
            f"{name} must hold binary labels coded {{0, 1}} or {{-1, 1}}, with 1 the "
            f"positive class; got the values [{shown}]."
        )
    return (values == 1.0).astype(np.float64)


def check_metric_inputs(
    y_true,
    y_pred,
    sensitive_features,
    sample_weight=None,
    *,
    pred_name: str = "y_pred",
    min_groups: int = 1,
) -> MetricInputs:
    """Validate the common inputs of an exact metric.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        Targets and predictions (or scores); finite numbers.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership, encoded with :func:`fairest.utils.encode_groups`.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights; every group needs a positive total weight.
    pred_name : str, default="y_pred"
        Name of the second argument in error messages (``"scores"`` for score metrics).
    min_groups : int, default=1
        Minimum number of groups the metric needs.

    Returns
    -------
    MetricInputs
    """
    y_true = as_finite_vector(y_true, "y_true")
    y_pred = as_finite_vector(y_pred, pred_name)
    n_samples = y_true.shape[0]
    check_same_length("y_true", n_samples, **{pred_name: y_pred})
    codes, groups = encode_sensitive_features(sensitive_features, n_samples, min_groups=min_groups)
    weights = check_sample_weight(sample_weight, n_samples)
    raise_if_weightless_group(group_totals(codes, weights, len(groups)), groups)
    return MetricInputs(y_true, y_pred, codes, groups, weights)
