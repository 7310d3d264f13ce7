"""Single-loop BADR: badr-gd and badr-sgd (badr spec section 5), one jitted ``lax.scan``.

State ``(theta, v, lambda)``; every right-hand side uses the current triple (Jacobi):

    theta <- theta - rho grad_theta F(theta, lambda)
    v     <- v - rho [H(theta, lambda) v + grad_theta U(theta)]
    lambda <- Proj_simplex(lambda - gamma clip_c(J(theta)^T v))

(``Proj`` onto the capped simplex of ``max_weight_ratio`` where a cap binds, :mod:`._capped`.)

badr-gd uses the full data and no clipping. badr-sgd uses one balanced minibatch per
iteration for ``grad F``, ``H v`` and ``J^T v`` (SOBA style) and clips the lambda step;
``grad_theta U`` is on the full training split (the smooth metrics are nonlinear in group
averages, spec 5.3), which is also where the proxy ``U(theta_t)`` comes from for free.

The loop runs as an outer ``lax.scan`` over chunks of ``check_every`` inner iterations;
after each chunk Phi is evaluated exactly at the current lambda with the two-loop oracle
(a warm-started Newton solve), and the best lambda so far is kept (``return="best"``,
spec 5.5). History is recorded per chunk on device and copied to the host once.

Minibatch sampler (spec 5.3, [REC]): group g gets ``floor(B/G)`` slots plus one for a
random subset of ``B mod G`` groups each iteration, capped at ``n_g``. Within a group,
rows are read as a window of consecutive positions, starting at a uniformly random offset,
of a per-group random permutation drawn once from ``random_state``: every row has the
same inclusion probability, a batch never repeats a row, and the cost is O(B) per
iteration (the reference permutes every group at every iteration, O(n)).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._glm import (
    Batch,
    group_to_sample_weights,
    hessian_vector_product,
    penalty_diagonal,
)
from fairest._kernels._projections import clip_by_norm, project_simplex
from fairest.reweighting._bilevel import (
    Problem,
    _oracle,
    batch_group_sums,
    gather_rows,
    metric_value,
)
from fairest.reweighting._capped import project_capped
from fairest.utils._reporting import DeviceReporter

__all__ = ["Sampler", "make_sampler", "reporting", "sample_batch", "single_loop"]

# Within ``with reporting(callback):`` every finished chunk of :func:`single_loop` calls
# ``callback(iterations_done, iterations_planned)`` on the host: the jitted scan reports
# through jax.debug.callback, without returning to the host.
_REPORTER = DeviceReporter()
reporting = _REPORTER.reporting
report_chunk = _REPORTER.report


class Sampler(NamedTuple):
    """Per-group permuted row indices and the layout of the batch slots."""

    order: jax.Array  # (n_valid,) row indices, grouped by group, shuffled within groups
    starts: jax.Array  # (G,) first position of each group in ``order``
    sizes: jax.Array  # (G,) n_g
    slot_group: jax.Array  # (G * (base + 1),) group of each slot
    slot_rank: jax.Array  # rank of the slot inside its group's block (0..base)


def make_sampler(groups: np.ndarray, num_groups: int, batch_size: int, seed: int) -> Sampler:
    """Host-side setup (once per fit): group-sorted permutation and static slot layout."""
    rng = np.random.default_rng(seed)
    n = groups.shape[0]
    keys = rng.random(n)
    order = np.lexsort((keys, groups)).astype(np.int32)
    sizes = np.bincount(groups, minlength=num_groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    base = batch_size // num_groups
    slot_group = np.repeat(np.arange(num_groups), base + 1)
    slot_rank = np.tile(np.arange(base + 1), num_groups)
    return Sampler(
        jnp.asarray(order),
        jnp.asarray(starts, dtype=jnp.int32),
        jnp.asarray(sizes, dtype=jnp.int32),
        jnp.asarray(slot_group, dtype=jnp.int32),
        jnp.asarray(slot_rank, dtype=jnp.int32),
    )


def sample_batch(key, sampler: Sampler, batch_size: int, num_groups: int):
    """Row indices (slots,) and a 0/1 mask of the active slots for one balanced batch."""
    base = batch_size // num_groups
    remainder = batch_size % num_groups
    key_extra, key_offset = jax.random.split(key)
    extra = jnp.zeros(num_groups, jnp.int32)
    if remainder:
        chosen = jax.random.permutation(key_extra, num_groups)[:remainder]
        extra = extra.at[chosen].set(1)
    counts = jnp.minimum(base + extra, sampler.sizes)  # m_g, capped at n_g
    offsets = jax.random.randint(key_offset, (num_groups,), 0, jnp.iinfo(jnp.int32).max)
    offsets = offsets % sampler.sizes
    g = sampler.slot_group
    position = sampler.starts[g] + (offsets[g] + sampler.slot_rank) % sampler.sizes[g]
    active = sampler.slot_rank < counts[g]
    return sampler.order[position], active, counts


class LoopState(NamedTuple):
    theta: jax.Array
    v: jax.Array
    lam: jax.Array
    key: jax.Array
    best_value: jax.Array
    best_lam: jax.Array
    best_proxy: jax.Array


def _step(loss, metric, num_groups, problem, hyper, stochastic, batch_size, sampler, state):
    """One simultaneous (theta, v, lambda) update."""
    rho, gamma, clip, caps = hyper
    theta, v, lam = state.theta, state.v, state.lam
    u_value, grad_u = jax.value_and_grad(metric_value, argnums=1)(
        metric, theta, problem, num_groups
    )
    key = state.key
    if stochastic:
        key, sub = jax.random.split(key)
        rows, active, _ = sample_batch(sub, sampler, batch_size, num_groups)
        weight = problem.weight[rows] * active
        X_rows = gather_rows(problem.X, rows)  # sparse: SparseRows.take_rows
        batch = Batch(X_rows, problem.y[rows], problem.groups[rows], weight)
    else:
        batch = Batch(problem.X, problem.y, problem.groups, problem.weight)
    loss_sums, grad_sums, totals = batch_group_sums(loss, theta, batch, num_groups)
    jac = grad_sums / jnp.where(totals > 0, totals, 1.0)  # (p, G); 0 for an empty group
    pen = penalty_diagonal(loss, theta, problem.alpha, problem.penalize_intercept)
    grad_f = jac @ lam + pen * theta
    c = group_to_sample_weights(lam, batch.groups, batch.weight, num_groups)
    hv = hessian_vector_product(
        loss, theta, v, batch.X, batch.y, c, problem.alpha, problem.penalize_intercept
    )
    direction = jac.T @ v  # d_t = J^T v (grad_lambda U = 0 for every shipped metric)
    if stochastic:
        direction = clip_by_norm(direction, clip)
    new = state._replace(
        theta=theta - rho * grad_f,
        v=v - rho * (hv + grad_u),
        lam=_project(lam - gamma * direction, caps),
        key=key,
    )
    return new, (u_value, jnp.max(jnp.abs(grad_f)))


@partial(
    jax.jit,
    static_argnames=("loss", "metric", "num_groups", "n_chunks", "stochastic", "batch_size"),
)
def single_loop(
    loss: str,
    metric,
    num_groups: int,
    problem: Problem,
    sampler: Sampler | None,
    lam0,
    theta0,
    value0,
    key,
    learning_rate,
    dual_learning_rate,
    clip_norm,
    check_every,
    *,
    n_chunks: int,
    stochastic: bool,
    batch_size: int,
    caps=None,
):
    """Run ``n_chunks * check_every`` iterations of badr-gd / badr-sgd.

    ``check_every`` and every step size are traced (only ``n_chunks``, the history length,
    is static); ``caps`` (traced; ``None``: the whole simplex) are the weight caps of
    ``max_weight_ratio``. Returns the final state and per-chunk history: lambda (n_chunks, G), exact
    Phi at that lambda, mean proxy ``U(theta_t)`` over the chunk and the last
    ``||grad F||_inf``.
    """
    dtype = lam0.dtype
    hyper = (learning_rate, dual_learning_rate, clip_norm, caps)
    step = partial(_step, loss, metric, num_groups, problem, hyper, stochastic, batch_size, sampler)

    def inner(_, carry):
        state, proxy_sum, _ = carry
        state, (proxy, grad_norm) = step(state)
        return state, proxy_sum + proxy, grad_norm

    def chunk(state: LoopState, k):
        zero = jnp.zeros((), dtype)
        state, proxy_sum, grad_norm = jax.lax.fori_loop(0, check_every, inner, (state, zero, zero))
        proxy = proxy_sum / check_every
        # exact Phi at the current lambda: warm-started Newton from the tracked theta
        out = _oracle(loss, metric, num_groups, state.lam, state.theta, problem)
        better = out.value < state.best_value
        state = state._replace(
            best_value=jnp.where(better, out.value, state.best_value),
            best_lam=jnp.where(better, state.lam, state.best_lam),
            best_proxy=jnp.minimum(state.best_proxy, proxy),
        )
        jax.debug.callback(report_chunk, k * check_every, n_chunks * check_every)
        return state, (state.lam, out.value, proxy, grad_norm)

    init = LoopState(
        theta=theta0,
        v=jnp.zeros_like(theta0),
        lam=lam0,
        key=key,
        best_value=jnp.asarray(value0, dtype),  # Phi(lambda_0): never return worse
        best_lam=lam0,
        best_proxy=jnp.array(jnp.inf, dtype),
    )
    return jax.lax.scan(chunk, init, jnp.arange(1, n_chunks + 1))


def _project(lam, caps):
    """Projection onto the simplex, capped at ``caps`` unless ``None``."""
    return project_simplex(lam) if caps is None else project_capped(lam, caps)


def lipschitz_step(loss, problem: Problem, lam, theta, num_groups):
    """``1 / lambda_max(H(theta, lambda))`` (the spec's ``learning_rate="auto"``)."""
    from fairest._kernels._glm import value_grad_hessian

    c = group_to_sample_weights(lam, problem.groups, problem.weight, num_groups)
    _, _, hessian = value_grad_hessian(
        loss, theta, problem.X, problem.y, c, problem.alpha, problem.penalize_intercept
    )
    return 1.0 / float(jnp.max(jnp.linalg.eigvalsh(hessian)))
