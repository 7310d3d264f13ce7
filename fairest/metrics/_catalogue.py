"""The one catalogue of fairness metrics: one record per metric name.

A :class:`FairnessMetric` says everything the library needs to know about a metric:

* ``name``: fairlearn's name, with fairlearn's meaning, where fairlearn defines the metric;
* ``function``: the exact numpy function, with fairlearn's signature
  ``f(y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None)``
  for the metrics of group rates (metrics of scores take ``scores`` for ``y_pred`` and no
  ``method``);
* ``rates`` and ``aggregate``: for a metric of per-group weighted rates
  (:class:`~fairest.metrics._rates.RateMetric`), the rates it compares and how
  (``"difference"``: the largest between-group difference of any of its rates;
  ``"ratio"``: the smallest between-group ratio). These are what
  :class:`~fairest.metrics.MetricFrame`, the certified bounds, the post-processor and
  :func:`~fairest.fairness_path` work from;
* ``surrogate``: its smooth JAX surrogate in :mod:`fairest.metrics._smooth`, where one
  exists (imported on first use: importing the catalogue imports no JAX);
* ``kinds``: what ``y_pred`` may be: ``"labels"`` (hard predictions), ``"scores"``
  (decision scores), ``"probabilities"`` (of the positive class) or ``"regression"``
  outputs.

Every consumer looks names up here (:func:`get_metric`); :func:`register_metric` adds a
metric that all of them can then use, and :func:`rate_metric` builds the record (and its
exact function) of a new comparison of rates.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fairest.metrics._rates import RATE_METRICS, RateMetric, fairlearn_rate

__all__ = [
    "FairnessMetric",
    "KINDS",
    "LOG_LOSS_CLIP",
    "LOG_LOSS_MAX",
    "catalogue",
    "get_metric",
    "rate_metric",
    "register_metric",
    "unregister_metric",
]

KINDS = ("labels", "scores", "probabilities", "regression")
AGGREGATES = ("difference", "ratio")
# estimators' ``metric`` values that name a difference of the catalogue under a family's
# short name (the post-processor's and ERMI's; judged by fairlearn's metric)
METRIC_ALIASES = {
    "demographic_parity": "demographic_parity_difference",
    "equal_opportunity": "equal_opportunity_difference",
    "equalized_odds": "equalized_odds_difference",
}

# the log-loss is clipped at probabilities [LOG_LOSS_CLIP, 1 - LOG_LOSS_CLIP], so it lies in
# [0, LOG_LOSS_MAX] and a bound on means of [0, 1] values applies after division by it
LOG_LOSS_CLIP = 1e-2
LOG_LOSS_MAX = float(-np.log(LOG_LOSS_CLIP))


def _resolve(reference):
    """A callable, or the object a ``"module:attribute"`` reference names."""
    if not isinstance(reference, str):
        return reference
    module, attribute = reference.split(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class FairnessMetric:
    """One fairness metric of the catalogue (see :func:`register_metric`).

    Parameters
    ----------
    name : str
        The metric's one name (fairlearn's where fairlearn defines the metric, with its
        meaning).
    function : callable or str
        The exact numpy metric ``function(y_true, y_pred, *, sensitive_features, ...,
        sample_weight=None)``, or a ``"module:attribute"`` reference to it (imported on
        first call).
    meaning : str
        What the value is, in one sentence.
    kinds : tuple of str
        What ``y_pred`` may be: ``"labels"``, ``"scores"``, ``"probabilities"``,
        ``"regression"``.
    rates : tuple of RateMetric, default=()
        The per-group weighted rates the metric is built from (empty for a metric that
        is not a comparison of rates).
    aggregate : {"difference", "ratio"} or None, default=None
        How ``rates`` are compared: the largest between-group difference (max - min,
        smaller is fairer) or the smallest between-group ratio (min / max, larger is
        fairer), the worst over the rates.
    surrogate : callable or str, default=None
        Its smooth JAX surrogate (a ``"module:attribute"`` reference keeps JAX unloaded
        until it is used).
    fairlearn : bool, default=False
        Whether :mod:`fairlearn.metrics` defines ``name`` (then ``function`` gives
        fairlearn's value).
    scale : float, default=1.0
        The rates' per-row values are the quantity divided by ``scale`` (so that they lie
        in [0, 1]); the metric is in the quantity's units.
    """

    name: str
    function: Callable | str
    meaning: str
    kinds: tuple[str, ...]
    rates: tuple[RateMetric, ...] = ()
    aggregate: str | None = None
    surrogate: Callable | str | None = None
    fairlearn: bool = False
    scale: float = 1.0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"a metric name must be an identifier; got {self.name!r}.")
        unknown = [kind for kind in self.kinds if kind not in KINDS]
        if not self.kinds or unknown:
            raise ValueError(
                f"kinds of {self.name!r} must be a non-empty subset of {KINDS}; got {self.kinds!r}."
            )
        if self.aggregate is not None and self.aggregate not in AGGREGATES:
            raise ValueError(
                f"aggregate of {self.name!r} must be one of {AGGREGATES} or None; got "
                f"{self.aggregate!r}."
            )
        if bool(self.rates) != (self.aggregate is not None):
            raise ValueError(
                f"{self.name!r}: give rates and aggregate together (a comparison of "
                "rates), or neither."
            )
        if not all(isinstance(rate, RateMetric) for rate in self.rates):
            raise TypeError(f"rates of {self.name!r} must be RateMetric records.")

    def __call__(self, y_true, y_pred, **params):
        """The exact value: ``function(y_true, y_pred, **params)``."""
        return _resolve(self.function)(y_true, y_pred, **params)

    @property
    def exact(self) -> Callable:
        """The exact numpy function (imported on first access)."""
        return _resolve(self.function)

    @property
    def smooth(self) -> Callable | None:
        """The smooth JAX surrogate, or None (importing it imports JAX)."""
        return None if self.surrogate is None else _resolve(self.surrogate)

    @property
    def rate_labels(self) -> tuple[str, ...]:
        """Short names of the rates (``"selection"``, ``"tpr"``, ...)."""
        return tuple(rate.label or rate.name for rate in self.rates)


class _RateComparison:
    """The exact function of a comparison of rates (see :func:`rate_metric`)."""

    def __init__(self, name, rates, aggregate, labels, scale):
        self.__name__ = name
        self.rates, self.aggregate, self.labels, self.scale = rates, aggregate, labels, scale

    def __repr__(self) -> str:
        return f"<fairness metric {self.__name__}>"

    def __call__(
        self, y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
    ) -> float:
        from fairest.metrics._checks import as_binary_labels, check_metric_inputs
        from fairest.metrics._group_stats import group_rates
        from fairest.metrics._parity import rate_difference, rate_ratio

        inputs = check_metric_inputs(y_true, y_pred, sensitive_features, sample_weight)
        y = as_binary_labels(inputs.y_true, "y_true")
        if self.labels:
            p = as_binary_labels(inputs.y_pred, "y_pred")
        else:
            p = np.asarray(inputs.y_pred, dtype=np.float64)
        values = []
        for rate in self.rates:
            hits, eligible = rate.hits(y, p), rate.eligible(y, p)
            rates = group_rates(inputs.codes, inputs.num_groups, hits, inputs.weights, eligible)
            if self.aggregate == "difference":
                values.append(rate_difference(rates, method) * self.scale)
            else:
                values.append(rate_ratio(rates, method))
        return float(max(values) if self.aggregate == "difference" else min(values))


def rate_metric(
    name: str,
    rates,
    *,
    aggregate: str = "difference",
    meaning: str = "",
    kinds=("labels",),
    surrogate=None,
    scale: float = 1.0,
) -> FairnessMetric:
    """The record of a comparison of per-group rates, with its exact function.

    The function has fairlearn's signature ``f(y_true, y_pred, *, sensitive_features,
    method="between_groups", sample_weight=None)`` and fairlearn's conventions: labels
    coded {0, 1} or {-1, 1}; a group without eligible rows (e.g. without positives for a
    true positive rate) has the rate 0; ``method="to_overall"`` compares each group with
    the overall rate; with several rates the worst one counts.

    Parameters
    ----------
    name : str
        The metric's name.
    rates : sequence of str or RateMetric
        The rates compared: records, or names of built-in rates (e.g.
        ``"false_negative_rate"``; the confusion-matrix rates as fairlearn defines them).
    aggregate : {"difference", "ratio"}, default="difference"
        Largest between-group difference (max - min) or smallest ratio (min / max).
    meaning : str, default=""
        One sentence; by default "the <aggregate> of <rates> between groups".
    kinds : tuple of str, default=("labels",)
        What ``y_pred`` may be.
    surrogate : callable or str, default=None
        Its smooth JAX surrogate, if any.
    scale : float, default=1.0
        See :class:`FairnessMetric`.

    Returns
    -------
    FairnessMetric
        Not registered: pass it to :func:`register_metric`.

    Examples
    --------
    >>> from fairest.metrics import rate_metric
    >>> fnr_gap = rate_metric("false_negative_rate_difference", ["false_negative_rate"])
    >>> fnr_gap([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=["a", "a", "b", "b"])
    0.5
    """
    records = tuple(
        fairlearn_rate(rate) if isinstance(rate, str) and rate in RATE_METRICS else rate
        for rate in rates
    )
    unknown = [rate for rate in records if not isinstance(rate, RateMetric)]
    if unknown:
        raise ValueError(
            f"rates of {name!r} must be RateMetric records or names of built-in rates "
            f"{tuple(RATE_METRICS)}; got {unknown!r}."
        )
    words = " and ".join(rate.name.replace("_", " ") for rate in records)
    kinds = tuple(kinds)
    return FairnessMetric(
        name=name,
        function=_RateComparison(name, records, aggregate, "labels" in kinds, float(scale)),
        meaning=meaning or f"the between-group {aggregate} of the {words}",
        kinds=kinds,
        rates=records,
        aggregate=aggregate,
        surrogate=surrogate,
        scale=float(scale),
    )


# ---------------------------------------------------------------------------------------
# the built-in records


def _log_loss_rate() -> RateMetric:
    def hits(y, p):
        clipped = np.clip(p, LOG_LOSS_CLIP, 1.0 - LOG_LOSS_CLIP)
        return -np.log(np.where(y == 1, clipped, 1.0 - clipped)) / LOG_LOSS_MAX

    return RateMetric("log_loss", hits, binary=False, label="log_loss")


def _built_in() -> dict[str, FairnessMetric]:
    selection, tpr, fpr = (
        fairlearn_rate(name)
        for name in ("selection_rate", "true_positive_rate", "false_positive_rate")
    )
    from fairest.metrics._regression import ABSOLUTE_ERROR, SQUARED_ERROR

    parity = "fairest.metrics._parity:"
    regression = "fairest.metrics._regression:"
    exact = "fairest.metrics._exact:"
    smooth = "fairest.metrics._smooth:"
    ermi = "fairest.metrics._ermi:"
    records = [
        FairnessMetric(
            "demographic_parity_difference",
            parity + "demographic_parity_difference",
            "largest between-group difference of the selection rates P(h = 1 | A = a)",
            ("labels",),
            (selection,),
            "difference",
            fairlearn=True,
        ),
        FairnessMetric(
            "demographic_parity_ratio",
            parity + "demographic_parity_ratio",
            "smallest between-group ratio of the selection rates",
            ("labels",),
            (selection,),
            "ratio",
            fairlearn=True,
        ),
        FairnessMetric(
            "equal_opportunity_difference",
            parity + "equal_opportunity_difference",
            "largest between-group difference of the true positive rates",
            ("labels",),
            (tpr,),
            "difference",
            fairlearn=True,
        ),
        FairnessMetric(
            "equal_opportunity_ratio",
            parity + "equal_opportunity_ratio",
            "smallest between-group ratio of the true positive rates",
            ("labels",),
            (tpr,),
            "ratio",
            fairlearn=True,
        ),
        FairnessMetric(
            "equalized_odds_difference",
            parity + "equalized_odds_difference",
            "the larger of the between-group differences of the true and of the false "
            "positive rates",
            ("labels",),
            (tpr, fpr),
            "difference",
            fairlearn=True,
        ),
        FairnessMetric(
            "equalized_odds_ratio",
            parity + "equalized_odds_ratio",
            "the smaller of the between-group ratios of the true and of the false positive rates",
            ("labels",),
            (tpr, fpr),
            "ratio",
            fairlearn=True,
        ),
        rate_metric(
            "zero_one_loss_gap",
            [RATE_METRICS["zero_one_loss"]],
            meaning="largest between-group difference of the error rates (0-1 loss)",
        ),
        rate_metric(
            "log_loss_gap",
            [_log_loss_rate()],
            meaning=(
                "largest between-group difference of the mean log-loss, probabilities "
                f"clipped to [{LOG_LOSS_CLIP}, {1 - LOG_LOSS_CLIP}]"
            ),
            kinds=("probabilities",),
            scale=LOG_LOSS_MAX,
        ),
        FairnessMetric(
            "demographic_parity_deviation",
            exact + "demographic_parity_deviation",
            "BADR: largest deviation of a group's positive rate (mean score for "
            "regression) from the unweighted mean over the groups",
            ("scores", "regression"),
            surrogate=smooth + "smooth_demographic_parity",
        ),
        FairnessMetric(
            "equal_opportunity_range",
            exact + "equal_opportunity_range",
            "BADR: range of the group true positive rates of 1[s >= threshold], groups "
            "without positives left out",
            ("scores",),
            surrogate=smooth + "smooth_equal_opportunity",
        ),
        FairnessMetric(
            "equalized_odds_range",
            exact + "equalized_odds_range",
            "BADR: mean of the TPR range and the FPR range of 1[s >= threshold]",
            ("scores",),
            surrogate=smooth + "smooth_equalized_odds",
        ),
        FairnessMetric(
            "group_loss_variance",
            exact + "group_loss_variance",
            "BADR: variance across groups of the mean model loss",
            ("scores", "regression"),
            surrogate=smooth + "smooth_group_loss_variance",
        ),
        FairnessMetric(
            "individual_fairness",
            exact + "individual_fairness",
            "BADR: cross-group Lipschitz penalty of the scores (Laplace kernel on labels)",
            ("scores", "regression"),
            surrogate=smooth + "smooth_individual_fairness",
        ),
        FairnessMetric(
            "demographic_parity_violation",
            ermi + "demographic_parity_violation",
            "ERMI: largest between-group difference, over the classes, of the share of hard "
            "multi-class predictions of that class (the paper's pairwise eq. (10))",
            ("labels",),
        ),
        FairnessMetric(
            "equalized_odds_violation",
            ermi + "equalized_odds_violation",
            "ERMI: largest between-group difference, over true and predicted classes, of "
            "the share of predictions of a class among the rows of a true class",
            ("labels",),
        ),
        FairnessMetric(
            "ermi",
            ermi + "ermi",
            "ERMI: exponential Renyi mutual information between the predicted class "
            "probabilities (or labels) and the groups; 0 when independent",
            ("labels", "probabilities"),
        ),
        FairnessMetric(
            "conditional_ermi",
            ermi + "conditional_ermi",
            "ERMI: exponential Renyi mutual information between predictions and groups "
            "given the true label (equalized odds); 0 when conditionally independent",
            ("labels", "probabilities"),
        ),
        FairnessMetric(
            "exposure_difference",
            "fairest.selection._exposure:exposure_difference",
            "largest difference of the groups' mean position-weighted exposure "
            "1/log2(1 + rank) in the ranking by score (0: equal attention)",
            ("scores", "probabilities", "regression"),
        ),
        FairnessMetric(
            "exposure_ratio",
            "fairest.selection._exposure:exposure_ratio",
            "smallest ratio of the groups' mean position-weighted exposure in the ranking "
            "by score (1: equal attention)",
            ("scores", "probabilities", "regression"),
        ),
        FairnessMetric(
            "disparate_mistreatment",
            exact + "disparate_mistreatment",
            "BADR: squared covariance between the group variable and the scores",
            ("scores", "regression"),
            surrogate=smooth + "smooth_disparate_mistreatment",
        ),
        FairnessMetric(
            "hsic_linear",
            exact + "hsic_linear",
            "BADR: HSIC between the group variable and the scores, linear kernels",
            ("scores", "regression"),
            surrogate=smooth + "smooth_hsic_linear",
        ),
        FairnessMetric(
            "prediction_ks_distance",
            regression + "prediction_ks_distance",
            "largest between-group Kolmogorov-Smirnov distance of the prediction "
            "distributions (demographic parity of a regressor)",
            ("regression",),
        ),
        FairnessMetric(
            "prediction_w1_distance",
            regression + "prediction_w1_distance",
            "largest between-group Wasserstein-1 distance of the prediction distributions, "
            "in the target's units",
            ("regression",),
        ),
        FairnessMetric(
            "prediction_w2_unfairness",
            regression + "prediction_w2_unfairness",
            "share-weighted mean squared Wasserstein-2 distance of the groups' prediction "
            "distributions to their barycenter (Chzhen and Schreuder's unfairness)",
            ("regression",),
        ),
        FairnessMetric(
            "mean_squared_error_gap",
            regression + "mean_squared_error_gap",
            "largest between-group difference of the mean squared errors (bounded group loss)",
            ("regression",),
            (SQUARED_ERROR,),
            "difference",
        ),
        FairnessMetric(
            "mean_absolute_error_gap",
            regression + "mean_absolute_error_gap",
            "largest between-group difference of the mean absolute errors (bounded group loss)",
            ("regression",),
            (ABSOLUTE_ERROR,),
            "difference",
        ),
    ]
    return {record.name: record for record in records}


_CATALOGUE: dict[str, FairnessMetric] = _built_in()


def catalogue() -> dict[str, FairnessMetric]:
    """Every registered fairness metric by name, in registration order (a copy).

    Returns
    -------
    dict of str to FairnessMetric
        The records; changing the dict does not change the catalogue.

    Examples
    --------
    >>> from fairest.metrics import catalogue
    >>> catalogue()["equalized_odds_difference"].rate_labels
    ('tpr', 'fpr')
    """
    return dict(_CATALOGUE)


def get_metric(name) -> FairnessMetric:
    """The record of the fairness metric ``name``.

    Parameters
    ----------
    name : str or FairnessMetric
        A registered name (a record is returned as it is).

    Returns
    -------
    FairnessMetric
        Its record.

    Raises
    ------
    ValueError
        If ``name`` is not registered; the message lists the known names.

    Examples
    --------
    >>> from fairest.metrics import get_metric
    >>> get_metric("demographic_parity_difference").aggregate
    'difference'
    """
    if isinstance(name, FairnessMetric):
        return name
    if not isinstance(name, str) or name not in _CATALOGUE:
        raise ValueError(
            f"unknown fairness metric {name!r}; the catalogue knows {tuple(_CATALOGUE)} "
            "(add one with fairest.metrics.register_metric)."
        )
    return _CATALOGUE[name]


def register_metric(record: FairnessMetric, *, replace: bool = False) -> FairnessMetric:
    """Add a fairness metric to the catalogue, where every consumer finds it by name.

    Once registered, ``record.name`` works in :class:`~fairest.metrics.MetricFrame`
    (a comparison of one rate: the frame holds that rate per group),
    :func:`~fairest.model_selection.make_fairness_scorer`,
    :func:`~fairest.fairness_path` (``metric=``), the certified bounds
    (:func:`~fairest.certified.certify_fairness`, :func:`~fairest.certified.fairness_interval`:
    comparisons of label rates or of scaled probability losses) and
    :class:`~fairest.postprocessing.GroupThresholdClassifier` (differences of label
    rates that thresholds move: selection, true / false positive and negative rates).

    Parameters
    ----------
    record : FairnessMetric
        The metric (see :func:`rate_metric` for a comparison of rates).
    replace : bool, default=False
        Allow replacing a registered metric of the same name.

    Returns
    -------
    FairnessMetric
        ``record``.

    Raises
    ------
    TypeError
        If ``record`` is not a :class:`FairnessMetric`.
    ValueError
        If the name is taken and ``replace`` is False.

    Examples
    --------
    >>> from fairest.metrics import rate_metric, register_metric, unregister_metric
    >>> record = register_metric(
    ...     rate_metric("false_negative_rate_difference", ["false_negative_rate"]))
    >>> unregister_metric("false_negative_rate_difference").name
    'false_negative_rate_difference'
    """
    if not isinstance(record, FairnessMetric):
        raise TypeError(
            f"register_metric takes a FairnessMetric (see rate_metric); got "
            f"{type(record).__name__}."
        )
    if record.name in _CATALOGUE and not replace:
        raise ValueError(
            f"a fairness metric named {record.name!r} is registered; pass replace=True "
            "to replace it, or choose another name."
        )
    _CATALOGUE[record.name] = record
    return record


def unregister_metric(name: str) -> FairnessMetric:
    """Remove a registered fairness metric and return its record.

    Parameters
    ----------
    name : str
        A registered name.

    Returns
    -------
    FairnessMetric
        The removed record.

    Raises
    ------
    ValueError
        If ``name`` is not registered.

    Examples
    --------
    >>> from fairest.metrics import rate_metric, register_metric, unregister_metric
    >>> _ = register_metric(rate_metric("tnr_gap", ["true_negative_rate"]))
    >>> unregister_metric("tnr_gap").rate_labels
    ('tnr',)
    """
    record = get_metric(name)
    del _CATALOGUE[record.name]
    return record
