"""Stochastic Ghost (constrained spec 3.7) on the engine's contract: a host-loop solver
(``Solver.host``) whose step solves a QP per sample (:mod:`fairest.constrained._ghost`)
over jitted derivative kernels."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest.constrained._engine._contract import Batch, _Ctx, _rows, solver_state
from fairest.constrained._ghost import ghost_subproblem

__all__ = ["GhostState", "ghost_derivatives"]


@lru_cache(maxsize=16)
def ghost_derivatives(problem):
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


@solver_state
class GhostState(NamedTuple):
    """Host state of Stochastic Ghost: the iterate in float64 (``dtype``: the model's), the
    iteration, the step size, the failed QPs, the rows read, the rows of every constraint
    cell and their total."""

    x: np.ndarray
    dtype: np.dtype
    k: int
    gamma: float
    failures: int
    n_samples: int
    members: list
    constraint_rows: int


def _init_ghost(x0, ctx):
    """The iterate in float64 and the first step size."""
    n = ctx.n_rows
    cells = np.asarray(ctx.data["cells"])[:n]
    cw = np.asarray(ctx.data["cw"])[:n]
    members = [np.flatnonzero((cells == c) & (cw > 0)) for c in range(ctx.problem.n_cells)]
    return GhostState(
        x=np.asarray(x0, dtype=np.float64),
        dtype=x0.dtype,
        k=0,
        gamma=ctx.hyper["learning_rate"],
        failures=0,
        n_samples=0,
        members=members,
        constraint_rows=int(cw.sum()),
    )


def _ghost_direction(ctx, f_g_c_J):
    """Direction, relaxation, constraint values and failure (0 / 1) of the subproblem at
    ``f_g_c_J``."""
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
    return d, kappa, c, int(failed)


def _step_ghost(state, ctx):
    """One Stochastic Ghost iteration (spec 3.7) on the host; ``hyper`` holds the public
    ``solver_params`` names, mapped here to the spec's symbols (p0, gamma_0, zeta_gamma,
    tau, beta, lambda_kappa, rho_kappa). Draw order: the MLMC level ``N`` (solver
    stream), then ``2^(N+1)`` objective rows and rows of every cell, then one of each."""
    h, k = ctx.hyper, state.k
    derivs, full = ghost_derivatives(ctx.problem)
    obj_rng, con_rng, solver_rng = ctx.rngs[1], ctx.rngs[2], ctx.rngs[3]
    xj = jnp.asarray(state.x, dtype=state.dtype)
    step0, decay = h["learning_rate"], h["learning_rate_decay_rate"]
    gamma = state.gamma
    if h["learning_rate_rule"] == "inv_iter":
        gamma = step0 / (k + 1) ** decay
    elif k > 0:
        gamma = gamma * (1.0 - decay * gamma)
    if h["sampling"] == "full":
        f_val, *_ = out = full(xj, ctx.data, ctx.aux)
        d_k, kappa, c_used, failures = _ghost_direction(ctx, out)
        N = -1
        n_samples = ctx.n_rows + state.constraint_rows
    else:
        p0, members, n = h["mlmc_probability"], state.members, ctx.n_rows
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
        d1, kappa, c_used, failures = _ghost_direction(ctx, out1)
        d_big, _, _, failed_big = _ghost_direction(ctx, at(obj_big, con_big))
        d_odd, _, _, failed_odd = _ghost_direction(ctx, at(obj_big[0::2], con_big[:, 0::2]))
        d_even, _, _, failed_even = _ghost_direction(ctx, at(obj_big[1::2], con_big[:, 1::2]))
        failures += failed_big + failed_odd + failed_even
        weight = p0 * (1.0 - p0) ** N
        d_k = d1 + (d_big - 0.5 * d_odd - 0.5 * d_even) / weight
        n_samples = 3 * (1 + size)
    state = state._replace(
        x=state.x + gamma * d_k,
        k=k + 1,
        gamma=gamma,
        failures=state.failures + failures,
        n_samples=state.n_samples + n_samples,
    )
    log = {"objective": f_val, "c": c_used, "step_size": gamma, "kappa": kappa}
    return state, {**log, "N_geom": N}


def _ghost_diagnostics(state, logs, hyper):
    return {"n_qp_failures": state.failures}
