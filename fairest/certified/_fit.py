"""The steps of :meth:`CertifiedFairClassifier.fit` between validation and storage: fit
and score the candidates on the candidate part, then run the safety test on the safety
part (one candidate, or a fixed sequence of them).

Plain functions of the wrapper's settings (``owner``: the :class:`CertifiedFairClassifier`
being fitted, read only), the data (:class:`~fairest.utils._estimator.FitData`) and the
boolean row masks of the two parts.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from sklearn.base import clone
from sklearn.utils import _safe_indexing

from fairest.certified._bounds import METRICS
from fairest.certified._certificate import binary_outcomes, certify_outcomes
from fairest.certified._selection import choose_candidate, fixed_sequence
from fairest.postprocessing._diagnostics import SMALL_GROUPS_MESSAGE
from fairest.utils._estimator import wrapped_fit_params, wrapped_nan_error
from fairest.utils._validation import FairnessWarning

__all__ = ["Selection", "fit_candidates", "select_candidate"]

CALLER = "CertifiedFairClassifier"


class Selection(NamedTuple):
    """The outcome of the safety test: the kept candidate and how it was chosen."""

    best_index: int
    outcome: list  # the kept candidate's constraint results on the safety part
    safety_tested: np.ndarray  # (n_candidates,) bool: candidates the safety test ran on
    how: str  # the selection procedure, in words (the certificate's ``selection``)
    predictions: dict  # candidate index -> its 0/1 predictions on the safety rows


def _candidate_name(params) -> str:
    return f"estimator (candidate {params or 'as given'})"


def _fit_one(owner, params, X, y, fit_params):
    """One candidate fitted on the candidate part, and the fairness warnings of its fit
    that matter only if it is kept (re-emitted by the wrapper then); its other warnings
    are emitted as the fit gave them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FairnessWarning)
        fitted = clone(owner.estimator).set_params(**params)
        with wrapped_nan_error(type(owner).__name__, fitted):
            fitted.fit(X, y, **fit_params)
    # the candidate's own small-group warning is about its fit rows; the safety test's
    # intervals are the wrapper's statement about new rows
    kept = [
        w
        for w in caught
        if issubclass(w.category, FairnessWarning)
        and not str(w.message).startswith(SMALL_GROUPS_MESSAGE)
    ]
    for w in caught:
        if not issubclass(w.category, FairnessWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return fitted, kept


def fit_candidates(owner, grid, data, candidate, constraints, seed, t_codes=None) -> dict:
    """Fit every candidate of ``grid`` on the rows of ``candidate`` and predict its bounds
    at the safety part's size (``inflation`` applied).

    Returns the wrapper's ``candidate_results_`` (params, accuracy, predicted_bound,
    predicted_margin, predicted_pass) plus ``estimators``, ``outcomes`` (each candidate's
    predicted constraint results) and ``fit_warnings``, which the caller pops.
    """
    rows = np.flatnonzero(candidate)
    X, y = _safe_indexing(data.X, rows), data.y[candidate]
    codes, weights = data.groups[candidate], data.sample_weight[candidate]
    groups = data.group_labels[codes]
    fit_params = wrapped_fit_params(
        owner.estimator,
        sensitive_features=groups,
        sample_weight=None if np.all(weights == 1.0) else weights,
        owner=type(owner).__name__,
    )
    needs_proba = any(METRICS[metric].needs_proba for metric, _ in constraints)
    scale = (candidate.size - rows.size) / rows.size  # safety rows per candidate row
    estimators, accuracy, predicted, passes, outcomes, fit_warnings = [], [], [], [], [], []
    for params in grid:
        fitted, kept = _fit_one(owner, params, X, y, fit_params)
        fit_warnings.append(kept)
        y01, pred01, proba, _ = binary_outcomes(
            fitted,
            X,
            y,
            needs_proba,
            sensitive_features=groups,
            name=_candidate_name(params),
            caller=CALLER,
        )
        outcome = certify_outcomes(
            y01,
            pred01,
            proba,
            codes,
            data.group_labels,
            constraints,
            delta=float(owner.delta),
            bound=owner.bound,
            n_comparisons=int(owner.n_comparisons),
            inflation=float(owner.inflation),
            seed=seed,
            count_scale=scale,
            shift=owner.shift,
            t_codes=None if t_codes is None else t_codes[candidate],
        )
        estimators.append(fitted)
        outcomes.append(outcome)
        accuracy.append(np.average(y01 == pred01, weights=weights))
        predicted.append([r.certified_bound for r in outcome])
        passes.append(all(r.passed for r in outcome))
    tolerances = np.array([t for _, t in constraints])
    signs = np.array([1.0 if METRICS[m].kind == "difference" else -1.0 for m, _ in constraints])
    predicted = np.array(predicted, dtype=np.float64)
    return {
        "params": grid,
        "accuracy": np.array(accuracy),
        "predicted_bound": predicted,
        "predicted_margin": ((predicted - tolerances) * signs).max(axis=1),
        "predicted_pass": np.array(passes),
        "estimators": estimators,
        "outcomes": outcomes,
        "fit_warnings": fit_warnings,
    }


def _safety_test(owner, data, safety, estimators, results, constraints, seed, t_codes):
    """``test(index) -> constraint results`` of candidate ``index`` on the safety rows;
    its 0/1 predictions there go into the returned dict."""
    rows = np.flatnonzero(safety)
    needs_proba = any(METRICS[metric].needs_proba for metric, _ in constraints)
    predictions = {}

    def test(index):
        with wrapped_nan_error(type(owner).__name__, estimators[index], "predict"):
            y01, pred01, proba, _ = binary_outcomes(
                estimators[index],
                _safe_indexing(data.X, rows),
                data.y[safety],
                needs_proba,
                sensitive_features=data.group_labels[data.groups[safety]],
                name=_candidate_name(results["params"][index]),
                caller=CALLER,
            )
        predictions[index] = pred01
        return certify_outcomes(
            y01,
            pred01,
            proba,
            data.groups[safety],
            data.group_labels,
            constraints,
            delta=float(owner.delta),
            bound=owner.bound,
            n_comparisons=int(owner.n_comparisons),
            seed=seed,
            shift=owner.shift,
            t_codes=None if t_codes is None else t_codes[safety],
        )

    return test, predictions


def select_candidate(
    owner, data, safety, estimators, results, constraints, seed, t_codes=None
) -> Selection:
    """Run the safety test as ``owner.selection`` says: on the candidate chosen on the
    candidate part (``"predicted"``), or in fixed sequence (Learn-then-Test)."""
    test, predictions = _safety_test(
        owner, data, safety, estimators, results, constraints, seed, t_codes
    )
    count = len(estimators)
    if owner.selection == "predicted":
        best = choose_candidate(results)
        outcome = test(best)
        tested = np.arange(count) == best
        how = (
            f"the most accurate of {count} candidates fitted and chosen on the "
            "candidate part only, tested once on the safety part"
        )
    else:
        best, outcome, tested = fixed_sequence(results, test)
        how = (
            f"fixed-sequence testing (Learn-then-Test) of {count} candidates "
            "in the order of their predicted bounds, stopping at the first failure; the "
            "most accurate certified one is kept"
        )
    return Selection(best, outcome, tested, how, predictions)
