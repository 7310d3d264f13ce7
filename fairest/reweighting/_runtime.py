"""The reweighting family's runtime: where its data lives and how its kernels get ready.

The algorithm modules (:mod:`~._bilevel`, :mod:`~._oracle`, :mod:`~._outer`,
:mod:`~._solve`) say *what* is computed; this module holds what only decides *how* it
runs, and they reach it through the functions and the :class:`OracleRuntime` hooks below,
never by calling the placement, padding, compilation or memory utilities themselves:

* placement and padding of a fit's arrays (:func:`place_fit_arrays`): row buckets for
  small data, the no-copy placement of large dense data, sparse data as a device
  :class:`~fairest._kernels._sparse.SparseRows` or, where the Newton Hessian would be
  assembled from densified row blocks anyway, as a dense copy (:func:`densify_pays`);
* the oracle's hooks (:class:`OracleRuntime`): background compilation of its kernels
  (:mod:`fairest.utils._compilation_cache`), the release of the compilers' freed memory
  (:mod:`fairest.utils._memory`), and the row blocks of one-group vertices (solved on
  their rows only, gathered or read lazily).

Every choice here follows ``ORACLE_TUNING`` (:mod:`~._defaults`) or a kernel's own tuning
record; none changes a result beyond floating-point rounding and the solver tolerances.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fairest._kernels._buckets import bucket_size, pad_rows_to, padded_rows
from fairest._kernels._placement import place_dense
from fairest._kernels._sparse import sparse_rows
from fairest._solvers._defaults import SOLVER_TUNING
from fairest.reweighting import _defaults
from fairest.reweighting._defaults import ORACLE_TUNING
from fairest.utils._devices import configured_devices, place_rows

__all__ = ["OracleRuntime", "densify_pays", "group_row_blocks", "place_fit_arrays"]

_ROW_DTYPES = (np.float64, np.float64, np.int32, np.float64)


def densify_pays(X) -> bool:
    """Whether a scipy sparse ``X`` is better held dense on the device.

    Its Newton Hessian ``X^T diag(q) X`` costs O(n d^2) either way unless its rows hold
    few entries next to d (:meth:`~fairest._kernels._sparse.SparseRows.uses_outer_gram`):
    the sparse form densifies row blocks for it, in float64. A dense copy runs the same
    products as plain GEMMs and, from ``FLOAT32_HESSIAN_WORK`` on, with float32 Hessian
    blocks (the solution and the refined adjoint stay float64-accurate). It pays when the
    fit is that large, the copy takes at most ``ORACLE_TUNING.densify_max_bytes`` and the
    lower level forms a Hessian at all (no Newton-CG).
    """
    n, d = X.shape
    return (
        n * d**2 >= _defaults.FLOAT32_HESSIAN_WORK
        and n * d * 8 <= ORACLE_TUNING.densify_max_bytes
        and d + 1 <= SOLVER_TUNING.newton_cg_min_params
        and not sparse_rows(X).uses_outer_gram()
    )


def place_fit_arrays(X, rows):
    """Device copies of a fit's ``X`` and its row arrays ``rows = (y, groups, weight)``.

    Small data is padded to a row bucket (zero rows, weight 0: one compiled kernel per
    bucket); large data is placed without a padding copy. Sparse ``X`` becomes a device
    :class:`~fairest._kernels._sparse.SparseRows` padded with empty rows, or a dense
    array where :func:`densify_pays`. Returns ``(X_dev, y_dev, groups_dev, weight_dev,
    sparse)``, ``sparse`` whether ``X_dev`` is a ``SparseRows``.
    """
    n, d = X.shape
    sparse = sp.issparse(X) and not densify_pays(X)
    if sp.issparse(X) and not sparse:
        X = X.toarray()
    length = n  # no padding copy of large data (padded_rows) nor with pad_rows off
    if ORACLE_TUNING.pad_rows:
        length = padded_rows(n, 8 * 4 if sparse else 8 * (d + 3))
    y_pad, g_pad, w_pad = pad_rows_to(
        length, *(np.asarray(a, dtype=t) for a, t in zip(rows, _ROW_DTYPES[1:]))
    )
    if sparse:
        from fairest._solvers._driver import place_sparse

        X_dev = place_sparse(sparse_rows(X).with_rows(length))
        y_dev, g_dev, w_dev = place_rows([y_pad, g_pad, w_pad])
        return X_dev, y_dev, g_dev, w_dev, True
    (X_pad,) = pad_rows_to(length, np.asarray(X, dtype=np.float64))
    if length == n and configured_devices() is None:  # large data, JAX's default device:
        # X shared with a CPU device even where numpy's alignment would force a copy
        # (a ShiftedRows: every row loop reads it through _placement.row_block)
        X_dev = place_dense(X_pad)
        y_dev, g_dev, w_dev = place_rows([y_pad, g_pad, w_pad])
    else:  # sharded by rows over the devices of fairest.config_context
        X_dev, y_dev, g_dev, w_dev = place_rows([X_pad, y_pad, g_pad, w_pad])
    return X_dev, y_dev, g_dev, w_dev, False


def group_row_blocks(groups: np.ndarray, num_groups: int, num_rows: int, row_bytes: int = 0):
    """Row indices of each group as a ``(G, S)`` block padded with row 0 (``valid`` 0),
    ``S`` the bucketed largest group size; ``None`` when solving a one-group vertex on
    its rows would not pay (``ORACLE_TUNING.group_rows_min_rows``, ``ORACLE_TUNING.group_rows_max_share``;
    from ``ORACLE_TUNING.group_rows_large_rows`` rows on ``ORACLE_TUNING.group_rows_large_share`` when the
    gathered block, ``row_bytes`` per row, takes at most ``ORACLE_TUNING.group_rows_max_bytes``)."""
    counts = np.bincount(groups, minlength=num_groups)
    size = bucket_size(int(counts.max()))
    share = ORACLE_TUNING.group_rows_max_share
    if (
        num_rows >= ORACLE_TUNING.group_rows_large_rows
        and size * row_bytes <= ORACLE_TUNING.group_rows_max_bytes
    ):
        share = ORACLE_TUNING.group_rows_large_share
    if num_rows < ORACLE_TUNING.group_rows_min_rows or size > share * num_rows:
        return None
    order = np.argsort(groups, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.arange(size)
    valid = position[None, :] < counts[:, None]
    rows = np.where(valid, order[np.where(valid, starts[:, None] + position[None, :], 0)], 0)
    return rows.astype(np.int32), valid.astype(np.float64)


class OracleRuntime:
    """The hooks an :class:`~._oracle.ImplicitOracle` is given: how its calls run.

    It decides, once per fit and from ``ORACLE_TUNING``, the paths that depend only on the
    data's size and form: how many evaluated points are kept (:attr:`cache_size`), whether
    early solves may be inexact (:attr:`inexact`), whether points needing only ``Phi``
    skip the adjoint and near points are snapped (:attr:`reuse`), which adjoint kernel
    runs (:attr:`gradient_mode`), and the row blocks of one-group vertices
    (:meth:`vertex_rows`). It compiles kernels in the background
    (:meth:`compile_in_background`) and makes a kernel wait for its compilation, then
    returns the compilers' freed memory (:meth:`ready`).

    Parameters
    ----------
    problem : Problem
        The fit's device data.
    num_groups : int
        Number of groups G.
    num_params : int
        Model parameters p (intercept included).
    groups : ndarray of shape (n_samples,), default=None
        Host group codes of the real rows; ``None``: vertices are solved on all rows.
    """

    def __init__(self, problem, num_groups: int, num_params: int, groups=None):
        from fairest._kernels._sparse import is_sparse
        from fairest.reweighting._bilevel import (
            _blocked,
            cache_size,
            reads_rows_lazily,
            uses_newton_cg,
        )

        n = problem.X.shape[0]
        self.cache_size = cache_size(num_params, num_groups)
        self.inexact = n >= ORACLE_TUNING.inexact_min_rows
        self.reuse = n >= ORACLE_TUNING.reuse_min_rows  # values only, snapping
        blocked = _blocked(problem.X) and not uses_newton_cg(num_params)
        self.gradient_mode = "blocked" if blocked else "plain"
        self.group_rows = None  # (rows, valid) of every group, or None
        if groups is not None:
            row_bytes = 0  # of a gathered copy: none where the rows are read lazily
            if is_sparse(problem.X):
                row_bytes = problem.X.row_entries * 12 + 24  # value and column of every slot
            elif not reads_rows_lazily(problem):
                row_bytes = problem.X.shape[1] * 8 + 24
            self.group_rows = group_row_blocks(groups, num_groups, n, row_bytes)
        self.compiling = {}  # kernel name -> thread compiling it

    def vertex_rows(self, lam):
        """``(rows, valid)`` of the group whose vertex ``lam`` is, when that vertex is
        solved on its rows only; else ``None``."""
        support = np.flatnonzero(lam)
        if self.group_rows is None or support.size != 1:
            return None
        return tuple(block[support[0]] for block in self.group_rows)

    def compile_in_background(self, kernels: dict) -> None:
        """Compile ``kernels`` (name -> ``(jitted function, example arguments)``), each in
        a thread (:func:`~fairest.utils._compilation_cache.compile_in_background`: XLA
        compiles outside the GIL), without running them."""
        from fairest.utils._compilation_cache import compile_in_background

        for name, (kernel, args) in kernels.items():
            self.compiling[name] = compile_in_background(kernel, args, x64=True)

    def ready(self, name: str) -> None:
        """Wait for the background compilation of kernel ``name``, if any; then return
        the compilers' freed working memory (each thread its own heap) to the system, so
        that it is not resident under the kernels' runs."""
        from fairest.utils._memory import release_free_memory

        thread = self.compiling.pop(name, None)
        if thread is not None:
            thread.join()
            release_free_memory()
