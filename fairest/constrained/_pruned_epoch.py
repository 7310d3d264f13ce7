"""The training step of :class:`~fairest.constrained.PrunedFairClassifier` (constrained spec
2.3-2.7): the gradual magnitude pruning schedule, the replay buffers of the dual estimates,
the optax optimisers of both players, and the step as a solver of the engine's contract
(:data:`PRUNED_SOLVER`: init / step / parameters over :class:`PrunedState`), whose epochs
the engine's driver runs as its jitted chunks (:func:`epoch_chunk`).

One jitted chunk serves every phase: the constrained phase is a traced flag, so the
multipliers stay exactly 0 and the buffers empty before it (the phases share one
compilation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from fairest._kernels._losses import cross_entropy_stats, group_means, weighted_mean
from fairest.constrained import _defaults
from fairest.constrained._common import unravel_params
from fairest.constrained._engine import MLP
from fairest.constrained._engine._contract import solver, solver_state
from fairest.constrained._engine._driver import ChunkHooks, chunk_function, drive_chunks
from fairest.constrained._engine._runtime import epoch_inputs

__all__ = [
    "gmp_schedule",
    "prune_layer",
    "buffer_push",
    "buffer_means",
    "primal_optimizer",
    "dual_optimizer",
    "initial_state",
    "PrunedConfig",
    "PrunedState",
    "PRUNED_SOLVER",
    "epoch_chunk",
    "run_epochs",
]


# ------------------------------------------------------------------------------------------
# gradual magnitude pruning (spec 2.6 step 3)
# ------------------------------------------------------------------------------------------


def gmp_schedule(epoch: int, initial: float, final: float, end: int, start: int = 0) -> float:
    """Cubic GMP sparsity ``s_f + (s_i - s_f)(1 - (t - t0)/(T_end - t0))^3``, clamped.

    Parameters
    ----------
    epoch : int
        Current epoch ``t``.
    initial : float
        Initial sparsity ``s_i``, returned for ``epoch <= start``.
    final : float
        Final sparsity ``s_f``, returned for ``epoch >= end``.
    end : int
        Epoch ``T_end`` at which the final sparsity is reached.
    start : int, default=0
        Epoch ``t0`` at which the schedule starts.

    Returns
    -------
    sparsity : float
        Target sparsity of the pruning event at ``epoch``.
    """
    if epoch >= end:
        return final
    if epoch <= start:
        return initial
    return final + (initial - final) * (1.0 - (epoch - start) / (end - start)) ** 3


def prune_layer(W: np.ndarray, mask: np.ndarray, sparsity: float) -> np.ndarray:
    """Mask keeping the ``N - ceil(s N)`` largest ``|W * mask|`` entries (layer-wise).

    Parameters
    ----------
    W : ndarray
        Weight matrix of the layer (``N`` entries).
    mask : ndarray of the shape of ``W``
        Current binary mask (1 = active); pruned entries stay pruned.
    sparsity : float
        Target fraction ``s`` of zeros in the layer, in [0, 1].

    Returns
    -------
    mask : ndarray of the shape of ``W``
        New binary mask with exactly ``ceil(s N)`` zeros (ties broken stably).
    """
    N = W.size
    n_zero = min(N, math.ceil(sparsity * N - 1e-9))
    magnitude = np.abs(W * mask).ravel()
    order = np.argsort(magnitude, kind="stable")
    new = np.ones(N)
    new[order[:n_zero]] = 0.0
    return (new.reshape(W.shape) * mask).astype(mask.dtype)


# ------------------------------------------------------------------------------------------
# replay buffers (spec 2.5): ring buffers of shape (G, k) with push counters
# ------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames="num_groups")
def buffer_push(buf, count, values, g, valid, num_groups: int):
    """Append ``values`` of valid rows to their group's FIFO in batch order (keep last k).

    Rows of a group beyond its last k in the batch are not written, so every slot is
    written at most once per push (no scatter collisions).

    Parameters
    ----------
    buf : jax.Array of shape (num_groups, k)
        Ring buffers, one row per group.
    count : jax.Array of shape (num_groups,)
        Number of values pushed so far to every group (the write position is
        ``count % k``).
    values : jax.Array of shape (batch_size,)
        Values to push (correctness or per-sample losses).
    g : jax.Array of shape (batch_size,)
        Integer group id of every row.
    valid : jax.Array of shape (batch_size,)
        Boolean flags; padding rows (``False``) are not pushed.
    num_groups : int
        Number of groups (static).

    Returns
    -------
    buf : jax.Array of shape (num_groups, k)
        Updated ring buffers.
    count : jax.Array of shape (num_groups,)
        Updated push counters.
    """
    k = buf.shape[1]
    onehot = jax.nn.one_hot(g, num_groups, dtype=jnp.int32) * valid[:, None].astype(jnp.int32)
    rank = jnp.sum((jnp.cumsum(onehot, axis=0) - onehot) * onehot, axis=1)  # earlier rows of g
    per_group = jnp.sum(onehot, axis=0, dtype=count.dtype)
    keep = valid & (rank >= per_group[g] - k)
    slot = (count[g] + rank) % k
    rows = jnp.where(keep, g, num_groups)  # out-of-range rows are dropped
    buf = buf.at[rows, slot].set(values.astype(buf.dtype), mode="drop")
    return buf, (count + per_group).astype(count.dtype)


@jax.jit
def buffer_means(buf, count):
    """Means of full buffers and the ``full`` flags."""
    full = count >= buf.shape[1]
    return jnp.where(full, jnp.mean(buf, axis=1), 0.0), full


# ------------------------------------------------------------------------------------------
# one training step (spec 2.3, 2.4, 2.7): optax optimisers for both players
# ------------------------------------------------------------------------------------------


def primal_optimizer(learning_rate, momentum, nesterov: bool):
    """SGD with momentum ``v <- momentum v + g`` (no dampening; Nesterov: the step is
    ``g + momentum v``) of the primal player, as ``torch.optim.SGD`` in the paper."""
    return optax.sgd(learning_rate, momentum=momentum, nesterov=nesterov)


def dual_optimizer(kind: str, learning_rate):
    """The multipliers' step (``"sgd"`` or ``"adam"``), as a descent transform: it is
    fed the negated ascent direction, so that ``lambda + update`` ascends."""
    if kind == "adam":
        b1, b2 = _defaults.ADAM_BETAS
        return optax.adam(learning_rate, b1=b1, b2=b2, eps=_defaults.ADAM_EPS)
    return optax.sgd(learning_rate)


@solver_state
class PrunedState(NamedTuple):
    """Training state of one pruning fit (a NamedTuple of arrays, fields also read by name)."""

    x: jax.Array  # flat parameters (masked weights are 0)
    primal: tuple  # the primal optimiser's state
    lam: jax.Array  # one multiplier per group
    dual: tuple  # the multipliers' optimiser state
    buf: jax.Array  # replay buffers, (G, buffer_size)
    count: jax.Array  # pushes into every group's buffer
    it: jax.Array  # steps taken
    bad: jax.Array  # -1, or the step by which the parameters were not finite


@partial(jax.jit, static_argnames=("num_groups", "buffer_size", "dual"))
def initial_state(x, num_groups: int, buffer_size: int, dual: str) -> PrunedState:
    """Training state at the flat parameters ``x``: optimiser states, multipliers 0,
    empty replay buffers, step counter and divergence flag (see :func:`_pruned_step`).
    Jitted: one executable instead of an eager one per array it creates."""
    zeros_g = jnp.zeros(num_groups, x.dtype)
    return PrunedState(
        x=x,
        primal=primal_optimizer(0.0, 0.0, False).init(x),
        lam=zeros_g,
        dual=dual_optimizer(dual, 0.0).init(zeros_g),
        buf=jnp.zeros((num_groups, buffer_size), x.dtype),
        count=jnp.zeros(num_groups, jnp.int32),
        it=jnp.asarray(0, jnp.int32),
        bad=jnp.asarray(-1, jnp.int32),
    )


def _for_eligible(new, old, eligible):
    """``new`` on the eligible groups' entries (scalars: when any group is), else ``old``."""

    def pick(a, b):
        flags = eligible if a.shape == eligible.shape else jnp.any(eligible)
        return jnp.where(flags, a, b)

    return jax.tree_util.tree_map(pick, new, old)


@dataclass(frozen=True)
class PrunedConfig:
    """The static configuration of the pruned solver's step (its ``ctx.problem``; a key
    of the compiled chunk). ``metric`` is a public metric name or ``None`` (no
    mitigation)."""

    model: MLP
    num_groups: int
    metric: str | None
    use_buffer: bool
    balanced: bool
    absolute_gaps: bool
    dual_optimizer: str
    nesterov: bool
    buffer_size: int = _defaults.BUFFER_SIZE


def _pruned_step(state, inp, ctx):
    """One step (spec 2.3, 2.4, 2.7): the multipliers' ascent on the eligible groups'
    dual estimates, then the primal step on the Lagrangian with the updated multipliers.

    ``ctx.problem`` is a :class:`PrunedConfig`; ``ctx.data`` the training rows (``X``,
    ``y``, ``groups`` and, for non-uniform sample weights, ``row_scale`` /
    ``group_row_scale``); ``ctx.aux`` the dense reference (``acc``, ``acc_g``, ``loss``,
    ``loss_g``, group shares ``pi``), the flat weight ``mask`` and the ``constrained``
    switch of the phase; ``ctx.hyper`` the traced ``momentum``, ``alpha``, ``tolerance``
    and ``dual_learning_rate``; ``inp`` the step's batch (``idx``, ``w``) and
    ``learning_rate``. The constrained phase is a traced flag, so the multipliers stay
    exactly 0 and the buffers empty before it (the phases share one compilation).
    """
    cfg, data, ref, hyper = ctx.problem, ctx.data, ctx.aux, ctx.hyper
    metric, num_groups, model = cfg.metric, cfg.num_groups, cfg.model
    accuracy_gaps = metric == "excess_accuracy_gap"
    loss_parity = metric == "loss_parity"
    x, lam = state.x, state.lam
    mask = ref["mask"]
    idx, w = inp["idx"], inp["w"]
    Xb, yb, gb = data["X"][idx], data["y"][idx], data["groups"][idx]
    constrained = ref["constrained"]
    # sample weights: per-row scales of the overall and of the group means (absent
    # for uniform weights, which keeps the unweighted step exactly)
    if "row_scale" in data:
        r_all, r_grp = data["row_scale"][idx], data["group_row_scale"][idx]
    else:
        r_all = r_grp = None

    def overall_mean(values):
        return weighted_mean(values if r_all is None else r_all * values, w)

    def group_mean(values):
        return group_means(values if r_grp is None else r_grp * values, gb, w, num_groups)

    def row_losses(z):
        out = MLP.apply(unravel_params(model, z * mask), Xb)
        li, ci, _ = cross_entropy_stats(out, yb)
        return li, ci

    # one forward pass serves the dual estimates and, pulled back, the primal gradient
    loss_i, row_vjp, correct_i = jax.vjp(row_losses, x, has_aux=True)
    valid = w > 0
    acc_g_batch, _, present = group_mean(correct_i)
    loss_g_batch, _, _ = group_mean(loss_i)
    loss_batch = overall_mean(loss_i)
    acc_batch = overall_mean(correct_i)

    buf, count = state.buf, state.count
    if metric is not None and cfg.use_buffer:
        pushed = correct_i if accuracy_gaps else loss_i
        if r_grp is not None:
            pushed = r_grp * pushed
        new_buf, new_count = buffer_push(
            buf, count, lax.stop_gradient(pushed), gb, valid, num_groups
        )
        buf = jnp.where(constrained, new_buf, buf)
        count = jnp.where(constrained, new_count, count)

    # dual estimates on eligible groups
    if metric is None:
        estimate = jnp.zeros(num_groups, x.dtype)
        eligible = jnp.zeros(num_groups, bool)
    else:
        if cfg.use_buffer:
            stat_g, eligible = buffer_means(buf, count)
            n_full = jnp.sum(eligible)
            if cfg.balanced or loss_parity:
                overall = jnp.sum(stat_g) / jnp.maximum(n_full, 1)
            else:
                pi = jnp.where(eligible, ref["pi"], 0.0)
                overall = jnp.sum(pi * stat_g) / jnp.maximum(jnp.sum(pi), 1e-30)
        else:
            eligible = present
            if accuracy_gaps:
                stat_g, overall = acc_g_batch, acc_batch
            else:
                stat_g, overall = loss_g_batch, loss_batch
        if accuracy_gaps:  # psi_g = (Ad_g - A_g) - (Ad - A)
            estimate = (ref["acc_g"] - stat_g) - (ref["acc"] - overall)
        elif metric == "excess_loss_gap":  # (L_g - Ld_g) - (L - Ld)
            estimate = (stat_g - ref["loss_g"]) - (overall - ref["loss"])
        else:  # loss parity (equalized loss) h_g = L_g - L
            estimate = stat_g - overall
            if cfg.absolute_gaps:
                estimate = jnp.abs(estimate)
        eligible = eligible & constrained
        estimate = jnp.where(eligible, estimate, 0.0)

    # dual step first (spec 2.4 step 3): ascent on the eligible groups' multipliers
    ascent = estimate if loss_parity else estimate - hyper["tolerance"]
    dual = dual_optimizer(cfg.dual_optimizer, hyper["dual_learning_rate"])
    lam_step, dual_state = dual.update(-ascent, state.dual)
    lam_new = lam + lam_step
    if not loss_parity:
        lam_new = jnp.maximum(lam_new, 0.0)
    lam = jnp.where(eligible, lam_new, lam)
    dual_state = _for_eligible(dual_state, state.dual, eligible)

    # primal step with the updated multipliers (spec 2.3 / 2.7): the Lagrangian as a
    # function of the minibatch's row losses, its gradient pulled back through the forward
    def lagrangian(li):
        L_B = overall_mean(li)
        if metric is None:
            return L_B
        L_g, _, pres = group_mean(li)
        if loss_parity:
            term = L_g - L_B
            if cfg.absolute_gaps:
                term = jnp.abs(term)
        else:  # excess loss gap surrogate; dense constants only shift the value
            term = (L_g - ref["loss_g"]) - (L_B - ref["loss"])
        return L_B + jnp.sum(jnp.where(pres, lam * term, 0.0))

    (grad,) = row_vjp(jax.grad(lagrangian)(loss_i))
    grad = grad + hyper["alpha"] * (x * mask) * mask  # of (alpha / 2) ||x * mask||^2
    primal = primal_optimizer(inp["learning_rate"], hyper["momentum"], cfg.nesterov)
    x_step, primal_state = primal.update(grad, state.primal)
    new_state = state._replace(
        x=optax.apply_updates(x, x_step) * mask,
        primal=primal_state,
        lam=lam,
        dual=dual_state,
        buf=buf,
        count=count,
        it=state.it + 1,
    )
    log = {
        "objective": loss_batch,
        "lam": lam,
        "psi_hat": estimate,
        "buffer_full": count >= buf.shape[1],
    }
    return new_state, log


def _init_pruned(x0, ctx) -> PrunedState:
    cfg = ctx.problem
    return initial_state(x0, cfg.num_groups, cfg.buffer_size, cfg.dual_optimizer)


#: the pruned model's epochs as a solver of the engine's contract: run by the driver
#: (:func:`fairest.constrained._engine._driver.drive_chunks`), one chunk per epoch
PRUNED_SOLVER = solver(
    _init_pruned,
    _pruned_step,
    step_sizes=("learning_rate", "dual_learning_rate"),
)


def epoch_chunk(config: PrunedConfig, record: bool = True):
    """The jitted chunk of the driver for the pruned solver: ``chunk((state, bad), data,
    aux, hyper, inputs) -> ((state, bad), log)`` (:func:`chunk_function`); ``record``
    makes it also return the per-step log (objective, multipliers, dual estimates, full
    buffers), which is otherwise neither computed nor transferred."""
    return chunk_function(PRUNED_SOLVER, config, record=record)


def _phase_aux(ref: dict, mask, constrained: bool) -> dict:
    """The step's ``aux``: the dense reference, the flat weight ``mask`` and the
    constraint switch (a traced flag: the phases share one compilation)."""
    return {**ref, "mask": mask, "constrained": jax.device_put(np.asarray(constrained))}


def run_epochs(
    config, record, state, rows, aux, hyper, sampler, *, epochs, learning_rate, before, after
):
    """The epochs ``epochs`` (a ``range``) of the pruned solver from ``state`` on the
    engine's driver (:func:`drive_chunks`: one chunk per epoch, the divergence guard and
    the stop one epoch after a divergence).

    ``rows``: the training rows on the device; ``aux``: the reference, mask and
    constraint switch the step reads; ``learning_rate(epoch)``: the epoch's step size;
    ``before(epoch, state, aux) -> (state, aux)`` (or ``None``) runs before an epoch's
    chunk (its masks), ``after(epoch, state, log, learning_rate)`` after it, with the log
    on the host (empty unless ``record``). Returns the state, its ``bad`` flag set.
    """
    chunk = epoch_chunk(config, record)
    T = sampler.iters_per_epoch
    first_it = int(state.it)
    current = {"aux": aux}

    def draw(done):
        epoch = epochs.start + done // T
        lr = learning_rate(epoch)
        inputs, steps = epoch_inputs(*sampler.epoch(), lr, state.x.dtype, first_it + done)
        return inputs, steps, (epoch, lr)

    def run(st, bad, inputs, meta):
        if before is not None:
            st, current["aux"] = before(meta[0], st, current["aux"])
        (st, bad), log = chunk((st, bad), rows, current["aux"], hyper, inputs)
        return st, bad, log

    def record_epoch(st, log, steps, meta, done, now):
        log = jax.tree_util.tree_map(lambda a: np.asarray(a)[:steps], log)
        after(meta[0], st, log, meta[1])

    hooks = ChunkHooks(draw, run, record_epoch)
    state, bad, _ = drive_chunks(state, state.bad, hooks, budget=len(epochs) * T, max_time=None)
    return state._replace(bad=bad)


def _learning_rate_at(
    epoch: int, learning_rate: float, milestones, decay: float, total: int
) -> float:
    """Step decay: ``learning_rate`` times ``decay`` per milestone passed (fractions of
    ``total`` epochs). Computed on the host in float64 and fed per step (an optax
    ``piecewise_constant_schedule`` multiplies the factors in the working precision,
    which in float32 is one unit in the last place off)."""
    passed = sum(epoch >= int(frac * total) for frac in milestones)
    return learning_rate * decay**passed
