"""A value-and-gradient pass over dense ``X`` split by rows across the CPU cores.

XLA's CPU client runs the fused row-block loop of
:func:`~fairest._kernels._glm.row_block_pass` on one thread: its block products are too
small for the intra-op thread pool, two independent row-half loops inside one jitted
program run one after the other, and two programs dispatched asynchronously from one
thread barely overlap. Two programs run from two host threads do run in parallel (the
GIL is released while XLA computes), so :func:`split_value_and_grad` cuts the rows into
parts (:func:`row_parts`), runs one :func:`~fairest._kernels._glm.row_range_pass` per
part, the parts taken in turn by the calling thread and a small thread pool (one thread
per core), and sums the parts' values and gradients on the host (``p`` floats each), in
the parts' order. Every part reads its rows from the same device ``X`` (a
:class:`~fairest._kernels._placement.ShiftedRows` too): no copy. With a free core the
split pass beats both the one-thread loop and NumPy's threaded ``X @ w`` then ``r @ X``
(scikit-learn's pass); see ``benchmarks/results/erm_vs_sklearn_d500.md`` for whole fits.

JAX's ``enable_x64`` is a thread-local setting: each part runs under the caller's.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from fairest._kernels._glm import row_range_pass, value_and_grad
from fairest._kernels._losses import PENALTY_SCALE
from fairest._kernels._placement import is_shifted, pass_block_rows
from fairest._kernels._sparse import is_sparse
from fairest._solvers._defaults import SOLVER_TUNING

__all__ = ["row_parts", "split_pass", "split_threads", "split_value_and_grad"]

# How a pass is split (at most SOLVER_TUNING.max_split_threads threads and one per
# SOLVER_TUNING.min_part_bytes of X, SOLVER_TUNING.parts_per_thread parts a thread, each
# of at least SOLVER_TUNING.min_part_blocks row blocks) is read from the record at each
# call: fairest/_solvers/_defaults.py says why each value.


def _cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _single_cpu_device(X) -> bool:
    """Whether ``X`` is a device array (or :class:`ShiftedRows`) on one CPU device."""
    array = X.flat if is_shifted(X) else X
    if not isinstance(array, jax.Array):
        return False
    devices = array.sharding.device_set
    return len(devices) == 1 and next(iter(devices)).platform == "cpu"


def row_parts(X) -> list[tuple[int, int]]:
    """Row ranges ``[(first, stop), ...]`` of a split pass over ``X``, in order: up to
    ``SOLVER_TUNING.parts_per_thread`` per thread (:func:`split_threads`), each of at
    least ``SOLVER_TUNING.min_part_blocks`` row blocks; empty where the pass is not split
    (sparse ``X``, a sharded or non-CPU ``X``, one core, small data)."""
    if is_sparse(X) or not _single_cpu_device(X):
        return []
    tuning = SOLVER_TUNING
    n, d = X.shape
    threads = min(_cpu_cores(), tuning.max_split_threads, n * d * 8 // tuning.min_part_bytes)
    count = min(
        tuning.parts_per_thread * threads, n // (tuning.min_part_blocks * pass_block_rows(d))
    )
    if threads < 2 or count < 2:
        return []
    bounds = [round(k * n / count) for k in range(count + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def split_threads(parts) -> int:
    """Threads that run a split pass over ``parts``: one per core, at most one per part
    and ``SOLVER_TUNING.max_split_threads``."""
    return max(1, min(_cpu_cores(), SOLVER_TUNING.max_split_threads, len(parts)))


_POOL: list = []  # [(pid, workers, executor)]: rebuilt in a forked child (joblib workers)


def _executor(workers: int) -> ThreadPoolExecutor:
    pid = os.getpid()
    if not _POOL or _POOL[0][:2] != (pid, workers):
        if _POOL and _POOL[0][0] == pid:
            _POOL[0][2].shutdown(wait=False)
        _POOL[:] = [(pid, workers, ThreadPoolExecutor(workers, thread_name_prefix="fairest"))]
    return _POOL[0][2]


def _penalty_diagonal(loss: str, p: int, alpha, penalize_intercept) -> np.ndarray:
    """NumPy twin of :func:`fairest._kernels._glm.penalty_diagonal`."""
    diag = np.full(p, 2.0 * PENALTY_SCALE[loss] * float(alpha))
    diag[0] *= float(penalize_intercept)
    return diag


def split_value_and_grad(
    loss: str, theta, X, y, c, alpha, penalize_intercept, parts=None
) -> tuple[float, np.ndarray]:
    """Objective and gradient (float, numpy (p,)) of
    :func:`~fairest._kernels._glm.value_and_grad`, the pass split over ``parts`` (default
    :func:`row_parts`) run in parallel threads; without parts, the one-thread kernel."""
    parts = row_parts(X) if parts is None else parts
    if not parts:
        value, grad = jax.device_get(
            value_and_grad(loss, theta, X, y, c, alpha, penalize_intercept)
        )
        return float(value), np.asarray(grad, dtype=np.float64)
    return split_pass(loss, theta, X, y, c, alpha, penalize_intercept, parts)


def split_pass(loss: str, theta, X, y, c, alpha, penalize_intercept, parts, hessian_dtype=None):
    """Objective, gradient and (with ``hessian_dtype``, e.g. float32 row blocks) Hessian,
    penalty included, as numpy float64: one :func:`~fairest._kernels._glm.row_range_pass`
    per row range of ``parts`` (non-empty), taken in turn by :func:`split_threads` threads
    (the caller's and a pool's), summed on the host in the order of ``parts``."""
    x64 = jax.config.jax_enable_x64
    theta = np.asarray(theta, dtype=np.float64)
    theta_dev = jax.device_put(theta)

    def part(bounds):
        with jax.enable_x64(x64):
            return jax.device_get(
                row_range_pass(loss, theta_dev, X, y, c, *bounds, hessian_dtype=hessian_dtype)
            )

    results = [None] * len(parts)
    pending = iter(range(len(parts)))
    lock = threading.Lock()

    def take_parts():  # until none is left; the sums keep the parts' order (reproducible)
        while True:
            with lock:
                k = next(pending, None)
            if k is None:
                return
            results[k] = part(parts[k])

    helpers = split_threads(parts) - 1
    futures = [_executor(helpers).submit(take_parts) for _ in range(helpers)]
    take_parts()
    for future in futures:
        future.result()
    totals = [
        np.sum([np.asarray(r[k], dtype=np.float64) for r in results], axis=0)
        for k in range(len(results[0]))
    ]
    pen = _penalty_diagonal(loss, theta.shape[0], alpha, penalize_intercept)
    value = float(totals[0]) + 0.5 * float(np.sum(pen * theta**2))
    out = [value, totals[1] + pen * theta]
    if hessian_dtype is not None:
        out.append(totals[2] + np.diag(pen))
    return tuple(out)
