"""Memory of a partial-fairness fit (issue 19.3): the data is padded and cast block by
block into one aligned buffer, a tightening round reuses the placed rows, and every pass
of the default solver sums over row blocks (no (n, d) or (n, G J) temporary). Each is
checked against the plain form."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from _partial_helpers import make_problem

from fairest._kernels._buckets import DEVICE_ALIGNMENT, bucket_size, pad_rows
from fairest.partial import _fast
from fairest.partial._common import build_data, ell_slots, padded_dense, padded_ell
from fairest.partial._defaults import PARTIAL_TUNING


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_padded_dense_is_the_padded_cast_in_one_aligned_buffer(dtype):
    X = np.random.default_rng(0).normal(size=(50, 5))
    with PARTIAL_TUNING.override(host_block_rows=7):  # several blocks and a partial one
        out = padded_dense(X, dtype)
        assert out.dtype == dtype and out.ctypes.data % DEVICE_ALIGNMENT == 0
        np.testing.assert_array_equal(out, pad_rows(50, X.astype(dtype))[0])
        np.testing.assert_array_equal(padded_dense(sp.csr_matrix(X), dtype), out)


def test_ell_of_unpadded_rows_equals_that_of_padded_rows():
    rng = np.random.default_rng(1)
    X = np.where(rng.random((70, 40)) < 0.05, rng.normal(size=(70, 40)), 0.0)
    with PARTIAL_TUNING.override(host_block_rows=16):
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
    # the row arrays too: the solver's data is that of the float64 build, bit for bit
    for name in ("y", "c0", "cg", "membership"):
        assert getattr(lean, name).dtype == np.float32
    with jax.enable_x64(True):
        cast_full, cast_lean = _fast.solver_data(full), _fast.solver_data(lean)
    for a, b in zip(jax.tree_util.tree_leaves(cast_full), jax.tree_util.tree_leaves(cast_lean)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    again = _data(X, like=lean)
    assert again.X is lean.X and again.membership is lean.membership


def test_block_rows_of_dense_sparse_and_small_data():
    """Dense data of more than ``PARTIAL_TUNING.solver_block_rows`` rows is passed over
    in blocks of that many rows; smaller data and ELL rows in one block."""
    block = PARTIAL_TUNING.solver_block_rows
    dense = jax.ShapeDtypeStruct((3 * block + 5, 4), jnp.float32)
    assert _fast.block_rows(dense) == block
    with PARTIAL_TUNING.override(solver_block_rows=64):  # the record chooses the block
        assert _fast.block_rows(dense) == 64
    assert _fast.block_rows(jnp.zeros((100, 4), jnp.float32)) == 100
    X = sp.random(200, 30, density=0.05, random_state=0, format="csr")
    assert isinstance(_data(X).X, _fast.SparseRows)
    assert _fast.block_rows(_data(X).X) == _data(X).c0.shape[0]


@pytest.mark.parametrize("metric", ["partial_statistical_parity", "partial_demographic_parity"])
def test_run_over_row_blocks_equals_the_one_block_run(metric):
    """The whole solver run with its passes over blocks of 64 rows (seven, the last
    clamped) against the same run in one block of all rows: float64 data gives the same
    model to 1e-9 (relative), the float32 solver data the same model to the documented
    float32 rounding of the solver (1e-3 of the largest coefficient, as across devices:
    ``docs/user_guide/scaling.md``) and the same objective to 1e-5."""
    with jax.enable_x64(True):
        cfg, data, x0, *_ = make_problem(metric, "ramp", n=400, d=3, n_grid=4)
        for solver_data, rtol in ((data, 1e-9), (_fast.solver_data(data), 1e-3)):
            dtype = solver_data.c0.dtype
            deltas = jnp.asarray(_fast.FAST_DELTAS, dtype)
            args = (jnp.asarray(x0, dtype), solver_data, cfg, deltas, 1e-3, 1e-5, 50, 20)
            one, one_objective, _, _, r_one, one_converged = _fast._run(*args, args[1].c0.shape[0])
            blocked, objective, _, _, r, converged = _fast._run(*args, 64)
            assert bool(converged) and bool(one_converged)
            one_x, x = np.asarray(one[int(r_one)]), np.asarray(blocked[int(r)])
            np.testing.assert_allclose(x, one_x, rtol=0, atol=rtol * np.max(np.abs(one_x)))
            assert float(objective[int(r)]) == pytest.approx(
                float(one_objective[int(r_one)]), rel=max(rtol, 1e-5)
            )
