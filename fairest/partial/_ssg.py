"""Switching subgradient method (paper Algorithm 2; spec section 5.2) on the convex
subproblem (31) built at an IDCA anchor, as one jitted ``lax.fori_loop``.

At iterate ``v_t``: if ``max_i g_i(v_t) <= eps`` (nearly feasible) the point becomes a
candidate and the step is the Polyak-type objective step ``v - eps / ||d||^2 d`` with
``d`` a subgradient of ``g_0``; otherwise it is the Polyak step
``v - g_max / ||d||^2 d`` on the most violated constraint. The output is the candidate
with the smallest ``g_0`` (the last point ``v_T`` is never evaluated, as in the paper).
A zero objective subgradient means the subproblem is solved exactly and the loop idles;
a zero constraint subgradient at an infeasible point means the subproblem looks
infeasible and is flagged. A step that would leave the finite numbers (overflow) is not
taken either: the loop idles at the last finite iterate.

If no iterate was nearly feasible (only possible when the start is not), the least
infeasible iterate is returned instead, and ``found`` is False.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from fairest.partial._dc import Anchor, Config, Data, evaluate, num_constraints

__all__ = ["SSGResult", "ssg"]


class SSGResult(NamedTuple):
    v: jax.Array  # the returned point
    g0: jax.Array  # g_0 at the returned point
    gmax: jax.Array  # max_i g_i at the returned point
    found: jax.Array  # some iterate was nearly feasible
    n_feasible: jax.Array  # number of nearly feasible (objective) steps
    stuck: jax.Array  # a zero constraint subgradient at an infeasible point was met


class _State(NamedTuple):
    v: jax.Array
    best_v: jax.Array
    best_g0: jax.Array
    best_gmax: jax.Array
    found: jax.Array
    fallback_v: jax.Array
    fallback_gmax: jax.Array
    fallback_g0: jax.Array
    stopped: jax.Array
    stuck: jax.Array
    n_feasible: jax.Array


def ssg(v0, anc: Anchor, data: Data, cfg: Config, eps, n_iter) -> SSGResult:
    """Run ``n_iter`` SSG iterations from ``v0`` (``eps`` and ``n_iter`` are traced)."""
    dtype = v0.dtype
    inf = jnp.asarray(jnp.inf, dtype)
    has_constraints = num_constraints(cfg) > 0

    def body(_, st: _State) -> _State:
        ev = evaluate(st.v, anc, data, cfg)
        if has_constraints:
            gmax = jnp.max(ev.gcon)
            index = jnp.argmax(ev.gcon)
        else:
            gmax, index = -inf, jnp.int32(0)
        feasible = gmax <= eps
        live = ~st.stopped
        take = live & feasible & (ev.g0 < st.best_g0)
        fallback = live & (gmax < st.fallback_gmax)
        d = ev.direction(feasible, index)
        norm2 = jnp.sum(d * d)
        zero = norm2 <= 0.0
        step = jnp.where(feasible, eps, gmax) / jnp.where(zero, 1.0, norm2)
        v_next = st.v - step * d
        # a non-finite step (overflow on features of huge scale) is not taken: the loop
        # idles at the last finite iterate
        finite = jnp.all(jnp.isfinite(v_next))
        move = live & ~zero & finite
        return _State(
            v=jnp.where(move, v_next, st.v),
            best_v=jnp.where(take, st.v, st.best_v),
            best_g0=jnp.where(take, ev.g0, st.best_g0),
            best_gmax=jnp.where(take, gmax, st.best_gmax),
            found=st.found | take,
            fallback_v=jnp.where(fallback, st.v, st.fallback_v),
            fallback_gmax=jnp.where(fallback, gmax, st.fallback_gmax),
            fallback_g0=jnp.where(fallback, ev.g0, st.fallback_g0),
            stopped=st.stopped | (live & (zero | ~finite)),
            stuck=st.stuck | (live & zero & ~feasible),
            n_feasible=st.n_feasible + (live & feasible).astype(jnp.int32),
        )

    init = _State(
        v=v0,
        best_v=v0,
        best_g0=inf,
        best_gmax=inf,
        found=jnp.array(False),
        fallback_v=v0,
        fallback_gmax=inf,
        fallback_g0=inf,
        stopped=jnp.array(False),
        stuck=jnp.array(False),
        n_feasible=jnp.zeros((), jnp.int32),
    )
    final = jax.lax.fori_loop(0, n_iter, body, init)
    return SSGResult(
        v=jnp.where(final.found, final.best_v, final.fallback_v),
        g0=jnp.where(final.found, final.best_g0, final.fallback_g0),
        gmax=jnp.where(final.found, final.best_gmax, final.fallback_gmax),
        found=final.found,
        n_feasible=final.n_feasible,
        stuck=final.stuck,
    )
