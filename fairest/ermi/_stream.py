"""``ERMIClassifier.partial_fit``: one SGDA epoch over a chunk of a stream.

The stream's classes, group vocabulary and running group totals live in
:class:`fairest.io.StreamState`; what SGDA itself carries from call to call is a
:class:`SgdaCarry` in ``state.solver``. The call reads validate -> build -> solve -> store
as ``fit`` does.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from fairest.ermi._dp import closed_form_report
from fairest.ermi._solvers import resolve_dual_radius, run_sgda
from fairest.ermi._strata import strata_from_mass
from fairest.utils._estimator import validate_fit_data
from fairest.utils._reporting import as_history, store_result

__all__ = ["SgdaCarry", "partial_fit_chunk"]


class SgdaCarry(NamedTuple):
    """What SGDA carries from one ``partial_fit`` call to the next."""

    seed: int  # the root seed of every call's random streams (``fold_in`` by call number)
    last: tuple | None  # the last iterate ``(theta, W)``, where the next call resumes


def _check_streamable(estimator) -> None:
    if estimator.dp_epsilon is not None:
        raise ValueError(
            "partial_fit does not support dp_epsilon: the privacy accounting composes the "
            "steps of one fit over one data set of known size (subsampling rate m / n, "
            "group counts privatised once); a stream has neither. Use fit."
        )
    if estimator.solver == "full-batch":
        raise ValueError("partial_fit runs SGDA; solver='full-batch' has no streaming form.")


def _first_carry(estimator, state, equalized_odds: bool) -> SgdaCarry:
    """The carry of a stream's first call: a fresh seed, and the fitted model's iterate
    when the stream continues a fit (``state.warm``)."""
    seed = int(check_random_state(estimator.random_state).randint(2**31))
    if not state.warm:
        return SgdaCarry(seed, None)
    W = estimator.W_ if equalized_odds else estimator.W_[None]
    return SgdaCarry(seed, (np.vstack([estimator.intercept_, estimator.coef_.T]), W))


def partial_fit_chunk(estimator, X, y, sensitive_features, sample_weight, classes, groups):
    """:meth:`ERMIClassifier.partial_fit` on ``estimator``; returns ``estimator``."""
    from fairest.io import chunk_of_a_stream, encode_stream_chunk, start_or_continue_stream

    _check_streamable(estimator)
    # validate: the chunk against the stream's classes, groups and features
    state, first = start_or_continue_stream(estimator, classes, groups)
    if not first or state.warm:
        validate_data(estimator, X, reset=False, skip_check_array=True)  # features, names
    with chunk_of_a_stream(sensitive_features):
        data = validate_fit_data(
            estimator, X, y, sensitive_features, sample_weight, accept_sparse=True
        )
    y_codes, group_codes = encode_stream_chunk(
        state, data.y, data.groups, data.group_labels, type(estimator).__name__
    )
    # build: the running (label-)group frequencies of the stream so far
    n_classes, n_groups = state.classes.size, state.vocabulary.labels_.size
    equalized_odds = estimator.metric == "equalized_odds"
    n_strata = n_classes if equalized_odds else 1
    strata_codes = y_codes if equalized_odds else np.zeros(data.X.shape[0], np.int32)
    cell = strata_codes * n_groups + group_codes
    size = n_strata * n_groups
    mass = state.running_totals(
        "group_weight", np.bincount(cell, data.sample_weight, minlength=size)
    ).reshape(n_strata, n_groups)
    counts = state.running_totals("group_count", np.bincount(cell, minlength=size))
    counts = counts.reshape(n_strata, n_groups)
    strata, _ = strata_from_mass(mass, estimator.eo_weighting)
    if first:
        state.solver = _first_carry(estimator, state, equalized_odds)
        if state.warm:
            state.n_calls = 1  # streams other than the fit's own
    lam = estimator._weight(sensitive_features is not None, False, stream=True)
    # solve: one epoch over the chunk, from the carried iterate
    result = run_sgda(
        data.X,
        y_codes,
        group_codes,
        strata_codes,
        data.sample_weight / data.sample_weight.mean(),
        strata,
        n_classes=n_classes,
        fairness_weight=lam,
        seed=state.solver.seed,
        alpha=estimator.alpha,
        batch_size=estimator.batch_size,
        n_epochs=1,
        learning_rate=estimator.learning_rate,
        dual_learning_rate=estimator.dual_learning_rate,
        dual_radius=resolve_dual_radius(estimator.dual_radius, n_classes),
        batching=estimator.batching,
        return_iterate=estimator.return_iterate,
        dual_init=estimator.dual_init,
        dtype=estimator.dtype,
        record_history=estimator.record_history,
        start=state.solver.last,
        call=state.n_calls,
    )
    # store
    state.solver = state.solver._replace(last=result.last)
    state.n_calls += 1
    _store_chunk_result(estimator, state, first, result, lam, counts, equalized_odds)
    return estimator


def _store_chunk_result(estimator, state, first, result, lam, counts, equalized_odds) -> None:
    """The call's model and the stream's figures on ``estimator`` (a stream is never
    private: no noise, an infinite epsilon spent)."""
    estimator._stream_state = state
    estimator.classes_, estimator.groups_ = state.classes, state.vocabulary.labels_
    n_iter = getattr(estimator, "n_iter_", 0) * (state.warm or not first) + result.n_iter
    estimator.objective_ = float("nan")
    estimator.intercept_ = result.theta[0].copy()
    estimator.coef_ = result.theta[1:].T.copy()
    estimator.W_ = result.W if equalized_odds else result.W[0]
    estimator.fairness_weight_ = float(lam)
    n_t = counts.sum(axis=1, keepdims=True)
    fractions = np.divide(counts - 1, n_t, out=np.full(counts.shape, np.inf), where=counts > 0)
    estimator.min_group_fraction_ = float(np.min(fractions))
    estimator.delta_, estimator.epsilon_spent_ = None, float("inf")
    estimator.sigma_theta_ = estimator.sigma_w_ = 0.0
    estimator.noise_multipliers_ = np.zeros(2)
    estimator.privacy_report_ = closed_form_report(estimator, False)
    record = result.history
    previous = getattr(estimator, "history_", None) if not first else None
    if record is not None and previous is not None:  # the stream's epochs so far
        record = as_history(record)
        record = {key: np.concatenate([previous[key], record[key]]) for key in record}
    store_result(estimator, n_iter=n_iter, history=record)
