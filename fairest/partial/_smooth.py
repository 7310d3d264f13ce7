"""The smoothed partial-fairness problems (15) / (21) and a reference solver for them:
an augmented Lagrangian on the *smoothed* DC problem, each round minimised by SciPy's
L-BFGS-B on one jitted ``value_and_grad`` (:func:`run_smooth_alm`, the first
``solver="smooth_alm"``; the estimators now run the Gauss-Newton rounds of
:mod:`fairest.partial._fast` on the same smoothed problem, and the tests compare the two).

The ramp surrogate ``clip(z + 1/2, 0, 1) = relu(z + 1/2) - relu(z - 1/2)`` is replaced by
``delta (softplus((z + 1/2) / delta) - softplus((z - 1/2) / delta))`` (within
``delta log 2`` of it), and the ``min`` of the pDP terms by a log-sum-exp of width
``delta`` (rates); the sigmoid surrogate is already smooth. The constraints are then
smooth (not convex) and their KKT points tend to those of the DC problem as ``delta ->
0``; no linearisation is needed, so the loss, the thresholds and the constraints move
together instead of one DCA majorisation at a time (IDCA with SSG inner solves ends far
above the optimum on Adult; ``benchmarks/results/partial_speed.md``).

Rockafellar's augmented Lagrangian
``L(x) = f_0(x) + sum_i ((lambda_i + r c_i(x))_+^2 - lambda_i^2) / (2 r)`` is minimised
by L-BFGS-B (gradient tolerance ``_GTOL``, at most ``max_steps`` steps); then
``lambda <- (lambda + r c(x))_+`` and ``r`` grows tenfold when the largest violation did
not fall by 4. Every round is warm-started (primal point, L-BFGS from scratch). ``delta``
follows the continuation ``_DELTAS`` (each stage warm-started from the last, multipliers
kept). One gradient costs one pass over the data, ``O(n (d + G J))``: the time per round
is linear in ``n``.

The run stops on a convergence test, not on a round count: at the last smoothing stage,
when the relative change of ``f_0`` over a round is at most ``tol``, the exact surrogate
constraints (unsmoothed) are within ``eps`` and L-BFGS-B converged. ``max_rounds`` caps
the rounds; every round's point is recorded (the "outer iterates" of the estimator).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

from fairest.partial._dc import (
    Config,
    Data,
    _gmean,
    _mask_diagonal,
    constraint_values,
    matvec,
    num_constraints,
    objective,
    split,
)

__all__ = ["SmoothResult", "run_smooth_alm", "smooth_constraint_values", "STEPS"]

_DELTAS = (0.05, 0.01, 2e-3)  # smoothing widths (ramp: units of tau; pDP min: rates)
GTOL = 1e-6  # L-BFGS-B projected-gradient tolerance of a round
FTOL = 1e-10  # L-BFGS-B relative decrease that ends a round
GTOL0 = 1e-3  # gradient tolerance of the first round, tenfold smaller every round
_RHO0 = 10.0
_RHO_MAX = 1e8
STEPS = 200  # L-BFGS-B iterations per round at most (inner_max_iter="auto")


def _smooth_relu(u, delta):
    """``relu`` with its kink rounded by a parabola on ``[-delta, delta]``: ``(u +
    delta)^2 / (4 delta)`` there (C^1, at most ``delta / 4`` above ``relu``). Polynomial,
    so cheaper than a softplus: the ``n x J`` surrogate work has no transcendental."""
    inside = (u + delta) ** 2 / (4.0 * delta)
    return jnp.where(u >= delta, u, jnp.where(u <= -delta, 0.0, inside))


def _smooth_ramp(z, delta):
    return _smooth_relu(z + 0.5, delta) - _smooth_relu(z - 0.5, delta)


def _smooth_min(a, b, delta):
    return -delta * jnp.logaddexp(-a / delta, -b / delta)


def smooth_constraint_values(x, data: Data, cfg: Config, delta):
    """The constraints of :func:`fairest.partial._dc.constraint_values` with the ramp
    (and the pDP ``min``) smoothed with width ``delta``; the pDP diagonal is ``-1``."""
    b, w, theta = split(x, cfg)
    s = matvec(data.X, w) + b
    ramp = cfg.surrogate == "ramp"
    if cfg.constraint == "statistical":
        z = (s[:, None] - theta[None, :]) / data.width
        sigma = _smooth_ramp(z, delta) if ramp else jax.nn.sigmoid(z)
        mean = _gmean(sigma, data, cfg)
        lower = data.grid[None, :] - mean
        upper = mean - data.grid[None, :] - data.slack
        return jnp.concatenate([lower.ravel(), upper.ravel()])
    z = (s - data.threshold) / data.width
    S = _gmean(_smooth_ramp(z, delta) if ramp else jax.nn.sigmoid(z), data, cfg)
    T = _smooth_min(S, data.hi, delta) - _smooth_min(S, data.lo, delta)
    values = _mask_diagonal(T[:, None] - T[None, :] - data.slack, cfg)
    return jnp.where(jnp.isinf(values), -1.0, values).ravel()


@partial(jax.jit, static_argnames="cfg")
def _lagrangian(x, lam, rho, delta, data: Data, cfg: Config):
    c = smooth_constraint_values(x, data, cfg, delta)
    shifted = jnp.maximum(lam + rho * c, 0.0)
    return objective(x, data, cfg) + jnp.sum(shifted**2 - lam**2) / (2.0 * rho)


_value_and_grad = jax.jit(jax.value_and_grad(_lagrangian), static_argnames="cfg")


@partial(jax.jit, static_argnames="cfg")
def _round_end(x, lam, rho, delta, data: Data, cfg: Config):
    """After a round: the new multipliers, the largest smoothed violation, ``f_0`` and
    the largest exact surrogate constraint."""
    c = smooth_constraint_values(x, data, cfg, delta)
    exact = constraint_values(x, data, cfg)
    return (
        jnp.maximum(lam + rho * c, 0.0),
        jnp.max(jnp.maximum(c, 0.0)),
        objective(x, data, cfg),
        jnp.max(exact),
    )


class SmoothResult(NamedTuple):
    iterates: np.ndarray  # (R + 1, D): the start, then the point of every round
    objective: np.ndarray  # (R + 1,) f_0
    max_violation: np.ndarray  # (R + 1,) largest exact surrogate constraint
    n_steps: np.ndarray  # (R,) L-BFGS-B iterations of every round
    converged: bool


def run_smooth_alm(
    x0, data: Data, cfg: Config, eps: float, tol: float, max_rounds: int, max_steps: int = STEPS
) -> SmoothResult:
    """Augmented Lagrangian rounds from ``x0``; see the module docstring."""
    if cfg.constraint not in ("statistical", "demographic"):
        raise ValueError("solver='smooth_alm' needs fairness constraints.")
    x = np.asarray(x0, dtype=np.float64)
    lam = jnp.zeros(num_constraints(cfg), jnp.float64)
    rho, stage, last_violation = _RHO0, 0, np.inf
    deltas = jnp.asarray(_DELTAS, jnp.float64)
    first = _round_end(jnp.asarray(x), lam, rho, deltas[0], data, cfg)
    iterates, objectives = [x], [float(first[2])]
    violations, steps = [float(first[3])], []
    converged = False
    for r in range(max_rounds):
        delta = deltas[stage]
        gtol = max(GTOL, GTOL0 * 0.1**r)  # inexact early rounds
        lam_j, rho_j = lam, jnp.asarray(rho, jnp.float64)

        def fun(v, lam_j=lam_j, rho_j=rho_j, delta=delta):
            value, grad = _value_and_grad(jnp.asarray(v), lam_j, rho_j, delta, data, cfg)
            return float(value), np.asarray(grad, dtype=np.float64)

        result = minimize(
            fun,
            x,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_steps, "gtol": gtol, "ftol": FTOL, "maxcor": 20},
        )
        moved = np.asarray(result.x, dtype=np.float64)
        if not np.all(np.isfinite(moved)):
            break
        lam_new, smooth_violation, f0, exact_max = _round_end(
            jnp.asarray(moved), lam, rho, delta, data, cfg
        )
        f0, exact_max, smooth_violation = float(f0), float(exact_max), float(smooth_violation)
        if not np.isfinite(f0):
            break
        change = abs(f0 - objectives[-1]) <= tol * max(abs(objectives[-1]), 1e-12)
        x, lam = moved, lam_new
        iterates.append(x)
        objectives.append(f0)
        violations.append(exact_max)
        steps.append(int(result.nit))
        settled = change and smooth_violation <= 0.1 * eps
        if settled and stage == len(_DELTAS) - 1 and exact_max <= eps:
            converged = True
            break
        if settled and stage < len(_DELTAS) - 1:
            stage += 1
        elif smooth_violation > 0.25 * last_violation:
            rho = min(10.0 * rho, _RHO_MAX)
        last_violation = smooth_violation
    return SmoothResult(
        iterates=np.asarray(iterates),
        objective=np.asarray(objectives),
        max_violation=np.asarray(violations),
        n_steps=np.asarray(steps, dtype=np.int64),
        converged=converged,
    )
