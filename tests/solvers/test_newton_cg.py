"""Newton-CG (the many-features path, badr spec section 2) against Newton with Cholesky."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from fairest._kernels._glm import value_grad_hessian
from fairest._solvers._defaults import SOLVER_TUNING
from fairest._solvers._driver import solve_weighted_glm
from fairest._solvers._newton import newton_solve
from fairest._solvers._newton_cg import hessian_diagonal, newton_cg_solve, pcg_solve


def _problem(loss, n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    score = X @ rng.normal(size=d) * 3 + 0.3 * rng.normal(size=n)
    y = score if loss == "squared_error" else (score > 0.2).astype(float)
    c = rng.uniform(0.3, 3.0, n)
    return X, y, c / c.sum()


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared_error"])
@pytest.mark.parametrize("penalize_intercept", [0.0, 1.0])
def test_newton_cg_reaches_the_cholesky_newton_optimum(loss, penalize_intercept):
    X, y, c = _problem(loss, 400, 30)
    with jax.enable_x64(True):
        args = (
            loss,
            jnp.asarray(X),
            jnp.asarray(y),
            jnp.asarray(c),
            jnp.float64(1e-2),
            jnp.float64(penalize_intercept),
            jnp.zeros(31),
        )
        reference = newton_solve(*args)
        result = newton_cg_solve(*args)
        assert bool(result.converged)
        assert int(result.cg_iter) > 0
        np.testing.assert_allclose(result.theta, reference.theta, atol=1e-8)
        assert float(result.objective) == pytest.approx(float(reference.objective), rel=1e-12)
        # warm start at the optimum: nothing left to do
        again = newton_cg_solve(*args[:-1], result.theta)
        assert int(again.n_iter) == 0


def test_pcg_solves_an_spd_system_and_the_diagonal_is_the_hessians():
    X, y, c = _problem("logistic", 300, 12, seed=1)
    with jax.enable_x64(True):
        theta = jnp.asarray(np.random.default_rng(2).normal(size=13) * 0.1)
        args = (jnp.asarray(X), jnp.asarray(y), jnp.asarray(c), jnp.float64(1e-2), jnp.float64(0.0))
        _, _, hessian = value_grad_hessian("logistic", theta, *args)
        diagonal = hessian_diagonal("logistic", theta, *args)
        np.testing.assert_allclose(diagonal, np.diag(hessian), rtol=1e-12)
        b = jnp.arange(13.0) - 6.0
        x, products = pcg_solve(lambda v: hessian @ v, b, 1.0 / diagonal, 1e-12, 100)
        np.testing.assert_allclose(
            x, np.linalg.solve(np.asarray(hessian), np.asarray(b)), rtol=1e-8
        )
        assert 0 < int(products) <= 13 + 5  # exact arithmetic: at most p products


def test_host_solver_switches_to_newton_cg_for_many_features():
    """Above newton_cg_min_params parameters: same optimum as scikit-learn, Hessian never formed."""
    d = SOLVER_TUNING.newton_cg_min_params
    X, y, c = _problem("logistic", 300, d, seed=3)
    alpha = 1e-2
    result = solve_weighted_glm("logistic", X, y, c, alpha, tol=1e-10)
    assert result.converged
    sk = LogisticRegression(C=1.0 / (alpha * c.sum()), tol=1e-12, max_iter=10_000)
    sk.fit(X, y, sample_weight=c)
    np.testing.assert_allclose(result.theta[1:], sk.coef_.ravel(), atol=1e-5)
    assert result.theta[0] == pytest.approx(sk.intercept_[0], abs=1e-5)
