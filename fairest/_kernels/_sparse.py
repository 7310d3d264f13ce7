"""Sparse design matrices for the shared kernels: :class:`SparseRows`, a row-sorted COO
(CSR with an explicit row index per entry) that behaves like a dense ``X`` in the products
the kernels form, so every kernel of :mod:`fairest._kernels._glm` runs on it unchanged.

The products are O(nnz). On a CPU device, ``X @ w`` and ``r @ X`` of the CSR form run
scipy's compiled CSR mat-vecs on the device buffers in place (``buffer_callback``: no
copy, no (nnz,) temporary; see the products section below); elsewhere, and for the ELL
form, they are a gather and a ``segment_sum`` over the stored entries:

- ``X @ w = segment_sum(data * w[indices], row_ids, n)`` (sorted segments);
- ``r @ X = segment_sum(data * r[row_ids], indices, d)``;
- ``M @ X`` for a dense (k, n) ``M`` and ``X.T @ M`` for a dense (n, k) ``M`` the same
  way, one column of ``M`` per output row (the per-group sums of BADR's Jacobian);
- ``X * X`` (the Jacobi preconditioner's squared entries) squares the stored values
  (:class:`SquaredRows`: one block of squares at a time, never nnz of them at once).
- ``X[rows]`` (:func:`take_rows`: SGD minibatches, BADR's one-group row blocks) gathers
  each row's entries into ``row_entries`` slots, and :func:`squared_row_norms` gives
  ``||x_i||^2`` (DP-FERMI's per-sample clipping) from the stored values;
- ``X^T diag(q) X`` from per-row outer products (:meth:`SparseRows.outer_gram`, O(n k^2)
  for k entries per row) where rows hold few entries next to d (one-hot data).

These products are faster than ``jax.experimental.sparse.BCOO``'s on XLA CPU
(``benchmarks/sparse_speed.py``, figures in ``benchmarks/results/sparse_speed*.md``).
The weighted gram ``X^T diag(q) X``
(Newton's Hessian block, wanted only where d is small) densifies one block of rows at a
time (:meth:`SparseRows.weighted_gram`): a (block, d) temporary, never (n, d).

Nothing here densifies ``X``; the pytree's leaves are the stored entries, so a fit's
device copy is O(nnz): the values and columns once (shared, not copied, where the
caller's arrays are 64-byte aligned) and the row of every entry, built aligned so that
the device shares it (:func:`sparse_rows`).

The same class holds the ELL (padded rows) form: :func:`ell_rows` gives every row the same
number ``k`` of slots (unused ones hold explicit zeros at column 0), so the entries of row
``i`` are ``[i k, (i + 1) k)`` and :meth:`SparseRows.slots` reshapes them to ``(n, k)``
blocks at no cost. Its entry arrays are row-aligned (shardable by rows, as
``fairest.partial`` does) and ``X @ w`` is a gather and a sum over the ``k`` slots of every
row. :meth:`SparseRows.take_rows` returns this form too.
"""

from __future__ import annotations

import functools
import importlib.util
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._defaults import KERNEL_TUNING

__all__ = [
    "SparseRows",
    "SquaredRows",
    "ell_rows",
    "is_sparse",
    "sparse_rows",
    "squared_row_norms",
    "take_rows",
]


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
    row_entries : int, optional
        Most entries in any one row (the static width of :meth:`take_rows`); computed
        from ``indptr`` when it is a numpy array and this is not given.
    ell : bool, default=False
        Every row holds exactly ``row_entries`` slots, in order (the ELL form of
        :func:`ell_rows`): :meth:`slots` is then available.
    host_products : bool, default=True
        Whether ``X @ w`` and ``r @ X`` of the CSR form may run as in-place CSR mat-vecs
        on a CPU device (:meth:`uses_host_products`); False keeps the ``segment_sum``
        forms (e.g. for entries a caller shards over several devices itself).
    """

    def __init__(
        self,
        data,
        indices,
        row_ids,
        indptr,
        shape,
        block_rows=1,
        block_entries=1,
        row_entries=None,
        ell=False,
        host_products=True,
    ):
        self.data = data
        self.indices = indices
        self.row_ids = row_ids
        self.indptr = indptr
        self.shape = tuple(int(s) for s in shape)
        self.block_rows = int(block_rows)
        self.block_entries = int(block_entries)
        if row_entries is None and isinstance(indptr, np.ndarray):
            row_entries = int(np.max(np.diff(indptr), initial=0))
        self.row_entries = None if row_entries is None else int(row_entries)
        self.ell = bool(ell)
        self.host_products = bool(host_products)

    # --- pytree -------------------------------------------------------------------------
    def tree_flatten(self):
        children = (self.data, self.indices, self.row_ids, self.indptr)
        aux = (
            self.shape,
            self.block_rows,
            self.block_entries,
            self.row_entries,
            self.ell,
            self.host_products,
        )
        return children, aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)

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
        children, aux = self.tree_flatten()
        return SparseRows.tree_unflatten(aux, (data, *children[1:]))

    def slots(self):
        """``(values, columns)``, each ``(n, row_entries)``, of an ELL-form matrix
        (:func:`ell_rows`): row ``i`` is ``sum_l values[i, l] e_{columns[i, l]}``.
        A reshape of the stored entries (traceable, no copy)."""
        if not self.ell:
            raise ValueError("slots need the ELL form (build the matrix with ell_rows).")
        n = self.shape[0]
        width = self.row_entries
        return self.data.reshape(n, width), self.indices.reshape(n, width)

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
            self.row_entries,
            host_products=self.host_products,
        )  # the padding rows hold no slots: not the ELL form

    def astype(self, dtype) -> SparseRows:
        return self._with_data(self.data.astype(dtype))

    # --- products ----------------------------------------------------------------------
    def uses_host_products(self) -> bool:
        """Whether ``X @ w`` and ``r @ X`` run as CSR mat-vecs on the stored arrays in
        place (:func:`_csr_matmul`, on a CPU device): the CSR form with stored entries;
        the ELL form (:func:`ell_rows`, possibly sharded by rows) keeps the gather and
        ``segment_sum`` products."""
        return self.host_products and not self.ell and self.nnz > 0 and _has_buffer_callback()

    def __matmul__(self, w):
        """``X @ w`` for ``w`` of shape (d,) or (d, k)."""
        entries = (self.data, self.indices, self.row_ids, self.indptr)
        if self.uses_host_products():
            return _csr_matmul(self.shape, *entries, w)
        return _segment_matmul(self.shape, *entries, w)

    def __rmatmul__(self, r):
        """``r @ X`` for ``r`` of shape (n,) or (k, n)."""
        entries = (self.data, self.indices, self.row_ids, self.indptr)
        columns = r if r.ndim == 1 else r.T  # (n,) or (n, k)
        if self.uses_host_products():
            out = _csr_rmatmul(self.shape, *entries, columns)
        else:
            out = _segment_rmatmul(self.shape, *entries, columns)
        return out if r.ndim == 1 else out.T

    def __mul__(self, other):
        """Entrywise square ``X * X`` (the only entrywise product the kernels form)."""
        if other is self and self.uses_host_products():
            return SquaredRows(self)  # the squares never stored (nnz floats)
        if other is self:
            return self._with_data(self.data * self.data)
        raise TypeError("SparseRows multiplies entrywise only with itself (X * X).")

    def squared_row_norms(self):
        """``||x_i||^2`` for every row, (n,), O(nnz)."""
        squares = self.data * self.data
        return jax.ops.segment_sum(squares, self.row_ids, self.shape[0], indices_are_sorted=True)

    def row_slots(self, rows, valid=None):
        """The entries of rows ``rows`` (k,) as padded (k, row_entries) blocks: values
        (0 in unused slots and on rows with ``valid`` False) and columns (0 there).
        Traceable; ``row_entries`` (the most entries of any row) is static."""
        if self.row_entries is None:
            raise ValueError("row slots need row_entries (build the matrix with sparse_rows).")
        width = max(1, self.row_entries)
        k = rows.shape[0]
        starts = self.indptr[rows]
        counts = self.indptr[rows + 1] - starts
        slot = jnp.arange(width, dtype=starts.dtype)
        inside = slot[None, :] < counts[:, None]
        if valid is not None:
            inside = inside & valid[:, None]
        if self.nnz == 0:
            return jnp.zeros((k, width), self.dtype), jnp.zeros((k, width), self.indices.dtype)
        position = jnp.where(inside, starts[:, None] + slot[None, :], 0)
        values = jnp.where(inside, self.data[position], 0)
        return values, jnp.where(inside, self.indices[position], 0)

    def take_rows(self, rows) -> SparseRows:
        """``X[rows]`` for in-range row indices ``rows`` (k,), traceable.

        Every taken row gets ``row_entries`` slots (the most entries of any row, static),
        the unused ones holding explicit zeros: (k * row_entries) entries, no (k, d) array.
        """
        values, columns = self.row_slots(rows)
        k, width = values.shape
        index_dtype = self.indptr.dtype
        row_ids = jnp.repeat(jnp.arange(k, dtype=index_dtype), width, total_repeat_length=k * width)
        indptr = jnp.arange(k + 1, dtype=index_dtype) * width
        block_rows = max(1, min(k, self.block_rows))
        return SparseRows(
            values.ravel(),
            columns.ravel(),
            row_ids,
            indptr,
            (k, self.shape[1]),
            block_rows,
            block_rows * width,
            width,
            True,
        )

    def uses_outer_gram(self) -> bool:
        """Whether :meth:`weighted_gram` sums per-row outer products (O(n k^2) scattered
        adds, k = ``row_entries``) rather than densified row blocks (O(n d^2) GEMM flops):
        see ``KERNEL_TUNING.outer_gram_cost``."""
        if self.row_entries is None or self.shape[1] ** 2 >= np.iinfo(np.int32).max:
            return False
        width = max(1, self.row_entries)
        return KERNEL_TUNING.outer_gram_cost * width * width < self.shape[1] ** 2

    def outer_gram(self, q):
        """``X^T diag(q) X`` (d, d) as the sum over rows of ``q_i x_i x_i^T`` restricted to
        the row's stored entries: (k, k) products scattered into the (d, d) result, summed
        over blocks of rows (at most ``KERNEL_TUNING.outer_gram_block`` products each). Traceable;
        O(n k^2) work and O(d^2 + block) memory, whatever d."""
        n, d = self.shape
        width = max(1, self.row_entries)
        rows_per_block = max(1, min(n, KERNEL_TUNING.outer_gram_block // (width * width)))

        def add_block(b, total):
            rows = b * rows_per_block + jnp.arange(rows_per_block)
            valid = rows < n
            rows = jnp.minimum(rows, n - 1)
            values, columns = self.row_slots(rows, valid)
            weighted = values * jnp.where(valid, q[rows], 0.0)[:, None]
            products = weighted[:, :, None] * values[:, None, :]
            flat = columns[:, :, None].astype(jnp.int32) * d + columns[:, None, :]
            return total.at[flat.ravel()].add(products.ravel())

        num_blocks = -(-n // rows_per_block)
        total = jax.lax.fori_loop(0, num_blocks, add_block, jnp.zeros((d * d,), self.dtype))
        return total.reshape(d, d)

    def weighted_gram(self, q, dtype=None):
        """``X^T diag(q) X`` (d, d): :meth:`outer_gram` where rows hold few entries next
        to d (:meth:`uses_outer_gram`), else summed over densified blocks of ``block_rows``
        rows (``dtype``, e.g. float32, applies to these blocks only).

        Each block's entries lie in a window of ``block_entries`` stored values starting
        at the block's first entry (clamped to the end); entries of other rows in that
        window are masked out. Traceable; costs O(nnz + n d^2) flops, (block, d) memory.
        """
        if self.uses_outer_gram():
            return self.outer_gram(q)
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


@jax.tree_util.register_pytree_node_class
class SquaredRows:
    """``X * X`` of a CSR-form :class:`SparseRows` for its two products, ``q @ (X * X)``
    (the Jacobi preconditioner's Hessian diagonal) and ``(X * X) @ w``: in place on a
    CPU device, squaring one block of stored values at a time
    (``KERNEL_TUNING.square_block_entries``), else the ``segment_sum`` forms on ``data ** 2``."""

    def __init__(self, matrix: SparseRows):
        self.matrix = matrix
        self.shape = matrix.shape
        self.ndim = 2

    def tree_flatten(self):
        return (self.matrix,), ()

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    @property
    def dtype(self):
        return self.matrix.dtype

    def _entries(self):
        m = self.matrix
        return (m.data, m.indices, m.row_ids, m.indptr)

    def __matmul__(self, w):
        return _squared_matmul(self.shape, *self._entries(), w)

    def __rmatmul__(self, r):
        columns = r if r.ndim == 1 else r.T
        out = _squared_rmatmul(self.shape, *self._entries(), columns)
        return out if r.ndim == 1 else out.T


class _TransposedRows:
    """``X.T`` of a :class:`SparseRows`: only ``X.T @ M`` (M dense, (n,) or (n, k))."""

    def __init__(self, matrix: SparseRows):
        self.matrix = matrix
        self.shape = matrix.shape[::-1]

    def __matmul__(self, M):
        if M.ndim == 1:
            return M @ self.matrix
        return (M.T @ self.matrix).T


# --- products ----------------------------------------------------------------------------
# ``X @ w`` and ``r @ X`` of a CSR-form SparseRows. On a CPU device they are scipy's CSR
# mat-vecs (compiled, one pass over the stored entries, no temporary) run by
# ``jax.experimental.buffer_callback`` on the device buffers themselves: no copy, where
# ``jax.pure_callback`` copies its operands (a copy of the entries every call). XLA CPU's
# gather and scatter make the ``segment_sum`` forms several times slower than scipy's
# mat-vecs (benchmarks/sparse_speed.py). Other platforms lower the ``segment_sum`` forms
# (``jax.lax.platform_dependent``). Both are linear: their JVP is the ``segment_sum`` form
# applied to the tangent, which JAX transposes for reverse mode, so ``jax.grad``,
# ``jax.jvp`` and ``jax.jacfwd`` through them are exact (at the ``segment_sum`` speed).


def _segment_matmul(shape, data, indices, row_ids, indptr, w):
    """``X @ w`` (w: (d,) or (d, k)) as a gather and a sorted ``segment_sum``."""
    gathered = w[indices]
    values = data * gathered if w.ndim == 1 else data[:, None] * gathered
    return jax.ops.segment_sum(values, row_ids, shape[0], indices_are_sorted=True)


def _segment_rmatmul(shape, data, indices, row_ids, indptr, r):
    """``X.T @ r`` (r: (n,) or (n, k)) as a gather and a ``segment_sum`` (a scatter)."""
    values = data * r[row_ids] if r.ndim == 1 else data[:, None] * r[row_ids]
    return jax.ops.segment_sum(values, indices, shape[1])


def _host_csr(data, indices, indptr, num_columns: int):
    """A scipy CSR matrix over numpy views of the buffers (no copy)."""
    import scipy.sparse as sp

    indptr = np.asarray(indptr)
    parts = (np.asarray(data), np.asarray(indices), indptr)
    return sp.csr_matrix(parts, shape=(indptr.shape[0] - 1, num_columns), copy=False)


def _sparsetools():
    """scipy's compiled CSR kernels (``csr_matvec``, ``csc_matvec``: ``y += A x`` into a
    given ``y``), None where this scipy lacks them."""
    try:
        from scipy.sparse import _sparsetools
    except ImportError:  # pragma: no cover - scipy's layout changed
        return None
    return _sparsetools if hasattr(_sparsetools, "csc_matvec") else None


def _accumulate_in_place(kernel: str, out, data, indices, indptr, operand) -> bool:
    """``out = 0; out += A operand`` by scipy's ``kernel`` writing into ``out`` itself (no
    result array, no copy): for 1-D operands of the stored values' dtype. False where it
    does not apply (the caller then goes through ``scipy.sparse``)."""
    tools = _sparsetools()
    same = data.dtype == operand.dtype == out.dtype and indices.dtype == indptr.dtype
    if tools is None or operand.ndim != 1 or not same:
        return False
    out.fill(0)
    n = indptr.shape[0] - 1
    sizes = (n, operand.shape[0]) if kernel == "csr_matvec" else (out.shape[0], n)
    getattr(tools, kernel)(*sizes, indptr, indices, data, operand, out)
    return True


def _fill_matmul(ctx, out, data, indices, indptr, w):
    """buffer_callback body: ``out[...] = X @ w``."""
    out, w = np.asarray(out), np.asarray(w)
    data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
    if not _accumulate_in_place("csr_matvec", out, data, indices, indptr, w):
        out[...] = _host_csr(data, indices, indptr, w.shape[0]) @ w


def _fill_rmatmul(ctx, out, data, indices, indptr, r):
    """buffer_callback body: ``out[...] = X.T @ r`` (CSR read as the CSC of ``X.T``)."""
    out, r = np.asarray(out), np.asarray(r)
    data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
    if not _accumulate_in_place("csc_matvec", out, data, indices, indptr, r):
        out[...] = _host_csr(data, indices, indptr, out.shape[0]).T @ r


def _row_blocks(indptr: np.ndarray, entries: int) -> list[tuple[int, int]]:
    """Consecutive row ranges of about ``entries`` stored values each (a row with more
    is a range of its own)."""
    n, nnz = indptr.shape[0] - 1, int(indptr[-1])
    targets = np.arange(0, nnz, max(1, entries))
    firsts = np.unique(np.searchsorted(indptr, targets, side="right") - 1)
    bounds = [*firsts.tolist(), n] if firsts.size else [0, n]
    bounds[0] = 0
    return list(zip(bounds[:-1], bounds[1:]))


def _squared_blocks(data, indices, indptr, num_columns: int):
    """``(first, stop, block)``: CSR row blocks of ``X * X`` (squared values, one block
    of ``KERNEL_TUNING.square_block_entries`` at a time)."""
    import scipy.sparse as sp

    data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
    for first, stop in _row_blocks(indptr, KERNEL_TUNING.square_block_entries):
        start, end = indptr[first], indptr[stop]
        parts = (np.square(data[start:end]), indices[start:end], indptr[first : stop + 1] - start)
        yield first, stop, sp.csr_matrix(parts, shape=(stop - first, num_columns), copy=False)


def _fill_squared_matmul(ctx, out, data, indices, indptr, w):
    """buffer_callback body: ``out[...] = (X * X) @ w``."""
    out, w = np.asarray(out), np.asarray(w)
    for first, stop, block in _squared_blocks(data, indices, indptr, w.shape[0]):
        out[first:stop] = block @ w


def _fill_squared_rmatmul(ctx, out, data, indices, indptr, r):
    """buffer_callback body: ``out[...] = (X * X).T @ r``."""
    out, r = np.asarray(out), np.asarray(r)
    out[...] = 0
    for first, stop, block in _squared_blocks(data, indices, indptr, out.shape[0]):
        out += block.T @ r[first:stop]


@functools.cache
def _has_buffer_callback() -> bool:
    """Whether this JAX has ``jax.experimental.buffer_callback`` (older ones, which
    ``jax>=0.4.35`` admits, keep the ``segment_sum`` products)."""
    return importlib.util.find_spec("jax.experimental.buffer_callback") is not None


def _in_place(fill, out_shape, data, indices, indptr, operand):
    from jax.experimental.buffer_callback import buffer_callback

    result = jax.ShapeDtypeStruct(out_shape, jnp.result_type(data, operand))
    call = buffer_callback(fill, result, vmap_method="sequential")
    return call(data, indices, indptr, operand)


def _host_matmul(shape, data, indices, row_ids, indptr, w, fill=None):
    out_shape = (shape[0], *w.shape[1:])
    return _in_place(fill or _fill_matmul, out_shape, data, indices, indptr, w)


def _host_rmatmul(shape, data, indices, row_ids, indptr, r, fill=None):
    out_shape = (shape[1], *r.shape[1:])
    return _in_place(fill or _fill_rmatmul, out_shape, data, indices, indptr, r)


def _squared_segment_matmul(shape, data, indices, row_ids, indptr, w):
    return _segment_matmul(shape, data * data, indices, row_ids, indptr, w)


def _squared_segment_rmatmul(shape, data, indices, row_ids, indptr, r):
    return _segment_rmatmul(shape, data * data, indices, row_ids, indptr, r)


def _linear_jvp(product, segment_form, plain_form, squared, shape, primals, tangents):
    """JVP of a product linear in the operand and in the stored values (``squared``: in
    their squares): ``segment_sum`` forms on the non-zero tangents."""
    from jax.custom_derivatives import SymbolicZero

    data, indices, row_ids, indptr, operand = primals
    d_data, d_operand = tangents[0], tangents[-1]
    out = product(shape, *primals)
    tangent = jnp.zeros_like(out)
    if not isinstance(d_operand, SymbolicZero):
        tangent = tangent + segment_form(shape, data, indices, row_ids, indptr, d_operand)
    if not isinstance(d_data, SymbolicZero):
        d_values = 2 * data * d_data if squared else d_data
        tangent = tangent + plain_form(shape, d_values, indices, row_ids, indptr, operand)
    return out, tangent


def _by_platform(host, segment_form, plain_form=None):
    """``host`` on CPU devices, ``segment_form`` elsewhere, with a linear JVP;
    ``plain_form``: the ``segment_sum`` form of the unsquared product where
    ``segment_form`` squares the stored values."""

    def product(shape, *arrays):
        return jax.lax.platform_dependent(
            *arrays, cpu=partial(host, shape), default=partial(segment_form, shape)
        )

    product = jax.custom_jvp(product, nondiff_argnums=(0,))
    squared = plain_form is not None
    jvp = partial(_linear_jvp, product, segment_form, plain_form or segment_form, squared)
    product.defjvp(jvp, symbolic_zeros=True)
    return product


_csr_matmul = _by_platform(_host_matmul, _segment_matmul)
_csr_rmatmul = _by_platform(_host_rmatmul, _segment_rmatmul)
_squared_matmul = _by_platform(
    partial(_host_matmul, fill=_fill_squared_matmul), _squared_segment_matmul, _segment_matmul
)
_squared_rmatmul = _by_platform(
    partial(_host_rmatmul, fill=_fill_squared_rmatmul),
    _squared_segment_rmatmul,
    _segment_rmatmul,
)


def take_rows(X, rows):
    """``X[rows]`` for a dense ``X`` or a :class:`SparseRows` (indices known in range)."""
    if is_sparse(X):
        return X.take_rows(rows)
    return X.at[rows].get(mode="promise_in_bounds")


def squared_row_norms(X):
    """``||x_i||^2`` per row of a dense array, a :class:`SparseRows` or a scipy sparse
    matrix (numpy in, numpy out; O(nnz) for the sparse ones)."""
    if is_sparse(X):
        return X.squared_row_norms()
    if hasattr(X, "tocsr"):
        csr = X.tocsr()
        squares = np.asarray(csr.data, dtype=np.float64) ** 2
        rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        return np.bincount(rows, weights=squares, minlength=csr.shape[0])
    xp = np if isinstance(X, np.ndarray) else jnp
    return xp.sum(xp.square(X), axis=1)


def _padded(q, rows: int):
    """``q`` with ``rows`` zeros appended: every block's slice of weights is in bounds."""
    return jnp.concatenate([q, jnp.zeros((rows,), q.dtype)])


def _block_entries(indptr: np.ndarray, block_rows: int) -> int:
    """Most stored entries in any block of ``block_rows`` consecutive rows."""
    n = indptr.shape[0] - 1
    starts = np.arange(0, n, block_rows)
    ends = np.minimum(starts + block_rows, n)
    return max(1, int(np.max(indptr[ends] - indptr[starts], initial=0)))


def _slot_rows(columns):
    """The row of every slot of ``(n, k)`` slot arrays."""
    n, width = columns.shape
    return jnp.broadcast_to(jnp.arange(n, dtype=columns.dtype)[:, None], (n, width))


def ell_rows(columns, values, num_columns: int, row_ids=None, indptr=None) -> SparseRows:
    """The ELL-form :class:`SparseRows` of ``(n, k)`` slot arrays (numpy or jax):
    row ``i`` is ``sum_l values[i, l] e_{columns[i, l]}``, unused slots holding the
    value 0. The entries are the slots flattened row by row (row-aligned: a row sharding
    of the slots is one of the entries). ``row_ids`` (``(n, k)`` or flat, the row of
    every slot; built on the slots' devices, sharded like them) and ``indptr`` (``k``
    times ``0..n``; pass it already placed for several devices) are built when not
    given."""
    n, width = columns.shape
    xp = np if isinstance(columns, np.ndarray) else jnp
    index_dtype = columns.dtype
    if row_ids is None and xp is np:
        row_ids = np.repeat(np.arange(n, dtype=index_dtype), width)
    elif row_ids is None:  # on the devices of the slots, sharded like them
        row_ids = jax.jit(_slot_rows, out_shardings=columns.sharding)(columns)
    if indptr is None:
        indptr = xp.arange(n + 1, dtype=index_dtype) * width
    block_rows = max(1, min(n, KERNEL_TUNING.sparse_gram_block_floats // max(1, num_columns)))
    return SparseRows(
        values.reshape(-1),
        columns.reshape(-1),
        row_ids.reshape(-1),
        indptr,
        (n, num_columns),
        block_rows,
        max(1, block_rows * width),
        width,
        True,
    )


def _entry_rows(indptr: np.ndarray, index_dtype) -> np.ndarray:
    """The row of every stored entry, in a ``DEVICE_ALIGNMENT``-aligned buffer: a CPU
    device shares it (``jax.device_put``) instead of holding a second copy."""
    from fairest._kernels._buckets import aligned_empty

    nnz = int(indptr[-1])
    rows = aligned_empty((nnz,), index_dtype)
    rows.fill(0)
    starts = indptr[1:-1]  # a row's first entry adds one to the row count from there on
    np.add.at(rows, starts[starts < nnz], 1)
    return np.cumsum(rows, out=rows)  # in place: no (nnz,) temporary


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
    row_ids = _entry_rows(indptr, index_dtype)
    block_rows = max(1, min(n, KERNEL_TUNING.sparse_gram_block_floats // max(1, d)))
    return SparseRows(
        np.asarray(csr.data, dtype=dtype),
        csr.indices.astype(index_dtype, copy=False),
        row_ids,
        indptr,
        (n, d),
        block_rows,
        _block_entries(indptr, block_rows),
    )
