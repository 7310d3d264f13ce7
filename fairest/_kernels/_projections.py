"""Projections used by the first-order solvers."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["project_simplex", "clip_by_norm"]


@jax.jit
def project_simplex(v):
    """Euclidean projection of ``v`` onto ``{x >= 0, sum x = 1}`` (sort-based, O(G log G)).

    References
    ----------
    Duchi, Shalev-Shwartz, Singer, Chandra (2008), "Efficient projections onto the
    l1-ball for learning in high dimensions", ICML.
    """
    u = jnp.sort(v)[::-1]
    cumulative = jnp.cumsum(u) - 1.0
    k = jnp.arange(1, v.shape[0] + 1, dtype=v.dtype)
    support = u - cumulative / k > 0
    rho = jnp.max(jnp.where(support, k, 0.0))
    tau = jnp.sum(jnp.where(k <= rho, cumulative / rho, 0.0) * (k == rho))
    return jnp.maximum(v - tau, 0.0)


@jax.jit
def clip_by_norm(v, max_norm):
    """Scale ``v`` down to Euclidean norm ``max_norm`` when it is longer; else unchanged."""
    norm = jnp.linalg.norm(v)
    return v * jnp.minimum(1.0, max_norm / jnp.maximum(norm, jnp.finfo(v.dtype).tiny))
