"""Shared small problems of the partial-fairness tests (imported by the test modules)."""

import cvxpy as cp
import numpy as np

from fairest.partial._estimator import PartialParityClassifier

PSP, PDP = "partial_statistical_parity", "partial_demographic_parity"  # the metric values


def make_data(n=120, d=3, seed=0, shift=0.8, n_groups=2):
    """Two (or more) groups whose scores differ: group g shifts every feature by g*shift."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, n_groups, n)
    X = rng.normal(size=(n, d)) + shift * g[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, g


def make_problem(
    metric=PSP,
    surrogate="ramp",
    dc_split="minimal",
    tolerance=0.2,
    interval=(0.0, 0.5),
    n=120,
    d=3,
    n_grid=4,
    proximal_strength=0.0,
    seed=0,
    n_groups=2,
    sample_weight=None,
    alpha=0.0,
):
    """(cfg, data, x0, X, y, g) of a small problem, built the way the estimator builds it.

    Call inside ``jax.enable_x64(True)``."""
    X, y, g = make_data(n, d, seed, n_groups=n_groups)
    clf = PartialParityClassifier(
        metric,
        interval=interval,
        tolerance=tolerance,
        surrogate=surrogate,
        dc_split=dc_split,
        n_grid=n_grid,
        proximal_strength=proximal_strength,
        alpha=alpha,
    )
    weights = np.ones(n) if sample_weight is None else sample_weight
    codes = g.astype(np.int32)
    cfg, data, x0 = clf._problem(X, y.astype(float), codes, weights, n_groups, interval)
    return cfg, data, x0, X, y, g


def cvxpy_subproblem(xk, X, y, g, grid, slack, G=2):
    """Convex subproblem (31) of the ramp pSP problem at ``xk`` (mu = 0), written from the
    spec's formulas (section 4.9) independently of the JAX kernels, solved by Clarabel."""
    n, d = X.shape
    J = grid.size
    b, w = cp.Variable(), cp.Variable(d)
    theta = cp.Variable(J)
    s = X @ w + b
    zeta = 2.0 * y - 1.0
    objective = cp.sum(cp.logistic(-cp.multiply(zeta, s))) / n
    s_k = X @ xk[1 : 1 + d] + xk[0]
    theta_k = xk[1 + d :]
    constraints = []
    for k in range(G):
        idx = np.flatnonzero(g == k)
        nk = idx.size
        for j in range(J):
            z_k = s_k[idx] - theta_k[j]
            ind_A, ind_B = (z_k + 0.5 > 0).astype(float), (z_k - 0.5 > 0).astype(float)
            A_k, B_k = np.maximum(z_k + 0.5, 0).mean(), np.maximum(z_k - 0.5, 0).mean()
            ds = s[idx] - s_k[idx]
            dtheta = theta[j] - theta_k[j]
            B_v = cp.sum(cp.pos(s[idx] - theta[j] - 0.5)) / nk
            A_v = cp.sum(cp.pos(s[idx] - theta[j] + 0.5)) / nk
            lin_A = (ind_A @ ds) / nk - ind_A.mean() * dtheta
            lin_B = (ind_B @ ds) / nk - ind_B.mean() * dtheta
            constraints.append(B_v - A_k - lin_A + grid[j] <= 0)
            constraints.append(A_v - B_k - lin_B - grid[j] - slack <= 0)
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return problem.value
