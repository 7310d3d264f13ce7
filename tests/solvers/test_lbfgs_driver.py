"""The ERM driver: L-BFGS (SciPy L-BFGS-B on the jitted kernel) with a Newton finish reaches
scikit-learn's optimum; the solver is chosen by shape."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from fairest._solvers._driver import choose_solver, solve_weighted_glm
from fairest._solvers._lbfgs import lbfgs_solve


def _problem(n=700, d=9, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(float)
    c = rng.uniform(0.2, 2.0, n)
    return X, y, c / c.sum()


def _objective(loss, theta, X, y, c, alpha, penalize):
    s = X @ theta[1:] + theta[0]
    if loss == "logistic":
        data = np.logaddexp(0, s) - y * s
    else:
        data = np.maximum(0, 1 - (2 * y - 1) * s) ** 2
    return np.sum(c * data) + 0.5 * alpha * (np.sum(theta[1:] ** 2) + penalize * theta[0] ** 2)


@pytest.mark.parametrize(("loss", "penalize"), [("logistic", False), ("squared_hinge", True)])
def test_lbfgs_path_reaches_the_sklearn_optimum(loss, penalize):
    X, y, c = _problem()
    alpha = 1e-3
    ours = solve_weighted_glm(loss, X, y, c, alpha, penalize_intercept=penalize, solver="lbfgs")
    assert ours.converged and ours.solver == "lbfgs"
    assert ours.grad_norm <= 1e-10
    C = 1.0 / alpha
    if loss == "logistic":
        sk = LogisticRegression(C=C, tol=1e-14, max_iter=100_000).fit(X, y, sample_weight=c)
    else:
        sk = LinearSVC(C=C, dual=False, tol=1e-14, max_iter=100_000).fit(X, y, sample_weight=c)
    theirs = np.r_[sk.intercept_, sk.coef_.ravel()]
    f_ours = _objective(loss, ours.theta, X, y, c, alpha, penalize)
    f_theirs = _objective(loss, theirs, X, y, c, alpha, penalize)
    np.testing.assert_allclose(ours.objective, f_ours, rtol=1e-12)
    assert f_ours <= f_theirs * (1 + 1e-12)
    newton = solve_weighted_glm(loss, X, y, c, alpha, penalize_intercept=penalize, solver="newton")
    np.testing.assert_allclose(ours.theta, newton.theta, rtol=1e-7, atol=1e-8)


def test_lbfgs_alone_stops_on_the_gradient_or_a_stalled_line_search():
    import jax

    X, y, c = _problem(seed=2)
    with jax.enable_x64(True):
        loose = lbfgs_solve("logistic", X, y, c, 1e-2, 0.0, np.zeros(10), tol=1e-5)
    assert loose.converged and loose.grad_norm <= 1e-5
    assert loose.n_evaluations >= loose.n_iter


def test_solver_choice_by_shape():
    assert choose_solver("logistic", 10_000, 20) == "newton"
    assert choose_solver("logistic", 100_000, 100) == "lbfgs"
    assert choose_solver("logistic", 1_000_000, 500) == "lbfgs"
    assert choose_solver("logistic", 1_000, 100) == "newton"  # small Hessian work
    assert choose_solver("squared_error", 1_000_000, 100) == "newton"  # one exact step
    assert choose_solver("logistic", 300, 3000) == "newton-cg"
    # a loose tol (no Newton finish needed) picks L-BFGS for dense data of 2e5+ entries
    assert choose_solver("logistic", 100_000, 20, tol=1e-4) == "lbfgs"
    assert choose_solver("logistic", 100_000, 20, tol=1e-10) == "newton"
    assert choose_solver("logistic", 1_000, 5, tol=1e-4) == "newton"
    assert choose_solver("squared_error", 100_000, 20, tol=1e-4) == "newton"
    with pytest.raises(ValueError, match="solver must be"):
        solve_weighted_glm("logistic", *_problem(), 1e-3, solver="sgd")
