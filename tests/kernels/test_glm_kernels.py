import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest._kernels import (
    LOSSES,
    Batch,
    group_sums,
    group_to_sample_weights,
    hessian_vector_product,
    loss_derivatives,
    objective,
    pad_rows,
    pointwise_loss,
    value_grad_hessian,
)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _problem(loss, n=137, d=5, G=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n) if loss == "squared_error" else rng.integers(0, 2, n).astype(float)
    groups = rng.integers(0, G, n).astype(np.int32)
    weight = rng.uniform(0.2, 2.0, n)
    theta = rng.normal(scale=0.5, size=d + 1)
    return X, y, groups, weight, theta


def _numpy_loss(loss, s, y):
    if loss == "logistic":
        return np.logaddexp(0, s) - y * s
    if loss == "squared_hinge":
        return np.maximum(0, 1 - (2 * y - 1) * s) ** 2
    return (s - y) ** 2


@pytest.mark.parametrize("loss", LOSSES)
def test_pointwise_loss_matches_numpy(loss):
    X, y, _, _, theta = _problem(loss)
    s = X @ theta[1:] + theta[0]
    np.testing.assert_allclose(
        pointwise_loss(loss, jnp.asarray(s), jnp.asarray(y)), _numpy_loss(loss, s, y), rtol=1e-13
    )


@pytest.mark.parametrize("loss", LOSSES)
def test_derivatives_match_finite_differences(loss):
    rng = np.random.default_rng(1)
    s = rng.normal(scale=2, size=50)
    s = s[np.abs(np.abs(s) - 1) > 1e-3]  # away from the squared hinge kink
    y = rng.integers(0, 2, s.size).astype(float)
    value, d1, d2 = loss_derivatives(loss, jnp.asarray(s), jnp.asarray(y))
    h = 1e-6
    f = lambda t: _numpy_loss(loss, t, y)  # noqa: E731
    np.testing.assert_allclose(d1, (f(s + h) - f(s - h)) / (2 * h), atol=1e-7)
    h2 = 1e-4
    np.testing.assert_allclose(d2, (f(s + h2) - 2 * f(s) + f(s - h2)) / h2**2, atol=1e-5)
    np.testing.assert_allclose(value, f(s), rtol=1e-13)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("penalize_intercept", [0.0, 1.0])
def test_value_grad_hessian_against_autodiff_and_numpy(loss, penalize_intercept):
    X, y, _, c, theta = _problem(loss)
    alpha = 0.3
    args = (jnp.asarray(X), jnp.asarray(y), jnp.asarray(c), alpha, penalize_intercept)
    f, g, H = value_grad_hessian(loss, jnp.asarray(theta), *args)
    s = X @ theta[1:] + theta[0]
    scale = 1.0 if loss == "squared_error" else 0.5
    reg = scale * alpha * (np.sum(theta[1:] ** 2) + penalize_intercept * theta[0] ** 2)
    np.testing.assert_allclose(f, np.sum(c * _numpy_loss(loss, s, y)) + reg, rtol=1e-12)
    auto_grad = jax.grad(lambda t: objective(loss, t, *args))(jnp.asarray(theta))
    np.testing.assert_allclose(g, auto_grad, rtol=1e-10, atol=1e-12)
    if loss != "squared_hinge":  # autodiff of max(0, .)^2 gives the same generalised Hessian
        auto_hess = jax.hessian(lambda t: objective(loss, t, *args))(jnp.asarray(theta))
        np.testing.assert_allclose(H, auto_hess, rtol=1e-10, atol=1e-12)
    # numpy X^T D X with an explicit column of ones
    _, _, d2 = loss_derivatives(loss, jnp.asarray(s), jnp.asarray(y))
    A = np.column_stack([np.ones(len(X)), X])
    pen = 2 * scale * alpha * np.r_[penalize_intercept, np.ones(X.shape[1])]
    np.testing.assert_allclose(
        H, A.T @ (A * (c * np.asarray(d2))[:, None]) + np.diag(pen), rtol=1e-12
    )
    v = np.random.default_rng(2).normal(size=theta.size)
    np.testing.assert_allclose(
        hessian_vector_product(loss, jnp.asarray(theta), jnp.asarray(v), *args), H @ v, rtol=1e-11
    )


@pytest.mark.parametrize("loss", LOSSES)
def test_group_sums_one_pass_matches_per_group_numpy(loss):
    X, y, groups, weight, theta = _problem(loss, G=4)
    batch = Batch(*map(jnp.asarray, (X, y, groups, weight)))
    loss_sums, grad_sums, totals = group_sums(loss, jnp.asarray(theta), batch, 4)
    s = X @ theta[1:] + theta[0]
    _, d1, _ = loss_derivatives(loss, jnp.asarray(s), jnp.asarray(y))
    A = np.column_stack([np.ones(len(X)), X])
    for g in range(4):
        m = groups == g
        np.testing.assert_allclose(
            loss_sums[g], np.sum(weight[m] * _numpy_loss(loss, s[m], y[m])), rtol=1e-12
        )
        np.testing.assert_allclose(
            grad_sums[:, g], A[m].T @ (weight[m] * np.asarray(d1)[m]), rtol=1e-11
        )
        np.testing.assert_allclose(totals[g], weight[m].sum(), rtol=1e-13)
    # gradients of the per-group loss sums are the columns of grad_sums (autodiff check)
    jac = jax.jacobian(lambda t: group_sums(loss, t, batch, 4)[0])(jnp.asarray(theta))
    np.testing.assert_allclose(jac.T, grad_sums, rtol=1e-10, atol=1e-12)


def test_padding_rows_change_nothing():
    X, y, groups, weight, theta = _problem("logistic", n=101)
    padded = pad_rows(len(X), X, y, groups, weight)
    assert padded[0].shape[0] > len(X)
    full = group_sums(
        "logistic", jnp.asarray(theta), Batch(*map(jnp.asarray, (X, y, groups, weight))), 3
    )
    pad = group_sums("logistic", jnp.asarray(theta), Batch(*map(jnp.asarray, padded)), 3)
    for a, b in zip(full, pad):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_group_to_sample_weights_sums_to_group_weights():
    _, _, groups, weight, _ = _problem("logistic", G=3)
    lam = jnp.asarray([0.2, 0.5, 0.3])
    c = group_to_sample_weights(lam, jnp.asarray(groups), jnp.asarray(weight), 3)
    per_group = np.bincount(groups, weights=np.asarray(c), minlength=3)
    np.testing.assert_allclose(per_group, lam, rtol=1e-13)
