"""The solver contract of the constrained engine.

A problem is an object with ``objective(x, batch, aux) -> scalar`` (mean over the weighted
rows of ``batch``) and ``constraints(x, batch, aux) -> (m,)`` (``C(x) <= 0``); a solver is a
:class:`Solver` record of pure functions over its state (``init``, ``step``,
``parameters``, ``diagnostics``...); the driver (:mod:`._driver`) owns the iteration loop.
:class:`_Ctx` is what a step reads: the data, the traced problem data ``aux``, the
hyper-parameters and the batches of one iteration's draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import jax
import numpy as np

__all__ = [
    "Batch",
    "GenericProblem",
    "RunResult",
    "Solver",
    "solver",
    "solver_state",
    "full_values",
]


def _field(self, key):
    return getattr(self, key) if isinstance(key, str) else tuple.__getitem__(self, key)


def solver_state(cls):
    """Mark the NamedTuple ``cls`` as a solver state: a JAX pytree of arrays whose fields
    also read by name (``state["x"]``), as the host records of a run are read."""
    cls.__getitem__ = _field
    return cls


class Batch(NamedTuple):
    """Rows of one sample; ``w`` is 0 on padding rows.

    ``s`` (``None`` for unweighted data) scales each row's loss: its sample weight divided
    by the mean weight of the population the row was drawn from (all rows for objective
    batches, its constraint cell for constraint draws), so a uniform draw's mean of the
    scaled losses is an unbiased estimate of the weighted mean loss.
    """

    X: jax.Array
    y: jax.Array
    g: jax.Array  # group codes (objective) or constraint cells (constraint draws)
    w: jax.Array
    s: jax.Array | None = None


@dataclass(frozen=True, eq=False)
class GenericProblem:
    """User problem on a flat parameter vector (spec 1.4, generic constraint).

    ``objective(x, batch, aux)`` returns the mean objective on the weighted rows of
    ``batch``; ``constraints(x, batch, aux)`` returns ``(m,)`` values of ``C(x) <= 0``;
    ``surrogate`` (optional) is the differentiable proxy used in the primal step of
    ``gda``. Instances hash by identity, so a problem object reused across fits reuses
    the compiled code.
    """

    objective: Callable
    constraints: Callable
    m: int
    n_cells: int = 1
    surrogate: Callable | None = None

    def surrogate_or_value(self):
        return self.surrogate if self.surrogate is not None else self.constraints


class RunResult(NamedTuple):
    """Output of :func:`run_solver`: ``extras`` holds the solver's diagnostics
    (``Solver.diagnostics``: ``multipliers`` and ``slacks``, ``step_counts``,
    ``n_qp_failures``) and ``nonfinite_iter``, the first iteration whose iterates were not
    finite (``None`` when every iterate was finite)."""

    x: np.ndarray
    state: tuple  # the solver's final state (host arrays; fields read by name)
    history: dict | None  # dict of numpy arrays; None without record_history
    n_iter: int
    n_epochs: float
    extras: dict


def _rows(values, idx):
    """``values[idx]``, or ``None`` when there are no per-row values (unweighted data)."""
    return None if values is None else values[idx]


class _Ctx:
    """Context of a solver: data, problem aux, hyper-parameters, batch access.

    Traced inside a jitted chunk; on the host (``Solver.init``, host-loop steps) it also
    holds the random streams ``rngs`` and the number of data rows ``n_rows``.
    """

    def __init__(self, problem, data, aux, hyper, obj_full, con_full, rngs=None, n_rows=None):
        self.problem, self.data, self.aux, self.hyper = problem, data, aux, hyper
        self.obj_full, self.con_full = obj_full, con_full
        self.rngs, self.n_rows = rngs, n_rows

    def full_obj_batch(self):
        d = self.data
        return Batch(d["X"], d["y"], d["groups"], d["w"], d.get("s"))

    def full_con_batch(self):
        d = self.data
        return Batch(d["X"], d["y"], d["cells"], d["cw"], d.get("cs"))

    def obj_batch(self, inp):
        if self.obj_full:
            return self.full_obj_batch()
        d, idx = self.data, inp["obj_idx"]
        return Batch(
            d["X"][idx], d["y"][idx], d["groups"][idx], inp["obj_w"], _rows(d.get("s"), idx)
        )

    def con_batch(self, inp, k: int):
        if self.con_full:
            return self.full_con_batch()
        d, idx = self.data, inp[f"con_idx{k}"]
        return Batch(
            d["X"][idx], d["y"][idx], d["cells"][idx], inp[f"con_w{k}"], _rows(d.get("cs"), idx)
        )

    def f(self, x, batch):
        return self.problem.objective(x, batch, self.aux)

    def c(self, x, batch):
        return self.problem.constraints(x, batch, self.aux)


class Solver(NamedTuple):
    """One solver of the engine: pure functions over its state, a NamedTuple of arrays
    (:func:`solver_state`; a row of ``SOLVERS``).

    The driver (:func:`run_solver`) owns everything else, once for every solver: sampling,
    the jitted chunks of a guarded ``lax.scan``, the finiteness checks, the history, the
    timing and the budget; :func:`solve` adds the refits after a divergence.

    Attributes
    ----------
    init : callable
        ``init(x0, ctx) -> state``: the initial state at the flat parameters ``x0``
        (``ctx`` is a :class:`_Ctx` holding the untraced ``hyper``).
    step : callable
        ``step(state, inp, ctx, **options) -> (state, log)``: one iteration, pure and
        jittable (``inp`` holds the iteration's draws); with ``host=True`` a host function
        ``step(state, ctx) -> (state, log)``.
    parameters : callable
        ``parameters(state, hyper) -> x``: the returned iterate.
    diagnostics : callable
        ``diagnostics(state, logs, hyper) -> dict``: the solver's own results
        (multipliers, slacks, step counts...), from the final state and the logs.
    options : callable
        ``options(hyper) -> dict``: option strings compiled into ``step`` (keywords).
    constraint_draws : callable
        ``constraint_draws(hyper) -> int``: constraint draws one iteration consumes.
    final_step : callable or None
        ``final_step(state, ctx, block_rows) -> state``: a last step on the full data,
        taken when ``hyper["final_full_step"]`` is true; ``block_rows`` (the tuning
        record's ``full_step_block_rows``) bounds the rows a blocked pass holds at once.
    step_sizes : tuple of str
        The ``hyper`` keys that the refits after a divergence scale.
    choices : dict
        Allowed values of the option strings of ``hyper``.
    device_logs : tuple of str
        Log entries ``diagnostics`` reads when no history is recorded.
    samples : callable
        ``samples(logs, rows_f, rows_c, n_draws)``: rows one iteration reads (a number, or
        one per logged iteration).
    columns : callable
        ``columns(logs) -> dict``: the solver's own history columns.
    host : bool
        Per-iteration work on the host (a Python loop) instead of a jitted scan.
    """

    init: Callable
    step: Callable
    parameters: Callable
    diagnostics: Callable
    options: Callable
    constraint_draws: Callable
    final_step: Callable | None
    step_sizes: tuple
    choices: dict
    device_logs: tuple
    samples: Callable
    columns: Callable
    host: bool


def _iterate(state, hyper):
    return state.x


def _no_diagnostics(state, logs, hyper):
    return {}


def _no_options(hyper):
    return {}


def _no_draws(hyper):
    return 0


def _one_draw(hyper):
    return 1


def _draws(hyper):
    """One constraint draw with ``constraint_draw="shared"``, two (independent) otherwise."""
    return 1 if hyper.get("constraint_draw") == "shared" else 2


def _draw_options(hyper):
    return {"shared_draw": True} if hyper.get("constraint_draw") == "shared" else {}


def _every_row(logs, rows_f, rows_c, n_draws):
    return rows_f + n_draws * rows_c


def _no_columns(logs):
    return {}


def solver(init, step, **fields) -> Solver:
    """A :class:`Solver` with the defaults of a plain first-order scan solver."""
    defaults = dict(
        parameters=_iterate,
        diagnostics=_no_diagnostics,
        options=_no_options,
        constraint_draws=_no_draws,
        final_step=None,
        step_sizes=("learning_rate",),
        choices={},
        device_logs=(),
        samples=_every_row,
        columns=_no_columns,
        host=False,
    )
    return Solver(init, step, **{**defaults, **fields})


@lru_cache(maxsize=16)
def _full_values_function(problem):
    def values(x, data, aux):
        ctx = _Ctx(problem, data, aux, {}, True, True)
        return ctx.f(x, ctx.full_obj_batch()), ctx.c(x, ctx.full_con_batch())

    return jax.jit(values)


def full_values(problem, x, data, aux):
    """Full-training-set objective and constraint values (one jitted pass)."""
    f, c = _full_values_function(problem)(x, data, aux)
    return float(f), np.asarray(c)
