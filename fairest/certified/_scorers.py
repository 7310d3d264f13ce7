"""Scorers of certified estimators for model selection (``GridSearchCV``, ``cross_validate``)."""

from __future__ import annotations

__all__ = ["no_solution_scorer", "certified_bound_scorer"]


def no_solution_scorer(estimator, X=None, y=None, **kwargs) -> float:
    """1.0 when the fitted :class:`CertifiedFairClassifier` found no solution, else 0.0.

    Its mean over folds or repetitions is the NSF rate. It reads the fit only (``X``,
    ``y`` and metadata are ignored), so it needs no routing.

    Parameters
    ----------
    estimator : CertifiedFairClassifier
        Fitted (or a pipeline ending with one).
    X, y : object, default=None
        Ignored.
    **kwargs : dict
        Ignored (metadata).

    Returns
    -------
    float
        1.0 for no solution found, 0.0 for a certified model.
    """
    return 0.0 if _certified(estimator).certified_ else 1.0


def certified_bound_scorer(estimator, X=None, y=None, *, constraint=0, **kwargs) -> float:
    """The negated certified bound of one constraint (greater is better).

    ``-upper_bound`` for a difference or gap, ``+lower_bound`` for a ratio, from the
    safety test of the fit; use ``functools.partial(certified_bound_scorer,
    constraint=i)`` for the ``i``-th constraint.

    Parameters
    ----------
    estimator : CertifiedFairClassifier
        Fitted (or a pipeline ending with one).
    X, y : object, default=None
        Ignored.
    constraint : int, default=0
        Index of the constraint.
    **kwargs : dict
        Ignored (metadata).

    Returns
    -------
    float
        Minus the upper bound of a difference or gap, the lower bound of a ratio.
    """
    result = _certified(estimator).certificate_.constraints[constraint]
    return -result.certified_bound if result.kind == "difference" else result.certified_bound


def _certified(estimator):
    final = estimator[-1] if hasattr(estimator, "steps") else estimator
    if not hasattr(final, "certificate_"):
        raise ValueError(
            "this scorer reads a fitted CertifiedFairClassifier (or a pipeline ending with "
            f"one); got {type(final).__name__}."
        )
    return final
