"""Fairness certificates of fitted models on held-out data, and metric intervals."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from numbers import Real
from typing import NamedTuple

import numpy as np
import pandas as pd
from sklearn import get_config
from sklearn.utils.metadata_routing import MetadataRouter, get_routing_for_object

from fairest.certified._bounds import (
    BOUNDS,
    METRICS,
    MetricInterval,
    constraint_delta,
    metric_interval,
    rate_statistics,
)
from fairest.certified._checks import (
    check_not_regressor,
    check_within,
    model_classes,
    warn_if_near_constant,
)
from fairest.certified._shift import (
    DemographicShift,
    encode_shift_features,
    shift_interval,
    shift_statistics,
)
from fairest.metrics._checks import check_labels, check_same_length, encode_sensitive_features

__all__ = [
    "ConstraintResult",
    "FairnessCertificate",
    "certify_fairness",
    "fairness_interval",
    "check_constraints",
]

_BOUND_NAMES = {
    "clopper-pearson": "exact Clopper-Pearson",
    "hoeffding": "exact Hoeffding",
    "bernstein": "exact empirical Bernstein",
    "student-t": "approximate Student-t",
    "bootstrap": "approximate bootstrap",
}


def check_constraints(constraints) -> list[tuple[str, float]]:
    """``[(metric, tolerance), ...]`` from a list of pairs or a dict; clear errors."""
    if isinstance(constraints, dict):
        constraints = list(constraints.items())
    if isinstance(constraints, tuple) and len(constraints) == 2 and isinstance(constraints[0], str):
        constraints = [constraints]
    try:
        pairs = [(metric, tolerance) for metric, tolerance in constraints]
    except (TypeError, ValueError):
        raise ValueError(
            "constraints must be a list of (metric, tolerance) pairs, e.g. "
            f"[('demographic_parity_difference', 0.05)]; got {constraints!r}."
        ) from None
    if not pairs:
        raise ValueError("constraints is empty; give at least one (metric, tolerance) pair.")
    checked = []
    for metric, tolerance in pairs:
        if metric not in METRICS:
            raise ValueError(
                f"unknown metric {metric!r} in constraints; use one of {tuple(METRICS)}."
            )
        largest = METRICS[metric].scale  # the largest value of its rates' quantity
        if not isinstance(tolerance, Real) or not 0.0 <= float(tolerance) <= largest:
            raise ValueError(
                f"the tolerance of {metric!r} must be a number in [0, {largest:.4g}]; "
                f"got {tolerance!r}."
            )
        checked.append((metric, float(tolerance)))
    if len({metric for metric, _ in checked}) < len(checked):
        raise ValueError("constraints names a metric twice; give each metric once.")
    return checked


def check_delta_and_bound(delta, bound, n_comparisons=1) -> None:
    """Validate the confidence settings shared by every entry point."""
    if not isinstance(delta, Real) or not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta must be a probability in (0, 1); got {delta!r}.")
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {tuple(BOUNDS)}; got {bound!r}.")
    if isinstance(n_comparisons, bool) or not isinstance(n_comparisons, (int, np.integer)):
        raise ValueError(f"n_comparisons must be a positive integer; got {n_comparisons!r}.")
    if n_comparisons < 1:
        raise ValueError(f"n_comparisons must be a positive integer; got {n_comparisons!r}.")


@dataclass
class ConstraintResult:
    """The certificate of one constraint (see :class:`FairnessCertificate`).

    Parameters
    ----------
    metric : str
        The metric's name.
    tolerance : float
        Its tolerance.
    delta_share : float
        The constraint's share of ``delta``.
    bound : str
        The bound type.
    exact : bool
        Whether the bound is a finite-sample bound.
    kind : {"difference", "ratio"}
        Differences and gaps are certified by their upper bound, ratios by their lower.
    certified_bound : float
        The end of the interval checked against the tolerance.
    lower_bound, upper_bound : float
        The interval of the metric.
    estimate : float
        The metric on the held-out rows.
    passed : bool
        Whether the constraint is certified.
    group_labels : ndarray of shape (G,)
        The groups.
    rate_names : tuple of str
        The rates of the metric (rows of the group arrays).
    group_estimate, group_lower, group_upper : ndarray of shape (R, G)
        Observed group rates and their bounds.
    group_count : ndarray of shape (R, G)
        Rows behind each group rate.
    shift_reason : str or None
        Under a demographic shift: why the interval is vacuous (a value of the shift
        attribute the deployment may hold with no held-out row), else ``None``.
    """

    metric: str
    tolerance: float
    delta_share: float
    bound: str
    exact: bool
    kind: str
    certified_bound: float
    lower_bound: float
    upper_bound: float
    estimate: float
    passed: bool
    group_labels: np.ndarray
    rate_names: tuple
    group_estimate: np.ndarray
    group_lower: np.ndarray
    group_upper: np.ndarray
    group_count: np.ndarray
    shift_reason: str | None = None

    @property
    def relation(self) -> str:
        """``"<="`` for a difference or gap, ``">="`` for a ratio."""
        return "<=" if self.kind == "difference" else ">="

    def bound_clause(self) -> str:
        """Describe the certified bound.

        Returns
        -------
        str
            ``"<metric> is at most <bound> (estimate ...; bound type, delta share ...)"``.
        """
        side = "at most" if self.kind == "difference" else "at least"
        return (
            f"{self.metric} is {side} {self.certified_bound:.4g} (estimate "
            f"{self.estimate:.4g}; {_BOUND_NAMES[self.bound]}, delta share {self.delta_share:.3g})"
        )

    def verdict(self) -> str:
        """Describe the verdict.

        Returns
        -------
        str
            ``"<metric> <= <tolerance> is certified"`` (or ``NOT certified``).
        """
        verdict = "certified" if self.passed else "NOT certified"
        return f"{self.metric} {self.relation} {self.tolerance:g} is {verdict}"


@dataclass
class FairnessCertificate:
    """What a held-out test promises about a model's fairness on the population.

    With probability at least ``1 - delta`` over the draw of the ``n_certification``
    held-out rows (i.i.d. from the population the promise is about, and never used to
    fit or choose the model), every interval of every constraint holds at once. A
    constraint *passes* when its interval lies within its tolerance (upper end for the
    ``*_difference`` / ``*_gap`` metrics, lower end for the ``*_ratio`` metrics). With an
    approximate bound (``"student-t"``, ``"bootstrap"``) the level is asymptotic only.

    Parameters
    ----------
    constraints : list of ConstraintResult
        Per constraint: ``metric``, ``tolerance``, ``delta_share`` (its part of
        ``delta``), ``bound``, ``exact``, ``certified_bound`` (the end checked against the
        tolerance), ``lower_bound``, ``upper_bound``, ``estimate`` (on the held-out rows),
        ``passed`` and the per-group arrays (shape (R, G): rates by groups)
        ``group_estimate``, ``group_lower``, ``group_upper``, ``group_count``.
    delta : float
        Total error probability of the certificate.
    bound : str
        The bound type.
    n_comparisons : int
        Models compared on these held-out rows before one was kept; ``delta`` was divided
        by it.
    n_certification : int
        Held-out rows of the test (the safety part).
    n_candidate : int or None
        Rows the model was fitted and chosen on (known for
        :class:`CertifiedFairClassifier`; ``None`` post hoc).
    random_state : int or None
        Seed of the split (and of the bootstrap).
    selection : str
        How the model was chosen, in words.
    shift : DemographicShift or None
        The declared deployment distribution of the shift attribute: the promise is then
        about every population with ``P(X, Y, S | T)`` unchanged and the shares of ``T``
        in that set, not about the held-out rows' population.
    shift_attribute : str
        The name of ``T`` in the sentence.
    """

    constraints: list = field(default_factory=list)
    delta: float = 0.05
    bound: str = "clopper-pearson"
    n_comparisons: int = 1
    n_certification: int = 0
    n_candidate: int | None = None
    random_state: int | None = None
    selection: str = "post hoc: a fitted model tested on data it never saw"
    shift: DemographicShift | None = None
    shift_attribute: str = "T"

    @property
    def reason(self) -> str | None:
        """Why the certificate failed ("no solution found: ..."); ``None`` if it passed."""
        if self.passed:
            return None
        failed = [r for r in self.constraints if not r.passed]
        for result in failed:
            if result.shift_reason:
                return f"no solution found: {result.shift_reason}"
        causes = "; ".join(
            f"{r.metric} is bounded only {'below' if r.kind == 'difference' else 'above'} "
            f"{r.certified_bound:.4g} (tolerance {r.tolerance:g}, estimate {r.estimate:.4g})"
            for r in failed
        )
        return f"no solution found: {causes}"

    @property
    def passed(self) -> bool:
        """Whether every constraint is certified."""
        return all(result.passed for result in self.constraints)

    @property
    def exact(self) -> bool:
        """Whether every bound is a finite-sample bound."""
        return all(result.exact for result in self.constraints)

    def promise(self) -> str:
        """State the promise in one sentence.

        Returns
        -------
        str
            The sentence, as ``repr`` shows it.
        """
        level = f"{1.0 - self.delta:.4g}".rstrip("0").rstrip(".")
        clauses = " and ".join(result.bound_clause() for result in self.constraints)
        verdicts = " and ".join(result.verdict() for result in self.constraints)
        kind = "" if self.exact else " (an approximate bound: the level holds asymptotically)"
        comparisons = (
            ""
            if self.n_comparisons == 1
            else f", delta divided over {self.n_comparisons} compared models"
        )
        if self.shift is None:
            population = "on the population they were drawn from"
        else:
            shares = "shares" if self.shift.exact else "shares within"
            population = (
                f"on every deployed population whose distribution of {self.shift_attribute} "
                f"has {shares} {self.shift.describe()}, assuming the distribution of "
                f"features, label and groups given {self.shift_attribute} (P(X, Y, S | "
                f"{self.shift_attribute})) is that of the population the rows were drawn from"
            )
        return (
            f"With probability at least {level} over the draw of the {self.n_certification:,} "
            f"held-out rows{comparisons}{kind}, {population}, this "
            f"model's {clauses}, so {verdicts}."
        )

    def __repr__(self) -> str:
        verdict = "passed" if self.passed else "failed"
        return f"FairnessCertificate({verdict}): {self.promise()}"

    def to_frame(self, *, per_group: bool = False) -> pd.DataFrame:
        """The certificate as a table.

        Parameters
        ----------
        per_group : bool, default=False
            One row per constraint (False) or per constraint, rate and group (True).

        Returns
        -------
        pandas.DataFrame
            Per constraint: metric, relation, tolerance, bounds, estimate, verdict, bound
            type, delta share and the split sizes; per group: rate, count, estimate and
            bounds.
        """
        common = {
            "delta": self.delta,
            "n_comparisons": self.n_comparisons,
            "n_certification": self.n_certification,
            "n_candidate": self.n_candidate,
            "random_state": self.random_state,
            "selection": self.selection,
        }
        if not per_group:
            rows = [
                {
                    "metric": r.metric,
                    "relation": r.relation,
                    "tolerance": r.tolerance,
                    "certified_bound": r.certified_bound,
                    "lower_bound": r.lower_bound,
                    "upper_bound": r.upper_bound,
                    "estimate": r.estimate,
                    "passed": r.passed,
                    "bound": r.bound,
                    "exact": r.exact,
                    "delta_share": r.delta_share,
                    **common,
                }
                for r in self.constraints
            ]
            return pd.DataFrame(rows)
        rows = []
        for r in self.constraints:
            for i, rate in enumerate(r.rate_names):
                for g, label in enumerate(r.group_labels):
                    rows.append(
                        {
                            "metric": r.metric,
                            "rate": rate,
                            "group": label,
                            "count": int(r.group_count[i, g]),
                            "estimate": r.group_estimate[i, g],
                            "lower": r.group_lower[i, g],
                            "upper": r.group_upper[i, g],
                        }
                    )
        return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------
# from predictions to certificates


def takes_groups(model, method: str) -> bool:
    """Whether ``model.<method>`` takes ``sensitive_features``: by name, or, under metadata
    routing, as metadata a router (a ``Pipeline`` ending with a group-aware
    post-processor) consumes in ``method``."""
    function = getattr(model, method, None)
    if function is None:
        return False
    if "sensitive_features" in inspect.signature(function).parameters:
        return True
    if not get_config().get("enable_metadata_routing", False):
        return False
    routing = get_routing_for_object(model)
    return isinstance(routing, MetadataRouter) and bool(
        routing.consumes(method, ["sensitive_features"])
    )


def call_with_groups(model, method: str, X, sensitive_features):
    """``model.<method>(X)``, with ``sensitive_features`` when the method takes them (a
    group-aware post-processor such as ``GroupThresholdClassifier``, or a pipeline ending
    with one under metadata routing)."""
    function = getattr(model, method)
    if sensitive_features is not None and takes_groups(model, method):
        return function(X, sensitive_features=sensitive_features)
    return function(X)


class Outcomes(NamedTuple):
    """Held-out labels and predictions of a binary classifier, coded 0/1."""

    y01: np.ndarray  # (n,) 1 where y is the positive class
    pred01: np.ndarray  # (n,) 1 where the prediction is the positive class
    proba: np.ndarray | None  # (n,) positive-class probability, when asked for
    classes: np.ndarray  # (2,) the model's classes; classes[1] is the positive one


def binary_outcomes(
    model,
    X,
    y,
    needs_proba: bool,
    sensitive_features=None,
    *,
    name: str = "fitted_model",
    caller: str = "certify_fairness",
) -> Outcomes:
    """Labels and predictions of ``model`` coded 0/1 (positive: ``classes_[1]``), and the
    positive-class probability when ``needs_proba``; a ``predict`` that takes
    ``sensitive_features`` receives them.

    A regressor, predictions outside the model's classes (continuous outputs) and labels
    of ``y`` the model never had raise ``ValueError`` naming ``name``: each would be
    coded as a negative and the certificate would describe another model.
    """
    check_not_regressor(model, name, caller)
    y = check_labels(y, "y")
    prediction = np.asarray(call_with_groups(model, "predict", X, sensitive_features))
    check_same_length("y", y.shape[0], predictions=prediction)
    classes = model_classes(model, y, prediction, name)
    check_within(y, classes, "y", name)
    check_within(prediction, classes, "predictions", name)
    positive = classes[-1]
    proba = None
    if needs_proba:
        if not hasattr(model, "predict_proba"):
            raise ValueError(f"the log-loss gap needs a model with predict_proba; {name} has none.")
        proba = call_with_groups(model, "predict_proba", X, sensitive_features)
        proba = np.asarray(proba)[:, -1].astype(np.float64)
    return Outcomes(
        (y == positive).astype(np.float64),
        (prediction == positive).astype(np.float64),
        proba,
        classes,
    )


def certify_outcomes(
    y01,
    pred01,
    proba,
    codes,
    group_labels,
    constraints,
    *,
    delta,
    bound,
    n_comparisons=1,
    inflation=1.0,
    seed=None,
    count_scale=None,
    shift=None,
    t_codes=None,
) -> list[ConstraintResult]:
    """The constraint results of 0/1 outcomes: each constraint at its delta share.

    ``count_scale`` (a float) evaluates the bound as if every group had that many times
    its rows, and ``inflation`` widens it: the predicted bound of candidate selection.
    With a ``shift`` (and the rows' codes ``t_codes`` of its values) the intervals cover
    every deployed distribution of the shift's set (see :mod:`fairest.certified._shift`).
    """
    share = constraint_delta(delta, len(constraints), n_comparisons)
    results = []
    for metric, tolerance in constraints:
        if shift is not None:
            predicted = proba if METRICS[metric].needs_proba else pred01
            statistics = shift_statistics(
                metric,
                y01,
                predicted,
                codes,
                len(group_labels),
                t_codes,
                len(shift.values),
                seed=seed,
            )
            if count_scale is not None:
                statistics = statistics.scaled_to(np.round(statistics.count * count_scale))
            shifted = shift_interval(statistics, metric, share, bound, shift, inflation=inflation)
            result = _result(shifted.interval, tolerance, group_labels)
            result.shift_reason = shifted.reason
            if shifted.reason is not None:
                result.passed = False
            results.append(result)
            continue
        statistics = rate_statistics(
            metric, y01, pred01, codes, len(group_labels), proba=proba, seed=seed
        )
        if count_scale is not None:
            statistics = statistics.scaled_to(np.round(statistics.count * count_scale))
        interval = metric_interval(statistics, metric, share, bound, inflation=inflation)
        results.append(_result(interval, tolerance, group_labels))
    return results


def _result(interval: MetricInterval, tolerance: float, group_labels) -> ConstraintResult:
    return ConstraintResult(
        metric=interval.metric,
        tolerance=tolerance,
        delta_share=interval.delta,
        bound=interval.bound,
        exact=interval.exact,
        kind=interval.kind,
        certified_bound=interval.certified_value,
        lower_bound=interval.lower,
        upper_bound=interval.upper,
        estimate=interval.estimate,
        passed=interval.satisfies(tolerance),
        group_labels=np.asarray(group_labels),
        rate_names=interval.rate_names,
        group_estimate=interval.group_estimate,
        group_lower=interval.group_lower,
        group_upper=interval.group_upper,
        group_count=interval.group_count,
    )


def fairness_interval(
    metric,
    y_true,
    y_pred,
    *,
    sensitive_features,
    delta=0.05,
    bound="clopper-pearson",
    y_proba=None,
    random_state=None,
) -> MetricInterval:
    """Compute a simultaneous confidence interval of a fairness metric and its group rates.

    The rows must be an i.i.d. sample of the population and independent of the model (a
    test set it was neither fitted nor chosen on). The metric's ``R`` group rates over
    ``G`` groups each get a lower and an upper one-sided bound at ``delta / (2 R G)``;
    by the union bound the metric lies in ``[lower, upper]`` and every group rate in its
    interval, all at once, with probability at least ``1 - delta``.

    Parameters
    ----------
    metric : str
        ``"demographic_parity_difference"``, ``"demographic_parity_ratio"``,
        ``"equal_opportunity_difference"``, ``"equal_opportunity_ratio"``,
        ``"equalized_odds_difference"``, ``"equalized_odds_ratio"`` (fairlearn's
        definitions, ``method="between_groups"``), ``"zero_one_loss_gap"`` (spread of the
        group error rates) or ``"log_loss_gap"`` (spread of the group mean log-losses,
        probabilities clipped to ``[0.01, 0.99]``).
    y_true, y_pred : array-like of shape (n_samples,)
        Binary labels coded {0, 1} (1 positive) and hard predictions.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership.
    delta : float, default=0.05
        Error probability of the whole interval.
    bound : {"clopper-pearson", "hoeffding", "bernstein", "student-t", "bootstrap"}, \
default="clopper-pearson"
        Exact binomial (0/1 rates only), Hoeffding, empirical Bernstein (both for any
        bounded value), or the approximate Student-t and percentile bootstrap.
    y_proba : array-like of shape (n_samples,), default=None
        Positive-class probabilities, for ``"log_loss_gap"`` only.
    random_state : int, default=None
        Seed of the bootstrap.

    Returns
    -------
    MetricInterval
        ``lower``, ``upper``, ``estimate`` and the per-group ``group_lower``,
        ``group_upper``, ``group_estimate``, ``group_count`` (shape (R, G)).

    References
    ----------
    .. [1] Clopper, C. J. and Pearson, E. S. "The use of confidence or fiducial limits
       illustrated in the case of the binomial", Biometrika 26 (1934).
    .. [2] Maurer, A. and Pontil, M. "Empirical Bernstein bounds and sample variance
       penalization", COLT 2009, Theorem 4.

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.certified import fairness_interval
    >>> rng = np.random.default_rng(0)
    >>> groups = rng.choice(["a", "b"], size=4000)
    >>> y_pred = rng.random(4000) < 0.3
    >>> interval = fairness_interval(
    ...     "demographic_parity_difference", np.zeros(4000), y_pred.astype(int),
    ...     sensitive_features=groups, delta=0.05)
    >>> bool(interval.lower <= interval.estimate <= interval.upper)
    True
    """
    check_delta_and_bound(delta, bound)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {tuple(METRICS)}; got {metric!r}.")
    y_true = np.asarray(check_labels(y_true, "y_true"))
    y_pred = np.asarray(check_labels(y_pred, "y_pred"))
    n_samples = y_true.shape[0]
    check_same_length("y_true", n_samples, y_pred=y_pred)
    codes, groups = encode_sensitive_features(sensitive_features, n_samples)
    proba = None
    if METRICS[metric].needs_proba:
        if y_proba is None:
            raise ValueError(f"{metric!r} needs y_proba, the positive-class probabilities.")
        proba = np.asarray(y_proba, dtype=np.float64).reshape(-1)
        check_same_length("y_true", n_samples, y_proba=proba)
    statistics = rate_statistics(
        metric,
        _as01(y_true, "y_true"),
        _as01(y_pred, "y_pred"),
        codes,
        len(groups),
        proba=proba,
        seed=random_state,
    )
    return metric_interval(statistics, metric, float(delta), bound)


def _as01(values, name):
    unique = set(np.unique(values).tolist())
    if not (unique <= {0, 1} or unique <= {-1, 1} or unique <= {False, True}):
        raise ValueError(
            f"{name} must hold binary labels coded {{0, 1}}; got {sorted(unique)[:6]}."
        )
    return (values == 1).astype(np.float64)


def certify_fairness(
    fitted_model,
    X,
    y,
    *,
    sensitive_features,
    constraints,
    delta=0.05,
    bound="clopper-pearson",
    n_comparisons=1,
    random_state=None,
    shift=None,
    shift_features=None,
) -> FairnessCertificate:
    """Certify the fairness of any fitted binary classifier on held-out data.

    A high-confidence test in the Seldonian sense: the rows ``X, y`` must be an i.i.d.
    sample of the population the promise is about, never used to fit, tune or choose the
    model. Each constraint gets ``delta / (n_comparisons * C)`` of the error probability
    (``C`` constraints), split again over its group-rate bounds (see
    :func:`fairness_interval`); with probability at least ``1 - delta`` every interval
    holds at once.

    Parameters
    ----------
    fitted_model : fitted classifier
        Anything with ``predict`` (and ``predict_proba`` for ``"log_loss_gap"``) that
        returns the hard labels of a binary classifier; the positive class is
        ``classes_[1]`` (else the larger label of ``y``). A ``predict`` that takes
        ``sensitive_features`` (a group-aware post-processor) receives them. A regressor
        is refused: threshold its predictions yourself and pass the labels to
        :func:`fairness_interval`.
    X : array-like of shape (n_samples, n_features)
        Held-out features.
    y : array-like of shape (n_samples,)
        Held-out labels.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership of the held-out rows. Only the groups present are certified.
    constraints : list of (str, float) or dict
        ``(metric, tolerance)`` pairs, metrics as in :func:`fairness_interval`.
    delta : float, default=0.05
        Probability that the certificate is wrong.
    bound : str, default="clopper-pearson"
        See :func:`fairness_interval`.
    n_comparisons : int, default=1
        How many models (or settings) were certified on these same rows before this one
        was kept: delta is divided by it (Bonferroni), else picking the best of ``k``
        certificates multiplies the risk up to ``k`` times.
    random_state : int, default=None
        Seed of the bootstrap; recorded in the certificate.
    shift : DemographicShift, default=None
        Certify the deployed population instead: the distribution of a demographic
        attribute ``T`` (``shift_features``) changes to known shares or to any shares in
        a box, while ``P(X, Y, S | T)`` stays that of the held-out rows' population.
        Each group rate is bounded from one-sided bounds of its per-(T, S) parts
        (``delta`` split over ``4 R G K`` of them, ``K`` the values of ``T`` the
        deployment may hold) and maximised over the shares exactly (a linear-fractional
        program); each group's rate is bounded over the shares separately (valid for
        every distribution of the set, and conservative). A value of ``T`` with no
        held-out row while its share may be positive fails the certificate with that
        reason (``certificate.reason``).
    shift_features : array-like of shape (n_samples,) or str, default=None
        The value of ``T`` of every held-out row, or the name of a column of ``X``; may
        differ from ``sensitive_features``. Required with ``shift``.

    Returns
    -------
    FairnessCertificate
        The bounds and verdict of every constraint; ``repr`` states the promise (and,
        under a shift, its assumption).

    Raises
    ------
    ValueError
        If ``fitted_model`` is a regressor, predicts values outside its ``classes_``
        (continuous outputs) or has more than two classes, or if ``y`` holds labels
        outside its ``classes_``: each would be coded as a negative.

    Warns
    -----
    FairnessWarning
        If the model is (near-)constant on the held-out rows (at most 1 % of them get
        the minority prediction): the warning gives the selection rates overall and per
        group, since such a model meets every parity constraint trivially.

    References
    ----------
    .. [1] Thomas, P. S. et al. "Preventing undesirable behavior of intelligent
       machines", Science 366 (2019).
    .. [2] Giguere, S. et al. "Fairness guarantees under demographic shift", ICLR 2022.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from fairest.certified import certify_fairness
    >>> from fairest.datasets import make_grouped_classification
    >>> X, y, groups = make_grouped_classification(n_samples=4000, random_state=0)
    >>> model = LogisticRegression().fit(X[:2000], y[:2000])
    >>> certificate = certify_fairness(model, X[2000:], y[2000:],
    ...     sensitive_features=groups[2000:],
    ...     constraints=[("demographic_parity_difference", 0.5)])
    >>> certificate.n_certification
    2000
    """
    checked = check_constraints(constraints)
    check_delta_and_bound(delta, bound, n_comparisons)
    if shift is None and shift_features is not None:
        raise ValueError(
            "shift_features is given without shift; pass shift=DemographicShift(...) with "
            "the deployed shares of T, or drop shift_features."
        )
    needs_proba = any(METRICS[metric].needs_proba for metric, _ in checked)
    y01, pred01, proba, classes = binary_outcomes(
        fitted_model, X, y, needs_proba, sensitive_features=sensitive_features
    )
    codes, groups = encode_sensitive_features(sensitive_features, y01.shape[0], reference="y")
    t_codes = (
        None if shift is None else encode_shift_features(shift_features, shift, y01.shape[0], X=X)
    )
    warn_if_near_constant(
        pred01, codes, groups, classes, who="certify_fairness: fitted_model", rows="held-out rows"
    )
    results = certify_outcomes(
        y01,
        pred01,
        proba,
        codes,
        groups,
        checked,
        delta=float(delta),
        bound=bound,
        n_comparisons=int(n_comparisons),
        seed=random_state,
        shift=shift,
        t_codes=t_codes,
    )
    return FairnessCertificate(
        constraints=results,
        delta=float(delta),
        bound=bound,
        n_comparisons=int(n_comparisons),
        n_certification=int(y01.shape[0]),
        random_state=random_state,
        selection=(
            "post hoc: a fitted model tested on held-out data"
            + ("" if n_comparisons == 1 else f", the kept one of {n_comparisons} compared models")
        ),
        shift=shift,
        shift_attribute=shift_name(shift_features),
    )


def shift_name(shift_features) -> str:
    """The shift attribute's name in the sentence: the column's name, else ``T``."""
    if isinstance(shift_features, str):
        return shift_features
    name = getattr(shift_features, "name", None)
    return str(name) if isinstance(name, str) and name else "T"
