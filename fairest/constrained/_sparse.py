"""Sparse ``X`` for the constrained family, densified only where the copy is small.

A scipy sparse ``X`` small and dense enough (:func:`dense_copy_pays`: one-hot encoded
tabular data of a few megabytes) is placed as a dense array. Any other fit's scipy sparse
``X`` lives on the device as a :class:`SparseDesign`: the shared
kernels' :class:`~fairest._kernels._sparse.SparseRows` (row-sorted COO with CSR's row
pointer, O(nnz); ``width``: the most entries of any row, its ``row_entries``). It stands
in for the dense ``X`` in the two places the solvers touch it:

- ``X @ W`` (full-batch passes: the first layer of the MLP on every row) runs over row
  blocks, each gathered as below: ``SparseRows @ W`` would hold an (nnz, fan_out)
  temporary, larger than the dense fit's copy of ``X`` for a wide hidden layer;
- ``X[idx]`` (minibatches, constraint draws) gathers each drawn row's entries through the
  row pointer (``SparseRows.row_slots``) into a padded ``(b, width)`` block of values and
  columns (:class:`GatheredRows`, an ELL block), whose ``@ W`` is one gather of ``W``'s rows and
  a sum over ``width``: O(b * width * fan_out), independent of ``n_features``.

With several devices (``fairest.config_context(devices=...)``) the row-aligned arrays
(labels, groups, weights) are row-sharded as for dense ``X`` and the sparse entries are
replicated on every device (O(nnz) per device): rows of a sparse matrix have unequal
entry counts, so a row-sharded COO would need per-device entry padding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fairest._kernels._sparse import SparseRows, sparse_rows
from fairest._solvers._guard import largest_magnitude
from fairest.constrained._defaults import CONSTRAINED_TUNING
from fairest.utils._devices import place_replicated, place_rows

__all__ = ["GatheredRows", "SparseDesign", "as_csr", "dense_copy_pays", "largest_magnitude"]


@jax.tree_util.register_pytree_node_class
class GatheredRows:
    """Rows drawn from a :class:`SparseDesign`: ``values`` and ``columns`` of shape
    ``(b, width)`` (padding entries: value 0, column 0)."""

    def __init__(self, values, columns, n_features: int):
        self.values, self.columns, self.n_features = values, columns, int(n_features)

    def tree_flatten(self):
        return (self.values, self.columns), (self.n_features,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)

    @property
    def shape(self) -> tuple:
        return (self.values.shape[0], self.n_features)

    @property
    def dtype(self):
        return self.values.dtype

    def __matmul__(self, W):
        """``X_batch @ W`` for ``W`` of shape (d, k)."""
        return jnp.einsum("bj,bjk->bk", self.values, W[self.columns])


@jax.tree_util.register_pytree_node_class
class SparseDesign:
    """A device sparse ``X`` usable as the solvers' ``data["X"]`` (see the module).

    ``block_floats`` (static: part of the compiled code's key) bounds the temporary of one
    row block of a full pass; ``None`` reads ``CONSTRAINED_TUNING.gather_block_floats``.
    """

    def __init__(self, rows: SparseRows, block_floats: int | None = None):
        self.rows = rows
        if block_floats is None:
            block_floats = CONSTRAINED_TUNING.gather_block_floats
        self.block_floats = int(block_floats)

    def tree_flatten(self):
        return (self.rows,), (self.block_floats,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)

    @property
    def width(self) -> int:
        """Slots of a gathered row: the most entries of any row (at least one)."""
        return max(1, self.rows.row_entries)

    @property
    def shape(self) -> tuple:
        return self.rows.shape

    @property
    def dtype(self):
        return self.rows.dtype

    @property
    def ndim(self) -> int:
        return 2

    def __matmul__(self, W):
        """``X @ W`` over all rows, for ``W`` of shape (d, k): row blocks gathered as in
        :meth:`__getitem__` (a ``lax.map``), so the temporaries are (block, width, k), never
        (nnz, k)."""
        n = self.shape[0]
        block = max(1, min(n, self.block_floats // (self.width * W.shape[1])))
        n_blocks = -(-n // block)
        ids = jnp.minimum(jnp.arange(n_blocks * block, dtype=jnp.int32), n - 1)
        out = jax.lax.map(lambda rows: self[rows] @ W, ids.reshape(n_blocks, block))
        return out.reshape(n_blocks * block, W.shape[1])[:n]

    def __getitem__(self, idx) -> GatheredRows:
        """The rows ``idx`` (an int array of shape (b,)) as a padded entry block."""
        values, columns = self.rows.row_slots(idx)
        return GatheredRows(values, columns, self.shape[1])


def as_csr(X):
    """CSR ``X`` for scipy sparse input (row slicing, the kernels' layout); else ``X``."""
    return X.tocsr() if sp.issparse(X) and X.format != "csr" else X


def dense_copy_pays(X) -> bool:
    """Whether the fit places scipy sparse ``X`` dense: its float64 dense copy takes at
    most ``CONSTRAINED_TUNING.densify_max_bytes`` and at least
    ``CONSTRAINED_TUNING.densify_min_density`` of its entries are stored (one-hot encoded
    tabular data); the results are the same up to floating-point rounding."""
    n, d = X.shape
    return (
        n * d * 8 <= CONSTRAINED_TUNING.densify_max_bytes
        and X.nnz >= CONSTRAINED_TUNING.densify_min_density * n * d
    )


def _padded_dense(X, length: int, dtype) -> np.ndarray:
    """Sparse ``X`` as one dense ``dtype`` array of ``length`` rows (zero padding rows),
    written in place: no dense copy in another dtype."""
    real = np.dtype(dtype)
    out = np.zeros((length, X.shape[1]), dtype=real)
    X.astype(real).tocsr().toarray(out=out[: X.shape[0]])
    return out


def place_with_design(X, rows: dict, dtype) -> dict:
    """Device copies of a fit's row-aligned ``rows`` (numpy, already padded as the caller
    wants) and of ``X`` under the key ``"X"``.

    Dense ``X`` (padded like ``rows``) is placed with them by
    :func:`~fairest.utils._devices.place_rows` (row-sharded over the configured devices);
    so is a scipy sparse ``X`` small and dense enough that a dense copy pays
    (:func:`dense_copy_pays`), as one padded dense array; any other scipy sparse ``X``
    becomes a :class:`SparseDesign` with empty rows up to the placed length, replicated on
    the configured devices (one process only).
    """
    if sp.issparse(X) and dense_copy_pays(X):
        X = _padded_dense(X, len(next(iter(rows.values()))), dtype)
    if not sp.issparse(X):
        names = ["X", *rows]
        return dict(zip(names, place_rows([X, *rows.values()])))
    if jax.process_count() > 1:
        raise ValueError(
            "sparse X is replicated on every device, which several processes "
            "(jax.distributed) cannot do from their own rows: pass dense X."
        )
    placed = dict(zip(rows, place_rows(list(rows.values()))))
    length = next(iter(placed.values())).shape[0]
    host = sparse_rows(X, dtype=np.dtype(dtype)).with_rows(length)
    return {"X": place_replicated(SparseDesign(host)), **placed}
