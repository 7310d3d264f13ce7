"""Memory of a partial-fairness fit (issue 19.3): the data is padded and cast block by
block into one aligned buffer, a tightening round reuses the placed rows, and large data
forms the loss Hessian's Gram over row blocks. Each is checked against the plain form."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from fairest._kernels._buckets import DEVICE_ALIGNMENT, bucket_size, pad_rows
from fairest.partial import _common, _fast
from fairest.partial._common import build_data, ell_slots, padded_dense, padded_ell


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_padded_dense_is_the_padded_cast_in_one_aligned_buffer(monkeypatch, dtype):
    monkeypatch.setattr(_common, "_BLOCK_ROWS", 7)  # several blocks and a partial one
    X = np.random.default_rng(0).normal(size=(50, 5))
    out = padded_dense(X, dtype)
    assert out.dtype == dtype and out.ctypes.data % DEVICE_ALIGNMENT == 0
    np.testing.assert_array_equal(out, pad_rows(50, X.astype(dtype))[0])
    np.testing.assert_array_equal(padded_dense(sp.csr_matrix(X), dtype), out)


def test_ell_of_unpadded_rows_equals_that_of_padded_rows(monkeypatch):
    monkeypatch.setattr(_common, "_BLOCK_ROWS", 16)
    rng = np.random.default_rng(1)
    X = np.where(rng.random((70, 40)) < 0.05, rng.normal(size=(70, 40)), 0.0)
    expected = ell_slots(pad_rows(70, X)[0])
    assert expected is not None
    index, value = padded_ell(X, 70)
    assert index.shape[0] == bucket_size(70)
    np.testing.assert_array_equal(index, expected[0])
    np.testing.assert_array_equal(value, expected[1])


def _data(X, **kwargs):
    rng = np.random.default_rng(2)
    n = X.shape[0]
    y, g, w = rng.integers(0, 2, n).astype(float), rng.integers(0, 2, n), np.ones(n)
    hyper = dict(grid=np.zeros(0), slack=0.1, lo=0.2, hi=0.8, threshold=0.5, alpha=0.0)
    with jax.enable_x64(True):
        return build_data(X, y, g, w, 2, mu=0.0, rho=0.0, width=1.0, **hyper, **kwargs)


def test_build_data_in_solver_dtype_and_reused_rows():
    X = np.random.default_rng(3).normal(size=(90, 4))
    full, lean = _data(X), _data(X, x_dtype=np.float32)
    assert full.X.dtype == np.float64 and lean.X.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(lean.X), np.asarray(full.X).astype(np.float32))
    again = _data(X, like=lean)
    assert again.X is lean.X and again.membership is lean.membership


def test_blocked_gram_matches_the_one_product_form(monkeypatch):
    rng = np.random.default_rng(4)
    X = jnp.asarray(rng.normal(size=(40_000, 6)), jnp.float32)
    a = jnp.asarray(rng.random(40_000), jnp.float32)
    plain = _fast._weighted_gram(X, a)
    monkeypatch.setattr(_fast, "BLOCKED_GRAM_ROWS", 1_000)
    blocked = _fast._weighted_gram(X, a)
    X64, a64 = np.asarray(X, np.float64), np.asarray(a, np.float64)
    ones = np.column_stack([np.ones(len(X64)), X64])
    exact = ones.T @ (ones * a64[:, None])
    np.testing.assert_allclose(np.asarray(blocked), exact, rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(np.asarray(blocked), np.asarray(plain), rtol=1e-4, atol=1e-2)
