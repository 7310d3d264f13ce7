"""Memory near the data size (issue 19.3): the row-blocked passes equal the whole ones."""

import numpy as np
import pytest

from fairest import LossGapConstrainedClassifier
from fairest.constrained import _mlp
from fairest.constrained._defaults import CONSTRAINED_TUNING
from fairest.constrained._engine import _runtime


def _data(n=1000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    g = rng.integers(0, 3, n)
    y = (X[:, 0] + 0.7 * g + rng.normal(size=n) > 0.5).astype(int)
    return X, y, g, rng.uniform(0.2, 2.0, n)


def _fit_params(block_rows, weighted):
    X, y, g, sw = _data()
    with CONSTRAINED_TUNING.override(full_step_block_rows=block_rows):
        est = LossGapConstrainedClassifier(
            solver="ssl_alm", dtype="float64", max_iter=40, random_state=0, tolerance=0.01
        )
        est.fit(X, y, sensitive_features=g, sample_weight=sw if weighted else None)
    return np.concatenate([np.ravel(a) for layer in est.params_ for a in layer])


@pytest.mark.parametrize("weighted", [False, True])
def test_blocked_final_full_step_equals_whole(weighted):
    # n = 1000 is padded to 1024 rows: 16 blocks of 64 rows against one pass over all
    blocked = _fit_params(64, weighted)
    whole = _fit_params(10**9, weighted)
    start = _fit_params(10**9, weighted)
    np.testing.assert_array_equal(whole, start)  # deterministic
    np.testing.assert_allclose(blocked, whole, rtol=0, atol=1e-10)
    assert not np.array_equal(blocked, np.zeros_like(blocked))


def test_blocked_host_forward_equals_whole():
    X, _, _, _ = _data(n=1000)
    rng = np.random.default_rng(1)
    params = [
        (rng.normal(size=(6, 5)), rng.normal(size=5)),
        (rng.normal(size=(5, 2)), rng.normal(size=2)),
    ]
    whole = _mlp.numpy_forward(params, X)
    with CONSTRAINED_TUNING.override(forward_block_rows=64):
        blocked = _mlp.numpy_forward(params, X)
    np.testing.assert_allclose(blocked, whole, rtol=1e-12, atol=1e-12)
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


def test_sparse_full_pass_blocks_follow_the_tuning_record():
    """A full pass over a sparse X in blocks of a few rows equals the one-block pass; the
    block size is static in the design, so an override reaches compiled code too."""
    import jax
    import scipy.sparse as sp

    from fairest.constrained._sparse import place_with_design

    X = sp.random(50, 7, density=0.3, random_state=0, format="csr")
    W = np.random.default_rng(2).normal(size=(7, 3)).astype(np.float32)
    rows = {"y": np.zeros(50, np.int32)}
    with CONSTRAINED_TUNING.override(densify_max_bytes=0):  # the sparse placement
        whole = place_with_design(X, rows, np.float32)["X"]
    with CONSTRAINED_TUNING.override(gather_block_floats=8 * 3, densify_max_bytes=0):
        blocked = place_with_design(X, rows, np.float32)["X"]
    assert blocked.block_floats == 24 and whole.block_floats == 1 << 21
    product = jax.jit(lambda design, W: design @ W)
    expected = X.toarray().astype(np.float32) @ W
    np.testing.assert_allclose(product(whole, W), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(product(blocked, W), expected, rtol=1e-5, atol=1e-6)
