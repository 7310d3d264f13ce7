"""The capped simplex of BADR's ``max_weight_ratio``: its caps, projection and linear
minimisation oracle.

With ``max_weight_ratio = kappa`` the group weights range over
``{lambda >= 0, sum lambda = 1, lambda_g <= u_g}``, ``u_g = min(1, kappa W_g / W)`` (``W_g``
the group's total sample weight). A weighted fit there gives every row at most ``kappa``
times its plain-ERM weight, so its effective sample size ``(sum c)^2 / sum c^2`` is at
least ``n / kappa`` (``sum_g lambda_g^2 / W_g <= kappa / W``): no search point is a model
fitted to the few rows of one small group. ``u = 1`` everywhere is the whole simplex.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "capped_vertex",
    "project_capped",
    "project_capped_host",
    "weight_caps",
]


def weight_caps(totals: np.ndarray, ratio) -> np.ndarray | None:
    """``u_g = min(1, ratio W_g / W)``, or ``None`` (the whole simplex) when ``ratio`` is
    ``None`` or caps nothing."""
    if ratio is None:
        return None
    totals = np.asarray(totals, dtype=np.float64)
    caps = np.minimum(1.0, float(ratio) * totals / totals.sum())
    return None if np.all(caps >= 1.0) else caps


def _threshold(v, caps, xp):
    """``tau`` with ``sum_g clip(v_g - tau, 0, caps_g) = 1``: the sum is piecewise linear
    and non-increasing in ``tau``, with kinks at ``v - caps`` and ``v``; it is evaluated at
    every kink and interpolated between the two that bracket 1 (exact, ``O(G^2)``)."""
    kinks = xp.sort(xp.concatenate([v - caps, v]))
    sums = xp.sum(xp.clip(v[None, :] - kinks[:, None], 0.0, caps[None, :]), axis=1)
    above = sums >= 1.0  # true on a prefix of the kinks (the sum at the first is sum caps)
    k = xp.maximum(xp.sum(above) - 1, 0)
    k_next = xp.minimum(k + 1, kinks.shape[0] - 1)
    drop = sums[k] - sums[k_next]
    share = xp.where(drop > 0, (sums[k] - 1.0) / xp.where(drop > 0, drop, 1.0), 0.0)
    return kinks[k] + share * (kinks[k_next] - kinks[k])


@jax.jit
def project_capped(v, caps):
    """Euclidean projection of ``v`` onto ``{x >= 0, sum x = 1, x <= caps}`` (``sum caps
    >= 1``): ``clip(v - tau, 0, caps)`` at the threshold of :func:`_threshold`."""
    return jnp.clip(v - _threshold(v, caps, jnp), 0.0, caps)


def project_capped_host(v, caps) -> np.ndarray:
    """:func:`project_capped` in numpy (the safeguard's baselines)."""
    v = np.asarray(v, dtype=np.float64)
    caps = np.asarray(caps, dtype=np.float64)
    return np.clip(v - _threshold(v, caps, np), 0.0, caps)


def capped_vertex(grad, caps):
    """Linear minimisation oracle of the capped simplex: the weights fill the groups in
    increasing order of ``grad`` up to their caps (with ``caps`` all 1, the vertex
    ``e_k``, ``k = argmin grad``, the first one among ties)."""
    order = jnp.argsort(grad, stable=True)
    ordered_caps = caps[order]
    before = jnp.cumsum(ordered_caps) - ordered_caps
    take = jnp.clip(1.0 - before, 0.0, ordered_caps)
    return jnp.zeros_like(grad).at[order].set(take)
