"""Truncated Newton (Newton-CG) for weighted, L2-regularised linear models with many features.

Same objective as :mod:`fairest._solvers._newton`. Where Newton with Cholesky pays
O(n p^2 + p^3) per step to form and factorise the Hessian, Newton-CG never forms it: each
step solves ``H d = -g`` approximately by conjugate gradients on Hessian-vector products,
O(n p) each, with a Jacobi preconditioner. The badr spec (section 2) asks for this path
when p is large (p > ~2000); ``pcg_solve`` is also the adjoint solve of the hypergradient
there.

The inner CG stops at the relative residual ``min(0.5, sqrt(||g||_inf))`` (the classic
forcing sequence, superlinear convergence), then an Armijo line search damps the step.
Everything is one ``lax.while_loop``: no host synchronisation.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from fairest._kernels._glm import (
    hessian_vector_product,
    objective,
    penalty_diagonal,
    scores,
)
from fairest._kernels._losses import loss_derivatives
from fairest._kernels._placement import is_shifted

__all__ = [
    "NewtonCGResult",
    "hessian_diagonal",
    "jacobi_preconditioner",
    "newton_cg_solve",
    "pcg_solve",
    "weighted_column_squares",
]

_ARMIJO = 1e-4
_MIN_STEP = 1e-10


class NewtonCGResult(NamedTuple):
    theta: jax.Array  # (p,) intercept first
    objective: jax.Array
    grad_norm: jax.Array  # ||grad F(theta)||_inf at the returned point
    n_iter: jax.Array  # Newton steps
    cg_iter: jax.Array  # Hessian-vector products spent in CG, all steps together
    converged: jax.Array


def pcg_solve(matvec, b, inverse_diagonal, rtol, max_iter):
    """Jacobi-preconditioned conjugate gradients for ``A x = b`` with ``A`` SPD.

    Starts at ``x = 0`` and stops when ``||A x - b||_2 <= rtol * ||b||_2`` or after
    ``max_iter`` products. Returns ``(x, number of products)``. ``rtol`` and
    ``max_iter`` may be traced.
    """
    threshold = (rtol * jnp.linalg.norm(b)) ** 2

    def body(state):
        x, r, z, d, rz, k = state
        Ad = matvec(d)
        step = rz / jnp.dot(d, Ad)
        x = x + step * d
        r = r - step * Ad
        z = inverse_diagonal * r
        rz_next = jnp.dot(r, z)
        d = z + (rz_next / rz) * d
        return x, r, z, d, rz_next, k + 1

    def keep_going(state):
        _, r, _, _, rz, k = state
        return (jnp.dot(r, r) > threshold) & (k < max_iter) & (rz > 0)

    z0 = inverse_diagonal * b
    init = (jnp.zeros_like(b), b, z0, z0, jnp.dot(b, z0), jnp.zeros((), jnp.int32))
    x, _, _, _, _, k = jax.lax.while_loop(keep_going, body, init)
    return x, k


def hessian_diagonal(loss: str, theta, X, y, c, alpha, penalize_intercept):
    """Diagonal of the Hessian, ``(sum_i q_i, sum_i q_i x_ij^2) + penalty``, in O(n p)."""
    _, _, d2 = loss_derivatives(loss, scores(theta, X), y)
    q = c * d2
    data = jnp.concatenate([jnp.sum(q)[None], weighted_column_squares(q, X)])
    return data + penalty_diagonal(loss, theta, alpha, penalize_intercept)


def weighted_column_squares(q, X):
    """``sum_i q_i x_ij^2`` for every column j: at once for a dense ``X``, row block by
    row block for a :class:`~fairest._kernels._placement.ShiftedRows` (a large unaligned
    float64 ``X`` read in place, which has products with vectors but no ``X * X``)."""
    if not is_shifted(X):
        return q @ (X * X)
    n, d = X.shape
    size = min(X.block_rows, n)

    def add_block(k, total):
        start = jnp.minimum(k * size, n - size)  # the last block clamped to the end
        fresh = start + jnp.arange(size) >= k * size  # rows no earlier block counted
        weights = jnp.where(fresh, jax.lax.dynamic_slice_in_dim(q, start, size), 0.0)
        block = X.rows(start, size)
        return total + weights @ (block * block)

    zeros = jnp.zeros(d, jnp.result_type(X.dtype, q))
    return jax.lax.fori_loop(0, -(-n // size), add_block, zeros)


def jacobi_preconditioner(loss: str, theta, X, y, c, alpha, penalize_intercept):
    """Inverse Hessian diagonal, 1 where the diagonal vanishes (e.g. squared hinge with no
    active sample and an unpenalised intercept)."""
    diagonal = hessian_diagonal(loss, theta, X, y, c, alpha, penalize_intercept)
    positive = diagonal > 0
    return jnp.where(positive, 1.0 / jnp.where(positive, diagonal, 1.0), 1.0)


def _value_and_grad(loss, theta, X, y, c, alpha, penalize_intercept):
    value, d1, _ = loss_derivatives(loss, scores(theta, X), y)
    r = c * d1
    pen = penalty_diagonal(loss, theta, alpha, penalize_intercept)
    f = jnp.sum(c * value) + 0.5 * jnp.sum(pen * theta**2)
    return f, jnp.concatenate([jnp.sum(r)[None], r @ X]) + pen * theta


class _State(NamedTuple):
    theta: jax.Array
    value: jax.Array
    grad: jax.Array
    threshold: jax.Array
    n_iter: jax.Array
    cg_iter: jax.Array
    done: jax.Array


@partial(jax.jit, static_argnames="loss")
def newton_cg_solve(
    loss: str,
    X,
    y,
    c,
    alpha,
    penalize_intercept,
    theta0,
    tol=1e-10,
    max_iter=100,
    cg_max_iter=500,
) -> NewtonCGResult:
    """Minimise the weighted regularised objective from ``theta0`` by Newton-CG.

    Stops when ``||grad||_inf <= tol * max(1, ||grad(theta0)||_inf)`` (the rule of
    :func:`fairest._solvers._newton.newton_solve`), when the line search cannot decrease F,
    or after ``max_iter`` Newton steps of at most ``cg_max_iter`` CG products each.
    """
    args = (X, y, c, alpha, penalize_intercept)

    def one_pass(state: _State) -> _State:
        value, grad = _value_and_grad(loss, state.theta, *args)
        grad_norm = jnp.max(jnp.abs(grad))
        threshold = jnp.where(state.n_iter == 0, tol * jnp.maximum(1.0, grad_norm), state.threshold)
        stop = (grad_norm <= threshold) | (state.n_iter >= max_iter) | state.done
        forcing = jnp.minimum(0.5, jnp.sqrt(grad_norm))
        hvp = partial(
            hessian_vector_product,
            loss,
            state.theta,
            X=X,
            y=y,
            c=c,
            alpha=alpha,
            penalize_intercept=penalize_intercept,
        )
        inverse_diagonal = jacobi_preconditioner(loss, state.theta, *args)
        cg_budget = jnp.where(stop, 0, cg_max_iter)
        direction, products = pcg_solve(hvp, -grad, inverse_diagonal, forcing, cg_budget)
        slope = jnp.dot(grad, direction)
        slack = 1e-15 * jnp.abs(value)

        def too_long(t):
            trial = objective(loss, state.theta + t * direction, *args)
            return (trial > value + _ARMIJO * t * slope + slack) & (t > _MIN_STEP)

        t0 = jnp.where(stop, 0.0, 1.0).astype(value.dtype)
        t = jax.lax.while_loop(lambda t: (t > 0) & too_long(t), lambda t: 0.5 * t, t0)
        stalled = ~stop & (t <= _MIN_STEP)
        return _State(
            theta=jnp.where(stop | stalled, state.theta, state.theta + t * direction),
            value=value,
            grad=grad,
            threshold=threshold,
            n_iter=state.n_iter + jnp.where(stop | stalled, 0, 1),
            cg_iter=state.cg_iter + products,
            done=stop | stalled,
        )

    zero = jnp.zeros((), theta0.dtype)
    count = jnp.zeros((), jnp.int32)
    init = _State(theta0, zero, jnp.zeros_like(theta0), zero, count, count, jnp.array(False))
    final = jax.lax.while_loop(lambda state: ~state.done, one_pass, init)
    grad_norm = jnp.max(jnp.abs(final.grad))
    return NewtonCGResult(
        theta=final.theta,
        objective=final.value,
        grad_norm=grad_norm,
        n_iter=final.n_iter,
        cg_iter=final.cg_iter,
        converged=grad_norm <= final.threshold,
    )
