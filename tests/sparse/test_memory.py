"""Where a fit's data lives: no host copy of float64 C-contiguous X, a device array that
shares an aligned X's memory (XLA CPU), the same model whatever the alignment."""

import jax
import numpy as np
import pytest

from fairest._solvers import _driver
from fairest.reweighting import GroupWeightedClassifier


def _aligned_empty(shape, offset=0, alignment=64):
    nbytes = int(np.prod(shape)) * 8
    buffer = np.empty(nbytes + 2 * alignment, dtype=np.uint8)
    start = (-buffer.ctypes.data) % alignment + offset
    return buffer[start : start + nbytes].view(np.float64).reshape(shape)


def _data(offset, n=1024, d=6):  # 1024 rows: a row bucket, so nothing is padded
    rng = np.random.default_rng(0)
    X = _aligned_empty((n, d), offset)
    X[...] = rng.normal(size=(n, d))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(float)
    return X, y, rng.integers(0, 2, n)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="host buffers are shared on CPU only")
def test_aligned_input_is_shared_unaligned_copied():
    """The driver's device X is the caller's memory when it is 64-byte aligned (what XLA's
    CPU client shares); numpy's usual 16-byte offset costs the one device copy."""
    for offset, shared in [(0, True), (16, False)]:
        X, y, _ = _data(offset)
        with jax.enable_x64(True):
            X_dev, _, _ = _driver._device_data(X, y, np.ones_like(y))
        assert (X_dev.unsafe_buffer_pointer() == X.ctypes.data) is shared


def test_same_model_whatever_the_alignment():
    aligned, y, groups = _data(0)
    shifted, _, _ = _data(16)
    shifted[...] = aligned
    one = GroupWeightedClassifier(weights="balanced").fit(aligned, y, sensitive_features=groups)
    two = GroupWeightedClassifier(weights="balanced").fit(shifted, y, sensitive_features=groups)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(aligned, shifted)  # the fit never writes to X
