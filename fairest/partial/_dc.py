"""DC pieces of the partial-fairness problems (15) (pSP) and (21) (pDP), their
linearisation at an IDCA anchor (the convex subproblem (31)) and its subgradients.

Notation follows ``spec/partial_fairness.md`` (the spec), sections 3-4. Variables are
one flat vector ``x = (b, w, theta)``: intercept first, then the coefficients, then (pSP
only) the ``J`` shared thresholds ``theta_p``. Scores are ``s = b + X w``.

Everything per group is a weighted mean: ``cg_i = w_i / W_{g_i}`` (sample weight over the
group's total weight); ``membership = onehot(groups) * cg`` (n x G), so
``membership.T @ v`` gives all G group means of ``v`` (or of the J columns of ``v``).
Padding rows carry ``cg = c0 = 0`` and change nothing.

The subgradient of any subproblem function is ``(sum u, X^T u, theta part) + prox`` for a
per-sample vector ``u``: the SSG step therefore costs two matrix-vector products (scores
and ``X^T u``) plus O(n J) elementwise work, whichever branch (objective or constraint)
it takes. Subgradients of ``max(z, 0)`` use the indicator ``1[z > 0]`` (spec section 4.2).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

__all__ = [
    "Config",
    "Data",
    "Anchor",
    "Evaluation",
    "split",
    "scores",
    "objective",
    "constraint_values",
    "dc_pieces",
    "anchor",
    "evaluate",
    "num_constraints",
]


class Config(NamedTuple):
    """Static (hashable) description of a problem; changing it recompiles."""

    constraint: str  # "statistical" (15), "demographic" (21) or "none" (plain ERM)
    surrogate: str  # "ramp" or "sigmoid"
    pdp_dc: str  # "minimal" or "paper" (spec section 4.7)
    num_groups: int
    num_features: int  # d (without intercept)
    num_levels: int  # J (0 for pDP / no constraint)


class Data(NamedTuple):
    """Traced data and hyper-parameters of one fit (no recompilation when they change)."""

    X: jax.Array  # (n, d)
    y: jax.Array  # (n,) in {0, 1}
    groups: jax.Array  # (n,) int32
    c0: jax.Array  # (n,) objective weights, sum 1
    cg: jax.Array  # (n,) within-group weights, each group sums to 1
    membership: jax.Array  # (n, G) one-hot groups times cg: group means are matmuls
    grid: jax.Array  # (J,) levels p_j (pSP)
    slack: jax.Array  # c = kappa (beta - alpha)
    lo: jax.Array  # alpha of the interval
    hi: jax.Array  # beta of the interval
    threshold: jax.Array  # theta_hat (pDP)
    alpha: jax.Array  # L2 strength on w inside f_0
    mu: jax.Array  # strong-convexity add-on (spec section 4.4)
    rho: jax.Array  # weak-convexity constant of the sigmoid DC split (spec 4.6, 4.8)
    width: jax.Array  # surrogate width tau


class Anchor(NamedTuple):
    """Everything of the linearisation at ``x^(k)`` that SSG reuses (spec section 4.9)."""

    x: jax.Array  # (D,) the anchor point
    s: jax.Array  # (n,) scores at the anchor
    psi: tuple  # per-sample (and per-level) derivatives of the linearised f^- parts
    mpsi: tuple  # their group means (pSP: theta part of the linear terms)
    const: tuple  # constant parts of the subproblem constraints
    f0: jax.Array  # f_0(x^(k))
    fmax: jax.Array  # max_i f_i(x^(k)) (surrogate constraint), -inf without constraints


class Evaluation(NamedTuple):
    g0: jax.Array  # objective of the subproblem at v
    gcon: jax.Array  # (m,) subproblem constraints at v
    direction: Callable  # (feasible, index) -> subgradient of g0 or of g_index


def num_constraints(cfg: Config) -> int:
    if cfg.constraint == "statistical":
        return 2 * cfg.num_groups * cfg.num_levels
    if cfg.constraint == "demographic":
        return cfg.num_groups * cfg.num_groups  # diagonal entries are -inf (never active)
    return 0


def split(x, cfg: Config):
    """``(b, w, theta)`` of the flat variable."""
    d = cfg.num_features
    return x[0], x[1 : 1 + d], x[1 + d :]


def scores(x, data: Data, cfg: Config):
    b, w, _ = split(x, cfg)
    return data.X @ w + b


def _gmean(values, data: Data, cfg: Config):
    """Group means (weights ``cg``) of a (n,) or (n, J) array: (G,) or (G, J).

    A (G, n) x (n, J) product with the weighted one-hot membership: on CPU this is much
    faster than a scatter-add (``segment_sum``) over n x J entries."""
    return data.membership.T @ values


def _logistic_parts(s, data: Data):
    value = jnp.sum(data.c0 * (jnp.logaddexp(0.0, s) - data.y * s))
    return value, data.c0 * (jax.nn.sigmoid(s) - data.y)


def objective(x, data: Data, cfg: Config):
    """``f_0(x) = sum_i c0_i logistic(s_i, y_i) + alpha / 2 ||w||^2`` (spec section 3.2)."""
    _, w, _ = split(x, cfg)
    value, _ = _logistic_parts(scores(x, data, cfg), data)
    return value + 0.5 * data.alpha * jnp.sum(w * w)


def _surrogate(z, cfg: Config):
    if cfg.surrogate == "ramp":
        return jnp.clip(z + 0.5, 0.0, 1.0)
    return jax.nn.sigmoid(z)


def _pdp_terms(S, data: Data):
    """``min(S, beta) - min(S, alpha)`` of Lemma 5.2."""
    return jnp.minimum(S, data.hi) - jnp.minimum(S, data.lo)


def _mask_diagonal(matrix, cfg: Config):
    eye = jnp.eye(cfg.num_groups, dtype=bool)
    return jnp.where(eye, -jnp.inf, matrix)


def constraint_values(x, data: Data, cfg: Config):
    """Constraint functions ``f_i(x)`` of (15)/(21), computed directly (not from DC pieces).

    pSP: ``(lower (G, J), upper (G, J))`` flattened, ``p - mean sigma`` and
    ``mean sigma - p - c``. pDP: the (G, G) matrix of ordered-pair values flattened, with
    ``-inf`` on the diagonal.
    """
    b, w, theta = split(x, cfg)
    s = data.X @ w + b
    if cfg.constraint == "statistical":
        z = (s[:, None] - theta[None, :]) / data.width
        mean = _gmean(_surrogate(z, cfg), data, cfg)
        lower = data.grid[None, :] - mean
        upper = mean - data.grid[None, :] - data.slack
        return jnp.concatenate([lower.ravel(), upper.ravel()])
    if cfg.constraint == "demographic":
        S = _gmean(_surrogate((s - data.threshold) / data.width, cfg), data, cfg)
        T = _pdp_terms(S, data)
        return _mask_diagonal(T[:, None] - T[None, :] - data.slack, cfg).ravel()
    return jnp.zeros((0,), dtype=x.dtype)


def dc_pieces(x, data: Data, cfg: Config):
    """``(f^+, f^-)`` of every constraint (spec sections 4.5-4.8), the add-on
    ``(mu + rho) / 2 ||x||^2`` included on both sides. ``f^+ - f^-`` equals
    :func:`constraint_values` (off the pDP diagonal)."""
    b, w, theta = split(x, cfg)
    s = data.X @ w + b
    q = 0.5 * (data.mu + data.rho) * jnp.sum(x * x)
    if cfg.constraint == "statistical":
        z = (s[:, None] - theta[None, :]) / data.width
        p = data.grid[None, :]
        if cfg.surrogate == "ramp":
            A = _gmean(jax.nn.relu(z + 0.5), data, cfg)
            B = _gmean(jax.nn.relu(z - 0.5), data, cfg)
            plus = jnp.concatenate([B.ravel(), A.ravel()])
            minus = jnp.concatenate([(A - p).ravel(), (B + p + data.slack).ravel()])
        else:
            S = _gmean(jax.nn.sigmoid(z), data, cfg)
            zero = jnp.zeros_like(S)
            plus = jnp.concatenate([zero.ravel(), S.ravel()])
            minus = jnp.concatenate([(S - p).ravel(), (zero + p + data.slack).ravel()])
        return plus + q, minus + q
    if cfg.constraint == "demographic":
        z = (s - data.threshold) / data.width
        P_lo, P_hi, _, extra = _pdp_group_pieces(z, data, cfg)
        plus = P_lo[:, None] + P_hi[None, :] + extra[:, None] + extra[None, :]
        minus = P_hi[:, None] + P_lo[None, :] + extra[:, None] + extra[None, :] + data.slack
        return plus.ravel() + q, minus.ravel() + q
    empty = jnp.zeros((0,), dtype=x.dtype)
    return empty, empty


def _pdp_group_pieces(z, data: Data, cfg: Config):
    """Per group ``P^alpha, P^beta`` (convex pieces of spec sections 4.7 / 4.8), their
    per-sample derivatives in s, and the "paper" extra term ``A_k`` (ramp) with its
    derivative.

    Ramp: ``P^a = max(B + a, A)`` (the M^a of 4.7); sigmoid: ``P^a = max(-S, -a)`` (4.8).
    Constraint ``(k, k')`` is ``P^a_k - P^b_k - P^a_k' + P^b_k' - c`` (a = alpha, b = beta)
    in both cases.
    """
    if cfg.surrogate == "ramp":
        relu_a, relu_b = jax.nn.relu(z + 0.5), jax.nn.relu(z - 0.5)
        dA = (z + 0.5 > 0).astype(z.dtype) / data.width
        dB = (z - 0.5 > 0).astype(z.dtype) / data.width
        A, B = _gmean(relu_a, data, cfg), _gmean(relu_b, data, cfg)
        pieces, derivs = [], []
        for level in (data.lo, data.hi):
            use_b = B + level >= A  # tie rule of spec section 4.7
            pieces.append(jnp.maximum(B + level, A))
            derivs.append(jnp.where(use_b[data.groups], dB, dA))
        if cfg.pdp_dc == "paper":
            extra, dextra = A, dA
        else:
            extra, dextra = jnp.zeros_like(A), jnp.zeros_like(dA)
    else:
        sig = jax.nn.sigmoid(z)
        dS = sig * (1.0 - sig) / data.width
        S = _gmean(sig, data, cfg)
        pieces, derivs = [], []
        for level in (data.lo, data.hi):
            active = -S >= -level
            pieces.append(jnp.maximum(-S, -level))
            derivs.append(jnp.where(active[data.groups], -dS, 0.0))
        extra, dextra = jnp.zeros_like(S), jnp.zeros_like(dS)
    return pieces[0], pieces[1], (derivs[0], derivs[1], dextra), extra


def anchor(x, data: Data, cfg: Config) -> Anchor:
    """Linearise the concave parts ``-f_i^-`` at ``x`` (spec section 4.9)."""
    b, w, theta = split(x, cfg)
    s = data.X @ w + b
    f0 = objective(x, data, cfg)
    fvals = constraint_values(x, data, cfg)
    fmax = jnp.max(fvals) if fvals.size else jnp.asarray(-jnp.inf, dtype=x.dtype)
    if cfg.constraint == "statistical":
        z = (s[:, None] - theta[None, :]) / data.width
        p = data.grid[None, :]
        if cfg.surrogate == "ramp":
            A = _gmean(jax.nn.relu(z + 0.5), data, cfg)
            B = _gmean(jax.nn.relu(z - 0.5), data, cfg)
            psi_lower = (z + 0.5 > 0).astype(z.dtype) / data.width  # d A / d s
            psi_upper = (z - 0.5 > 0).astype(z.dtype) / data.width  # d B / d s
            const = (-A + p, -B - p - data.slack)
        else:
            sig = jax.nn.sigmoid(z)
            S = _gmean(sig, data, cfg)
            psi_lower = sig * (1.0 - sig) / data.width  # d sigma-mean / d s
            psi_upper = jnp.zeros_like(z)  # f^- of the upper constraint is constant
            const = (-S + p, jnp.zeros_like(S) - p - data.slack)
        psi = (psi_lower, psi_upper)
        mpsi = (_gmean(psi_lower, data, cfg), _gmean(psi_upper, data, cfg))
    elif cfg.constraint == "demographic":
        z = (s - data.threshold) / data.width
        P_lo, P_hi, (d_lo, d_hi, dextra), extra = _pdp_group_pieces(z, data, cfg)
        # H_k (first group of the pair) subtracts the linearised P^beta_k (+ extra);
        # E_k (second group) subtracts the linearised P^alpha_k (+ extra).
        psi = (d_hi, d_lo, dextra)
        mpsi = ()
        const = (-P_hi - extra, -P_lo - extra)
    else:
        psi, mpsi, const = (), (), ()
    return Anchor(x=x, s=s, psi=psi, mpsi=mpsi, const=const, f0=f0, fmax=fmax)


def evaluate(v, anc: Anchor, data: Data, cfg: Config) -> Evaluation:
    """Subproblem (31) at ``v``: ``g_0(v)``, all ``g_i(v)`` and a subgradient oracle."""
    b, w, theta = split(v, cfg)
    s = data.X @ w + b
    delta = v - anc.x
    prox = 0.5 * jnp.sum(delta * delta)
    ds = s - anc.s
    loss, u0 = _logistic_parts(s, data)
    g0 = loss + 0.5 * data.alpha * jnp.sum(w * w) + data.mu * prox
    curvature = data.mu + data.rho  # prox coefficient of every constraint
    J, G = cfg.num_levels, cfg.num_groups
    ones = jnp.ones_like(s)

    def assemble(u, theta_grad, extra_w, prox_coef):
        gw = u @ data.X + extra_w  # not X.T @ u: ~4x slower on XLA CPU
        return jnp.concatenate([jnp.sum(u)[None], gw, theta_grad]) + prox_coef * delta

    if cfg.constraint == "statistical":
        z = (s[:, None] - theta[None, :]) / data.width
        dtheta = delta[1 + cfg.num_features :]
        psi_lower, psi_upper = anc.psi
        if cfg.surrogate == "ramp":
            P_lower, P_upper = jax.nn.relu(z - 0.5), jax.nn.relu(z + 0.5)
            dP_lower = (z - 0.5 > 0).astype(z.dtype) / data.width
            dP_upper = (z + 0.5 > 0).astype(z.dtype) / data.width
        else:
            sig = jax.nn.sigmoid(z)
            P_lower, P_upper = jnp.zeros_like(z), sig
            dP_lower = jnp.zeros_like(z)
            dP_upper = sig * (1.0 - sig) / data.width
        # one (G, n) x (n, J) product per family: convex piece minus linearised part
        g_lower = (
            _gmean(P_lower - psi_lower * ds[:, None], data, cfg)
            + anc.mpsi[0] * dtheta[None, :]
            + anc.const[0]
            + curvature * prox
        )
        g_upper = (
            _gmean(P_upper - psi_upper * ds[:, None], data, cfg)
            + anc.mpsi[1] * dtheta[None, :]
            + anc.const[1]
            + curvature * prox
        )
        gcon = jnp.concatenate([g_lower.ravel(), g_upper.ravel()])

        def constraint_u(index):
            kind, rest = index // (G * J), index % (G * J)
            k, j = rest // J, rest % J
            upper = kind == 1
            dP = jnp.where(upper, dP_upper[:, j], dP_lower[:, j])
            psi = jnp.where(upper, psi_upper[:, j], psi_lower[:, j])
            u = data.cg * (data.groups == k) * (dP - psi)
            theta_grad = jnp.zeros((J,), dtype=v.dtype).at[j].set(-jnp.sum(u))
            return u, theta_grad

    elif cfg.constraint == "demographic":
        z = (s - data.threshold) / data.width
        P_lo, P_hi, (d_lo, d_hi, dextra), extra = _pdp_group_pieces(z, data, cfg)
        psi_hi, psi_lo, psi_extra = anc.psi
        lin_hi = _gmean(psi_hi * ds, data, cfg)
        lin_lo = _gmean(psi_lo * ds, data, cfg)
        lin_extra = _gmean(psi_extra * ds, data, cfg)
        first = P_lo + extra - lin_hi - lin_extra + anc.const[0]
        second = P_hi + extra - lin_lo - lin_extra + anc.const[1]
        matrix = first[:, None] + second[None, :] - data.slack + curvature * prox
        gcon = _mask_diagonal(matrix, cfg).ravel()
        u_first = data.cg * (d_lo + dextra - psi_hi - psi_extra)
        u_second = data.cg * (d_hi + dextra - psi_lo - psi_extra)

        def constraint_u(index):
            k, kk = index // G, index % G
            u = u_first * (data.groups == k) + u_second * (data.groups == kk)
            return u, jnp.zeros((0,), dtype=v.dtype)

    else:
        gcon = jnp.zeros((0,), dtype=v.dtype)

        def constraint_u(index):
            return 0.0 * ones, jnp.zeros((J,), dtype=v.dtype)

    def direction(feasible, index):
        u_con, theta_con = constraint_u(index)
        u = jnp.where(feasible, u0, u_con)
        theta_grad = jnp.where(feasible, jnp.zeros_like(theta_con), theta_con)
        extra_w = jnp.where(feasible, data.alpha * w, jnp.zeros_like(w))
        prox_coef = jnp.where(feasible, data.mu, curvature)
        return assemble(u, theta_grad, extra_w, prox_coef)

    return Evaluation(g0=g0, gcon=gcon, direction=direction)
