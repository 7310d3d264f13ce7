"""The subproblems of Stochastic Ghost (constrained spec 3.7): the relaxation ``kappa`` (an
LP, closed forms for one constraint and for the two sides of one gap) and the direction QP
(a dual solve, cvxpy as the fallback), on host arrays. The solver's host-loop ``init`` /
``step`` / ``diagnostics`` are in :mod:`fairest.constrained._engine._ghost_solver`."""

from __future__ import annotations

import numpy as np

__all__ = ["ghost_kappa", "ghost_subproblem"]


def ghost_kappa(c, J, kappa_lambda, kappa_box):
    """``kappa = (1 - lambda) max_i [c_i]_+ + lambda t*`` with the LP of spec 3.7.

    Returns ``(kappa, t_star, d_lp)``; ``d_lp`` is the LP's direction. Two cases have a
    closed form and skip the LP solver: one constraint (``t* = [c - rho ||J||_1]_+`` at
    ``d = -rho sign(J)``) and a pair ``J_2 = -J_1`` (the two sides of one loss gap,
    :func:`_kappa_pair`).
    """
    c = np.asarray(c, dtype=np.float64)
    J = np.asarray(J, dtype=np.float64).reshape(c.size, -1)
    if c.size == 1:
        t_star = max(float(c[0] - kappa_box * np.abs(J[0]).sum()), 0.0)
        d_lp = -kappa_box * np.sign(J[0])
    elif c.size == 2 and np.array_equal(J[1], -J[0]):
        t_star, d_lp = _kappa_pair(c, J[0], kappa_box)
    else:
        t_star, d_lp = _kappa_lp(c, J, kappa_box)
    kappa = (1.0 - kappa_lambda) * float(np.maximum(c, 0.0).max()) + kappa_lambda * t_star
    return kappa, t_star, d_lp


def _kappa_pair(c, J1, box):
    """The LP of :func:`ghost_kappa` for ``c_1 + s <= t``, ``c_2 - s <= t`` with ``s = J_1 d``.

    ``s`` ranges over ``[-b, b]``, ``b = box ||J_1||_1``; ``max(c_1 + s, c_2 - s)`` is least
    at ``s* = clip((c_2 - c_1) / 2, -b, b)``, reached by ``d = (s* / b) box sign(J_1)``.
    """
    b = box * np.abs(J1).sum()
    s = float(np.clip((c[1] - c[0]) / 2.0, -b, b))
    d = (s / b) * box * np.sign(J1) if b > 0 else np.zeros_like(J1)
    return max(c[0] + s, c[1] - s, 0.0), d


def _kappa_lp(c, J, box):
    from scipy.optimize import linprog

    m, n = J.shape
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    A = np.hstack([J, -np.ones((m, 1))])
    bounds = [(-box, box)] * n + [(0.0, None)]
    res = linprog(cost, A_ub=A, b_ub=-c, bounds=bounds, method="highs")
    if res.status != 0:
        return float(box), None  # fallback t* := rho_kappa [C]
    return max(float(res.x[-1]), 0.0), res.x[:-1]


_QP_CACHE: dict = {}


def _qp_cvxpy(g, c, J, kappa, tau, box):
    import cvxpy as cp

    m, n = J.shape
    key = (m, n)
    if key not in _QP_CACHE:
        d = cp.Variable(n)
        pg, pc, pJ, pk = cp.Parameter(n), cp.Parameter(m), cp.Parameter((m, n)), cp.Parameter()
        pbox = cp.Parameter(nonneg=True)
        prob = cp.Problem(
            cp.Minimize(pg @ d + (tau_half := cp.Parameter(nonneg=True)) * cp.sum_squares(d)),
            [pc + pJ @ d <= pk, cp.abs(d) <= pbox],
        )
        _QP_CACHE[key] = (prob, d, pg, pc, pJ, pk, pbox, tau_half)
    prob, d, pg, pc, pJ, pk, pbox, tau_half = _QP_CACHE[key]
    pg.value, pc.value, pJ.value = g, c, J
    pk.value, pbox.value, tau_half.value = kappa, box, tau / 2.0
    prob.solve(solver="CLARABEL")
    if prob.status not in ("optimal", "optimal_inaccurate") or d.value is None:
        raise RuntimeError(f"QP status {prob.status}")
    return np.asarray(d.value)


def _qp_dual(g, c, J, kappa, tau, box):
    """Maximise the concave dual over mu >= 0; ``d(mu) = clip(-(g + J^T mu)/tau, +-box)``."""
    from scipy.optimize import minimize

    def primal(mu):
        return np.clip(-(g + J.T @ mu) / tau, -box, box)

    d0 = primal(np.zeros(c.size))
    if np.all(c + J @ d0 <= kappa):
        return d0  # mu = 0 is optimal: the unconstrained (boxed) step is feasible

    def neg_dual(mu):
        d = primal(mu)
        slack = c + J @ d - kappa
        value = g @ d + 0.5 * tau * d @ d + mu @ slack
        return -value, -slack

    res = minimize(
        neg_dual,
        np.zeros(c.size),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * c.size,
        options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 5000, "maxls": 50},
    )
    if not np.all(np.isfinite(res.x)):
        raise RuntimeError("dual QP diverged")
    d = primal(res.x)
    if np.max(c + J @ d - kappa) > 1e-6 * (1.0 + np.abs(c).max()):
        raise RuntimeError("dual QP infeasible")
    return d


def ghost_subproblem(g, c, J, *, tau, box, kappa_lambda, kappa_box, backend="dual"):
    """Direction ``d(X)`` of spec 3.7: ``min g^T d + tau/2 ||d||^2`` s.t.
    ``c + J d <= kappa 1``, ``||d||_inf <= box``. Returns ``(d, kappa, failed)``."""
    g = np.asarray(g, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    J = np.asarray(J, dtype=np.float64).reshape(c.size, g.size)
    kappa, _, _ = ghost_kappa(c, J, kappa_lambda, kappa_box)
    solvers = [_qp_dual, _qp_cvxpy] if backend == "dual" else [_qp_cvxpy, _qp_dual]
    for solve in solvers:
        try:
            return solve(g, c, J, kappa, tau, box), kappa, False
        except Exception:
            continue
    return np.zeros_like(g), kappa, True
