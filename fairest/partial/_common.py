"""Pieces shared by the partial-fairness estimators and baselines (no estimator here):
the public metric names, the interval check and the padded :class:`Data` builder."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from fairest._kernels._buckets import pad_rows
from fairest.partial._dc import Data, SparseRows, sparse_rows

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


def build_data(X, y01, codes, sample_weight, num_groups, sparse=True, **hyper):
    """Padded float64 :class:`Data` with objective and within-group weights; ``X`` is
    stored as :class:`SparseRows` when at most a quarter of every row is non-zero (and
    ``sparse``)."""
    n = X.shape[0]
    totals = np.bincount(codes, weights=sample_weight, minlength=num_groups)
    c0 = sample_weight / sample_weight.sum()
    cg = sample_weight / np.where(totals > 0, totals, 1.0)[codes]
    Xp, yp, gp, c0p, cgp = pad_rows(n, X, y01, codes, c0, cg)
    as64 = lambda a: jnp.asarray(a, dtype=jnp.float64)  # noqa: E731
    ell = sparse_rows(Xp) if sparse else None
    if ell is None:
        X_data = as64(Xp)
    else:  # mostly zeros (one-hot data): gather / scatter over the non-zeros only
        X_data = SparseRows(jnp.asarray(ell[0]), as64(ell[1]), Xp.shape[1])
    return Data(
        X=X_data,
        y=as64(yp),
        groups=jnp.asarray(gp, dtype=jnp.int32),
        c0=as64(c0p),
        cg=as64(cgp),
        membership=as64((gp[:, None] == np.arange(num_groups)[None, :]) * cgp[:, None]),
        **{key: as64(value) for key, value in hyper.items()},
    )
