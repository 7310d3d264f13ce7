"""Minimax group weights (badr spec section 6.3): ``min_theta max_g L_g(theta) + R(theta)``.

Two solvers, both with exactly the model's penalty ``R`` and intercept convention, so that
refitting the ordinary weighted model at the returned weights ``mu`` reproduces the minimax
model (KKT: ``theta_minimax`` minimises ``sum_g mu_g L_g + R`` with ``mu`` on the simplex).

* ``"cvxpy"``: the epigraph program ``min t s.t. L_g(theta) + R(theta) <= t`` solved by
  Clarabel; ``mu`` are the normalised duals of the group constraints. One cone per sample
  for the logistic loss, so meant for small and medium n.
* ``"dual"``: first-order path for large n. The dual ``D(mu) = min_theta sum_g mu_g L_g +
  R`` is concave on the simplex with gradient ``L(theta*(mu))`` (Danskin); it is maximised
  with SLSQP, each evaluation a warm-started jitted Newton solve (the BADR lower level).
  The duality gap ``max_g L_g(theta*(mu)) - sum_g mu_g L_g(theta*(mu))`` certifies it.
"""

from __future__ import annotations

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fairest._kernels._losses import PENALTY_SCALE
from fairest.reweighting._bilevel import Problem, group_losses_and_jacobian, lower_solve

__all__ = ["MinimaxSolverError", "minimax_cvxpy", "minimax_dual"]


class MinimaxSolverError(RuntimeError):
    """The epigraph program failed or was solved only inaccurately."""


def minimax_cvxpy(loss, X, y, groups, weight, num_groups, alpha, penalize_intercept):
    """Epigraph program with Clarabel. Returns ``(mu, theta, worst_loss)``.

    Raises :class:`MinimaxSolverError` unless Clarabel reports an accurate optimum.
    """
    import cvxpy as cp

    n, d = X.shape
    totals = np.bincount(groups, weights=weight, minlength=num_groups)
    averaging = sp.csr_matrix(
        (weight / totals[groups], (groups, np.arange(n))), shape=(num_groups, n)
    )
    b = cp.Variable()
    w = cp.Variable(d)
    t = cp.Variable()
    s = X @ w + b
    penalty = (
        PENALTY_SCALE[loss]
        * alpha
        * (cp.sum_squares(w) + (cp.square(b) if penalize_intercept else 0.0))
    )
    if loss == "logistic":
        pointwise = cp.logistic(s) - cp.multiply(y, s)
    elif loss == "squared_hinge":
        pointwise = cp.square(cp.pos(1.0 - cp.multiply(2.0 * y - 1.0, s)))
    else:
        pointwise = cp.square(s - y)
    constraint = averaging @ pointwise + penalty <= t
    problem = cp.Problem(cp.Minimize(t), [constraint])
    try:
        with warnings.catch_warnings():  # cvxpy's "may be inaccurate": the status says it
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as error:
        raise MinimaxSolverError(f"Clarabel failed on the minimax program: {error}") from error
    if problem.status != "optimal":
        raise MinimaxSolverError(
            f"Minimax program not solved accurately: cvxpy status {problem.status!r}."
        )
    mu = np.clip(np.asarray(constraint.dual_value, dtype=np.float64).ravel(), 0.0, None)
    if mu.sum() <= 0:
        raise MinimaxSolverError("Minimax program returned all-zero duals.")
    theta = np.concatenate([[float(b.value)], np.asarray(w.value, dtype=np.float64)])
    return mu / mu.sum(), theta, float(t.value)


@partial(jax.jit, static_argnames=("loss", "num_groups"))
def _dual_oracle(loss, num_groups, mu, theta0, problem: Problem):
    result = lower_solve(loss, mu, theta0, problem, num_groups)
    losses, _ = group_losses_and_jacobian(loss, result.theta, problem, num_groups)
    return result.objective, losses, result.theta  # D(mu) = sum_g mu_g L_g + R at theta*(mu)


def minimax_dual(loss, problem: Problem, num_groups, theta0, *, max_iter=200, tol=1e-10):
    """Maximise the concave dual on the simplex. Returns ``(mu, theta, worst_loss, gap)``."""
    from scipy.optimize import minimize

    cache = {}
    state = {"theta": theta0}

    def evaluate(mu):
        mu = np.maximum(np.asarray(mu, dtype=np.float64), 0.0)
        key = mu.tobytes()
        if key not in cache:
            cache.clear()
            value, losses, theta = _dual_oracle(
                loss, num_groups, jnp.asarray(mu), state["theta"], problem
            )
            state["theta"] = theta
            cache[key] = (float(value), np.asarray(losses), theta)
        return cache[key]

    mu0 = np.full(num_groups, 1.0 / num_groups)
    result = minimize(
        lambda m: -evaluate(m)[0],
        mu0,
        jac=lambda m: -evaluate(m)[1],
        method="SLSQP",
        bounds=[(0.0, 1.0)] * num_groups,
        constraints=[
            {"type": "eq", "fun": lambda v: np.sum(v) - 1.0, "jac": lambda v: np.ones_like(v)}
        ],
        options={"ftol": tol, "maxiter": max_iter},
    )
    mu = np.clip(result.x, 0.0, None)
    mu = mu / mu.sum()
    _, losses, theta = evaluate(mu)
    gap = float(np.max(losses) - np.dot(mu, losses))
    penalty = float(_penalty(loss, np.asarray(theta), problem))
    return mu, np.asarray(theta), float(np.max(losses)) + penalty, gap


def _penalty(loss, theta, problem):
    diag = np.ones_like(theta)
    diag[0] = float(problem.penalize_intercept)
    return PENALTY_SCALE[loss] * float(problem.alpha) * np.sum(diag * theta**2)
