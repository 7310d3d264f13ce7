"""Stochastic Ghost (constrained spec 3.7): the relaxation ``kappa`` (an LP, closed forms for
one constraint and for the two sides of one gap), the direction QP (a dual solve, cvxpy as
the fallback) and the solver's host-loop ``init`` / ``step`` / ``diagnostics`` for the
engine's table (:data:`fairest.constrained._engine.SOLVERS`)."""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from fairest.constrained._engine._contract import Batch, _Ctx, _rows

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


@lru_cache(maxsize=16)
def _ghost_derivatives(problem):
    def derivs(x, data, aux, obj_idx, con_idx):
        d = data
        bf = Batch(
            d["X"][obj_idx],
            d["y"][obj_idx],
            d["groups"][obj_idx],
            jnp.ones(obj_idx.shape, x.dtype),
            _rows(d.get("s"), obj_idx),
        )
        bc = Batch(
            d["X"][con_idx],
            d["y"][con_idx],
            d["cells"][con_idx],
            jnp.ones(con_idx.shape, x.dtype),
            _rows(d.get("cs"), con_idx),
        )
        f, g = jax.value_and_grad(problem.objective)(x, bf, aux)
        c = problem.constraints(x, bc, aux)
        J = jax.jacrev(problem.constraints)(x, bc, aux)
        return f, g, c, J

    def full(x, data, aux):
        ctx = _Ctx(problem, data, aux, {}, True, True)
        f, g = jax.value_and_grad(ctx.f)(x, ctx.full_obj_batch())
        c = ctx.c(x, ctx.full_con_batch())
        J = jax.jacrev(ctx.c)(x, ctx.full_con_batch())
        return f, g, c, J

    return jax.jit(derivs), jax.jit(full)


def _init_ghost(x0, ctx):
    """Host state of Stochastic Ghost: the iterate in float64 and the step size."""
    n = ctx.n_rows
    cells = np.asarray(ctx.data["cells"])[:n]
    cw = np.asarray(ctx.data["cw"])[:n]
    members = [np.flatnonzero((cells == c) & (cw > 0)) for c in range(ctx.problem.n_cells)]
    return {
        "x": np.asarray(x0, dtype=np.float64),
        "dtype": x0.dtype,
        "k": 0,
        "gamma": ctx.hyper["learning_rate"],
        "failures": 0,
        "n_samples": 0,
        "members": members,
        "constraint_rows": int(cw.sum()),
    }


def _ghost_direction(state, ctx, f_g_c_J):
    """Direction, relaxation and constraint values of the subproblem at ``f_g_c_J``."""
    h = ctx.hyper
    _, g, c, J = (np.asarray(a, dtype=np.float64) for a in f_g_c_J)
    d, kappa, failed = ghost_subproblem(
        g,
        c,
        J.reshape(c.size, -1),
        backend=h["qp_backend"],
        tau=h["proximal_strength"],
        box=h["trust_radius"],
        kappa_lambda=h["relaxation_weight"],
        kappa_box=h["relaxation_radius"],
    )
    state["failures"] += int(failed)
    return d, kappa, c


def _step_ghost(state, ctx):
    """One Stochastic Ghost iteration (spec 3.7) on the host; ``hyper`` holds the public
    ``solver_params`` names, mapped here to the spec's symbols (p0, gamma_0, zeta_gamma,
    tau, beta, lambda_kappa, rho_kappa). Draw order: the MLMC level ``N`` (solver
    stream), then ``2^(N+1)`` objective rows and rows of every cell, then one of each."""
    h, k = ctx.hyper, state["k"]
    state = dict(state)
    derivs, full = _ghost_derivatives(ctx.problem)
    obj_rng, con_rng, solver_rng = ctx.rngs[1], ctx.rngs[2], ctx.rngs[3]
    xj = jnp.asarray(state["x"], dtype=state["dtype"])
    step0, decay = h["learning_rate"], h["learning_rate_decay_rate"]
    if h["learning_rate_rule"] == "inv_iter":
        state["gamma"] = step0 / (k + 1) ** decay
    elif k > 0:
        state["gamma"] = state["gamma"] * (1.0 - decay * state["gamma"])
    if h["sampling"] == "full":
        f_val, *_ = out = full(xj, ctx.data, ctx.aux)
        d_k, kappa, c_used = _ghost_direction(state, ctx, out)
        N = -1
        state["n_samples"] += ctx.n_rows + state["constraint_rows"]
    else:
        p0, members, n = h["mlmc_probability"], state["members"], ctx.n_rows
        largest = max(mm.size for mm in members)
        N = int(solver_rng.geometric(p0)) - 1
        while 2 ** (N + 1) > largest:
            N = int(solver_rng.geometric(p0)) - 1
        size = 2 ** (N + 1)
        obj_big = obj_rng.integers(n, size=size)
        con_big = np.stack([mm[con_rng.integers(mm.size, size=size)] for mm in members])
        obj_one = obj_rng.integers(n, size=1)
        con_one = np.stack([mm[con_rng.integers(mm.size, size=1)] for mm in members])

        def at(obj, con):
            return derivs(
                xj,
                ctx.data,
                ctx.aux,
                jnp.asarray(obj, jnp.int32),
                jnp.asarray(con.reshape(-1), jnp.int32),
            )

        out1 = at(obj_one, con_one)
        f_val = out1[0]
        d1, kappa, c_used = _ghost_direction(state, ctx, out1)
        d_big, _, _ = _ghost_direction(state, ctx, at(obj_big, con_big))
        d_odd, _, _ = _ghost_direction(state, ctx, at(obj_big[0::2], con_big[:, 0::2]))
        d_even, _, _ = _ghost_direction(state, ctx, at(obj_big[1::2], con_big[:, 1::2]))
        weight = p0 * (1.0 - p0) ** N
        d_k = d1 + (d_big - 0.5 * d_odd - 0.5 * d_even) / weight
        state["n_samples"] += 3 * (1 + size)
    state["x"] = state["x"] + state["gamma"] * d_k
    state["k"] = k + 1
    log = {"objective": f_val, "c": c_used, "step_size": state["gamma"], "kappa": kappa}
    return state, {**log, "N_geom": N}


def _ghost_diagnostics(state, logs, hyper):
    return {"n_qp_failures": state["failures"]}
