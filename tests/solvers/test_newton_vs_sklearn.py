"""The weighted Newton solver reaches scikit-learn's optimum on the same weighted problem.

Mapping (c = per-sample weights lambda_g w_i / W_g, summing to one):
  logistic:      LogisticRegression(C = 1 / (alpha * sum c)),  sample_weight = c
  squared hinge: LinearSVC(loss="squared_hinge", dual=False, C = 1 / (alpha * sum c)),
                 sample_weight = c, intercept penalised (penalize_intercept=True)
  ridge:         Ridge(alpha = alpha * sum c),                 sample_weight = c
"""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.svm import LinearSVC

from fairest._solvers._driver import solve_weighted_glm
from fairest._solvers._newton import newton_solve
from fairest.reweighting._group_weights import resolve_group_weights


def _weighted_problem(loss, n=600, d=8, G=3, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, G, n)
    X = rng.normal(size=(n, d)) + groups[:, None] * 0.3
    score = X @ rng.normal(size=d) + 0.5 * rng.normal(size=n)
    y = score + rng.normal(size=n) if loss == "squared_error" else (score > 0.2).astype(float)
    w = rng.uniform(0.3, 3.0, n)
    totals = np.bincount(groups, weights=w, minlength=G)
    lam = resolve_group_weights("balanced", totals, np.arange(G))
    c = w * (lam / totals)[groups]
    return X, y, c


def _objective(loss, theta, X, y, c, alpha, penalize_intercept):
    s = X @ theta[1:] + theta[0]
    if loss == "logistic":
        data, scale = np.logaddexp(0, s) - y * s, 0.5
    elif loss == "squared_hinge":
        data, scale = np.maximum(0, 1 - (2 * y - 1) * s) ** 2, 0.5
    else:
        data, scale = (s - y) ** 2, 1.0
    return np.sum(c * data) + scale * alpha * (
        np.sum(theta[1:] ** 2) + penalize_intercept * theta[0] ** 2
    )


def _sklearn_theta(loss, X, y, c, alpha):
    C = 1.0 / (alpha * c.sum())
    if loss == "logistic":
        model = LogisticRegression(C=C, tol=1e-14, max_iter=100_000).fit(X, y, sample_weight=c)
    elif loss == "squared_hinge":
        model = LinearSVC(C=C, dual=False, tol=1e-14, max_iter=100_000).fit(X, y, sample_weight=c)
    else:
        model = Ridge(alpha=alpha * c.sum(), solver="cholesky").fit(X, y, sample_weight=c)
    return np.r_[np.ravel(model.intercept_), np.ravel(model.coef_)]


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared_error"])
@pytest.mark.parametrize("alpha", [1e-3, 1e-1])
def test_objective_matches_sklearn(loss, alpha):
    X, y, c = _weighted_problem(loss)
    penalize = loss == "squared_hinge"
    ours = solve_weighted_glm(loss, X, y, c, alpha, penalize_intercept=penalize)
    assert ours.converged
    theirs = _sklearn_theta(loss, X, y, c, alpha)
    f_ours = _objective(loss, ours.theta, X, y, c, alpha, penalize)
    f_theirs = _objective(loss, theirs, X, y, c, alpha, penalize)
    np.testing.assert_allclose(ours.objective, f_ours, rtol=1e-12)
    assert abs(f_ours - f_theirs) <= 1e-8 * abs(f_theirs)
    assert f_ours <= f_theirs * (1 + 1e-12)  # never worse than the reference


def test_unpenalised_intercept_squared_hinge_matches_cvxpy_clarabel():
    X, y, c = _weighted_problem("squared_hinge", n=200, d=4)
    alpha = 1e-2
    ours = solve_weighted_glm("squared_hinge", X, y, c, alpha, penalize_intercept=False)
    b, w = cp.Variable(), cp.Variable(X.shape[1])
    margins = cp.pos(1 - cp.multiply(2 * y - 1, X @ w + b))
    problem = cp.Problem(cp.Minimize(c @ cp.square(margins) + 0.5 * alpha * cp.sum_squares(w)))
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert abs(ours.objective - problem.value) <= 1e-7 * problem.value
    np.testing.assert_allclose(ours.theta, np.r_[b.value, w.value], atol=1e-4)


def test_warm_start_converges_immediately():
    X, y, c = _weighted_problem("logistic")
    first = solve_weighted_glm("logistic", X, y, c, 1e-2)
    again = solve_weighted_glm("logistic", X, y, c, 1e-2, theta0=first.theta)
    assert again.n_iter <= 1


def test_no_recompilation_across_folds_and_hyperparameters():
    X, y, c = _weighted_problem("logistic", n=1000)
    solve_weighted_glm("logistic", X, y, c, 1e-2)
    compiled = newton_solve._cache_size()
    for n_rows, alpha in [(990, 1e-2), (975, 0.5), (1000, 3e-3)]:  # CV-fold sizes, new alphas
        solve_weighted_glm(
            "logistic", X[:n_rows], y[:n_rows], c[:n_rows], alpha, tol=1e-9, max_iter=50
        )
    assert newton_solve._cache_size() == compiled


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_float32_hessian_block_reaches_the_same_optimum(loss):
    import jax
    import jax.numpy as jnp

    X, y, c = _weighted_problem(loss, n=800, d=12)
    with jax.enable_x64(True):
        args = (
            loss,
            jnp.asarray(X),
            jnp.asarray(y),
            jnp.asarray(c),
            1e-3,
            float(loss == "squared_hinge"),
        )
        exact = newton_solve(*args, jnp.zeros(13))
        mixed = newton_solve(*args, jnp.zeros(13), X_hessian=jnp.asarray(X, dtype=jnp.float32))
        assert bool(mixed.converged)
        np.testing.assert_allclose(mixed.objective, exact.objective, rtol=1e-13)
        np.testing.assert_allclose(mixed.theta, exact.theta, rtol=1e-7, atol=1e-9)
