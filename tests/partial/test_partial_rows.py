"""Fixed-order row sums (fairest.partial._rows) against numpy, and the gradients of the
penalty baseline through them against plain autodiff. That a row-sharded fit gives the
same bits is checked on 4 virtual devices in tests/scale/test_devices_equivalence.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest.partial._rows import ROW_BLOCKS, row_dot, row_scatter, row_sum, shift_columns

# a multiple of ROW_BLOCKS (the fixed order) and one that is not (XLA's own sum)
SIZES = [8 * ROW_BLOCKS, 8 * ROW_BLOCKS + 3]


@pytest.mark.parametrize("n", SIZES)
def test_row_sums_equal_numpy(x64, n):
    rng = np.random.default_rng(n)
    a1, a2, a3 = rng.normal(size=n), rng.normal(size=(n, 5)), rng.normal(size=(n, 3, 4))
    for a in (a1, a2, a3):
        np.testing.assert_allclose(row_sum(jnp.asarray(a)), a.sum(axis=0), rtol=1e-13)
    U, V = rng.normal(size=(n, 3)), rng.normal(size=(n, 7))
    np.testing.assert_allclose(row_dot(jnp.asarray(U), jnp.asarray(V)), U.T @ V, rtol=1e-12)
    np.testing.assert_allclose(row_dot(jnp.asarray(a1), jnp.asarray(V)), a1 @ V, rtol=1e-12)
    np.testing.assert_allclose(row_dot(jnp.asarray(U), jnp.asarray(a1)), U.T @ a1, rtol=1e-12)
    np.testing.assert_allclose(
        row_dot(jnp.asarray(U), jnp.asarray(a3)), np.einsum("nm,njk->mjk", U, a3), rtol=1e-12
    )
    columns = rng.integers(0, 6, size=(n, 4)).astype(np.int32)
    values = rng.normal(size=(n, 4))
    expected = np.bincount(columns.ravel(), weights=values.ravel(), minlength=6)
    got = row_scatter(jnp.asarray(values), jnp.asarray(columns), 6)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_custom_gradients_equal_plain_autodiff(x64):
    """``linear_scores`` and ``shift_columns`` only reorder the row sums of the gradient:
    the penalised objective's gradient equals the one of the plain expression."""
    from fairest.partial._dc import linear_scores

    rng = np.random.default_rng(2)
    n, d, J = 64, 5, 3
    X = jnp.asarray(rng.normal(size=(n, d)))
    y = jnp.asarray(rng.random(n) < 0.5, dtype=jnp.float64)
    weights = jnp.asarray(rng.random((n, J)))
    theta = jnp.asarray(rng.normal(size=J))

    def ours(b, w, theta):
        s = linear_scores(b, w, X)
        ramp = jnp.clip(shift_columns(s, theta) + 0.5, 0.0, 1.0)
        return row_sum(jnp.logaddexp(0.0, s) - y * s) + jnp.sum(row_sum(weights * ramp))

    def plain(b, w, theta):
        s = X @ w + b
        ramp = jnp.clip(s[:, None] - theta[None, :] + 0.5, 0.0, 1.0)
        return jnp.sum(jnp.logaddexp(0.0, s) - y * s) + jnp.sum(weights * ramp)

    args = (jnp.asarray(0.3), jnp.asarray(rng.normal(size=d)), theta)
    for got, want in zip(
        jax.grad(ours, argnums=(0, 1, 2))(*args), jax.grad(plain, argnums=(0, 1, 2))(*args)
    ):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
