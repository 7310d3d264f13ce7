"""In-place CSR products of SparseRows on a CPU device (fairest._kernels._sparse):
``X @ w``, ``r @ X`` and the products of ``X * X`` run scipy's CSR mat-vecs on the
device buffers themselves. Checked against dense numpy, against the ``segment_sum``
forms (the other platforms' path), through jax.grad / jax.jacfwd / jax.vmap, and for
what they must not do: copy the stored entries."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

import fairest._kernels._sparse as sparse_kernels
from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._sparse import SquaredRows, sparse_rows

on_cpu = pytest.mark.skipif(jax.default_backend() != "cpu", reason="CPU devices only")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _matrix(n=211, d=19, density=0.2, seed=0, dtype=np.float64):
    X = sp.random(n, d, density=density, format="csr", random_state=seed, dtype=dtype)
    keep = (np.arange(n) % 13 != 4).astype(dtype)  # empty rows, trailing one included
    keep[-1] = 0.0
    X = sp.csr_matrix(sp.diags(keep) @ X)
    X.eliminate_zeros()
    return X


def _segment_forms(S):
    entries = (S.data, S.indices, S.row_ids, S.indptr)
    matmul = lambda w: sparse_kernels._segment_matmul(S.shape, *entries, w)  # noqa: E731
    rmatmul = lambda r: sparse_kernels._segment_rmatmul(S.shape, *entries, r)  # noqa: E731
    return matmul, rmatmul


@on_cpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_match_dense_and_segment_forms(dtype):
    X = _matrix(dtype=dtype)
    dense = X.toarray().astype(np.float64)
    S = jax.device_put(sparse_rows(X, dtype=dtype))
    assert S.uses_host_products()
    rng = np.random.default_rng(1)
    n, d = X.shape
    w, r = jnp.asarray(rng.normal(size=d)), jnp.asarray(rng.normal(size=n))
    W, M = jnp.asarray(rng.normal(size=(d, 3))), jnp.asarray(rng.normal(size=(4, n)))
    matmul, rmatmul = _segment_forms(S)
    atol = 1e-12 if dtype == np.float64 else 1e-5
    for got, segment, expected in [
        (S @ w, matmul(w), dense @ np.asarray(w)),
        (r @ S, rmatmul(r), np.asarray(r) @ dense),
        (S @ W, matmul(W), dense @ np.asarray(W)),
        (M @ S, rmatmul(M.T).T, np.asarray(M) @ dense),
        (jax.jit(lambda S, w: S @ w)(S, w), matmul(w), dense @ np.asarray(w)),
        (jax.jit(lambda S, r: r @ S)(S, r), rmatmul(r), np.asarray(r) @ dense),
    ]:
        np.testing.assert_allclose(got, expected, atol=atol)
        np.testing.assert_allclose(got, segment, atol=atol)


@on_cpu
def test_derivatives_through_host_products_match_dense():
    X = _matrix()
    dense = jnp.asarray(X.toarray())
    S = jax.device_put(sparse_rows(X))
    rng = np.random.default_rng(2)
    w, r = jnp.asarray(rng.normal(size=X.shape[1])), jnp.asarray(rng.normal(size=X.shape[0]))

    def loss(A, w, r):
        return jnp.sum(jnp.log1p(jnp.exp(A @ w))) + jnp.sum(jnp.sin(r @ A))

    for argnum in (1, 2):
        np.testing.assert_allclose(
            jax.grad(loss, argnum)(S, w, r), jax.grad(loss, argnum)(dense, w, r), atol=1e-10
        )
        np.testing.assert_allclose(
            jax.jit(jax.grad(loss, argnum))(S, w, r),
            jax.grad(loss, argnum)(dense, w, r),
            atol=1e-10,
        )
    np.testing.assert_allclose(jax.jacfwd(lambda w: S @ w)(w), dense, atol=1e-12)
    batch = jnp.asarray(rng.normal(size=(3, X.shape[1])))
    np.testing.assert_allclose(jax.vmap(lambda v: S @ v)(batch), batch @ dense.T, atol=1e-12)
    # with respect to the stored values: d(sum_i (X @ w)_i) / d x_e = w[column of e]
    values_grad = jax.grad(lambda v: jnp.sum(S._with_data(v) @ w))(S.data)
    np.testing.assert_allclose(values_grad, w[S.indices], atol=1e-12)


@on_cpu
@pytest.mark.parametrize("block_entries", [1, 7, 1 << 20])
def test_squared_products_match_dense_in_blocks(block_entries):
    with KERNEL_TUNING.override(square_block_entries=block_entries):
        X = _matrix()
        squares = X.toarray() ** 2
        S = jax.device_put(sparse_rows(X))
        Q = S * S
        assert isinstance(Q, SquaredRows)
        rng = np.random.default_rng(3)
        w, r = rng.normal(size=X.shape[1]), jnp.asarray(rng.normal(size=X.shape[0]))
        np.testing.assert_allclose(r @ Q, r @ squares, atol=1e-12)
        np.testing.assert_allclose(Q @ jnp.asarray(w), squares @ w, atol=1e-12)
        jitted = jax.jit(lambda S, r: r @ (S * S))(S, r)
        np.testing.assert_allclose(jitted, r @ squares, atol=1e-12)
        # d/dv of sum(r @ (X * X)) at stored values v: 2 v_e r[row of e]
        values_grad = jax.grad(lambda v: jnp.sum(r @ (lambda A: A * A)(S._with_data(v))))(S.data)
        np.testing.assert_allclose(values_grad, 2 * S.data * r[S.row_ids], atol=1e-12)


def test_row_blocks_cover_every_row_once():
    X = _matrix(n=97)
    indptr = X.indptr
    for entries in (1, 5, 40, 10_000):
        blocks = sparse_kernels._row_blocks(indptr, entries)
        assert blocks[0][0] == 0 and blocks[-1][1] == X.shape[0]
        assert all(a < b for a, b in blocks)
        assert all(prev[1] == nxt[0] for prev, nxt in zip(blocks, blocks[1:]))
        largest_row = int(np.max(np.diff(indptr)))
        assert max(indptr[b] - indptr[a] for a, b in blocks) <= max(entries, largest_row) * 2


@on_cpu
def test_products_read_the_device_buffers_without_copying(monkeypatch):
    """The callbacks see the device arrays' own memory (jax.pure_callback would hand
    them copies: nnz floats a call); the row of every entry is shared with the host."""
    X = _matrix()
    host = sparse_rows(X)
    S = jax.device_put(host)
    assert S.row_ids.unsafe_buffer_pointer() == host.row_ids.ctypes.data
    seen = []
    original = sparse_kernels._fill_matmul

    def spy(ctx, out, data, indices, indptr, w):
        seen.append(np.asarray(data).ctypes.data)
        return original(ctx, out, data, indices, indptr, w)

    monkeypatch.setattr(sparse_kernels, "_fill_matmul", spy)
    w = jnp.ones(X.shape[1])
    np.testing.assert_allclose(S @ w, X @ np.ones(X.shape[1]), atol=1e-12)
    assert seen == [S.data.unsafe_buffer_pointer()]


def test_entry_rows_are_the_repeated_row_indices():
    X = _matrix(n=57)
    indptr = X.indptr.astype(np.int32)
    rows = sparse_kernels._entry_rows(indptr, np.int32)
    np.testing.assert_array_equal(rows, np.repeat(np.arange(57), np.diff(indptr)))
    assert rows.ctypes.data % 64 == 0
    assert sparse_kernels._entry_rows(np.zeros(4, np.int32), np.int32).shape == (0,)


def test_host_products_off_keeps_the_segment_forms():
    X = _matrix()
    host = sparse_rows(X)
    host.host_products = False
    S = jax.device_put(host)
    assert not S.uses_host_products() and not isinstance(S * S, SquaredRows)
    rng = np.random.default_rng(5)
    w, r = rng.normal(size=X.shape[1]), rng.normal(size=X.shape[0])
    np.testing.assert_allclose(S @ jnp.asarray(w), X @ w, atol=1e-12)
    np.testing.assert_allclose(jnp.asarray(r) @ S, X.T @ r, atol=1e-12)
    np.testing.assert_allclose(jnp.asarray(r) @ (S * S), X.power(2).T @ r, atol=1e-12)
