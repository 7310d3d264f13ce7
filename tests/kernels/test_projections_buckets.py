import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest._kernels import bucket_size, clip_by_norm, multinomial_group_sums, project_simplex
from fairest._kernels._multinomial import multinomial_loss, multinomial_scores


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


def test_multinomial_group_sums_against_autodiff():
    rng = np.random.default_rng(0)
    n, d, K, G = 90, 4, 3, 3
    X = jnp.asarray(rng.normal(size=(n, d)))
    y = jnp.asarray(rng.integers(0, K, n))
    groups = jnp.asarray(rng.integers(0, G, n).astype(np.int32))
    weight = jnp.asarray(rng.uniform(0.5, 1.5, n))
    theta = jnp.asarray(rng.normal(size=(d + 1, K)))
    loss_sums, grads, totals = multinomial_group_sums(theta, X, y, groups, weight, G)
    S = np.asarray(multinomial_scores(theta, X))
    ce = np.log(np.exp(S).sum(1)) - S[np.arange(n), np.asarray(y)]
    for g in range(G):
        m = np.asarray(groups) == g

        def group_loss(t, m=m):
            return jnp.sum(
                jnp.where(m, weight * multinomial_loss(multinomial_scores(t, X), y), 0.0)
            )

        np.testing.assert_allclose(loss_sums[g], np.sum(np.asarray(weight)[m] * ce[m]), rtol=1e-12)
        np.testing.assert_allclose(grads[g], jax.grad(group_loss)(theta), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(totals[g], np.asarray(weight)[m].sum())
