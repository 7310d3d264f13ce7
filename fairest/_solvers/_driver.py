"""The one host-level driver for weighted, L2-regularised linear models (ERM).

:func:`solve_weighted_glm` puts the data on the device once (no padding copy for large
data, :func:`fairest._kernels._buckets.padded_rows`) and picks the solver from the loss
and the shape (:func:`choose_solver`):

- ``"newton"``: damped Newton with Cholesky (:func:`~fairest._solvers._newton.newton_solve`)
  where the p x p Hessian is cheap next to a pass over the data (few features or few
  rows), and for the squared error (one Newton step is exact);
- ``"lbfgs"``: SciPy's L-BFGS-B on the jitted value and gradient
  (:func:`~fairest._solvers._lbfgs.lbfgs_solve`) where the O(n p^2) Hessian would
  dominate. L-BFGS stalls where F's rounding noise hides further decrease (a gradient of
  about 1e-8 for F of order one); when ``tol`` asks for less, it stops at a relative
  gradient of ``LBFGS_HANDOFF_TOL`` and ONE Newton step from its point
  (:func:`newton_polish`, the Hessian summed over float32 row blocks, no copy of X)
  finishes the solve with Newton's quadratic convergence. On a multi-core CPU the L-BFGS
  passes over large dense X are split by rows over the cores
  (:mod:`fairest._solvers._row_split`); the polish is not: its float32 Hessian blocks
  already run on XLA's intra-op threads, and splitting both is slower than neither;
- ``"newton-cg"``: above ``SOLVER_TUNING.newton_cg_min_params`` parameters (Hessian never
  formed).

Sparse ``X`` (scipy CSR / CSC / COO) goes to the device as a
:class:`~fairest._kernels._sparse.SparseRows` (O(nnz), never densified) and runs through
the same kernels. Its Hessian block is either densified one row block at a time, O(n d^2)
flops, or summed from per-row outer products, O(n k^2) scattered adds for rows of at most k
entries (one-hot data: k is the number of encoded columns, d the number of categories), so
sparse input gets ``"lbfgs"`` unless a Newton pass costs at most
``SOLVER_TUNING.sparse_newton_max_work`` (:func:`sparse_newton_work`), and L-BFGS's stalled end is
finished by Newton-CG (Hessian-vector products, O(nnz) each) instead of a Newton step.

Every path minimises the same objective to the same stopping rule,
``||grad F||_inf <= tol * max(1, ||grad F(theta0)||_inf)``.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve

from fairest._kernels._buckets import pad_rows_to, padded_rows
from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._glm import blocked_hessian, value_and_grad, value_grad_hessian
from fairest._kernels._placement import place_dense
from fairest._kernels._sparse import SparseRows, is_sparse, sparse_rows
from fairest._solvers._defaults import SOLVER_TUNING
from fairest._solvers._lbfgs import lbfgs_solve, single_threaded_blas
from fairest._solvers._newton import _cholesky, newton_solve
from fairest._solvers._newton_cg import newton_cg_solve
from fairest.utils._devices import configured_devices, place_rows

__all__ = [
    "SOLVERS",
    "GlmResult",
    "PolishResult",
    "choose_solver",
    "newton_polish",
    "solve_weighted_glm",
]

SOLVERS = ("newton", "lbfgs", "newton-cg")
# The thresholds that pick a solver (L-BFGS from a feature count and a Hessian work on,
# Newton-CG from a parameter count on, Newton on sparse X up to a work per pass, float32
# Hessian blocks from a work on) are fields of SOLVER_TUNING (fairest/_solvers/_defaults.py).
# Dense L-BFGS hands over to Newton steps below this relative gradient (when ``tol`` asks
# for less): F's rounding noise stalls its line search long before 1e-10 (most further
# passes are rejected line-search trials), while one Newton step with float32 Hessian
# blocks, a few passes' cost, goes from 1e-6 to below 1e-12 (quadratic convergence).
LBFGS_HANDOFF_TOL = 1e-6
_ARMIJO = 1e-4


def choose_solver(
    loss: str,
    n_rows: int,
    n_features: int,
    sparse: bool = False,
    row_entries: int | None = None,
    tol: float | None = None,
) -> str:
    """The solver for a shape: see the module docstring. ``row_entries`` (sparse X: the
    most stored entries of a row) prices the Hessian by per-row outer products. A loose
    ``tol`` (at least ``LBFGS_HANDOFF_TOL``, e.g. scikit-learn's 1e-4) picks L-BFGS for
    dense data of at least ``SOLVER_TUNING.lbfgs_loose_min_size`` entries: it needs no Newton finish
    there, and its passes cost no Hessian."""
    tuning = SOLVER_TUNING
    p = n_features + 1
    loose = tol is not None and tol >= LBFGS_HANDOFF_TOL
    large = n_rows * p >= tuning.lbfgs_loose_min_size
    if loose and not sparse and loss != "squared_error" and large:
        if p <= tuning.newton_cg_min_params:
            return "lbfgs"
    if sparse:
        work = sparse_newton_work(n_rows, n_features, row_entries)
        return "newton" if work <= tuning.sparse_newton_max_work else "lbfgs"
    if p > tuning.newton_cg_min_params:
        return "newton-cg"
    if loss == "squared_error":
        return "newton"
    if n_features >= tuning.lbfgs_min_features and n_rows * p * p >= tuning.lbfgs_min_work:
        return "lbfgs"
    return "newton"


def sparse_newton_work(n_rows: int, n_features: int, row_entries: int | None = None) -> int:
    """Flop-equivalents of one Newton pass on sparse X: the Hessian block, the cheaper of
    densified row blocks (``n p^2``) and per-row outer products
    (``KERNEL_TUNING.outer_gram_cost n k^2``, :meth:`~fairest._kernels._sparse.SparseRows.outer_gram`),
    plus the Cholesky factorisation (``p^3 / 3``)."""
    p = n_features + 1
    gram = n_rows * p * p
    if row_entries is not None:
        gram = min(gram, KERNEL_TUNING.outer_gram_cost * n_rows * max(1, row_entries) ** 2)
    return gram + p**3 // 3


class GlmResult(NamedTuple):
    """The result of :func:`solve_weighted_glm`, host values (numpy and Python scalars).

    - ``theta``: the (p,) float64 solution, intercept first;
    - ``objective``: F at ``theta``;
    - ``grad_norm``: ``||grad F(theta)||_inf``;
    - ``n_iter``: solver iterations (L-BFGS's plus those of its Newton or Newton-CG finish);
    - ``converged``: ``grad_norm <= tol * max(1, ||grad F(theta0)||_inf)``;
    - ``solver``: the solver that ran, one of ``SOLVERS``.
    """

    theta: np.ndarray
    objective: float
    grad_norm: float
    n_iter: int
    converged: bool
    solver: str


class PolishResult(NamedTuple):
    theta: jax.Array
    objective: jax.Array
    grad_norm: jax.Array
    accepted: jax.Array  # the Newton step decreased F (else theta is the start point)


@partial(jax.jit, static_argnames="loss")
def newton_polish(loss: str, theta, X, y, c, alpha, penalize_intercept) -> PolishResult:
    """One full Newton step from ``theta`` and the gradient at its end point: two passes.

    The Hessian's ``X^T diag(q) X`` block is summed over float32 row blocks
    (:func:`~fairest._kernels._glm.value_grad_hessian` with the
    :func:`~fairest._kernels._glm.blocked_hessian` marker: no (n, d) temporary, no copy of
    X, one pass); objective and gradients stay in the precision of ``X``, so the solution
    does too. The step is kept when it passes Armijo's test within F's rounding noise.
    """
    marker = jnp.zeros((0,), jnp.float32)
    f, grad, hessian = value_grad_hessian(loss, theta, X, y, c, alpha, penalize_intercept, marker)
    direction = -cho_solve((_cholesky(hessian), True), grad)
    trial = theta + direction
    f_trial, g_trial = value_and_grad(loss, trial, X, y, c, alpha, penalize_intercept)
    accepted = f_trial <= f + _ARMIJO * jnp.dot(grad, direction) + 1e-15 * jnp.abs(f)
    pick = partial(jnp.where, accepted)
    return PolishResult(
        pick(trial, theta),
        pick(f_trial, f),
        jnp.max(jnp.abs(pick(g_trial, grad))),
        accepted,
    )


def _device_data(X, y, sample_weight):
    """Float64 device arrays of the fit, padded to a row bucket only when small."""
    if is_sparse(X) or hasattr(X, "tocsr"):
        return _sparse_device_data(X, y, sample_weight)
    n, d = X.shape
    length = padded_rows(n, 8 * (d + 2))
    X, y, c = pad_rows_to(length, *(np.asarray(a, dtype=np.float64) for a in (X, y, sample_weight)))
    if length == n and configured_devices() is None:  # large data on JAX's default device:
        # X shared with a CPU device even where numpy's alignment would force a copy
        return (place_dense(X), *place_rows([y, c]))
    # sharded by rows over the devices of fairest.config_context (default: one device);
    # on one CPU device a 64-byte aligned X is shared, not copied (jax.device_put)
    return tuple(place_rows([X, y, c]))


def _sparse_device_data(X, y, sample_weight):
    """A :class:`SparseRows` on the device (O(nnz)) padded with empty rows to a bucket,
    and the padded float64 ``y`` and weights."""
    host = X if is_sparse(X) else sparse_rows(X)
    length = padded_rows(host.shape[0], 8 * 3)  # only y, c and indptr grow
    y, c = pad_rows_to(length, *(np.asarray(a, dtype=np.float64) for a in (y, sample_weight)))
    return place_sparse(host.with_rows(length)), *place_rows([y, c])


def place_sparse(host: SparseRows) -> SparseRows:
    """Device copy of a host :class:`SparseRows` (one device: the first configured one,
    else JAX's default; sparse rows are not sharded)."""
    from fairest.utils._devices import configured_devices

    devices = configured_devices()
    return jax.device_put(host, devices[0] if devices else None)


def solve_weighted_glm(
    loss: str,
    X: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray,
    alpha: float,
    *,
    penalize_intercept: bool = False,
    theta0: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
    solver: str = "auto",
) -> GlmResult:
    """Minimise ``sum_i c_i l(b + x_i^T w, y_i) + R(theta)`` in float64; return numpy.

    ``solver="auto"`` picks by shape (:func:`choose_solver`). ``max_iter`` bounds the
    Newton steps; L-BFGS gets ten times as many iterations. Returns a :class:`GlmResult`
    (``theta``, intercept first, ``objective``, ``grad_norm``, ``n_iter``, ``converged``
    and ``solver``).
    """
    n, d = X.shape
    sparse = is_sparse(X) or hasattr(X, "tocsr")
    if sparse and not is_sparse(X):
        X = sparse_rows(X)  # once, on the host: O(nnz)
    if solver == "auto":
        solver = choose_solver(loss, n, d, sparse, X.row_entries if sparse else None, tol)
    if solver not in SOLVERS:
        raise ValueError(f"solver must be 'auto' or one of {SOLVERS}; got {solver!r}.")
    start = np.zeros(d + 1) if theta0 is None else np.asarray(theta0, dtype=np.float64)
    # XLA's CPU Cholesky calls scipy's LAPACK: threaded BLAS there only adds spinning
    # threads for p <= 2000; see single_threaded_blas
    with jax.enable_x64(True), single_threaded_blas():
        X_dev, y_dev, c_dev = _device_data(X, y, sample_weight)
        problem = (X_dev, y_dev, c_dev, np.float64(alpha), np.float64(penalize_intercept))
        if solver == "lbfgs" and sparse:
            return _lbfgs_then_newton_cg(loss, problem, start, tol, max_iter)
        if solver == "lbfgs":
            return _lbfgs_then_newton(loss, problem, start, tol, max_iter)
        args = (loss, *problem, jax.device_put(start), np.float64(tol), np.int32(max_iter))
        if solver == "newton-cg":
            result = newton_cg_solve(*args)
        else:
            float32 = not sparse and n * (d + 1) ** 2 >= SOLVER_TUNING.float32_hessian_work
            result = newton_solve(*args, jax.device_put(blocked_hessian()) if float32 else None)
        return GlmResult(
            theta=np.asarray(result.theta),
            objective=float(result.objective),
            grad_norm=float(result.grad_norm),
            n_iter=int(result.n_iter),
            converged=bool(result.converged),
            solver=solver,
        )


def _lbfgs_then_newton(loss, problem, start, tol, max_iter) -> GlmResult:
    """L-BFGS to its limit, then Newton steps (each two passes) while the gradient is above
    the threshold; the rare step that fails Armijo hands over to damped Newton. L-BFGS
    stops at ``LBFGS_HANDOFF_TOL`` where ``tol`` is smaller."""
    result = lbfgs_solve(
        loss, *problem, start, tol=tol, max_iter=10 * max_iter, handoff_tol=LBFGS_HANDOFF_TOL
    )
    theta, value, grad_norm = result.theta, result.objective, result.grad_norm
    n_iter, converged = result.n_iter, result.converged
    for _ in range(3):
        if converged:
            break
        step = jax.device_get(newton_polish(loss, jax.device_put(theta), *problem))
        n_iter += 1
        theta, value, grad_norm = (
            np.asarray(step.theta),
            float(step.objective),
            float(step.grad_norm),
        )
        converged = grad_norm <= result.threshold
        if not step.accepted:
            break
    if not converged:  # damped Newton from the best point reached
        newton = newton_solve(
            loss, *problem, jax.device_put(theta), np.float64(tol), np.int32(max_iter)
        )
        theta, value = np.asarray(newton.theta), float(newton.objective)
        grad_norm, converged = float(newton.grad_norm), bool(newton.converged)
        n_iter += int(newton.n_iter)
    return GlmResult(
        theta=theta,
        objective=value,
        grad_norm=grad_norm,
        n_iter=n_iter,
        converged=converged,
        solver="lbfgs",
    )


def _lbfgs_then_newton_cg(loss, problem, start, tol, max_iter) -> GlmResult:
    """Sparse X: L-BFGS to its limit, then Newton-CG (Hessian-vector products only, no
    Hessian formed) from its point while the gradient is above the threshold."""
    result = lbfgs_solve(loss, *problem, start, tol=tol, max_iter=10 * max_iter)
    out = GlmResult(
        theta=result.theta,
        objective=result.objective,
        grad_norm=result.grad_norm,
        n_iter=result.n_iter,
        converged=result.converged,
        solver="lbfgs",
    )
    if result.converged:
        return out
    # Newton-CG's threshold is relative to its start's gradient: ask for the absolute one
    start_norm = max(1.0, result.grad_norm)
    newton = newton_cg_solve(
        loss,
        *problem,
        jax.device_put(result.theta),
        np.float64(result.threshold / start_norm),
        np.int32(max_iter),
    )
    return out._replace(
        theta=np.asarray(newton.theta),
        objective=float(newton.objective),
        grad_norm=float(newton.grad_norm),
        n_iter=result.n_iter + int(newton.n_iter),
        converged=bool(newton.grad_norm <= result.threshold),
    )
