"""Pieces shared by the partial-fairness estimators and baselines (no estimator here):
the public metric names, the interval check and the padded :class:`Data` builder.

Under ``fairest.config_context(devices=...)`` with several devices, :func:`build_data`
shards the row-aligned arrays of :class:`Data` (``X``, ``y``, ``groups``, ``c0``,
``cg``, ``membership``) by rows over the devices
(:func:`fairest.utils._devices.place_rows`) and replicates the hyper-parameters. The
padding rows (bucket and device padding) carry ``c0 = cg = 0`` and zero ``membership``:
the loss, every group mean and so every surrogate constraint are those of the unpadded
data. Group totals, the interval, the level grid and the exact training metric are
computed on the host from the unpadded numpy data.

Every sum over rows of the kernels is reduced in the fixed order of
:mod:`fairest.partial._rows` (row blocks, then the blocks left to right), so on 1, 2, 4 or 8
devices the float64 paths (IDCA with SSG inner solves, direct SSG, the penalty baseline)
compute the same bits and return the same model as on one device; the float32
``smooth_alm`` solver and IDCA with ``inner_solver="alm"`` are not bit-identical: XLA
compiles their Newton loops a little differently around a sharded reduction
(``docs/user_guide/scaling.md`` gives the measured gaps)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fairest._kernels._buckets import aligned_empty, bucket_size, pad_rows
from fairest._kernels._defaults import KERNEL_TUNING
from fairest._kernels._sparse import ell_rows
from fairest.partial._dc import Data
from fairest.partial._defaults import PARTIAL_TUNING
from fairest.utils._devices import place_replicated, place_rows

# Public ``metric`` values (the names of fairest.metrics' functions) and the short codes
# of ``Config.constraint`` used by the kernels.
METRICS = {
    "partial_statistical_parity": "statistical",
    "partial_demographic_parity": "demographic",
}


def check_interval(interval) -> tuple[float, float]:
    """``(alpha, beta)`` as floats with ``0 <= alpha < beta <= 1``."""
    try:
        lo, hi = (float(v) for v in interval)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"interval must be 'auto' or a pair (alpha, beta); got {interval!r}."
        ) from error
    if not (0.0 <= lo < hi <= 1.0):
        raise ValueError(f"interval must satisfy 0 <= alpha < beta <= 1; got {interval!r}.")
    return lo, hi


def as_csr_or_dense(X):
    """A scipy sparse ``X`` as CSR (CSC / COO converted once), a numpy ``X`` as is."""
    return X.tocsr() if sp.issparse(X) else X


def dense(X) -> np.ndarray:
    """``X`` as a numpy array (a scipy sparse ``X`` densified)."""
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def squared_row_norms(X) -> np.ndarray:
    """``||x_i||^2`` of every row of a numpy or scipy sparse ``X`` (never densified)."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X)


def smooth_dense_cost() -> float:
    """``dense_cost`` of the smoothed ALM's rows (build_problem with ``lean``): its passes
    are weighted Grams and ``X^T V`` products, a scattered add of ELL slots costing about
    as much as ``KERNEL_TUNING.outer_gram_cost`` flops of a dense GEMM
    (:mod:`fairest._kernels._defaults`), so its rows stay ELL only where that cost times
    ``k^2`` is below ``d^2`` (``k`` slots a row); otherwise a dense float32 copy, at most
    ``cost^(1/2) / 3`` times the ELL form's bytes, is the faster store."""
    return float(KERNEL_TUNING.outer_gram_cost)


def ell_width(n: int, d: int, row_counts, max_density: float | None = None, dense_cost=0.0):
    """The storage rule of :func:`ell_slots` and :func:`csr_ell_slots`: ``(k, counts)``,
    ELL slots a row (the most non-zeros of a row rounded up to a multiple of 8, so that
    folds of one dataset share compiled code) and every row's non-zeros
    (``row_counts()``, called only for ``n > 0`` and ``d >= 8``), or ``None`` where the
    ``n x d`` data is stored dense: a row more than ``max_density`` non-zero, or
    ``dense_cost k^2 >= d^2`` (dense products cheaper than scattered adds; 0: never).
    ``max_density`` defaults to ``PARTIAL_TUNING.ell_density``."""
    if max_density is None:
        max_density = PARTIAL_TUNING.ell_density
    if n == 0 or d < 8:
        return None
    counts = row_counts()
    k = max(int(counts.max()), 1)
    if k > max_density * d:
        return None
    slots = min(-(-k // 8) * 8, d)
    if dense_cost * slots * slots >= d * d:
        return None
    return slots, counts


def ell_slots(X, max_density: float | None = None, dense_cost: float = 0.0):
    """ELL slots ``(index, value)``, each ``(n, k)``, of the numpy array ``X`` when at
    most ``max_density`` of every row is non-zero (and it saves work, see
    :func:`ell_width`), else ``None``:
    row ``i`` is ``sum_l value[i, l] e_{index[i, l]}``, unused slots holding 0 at
    column 0 (the layout of :func:`fairest._kernels._sparse.ell_rows`)."""
    X = np.asarray(X)
    # counted by row blocks: no (n, d) mask of dense data
    plan = ell_width(*X.shape, lambda: _nonzero_counts(X), max_density, dense_cost)
    if plan is None:
        return None
    k, counts = plan
    nonzero = X != 0
    order = np.argsort(~nonzero, axis=1, kind="stable")[:, :k]
    value = np.take_along_axis(X, order, axis=1)
    pad = np.arange(k)[None, :] >= counts[:, None]
    value[pad] = 0.0
    index = np.where(pad, 0, order).astype(np.int32)
    return index, value


def _nonzero_counts(X: np.ndarray) -> np.ndarray:
    """Non-zeros of every row of the numpy ``X``, counted block by block of rows."""
    rows = PARTIAL_TUNING.host_block_rows
    return np.concatenate(
        [np.count_nonzero(X[start : start + rows], axis=1) for start in range(0, X.shape[0], rows)]
    )


def csr_ell_slots(X, max_density: float | None = None, dense_cost: float = 0.0):
    """ELL slots of the scipy sparse matrix ``X`` (any format: converted to CSR once,
    never densified) under the rule of :func:`ell_slots`, else ``None``.

    Explicit zeros are dropped and duplicates summed, and each row keeps its entries in
    increasing column order, so the result equals ``ell_slots(X.toarray())``."""
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()  # also sorts the column indices of every row
    X.eliminate_zeros()
    n, d = X.shape
    plan = ell_width(n, d, lambda: np.diff(X.indptr), max_density, dense_cost)
    if plan is None:
        return None
    k, counts = plan
    rows = np.repeat(np.arange(n), counts)
    slots = np.arange(X.nnz) - np.repeat(X.indptr[:-1], counts)
    index = np.zeros((n, k), dtype=np.int32)
    value = np.zeros((n, k), dtype=np.float64)
    index[rows, slots] = X.indices
    value[rows, slots] = X.data
    return index, value


def padded_ell(X, n: int, dense_cost: float = 0.0):
    """ELL ``(index, value)`` of ``X`` padded to the row bucket of ``n`` rows, or
    ``None`` when ``X`` is stored dense. A scipy sparse ``X`` goes to ELL straight from
    its CSR form (:func:`csr_ell_slots`); numpy and sparse ``X`` follow the same rule
    (ELL when every row is at most 25 % non-zero, ``d >= 8`` and, with ``dense_cost``,
    ``dense_cost k^2 < d^2``), so both give the same :class:`Data` and the same fit."""
    slots = csr_ell_slots if sp.issparse(X) else ell_slots
    ell = slots(X, dense_cost=dense_cost)  # zero rows: no slots
    return None if ell is None else pad_rows(n, *ell)


def padded_dense(X, dtype=np.float64) -> np.ndarray:
    """``X`` (numpy or scipy sparse) as a dense ``dtype`` array padded with zero rows to
    its row bucket, written block by block of rows into one 64-byte aligned buffer
    (:func:`~fairest._kernels._buckets.aligned_empty`): a CPU device shares it rather
    than copying it, and neither a padded nor a ``dtype`` copy of the whole ``X`` is made
    on the way (``pad_rows`` would concatenate one, ``astype`` another)."""
    n, d = X.shape
    out = aligned_empty((bucket_size(n), d), dtype)
    rows = PARTIAL_TUNING.host_block_rows
    for start in range(0, n, rows):
        block = X[start : start + rows]
        out[start : start + block.shape[0]] = block.toarray() if sp.issparse(block) else block
    out[n:] = 0
    return out


def row_weights(codes, sample_weight, num_groups):
    """``(c0, cg)``: every row's weight in the mean loss (sum 1) and in its group's
    mean (each group sums to 1), float64."""
    totals = np.bincount(codes, weights=sample_weight, minlength=num_groups)
    c0 = sample_weight / sample_weight.sum()
    cg = sample_weight / np.where(totals > 0, totals, 1.0)[codes]
    return c0, cg


def build_data(
    X,
    y01,
    codes,
    sample_weight,
    num_groups,
    sparse=True,
    x_dtype=np.float64,
    like=None,
    dense_cost=0.0,
    **hyper,
):
    """Padded float64 :class:`Data` with objective and within-group weights; ``X``
    (numpy or scipy sparse) is stored as the shared
    :class:`~fairest._kernels._sparse.SparseRows` in ELL form when at most a quarter of
    every row is non-zero (and ``sparse``; with ``dense_cost``, also only where
    ``dense_cost k^2 < d^2``, see :func:`ell_width`), else dense: a scipy sparse ``X``
    is then densified block by block (:func:`padded_dense`). The rows are placed on the
    configured devices (sharded when there are several), the hyper-parameters
    replicated (see the module docstring).

    A dense ``X`` is stored in ``x_dtype`` (the smoothed ALM's float32: its only copy,
    cast block by block, see :func:`padded_dense`), and so are the row arrays ``y``,
    ``c0``, ``cg`` and ``membership`` (the float32 solver's own cast of them, made once
    here instead of beside float64 ones: 48 MiB less at 1e6 rows). ``like``: a :class:`Data` built from
    the same rows, whose placed row arrays are reused (only the hyper-parameters
    change: a tightening round places no second copy of ``X``)."""
    hyper_dev = place_replicated(
        {key: jnp.asarray(np.asarray(value, dtype=np.float64)) for key, value in hyper.items()}
    )
    if like is not None:
        return like._replace(**hyper_dev)
    n = X.shape[0]
    c0, cg = row_weights(codes, sample_weight, num_groups)
    yp, gp, c0p, cgp = pad_rows(n, y01, codes, c0, cg)
    as64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
    row_dtype = np.float32 if np.dtype(x_dtype) == np.float32 else np.float64
    as_rows = lambda a: np.asarray(a, dtype=row_dtype)  # noqa: E731
    membership = (gp[:, None] == np.arange(num_groups)[None, :]) * cgp[:, None]
    rows = [as_rows(yp), np.asarray(gp, dtype=np.int32), as_rows(c0p), as_rows(cgp)]
    rows.append(as_rows(membership))
    ell = padded_ell(X, n, dense_cost) if sparse else None
    if ell is None:
        X_dev, *row_dev = place_rows([padded_dense(X, x_dtype), *rows])
    else:  # mostly zeros (one-hot data): gather / scatter over the non-zeros only
        index, value, *row_dev = place_rows([np.asarray(ell[0]), as64(ell[1]), *rows])
        indptr = np.arange(index.shape[0] + 1, dtype=np.int32) * index.shape[1]
        X_dev = ell_rows(index, value, X.shape[1], indptr=place_replicated(indptr))
    y_dev, g_dev, c0_dev, cg_dev, membership_dev = row_dev
    return Data(
        X=X_dev,
        y=y_dev,
        groups=g_dev,
        c0=c0_dev,
        cg=cg_dev,
        membership=membership_dev,
        **hyper_dev,
    )
