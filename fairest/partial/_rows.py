"""Sums over the rows of a fit's data in a fixed order, so that a row-sharded fit
(``fairest.config_context(devices=...)``) computes bit for bit what the single-device fit
computes, and so returns the same model.

XLA reduces a row-sharded sum as one partial sum per device plus an all-reduce, in an
order that depends on the device count; a 1e-16 difference is then enough to break a tie
another way (the most violated constraint of SSG, the feasibility test, the kink of a
ramp, the argmax of a penalty's subgradient) and the runs part. Here every reduction over
rows splits the (padded) rows into ``ROW_BLOCKS`` contiguous blocks, reduces each block
(one device holds a whole block when the device count divides ``ROW_BLOCKS``: the
per-block code and its order are then those of the single-device run) and adds the block
partials one after the other. The padded row counts of :func:`fairest.partial._common.build_data`
(row buckets of at least 64 rows, multiples of 8) are multiples of ``ROW_BLOCKS``, so 1, 2,
4 and 8 devices give the same bits; other device counts (and row counts that are not a
multiple of ``ROW_BLOCKS``) fall back to XLA's own sum: the same model up to rounding.
Only float64 sums are blocked (the IDCA / SSG / penalty paths); float32 sums (the default
fast solver) keep XLA's order: equal across devices to a documented tolerance.

The functions differentiate (their transposes are broadcasts over rows, which involve no
reduction); :func:`shift_columns` (and :func:`fairest.partial._dc.linear_scores` for
``s = X w + b``) give the row reductions of the transposes of broadcasts the same order,
for ``jax.grad``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = [
    "ROW_BLOCKS",
    "row_dot",
    "row_scatter",
    "row_sum",
    "shift_columns",
]

ROW_BLOCKS = 8


def _blocked(n_rows: int, dtype) -> bool:
    """Float64 sums only: the float32 paths (the default fast solver) keep XLA's own
    reduction, whose rounding their stopping rules were tuned with (another summation
    order can move a fit onto another DC stationary point; their device equivalence is
    documented to 1e-3)."""
    return jnp.dtype(dtype) == jnp.float64 and n_rows >= ROW_BLOCKS and n_rows % ROW_BLOCKS == 0


def _blocks(a):
    """``a`` (n, ...) as (ROW_BLOCKS, n / ROW_BLOCKS, ...)."""
    return a.reshape((ROW_BLOCKS, a.shape[0] // ROW_BLOCKS) + a.shape[1:])


def _in_order(parts):
    """``parts[0] + parts[1] + ...`` left to right (no reassociation by XLA)."""
    total = parts[0]
    for b in range(1, parts.shape[0]):
        total = total + parts[b]
    return total


def row_sum(a):
    """``a.sum(axis=0)`` in the fixed order (see the module docstring)."""
    if not _blocked(a.shape[0], a.dtype):
        return jnp.sum(a, axis=0)
    # a product with ones: XLA CPU reduces a block the same way whatever the number of
    # blocks on the device, which its reduce over a middle axis does not
    return row_dot(jnp.ones(a.shape[:1], a.dtype), a)


def row_dot(U, V):
    """``U.T @ V`` summed over the rows in the fixed order: ``U`` and ``V`` of shapes
    (n, ...) (any trailing dimensions); shape ``U.shape[1:] + V.shape[1:]``."""
    if not _blocked(U.shape[0], jnp.result_type(U, V)):
        return jnp.tensordot(U, V, axes=(0, 0))
    n = U.shape[0]
    u, v = "bnm"[: 2 + (U.ndim > 1)], "bnd"[: 2 + (V.ndim > 1)]
    flat = jnp.einsum(
        f"{u},{v}->b{u[2:]}{v[2:]}",
        _blocks(U.reshape(n, -1) if U.ndim > 1 else U),
        _blocks(V.reshape(n, -1) if V.ndim > 1 else V),
    )
    return _in_order(flat).reshape(U.shape[1:] + V.shape[1:])


def row_scatter(values, columns, size: int):
    """``out[c] = sum of values[i, l] over (i, l) with columns[i, l] = c`` (``values``
    and ``columns`` (n, k), ``out`` (size,)) in the fixed order: one scatter-add per row
    block into its own slice, then the slices added in order."""
    n = values.shape[0]
    if not _blocked(n, values.dtype):
        return jnp.zeros(size, values.dtype).at[columns.ravel()].add(values.ravel())
    block = jnp.arange(n, dtype=columns.dtype) // (n // ROW_BLOCKS)
    flat = (block[:, None] * size + columns).ravel()
    parts = jnp.zeros(ROW_BLOCKS * size, values.dtype).at[flat].add(values.ravel())
    return _in_order(parts.reshape(ROW_BLOCKS, size))


@jax.custom_vjp
def shift_columns(s, theta):
    """``s[:, None] - theta[None, :]`` whose gradient in ``theta`` sums over rows in the
    fixed order."""
    return s[:, None] - theta[None, :]


def _shift_fwd(s, theta):
    return shift_columns(s, theta), None


def _shift_bwd(_, g):
    return jnp.sum(g, axis=1), -row_sum(g)


shift_columns.defvjp(_shift_fwd, _shift_bwd)
