"""Pieces shared by the partial-fairness estimators and baselines (no estimator here):
the public metric names, the interval check and the padded :class:`Data` builder.

Under ``fairest.config_context(devices=...)`` with several devices, :func:`build_data`
shards the row-aligned arrays of :class:`Data` (``X``, ``y``, ``groups``, ``c0``,
``cg``, ``membership``) by rows over the devices
(:func:`fairest.utils._devices.place_rows`) and replicates the hyper-parameters. The
padding rows (bucket and device padding) carry ``c0 = cg = 0`` and zero ``membership``:
the loss, every group mean and so every surrogate constraint are those of the unpadded
data. Group totals, the interval, the level grid and the exact training metric are
computed on the host from the unpadded numpy data."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fairest._kernels._buckets import pad_rows
from fairest.partial._dc import Data, SparseRows, csr_rows, sparse_rows
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


def padded_ell(X, n: int):
    """ELL ``(index, value)`` of ``X`` padded to the row bucket of ``n`` rows, or
    ``None`` when ``X`` is stored dense. A scipy sparse ``X`` goes to ELL straight from
    its CSR form (:func:`~fairest.partial._dc.csr_rows`); numpy and sparse ``X`` follow
    the same rule (ELL when every row is at most 25 % non-zero and ``d >= 8``), so both
    give the same :class:`Data` and the same fit."""
    if sp.issparse(X):
        ell = csr_rows(X)
        return None if ell is None else pad_rows(n, *ell)
    return sparse_rows(pad_rows(n, X)[0])


def build_data(X, y01, codes, sample_weight, num_groups, sparse=True, **hyper):
    """Padded float64 :class:`Data` with objective and within-group weights; ``X``
    (numpy or scipy sparse) is stored as :class:`SparseRows` when at most a quarter of
    every row is non-zero (and ``sparse``), else dense: a scipy sparse ``X`` is then
    densified, which costs less than 4 times its ELL form. The rows are placed on the
    configured devices (sharded when there are several), the hyper-parameters
    replicated (see the module docstring)."""
    n = X.shape[0]
    totals = np.bincount(codes, weights=sample_weight, minlength=num_groups)
    c0 = sample_weight / sample_weight.sum()
    cg = sample_weight / np.where(totals > 0, totals, 1.0)[codes]
    yp, gp, c0p, cgp = pad_rows(n, y01, codes, c0, cg)
    as64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
    membership = (gp[:, None] == np.arange(num_groups)[None, :]) * cgp[:, None]
    rows = [as64(yp), np.asarray(gp, dtype=np.int32), as64(c0p), as64(cgp), as64(membership)]
    ell = padded_ell(X, n) if sparse else None
    if ell is None:
        X_dev, *row_dev = place_rows([as64(pad_rows(n, dense(X))[0]), *rows])
    else:  # mostly zeros (one-hot data): gather / scatter over the non-zeros only
        index, value, *row_dev = place_rows([np.asarray(ell[0]), as64(ell[1]), *rows])
        X_dev = SparseRows(index, value, X.shape[1])
    y_dev, g_dev, c0_dev, cg_dev, membership_dev = row_dev
    hyper_dev = place_replicated({key: jnp.asarray(as64(value)) for key, value in hyper.items()})
    return Data(
        X=X_dev,
        y=y_dev,
        groups=g_dev,
        c0=c0_dev,
        cg=cg_dev,
        membership=membership_dev,
        **hyper_dev,
    )
