"""Fairness scorers for model selection and a constrained refit rule for GridSearchCV."""

from __future__ import annotations

import numpy as np
from sklearn import config_context
from sklearn.metrics import make_scorer

from fairest import metrics as _metrics

__all__ = ["make_fairness_scorer", "constrained_refit"]


def _response(kinds) -> str | tuple[str, ...]:
    """The estimator method whose output a metric of these kinds takes."""
    if "labels" in kinds:
        return "predict"
    if "scores" in kinds:
        return ("decision_function", "predict")
    if "probabilities" in kinds:
        return "predict_proba"
    return "predict"  # regression outputs


def _resolve_metric(metric):
    if callable(metric):
        return metric, "predict"
    from fairest.metrics._catalogue import catalogue

    record = catalogue().get(metric) if isinstance(metric, str) else None
    if record is not None:
        return record.exact, _response(record.kinds)
    # the other metrics of fairest.metrics (family metrics, base rates): hard predictions
    function = getattr(_metrics, metric, None) if isinstance(metric, str) else None
    if function is None or metric.startswith("smooth_") or metric == "group_report":
        raise ValueError(
            f"unknown fairness metric {metric!r}; use a name of the metric catalogue "
            f"{tuple(catalogue())} or another function of fairest.metrics, or a callable "
            "f(y_true, y_pred, *, sensitive_features, ...)."
        )
    return function, "predict"


def make_fairness_scorer(metric, *, response_method=None, **kwargs):
    """A scorer of (negated) unfairness that requests ``sensitive_features``.

    The returned scorer follows scikit-learn's convention that greater is better: it
    returns ``-metric(y_true, y_pred, sensitive_features=...)`` (like
    ``neg_mean_squared_error``). It requests ``sensitive_features`` (and nothing else)
    through metadata routing, so it works in ``GridSearchCV(scoring=...)`` and
    ``cross_validate`` once ``sklearn.set_config(enable_metadata_routing=True)``.

    Parameters
    ----------
    metric : str or callable
        Name of a metric of the catalogue (:func:`fairest.metrics.catalogue`, e.g.
        ``"demographic_parity_difference"``, ``"equalized_odds_difference"``,
        ``"demographic_parity_deviation"``, or one added with
        :func:`fairest.metrics.register_metric`) or of another exact metric of
        :mod:`fairest.metrics`, or a callable
        ``f(y_true, y_pred, *, sensitive_features, **kwargs)``.
    response_method : str or tuple of str, default=None
        Which estimator method feeds the metric; by default from the catalogue record's
        kinds: ``"predict"`` for metrics of labels (and for other names),
        ``("decision_function", "predict")`` for metrics of scores, ``"predict_proba"``
        for metrics of probabilities only.
    **kwargs
        Extra keyword arguments of the metric (e.g. ``method="to_overall"``).

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sensitive_features=...)``.

    References
    ----------
    .. [1] Weerts et al. "Fairlearn: Assessing and Improving Fairness of AI Systems",
       JMLR 24 (2023) (metric conventions).
    """
    function, default_response = _resolve_metric(metric)
    scorer = make_scorer(
        function,
        response_method=response_method or default_response,
        greater_is_better=False,
        **kwargs,
    )
    with config_context(enable_metadata_routing=True):  # the request is stored on the scorer
        return scorer.set_score_request(sensitive_features=True)


def constrained_refit(*, accuracy: str, unfairness: str, tolerance: float):
    """A ``GridSearchCV(refit=...)`` rule: best accuracy subject to unfairness <= tolerance.

    Use with multi-metric scoring, e.g.
    ``scoring={"accuracy": "accuracy", "dp": make_fairness_scorer("demographic_parity_difference")}``
    and ``refit=constrained_refit(accuracy="accuracy", unfairness="dp", tolerance=0.05)``.
    Unfairness scorers return the negated metric, so a candidate qualifies when
    ``-mean_test_<unfairness> <= tolerance``.

    Parameters
    ----------
    accuracy : str
        Scoring key to maximise.
    unfairness : str
        Scoring key of a fairness scorer made by :func:`make_fairness_scorer`.
    tolerance : float
        Largest allowed mean cross-validated unfairness.

    Returns
    -------
    refit : callable
        ``refit(cv_results) -> int``, the index of the chosen candidate. Raises
        ``ValueError`` naming the smallest unfairness found when no candidate qualifies.

    References
    ----------
    .. [1] scikit-learn user guide, "Custom refit strategy of a grid search with
       cross-validation".
    """

    def refit(cv_results) -> int:
        for key in (accuracy, unfairness):
            if f"mean_test_{key}" not in cv_results:
                raise ValueError(
                    f"scoring has no key {key!r}; give GridSearchCV a dict of scorers."
                )
        unfair = -np.asarray(cv_results[f"mean_test_{unfairness}"], dtype=float)
        score = np.asarray(cv_results[f"mean_test_{accuracy}"], dtype=float)
        feasible = np.flatnonzero(unfair <= tolerance)
        if feasible.size == 0:
            raise ValueError(
                f"no candidate has mean {unfairness} <= {tolerance}; the smallest is "
                f"{np.nanmin(unfair):.4g}. Loosen the tolerance or widen the grid."
            )
        return int(feasible[np.nanargmax(score[feasible])])

    return refit
