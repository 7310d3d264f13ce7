"""Jitted kernels for weighted, L2-regularised linear models with an explicit intercept.

Parameters are one flat vector ``theta = (b, w)`` of length ``p = d + 1`` with the
intercept FIRST (badr spec section 0); scores are ``s = b + X w``. The design matrix is
never augmented with a column of ones (no copy of X); the intercept blocks are formed
explicitly.

Sample weights ``c`` enter the data term as ``sum_i c_i l(s_i, y_i)``; padding rows carry
``c_i = 0`` so bucketed shapes give the same numbers. The penalty is
``PENALTY_SCALE[loss] * alpha * (||w||^2 + penalize_intercept * b^2)``; ``alpha`` and
``penalize_intercept`` (0.0 or 1.0) are traced, so changing them never recompiles.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._losses import PENALTY_SCALE, loss_derivatives, pointwise_loss
from fairest._kernels._placement import GRAM_BLOCK_ROWS, is_shifted, pass_block_rows, row_block
from fairest._kernels._sparse import is_sparse

__all__ = [
    "Batch",
    "blocked_hessian",
    "row_block_pass",
    "row_range_pass",
    "scores",
    "penalty_diagonal",
    "objective",
    "value_and_grad",
    "value_grad_hessian",
    "weighted_gram",
    "gram_and_products",
    "hessian_vector_product",
    "group_sums",
    "group_to_sample_weights",
]


class Batch(NamedTuple):
    """Data of one fit: rows may be padding (``weight == 0``)."""

    X: jax.Array  # (n, d) dense, or a SparseRows (fairest._kernels._sparse)
    y: jax.Array  # (n,)
    groups: jax.Array  # (n,) int32 in 0..G-1
    weight: jax.Array  # (n,) non-negative; 0 on padding rows


def scores(theta, X):
    """Linear scores ``b + X w`` for ``theta = (b, w)``."""
    return X @ theta[1:] + theta[0]


def penalty_diagonal(loss: str, theta, alpha, penalize_intercept):
    """Diagonal of the penalty Hessian, ``2 * scale * alpha * (pen_b, 1, ..., 1)``."""
    diag = jnp.ones_like(theta).at[0].set(penalize_intercept)
    return 2.0 * PENALTY_SCALE[loss] * alpha * diag


@partial(jax.jit, static_argnames="loss")
def objective(loss: str, theta, X, y, c, alpha, penalize_intercept):
    """``F(theta) = sum_i c_i l(s_i, y_i) + R(theta)``."""
    data = jnp.sum(c * pointwise_loss(loss, scores(theta, X), y))
    return data + 0.5 * jnp.sum(penalty_diagonal(loss, theta, alpha, penalize_intercept) * theta**2)


@partial(jax.jit, static_argnames="loss")
def value_and_grad(loss: str, theta, X, y, c, alpha, penalize_intercept):
    """Objective and gradient (p,) in one pass over the data, O(n p): what a first-order
    (L-BFGS) step needs, without the O(n p^2) Hessian block. Dense ``X`` of more than one
    row block (:func:`pass_block_rows`) and larger than the cache
    (``KERNEL_TUNING.fused_gradient_min_bytes``) is read once, block by block (:func:`row_block_pass`),
    instead of twice (``X w``, then ``r @ X``)."""
    pen = penalty_diagonal(loss, theta, alpha, penalize_intercept)
    penalty = 0.5 * jnp.sum(pen * theta**2)
    if _fused_pass(X) and _beyond_cache(X):
        data, grad = row_block_pass(loss, theta, X, y, c)[:2]
        return data + penalty, grad + pen * theta
    value, d1, _ = loss_derivatives(loss, scores(theta, X), y)
    r = c * d1
    return jnp.sum(c * value) + penalty, jnp.concatenate([jnp.sum(r)[None], r @ X]) + pen * theta


def even_block_rows(n_rows: int, most: int) -> int:
    """Rows per block of a pass over ``n_rows`` rows in blocks of at most ``most``: as
    even as the block count allows, a multiple of 8, so that the last block (clamped to
    the end of the data, its rows already counted masked out) re-reads few rows (20,480
    rows, ``most`` 16,384: two blocks of 10,240, where two of 16,384 read 1.6x the data)."""
    count = -(-n_rows // most)
    return min(most, -(-n_rows // (8 * count)) * 8)


# A value-and-gradient pass reads X twice (``X w``, then ``r @ X``) while X fits the
# last-level cache (KERNEL_TUNING.fused_gradient_min_bytes), once block by block beyond:
# from the cache the two products are faster than the fused blocks, from memory the fused
# blocks are. The Hessian pass is fused from one block on.


def _beyond_cache(X) -> bool:
    """Whether a dense device ``X`` exceeds ``KERNEL_TUNING.fused_gradient_min_bytes``, or is read by
    row blocks only (:class:`~fairest._kernels._placement.ShiftedRows`,
    :class:`~fairest._kernels._placement.GatheredRows`)."""
    if hasattr(X, "rows"):
        return True
    return X.shape[0] * X.shape[1] * X.dtype.itemsize > KERNEL_TUNING.fused_gradient_min_bytes


def _fused_pass(X) -> bool:
    """Whether a pass over ``X`` runs block by block (dense, more than one block)."""
    return not is_sparse(X) and X.shape[0] > pass_block_rows(X.shape[1])


def row_block_pass(loss: str, theta, X, y, c, hessian_dtype=None, block_rows=None, row_range=None):
    """The data term's value, gradient and (with ``hessian_dtype``) Hessian in ONE pass
    over dense ``X``, block by block.

    For each block of ``block_rows`` rows (default :func:`pass_block_rows`, made even over
    the rows by :func:`even_block_rows` when the whole of ``X`` is summed) the scores,
    the loss derivatives, ``[r, q]^T X_b`` and, when asked, ``X_b^T diag(q) X_b`` (the
    block cast to ``hessian_dtype``, e.g. float32) are formed while the block is in cache:
    X is read from memory once per pass, where ``X w`` followed by ``r @ X`` reads it
    twice and XLA CPU runs the unblocked ``r @ X`` (the samples axis contracted) well
    below memory speed. The last block is clamped to the end of the data, its rows
    already counted masked out, so any n >= ``block_rows`` works. Returns ``(value,
    grad)`` or ``(value, grad, hessian)`` WITHOUT the penalty (p = d + 1, intercept
    first). Traceable; ``loss``, ``hessian_dtype`` and ``block_rows`` are static. ``X``
    may be a :class:`~fairest._kernels._placement.ShiftedRows` (an unaligned numpy ``X``
    shared with the device, not copied): its blocks are read from the flat buffer.

    ``row_range``, a pair ``(first, stop)`` (traced integers, ``stop - first >=
    block_rows``), sums over rows ``[first, stop)`` only: the part of a pass that one
    thread runs (:func:`fairest._solvers._row_split.split_value_and_grad`).
    """
    n, d = X.shape
    if block_rows is None:  # a row range's length is traced: its blocks stay full-size
        block_rows = pass_block_rows(d)
        if row_range is None:
            block_rows = even_block_rows(n, block_rows)
    hessian = hessian_dtype is not None
    first, stop = (0, n) if row_range is None else row_range

    def add_block(k, totals):
        nominal = first + k * block_rows
        start = jnp.minimum(nominal, stop - block_rows)
        take = partial(jax.lax.dynamic_slice_in_dim, start_index=start, slice_size=block_rows)
        rows = row_block(X, start, block_rows)  # ShiftedRows too: no copy of X
        fresh = start + jnp.arange(block_rows) >= nominal  # not in an earlier block
        weights = jnp.where(fresh, take(c), 0.0)
        value, d1, d2 = loss_derivatives(loss, rows @ theta[1:] + theta[0], take(y))
        columns = jnp.stack([weights * d1, weights * d2] if hessian else [weights * d1])
        out = [totals[0] + jnp.sum(weights * value), totals[1] + jnp.sum(columns, axis=1)]
        out.append(totals[2] + columns @ rows)
        if hessian:
            cast = rows.astype(hessian_dtype)
            q = columns[1].astype(hessian_dtype)
            out.append(totals[3] + (cast.T @ (cast * q[:, None])).astype(X.dtype))
        return tuple(out)

    k = 2 if hessian else 1
    zeros = [jnp.zeros((), X.dtype), jnp.zeros((k,), X.dtype), jnp.zeros((k, d), X.dtype)]
    if hessian:
        zeros.append(jnp.zeros((d, d), X.dtype))
    num_blocks = -(-(stop - first) // block_rows)  # traced with row_range: a while loop
    totals = jax.lax.fori_loop(0, num_blocks, add_block, tuple(zeros))
    grad = jnp.concatenate([totals[1][:1], totals[2][0]])
    if not hessian:
        return totals[0], grad
    first_row = jnp.concatenate([totals[1][1:], totals[2][1]])
    lower = jnp.concatenate([first_row[1:, None], totals[3]], axis=1)
    return totals[0], grad, jnp.concatenate([first_row[None, :], lower], axis=0)


@partial(jax.jit, static_argnames=("loss", "hessian_dtype"))
def row_range_pass(loss: str, theta, X, y, c, first, stop, hessian_dtype=None):
    """:func:`row_block_pass` over rows ``[first, stop)`` of dense ``X`` (at least one row
    block), jitted: the data term's value, gradient and, with ``hessian_dtype``, Hessian,
    WITHOUT the penalty. ``first`` and ``stop`` are traced, so every part of a split pass
    (:mod:`fairest._solvers._row_split`) runs the same executable."""
    return row_block_pass(loss, theta, X, y, c, hessian_dtype, row_range=(first, stop))


@partial(jax.jit, static_argnames="loss")
def value_grad_hessian(loss: str, theta, X, y, c, alpha, penalize_intercept, X_hessian=None):
    """Objective, gradient (p,) and Hessian (p, p) in one pass over the data.

    The Hessian is ``A^T diag(c l'') A + diag(penalty)`` with ``A = [1, X]``, assembled
    blockwise without forming ``A``; its ``X^T diag(q) X`` block is summed over row blocks
    (:func:`weighted_gram`). ``X_hessian``, when given, makes that block lower-precision
    (e.g. float32): either a copy of ``X`` in that precision, or the empty marker of
    :func:`blocked_hessian`, which casts each row block of ``X`` on the fly (no copy, and
    faster). The Newton direction is then slightly inexact, while the objective and
    gradient, hence the solution, stay in the precision of ``X``.
    """
    pen = penalty_diagonal(loss, theta, alpha, penalize_intercept)
    penalty = 0.5 * jnp.sum(pen * theta**2)
    if _fused_pass(X) and (X_hessian is None or X_hessian.shape[0] == 0):
        dtype = X.dtype if X_hessian is None else X_hessian.dtype
        data, grad, hessian = row_block_pass(loss, theta, X, y, c, dtype)
        return data + penalty, grad + pen * theta, hessian + jnp.diag(pen)
    value, d1, d2 = loss_derivatives(loss, scores(theta, X), y)
    r = c * d1
    q = c * d2
    f = jnp.sum(c * value) + penalty
    if X_hessian is None and not is_sparse(X) and X.shape[0] > GRAM_BLOCK_ROWS:
        # one pass: X^T [r, q] (gradient, Hessian's first row) inside the gram's blocks
        block, products = gram_and_products(X, q, jnp.stack([r, q], axis=1))
        r_X, q_X = products[:, 0], products[:, 1]
    else:
        if X_hessian is None:  # one block, or sparse X (see SparseRows.weighted_gram)
            block = weighted_gram(X, q)
        elif X_hessian.shape[0] == 0:  # the marker of blocked_hessian(): cast block by block
            # (the gram and products in one loop are no faster with float32 blocks)
            block = weighted_gram(X, q, X_hessian.dtype)
        else:
            block = (X_hessian * q[:, None].astype(X_hessian.dtype)).T @ X_hessian
            block = block.astype(X.dtype)
        r_X, q_X = r @ X, q @ X  # not X.T @ r: slower on XLA CPU
    grad = jnp.concatenate([jnp.sum(r)[None], r_X]) + pen * theta
    first_row = jnp.concatenate([jnp.sum(q)[None], q_X])
    lower = jnp.concatenate([first_row[1:, None], block], axis=1)
    hessian = jnp.concatenate([first_row[None, :], lower], axis=0)
    return f, grad, hessian + jnp.diag(pen)


def blocked_hessian(dtype=np.float32) -> np.ndarray:
    """The ``X_hessian`` marker (an empty array of ``dtype``) asking
    :func:`value_grad_hessian` for a Hessian block summed over row blocks of ``X`` cast to
    ``dtype``: the speed of a float32 copy without holding one."""
    return np.zeros((0,), dtype)


def weighted_gram(X, q, dtype=None, block_rows: int = GRAM_BLOCK_ROWS):
    """``X^T diag(q) X`` (d, d) accumulated over row blocks, each cast to ``dtype``.

    No (n, d) temporary and no whole copy of ``X``: each block of ``block_rows`` rows is
    sliced, cast (e.g. to float32, half the flops' cost) and multiplied, and the block
    products are summed in the precision of ``X``. The last block is clamped to the end
    of the data, its rows already counted masked out, so any n works (``n < block_rows``:
    one product over all rows). Traceable; ``dtype`` and ``block_rows`` are static.
    """
    if is_sparse(X):  # densified block by block: see SparseRows.weighted_gram
        return X.weighted_gram(q, dtype)
    n, d = X.shape
    dtype = X.dtype if dtype is None else dtype
    if n <= block_rows:
        Xc = X.astype(dtype)  # X^T (q X), not (q X)^T X: faster on XLA CPU
        return (Xc.T @ (Xc * q[:, None].astype(dtype))).astype(X.dtype)

    def add_block(k, total):
        start = jnp.minimum(k * block_rows, n - block_rows)
        rows = jax.lax.dynamic_slice_in_dim(X, start, block_rows).astype(dtype)
        weights = jax.lax.dynamic_slice_in_dim(q, start, block_rows)
        fresh = start + jnp.arange(block_rows) >= k * block_rows  # not in an earlier block
        weights = jnp.where(fresh, weights, 0.0).astype(dtype)
        return total + ((rows * weights[:, None]).T @ rows).astype(X.dtype)

    return jax.lax.fori_loop(0, -(-n // block_rows), add_block, jnp.zeros((d, d), X.dtype))


def gram_and_products(X, q, C, dtype=None, block_rows: int = GRAM_BLOCK_ROWS):
    """``(X^T diag(q) X, X^T C)`` for ``C`` of shape (n, k) in ONE pass over ``X``.

    The weighted gram is :func:`weighted_gram` (row blocks cast to ``dtype``); ``X^T C``
    is summed over the same row blocks in the precision of ``X`` while each block is at
    hand, instead of a second pass over ``X`` (a Newton pass's gradient ``r @ X`` and the
    Hessian's first row ``q @ X``, a large share of the pass on XLA CPU). Small ``n``
    (one block) and sparse ``X`` keep the separate products. Traceable. With float32
    blocks the one loop saves CPU but not wall time, so that path keeps two products.
    """
    n, d = X.shape
    if is_sparse(X) or n <= block_rows:
        return weighted_gram(X, q, dtype, block_rows), (C.T @ X).T
    dtype = X.dtype if dtype is None else dtype

    def add_block(k, totals):
        gram, products = totals
        start = jnp.minimum(k * block_rows, n - block_rows)
        rows = jax.lax.dynamic_slice_in_dim(X, start, block_rows)
        fresh = start + jnp.arange(block_rows) >= k * block_rows  # not in an earlier block
        weights = jnp.where(fresh, jax.lax.dynamic_slice_in_dim(q, start, block_rows), 0.0)
        columns = jnp.where(fresh[:, None], jax.lax.dynamic_slice_in_dim(C, start, block_rows), 0.0)
        cast = rows.astype(dtype)
        gram = gram + ((cast * weights[:, None].astype(dtype)).T @ cast).astype(X.dtype)
        return gram, products + columns.T @ rows

    zeros = (jnp.zeros((d, d), X.dtype), jnp.zeros((C.shape[1], d), X.dtype))
    gram, products = jax.lax.fori_loop(0, -(-n // block_rows), add_block, zeros)
    return gram, products.T


@partial(jax.jit, static_argnames="loss")
def hessian_vector_product(loss: str, theta, v, X, y, c, alpha, penalize_intercept):
    """``H v`` in O(n p) without forming H."""
    _, _, d2 = loss_derivatives(loss, scores(theta, X), y)
    u = c * d2 * scores(v, X)
    hv = jnp.concatenate([jnp.sum(u)[None], u @ X])
    return hv + penalty_diagonal(loss, theta, alpha, penalize_intercept) * v


@partial(jax.jit, static_argnames=("loss", "num_groups"))
def group_sums(loss: str, theta, batch: Batch, num_groups: int):
    """Per-group weighted loss sums, gradient sums and weight totals in one pass.

    Returns
    -------
    loss_sums : (G,)  ``sum_{i in g} weight_i l_i``
    grad_sums : (p, G) column g is ``sum_{i in g} weight_i l'_i a_i`` with ``a_i = (1, x_i)``
    totals : (G,)  ``sum_{i in g} weight_i``

    Dividing by ``totals`` gives the mean group losses ``L_g`` and the Jacobian
    ``J = [grad L_0, ..., grad L_{G-1}]`` of the badr spec (section 2). ``batch.X`` may be
    a :class:`~fairest._kernels._placement.ShiftedRows`, which has no transpose: its
    product is formed as ``M^T X``, block by block.
    """
    value, d1, _ = loss_derivatives(loss, scores(theta, batch.X), batch.y)
    seg = partial(jax.ops.segment_sum, segment_ids=batch.groups, num_segments=num_groups)
    r = batch.weight * d1
    onehot_r = jax.nn.one_hot(batch.groups, num_groups, dtype=r.dtype) * r[:, None]
    products = (onehot_r.T @ batch.X).T if is_shifted(batch.X) else batch.X.T @ onehot_r
    grad_sums = jnp.concatenate([seg(r)[None, :], products], axis=0)
    return seg(batch.weight * value), grad_sums, seg(batch.weight)


@partial(jax.jit, static_argnames="num_groups")
def group_to_sample_weights(group_weights, groups, weight, num_groups: int):
    """Sample weights ``c_i = lambda_g w_i / W_g`` with ``W_g = sum_{j in g} w_j``.

    With ``group_weights`` on the simplex the sample weights sum to one and
    ``sum_i c_i l_i = sum_g lambda_g L_g`` (weighted mean group losses).
    """
    totals = jax.ops.segment_sum(weight, groups, num_segments=num_groups)
    per_group = group_weights / jnp.where(totals > 0, totals, 1.0)
    return weight * per_group[groups]
