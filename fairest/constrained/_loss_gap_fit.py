"""Pieces of :class:`~fairest.constrained.LossGapConstrainedClassifier`'s fits: the host
layouts of its parameters, the record of one fit's resolved inputs (:class:`FitSetup`) and
the streaming epoch of ``partial_fit`` (:func:`partial_fit_chunk`), which resumes the
solver's state (``RunResult.extras["resume_state"]``) chunk after chunk.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.utils.validation import validate_data

from fairest.constrained._common import (
    ModelProblem,
    split_sensitive_columns,
    validate_constrained_fit,
    validate_hidden,
)
from fairest.constrained._engine import (
    MLP,
    SOLVERS,
    population_totals,
    refit_on_divergence,
    run_solver,
    scaled_step_sizes,
    spawn_rngs,
)
from fairest.constrained._gaps import LossGapConstraints, loss_gap_constraints, unscale_history
from fairest.constrained._presets import (
    resolve_batch_size,
    resolve_feasibility_steps,
    resolve_solver_params,
)
from fairest.utils._reporting import store_result

__all__ = [
    "FitSetup",
    "LossGapCarry",
    "build_setup",
    "constraints_of",
    "host_ravel",
    "partial_fit_chunk",
    "resolve_settings",
]


def host_ravel(layers, dtype) -> np.ndarray:
    """Flat parameters of host ``(W, b)`` layers in ``dtype`` (``ravel_params`` order)."""
    real = np.dtype(dtype)
    return np.concatenate(
        [np.concatenate([np.ravel(W), np.ravel(b)]).astype(real) for W, b in layers]
    )


class FitSetup(NamedTuple):
    """What :meth:`LossGapConstrainedClassifier.fit` prepares before the solver runs
    (``weight``: the sample weights, ``None`` when they are all 1)."""

    solver: str
    hidden: tuple
    hyper: dict
    X: object
    y_codes: np.ndarray
    classes: np.ndarray
    groups: np.ndarray
    labels: np.ndarray
    weight: np.ndarray | None
    gaps: LossGapConstraints
    model: MLP
    problem: ModelProblem
    batch_size: int | None
    dtype: object
    rngs: list
    x0: np.ndarray
    n_epochs: float | None  # n_epochs with "auto" resolved
    feasibility_steps: int  # steps of the final feasibility phase (0: none)

    def solver_args(self) -> tuple[tuple, dict]:
        """``(args, kwargs)`` of the solver call (:func:`~fairest.constrained._engine.
        solve`, :func:`~fairest.constrained._engine.run_lanes`): solver, problem, data,
        cells and initial parameters; ``hyper`` and ``rngs``."""
        args = (self.solver, self.problem, self.X, self.y_codes, self.groups, self.gaps.cells)
        return (*args, self.x0), {"hyper": self.hyper, "rngs": self.rngs}


class LossGapCarry(NamedTuple):
    """What the solver carries from one ``partial_fit`` call to the next."""

    rngs: list  # the stream's generators (initialisation, minibatches, solver draws)
    iters: int = 0  # solver iterations so far
    factor: float = 1.0  # the step-size factor left by divergence refits
    start: list | None = None  # the fitted model's layers a stream after ``fit`` starts at
    state: object = None  # the solver's resumable state after the last call


def resolve_settings(estimator) -> tuple[str, tuple, dict]:
    """``(solver, hidden layer sizes, solver hyper-parameters)`` of ``estimator``;
    ``eval_every`` without ``record_history`` raises."""
    solver = estimator._solver_name()
    hidden = validate_hidden(estimator.hidden_layer_sizes)
    hyper = resolve_solver_params(solver, estimator.preset, estimator.solver_params)
    if estimator.eval_every is not None and not estimator.record_history:
        raise ValueError(
            "eval_every records full-training-set values in history_; it needs "
            "record_history=True (or an int)."
        )
    return solver, hidden, hyper


def constraints_of(estimator, solver, labels, groups, y_codes, n_classes, sample_weight):
    """The loss-gap constraints of ``estimator``'s metric and pairs on these rows."""
    return loss_gap_constraints(
        estimator.metric,
        estimator.constraint_pairs,
        solver,
        labels,
        groups,
        y_codes,
        n_classes,
        sample_weight,
    )


def build_setup(estimator, settings, gaps, X, y_codes, classes, groups, labels, weight):
    """What a fit and a ``partial_fit`` call share: the network, the problem and the
    solver's sizes around the constraints ``gaps`` (``weight``: None for unit weights).
    ``rngs``, ``x0`` and ``n_epochs`` are left to the caller."""
    solver, hidden, hyper = settings
    model = MLP(X.shape[1], hidden, 1 if classes.size == 2 else classes.size)
    return FitSetup(
        solver=solver,
        hidden=hidden,
        hyper=hyper,
        X=X,
        y_codes=y_codes,
        classes=classes,
        groups=groups,
        labels=labels,
        weight=weight,
        gaps=gaps,
        model=model,
        problem=ModelProblem(model, gaps.n_cells, gaps.A.shape[0], labels.size),
        batch_size=resolve_batch_size(estimator.batch_size, solver, estimator.preset),
        dtype=jnp.float64 if estimator.dtype == "float64" else jnp.float32,
        rngs=None,
        x0=None,
        n_epochs=None,
        feasibility_steps=resolve_feasibility_steps(
            estimator.feasibility_steps, solver, estimator.preset
        ),
    )


def partial_fit_chunk(
    estimator, X, y, *, sensitive_features=None, sample_weight=None, classes=None, groups=None
):
    """:meth:`LossGapConstrainedClassifier.partial_fit` on ``estimator``: one epoch of its
    solver over the chunk ``(X, y)``, resuming the stream's solver state."""
    from fairest.io import chunk_of_a_stream, encode_stream_chunk, start_or_continue_stream

    if SOLVERS[estimator._solver_name()].host:
        raise ValueError(
            "partial_fit: solver='ghost' runs a host loop that counts iterations, not "
            "epochs; it has no streaming form. Use another solver or fit."
        )
    settings = resolve_settings(estimator)
    # validate: the chunk against the stream's classes, groups and features
    stream, first = start_or_continue_stream(estimator, classes, groups)
    X, sensitive_features, _ = split_sensitive_columns(X, sensitive_features)
    if not first or stream.warm:
        validate_data(estimator, X, reset=False, skip_check_array=True)  # features, names
    with chunk_of_a_stream(sensitive_features):
        X, y_chunk, chunk_classes, chunk_groups, chunk_labels, sample_weight = (
            validate_constrained_fit(estimator, X, y, sensitive_features, sample_weight)
        )
    y_codes, groups_ = encode_stream_chunk(
        stream, chunk_classes[y_chunk], chunk_groups, chunk_labels, type(estimator).__name__
    )
    # build: the chunk's constraints and problem, the stream's running totals
    labels, classes_ = stream.vocabulary.labels_, stream.classes
    try:
        gaps = constraints_of(
            estimator, settings[0], labels, groups_, y_codes, classes_.size, sample_weight
        )
    except ValueError as error:
        raise ValueError(
            f"partial_fit: {error} Every chunk needs rows of every group (cell): use "
            "larger or stratified chunks."
        ) from None
    unit = bool(np.all(sample_weight == 1.0)) and not stream.weighted
    stream.weighted = not unit
    setup = build_setup(
        estimator,
        settings,
        gaps,
        X,
        y_codes,
        classes_,
        groups_,
        labels,
        None if unit else sample_weight,
    )._replace(n_epochs=1.0)
    totals = _running_totals(stream, setup, sample_weight)  # kept for a later weighted chunk
    if first:
        carry = LossGapCarry(spawn_rngs(estimator.random_state))
        if stream.warm:  # partial_fit after fit: the solver starts at the fitted model
            carry = carry._replace(iters=estimator.n_iter_, start=estimator.params_)
        stream.solver = carry
    # solve: one epoch from the carried state
    result, rngs, factor = _resume(estimator, setup, stream.solver, None if unit else totals)
    # store
    carry = stream.solver = stream.solver._replace(
        rngs=rngs,
        state=result.extras["resume_state"],
        iters=stream.solver.iters + result.n_iter,
        factor=factor * stream.solver.factor,
    )
    stream.n_calls += 1
    estimator._stream_state = stream
    estimator.step_size_factor_ = carry.factor
    estimator.classes_, estimator.groups_ = classes_, labels
    # the chunk's model, as fit returns its model (the next call resumes from the
    # solver's state, before the final feasibility phase)
    estimator._finish_model(setup, result.x)
    estimator._store_run(result, gaps, setup.hidden)
    history = result.history  # the last call's record, as fit's of its scale
    store_result(
        estimator,
        n_iter=carry.iters,
        history=None if history is None else unscale_history(history, gaps.scale),
    )
    previous = 0.0 if first and not stream.warm else estimator.n_epochs_done_
    estimator.n_epochs_done_ = previous + result.n_epochs
    return estimator


def _running_totals(stream, setup: FitSetup, sample_weight) -> tuple:
    """The stream's running weight totals of the objective's population and of the
    constraints' cells, this chunk included (the weighted solvers' normalisers)."""
    balanced = bool(setup.hyper.get("balanced_batches", False))
    n_labels = setup.labels.size
    population = setup.groups if balanced else np.zeros(setup.groups.size, np.int64)
    return (
        stream.running_totals(
            "objective_totals",
            population_totals(sample_weight, population, n_labels if balanced else 1),
        ),
        stream.running_totals(
            "cell_totals",
            population_totals(sample_weight, setup.gaps.cells, setup.gaps.n_cells),
        ),
    )


def _resume(estimator, setup: FitSetup, carry: LossGapCarry, totals):
    """One epoch of the solver over the chunk from ``carry`` (refitted with smaller steps
    after a divergence). Returns ``(result, rngs after the epoch, step-size factor)``."""
    solver = setup.solver
    with jax.enable_x64(estimator.dtype == "float64"):
        if carry.start is not None:
            x0 = host_ravel(carry.start, setup.dtype)
        else:
            x0 = setup.model.init_flat(copy.deepcopy(carry.rngs[0]), setup.dtype)

        def attempt(factor):
            rngs = copy.deepcopy(carry.rngs)
            result = run_solver(
                solver,
                setup.problem,
                setup.X,
                setup.y_codes,
                setup.groups,
                setup.gaps.cells,
                x0,
                hyper=scaled_step_sizes(solver, setup.hyper, factor * carry.factor),
                rngs=rngs,
                n_epochs=1,
                **estimator._run_options(setup.gaps, setup.batch_size, setup.dtype, setup.weight),
                initial_state=carry.state,
                start_iter=carry.iters,
                weight_totals=totals,
            )
            return (result, rngs), result.extras.get("nonfinite_iter")

        remedy = " / ".join(f'solver_params["{key}"]' for key in SOLVERS[solver].step_sizes)
        (result, rngs), factor = refit_on_divergence(
            type(estimator).__name__, attempt, remedy=remedy, X=setup.X
        )
    return result, rngs, factor
