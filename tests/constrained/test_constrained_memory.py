"""Memory near the data size (issue 19.3): the row-blocked passes equal the whole ones."""

import numpy as np
import pytest

from fairest import LossGapConstrainedClassifier
from fairest.constrained import _mlp
from fairest.constrained._engine import _driver, _runtime, _solvers


def _data(n=1000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    g = rng.integers(0, 3, n)
    y = (X[:, 0] + 0.7 * g + rng.normal(size=n) > 0.5).astype(int)
    return X, y, g, rng.uniform(0.2, 2.0, n)


def _fit_params(monkeypatch, block_rows, weighted):
    X, y, g, sw = _data()
    monkeypatch.setattr(_solvers, "FULL_STEP_BLOCK_ROWS", block_rows)
    _driver._final_function.cache_clear()  # traced with the block size
    try:
        est = LossGapConstrainedClassifier(
            solver="ssl_alm", dtype="float64", max_iter=40, random_state=0, tolerance=0.01
        )
        est.fit(X, y, sensitive_features=g, sample_weight=sw if weighted else None)
    finally:
        _driver._final_function.cache_clear()
    return np.concatenate([np.ravel(a) for layer in est.params_ for a in layer])


@pytest.mark.parametrize("weighted", [False, True])
def test_blocked_final_full_step_equals_whole(monkeypatch, weighted):
    # n = 1000 is padded to 1024 rows: 16 blocks of 64 rows against one pass over all
    blocked = _fit_params(monkeypatch, 64, weighted)
    whole = _fit_params(monkeypatch, 10**9, weighted)
    start = _fit_params(monkeypatch, 10**9, weighted)
    np.testing.assert_array_equal(whole, start)  # deterministic
    np.testing.assert_allclose(blocked, whole, rtol=0, atol=1e-10)
    assert not np.array_equal(blocked, np.zeros_like(blocked))


def test_blocked_host_forward_equals_whole(monkeypatch):
    X, _, _, _ = _data(n=1000)
    rng = np.random.default_rng(1)
    params = [
        (rng.normal(size=(6, 5)), rng.normal(size=5)),
        (rng.normal(size=(5, 2)), rng.normal(size=2)),
    ]
    whole = _mlp.numpy_forward(params, X)
    monkeypatch.setattr(_mlp, "FORWARD_BLOCK_ROWS", 64)
    np.testing.assert_allclose(_mlp.numpy_forward(params, X), whole, rtol=1e-12, atol=1e-12)
    relu = np.maximum(X @ params[0][0] + params[0][1], 0.0)
    np.testing.assert_allclose(whole, relu @ params[1][0] + params[1][1], rtol=1e-12)


def test_padded_design_is_one_aligned_cast_copy():
    X = np.arange(30.0).reshape(10, 3)
    out = _runtime.padded_design(X, 16, np.float32)
    assert out.dtype == np.float32 and out.shape == (16, 3)
    assert out.ctypes.data % 64 == 0
    np.testing.assert_array_equal(out[:10], X.astype(np.float32))
    np.testing.assert_array_equal(out[10:], 0.0)
    assert _runtime.padded_design(X, 10, np.float64) is X  # nothing to do: no copy
