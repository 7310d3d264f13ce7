"""Kernels that hold no second copy of X: row-blocked Hessians, padding only for small data,
the blocked finiteness check."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest._kernels import pad_rows, value_grad_hessian
from fairest._kernels._buckets import bucket_size, pad_rows_to, padded_rows
from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._glm import blocked_hessian, value_and_grad, weighted_gram
from fairest.utils._tuning import HOST_TUNING


@pytest.mark.parametrize("n", [1000, 1024, 64, 7])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_gram_over_row_blocks_matches_numpy(n, dtype):
    """Any n, including a last block that overlaps the one before (its rows masked)."""
    rng = np.random.default_rng(n)
    X, q = rng.normal(size=(n, 5)), rng.uniform(size=n)
    expected = (X * q[:, None]).T @ X
    with jax.enable_x64(True):
        got = weighted_gram(jnp.asarray(X), jnp.asarray(q), dtype, block_rows=64)
        assert got.dtype == jnp.float64
        rtol = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared_error"])
def test_blocked_float32_hessian_marker_and_value_and_grad(loss):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(300, 4)), rng.integers(0, 2, 300).astype(float)
    c, theta = rng.uniform(size=300) / 300, rng.normal(size=5)
    with jax.enable_x64(True):
        args = (loss, jnp.asarray(theta), jnp.asarray(X), jnp.asarray(y), jnp.asarray(c), 0.1, 1.0)
        f, g, H = value_grad_hessian(*args)
        f32, g32, H32 = value_grad_hessian(*args, jnp.asarray(blocked_hessian()))
        f_only, g_only = value_and_grad(*args)
        np.testing.assert_allclose(H32, H, rtol=1e-5, atol=1e-7)
        assert float(f32) == float(f) == float(f_only)  # value and gradient stay float64
        np.testing.assert_array_equal(g32, g)
        np.testing.assert_allclose(g_only, g, rtol=1e-14, atol=1e-16)


def _numpy_pass(loss, theta, X, y, c):
    """Data term value, gradient and Hessian of ``sum_i c_i l(b + x_i^T w, y_i)`` in numpy."""
    s = X @ theta[1:] + theta[0]
    A = np.hstack([np.ones((len(X), 1)), X])
    if loss == "logistic":
        value, p = np.logaddexp(0, s) - y * s, 1 / (1 + np.exp(-s))
        d1, d2 = p - y, p * (1 - p)
    elif loss == "squared_hinge":
        signed = 2 * y - 1
        margin = np.maximum(0, 1 - signed * s)
        value, d1, d2 = margin**2, -2 * signed * margin, 2.0 * (margin > 0)
    else:
        value, d1, d2 = (s - y) ** 2, 2 * (s - y), np.full_like(s, 2.0)
    return np.sum(c * value), A.T @ (c * d1), (A * (c * d2)[:, None]).T @ A


@pytest.mark.parametrize("n", [200, 256, 257, 1000])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared_error"])
def test_fused_row_block_pass_matches_numpy(loss, n):
    """One pass over row blocks (the last one overlapping, its earlier rows masked) gives
    the value, gradient and Hessian of the data term, float64 and float32 Hessian blocks."""
    from functools import partial

    from fairest._kernels._glm import row_block_pass

    rng = np.random.default_rng(n)
    X, y = rng.normal(size=(n, 6)), rng.integers(0, 2, n).astype(float)
    c, theta = rng.uniform(size=n) / n, rng.normal(size=7)
    f, g, H = _numpy_pass(loss, theta, X, y, c)
    with jax.enable_x64(True):
        args = (jnp.asarray(theta), jnp.asarray(X), jnp.asarray(y), jnp.asarray(c))
        blocked = partial(row_block_pass, loss, block_rows=64)
        f_only, g_only = jax.jit(blocked)(*args)
        f64, g64, H64 = jax.jit(partial(blocked, hessian_dtype=jnp.float64))(*args)
        _, _, H32 = jax.jit(partial(blocked, hessian_dtype=jnp.float32))(*args)
    np.testing.assert_allclose([float(f_only), float(f64)], [f, f], rtol=1e-13)
    np.testing.assert_allclose(g_only, g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g64, g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H64, H, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H32, H, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n_rows", [257, 600, 1000, 20_480, 10**6])
@pytest.mark.parametrize("most", [256, 4096, 16_384])
def test_even_block_rows(n_rows, most):
    """Blocks of at most ``most`` rows, a multiple of 8, as few as full blocks need, and
    together at most 8 rows per block beyond ``n_rows`` (what the clamped last block
    re-reads)."""
    from fairest._kernels._glm import even_block_rows

    block = even_block_rows(n_rows, most)
    count = -(-n_rows // most)
    assert block <= most and block % 8 == 0
    assert count * block >= n_rows and count * block - n_rows < 8 * count


@pytest.mark.parametrize("cache_bytes", [0, 2**20])
@pytest.mark.parametrize("n", [1000, 600])
def test_value_and_grad_takes_the_fused_pass_above_one_block(monkeypatch, n, cache_bytes):
    """Above one block the Hessian pass is fused (600 rows: three even blocks of 200), the
    value-and-gradient pass too once X is larger than the cache (``cache_bytes`` 0), two
    products below; every way agrees with numpy."""
    from fairest._kernels import _glm, _placement

    tuning = KERNEL_TUNING.override(  # 256-row blocks at d = 4
        pass_block_bytes=8 * 4 * 256, fused_gradient_min_bytes=cache_bytes
    )
    fused = []  # the callers of each fused pass traced
    original = _glm.row_block_pass
    monkeypatch.setattr(
        _glm,
        "row_block_pass",
        lambda *a, **k: fused.append(a[5] if len(a) > 5 else None) or original(*a, **k),
    )
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(n, 4)), rng.integers(0, 2, n).astype(float)
    c, theta = rng.uniform(size=n) / n, rng.normal(size=5)
    f, g, H = _numpy_pass("logistic", theta, X, y, c)
    pen = 2 * 0.5 * 0.1 * np.r_[0.0, np.ones(4)]  # alpha = 0.1, intercept not penalised
    with tuning, jax.enable_x64(True):  # the override drops what was traced before it
        assert _placement.pass_block_rows(4) == 256
        args = ("logistic", jnp.asarray(theta), jnp.asarray(X), jnp.asarray(y), jnp.asarray(c))
        f_vg, g_vg = value_and_grad(*args, 0.1, 0.0)
        gradient_fused = list(fused)
        f_h, g_h, H_h = value_grad_hessian(*args, 0.1, 0.0)
    assert gradient_fused == ([None] if cache_bytes == 0 else [])
    assert len(fused) == len(gradient_fused) + 1  # the Hessian pass: fused either way
    penalty = 0.5 * np.sum(pen * theta**2)
    np.testing.assert_allclose([float(f_vg), float(f_h)], [f + penalty] * 2, rtol=1e-13)
    np.testing.assert_allclose(g_vg, g + pen * theta, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g_h, g + pen * theta, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H_h, H + np.diag(pen), rtol=1e-12, atol=1e-15)


def test_only_small_data_is_padded():
    small = padded_rows(1000, 8 * 12)
    assert small == bucket_size(1000) > 1000
    n_large = KERNEL_TUNING.pad_max_bytes // 800 + 1
    assert padded_rows(n_large, 800) == n_large
    X = np.ones((10, 3))
    assert pad_rows_to(10, X)[0] is X  # no copy when nothing is added
    padded = pad_rows_to(16, X)[0]
    assert padded.shape == (16, 3) and not padded[10:].any()
    np.testing.assert_array_equal(padded, pad_rows(10, X)[0][:16])


def test_padded_copies_are_aligned_and_shared_with_the_cpu_device():
    """A padded copy starts on a 64-byte boundary, so jax.device_put does not copy it
    again (CPU), and it holds the data then zero rows."""
    rng = np.random.default_rng(0)
    for n, d in [(1000, 3), (9000, 100), (5, 1)]:
        X = rng.normal(size=(n, d))
        (padded,) = pad_rows_to(bucket_size(n) + 1, X)
        assert padded.ctypes.data % 64 == 0 and padded.flags.c_contiguous
        np.testing.assert_array_equal(padded[:n], X)
        assert not padded[n:].any()
        with jax.enable_x64(True):
            device = jax.device_put(padded)
            if jax.default_backend() == "cpu":
                assert device.unsafe_buffer_pointer() == padded.ctypes.data
            np.testing.assert_array_equal(np.asarray(device), padded)


def test_finiteness_check_over_row_blocks():
    """The first non-finite entry is named wherever its block is."""
    from fairest.utils import _estimator

    with HOST_TUNING.override(check_block_bytes=64):  # blocks of 2 rows
        X = np.zeros((9, 4))
        _estimator._check_finite(X, "X")
        X[7, 2] = np.inf
        X[8, 0] = np.nan
        with pytest.raises(ValueError, match=r"contains infinity \(first at row 7, column 2\)"):
            _estimator._check_finite(X, "X")
        with pytest.raises(ValueError, match=r"contains NaN \(first at row 4\)"):
            _estimator._check_finite(np.r_[np.zeros(4), np.nan, np.inf], "y")


@pytest.mark.parametrize(("n", "block_rows"), [(1000, 128), (1000, 1000), (257, 64)])
def test_gram_and_products_one_pass_matches_numpy(n, block_rows):
    """The weighted gram and ``X^T C`` summed over the same row blocks (the last one
    clamped and masked) equal numpy's products."""
    from fairest._kernels._glm import gram_and_products

    rng = np.random.default_rng(n)
    X, q, C = rng.normal(size=(n, 7)), rng.uniform(size=n), rng.normal(size=(n, 2))
    with jax.enable_x64(True):
        gram, products = jax.jit(gram_and_products, static_argnames="block_rows")(
            jnp.asarray(X), jnp.asarray(q), jnp.asarray(C), block_rows=block_rows
        )
    np.testing.assert_allclose(np.asarray(gram), X.T @ (q[:, None] * X), atol=1e-11)
    np.testing.assert_allclose(np.asarray(products), X.T @ C, atol=1e-11)
