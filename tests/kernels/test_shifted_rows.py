"""ShiftedRows: a float64 X that numpy did not align to 64 bytes reaches the CPU device
without a copy (its flat buffer from the first aligned element is shared), and every
kernel that reads it gives the numbers of the same kernel on an ordinary device array."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fairest._kernels._buckets as buckets
from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._glm import (
    blocked_hessian,
    hessian_vector_product,
    objective,
    row_block_pass,
    value_and_grad,
    value_grad_hessian,
)
from fairest._kernels._placement import (
    MIN_SHIFTED_ROWS,
    ShiftedRows,
    is_shifted,
    place_dense,
    shifted_rows,
)
from fairest._solvers import _driver


def offset_array(n, d, offset_bytes, seed=0):
    """A C-contiguous (n, d) float64 array starting ``offset_bytes`` past a 64-byte
    boundary, filled with normal draws."""
    raw = np.empty(n * d * 8 + 128, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + offset_bytes
    X = raw[start : start + n * d * 8].view(np.float64).reshape(n, d)
    X[:] = np.random.default_rng(seed).normal(size=(n, d))
    return X


def problem(n, d, seed=1):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.float64)
    c = rng.random(n) * (rng.random(n) > 0.1)  # sample weights, some zero
    theta = rng.normal(size=d + 1) * 0.3
    return jnp.asarray(theta), jnp.asarray(y), jnp.asarray(c)


def assert_close(ours, reference, rtol=1e-12):
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(reference)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape
        scale = max(1.0, float(np.max(np.abs(b))))
        np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def test_device_buffer_is_the_numpy_buffer():
    with jax.enable_x64(True):
        X = offset_array(MIN_SHIFTED_ROWS + 5, 3, offset_bytes=16)  # numpy's usual offset
        placed = place_dense(X)
        assert is_shifted(placed) and placed.shift == 6
        assert placed.flat.unsafe_buffer_pointer() == X.ctypes.data + 8 * placed.shift
        np.testing.assert_array_equal(np.asarray(placed.head), X.reshape(-1)[:6])


@pytest.mark.parametrize(
    "X_of",
    [
        lambda: offset_array(MIN_SHIFTED_ROWS + 5, 3, offset_bytes=0),  # aligned: shared
        lambda: offset_array(100, 3, offset_bytes=16),  # small: padded elsewhere
        lambda: offset_array(MIN_SHIFTED_ROWS + 5, 3, offset_bytes=16).astype(np.float32),
        lambda: np.asfortranarray(offset_array(MIN_SHIFTED_ROWS + 5, 3, offset_bytes=16)),
    ],
    ids=["aligned", "small", "float32", "fortran"],
)
def test_other_arrays_are_device_arrays(X_of):
    with jax.enable_x64(True):
        X = X_of()
        placed = place_dense(X)
        assert isinstance(placed, jax.Array)
        np.testing.assert_array_equal(np.asarray(placed), X)


@pytest.mark.parametrize("d", [1, 3, 7, 20])
@pytest.mark.parametrize("offset_bytes", [8, 16, 56])
def test_blocks_matmul_and_rmatmul_equal_the_dense_ones(d, offset_bytes):
    n, block = 2_011, 256  # n not a multiple of the block; shift up to 7 > d for d < 7
    with jax.enable_x64(True):
        X = offset_array(n, d, offset_bytes)
        shifted = shifted_rows(X, block_rows=block)
        assert shifted.shift == (64 - offset_bytes) // 8
        dense = jnp.asarray(np.array(X))
        for start in (0, 1, 2, 5, n - block):
            np.testing.assert_array_equal(shifted.rows(start, block), X[start : start + block])
        rng = np.random.default_rng(2)
        w, W = jnp.asarray(rng.normal(size=d)), jnp.asarray(rng.normal(size=(d, 2)))
        r, R = jnp.asarray(rng.normal(size=n)), jnp.asarray(rng.normal(size=(3, n)))
        assert_close(shifted @ w, dense @ w)
        assert_close(shifted @ W, dense @ W)
        assert_close(r @ shifted, r @ dense)
        assert_close(R @ shifted, R @ dense)


@pytest.mark.parametrize(
    "d, loss, dtype",
    [(2, "logistic", None), (7, "logistic", jnp.float32), (20, "squared_error", jnp.float64)],
)
def test_row_block_pass_equals_the_dense_pass(d, loss, dtype):
    n = 3_001
    with jax.enable_x64(True):
        X = offset_array(n, d, offset_bytes=16)
        theta, y, c = problem(n, d)
        shifted, dense = shifted_rows(X, block_rows=512), jnp.asarray(np.array(X))
        ours = row_block_pass(loss, theta, shifted, y, c, dtype, block_rows=512)
        reference = row_block_pass(loss, theta, dense, y, c, dtype, block_rows=512)
        assert_close(ours, reference)


KERNEL_CASES = [
    ("logistic", value_and_grad, ()),
    ("logistic", value_grad_hessian, (blocked_hessian(),)),
    ("squared_error", value_grad_hessian, ()),
    ("squared_error", objective, ()),
]


@pytest.mark.parametrize("loss, kernel, extra", KERNEL_CASES)
def test_jitted_kernels_equal_the_dense_ones(loss, kernel, extra):
    n, d = 40_003, 5  # above pass_block_rows(d): the fused passes run
    with jax.enable_x64(True):
        X = offset_array(n, d, offset_bytes=16)
        theta, y, c = problem(n, d)
        shifted, dense = place_dense(X), jnp.asarray(np.array(X))
        assert is_shifted(shifted)
        args = (y, c, np.float64(0.1), np.float64(1.0), *extra)
        assert_close(kernel(loss, theta, shifted, *args), kernel(loss, theta, dense, *args))


def test_hessian_vector_product_equals_the_dense_one():
    n, d = 40_003, 5
    with jax.enable_x64(True):
        X = offset_array(n, d, offset_bytes=40)
        theta, y, c = problem(n, d)
        shifted, dense = place_dense(X), jnp.asarray(np.array(X))
        args = (y, c, np.float64(0.1), np.float64(0.0))
        assert_close(
            hessian_vector_product("logistic", theta, theta, shifted, *args),
            hessian_vector_product("logistic", theta, theta, dense, *args),
        )


def test_pytree_round_trip_under_jit():
    with jax.enable_x64(True):
        X = offset_array(600, 4, offset_bytes=24)
        shifted = shifted_rows(X, block_rows=128)
        leaves, tree = jax.tree.flatten(shifted)
        again = jax.tree.unflatten(tree, leaves)
        assert isinstance(again, ShiftedRows) and again.shape == (600, 4)
        total = jax.jit(lambda S: jnp.ones(600) @ S)(shifted)
        np.testing.assert_allclose(total, X.sum(axis=0), rtol=1e-13)


@pytest.mark.parametrize("solver", ["newton", "lbfgs"])
def test_weighted_glm_fit_shares_X_and_matches_an_aligned_copy(solver):
    n, d = MIN_SHIFTED_ROWS + 77, 6
    X = offset_array(n, d, offset_bytes=16)
    rng = np.random.default_rng(3)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)
    weight = rng.random(n)
    with KERNEL_TUNING.override(pad_max_bytes=0):  # as for large data: no padding copy
        with jax.enable_x64(True):
            placed = _driver._device_data(X, y, weight)[0]
        assert is_shifted(placed)
        aligned = buckets.aligned_empty(X.shape, np.float64)
        aligned[:] = X
        fits = [
            _driver.solve_weighted_glm("logistic", data, y, weight, 1e-3, solver=solver)
            for data in (X, aligned)
        ]
    assert fits[0].converged and fits[1].converged
    np.testing.assert_allclose(fits[0].theta, fits[1].theta, rtol=0, atol=1e-12)
    assert abs(fits[0].objective - fits[1].objective) <= 1e-12 * abs(fits[1].objective)
