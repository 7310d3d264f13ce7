"""Partial parity's runtime: where a fit's data lives and how its jitted run gets ready.

The algorithm modules (:mod:`~._fit`, :mod:`~._fast`, :mod:`~._idca`, :mod:`~._baselines`)
say *what* is computed; this module holds what only decides *how* it runs, and they reach
it through the functions below, never by calling the placement, compilation, memory or
thread utilities themselves:

* the smoothed ALM's data on one device with its float32 copy of ``X`` made last
  (:func:`dense_on_one_device`, :func:`rows_then_dense`): the row arrays are placed, the
  run is compiled ahead of time for the data's shapes and the freed heap pages are handed
  back before the copy exists, so that neither the compiler's working memory nor those
  pages are resident beside it;
* the smoothed ALM's run on one BLAS thread (:func:`run_alm`): jaxlib's Cholesky factors
  call SciPy's OpenBLAS, whose idle worker threads keep spinning on the other cores that
  XLA's products need (:mod:`fairest.utils._threads`);
* the release of what a large run left in reference cycles before the exact evaluation
  of its candidates (:func:`release_after_run`).

None of them changes a result beyond floating-point rounding.
"""

from __future__ import annotations

import gc

import jax
import numpy as np
import scipy.sparse as sp

from fairest.partial._common import _nonzero_counts, build_data, ell_width, padded_dense
from fairest.partial._fast import SOLVER_DTYPE, compile_run, group_ranges, run_fast_alm, solver_data
from fairest.utils._devices import configured_devices, place_rows
from fairest.utils._memory import release_free_memory
from fairest.utils._threads import one_blas_thread

__all__ = ["dense_on_one_device", "release_after_run", "rows_then_dense", "run_alm"]


def dense_on_one_device(X, dense_cost: float = 0.0) -> bool:
    """Whether :func:`~fairest.partial._common.build_data` stores the numpy ``X`` dense
    (the rule of :func:`~fairest.partial._common.ell_width`: ELL when every row is at
    most a quarter non-zero, ``d >= 8`` and ``dense_cost k^2 < d^2``) on one device (no
    ``devices`` configured, or one, and one process): then its placed arrays are those
    of a few rows but longer."""
    if sp.issparse(X) or jax.process_count() > 1:
        return False
    devices = configured_devices()
    if devices is not None and len(devices) > 1:
        return False
    return ell_width(*X.shape, lambda: _nonzero_counts(X), dense_cost=dense_cost) is None


def rows_then_dense(
    cfg, X, y01, codes, sample_weight, num_groups, hyper, max_rounds: int, max_steps: int
):
    """The :class:`~fairest.partial._common.Data` of
    :func:`~fairest.partial._common.build_data` for the smoothed ALM on a dense ``X`` on
    one device, its float32 copy of ``X`` made last: the row arrays are built and placed
    first (``build_data`` of ``X`` without columns), the run of ``max_rounds`` rounds of
    at most ``max_steps`` steps is compiled for them and ``X``'s shape
    (:func:`~fairest.partial._fast.compile_run`), the heap pages freed so far
    (validation, interval, row temporaries, compiler) are handed back, and only then is
    ``X`` cast, padded and placed as ``build_data`` does it
    (``benchmarks/results/memory_table.md``)."""
    x_dtype = np.dtype(SOLVER_DTYPE)
    rows = build_data(
        X[:, :0], y01, codes, sample_weight, num_groups, sparse=False, x_dtype=x_dtype, **hyper
    )
    ranges = group_ranges(rows, cfg)
    compile_run(rows, cfg, rows.c0.shape[0], max_rounds, max_steps, ranges=ranges)
    release_free_memory()
    (X_dev,) = place_rows([padded_dense(X, x_dtype)])
    return rows._replace(X=X_dev)


def run_alm(x0, data, cfg, eps: float, tol: float, max_rounds: int, max_steps: int):
    """:func:`~fairest.partial._fast.run_fast_alm` on the solver's copy of ``data``, on
    one BLAS thread (it returns host arrays: the run has finished inside)."""
    with one_blas_thread():
        return run_fast_alm(x0, solver_data(data), cfg, eps, tol, max_rounds, max_steps)


def release_after_run(large: bool) -> None:
    """Collect what a run left in reference cycles and hand the freed heap pages back,
    when the run was ``large`` (``PARTIAL_TUNING.penalty_collect_cells``)."""
    if large:
        gc.collect()
        release_free_memory()
