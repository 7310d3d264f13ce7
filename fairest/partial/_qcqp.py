"""Euclidean projection onto an intersection of a few convex quadratic constraints.

The pairwise baselines (spec sections 8.1-8.5) project onto

    F = {w : g_k(w) = 1/2 w^T Q_k w + q_k^T w + c_k <= kappa, k = 1..m},

with ``Q_k`` positive semidefinite and ``m`` small (one constraint per ordered pair of
groups). Every ``g_k`` is a pairwise average of ``(1 + s_i - s_j)^2 / 2`` over two sample
sets ``A``, ``B``, which expands into the sets' weighted first and second moments, so the
forms are built once per fit from per-cell (group x label) sums, in ``O(n p^2)``, never
from pairs (spec section 8.4).

Exact projection through the dual. For multipliers ``mu >= 0`` the Lagrangian
``1/2 ||w - v||^2 + sum_k mu_k (g_k(w) - kappa)`` is minimised by

    w(mu) = (I + sum_k mu_k Q_k)^{-1} (v - sum_k mu_k q_k),

and the dual ``d(mu)`` is concave and smooth, with gradient ``g(w(mu)) - kappa`` and
Hessian ``-A H^{-1} A^T`` (rows of ``A``: the constraint gradients ``Q_k w + q_k`` at
``w(mu)``, ``H = I + sum_k mu_k Q_k``). It is maximised over ``mu >= 0`` by projected
Newton with an Armijo search along the projection arc [1]_; each dual evaluation is one
``p x p`` Cholesky solve. The result is checked: the largest constraint violation and the
projected dual gradient below ``rtol (1 + |kappa| + max |c_k|)``.

The cvxpy + Clarabel reference projection (spec section 8.5) of the same forms is kept in
:func:`clarabel_projector`.

References
----------
.. [1] Bertsekas, D. P. "Projected Newton methods for optimization problems with simple
   constraints", SIAM J. Control Optim. 20(2), 221-246, 1982.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_factor, cho_solve

# Relative accuracy of the exact projection: constraint violation and projected dual
# gradient below RTOL (1 + |kappa| + max |c_k|) (spec section 8.5 asks 1e-6 of fmincon /
# Clarabel; Newton reaches 1e-12 at negligible cost).
RTOL = 1e-12
# Accepted after a stalled line search (rounding floor): projected dual gradient (violation
# and complementarity) to this relative level.
STALL_RTOL = 1e-8
STALL_STEPS = 20  # Newton steps without a lower projected gradient before stopping
MAX_NEWTON = 300  # Newton steps; degenerate F (no Slater point) needs ~1.5x growth per step
ARMIJO = 1e-4
ROUNDING = 1e-14  # relative rounding level of the dual value
BINDING_EPS = 1e-3  # Bertsekas' epsilon of the binding set
MIN_STEP = 1e-12


class QuadraticForms(NamedTuple):
    """Constraints ``1/2 w^T Q_k w + q_k^T w + c_k <= kappa``, stacked over ``k``.

    ``factors[k] @ factors[k].T == hessians[k]`` (eigen factor, negative rounding
    eigenvalues clipped to zero, so both projections see the same PSD forms).
    """

    hessians: np.ndarray  # (m, p, p)
    linear: np.ndarray  # (m, p)
    constant: np.ndarray  # (m,)
    factors: np.ndarray  # (m, p, p)


def cell_moments(X, weights, cells, n_cells):
    """Weighted count, first and second moment sums of ``X`` in every cell.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    weights : ndarray of shape (n,)
    cells : ndarray of shape (n,)
        Integer cell code of every sample, in ``0 .. n_cells - 1``.
    n_cells : int

    Returns
    -------
    counts : ndarray of shape (n_cells,)
        Sum of the weights per cell.
    first : ndarray of shape (n_cells, p)
        ``sum_i w_i x_i`` per cell.
    second : ndarray of shape (n_cells, p, p)
        ``sum_i w_i x_i x_i^T`` per cell.
    """
    onehot = (cells[:, None] == np.arange(n_cells)[None, :]) * weights[:, None]  # (n, C)
    counts = onehot.sum(axis=0)
    first = onehot.T @ X
    # every sample lies in one cell: the per-cell products cost n p^2 in all
    second = np.stack(
        [X[cells == c].T @ (X[cells == c] * weights[cells == c, None]) for c in range(n_cells)]
    )
    return counts, first, second


def pairwise_forms(moments, constraints, offset):
    """Quadratic forms of the pairwise constraints from per-cell moment sums.

    Constraint ``k`` is ``sum_t mean_{i in A_t, j in B_t} (1 + s_i - s_j)^2 / 2 - offset``
    with ``s = X w + b`` (the intercept cancels). One term is
    ``1/2 + (m_A - m_B)^T w + 1/2 w^T (E_A[x x^T] + E_B[x x^T] - m_A m_B^T - m_B m_A^T) w``.

    Parameters
    ----------
    moments : tuple
        Output of :func:`cell_moments`.
    constraints : list of list of (cells_A, cells_B)
        For every constraint, its terms; a set is a union of cells.
    offset : float
        Subtracted from every constraint.

    Returns
    -------
    QuadraticForms

    Raises
    ------
    ValueError
        When a set has zero total weight.
    """
    counts, first, second = moments
    cells = [list(c) for terms in constraints for pair in terms for c in pair]
    select = np.zeros((len(cells), counts.size))
    for row, members in enumerate(cells):
        select[row, members] = 1.0
    totals = select @ counts
    if np.any(totals <= 0):
        raise ValueError("empty sample set")
    means = (select @ first) / totals[:, None]
    seconds = np.einsum("sc,cij->sij", select, second) / totals[:, None, None]
    sizes = [len(terms) for terms in constraints]
    owner = np.repeat(np.arange(len(constraints)), sizes)  # constraint of every term
    mean_a, mean_b = means[0::2], means[1::2]
    hess = (
        seconds[0::2]
        + seconds[1::2]
        - np.einsum("ti,tj->tij", mean_a, mean_b)
        - np.einsum("ti,tj->tij", mean_b, mean_a)
    )
    m = len(constraints)
    hessians = np.zeros((m,) + hess.shape[1:])
    np.add.at(hessians, owner, hess)
    linear = np.zeros((m, means.shape[1]))
    np.add.at(linear, owner, mean_a - mean_b)
    constant = 0.5 * np.asarray(sizes, dtype=float) - offset
    values, vectors = np.linalg.eigh(0.5 * (hessians + hessians.transpose(0, 2, 1)))
    factors = vectors * np.sqrt(np.clip(values, 0.0, None))[:, None, :]
    hessians = factors @ factors.transpose(0, 2, 1)
    return QuadraticForms(hessians, linear, constant, factors)


def constraint_values(forms: QuadraticForms, w):
    """``g_k(w)`` for every constraint, shape (m,)."""
    quad = 0.5 * np.einsum("kij,i,j->k", forms.hessians, w, w)
    return quad + forms.linear @ w + forms.constant


def _lagrangian_minimiser(v, forms, mu):
    """``w(mu)`` and the Cholesky factor of ``I + sum mu_k Q_k``."""
    H = np.tensordot(mu, forms.hessians, axes=1)
    H[np.diag_indices_from(H)] += 1.0
    factor = cho_factor(H, check_finite=False)
    return cho_solve(factor, v - mu @ forms.linear, check_finite=False), factor


def _dual_point(v, forms, tolerance, mu):
    """(w(mu), Cholesky factor, dual gradient g(w) - kappa, dual value d(mu))."""
    w, factor = _lagrangian_minimiser(v, forms, mu)
    slack = constraint_values(forms, w) - tolerance
    gap = w - v
    return w, factor, slack, 0.5 * gap @ gap + mu @ slack


def _projected_gradient(mu, slack):
    return np.where(mu > 0, slack, np.maximum(slack, 0.0))


def project(
    v, forms: QuadraticForms, tolerance, multipliers=None, *, rtol=RTOL, max_iter=MAX_NEWTON
):
    """Exact Euclidean projection of ``v`` onto ``{w : g_k(w) <= tolerance for all k}``.

    Parameters
    ----------
    v : ndarray of shape (p,)
        Point to project.
    forms : QuadraticForms
        The constraints.
    tolerance : float
        Bound ``kappa`` of every constraint.
    multipliers : ndarray of shape (m,), default=None
        Warm start of the dual (e.g. the previous projection's); zeros when ``None``.
    rtol : float, default=1e-12
        Relative accuracy (module docstring).
    max_iter : int, default=300
        Maximum number of Newton steps.

    Returns
    -------
    w : ndarray of shape (p,)
        The projection (``v`` itself, copied, when ``v`` is feasible).
    multipliers : ndarray of shape (m,)
        Optimal dual multipliers.
    n_iter : int
        Newton steps taken.

    Raises
    ------
    RuntimeError
        When no feasible point is reached (empty feasible set, or failed Newton).
    """
    v = np.asarray(v, dtype=float)
    m = forms.constant.size
    scale = 1.0 + abs(tolerance) + np.abs(forms.constant).max(initial=0.0)
    if np.all(constraint_values(forms, v) - tolerance <= 0.0):
        return v.copy(), np.zeros(m), 0
    mu = np.zeros(m) if multipliers is None else np.maximum(np.asarray(multipliers, float), 0)
    w, factor, slack, dual = _dual_point(v, forms, tolerance, mu)
    best = (np.inf, w, mu, 0)  # smallest projected dual gradient seen
    for it in range(max_iter):
        residual = np.abs(_projected_gradient(mu, slack)).max()
        if residual <= rtol * scale:
            return w, mu, it
        if residual < best[0]:
            best = (residual, w, mu, it)
        elif it - best[3] > STALL_STEPS:
            break  # no progress: rounding floor of a degenerate problem
        # Bertsekas' binding set: at (or within eps of) zero with the gradient pointing out
        eps = min(BINDING_EPS, np.abs(mu - np.maximum(mu + slack, 0.0)).max())
        binding = (mu <= eps) & (slack < 0)
        free = ~binding
        direction = slack.copy()  # gradient ascent on the binding ones (they go to zero)
        if free.any():
            grads = np.einsum("kij,j->ki", forms.hessians[free], w) + forms.linear[free]
            curvature = grads @ cho_solve(factor, grads.T, check_finite=False)
            # regularised Newton: the ridge vanishes with the residual (superlinear rate)
            # and keeps the step bounded when the gradients are dependent (m > p, or
            # q_k = -q_k' at w = 0)
            size = np.trace(curvature) / free.sum() + 1e-300
            ridge = size * (1e-14 + min(1.0, residual / scale))
            direction[free] = np.linalg.solve(curvature + ridge * np.eye(free.sum()), slack[free])
        step = 1.0
        while step >= MIN_STEP:
            trial = np.maximum(mu + step * direction, 0.0)
            point = _dual_point(v, forms, tolerance, trial)
            model = step * slack[free] @ direction[free] + slack[binding] @ (trial - mu)[binding]
            if point[3] >= dual + ARMIJO * model:
                break
            # at the rounding floor of d the Armijo test is noise: take a step that keeps
            # d within rounding and lowers the projected gradient
            flat = point[3] >= dual - ROUNDING * (abs(dual) + 1.0)
            if flat and np.abs(_projected_gradient(trial, point[2])).max() < residual:
                break
            step *= 0.5
        else:
            break  # no ascent left at the rounding floor
        mu = trial
        w, factor, slack, dual = point
    residual = np.abs(_projected_gradient(mu, slack)).max()
    if residual < best[0]:
        best = (residual, w, mu, it + 1)
    residual, w, mu, it = best
    if residual <= STALL_RTOL * scale:
        return w, mu, it
    raise RuntimeError(
        f"projection failed: constraint violation {np.max(slack):.3g} after "
        f"{it} Newton steps (is the feasible set empty?)"
    )


def clarabel_projector(forms: QuadraticForms, tolerance, tol):
    """cvxpy + Clarabel projection onto the same set (the spec's reference path).

    The quadratic terms are written as ``sum_squares(L_k^T w)`` (spec section 8.5).

    Returns
    -------
    callable
        ``project(v) -> w``; raises ``RuntimeError`` when Clarabel returns no solution.
    """
    import cvxpy as cp

    p = forms.linear.shape[1]
    w = cp.Variable(p)
    z = cp.Parameter(p)
    cons = [
        0.5 * cp.sum_squares(L.T @ w) + q @ w + c <= float(tolerance)
        for L, q, c in zip(forms.factors, forms.linear, forms.constant)
    ]
    problem = cp.Problem(cp.Minimize(cp.sum_squares(w - z)), cons)

    def solve(v):
        z.value = np.asarray(v, dtype=float)
        problem.solve(solver=cp.CLARABEL, tol_feas=tol, tol_gap_abs=tol, tol_gap_rel=tol)
        if w.value is None:
            raise RuntimeError(f"projection failed: {problem.status}")
        return np.asarray(w.value)

    return solve
