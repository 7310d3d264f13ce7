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

The linearised parts of the subproblem constraints are affine in ``v``; the anchor stores
them as one ``(m, D)`` matrix (the subgradients of every ``f_i^-`` at ``x^(k)``, spec
section 14), computed once per outer iteration, so an SSG step never touches the
per-sample anchor derivatives: one ``X w``, O(n J) surrogate work, one ``X^T u``.

``X`` is dense, or the shared :class:`~fairest._kernels._sparse.SparseRows` in its ELL
form (:func:`~fairest._kernels._sparse.ell_rows`: padded per-row column indices and
values, ``X.slots()``) when most entries are zero (one-hot data such as a9a): ``X w`` is
then a gather and ``X^T u`` a scatter-add over the non-zeros only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from fairest._kernels._losses import cross_entropy
from fairest._kernels._sparse import SparseRows
from fairest.partial._rows import row_dot, row_scatter, row_sum

__all__ = [
    "SparseRows",
    "matvec",
    "rmatvec",
    "linear_scores",
    "Config",
    "Data",
    "Anchor",
    "Evaluation",
    "split",
    "scores",
    "objective",
    "constraint_values",
    "anchor",
    "evaluate",
    "num_constraints",
]


def matvec(X, w):
    """``X @ w`` for a dense or :class:`SparseRows` matrix."""
    if isinstance(X, SparseRows):
        # the slots added left to right: XLA CPU's reduce over them is compiled
        # differently for different row counts (one device or a shard of rows)
        value, index = X.slots()
        products = value * w[index]
        total = products[:, 0]
        for slot in range(1, products.shape[1]):
            total = total + products[:, slot]
        return total
    return X @ w


def rmatvec(u, X):
    """``X^T u`` (or ``X^T U`` for a ``(n, m)`` matrix ``U``, shape ``(d, m)``), summed
    over the rows in the fixed order of :mod:`fairest.partial._rows`."""
    if isinstance(X, SparseRows):
        if u.ndim == 1:
            value, index = X.slots()
            return row_scatter(value * u[:, None], index, X.shape[1])
        # one scalar scatter per column: much faster on XLA CPU than one scatter with
        # (n k, m) update windows
        return jax.lax.map(lambda col: rmatvec(col, X), u.T).T
    return row_dot(u, X) if u.ndim == 1 else row_dot(X, u)


@jax.custom_vjp
def linear_scores(b, w, X):
    """``X @ w + b`` (dense or :class:`SparseRows` ``X``) whose gradient in ``(b, w)``
    sums over the rows in the fixed order (``jax.grad`` of the penalty baseline)."""
    return matvec(X, w) + b


def _linear_scores_fwd(b, w, X):
    return matvec(X, w) + b, X


def _linear_scores_bwd(X, g):
    return row_sum(g), rmatvec(g, X), None


linear_scores.defvjp(_linear_scores_fwd, _linear_scores_bwd)


def _indicator_rows(ind, data, num_groups: int):
    """``X^T (membership_k * ind_j)`` for all groups ``k`` and levels ``j``, shape
    ``(G, J, d)``, for a 0/1 matrix ``ind`` (n, J) that is monotone in the level order
    (``ind[i, j] = 1[s_i - theta_j + shift > 0]``, non-increasing in ``theta_j``).

    Each sample then only needs its count ``c_i = sum_j ind[i, j]``: one scatter of the
    rows into ``(group, count)`` buckets and a reverse cumulative sum over the counts give
    every level at the cost of a single ``X^T u`` (used for :class:`SparseRows`)."""
    value, index = data.X.slots()
    d = data.X.shape[1]
    J = ind.shape[1]
    count = jnp.sum(ind, axis=1).astype(jnp.int32)
    bucket = data.groups * (J + 1) + count  # (n,)
    columns = bucket[:, None] * d + index
    size = num_groups * (J + 1) * d
    sums = row_scatter((value * data.cg[:, None]).astype(ind.dtype), columns, size)
    sums = sums.reshape(num_groups, J + 1, d)
    tail = jnp.cumsum(sums[:, ::-1], axis=1)[:, ::-1]  # tail[k, c] = sum over counts >= c
    return tail


class Config(NamedTuple):
    """Static (hashable) description of a problem; changing it recompiles."""

    constraint: str  # "statistical" (15), "demographic" (21) or "none" (plain ERM)
    surrogate: str  # "ramp" or "sigmoid"
    dc_split: str  # "minimal" or "paper" (spec section 4.7)
    num_groups: int
    num_features: int  # d (without intercept)
    num_levels: int  # J (0 for pDP / no constraint)


class Data(NamedTuple):
    """Traced data and hyper-parameters of one fit (no recompilation when they change)."""

    X: jax.Array  # (n, d), dense or SparseRows
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
    mu: jax.Array  # strong-convexity add-on proximal_strength (spec section 4.4)
    rho: jax.Array  # weak-convexity constant of the sigmoid DC split (spec 4.6, 4.8)
    width: jax.Array  # surrogate width tau


class Anchor(NamedTuple):
    """Everything of the linearisation at ``x^(k)`` that SSG reuses (spec section 4.9)."""

    x: jax.Array  # (D,) the anchor point
    lin: jax.Array  # (m, D) subgradients of the linearised f_i^- parts at x
    const: jax.Array  # (m,) constant parts of the subproblem constraints
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
    return matvec(data.X, w) + b


def _gmean(values, data: Data, cfg: Config):
    """Group means (weights ``cg``) of a (n,) or (n, J) array: (G,) or (G, J).

    A (G, n) x (n, J) product with the weighted one-hot membership (on CPU much faster
    than a scatter-add over n x J entries), summed in the fixed order of
    :mod:`fairest.partial._rows`."""
    return row_dot(data.membership, values)


def _logistic_parts(s, data: Data):
    value = row_sum(data.c0 * cross_entropy(s, data.y))
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
    s = matvec(data.X, w) + b
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
        if cfg.dc_split == "paper":
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


def _lin_rows(U, data: Data):
    """Rows ``(sum_i U_ic, X^T U_c)`` for every column ``c`` of the ``(n, m)`` weights
    ``U``: the ``(b, w)`` part of the gradient of ``sum_i U_ic s_i``. Shape (m, 1 + d)."""
    return jnp.concatenate([row_sum(U)[:, None], rmatvec(U, data.X).T], axis=1)


def anchor(x, data: Data, cfg: Config) -> Anchor:
    """Linearise the concave parts ``-f_i^-`` at ``x`` (spec section 4.9).

    Subproblem constraint ``i`` is ``g_i(v) = f_i^+(v) - lin_i . (v - x) + const_i +
    (mu + rho)/2 ||v - x||^2``; ``lin`` holds the subgradients of ``f_i^-`` at ``x``
    without the add-on (which cancels into the proximal term)."""
    b, w, theta = split(x, cfg)
    s = matvec(data.X, w) + b
    f0 = objective(x, data, cfg)
    fvals = constraint_values(x, data, cfg)
    fmax = jnp.max(fvals) if fvals.size else jnp.asarray(-jnp.inf, dtype=x.dtype)
    G, J = cfg.num_groups, cfg.num_levels
    if cfg.constraint == "statistical":
        z = (s[:, None] - theta[None, :]) / data.width
        p = data.grid[None, :]
        if cfg.surrogate == "ramp":
            A = _gmean(jax.nn.relu(z + 0.5), data, cfg)
            B = _gmean(jax.nn.relu(z - 0.5), data, cfg)
            ind_lower = (z + 0.5 > 0).astype(z.dtype)  # width * d A / d s
            ind_upper = (z - 0.5 > 0).astype(z.dtype)  # width * d B / d s
            const = jnp.concatenate([(-A + p).ravel(), (-B - p - data.slack).ravel()])
            families = ((ind_lower / data.width, ind_lower), (ind_upper / data.width, ind_upper))
        else:
            sig = jax.nn.sigmoid(z)
            S = _gmean(sig, data, cfg)
            psi_lower = sig * (1.0 - sig) / data.width  # d sigma-mean / d s
            # f^- of the upper constraint is constant: no linear part
            const = jnp.concatenate([(-S + p).ravel(), (-p - data.slack + 0.0 * S).ravel()])
            families = ((psi_lower, None), (None, None))
        # rank of every threshold: ind[i, j] = 1 iff count_i >= #{l: theta_l <= theta_j}
        rank = jnp.sum(theta[None, :] <= theta[:, None], axis=1)
        rows = []
        for psi, ind in families:  # (G * J) rows per family, ordered (k, j) like gcon
            if psi is None:
                rows.append(jnp.zeros((G * J, x.size), x.dtype))
                continue
            mpsi = _gmean(psi, data, cfg)  # (G, J): d/d theta_j is -mean psi_j
            if ind is not None and isinstance(data.X, SparseRows):
                tail = _indicator_rows(ind, data, G)  # (G, J + 1, d)
                Xw = tail[:, rank, :] / data.width  # (G, J, d)
                bw = jnp.concatenate([mpsi[:, :, None], Xw], axis=2).reshape(G * J, -1)
            else:
                bw = jnp.concatenate(
                    [_lin_rows(data.membership[:, k : k + 1] * psi, data) for k in range(G)]
                )
            eye = jnp.eye(J, dtype=x.dtype)
            th = -(mpsi[:, :, None] * eye[None, :, :]).reshape(G * J, J)
            rows.append(jnp.concatenate([bw, th], axis=1))
        lin = jnp.concatenate(rows)
    elif cfg.constraint == "demographic":
        z = (s - data.threshold) / data.width
        P_lo, P_hi, (d_lo, d_hi, dextra), extra = _pdp_group_pieces(z, data, cfg)
        # pair (k, k'): f^- = P^beta_k + extra_k + P^alpha_k' + extra_k' (+ c)
        L_first = _lin_rows(data.membership * (d_hi + dextra)[:, None], data)  # (G, 1+d)
        L_second = _lin_rows(data.membership * (d_lo + dextra)[:, None], data)
        lin = (L_first[:, None, :] + L_second[None, :, :]).reshape(G * G, -1)
        first, second = -P_hi - extra, -P_lo - extra
        const = (first[:, None] + second[None, :]).ravel()
    else:
        lin = jnp.zeros((0, x.size), x.dtype)
        const = jnp.zeros((0,), x.dtype)
    return Anchor(x=x, lin=lin, const=const, f0=f0, fmax=fmax)


def evaluate(v, anc: Anchor, data: Data, cfg: Config) -> Evaluation:
    """Subproblem (31) at ``v``: ``g_0(v)``, all ``g_i(v)`` and a subgradient oracle."""
    b, w, theta = split(v, cfg)
    s = matvec(data.X, w) + b
    delta = v - anc.x
    prox = 0.5 * jnp.sum(delta * delta)
    loss, u0 = _logistic_parts(s, data)
    g0 = loss + 0.5 * data.alpha * jnp.sum(w * w) + data.mu * prox
    curvature = data.mu + data.rho  # prox coefficient of every constraint
    J, G = cfg.num_levels, cfg.num_groups
    linear = anc.lin @ delta - anc.const  # (m,) linearised f_i^- (minus constants)

    def assemble(u, theta_grad, extra_w, prox_coef):
        gw = rmatvec(u, data.X) + extra_w
        return jnp.concatenate([row_sum(u)[None], gw, theta_grad]) + prox_coef * delta

    if cfg.constraint == "statistical":
        z = (s[:, None] - theta[None, :]) / data.width
        if cfg.surrogate == "ramp":
            # lower family: f^+ = B (shift -1/2), upper family: f^+ = A (shift +1/2);
            # one (G, n) x (n, 2J) product for both
            plus = _gmean(
                jnp.concatenate([jax.nn.relu(z - 0.5), jax.nn.relu(z + 0.5)], 1), data, cfg
            )
            P_lower, P_upper = plus[:, :J], plus[:, J:]
        else:
            P_upper = _gmean(jax.nn.sigmoid(z), data, cfg)
            P_lower = jnp.zeros_like(P_upper)
        fplus = jnp.concatenate([P_lower.ravel(), P_upper.ravel()])
        gcon = fplus - linear + curvature * prox

        def constraint_u(index):
            kind, rest = index // (G * J), index % (G * J)
            k, j = rest // J, rest % J
            zj = (s - theta[j]) / data.width
            if cfg.surrogate == "ramp":
                dP = (zj + jnp.where(kind == 1, 0.5, -0.5) > 0).astype(s.dtype) / data.width
            else:
                sig = jax.nn.sigmoid(zj)
                dP = jnp.where(kind == 1, sig * (1.0 - sig), 0.0) / data.width
            u = data.cg * (data.groups == k) * dP
            theta_grad = jnp.zeros((J,), dtype=v.dtype).at[j].set(-row_sum(u))
            return u, theta_grad

    elif cfg.constraint == "demographic":
        z = (s - data.threshold) / data.width
        P_lo, P_hi, (d_lo, d_hi, dextra), extra = _pdp_group_pieces(z, data, cfg)
        matrix = (P_lo + extra)[:, None] + (P_hi + extra)[None, :] - data.slack
        gcon = _mask_diagonal(
            matrix.ravel().reshape(G, G) - linear.reshape(G, G) + curvature * prox, cfg
        ).ravel()
        u_first = data.cg * (d_lo + dextra)
        u_second = data.cg * (d_hi + dextra)

        def constraint_u(index):
            k, kk = index // G, index % G
            u = u_first * (data.groups == k) + u_second * (data.groups == kk)
            return u, jnp.zeros((0,), dtype=v.dtype)

    else:
        gcon = jnp.zeros((0,), dtype=v.dtype)

        def constraint_u(index):
            return jnp.zeros_like(s), jnp.zeros((J,), dtype=v.dtype)

    def direction(feasible, index):
        u_con, theta_con = constraint_u(index)
        u = jnp.where(feasible, u0, u_con)
        theta_grad = jnp.where(feasible, jnp.zeros_like(theta_con), theta_con)
        extra_w = jnp.where(feasible, data.alpha * w, jnp.zeros_like(w))
        prox_coef = jnp.where(feasible, data.mu, curvature)
        d = assemble(u, theta_grad, extra_w, prox_coef)
        if anc.lin.shape[0]:
            d = d - jnp.where(feasible, 0.0, 1.0) * anc.lin[index]
        return d

    return Evaluation(g0=g0, gcon=gcon, direction=direction)
