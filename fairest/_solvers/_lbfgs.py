"""L-BFGS for weighted, L2-regularised linear models: SciPy's L-BFGS-B on a jitted kernel.

Same objective as :mod:`fairest._solvers._newton`. Each iteration costs one pass over the
data (:func:`fairest._kernels._glm.value_and_grad`, O(n p)) where a Newton step also
assembles the p x p Hessian (O(n p^2)): above a few dozen features and 1e5 rows the
Hessian dominates and L-BFGS is the faster route to the same optimum (scikit-learn's
default solver makes the same choice). The quasi-Newton update and the line search are
SciPy's (``scipy.optimize.minimize(method="L-BFGS-B")``, Byrd, Lu, Nocedal and Zhu); only
the objective is fairest's. SciPy is imported by scikit-learn anyway, so this path adds
no import time, and a host round trip per iteration (p floats) is negligible next to a
pass over the data. On a CPU with several cores a pass over large dense ``X`` is split by
rows over the cores (:mod:`fairest._solvers._row_split`): XLA runs the fused row-block
loop on one thread.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fairest._solvers._row_split import row_parts, split_value_and_grad

__all__ = ["LBFGSResult", "lbfgs_solve", "single_threaded_blas"]

# Pairs kept by the L-BFGS memory: SciPy's default is 10; 20 takes fewer passes to a
# gradient of 1e-10 on the problems of benchmarks/speed_table.py for p x 20 more floats.
MEMORY = 20


class LBFGSResult(NamedTuple):
    theta: np.ndarray  # (p,) intercept first
    objective: float
    grad_norm: float  # ||grad F(theta)||_inf
    n_iter: int  # L-BFGS iterations
    n_evaluations: int  # passes over the data (value and gradient)
    converged: bool  # grad_norm <= threshold
    threshold: float  # tol * max(1, ||grad F(theta0)||_inf)


def single_threaded_blas():
    """A context in which BLAS runs on one thread (``threadpoolctl``, a scikit-learn
    dependency). L-BFGS-B's own linear algebra is a few (p, m) products per iteration:
    threaded BLAS only adds synchronisation, and on a busy machine its spinning threads
    cost far more than the products.

    The BLAS libraries are found once per process (:func:`_blas_controller`): a
    ``threadpool_limits`` call scans the loaded libraries each time (reading the
    process's memory map), a sizeable share of a small warm fit."""
    return _blas_controller().limit(limits=1, user_api="blas")


_CONTROLLER = []


def _blas_controller():
    """The process's ``threadpoolctl.ThreadpoolController``, made on first use (after
    NumPy, SciPy and jaxlib have loaded their BLAS) and rebuilt when the loaded libraries
    may have changed (a new module imported since, e.g. another BLAS)."""
    import sys

    from threadpoolctl import ThreadpoolController

    modules = len(sys.modules)
    if not _CONTROLLER or _CONTROLLER[0][0] != modules:
        _CONTROLLER[:] = [(modules, ThreadpoolController())]
    return _CONTROLLER[0][1]


def lbfgs_solve(
    loss: str,
    X,
    y,
    c,
    alpha,
    penalize_intercept,
    theta0,
    tol: float = 1e-10,
    max_iter: int = 1000,
    handoff_tol: float | None = None,
) -> LBFGSResult:
    """Minimise the weighted regularised objective from ``theta0`` by L-BFGS.

    Stops when ``||grad||_inf <= tol * max(1, ||grad(theta0)||_inf)`` (the rule of
    :func:`fairest._solvers._newton.newton_solve`), when the line search can make no more
    progress, or after ``max_iter`` iterations. The arrays are device arrays (or numpy);
    ``alpha`` and ``penalize_intercept`` are traced scalars, so nothing recompiles when
    they change. ``handoff_tol`` (relative, like ``tol``) stops L-BFGS once the gradient
    is below the larger of the two thresholds, for a caller that finishes with Newton
    steps (:func:`~fairest._solvers._driver.solve_weighted_glm`); ``converged`` and
    ``threshold`` still refer to ``tol``.
    """
    from scipy.optimize import minimize

    args = (X, y, c, alpha, penalize_intercept)
    best = {"value": np.inf, "theta": None, "grad": None}
    count = [0]

    parts = row_parts(X)  # dense X on a CPU: the pass split over the cores

    def fun(theta):
        value, grad = split_value_and_grad(loss, theta, *args, parts=parts)
        count[0] += 1
        if value <= best["value"]:
            best.update(value=value, theta=np.array(theta), grad=grad)
        return value, grad

    start = np.asarray(theta0, dtype=np.float64)
    _, grad0 = fun(start)
    scale = max(1.0, float(np.max(np.abs(grad0))))
    threshold = tol * scale
    stop = threshold if handoff_tol is None else max(threshold, handoff_tol * scale)
    with single_threaded_blas():
        result = minimize(
            fun,
            start,
            jac=True,
            method="L-BFGS-B",
            options={
                "maxiter": max_iter,
                "maxcor": MEMORY,
                "gtol": stop,
                "ftol": 0.0,  # stop on the gradient (or a stalled line search), not on F
                "maxfun": 2 * max_iter + 20,
            },
        )
    grad_norm = float(np.max(np.abs(best["grad"])))
    return LBFGSResult(
        theta=best["theta"],
        objective=best["value"],
        grad_norm=grad_norm,
        n_iter=int(result.nit),
        n_evaluations=count[0],
        converged=grad_norm <= threshold,
        threshold=threshold,
    )
