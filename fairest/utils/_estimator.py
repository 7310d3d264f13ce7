"""Shared pieces of every fairest estimator's ``fit``: validation and group encoding."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, validate_data

from fairest.utils._validation import check_sensitive_features

__all__ = ["FitData", "validate_fit_data", "encode_binary_target"]


class FitData(NamedTuple):
    X: np.ndarray  # (n, d) float64
    y: np.ndarray  # (n,) validated target (labels for classifiers, float for regressors)
    groups: np.ndarray  # (n,) int32 codes 0..G-1
    group_labels: np.ndarray  # (G,)
    sample_weight: np.ndarray  # (n,) float64, non-negative, not all zero


def validate_fit_data(
    estimator,
    X,
    y,
    sensitive_features,
    sample_weight,
    *,
    regression: bool = False,
    min_groups: int = 1,
) -> FitData:
    """Validate ``X, y``, sample weights and sensitive features for ``estimator.fit``.

    Sets ``n_features_in_`` / ``feature_names_in_`` through sklearn's ``validate_data``.
    NaN/inf, mismatched lengths, negative or all-zero weights and degenerate groups raise
    ``ValueError``; ``sensitive_features=None`` warns (one group).
    """
    X, y = validate_data(estimator, X, y, dtype=np.float64, y_numeric=regression)
    if regression:
        y = np.asarray(y, dtype=np.float64)
    else:
        check_classification_targets(y)
    sample_weight = _check_sample_weight(
        sample_weight, X, dtype=np.float64, ensure_non_negative=True
    )
    codes, labels = check_sensitive_features(
        sensitive_features, X.shape[0], min_groups=min_groups
    )
    return FitData(X, y, codes, labels, sample_weight)


def encode_binary_target(estimator_name: str, y) -> tuple[np.ndarray, np.ndarray]:
    """Classes and a float {0, 1} target; clear errors for one or more than two classes."""
    classes, y01 = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            "This solver needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {classes[0]!r}."
        )
    if classes.size > 2:
        raise ValueError(
            f"Only binary classification is supported by {estimator_name}; y has "
            f"{classes.size} classes. Use a one-vs-rest wrapper or a multi-class method "
            "(e.g. ERMI)."
        )
    return classes, y01.astype(np.float64)
