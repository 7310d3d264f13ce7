"""Fast solver of the smoothed partial-fairness problems: the augmented Lagrangian of
:mod:`fairest.partial._smooth` with every round minimised by damped Gauss-Newton steps,
the whole run (rounds, smoothing stages, Newton steps, line searches) inside one jitted
``jax.lax.while_loop``: no host round trip until the run ends.

The augmented Lagrangian of a round is
``L(x) = f_0(x) + sum_i ((lambda_i + r c_i(x))_+^2 - lambda_i^2) / (2 r)`` with the
smoothed constraints ``c`` (width ``delta``). Its gradient is
``grad f_0 + J^T (lambda + r c)_+`` (``J`` the ``m x D`` constraint Jacobian, ``m =
2 G J`` for pSP, ``G^2`` for pDP) and its Gauss-Newton matrix
``H = X~^T diag(c0 p (1 - p)) X~ + alpha I_w + r J_A^T J_A + nu I`` (``X~ = (1, X)``, ``A``
the constraints with ``lambda + r c > 0``, ``nu`` a small Levenberg-Marquardt shift):
positive definite, so ``-H^{-1} grad L`` is a descent direction and Armijo backtracking
on ``L`` makes every step decrease ``L``; the points where the steps stop are the
stationary points of ``L``, the same as those of L-BFGS on ``L``. ``D = 1 + d + J``
is small, so ``H`` is a ``D x D`` Cholesky solve; forming it is one weighted Gram of the
rows (``O(n d^2)``) and one ``X^T U`` with ``m`` columns: the time of a step is linear in
``n``.

Rounds: after each, ``lambda <- (lambda + r c)_+``; ``r`` grows tenfold when the
largest smoothed violation did not fall by 4; the smoothing width moves to the next of
``deltas`` when a round changed ``f_0`` by at most ``tol`` (relative) and the smoothed
constraints hold within ``eps / 10``. The run stops (converged) at the last width under
the same test when the exact surrogate constraints hold within ``eps``.

Memory: every pass over the rows (the step's value, gradient and Gauss-Newton matrix, a
line-search value, the loss Hessian, a round's end) sums its group / level quantities
and its ``X^T V`` over blocks of ``PARTIAL_TUNING.solver_block_rows`` rows in one
``lax.fori_loop`` (:func:`_sum_blocks`), so no ``(n, d)`` or ``(n, G J)`` temporary exists; data of at
most that many rows (and ELL or device-sharded rows) is one block, the same code
without the loop. Above it the float32 sums are added in another order: the same model
to the solver's float32 rounding (1e-3 of the largest coefficient, as across devices).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._losses import cross_entropy
from fairest.partial._dc import (
    Config,
    Data,
    SparseRows,
    _gmean,
    _mask_diagonal,
    _pdp_terms,
    num_constraints,
    rmatvec,
    scores,
    split,
)
from fairest.partial._dc import _surrogate as _exact_surrogate
from fairest.partial._defaults import PARTIAL_TUNING
from fairest.partial._rows import row_dot, row_scatter, row_sum
from fairest.partial._smooth import SmoothResult, _smooth_min, _smooth_ramp
from fairest.utils._reporting import DeviceReporter

__all__ = [
    "compile_run",
    "group_ranges",
    "reporting",
    "report_round",
    "run_fast_alm",
    "solver_data",
    "FAST_DELTAS",
    "NEWTON_STEPS",
    "SOLVER_DTYPE",
]

FAST_DELTAS = (0.05, 0.01, 2e-3)  # smoothing widths (ramp: units of tau; pDP min: rates)
# Precision of the solve: float32, whose passes over the rows cost a fraction of float64's
# on XLA CPU and reach the same objective; the exact training metric and the returned
# model are float64.
SOLVER_DTYPE = jnp.float32
NEWTON_STEPS = 20  # Gauss-Newton steps of a round at most
_RHO0 = 10.0
_RHO_MAX = 1e6
_STALL = 1e-4  # relative change of the worst smoothed violation over a round: stalled
# A run at the largest penalty _RHO_MAX whose smallest smoothed violation so far has not
# fallen by _PROGRESS (relative) for _PATIENCE rounds has stalled too: its violated
# constraints oscillate on nearly flat pieces (bands of a few rows at a narrow surrogate
# width) rather than converge, and more rounds (each up to NEWTON_STEPS passes) do not
# bring them within eps; the exact training metric judges the point where it stops.
_PATIENCE = 5
_PROGRESS = 0.1
# Levenberg-Marquardt shift nu relative to the largest diagonal entry of H, by precision
# (one-hot columns with all their levels are collinear with the intercept: H_0 singular)
_SHIFT = {8: 1e-8, 4: 1e-5}
_ARMIJO = 1e-4
_BACKTRACKS = 30
# Stopping tests of a round, by precision (itemsize): the sup-norm of grad L that ends
# it (the first round's is _GTOL0, tenfold smaller every round down to this floor), and
# the relative decrease of L over a step that ends it. In float32 a decrease below a few
# units of roundoff of L (eps = 1.2e-7) and a gradient below the rounding of its float32
# sum over the rows (eps sqrt(n) relative) are noise, not progress: tighter tests only
# add steps that move the point by rounding.
_GTOL = {8: 1e-7, 4: 1e-5}
_GTOL0 = 1e-3
_FTOL = {8: 1e-9, 4: 1e-6}
_RETRY_SHIFT = 1e-3  # relative shift of the retried Cholesky (see _newton_direction)
_REFRESH = 5  # Gauss-Newton steps between two loss Hessians
_ROW_FIELDS = ("X", "y", "groups", "c0", "cg", "membership")


def block_rows(X) -> int:
    """Rows of one block of the passes over ``X`` (static):
    ``PARTIAL_TUNING.solver_block_rows``, or every row for data of at most that many
    rows, for :class:`SparseRows` (an ELL row block is a few bytes a row) and for data
    row-sharded over several devices (a dynamic slice of a sharded axis would gather the
    rows on every device)."""
    n = X.shape[0]
    sharding = getattr(X, "sharding", None)
    if isinstance(X, SparseRows) or (sharding is not None and len(sharding.device_set) > 1):
        return n
    return min(n, PARTIAL_TUNING.solver_block_rows)


def group_ranges(data: Data, cfg: Config):
    """``((start, stop), ...)`` per group, static: the rows holding each group's weighted
    rows, where the passes may take ``X^T U`` group by group
    (:func:`_loss_and_core_products`), else ``None``. Given, with
    ``PARTIAL_TUNING.products_by_group`` on, for pSP (``J`` columns a group) on dense
    ``X`` of one row block on one device whose rows of positive weight are ordered by
    group (:func:`fairest.partial._fit.fit_partial` orders them)."""
    X = data.X
    sharding = getattr(X, "sharding", None)
    several = sharding is not None and len(sharding.device_set) > 1
    if not PARTIAL_TUNING.products_by_group:
        return None
    if cfg.constraint != "statistical" or isinstance(X, SparseRows) or several:
        return None
    if block_rows(X) < X.shape[0]:
        return None
    weighted = np.flatnonzero(np.asarray(data.cg) > 0)
    groups = np.asarray(data.groups)[weighted]
    if np.any(np.diff(groups) < 0):
        return None
    starts = np.searchsorted(groups, np.arange(cfg.num_groups), side="left")
    stops = np.searchsorted(groups, np.arange(cfg.num_groups), side="right")
    return tuple(
        (int(weighted[a]), int(weighted[b - 1]) + 1) if b > a else (0, 0)
        for a, b in zip(starts, stops)
    )


def _row_block(data: Data, k, rows: int) -> Data:
    """Block ``k`` of ``rows`` rows of ``data``'s row arrays. The last block is clamped
    to the end of the data; its rows already in an earlier block get zero weights
    (``c0``, ``cg``, ``membership``), so they add nothing to any sum."""
    n = data.c0.shape[0]
    start = jnp.minimum(k * rows, n - rows)
    block = {f: jax.lax.dynamic_slice_in_dim(getattr(data, f), start, rows) for f in _ROW_FIELDS}
    fresh = start + jnp.arange(rows) >= k * rows
    for f in ("c0", "cg"):
        block[f] = jnp.where(fresh, block[f], 0.0)
    block["membership"] = jnp.where(fresh[:, None], block["membership"], 0.0)
    return data._replace(**block)


def _sum_blocks(part, data: Data, rows: int):
    """``part(block)`` (a pytree of sums over the block's rows) summed over the row
    blocks of ``data`` (``rows`` rows each) in one ``fori_loop``: ``part(data)`` itself
    when one block holds every row."""
    n = data.c0.shape[0]
    if rows >= n:
        return part(data)

    def add_block(k, total):
        return jax.tree_util.tree_map(jnp.add, total, part(_row_block(data, k, rows)))

    shapes = jax.eval_shape(lambda: part(_row_block(data, 0, rows)))
    zeros = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), shapes)
    return jax.lax.fori_loop(0, -(-n // rows), add_block, zeros)


def _gram_sums(X, a):
    """``(sum a, X^T a, X^T diag(a) X)`` over the rows of ``X`` (one block)."""
    if isinstance(X, SparseRows):
        d = X.shape[1]
        value, index = X.slots()
        outer = value[:, :, None] * value[:, None, :] * a[:, None, None]
        flat = (index[:, :, None] * d + index[:, None, :]).reshape(outer.shape[0], -1)
        gram = row_scatter(outer.reshape(outer.shape[0], -1), flat, d * d).reshape(d, d)
        cross = row_scatter(value * a[:, None], index, d)
    else:
        root = jnp.sqrt(a)[:, None] * X
        gram = row_dot(root, root)
        cross = row_dot(a, X)
    return row_sum(a), cross, gram


def _bordered_gram(total, cross, gram):
    """``X~^T diag(a) X~`` with ``X~ = (1, X)`` (``(1 + d, 1 + d)``) from the sums of
    :func:`_gram_sums`."""
    top = jnp.concatenate([total[None], cross])
    return jnp.block([[top[None, :]], [jnp.concatenate([cross[:, None], gram], axis=1)]])


def _levels(s, x, data: Data, cfg: Config):
    """Surrogate arguments ``z``: ``(n, J)`` (pSP) or ``(n,)`` (pDP)."""
    if cfg.constraint == "statistical":
        _, _, theta = split(x, cfg)
        return (s[:, None] - theta[None, :]) / data.width
    return (s - data.threshold) / data.width


def _core(s, x, delta, data: Data, cfg: Config):
    """The smoothed group means the constraints are built from, flattened (``q = G J``
    for pSP, ``G`` for pDP), and the surrogate slopes in the scores (``(n, J)`` or
    ``(n,)``): ``d core / d s = U^T`` with ``U = membership (x) slope`` (``(n, q)``; each
    row non-zero in its own group's ``J`` columns only)."""
    z = _levels(s, x, data, cfg)
    if cfg.surrogate == "ramp":
        sigma, slope = jax.jvp(lambda v: _smooth_ramp(v, delta), (z,), (jnp.ones_like(z),))
    else:
        sigma = jax.nn.sigmoid(z)
        slope = sigma * (1.0 - sigma)
    slope = slope / data.width
    core = _gmean(sigma, data, cfg).ravel()
    return core, slope


def _loss_and_core_products(residual, slope, data: Data, cfg: Config, ranges=None):
    """``(row_sum(V), X^T V)`` (``(1 + q,)`` and ``(d, 1 + q)``) of ``V = (residual, U)``,
    ``U = membership (x) slope`` the derivatives of the group means (:func:`_core`).

    Dense ``X``: one ``(n, d) x (n, 1 + q)`` product. ELL rows (:class:`SparseRows`): a
    row adds only to its own group's columns, so one scatter of its non-zeros into
    ``(1 + q) d`` buckets, ``n k (1 + J)`` adds (``n k 2`` for pDP) whatever the number
    of groups ``G`` (a scatter per column of ``V`` would cost ``n k (1 + G J)``).

    ``ranges`` (dense ``X`` whose rows are ordered by group, :func:`group_ranges`): the
    ``(start, stop)`` rows of each group; group ``g``'s ``J`` columns of ``X^T U`` are
    then ``X[start:stop]^T (cg slope)[start:stop]``, ``n d J`` flops for all groups
    instead of the ``n d G J`` of the product with ``U``: the same sums (every other row
    of a range has weight 0), in float32 to rounding."""
    n = residual.shape[0]
    slope = slope.reshape(n, -1)  # (n, J) for pSP, (n, 1) for pDP
    J = slope.shape[1]
    weighted = data.cg[:, None] * slope  # U's non-zero entries of each row
    sums = jnp.concatenate([row_sum(residual)[None], row_dot(data.membership, slope).ravel()])
    if ranges is not None and not isinstance(data.X, SparseRows):
        parts = [row_dot(data.X, residual)[:, None]]
        parts += [row_dot(data.X[a:b], weighted[a:b]) for a, b in ranges]  # (d, J) each
        return sums, jnp.concatenate(parts, axis=1)
    if not isinstance(data.X, SparseRows):
        U = (data.membership[:, :, None] * slope[:, None, :]).reshape(n, -1)
        V = jnp.concatenate([residual[:, None], U], axis=1)
        return sums, rmatvec(V, data.X)
    d = data.X.shape[1]
    value, index = data.X.slots()  # (n, k)
    columns = 1 + data.groups[:, None] * J + jnp.arange(J)[None, :]  # (n, J) of V
    columns = jnp.concatenate([jnp.zeros((n, 1), columns.dtype), columns], axis=1)
    weights = jnp.concatenate([residual[:, None], weighted], axis=1)  # (n, 1 + J)
    updates = value[:, :, None] * weights[:, None, :]  # (n, k, 1 + J)
    target = index[:, :, None] * (1 + cfg.num_groups * J) + columns[:, None, :]
    size = d * (1 + cfg.num_groups * J)
    XtV = row_scatter(updates.reshape(n, -1), target.reshape(n, -1), size)
    return sums, XtV.reshape(d, -1)


def _theta_part(sums, x, cfg: Config):
    """``d core / d theta`` (``(q, J)``): minus the slope sums of each level (pSP)."""
    if cfg.constraint != "statistical":
        return jnp.zeros((sums.shape[0], x.shape[0] - 1 - cfg.num_features), x.dtype)
    J = cfg.num_levels
    eye = jnp.eye(J, dtype=x.dtype)[None]
    return -(sums.reshape(-1, J)[:, :, None] * eye).reshape(-1, J)


def _constraints_of_core(core, data: Data, cfg: Config, delta):
    """The smoothed constraints of
    :func:`fairest.partial._smooth.smooth_constraint_values` as a function of the group
    means ``core`` (no data pass)."""
    if cfg.constraint == "statistical":
        mean = core.reshape(cfg.num_groups, cfg.num_levels)
        lower = data.grid[None, :] - mean
        upper = mean - data.grid[None, :] - data.slack
        return jnp.concatenate([lower.ravel(), upper.ravel()])
    T = _smooth_min(core, data.hi, delta) - _smooth_min(core, data.lo, delta)
    values = _mask_diagonal(T[:, None] - T[None, :] - data.slack, cfg)
    return jnp.where(jnp.isinf(values), -1.0, values).ravel()


def _loss_hessian(x, data: Data, cfg: Config, rows: int):
    """Hessian of ``f_0`` at ``x``, ``(D, D)`` (zero on the thresholds): one weighted
    Gram of the rows, summed over row blocks of ``rows`` rows."""
    D, k = x.shape[0], 1 + cfg.num_features

    def part(block: Data):
        p = jax.nn.sigmoid(scores(x, block, cfg))
        return _gram_sums(block.X, block.c0 * p * (1.0 - p))

    H = jnp.zeros((D, D), x.dtype)
    H = H.at[:k, :k].set(_bordered_gram(*_sum_blocks(part, data, rows)))
    return H + jnp.diag(jnp.zeros(D, x.dtype).at[1:k].set(data.alpha))


def _logistic_sum(s, block: Data):
    return row_sum(block.c0 * cross_entropy(s, block.y))


def _value(x, lam, rho, delta, data: Data, cfg: Config, rows: int):
    """The augmented Lagrangian at ``x`` (one forward pass over row blocks)."""
    _, w, _ = split(x, cfg)

    def part(block: Data):
        s = scores(x, block, cfg)
        sigma = _surrogate(_levels(s, x, block, cfg), delta, cfg)
        return _logistic_sum(s, block), _gmean(sigma, block, cfg)

    loss, core = _sum_blocks(part, data, rows)
    loss = loss + 0.5 * data.alpha * jnp.sum(w * w)
    c = _constraints_of_core(core.ravel(), data, cfg, delta)
    shifted = jnp.maximum(lam + rho * c, 0.0)
    return loss + jnp.sum(shifted**2 - lam**2) / (2.0 * rho)


def _surrogate(z, delta, cfg: Config):
    return _smooth_ramp(z, delta) if cfg.surrogate == "ramp" else jax.nn.sigmoid(z)


def _evaluate(x, lam, rho, delta, loss_hessian, data: Data, cfg: Config, rows: int, ranges=None):
    """Value, gradient and Gauss-Newton matrix (with ``loss_hessian`` for ``f_0``) of the
    augmented Lagrangian at ``x``: one pass over row blocks for the scores and the
    ``X^T V`` of the ``1 + q`` columns ``V = (c0 (p - y), U)`` (by group ``ranges``
    where given, see :func:`_loss_and_core_products`)."""
    _, w, _ = split(x, cfg)
    D, k = x.shape[0], 1 + cfg.num_features

    def part(block: Data):
        s = scores(x, block, cfg)
        core, slope = _core(s, x, delta, block, cfg)
        residual = block.c0 * (jax.nn.sigmoid(s) - block.y)
        sums, XtV = _loss_and_core_products(residual, slope, block, cfg, ranges)
        return _logistic_sum(s, block), core, sums, XtV

    loss, core, sums, XtV = _sum_blocks(part, data, rows)  # XtV: (d, 1 + q)
    loss = loss + 0.5 * data.alpha * jnp.sum(w * w)
    c = _constraints_of_core(core, data, cfg, delta)
    shifted = jnp.maximum(lam + rho * c, 0.0)
    value = loss + jnp.sum(shifted**2 - lam**2) / (2.0 * rho)
    core_jacobian = jnp.concatenate(
        [sums[1:, None], XtV[:, 1:].T, _theta_part(sums[1:], x, cfg)], axis=1
    )  # (q, D)
    loss_grad = jnp.zeros(D, x.dtype).at[0].set(sums[0]).at[1:k].set(XtV[:, 0] + data.alpha * w)
    active = (lam + rho * c > 0).astype(x.dtype)
    if cfg.constraint == "statistical":
        # c = (grid - core, core - grid - slack): C = (-I; I), so C^T v is the difference
        # of the halves and C^T diag(active) C the diagonal of the active counts (O(q),
        # not the O(q^2 m) products of a dense C; the same sums, with exact zeros)
        q = core.shape[0]
        pulled = shifted[q:] - shifted[:q]
        curvature = (active[:q] + active[q:])[:, None] * core_jacobian
    else:  # pDP: (G^2, G) Jacobian of the pairwise differences
        C = jax.jacfwd(lambda v: _constraints_of_core(v, data, cfg, delta))(core)  # (m, q)
        pulled = C.T @ shifted
        curvature = ((C * active[:, None]).T @ C) @ core_jacobian
    grad = loss_grad + core_jacobian.T @ pulled
    H = loss_hessian + rho * core_jacobian.T @ curvature
    shift = _SHIFT[jnp.dtype(x.dtype).itemsize] * jnp.maximum(jnp.max(jnp.diag(H)), 1.0)
    return value, grad, H + shift * jnp.eye(D, dtype=x.dtype)


def _exact_constraints_of_core(core, data: Data, cfg: Config):
    """The exact surrogate constraints of
    :func:`fairest.partial._dc.constraint_values` from their group means ``core``."""
    if cfg.constraint == "statistical":
        lower = data.grid[None, :] - core
        upper = core - data.grid[None, :] - data.slack
        return jnp.concatenate([lower.ravel(), upper.ravel()])
    T = _pdp_terms(core, data)
    return _mask_diagonal(T[:, None] - T[None, :] - data.slack, cfg).ravel()


def _round_end(x, delta, data: Data, cfg: Config, rows: int):
    """At a round's end, in one pass over row blocks: the smoothed constraints, ``f_0``
    and the largest exact surrogate constraint (those of
    :func:`~fairest.partial._smooth.smooth_constraint_values`,
    :func:`~fairest.partial._dc.objective` and
    :func:`~fairest.partial._dc.constraint_values`)."""
    _, w, _ = split(x, cfg)

    def part(block: Data):
        s = scores(x, block, cfg)
        z = _levels(s, x, block, cfg)
        smooth = _gmean(_surrogate(z, delta, cfg), block, cfg)
        return _logistic_sum(s, block), smooth, _gmean(_exact_surrogate(z, cfg), block, cfg)

    loss, smooth, exact = _sum_blocks(part, data, rows)
    c = _constraints_of_core(smooth.ravel(), data, cfg, delta)
    f0 = loss + 0.5 * data.alpha * jnp.sum(w * w)
    return c, f0, jnp.max(_exact_constraints_of_core(exact, data, cfg))


def _solve_shifted(H, grad, shift):
    D = H.shape[0]
    factor = jax.scipy.linalg.cho_factor(H + shift * jnp.eye(D, dtype=H.dtype))
    return -jax.scipy.linalg.cho_solve(factor, grad)


def _newton_direction(H, grad):
    """``-H^{-1} grad`` by Cholesky. A float32 Gram of collinear columns (one-hot levels
    with the intercept) can have a slightly negative eigenvalue despite the shift, and
    its factor is then NaN: the solve is retried with a shift of ``_RETRY_SHIFT`` times
    the largest diagonal entry, and a scaled gradient step is the last resort (never a
    NaN direction, which would reject every step and leave the start unmoved)."""
    direction = -jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(H), grad)
    scale = jnp.maximum(jnp.max(jnp.diag(H)), 1.0)

    def retry():
        shifted = _solve_shifted(H, grad, _RETRY_SHIFT * scale)
        return jnp.where(jnp.all(jnp.isfinite(shifted)), shifted, -grad / scale)

    return jax.lax.cond(jnp.all(jnp.isfinite(direction)), lambda: direction, retry)


class _Step(NamedTuple):
    x: jax.Array
    value: jax.Array
    grad: jax.Array
    H: jax.Array
    loss_hessian: jax.Array
    k: jax.Array
    done: jax.Array


def _minimise_round(
    x, lam, rho, delta, gtol, data: Data, cfg: Config, max_steps, rows, ranges=None
):
    """Damped Gauss-Newton on the round's augmented Lagrangian from ``x`` until the
    sup-norm of its gradient is at most ``gtol`` (or a step changes it by at most
    ``_FTOL``, relative): ``(x, steps)``. The loss Hessian is refreshed every
    ``_REFRESH`` steps (the logistic curvature changes slowly; the constraint term is
    exact at every step); a line search costs one forward pass a trial."""

    def evaluate(v, loss_hessian):
        return _evaluate(v, lam, rho, delta, loss_hessian, data, cfg, rows, ranges)

    def cond(state: _Step):
        return (~state.done) & (state.k < max_steps)

    def body(state: _Step):
        direction = _newton_direction(state.H, state.grad)
        slope = jnp.dot(state.grad, direction)

        def search_cond(carry):
            t, value, n = carry
            return ~(value <= state.value + _ARMIJO * t * slope) & (n < _BACKTRACKS)

        def search_body(carry):
            t, _, n = carry
            t = 0.5 * t
            return t, _value(state.x + t * direction, lam, rho, delta, data, cfg, rows), n + 1

        # from t = 2 and an infinite value: the first trial is the full step t = 1 (one
        # copy of the forward pass in the compiled loop, not two)
        two, infinite = jnp.asarray(2.0, x.dtype), jnp.asarray(jnp.inf, x.dtype)
        t, value, _ = jax.lax.while_loop(search_cond, search_body, (two, infinite, -1))
        accepted = (value <= state.value + _ARMIJO * t * slope) & (slope < 0)
        new_x = jnp.where(accepted, state.x + t * direction, state.x)
        refresh = (state.k + 1) % _REFRESH == 0
        loss_hessian = jax.lax.cond(
            refresh, lambda: _loss_hessian(new_x, data, cfg, rows), lambda: state.loss_hessian
        )
        new_value, grad, H = evaluate(new_x, loss_hessian)
        ftol = _FTOL[jnp.dtype(x.dtype).itemsize]
        small_change = state.value - new_value <= ftol * jnp.maximum(jnp.abs(state.value), 1.0)
        stationary = jnp.max(jnp.abs(grad)) <= gtol
        done = (~accepted) | small_change | stationary
        return _Step(new_x, new_value, grad, H, loss_hessian, state.k + 1, done)

    loss_hessian = _loss_hessian(x, data, cfg, rows)
    value, grad, H = evaluate(x, loss_hessian)
    done = jnp.max(jnp.abs(grad)) <= gtol
    start = _Step(x, value, grad, H, loss_hessian, jnp.asarray(0), done)
    end = jax.lax.while_loop(cond, body, start)
    return end.x, end.k


def _progress_check(best, best_round, violation, r, rho, new_stage, eps):
    """``(best, best_round, stalled)`` after round ``r`` with the worst smoothed
    violation ``violation`` at penalty ``rho``: the run has stalled when, at the largest
    penalty ``_RHO_MAX``, the smallest violation has not fallen by ``_PROGRESS``
    (relative) for ``_PATIENCE`` rounds while it exceeds ``eps / 10``; a new smoothing
    stage (``new_stage``) starts the count again."""
    fresh = new_stage | (violation < (1.0 - _PROGRESS) * best)
    best_round = jnp.where(fresh, r, best_round)
    best = jnp.where(fresh, violation, jnp.minimum(best, violation))
    stalled = (violation > 0.1 * eps) & (rho >= _RHO_MAX) & (r - best_round >= _PATIENCE)
    return best, best_round, stalled


class _Round(NamedTuple):
    x: jax.Array
    lam: jax.Array
    rho: jax.Array
    stage: jax.Array
    last_violation: jax.Array
    best_violation: jax.Array  # smallest smoothed violation of the run so far
    best_round: jax.Array  # the round that lowered it last by _PROGRESS
    r: jax.Array
    iterates: jax.Array
    objectives: jax.Array
    violations: jax.Array
    steps: jax.Array
    converged: jax.Array
    stop: jax.Array


@partial(jax.jit, static_argnames=("cfg", "max_rounds", "max_steps", "rows", "ranges"))
def _run(x0, data: Data, cfg: Config, deltas, eps, tol, max_rounds, max_steps, rows, ranges=None):
    dtype = x0.dtype
    m = num_constraints(cfg)
    last_stage = deltas.shape[0] - 1
    iterates = jnp.zeros((max_rounds + 1, x0.shape[0]), dtype).at[0].set(x0)
    _, f0, exact_max = _round_end(x0, deltas[0], data, cfg, rows)
    objectives = jnp.full(max_rounds + 1, jnp.nan, dtype).at[0].set(f0)
    violations = jnp.full(max_rounds + 1, jnp.nan, dtype).at[0].set(exact_max)
    start = _Round(
        x=x0,
        lam=jnp.zeros(m, dtype),
        rho=jnp.asarray(_RHO0, dtype),
        stage=jnp.asarray(0),
        last_violation=jnp.asarray(jnp.inf, dtype),
        best_violation=jnp.asarray(jnp.inf, dtype),
        best_round=jnp.asarray(0),
        r=jnp.asarray(0),
        iterates=iterates,
        objectives=objectives,
        violations=violations,
        steps=jnp.zeros(max_rounds, jnp.int32),
        converged=jnp.asarray(False),
        stop=jnp.asarray(False),
    )

    def cond(state: _Round):
        return (~state.stop) & (state.r < max_rounds)

    def body(state: _Round):
        delta = deltas[state.stage]
        floor = _GTOL[jnp.dtype(dtype).itemsize]
        gtol = jnp.maximum(floor, _GTOL0 * 0.1 ** state.r.astype(dtype))  # inexact early
        x, k = _minimise_round(
            state.x, state.lam, state.rho, delta, gtol, data, cfg, max_steps, rows, ranges
        )
        c, f0, exact_max = _round_end(x, delta, data, cfg, rows)
        lam = jnp.maximum(state.lam + state.rho * c, 0.0)
        smooth_violation = jnp.max(jnp.maximum(c, 0.0))
        finite = jnp.all(jnp.isfinite(x)) & jnp.isfinite(f0)
        previous = state.objectives[state.r]
        change = jnp.abs(f0 - previous) <= tol * jnp.maximum(jnp.abs(previous), 1e-12)
        settled = change & (smooth_violation <= 0.1 * eps)
        at_last = state.stage == last_stage
        converged = settled & at_last & (exact_max <= eps)
        next_stage = jnp.where(settled & ~at_last, state.stage + 1, state.stage)
        grow = ~(settled & ~at_last) & (smooth_violation > 0.25 * state.last_violation)
        # the worst smoothed violation did not move over a round: its constraint is flat
        # there (no sample on the ramp of its level); more rounds change nothing
        stalled = (smooth_violation > 0.1 * eps) & (
            jnp.abs(smooth_violation - state.last_violation) <= _STALL * smooth_violation
        )
        rho = jnp.where(grow, jnp.minimum(10.0 * state.rho, _RHO_MAX), state.rho)
        r = state.r + 1
        best_violation, best_round, no_progress = _progress_check(
            state.best_violation,
            state.best_round,
            smooth_violation,
            r,
            state.rho,
            next_stage != state.stage,
            eps,
        )
        stalled = stalled | no_progress
        jax.debug.callback(report_round, r, max_rounds)

        moved = _Round(
            x=x,
            lam=lam,
            rho=rho,
            stage=next_stage,
            last_violation=smooth_violation,
            best_violation=best_violation,
            best_round=best_round,
            r=r,
            iterates=state.iterates.at[r].set(x),
            objectives=state.objectives.at[r].set(f0),
            violations=state.violations.at[r].set(exact_max),
            steps=state.steps.at[r - 1].set(k),
            converged=converged,
            stop=converged | stalled,
        )
        halted = state._replace(stop=jnp.asarray(True))
        return jax.tree_util.tree_map(lambda a, b: jnp.where(finite, a, b), moved, halted)

    end = jax.lax.while_loop(cond, body, start)
    return end.iterates, end.objectives, end.violations, end.steps, end.r, end.converged


# Within ``with reporting(callback):`` every finished round of :func:`run_fast_alm` (or
# IDCA outer iteration) calls ``callback(round, max_rounds)`` on the host: a run's jitted
# loop reports through jax.debug.callback, without returning to the host.
_REPORTER = DeviceReporter()
reporting = _REPORTER.reporting
report_round = _REPORTER.report


def solver_data(data: Data) -> Data:
    """``data`` with its floating arrays in ``SOLVER_DTYPE``."""

    def cast(a):
        return a.astype(SOLVER_DTYPE) if jnp.issubdtype(a.dtype, jnp.floating) else a

    return jax.tree_util.tree_map(cast, data)


def compile_run(
    probe: Data,
    cfg: Config,
    n_rows: int,
    max_rounds: int,
    max_steps: int = NEWTON_STEPS,
    deltas=FAST_DELTAS,
    ranges=None,
) -> None:
    """Compile the jitted run of :func:`run_fast_alm` ahead of time for dense data of
    ``n_rows`` (padded) rows and ``cfg.num_features`` columns laid out as ``probe`` (a
    :class:`Data` built the same way, of any number of rows and columns of ``X``: same
    dtypes, placement and hyper-parameters); the later :func:`run_fast_alm` call on the
    full data finds it compiled (XLA's compile cache keys on shapes, dtypes, placements
    and the static arguments, all equal here; ``ranges``: :func:`group_ranges` of the
    full data, which ``probe`` holds the rows of).

    Memory: the compiler's working memory (about 150 MiB for a 1e6 x 100 pSP problem) is
    then used and freed before the data's float32 copy exists, not beside it."""
    data = solver_data(probe)

    def rows(a, columns=None):
        sharding = a.sharding if a.committed else None  # committed: placed on a device
        shape = (n_rows,) + (a.shape[1:] if columns is None else (columns,))
        return jax.ShapeDtypeStruct(shape, a.dtype, sharding=sharding)

    data = data._replace(**{f: rows(getattr(data, f)) for f in _ROW_FIELDS})
    data = data._replace(X=rows(probe.X, cfg.num_features))
    dtype = data.c0.dtype
    num_params = 1 + cfg.num_features + cfg.num_levels  # (b, w, theta)
    scalar = jax.ShapeDtypeStruct((), dtype)
    _run.lower(
        jax.ShapeDtypeStruct((num_params,), dtype),
        data,
        cfg,
        jax.ShapeDtypeStruct((len(deltas),), dtype),
        scalar,
        scalar,
        int(max_rounds),
        int(max_steps),
        block_rows(data.X),
        ranges,
    ).compile()


def run_fast_alm(
    x0,
    data: Data,
    cfg: Config,
    eps: float,
    tol: float,
    max_rounds: int,
    max_steps: int = NEWTON_STEPS,
    deltas=FAST_DELTAS,
) -> SmoothResult:
    """Augmented Lagrangian rounds with Gauss-Newton steps from ``x0`` in one jitted
    loop; see the module docstring. The result records every round's point."""
    if cfg.constraint not in ("statistical", "demographic"):
        raise ValueError("solver='smooth_alm' needs fairness constraints.")
    dtype = data.c0.dtype
    out = _run(
        jnp.asarray(x0, dtype),
        data,
        cfg,
        jnp.asarray(deltas, dtype),
        jnp.asarray(eps, dtype),
        jnp.asarray(tol, dtype),
        int(max_rounds),
        int(max_steps),
        block_rows(data.X),
        group_ranges(data, cfg),
    )
    iterates, objectives, violations, steps, rounds, converged = jax.device_get(out)
    rounds = int(rounds)
    return SmoothResult(
        iterates=np.asarray(iterates[: rounds + 1], dtype=np.float64),
        objective=np.asarray(objectives[: rounds + 1], dtype=np.float64),
        max_violation=np.asarray(violations[: rounds + 1], dtype=np.float64),
        n_steps=np.asarray(steps[:rounds], dtype=np.int64),
        converged=bool(converged),
    )
