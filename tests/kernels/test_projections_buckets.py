import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.metrics import log_loss

from fairest._kernels import (
    bucket_size,
    clip_by_norm,
    cross_entropy,
    cross_entropy_grad,
    project_simplex,
    scores,
)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("seed", range(5))
def test_simplex_projection_matches_cvxpy_clarabel(seed):
    rng = np.random.default_rng(seed)
    v = rng.normal(scale=2.0, size=rng.integers(2, 12))
    x = cp.Variable(v.size)
    cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= 0, cp.sum(x) == 1]).solve(
        solver=cp.CLARABEL
    )
    projected = np.asarray(project_simplex(jnp.asarray(v)))
    np.testing.assert_allclose(projected, x.value, atol=1e-7)
    assert projected.min() >= 0 and abs(projected.sum() - 1) < 1e-12


def test_simplex_projection_is_identity_on_the_simplex():
    lam = np.array([0.1, 0.0, 0.6, 0.3])
    np.testing.assert_allclose(project_simplex(jnp.asarray(lam)), lam, atol=1e-15)


def test_clip_by_norm():
    v = jnp.asarray([3.0, 4.0])
    np.testing.assert_allclose(clip_by_norm(v, 1.0), [0.6, 0.8], rtol=1e-14)
    np.testing.assert_allclose(clip_by_norm(v, 10.0), v)
    np.testing.assert_allclose(clip_by_norm(jnp.zeros(2), 1.0), [0.0, 0.0])


def test_bucket_sizes():
    previous = 0
    for n in list(range(1, 3000)) + [10**5 + 7, 10**6, 10**7 + 1]:
        b = bucket_size(n)
        assert b >= n and b % 8 == 0 and b >= previous
        assert b <= max(64, 1.125 * n + 8)
        previous = b if n < 3000 else 0
    # neighbouring CV fold sizes share a bucket
    assert bucket_size(8000) == bucket_size(7990) == bucket_size(7700)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_cross_entropy_matches_sklearn_log_loss_and_autodiff(n_classes):
    """One cross-entropy for binary logits (n,) and class scores (n, K): its mean equals
    scikit-learn's log_loss and its gradient equals autodiff."""
    rng = np.random.default_rng(0)
    n, d = 90, 4
    X = jnp.asarray(rng.normal(size=(n, d)))
    y = rng.integers(0, n_classes, n)
    if n_classes == 2:
        theta = jnp.asarray(rng.normal(size=d + 1))
        S = scores(theta, X)
        target = jnp.asarray(y.astype(float))
        proba = np.column_stack([1 - jax.nn.sigmoid(S), jax.nn.sigmoid(S)])
    else:
        theta = jnp.asarray(rng.normal(size=(d + 1, n_classes)))
        S = scores(theta, X)
        target = jnp.asarray(y)
        proba = np.asarray(jax.nn.softmax(S, axis=1))
    losses = cross_entropy(S, target)
    assert float(jnp.mean(losses)) == pytest.approx(log_loss(y, proba), rel=1e-12)
    autodiff = jax.grad(lambda s: jnp.sum(cross_entropy(s, target)))(S)
    np.testing.assert_allclose(cross_entropy_grad(S, target), autodiff, rtol=1e-12, atol=1e-14)
