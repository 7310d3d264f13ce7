"""The exact FERMI Hessian (W* differentiated through) and the Newton continuation of the
fairness path, checked against finite differences and the L-BFGS refit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest.ermi._kernels import Strata, fermi_hessian, fermi_value_and_grad
from fairest.ermi._newton import newton_path
from fairest.ermi._solvers import (
    _device_strata,
    full_batch_solve,
)
from fairest.ermi._strata import strata_constants


def _problem(binary, equalized_odds, n=240, d=3, k=3, seed=0):
    rng = np.random.default_rng(seed)
    n_classes = 2 if binary else 3
    s = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) + 0.8 * s[:, None] * np.array([1.0, 0.0, -0.5])
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    if not binary:
        y = y + (X[:, 1] > 0.7)
    weight = rng.uniform(0.5, 2.0, n)
    weight = weight / weight.mean()
    t = y if equalized_odds else np.zeros(n, int)
    strata, _, _ = strata_constants(
        t, s, weight, n_classes if equalized_odds else 1, k, "label_prior"
    )
    rows = tuple(jnp.asarray(a) for a in (X, y.astype(np.int32), s, t, weight))
    return rows, strata, (d + 1, 1 if binary else n_classes)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "softmax"])
@pytest.mark.parametrize("equalized_odds", [False, True], ids=["dp", "eo"])
def test_hessian_equals_finite_differences_of_the_gradient(binary, equalized_odds):
    """Central differences of the (Danskin) gradient: the Hessian includes W*'s dependence
    on theta (the Hessian at W held fixed differs by lam Psi_tW |Psi_WW|^-1 Psi_Wt)."""
    with jax.enable_x64(True):
        rows, strata, shape = _problem(binary, equalized_odds)
        strata = Strata(*(jnp.asarray(a) for a in strata))
        theta = np.random.default_rng(1).normal(size=shape) * 0.4
        args = (*rows, strata, 3.0, 0.01)
        H = np.asarray(fermi_hessian(jnp.asarray(theta), *args, binary))

        def grad(flat):
            return np.asarray(fermi_value_and_grad(jnp.asarray(flat), *args, binary=binary)[1])

        flat, eps = theta.ravel(), 1e-6
        numeric = np.column_stack(
            [(grad(flat + eps * e) - grad(flat - eps * e)) / (2 * eps) for e in np.eye(flat.size)]
        )
    np.testing.assert_allclose(H, numeric, atol=1e-7)
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    # the W* term matters: without it the check above would fail
    assert np.max(np.abs(H - numeric)) < 1e-3 * np.max(np.abs(H))


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "softmax"])
def test_newton_path_reaches_the_lbfgs_minimiser_at_every_weight(binary):
    """Unsorted weights, a strong one (an indefinite Hessian on the way): each point
    meets the stationarity test and equals L-BFGS from zeros to the solver tolerance."""
    with jax.enable_x64(True):
        rows, strata, shape = _problem(binary, False, n=300, seed=2)
        strata = _device_strata(strata)
        lams = np.array([8.0, 0.0, 2.0, 32.0])
        alpha, tol = jnp.asarray(1e-3), 1e-8
        points = newton_path(lams, np.zeros(shape), *rows, strata, alpha, tol, 200, binary=binary)
        for lam, point in zip(lams, points):
            reference = full_batch_solve(
                np.zeros(shape),
                *rows,
                strata,
                jnp.asarray(lam),
                alpha,
                tol,
                1000,
                binary=binary,
            )
            theta, objective = point.theta, point.objective
            assert 1 <= point.n_iter <= 30
            if not point.converged:  # the float32 Hessian's floor: L-BFGS finishes (paths)
                assert point.grad_norm < 1e-6
                theta, objective, grad_norm, more, _ = full_batch_solve(
                    theta, *rows, strata, jnp.asarray(lam), alpha, tol, 1000, binary=binary
                )
                assert more <= 30
            np.testing.assert_allclose(theta, reference[0], atol=1e-6)
            np.testing.assert_allclose(objective, reference[1], rtol=1e-12)


def test_bfgs_update_meets_the_secant_equation_or_refuses():
    """The quasi-Newton correction between exact Hessians: symmetric, maps the step to
    the gradient change, keeps a positive definite matrix positive definite, and gives
    None (a fresh Hessian) where the curvature along the step is not positive."""
    from fairest.ermi._newton import _bfgs_update

    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    H = A @ A.T + 6 * np.eye(6)
    step = rng.normal(size=6)
    change = (H + 0.3 * np.diag(rng.uniform(size=6))) @ step  # a nearby true Hessian
    updated = _bfgs_update(H, step, change)
    np.testing.assert_allclose(updated @ step, change, rtol=1e-12)
    np.testing.assert_allclose(updated, updated.T, atol=1e-12)
    assert np.linalg.eigvalsh(updated).min() > 0
    # a direction orthogonal to H step and to the gradient change keeps H's action
    other = np.linalg.svd(np.stack([H @ step, change]))[2][2]
    np.testing.assert_allclose(updated @ other, H @ other, rtol=1e-10, atol=1e-12)
    assert _bfgs_update(H, step, -change) is None
