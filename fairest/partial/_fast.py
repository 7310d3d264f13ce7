"""Fast solver of the smoothed partial-fairness problems: the augmented Lagrangian of
:mod:`fairest.partial._smooth` with every round minimised by damped Gauss-Newton steps,
the whole run (rounds, smoothing stages, Newton steps, line searches) inside one jitted
``jax.lax.while_loop``: no host round trip until the run ends.

The augmented Lagrangian of a round is
``L(x) = f_0(x) + sum_i ((lambda_i + r c_i(x))_+^2 - lambda_i^2) / (2 r)`` with the
smoothed constraints ``c`` (width ``delta``). Its gradient is
``grad f_0 + J^T (lambda + r c)_+`` (``J`` the ``m x D`` constraint Jacobian, ``m =
2 G J`` for pSP, ``G^2`` for pDP) and its Gauss-Newton matrix
``H = X~^T diag(c0 p (1 - p)) X~ + alpha I_w + r J_A^T J_A + nu I`` (``X~ = (1, X)``, ``A``
the constraints with ``lambda + r c > 0``, ``nu`` a small Levenberg-Marquardt shift):
positive definite, so ``-H^{-1} grad L`` is a descent direction and Armijo backtracking
on ``L`` makes every step decrease ``L``; the points where the steps stop are the
stationary points of ``L``, the same as those of L-BFGS on ``L``. ``D = 1 + d + J``
is small, so ``H`` is a ``D x D`` Cholesky solve; forming it is one weighted Gram of the
rows (``O(n d^2)``) and one ``X^T U`` with ``m`` columns: the time of a step is linear in
``n``.

Rounds: after each, ``lambda <- (lambda + r c)_+``; ``r`` grows tenfold when the
largest smoothed violation did not fall by 4; the smoothing width moves to the next of
``deltas`` when a round changed ``f_0`` by at most ``tol`` (relative) and the smoothed
constraints hold within ``eps / 10``. The run stops (converged) at the last width under
the same test when the exact surrogate constraints hold within ``eps``.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._glm import weighted_gram
from fairest.partial._dc import (
    Config,
    Data,
    SparseRows,
    _gmean,
    _mask_diagonal,
    constraint_values,
    num_constraints,
    objective,
    rmatvec,
    scores,
    split,
)
from fairest.partial._rows import row_dot, row_scatter, row_sum
from fairest.partial._smooth import (
    SmoothResult,
    _smooth_min,
    _smooth_ramp,
    smooth_constraint_values,
)

__all__ = ["run_fast_alm", "solver_data", "FAST_DELTAS", "NEWTON_STEPS", "SOLVER_DTYPE"]

FAST_DELTAS = (0.05, 0.01, 2e-3)  # smoothing widths (ramp: units of tau; pDP min: rates)
# Precision of the solve: on XLA CPU a float32 pass over the rows costs a third to a tenth
# of a float64 one (Adult 32,561 x 105: X w 0.55 vs 5.1 ms, Gram 14 vs 43 ms), and the
# float32 run took fewer steps (114 vs 182) to the same objective (0.34620 vs 0.34620);
# the exact training metric and the returned model are float64.
SOLVER_DTYPE = jnp.float32
NEWTON_STEPS = 20  # Gauss-Newton steps of a round at most
_RHO0 = 10.0
_RHO_MAX = 1e6
_STALL = 1e-4  # relative change of the worst smoothed violation over a round: stalled
# Levenberg-Marquardt shift nu relative to the largest diagonal entry of H, by precision
# (one-hot columns with all their levels are collinear with the intercept: H_0 singular)
_SHIFT = {8: 1e-8, 4: 1e-5}
_ARMIJO = 1e-4
_BACKTRACKS = 30
_GTOL = 1e-7  # sup-norm of grad L that ends a round
_GTOL0 = 1e-3  # that of the first round, tenfold smaller every round
_FTOL = 1e-9  # relative decrease of L over a step that ends a round
_RETRY_SHIFT = 1e-3  # relative shift of the retried Cholesky (see _newton_direction)
_REFRESH = 5  # Gauss-Newton steps between two loss Hessians
# From this many rows on, the loss Hessian's Gram is summed over row blocks
# (fairest._kernels._glm.weighted_gram) instead of formed from an (n, d) temporary
# sqrt(a) X (400 MB at 1e6 x 100 float32); a different float32 rounding, so smaller data
# keeps the one-product form and its exact results.
BLOCKED_GRAM_ROWS = 2**18


def _lagrangian(x, lam, rho, delta, data: Data, cfg: Config):
    c = smooth_constraint_values(x, data, cfg, delta)
    shifted = jnp.maximum(lam + rho * c, 0.0)
    return objective(x, data, cfg) + jnp.sum(shifted**2 - lam**2) / (2.0 * rho)


def _weighted_gram(X, a):
    """``X~^T diag(a) X~`` with ``X~ = (1, X)``: ``(1 + d, 1 + d)``."""
    if isinstance(X, SparseRows):
        d = X.shape[1]
        value, index = X.slots()
        outer = value[:, :, None] * value[:, None, :] * a[:, None, None]
        flat = (index[:, :, None] * d + index[:, None, :]).reshape(outer.shape[0], -1)
        gram = row_scatter(outer.reshape(outer.shape[0], -1), flat, d * d).reshape(d, d)
        cross = row_scatter(value * a[:, None], index, d)
    elif X.shape[0] > BLOCKED_GRAM_ROWS:  # summed over row blocks: no (n, d) temporary
        gram = weighted_gram(X, a)
        cross = row_dot(a, X)
    else:
        root = jnp.sqrt(a)[:, None] * X
        gram = row_dot(root, root)
        cross = row_dot(a, X)
    top = jnp.concatenate([row_sum(a)[None], cross])
    return jnp.block([[top[None, :]], [jnp.concatenate([cross[:, None], gram], axis=1)]])


def _levels(s, x, data: Data, cfg: Config):
    """Surrogate arguments ``z``: ``(n, J)`` (pSP) or ``(n,)`` (pDP)."""
    if cfg.constraint == "statistical":
        _, _, theta = split(x, cfg)
        return (s[:, None] - theta[None, :]) / data.width
    return (s - data.threshold) / data.width


def _core(s, x, delta, data: Data, cfg: Config):
    """The smoothed group means the constraints are built from, flattened (``q``), and
    the ``(n, q)`` matrix ``U`` of their derivatives in the scores (membership times
    surrogate slope): ``d core / d s = U^T``."""
    z = _levels(s, x, data, cfg)
    if cfg.surrogate == "ramp":
        sigma, slope = jax.jvp(lambda v: _smooth_ramp(v, delta), (z,), (jnp.ones_like(z),))
    else:
        sigma = jax.nn.sigmoid(z)
        slope = sigma * (1.0 - sigma)
    slope = slope / data.width
    core = _gmean(sigma, data, cfg).ravel()
    if cfg.constraint == "statistical":
        U = (data.membership[:, :, None] * slope[:, None, :]).reshape(s.shape[0], -1)
    else:
        U = data.membership * slope[:, None]
    return core, U


def _theta_part(sums, x, cfg: Config):
    """``d core / d theta`` (``(q, J)``): minus the slope sums of each level (pSP)."""
    if cfg.constraint != "statistical":
        return jnp.zeros((sums.shape[0], x.shape[0] - 1 - cfg.num_features), x.dtype)
    J = cfg.num_levels
    eye = jnp.eye(J, dtype=x.dtype)[None]
    return -(sums.reshape(-1, J)[:, :, None] * eye).reshape(-1, J)


def _constraints_of_core(core, data: Data, cfg: Config, delta):
    """The smoothed constraints of
    :func:`fairest.partial._smooth.smooth_constraint_values` as a function of the group
    means ``core`` (no data pass)."""
    if cfg.constraint == "statistical":
        mean = core.reshape(cfg.num_groups, cfg.num_levels)
        lower = data.grid[None, :] - mean
        upper = mean - data.grid[None, :] - data.slack
        return jnp.concatenate([lower.ravel(), upper.ravel()])
    T = _smooth_min(core, data.hi, delta) - _smooth_min(core, data.lo, delta)
    values = _mask_diagonal(T[:, None] - T[None, :] - data.slack, cfg)
    return jnp.where(jnp.isinf(values), -1.0, values).ravel()


def _loss_hessian(x, data: Data, cfg: Config):
    """Hessian of ``f_0`` at ``x``, ``(D, D)`` (zero on the thresholds): one weighted
    Gram of the rows."""
    D, k = x.shape[0], 1 + cfg.num_features
    p = jax.nn.sigmoid(scores(x, data, cfg))
    H = jnp.zeros((D, D), x.dtype)
    H = H.at[:k, :k].set(_weighted_gram(data.X, data.c0 * p * (1.0 - p)))
    return H + jnp.diag(jnp.zeros(D, x.dtype).at[1:k].set(data.alpha))


def _value(x, lam, rho, delta, data: Data, cfg: Config):
    """The augmented Lagrangian at ``x`` (one forward pass)."""
    s = scores(x, data, cfg)
    _, w, _ = split(x, cfg)
    loss = row_sum(data.c0 * (jnp.logaddexp(0.0, s) - data.y * s))
    loss = loss + 0.5 * data.alpha * jnp.sum(w * w)
    core = _gmean(_surrogate(_levels(s, x, data, cfg), delta, cfg), data, cfg).ravel()
    c = _constraints_of_core(core, data, cfg, delta)
    shifted = jnp.maximum(lam + rho * c, 0.0)
    return loss + jnp.sum(shifted**2 - lam**2) / (2.0 * rho)


def _surrogate(z, delta, cfg: Config):
    return _smooth_ramp(z, delta) if cfg.surrogate == "ramp" else jax.nn.sigmoid(z)


def _evaluate(x, lam, rho, delta, loss_hessian, data: Data, cfg: Config):
    """Value, gradient and Gauss-Newton matrix (with ``loss_hessian`` for ``f_0``) of the
    augmented Lagrangian at ``x``: one pass for the scores and one ``X^T V`` with the
    ``1 + q`` columns ``V = (c0 (p - y), U)``."""
    s = scores(x, data, cfg)
    _, w, _ = split(x, cfg)
    D, k = x.shape[0], 1 + cfg.num_features
    loss = row_sum(data.c0 * (jnp.logaddexp(0.0, s) - data.y * s))
    loss = loss + 0.5 * data.alpha * jnp.sum(w * w)
    core, U = _core(s, x, delta, data, cfg)
    c = _constraints_of_core(core, data, cfg, delta)
    C = jax.jacfwd(lambda v: _constraints_of_core(v, data, cfg, delta))(core)  # (m, q)
    shifted = jnp.maximum(lam + rho * c, 0.0)
    value = loss + jnp.sum(shifted**2 - lam**2) / (2.0 * rho)
    residual = data.c0 * (jax.nn.sigmoid(s) - data.y)
    V = jnp.concatenate([residual[:, None], U], axis=1)
    sums = row_sum(V)
    XtV = rmatvec(V, data.X)  # (d, 1 + q)
    core_jacobian = jnp.concatenate(
        [sums[1:, None], XtV[:, 1:].T, _theta_part(sums[1:], x, cfg)], axis=1
    )  # (q, D)
    loss_grad = jnp.zeros(D, x.dtype).at[0].set(sums[0]).at[1:k].set(XtV[:, 0] + data.alpha * w)
    grad = loss_grad + core_jacobian.T @ (C.T @ shifted)
    active = (lam + rho * c > 0).astype(x.dtype)
    inner = (C * active[:, None]).T @ C  # (q, q)
    H = loss_hessian + rho * core_jacobian.T @ (inner @ core_jacobian)
    shift = _SHIFT[jnp.dtype(x.dtype).itemsize] * jnp.maximum(jnp.max(jnp.diag(H)), 1.0)
    return value, grad, H + shift * jnp.eye(D, dtype=x.dtype)


def _solve_shifted(H, grad, shift):
    D = H.shape[0]
    factor = jax.scipy.linalg.cho_factor(H + shift * jnp.eye(D, dtype=H.dtype))
    return -jax.scipy.linalg.cho_solve(factor, grad)


def _newton_direction(H, grad):
    """``-H^{-1} grad`` by Cholesky. A float32 Gram of collinear columns (one-hot levels
    with the intercept) can have a slightly negative eigenvalue despite the shift, and
    its factor is then NaN: the solve is retried with a shift of ``_RETRY_SHIFT`` times
    the largest diagonal entry, and a scaled gradient step is the last resort (never a
    NaN direction, which would reject every step and leave the start unmoved)."""
    direction = -jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(H), grad)
    scale = jnp.maximum(jnp.max(jnp.diag(H)), 1.0)

    def retry():
        shifted = _solve_shifted(H, grad, _RETRY_SHIFT * scale)
        return jnp.where(jnp.all(jnp.isfinite(shifted)), shifted, -grad / scale)

    return jax.lax.cond(jnp.all(jnp.isfinite(direction)), lambda: direction, retry)


class _Step(NamedTuple):
    x: jax.Array
    value: jax.Array
    grad: jax.Array
    H: jax.Array
    loss_hessian: jax.Array
    k: jax.Array
    done: jax.Array


def _minimise_round(x, lam, rho, delta, gtol, data: Data, cfg: Config, max_steps):
    """Damped Gauss-Newton on the round's augmented Lagrangian from ``x`` until the
    sup-norm of its gradient is at most ``gtol`` (or a step changes it by at most
    ``_FTOL``, relative): ``(x, steps)``. The loss Hessian is refreshed every
    ``_REFRESH`` steps (the logistic curvature changes slowly; the constraint term is
    exact at every step); a line search costs one forward pass a trial."""

    def evaluate(v, loss_hessian):
        return _evaluate(v, lam, rho, delta, loss_hessian, data, cfg)

    def cond(state: _Step):
        return (~state.done) & (state.k < max_steps)

    def body(state: _Step):
        direction = _newton_direction(state.H, state.grad)
        slope = jnp.dot(state.grad, direction)

        def search_cond(carry):
            t, value, n = carry
            return ~(value <= state.value + _ARMIJO * t * slope) & (n < _BACKTRACKS)

        def search_body(carry):
            t, _, n = carry
            t = 0.5 * t
            return t, _value(state.x + t * direction, lam, rho, delta, data, cfg), n + 1

        one = jnp.asarray(1.0, x.dtype)
        first = _value(state.x + direction, lam, rho, delta, data, cfg)
        t, value, _ = jax.lax.while_loop(search_cond, search_body, (one, first, 0))
        accepted = (value <= state.value + _ARMIJO * t * slope) & (slope < 0)
        new_x = jnp.where(accepted, state.x + t * direction, state.x)
        refresh = (state.k + 1) % _REFRESH == 0
        loss_hessian = jax.lax.cond(
            refresh, lambda: _loss_hessian(new_x, data, cfg), lambda: state.loss_hessian
        )
        new_value, grad, H = evaluate(new_x, loss_hessian)
        small_change = state.value - new_value <= _FTOL * jnp.maximum(jnp.abs(state.value), 1.0)
        stationary = jnp.max(jnp.abs(grad)) <= gtol
        done = (~accepted) | small_change | stationary
        return _Step(new_x, new_value, grad, H, loss_hessian, state.k + 1, done)

    loss_hessian = _loss_hessian(x, data, cfg)
    value, grad, H = evaluate(x, loss_hessian)
    done = jnp.max(jnp.abs(grad)) <= gtol
    start = _Step(x, value, grad, H, loss_hessian, jnp.asarray(0), done)
    end = jax.lax.while_loop(cond, body, start)
    return end.x, end.k


class _Round(NamedTuple):
    x: jax.Array
    lam: jax.Array
    rho: jax.Array
    stage: jax.Array
    last_violation: jax.Array
    r: jax.Array
    iterates: jax.Array
    objectives: jax.Array
    violations: jax.Array
    steps: jax.Array
    converged: jax.Array
    stop: jax.Array


@partial(jax.jit, static_argnames=("cfg", "max_rounds", "max_steps"))
def _run(x0, data: Data, cfg: Config, deltas, eps, tol, max_rounds, max_steps):
    dtype = x0.dtype
    m = num_constraints(cfg)
    last_stage = deltas.shape[0] - 1
    iterates = jnp.zeros((max_rounds + 1, x0.shape[0]), dtype).at[0].set(x0)
    objectives = jnp.full(max_rounds + 1, jnp.nan, dtype).at[0].set(objective(x0, data, cfg))
    violations = jnp.full(max_rounds + 1, jnp.nan, dtype)
    violations = violations.at[0].set(jnp.max(constraint_values(x0, data, cfg)))
    start = _Round(
        x=x0,
        lam=jnp.zeros(m, dtype),
        rho=jnp.asarray(_RHO0, dtype),
        stage=jnp.asarray(0),
        last_violation=jnp.asarray(jnp.inf, dtype),
        r=jnp.asarray(0),
        iterates=iterates,
        objectives=objectives,
        violations=violations,
        steps=jnp.zeros(max_rounds, jnp.int32),
        converged=jnp.asarray(False),
        stop=jnp.asarray(False),
    )

    def cond(state: _Round):
        return (~state.stop) & (state.r < max_rounds)

    def body(state: _Round):
        delta = deltas[state.stage]
        gtol = jnp.maximum(_GTOL, _GTOL0 * 0.1 ** state.r.astype(dtype))  # inexact early
        x, k = _minimise_round(state.x, state.lam, state.rho, delta, gtol, data, cfg, max_steps)
        c = smooth_constraint_values(x, data, cfg, delta)
        lam = jnp.maximum(state.lam + state.rho * c, 0.0)
        smooth_violation = jnp.max(jnp.maximum(c, 0.0))
        f0 = objective(x, data, cfg)
        exact_max = jnp.max(constraint_values(x, data, cfg))
        finite = jnp.all(jnp.isfinite(x)) & jnp.isfinite(f0)
        previous = state.objectives[state.r]
        change = jnp.abs(f0 - previous) <= tol * jnp.maximum(jnp.abs(previous), 1e-12)
        settled = change & (smooth_violation <= 0.1 * eps)
        at_last = state.stage == last_stage
        converged = settled & at_last & (exact_max <= eps)
        next_stage = jnp.where(settled & ~at_last, state.stage + 1, state.stage)
        grow = ~(settled & ~at_last) & (smooth_violation > 0.25 * state.last_violation)
        # the worst smoothed violation did not move over a round: its constraint is flat
        # there (no sample on the ramp of its level); more rounds change nothing
        stalled = (smooth_violation > 0.1 * eps) & (
            jnp.abs(smooth_violation - state.last_violation) <= _STALL * smooth_violation
        )
        rho = jnp.where(grow, jnp.minimum(10.0 * state.rho, _RHO_MAX), state.rho)
        r = state.r + 1

        moved = _Round(
            x=x,
            lam=lam,
            rho=rho,
            stage=next_stage,
            last_violation=smooth_violation,
            r=r,
            iterates=state.iterates.at[r].set(x),
            objectives=state.objectives.at[r].set(f0),
            violations=state.violations.at[r].set(exact_max),
            steps=state.steps.at[r - 1].set(k),
            converged=converged,
            stop=converged | stalled,
        )
        halted = state._replace(stop=jnp.asarray(True))
        return jax.tree_util.tree_map(lambda a, b: jnp.where(finite, a, b), moved, halted)

    end = jax.lax.while_loop(cond, body, start)
    return end.iterates, end.objectives, end.violations, end.steps, end.r, end.converged


def solver_data(data: Data) -> Data:
    """``data`` with its floating arrays in ``SOLVER_DTYPE``."""

    def cast(a):
        return a.astype(SOLVER_DTYPE) if jnp.issubdtype(a.dtype, jnp.floating) else a

    return jax.tree_util.tree_map(cast, data)


def run_fast_alm(
    x0,
    data: Data,
    cfg: Config,
    eps: float,
    tol: float,
    max_rounds: int,
    max_steps: int = NEWTON_STEPS,
    deltas=FAST_DELTAS,
) -> SmoothResult:
    """Augmented Lagrangian rounds with Gauss-Newton steps from ``x0`` in one jitted
    loop; see the module docstring. The result records every round's point."""
    if cfg.constraint not in ("statistical", "demographic"):
        raise ValueError("solver='smooth_alm' needs fairness constraints.")
    dtype = data.c0.dtype
    out = _run(
        jnp.asarray(x0, dtype),
        data,
        cfg,
        jnp.asarray(deltas, dtype),
        jnp.asarray(eps, dtype),
        jnp.asarray(tol, dtype),
        int(max_rounds),
        int(max_steps),
    )
    iterates, objectives, violations, steps, rounds, converged = jax.device_get(out)
    rounds = int(rounds)
    return SmoothResult(
        iterates=np.asarray(iterates[: rounds + 1], dtype=np.float64),
        objective=np.asarray(objectives[: rounds + 1], dtype=np.float64),
        max_violation=np.asarray(violations[: rounds + 1], dtype=np.float64),
        n_steps=np.asarray(steps[:rounds], dtype=np.int64),
        converged=bool(converged),
    )
