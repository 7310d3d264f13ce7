"""The runtime of the constrained engine, apart from its algorithms: where the data lives and
what the driver does around a run's chunks.

* :func:`device_data` pads a fit's rows to a bucket (weight 0), so that nearby row counts
  share compiled code, and places them on the configured devices
  (:func:`fairest.constrained._sparse.place_with_design`); :func:`place_padded_rows` does
  the same for the pruned model's rows; :func:`padded_design` casts and pads a dense ``X``
  into one aligned buffer;
* :func:`epoch_inputs`: one epoch's scan inputs padded to a bucket of inactive steps;
* :func:`chunk_length`: iterations per jitted chunk, a bucket of at least
  ``CONSTRAINED_TUNING.min_chunk``;
* :data:`HOOKS`: the services the driver calls and no solver does: handing freed memory
  back to the system (:func:`fairest.utils._memory.release_free_memory`) and compiling the
  final full-data step in a thread while the chunks run
  (:func:`fairest.utils._compilation_cache.compile_in_background`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np
import scipy.sparse as sp

from fairest._kernels import bucket_size
from fairest._kernels._buckets import aligned_empty, pad_rows_to, padded_rows
from fairest.constrained._defaults import CONSTRAINED_TUNING
from fairest.constrained._sparse import place_with_design
from fairest.utils._compilation_cache import compile_in_background
from fairest.utils._memory import release_free_memory

__all__ = [
    "HOOKS",
    "RuntimeHooks",
    "chunk_length",
    "device_data",
    "epoch_inputs",
    "padded_design",
    "place_padded_rows",
]


class RuntimeHooks(NamedTuple):
    """The runtime services of a run, called by the driver only.

    ``release_memory()`` returns freed host memory to the system (after the first chunk
    has compiled, before the final step, before the copy of ``X``); ``precompile(fn,
    args)`` starts compiling ``fn`` for ``args`` and returns a handle whose ``join()``
    waits for it.
    """

    release_memory: Callable[[], object]
    precompile: Callable


HOOKS = RuntimeHooks(release_free_memory, compile_in_background)


def chunk_length(iters_per_epoch: int) -> int:
    """Iterations of one jitted chunk: the bucket of ``max(iters_per_epoch, min_chunk)``
    (:data:`~fairest.constrained._defaults.CONSTRAINED_TUNING`), so that nearby epoch
    lengths share the compiled chunk."""
    return bucket_size(max(iters_per_epoch, CONSTRAINED_TUNING.min_chunk))


def device_data(X, y, groups, cells, dtype, loss_scale=None, cell_scale=None):
    """Pad rows to a bucket (weight 0) so nearby n share compiled code, and place them
    on the configured devices (:func:`fairest.utils._devices.place_rows`).

    ``loss_scale`` / ``cell_scale`` (``None`` for unweighted data) are the per-row loss
    scales of objective batches and constraint draws (see :class:`Batch`).
    """
    n = X.shape[0]
    n_pad = bucket_size(n)
    pad = n_pad - n

    def padded(a, fill=0):
        if not pad:
            return a
        return np.concatenate([a, np.full((pad,) + a.shape[1:], fill, dtype=a.dtype)])

    real = np.dtype(dtype)
    rows = {
        "y": padded(np.asarray(y).astype(np.int32)),
        "groups": padded(groups.astype(np.int32)),
        "cells": padded(np.maximum(cells, 0).astype(np.int32)),
        "w": padded(np.ones(n, dtype=real)),
        "cw": padded((cells >= 0).astype(real)),
    }
    if loss_scale is not None:
        rows["s"] = padded(np.asarray(loss_scale, dtype=real))
        rows["cs"] = padded(np.asarray(cell_scale, dtype=real))
    # sharded by rows over the configured devices (more zero-weight padding rows, never
    # drawn by the samplers); one default device otherwise. Sparse X stays sparse
    # (fairest.constrained._sparse), its empty padding rows added there.
    if not sp.issparse(X):
        HOOKS.release_memory()  # validation's freed pages: not resident beside the copy
        X = padded_design(X, n_pad, real)
    return place_with_design(X, rows, dtype)


def padded_design(X, length: int, dtype) -> np.ndarray:
    """Dense ``X`` in ``dtype`` with zero rows up to ``length`` rows, as ONE array: cast
    and padded straight into a 64-byte aligned buffer (which ``jax.device_put`` on a CPU
    device shares instead of copying), never a cast copy and a padded copy of it. ``X``
    already in ``dtype`` and ``length`` rows long is returned as it is."""
    X = np.asarray(X)
    dtype = np.dtype(dtype)
    n = X.shape[0]
    if n == length and X.dtype == dtype and X.flags.c_contiguous:
        return X
    out = aligned_empty((length,) + X.shape[1:], dtype)
    out[:n] = X  # cast in numpy's buffered chunks: no whole-size temporary
    out[n:] = 0
    return out


def place_padded_rows(X, rows: dict, dtype) -> dict:
    """``X`` and a fit's row arrays ``rows`` (numpy) on the configured devices, padded to
    a row bucket (:func:`~fairest._kernels._buckets.padded_rows`: fits on nearby row
    counts share the compiled epoch; the padding rows are never drawn), row-sharded over
    the devices: a dense ``X`` cast and padded into one aligned buffer
    (:func:`padded_design`, shared with a CPU device), a sparse ``X`` kept sparse with
    empty rows added (:func:`~fairest.constrained._sparse.place_with_design`)."""
    real = np.dtype(dtype)
    width = 0 if sp.issparse(X) else X.shape[1]  # sparse X gains empty rows, no copy
    length = padded_rows(X.shape[0], real.itemsize * (width + 2) + 8)
    rows = dict(zip(rows, pad_rows_to(length, *rows.values())))
    design = X if sp.issparse(X) else padded_design(X, length, real)
    return place_with_design(design, rows, dtype)


def epoch_inputs(idx, w, learning_rate, dtype, first: int = 0) -> tuple[dict, int]:
    """Scan inputs of one epoch's ``T`` steps (indices and weights of shape ``(T, b)``),
    padded to ``bucket_size(T)`` inactive steps so that fits on nearby row counts share
    one compiled epoch; built on the host in their final dtypes (an eager conversion on
    the device would compile one small program per shape). ``first``: the step count
    before the epoch (``it``, the steps' numbers for the divergence guard). Returns
    ``(inputs, T)``."""
    steps = idx.shape[0]
    length = bucket_size(steps)
    real = np.dtype(dtype)
    idx, w = pad_rows_to(length, idx.astype(np.int32), w.astype(real))
    inputs = {
        "idx": idx,
        "w": w,
        "learning_rate": np.full(length, learning_rate, dtype=real),
        "active": np.arange(length) < steps,
        "it": np.arange(first, first + length, dtype=np.int32),
    }
    return jax.device_put(inputs), steps
