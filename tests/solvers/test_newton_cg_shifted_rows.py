"""Newton-CG on a large unaligned float64 X, which the placement layer reads in place as
a ShiftedRows (row blocks, no ``X * X``): the same model as on the dense array.

Found by the memory table at 1e6 x 100: partial parity's auto-interval model (Newton-CG)
failed with "unsupported operand type(s) for *: 'ShiftedRows' and 'ShiftedRows'".
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest._kernels._placement import is_shifted, shifted_rows
from fairest._solvers._newton_cg import (
    hessian_diagonal,
    newton_cg_solve,
    weighted_column_squares,
)


def unaligned(n, d, seed=0):
    """A C-contiguous (n, d) float64 array starting 8 bytes past a 64-byte boundary."""
    raw = np.empty(n * d * 8 + 128, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + 8
    X = raw[start : start + n * d * 8].view(np.float64).reshape(n, d)
    X[:] = np.random.default_rng(seed).normal(size=(n, d))
    return X


@pytest.mark.parametrize("n, block_rows", [(203, 64), (256, 64), (130, 64)])
def test_weighted_column_squares_of_shifted_rows_equal_the_dense_sums(n, block_rows):
    X = unaligned(n, 5)
    q = np.random.default_rng(1).random(n)
    expected = q @ (X * X)
    with jax.enable_x64(True):
        rows = shifted_rows(X, block_rows=block_rows)
        assert is_shifted(rows)
        ours = jax.jit(weighted_column_squares)(jnp.asarray(q), rows)
    np.testing.assert_allclose(np.asarray(ours), expected, rtol=1e-12)
    # a wrong block count (the last partial block dropped) must not pass the same check
    dropped = q[: (n // block_rows) * block_rows]
    if n % block_rows and n > block_rows:
        short = dropped @ (X[: dropped.size] ** 2)
        assert not np.allclose(short, expected, rtol=1e-12)


def test_newton_cg_on_shifted_rows_is_the_dense_solution():
    n, d = 300, 6
    X = unaligned(n, d, seed=2)
    rng = np.random.default_rng(3)
    with jax.enable_x64(True):
        y = jnp.asarray((X[:, 0] + rng.normal(size=n) > 0).astype(np.float64))
        c = jnp.full(n, 1.0 / n)
        args = (y, c, 1e-3, False, jnp.zeros(d + 1))
        dense = newton_cg_solve("logistic", jnp.asarray(X), *args)
        lazy = newton_cg_solve("logistic", shifted_rows(X, block_rows=64), *args)
        diag_dense = hessian_diagonal("logistic", dense.theta, jnp.asarray(X), *args[:4])
        diag_lazy = hessian_diagonal(
            "logistic", dense.theta, shifted_rows(X, block_rows=64), *args[:4]
        )
    np.testing.assert_allclose(np.asarray(lazy.theta), np.asarray(dense.theta), atol=1e-9)
    np.testing.assert_allclose(np.asarray(diag_lazy), np.asarray(diag_dense), rtol=1e-12)
