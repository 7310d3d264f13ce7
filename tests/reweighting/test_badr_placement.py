"""BADR on an unaligned numpy X (issue 19, memory): placed as a ShiftedRows (no copy), read
by every row loop, gather and host product; the fit equals the one on an aligned copy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fairest._kernels import _placement
from fairest._kernels._buckets import aligned_empty
from fairest._kernels._placement import shifted_rows
from fairest.reweighting import BADRClassifier
from fairest.reweighting._bilevel import gather_rows, host_scores, row_block_sums_t
from fairest.reweighting._defaults import ORACLE_TUNING

N = _placement.MIN_SHIFTED_ROWS + 77


def _unaligned(n, d, seed=0):
    """An (n, d) float64 C-contiguous array starting 8 bytes past a 64-byte boundary."""
    raw = aligned_empty((n * d + 1,), np.float64)
    X = raw[1:].reshape(n, d)
    X[:] = np.random.default_rng(seed).normal(size=(n, d))
    return X


def test_gather_rows_host_scores_and_block_sums_read_the_shifted_buffer():
    X = _unaligned(N, 3)
    rng = np.random.default_rng(1)
    rows = rng.integers(0, N, 500).astype(np.int32)
    rows[:3] = [0, 1, N - 1]  # rows that overlap the head, and the last one
    w = rng.normal(size=3)
    with jax.enable_x64(True):
        shifted = shifted_rows(X)
        assert shifted.shift > 0
        np.testing.assert_array_equal(np.asarray(gather_rows(shifted, jnp.asarray(rows))), X[rows])
        np.testing.assert_allclose(host_scores(shifted, w), X @ w, rtol=1e-13, atol=1e-13)
        r = jnp.asarray(rng.normal(size=N))
        sums = row_block_sums_t(shifted, lambda r: r[None, :], r, block_rows=4096)
        np.testing.assert_allclose(
            np.asarray(sums)[:, 0], np.r_[r.sum(), np.asarray(r) @ X], rtol=1e-11
        )


@pytest.mark.parametrize(
    "Est, metric, extra",
    [
        (BADRClassifier, "demographic_parity_deviation", {}),
        (BADRClassifier, "equal_opportunity_range", {"solver": "gd", "max_iter": 25}),
    ],
)
def test_unaligned_fit_equals_the_aligned_one(Est, metric, extra, monkeypatch):
    with ORACLE_TUNING.override(pad_rows=False):  # no row bucket, as at 1e6 rows
        placed = []
        original = _placement.shifted_rows
        monkeypatch.setattr(
            _placement, "shifted_rows", lambda *a, **k: placed.append(1) or original(*a, **k)
        )
        X = _unaligned(N, 4)
        groups = np.arange(N) % 3
        X[:, 0] += 0.4 * groups
        score = X @ np.array([1.0, -0.5, 0.3, 0.0]) + 0.3 * groups
        y = (score > 0).astype(int)
        aligned = aligned_empty(X.shape, np.float64)
        aligned[:] = X
        ref = Est(metric=metric, **extra).fit(aligned, y, sensitive_features=groups)
        assert not placed
        est = Est(metric=metric, **extra).fit(X, y, sensitive_features=groups)
        assert placed  # the unaligned X went through the no-copy placement
        np.testing.assert_allclose(est.group_weights_, ref.group_weights_, atol=1e-12)
        np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-10)
        assert est.unfairness_exact_ == pytest.approx(ref.unfairness_exact_, abs=1e-10)
