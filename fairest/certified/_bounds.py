"""Confidence bounds on group rates and on the fairness metrics built from them.

Every metric here is a function of per-group means of a ``[0, 1]`` quantity over the rows
of a *condition* (a "rate"): the selection rate (all rows), the true-positive rate (rows
with ``y = 1``), the false-positive rate (rows with ``y = 0``), the 0-1 loss (all rows)
or the clipped log-loss divided by its maximum (all rows). A metric with ``R`` rates over
``G`` groups needs a lower and an upper one-sided bound on each of its ``R G`` group
rates: ``2 R G`` statements. Each gets ``delta / (2 R G)``; by the union bound they all
hold at once with probability at least ``1 - delta``, and then the lower and upper ends of
the metric interval (functions of the group bounds) hold too. Several constraints share
``delta`` equally (see :func:`constraint_delta`).

All functions are vectorised over groups and rates (arrays of counts and sums).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import special

from fairest.metrics._catalogue import LOG_LOSS_CLIP, LOG_LOSS_MAX

__all__ = [
    "BOUNDS",
    "EXACT_BOUNDS",
    "METRICS",
    "LOG_LOSS_CLIP",
    "LOG_LOSS_MAX",
    "RateStatistics",
    "MetricInterval",
    "rate_bounds",
    "rate_statistics",
    "metric_interval",
    "constraint_delta",
    "rows_needed",
]

BOOTSTRAP_RESAMPLES = 1000
_BOOTSTRAP_CHUNK = 50


@dataclass(frozen=True)
class _MetricSpec:
    """What the bounds need of a catalogue metric (:mod:`fairest.metrics._catalogue`)."""

    rates: tuple[str, ...]  # short rate names: "selection", "tpr", "fpr", "error", "log_loss"
    kind: str  # "difference" (smaller is fairer) or "ratio" (larger is fairer)
    needs_proba: bool = False
    records: tuple = ()  # the RateMetric records of the rates
    scale: float = 1.0  # the rates' values are the quantity divided by scale


def _certifiable(record) -> bool:
    """A comparison of group means of [0, 1] values: rates of 0/1 labels (indicators),
    or of probabilities with a loss scaled into [0, 1]."""
    if not record.rates or record.aggregate is None:
        return False
    if record.kinds == ("labels",):
        return all(rate.binary for rate in record.rates)
    return record.kinds == ("probabilities",) and record.scale != 1.0


class _CatalogueMetrics(Mapping):
    """The metrics the bounds cover, read from the metric catalogue at every look-up (so
    a metric registered there is covered at once)."""

    def _records(self) -> dict:
        from fairest.metrics._catalogue import catalogue

        return {name: record for name, record in catalogue().items() if _certifiable(record)}

    def __getitem__(self, name):
        record = self._records()[name]
        return _MetricSpec(
            rates=record.rate_labels,
            kind=record.aggregate,
            needs_proba=record.kinds == ("probabilities",),
            records=record.rates,
            scale=record.scale,
        )

    def __iter__(self):
        return iter(self._records())

    def __len__(self) -> int:
        return len(self._records())

    def __repr__(self) -> str:
        return f"METRICS{tuple(self)}"


METRICS = _CatalogueMetrics()
"""The certifiable metrics of the catalogue by name (a live view)."""


# --------------------------------------------------------------------------------------
# one-sided bounds on means of [0, 1] values, vectorised


def _clopper_pearson(stats_, delta):
    """Exact binomial bounds (Clopper and Pearson 1934), valid for 0/1 values only."""
    n, k = stats_.count, stats_.total
    # quantiles of Beta(k, n - k + 1) and Beta(k + 1, n - k); safe arguments where the
    # bound is 0 or 1 by definition (k = 0, k = n)
    lower = special.betaincinv(np.maximum(k, 1.0), np.maximum(n - k + 1, 1.0), delta)
    upper = special.betaincinv(k + 1, np.maximum(n - k, 1.0), 1.0 - delta)
    return np.where(k > 0, lower, 0.0), np.where(k < n, upper, 1.0)


def _hoeffding(stats_, delta):
    """``mean -/+ sqrt(log(1 / delta) / (2 n))`` (Hoeffding 1963)."""
    width = np.sqrt(np.log(1.0 / delta) / (2.0 * np.maximum(stats_.count, 1)))
    return stats_.mean - width, stats_.mean + width


def _empirical_bernstein(stats_, delta):
    """Maurer and Pontil (2009), Theorem 4: ``sqrt(2 V log(2/delta) / n) +
    7 log(2/delta) / (3 (n - 1))`` with ``V`` the unbiased sample variance."""
    n = np.maximum(stats_.count, 2)
    log_term = np.log(2.0 / delta)
    width = np.sqrt(2.0 * stats_.variance * log_term / n) + 7.0 * log_term / (3.0 * (n - 1))
    return stats_.mean - width, stats_.mean + width


def _student_t(stats_, delta):
    """Approximate: ``mean -/+ t_{1-delta, n-1} s / sqrt(n)`` (the Seldonian tools' bound)."""
    n = np.maximum(stats_.count, 2)
    width = special.stdtrit(n - 1, 1.0 - delta) * np.sqrt(stats_.variance / n)
    width = np.where(stats_.count < 2, 1.0, width)  # one row says nothing about a spread
    return stats_.mean - width, stats_.mean + width


def _bootstrap(stats_, delta):
    """Approximate: percentile bootstrap of every group mean (resampling within groups).

    For 0/1 values a resampled mean is ``Binomial(n, mean) / n`` exactly, drawn directly;
    bounded values are resampled row by row (in chunks of resamples, to bound the memory);
    without the rows (a predicted bound) the Student-t bound stands in.
    """
    rng = np.random.default_rng(stats_.seed)
    shape = stats_.count.shape
    if stats_.binary:
        n = stats_.count.astype(np.int64)
        p = np.clip(stats_.mean, 0.0, 1.0)
        means = rng.binomial(n, p, size=(BOOTSTRAP_RESAMPLES, *shape)) / np.maximum(n, 1)
        return np.quantile(means, delta, axis=0), np.quantile(means, 1.0 - delta, axis=0)
    if stats_.values is None:
        return _student_t(stats_, delta)
    num_cells = int(np.prod(shape))
    order = np.argsort(stats_.cells, kind="stable")
    sorted_values, sorted_cells = stats_.values[order], stats_.cells[order]
    counts = np.bincount(sorted_cells, minlength=num_cells)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    means = []
    for begin in range(0, BOOTSTRAP_RESAMPLES, _BOOTSTRAP_CHUNK):
        size = min(_BOOTSTRAP_CHUNK, BOOTSTRAP_RESAMPLES - begin)
        offsets = np.floor(rng.random((size, sorted_cells.size)) * counts[sorted_cells])
        draws = sorted_values[starts[sorted_cells] + offsets.astype(np.int64)]
        flat = (np.arange(size)[:, None] * num_cells + sorted_cells[None, :]).ravel()
        sums = np.bincount(flat, draws.ravel(), minlength=size * num_cells)
        means.append(sums.reshape(size, num_cells) / np.maximum(counts, 1))
    means = np.concatenate(means)
    lower = np.quantile(means, delta, axis=0).reshape(shape)
    upper = np.quantile(means, 1.0 - delta, axis=0).reshape(shape)
    return lower, upper


BOUNDS = {
    "clopper-pearson": _clopper_pearson,
    "hoeffding": _hoeffding,
    "bernstein": _empirical_bernstein,
    "student-t": _student_t,
    "bootstrap": _bootstrap,
}
EXACT_BOUNDS = ("clopper-pearson", "hoeffding", "bernstein")
_BINARY_ONLY = ("clopper-pearson",)


@dataclass
class RateStatistics:
    """Per (rate, group) counts and sums of ``[0, 1]`` values; arrays of shape (R, G).

    ``values`` / ``cells`` (the per-row values and their flat (rate, group) cell) are kept
    for the bootstrap only.
    """

    count: np.ndarray
    total: np.ndarray
    total_squares: np.ndarray
    binary: bool
    values: np.ndarray | None = None
    cells: np.ndarray | None = None
    seed: int | None = None

    @property
    def mean(self) -> np.ndarray:
        return self.total / np.maximum(self.count, 1)

    @property
    def variance(self) -> np.ndarray:
        n = self.count
        centred = self.total_squares - self.total**2 / np.maximum(n, 1)
        return np.maximum(centred, 0.0) / np.maximum(n - 1, 1)

    def scaled_to(self, count: np.ndarray) -> RateStatistics:
        """The same means and variances at other counts (for the predicted safety bound)."""
        ratio = count / np.maximum(self.count, 1)
        total = self.total * ratio
        if self.binary:
            total = np.round(total)
        return RateStatistics(count, total, self.total_squares * ratio, self.binary, seed=self.seed)


def rate_bounds(statistics: RateStatistics, delta: float, bound: str):
    """One-sided lower and upper bounds, each holding with probability ``1 - delta``.

    Parameters
    ----------
    statistics : RateStatistics
        Counts and sums per (rate, group).
    delta : float
        Error probability of *each* one-sided bound.
    bound : str
        A key of :data:`BOUNDS`.

    Returns
    -------
    lower, upper : ndarray of shape (R, G)
        Clipped to ``[0, 1]``; a cell with no row gets ``[0, 1]``.
    """
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {tuple(BOUNDS)}; got {bound!r}.")
    if bound in _BINARY_ONLY and not statistics.binary:
        raise ValueError(
            f"bound={bound!r} is exact for 0/1 outcomes only; the log-loss gap needs a "
            "bounded-loss bound: 'hoeffding' or 'bernstein' (exact), or 'student-t' / "
            "'bootstrap' (approximate)."
        )
    lower, upper = BOUNDS[bound](statistics, delta)
    empty = statistics.count == 0
    lower = np.where(empty, 0.0, np.clip(lower, 0.0, 1.0))
    upper = np.where(empty, 1.0, np.clip(upper, 0.0, 1.0))
    return lower, upper


# --------------------------------------------------------------------------------------
# per-row values of each rate


def rate_statistics(
    metric: str,
    y_true01: np.ndarray,
    y_pred01: np.ndarray,
    codes: np.ndarray,
    num_groups: int,
    *,
    proba: np.ndarray | None = None,
    seed: int | None = None,
) -> RateStatistics:
    """Counts and sums of the rates of ``metric`` per group (no Python loop over rows or
    groups: one ``bincount`` per rate).

    Parameters
    ----------
    metric : str
        A key of :data:`METRICS`.
    y_true01, y_pred01 : ndarray of shape (n_samples,)
        Labels and hard predictions coded 0/1.
    codes : ndarray of shape (n_samples,)
        Group codes ``0..G-1``.
    num_groups : int
        ``G``.
    proba : ndarray of shape (n_samples,), default=None
        Predicted probability of the positive class (log-loss gap only).
    seed : int, default=None
        Seed of the bootstrap, kept with the statistics.
    """
    spec = _spec(metric)
    values, masks = [], []
    for rate in spec.records:
        value, mask = _rate_values(rate, y_true01, proba if spec.needs_proba else y_pred01)
        values.append(value)
        masks.append(mask)
    values, masks = np.stack(values), np.stack(masks)  # (R, n)
    num_rates = values.shape[0]
    cells = (np.arange(num_rates)[:, None] * num_groups + codes[None, :])[masks]
    kept = values[masks]
    size = num_rates * num_groups
    count = np.bincount(cells, minlength=size).reshape(num_rates, num_groups)
    total = np.bincount(cells, kept, minlength=size).reshape(num_rates, num_groups)
    squares = np.bincount(cells, kept**2, minlength=size).reshape(num_rates, num_groups)
    binary = not spec.needs_proba
    return RateStatistics(count.astype(np.float64), total, squares, binary, kept, cells, seed)


def _rate_values(rate, y_true01, y_pred):
    """Per-row values of ``rate`` and the rows it is a mean over."""
    y_true01 = np.asarray(y_true01, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    eligible = rate.eligible(y_true01, y_pred)
    mask = np.ones(y_true01.shape, dtype=bool) if eligible is None else eligible > 0
    return np.asarray(rate.hits(y_true01, y_pred), dtype=np.float64), mask


def _spec(metric: str) -> _MetricSpec:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {tuple(METRICS)}; got {metric!r}.")
    return METRICS[metric]


# --------------------------------------------------------------------------------------
# metric intervals


@dataclass
class MetricInterval:
    """A simultaneous confidence interval of a metric and of its group rates.

    Parameters
    ----------
    metric : str
        The metric's name.
    lower, upper : float
        Ends of the metric's interval (both hold together with probability ``1 - delta``).
    estimate : float
        The metric on the data.
    rate_names : tuple of str
        The rates (rows of the group arrays).
    group_estimate, group_lower, group_upper, group_count : ndarray of shape (R, G)
        Per rate and group: the observed mean, its bounds and the number of rows.
    delta : float
        Total error probability of the interval.
    delta_per_bound : float
        Error probability of each of the ``2 R G`` one-sided group bounds.
    bound : str
        The bound type.
    exact : bool
        Whether the bound is an exact finite-sample bound (not Student-t or bootstrap).
    kind : {"difference", "ratio"}
        ``difference`` metrics are certified by ``upper <= tolerance``, ``ratio`` metrics
        by ``lower >= tolerance``.
    scale : float
        Maximum of the per-row values (``-log(LOG_LOSS_CLIP)`` for the log-loss gap, else 1);
        the group arrays are in the metric's units.
    """

    metric: str
    lower: float
    upper: float
    estimate: float
    rate_names: tuple
    group_estimate: np.ndarray
    group_lower: np.ndarray
    group_upper: np.ndarray
    group_count: np.ndarray
    delta: float
    delta_per_bound: float
    bound: str
    exact: bool
    kind: str
    scale: float

    @property
    def certified_value(self) -> float:
        """The end of the interval a tolerance is checked against."""
        return self.upper if self.kind == "difference" else self.lower

    def satisfies(self, tolerance: float) -> bool:
        """Check whether the interval certifies ``metric <= tolerance`` (``>=`` for ratios).

        Parameters
        ----------
        tolerance : float
            The tolerance of the metric.

        Returns
        -------
        bool
            ``upper <= tolerance`` for a difference or gap, ``lower >= tolerance`` for a
            ratio.
        """
        if self.kind == "difference":
            return bool(self.upper <= tolerance)
        return bool(self.lower >= tolerance)


def _combine(kind: str, lower: np.ndarray, upper: np.ndarray, estimate: np.ndarray):
    """Metric interval from group-rate bounds of shape (R, G): max over rates of the gap
    (differences) or min over rates of the ratio (ratios)."""
    if lower.shape[1] == 1:  # one group: the gap is 0 and the ratio 1 by definition
        return (0.0, 0.0, 0.0) if kind == "difference" else (1.0, 1.0, 1.0)
    if kind == "difference":
        upper_gap = upper.max(axis=1) - lower.min(axis=1)
        lower_gap = np.maximum(lower.max(axis=1) - upper.min(axis=1), 0.0)
        point = estimate.max(axis=1) - estimate.min(axis=1)
        return float(lower_gap.max()), float(upper_gap.max()), float(point.max())
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(upper.max(axis=1) > 0, lower.min(axis=1) / upper.max(axis=1), 0.0)
        high = np.where(lower.max(axis=1) > 0, upper.min(axis=1) / lower.max(axis=1), 1.0)
        largest = estimate.max(axis=1)
        point = np.where(
            largest > 0, estimate.min(axis=1) / np.where(largest > 0, largest, 1), np.nan
        )
    return float(low.min()), float(np.minimum(high, 1.0).min()), float(point.min())


def metric_interval(
    statistics: RateStatistics,
    metric: str,
    delta: float,
    bound: str,
    *,
    inflation: float = 1.0,
) -> MetricInterval:
    """Simultaneous interval of ``metric`` from its rate statistics.

    Each of the ``2 R G`` one-sided group-rate bounds is taken at ``delta / (2 R G)``.
    ``inflation > 1`` widens every group bound around its estimate by that factor (the
    *predicted* bound of Seldonian candidate selection, not a confidence statement).
    """
    spec = _spec(metric)
    num_rates, num_groups = statistics.count.shape
    per_bound = delta / (2 * num_rates * num_groups)
    lower, upper = inflated(statistics, *rate_bounds(statistics, per_bound, bound), inflation)
    count = statistics.count.astype(np.int64)
    return group_interval(
        metric, spec, lower, upper, statistics.mean, count, delta, per_bound, bound
    )


def inflated(statistics: RateStatistics, lower, upper, inflation: float):
    """Rate bounds widened around their estimates by ``inflation`` (1: as they are), within
    [0, 1]; a cell without rows keeps [0, 1]."""
    if inflation == 1.0:
        return lower, upper
    estimate = statistics.mean
    lower = np.clip(estimate - inflation * (estimate - lower), 0.0, 1.0)
    upper = np.clip(estimate + inflation * (upper - estimate), 0.0, 1.0)
    empty = statistics.count == 0
    return np.where(empty, 0.0, lower), np.where(empty, 1.0, upper)


def group_interval(
    metric, spec, lower, upper, estimate, count, delta, per_bound, bound
) -> MetricInterval:
    """The :class:`MetricInterval` of ``metric`` from group-rate bounds and estimates of
    shape (R, G) (:func:`_combine`), in the metric's units (``spec.scale``)."""
    scale = spec.scale
    low, high, point = _combine(spec.kind, lower, upper, estimate)
    if spec.kind == "difference":
        low, high, point = low * scale, high * scale, point * scale
    return MetricInterval(
        metric=metric,
        lower=low,
        upper=high,
        estimate=point,
        rate_names=spec.rates,
        group_estimate=estimate * scale,
        group_lower=lower * scale,
        group_upper=upper * scale,
        group_count=count,
        delta=float(delta),
        delta_per_bound=float(per_bound),
        bound=bound,
        exact=bound in EXACT_BOUNDS,
        kind=spec.kind,
        scale=float(scale),
    )


def constraint_delta(delta: float, num_constraints: int, n_comparisons: int = 1) -> float:
    """The share of ``delta`` of each constraint: ``delta / (n_comparisons * C)``.

    ``n_comparisons`` counts the models (or settings) that were certified and compared
    before one was kept; dividing by it is the Bonferroni correction that keeps the
    kept model's guarantee.
    """
    return float(delta) / (int(n_comparisons) * int(num_constraints))


def rows_needed(
    metric: str,
    tolerance: float,
    delta: float,
    bound: str = "clopper-pearson",
    *,
    rate: float = 0.5,
    num_groups: int = 2,
    max_rows: int = 10**8,
) -> int:
    """Count the rows per group a perfectly fair model needs to be certified.

    The smallest ``n`` such that, with every group showing the same observed rate
    ``rate`` on ``n`` rows, the interval of ``metric`` at ``delta`` certifies the
    tolerance. For equal opportunity ``n`` counts the positives of each group, for
    equalized odds the positives and the negatives. Found by bisection (the widths
    decrease in ``n``).

    Parameters
    ----------
    metric : str
        A metric of hard predictions (see :func:`fairness_interval`).
    tolerance : float
        The tolerance to certify.
    delta : float
        The error probability of the metric's interval (its share, when several
        constraints share a delta).
    bound : str, default="clopper-pearson"
        The bound type.
    rate : float, default=0.5
        The observed rate in every group (0.5 is the worst case of the exact bounds).
    num_groups : int, default=2
        Number of groups.
    max_rows : int, default=10**8
        The largest count tried.

    Returns
    -------
    int
        Rows per group (per rate condition); ``max_rows + 1`` when even ``max_rows`` is
        not enough (e.g. a zero tolerance).

    Examples
    --------
    >>> from fairest.certified import rows_needed
    >>> rows_needed("demographic_parity_difference", 0.05, 0.05, "hoeffding")
    3506
    """
    spec = _spec(metric)
    if spec.needs_proba:
        raise ValueError("rows_needed covers the metrics of hard predictions.")
    num_rates = len(spec.rates)

    def passes(n: int) -> bool:
        count = np.full((num_rates, num_groups), float(n))
        total = np.round(count * rate)
        statistics = RateStatistics(count, total, total, binary=True, seed=0)
        return metric_interval(statistics, metric, delta, bound).satisfies(tolerance)

    if not passes(max_rows):
        return max_rows + 1
    low, high = 1, max_rows
    while low < high:
        middle = (low + high) // 2
        if passes(middle):
            high = middle
        else:
            low = middle + 1
    return low


def rate_condition(rate: str) -> str:
    """Which rows a rate is a mean over, in words (for messages); ``rate`` is a short
    rate name of a certifiable metric (``"tpr"``)."""
    from fairest.metrics._catalogue import catalogue

    for record in catalogue().values():
        for rate_record, label in zip(record.rates, record.rate_labels):
            if label == rate:
                return rate_record.condition
    raise ValueError(f"no rate of the metric catalogue is named {rate!r}.")
