"""A metric frame: any metrics per group, overall, their gaps, and bootstrap intervals.

:class:`MetricFrame` evaluates metric callables ``metric(y_true, y_pred)`` (or with
``sample_weight=``) on every group of the sensitive features and on all rows, as
fairlearn's ``MetricFrame`` does, and derives differences and ratios between groups and
to the overall value. With ``n_boot`` it adds percentile bootstrap intervals.

Resampling follows fairlearn's seed semantics exactly: replicate ``b`` draws ``n`` rows
with replacement from ``numpy.random.RandomState(seeds[b])``, where ``seeds`` are
``n_boot`` integers drawn from ``numpy.random.default_rng(random_state)``; the same
``random_state`` gives the same replicates, hence the same intervals, as fairlearn.
``stratify=True`` instead resamples within every group (group sizes fixed).

Two evaluation paths give the same numbers:

* general: the metric callable on every replicate and group (any metric);
* fast: metrics that are weighted rates or means of a per-row quantity (accuracy,
  recall, precision, selection rate, mean squared / absolute error, and the built-in
  names of :data:`RATE_METRICS`) are evaluated for all replicates at once, as ratios of
  segment sums (``np.bincount``) of the resampled rows.
"""

from __future__ import annotations

import contextlib
import inspect
import numbers
import warnings
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import pandas as pd

from fairest.metrics._checks import (
    check_labels,
    check_option,
    check_same_length,
    check_sample_weight,
    encode_sensitive_features,
)
from fairest.metrics._group_stats import group_totals
from fairest.metrics._rates import RATE_METRICS, RateMetric, is_binary_coded, known_rate_form

__all__ = [
    "MetricFrame",
    "RATE_METRICS",
    "RateMetric",
    "group_index",
]  # the rate records live in _rates

_COMPARE_METHODS = ("between_groups", "to_overall")
_MAX_RESAMPLED_ENTRIES = 4_000_000  # rows x replicates per chunk of the fast path


# --------------------------------------------------------------------------- inputs
def _metric_name(metric, position: int) -> str:
    return (
        getattr(metric, "name", None) or getattr(metric, "__name__", None) or f"metric_{position}"
    )


def _as_metric_dict(metrics) -> dict[str, Callable]:
    """``metrics`` (a callable, a name of :data:`RATE_METRICS`, or a dict / list of
    them) as an ordered dict name -> callable."""
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
            check_option(metric, "a metric name", RATE_METRICS)
            metric = RATE_METRICS[metric]
        if not callable(metric):
            raise TypeError(f"metric {name!r} is not callable; got {type(metric).__name__}.")
        if name in result:
            raise ValueError(f"two metrics are named {name!r}; pass a dict to name them.")
        result[name] = metric
    return result


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


def group_index(groups: np.ndarray, sensitive_features) -> pd.Index:
    """Index of group labels, named after the sensitive feature(s) when they have names
    (a MultiIndex for intersectional groups)."""
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


def _confidence_quantiles(ci) -> tuple[float, float]:
    if isinstance(ci, bool) or not isinstance(ci, numbers.Real) or not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be a confidence level strictly between 0 and 1; got {ci!r}.")
    tail = round((1.0 - float(ci)) / 2.0, 12)
    return tail, round(1.0 - tail, 12)


def _replicate_seeds(n_boot: int, random_state) -> np.ndarray:
    """fairlearn's per-replicate seeds (``fairlearn.metrics._bootstrap``)."""
    high = np.iinfo(np.uint32).max
    if random_state is None:
        return np.random.default_rng().integers(0, high, size=n_boot, dtype=np.uint32)
    if isinstance(random_state, np.random.RandomState):
        return random_state.randint(low=0, high=high, size=n_boot, dtype=np.uint32)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        generator = np.random.default_rng(seed=int(random_state))
        return generator.integers(0, high, size=n_boot, dtype=np.uint32)
    raise TypeError(
        "random_state must be None, an int or a numpy.random.RandomState; "
        f"got {type(random_state).__name__}."
    )


# --------------------------------------------------------------------------- evaluation
def _call(metric, y_true, y_pred, weights, weighted: bool) -> float:
    value = metric(y_true, y_pred, sample_weight=weights) if weighted else metric(y_true, y_pred)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"metric {_metric_name(metric, 0)!r} returned {type(value).__name__}, not a "
            "number; the frame needs scalar metrics."
        ) from None


def _evaluate_general(metric, y_true, y_pred, codes, num_groups, weights, weighted):
    """``(overall, by_group)`` of one metric on rows with group codes ``codes``; a group
    without rows gets NaN."""
    overall = _call(metric, y_true, y_pred, weights, weighted)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(num_groups + 1))
    by_group = np.full(num_groups, np.nan)
    for g in range(num_groups):  # one metric call per group: any callable
        rows = order[bounds[g] : bounds[g + 1]]
        if rows.size:
            by_group[g] = _call(metric, y_true[rows], y_pred[rows], weights[rows], weighted)
    return overall, by_group


def _rate_values(numerator, denominator, present, undefined):
    """Rates from summed terms (last axis: groups, or none), ``undefined`` where no
    eligible weight, NaN for a group without rows."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(
            denominator > 0, numerator / np.where(denominator > 0, denominator, 1), undefined
        )
    return np.where(present, rates, np.nan)


def _evaluate_fast(rate, y_true, y_pred, codes, num_groups, weights, rows_per_group):
    numerator_terms, denominator_terms = rate.terms(y_true, y_pred, weights)
    numerator = group_totals(codes, numerator_terms, num_groups)
    denominator = group_totals(codes, denominator_terms, num_groups)
    by_group = _rate_values(numerator, denominator, rows_per_group > 0, rate.undefined)
    overall = _rate_values(numerator.sum(), denominator.sum(), True, rate.undefined)
    return float(overall), by_group


def _resample_chunks(seeds, codes, num_groups, stratify) -> Iterator[np.ndarray]:
    """Row indices of the bootstrap replicates, ``(chunk, n)`` at a time."""
    n = codes.shape[0]
    if stratify:
        order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes, minlength=num_groups)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        sorted_codes = codes[order]
    per_chunk = max(1, _MAX_RESAMPLED_ENTRIES // n)
    for first in range(0, len(seeds), per_chunk):
        chunk = seeds[first : first + per_chunk]
        indices = np.empty((len(chunk), n), dtype=np.int64)
        for b, seed in enumerate(chunk):
            state = np.random.RandomState(seed)
            if stratify:  # a uniform row of the same group for every position
                u = state.random_sample(n)
                within = np.floor(u * sizes[sorted_codes]).astype(np.int64)
                indices[b] = order[starts[sorted_codes] + within]
            else:  # pandas' DataFrame.sample(frac=1, replace=True, random_state=seed)
                indices[b] = state.choice(n, size=n, replace=True)
        yield indices


def _replicate_segments(codes, num_groups, indices):
    """Segment ids ``b * G + group`` of the resampled rows (flat) and which groups each
    replicate holds, ``(B, G)``."""
    n_reps = indices.shape[0]
    flat = (np.arange(n_reps)[:, None] * num_groups + codes[indices]).ravel()
    present = np.bincount(flat, minlength=n_reps * num_groups).reshape(n_reps, num_groups) > 0
    return flat, present


def _fast_replicates(rate, y_true, y_pred, weights, indices, flat, present):
    """``(overall, by_group)`` of a rate for a chunk of replicates: (B,), (B, G)."""
    numerator_terms, denominator_terms = rate.terms(y_true, y_pred, weights)

    def segment_sum(terms):
        return np.bincount(flat, weights=terms[indices].ravel(), minlength=present.size).reshape(
            present.shape
        )

    numerator, denominator = segment_sum(numerator_terms), segment_sum(denominator_terms)
    by_group = _rate_values(numerator, denominator, present, rate.undefined)
    overall = _rate_values(numerator.sum(1), denominator.sum(1), True, rate.undefined)
    return overall, by_group


# --------------------------------------------------------------------------- aggregates
def _difference(by_group: np.ndarray, overall: np.ndarray, method: str) -> np.ndarray:
    """Over the group axis (-2): max - min, or max |group - overall| (NaN skipped)."""
    with np.errstate(invalid="ignore"), _all_nan_ok():
        if method == "between_groups":
            return np.nanmax(by_group, axis=-2) - np.nanmin(by_group, axis=-2)
        return np.nanmax(np.abs(by_group - overall[..., None, :]), axis=-2)


def _ratio(by_group: np.ndarray, overall: np.ndarray, method: str) -> np.ndarray:
    """Over the group axis (-2): min / max, or the smallest group/overall ratio taken
    below 1 (fairlearn's ``ratio``; NaN skipped)."""
    with np.errstate(invalid="ignore", divide="ignore"), _all_nan_ok():
        if method == "between_groups":
            return np.nanmin(by_group, axis=-2) / np.nanmax(by_group, axis=-2)
        ratios = by_group / overall[..., None, :]
        ratios = np.where(ratios > 1, 1.0 / ratios, ratios)
        return np.nanmin(ratios, axis=-2)


@contextlib.contextmanager
def _all_nan_ok():
    """Silence numpy's "All-NaN slice" warning: an all-NaN column gives NaN."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN", RuntimeWarning)
        yield


# --------------------------------------------------------------------------- the frame
class MetricFrame:
    """Metrics per group and overall, their gaps, and bootstrap confidence intervals.

    Every metric is evaluated on the rows of each group of ``sensitive_features`` (the
    intersections of several columns) and on all rows. ``difference`` and ``ratio``
    summarise the spread between groups (max - min, min / max) or to the overall value.
    With ``n_boot``, the rows are resampled ``n_boot`` times and every quantity gets a
    percentile interval at level ``ci``.

    Parameters
    ----------
    metrics : callable, str, or dict or list of them
        ``metric(y_true, y_pred)`` returning a number (scikit-learn's metrics, fairlearn's,
        any function), or a name of a built-in weighted rate: ``"accuracy"``,
        ``"selection_rate"``, ``"base_rate"``, ``"true_positive_rate"``,
        ``"false_positive_rate"``, ``"mean_target"``, ``"mean_prediction"``,
        ``"mean_squared_error"``, ``"mean_absolute_error"`` (NaN for a group without
        eligible rows, e.g. a true positive rate without positives). A dict names the
        columns; otherwise a callable's ``__name__`` does.
    y_true : array-like of shape (n_samples,)
        Targets.
    y_pred : array-like of shape (n_samples,)
        Predictions (or scores, for metrics of scores).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights, passed as ``sample_weight=`` to every metric (each must
        accept it) and resampled with the rows.
    n_boot : int, default=None
        Number of bootstrap replicates; ``None`` computes no intervals.
    ci : float, default=0.95
        Confidence level of the percentile intervals: the ``(1 - ci) / 2`` and
        ``(1 + ci) / 2`` quantiles of the replicates.
    random_state : int, numpy.random.RandomState or None, default=None
        Seed of the replicates, with fairlearn's semantics (the same seed draws the same
        replicates as ``fairlearn.metrics.MetricFrame(random_state=...)``).
    stratify : bool, default=False
        Resample within every group, keeping group sizes fixed (no group goes missing
        from a replicate), instead of resampling all rows as fairlearn does.

    Attributes
    ----------
    by_group : pandas.DataFrame
        One row per group (index: the group labels, sorted; a MultiIndex for
        intersectional groups), one column per metric.
    overall : pandas.Series
        The metrics on all rows.
    group_sizes : pandas.DataFrame
        ``count`` (rows) and ``weight`` (total sample weight) per group.
    ci_quantiles : tuple of float or None
        The two quantiles of the intervals, ``None`` without ``n_boot``.

    See Also
    --------
    group_report : A fixed table of rates per group, a view of this frame.

    Notes
    -----
    Rate metrics (the built-in names; scikit-learn's ``accuracy_score``,
    ``recall_score``, ``precision_score``, ``mean_squared_error``,
    ``mean_absolute_error``; fairlearn's ``selection_rate``, ``true_positive_rate``,
    ``false_positive_rate``, ``mean_prediction``) are bootstrapped for all replicates at
    once from segment sums; any other callable is called once per replicate and group.
    Both paths give the same values. A group absent from a replicate is left out of that
    replicate's differences and ratios and of its own quantiles (as in fairlearn).

    References
    ----------
    .. [1] S. Bird et al. "Fairlearn: A toolkit for assessing and improving fairness in
       AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``MetricFrame``).
    .. [2] B. Efron and R. J. Tibshirani. "An Introduction to the Bootstrap". Chapman &
       Hall, 1993 (percentile intervals, ch. 13).

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
    group
    a      0.666667   0.333333
    b      0.666667   0.666667
    >>> float(frame.difference()["selection"])
    0.3333333333333333
    """

    def __init__(
        self,
        *,
        metrics,
        y_true,
        y_pred,
        sensitive_features,
        sample_weight=None,
        n_boot=None,
        ci=0.95,
        random_state=None,
        stratify=False,
    ):
        self._metrics = _as_metric_dict(metrics)
        y_true = check_labels(y_true, "y_true")
        y_pred = np.asarray(y_pred)
        if y_pred.ndim == 2 and y_pred.shape[1] == 1:
            y_pred = y_pred[:, 0]
        n = y_true.shape[0]
        check_same_length("y_true", n, y_pred=y_pred)
        codes, groups = encode_sensitive_features(sensitive_features, n)
        weighted = sample_weight is not None
        weights = check_sample_weight(sample_weight, n)
        if weighted:
            refusing = [k for k, m in self._metrics.items() if not _accepts_sample_weight(m)]
            if refusing:
                raise TypeError(
                    f"sample_weight is given but metric(s) {refusing} take no sample_weight "
                    "argument."
                )
        self._data = (y_true, y_pred, codes, len(groups), weights, weighted)
        self._index = group_index(groups, sensitive_features)
        counts = np.bincount(codes, minlength=len(groups))
        self.group_sizes = pd.DataFrame(
            {"count": counts, "weight": group_totals(codes, weights, len(groups))},
            index=self._index,
        )
        self._fast = {k: known_rate_form(m, y_true, y_pred) for k, m in self._metrics.items()}
        overall, by_group = self._evaluate_all()
        names = list(self._metrics)
        self._overall = overall  # (M,)
        self._by_group = by_group  # (G, M)
        self.overall = pd.Series(overall, index=names, name="overall")
        self.by_group = pd.DataFrame(by_group, index=self._index, columns=names)
        self.ci_quantiles = None
        self._replicates = None
        if n_boot is not None:
            if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 1:
                raise ValueError(f"n_boot must be a positive integer or None; got {n_boot!r}.")
            self.ci_quantiles = _confidence_quantiles(ci)
            seeds = _replicate_seeds(int(n_boot), random_state)
            self._replicates = self._bootstrap(seeds, bool(stratify))

    # ----------------------------------------------------------------- evaluation
    def _evaluate_all(self):
        y_true, y_pred, codes, num_groups, weights, weighted = self._data
        counts = self.group_sizes["count"].to_numpy()
        overall, by_group = [], []
        for name, metric in self._metrics.items():
            rate = self._fast[name]
            if isinstance(metric, RateMetric):  # its own definition: vectorised, exact
                values = _evaluate_fast(
                    rate or metric, y_true, y_pred, codes, num_groups, weights, counts
                )
            else:  # the callable itself: exactly the numbers of the metric
                values = _evaluate_general(
                    metric, y_true, y_pred, codes, num_groups, weights, weighted
                )
            overall.append(values[0])
            by_group.append(values[1])
        return np.asarray(overall, dtype=np.float64), np.column_stack(by_group)

    def _bootstrap(self, seeds, stratify):
        """Replicates: overall (B, M) and by_group (B, G, M)."""
        y_true, y_pred, codes, num_groups, weights, weighted = self._data
        n_metrics = len(self._metrics)
        overall = np.empty((len(seeds), n_metrics))
        by_group = np.empty((len(seeds), num_groups, n_metrics))
        first = 0
        for indices in _resample_chunks(seeds, codes, num_groups, stratify):
            block = slice(first, first + indices.shape[0])
            segments = None
            for j, (name, metric) in enumerate(self._metrics.items()):
                rate = self._fast[name]
                if rate is not None:
                    if segments is None:  # shared by the rate metrics of this chunk
                        segments = _replicate_segments(codes, num_groups, indices)
                    overall[block, j], by_group[block, :, j] = _fast_replicates(
                        rate, y_true, y_pred, weights, indices, *segments
                    )
                    continue
                for b, rows in enumerate(indices, start=first):
                    overall[b, j], by_group[b, :, j] = _evaluate_general(
                        metric,
                        y_true[rows],
                        y_pred[rows],
                        codes[rows],
                        num_groups,
                        weights[rows],
                        weighted,
                    )
            first = block.stop
        return overall, by_group

    # ----------------------------------------------------------------- summaries
    def group_min(self) -> pd.Series:
        """Smallest value over the groups, per metric (NaN skipped).

        Returns
        -------
        pandas.Series
            One value per metric.
        """
        return self.by_group.min()

    def group_max(self) -> pd.Series:
        """Largest value over the groups, per metric (NaN skipped).

        Returns
        -------
        pandas.Series
            One value per metric.
        """
        return self.by_group.max()

    def difference(self, method="between_groups") -> pd.Series:
        """Largest gap per metric, between groups or to the overall value.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            ``group_max() - group_min()``, or the largest ``|group - overall|``.

        Returns
        -------
        pandas.Series
            One value per metric (groups with a NaN value are skipped).
        """
        check_option(method, "method", _COMPARE_METHODS)
        return self._series(_difference(self._by_group, self._overall, method), "difference")

    def ratio(self, method="between_groups") -> pd.Series:
        """Smallest ratio per metric, between groups or to the overall value.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            ``group_min() / group_max()``, or the smallest group/overall ratio, each
            inverted when above 1 (fairlearn's ``ratio``).

        Returns
        -------
        pandas.Series
            One value per metric (groups with a NaN value are skipped).
        """
        check_option(method, "method", _COMPARE_METHODS)
        return self._series(_ratio(self._by_group, self._overall, method), "ratio")

    def _series(self, values, name) -> pd.Series:
        return pd.Series(values, index=list(self._metrics), name=name)

    # ----------------------------------------------------------------- intervals
    def _require_bootstrap(self):
        if self._replicates is None:
            raise AttributeError(
                "this frame has no bootstrap replicates; pass n_boot=... to compute intervals."
            )
        return self._replicates

    def _interval(self, samples) -> pd.DataFrame:
        with _all_nan_ok():
            low, high = np.nanquantile(samples, self.ci_quantiles, axis=0)
        return pd.DataFrame({"lower": low, "upper": high}, index=list(self._metrics))

    def bootstrap_distribution(self, kind="overall", method="between_groups") -> pd.DataFrame:
        """Bootstrap replicates of the overall values, the differences or the ratios.

        For intervals of derived quantities, e.g. the larger of two differences
        (equalized odds), taken replicate by replicate.

        Parameters
        ----------
        kind : {"overall", "difference", "ratio"}, default="overall"
            Which quantity.
        method : {"between_groups", "to_overall"}, default="between_groups"
            As in :meth:`difference` and :meth:`ratio`.

        Returns
        -------
        pandas.DataFrame
            One row per replicate, one column per metric.

        Raises
        ------
        AttributeError
            If the frame was built without ``n_boot``.
        """
        check_option(kind, "kind", ("overall", "difference", "ratio"))
        check_option(method, "method", _COMPARE_METHODS)
        overall, by_group = self._require_bootstrap()
        if kind == "difference":
            overall = _difference(by_group, overall, method)
        elif kind == "ratio":
            overall = _ratio(by_group, overall, method)
        return pd.DataFrame(overall, columns=list(self._metrics))

    @property
    def overall_ci(self) -> pd.DataFrame:
        """Interval of each overall value, with columns ``lower`` and ``upper``."""
        return self._interval(self._require_bootstrap()[0])

    @property
    def by_group_ci(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Intervals of the group values, as two frames ``(lower, upper)`` like ``by_group``."""
        by_group = self._require_bootstrap()[1]
        with _all_nan_ok():
            low, high = np.nanquantile(by_group, self.ci_quantiles, axis=0)
        columns = list(self._metrics)
        return (
            pd.DataFrame(low, index=self._index, columns=columns),
            pd.DataFrame(high, index=self._index, columns=columns),
        )

    def difference_ci(self, method="between_groups") -> pd.DataFrame:
        """Interval of :meth:`difference`.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            As in :meth:`difference`.

        Returns
        -------
        pandas.DataFrame
            One row per metric, columns ``lower`` and ``upper``.
        """
        return self._interval(self.bootstrap_distribution("difference", method).to_numpy())

    def ratio_ci(self, method="between_groups") -> pd.DataFrame:
        """Interval of :meth:`ratio`.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            As in :meth:`ratio`.

        Returns
        -------
        pandas.DataFrame
            One row per metric, columns ``lower`` and ``upper``.
        """
        return self._interval(self.bootstrap_distribution("ratio", method).to_numpy())

    def difference_certified(self, *, delta=0.05, bound="clopper-pearson") -> pd.DataFrame:
        """Certified (finite-sample) interval of the between-groups :meth:`difference`.

        For the rate metrics whose difference is a fairness metric of
        :func:`fairest.certified.fairness_interval` (``selection_rate``: demographic
        parity difference; ``true_positive_rate``: equal opportunity difference;
        ``accuracy``: the 0-1 loss gap), on unweighted binary labels; NaN for the other
        metrics. Unlike the bootstrap's :meth:`difference_ci` (an approximate two-sided
        interval of the estimate's spread), every row holds with probability at least
        ``1 - delta``, all rows at once (``delta`` is split equally over them), provided
        the rows are an i.i.d. sample not used to fit or choose the model.

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
            With ``sample_weight`` (the bounds count rows, as the guarantee is about the
            population the rows are drawn from).
        """
        from fairest.certified import fairness_interval

        y_true, y_pred, codes, _, _, weighted = self._data
        if weighted:
            raise ValueError(
                "difference_certified counts rows unweighted; build the frame without "
                "sample_weight."
            )
        binary = is_binary_coded(y_true) and is_binary_coded(y_pred)
        bounded = {
            name: _CERTIFIED_DIFFERENCES.get(rate.name)
            for name, rate in self._fast.items()
            if rate is not None and binary
        }
        bounded = {name: metric for name, metric in bounded.items() if metric is not None}
        lower = dict.fromkeys(self._metrics, np.nan)
        upper = dict.fromkeys(self._metrics, np.nan)
        for name, metric in bounded.items():
            interval = fairness_interval(
                metric,
                (y_true == 1).astype(int),
                (y_pred == 1).astype(int),
                sensitive_features=codes,
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
            index=list(self._metrics),
        )

    def __repr__(self) -> str:
        return f"MetricFrame(metrics={list(self._metrics)}, groups={len(self._index)})"


# the between-groups difference of these rates is a metric fairest.certified bounds
_CERTIFIED_DIFFERENCES = {
    "selection_rate": "demographic_parity_difference",
    "true_positive_rate": "equal_opportunity_difference",
    "accuracy": "zero_one_loss_gap",
}
