"""Weighted-rate metrics: one record per rate (hits over eligible rows).

A :class:`RateMetric` is a metric ``sum w e h / sum w e`` of per-row hits ``h`` over
eligible rows ``e``. Being a ratio of sums, it is evaluated for many groups and bootstrap
replicates at once from segment sums, and its per-group numerators and denominators are
what the frame's covering intervals are built from. :data:`RATE_METRICS` holds the
built-in records by name (the frame maps scikit-learn's and fairlearn's rate callables, and
fairest's own, to their record: :func:`fairest.metrics._frame_eval.known_rate_form`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONFUSION_RATES",
    "RATE_METRICS",
    "RateMetric",
    "fairlearn_rate",
    "is_binary_coded",
]


def _all_rows(y_true, y_pred):
    return None


def _positives(values):
    return (values == 1).astype(np.float64)


@dataclass(frozen=True)
class RateMetric:
    """A weighted rate: ``sum w e h / sum w e`` over the rows, for per-row ``h`` (hits)
    and ``e`` (eligible rows, all rows when ``eligible`` returns ``None``).

    Calling it as ``metric(y_true, y_pred, sample_weight=None)`` returns the rate on all
    rows (``undefined`` when no row is eligible); the frame also evaluates it for many
    groups and bootstrap replicates at once through segment sums.
    """

    name: str
    hits: Callable[[np.ndarray, np.ndarray], np.ndarray]
    eligible: Callable[[np.ndarray, np.ndarray], np.ndarray | None] = _all_rows
    undefined: float = np.nan
    binary: bool = True  # needs labels coded {0, 1} or {-1, 1}
    label: str = ""  # short name in messages and tables (``"tpr"``); ``name`` when empty
    condition: str = "rows"  # the eligible rows, in words (for messages)
    complement: str | None = None  # a rate equal to 1 - this one on the same rows

    def terms(self, y_true, y_pred, weights):
        """Per-row numerator and denominator terms ``(w e h, w e)``."""
        y_true = np.asarray(y_true, dtype=np.float64)
        y_pred = np.asarray(y_pred, dtype=np.float64)
        eligible = self.eligible(y_true, y_pred)
        denominator = weights if eligible is None else weights * eligible
        return denominator * self.hits(y_true, y_pred), denominator

    def __call__(self, y_true, y_pred, sample_weight=None) -> float:
        weights = np.ones(len(y_true)) if sample_weight is None else np.asarray(sample_weight)
        numerator, denominator = self.terms(y_true, y_pred, weights)
        total = denominator.sum()
        return float(numerator.sum() / total) if total > 0 else self.undefined


def _equal(y_true, y_pred):
    return (y_true == y_pred).astype(np.float64)


RATE_METRICS: dict[str, RateMetric] = {
    metric.name: metric
    for metric in (
        RateMetric("base_rate", lambda y, p: _positives(y)),
        RateMetric("selection_rate", lambda y, p: _positives(p), label="selection"),
        RateMetric(
            "true_positive_rate",
            lambda y, p: _positives(p),
            lambda y, p: _positives(y),
            label="tpr",
            condition="rows with y = 1",
        ),
        RateMetric(
            "false_positive_rate",
            lambda y, p: _positives(p),
            lambda y, p: 1.0 - _positives(y),
            label="fpr",
            condition="rows with y = 0",
        ),
        RateMetric(
            "false_negative_rate",
            lambda y, p: 1.0 - _positives(p),
            lambda y, p: _positives(y),
            label="fnr",
            condition="rows with y = 1",
        ),
        RateMetric(
            "true_negative_rate",
            lambda y, p: 1.0 - _positives(p),
            lambda y, p: 1.0 - _positives(y),
            label="tnr",
            condition="rows with y = 0",
        ),
        RateMetric("accuracy", _equal),
        RateMetric(
            "zero_one_loss", lambda y, p: 1.0 - _equal(y, p), label="error", complement="accuracy"
        ),
        RateMetric("mean_target", lambda y, p: y, binary=False),
        RateMetric("mean_prediction", lambda y, p: p, binary=False),
        RateMetric("mean_squared_error", lambda y, p: (p - y) ** 2, binary=False),
        RateMetric("mean_absolute_error", lambda y, p: np.abs(p - y), binary=False),
    )
}
"""Built-in metrics by name (``undefined`` = NaN for a group without eligible rows)."""


# the confusion-matrix rates, whose value without eligible rows is 0 in scikit-learn's
# ``confusion_matrix(normalize="true")`` and so in fairlearn's and fairest's functions
CONFUSION_RATES = (
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "true_negative_rate",
)


def fairlearn_rate(name: str) -> RateMetric:
    """The record of fairlearn's function ``name`` (and of fairest's of that name): the
    built-in rate, with 0 where no row is eligible for the confusion-matrix rates; the
    selection rate and the mean prediction have all rows eligible, and only a zero total
    weight leaves them undefined, NaN as in fairlearn."""
    built_in = RATE_METRICS[name]
    if name in CONFUSION_RATES:
        return dataclasses.replace(built_in, undefined=0.0)
    return built_in


def is_binary_coded(values: np.ndarray) -> bool:
    if values.dtype.kind not in "biuf":
        return False
    unique = set(np.unique(values).tolist())
    return unique <= {0, 1} or unique <= {-1, 1}
