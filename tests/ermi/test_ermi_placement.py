"""Large full-batch data is not copied: an unaligned float64 X is shared with the device
as a ShiftedRows, read block by block, and the fit is the one on a padded copy."""

import jax
import numpy as np
import pytest

from fairest._kernels._buckets import aligned_empty
from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._placement import is_shifted, shifted_rows
from fairest.ermi import ERMIClassifier
from fairest.ermi._kernels import Strata, fermi_value_and_grad
from fairest.ermi._solvers import _device_strata, _place_padded

N_ROWS = 40_000  # above MIN_SHIFTED_ROWS: the smallest data placed as ShiftedRows


def _unaligned(n, d, seed=0):
    """A C-contiguous float64 (n, d) array starting 8 bytes past a 64-byte boundary."""
    buffer = aligned_empty((n * d + 1,), np.float64)
    X = buffer[1:].reshape(n, d)
    X[:] = np.random.default_rng(seed).normal(size=(n, d))
    return X


@pytest.mark.parametrize("n_logits", [1, 3])
def test_value_and_grad_on_shifted_rows_equals_the_device_copy(n_logits):
    rng = np.random.default_rng(1)
    X = _unaligned(N_ROWS, 6)
    n_classes = max(n_logits, 2)
    y = rng.integers(0, n_classes, N_ROWS).astype(np.int32)
    s = rng.integers(0, 2, N_ROWS).astype(np.int32)
    rows = (y, s, np.zeros(N_ROWS, np.int32), rng.uniform(0.5, 1.5, N_ROWS))
    flat = 0.1 * rng.normal(size=7 * n_logits)
    with jax.enable_x64(True):
        strata = _device_strata(Strata(np.full((1, 2), 2**0.5), np.ones(1), np.ones((1, 2))))
        args = (*(jax.device_put(a) for a in rows), strata, np.float64(0.7), np.float64(0.01))
        shared = shifted_rows(X, block_rows=4096)
        assert is_shifted(shared) and shared.shift > 0
        value, grad = fermi_value_and_grad(flat, shared, *args, binary=n_logits == 1)
        expected = fermi_value_and_grad(flat, jax.device_put(X), *args, binary=n_logits == 1)
    np.testing.assert_allclose(float(value), float(expected[0]), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(grad), np.asarray(expected[1]), rtol=0, atol=1e-13)


def test_large_data_is_placed_without_a_copy_and_fits_the_same_model():
    X = _unaligned(N_ROWS, 4)
    rng = np.random.default_rng(2)
    s = rng.integers(0, 2, N_ROWS)
    y = (X[:, 0] + 0.8 * s + rng.normal(size=N_ROWS) > 0).astype(int)
    padded = ERMIClassifier(fairness_weight=2.0).fit(X, y, sensitive_features=s)

    with KERNEL_TUNING.override(pad_max_bytes=1024):  # every data "large": not padded
        with jax.enable_x64(True):
            placed = _place_padded(X, y.astype(np.int32), s)
        assert is_shifted(placed[0]) and placed[0].shape == X.shape
        assert placed[1].shape == (N_ROWS,)
        shared = ERMIClassifier(fairness_weight=2.0).fit(X, y, sensitive_features=s)
    np.testing.assert_allclose(shared.coef_, padded.coef_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(shared.intercept_, padded.intercept_, rtol=0, atol=1e-8)
