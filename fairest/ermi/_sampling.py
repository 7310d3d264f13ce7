"""Uniform minibatches of the SGDA solver: m distinct row indices, an exact uniform m-subset.

Each candidate index is one 32-bit word (:func:`draw_below`, Lemire's multiply-shift with
rejection, no integer division); a step draws about ``m + m^2 / (2n)`` candidates in one
vectorised round (:func:`draws_per_round`) and drops repeats by a scatter-min into a
carried scratch array (:func:`uniform_subset`), so a step costs O(m), never O(n), and
needs no sort.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["draw_below", "draws_per_round", "uniform_subset"]


def draws_per_round(n: int, m: int) -> int:
    """Draws per round of :func:`uniform_subset`: enough for m distinct values of range(n).

    The number of uniform draws until m distinct values are seen has mean
    ``sum_i n / (n - i)`` and variance ``sum_i (i / n) / (1 - i / n)^2`` (i < m, coupon
    collector); a round draws the mean plus 6 standard deviations, over the fraction of draws
    :func:`draw_below` accepts, plus 16, so a second round is practically never needed
    (m = 1024 of n = 50 000: 1 071 draws, where a round of ``2m + 16`` would draw 2 064).
    """
    new = (n - np.arange(m, dtype=np.float64)) / n  # probability that a draw is new
    mean = float(np.sum(1.0 / new))
    spread = float(np.sqrt(np.sum((1.0 - new) / new**2)))
    accepted = 1.0 - (2**32 % n) / 2**32
    return int(np.ceil((mean + 6.0 * spread) / accepted)) + 16


def draw_below(key, shape, n: int):
    """Integers uniform on ``range(n)`` from one 32-bit draw each, and which draws are usable.

    Lemire's multiply-shift: for x uniform on [0, 2^32) and ``p = x n``, ``p >> 32`` is
    exactly uniform on range(n) once the draws whose low word ``p mod 2^32`` is below
    ``2^32 mod n`` are rejected (probability < n / 2^32). No integer division: the two
    32-bit draws and three integer remainders per value of ``jax.random.randint`` cost more
    on CPU than the rest of the sampler. Returns ``(values int32, usable bool)``; needs 64-bit integers
    (``jax.enable_x64``), as the estimator's solvers run.
    """
    if jax.dtypes.canonicalize_dtype(jnp.uint64) != jnp.uint64:
        raise RuntimeError("draw_below needs jax.enable_x64(True) (a 64-bit product).")
    bits = jax.random.bits(key, shape, jnp.uint32)
    product = bits.astype(jnp.uint64) * np.uint64(n)
    usable = product.astype(jnp.uint32) >= np.uint32(2**32 % n)
    return (product >> np.uint64(32)).astype(jnp.int32), usable


def uniform_subset(key, owner, n: int, m: int, round0_key=None):
    """m distinct indices drawn uniformly from ``range(n)`` (an exactly uniform m-subset).

    Sequential uniform draws that skip repeats give a uniformly random ordered m-tuple of
    distinct values; they are made in rounds of :func:`draws_per_round` vectorised draws
    (round r draws ``draw_below(fold_in(key, r), ...)``; rejected draws are skipped like
    repeats; further rounds, practically never needed, run in a ``while_loop``). Repeats
    are found by scatter-min into ``owner``, an int32 scratch array of length n filled with
    a sentinel and carried between calls (reset on the touched entries), so a call costs
    O(m), never O(n), and needs no sort. ``round0_key`` (``fold_in(key, 0)``, precomputed
    for all steps in one vectorised call) spares the in-loop key derivation of round 0.
    """
    n_draws = draws_per_round(n, m)
    sentinel = jnp.iinfo(jnp.int32).max
    order = jnp.arange(n_draws, dtype=jnp.int32)

    def draw_round(state, draws, usable):
        owner, chosen, round_, count = state
        stamp = jnp.where(usable, round_ * n_draws + order, sentinel)  # rejected draws mark nothing
        owner = owner.at[draws].min(stamp)
        first = (owner[draws] == stamp) & usable
        rank = count + jnp.cumsum(first, dtype=jnp.int32) - 1
        keep = first & (rank < m)
        chosen = chosen.at[jnp.where(keep, rank, m)].set(draws)
        # first occurrences beyond m are not kept: clear their marks now
        owner = owner.at[jnp.where(first & ~keep, draws, n)].set(sentinel, mode="drop")
        return owner, chosen, round_ + 1, jnp.minimum(count + jnp.sum(first, dtype=jnp.int32), m)

    def later_round(state):
        return draw_round(state, *draw_below(jax.random.fold_in(key, state[2]), (n_draws,), n))

    if round0_key is None:
        round0_key = jax.random.fold_in(key, 0)
    state = (owner, jnp.zeros(m + 1, jnp.int32), jnp.int32(0), jnp.int32(0))
    state = draw_round(state, *draw_below(round0_key, (n_draws,), n))
    owner, chosen, _, _ = jax.lax.while_loop(lambda st: st[3] < m, later_round, state)
    chosen = chosen[:m]
    return chosen, owner.at[chosen].set(sentinel)
