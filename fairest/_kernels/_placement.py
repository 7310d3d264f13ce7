"""A dense float64 ``X`` on a CPU device without a copy, whatever numpy's alignment.

XLA's CPU client shares (aliases) a host buffer with a device array only when the buffer
starts on a 64-byte boundary (:data:`~fairest._kernels._buckets.DEVICE_ALIGNMENT`);
otherwise ``jax.device_put`` copies it. numpy's large arrays start 16 bytes past such a
boundary (glibc's mmap chunk header), so a 763 MiB ``X`` as numpy allocates it would be
copied once more on every fit. No row of such an ``X`` need start on a 64-byte boundary
either (rows of 800 bytes step 32 bytes mod 64 from an offset of 16).

:class:`ShiftedRows` holds instead the flat buffer of ``X`` from its first 64-byte aligned
element on (``X.ravel()[shift:]``, ``shift < 8``: aliased, no copy) and the ``shift``
leading elements apart (a tiny copy). A block of rows is a ``dynamic_slice`` of the flat
buffer at ``start * d - shift``, reshaped to (rows, d); the block that overlaps the
leading elements is assembled from both. The row-block kernels
(:func:`fairest._kernels._glm.row_block_pass`) read ``X`` only this way, and ``X @ w`` /
``r @ X`` are formed block by block, so the data is read from the user's own buffer.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._buckets import DEVICE_ALIGNMENT
from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._sparse import take_rows

__all__ = [
    "GRAM_BLOCK_ROWS",
    "pass_block_rows",
    "MIN_SHIFTED_ROWS",
    "GatheredRows",
    "ShiftedRows",
    "gather_dense_rows",
    "is_shifted",
    "place_dense",
    "row_block",
    "shifted_rows",
]

# Rows per block of the Gram kernels (:func:`fairest._kernels._glm.weighted_gram`): a (block,
# d) float32 temporary instead of an (n, d) one; large enough for the block products to
# run at full GEMM speed. The fused passes read blocks of at most this many rows too.
GRAM_BLOCK_ROWS = 16_384


_MIN_PASS_BLOCK_ROWS = 256


def pass_block_rows(n_features: int) -> int:
    """Rows per block of :func:`~fairest._kernels._glm.row_block_pass`: the largest power of two whose float64
    block takes at most ``KERNEL_TUNING.pass_block_bytes``, within [256, ``GRAM_BLOCK_ROWS``]."""
    rows = KERNEL_TUNING.pass_block_bytes // (8 * max(1, n_features))
    return int(min(GRAM_BLOCK_ROWS, max(_MIN_PASS_BLOCK_ROWS, 1 << (rows.bit_length() - 1))))


# ShiftedRows are built from this many rows on (twice the largest row block of the
# kernels, GRAM_BLOCK_ROWS): every block then lies within the flat buffer. Smaller data is
# padded to a row bucket anyway (an aligned copy, fairest._kernels._buckets).
MIN_SHIFTED_ROWS = 2 * GRAM_BLOCK_ROWS


def is_shifted(X) -> bool:
    """Whether ``X`` is a :class:`ShiftedRows`."""
    return isinstance(X, ShiftedRows)


def row_block(X, start, count: int):
    """Rows ``[start, start + count)`` of a dense device ``X``, a :class:`ShiftedRows` or
    a :class:`GatheredRows` (``start`` traced, ``count`` static): how a row-block loop
    reads ``X`` whatever its placement."""
    if isinstance(X, ShiftedRows | GatheredRows):
        return X.rows(start, count)
    return jax.lax.dynamic_slice_in_dim(X, start, count)


def gather_dense_rows(X, rows):
    """Rows ``rows`` of a dense device ``X`` or a :class:`ShiftedRows` (read from its flat
    buffer and head, ``X`` never assembled) as a dense (len(rows), d) array. Traceable."""
    if not is_shifted(X):
        return take_rows(X, rows)
    d, shift = X.shape[1], X.shift
    flat_index = rows[:, None] * d + jnp.arange(d)[None, :] - shift
    main = jnp.take(X.flat, jnp.maximum(flat_index, 0))
    lead = jnp.take(X.head, jnp.clip(flat_index + shift, 0, max(shift - 1, 0)))
    return jnp.where(flat_index >= 0, main, lead)


@jax.tree_util.register_pytree_node_class
class GatheredRows:
    """The rows ``index`` of a dense device ``X`` (or a :class:`ShiftedRows`), gathered
    one row block at a time as a row-block loop reads them: a subset of the rows without
    a copy of them (BADR's one-group vertex solves on 1e6 x 100: 206 MiB per group of
    250,000 rows not held).

    Only :func:`row_block` reads it, so it serves the fused row-block passes
    (:func:`fairest._kernels._glm.row_block_pass`: more rows than one block, Hessian in
    the precision of ``X`` or in float32 blocks); other uses gather the rows instead.
    """

    def __init__(self, base, index):
        self.base = base
        self.index = index  # (m,) int32 row numbers into base

    def tree_flatten(self):
        return (self.base, self.index), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.index.shape[0], self.base.shape[1])

    @property
    def dtype(self):
        return self.base.dtype

    def rows(self, start, count: int):
        """Rows ``[start, start + count)`` of the subset as a (count, d) array."""
        index = jax.lax.dynamic_slice_in_dim(self.index, start, count)
        return gather_dense_rows(self.base, index)


@jax.tree_util.register_pytree_node_class
class ShiftedRows:
    """An (n, d) C-contiguous matrix as a flat buffer starting ``shift`` elements in.

    Parameters
    ----------
    head : array of shape (shift,)
        The first ``shift`` elements of ``X.ravel()``.
    flat : array of shape (n * d - shift,)
        ``X.ravel()[shift:]``.
    shape : tuple of int
        ``(n, d)``.
    block_rows : int
        Rows per block of ``X @ w`` and ``r @ X``.
    """

    ndim = 2

    def __init__(self, head, flat, shape, block_rows):
        self.head = head
        self.flat = flat
        self.shape = tuple(int(s) for s in shape)
        self.block_rows = int(block_rows)

    def tree_flatten(self):
        return (self.head, self.flat), (self.shape, self.block_rows)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)

    @property
    def dtype(self):
        return self.flat.dtype

    @property
    def shift(self) -> int:
        return self.head.shape[0]

    def rows(self, start, count: int):
        """Rows ``[start, start + count)`` as a (count, d) array (``start`` traced)."""
        d = self.shape[1]
        size = count * d
        offset = start * d

        def from_flat():
            return jax.lax.dynamic_slice_in_dim(self.flat, offset - self.shift, size)

        def with_head():  # the block overlaps the leading elements
            window = jnp.concatenate([self.head, self.flat[:size]])
            return jax.lax.dynamic_slice_in_dim(window, offset, size)

        block = jax.lax.cond(offset >= self.shift, from_flat, with_head)
        return block.reshape(count, d)

    def _blocks(self):
        n = self.shape[0]
        return -(-n // self.block_rows), self.block_rows

    def __matmul__(self, w):
        """``X @ w`` for w of shape (d,) or (d, k), block by block."""
        n = self.shape[0]
        num_blocks, size = self._blocks()

        def add_block(k, out):
            start = jnp.minimum(k * size, n - size)
            return jax.lax.dynamic_update_slice_in_dim(out, self.rows(start, size) @ w, start, 0)

        zeros = jnp.zeros((n,) + jnp.shape(w)[1:], jnp.result_type(self.dtype, w))
        return jax.lax.fori_loop(0, num_blocks, add_block, zeros)

    def __rmatmul__(self, r):
        """``r @ X`` for r of shape (n,) or (k, n), summed over row blocks."""
        n, d = self.shape
        num_blocks, size = self._blocks()

        def add_block(k, total):
            start = jnp.minimum(k * size, n - size)
            fresh = start + jnp.arange(size) >= k * size  # not in an earlier block
            part = jax.lax.dynamic_slice_in_dim(r, start, size, axis=-1)
            return total + jnp.where(fresh, part, 0.0) @ self.rows(start, size)

        zeros = jnp.zeros(jnp.shape(r)[:-1] + (d,), jnp.result_type(self.dtype, r))
        return jax.lax.fori_loop(0, num_blocks, add_block, zeros)


def _shift_of(X: np.ndarray) -> int | None:
    """Elements from the start of ``X`` to its first ``DEVICE_ALIGNMENT``-byte boundary,
    or ``None`` where no element starts on one."""
    gap = -X.ctypes.data % DEVICE_ALIGNMENT
    return None if gap % X.itemsize else gap // X.itemsize


def shifted_rows(X: np.ndarray, device=None, block_rows: int | None = None) -> ShiftedRows:
    """Put a C-contiguous float64 ``X`` on ``device`` as a :class:`ShiftedRows`: its flat
    buffer from the first aligned element is shared with the device, not copied."""
    shift = _shift_of(X)
    flat = X.reshape(-1)
    block_rows = pass_block_rows(X.shape[1]) if block_rows is None else block_rows
    head = jax.device_put(np.array(flat[:shift]), device)
    return ShiftedRows(head, jax.device_put(flat[shift:], device), X.shape, block_rows)


def _shares_host_memory(device) -> bool:
    if device is None:
        device = jax.devices()[0]
    return device.platform == "cpu"


def place_dense(X: np.ndarray, device=None):
    """``X`` on one ``device`` (default: JAX's), without a copy where XLA can share it.

    A float64 C-contiguous ``X`` of at least ``MIN_SHIFTED_ROWS`` rows that does not start
    on a 64-byte boundary becomes a :class:`ShiftedRows` on a CPU device (no copy); any
    other ``X`` goes through ``jax.device_put`` (shared when aligned, else copied once).
    """
    shift = _shift_of(X) if X.dtype == np.float64 and X.flags.c_contiguous else None
    if (
        shift
        and X.ndim == 2
        and X.shape[0] >= MIN_SHIFTED_ROWS
        and jax.process_count() == 1
        and _shares_host_memory(device)
    ):
        return shifted_rows(X, device)
    return jax.device_put(X, device)
