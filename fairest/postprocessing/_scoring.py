"""A scorer that routes ``sensitive_features`` to ``predict`` as well as to the metric."""

from __future__ import annotations

import inspect

from sklearn.base import BaseEstimator

__all__ = ["make_group_scorer"]


class _GroupScorer(BaseEstimator):
    """``scorer(estimator, X, y, sensitive_features=..., sample_weight=...)``."""

    __metadata_request__score = {"sensitive_features": True}

    def __init__(self, score_func, response_method, sign, kwargs):
        self.score_func = score_func
        self.response_method = response_method
        self.sign = sign
        self.kwargs = kwargs

    def __call__(self, estimator, X, y_true, sensitive_features=None, sample_weight=None):
        response = getattr(estimator, self.response_method)(
            X, sensitive_features=sensitive_features
        )
        kwargs = dict(self.kwargs)
        parameters = inspect.signature(self.score_func).parameters
        if "sensitive_features" in parameters:
            kwargs["sensitive_features"] = sensitive_features
        if sample_weight is not None:
            kwargs["sample_weight"] = sample_weight
        return self.sign * self.score_func(y_true, response, **kwargs)

    def score(self, estimator, X, y_true, sensitive_features=None, sample_weight=None):
        """Same as calling the scorer (named for metadata routing)."""
        return self(estimator, X, y_true, sensitive_features, sample_weight)


def make_group_scorer(score_func, *, response_method="predict", greater_is_better=True, **kwargs):
    """A scorer for estimators whose ``predict`` takes the groups.

    scikit-learn's scorers call ``estimator.predict(X)`` without metadata; this one
    requests ``sensitive_features`` through metadata routing and passes them to the
    estimator's ``response_method`` (e.g. :class:`GroupThresholdClassifier.predict`) and,
    when ``score_func`` accepts them, to the metric (e.g.
    :func:`fairest.metrics.demographic_parity_difference`). Use it in
    ``GridSearchCV(scoring=...)`` or ``cross_validate`` with
    ``sklearn.set_config(enable_metadata_routing=True)``.

    Parameters
    ----------
    score_func : callable
        ``score_func(y_true, y_pred, **kwargs)``, e.g. ``sklearn.metrics.accuracy_score``.
    response_method : {"predict", "decision_function"}, default="predict"
        The estimator method whose output is scored.
    greater_is_better : bool, default=True
        ``False`` negates the metric (a loss or an unfairness), as ``make_scorer`` does.
    **kwargs
        Extra keyword arguments of ``score_func``.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sensitive_features=None, sample_weight=None)``.

    References
    ----------
    .. [1] scikit-learn user guide, "Metadata Routing" and "Defining your scoring strategy
       from score functions".

    Examples
    --------
    >>> from sklearn.metrics import accuracy_score
    >>> from fairest.postprocessing import make_group_scorer
    >>> scorer = make_group_scorer(accuracy_score)
    >>> scorer.get_metadata_routing().score.requests["sensitive_features"]
    True
    """
    return _GroupScorer(score_func, response_method, 1 if greater_is_better else -1, kwargs)
