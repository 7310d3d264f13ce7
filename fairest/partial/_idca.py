"""Inexact DC algorithm (paper Algorithm 1; spec section 5.1) with SSG inner solves, the
direct SSG baseline (Algorithm 3; spec 5.5), the level grid, the feasible starting point
and the two tolerance schedules (practical, spec 5.3; theoretical, spec 5.4).

The outer loop is one ``lax.scan`` over the per-iteration tolerances ``eps_k`` (traced),
so a grid over ``eps``, ``T``, ``kappa``, ``mu``... reuses one compiled program; only the
number of outer iterations ``K`` (the scan length) and the shapes are static. Every
iterate ``x^(k)`` is returned, so one run of K iterations also gives the runs with any
smaller K (spec section 5.1, truncation).
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._buckets import bucket_size
from fairest.partial._alm import alm, cold_start, dense_data, warm_start
from fairest.partial._dc import Config, Data, anchor, constraint_values, evaluate, objective
from fairest.partial._fast import report_round
from fairest.partial._ssg import ssg

__all__ = [
    "IDCAResult",
    "level_grid",
    "initial_point",
    "constant_intercept",
    "run_idca",
    "run_ssg_direct",
    "theory_schedule",
]


def level_grid(interval, tolerance: float, n_grid: int, rule: str) -> np.ndarray:
    """Levels ``p_j`` of problem (15) (spec section 3.4).

    ``"lemma"``: ``alpha + j (1 - kappa)(beta - alpha) / J``, j = 0..J-1 (empty when
    ``kappa >= 1``: no constraint is needed); ``"interval"``: ``alpha + j (beta - alpha) / J``;
    ``"linspace"``: J points from alpha to beta inclusive; ``"closed"`` (the tightening
    rounds of the estimator, not public): J points from alpha to ``beta - kappa (beta -
    alpha)`` inclusive, the whole range of Lemma 5.1, whose last level also constrains
    the bottom of the band that ``"lemma"`` leaves one spacing short of (empty when
    ``kappa >= 1``).
    """
    lo, hi = float(interval[0]), float(interval[1])
    width = hi - lo
    j = np.arange(n_grid, dtype=np.float64)
    if rule == "lemma":
        if tolerance >= 1.0:
            return np.zeros(0)
        return lo + j * (1.0 - tolerance) * width / n_grid
    if rule == "closed":
        if tolerance >= 1.0:
            return np.zeros(0)
        return lo + j * (1.0 - tolerance) * width / max(n_grid - 1, 1)
    if rule == "interval":
        return lo + j * width / n_grid
    if rule == "linspace":
        return np.linspace(lo, hi, n_grid)
    raise ValueError(f"unknown grid rule {rule!r}")


def initial_point(
    n_features: int, grid, slack: float, surrogate: str, width: float, intercept: float = 0.0
):
    """A constant model and thresholds that make it feasible with margin ``c/2``.

    ``w = 0``, ``b = intercept`` (spec section 5.1 has ``b = 0``: ``h = 0``) and
    ``theta_p`` with surrogate mean ``min(p + c/2, 1)`` in every group: ``b + tau (1/2 -
    min(p + c/2, 1))`` for the ramp (margin exactly ``c/2`` with ``grid="lemma"``),
    ``b - tau logit(p + c/2)`` for the sigmoid. Every constant model has pSP = pDP = 0
    and all groups share its surrogate rates, so the pDP constraints equal ``-c``.
    """
    target = np.minimum(np.asarray(grid, dtype=np.float64) + 0.5 * slack, 1.0)
    if surrogate == "ramp":
        theta = width * (0.5 - target)
    else:
        clipped = np.clip(target, 1e-12, 1.0 - 1e-12)
        theta = -width * np.log(clipped / (1.0 - clipped))
    return np.concatenate([[intercept], np.zeros(n_features), theta + intercept])


def constant_intercept(y01, sample_weight) -> float:
    """Intercept of the best constant logistic model, ``logit`` of the weighted share of
    positives: the minimiser of ``f_0`` among the trivially fair models ``h = b``."""
    share = float(np.average(y01, weights=sample_weight))
    share = min(max(share, 1e-12), 1.0 - 1e-12)
    return math.log(share / (1.0 - share))


class IDCAResult(NamedTuple):
    x: jax.Array  # final iterate x^(K)
    iterates: jax.Array  # (K + 1, D) x^(0..K)
    objective: jax.Array  # (K + 1,) f_0(x^(k))
    max_violation: jax.Array  # (K + 1,) max_i f_i(x^(k)) (surrogate constraints)
    subproblem_gap: jax.Array  # (K,) g_0 at the SSG output minus g_0(x^(k)) (<= 0)
    n_feasible: jax.Array  # (K,) objective steps taken by SSG (ALM: iterations)
    found: jax.Array  # (K,) SSG found a nearly feasible iterate
    stuck: jax.Array  # (K,) SSG met a zero constraint subgradient while infeasible


@partial(jax.jit, static_argnames=("cfg", "inner"))
def _idca_scan(x0, data: Data, cfg: Config, eps_seq, inner_iter, n_outer, inner):
    """Scan over ``len(eps_seq)`` (a bucket >= K) steps; steps ``k >= n_outer`` are skipped
    by ``lax.cond``, so K is traced and changing it within a bucket does not recompile."""
    # records of the skipped (padding) steps are sliced off by run_idca; a finite fill
    # (not NaN) keeps every output finite, so the fit runs under ``jax_debug_nans``
    fill = jnp.zeros((), x0.dtype)
    if inner == "alm":  # multipliers carried from one subproblem to the next
        data = dense_data(data)

        def solve(x, anc, eps, warm):
            out, final = alm(x, anc, data, cfg, eps, inner_iter, warm)
            return out, warm_start(final)

        warm0 = cold_start(cfg, x0.dtype)
    else:

        def solve(x, anc, eps, warm):
            return ssg(x, anc, data, cfg, eps, inner_iter), warm

        warm0 = ()

    def step(carry, eps, k):
        x, warm = carry
        anc = anchor(x, data, cfg)
        out, warm = solve(x, anc, eps, warm)
        record = (anc.f0, anc.fmax, out.g0 - anc.f0, out.n_feasible, out.found, out.stuck)
        jax.debug.callback(report_round, k + 1, n_outer)  # the host's progress line
        return (out.v, warm), record

    def skip(carry, eps, k):
        return carry, (fill, fill, fill, jnp.int32(0), jnp.array(True), jnp.array(False))

    def outer(carry, inputs):
        k, eps = inputs
        new, record = jax.lax.cond(k < n_outer, step, skip, carry, eps, k)
        return new, (carry[0],) + record

    steps = jnp.arange(eps_seq.shape[0], dtype=jnp.int32)
    (x_final, _), records = jax.lax.scan(outer, (x0, warm0), (steps, eps_seq))
    last = anchor(x_final, data, cfg)
    return x_final, records, last.f0, last.fmax


def run_idca(
    x0, data: Data, cfg: Config, eps, inner_iter: int, n_outer: int, inner: str = "ssg"
) -> IDCAResult:
    """IDCA from ``x0``: ``n_outer`` outer iterations with SSG tolerance ``eps`` (a scalar
    or one value per outer iteration) and ``inner_iter`` SSG steps each; ``inner="alm"``
    solves every subproblem with :func:`fairest.partial._alm.alm` instead,
    ``eps`` being then only the feasibility tolerance of its output."""
    eps_seq = np.broadcast_to(np.asarray(eps, dtype=np.float64), (n_outer,))
    length = bucket_size(n_outer)
    padded = np.concatenate([eps_seq, np.full(length - n_outer, eps_seq[-1])])
    x_final, records, last_f0, last_fmax = _idca_scan(
        x0, data, cfg, jnp.asarray(padded), jnp.int32(inner_iter), jnp.int32(n_outer), inner
    )
    xs, f0s, fmaxs, gaps, n_feas, found, stuck = (r[:n_outer] for r in records)
    return IDCAResult(
        x=x_final,
        iterates=jnp.concatenate([xs, x_final[None, :]]),
        objective=jnp.concatenate([f0s, last_f0[None]]),
        max_violation=jnp.concatenate([fmaxs, last_fmax[None]]),
        subproblem_gap=gaps,
        n_feasible=n_feas,
        found=found,
        stuck=stuck,
    )


class DirectResult(NamedTuple):
    x: jax.Array
    objective: jax.Array
    max_violation: jax.Array
    found: jax.Array


@partial(jax.jit, static_argnames="cfg")
def run_ssg_direct(x0, data: Data, cfg: Config, eps_seq) -> DirectResult:
    """SSG applied directly to the non-convex problem (paper Algorithm 3; spec 5.5).

    At each step the DC functions are linearised at the current point itself, so the
    subproblem values equal ``f_i`` and its subgradients are DC subgradients
    ``d f^+ - d f^-``. The output is the nearly feasible iterate (``f_i <= eps_t``) with
    the smallest ``f_0``. Benchmark only: no guarantee for DC problems.
    """
    dtype = x0.dtype
    inf = jnp.asarray(jnp.inf, dtype)

    def body(state, eps):
        x, best_x, best_f0, best_fmax, found = state
        anc = anchor(x, data, cfg)
        ev = evaluate(x, anc, data, cfg)
        if ev.gcon.size:
            gmax, index = jnp.max(ev.gcon), jnp.argmax(ev.gcon)
        else:
            gmax, index = -inf, jnp.int32(0)
        feasible = gmax <= eps
        take = feasible & (ev.g0 < best_f0)
        d = ev.direction(feasible, index)
        norm2 = jnp.sum(d * d)
        step = jnp.where(feasible, eps, gmax) / jnp.where(norm2 > 0, norm2, 1.0)
        moved = x - step * d
        # no step to a non-finite point (overflow on features of huge scale)
        x_next = jnp.where((norm2 > 0) & jnp.all(jnp.isfinite(moved)), moved, x)
        state = (
            x_next,
            jnp.where(take, x, best_x),
            jnp.where(take, ev.g0, best_f0),
            jnp.where(take, gmax, best_fmax),
            found | take,
        )
        return state, None

    init = (x0, x0, inf, inf, jnp.array(False))
    (x, best_x, best_f0, best_fmax, found), _ = jax.lax.scan(body, init, eps_seq)
    x_out = jnp.where(found, best_x, x)
    fvals = constraint_values(x_out, data, cfg)
    fmax = jnp.max(fvals) if fvals.size else -inf
    return DirectResult(
        x=x_out, objective=objective(x_out, data, cfg), max_violation=fmax, found=found
    )


def theory_schedule(eps: float, mu: float, lipschitz: float, slater: float, gap: float):
    """Outer count K, inner tolerances eps_k and inner counts T_k of Theorem 6.5.

    Spec section 5.4, with the implementable bound ``2 M / mu`` on the distance
    ``||x^(k) - x_hat^(k+1)||`` (Lemma E.2).

    Parameters
    ----------
    eps : float
        Target accuracy of the nearly eps-KKT point.
    mu : float
        Strong-convexity constant of every DC piece (the ``mu`` add-on), > 0.
    lipschitz : float
        Lipschitz constant M of every DC piece.
    slater : float
        Uniform Slater margin nu > 0 (Assumption 6.3B).
    gap : float
        Objective gap ``f_0(x^(0)) - f_lb`` between the starting point and a lower
        bound of the objective.

    Returns
    -------
    n_outer : int
        Number ``K`` of outer (IDCA) iterations, at least 1.
    eps_k : float
        SSG tolerance ``eps_k`` of every subproblem (constant in ``k``).
    n_inner : int
        Number ``T_k`` of SSG iterations per subproblem, at least 1.
    """
    if mu <= 0 or lipschitz <= 0 or slater <= 0 or eps <= 0:
        raise ValueError("theory_schedule needs eps, mu, M and nu > 0.")
    M2 = lipschitz**2
    factor = max(1.0, 4.0 * M2, 8.0 * M2**2 / (mu * slater))
    n_outer = math.ceil(2.0 * factor * max(gap, 0.0) / (mu * eps**2))
    eps_k = mu / 8.0 * min(1.0, 1.0 / (4.0 * M2), mu * slater / (8.0 * M2**2)) * eps**2
    n_inner = math.ceil(M2 / (eps_k * mu) * math.log1p(4.0 * M2 / (mu * eps_k)))
    return max(n_outer, 1), eps_k, max(n_inner, 1)
