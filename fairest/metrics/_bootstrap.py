"""Bootstrap replicates of a metric frame's rows.

Resampling follows fairlearn's seed semantics exactly: replicate ``b`` draws ``n`` rows
with replacement from ``numpy.random.RandomState(seeds[b])``, where ``seeds`` are
``n_boot`` integers drawn from ``numpy.random.default_rng(random_state)``; the same
``random_state`` gives the same replicates as ``fairlearn.metrics.MetricFrame``.
``stratify`` instead resamples within every cell (cell sizes fixed).

Rate metrics are evaluated for a whole chunk of replicates at once, as ratios of segment
sums (``np.bincount``) over (replicate, cell) segments.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator

import numpy as np

from fairest.utils._tuning import HOST_TUNING

__all__ = ["rate_values", "replicate_chunks", "replicate_seeds", "replicate_segments"]


def replicate_seeds(n_boot: int, random_state) -> np.ndarray:
    """fairlearn's per-replicate seeds (``fairlearn.metrics._bootstrap``)."""
    high = np.iinfo(np.uint32).max
    if random_state is None:
        return np.random.default_rng().integers(0, high, size=n_boot, dtype=np.uint32)
    if isinstance(random_state, np.random.RandomState):
        return random_state.randint(low=0, high=high, size=n_boot, dtype=np.uint32)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        generator = np.random.default_rng(seed=int(random_state))
        return generator.integers(0, high, size=n_boot, dtype=np.uint32)
    raise TypeError(
        "random_state must be None, an int or a numpy.random.RandomState; "
        f"got {type(random_state).__name__}."
    )


def replicate_chunks(seeds, codes, num_cells, stratify) -> Iterator[np.ndarray]:
    """Row indices of the bootstrap replicates, ``(chunk, n)`` at a time."""
    n = codes.shape[0]
    if stratify:
        order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes, minlength=num_cells)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        sorted_codes = codes[order]
    per_chunk = max(1, HOST_TUNING.bootstrap_chunk_entries // n)
    for first in range(0, len(seeds), per_chunk):
        chunk = seeds[first : first + per_chunk]
        indices = np.empty((len(chunk), n), dtype=np.int64)
        for b, seed in enumerate(chunk):
            state = np.random.RandomState(seed)
            if stratify:  # a uniform row of the same cell for every position
                u = state.random_sample(n)
                within = np.floor(u * sizes[sorted_codes]).astype(np.int64)
                indices[b] = order[starts[sorted_codes] + within]
            else:  # pandas' DataFrame.sample(frac=1, replace=True, random_state=seed)
                indices[b] = state.choice(n, size=n, replace=True)
        yield indices


def replicate_segments(codes, num_cells, indices):
    """Segment ids ``b * K + cell`` of the resampled rows (flat) and which cells each
    replicate holds, ``(B, K)``."""
    n_reps = indices.shape[0]
    flat = (np.arange(n_reps)[:, None] * num_cells + codes[indices]).ravel()
    present = np.bincount(flat, minlength=n_reps * num_cells).reshape(n_reps, num_cells) > 0
    return flat, present


def rate_values(numerator, denominator, present, undefined):
    """Rates from summed terms, ``undefined`` where no eligible weight, NaN where the
    segment has no rows."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(
            denominator > 0, numerator / np.where(denominator > 0, denominator, 1), undefined
        )
    return np.where(present, rates, np.nan)
