"""A pass split by rows over threads (fairest._solvers._row_split) gives the objective,
gradient and Hessian of the formulas (NumPy, float64), on device arrays and on
ShiftedRows, and the driver's L-BFGS reaches the same optimum with and without it."""

import jax
import numpy as np
import pytest
import scipy.sparse
from scipy.special import expit

from fairest._kernels._placement import is_shifted, pass_block_rows, place_dense
from fairest._kernels._sparse import sparse_rows
from fairest._solvers import _driver, _lbfgs, _row_split
from fairest._solvers._defaults import SOLVER_TUNING
from fairest._solvers._row_split import row_parts, split_pass, split_value_and_grad

ALPHA = 1e-2


def _data(n, d, seed=0, offset_bytes=0):
    """An (n, d) float64 X starting ``offset_bytes`` past a 64-byte boundary (16: numpy's
    usual offset, placed as ShiftedRows), labels in {0, 1} and positive sample weights."""
    rng = np.random.default_rng(seed)
    raw = np.empty(n * d * 8 + 128, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + offset_bytes
    X = raw[start : start + n * d * 8].view(np.float64).reshape(n, d)
    X[:] = rng.normal(size=(n, d))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)
    c = rng.random(n) / n
    return X, y, c


def _reference(theta, X, y, c, penalize_intercept):
    """Logistic objective, gradient and Hessian from their formulas (A = [1, X])."""
    A = np.hstack([np.ones((X.shape[0], 1)), X])
    s = A @ theta
    pen = np.full(theta.shape, ALPHA)
    pen[0] *= penalize_intercept
    value = np.sum(c * (np.logaddexp(0.0, s) - y * s)) + 0.5 * np.sum(pen * theta**2)
    p = expit(s)
    grad = A.T @ (c * (p - y)) + pen * theta
    hessian = A.T @ (A * (c * p * (1 - p))[:, None]) + np.diag(pen)
    return value, grad, hessian


def _close(ours, reference, rtol):
    scale = max(1.0, float(np.max(np.abs(reference))))
    np.testing.assert_allclose(ours, reference, rtol=0, atol=rtol * scale)


@pytest.mark.parametrize(
    "n, d, offset_bytes, parts",
    [
        (3000, 600, 0, [(0, 1000), (1000, 2100), (2100, 3000)]),  # 512-row blocks
        (70_000, 3, 16, [(0, 35_001), (35_001, 70_000)]),  # ShiftedRows (unaligned X)
    ],
)
@pytest.mark.parametrize("penalize_intercept", [0.0, 1.0])
def test_split_pass_matches_the_formulas(n, d, offset_bytes, parts, penalize_intercept):
    X, y, c = _data(n, d, offset_bytes=offset_bytes)
    theta = np.random.default_rng(1).normal(size=d + 1) * 0.3
    with jax.enable_x64(True):  # the threads must run in float64 too
        X_dev = place_dense(X)
        assert is_shifted(X_dev) == bool(offset_bytes)
        args = (X_dev, jax.device_put(y), jax.device_put(c), ALPHA, penalize_intercept)
        value, grad, hessian = split_pass("logistic", theta, *args, parts, np.float64)
        split_value, split_grad = split_value_and_grad("logistic", theta, *args, parts=parts)
        _, _, hessian32 = split_pass("logistic", theta, *args, parts, np.float32)
    ref_value, ref_grad, ref_hessian = _reference(theta, X, y, c, penalize_intercept)
    for ours in (value, split_value):
        _close(ours, ref_value, 1e-12)
    for ours in (grad, split_grad):
        _close(ours, ref_grad, 1e-12)
    _close(hessian, ref_hessian, 1e-12)
    _close(hessian32, ref_hessian, 1e-5)  # float32 row blocks, float64 sums


def test_row_parts_cover_the_rows_once_per_core(monkeypatch):
    d = 30
    block = pass_block_rows(d)
    monkeypatch.setattr(_row_split, "_cpu_cores", lambda: 3)
    n = 3 * SOLVER_TUNING.min_part_blocks * block + 7
    with jax.enable_x64(True):
        X = jax.device_put(np.zeros((n, d)))
        assert row_parts(X) == []  # parts below min_part_bytes (in cache): no split
    with SOLVER_TUNING.override(min_part_bytes=n * d * 8 // 3), jax.enable_x64(True):
        parts = row_parts(X)
        assert len(parts) == 3
        assert parts[0][0] == 0 and parts[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
        assert all(stop - first >= block for first, stop in parts)
        # too few rows for two parts, host numpy, sparse X: no split
        assert row_parts(jax.device_put(np.zeros((2 * block, d)))) == []
        assert row_parts(np.zeros((n, d))) == []
        X_sparse = sparse_rows(scipy.sparse.random(n, d, density=0.1, format="csr"))
        assert row_parts(X_sparse) == []
        monkeypatch.setattr(_row_split, "_cpu_cores", lambda: 1)
        assert row_parts(jax.device_put(np.zeros((n, d)))) == []


@pytest.mark.parametrize("tol", [1e-4, 1e-10])
def test_driver_reaches_the_same_optimum_with_and_without_the_split(monkeypatch, tol):
    """L-BFGS passes split over 2 parts against the one-thread kernel, at sklearn's tol
    and at 1e-10 (then finished by the Newton polish)."""
    X, y, c = _data(40_000, 60, seed=2)
    monkeypatch.setattr(_row_split, "_cpu_cores", lambda: 2)
    with SOLVER_TUNING.override(min_part_bytes=1):
        split = _driver.solve_weighted_glm("logistic", X, y, c, ALPHA, tol=tol, solver="lbfgs")
        with jax.enable_x64(True):
            assert len(row_parts(jax.device_put(X))) == 2
        monkeypatch.setattr(_lbfgs, "row_parts", lambda X: [])
        whole = _driver.solve_weighted_glm("logistic", X, y, c, ALPHA, tol=tol, solver="lbfgs")
    assert split.converged and whole.converged
    assert abs(split.objective - whole.objective) <= 1e-12 * abs(whole.objective)
    if tol < 1e-6:
        np.testing.assert_allclose(split.theta, whole.theta, rtol=0, atol=1e-8)
        _, grad, _ = _reference(split.theta, X, y, c, 0.0)
        assert np.max(np.abs(grad)) <= 1e-9
