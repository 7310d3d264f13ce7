"""Accurate inner solver for the IDCA subproblem (31): a smoothed augmented Lagrangian
with Newton steps, as one jitted ``lax.while_loop``.

SSG (Algorithm 2 of the paper) takes Polyak-type objective steps of length
``eps / ||d||``; on one-hot data such as a9a it stays far from the subproblem's optimum
within any practical ``T`` (``benchmarks/results/partial_speed.md``). This solver reaches
the optimum to about 1e-7 instead, at the cost of ``(D x D)`` Newton systems (``D`` =
1 + features + levels, a few hundred at most).

Smoothing. Every convex piece ``f^+`` of (15) is a group mean of ``relu(z +- 1/2)``
(ramp) or of ``sigmoid(z)`` with ``z = (s - theta_j) / tau``; those of (21) are, per
group, the max of two such means (spec 4.7, 4.8). The ramp's ``relu(u)`` is replaced by
its smooth *majorant* ``delta softplus(u / delta)`` (at most ``delta log 2`` above it),
and ``max(x, y)`` by ``delta log(e^(x/delta) + e^(y/delta))`` (same bound), so a point
feasible for the smoothed constraints is feasible for the exact ones. ``delta`` is
reduced by continuation (``_DELTAS``), each stage warm-started; starting wider would make
the smoothed problem infeasible near a tight anchor.

Augmented Lagrangian (Rockafellar's form for inequalities), per stage:
``L(v) = g_0(v) + sum_i ((lambda_i + rho g_i(v))_+^2 - lambda_i^2) / (2 rho)``, minimised
by Newton with Armijo backtracking (the shared ``descent_direction`` and
``armijo_backtrack`` of :mod:`fairest._solvers._newton`) until Newton's decrement is
below ``_DECREMENT``; then ``lambda <- (lambda + rho g(v))_+`` and ``rho`` grows tenfold
when the violation did not fall by 4. The Newton matrix is assembled in one pass:
``[1, X]^T diag(a) [1, X]`` for the per-sample curvature of the loss and of every active
constraint, the ``(b, w)``-``theta`` cross block (pSP), the low-rank curvature of the
smoothed max (pDP) and ``rho J_A^T J_A`` for the active constraint Jacobian rows.

The result is returned in the form of :class:`fairest.partial._ssg.SSGResult`, scored by
the exact (unsmoothed) subproblem; if it is not ``eps``-feasible or worse than the
anchor, the anchor is returned (so the IDCA invariants of spec section 5.1 still hold).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from fairest._solvers._newton import armijo_backtrack, descent_direction
from fairest.partial._dc import (
    Anchor,
    Config,
    Data,
    SparseRows,
    _lin_rows,
    _logistic_parts,
    evaluate,
    num_constraints,
    scores,
    split,
)
from fairest.partial._rows import row_dot, row_sum
from fairest.partial._ssg import SSGResult

__all__ = ["Multipliers", "alm", "cold_start", "dense_data", "warm_start"]

_DELTAS = (1e-3, 1e-4)  # smoothing widths, in turn (relu: units of tau; pDP max: rates)
_RHO0 = 100.0  # first penalty parameter (10 and 1e3 took 25 % / 7 % more iterations on a9a)
_RHO_MAX = 1e8
_DECREMENT = 1e-13  # inner stop: Newton's predicted decrease of the Lagrangian
_FEASIBILITY = 1e-9  # outer stop: largest smoothed constraint value
_ARMIJO = 1e-4
_BACKTRACKS = 40
_NEWTON_PER_UPDATE = 50  # Newton steps before the multipliers are updated regardless


def dense_data(data: Data) -> Data:
    """``data`` with ``X`` as a dense array (the Newton matrix needs ``X^T diag(a) X``)."""
    X = data.X
    if not isinstance(X, SparseRows):
        return data
    value, index = X.slots()
    n, k = index.shape
    rows = jnp.broadcast_to(jnp.arange(n)[:, None], (n, k))
    dense = jnp.zeros((n, X.shape[1]), value.dtype).at[rows, index].add(value)
    return data._replace(X=dense)


class _Pieces(NamedTuple):
    g0: jax.Array  # subproblem objective
    grad0: jax.Array  # (D,) its gradient
    gcon: jax.Array  # (m,) smoothed subproblem constraints
    jac: jax.Array  # (m, D) their Jacobian
    curv0: jax.Array  # (n,) second derivative of the loss in the score
    curvature: Callable  # multipliers -> (per-sample weights (n,), (n, J) theta
    #                      cross weights, (D, D) low-rank part) of sum_i m_i f_i^+''


def _smooth_relu(u, delta):
    """Value, first and second derivative of ``delta softplus(u / delta) >= relu(u)``."""
    t = u / delta
    sig = jax.nn.sigmoid(t)
    return delta * jax.nn.softplus(t), sig, sig * (1.0 - sig) / delta


def _sigmoid(z):
    sig = jax.nn.sigmoid(z)
    d1 = sig * (1.0 - sig)
    return sig, d1, d1 * (1.0 - 2.0 * sig)


def _psp_constraints(s, theta, data: Data, cfg: Config, delta):
    """f^+ of the 2 G J pSP constraints (lower family then upper, each (k, j)), their
    Jacobian rows and the curvature of their weighted sum."""
    G, J, tau = cfg.num_groups, cfg.num_levels, data.width
    z = (s[:, None] - theta[None, :]) / tau
    if cfg.surrogate == "ramp":
        value, first, second = _smooth_relu(jnp.stack([z - 0.5, z + 0.5]), delta)
    else:
        zero = jnp.zeros_like(z)
        value, first, second = (jnp.stack([zero, t]) for t in _sigmoid(z))
    fplus = jnp.stack([row_dot(data.membership, value[f]) for f in range(2)]).ravel()
    # Jacobian rows (family f, group k, level j): mean_k first_fj (1, x, -e_j) / tau
    U = data.membership[None, :, :, None] * first[:, :, None, :] / tau  # (2, n, G, J)
    U = jnp.moveaxis(U, 1, -1).reshape(2 * G * J, -1).T  # (n, m)
    rows = _lin_rows(U, data)
    level = jnp.tile(jnp.eye(J, dtype=s.dtype), (2 * G, 1))
    jac = jnp.concatenate([rows, -rows[:, :1] * level], axis=1)

    def curvature(shifted):
        mult = shifted.reshape(2, G, J)[:, data.groups, :]  # (2, n, J) per sample
        W = jnp.sum(mult * second, axis=0) * (data.cg / tau**2)[:, None]  # (n, J)
        return jnp.sum(W, axis=1), W, 0.0

    return fplus, jac, curvature


def _pdp_constraints(s, data: Data, cfg: Config, delta):
    """f^+ of the G x G pDP constraints (spec 4.7 / 4.8, smoothed), their Jacobian rows
    and the curvature of their weighted sum (the diagonal pairs are masked by the caller).

    Per group and level ``a``: ``P^a = smax(M1 + c1, M2 + c2)`` with group means ``M`` of
    per-sample functions: ramp ``M1 = B``, ``c1 = a``, ``M2 = A`` (``relu(z -+ 1/2)``
    smoothed); sigmoid ``M1 = -S``, ``M2 = 0``, ``c2 = -a``. ``smax`` is the log-sum-exp
    majorant of the max with width ``delta``. Pair ``(k, k')`` is ``P^alpha_k +
    P^beta_k' + extra_k + extra_k' - c`` (``extra = A`` for ``dc_split="paper"``)."""
    G, tau = cfg.num_groups, data.width
    z = (s - data.threshold) / tau
    levels = jnp.stack([data.lo, data.hi])
    if cfg.surrogate == "ramp":
        phi = _smooth_relu(jnp.stack([z - 0.5, z + 0.5]), delta)  # each (2, n)
        consts = jnp.stack([levels, jnp.zeros(2)], axis=1)  # (level, which)
    else:
        sig = _sigmoid(z)
        phi = tuple(jnp.stack([-t, jnp.zeros_like(t)]) for t in sig)
        consts = jnp.stack([jnp.zeros(2), -levels], axis=1)
    value, first, second = phi
    M = row_dot(data.membership, value.T)  # (G, 2): columns M1, M2
    JM = jnp.stack(
        [_lin_rows(data.membership * first[i][:, None] / tau, data) for i in range(2)]
    )  # (2, G, D)
    u = M[None, :, :] + consts[:, None, :]  # (level, G, which)
    P = delta * jnp.logaddexp(u[..., 0] / delta, u[..., 1] / delta)  # (level, G)
    pi = jax.nn.sigmoid((u[..., 0] - u[..., 1]) / delta)  # weight of the first piece
    JP = pi[..., None] * JM[0][None] + (1.0 - pi[..., None]) * JM[1][None]  # (level, G, D)
    paper = float(cfg.surrogate == "ramp" and cfg.dc_split == "paper")
    extra, Jextra = paper * M[:, 1], paper * JM[1]
    eye = jnp.eye(G, dtype=bool)
    first_part = P[0] + extra  # group k of pair (k, k')
    second_part = P[1] + extra  # group k'
    fplus = (first_part[:, None] + second_part[None, :] - data.slack).ravel()
    jac = ((JP[0] + Jextra)[:, None, :] + (JP[1] + Jextra)[None, :, :]).reshape(G * G, -1)

    def curvature(shifted):
        m = jnp.where(eye, 0.0, shifted.reshape(G, G))
        c = jnp.stack([jnp.sum(m, axis=1), jnp.sum(m, axis=0)])  # (level, G)
        coef1 = jnp.sum(c * pi, axis=0)  # (G,) weight of M1's curvature
        coef2 = jnp.sum(c * (1.0 - pi), axis=0) + paper * (c[0] + c[1])
        a = (coef1[data.groups] * second[0] + coef2[data.groups] * second[1]) * data.cg
        diff = JM[0] - JM[1]  # (G, D)
        rank = jnp.sum(c * pi * (1.0 - pi), axis=0) / delta
        return a / tau**2, None, (diff.T * rank) @ diff

    return fplus, jac, curvature


def _pieces(v, anc: Anchor, data: Data, cfg: Config, delta) -> _Pieces:
    _, w, theta = split(v, cfg)
    s = scores(v, data, cfg)
    delta_v = v - anc.x
    prox = 0.5 * jnp.sum(delta_v * delta_v)
    loss, r0 = _logistic_parts(s, data)
    g0 = loss + 0.5 * data.alpha * jnp.sum(w * w) + data.mu * prox
    grad0 = (
        jnp.concatenate(
            [row_sum(r0)[None], row_dot(r0, data.X) + data.alpha * w, jnp.zeros_like(theta)]
        )
        + data.mu * delta_v
    )
    p = jax.nn.sigmoid(s)
    if cfg.constraint == "statistical":
        fplus, jac, curvature = _psp_constraints(s, theta, data, cfg, delta)
    else:
        fplus, jac, curvature = _pdp_constraints(s, data, cfg, delta)
    curv = data.mu + data.rho
    gcon = fplus - (anc.lin @ delta_v - anc.const) + curv * prox
    jac = jac - anc.lin + curv * delta_v[None, :]
    if cfg.constraint == "demographic":  # pairs (k, k) are no constraints: never active
        diagonal = jnp.eye(cfg.num_groups, dtype=bool).ravel()
        gcon = jnp.where(diagonal, -1.0, gcon)
        jac = jnp.where(diagonal[:, None], 0.0, jac)
    return _Pieces(g0, grad0, gcon, jac, data.c0 * p * (1.0 - p), curvature)


def _lagrangian(pieces: _Pieces, lam, rho):
    shifted = jnp.maximum(lam + rho * pieces.gcon, 0.0)
    value = pieces.g0 + jnp.sum(shifted**2 - lam**2) / (2.0 * rho)
    return value, shifted, pieces.grad0 + pieces.jac.T @ shifted


def _newton_matrix(pieces: _Pieces, shifted, rho, data: Data, cfg: Config):
    J, d = cfg.num_levels, cfg.num_features
    X = data.X
    a, W, low_rank = pieces.curvature(shifted)
    Xa = jnp.concatenate([jnp.ones((X.shape[0], 1), X.dtype), X], axis=1)
    H = row_dot(Xa * (pieces.curv0 + a)[:, None], Xa)
    if W is not None:
        cross = -row_dot(Xa, W)
        H = jnp.block([[H, cross], [cross.T, jnp.diag(row_sum(W))]])
    ridge = jnp.concatenate([jnp.zeros(1), jnp.full(d, data.alpha), jnp.zeros(J)])
    # the barrier fixes how XLA compiles this product (the same on one device as in a
    # row-sharded program, where its fusion with the Jacobian's computation differed)
    jac, shifted = jax.lax.optimization_barrier((pieces.jac, shifted))
    active = (shifted > 0).astype(H.dtype)
    H = H + low_rank + (jac.T * (rho * active)) @ jac
    diag = ridge + data.mu + (data.mu + data.rho) * jnp.sum(shifted)
    return H + jnp.diag(diag)


class _State(NamedTuple):
    v: jax.Array
    lam: jax.Array
    rho: jax.Array
    stage: jax.Array  # index into _DELTAS
    violation: jax.Array  # max smoothed violation at the last multiplier update
    newton: jax.Array  # Newton steps since the last multiplier update
    it: jax.Array
    done: jax.Array


class Multipliers(NamedTuple):
    """Multiplier estimates and penalty parameter that start an ALM run."""

    lam: jax.Array  # (m,)
    rho: jax.Array


def cold_start(cfg: Config, dtype) -> Multipliers:
    return Multipliers(jnp.zeros(num_constraints(cfg), dtype), jnp.asarray(_RHO0, dtype))


def warm_start(final: Multipliers) -> Multipliers:
    """Start of the next IDCA subproblem: the last one's multipliers with the first
    penalty (on a9a, keeping 1e-2 or 1e-4 of the last penalty took 16 % / 14 % longer:
    the linearisation moves and a large penalty makes the first Newton solves stiff)."""
    return final._replace(rho=jnp.full_like(final.rho, _RHO0))


def _solve(v0, anc: Anchor, data: Data, cfg: Config, n_iter, start: Multipliers) -> _State:
    """The ALM iterations of :func:`alm`, unscored."""
    if cfg.constraint not in ("statistical", "demographic"):
        raise ValueError("the ALM inner solver needs fairness constraints.")
    deltas = jnp.asarray(_DELTAS, v0.dtype)
    m = num_constraints(cfg)
    last_stage = len(_DELTAS) - 1

    def pieces_at(v, stage):
        return _pieces(v, anc, data, cfg, deltas[stage])

    def body(st: _State) -> _State:
        pc = pieces_at(st.v, st.stage)
        value, shifted, grad = _lagrangian(pc, st.lam, st.rho)
        H = _newton_matrix(pc, shifted, st.rho, data, cfg)
        scale = 1e-12 * jnp.maximum(jnp.max(jnp.abs(jnp.diag(H))), 1.0)
        regularised = H + scale * jnp.eye(H.shape[0], dtype=H.dtype)
        step, slope = descent_direction(grad, lambda g: jnp.linalg.solve(regularised, g))
        # Newton decrement: predicted decrease of the quadratic model; the step cap keeps
        # the multipliers moving where the loss has no minimiser (a separable group with
        # alpha = mu = 0), which Newton would chase for ever
        converged = -slope <= 2.0 * _DECREMENT
        inner_done = converged | (st.newton >= _NEWTON_PER_UPDATE)

        def newton_step(_):
            def value_at(t):
                return _lagrangian(pieces_at(st.v + t * step, st.stage), st.lam, st.rho)[0]

            t = armijo_backtrack(value_at, value, slope, _ARMIJO, _BACKTRACKS)
            return st._replace(v=st.v + t * step, newton=st.newton + 1, it=st.it + 1)

        def update_multipliers(_):
            viol = jnp.max(jnp.maximum(pc.gcon, 0.0)) if m else jnp.zeros((), v0.dtype)
            grow = viol > 0.25 * st.violation
            kkt = converged & (viol <= _FEASIBILITY)
            return st._replace(
                lam=shifted,
                rho=jnp.where(grow & ~kkt, jnp.minimum(10.0 * st.rho, _RHO_MAX), st.rho),
                stage=jnp.where(kkt & (st.stage < last_stage), st.stage + 1, st.stage),
                violation=viol,
                newton=jnp.zeros_like(st.newton),
                it=st.it + 1,
                done=kkt & (st.stage == last_stage),
            )

        return jax.lax.cond(inner_done, update_multipliers, newton_step, None)

    init = _State(
        v0,
        start.lam,
        start.rho,
        jnp.int32(0),
        jnp.asarray(jnp.inf, v0.dtype),
        jnp.int32(0),
        jnp.int32(0),
        jnp.array(False),
    )
    return jax.lax.while_loop(lambda st: ~st.done & (st.it < n_iter), body, init)


def alm(
    v0, anc: Anchor, data: Data, cfg: Config, eps, n_iter, start: Multipliers | None = None
) -> tuple[SSGResult, Multipliers]:
    """Solve subproblem (31) from ``v0`` with at most ``n_iter`` Newton steps and
    multiplier updates (over both smoothing stages), from the multipliers ``start``
    (:func:`cold_start` by default); ``data.X`` must be dense (:func:`dense_data`).
    ``n_feasible`` of the result counts the iterations; the final multipliers are
    returned for a warm start of the next subproblem."""
    if start is None:
        start = cold_start(cfg, v0.dtype)
    final = _solve(v0, anc, data, cfg, n_iter, start)
    return _scored(final, v0, anc, data, cfg, eps), Multipliers(final.lam, final.rho)


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
