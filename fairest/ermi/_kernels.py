"""Jitted kernels of FERMI / DP-FERMI: the per-sample ERMI saddle function and its gradients.

Notation (spec ``ermi.md`` sections 1-3). ``theta`` has shape (p, q), p = d + 1 with the
intercept row FIRST; q = 1 for binary logistic regression (one logit z, probabilities
``F = (1 - sigmoid(z), sigmoid(z))``) and q = l for softmax regression. ``F`` always has
l columns (l = 2 in the binary case: the full ERMI uses both columns, spec 13.1).

Demographic parity and equalized odds share one code path through *strata*: every sample
has a stratum ``t_i`` (always 0 for demographic parity, the label ``y_i`` for equalized
odds) and ``W`` has shape (n_strata, k, l), one block ``W^{(t)}`` per stratum. The
constants of a stratum are ``inv_sqrt_p[t, r] = 1 / sqrt(p_S|t(r))`` (0 on empty cells)
and the weight ``omega[t]`` (spec 3.5). The per-sample saddle function is

    psi_i(theta, W) = omega_t * ( -sum_{r,j} W_{t,rj}^2 F_ij
                                  + 2 inv_sqrt_p[t, s_i] sum_j W_{t,s_i j} F_ij - 1 )
                    = <c_i, F_i> - omega_t,
    c_ij = omega_t * ( -sum_r W_{t,rj}^2 + 2 inv_sqrt_p[t, s_i] W_{t,s_i j} )

(spec 3.2-3.3). Sample weights ``c`` are normalised to mean one over the real rows;
padding rows have weight 0 and change no sum. Every hyper-parameter is traced.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels import cross_entropy, cross_entropy_grad, scores
from fairest._kernels._placement import is_shifted

__all__ = [
    "Strata",
    "probabilities",
    "loss_and_logit_grad",
    "saddle_coefficients",
    "saddle_logit_grad",
    "saddle_value",
    "w_gradient",
    "closed_form_w",
    "fermi_objective",
    "fermi_objective_of_scores",
    "fermi_hessian",
    "fermi_value_and_grad",
    "device_scalar",
]


class Strata(NamedTuple):
    """Per-stratum constants, computed once from the full training set (spec 3.4)."""

    inv_sqrt_p: jax.Array  # (n_strata, k): 1 / sqrt(p_S|t(r)); 0 on empty cells
    omega: jax.Array  # (n_strata,): stratum weights (1 for demographic parity)
    mask: jax.Array  # (n_strata, k): 1.0 on non-empty cells, 0.0 elsewhere


def probabilities(Z, binary: bool):
    """Class probabilities F of shape (n, l) from logits of shape (n, q)."""
    if binary:
        p1 = jax.nn.sigmoid(Z[:, 0])
        return jnp.stack([jax.nn.sigmoid(-Z[:, 0]), p1], axis=1)
    return jax.nn.softmax(Z, axis=1)


def loss_and_logit_grad(Z, y, binary: bool):
    """Per-sample cross-entropy ``-log F_{y_i}`` (n,) and its logit gradient (n, q)."""
    if binary:
        z = Z[:, 0]
        yf = y.astype(Z.dtype)
        return cross_entropy(z, yf), cross_entropy_grad(z, yf)[:, None]
    return cross_entropy(Z, y), cross_entropy_grad(Z, y)


def saddle_coefficients(W, s, t, strata: Strata):
    """Coefficients ``c_i`` (n, l) with ``psi_i = <c_i, F_i> - omega_{t_i}`` (spec 3.3)."""
    squares = jnp.sum(W * W, axis=1)  # (n_strata, l): sum_r W_{t,rj}^2
    scale = strata.inv_sqrt_p[t, s]  # (n,)
    return strata.omega[t][:, None] * (-squares[t] + 2.0 * scale[:, None] * W[t, s])


def saddle_value(F, coefficients, t, strata: Strata):
    """Per-sample saddle function ``psi_i`` of shape (n,)."""
    return jnp.sum(coefficients * F, axis=1) - strata.omega[t]


def saddle_logit_grad(F, coefficients, binary: bool):
    """``d psi_i / d z`` of shape (n, q): ``F (c - <F, c>)`` (softmax) or the one-logit form."""
    if binary:
        return (F[:, 0] * F[:, 1] * (coefficients[:, 1] - coefficients[:, 0]))[:, None]
    return F * (coefficients - jnp.sum(F * coefficients, axis=1, keepdims=True))


def w_gradient(F, W, s, t, weight, strata: Strata):
    """``sum_i weight_i grad_W psi_i`` of shape (n_strata, k, l), one pass with segment_sum.

    ``grad_W psi_i`` is ``omega_t (-2 W_t diag(F_i) + 2 inv_sqrt_p[t, s_i] e(s_i) F_i^T)`` on
    block t = t_i and zero elsewhere (spec 3.3, 3.5). Divide by the batch size for the
    minibatch average.
    """
    n_strata, k, _ = W.shape
    w = weight * strata.omega[t]
    diag_sums = jax.ops.segment_sum(w[:, None] * F, t, num_segments=n_strata)  # (T, l)
    lin = (w * strata.inv_sqrt_p[t, s])[:, None] * F
    lin_sums = jax.ops.segment_sum(lin, t * k + s, num_segments=n_strata * k)
    return -2.0 * W * diag_sums[:, None, :] + 2.0 * lin_sums.reshape(W.shape)


def closed_form_w(F, s, t, weight, strata: Strata):
    """Maximiser ``W*_t = J_t / (sqrt(p_S|t) p_Yhat|t)`` of the averaged saddle function.

    Per stratum t (spec 3.2): ``p_Yhat|t(j)`` is the weighted mean of ``F_ij`` over the
    stratum and ``J_t(r, j)`` the weighted mean of ``F_ij 1[s_i = r]``; rows of empty cells
    are 0. Shape (n_strata, k, l).
    """
    n_strata, k = strata.inv_sqrt_p.shape
    totals = jax.ops.segment_sum(weight, t, num_segments=n_strata)
    totals = jnp.where(totals > 0, totals, 1.0)
    mean_f = jax.ops.segment_sum(weight[:, None] * F, t, num_segments=n_strata) / totals[:, None]
    joint = jax.ops.segment_sum(weight[:, None] * F, t * k + s, num_segments=n_strata * k)
    joint = joint.reshape(n_strata, k, -1) / totals[:, None, None]
    return joint * strata.inv_sqrt_p[:, :, None] / mean_f[:, None, :]


def fermi_objective(theta, X, y, s, t, weight, strata: Strata, lam, alpha, binary: bool):
    """Full-batch FERMI objective ``L(theta) + lam * ERMI(theta) + alpha/2 ||coef||^2``.

    The ERMI term is ``Psi(theta, W*(theta))`` with ``W*`` held constant under
    differentiation, so ``jax.grad`` returns Danskin's gradient
    ``grad_theta F(theta, W*(theta))`` (spec 3.2, 7) built from the same kernels as SGDA.
    """
    return fermi_objective_of_scores(
        scores(theta, X), theta, y, s, t, weight, strata, lam, alpha, binary
    )


def fermi_objective_of_scores(Z, theta, y, s, t, weight, strata: Strata, lam, alpha, binary):
    """:func:`fermi_objective` from the logits ``Z = scores(theta, X)`` (n, q): its
    gradient in ``Z`` gives the theta-gradient by one product with X (a row-block
    ``X`` is never differentiated through)."""
    F = probabilities(Z, binary)
    loss, _ = loss_and_logit_grad(Z, y, binary)
    W = jax.lax.stop_gradient(closed_form_w(F, s, t, weight, strata))
    psi = saddle_value(F, saddle_coefficients(W, s, t, strata), t, strata)
    total = jnp.sum(weight)
    data = jnp.sum(weight * (loss + lam * psi)) / total
    return data + 0.5 * alpha * jnp.sum(theta[1:] ** 2)


def _sample_curvature(Z, y, s, t, W, strata: Strata, lam, binary: bool):
    """Per-sample Hessians in the logits, (n, q, q), of ``loss_i + lam psi_i`` at fixed W."""

    def sample_value(z, yi, si, ti):
        Zi = z[None, :]
        loss, _ = loss_and_logit_grad(Zi, yi[None], binary)
        F = probabilities(Zi, binary)
        coefficients = saddle_coefficients(W, si[None], ti[None], strata)
        return loss[0] + lam * jnp.sum(coefficients * F)

    return jax.vmap(jax.hessian(sample_value))(Z, y, s, t)


def _w_gradient_logit_jacobian(Z, s, t, W, strata: Strata, binary: bool):
    """Per-sample Jacobians ``d g_i / d z_i`` of shape (n, n_strata k l, q), with ``g_i``
    sample i's (unit weight) term of :func:`w_gradient` flattened: the coupling of the
    W-gradient to the logits, elementwise per sample (no pass over X)."""

    def sample_term(z, si, ti):
        F = probabilities(z[None, :], binary)
        return w_gradient(F, W, si[None], ti[None], jnp.ones(1, z.dtype), strata).reshape(-1)

    return jax.vmap(jax.jacfwd(sample_term))(Z, s, t)


def _bordered_products(X, R):
    """``(1, X)^T R`` of shape (d + 1, m) without building ``(1, X)``: one product with X
    (contracted over the rows, no transpose copied)."""
    inner = jax.lax.dot_general(X, R, (((0,), (0,)), ((), ())))
    return jnp.concatenate([jnp.sum(R, axis=0)[None, :], inner], axis=0)


def fermi_hessian(theta, X, y, s, t, weight, strata: Strata, lam, alpha, binary: bool):
    """Exact Hessian of :func:`fermi_objective` with W* differentiated through, (pq, pq).

    The objective is ``f(theta) = Psi(theta, W*(theta))`` with ``W*`` the unconstrained
    maximiser, so ``f'' = Psi_tt - Psi_tW Psi_WW^{-1} Psi_Wt`` (implicit function
    theorem). ``Psi_tt`` at fixed W is ``sum_i (1, x_i)(1, x_i)^T (x) D_i`` with ``D_i``
    the per-sample logit Hessians (one weighted Gram matrix per pair of logits); the
    W-curvature ``Psi_WW`` is diagonal, ``-2 lam omega_t sum_{i in t} c_i F_ij / sum c``
    for every row r of block t; ``Psi_Wt`` is ``lam B`` with ``B^T = (1, X)^T M``, ``M_i``
    the per-sample logit Jacobian of the W-gradient's term. The Gram matrices and
    ``B^T`` come from ONE product of ``(1, X)^T`` with ``[D_i-weighted (1, X) | M]`` (a
    single pass over X; no autodiff through the data). Rows are flattened as
    ``theta.ravel()`` (row-major: coefficient a, logit b at ``a q + b``). Costs
    ``O(n p (p q (q + 1) / 2 + n_strata k l q))``.
    """
    p, q = theta.shape
    n_strata, k = strata.inv_sqrt_p.shape
    total = jnp.sum(weight)
    share = weight / total
    Z = scores(theta, X)
    F = probabilities(Z, binary)
    W = closed_form_w(F, s, t, weight, strata)
    D = _sample_curvature(Z, y, s, t, W, strata, lam, binary) * share[:, None, None]
    M = _w_gradient_logit_jacobian(Z, s, t, W, strata, binary) * share[:, None, None]
    m = M.shape[1]
    pairs = [(b, c) for b in range(q) for c in range(b, q)]
    columns = []
    for b, c in pairs:
        columns += [D[:, b, c][:, None], D[:, b, c][:, None] * X]
    columns.append(M.transpose(0, 2, 1).reshape(-1, q * m))
    products = _bordered_products(X, jnp.concatenate(columns, axis=1))  # (p, pairs p + q m)
    grams = {pair: products[:, j * p : (j + 1) * p] for j, pair in enumerate(pairs)}
    blocks = [[grams[(min(b, c), max(b, c))] for c in range(q)] for b in range(q)]
    H = jnp.stack([jnp.stack(row, axis=-1) for row in blocks], axis=-2)  # (p, p, q, q)
    H = H.transpose(0, 2, 1, 3).reshape(p * q, p * q)
    B_T = products[:, len(pairs) * p :].reshape(p * q, m)  # (p q, n_strata k l)
    diag = jax.ops.segment_sum(weight[:, None] * F, t, num_segments=n_strata) / total
    curvature = 2.0 * strata.omega[:, None] * diag  # (n_strata, l): |Psi_WW| / lam
    curvature = jnp.broadcast_to(curvature[:, None, :], (n_strata, k, curvature.shape[1]))
    curvature = jnp.where(curvature > 0, curvature, 1.0).reshape(-1)
    H = H + lam * (B_T / curvature) @ B_T.T
    ridge = jnp.concatenate([jnp.zeros(q), jnp.full((p - 1) * q, 1.0)]) * alpha
    return H + jnp.diag(ridge)


def device_scalar(value) -> jax.Array:
    """A float64 scalar on the device without compiling anything (call under
    ``jax.enable_x64``); the full-batch fit and the path pass lambda and alpha this way,
    so they share the compiled objective."""
    return jax.device_put(np.float64(value))


@partial(jax.jit, static_argnames="binary")
def fermi_value_and_grad(flat, X, y, s, t, weight, strata: Strata, lam, alpha, *, binary):
    """FERMI objective and its (Danskin) gradient at the flat parameter vector. A
    :class:`~fairest._kernels._placement.ShiftedRows` ``X`` (large data shared with the
    device, not copied) is read block by block: the gradient is formed in the logits and
    multiplied with ``X`` once (:func:`_shifted_value_and_grad`)."""
    shape = (X.shape[1] + 1, flat.shape[0] // (X.shape[1] + 1))
    if is_shifted(X):
        return _shifted_value_and_grad(
            flat.reshape(shape), X, y, s, t, weight, strata, lam, alpha, binary
        )

    def fun(v):
        return fermi_objective(v.reshape(shape), X, y, s, t, weight, strata, lam, alpha, binary)

    return jax.value_and_grad(fun)(flat)


def _shifted_value_and_grad(theta, X, y, s, t, weight, strata: Strata, lam, alpha, binary):
    """Value and flat gradient of the FERMI objective by the chain rule through the logits
    ``Z = X theta``: ``grad = (1, X)^T dZ + grad of the penalty``. Reverse mode through a
    row-block ``X @ theta`` would keep every block of ``X`` as a residual (a whole copy)."""
    Z = scores(theta, X)
    value, (dZ, d_theta) = jax.value_and_grad(fermi_objective_of_scores, argnums=(0, 1))(
        Z, theta, y, s, t, weight, strata, lam, alpha, binary
    )
    data = jnp.concatenate([jnp.sum(dZ, axis=0)[None, :], (dZ.T @ X).T], axis=0)
    return value, (d_theta + data).ravel()
