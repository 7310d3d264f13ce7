"""A metric frame: any metrics per group, overall, their gaps, and confidence intervals.

:class:`MetricFrame` evaluates metric callables ``metric(y_true, y_pred, **params)`` on
every group of the sensitive features (within every level of the control features) and
on all rows, as fairlearn's ``MetricFrame`` does argument for argument and return type for
return type, and derives differences and ratios between groups and to the overall value.

Intervals come in two kinds:

* ``ci_quantiles`` (fairlearn's): quantiles of the bootstrap distribution of each
  quantity, the same numbers as fairlearn for the same ``random_state``. They describe the
  estimate's spread; a gap's quantiles do not cover exact parity (the estimated gap is
  biased upwards).
* ``ci`` (fairest's): confidence intervals with stated coverage, built from per-group
  intervals (:mod:`fairest.metrics._intervals`): Clopper-Pearson for rates, Student-t for
  means, per-group bootstrap percentiles for any other metric; a gap's interval holds
  with probability at least ``ci``, at exact parity and with small or many groups.

Rate metrics (weighted rates or means of a per-row quantity, :mod:`fairest.metrics._rates`)
are evaluated for all groups and bootstrap replicates at once from segment sums; any other
callable is called once per group (and replicate). Both give the same numbers.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd

from fairest.metrics import _intervals
from fairest.metrics._bootstrap import replicate_seeds
from fairest.metrics._checks import (
    check_labels,
    check_option,
    check_same_length,
    check_sample_weight,
)
from fairest.metrics._frame_eval import (
    _as_metric_dict,
    _bootstrap,
    _build_metrics,
    _cell_index,
    _check_quantiles,
    _confidence_level,
    _dtype,
    _encode_layout,
    _general_values,
    _numeric,
    _percentile_box,
    _rate_box,
    _rate_values,
)
from fairest.metrics._group_stats import group_totals
from fairest.metrics._intervals import group_extreme
from fairest.metrics._rates import RATE_METRICS, RateMetric, is_binary_coded

__all__ = ["MetricFrame", "RATE_METRICS", "RateMetric", "certified_difference"]

_COMPARE_METHODS = ("between_groups", "to_overall")
_ERRORS = ("raise", "coerce")
_NON_SCALAR = (
    "Metric frame contains non-scalar cells. Please remove non-scalar columns from your "
    "metric frame or use parameter errors='coerce'."
)


# --------------------------------------------------------------------------- aggregates
def _difference(by_group: np.ndarray, overall: np.ndarray, method: str) -> np.ndarray:
    """Over the group axis (-2): max - min, or max |group - overall| (NaN skipped)."""
    if method == "between_groups":
        return group_extreme(np.max, by_group) - group_extreme(np.min, by_group)
    return group_extreme(np.max, np.abs(by_group - overall[..., None, :]))


def _ratio(by_group: np.ndarray, overall: np.ndarray, method: str) -> np.ndarray:
    """Over the group axis (-2): min / max, or the smallest group/overall ratio taken
    below 1 (fairlearn's ``ratio``; NaN skipped)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "between_groups":
            return group_extreme(np.min, by_group) / group_extreme(np.max, by_group)
        ratios = by_group / overall[..., None, :]
        ratios = np.where(ratios > 1, 1.0 / ratios, ratios)
    return group_extreme(np.min, ratios)


def _statistic(kind, cells, levels, method):
    """``kind`` of a (..., C, G, M) grid of group values with overall values (..., C, M)."""
    if kind == "group_min":
        return group_extreme(np.min, cells)
    if kind == "group_max":
        return group_extreme(np.max, cells)
    if kind == "difference":
        return _difference(cells, levels, method)
    return _ratio(cells, levels, method)


# --------------------------------------------------------------------------- the frame
class MetricFrame:
    """Metrics per group and overall, their gaps, and confidence intervals.

    Every metric is evaluated on the rows of each group of ``sensitive_features`` (the
    intersections of several columns), within every level of ``control_features``, and on
    all rows (of each level). ``difference`` and ``ratio`` summarise the spread between
    groups (max - min, min / max) or to the overall value. Arguments, attributes and return
    types are fairlearn's; fairest adds ``sample_weight``, ``ci`` intervals with stated
    coverage, ``stratify``, ``group_sizes`` and certified differences.

    Parameters
    ----------
    metrics : callable, str, or dict or list of them
        ``metric(y_true, y_pred)`` returning a number or any object (scikit-learn's
        metrics, fairlearn's, fairest's, any function; a non-scalar such as a confusion
        matrix is kept per group), or a name of a built-in rate: ``"accuracy"``,
        ``"selection_rate"``, ``"base_rate"``, ``"true_positive_rate"``,
        ``"false_positive_rate"``, ``"false_negative_rate"``, ``"true_negative_rate"``,
        ``"mean_target"``, ``"mean_prediction"``,
        ``"mean_squared_error"``, ``"mean_absolute_error"`` (NaN for a group without
        eligible rows). A single callable or name gives scalars and Series (fairlearn's
        convention); a dict or list gives Series and DataFrames, one column per metric.
    y_true : array-like of shape (n_samples,)
        Targets.
    y_pred : array-like of shape (n_samples,)
        Predictions (or scores, for metrics of scores).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k), or dict
        Group membership; ``k`` columns (a DataFrame, a 2-D array or a dict of columns)
        define intersectional groups.
    control_features : array-like or dict, default=None
        Strata within which the groups are compared (fairlearn's control features):
        ``overall`` and every aggregate get one value per control level.
    sample_params : dict, default=None
        Per-row arguments of the metrics, split with the rows: ``{parameter: array}`` for
        a single metric, ``{metric name: {parameter: array}}`` for a dict of metrics.
    n_boot : int, default=None
        Number of bootstrap replicates; ``None`` computes none. Intervals of rate metrics
        need none; other metrics' intervals do.
    ci_quantiles : list of float, default=None
        Quantiles of fairlearn's intervals: with ``n_boot``, the ``*_ci`` members return, for every
        quantile, that quantile of the bootstrap distribution (the same numbers as
        fairlearn for the same ``random_state``). These describe spread and do not cover
        a gap at exact parity; leave ``None`` for fairest's covering intervals.
    random_state : int, numpy.random.RandomState or None, default=None
        Seed of the replicates, with fairlearn's semantics.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights for every metric (each must accept ``sample_weight=``).
    ci : float, default=0.95
        Level of fairest's intervals (used when ``ci_quantiles`` is None).
    ci_method : {"auto", "percentile"}, default="auto"
        How the intervals are built. ``"auto"``: intervals with coverage at least ``ci`` built from per-group
        intervals (Clopper-Pearson for rates, Student-t for means, per-group bootstrap
        percentiles otherwise), see Notes. ``"percentile"``: percentile bootstrap
        intervals of each quantity (needs ``n_boot``; a gap's interval undercovers near
        parity).
    stratify : bool, default=False
        Resample within every group, keeping group sizes fixed, instead of resampling
        all rows as fairlearn does.

    Attributes
    ----------
    overall : float, object, pandas.Series or pandas.DataFrame
        The metrics on all rows (per control level with ``control_features``).
    by_group : pandas.Series or pandas.DataFrame
        One row per group (index: the group labels, sorted; a MultiIndex for
        intersectional groups or with control features).
    group_sizes : pandas.DataFrame
        ``count`` (rows) and ``weight`` (total sample weight) per row of ``by_group``.
    control_levels : list of str or None
        Names of the control features.
    sensitive_levels : list of str
        Names of the sensitive features.
    n_boot, ci_quantiles, ci, ci_method
        As given.

    See Also
    --------
    group_report : A fixed table of rates per group, a view of this frame.

    Notes
    -----
    fairest's intervals (``ci``): a per-group value's interval and the overall value's
    interval hold each with probability at least ``ci`` (exact Clopper-Pearson for rates
    of hits; Student-t for means; bootstrap percentiles for other metrics, approximate).
    An aggregate's interval (difference, ratio, group min and max) is the range of the
    aggregate over the box of the groups' intervals taken at the simultaneous level
    ``ci ** (1 / G)`` (Sidak; with the overall value, Bonferroni over ``G + 1``), so it
    holds with probability at least ``ci`` at exact parity, with small and with many groups.
    Weighted rows count through Kish's effective sample size.

    References
    ----------
    .. [1] S. Bird et al. "Fairlearn: A toolkit for assessing and improving fairness in
       AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``MetricFrame``).
    .. [2] C. J. Clopper and E. S. Pearson. "The use of confidence or fiducial limits
       illustrated in the case of the binomial". Biometrika 26(4), 1934.
    .. [3] Z. Sidak. "Rectangular confidence regions for the means of multivariate normal
       distributions". JASA 62(318), 1967.

    Examples
    --------
    >>> from sklearn.metrics import accuracy_score
    >>> from fairest.metrics import MetricFrame
    >>> frame = MetricFrame(
    ...     metrics={"accuracy": accuracy_score, "selection": "selection_rate"},
    ...     y_true=[1, 0, 1, 1, 0, 0],
    ...     y_pred=[1, 0, 0, 1, 1, 0],
    ...     sensitive_features=["a", "a", "a", "b", "b", "b"],
    ... )
    >>> frame.by_group
                         accuracy  selection
    sensitive_feature_0
    a                    0.666667   0.333333
    b                    0.666667   0.666667
    >>> float(frame.difference()["selection"])
    0.3333333333333333
    >>> gap = MetricFrame(
    ...     metrics="selection_rate", y_true=[1, 0, 1, 1], y_pred=[1, 0, 1, 0],
    ...     sensitive_features=["a", "a", "b", "b"],
    ... ).difference()
    >>> float(gap)
    0.0
    """

    def __init__(
        self,
        *,
        metrics,
        y_true,
        y_pred,
        sensitive_features,
        control_features=None,
        sample_params=None,
        n_boot=None,
        ci_quantiles=None,
        random_state=None,
        sample_weight=None,
        ci=0.95,
        ci_method="auto",
        stratify=False,
    ):
        self._single = callable(metrics) or isinstance(metrics, str)
        functions = _as_metric_dict(metrics)
        y_true = check_labels(y_true, "y_true")
        y_pred = np.asarray(y_pred)
        if y_pred.ndim == 2 and y_pred.shape[1] == 1:
            y_pred = y_pred[:, 0]
        n = y_true.shape[0]
        check_same_length("y_true", n, y_pred=y_pred)
        self._y = (y_true, y_pred)
        self._layout, self._group_index, self._control_index = _encode_layout(
            sensitive_features, control_features, n
        )
        self.ci = _confidence_level(ci)
        check_option(ci_method, "ci_method", ("auto", "percentile"))
        self.ci_method = ci_method
        self._metrics = _build_metrics(
            functions, y_true, y_pred, sample_weight, sample_params, self._single, n
        )
        self._weights = check_sample_weight(sample_weight, n)
        self._weighted = sample_weight is not None
        self._evaluate()
        self.sensitive_levels = list(self._group_index.names)
        self.control_levels = (
            None if self._control_index is None else list(self._control_index.names)
        )
        self.n_boot, self.ci_quantiles, self._stratify = None, None, bool(stratify)
        self._seeds = self._replicates = None
        if ci_quantiles is not None and n_boot is None:
            raise ValueError("ci_quantiles needs n_boot (the number of bootstrap replicates).")
        if n_boot is not None:
            if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 1:
                raise ValueError(f"n_boot must be a positive integer or None; got {n_boot!r}.")
            self.n_boot = int(n_boot)
            self.ci_quantiles = None if ci_quantiles is None else _check_quantiles(ci_quantiles)
            self._seeds = replicate_seeds(self.n_boot, random_state)

    # ----------------------------------------------------------------- evaluation
    def _evaluate(self):
        y_true, y_pred = self._y
        layout = self._layout
        cells, levels = [], []
        for metric in self._metrics.values():
            if isinstance(metric.function, RateMetric):  # its own definition: vectorised
                by_cell, by_level = _rate_values(metric, y_true, y_pred, layout)
                by_cell, by_level = by_cell.astype(object), by_level.astype(object)
            else:  # the callable itself: exactly the numbers of the metric
                by_cell, by_level = _general_values(metric, y_true, y_pred, layout)
            cells.append(by_cell)
            levels.append(by_level)
        self._cell_objects = np.column_stack(cells)  # (K, M) object
        self._level_objects = np.column_stack(levels)  # (C, M) object
        self._cells = _numeric(self._cell_objects)
        self._levels = _numeric(self._level_objects)
        self._non_scalar = [
            any(not isinstance(v, float) for v in column)
            for column in (*self._cell_objects.T, *self._level_objects.T)
        ]
        self._non_scalar = [
            a or b for a, b in zip(self._non_scalar[: len(cells)], self._non_scalar[len(cells) :])
        ]
        counts = np.bincount(layout.cells, minlength=layout.num_cells)
        self._observed = np.flatnonzero(counts > 0)
        self._row_index = _cell_index(self._control_index, self._group_index, self._observed)
        self.group_sizes = pd.DataFrame(
            {
                "count": counts[self._observed],
                "weight": group_totals(layout.cells, self._weights, layout.num_cells)[
                    self._observed
                ],
            },
            index=self._row_index,
        )
        self.overall = self._shape(self._level_objects)
        self.by_group = self._group_table(self._cell_objects)

    def _grid(self, cells: np.ndarray) -> np.ndarray:
        """(..., K, M) cells as a (..., C, G, M) grid."""
        layout = self._layout
        return cells.reshape(cells.shape[:-2] + (layout.num_levels, layout.num_groups, -1))

    def _replicate_values(self):
        """Bootstrap replicates: cells (B, K, M) and levels (B, C, M), computed once."""
        if self._seeds is None:
            raise AttributeError(
                "this frame has no bootstrap replicates; pass n_boot=... to compute them."
            )
        if self._replicates is None:
            y_true, y_pred = self._y
            self._replicates = _bootstrap(
                self._metrics, y_true, y_pred, self._layout, self._seeds, self._stratify
            )
        return self._replicates

    # ----------------------------------------------------------------- shaping
    @property
    def _names(self) -> list[str]:
        return list(self._metrics)

    def _shape(self, values: np.ndarray):
        """A (C, M) array as fairlearn shapes an aggregate."""
        if self._control_index is None:
            if self._single:
                return values[0, 0]
            return pd.Series(values[0], index=self._names, dtype=_dtype(values[0]))
        return self._table(values, self._control_index)

    def _group_table(self, cells: np.ndarray):
        """A (K, M) array of cells as ``by_group`` (observed cells only)."""
        return self._table(cells[self._observed], self._row_index)

    def _table(self, values: np.ndarray, index):
        """Rows (R, M) indexed by ``index``: a Series of the one metric, else a DataFrame."""
        if self._single:
            return pd.Series(values[:, 0], index=index, name=self._names[0]).infer_objects()
        return pd.DataFrame(values, index=index, columns=self._names).infer_objects()

    def _interval_table(self, lower: np.ndarray, upper: np.ndarray):
        """Intervals (C, M) as a table with columns ``lower`` and ``upper``."""
        if self._control_index is None and self._single:
            return pd.Series({"lower": float(lower[0, 0]), "upper": float(upper[0, 0])})
        if self._control_index is None:
            index = pd.Index(self._names)
        else:
            index = pd.MultiIndex.from_tuples(
                [
                    (*(level if isinstance(level, tuple) else (level,)), name)
                    for level in self._control_index
                    for name in self._names
                ],
                names=[*self._control_index.names, "metric"],
            )
        return pd.DataFrame({"lower": lower.ravel(), "upper": upper.ravel()}, index=index)

    def _numeric_for(self, errors: str):
        check_option(errors, "errors", _ERRORS)
        if errors == "raise" and any(self._non_scalar):
            raise ValueError(_NON_SCALAR)
        return self._grid(self._cells), self._levels

    # ----------------------------------------------------------------- summaries
    def group_min(self, errors="raise"):
        """Smallest value over the groups, per metric (and control level; NaN skipped).

        Parameters
        ----------
        errors : {"raise", "coerce"}, default="raise"
            A non-scalar metric raises, or gives NaN.

        Returns
        -------
        float, pandas.Series or pandas.DataFrame
            Shaped as :attr:`overall`.
        """
        cells, levels = self._numeric_for(errors)
        return self._shape(_statistic("group_min", cells, levels, None))

    def group_max(self, errors="raise"):
        """Largest value over the groups, per metric (and control level; NaN skipped).

        Parameters
        ----------
        errors : {"raise", "coerce"}, default="raise"
            A non-scalar metric raises, or gives NaN.

        Returns
        -------
        float, pandas.Series or pandas.DataFrame
            Shaped as :attr:`overall`.
        """
        cells, levels = self._numeric_for(errors)
        return self._shape(_statistic("group_max", cells, levels, None))

    def difference(self, method="between_groups", errors="coerce"):
        """Largest gap per metric, between groups or to the overall value.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            ``group_max() - group_min()``, or the largest ``|group - overall|``.
        errors : {"raise", "coerce"}, default="coerce"
            A non-scalar metric raises, or gives NaN.

        Returns
        -------
        float, pandas.Series or pandas.DataFrame
            Shaped as :attr:`overall` (groups with a NaN value are skipped).
        """
        check_option(method, "method", _COMPARE_METHODS)
        cells, levels = self._numeric_for(errors)
        return self._shape(_difference(cells, levels, method))

    def ratio(self, method="between_groups", errors="coerce"):
        """Smallest ratio per metric, between groups or to the overall value.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            ``group_min() / group_max()``, or the smallest group/overall ratio, each
            inverted when above 1 (fairlearn's ``ratio``).
        errors : {"raise", "coerce"}, default="coerce"
            A non-scalar metric raises, or gives NaN.

        Returns
        -------
        float, pandas.Series or pandas.DataFrame
            Shaped as :attr:`overall` (groups with a NaN value are skipped).
        """
        check_option(method, "method", _COMPARE_METHODS)
        cells, levels = self._numeric_for(errors)
        return self._shape(_ratio(cells, levels, method))

    # ----------------------------------------------------------------- intervals
    @property
    def _bootstrap_intervals(self) -> bool:
        return self.ci_quantiles is not None or self.ci_method == "percentile"

    def _quantiles(self, samples):
        """Quantiles over the replicate axis: fairlearn's list, or ``(lower, upper)``."""
        tail = (1.0 - self.ci) / 2.0
        quantiles = self.ci_quantiles or [tail, 1.0 - tail]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "All-NaN", RuntimeWarning)
            return list(np.nanquantile(samples, quantiles, axis=0))

    def _groups_per_level(self) -> np.ndarray:
        layout = self._layout
        counts = np.bincount(layout.cells, minlength=layout.num_cells)
        return (counts.reshape(layout.num_levels, layout.num_groups) > 0).sum(axis=1)

    def _box(self, segments: str, level):
        """Per-cell (``"cells"``, (K, M)) or per-level (``"levels"``, (C, M)) intervals at
        ``level`` (one per control level), warning about segments too small to bound."""
        layout = self._layout
        if segments == "cells":
            codes, size, values = layout.cells, layout.num_cells, self._cells
            level = np.repeat(np.broadcast_to(level, (layout.num_levels,)), layout.num_groups)
        else:
            codes, size, values = layout.levels, layout.num_levels, self._levels
        counts = np.bincount(codes, minlength=size)
        lower, upper = np.empty_like(values), np.empty_like(values)
        for j, (name, metric) in enumerate(self._metrics.items()):
            if metric.rate is not None:
                y_true, y_pred = self._y
                low, high, rows = _rate_box(
                    metric, y_true, y_pred, codes, size, values[:, j], level
                )
            else:
                replicates = self._replicate_values()[0 if segments == "cells" else 1][..., j]
                low, high = _percentile_box(replicates, level)
                rows = counts.astype(np.float64)
                low, high = np.where(rows < 2, -np.inf, low), np.where(rows < 2, np.inf, high)
            lower[:, j], upper[:, j] = low, high
            small = (counts > 0) & (rows < 2) & ~np.isnan(values[:, j])
            if small.any() and segments == "cells":
                shown = [
                    str(label)
                    for label in _cell_index(
                        self._control_index, self._group_index, np.flatnonzero(small)
                    )[:5]
                ]
                warnings.warn(
                    f"group(s) {shown} have fewer than 2 (effective) rows for metric "
                    f"{name!r}: their intervals are wide or unbounded, and so are the "
                    "intervals of the gaps; collect more rows or merge small groups.",
                    _intervals.IntervalWarning,
                    stacklevel=4,
                )
        return lower, upper

    @property
    def overall_ci(self):
        """Interval of each overall value.

        A table with columns ``lower`` and ``upper`` (one row per metric, or a Series for
        one metric); with ``ci_quantiles``, fairlearn's list of quantiles.
        """
        if self._bootstrap_intervals:
            quantiles = self._quantiles(self._replicate_values()[1])
            if self.ci_quantiles is not None:
                return [self._shape(q) for q in quantiles]
            return self._interval_table(*quantiles)
        levels = np.full(self._layout.num_levels, self.ci)
        return self._interval_table(*self._box("levels", levels))

    @property
    def by_group_ci(self):
        """Intervals of the group values (each at level ``ci``).

        Two tables ``(lower, upper)`` shaped as :attr:`by_group`; with ``ci_quantiles``,
        fairlearn's list of quantiles.
        """
        if self._bootstrap_intervals:
            tables = [self._group_table(q) for q in self._quantiles(self._replicate_values()[0])]
            return tables if self.ci_quantiles else tuple(tables)
        lower, upper = self._box("cells", np.full(self._layout.num_levels, self.ci))
        return self._group_table(lower), self._group_table(upper)

    def _aggregate_ci(self, kind, method, errors):
        if method is not None:
            check_option(method, "method", _COMPARE_METHODS)
        self._numeric_for(errors)
        if self._bootstrap_intervals:
            cells, levels = self._replicate_values()
            samples = _statistic(kind, self._grid(cells), levels, method)
            quantiles = self._quantiles(samples)
            if self.ci_quantiles is not None:
                return [self._shape(q) for q in quantiles]
            return self._interval_table(*quantiles)
        to_overall = method == "to_overall"
        level = _intervals.group_level(self.ci, self._groups_per_level(), with_overall=to_overall)
        lower, upper = (self._grid(side) for side in self._box("cells", level))
        if kind in ("group_min", "group_max"):
            function = np.min if kind == "group_min" else np.max
            return self._interval_table(*(group_extreme(function, b) for b in (lower, upper)))
        if to_overall:
            interval = _intervals.to_overall_interval(
                lower, upper, *self._box("levels", level), kind
            )
        else:
            interval = _intervals.between_groups_interval(lower, upper, kind)
        return self._interval_table(*interval)

    def group_min_ci(self, errors="raise"):
        """Interval of :meth:`group_min` (see :attr:`overall_ci` for the shape).

        Parameters
        ----------
        errors : {"raise", "coerce"}, default="raise"
            A non-scalar metric raises, or gives NaN.

        Returns
        -------
        pandas.DataFrame, pandas.Series or list
            Columns ``lower`` and ``upper``; with ``ci_quantiles``, fairlearn's list.
        """
        return self._aggregate_ci("group_min", None, errors)

    def group_max_ci(self, errors="raise"):
        """Interval of :meth:`group_max` (see :attr:`overall_ci` for the shape).

        Parameters
        ----------
        errors : {"raise", "coerce"}, default="raise"
            A non-scalar metric raises, or gives NaN.

        Returns
        -------
        pandas.DataFrame, pandas.Series or list
            Columns ``lower`` and ``upper``; with ``ci_quantiles``, fairlearn's list.
        """
        return self._aggregate_ci("group_max", None, errors)

    def difference_ci(self, method="between_groups", errors="coerce"):
        """Interval of :meth:`difference`, holding with probability at least ``ci``.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            As in :meth:`difference`.
        errors : {"raise", "coerce"}, default="coerce"
            A non-scalar metric raises, or gives NaN.

        Returns
        -------
        pandas.DataFrame, pandas.Series or list
            Columns ``lower`` and ``upper`` (one row per metric); with ``ci_quantiles``,
            fairlearn's list of bootstrap quantiles.
        """
        return self._aggregate_ci("difference", method, errors)

    def ratio_ci(self, method="between_groups", errors="coerce"):
        """Interval of :meth:`ratio`, holding with probability at least ``ci``.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            As in :meth:`ratio`.
        errors : {"raise", "coerce"}, default="coerce"
            A non-scalar metric raises, or gives NaN.

        Returns
        -------
        pandas.DataFrame, pandas.Series or list
            Columns ``lower`` and ``upper``; with ``ci_quantiles``, fairlearn's list.
        """
        return self._aggregate_ci("ratio", method, errors)

    def bootstrap_distribution(self, kind="overall", method="between_groups") -> pd.DataFrame:
        """Bootstrap replicates of the overall values, the differences or the ratios.

        Parameters
        ----------
        kind : {"overall", "difference", "ratio"}, default="overall"
            Which quantity.
        method : {"between_groups", "to_overall"}, default="between_groups"
            As in :meth:`difference` and :meth:`ratio`.

        Returns
        -------
        pandas.DataFrame
            One row per replicate, one column per metric (per control level and metric
            with control features).

        Raises
        ------
        AttributeError
            If the frame was built without ``n_boot``.
        """
        check_option(kind, "kind", ("overall", "difference", "ratio"))
        check_option(method, "method", _COMPARE_METHODS)
        cells, levels = self._replicate_values()
        values = (
            levels if kind == "overall" else _statistic(kind, self._grid(cells), levels, method)
        )
        if self._control_index is None:
            return pd.DataFrame(values[:, 0, :], columns=self._names)
        columns = pd.MultiIndex.from_product([list(self._control_index), self._names])
        return pd.DataFrame(values.reshape(values.shape[0], -1), columns=columns)

    def difference_certified(self, *, delta=0.05, bound="clopper-pearson") -> pd.DataFrame:
        """Certified (finite-sample) interval of the between-groups :meth:`difference`.

        For the rate metrics whose difference is a fairness metric of the catalogue that
        :func:`fairest.certified.fairness_interval` bounds (``selection_rate``:
        demographic parity difference; ``true_positive_rate``: equal opportunity
        difference; ``accuracy``: the 0-1 loss gap; a registered difference of one rate),
        on unweighted binary labels; NaN for the other metrics. Every row holds with
        probability at least ``1 - delta``, all rows at once (``delta`` is split
        equally over them), provided the rows are an i.i.d. sample not used to fit or
        choose the model.

        Parameters
        ----------
        delta : float, default=0.05
            Error probability of the whole table.
        bound : {"clopper-pearson", "hoeffding", "bernstein", "student-t", "bootstrap"}, \
default="clopper-pearson"
            As in :func:`fairest.certified.fairness_interval`.

        Returns
        -------
        pandas.DataFrame
            One row per metric, columns ``lower``, ``upper`` and ``certified_metric``
            (the fairness metric bounded, missing where none applies).

        Raises
        ------
        ValueError
            With ``sample_weight`` or ``control_features``.
        """
        from fairest.certified import fairness_interval

        y_true, y_pred = self._y
        if self._weighted or any(m.weighted for m in self._metrics.values()):
            raise ValueError(
                "difference_certified counts rows unweighted; build the frame without "
                "sample_weight."
            )
        if self._control_index is not None:
            raise ValueError("difference_certified needs a frame without control_features.")
        binary = is_binary_coded(y_true) and is_binary_coded(y_pred)
        bounded = {
            name: certified_difference(metric.rate.name)
            for name, metric in self._metrics.items()
            if metric.rate is not None and binary
        }
        bounded = {name: metric for name, metric in bounded.items() if metric is not None}
        lower = dict.fromkeys(self._metrics, np.nan)
        upper = dict.fromkeys(self._metrics, np.nan)
        for name, metric in bounded.items():
            interval = fairness_interval(
                metric,
                (y_true == 1).astype(int),
                (y_pred == 1).astype(int),
                sensitive_features=self._layout.cells,
                delta=delta / len(bounded),
                bound=bound,
            )
            lower[name], upper[name] = interval.lower, interval.upper
        return pd.DataFrame(
            {
                "lower": list(lower.values()),
                "upper": list(upper.values()),
                "certified_metric": [bounded.get(name) for name in self._metrics],
            },
            index=self._names,
        )

    def __repr__(self) -> str:
        return f"MetricFrame(metrics={self._names}, groups={len(self._row_index)})"


def certified_difference(rate_name: str) -> str | None:
    """The catalogue metric whose value is the between-groups difference of the rate
    ``rate_name`` (or of its complement) and which :mod:`fairest.certified` bounds: a
    difference of one rate of labels; None when there is none."""
    from fairest.certified._bounds import METRICS

    complement = None
    for name, spec in METRICS.items():
        if spec.kind != "difference" or len(spec.records) != 1 or spec.needs_proba:
            continue
        if spec.records[0].name == rate_name:
            return name
        if complement is None and spec.records[0].complement == rate_name:
            complement = name
    return complement
