"""Tuning of the kernels layer: the thresholds that choose how a kernel walks its data.

:data:`KERNEL_TUNING` holds them; tests change them with ``KERNEL_TUNING.override(...)``
(:class:`fairest.utils._tuning.Tuning`). Several are read while JAX traces a kernel, so
these records (:class:`TracedTuning`) empty JAX's compiled caches when an override begins
and ends: the next call traces again under the values in force.
"""

from __future__ import annotations

import dataclasses

import jax

from fairest.utils._tuning import Tuning

__all__ = ["KERNEL_TUNING", "KernelTuning", "TracedTuning"]


@dataclasses.dataclass
class TracedTuning(Tuning):
    """A tuning record whose fields may be read at trace time (kernels, solvers)."""

    def _changed(self) -> None:
        # a jitted function keeps the path chosen when it was traced: drop every compiled
        # function, so that the override (or its end) is seen by the next call
        jax.clear_caches()


@dataclasses.dataclass
class KernelTuning(TracedTuning):
    """Thresholds that choose a kernel's code path, never its result beyond rounding.

    Change them in tests with ``KERNEL_TUNING.override(...)``.
    """

    # data of at most this many bytes is padded to a row bucket (_buckets.padded_rows):
    # beyond, a copy costs more than one more compilation for the exact row count
    pad_max_bytes: int = 128 * 2**20
    # bytes of X (float64) per row block of the fused passes (_placement.pass_block_rows): blocks
    # that stay in the L2/L3 cache between ``X_b w`` and ``r_b^T X_b``
    pass_block_bytes: int = 4 * 2**20
    # a value-and-gradient pass reads dense X twice while X fits the last-level cache (up
    # to this many bytes), once block by block beyond (_glm.value_and_grad)
    fused_gradient_min_bytes: int = 32 * 2**20
    # cost of one scattered add of SparseRows.outer_gram in flops of a densified-block
    # GEMM (XLA CPU, float64; about two orders of magnitude more than a GEMM flop):
    # per-row outer products are used where outer_gram_cost * k^2 < d^2
    outer_gram_cost: int = 100
    # products (k x k per row) per block of SparseRows.outer_gram (8 MiB in float64)
    outer_gram_block: int = 1 << 20
    # floats of one densified row block of SparseRows.weighted_gram (8 MiB in float64)
    sparse_gram_block_floats: int = 1 << 20
    # stored values squared at a time by the in-place products of ``X * X`` (SquaredRows)
    square_block_entries: int = 1 << 20


KERNEL_TUNING = KernelTuning()
