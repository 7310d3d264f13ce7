"""Evaluation behind :class:`~fairest.metrics.MetricFrame`: metrics with their per-row
arguments, the rows' cells (control level x group), values per cell and per control level
(one call per cell for any callable, segment sums for rate metrics), their bootstrap
replicates and per-cell confidence intervals."""

from __future__ import annotations

import functools
import inspect
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fairest.metrics import _base, _intervals
from fairest.metrics._bootstrap import (
    rate_values,
    replicate_chunks,
    replicate_segments,
)
from fairest.metrics._checks import (
    check_sample_weight,
    encode_sensitive_features,
)
from fairest.metrics._group_stats import group_totals
from fairest.metrics._rates import (
    CONFUSION_RATES,
    RATE_METRICS,
    RateMetric,
    _equal,
    _positives,
    fairlearn_rate,
    is_binary_coded,
)
from fairest.utils._validation import encode_groups


# ------------------------------------------------------------------- known rates
@functools.cache
def _known_rate_metrics() -> dict:
    """Third-party callables that are weighted rates, with their value when undefined
    (scikit-learn's ``zero_division`` default and fairlearn's convention: 0), and
    fairest's own base metrics (:mod:`fairest.metrics._base`)."""
    from sklearn import metrics as skm

    known = {
        skm.accuracy_score: RateMetric("accuracy", _equal, binary=False),
        skm.recall_score: fairlearn_rate("true_positive_rate"),
        skm.precision_score: RateMetric(
            "precision", lambda y, p: _positives(y), lambda y, p: _positives(p), 0.0
        ),
        skm.mean_squared_error: RATE_METRICS["mean_squared_error"],
        skm.mean_absolute_error: RATE_METRICS["mean_absolute_error"],
    }
    names = ("selection_rate", *CONFUSION_RATES, "mean_prediction")
    known.update({getattr(_base, name): fairlearn_rate(name) for name in names})
    try:
        from fairlearn import metrics as flm
    except ImportError:  # fairlearn is optional
        return known
    known.update({getattr(flm, name): fairlearn_rate(name) for name in names})
    return known


def known_rate_form(metric, y_true, y_pred) -> RateMetric | None:
    """The rate form of ``metric`` when it has one for these labels, else None."""
    rate = metric if isinstance(metric, RateMetric) else _known_rate_metrics().get(metric)
    if rate is None:
        return None
    numeric = y_true.dtype.kind in "biuf" and y_pred.dtype.kind in "biuf"
    if not numeric or (rate.binary and not (is_binary_coded(y_true) and is_binary_coded(y_pred))):
        return None
    return rate


# --------------------------------------------------------------------------- inputs
def _metric_name(metric, position: int) -> str:
    return (
        getattr(metric, "name", None) or getattr(metric, "__name__", None) or f"metric_{position}"
    )


def _as_metric_dict(metrics) -> dict[str, Callable]:
    """``metrics`` (a callable, a name of :data:`RATE_METRICS` or of a comparison of one
    rate in the metric catalogue, or a dict / list of them) as an ordered dict name ->
    callable."""
    if callable(metrics) or isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        items = [(str(name), metric) for name, metric in metrics.items()]
    else:
        try:
            listed = list(metrics)
        except TypeError:
            raise TypeError(
                "metrics must be a callable, a metric name, or a dict or list of them; "
                f"got {type(metrics).__name__}."
            ) from None
        items = [(m if isinstance(m, str) else _metric_name(m, j), m) for j, m in enumerate(listed)]
    if not items:
        raise ValueError("metrics is empty; pass at least one metric.")
    result = {}
    for name, metric in items:
        if isinstance(metric, str):
            metric = _named_rate(metric)
        if not callable(metric):
            raise TypeError(f"metric {name!r} is not callable; got {type(metric).__name__}.")
        if name in result:
            raise ValueError(f"two metrics are named {name!r}; pass a dict to name them.")
        result[name] = metric
    return result


def _named_rate(name: str) -> RateMetric:
    """The rate a frame evaluates per group for ``name``: a built-in rate, or the one
    rate a catalogue metric compares (its ``difference()`` / ``ratio()`` is then the
    metric)."""
    if name in RATE_METRICS:
        return RATE_METRICS[name]
    from fairest.metrics._catalogue import catalogue

    records = catalogue()
    record = records.get(name)
    if record is not None and len(record.rates) == 1 and record.scale == 1.0:
        return record.rates[0]
    if record is not None and record.rates:
        raise ValueError(
            f"{name!r} compares several rates {record.rate_labels}; a frame column holds "
            f"one rate per group: pass {[rate.name for rate in record.rates]} as metrics."
        )
    single = [key for key, value in records.items() if len(value.rates) == 1 and value.scale == 1]
    raise ValueError(
        f"a metric name must be one of {(*RATE_METRICS, *single)}; got {name!r}"
        + (" (a metric of the whole data, not of group rates)." if record else ".")
    )


def _accepts_sample_weight(metric) -> bool:
    if isinstance(metric, RateMetric):
        return True
    try:
        parameters = inspect.signature(metric).parameters
    except (TypeError, ValueError):
        return True  # builtins without a signature: let the call decide
    return "sample_weight" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def _feature_names(features) -> list[str] | None:
    """Column names of sensitive or control features, where they have names."""
    if isinstance(features, pd.DataFrame):
        return [str(c) for c in features.columns]
    if isinstance(features, Mapping):
        return [str(key) for key in features]
    if getattr(features, "name", None) is not None:
        return [str(features.name)]
    if hasattr(features, "columns"):  # polars DataFrame
        return [str(c) for c in features.columns]
    return None


def group_index(groups: np.ndarray, sensitive_features, default: str = "group") -> pd.Index:
    """Index of group labels, named after the sensitive feature(s) when they have names
    (a MultiIndex for intersectional groups); unnamed columns are ``default`` (one column)
    or numbered (fairlearn's ``sensitive_feature_0``, ... for any other ``default``)."""
    names = _feature_names(sensitive_features)
    if len(groups) and isinstance(groups[0], tuple):
        if names is None or len(names) != len(groups[0]):
            names = [f"{default}_{j}" for j in range(len(groups[0]))]
        return pd.MultiIndex.from_tuples(list(groups), names=names)
    if names and len(names) == 1:
        return pd.Index(list(groups), name=names[0])
    return pd.Index(list(groups), name=default if default == "group" else f"{default}_0")


def _cell_index(control: pd.Index | None, groups: pd.Index, cells: np.ndarray) -> pd.Index:
    """Index of the observed (control level, group) cells ``cells`` (flat codes)."""
    if control is None:
        return groups[cells]
    num_groups = len(groups)
    tuples = []
    for cell in cells:
        level, group = control[cell // num_groups], groups[cell % num_groups]
        level = level if isinstance(level, tuple) else (level,)
        tuples.append(level + (group if isinstance(group, tuple) else (group,)))
    return pd.MultiIndex.from_tuples(tuples, names=[*control.names, *groups.names])


def _confidence_level(ci) -> float:
    if isinstance(ci, bool) or not isinstance(ci, numbers.Real) or not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be a confidence level strictly between 0 and 1; got {ci!r}.")
    return float(ci)


def _check_quantiles(ci_quantiles) -> list[float]:
    try:
        quantiles = [float(q) for q in ci_quantiles]
    except TypeError:
        raise TypeError(
            f"ci_quantiles must be a list of numbers in [0, 1]; got {ci_quantiles!r}."
        ) from None
    if not quantiles or any(not 0.0 <= q <= 1.0 for q in quantiles):
        raise ValueError(f"ci_quantiles must be numbers in [0, 1]; got {ci_quantiles!r}.")
    return quantiles


# --------------------------------------------------------------------------- metrics
@dataclass
class _Metric:
    """One metric of a frame with its per-row arguments."""

    function: Callable
    weights: np.ndarray  # (n,) resampled with the rows; ones when unweighted
    weighted: bool  # pass ``sample_weight=weights``
    params: dict = field(default_factory=dict)  # other per-row arguments
    rate: RateMetric | None = None  # its rate form (fast path), when it has one

    def call(self, y_true, y_pred, rows):
        """The metric on ``rows`` (an index array or a slice)."""
        kwargs = {key: value[rows] for key, value in self.params.items()}
        if self.weighted:
            kwargs["sample_weight"] = self.weights[rows]
        return self.function(y_true[rows], y_pred[rows], **kwargs)


def _sample_params(sample_params, names, single, n) -> dict[str, dict]:
    """``sample_params`` as ``{metric name: {parameter: (n,) array}}``."""
    if sample_params is None:
        return {name: {} for name in names}
    if not isinstance(sample_params, Mapping):
        raise TypeError(
            f"sample_params must be a dict; got {type(sample_params).__name__}. With one "
            "metric callable it maps parameter names to arrays; with a dict of metrics it maps "
            "metric names to such dicts."
        )
    per_metric = {names[0]: sample_params} if single else dict(sample_params)
    unknown = sorted(set(per_metric) - set(names))
    if unknown:
        raise ValueError(f"sample_params names unknown metric(s) {unknown}; metrics: {names}.")
    result = {}
    for name in names:
        params = per_metric.get(name) or {}
        if not isinstance(params, Mapping):
            raise TypeError(f"sample_params[{name!r}] must be a dict of parameter -> array.")
        result[name] = {}
        for key, value in params.items():
            array = np.asarray(value)
            if array.shape[:1] != (n,):
                raise ValueError(
                    f"sample_params for metric {name!r}: parameter {key!r} has shape "
                    f"{array.shape}; it needs one value per row ({n})."
                )
            result[name][str(key)] = array
    return result


def _rate_record(metric) -> RateMetric | None:
    if isinstance(metric, RateMetric):
        return metric
    try:
        return _known_rate_metrics().get(metric)
    except TypeError:  # unhashable callables
        return None


def _refuse_scores_as_labels(name, metric, y_pred) -> None:
    """A metric counting predictions equal to the positive label, given scores in [0, 1]
    (probabilities), would report 0 for every group: refuse a built-in name, warn for a
    third-party callable (whose value is kept, as fairlearn computes it)."""
    record = _rate_record(metric)
    if record is None or not record.binary or y_pred.dtype.kind != "f":
        return
    if not np.any((y_pred != np.round(y_pred)) & np.isfinite(y_pred)):
        return
    message = (
        f"metric {name!r} counts hard predictions, but y_pred holds non-integer values "
        "(probabilities or scores?): no prediction equals the positive label. Threshold the "
        "scores first (e.g. y_pred >= 0.5) or use 'mean_prediction' for the mean score."
    )
    if isinstance(metric, RateMetric):
        raise ValueError(message)
    warnings.warn(message, UserWarning, stacklevel=4)


def _scalar(value):
    """``float(value)`` for a scalar, else the value itself (non-scalar metrics)."""
    if np.ndim(value) == 0:
        try:
            return float(value)
        except (TypeError, ValueError):
            return value
    return value


def _numeric(values: np.ndarray) -> np.ndarray:
    """Float view of an object array: NaN where a value is not a number."""
    return np.array(
        [v if isinstance(v, float) else np.nan for v in values.ravel()], dtype=np.float64
    ).reshape(values.shape)


# --------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class _Layout:
    """Rows' cells (control level x group, flat ``level * G + group``) and levels."""

    cells: np.ndarray  # (n,) int
    levels: np.ndarray  # (n,) int control level of every row
    num_groups: int
    num_levels: int

    @property
    def num_cells(self) -> int:
        return self.num_groups * self.num_levels


def _general_values(metric: _Metric, y_true, y_pred, layout: _Layout, rows=None):
    """``(cells (K,), levels (C,))`` object arrays of a callable on ``rows`` (all rows when
    None); NaN for an empty cell."""
    rows = np.arange(y_true.shape[0]) if rows is None else rows
    by_cell = np.full(layout.num_cells, np.nan, dtype=object)
    by_level = np.full(layout.num_levels, np.nan, dtype=object)
    for codes, out in ((layout.cells[rows], by_cell), (layout.levels[rows], by_level)):
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(out.size + 1))
        for k in range(out.size):  # one metric call per cell: any callable
            selected = rows[order[bounds[k] : bounds[k + 1]]]
            if selected.size:
                out[k] = _scalar(metric.call(y_true, y_pred, selected))
    return by_cell, by_level


def _rate_values(metric: _Metric, y_true, y_pred, layout: _Layout):
    """``(cells (K,), levels (C,))`` float arrays of a rate metric on all rows."""
    numerator, denominator = metric.rate.terms(y_true, y_pred, metric.weights)
    values = []
    for codes, size in ((layout.cells, layout.num_cells), (layout.levels, layout.num_levels)):
        present = np.bincount(codes, minlength=size) > 0
        values.append(
            rate_values(
                group_totals(codes, numerator, size),
                group_totals(codes, denominator, size),
                present,
                metric.rate.undefined,
            )
        )
    return values[0], values[1]


def _rate_replicates(metric: _Metric, y_true, y_pred, indices, segments):
    """``(cells (B, K), levels (B, C))`` of a rate metric for a chunk of replicates."""
    numerator, denominator = metric.rate.terms(y_true, y_pred, metric.weights)
    out = []
    for flat, present in segments:

        def segment_sum(terms, flat=flat, present=present):
            return np.bincount(
                flat, weights=terms[indices].ravel(), minlength=present.size
            ).reshape(present.shape)

        out.append(
            rate_values(
                segment_sum(numerator), segment_sum(denominator), present, metric.rate.undefined
            )
        )
    return out[0], out[1]


def _rate_box(metric: _Metric, y_true, y_pred, codes, size, value, level):
    """Per-segment confidence intervals of a rate metric: Clopper-Pearson for a
    proportion of hits, Student-t for a mean; Kish effective sizes with weights."""
    rate = metric.rate
    y_t = np.asarray(y_true, dtype=np.float64)
    y_p = np.asarray(y_pred, dtype=np.float64)
    eligible = rate.eligible(y_t, y_p)
    base = metric.weights if eligible is None else metric.weights * eligible
    total = group_totals(codes, base, size)
    n_eff = _intervals.effective_size(total, group_totals(codes, base**2, size))
    if rate.binary:
        lower, upper = _intervals.proportion_interval(value, n_eff, level)
    else:
        hits = rate.hits(y_t, y_p)
        centred = hits - np.nan_to_num(value)[codes]
        with np.errstate(invalid="ignore", divide="ignore"):
            variance = group_totals(codes, base * centred**2, size) / total
        lower, upper = _intervals.mean_interval(value, variance, n_eff, level)
    return lower, upper, n_eff


def _dtype(values):
    return None if any(not isinstance(v, float) for v in values) else np.float64


def _renamed_error(error: ValueError, name: str) -> ValueError:
    return ValueError(str(error).replace("sensitive_features", name))


def _encode_layout(sensitive_features, control_features, n):
    """The rows' cells and the indexes of groups and control levels."""
    group_codes, groups = encode_sensitive_features(sensitive_features, n)
    groups_index = group_index(groups, sensitive_features, "sensitive_feature")
    if control_features is None:
        levels, control_index = np.zeros(n, dtype=np.int64), None
        num_levels = 1
    else:
        try:
            levels, labels = encode_groups(control_features, n_samples=n, reference="y_true")
        except ValueError as error:
            raise _renamed_error(error, "control_features") from None
        control_index = group_index(labels, control_features, "control_feature")
        num_levels = len(labels)
    num_groups = len(groups)
    layout = _Layout(
        cells=levels.astype(np.int64) * num_groups + group_codes,
        levels=levels.astype(np.int64),
        num_groups=num_groups,
        num_levels=num_levels,
    )
    return layout, groups_index, control_index


def _build_metrics(functions, y_true, y_pred, sample_weight, sample_params, single, n):
    """Every metric with its weights, other per-row arguments and rate form."""
    weights = check_sample_weight(sample_weight, n)
    weighted = sample_weight is not None
    params = _sample_params(sample_params, list(functions), single, n)
    metrics = {}
    for name, function in functions.items():
        own = dict(params[name])
        own_weight = own.pop("sample_weight", None)
        if own_weight is not None and weighted:
            raise ValueError(
                f"metric {name!r} gets sample weights twice (sample_weight and "
                "sample_params); pass them once."
            )
        metric_weighted = weighted or own_weight is not None
        if metric_weighted and not _accepts_sample_weight(function):
            raise TypeError(
                f"sample_weight is given but metric(s) {[name]} take no sample_weight argument."
            )
        _refuse_scores_as_labels(name, function, y_pred)
        if isinstance(function, RateMetric):
            rate = function
        else:
            rate = None if own else known_rate_form(function, y_true, y_pred)
        metric_weights = weights if own_weight is None else check_sample_weight(own_weight, n)
        metrics[name] = _Metric(function, metric_weights, metric_weighted, own, rate)
    return metrics


def _bootstrap(metrics, y_true, y_pred, layout, seeds, stratify):
    """Replicates of every metric: cells (B, K, M) and levels (B, C, M), NaN where a
    replicate lacks a cell or a value is not a number."""
    cells = np.empty((len(seeds), layout.num_cells, len(metrics)))
    levels = np.empty((len(seeds), layout.num_levels, len(metrics)))
    first = 0
    for indices in replicate_chunks(seeds, layout.cells, layout.num_cells, stratify):
        block = slice(first, first + indices.shape[0])
        segments = None
        for j, metric in enumerate(metrics.values()):
            if metric.rate is not None:
                if segments is None:  # shared by the rate metrics of this chunk
                    segments = (
                        replicate_segments(layout.cells, layout.num_cells, indices),
                        replicate_segments(layout.levels, layout.num_levels, indices),
                    )
                cells[block, :, j], levels[block, :, j] = _rate_replicates(
                    metric, y_true, y_pred, indices, segments
                )
                continue
            for b, rows in enumerate(indices, start=first):
                by_cell, by_level = _general_values(metric, y_true, y_pred, layout, rows)
                cells[b, :, j], levels[b, :, j] = _numeric(by_cell), _numeric(by_level)
        first = block.stop
    return cells, levels


def _percentile_box(replicates, level):
    """Per-segment percentile intervals of replicates (B, S) at ``level`` (S,)."""
    lower = np.full(replicates.shape[1], np.nan)
    upper = np.full(replicates.shape[1], np.nan)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN", RuntimeWarning)
        for value in np.unique(level):
            columns = level == value
            tail = (1.0 - value) / 2.0
            low, high = np.nanquantile(replicates[:, columns], [tail, 1.0 - tail], axis=0)
            lower[columns], upper[columns] = low, high
    return lower, upper
