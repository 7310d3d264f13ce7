"""Solvers of the FERMI objective: deterministic full batch and (DP-)SGDA (spec ``ermi.md`` 5).

* :func:`full_batch_solve` minimises ``L(theta) + lam ERMI(theta) + alpha/2 ||coef||^2``
  with W at its closed-form maximiser (spec 3.2) by L-BFGS-B on a jitted objective.
  Deterministic; the reference for small data.
* :func:`sgda_solve` is Algorithm 1 of Lowy, Gupta, Razaviyayn (ICLR 2023): simultaneous
  stochastic descent in theta and projected ascent in W with optional per-sample
  clipping and Gaussian noise (spec 5.3), one ``lax.scan`` over all T iterations.

Random streams (spec 11): one key per purpose (batches, theta-noise, W-noise, random
iterate), so the batch sequence does not depend on k, l or the noise settings.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from fairest.ermi._kernels import (
    Strata,
    fermi_objective,
    logits,
    loss_and_logit_grad,
    probabilities,
    saddle_coefficients,
    saddle_logit_grad,
    saddle_value,
    theta_gradient,
    w_gradient,
)

__all__ = ["SGDAHyper", "full_batch_solve", "sgda_solve", "uniform_subset", "project_ball"]


class SGDAHyper(NamedTuple):
    """Traced hyper-parameters of SGDA (changing them never recompiles)."""

    lam: jax.Array
    lr_theta: jax.Array
    lr_w: jax.Array
    radius: jax.Array
    clip_sample: jax.Array  # per-sample clipping norm; inf disables
    clip_batch: jax.Array  # clipping norm of the averaged gradient; inf disables
    sigma_theta: jax.Array  # effective noise stds (spec 6.6)
    sigma_w: jax.Array
    alpha: jax.Array  # L2 strength on the coefficients (not the intercept)


@partial(jax.jit, static_argnames="binary")
def fermi_value_and_grad(flat, X, y, s, t, weight, strata: Strata, lam, alpha, *, binary):
    """FERMI objective and its (Danskin) gradient at the flat parameter vector."""
    shape = (X.shape[1] + 1, flat.shape[0] // (X.shape[1] + 1))

    def fun(v):
        return fermi_objective(v.reshape(shape), X, y, s, t, weight, strata, lam, alpha, binary)

    return jax.value_and_grad(fun)(flat)


def full_batch_solve(theta0, X, y, s, t, weight, strata: Strata, lam, alpha, tol, max_iter, *, binary):
    """Minimise the FERMI objective with W at its closed form, by scipy's L-BFGS-B.

    Only the objective and gradient are jitted (one compilation per data shape; lambda
    and alpha are traced); the quasi-Newton loop runs in scipy, as for every smooth
    deterministic problem in fairest. Returns ``(theta, objective, grad_inf_norm,
    n_iter, converged)``; stops when ``||grad||_inf <= tol`` or the
    relative decrease of the objective reaches 64 machine epsilons (as scikit-learn's lbfgs).
    """
    shape = theta0.shape
    args = (X, y, s, t, weight, strata, lam, alpha)

    def fun(flat):
        value, grad = fermi_value_and_grad(jnp.asarray(flat), *args, binary=binary)
        return float(value), np.asarray(grad, dtype=np.float64)

    result = scipy.optimize.minimize(
        fun,
        np.asarray(theta0, dtype=np.float64).ravel(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": int(max_iter), "gtol": float(tol), "ftol": 64 * np.finfo(float).eps, "maxcor": 20},
    )
    grad_norm = float(np.max(np.abs(fun(result.x)[1])))
    converged = bool(result.success) or grad_norm <= tol  # gtol, or no relative decrease left
    return result.x.reshape(shape), float(result.fun), grad_norm, int(result.nit), converged


def project_ball(W, radius):
    """Project every block ``W[t]`` on the Frobenius ball of the given radius (spec 5.3.6)."""
    norms = jnp.sqrt(jnp.sum(W * W, axis=(1, 2), keepdims=True))
    return W * jnp.minimum(1.0, radius / jnp.maximum(norms, jnp.finfo(W.dtype).tiny))


def uniform_subset(key, owner, n: int, m: int):
    """m distinct indices drawn uniformly from ``range(n)`` (an exactly uniform m-subset).

    Sequential draws with replacement that skip repeats give a uniformly random ordered
    m-tuple of distinct values; they are made in rounds of ``2m + 16`` vectorised draws
    (one round nearly always suffices when m <= n / 4) inside a ``while_loop``. Repeats
    are found by scatter-min into ``owner``, an int32 scratch array of length n filled
    with a sentinel and carried between calls (reset on the touched entries), so a call
    costs O(m), never O(n), and needs no sort.
    """
    n_draws = 2 * m + 16
    sentinel = jnp.iinfo(jnp.int32).max
    order = jnp.arange(n_draws, dtype=jnp.int32)

    def more(state):
        return state[3] < m

    def draw_round(state):
        owner, chosen, round_, count = state
        draws = jax.random.randint(jax.random.fold_in(key, round_), (n_draws,), 0, n, dtype=jnp.int32)
        stamp = round_ * n_draws + order
        owner = owner.at[draws].min(stamp)
        first = owner[draws] == stamp
        rank = count + jnp.cumsum(first, dtype=jnp.int32) - 1
        keep = first & (rank < m)
        chosen = chosen.at[jnp.where(keep, rank, m)].set(draws)
        # first occurrences beyond m are not kept: clear their marks now
        owner = owner.at[jnp.where(first & ~keep, draws, n)].set(sentinel, mode="drop")
        return owner, chosen, round_ + 1, jnp.minimum(count + jnp.sum(first, dtype=jnp.int32), m)

    chosen = jnp.zeros(m + 1, jnp.int32)
    owner, chosen, _, _ = jax.lax.while_loop(more, draw_round, (owner, chosen, jnp.int32(0), jnp.int32(0)))
    chosen = chosen[:m]
    return chosen, owner.at[chosen].set(sentinel)


def _sgda_step(theta, W, idx, valid, it, X, y, s, t, weight, strata, hyper: SGDAHyper, keys, binary):
    """One simultaneous DP-SGDA step on the minibatch ``idx`` (rows with ``valid = 0`` ignored)."""
    k_theta, k_w = keys
    Xb, yb, sb, tb = X[idx], y[idx], s[idx], t[idx]
    cb = weight[idx] * valid
    m_eff = jnp.sum(valid)
    Z = logits(theta, Xb)
    F = probabilities(Z, binary)
    loss, dloss = loss_and_logit_grad(Z, yb, binary)
    coefficients = saddle_coefficients(W, sb, tb, strata)
    psi = saddle_value(F, coefficients, tb, strata)
    A = cb[:, None] * (dloss + hyper.lam * saddle_logit_grad(F, coefficients, binary))
    # per-sample clipping: ||(1, x_i) a_i^T|| = ||a_i|| ||(1, x_i)|| (spec 3.3)
    norms = jnp.sqrt(jnp.sum(A * A, axis=1) * (1.0 + jnp.sum(Xb * Xb, axis=1)))
    A = A * jnp.where(norms > hyper.clip_sample, hyper.clip_sample / jnp.maximum(norms, 1e-300), 1.0)[:, None]
    grad = theta_gradient(Xb, A) / m_eff
    grad_norm = jnp.sqrt(jnp.sum(grad * grad))
    grad = grad * jnp.where(grad_norm > hyper.clip_batch, hyper.clip_batch / jnp.maximum(grad_norm, 1e-300), 1.0)
    grad = grad + hyper.alpha * theta.at[0].set(0.0)
    noise_theta = jax.random.normal(jax.random.fold_in(k_theta, it), theta.shape, theta.dtype)
    theta_new = theta - hyper.lr_theta * (grad + hyper.sigma_theta * noise_theta)
    grad_w = hyper.lam * w_gradient(F, W, sb, tb, cb, strata) / m_eff
    noise_w = jax.random.normal(jax.random.fold_in(k_w, it), W.shape, W.dtype)
    W_new = (W + hyper.lr_w * (grad_w + hyper.sigma_w * noise_w)) * strata.mask[:, :, None]
    W_new = project_ball(W_new, hyper.radius)
    record = (jnp.sum(cb * loss) / m_eff, jnp.sum(cb * psi) / m_eff, jnp.sqrt(jnp.sum(W_new * W_new)))
    return theta_new, W_new, record


@partial(
    jax.jit,
    static_argnames=("binary", "batch_size", "n_epochs", "batching", "record_history", "random_iterate"),
)
def sgda_solve(
    theta0,
    W0,
    X,
    y,
    s,
    t,
    weight,
    strata: Strata,
    hyper: SGDAHyper,
    key,
    *,
    binary: bool,
    batch_size: int,
    n_epochs: int,
    batching: str,
    record_history: bool,
    random_iterate: bool,
):
    """Run T = n_epochs * ceil(n / m) DP-SGDA iterations; returns ``(theta, W, history)``.

    ``history`` is ``(batch loss, batch Psi, ||W||_F)`` per iteration when
    ``record_history`` (else ``None``). With ``random_iterate`` the returned theta is
    ``theta_tau``, tau uniform on 1..T (the iterate the theory analyses).
    """
    n = X.shape[0]
    m = batch_size
    steps = -(-n // m)
    n_iter = n_epochs * steps
    k_batch, k_theta, k_w, k_iterate = jax.random.split(key, 4)
    tau = jax.random.randint(k_iterate, (), 1, n_iter + 1)
    data = (X, y, s, t, weight, strata, hyper, (k_theta, k_w), binary)

    def advance(carry, idx, valid, it):
        theta, W, chosen = carry[:3]
        theta_new, W_new, record = _sgda_step(theta, W, idx, valid, it, *data)
        if random_iterate:
            chosen = jnp.where(it + 1 == tau, theta_new, chosen)
        return (theta_new, W_new, chosen), (record if record_history else None)

    init = (theta0, W0, theta0)
    if batching == "uniform" and m < n:
        ones = jnp.ones(m, X.dtype)

        def body(carry, it):
            state, owner = carry
            idx, owner = uniform_subset(jax.random.fold_in(k_batch, it), owner, n, m)
            state, record = advance(state, idx, ones, it)
            return (state, owner), record

        owner0 = jnp.full(n, jnp.iinfo(jnp.int32).max, jnp.int32)
        (state, _), history = jax.lax.scan(body, (init, owner0), jnp.arange(n_iter))
    else:  # per-epoch permutation; the last partial block is a smaller batch (spec 5.3.1)
        padded = steps * m
        valid = (jnp.arange(padded) < n).astype(X.dtype).reshape(steps, m)

        def epoch(state, e):
            if batching == "uniform":  # m == n: every step is the full data set
                perm = jnp.arange(n)
            else:
                perm = jax.random.permutation(jax.random.fold_in(k_batch, e), n)
            blocks = jnp.concatenate([perm, jnp.zeros(padded - n, perm.dtype)]).reshape(steps, m)

            def step(state, j):
                return advance(state, blocks[j], valid[j], e * steps + j)

            return jax.lax.scan(step, state, jnp.arange(steps))

        state, history = jax.lax.scan(epoch, init, jnp.arange(n_epochs))
        if record_history:
            history = tuple(h.reshape(-1) for h in history)
    theta, W, chosen = state
    return (chosen if random_iterate else theta), W, history
