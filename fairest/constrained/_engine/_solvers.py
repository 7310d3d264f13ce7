"""The solvers of the constrained engine: pure ``step(state, inp, ctx, **options) ->
(state, log)`` functions, their ``init`` / ``parameters`` / ``diagnostics``, and the one
table :data:`SOLVERS` (adding a solver adds one row). Stochastic Ghost's host-loop
functions live in :mod:`._ghost_solver`."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from fairest.constrained._engine._contract import (
    Batch,
    Solver,
    _draw_options,
    _draws,
    _one_draw,
    full_values,
    solver,
    solver_state,
)
from fairest.constrained._engine._ghost_solver import _ghost_diagnostics, _init_ghost, _step_ghost

__all__ = ["SOLVERS", "PrimalState", "SswState", "AlmState", "GdaState"]


# ------------------------------------------------------------------------------------------
# states: NamedTuples of arrays (initial states are host arrays: no eager device program,
# the jitted chunk places them)
# ------------------------------------------------------------------------------------------


@solver_state
class PrimalState(NamedTuple):
    """``sgd`` and ``penalty``: the flat parameters."""

    x: jax.Array


@solver_state
class SswState(NamedTuple):
    """``ssw``: parameters, objective / constraint step counters (reset each epoch with
    ``reset_each_epoch``), the reservoir draw of ``output="random"`` and its total weight."""

    x: jax.Array
    n_f: jax.Array
    n_c: jax.Array
    x_out: jax.Array
    w_total: jax.Array


@solver_state
class AlmState(NamedTuple):
    """``ssl-alm`` / ``alm``: parameters, slacks, multipliers and the proximal anchors."""

    x: jax.Array
    s: jax.Array
    y: jax.Array
    z_x: jax.Array
    z_s: jax.Array


@solver_state
class GdaState(NamedTuple):
    """``gda``: parameters and multipliers."""

    x: jax.Array
    lam: jax.Array


def _step_sgd(state, inp, ctx):
    lr = ctx.hyper["learning_rate"]
    f, g = jax.value_and_grad(ctx.f)(state.x, ctx.obj_batch(inp))
    return PrimalState(state.x - lr * g), {"objective": f, "step_size": lr}


def _step_penalty(state, inp, ctx):
    lr = ctx.hyper["learning_rate"]
    weight = ctx.hyper["fairness_weight"]
    batch = ctx.obj_batch(inp)

    def loss(x):
        f = ctx.f(x, batch)
        return f + weight * ctx.problem.penalty(x, batch, ctx.aux), f

    (_, f), g = jax.value_and_grad(loss, has_aux=True)(state.x)
    return PrimalState(state.x - lr * g), {"objective": f, "step_size": lr}


def _step_ssw(state, inp, ctx, *, f_rule: str, c_rule: str, reset: bool, shared_draw: bool = False):
    """One SSw iteration (spec 3.6); ``shared_draw`` [F] takes the constraint step on the
    draw of the switching test instead of an independent one."""
    h = ctx.hyper
    x = state.x
    counter_index = inp["t"] if reset else inp["it"]
    new_epoch = jnp.logical_and(reset, inp["t"] == 0)
    n_f = jnp.where(new_epoch, 0, state.n_f)
    n_c = jnp.where(new_epoch, 0, state.n_c)
    # tolerance eps_t = eps_0 * decay^max(0, t - start + 1) (spec 3.6 step 1)
    exponent = jnp.maximum(counter_index - h["constraint_tol_decay_start"] + 1, 0).astype(x.dtype)
    eps = h["constraint_tol"] * h["constraint_tol_decay"] ** exponent
    batch1 = ctx.con_batch(inp, 1)
    c1 = ctx.c(x, batch1)
    c_hat = jnp.max(c1)
    take_constraint = c_hat >= eps
    f_lr = h["learning_rate"] / jnp.sqrt(n_f + 1.0) if f_rule == "dimin" else h["learning_rate"]

    def constraint_step(_):
        batch2 = batch1 if shared_draw else ctx.con_batch(inp, 2)
        c2, vjp = jax.vjp(lambda z: ctx.c(z, batch2), x)
        i_star = jnp.argmax(c2)
        (d,) = vjp(jax.nn.one_hot(i_star, c2.shape[0], dtype=x.dtype))
        if c_rule == "dimin":
            eta = h["constraint_learning_rate"] / jnp.sqrt(n_c + 1.0)
        elif c_rule == "adaptive":
            eta = c_hat / jnp.maximum(jnp.sum(d * d), jnp.finfo(x.dtype).tiny)
        else:
            eta = h["constraint_learning_rate"]
        return x - eta * d, eta, jnp.nan * c_hat

    def objective_step(_):
        f, g = jax.value_and_grad(ctx.f)(x, ctx.obj_batch(inp))
        return x - f_lr * g, f_lr + 0.0 * c_hat, f

    x_new, eta, f = lax.cond(take_constraint, constraint_step, objective_step, None)
    # random output (spec 3.6 step 6): weighted reservoir over k >= k0, weights eta^f_k
    eligible = inp["it"] >= h["output_start"]
    weight = jnp.where(eligible, f_lr, 0.0)
    total = state.w_total + weight
    replace = jnp.logical_and(eligible, inp["u"] * total < weight)
    state = SswState(
        x=x_new,
        n_f=n_f + jnp.where(take_constraint, 0, 1),
        n_c=n_c + jnp.where(take_constraint, 1, 0),
        x_out=jnp.where(replace, x, state.x_out),
        w_total=total,
    )
    log = {
        "objective": f,
        "c": c1,
        "step_size": eta,
        "constraint_step": take_constraint,
        "constraint_tol": eps,
    }
    return state, log


def _alm_direction(x, s, y, z_x, z_s, f_grad, c_vjp, h2, h):
    w = y + h["penalty_strength"] * h2
    (jt_w,) = c_vjp(w)
    G_x = f_grad + jt_w + h["proximal_strength"] * (x - z_x)
    G_s = w + h["proximal_strength"] * (s - z_s)
    return G_x, G_s


def _step_ssl_alm(state, inp, ctx, *, shared_draw: bool = False):
    """One SSL-ALM iteration (spec 3.5 steps 1-7); ALM is ``mu = 0``.

    ``shared_draw`` [F] evaluates the penalty value ``h2`` on the Jacobian's draw zeta1
    instead of an independent zeta2 (``constraint_draw="shared"``).
    """
    h = ctx.hyper
    x, s, y, z_x, z_s = state.x, state.s, state.y, state.z_x, state.z_s
    f, f_grad = jax.value_and_grad(ctx.f)(x, ctx.obj_batch(inp))
    batch1 = ctx.con_batch(inp, 1)
    c1, c_vjp = jax.vjp(lambda z: ctx.c(z, batch1), x)
    y_new = y + h["dual_learning_rate"] * (c1 + s)
    y_new = jnp.where(jnp.linalg.norm(y_new) >= h["dual_radius"], 0.0, y_new)
    h2 = (c1 if shared_draw else ctx.c(x, ctx.con_batch(inp, 2))) + s
    G_x, G_s = _alm_direction(x, s, y_new, z_x, z_s, f_grad, c_vjp, h2, h)
    state = AlmState(
        x=x - h["learning_rate"] * G_x,
        s=jnp.maximum(s - h["learning_rate"] * G_s, 0.0),
        y=y_new,
        z_x=z_x + h["anchor_rate"] * (x - z_x),
        z_s=z_s + h["anchor_rate"] * (s - z_s),
    )
    log = {"objective": f, "c": c1, "lambda": y_new, "slack": s, "step_size": h["learning_rate"]}
    return state, log


def _full_step_blocks(ctx, block_rows: int) -> int:
    """Row blocks of ``block_rows`` rows the final full-data step reads ``X`` in; 0 to read
    it at once (small or sparse data, problems that are not sums of per-row losses)."""
    X = ctx.data["X"]
    n = X.shape[0]
    if not getattr(ctx.problem, "row_separable", False) or not isinstance(X, jax.Array):
        return 0
    if X.ndim != 2 or n % block_rows or n < 4 * block_rows:
        return 0
    return n // block_rows


def _block_of(batch: Batch, k, block_rows: int) -> Batch:
    start = k * block_rows
    return Batch(
        *(None if a is None else lax.dynamic_slice_in_dim(a, start, block_rows) for a in batch)
    )


def _blocked_final_direction(state, ctx, n_blocks: int, block_rows: int):
    """``(G_x, G_s)`` of :func:`_ssl_alm_final_step` for a problem of per-row losses
    (objective = weighted mean loss, constraints = ``A @ cell means - delta``), summed
    over row blocks: the same values up to float rounding, at one block's memory."""
    h, problem, aux = ctx.hyper, ctx.problem, ctx.aux
    x, s, y = state.x, state.s, state.y
    obj, con = ctx.full_obj_batch(), ctx.full_con_batch()
    n_cells = problem.n_cells
    total_w = jnp.maximum(jnp.sum(obj.w), jnp.finfo(x.dtype).tiny)
    counts = jax.ops.segment_sum(con.w, jnp.clip(con.g, 0, n_cells - 1), num_segments=n_cells)
    present = counts > 0
    safe_counts = jnp.where(present, counts, 1.0)

    def cell_sums(z, b):
        gid = jnp.clip(b.g, 0, n_cells - 1)
        return jax.ops.segment_sum(b.w * problem.losses(z, b), gid, num_segments=n_cells)

    def add_sums(k, total):
        return total + cell_sums(x, _block_of(con, k, block_rows))

    sums = lax.fori_loop(0, n_blocks, add_sums, jnp.zeros(n_cells, x.dtype))
    c_full = aux["A"] @ jnp.where(present, sums / safe_counts, 0.0) - aux["delta"]
    w = y + h["penalty_strength"] * (c_full + s)
    cell_coef = jnp.where(present, (w @ aux["A"]) / safe_counts, 0.0)

    def block_value(z, k):
        b_obj, b_con = _block_of(obj, k, block_rows), _block_of(con, k, block_rows)
        f_part = jnp.sum(b_obj.w * problem.losses(z, b_obj)) / total_w
        return f_part + cell_coef @ cell_sums(z, b_con)

    def add_grad(k, total):
        return total + jax.grad(block_value)(x, k)

    grad = lax.fori_loop(0, n_blocks, add_grad, jnp.zeros_like(x))
    G_x = grad + h["proximal_strength"] * (x - state.z_x)
    G_s = w + h["proximal_strength"] * (s - state.z_s)
    return G_x, G_s


def _ssl_alm_final_step(state, ctx, block_rows: int):
    """Final primal step with y, z frozen on the full data (spec 3.5, finalisation); on
    large data of a problem of per-row losses, summed over row blocks of ``block_rows``
    rows."""
    h = ctx.hyper
    x, s = state.x, state.s
    lr = h["learning_rate"]
    n_blocks = _full_step_blocks(ctx, block_rows)
    if n_blocks:
        G_x, G_s = _blocked_final_direction(state, ctx, n_blocks, block_rows)
        return state._replace(x=x - lr * G_x, s=jnp.maximum(s - lr * G_s, 0.0))
    f_grad = jax.grad(ctx.f)(x, ctx.full_obj_batch())
    full = ctx.full_con_batch()
    c_full, c_vjp = jax.vjp(lambda z: ctx.c(z, full), x)
    G_x, G_s = _alm_direction(x, s, state.y, state.z_x, state.z_s, f_grad, c_vjp, c_full + s, h)
    return state._replace(x=x - lr * G_x, s=jnp.maximum(s - lr * G_s, 0.0))


def _step_gda(state, inp, ctx):
    """Generic alternating proxy GDA (spec 1.5): dual ascent on the true constraint value,
    projected to >= 0, then a primal step on f + lambda^T surrogate with the new lambda."""
    h = ctx.hyper
    x = state.x
    batch_c = ctx.con_batch(inp, 1)
    c_val = ctx.c(x, batch_c)
    lam = jnp.maximum(state.lam + h["dual_learning_rate"] * c_val, 0.0)
    surrogate = ctx.problem.surrogate_or_value()
    batch_f = ctx.obj_batch(inp)

    def lagrangian(z):
        f = ctx.f(z, batch_f)
        return f + jnp.dot(lam, surrogate(z, batch_c, ctx.aux)), f

    (_, f), g = jax.value_and_grad(lagrangian, has_aux=True)(x)
    lr = h["learning_rate"]
    state = GdaState(x - lr * g, lam)
    return state, {"objective": f, "c": c_val, "lambda": lam, "step_size": lr}


def _init_primal(x0, ctx):
    return PrimalState(x0)


def _init_ssw(x0, ctx):
    zero = np.zeros((), np.int32)
    return SswState(x0, zero, zero, x0, np.zeros((), x0.dtype))


def _init_alm(x0, ctx):
    """Slacks 0, or ``max(-C(x0), 0)`` on the full data with ``slack_init="feasible"``."""
    s0 = np.zeros(ctx.problem.m, dtype=x0.dtype)
    if ctx.hyper.get("slack_init", "zero") == "feasible":
        _, c0 = full_values(ctx.problem, x0, ctx.data, ctx.aux)
        s0 = np.maximum(-np.asarray(c0, dtype=x0.dtype), 0.0)
    return AlmState(x0, s0, np.zeros(ctx.problem.m, dtype=x0.dtype), x0, s0)


def _init_gda(x0, ctx):
    return GdaState(x0, np.zeros(ctx.problem.m, dtype=x0.dtype))


def _ssw_options(hyper):
    return {
        "f_rule": hyper["learning_rate_rule"],
        "c_rule": hyper["constraint_learning_rate_rule"],
        "reset": bool(hyper["reset_each_epoch"]),
        **_draw_options(hyper),
    }


def _ssw_output(state, hyper):
    """The last iterate, or the reservoir draw with ``output="random"`` (spec 3.6 step 6)."""
    if hyper.get("output", "last") == "random" and float(state.w_total) > 0:
        return state.x_out
    return state.x


def _ssw_diagnostics(state, logs, hyper):
    steps = (
        np.concatenate([np.asarray(lg["constraint_step"]) for lg in logs]) if logs else np.zeros(0)
    )
    constraint = int(steps.astype(bool).sum())
    return {"step_counts": {"objective": int(steps.size) - constraint, "constraint": constraint}}


def _ssw_samples(logs, rows_f, rows_c, n_draws):
    """A constraint step reads its draws, an objective step a batch and the tested draw."""
    return np.where(logs["constraint_step"].astype(bool), n_draws * rows_c, rows_f + rows_c)


def _ssw_columns(logs):
    return {
        "step_type": np.where(logs["constraint_step"], "constraint", "objective"),
        "constraint_tol": logs["constraint_tol"],
    }


def _alm_diagnostics(state, logs, hyper):
    return {"multipliers": np.asarray(state.y), "slacks": np.asarray(state.s)}


# ------------------------------------------------------------------------------------------
# the table of solvers
# ------------------------------------------------------------------------------------------


_DRAW_CHOICES = {"constraint_draw": {"independent", "shared"}}
_ALM = solver(
    _init_alm,
    _step_ssl_alm,
    diagnostics=_alm_diagnostics,
    options=_draw_options,
    constraint_draws=_draws,
    final_step=_ssl_alm_final_step,
    step_sizes=("learning_rate", "dual_learning_rate"),
    choices={"slack_init": {"zero", "feasible"}, **_DRAW_CHOICES},
)

#: every solver of the engine, by its public name (adding a solver adds one row)
SOLVERS: dict[str, Solver] = {
    "sgd": solver(_init_primal, _step_sgd),
    "penalty": solver(
        _init_primal,
        _step_penalty,
        choices={"penalty": {"accuracy_parity_l1"}},
    ),
    "ssw": solver(
        _init_ssw,
        _step_ssw,
        parameters=_ssw_output,
        diagnostics=_ssw_diagnostics,
        options=_ssw_options,
        constraint_draws=_draws,
        step_sizes=("learning_rate", "constraint_learning_rate"),
        choices={
            "learning_rate_rule": {"const", "dimin"},
            "constraint_learning_rate_rule": {"const", "dimin", "adaptive"},
            "output": {"last", "random"},
            **_DRAW_CHOICES,
        },
        device_logs=("constraint_step",),
        samples=_ssw_samples,
        columns=_ssw_columns,
    ),
    "ssl-alm": _ALM,
    "alm": _ALM,
    "gda": solver(
        _init_gda,
        _step_gda,
        constraint_draws=_one_draw,
        step_sizes=("learning_rate", "dual_learning_rate"),
    ),
    "ghost": solver(
        _init_ghost,
        _step_ghost,
        diagnostics=_ghost_diagnostics,
        choices={
            "learning_rate_rule": {"dimin", "inv_iter"},
            "sampling": {"mlmc", "full"},
            "qp_backend": {"cvxpy", "dual"},
        },
        host=True,
    ),
}
