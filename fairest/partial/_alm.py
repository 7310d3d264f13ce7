"""Accurate inner solver for the pSP subproblem (31): a smoothed augmented Lagrangian with
Newton steps, as one jitted ``lax.while_loop``.

SSG (Algorithm 2 of the paper) takes Polyak-type objective steps of length
``eps / ||d||``; on one-hot data such as a9a it stays far from the subproblem's optimum
within any practical ``T`` (``benchmarks/results/partial_speed.md``). This solver reaches
the optimum to about 1e-7 instead, at the cost of ``(D x D)`` Newton systems (``D`` =
1 + features + levels, a few hundred at most).

Smoothing. Every convex piece ``f^+`` of (15) is a group mean of ``relu(z +- 1/2)``
(ramp) or of ``sigmoid(z)`` with ``z = (s - theta_j) / tau``. The ramp's ``relu(u)`` is
replaced by its smooth *majorant* ``delta softplus(u / delta)`` (at most ``delta log 2``
above it), so a point feasible for the smoothed constraints is feasible for the exact
ones. ``delta`` is reduced by continuation (``_DELTAS``), each stage warm-started.

Augmented Lagrangian (Rockafellar's form for inequalities), per stage:
``L(v) = g_0(v) + sum_i ((lambda_i + rho g_i(v))_+^2 - lambda_i^2) / (2 rho)``, minimised
by Newton with Armijo backtracking; then ``lambda <- (lambda + rho g(v))_+`` and ``rho``
grows tenfold when the violation did not fall by 4. The Newton matrix is assembled in one
pass: ``[1, X]^T diag(a) [1, X]`` for the per-sample curvature of the loss and of every
active constraint, its ``(b, w)``-``theta`` cross block, and ``rho J_A^T J_A`` for the
active constraint Jacobian rows.

The result is returned in the form of :class:`fairest.partial._ssg.SSGResult`, scored by
the exact (unsmoothed) subproblem; if it is not ``eps``-feasible or worse than the
anchor, the anchor is returned (so the IDCA invariants of spec section 5.1 still hold).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from fairest.partial._dc import Anchor, Config, Data, SparseRows, evaluate, split
from fairest.partial._ssg import SSGResult

__all__ = ["alm", "dense_data"]

_DELTAS = (1e-3, 1e-4)  # continuation of the ramp smoothing (units of tau)
_RHO0 = 10.0  # first penalty parameter
_RHO_MAX = 1e8
_DECREMENT = 1e-13  # inner stop: Newton's predicted decrease of the Lagrangian
_FEASIBILITY = 1e-9  # outer stop: largest smoothed constraint value
_ARMIJO = 1e-4
_BACKTRACKS = 40


def dense_data(data: Data) -> Data:
    """``data`` with ``X`` as a dense array (the Newton matrix needs ``X^T diag(a) X``)."""
    X = data.X
    if not isinstance(X, SparseRows):
        return data
    n, k = X.index.shape
    rows = jnp.broadcast_to(jnp.arange(n)[:, None], (n, k))
    dense = jnp.zeros((n, X.num_columns), X.value.dtype).at[rows, X.index].add(X.value)
    return data._replace(X=dense)


class _Pieces(NamedTuple):
    g0: jax.Array  # subproblem objective
    grad0: jax.Array  # (D,) its gradient
    gcon: jax.Array  # (m,) smoothed subproblem constraints
    jac: jax.Array  # (m, D) their Jacobian
    curv0: jax.Array  # (n,) second derivative of the loss in the score
    second: jax.Array  # (2, n, J) second derivatives of the smoothed pieces in z


def _families(z, cfg: Config, delta):
    """Value, first and second derivative in ``z`` of the (smoothed) convex pieces
    ``f^+`` of the lower and upper constraint families, each ``(2, n, J)``."""
    if cfg.surrogate == "ramp":
        u = jnp.stack([z - 0.5, z + 0.5]) / delta
        sig = jax.nn.sigmoid(u)
        return delta * jax.nn.softplus(u), sig, sig * (1.0 - sig) / delta
    sig = jax.nn.sigmoid(z)
    zero = jnp.zeros_like(z)
    d1 = sig * (1.0 - sig)
    return (jnp.stack([zero, sig]), jnp.stack([zero, d1]),
            jnp.stack([zero, d1 * (1.0 - 2.0 * sig)]))


def _pieces(v, anc: Anchor, data: Data, cfg: Config, delta) -> _Pieces:
    b, w, theta = split(v, cfg)
    X, tau = data.X, data.width
    G, J = cfg.num_groups, cfg.num_levels
    s = X @ w + b
    delta_v = v - anc.x
    prox = 0.5 * jnp.sum(delta_v * delta_v)
    p = jax.nn.sigmoid(s)
    r0 = data.c0 * (p - data.y)
    g0 = (jnp.sum(data.c0 * (jnp.logaddexp(0.0, s) - data.y * s))
          + 0.5 * data.alpha * jnp.sum(w * w) + data.mu * prox)
    grad0 = jnp.concatenate([jnp.sum(r0)[None], r0 @ X + data.alpha * w,
                             jnp.zeros_like(theta)]) + data.mu * delta_v
    z = (s[:, None] - theta[None, :]) / tau
    value, first, second = _families(z, cfg, delta)
    fplus = jnp.einsum("ng,fnj->fgj", data.membership, value).ravel()
    curvature = data.mu + data.rho
    gcon = fplus - (anc.lin @ delta_v - anc.const) + curvature * prox
    # Jacobian rows (family f, group k, level j): mean_k first_fj (1, x, -e_j) / tau
    U = (data.membership[None, :, :, None] * first[:, :, None, :] / tau)  # (2, n, G, J)
    U = jnp.moveaxis(U, 1, -1).reshape(2 * G * J, -1)  # (m, n)
    col = jnp.sum(U, axis=1)
    level = jnp.tile(jnp.eye(J, dtype=v.dtype), (2 * G, 1))
    jac = jnp.concatenate([col[:, None], U @ X, -col[:, None] * level], axis=1)
    jac = jac - anc.lin + curvature * delta_v[None, :]
    return _Pieces(g0, grad0, gcon, jac, data.c0 * p * (1.0 - p), second)


def _lagrangian(pieces: _Pieces, lam, rho):
    shifted = jnp.maximum(lam + rho * pieces.gcon, 0.0)
    value = pieces.g0 + jnp.sum(shifted**2 - lam**2) / (2.0 * rho)
    return value, shifted, pieces.grad0 + pieces.jac.T @ shifted


def _newton_matrix(pieces: _Pieces, shifted, rho, data: Data, cfg: Config):
    G, J, d = cfg.num_groups, cfg.num_levels, cfg.num_features
    X, tau = data.X, data.width
    mult = shifted.reshape(2, G, J)[:, data.groups, :]  # (2, n, J) per sample
    W = jnp.sum(mult * pieces.second, axis=0) * (data.cg / tau**2)[:, None]  # (n, J)
    a = pieces.curv0 + jnp.sum(W, axis=1)
    Xa = jnp.concatenate([jnp.ones((X.shape[0], 1), X.dtype), X], axis=1)
    top = (Xa * a[:, None]).T @ Xa
    cross = -(Xa.T @ W)
    H = jnp.block([[top, cross], [cross.T, jnp.diag(jnp.sum(W, axis=0))]])
    ridge = jnp.concatenate([jnp.zeros(1), jnp.full(d, data.alpha), jnp.zeros(J)])
    active = (shifted > 0).astype(H.dtype)
    H = H + (pieces.jac.T * (rho * active)) @ pieces.jac
    diag = ridge + data.mu + (data.mu + data.rho) * jnp.sum(shifted)
    return H + jnp.diag(diag)


class _State(NamedTuple):
    v: jax.Array
    lam: jax.Array
    rho: jax.Array
    stage: jax.Array  # index into _DELTAS
    violation: jax.Array  # max smoothed violation at the last multiplier update
    it: jax.Array
    done: jax.Array


def _solve(v0, anc: Anchor, data: Data, cfg: Config, n_iter) -> _State:
    """The ALM iterations of :func:`alm`, unscored."""
    if cfg.constraint != "statistical":
        raise ValueError("the ALM inner solver handles constraint='statistical' only.")
    deltas = jnp.asarray(_DELTAS, v0.dtype)
    m = 2 * cfg.num_groups * cfg.num_levels
    last_stage = len(_DELTAS) - 1

    def pieces_at(v, stage):
        return _pieces(v, anc, data, cfg, deltas[stage])

    def body(st: _State) -> _State:
        pc = pieces_at(st.v, st.stage)
        value, shifted, grad = _lagrangian(pc, st.lam, st.rho)
        H = _newton_matrix(pc, shifted, st.rho, data, cfg)
        scale = 1e-12 * jnp.maximum(jnp.max(jnp.abs(jnp.diag(H))), 1.0)
        step = -jnp.linalg.solve(H + scale * jnp.eye(H.shape[0], dtype=H.dtype), grad)
        slope = grad @ step
        step = jnp.where(slope < 0, step, -grad)
        slope = jnp.where(slope < 0, slope, -(grad @ grad))
        # Newton decrement: predicted decrease of the quadratic model
        inner_done = -slope <= 2.0 * _DECREMENT

        def newton_step(_):
            def value_at(t):
                return _lagrangian(pieces_at(st.v + t * step, st.stage), st.lam, st.rho)[0]

            def needs_backtrack(carry):
                t, trial = carry
                return ~(trial <= value + _ARMIJO * t * slope) & (t > 2.0**-_BACKTRACKS)

            def halve(carry):
                t = 0.5 * carry[0]
                return t, value_at(t)

            one = jnp.ones((), v0.dtype)
            t, _ = jax.lax.while_loop(needs_backtrack, halve, (one, value_at(one)))
            return st._replace(v=st.v + t * step, it=st.it + 1)

        def update_multipliers(_):
            viol = jnp.max(jnp.maximum(pc.gcon, 0.0)) if m else jnp.zeros((), v0.dtype)
            grow = viol > 0.25 * st.violation
            kkt = viol <= _FEASIBILITY
            return st._replace(
                lam=shifted,
                rho=jnp.where(grow & ~kkt, jnp.minimum(10.0 * st.rho, _RHO_MAX), st.rho),
                stage=jnp.where(kkt & (st.stage < last_stage), st.stage + 1, st.stage),
                violation=viol,
                it=st.it + 1,
                done=kkt & (st.stage == last_stage),
            )

        return jax.lax.cond(inner_done, update_multipliers, newton_step, None)

    init = _State(v0, jnp.zeros(m, v0.dtype), jnp.asarray(_RHO0, v0.dtype),
                  jnp.int32(0), jnp.asarray(jnp.inf, v0.dtype), jnp.int32(0),
                  jnp.array(False))
    return jax.lax.while_loop(lambda st: ~st.done & (st.it < n_iter), body, init)


def alm(v0, anc: Anchor, data: Data, cfg: Config, eps, n_iter) -> SSGResult:
    """Solve subproblem (31) of the pSP problem from ``v0`` with at most ``n_iter`` Newton
    steps and multiplier updates (over both smoothing stages); ``data.X`` must be dense
    (:func:`dense_data`). ``n_feasible`` of the result counts those iterations."""
    return _scored(_solve(v0, anc, data, cfg, n_iter), v0, anc, data, cfg, eps)


def _scored(final: _State, v0, anc: Anchor, data: Data, cfg: Config, eps) -> SSGResult:
    """Score the ALM point and the start on the exact subproblem; keep the better one."""
    ev, ev0 = evaluate(final.v, anc, data, cfg), evaluate(v0, anc, data, cfg)
    gmax, gmax0 = jnp.max(ev.gcon), jnp.max(ev0.gcon)
    ok = jnp.isfinite(ev.g0) & (gmax <= eps) & ((ev.g0 <= ev0.g0) | (gmax0 > eps))
    return SSGResult(
        v=jnp.where(ok, final.v, v0),
        g0=jnp.where(ok, ev.g0, ev0.g0),
        gmax=jnp.where(ok, gmax, gmax0),
        found=ok | (gmax0 <= eps),
        n_feasible=final.it,
        stuck=~ok & (gmax0 > eps),
    )
