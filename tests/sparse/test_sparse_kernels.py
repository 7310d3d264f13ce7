"""SparseRows (fairest._kernels._sparse) against dense numpy: every product the kernels
form, and every kernel of fairest._kernels._glm on sparse X against the same kernel on
the dense copy of the same data (the dense kernels are themselves checked against numpy
and finite differences in tests/kernels)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from fairest._kernels import (
    Batch,
    group_sums,
    hessian_vector_product,
    is_sparse,
    sparse_rows,
    value_and_grad,
    value_grad_hessian,
    weighted_gram,
)
from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._sparse import SparseRows
from fairest._solvers._newton_cg import hessian_diagonal


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _matrix(n=203, d=17, density=0.15, seed=0, fmt="csr"):
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    keep = np.ones(n)
    keep[5] = 0.0  # an empty row
    X = sp.csr_matrix(sp.diags(keep) @ X)
    X.eliminate_zeros()
    return X.asformat(fmt)


def _device(X, block_rows=None):
    host = sparse_rows(X)
    if block_rows is not None:  # several gram blocks even on small data
        host = sparse_rows(X)
        host.block_rows = block_rows
        indptr = host.indptr
        starts = np.arange(0, host.shape[0], block_rows)
        ends = np.minimum(starts + block_rows, host.shape[0])
        host.block_entries = int(np.max(indptr[ends] - indptr[starts]))
    return jax.device_put(host)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_products_match_dense(fmt):
    X = _matrix(fmt=fmt)
    dense = X.toarray()
    S = _device(X)
    rng = np.random.default_rng(1)
    n, d = dense.shape
    w, r = rng.normal(size=d), rng.normal(size=n)
    W, M = rng.normal(size=(d, 3)), rng.normal(size=(n, 4))
    assert is_sparse(S) and S.shape == (n, d)
    np.testing.assert_allclose(S @ jnp.asarray(w), dense @ w, atol=1e-12)
    np.testing.assert_allclose(S @ jnp.asarray(W), dense @ W, atol=1e-12)
    np.testing.assert_allclose(jnp.asarray(r) @ S, r @ dense, atol=1e-12)
    np.testing.assert_allclose(jnp.asarray(M.T) @ S, M.T @ dense, atol=1e-12)
    np.testing.assert_allclose(S.T @ jnp.asarray(M), dense.T @ M, atol=1e-12)
    np.testing.assert_allclose(jnp.asarray(r) @ (S * S), r @ dense**2, atol=1e-12)
    np.testing.assert_array_equal(S.toarray(), dense)


def test_duplicate_coo_entries_are_summed():
    rows, cols = np.array([0, 0, 2, 1]), np.array([1, 1, 0, 2])
    X = sp.coo_matrix((np.array([1.0, 2.0, 3.0, 4.0]), (rows, cols)), shape=(3, 3))
    S = jax.device_put(sparse_rows(X))
    np.testing.assert_allclose(S @ jnp.ones(3), X.toarray().sum(axis=1))


@pytest.mark.parametrize("block_rows", [None, 7, 64, 500])
def test_weighted_gram_matches_dense(block_rows):
    X = _matrix()
    dense = X.toarray()
    q = np.random.default_rng(2).uniform(0.1, 2.0, size=dense.shape[0])
    S = _device(X, block_rows)
    expected = dense.T @ (q[:, None] * dense)
    np.testing.assert_allclose(weighted_gram(S, jnp.asarray(q)), expected, atol=1e-12)
    float32 = weighted_gram(S, jnp.asarray(q), jnp.float32)
    np.testing.assert_allclose(float32, expected, rtol=1e-5, atol=1e-5)


def test_padding_rows_change_nothing():
    X = _matrix()
    S = sparse_rows(X)
    padded = jax.device_put(S.with_rows(S.shape[0] + 37))
    w = np.random.default_rng(3).normal(size=X.shape[1])
    out = padded @ jnp.asarray(w)
    assert out.shape == (X.shape[0] + 37,)
    np.testing.assert_allclose(out[: X.shape[0]], X @ w, atol=1e-12)
    np.testing.assert_array_equal(out[X.shape[0] :], 0.0)
    q = np.concatenate([np.ones(X.shape[0]), np.full(37, 5.0)])
    np.testing.assert_allclose(
        weighted_gram(padded, jnp.asarray(q)), (X.T @ X).toarray(), atol=1e-12
    )


def test_leaves_are_proportional_to_nonzeros():
    X = _matrix(n=2000, d=500, density=0.01)
    leaves = jax.tree_util.tree_leaves(jax.device_put(sparse_rows(X)))
    nbytes = sum(leaf.nbytes for leaf in leaves)
    # data (8) + column (4) + row (4) bytes per entry, plus the row pointer
    assert nbytes <= 16 * X.nnz + 4 * (X.shape[0] + 1)
    assert nbytes < X.shape[0] * X.shape[1] * 8 / 4  # far below the dense copy


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared_error"])
def test_glm_kernels_match_dense(loss):
    X = _matrix()
    dense = jnp.asarray(X.toarray())
    S = _device(X, block_rows=16)
    n, d = X.shape
    rng = np.random.default_rng(4)
    y = rng.normal(size=n) if loss == "squared_error" else rng.integers(0, 2, n).astype(float)
    c, theta, v = rng.uniform(0.2, 2.0, n), rng.normal(size=d + 1), rng.normal(size=d + 1)
    groups = jnp.asarray(rng.integers(0, 3, n).astype(np.int32))
    args = (jnp.asarray(y), jnp.asarray(c), 0.01, 1.0)
    theta = jnp.asarray(theta)
    for sparse_out, dense_out in [
        (value_and_grad(loss, theta, S, *args), value_and_grad(loss, theta, dense, *args)),
        (
            value_grad_hessian(loss, theta, S, *args),
            value_grad_hessian(loss, theta, dense, *args),
        ),
        (
            hessian_vector_product(loss, theta, jnp.asarray(v), S, *args),
            hessian_vector_product(loss, theta, jnp.asarray(v), dense, *args),
        ),
        (
            hessian_diagonal(loss, theta, S, *args),
            hessian_diagonal(loss, theta, dense, *args),
        ),
        (
            group_sums(loss, theta, Batch(S, args[0], groups, args[1]), 3),
            group_sums(loss, theta, Batch(dense, args[0], groups, args[1]), 3),
        ),
    ]:
        for a, b in zip(
            jax.tree_util.tree_leaves(sparse_out), jax.tree_util.tree_leaves(dense_out)
        ):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


def test_only_self_products_are_entrywise():
    S = jax.device_put(sparse_rows(_matrix()))
    with pytest.raises(TypeError, match="entrywise"):
        S * jax.device_put(sparse_rows(_matrix(seed=5)))
    assert isinstance(jax.tree_util.tree_map(lambda a: a, S), SparseRows)


def _one_hot_like(n=400, categories=(30, 45, 12), seed=0):
    """One-hot blocks plus a dense numeric column: few entries per row, wide d."""
    rng = np.random.default_rng(seed)
    blocks = [sp.csr_matrix(np.eye(k)[rng.integers(0, k, n)]) for k in categories]
    return sp.hstack([*blocks, sp.csr_matrix(rng.normal(size=(n, 1)))], format="csr")


@pytest.mark.parametrize("matrix", ["random", "one_hot"])
def test_outer_gram_matches_dense(matrix):
    X = _matrix() if matrix == "random" else _one_hot_like()
    q = np.random.default_rng(3).uniform(size=X.shape[0])
    rows = jax.device_put(sparse_rows(X))
    expected = X.toarray().T @ (q[:, None] * X.toarray())
    outer = jax.jit(lambda X, q: X.outer_gram(q))(rows, jnp.asarray(q))
    np.testing.assert_allclose(np.asarray(outer), expected, atol=1e-12)


def test_weighted_gram_picks_outer_products_for_few_entries_per_row():

    wide = jax.device_put(sparse_rows(_one_hot_like()))
    narrow = jax.device_put(sparse_rows(_matrix(d=17)))
    assert wide.uses_outer_gram() and not narrow.uses_outer_gram()  # 4 of 88 vs 5 of 17
    q = jnp.asarray(np.random.default_rng(4).uniform(size=wide.shape[0]))
    expected = wide.toarray().T @ (np.asarray(q)[:, None] * wide.toarray())
    np.testing.assert_allclose(np.asarray(weighted_gram(wide, q)), expected, atol=1e-12)
    with KERNEL_TUNING.override(outer_gram_cost=10**9):  # densified blocks instead
        assert not wide.uses_outer_gram()
        np.testing.assert_allclose(np.asarray(weighted_gram(wide, q)), expected, atol=1e-12)


def test_sparse_driver_takes_newton_for_one_hot_shapes():
    from fairest._solvers._driver import choose_solver

    # ACSIncome PA one-hot: 68,308 x 789 with 10 entries per row
    assert choose_solver("logistic", 68_308, 789, sparse=True, row_entries=10) == "newton"
    assert choose_solver("logistic", 68_308, 789, sparse=True) == "lbfgs"  # n p^2 = 4e10
    assert choose_solver("logistic", 10**6, 10**5, sparse=True, row_entries=10) == "lbfgs"


def test_ell_form_slots_and_products_match_dense():
    """The ELL form (``ell_rows``: every row ``k`` slots, the layout fairest.partial uses)
    is a SparseRows like any other: its products equal the dense ones, ``slots`` gives
    the slot arrays back, and ``take_rows`` returns the same form."""
    from fairest._kernels._sparse import ell_rows

    rng = np.random.default_rng(4)
    n, d, k = 37, 11, 4
    columns = np.sort(rng.integers(0, d, size=(n, k)), axis=1).astype(np.int32)
    values = rng.normal(size=(n, k))
    values[3] = 0.0  # an empty row (unused slots hold 0 at column 0)
    columns[3] = 0
    dense = np.zeros((n, d))
    np.add.at(dense, (np.repeat(np.arange(n), k), columns.ravel()), values.ravel())
    for S in (ell_rows(columns, values, d), ell_rows(jnp.asarray(columns), jnp.asarray(values), d)):
        assert is_sparse(S) and S.ell and S.shape == (n, d) and S.row_entries == k
        np.testing.assert_array_equal(np.asarray(S.row_ids), np.repeat(np.arange(n), k))
        got_values, got_columns = S.slots()
        np.testing.assert_array_equal(np.asarray(got_values), values)
        np.testing.assert_array_equal(np.asarray(got_columns), columns)
        S = jax.device_put(S)
        w, r, q = rng.normal(size=d), rng.normal(size=n), rng.uniform(size=n)
        np.testing.assert_allclose(S @ jnp.asarray(w), dense @ w, atol=1e-12)
        np.testing.assert_allclose(jnp.asarray(r) @ S, r @ dense, atol=1e-12)
        expected_gram = dense.T @ (q[:, None] * dense)
        np.testing.assert_allclose(S.weighted_gram(jnp.asarray(q)), expected_gram, atol=1e-12)
        taken = S.take_rows(jnp.asarray([4, 0, 9]))
        assert taken.ell
        np.testing.assert_allclose(taken.toarray(), dense[[4, 0, 9]], atol=0)
    with pytest.raises(ValueError, match="ELL"):
        _device(_matrix()).slots()
