"""Per-group report: counts, rates and losses in one pandas table, a view of
:class:`~fairest.metrics.MetricFrame` with fixed columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairest.metrics._checks import as_binary_labels, as_finite_vector, check_metric_inputs
from fairest.metrics._defaults import DEFAULT_THRESHOLD
from fairest.metrics._exact import pointwise_loss
from fairest.metrics._frame import RATE_METRICS, MetricFrame

__all__ = ["group_report"]

_CLASSIFICATION_COLUMNS = (
    "base_rate",
    "selection_rate",
    "true_positive_rate",
    "false_positive_rate",
    "accuracy",
)
_REGRESSION_COLUMNS = (
    "mean_target",
    "mean_prediction",
    "mean_squared_error",
    "mean_absolute_error",
)


def _is_binary(values: np.ndarray) -> bool:
    unique = set(np.unique(values))
    return unique <= {0.0, 1.0} or unique <= {-1.0, 1.0}


def _per_sample_loss(loss, y_true, scores):
    if callable(loss):
        return as_finite_vector(loss(y_true, scores), "loss(y_true, scores)")
    return pointwise_loss(loss, y_true, scores)


def _frame(columns, y_true, y_pred, sensitive_features, sample_weight) -> MetricFrame:
    return MetricFrame(
        metrics={name: RATE_METRICS[metric] for name, metric in columns.items()},
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=sensitive_features,
        sample_weight=sample_weight,
    )


def _report_name(name: str) -> str:
    """fairlearn's ``sensitive_feature_<j>`` of unnamed columns as the report's ``group``."""
    if name == "sensitive_feature_0" or not name.startswith("sensitive_feature_"):
        return "group" if name == "sensitive_feature_0" else name
    return "group_" + name.removeprefix("sensitive_feature_")


def group_report(
    y_true,
    y_pred=None,
    *,
    sensitive_features,
    sample_weight=None,
    scores=None,
    loss=None,
) -> pd.DataFrame:
    """Per-group table of counts, rates and losses.

    One row per group (index: the group labels, a MultiIndex for intersectional groups),
    with the columns

    * ``count`` (rows) and ``weight`` (total sample weight);
    * classification (targets and predictions coded {0, 1} or {-1, 1}): ``base_rate``
      (share of positives), ``selection_rate`` (share of predicted positives),
      ``true_positive_rate``, ``false_positive_rate`` (``nan`` for a group without
      positives / negatives) and ``accuracy``;
    * regression (targets that are not binary): ``mean_target``, ``mean_prediction``,
      ``mean_squared_error`` and ``mean_absolute_error``;
    * ``mean_loss`` when ``scores`` and ``loss`` are given.

    All means are weighted by ``sample_weight``. Two summaries are stored in
    ``report.attrs`` as plain dicts keyed by column: ``"overall"`` (the value on all rows)
    and ``"difference"`` (max minus min over the groups, ignoring ``nan``; not for the
    size columns). The ``selection_rate`` difference is fairlearn's demographic parity
    difference, the ``true_positive_rate`` one its equal opportunity difference
    (fairlearn counts an undefined rate as 0, the report shows ``nan``).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets.
    y_pred : array-like of shape (n_samples,), default=None
        Predictions (hard labels for classification). ``None`` derives them from
        ``scores``: ``1[scores >= 0]`` for binary targets, the scores otherwise.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    scores : array-like of shape (n_samples,), default=None
        Decision-function values (intercept included) or regression predictions, for the
        loss column.
    loss : {"logistic", "squared_hinge", "squared_error"} or callable, default=None
        Per-sample loss of ``(y_true, scores)``; a callable returns an array of shape
        (n_samples,). Needs ``scores``.

    Returns
    -------
    pandas.DataFrame
        One row per group, in the order of the sorted group labels.

    See Also
    --------
    MetricFrame : Any metrics per group, with bootstrap confidence intervals; this table
        is its view with fixed columns.

    References
    ----------
    .. [1] S. Bird et al. "Fairlearn: A toolkit for assessing and improving fairness in
       AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``MetricFrame``, whose
       ``by_group``, ``overall`` and ``difference()`` this table mirrors).
    """
    if y_pred is None and scores is None:
        raise ValueError("group_report needs y_pred, scores, or both.")
    if loss is not None and scores is None:
        raise ValueError("loss needs scores (decision-function values), not hard labels.")
    target = as_finite_vector(y_true, "y_true")
    score_values = None if scores is None else as_finite_vector(scores, "scores")
    if y_pred is None:
        binary_target = _is_binary(target)
        y_pred = (score_values >= DEFAULT_THRESHOLD) * 1.0 if binary_target else score_values
    inputs = check_metric_inputs(target, y_pred, sensitive_features, sample_weight)
    if score_values is not None and score_values.shape[0] != target.shape[0]:
        raise ValueError(
            f"scores has {score_values.shape[0]} entries but y_true has "
            f"{target.shape[0]}; they must have the same length."
        )
    classification = _is_binary(inputs.y_true)
    if classification and not _is_binary(inputs.y_pred):
        raise ValueError(
            "y_true holds binary labels, so y_pred must hold hard labels coded the same "
            "way (e.g. predict(X)); it has other values, which look like probabilities or "
            "scores. Pass decision-function values as scores= instead."
        )
    if classification:
        labels = as_binary_labels(inputs.y_true, "y_true")
        predicted = as_binary_labels(inputs.y_pred, "y_pred")
        columns = {name: name for name in _CLASSIFICATION_COLUMNS}
    else:
        labels, predicted = inputs.y_true, inputs.y_pred
        columns = {name: name for name in _REGRESSION_COLUMNS}
    frames = [_frame(columns, labels, predicted, sensitive_features, sample_weight)]
    if loss is not None:
        losses = _per_sample_loss(loss, inputs.y_true, score_values)
        frames.append(
            _frame(
                {"mean_loss": "mean_prediction"}, labels, losses, sensitive_features, sample_weight
            )
        )
    sizes = frames[0].group_sizes
    report = pd.concat([sizes, *(frame.by_group for frame in frames)], axis=1)
    report.index = frames[0].by_group.index.set_names(
        [_report_name(name) for name in frames[0].by_group.index.names]
    )
    report.attrs["overall"] = {
        "count": int(sizes["count"].sum()),
        "weight": float(sizes["weight"].sum()),
    } | {name: float(value) for frame in frames for name, value in frame.overall.items()}
    report.attrs["difference"] = {
        name: float(value) for frame in frames for name, value in frame.difference().items()
    }
    return report
