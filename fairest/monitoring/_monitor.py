"""Anytime-valid fairness monitoring of a deployed classifier's predictions.

:class:`FairnessMonitor` keeps, for every group and every tracked rate (selection rate;
true and false positive rates once labels arrive), the counts of successes and trials,
and inverts them into confidence sequences (:mod:`fairest.monitoring._boundaries`). The
gap of the constrained metric is bounded from the groups' intervals, so the whole report
holds at every check at once with probability at least ``1 - delta``.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd

from fairest.io import GroupVocabulary, iter_chunks
from fairest.metrics._catalogue import FairnessMetric, get_metric
from fairest.metrics._rates import RATE_METRICS
from fairest.monitoring._boundaries import BOUNDARIES, bernoulli_confidence_sequence
from fairest.utils._degenerate import plain_label
from fairest.utils._validation import FairnessWarning

__all__ = ["FairnessMonitor"]

# rates reported beside the metric's own when ``rates=None``
DEFAULT_RATES = ("selection_rate", "true_positive_rate", "false_positive_rate")
# window starts kept per doubling of their age (restarts=True) is 2 ** WINDOW_DENSITY_BITS
WINDOW_DENSITY_BITS = 3
# tolerance when none is given: at most 0.1 apart (differences), the four-fifths rule (ratios)
DEFAULT_TOLERANCE = {"difference": 0.1, "ratio": 0.8}


def _rate_cells(rate):
    """Numerator and denominator weights of ``rate`` on the four confusion cells.

    Cells are ordered ``2 * y + y_pred`` (``(0, 0), (0, 1), (1, 0), (1, 1)``); the second
    value says whether the rate needs labels (its terms change with ``y``).
    """
    y = np.array([0.0, 0.0, 1.0, 1.0])
    p = np.array([0.0, 1.0, 0.0, 1.0])
    numerator, denominator = rate.terms(y, p, np.ones(4))
    numerator, denominator = np.asarray(numerator, float), np.asarray(denominator, float)
    needs_labels = not (
        np.array_equal(numerator[:2], numerator[2:])
        and np.array_equal(denominator[:2], denominator[2:])
    )
    return numerator, denominator, needs_labels


def _resolve_metric(metric) -> FairnessMetric:
    record = metric if isinstance(metric, FairnessMetric) else get_metric(metric)
    if not record.rates or record.aggregate not in DEFAULT_TOLERANCE:
        raise ValueError(
            f"metric={record.name!r} is not a comparison of group rates; the monitor needs a "
            "catalogue metric with rates and a 'difference' or 'ratio' aggregate, e.g. "
            "'demographic_parity_difference' or 'equalized_odds_difference'."
        )
    if "labels" not in record.kinds or not all(rate.binary for rate in record.rates):
        raise ValueError(
            f"metric={record.name!r} is not a metric of hard 0/1 predictions; the monitor "
            "bounds rates of binary predictions and labels."
        )
    return record


def _binary(values, name: str, *, allow_missing: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """``values`` as int codes in {0, 1}, and the mask of present entries (or ``None``)."""
    if isinstance(values, np.ma.MaskedArray):
        present = ~np.ma.getmaskarray(values)
        values = np.asarray(values.filled(0))
    else:
        present = None
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.to_numpy(dtype=np.float64, na_value=np.nan)
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got an array of shape {values.shape}.")
    if values.dtype == bool:
        return values.view(np.uint8), present
    if values.dtype.kind in "iu":
        bad = values.size and (values.min() < 0 or values.max() > 1)
    else:
        values = np.asarray(values, dtype=np.float64)
        missing = np.isnan(values)
        if missing.any():
            if not allow_missing:
                raise ValueError(f"{name} contains NaN; every prediction must be 0 or 1.")
            present = ~missing if present is None else present & ~missing
            values = np.where(missing, 0.0, values)
        bad = not np.all((values == 0) | (values == 1))
    if bad:
        hint = " (NaN or a masked entry marks a missing label)" if allow_missing else ""
        raise ValueError(
            f"{name} must hold 0 and 1 only{hint}; encode the positive class as 1, e.g. "
            f"(y == positive_label).astype(int)."
        )
    return values.astype(np.uint8, copy=False), present


def metric_box_bounds(aggregate, estimate, lower, upper):
    """The metric over the box of group-rate intervals, for arrays (..., G, R).

    Returns ``(estimate, lower, upper)`` of shape (...): for a difference, the worst over
    the rates of ``max_g - min_g`` (interval ``[max(0, max_g L - min_g U), max_g U -
    min_g L]``); for a ratio, the worst of ``min_g / max_g`` (interval
    ``[min_g L / max_g U, min(1, min_g U / max_g L)]``). ``estimate`` may be ``None``.
    """
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rates: no estimate yet
        if aggregate == "difference":
            low = np.maximum(lower.max(-2) - upper.min(-2), 0.0).max(-1)
            high = (upper.max(-2) - lower.min(-2)).max(-1)
            value = None
            if estimate is not None:
                value = (np.nanmax(estimate, -2) - np.nanmin(estimate, -2)).max(-1)
            return value, low, high
        top, bottom = upper.max(-2), lower.max(-2)
        low = np.divide(lower.min(-2), top, out=np.zeros(top.shape), where=top > 0).min(-1)
        high = np.divide(upper.min(-2), bottom, out=np.ones(top.shape), where=bottom > 0)
        high = np.minimum(high.min(-1), 1.0)
        value = None
        if estimate is not None:
            value = (np.nanmin(estimate, -2) / np.nanmax(estimate, -2)).min(-1)
        return value, low, high


def window_alpha(starts, delta, n_sequences):
    """Error share of each group-rate sequence of the window after check ``k >= 1``:
    ``(delta / 2) / (k (k + 1)) / n_sequences`` (over all ``k`` they sum to ``delta / 2``)."""
    starts = np.asarray(starts, dtype=np.float64)
    return (delta / 2.0) / (starts * (starts + 1.0)) / n_sequences


def retained_starts(starts, n_checks):
    """The window starts kept after ``n_checks`` checks: a start ``k`` of age
    ``n_checks - k`` is kept when ``k`` is a multiple of
    ``2 ** max(0, floor(log2(age)) - WINDOW_DENSITY_BITS)``, so about
    ``2 ** WINDOW_DENSITY_BITS`` starts per doubling of the age; the spacing only grows
    with age, so a start once dropped is never needed again."""
    starts = np.asarray(starts, dtype=np.int64)
    age = np.maximum(n_checks - starts, 1)
    spacing = 2 ** np.maximum(np.floor(np.log2(age)).astype(np.int64) - WINDOW_DENSITY_BITS, 0)
    return starts[(starts >= 1) & (starts % spacing == 0)]


class FairnessMonitor:
    """Anytime-valid monitor of a classifier's fairness over a stream of predictions.

    Feed it batches of predictions and group labels (:meth:`update`), with their true
    labels when known, late (:meth:`update_labels`) or never. After every batch it holds
    a confidence sequence for every group's rates (selection rate; true and false
    positive rates where labels exist) and for the gap of the constrained ``metric``.
    With probability at least ``1 - delta``, over the whole unbounded stream, every
    interval reported after every batch holds at once: the monitor may be looked at, and
    acted upon, after every batch without the false alarms that repeated fixed-sample
    tests accumulate.

    Parameters
    ----------
    metric : str or FairnessMetric, default="demographic_parity_difference"
        The constrained metric, a comparison of group rates of the catalogue
        (:func:`fairest.metrics.get_metric`): e.g. ``"demographic_parity_difference"``,
        ``"equal_opportunity_difference"``, ``"equalized_odds_difference"`` or their
        ``_ratio`` forms.
    tolerance : float, optional
        Allowed unfairness: the largest allowed difference (``"difference"`` metrics,
        default 0.1) or the smallest allowed ratio (``"ratio"`` metrics, default 0.8).
    delta : float, default=0.05
        Probability that any reported interval fails at any time of the stream.
    groups : array-like, optional
        Every group label of the stream. Default: the labels of the first batch (a later
        batch with another label raises ``ValueError``).
    rates : sequence of str, optional
        Names of binary rates of the catalogue to track per group besides the metric's own
        (e.g. ``"true_negative_rate"``, ``"accuracy"``). Default: selection, true positive
        and false positive rates. Every tracked rate costs a share of ``delta``.
    boundary : {"beta-binomial", "normal-mixture"}, default="beta-binomial"
        Confidence sequence of every group rate (see
        :func:`fairest.monitoring.bernoulli_confidence_sequence`).
    restarts : bool, default=False
        Also test the windows of the stream that start after earlier checks, so that a
        change shows within a few checks of happening rather than once it dominates the
        running average. ``delta`` is then split: ``delta / 2`` for the reported
        (cumulative) intervals and ``delta / 2`` for the windows, the window after check
        ``k`` getting ``(delta / 2) / (k (k + 1))``. Window starts are kept at a spacing
        that grows with their age (about 8 per doubling), so a check costs time and memory
        in the logarithm of the number of checks.
    record_history : bool, default=True
        Keep the intervals of every check in ``history_`` (for :meth:`plot`).

    Attributes
    ----------
    groups_ : ndarray
        The group labels, sorted.
    tolerance_ : float
        The tolerance in use (``tolerance`` or its default).
    rates_ : tuple of str
        The tracked rates; the metric's come first.
    n_predictions_ : int
        Predictions seen.
    n_labels_ : int
        Labels seen (with :meth:`update` or :meth:`update_labels`).
    n_checks_ : int
        Checks made: one per :meth:`update` and per :meth:`update_labels` call.
    alarm_ : bool
        The constraint is violated with confidence at the latest check: the metric's lower
        bound exceeds ``tolerance`` (difference) or its upper bound is below it (ratio),
        on the whole stream or (``restarts=True``) on a window of it.
    certified_ : bool
        Compliance so far is certified at the latest check: the upper bound is at most
        ``tolerance`` (difference) or the lower bound at least ``tolerance`` (ratio).
    first_alarm_at_ : int or None
        ``n_predictions_`` at the first check that raised the alarm.
    alarm_window_ : tuple of (int, int) or None
        The rows ``(start, end)`` (counted in predictions) whose intervals raised the latest
        alarm: ``(0, n_predictions_)`` for the whole stream, a later start for a window
        (``restarts=True``); ``None`` without an alarm.
    history_ : dict of ndarray
        Per check: ``"n_predictions"`` (n_checks,), ``"estimate"``, ``"lower"``,
        ``"upper"`` of the metric (n_checks,), and ``"rate_estimate"``, ``"rate_lower"``,
        ``"rate_upper"``, ``"rate_n"`` (n_checks, n_groups, n_rates).

    Notes
    -----
    Validity: each of the ``G x R`` group-rate sequences (``G`` groups, ``R`` tracked
    rates) gets ``delta / (G R)``, so by the union bound all hold together at every time
    with probability at least ``1 - delta``. The metric's interval is the range of the
    metric over the box of the group rates' intervals (for a difference,
    ``[max(0, max_g L_g - min_g U_g), max_g U_g - min_g L_g]``, the worst over the
    metric's rates), so it holds whenever they do. An interval covers the average of the
    rows' conditional rates so far (the rate itself when the stream is stationary): an
    alarm says that the predictions so far, as a whole, violated the constraint. With
    ``restarts=True``, the window after check ``k`` has its own sequences, at
    ``(delta / 2) / (k (k + 1) G R)`` each, covering its rows' average; all windows and the
    cumulative sequences hold together with probability at least ``1 - delta``, so a
    stream whose every window complies (e.g. constant rates within tolerance) raises a
    false alarm with probability at most ``delta``.

    Assumptions: a group's rows may depend on the past only through their conditional
    mean (i.i.d. rows are the simplest case); a missing or late label is missing
    independently of its value and its prediction within the group (labels missing at
    random), and every row's label is fed at most once.

    References
    ----------
    .. [1] S. R. Howard, A. Ramdas, J. McAuliffe and J. Sekhon. "Time-uniform,
       nonparametric, nonasymptotic confidence sequences", Annals of Statistics 49(2),
       1055-1080 (2021).
    .. [2] I. Waudby-Smith and A. Ramdas. "Estimating means of bounded random variables
       by betting", Journal of the Royal Statistical Society Series B 86(1), 1-27 (2024).
    .. [3] B. Chugg, S. Cortes-Gomez, B. Xie, H. Heidari and A. Ramdas. "Auditing
       fairness by betting", NeurIPS (2023).

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.monitoring import FairnessMonitor
    >>> rng = np.random.default_rng(0)
    >>> monitor = FairnessMonitor(tolerance=0.1, delta=0.05)
    >>> for _ in range(20):
    ...     group = rng.integers(0, 2, 10_000)
    ...     y_pred = (rng.random(10_000) < 0.3 + 0.02 * group).astype(int)
    ...     monitor = monitor.update(y_pred, group)
    >>> monitor.n_predictions_, monitor.alarm_, monitor.certified_
    (200000, False, True)
    """

    def __init__(
        self,
        metric="demographic_parity_difference",
        tolerance=None,
        *,
        delta=0.05,
        groups=None,
        rates=None,
        boundary="beta-binomial",
        restarts=False,
        record_history=True,
    ):
        self.metric = metric
        self.tolerance = tolerance
        self.delta = delta
        self.groups = groups
        self.rates = rates
        self.boundary = boundary
        self.restarts = restarts
        self.record_history = record_history
        self._validate()
        self._vocabulary = GroupVocabulary(groups)
        self.groups_ = self._vocabulary.labels_
        self.n_predictions_ = 0
        self.n_labels_ = 0
        self.n_checks_ = 0
        self.alarm_ = False
        self.certified_ = False
        self.first_alarm_at_ = None
        self.alarm_window_ = None
        self._snapshots = {}  # window starts (restarts=True): check -> (n, counts, counts)
        self._prediction_counts = None  # (G, 2): rows by prediction
        self._label_counts = None  # (G, 4): labelled rows by cell 2 * y + y_pred
        self._history = []
        if self.groups_ is not None:
            self._start(self.groups_)

    # ---------------------------------------------------------------- set-up
    def _validate(self):
        self._record = _resolve_metric(self.metric)
        kind = self._record.aggregate
        tolerance = DEFAULT_TOLERANCE[kind] if self.tolerance is None else self.tolerance
        if not isinstance(tolerance, numbers.Real) or isinstance(tolerance, bool):
            raise TypeError(f"tolerance must be a number; got {tolerance!r}.")
        if not 0 <= tolerance <= 1:
            raise ValueError(
                f"tolerance must lie in [0, 1] for {self._record.name!r}; got {tolerance!r}."
            )
        self.tolerance_ = float(tolerance)
        if not isinstance(self.delta, numbers.Real) or not 0 < self.delta < 1:
            raise ValueError(f"delta must be a probability in (0, 1); got {self.delta!r}.")
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"boundary must be one of {BOUNDARIES}; got {self.boundary!r}.")
        if not isinstance(self.restarts, (bool, np.bool_)):
            raise TypeError(f"restarts must be True or False; got {self.restarts!r}.")
        extra = DEFAULT_RATES if self.rates is None else tuple(self.rates)
        unknown = [name for name in extra if name not in RATE_METRICS]
        if unknown:
            raise ValueError(
                f"rates {unknown} are not known rates; choose among {sorted(RATE_METRICS)}."
            )
        rates = list(self._record.rates)
        rates += [RATE_METRICS[name] for name in extra if name not in [r.name for r in rates]]
        non_binary = [rate.name for rate in rates if not rate.binary]
        if non_binary:
            raise ValueError(
                f"rates {non_binary} are not rates of 0/1 predictions and labels; the monitor "
                "tracks binary rates only."
            )
        self.rates_ = tuple(rate.name for rate in rates)
        self._metric_rates = np.arange(len(self._record.rates))
        cells = [_rate_cells(rate) for rate in rates]
        self._needs_labels = np.array([needs for _, _, needs in cells])
        self._numerator_cells = np.stack([numerator for numerator, _, _ in cells], axis=1)
        self._denominator_cells = np.stack([denominator for _, denominator, _ in cells], axis=1)

    def _codes(self, sensitive_features, n_rows: int) -> np.ndarray:
        """Group codes of one batch in the stream's vocabulary."""
        if sensitive_features is None:
            raise ValueError(
                "sensitive_features is required: the monitor compares groups; pass the "
                "group label of every prediction."
            )
        if isinstance(sensitive_features, pd.DataFrame):
            if sensitive_features.shape[1] != 1:
                raise ValueError(
                    "sensitive_features has several columns; join them into one label per "
                    "row, e.g. df['sex'].astype(str) + '|' + df['race'].astype(str)."
                )
            sensitive_features = sensitive_features.iloc[:, 0]
        if isinstance(sensitive_features, (pd.Series, pd.Index)) and isinstance(
            sensitive_features.dtype, pd.CategoricalDtype
        ):
            sensitive_features = pd.Categorical(sensitive_features)
        if isinstance(sensitive_features, pd.Categorical) and self.groups_ is not None:
            codes = self._categorical_codes(sensitive_features, n_rows)
            if codes is not None:
                return codes
        labels = (
            np.asarray(sensitive_features)
            if not isinstance(sensitive_features, (pd.Series, pd.Index))
            else sensitive_features.to_numpy()
        )
        if labels.ndim != 1:
            raise ValueError(
                f"sensitive_features must be 1-D (one label per row); got shape {labels.shape}; "
                "join several columns into one label per row."
            )
        if labels.shape[0] != n_rows:
            raise ValueError(
                f"sensitive_features has {labels.shape[0]} rows but y_pred has {n_rows}; "
                "pass one group label per prediction."
            )
        first = self.groups_ is None
        if first and labels.size == 0:
            raise ValueError(
                "the first batch is empty, so the stream's groups are unknown; pass every "
                "group label with groups= or start with a non-empty batch."
            )
        if labels.dtype.kind in "iu" and not first and self._integer_codes:
            # labels 0..G-1 are their own codes: one range check instead of a search
            if labels.size and (labels.min() < 0 or labels.max() >= self.groups_.size):
                self._vocabulary.codes(labels)  # raises, naming the unseen labels
            return labels
        codes = self._vocabulary.codes(labels)
        if first:
            self._start(self._vocabulary.labels_)
        return codes

    def _categorical_codes(self, categorical, n_rows: int):
        """Codes of a pandas Categorical through its categories (one small lookup), or
        ``None`` when a row's label is missing or unseen (the general path then raises)."""
        if len(categorical) != n_rows:
            return None
        categories = np.asarray(categorical.categories)
        known = self.groups_
        position = np.clip(np.searchsorted(known, categories), 0, known.size - 1)
        mapping = np.where(known[position] == categories, position, -1)
        codes = mapping[categorical.codes] if categories.size else np.full(n_rows, -1)
        codes = np.where(categorical.codes < 0, -1, codes)
        return None if (codes < 0).any() else codes

    def _start(self, labels):
        self.groups_ = labels
        n_groups = labels.size
        self._integer_codes = labels.dtype.kind in "iu" and np.array_equal(
            labels, np.arange(n_groups)
        )
        self._prediction_counts = np.zeros((n_groups, 2), np.int64)
        self._label_counts = np.zeros((n_groups, 4), np.int64)
        # one share of delta per group-rate sequence (union bound); with restarts, half of
        # delta goes to the windows (window_alpha)
        share = self.delta / 2 if self.restarts else self.delta
        self._alpha = share / (n_groups * len(self.rates_))
        if n_groups == 1:
            warnings.warn(
                f"the monitor sees a single group ({plain_label(labels[0])!r}): the gap is 0 by "
                "definition; pass every group label with groups=.",
                FairnessWarning,
                stacklevel=4,
            )

    # ---------------------------------------------------------------- updates
    def update(self, y_pred, sensitive_features, y_true=None):
        """Add a batch of predictions (and, where known, their labels), then check.

        Parameters
        ----------
        y_pred : array-like of shape (n_rows,)
            Predictions, 0 or 1 (or bool).
        sensitive_features : array-like of shape (n_rows,)
            Group label of every prediction.
        y_true : array-like of shape (n_rows,), optional
            True labels, 0 or 1; NaN or masked entries are labels not (yet) known
            (give them later with :meth:`update_labels`).

        Returns
        -------
        self : FairnessMonitor
            The monitor, updated.

        Raises
        ------
        ValueError
            If the inputs are not 0/1, are misaligned, or hold a group unseen at the start.
        """
        predictions, _ = _binary(y_pred, "y_pred", allow_missing=False)
        codes = self._codes(sensitive_features, predictions.shape[0])
        # every input is checked before anything is counted: a bad batch leaves no trace
        cells = None if y_true is None else self._label_cells(y_true, predictions, codes)
        n_groups = self.groups_.size
        counts = np.bincount(2 * codes + predictions, minlength=2 * n_groups)
        self._prediction_counts += counts.reshape(n_groups, 2)
        self.n_predictions_ += int(predictions.shape[0])
        if cells is not None:
            self._add_label_cells(cells)
        self._check()
        return self

    def update_labels(self, y_true, y_pred, sensitive_features):
        """Add labels that arrived after their predictions, then check.

        The predictions were counted by :meth:`update` already; here only the rates that
        need labels (true and false positive rates...) move. Join the labels to their
        predictions and groups with your own keys, and give each label once.

        Parameters
        ----------
        y_true : array-like of shape (n_rows,)
            True labels, 0 or 1 (NaN or masked entries are skipped).
        y_pred : array-like of shape (n_rows,)
            The predictions these labels belong to.
        sensitive_features : array-like of shape (n_rows,)
            Their group labels.

        Returns
        -------
        self : FairnessMonitor
            The monitor, updated.

        Raises
        ------
        ValueError
            If called before any :meth:`update` without ``groups``, or on bad inputs.
        """
        if self.groups_ is None:
            raise ValueError(
                "update_labels before any update: the predictions these labels belong to "
                "were never seen; call update(...) first or pass groups= to the monitor."
            )
        predictions, _ = _binary(y_pred, "y_pred", allow_missing=False)
        codes = self._codes(sensitive_features, predictions.shape[0])
        self._add_label_cells(self._label_cells(y_true, predictions, codes))
        self._check()
        return self

    def _label_cells(self, y_true, predictions, codes) -> np.ndarray:
        """Cell ``4 * group + 2 * y + y_pred`` of every labelled row."""
        labels, present = _binary(y_true, "y_true", allow_missing=True)
        if labels.shape[0] != predictions.shape[0]:
            raise ValueError(
                f"y_true has {labels.shape[0]} rows but y_pred has {predictions.shape[0]}; "
                "use NaN for a label that is not known yet."
            )
        cells = 4 * codes + 2 * labels + predictions
        return cells if present is None else cells[present]

    def _add_label_cells(self, cells):
        n_groups = self.groups_.size
        self._label_counts += np.bincount(cells, minlength=4 * n_groups).reshape(n_groups, 4)
        self.n_labels_ += int(cells.shape[0])

    def update_stream(self, chunks, estimator):
        """Monitor ``estimator`` over a stream of chunks, one check per chunk.

        Parameters
        ----------
        chunks : iterable
            Chunks as accepted by :func:`fairest.io.iter_chunks` (for instance
            :func:`fairest.io.iter_parquet`): ``X``, ``y`` (NaN where a label is not
            known) and ``sensitive_features``, unweighted.
        estimator : fitted classifier
            Its ``predict(X)`` (labels 0 or 1) gives the monitored predictions.

        Returns
        -------
        self : FairnessMonitor
            The monitor, updated once per chunk.

        Raises
        ------
        ValueError
            If a chunk has no ``sensitive_features`` or has ``sample_weight``.
        """
        for index, chunk in enumerate(iter_chunks(chunks)):
            if chunk.sample_weight is not None:
                raise ValueError(
                    f"chunk {index} has sample_weight: the monitor counts predictions "
                    "unweighted; drop the weights or repeat rows."
                )
            self.update(estimator.predict(chunk.X), chunk.sensitive_features, y_true=chunk.y)
        return self

    # ---------------------------------------------------------------- bounds
    def _successes_trials(self, prediction_counts, label_counts):
        """Successes and trials of every tracked rate, shape (..., G, R), from counts of
        shape (..., G, 2) and (..., G, 4)."""
        counts_p = prediction_counts.astype(np.float64)
        counts_l = label_counts.astype(np.float64)
        # label-free rates read every prediction (cells y = 0); the others labelled rows
        free = counts_p @ self._numerator_cells[:2], counts_p @ self._denominator_cells[:2]
        labelled = counts_l @ self._numerator_cells, counts_l @ self._denominator_cells
        successes = np.where(self._needs_labels, labelled[0], free[0])
        trials = np.where(self._needs_labels, labelled[1], free[1])
        return successes, trials

    def _rate_statistics(self):
        """Successes, trials, estimates and interval ends, each (G, R)."""
        successes, trials = self._successes_trials(self._prediction_counts, self._label_counts)
        lower, upper = bernoulli_confidence_sequence(
            successes, trials, self._alpha, boundary=self.boundary
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = np.where(trials > 0, successes / trials, np.nan)
        return estimate, lower, upper, trials

    def _metric_bounds(self, estimate, lower, upper):
        """The metric's estimate and interval over the box of its rates' intervals."""
        rows = self._metric_rates
        value, low, high = metric_box_bounds(
            self._record.aggregate, estimate[:, rows], lower[:, rows], upper[:, rows]
        )
        return value[()], low[()], high[()]

    def _violated(self, low, high):
        """Alarm (violated with confidence) from the metric's interval ends."""
        if self._record.aggregate == "difference":
            return low > self.tolerance_
        return high < self.tolerance_

    def _window_check(self):
        """Whether a window since an earlier check violates the constraint with confidence.

        The window after check ``k`` has its own confidence sequences at
        ``window_alpha(k, ...)``; a window is read only while its start is retained."""
        starts = np.array(sorted(self._snapshots), dtype=np.int64)
        alarm = False
        if starts.size:
            snapshots = [self._snapshots[k] for k in starts]
            predictions = self._prediction_counts - np.stack([p for _, p, _ in snapshots])
            labels = self._label_counts - np.stack([lab for _, _, lab in snapshots])
            successes, trials = self._successes_trials(predictions, labels)
            rows = self._metric_rates
            alpha = window_alpha(starts, self.delta, self.groups_.size * len(self.rates_))
            lower, upper = bernoulli_confidence_sequence(
                successes[..., rows],
                trials[..., rows],
                alpha[:, None, None],
                boundary=self.boundary,
            )
            _, low, high = metric_box_bounds(self._record.aggregate, None, lower, upper)
            violated = self._violated(low, high)
            if violated.any():
                alarm = True
                worst = (
                    np.argmax(low) if self._record.aggregate == "difference" else np.argmin(high)
                )
                self.alarm_window_ = (int(snapshots[worst][0]), self.n_predictions_)
        k = self.n_checks_
        self._snapshots[k] = (
            self.n_predictions_,
            self._prediction_counts.copy(),
            self._label_counts.copy(),
        )
        kept = retained_starts(np.array(sorted(self._snapshots)), k + 1)
        self._snapshots = {start: self._snapshots[start] for start in kept}
        return alarm

    def _check(self):
        self.n_checks_ += 1
        estimate, lower, upper, trials = self._rate_statistics()
        value, low, high = self._metric_bounds(estimate, lower, upper)
        self.alarm_window_ = None
        self.alarm_ = bool(self._violated(low, high))
        if self.alarm_:
            self.alarm_window_ = (0, self.n_predictions_)
        if self.restarts:
            window_alarm = self._window_check()
            self.alarm_ = self.alarm_ or window_alarm
        if self._record.aggregate == "difference":
            self.certified_ = bool(high <= self.tolerance_)
        else:
            self.certified_ = bool(low >= self.tolerance_)
        if self.alarm_ and self.first_alarm_at_ is None:
            self.first_alarm_at_ = self.n_predictions_
        self._latest = (estimate, lower, upper, trials, value, low, high)
        if self.record_history:
            self._history.append((self.n_predictions_, *self._latest))

    # ---------------------------------------------------------------- outputs
    def _check_started(self, what: str):
        if self.n_checks_ == 0:
            raise ValueError(f"{what}: the monitor has seen no batch yet; call update(...) first.")

    def report(self):
        """The latest intervals: every group's rates and the metric.

        Returns
        -------
        report : pandas.DataFrame
            Indexed by ``(quantity, group)``: one row per tracked rate and group, and one
            row for the metric (group ``"all"``), with columns ``estimate``, ``lower``,
            ``upper`` (valid together, at every check, with probability at least
            ``1 - delta``) and ``n`` (eligible rows; the metric's is their sum over the
            groups of its first rate).

        Raises
        ------
        ValueError
            If no batch was seen yet.
        """
        self._check_started("report")
        estimate, lower, upper, trials, value, low, high = self._latest
        groups = [g.item() if hasattr(g, "item") else g for g in self.groups_]
        index = pd.MultiIndex.from_product([self.rates_, groups], names=["quantity", "group"])
        frame = pd.DataFrame(
            {
                "estimate": estimate.T.ravel(),
                "lower": lower.T.ravel(),
                "upper": upper.T.ravel(),
                "n": trials.T.ravel().astype(np.int64),
            },
            index=index,
        )
        metric_row = pd.DataFrame(
            {
                "estimate": [value],
                "lower": [low],
                "upper": [high],
                "n": [int(trials[:, 0].sum())],
            },
            index=pd.MultiIndex.from_tuples([(self._record.name, "all")], names=index.names),
        )
        return pd.concat([frame, metric_row])

    @property
    def history_(self):
        """Intervals of every check, as numpy arrays (see the class docstring).

        Returns
        -------
        history : dict of ndarray
            Empty arrays before the first check or with ``record_history=False``.
        """
        if not self._history:
            n_groups = 0 if self.groups_ is None else self.groups_.size
            empty = np.zeros((0, n_groups, len(self.rates_)))
            return {
                "n_predictions": np.zeros(0, np.int64),
                **{key: np.zeros(0) for key in ("estimate", "lower", "upper")},
                **{f"rate_{key}": empty for key in ("estimate", "lower", "upper", "n")},
            }
        columns = list(zip(*self._history))
        return {
            "n_predictions": np.asarray(columns[0], np.int64),
            "rate_estimate": np.stack(columns[1]),
            "rate_lower": np.stack(columns[2]),
            "rate_upper": np.stack(columns[3]),
            "rate_n": np.stack(columns[4]),
            "estimate": np.asarray(columns[5], float),
            "lower": np.asarray(columns[6], float),
            "upper": np.asarray(columns[7], float),
        }

    def plot(self, *, rate=None, ax=None):
        """Draw the confidence sequences over the stream (matplotlib, imported lazily).

        Parameters
        ----------
        rate : str, optional
            A tracked rate: draw every group's interval of it. Default: the metric's
            interval with the tolerance line and the first alarm marked.
        ax : matplotlib Axes, optional
            Where to draw; default: a new pyplot-free Figure.

        Returns
        -------
        ax : matplotlib Axes
            The Axes drawn on.

        Raises
        ------
        ValueError
            If no history was recorded or ``rate`` is not tracked.
        """
        from fairest.plot._common import get_axes, group_colors

        history = self.history_
        if history["n_predictions"].size == 0:
            raise ValueError("plot: no history; call update(...) first, with record_history=True.")
        if rate is not None and rate not in self.rates_:
            raise ValueError(f"rate={rate!r} is not tracked; choose among {self.rates_}.")
        ax = get_axes(ax)
        x = history["n_predictions"]
        if rate is None:
            ax.fill_between(
                x,
                history["lower"],
                history["upper"],
                alpha=0.3,
                step="post",
                label=f"{100 * (1 - self.delta):g}% confidence sequence",
            )
            ax.step(x, history["estimate"], where="post", label="estimate")
            ax.axhline(self.tolerance_, color="black", linestyle="--", label="tolerance")
            if self.first_alarm_at_ is not None:
                ax.axvline(self.first_alarm_at_, color="red", linestyle=":", label="first alarm")
            ax.set_ylabel(self._record.name)
        else:
            column = self.rates_.index(rate)
            for k, (group, color) in enumerate(zip(self.groups_, group_colors(self.groups_.size))):
                ax.fill_between(
                    x,
                    history["rate_lower"][:, k, column],
                    history["rate_upper"][:, k, column],
                    color=color,
                    alpha=0.25,
                    step="post",
                )
                ax.step(
                    x,
                    history["rate_estimate"][:, k, column],
                    where="post",
                    color=color,
                    label=str(group),
                )
            ax.set_ylabel(rate)
        ax.set_xlabel("predictions seen")
        ax.legend(loc="best")
        return ax
