"""Sparse design matrices for the shared kernels: :class:`SparseRows`, a row-sorted COO
(CSR with an explicit row index per entry) that behaves like a dense ``X`` in the products
the kernels form, so every kernel of :mod:`fairest._kernels._glm` runs on it unchanged.

The products are a gather and a ``segment_sum`` over the stored entries, O(nnz):

- ``X @ w = segment_sum(data * w[indices], row_ids, n)`` (sorted segments);
- ``r @ X = segment_sum(data * r[row_ids], indices, d)``;
- ``M @ X`` for a dense (k, n) ``M`` and ``X.T @ M`` for a dense (n, k) ``M`` the same
  way, one column of ``M`` per output row (the per-group sums of BADR's Jacobian);
- ``X * X`` (the Jacobi preconditioner's squared entries) squares the stored values.

Measured against ``jax.experimental.sparse.BCOO`` (``benchmarks/sparse_speed.py``, XLA
CPU, float64): at 32,561 x 123 with 440,550 entries ``X @ w`` takes 0.9 ms here against
8.3 ms for BCOO, ``r @ X`` 0.6 ms against 4.0 ms. The weighted gram ``X^T diag(q) X``
(Newton's Hessian block, wanted only where d is small) densifies one block of rows at a
time (:meth:`SparseRows.weighted_gram`): a (block, d) temporary, never (n, d).

Nothing here densifies ``X``; the pytree's leaves are the stored entries, so a fit's
device copy is O(nnz).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["SparseRows", "is_sparse", "sparse_rows"]

# Floats of one densified row block of :meth:`SparseRows.weighted_gram` (8 MiB in float64).
GRAM_BLOCK_FLOATS = 1 << 20


def is_sparse(X) -> bool:
    """Whether ``X`` is a :class:`SparseRows` (a kernel-side sparse design matrix)."""
    return isinstance(X, SparseRows)


@jax.tree_util.register_pytree_node_class
class SparseRows:
    """An (n, d) sparse matrix as row-sorted COO entries, usable as ``X`` in every kernel.

    Parameters
    ----------
    data : array of shape (nnz,)
        Stored values, sorted by row.
    indices : array of shape (nnz,)
        Column of every stored value.
    row_ids : array of shape (nnz,)
        Row of every stored value (non-decreasing).
    indptr : array of shape (n + 1,)
        Start of every row's entries in ``data`` (CSR's row pointer).
    shape : tuple of int
        ``(n, d)``.
    block_rows : int
        Rows per densified block of :meth:`weighted_gram`.
    block_entries : int
        Most entries in any block of ``block_rows`` rows (static window length).
    """

    def __init__(self, data, indices, row_ids, indptr, shape, block_rows=1, block_entries=1):
        self.data = data
        self.indices = indices
        self.row_ids = row_ids
        self.indptr = indptr
        self.shape = tuple(int(s) for s in shape)
        self.block_rows = int(block_rows)
        self.block_entries = int(block_entries)

    # --- pytree -------------------------------------------------------------------------
    def tree_flatten(self):
        children = (self.data, self.indices, self.row_ids, self.indptr)
        return children, (self.shape, self.block_rows, self.block_entries)

    @classmethod
    def tree_unflatten(cls, aux, children):
        shape, block_rows, block_entries = aux
        return cls(*children, shape, block_rows, block_entries)

    # --- array-like attributes ---------------------------------------------------------
    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return 2

    @property
    def nnz(self) -> int:
        return int(self.data.shape[0])

    @property
    def T(self) -> _TransposedRows:
        return _TransposedRows(self)

    def _with_data(self, data) -> SparseRows:
        return SparseRows(
            data,
            self.indices,
            self.row_ids,
            self.indptr,
            self.shape,
            self.block_rows,
            self.block_entries,
        )

    def with_rows(self, length: int) -> SparseRows:
        """The same entries in a matrix of ``length >= n`` rows (empty padding rows: only
        ``indptr`` grows, by ``length - n`` entries)."""
        n, d = self.shape
        if length == n:
            return self
        xp = np if isinstance(self.indptr, np.ndarray) else jnp
        tail = xp.full((length - n,), self.indptr[-1], dtype=self.indptr.dtype)
        indptr = xp.concatenate([self.indptr, tail])
        return SparseRows(
            self.data,
            self.indices,
            self.row_ids,
            indptr,
            (length, d),
            self.block_rows,
            self.block_entries,
        )

    def astype(self, dtype) -> SparseRows:
        return self._with_data(self.data.astype(dtype))

    # --- products ----------------------------------------------------------------------
    def __matmul__(self, w):
        """``X @ w`` for ``w`` of shape (d,) or (d, k)."""
        n = self.shape[0]
        gathered = w[self.indices]
        values = self.data * gathered if w.ndim == 1 else self.data[:, None] * gathered
        return jax.ops.segment_sum(values, self.row_ids, n, indices_are_sorted=True)

    def __rmatmul__(self, r):
        """``r @ X`` for ``r`` of shape (n,) or (k, n)."""
        d = self.shape[1]
        if r.ndim == 1:
            return jax.ops.segment_sum(self.data * r[self.row_ids], self.indices, d)
        values = self.data[:, None] * r.T[self.row_ids]  # (nnz, k)
        return jax.ops.segment_sum(values, self.indices, d).T

    def __mul__(self, other):
        """Entrywise square ``X * X`` (the only entrywise product the kernels form)."""
        if other is self:
            return self._with_data(self.data * self.data)
        raise TypeError("SparseRows multiplies entrywise only with itself (X * X).")

    def weighted_gram(self, q, dtype=None):
        """``X^T diag(q) X`` (d, d), summed over densified blocks of ``block_rows`` rows.

        Each block's entries lie in a window of ``block_entries`` stored values starting
        at the block's first entry (clamped to the end); entries of other rows in that
        window are masked out. Traceable; costs O(nnz + n d^2) flops, (block, d) memory.
        """
        n, d = self.shape
        dtype = self.dtype if dtype is None else dtype
        rows = self.block_rows
        window = min(self.block_entries, self.nnz)
        if window == 0:
            return jnp.zeros((d, d), self.dtype)

        def add_block(k, total):
            first_row = k * rows
            start = jnp.clip(self.indptr[jnp.minimum(first_row, n)], 0, self.nnz - window)
            take = lambda a: jax.lax.dynamic_slice_in_dim(a, start, window)  # noqa: E731
            local = take(self.row_ids) - first_row
            inside = (local >= 0) & (local < rows)
            values = jnp.where(inside, take(self.data), 0.0).astype(dtype)
            block = jnp.zeros((rows, d), dtype).at[jnp.where(inside, local, 0), take(self.indices)]
            block = block.add(values)
            weights = jax.lax.dynamic_slice_in_dim(_padded(q, rows), first_row, rows)
            return total + ((block * weights[:, None].astype(dtype)).T @ block).astype(self.dtype)

        num_blocks = -(-n // rows)
        return jax.lax.fori_loop(0, num_blocks, add_block, jnp.zeros((d, d), self.dtype))

    def toarray(self) -> np.ndarray:
        """Dense numpy copy (tests and small data only)."""
        dense = np.zeros(self.shape, dtype=np.asarray(self.data).dtype)
        np.add.at(
            dense, (np.asarray(self.row_ids), np.asarray(self.indices)), np.asarray(self.data)
        )
        return dense


class _TransposedRows:
    """``X.T`` of a :class:`SparseRows`: only ``X.T @ M`` (M dense, (n,) or (n, k))."""

    def __init__(self, matrix: SparseRows):
        self.matrix = matrix
        self.shape = matrix.shape[::-1]

    def __matmul__(self, M):
        if M.ndim == 1:
            return M @ self.matrix
        return (M.T @ self.matrix).T


def _padded(q, rows: int):
    """``q`` with ``rows`` zeros appended: every block's slice of weights is in bounds."""
    return jnp.concatenate([q, jnp.zeros((rows,), q.dtype)])


def _block_entries(indptr: np.ndarray, block_rows: int) -> int:
    """Most stored entries in any block of ``block_rows`` consecutive rows."""
    n = indptr.shape[0] - 1
    starts = np.arange(0, n, block_rows)
    ends = np.minimum(starts + block_rows, n)
    return max(1, int(np.max(indptr[ends] - indptr[starts], initial=0)))


def sparse_rows(X, dtype=np.float64) -> SparseRows:
    """A host :class:`SparseRows` (numpy leaves) of a scipy sparse matrix, O(nnz) memory.

    CSR input with sorted indices is used as it is (its arrays are not copied when
    ``dtype`` matches); CSC / COO are converted to CSR once (the one conversion scipy
    needs). Indices are int32 when they fit. Put it on a device with ``jax.device_put``
    (inside ``jax.enable_x64`` for float64).
    """
    import scipy.sparse as sp

    csr = X if X.format == "csr" else sp.csr_matrix(X)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()  # sorts the indices too
    n, d = csr.shape
    index_dtype = np.int32 if max(n, d, csr.nnz) < np.iinfo(np.int32).max else np.int64
    indptr = csr.indptr.astype(index_dtype, copy=False)
    row_ids = np.repeat(np.arange(n, dtype=index_dtype), np.diff(indptr))
    block_rows = max(1, min(n, GRAM_BLOCK_FLOATS // max(1, d)))
    return SparseRows(
        np.asarray(csr.data, dtype=dtype),
        csr.indices.astype(index_dtype, copy=False),
        row_ids,
        indptr,
        (n, d),
        block_rows,
        _block_entries(indptr, block_rows),
    )
