"""Damped Newton solver for weighted, L2-regularised linear models.

Minimises ``F(theta) = sum_i c_i l(b + x_i^T w, y_i) + R(theta)`` for the logistic, squared
hinge (generalised Hessian) and squared error losses of :mod:`fairest._kernels._losses`.
Each iteration assembles the Hessian in one pass (O(n p^2)), factorises it with Cholesky
(O(p^3)) and backtracks along the Newton direction (Armijo). The whole loop is one
``lax.while_loop``: no host synchronisation per iteration.

Why Newton: BADR's lower level needs solutions to ~1e-10 (its hypergradient is only as
exact as the inner solve, badr spec section 2) and the Cholesky factor of the last Hessian
for the adjoint solve; quadratic convergence gets there in a handful of passes where
first-order methods need hundreds. ``benchmarks/erm_vs_sklearn.py`` measures it.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve

from fairest._kernels._glm import value_grad_hessian

__all__ = [
    "NewtonResult",
    "armijo_backtrack",
    "descent_direction",
    "newton_solve",
]

_ARMIJO = 1e-4
_MIN_STEP = 1e-10
# A predicted last step is taken when kappa ||g||^2 is this far below the threshold.
PREDICTION_MARGIN = 0.25
# Gradients below this fraction of the threshold are rounding noise: no contraction measured.
NOISE_FLOOR = 1e-3


class NewtonResult(NamedTuple):
    theta: jax.Array  # (p,) intercept first
    objective: jax.Array  # F at the last evaluated point (theta, unless ``unverified``)
    grad_norm: jax.Array  # ||grad F||_inf at the last evaluated point
    cholesky: jax.Array  # lower Cholesky factor of the Hessian at the last evaluated point
    n_iter: jax.Array
    converged: jax.Array  # False when ``unverified``: the caller checks theta's gradient
    threshold: jax.Array  # the stopping threshold on ||grad F||_inf
    unverified: jax.Array  # theta is a predicted last step, its gradient not evaluated
    contraction: jax.Array  # largest ||g_next|| / ||g||^2 seen over full steps (0: none)


class _State(NamedTuple):
    theta: jax.Array  # last accepted point
    value: jax.Array  # F, gradient and Cholesky factor at ``theta``
    grad: jax.Array
    cholesky: jax.Array
    direction: jax.Array  # Newton direction at ``theta``
    step: jax.Array  # step of the next trial point ``theta + step * direction``
    threshold: jax.Array  # stopping threshold, fixed at the first pass
    n_iter: jax.Array  # Newton steps taken (accepted trial points)
    started: jax.Array  # False until theta0 has been evaluated
    done: jax.Array
    contraction: jax.Array  # largest observed ||g_next||_inf / ||g||_inf^2 of a full step
    unverified: jax.Array  # theta was reached by a predicted last step, not evaluated


def _cholesky(hessian):
    """Cholesky with a tiny relative jitter, for Hessians that are only PSD."""
    jitter = 1e-12 * (1.0 + jnp.max(jnp.abs(jnp.diag(hessian))))
    return jnp.linalg.cholesky(hessian + jitter * jnp.eye(hessian.shape[0], dtype=hessian.dtype))


@partial(jax.jit, static_argnames="loss")
def newton_solve(
    loss: str,
    X,
    y,
    c,
    alpha,
    penalize_intercept,
    theta0,
    tol=1e-10,
    max_iter=100,
    X_hessian=None,
    contraction=None,
) -> NewtonResult:
    """Minimise the weighted regularised objective from ``theta0``.

    Stops when ``||grad||_inf <= tol * max(1, ||grad(theta0)||_inf)``, when a line search
    cannot decrease F any more (machine precision), or after ``max_iter`` Newton steps.
    ``alpha``, ``penalize_intercept`` (0.0/1.0), ``tol`` and ``max_iter`` are traced.
    ``X_hessian`` (optional float32 copy of ``X``) makes the O(n d^2) Hessian block cheaper;
    the returned Cholesky factor is then that of the approximate Hessian.

    One loop, one pass over the data per trial point: each pass evaluates F, its gradient
    and Hessian at ``theta + step * direction``. An accepted trial (Armijo) becomes the
    new point, whose factor gives the next direction (full step first); a rejected one
    halves the step (backtracking, rare for these losses). A Newton step therefore costs
    one kernel pass, and the loop is one ``lax.while_loop`` with the kernel traced (and
    compiled) once: no nested line-search loop, no host synchronisation.

    ``contraction`` (optional, traced) enables a predicted last step. Newton converges
    quadratically, ``||g_next|| <= kappa ||g||^2``; with ``kappa`` the larger of
    ``contraction`` and the ratios observed in this solve, when ``kappa ||g||^2`` is below
    ``PREDICTION_MARGIN`` times the threshold the loop takes the full step and stops
    WITHOUT evaluating the new point (``unverified``): one pass fewer per solve. The
    caller must then check the gradient at ``theta`` (BADR's adjoint pass computes it
    anyway) and resume if it is too large.
    """
    args = (X, y, c, alpha, penalize_intercept)
    predict = contraction is not None

    def one_pass(state: _State) -> _State:
        trial = state.theta + state.step * state.direction
        value, grad, hessian = value_grad_hessian(loss, trial, *args, X_hessian)
        slack = 1e-15 * jnp.abs(state.value)  # rounding noise of F near the optimum
        decrease = _ARMIJO * state.step * jnp.dot(state.grad, state.direction)
        armijo = value <= state.value + decrease + slack
        accept = ~state.started | armijo
        grad_norm = jnp.max(jnp.abs(grad))
        threshold = jnp.where(state.started, state.threshold, tol * jnp.maximum(1.0, grad_norm))
        n_iter = state.n_iter + jnp.where(accept & state.started, 1, 0)
        factor = _cholesky(hessian)
        direction = -cho_solve((factor, True), grad)
        converged = grad_norm <= threshold
        stop = accept & (converged | (n_iter >= max_iter))
        half = 0.5 * state.step
        stalled = ~accept & (half <= _MIN_STEP)
        full_step = accept & state.started & (state.step == 1.0)
        previous = jnp.max(jnp.abs(state.grad))
        measurable = full_step & (grad_norm >= NOISE_FLOOR * threshold)  # not rounding noise
        observed = jnp.where(measurable, grad_norm / previous**2, 0.0)
        observed = jnp.maximum(state.contraction, observed)
        predicted = jnp.array(False)
        if predict:
            kappa = jnp.maximum(contraction, observed)
            predicted = accept & ~stop & (kappa * grad_norm**2 <= PREDICTION_MARGIN * threshold)
        pick = partial(jnp.where, accept)
        return _State(
            theta=jnp.where(predicted, trial + direction, pick(trial, state.theta)),
            value=pick(value, state.value),
            grad=pick(grad, state.grad),
            cholesky=pick(factor, state.cholesky),
            direction=pick(direction, state.direction),
            step=pick(jnp.ones_like(half), half),
            threshold=threshold,
            n_iter=n_iter + jnp.where(predicted, 1, 0),
            started=jnp.array(True),
            done=stop | stalled | predicted,
            contraction=observed,
            unverified=predicted,
        )

    zero = jnp.zeros((), theta0.dtype)
    init = _State(
        theta=theta0,
        value=zero,
        grad=jnp.zeros_like(theta0),
        cholesky=jnp.zeros((theta0.size, theta0.size), theta0.dtype),
        direction=jnp.zeros_like(theta0),
        step=zero,
        threshold=zero,
        n_iter=jnp.zeros((), jnp.int32),
        started=jnp.array(False),
        done=jnp.array(False),
        contraction=zero,
        unverified=jnp.array(False),
    )
    final = jax.lax.while_loop(lambda state: ~state.done, one_pass, init)
    grad_norm = jnp.max(jnp.abs(final.grad))
    return NewtonResult(
        theta=final.theta,
        objective=final.value,
        grad_norm=grad_norm,
        cholesky=final.cholesky,
        n_iter=final.n_iter,
        converged=~final.unverified & (grad_norm <= final.threshold),
        threshold=final.threshold,
        unverified=final.unverified,
        contraction=final.contraction,
    )


def descent_direction(grad, solve):
    """Newton direction ``-solve(grad)`` for any direction solve (Cholesky, LU, PCG...),
    or the steepest descent ``-grad`` where it is not a descent direction; returns
    ``(direction, slope)`` with ``slope = grad . direction < 0`` (unless ``grad = 0``)."""
    direction = -solve(grad)
    slope = grad @ direction
    descent = slope < 0
    return jnp.where(descent, direction, -grad), jnp.where(descent, slope, -(grad @ grad))


def armijo_backtrack(value_at, value, slope, armijo=_ARMIJO, max_halvings=40):
    """Step ``t`` in ``1, 1/2, 1/4, ...`` (at least ``2**-max_halvings``): the first with
    ``value_at(t) <= value + armijo t slope`` (one ``lax.while_loop``, jittable)."""

    def needs_backtrack(carry):
        t, trial = carry
        return ~(trial <= value + armijo * t * slope) & (t > 2.0**-max_halvings)

    def halve(carry):
        t = 0.5 * carry[0]
        return t, value_at(t)

    one = jnp.ones((), jnp.result_type(value))
    t, _ = jax.lax.while_loop(needs_backtrack, halve, (one, value_at(one)))
    return t
