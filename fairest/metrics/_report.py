"""Per-group report: counts, rates and losses in one pandas table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairest.metrics._checks import as_binary_labels, as_finite_vector, check_metric_inputs
from fairest.metrics._defaults import DEFAULT_THRESHOLD
from fairest.metrics._exact import pointwise_loss
from fairest.metrics._group_stats import group_rates, group_totals

__all__ = ["group_report"]

_SIZE_COLUMNS = ("count", "weight")


def _is_binary(values: np.ndarray) -> bool:
    unique = set(np.unique(values))
    return unique <= {0.0, 1.0} or unique <= {-1.0, 1.0}


def _mean_column(inputs, values, eligible=None):
    """Weighted mean of ``values`` over eligible rows: per group (nan where no eligible
    row) and overall."""
    rates = group_rates(inputs.codes, inputs.num_groups, values, inputs.weights, eligible)
    column = np.where(rates.defined, rates.rates, np.nan)
    overall = rates.overall if rates.denominators.sum() > 0 else np.nan
    return column, overall


def _classification_columns(inputs):
    labels = as_binary_labels(inputs.y_true, "y_true")
    predicted = as_binary_labels(inputs.y_pred, "y_pred")
    return {
        "base_rate": _mean_column(inputs, labels),
        "selection_rate": _mean_column(inputs, predicted),
        "true_positive_rate": _mean_column(inputs, predicted, labels),
        "false_positive_rate": _mean_column(inputs, predicted, 1.0 - labels),
        "accuracy": _mean_column(inputs, (labels == predicted).astype(np.float64)),
    }


def _regression_columns(inputs):
    residual = inputs.y_pred - inputs.y_true
    return {
        "mean_target": _mean_column(inputs, inputs.y_true),
        "mean_prediction": _mean_column(inputs, inputs.y_pred),
        "mean_squared_error": _mean_column(inputs, residual**2),
        "mean_absolute_error": _mean_column(inputs, np.abs(residual)),
    }


def _per_sample_loss(loss, y_true, scores):
    if callable(loss):
        return as_finite_vector(loss(y_true, scores), "loss(y_true, scores)")
    return pointwise_loss(loss, y_true, scores)


def _group_index(groups, sensitive_features) -> pd.Index:
    """Index of group labels, named after the sensitive feature(s) when they have names."""
    if isinstance(sensitive_features, pd.DataFrame):
        names = [str(c) for c in sensitive_features.columns]
    elif getattr(sensitive_features, "name", None) is not None:
        names = [str(sensitive_features.name)]
    elif hasattr(sensitive_features, "columns"):  # polars DataFrame
        names = [str(c) for c in sensitive_features.columns]
    else:
        names = None
    if len(groups) and isinstance(groups[0], tuple):
        if names is None or len(names) != len(groups[0]):
            names = [f"group_{j}" for j in range(len(groups[0]))]
        return pd.MultiIndex.from_tuples(list(groups), names=names)
    name = names[0] if names and len(names) == 1 else "group"
    return pd.Index(list(groups), name=name)


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
    columns = _classification_columns(inputs) if classification else _regression_columns(inputs)
    if loss is not None:
        columns["mean_loss"] = _mean_column(
            inputs, _per_sample_loss(loss, inputs.y_true, score_values)
        )
    counts = np.bincount(inputs.codes, minlength=inputs.num_groups)
    weights = group_totals(inputs.codes, inputs.weights, inputs.num_groups)
    report = pd.DataFrame(
        {"count": counts, "weight": weights} | {name: col for name, (col, _) in columns.items()},
        index=_group_index(inputs.groups, sensitive_features),
    )
    report.attrs["overall"] = {"count": int(counts.sum()), "weight": float(weights.sum())} | {
        name: float(overall) for name, (_, overall) in columns.items()
    }
    report.attrs["difference"] = {
        name: float(report[name].max() - report[name].min())
        for name in report.columns
        if name not in _SIZE_COLUMNS
    }
    return report
