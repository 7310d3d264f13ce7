"""fairlearn's base metrics, with fairlearn's names, signatures and values.

``selection_rate``, ``true_positive_rate``, ``false_positive_rate``,
``false_negative_rate``, ``true_negative_rate`` and ``mean_prediction`` are weighted rates:
each function turns its labels into 0/1 indicators of ``pos_label`` and evaluates the
record of :func:`fairest.metrics._rates.fairlearn_rate`, the same record that
:class:`~fairest.metrics.MetricFrame` uses to evaluate these functions for all groups and
bootstrap replicates at once. ``count`` is the number of rows.
"""

from __future__ import annotations

import warnings

import numpy as np

from fairest.metrics._checks import as_finite_vector, check_labels, check_same_length
from fairest.metrics._rates import RateMetric, fairlearn_rate
from fairest.utils._validation import FairnessWarning

__all__ = [
    "count",
    "false_negative_rate",
    "false_positive_rate",
    "mean_prediction",
    "selection_rate",
    "true_negative_rate",
    "true_positive_rate",
]


def _weights(sample_weight, n_samples: int) -> np.ndarray:
    """Finite, non-negative weights of length ``n_samples`` (ones for ``None``). A zero
    total is allowed here: the rate is then undefined (see :func:`_evaluate`)."""
    if sample_weight is None:
        return np.ones(n_samples)
    weights = as_finite_vector(sample_weight, "sample_weight")
    check_same_length("y_pred", n_samples, sample_weight=weights)
    if (weights < 0).any():
        first = int(np.flatnonzero(weights < 0)[0])
        raise ValueError(
            f"sample_weight must be non-negative; got {weights[first]:g} at position {first}."
        )
    return weights


def _indicator(labels: np.ndarray, pos_label) -> np.ndarray:
    """``labels == pos_label`` as 0/1 floats; labels of a type that does not compare with
    ``pos_label`` (strings against a number) are all 0, as in fairlearn."""
    matches = np.asarray(labels == pos_label)
    if matches.shape != labels.shape:  # numpy gave a single False for the whole array
        return np.zeros(labels.shape[0])
    return matches.astype(np.float64)


def _evaluate(name: str, y_true, y_pred, weights: np.ndarray) -> float:
    """The value of ``name``'s record on 0/1 indicators (or numbers, for the mean
    prediction); a zero total weight gives its undefined value with a FairnessWarning."""
    rate: RateMetric = fairlearn_rate(name)
    if not weights.sum() > 0:
        warnings.warn(
            f"sample_weight sums to 0 over the {weights.shape[0]} rows, so {name} is "
            f"undefined; returning {rate.undefined}.",
            FairnessWarning,
            stacklevel=3,
        )
        return rate.undefined
    return rate(y_true, y_pred, sample_weight=weights)


def _confusion_indicators(y_true, y_pred, pos_label):
    """0/1 indicators of the positive label in ``y_true`` and ``y_pred`` under
    fairlearn's rules: without ``pos_label`` the labels must be coded {0, 1} or {-1, 1}
    (1 positive); at most two distinct labels, ``pos_label`` among them when there are
    two."""
    y_true = check_labels(y_true, "y_true")
    y_pred = check_labels(y_pred, "y_pred")
    check_same_length("y_true", y_true.shape[0], y_pred=y_pred)
    labels = set(np.unique(y_true).tolist()) | set(np.unique(y_pred).tolist())
    shown = sorted(map(repr, labels))
    if pos_label is None:
        if not (labels <= {0, 1} or labels <= {-1, 1}):
            raise ValueError(
                "without pos_label, y_true and y_pred must hold labels coded {0, 1} or "
                f"{{-1, 1}} (1 is positive); got the labels {', '.join(shown[:6])}. Pass "
                "pos_label=<the positive label>."
            )
        pos_label = 1
    if len(labels) > 2:
        raise ValueError(
            "y_true and y_pred must hold at most two distinct labels together (a binary "
            f"problem); got {len(labels)}: {', '.join(shown[:6])}."
        )
    if len(labels) == 2 and pos_label not in labels:
        raise ValueError(
            f"pos_label={pos_label!r} is not one of the labels of y_true and y_pred "
            f"({', '.join(shown)}); pass one of them."
        )
    return _indicator(y_true, pos_label), _indicator(y_pred, pos_label)


def _confusion_rate(name, y_true, y_pred, sample_weight, pos_label) -> float:
    positive_true, positive_pred = _confusion_indicators(y_true, y_pred, pos_label)
    weights = _weights(sample_weight, positive_true.shape[0])
    return _evaluate(name, positive_true, positive_pred, weights)


def selection_rate(y_true, y_pred, *, pos_label=1, sample_weight=None) -> float:
    """Weighted fraction of predictions equal to ``pos_label`` (the 'good' outcome).

    The same signature and value as :func:`fairlearn.metrics.selection_rate`: a prediction
    counts as selected exactly when it equals ``pos_label``, so probabilities or scores
    count only where they equal ``pos_label`` (fairlearn's value; a
    :class:`~fairest.utils.FairnessWarning` says so, and
    :func:`~fairest.metrics.demographic_parity_difference` refuses them).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels; only their number is used (checked against ``y_pred``).
    y_pred : array-like of shape (n_samples,)
        Predicted labels (numbers or strings, without missing values).
    pos_label : scalar, default=1
        The label of the 'good' outcome.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights; ``None`` weighs every row equally.

    Returns
    -------
    float
        ``sum(w * (y_pred == pos_label)) / sum(w)``; NaN (with a
        :class:`~fairest.utils.FairnessWarning`) when the weights sum to zero.

    Raises
    ------
    ValueError
        When ``y_pred`` is empty or has missing values, the lengths differ, or a weight is
        negative or not finite.

    See Also
    --------
    demographic_parity_difference : Largest gap in selection rate between groups.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020
       (``fairlearn.metrics.selection_rate``).

    Examples
    --------
    >>> from fairest.metrics import selection_rate
    >>> selection_rate([0, 1, 1, 0], [1, 1, 0, 0])
    0.5
    >>> selection_rate(["no", "yes", "yes"], ["yes", "yes", "no"], pos_label="yes")
    0.666...
    """
    y_pred = check_labels(y_pred, "y_pred")
    check_same_length("y_pred", y_pred.shape[0], y_true=y_true)
    weights = _weights(sample_weight, y_pred.shape[0])
    if (
        y_pred.dtype.kind == "f"
        and isinstance(pos_label, (int, float, np.number))
        and (y_pred != np.round(y_pred)).any()
    ):
        example = y_pred[np.flatnonzero(y_pred != np.round(y_pred))[0]]
        warnings.warn(
            f"y_pred holds non-integer values such as {example:g}, which look like "
            f"probabilities or scores: only values equal to pos_label={pos_label!r} count "
            "as selected (fairlearn's selection_rate). Threshold them first (e.g. "
            "predict(X)) for the selection rate of a classifier.",
            FairnessWarning,
            stacklevel=2,
        )
    selected = _indicator(y_pred, pos_label)
    return _evaluate("selection_rate", selected, selected, weights)  # y_true unused


def true_positive_rate(y_true, y_pred, sample_weight=None, pos_label=None) -> float:
    """Weighted fraction of the positive rows predicted positive (recall, sensitivity).

    The same signature and value as :func:`fairlearn.metrics.true_positive_rate`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (at most two distinct labels, together with ``y_pred``).
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights; ``None`` weighs every row equally.
    pos_label : scalar, default=None
        The positive label; ``None`` needs labels coded {0, 1} or {-1, 1} and takes 1.

    Returns
    -------
    float
        ``sum(w * [y_true = pos] * [y_pred = pos]) / sum(w * [y_true = pos])``; 0 without
        positive rows (fairlearn's and scikit-learn's ``confusion_matrix`` convention,
        without a warning).

    Raises
    ------
    ValueError
        When the labels are not binary, ``pos_label`` is not one of two labels, or ``None``
        with labels outside {0, 1} and {-1, 1}; on empty, missing or mismatched inputs.

    See Also
    --------
    false_negative_rate : ``1 - true_positive_rate`` where positives exist.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020
       (``fairlearn.metrics.true_positive_rate``).

    Examples
    --------
    >>> from fairest.metrics import true_positive_rate
    >>> true_positive_rate([1, 1, 0, 0], [1, 0, 1, 0])
    0.5
    >>> true_positive_rate([0, 0], [1, 0])  # no positives: 0
    0.0
    """
    return _confusion_rate("true_positive_rate", y_true, y_pred, sample_weight, pos_label)


def false_positive_rate(y_true, y_pred, sample_weight=None, pos_label=None) -> float:
    """Weighted fraction of the negative rows predicted positive (fall-out).

    The same signature and value as :func:`fairlearn.metrics.false_positive_rate`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (at most two distinct labels, together with ``y_pred``).
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights; ``None`` weighs every row equally.
    pos_label : scalar, default=None
        The positive label; ``None`` needs labels coded {0, 1} or {-1, 1} and takes 1.

    Returns
    -------
    float
        ``sum(w * [y_true != pos] * [y_pred = pos]) / sum(w * [y_true != pos])``; 0
        without negative rows.

    Raises
    ------
    ValueError
        When the labels are not binary, ``pos_label`` is not one of two labels, or ``None``
        with labels outside {0, 1} and {-1, 1}; on empty, missing or mismatched inputs.

    See Also
    --------
    true_negative_rate : ``1 - false_positive_rate`` where negatives exist.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020
       (``fairlearn.metrics.false_positive_rate``).

    Examples
    --------
    >>> from fairest.metrics import false_positive_rate
    >>> false_positive_rate([1, 1, 0, 0], [1, 0, 1, 1])
    1.0
    >>> false_positive_rate(["a", "b", "b"], ["b", "b", "a"], pos_label="b")
    1.0
    """
    return _confusion_rate("false_positive_rate", y_true, y_pred, sample_weight, pos_label)


def false_negative_rate(y_true, y_pred, sample_weight=None, pos_label=None) -> float:
    """Weighted fraction of the positive rows predicted negative (miss rate).

    The same signature and value as :func:`fairlearn.metrics.false_negative_rate`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (at most two distinct labels, together with ``y_pred``).
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights; ``None`` weighs every row equally.
    pos_label : scalar, default=None
        The positive label; ``None`` needs labels coded {0, 1} or {-1, 1} and takes 1.

    Returns
    -------
    float
        ``sum(w * [y_true = pos] * [y_pred != pos]) / sum(w * [y_true = pos])``; 0
        without positive rows.

    Raises
    ------
    ValueError
        When the labels are not binary, ``pos_label`` is not one of two labels, or ``None``
        with labels outside {0, 1} and {-1, 1}; on empty, missing or mismatched inputs.

    See Also
    --------
    true_positive_rate : ``1 - false_negative_rate`` where positives exist.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020
       (``fairlearn.metrics.false_negative_rate``).

    Examples
    --------
    >>> from fairest.metrics import false_negative_rate
    >>> false_negative_rate([1, 1, 1, 0], [1, 0, 0, 0])
    0.666...
    """
    return _confusion_rate("false_negative_rate", y_true, y_pred, sample_weight, pos_label)


def true_negative_rate(y_true, y_pred, sample_weight=None, pos_label=None) -> float:
    """Weighted fraction of the negative rows predicted negative (specificity).

    The same signature and value as :func:`fairlearn.metrics.true_negative_rate`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (at most two distinct labels, together with ``y_pred``).
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights; ``None`` weighs every row equally.
    pos_label : scalar, default=None
        The positive label; ``None`` needs labels coded {0, 1} or {-1, 1} and takes 1.

    Returns
    -------
    float
        ``sum(w * [y_true != pos] * [y_pred != pos]) / sum(w * [y_true != pos])``; 0
        without negative rows.

    Raises
    ------
    ValueError
        When the labels are not binary, ``pos_label`` is not one of two labels, or ``None``
        with labels outside {0, 1} and {-1, 1}; on empty, missing or mismatched inputs.

    See Also
    --------
    false_positive_rate : ``1 - true_negative_rate`` where negatives exist.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020
       (``fairlearn.metrics.true_negative_rate``).

    Examples
    --------
    >>> from fairest.metrics import true_negative_rate
    >>> true_negative_rate([-1, -1, 1], [-1, 1, 1])
    0.5
    """
    return _confusion_rate("true_negative_rate", y_true, y_pred, sample_weight, pos_label)


def mean_prediction(y_true, y_pred, sample_weight=None) -> float:
    """Weighted mean of the predictions (of probabilities: the mean predicted probability).

    The same signature and value as :func:`fairlearn.metrics.mean_prediction`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels; only their number is used (checked against ``y_pred``).
    y_pred : array-like of shape (n_samples,)
        Numeric predictions: labels, probabilities or scores, all finite.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights; ``None`` weighs every row equally.

    Returns
    -------
    float
        ``sum(w * y_pred) / sum(w)``; NaN (with a :class:`~fairest.utils.FairnessWarning`)
        when the weights sum to zero.

    Raises
    ------
    ValueError
        When ``y_pred`` is not numeric, empty or not finite, the lengths differ, or a
        weight is negative or not finite.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020
       (``fairlearn.metrics.mean_prediction``).

    Examples
    --------
    >>> from fairest.metrics import mean_prediction
    >>> mean_prediction([0, 1, 1], [0.2, 0.9, 0.7])
    0.6
    >>> mean_prediction([0, 1], [0.0, 1.0], sample_weight=[3.0, 1.0])
    0.25
    """
    y_pred = as_finite_vector(y_pred, "y_pred")
    check_same_length("y_pred", y_pred.shape[0], y_true=y_true)
    weights = _weights(sample_weight, y_pred.shape[0])
    return _evaluate("mean_prediction", y_pred, y_pred, weights)  # y_true unused


def count(y_true, y_pred) -> int:
    """Number of rows (of a group, in a :class:`~fairest.metrics.MetricFrame`).

    The same signature and value as :func:`fairlearn.metrics.count`: ``y_pred`` is only
    checked to have the length of ``y_true``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels; their number is the result.
    y_pred : array-like of shape (n_samples,)
        Predictions (ignored but for their length).

    Returns
    -------
    int
        ``n_samples``.

    Raises
    ------
    ValueError
        When ``y_true`` and ``y_pred`` have different lengths.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020
       (``fairlearn.metrics.count``).

    Examples
    --------
    >>> from fairest.metrics import count
    >>> count([0, 1, 1], [1, 1, 0])
    3
    """
    n_samples = len(y_true)
    check_same_length("y_true", n_samples, y_pred=y_pred)
    return n_samples
