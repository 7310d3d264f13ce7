"""Presets of :class:`~fairest.constrained.LossGapConstrainedClassifier`: the settings of
its parameters left at ``"auto"`` and of its solvers' step sizes, for ``preset``
``"default"`` (fairest's, which mitigate on practitioners' data), ``"paper"`` and
``"release"`` (Kliachkin et al.'s benchmark and the authors' released configuration)."""

from __future__ import annotations

from fairest.constrained import _defaults
from fairest.constrained._engine import SOLVERS

__all__ = [
    "ALIASES",
    "SOLVER_NAMES",
    "UNCONSTRAINED",
    "resolve_batch_size",
    "resolve_feasibility_steps",
    "resolve_n_epochs",
    "resolve_solver_params",
]

SOLVER_NAMES = ("ssl-alm", "alm", "ssw", "ghost", "sgd", "penalty")
# the baselines, which do not target the tolerance: no feasibility phase, no warning
UNCONSTRAINED = ("sgd", "penalty")
ALIASES = {"ssl_alm": "ssl-alm", "penalty_sgd": "penalty"}


def resolve_solver_params(solver: str, preset: str, solver_params) -> dict:
    """Defaults of ``solver`` for ``preset`` updated by ``solver_params`` (spec 4.2)."""
    params = dict(_defaults.SOLVER_DEFAULTS[solver])
    if preset == "release":
        params.update(_defaults.RELEASE_OVERRIDES.get(solver, {}))
    elif preset == "default":
        params.update(_defaults.DEFAULT_OVERRIDES.get(solver, {}))
    for key, value in (solver_params or {}).items():
        if key not in params:
            raise ValueError(
                f"unknown solver_params key {key!r} for solver={solver!r}; "
                f"valid keys: {sorted(params)}."
            )
        params[key] = value
    for key, options in SOLVERS[solver].choices.items():
        if params[key] not in options:
            raise ValueError(
                f"solver_params[{key!r}] must be one of {sorted(options)}; got {params[key]!r}."
            )
    return params


def resolve_batch_size(batch_size, solver: str, preset: str):
    """``batch_size`` with ``"auto"`` resolved for ``solver`` and ``preset``."""
    if batch_size != "auto":
        return batch_size
    if preset == "default":
        return _defaults.DEFAULT_BATCH_SIZE
    return _defaults.AUTO_BATCH_SIZE.get(solver, _defaults.AUTO_BATCH_SIZE_DEFAULT)


def resolve_n_epochs(n_epochs, preset: str, n_samples: int):
    """``n_epochs`` with ``"auto"`` resolved: ``AUTO_EPOCH_ROWS / n_samples`` epochs
    within ``[AUTO_MIN_EPOCHS, AUTO_MAX_EPOCHS]`` for preset ``"default"``, the paper's 5
    otherwise."""
    if n_epochs != "auto":
        return n_epochs
    if preset != "default":
        return _defaults.N_EPOCHS
    epochs = _defaults.AUTO_EPOCH_ROWS / max(int(n_samples), 1)
    return float(min(max(epochs, _defaults.AUTO_MIN_EPOCHS), _defaults.AUTO_MAX_EPOCHS))


def resolve_feasibility_steps(feasibility_steps, solver: str, preset: str) -> int:
    """Steps of the final feasibility phase: ``"auto"`` is ``FEASIBILITY_STEPS`` for
    preset ``"default"`` and 0 otherwise; always 0 for the unconstrained baselines
    (``"sgd"``, ``"penalty"``)."""
    if solver in UNCONSTRAINED:
        return 0
    if feasibility_steps == "auto":
        return _defaults.FEASIBILITY_STEPS if preset == "default" else 0
    return int(feasibility_steps)
