"""Newton's method for the full-batch FERMI objective (spec ``ermi.md`` 5).

:class:`NewtonSolver` minimises ``L(theta) + lam ERMI(theta) + alpha/2 ||coef||^2`` at any
weight ``lam``, each solve started from the solved weight nearest to it moved along the
path's tangent: the estimator's full-batch fit (one weight, or the ``fairness_weight="auto"``
search over several) and :func:`newton_path` (``fairest.fairness_path``) use it. A Newton
iteration solves with the exact Hessian (:func:`~fairest.ermi._kernels.fermi_hessian`, W*
differentiated through; float32 Gram matrices, as the Hessian only steers) and backtracks
on the objective; it stops at ``||grad||_inf <= tol`` with the gradient of
:func:`~fairest.ermi._kernels.fermi_value_and_grad`, the stationarity test of
:func:`~fairest.ermi._solvers.full_batch_solve` (L-BFGS). Only that gradient kernel and
one Hessian program are compiled.

The Hessian has ``(p q)^2`` entries (``p = d + 1`` parameters per logit, ``q`` logits) and
costs a pass over a float32 copy of X per fresh one: :func:`newton_applies` says where
that pays (few parameters; the copy within a memory budget; one device).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from fairest.ermi._defaults import FULL_BATCH_TUNING
from fairest.ermi._kernels import Strata, device_scalar, fermi_hessian, fermi_value_and_grad

__all__ = ["NewtonPoint", "NewtonSolver", "newton_applies", "newton_path"]


def newton_applies(n_samples: int, n_features: int, n_logits: int) -> bool:
    """Whether :class:`NewtonSolver` is the full-batch solver for data of this shape."""
    from fairest.utils._devices import configured_devices

    params = (n_features + 1) * n_logits
    return (
        params <= FULL_BATCH_TUNING.newton_max_params
        and 4 * n_samples * n_features <= FULL_BATCH_TUNING.newton_max_bytes
        and configured_devices() is None  # the float32 copy lives on JAX's default device
    )


def gram_copy(X, length: int | None = None) -> jax.Array:
    """The float32 device copy of X that the Hessian's Gram matrices read (dense; a scipy
    sparse X is densified, :func:`newton_applies` bounds its size), padded with zero rows
    to ``length`` rows (those of the padded device rows, weight 0 there)."""
    if hasattr(X, "toarray"):
        X = X.toarray()
    X = np.asarray(X, dtype=np.float32)
    if length is not None and length > X.shape[0]:
        X = np.concatenate([X, np.zeros((length - X.shape[0], X.shape[1]), np.float32)])
    return jax.device_put(X)  # host cast: nothing to compile


class NewtonPoint(NamedTuple):
    """One weight's outcome in :func:`newton_path` (numpy values)."""

    theta: np.ndarray  # (d + 1, q)
    objective: float
    grad_norm: float  # infinity norm of the final gradient
    n_iter: int  # Newton iterations
    converged: bool  # grad_norm <= tol


@partial(jax.jit, static_argnames="binary")
def _fermi_hessian(flat, X32, y, s, t, weight, strata: Strata, lam, alpha, *, binary):
    """:func:`~fairest.ermi._kernels.fermi_hessian` in float32 (``X32``: X in float32),
    returned in float64: the Hessian only steers Newton's steps (every pass over the data
    reads half the bytes); the gradient that decides convergence stays float64."""
    shape = (X32.shape[1] + 1, flat.shape[0] // (X32.shape[1] + 1))
    low = jnp.float32
    strata = Strata(*(a.astype(low) for a in strata))
    H = fermi_hessian(
        flat.reshape(shape).astype(low),
        X32,
        y,
        s,
        t,
        weight.astype(low),
        strata,
        lam.astype(low),
        alpha.astype(low),
        binary,
    )
    return H.astype(jnp.float64)


def _newton_direction(H, g):
    """``-H^{-1} g`` by Cholesky; where H is not positive definite (the ERMI term is not
    convex) ``-|H|^{-1} g``, every eigenvalue replaced by its magnitude floored at 1e-10 of
    the largest (saddle-free Newton)."""
    try:
        return -scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), g)
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(H)
        magnitude = np.maximum(np.abs(values), 1e-10 * np.max(np.abs(values)))
        return -vectors @ ((vectors.T @ g) / magnitude)


def _logit_centering(p: int, q: int) -> np.ndarray | None:
    """Projector (pq, pq) onto parameters whose every row sums to zero over the logits;
    None for one logit. A softmax model is unchanged when a row moves along the ones
    (the intercept row, unpenalised, leaves the Hessian singular there); the gradient is
    always in this subspace, so L-BFGS from zeros stays in it, and Newton's steps are
    projected on it to reach the same minimiser."""
    if q == 1:
        return None
    return np.kron(np.eye(p), np.eye(q) - 1.0 / q)


def _restricted_hessian(H, projector):
    """``P H P`` on the subspace and a multiple of the identity on its complement, so a
    solve with it never moves along the complement."""
    if projector is None:
        return H
    complement = np.eye(H.shape[0]) - projector
    return projector @ H @ projector + np.max(np.abs(np.diag(H))) * complement


_STALL = 5  # Newton iterations without a new smallest gradient norm before giving up
_KEEP = 0.25  # a Hessian is kept (BFGS-updated) after a full step shrinking ||g|| this much


def _bfgs_update(H, step, change):
    """``H`` corrected by the BFGS formula to ``H_new step = change`` (the gradient change
    along the step); None when the curvature ``step . change`` is not positive (a fresh
    Hessian is then needed). Keeps the logit-centred subspace of a restricted Hessian."""
    curvature = float(step @ change)
    Hs = H @ step
    sHs = float(step @ Hs)
    if curvature <= 0 or sHs <= 0:
        return None
    return H - np.outer(Hs, Hs) / sHs + np.outer(change, change) / curvature


def _newton_solve(flat, start, value_and_grad, hessian, tol, max_iter, projector=None):
    """Newton's method with Armijo backtracking from ``flat`` (``start``: its objective and
    gradient); stops at ``||g||_inf <= tol``, after ``max_iter`` iterations or when no
    step decreases the objective or the gradient norm stops shrinking (the float32
    Hessian's accuracy reached: the caller finishes with L-BFGS); steps are projected by
    ``projector`` (softmax). After a full step that shrinks the gradient norm by
    ``_KEEP`` the Hessian is kept for the next iteration, corrected by a BFGS update
    along the step (quasi-Newton between exact Hessians: a fresh one costs a Gram
    matrix over the data, an update nothing); otherwise, or when a kept Hessian gives
    no decrease, a fresh one is computed. Returns ``(flat, f, g, n_iter, H)`` with H the
    last Hessian used (None if none)."""
    f, g = start
    H, n_iter, keep, fresh = None, 0, False, False
    best, stalled = np.inf, 0  # stop after STALL iterations without a smaller gradient
    while np.max(np.abs(g)) > tol and n_iter < max_iter and stalled < _STALL:
        if not keep:
            H, fresh = hessian(flat), True
        step = _newton_direction(H, g)
        if projector is not None:
            step = projector @ step
        slope = float(g @ step)
        size = 1.0
        while slope < 0 and size > 1e-10:
            f_new, g_new = value_and_grad(flat + size * step)
            if f_new <= f + 1e-4 * size * slope:
                break
            size *= 0.5
        else:
            if not fresh:  # a kept (updated) Hessian: retry with a fresh one
                keep = False
                continue
            break  # no decrease left (rounding level) or not a descent direction
        keep = size == 1.0 and np.max(np.abs(g_new)) <= _KEEP * np.max(np.abs(g))
        if keep:
            updated = _bfgs_update(H, step, g_new - g)
            keep, H = updated is not None, H if updated is None else updated
        fresh = False
        flat, f, g, n_iter = flat + size * step, f_new, g_new, n_iter + 1
        best, stalled = (np.max(np.abs(g)), 0) if np.max(np.abs(g)) < best else (best, stalled + 1)
    return flat, f, g, n_iter, H


class NewtonSolver:
    """FERMI minimisers at any weights (call under ``jax.enable_x64``; device arrays in).

    ``rows`` are ``(X, y, s, t, weight)`` as the objective reads them and ``X_gram`` the
    float32 copy of :func:`gram_copy`. :meth:`solve` starts from the solved weight
    nearest to the new one (on a log scale) moved along the tangent
    ``d theta / d lam = -H^{-1} grad ERMI`` (kept only where it lowers the new
    objective), or from ``theta0`` before any.
    """

    def __init__(self, theta0, rows, X_gram, strata: Strata, alpha, tol, max_iter, *, binary):
        self.shape = theta0.shape
        self.theta0 = np.asarray(theta0, dtype=np.float64).ravel()
        self.args = (*rows, strata)
        self.X_gram = X_gram
        self.alpha = device_scalar(alpha)
        self.tol, self.max_iter, self.binary = tol, max_iter, binary
        self.projector = _logit_centering(*theta0.shape)
        self.solved = []  # [lam, flat, objective, gradient, Hessian or None], oldest first

    def value_and_grad_at(self, lam):
        lam = device_scalar(lam)

        def value_and_grad(flat):
            value, grad = fermi_value_and_grad(
                jax.device_put(flat), *self.args, lam, self.alpha, binary=self.binary
            )
            return float(value), np.asarray(grad, dtype=np.float64)

        return value_and_grad

    def hessian_at(self, lam):
        lam = device_scalar(lam)
        rest = self.args[1:]
        return lambda flat: _restricted_hessian(
            np.asarray(
                _fermi_hessian(
                    jax.device_put(flat), self.X_gram, *rest, lam, self.alpha, binary=self.binary
                )
            ),
            self.projector,
        )

    def _nearest(self, lam):
        """The solved point nearest to ``lam`` on a log scale (the newest among ties)."""
        if not self.solved:
            return None
        distance = [abs(np.log((lam + 1e-3) / (point[0] + 1e-3))) for point in self.solved]
        return self.solved[len(distance) - 1 - int(np.argmin(distance[::-1]))]

    def solve(self, lam, tol=None, after_last: bool = False) -> NewtonPoint:
        """The minimiser at ``lam`` (from the nearest solved weight, or the last one solved
        with ``after_last``), solved to ``||grad||_inf <= tol`` (default the solver's)."""
        lam = float(lam)
        tol = self.tol if tol is None else tol
        base = self.solved[-1] if after_last and self.solved else self._nearest(lam)
        value_and_grad = self.value_and_grad_at(lam)
        H = None
        if base is None:
            flat, start = self.theta0, value_and_grad(self.theta0)
        else:
            base_lam, flat, f, g, H = base
            if H is not None and lam != base_lam:
                flat, start = _tangent_start(
                    flat, (f, g), base_lam, lam, H, self.value_and_grad_at, self.projector
                )
            else:
                start = (f, g) if lam == base_lam else value_and_grad(flat)
        flat, f, g, n_iter, H_last = _newton_solve(
            flat,
            start,
            value_and_grad,
            self.hessian_at(lam),
            tol,
            self.max_iter,
            self.projector,
        )
        H = H_last if H_last is not None else H
        for point in self.solved[: -FULL_BATCH_TUNING.kept_hessians + 1]:
            point[4] = None  # older points keep no Hessian
        self.solved.append([lam, flat, f, g, H])
        grad_norm = float(np.max(np.abs(g)))
        return NewtonPoint(flat.reshape(self.shape), f, grad_norm, n_iter, grad_norm <= tol)


def newton_path(
    lams, theta0, X, y, s, t, weight, strata: Strata, alpha, tol, max_iter, *, binary
) -> list[NewtonPoint]:
    """The FERMI minimiser at every weight of ``lams`` (in that order), by Newton's method
    continued along the sorted weights (:class:`NewtonSolver`): the first (smallest)
    weight starts from ``theta0``, every next one from the previous minimiser moved along
    the path's tangent. Call under ``jax.enable_x64``; device arrays in."""
    solver = NewtonSolver(
        theta0, (X, y, s, t, weight), gram_copy(X), strata, alpha, tol, max_iter, binary=binary
    )
    points = {}
    for k in np.argsort(lams, kind="stable"):
        points[k] = solver.solve(float(lams[k]), after_last=True)
    return [points[k] for k in range(len(lams))]


def _tangent_start(flat, known, lam, lam_next, H, value_and_grad_at, projector=None):
    """The start at ``lam_next`` from the minimiser ``flat`` at ``lam`` (``known``: its
    objective and gradient there): ``flat`` moved along the tangent ``-H^{-1} grad ERMI``
    if that lowers the objective, else ``flat``; returned with its ``(objective,
    gradient)`` at ``lam_next``. The objective is affine in the weight: one more
    evaluation at ``flat`` (weight 0, or 1 when ``lam`` is 0) gives the ERMI term and the
    objective at ``flat`` for every weight."""
    f_lam, g_lam = known
    if lam > 0:
        f0, g0 = value_and_grad_at(0.0)(flat)
        f_ermi, g_ermi = (f_lam - f0) / lam, (g_lam - g0) / lam
    else:
        f0, g0 = f_lam, g_lam
        f1, g1 = value_and_grad_at(1.0)(flat)
        f_ermi, g_ermi = f1 - f0, g1 - g0
    here = (f0 + lam_next * f_ermi, g0 + lam_next * g_ermi)
    tangent = _newton_direction(H, g_ermi)
    if projector is not None:
        tangent = projector @ tangent
    moved = flat + (lam_next - lam) * tangent
    there = value_and_grad_at(lam_next)(moved)
    return (moved, there) if there[0] < here[0] else (flat, here)
