"""Pruned models with constrained excess accuracy gaps (paper A; constrained spec section 2).

Pipeline: dense training, gradual magnitude pruning (cubic schedule) to the target
sparsity, then fine-tuning under ``psi_g <= tolerance`` for every group by the
proxy-Lagrangian (excess *loss* gap surrogate in the primal step, true excess accuracy gaps
from replay buffers in the dual step; dual ascent projected to >= 0). Baselines: naive
fine-tuning (``metric=None``) and loss parity (equalized loss, ``"loss_parity"``).

One jitted ``scan`` step serves every phase: the constrained phase is a traced flag, so
the multipliers stay exactly 0 and the buffers empty before it (the phases share one
compilation).

Sample weights (only when they are not uniform) enter the step as two per-row scales:
``s_i / mean(s)`` multiplies a row's loss (or correctness) in the overall minibatch means
and ``s_i / mean_g(s)`` (mean over the row's group) in the group means and the replay
buffers. Both estimates stay unbiased under the uniform epoch sampler, and with uniform
weights the step is exactly the unweighted one (the scales are left out).

Both players step with optax on one flat parameter vector, their hyper-parameters
traced: ``optax.sgd(momentum, nesterov)`` for the primal player, ``optax.sgd`` or
``optax.adam`` for the multipliers. The estimator is thin: it validates, resolves the
settings (:class:`PruningSettings`) and calls :func:`fit_pruned`, whose phases
(:func:`pretrain_dense`, :func:`finetune`) are plain functions.
"""

from __future__ import annotations

import copy
import math
from functools import partial
from numbers import Integral, Real
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd
import scipy.sparse as sp
from jax import lax
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from fairest._kernels._buckets import bucket_size, pad_rows_to, padded_rows
from fairest.constrained import _defaults
from fairest.constrained._common import (
    prepare_predict,
    ravel_params,
    split_sensitive_columns,
    unravel_params,
    validate_hidden,
)
from fairest.constrained._engine import (
    MLP,
    EpochSampler,
    all_finite,
    group_means,
    guarded_scan,
    numpy_forward,
    padded_design,
    per_sample_stats,
    refit_on_divergence,
    spawn_rngs,
    weighted_mean,
)
from fairest.constrained._feasibility import near_constant_figures, plain_label, warn_fit
from fairest.constrained._gaps import sample_losses
from fairest.constrained._sparse import as_csr, place_with_design
from fairest.utils._estimator import validate_fit_data
from fairest.utils._linear import ScoreClassifierMixin
from fairest.utils._reporting import as_history, log_fit
from fairest.utils._validation import raise_if_weightless_group

__all__ = [
    "PrunedFairClassifier",
    "PruningSettings",
    "fit_pruned",
    "pretrain_dense",
    "finetune",
    "gmp_schedule",
    "prune_layer",
    "buffer_push",
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


@partial(jax.jit, static_argnames=("num_groups", "buffer_size", "dual"))
def initial_state(x, num_groups: int, buffer_size: int, dual: str) -> dict:
    """Training state at the flat parameters ``x``: optimiser states, multipliers 0,
    empty replay buffers, step counter and divergence flag (see :func:`_make_epoch_fn`).
    Jitted: one executable instead of an eager one per array it creates."""
    zeros_g = jnp.zeros(num_groups, x.dtype)
    return {
        "x": x,
        "primal": primal_optimizer(0.0, 0.0, False).init(x),
        "lam": zeros_g,
        "dual": dual_optimizer(dual, 0.0).init(zeros_g),
        "buf": jnp.zeros((num_groups, buffer_size), x.dtype),
        "count": jnp.zeros(num_groups, jnp.int32),
        "it": jnp.asarray(0, jnp.int32),
        "bad": jnp.asarray(-1, jnp.int32),
    }


def _for_eligible(new, old, eligible):
    """``new`` on the eligible groups' entries (scalars: when any group is), else ``old``."""

    def pick(a, b):
        flags = eligible if a.shape == eligible.shape else jnp.any(eligible)
        return jnp.where(flags, a, b)

    return jax.tree_util.tree_map(pick, new, old)


def _make_epoch_fn(
    model: MLP,
    num_groups: int,
    metric,
    use_buffer: bool,
    balanced: bool,
    absolute_gaps: bool,
    dual_opt: str,
    nesterovs_momentum: bool,
    record: bool = True,
):
    """Jitted epoch (a ``lax.scan`` of steps) for one static configuration.

    ``metric`` is a public metric name or ``None`` (no mitigation); ``record`` makes the
    scan also return the per-step log (objective, multipliers, dual estimates, full
    buffers), which is otherwise neither computed nor transferred. The state is that of
    :func:`initial_state`; ``hyper`` holds the traced ``momentum``, ``alpha``,
    ``tolerance`` and ``dual_learning_rate``, ``inputs`` the batches and the learning rate
    of every step.
    """
    accuracy_gaps = metric == "excess_accuracy_gap"
    loss_parity = metric == "loss_parity"

    def step(state, inp, data, ref, hyper, flags):
        x, lam = state["x"], state["lam"]
        mask = data["mask"]
        idx, w = inp["idx"], inp["w"]
        Xb, yb, gb = data["X"][idx], data["y"][idx], data["groups"][idx]
        constrained = flags["constrained"]
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

        logits = MLP.apply(unravel_params(model, x * mask), Xb)
        loss_i, correct_i, _ = per_sample_stats(logits, yb)
        valid = w > 0
        acc_g_batch, _, present = group_mean(correct_i)
        loss_g_batch, _, _ = group_mean(loss_i)
        loss_batch = overall_mean(loss_i)
        acc_batch = overall_mean(correct_i)

        buf, count = state["buf"], state["count"]
        if metric is not None and use_buffer:
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
            if use_buffer:
                stat_g, eligible = buffer_means(buf, count)
                n_full = jnp.sum(eligible)
                if balanced or loss_parity:
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
                if absolute_gaps:
                    estimate = jnp.abs(estimate)
            eligible = eligible & constrained
            estimate = jnp.where(eligible, estimate, 0.0)

        # dual step first (spec 2.4 step 3): ascent on the eligible groups' multipliers
        ascent = estimate if loss_parity else estimate - hyper["tolerance"]
        dual = dual_optimizer(dual_opt, hyper["dual_learning_rate"])
        lam_step, dual_state = dual.update(-ascent, state["dual"])
        lam_new = lam + lam_step
        if not loss_parity:
            lam_new = jnp.maximum(lam_new, 0.0)
        lam = jnp.where(eligible, lam_new, lam)
        dual_state = _for_eligible(dual_state, state["dual"], eligible)

        # primal step with the updated multipliers (spec 2.3 / 2.7)
        def lagrangian(z):
            lg = MLP.apply(unravel_params(model, z * mask), Xb)
            li, _, _ = per_sample_stats(lg, yb)
            L_B = overall_mean(li)
            value = L_B + 0.5 * hyper["alpha"] * jnp.sum((z * mask) ** 2)
            if metric is None:
                return value, L_B
            L_g, _, pres = group_mean(li)
            if loss_parity:
                term = L_g - L_B
                if absolute_gaps:
                    term = jnp.abs(term)
            else:  # excess loss gap surrogate; dense constants only shift the value
                term = (L_g - ref["loss_g"]) - (L_B - ref["loss"])
            return value + jnp.sum(jnp.where(pres, lam * term, 0.0)), L_B

        (_, objective), grad = jax.value_and_grad(lagrangian, has_aux=True)(x)
        primal = primal_optimizer(inp["learning_rate"], hyper["momentum"], nesterovs_momentum)
        x_step, primal_state = primal.update(grad, state["primal"])
        new_state = {
            **state,
            "x": optax.apply_updates(x, x_step) * mask,
            "primal": primal_state,
            "lam": lam,
            "dual": dual_state,
            "buf": buf,
            "count": count,
        }
        if not record:
            return new_state, None
        log = {
            "objective": objective,
            "lam": lam,
            "psi_hat": estimate,
            "buffer_full": count >= buf.shape[1],
        }
        return new_state, log

    def epoch(state, data, ref, hyper, flags, inputs):
        """``lax.scan`` of the steps of one epoch with the divergence guard: ``state["bad"]``
        is -1 while the parameters were finite, else the step (counted in ``state["it"]``)
        by which they were not (:func:`fairest.constrained._engine.guarded_scan`).

        ``inputs["active"]`` flags the epoch's real steps: the scan runs a bucketed number
        of steps (:func:`epoch_inputs`) and the padding ones leave the state as it is."""
        inner = {k: v for k, v in state.items() if k != "bad"}

        def run(st, inp):
            st, log = step(st, inp, data, ref, hyper, flags)
            return {**st, "it": st["it"] + 1}, log

        def body(st, inp, bad):
            log_shape = jax.eval_shape(run, st, inp)[1]

            def skip(s, inp):
                zeros = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), log_shape)
                return s, zeros

            return lax.cond(inp["active"], run, skip, st, inp)

        (inner, bad), log = guarded_scan(
            body,
            inner,
            state["bad"],
            inputs,
            parameters=lambda st: st["x"],
            iteration=lambda st, inp: st["it"] - 1,
        )
        return {**inner, "bad": bad}, log

    return jax.jit(epoch)


_EPOCH_CACHE: dict = {}


def _epoch_fn(*key):
    if key not in _EPOCH_CACHE:
        _EPOCH_CACHE[key] = _make_epoch_fn(*key)
    return _EPOCH_CACHE[key]


def _learning_rate_at(
    epoch: int, learning_rate: float, milestones, decay: float, total: int
) -> float:
    """Step decay: ``learning_rate`` times ``decay`` per milestone passed (fractions of
    ``total`` epochs). Computed on the host in float64 and fed per step (an optax
    ``piecewise_constant_schedule`` multiplies the factors in the working precision,
    which in float32 is one unit in the last place off)."""
    passed = sum(epoch >= int(frac * total) for frac in milestones)
    return learning_rate * decay**passed


def _mean(values, sample_weight):
    """Mean of ``values``, weighted by ``sample_weight`` unless it is None."""
    if sample_weight is None:
        return values.mean()
    return np.average(values, weights=sample_weight)


def _group_means(values, groups, sample_weight, num_groups):
    """Per-group means of ``values``, weighted by ``sample_weight`` unless it is None."""
    if sample_weight is None:
        return np.bincount(groups, values, minlength=num_groups) / np.bincount(
            groups, minlength=num_groups
        )
    return np.bincount(groups, sample_weight * values, minlength=num_groups) / np.bincount(
        groups, sample_weight, minlength=num_groups
    )


# ------------------------------------------------------------------------------------------
# the pipeline (spec 2.6): dense pre-training, gradual pruning, constrained fine-tuning
# ------------------------------------------------------------------------------------------


class PruningSettings(NamedTuple):
    """Every setting of one pruning fit (the public parameters of
    :class:`PrunedFairClassifier`, resolved)."""

    dense_n_epochs: int
    dense_learning_rate: float
    dense_momentum: float
    dense_alpha: float
    target_sparsity: float
    initial_sparsity: float
    pruning_epochs: int
    prunable: tuple  # per layer: is its weight matrix pruned
    n_epochs: int
    metric: str | None
    tolerance: float
    use_buffer: bool
    buffer_size: int
    balanced: bool  # buffer_overall == "balanced"
    absolute_gaps: bool
    dual_learning_rate: float
    dual_optimizer: str
    learning_rate: float
    momentum: float
    nesterov: bool
    alpha: float
    learning_rate_milestones: tuple
    learning_rate_decay: float
    batch_size: int
    constrain_while_pruning: bool
    record_every: int  # 0: no history


#: the settings that are public parameters of PrunedFairClassifier under the same name
_SHARED_SETTINGS = tuple(
    name
    for name in PruningSettings._fields
    if name not in ("prunable", "balanced", "nesterov", "learning_rate_milestones", "record_every")
)


class PruningData(NamedTuple):
    """Training rows on the device (``X``, ``y``, ``groups`` and, for non-uniform sample
    weights, the per-row scales of the overall and group means), with the host copies."""

    device: dict
    X: np.ndarray
    y_codes: np.ndarray
    groups: np.ndarray
    sample_weight: np.ndarray | None
    shares: np.ndarray  # weighted share of every group
    num_groups: int


class PruningResult(NamedTuple):
    """Output of :func:`fit_pruned`: the sparse and dense models and what the fit saw."""

    params: list
    masks: list
    dense_params: list
    multipliers: np.ndarray
    reference: dict  # dense model's acc, acc_g, loss, loss_g on the training rows
    logs: list  # per fine-tuning epoch (record_every > 0)
    best_epoch: int | None
    validation_score: float | None
    n_iter: int
    dense_step_size_factor: float | None
    step_size_factor: float


def pruning_data(X, y_codes, groups, sample_weight, num_groups: int, dtype) -> PruningData:
    """Device arrays of the training rows; ``sample_weight=None`` is the unweighted fit."""
    real = np.dtype(dtype)
    rows = {
        "y": np.asarray(y_codes).astype(np.int32),
        "groups": np.asarray(groups).astype(np.int32),
    }
    if sample_weight is not None:
        totals = np.bincount(groups, sample_weight, minlength=num_groups)
        group_mean_weight = totals / np.bincount(groups, minlength=num_groups)
        rows["row_scale"] = (sample_weight / sample_weight.mean()).astype(real)
        rows["group_row_scale"] = (sample_weight / group_mean_weight[groups]).astype(real)
        shares = totals / totals.sum()
    else:
        shares = np.bincount(groups, minlength=num_groups) / groups.size
    # padded to a row bucket (fits on nearby n share the compiled epoch) and sharded by
    # rows over the configured devices; the padding rows are never drawn. Sparse X stays
    # sparse (fairest.constrained._sparse)
    width = 0 if sp.issparse(X) else X.shape[1]  # sparse X gains empty rows, no copy
    length = padded_rows(X.shape[0], real.itemsize * (width + 2) + 8)
    names = list(rows)
    rows = dict(zip(names, pad_rows_to(length, *rows.values())))
    # dense X cast and padded into one aligned buffer (shared with a CPU device)
    design = X if sp.issparse(X) else padded_design(X, length, real)
    device = place_with_design(design, rows, dtype)
    return PruningData(device, X, y_codes, groups, sample_weight, shares, num_groups)


def _hyper(dtype, momentum, alpha, tolerance, dual_learning_rate) -> dict:
    """Traced hyper-parameters of the epoch function."""
    values = {
        "momentum": momentum,
        "alpha": alpha,
        "tolerance": tolerance,
        "dual_learning_rate": dual_learning_rate,
    }
    real = np.dtype(dtype)
    return jax.device_put({k: np.asarray(v, real) for k, v in values.items()})


def epoch_inputs(idx, w, learning_rate, dtype) -> tuple[dict, int]:
    """Scan inputs of one epoch's ``T`` steps (indices and weights of shape ``(T, b)``),
    padded to ``bucket_size(T)`` inactive steps so that fits on nearby row counts share
    one compiled epoch; built on the host in their final dtypes (an eager conversion on
    the device would compile one small program per shape). Returns ``(inputs, T)``."""
    steps = idx.shape[0]
    length = bucket_size(steps)
    real = np.dtype(dtype)
    idx, w = pad_rows_to(length, idx.astype(np.int32), w.astype(real))
    inputs = {
        "idx": idx,
        "w": w,
        "learning_rate": np.full(length, learning_rate, dtype=real),
        "active": np.arange(length) < steps,
    }
    return jax.device_put(inputs), steps


def _run_epoch(epoch_fn, state, data, ref, hyper, constrained, sampler, lr, dtype):
    """One epoch on device. Returns ``(state, log)``: the log (None unless recorded) is
    read to the host, its padding steps dropped."""
    inputs, steps = epoch_inputs(*sampler.epoch(), lr, dtype)
    flags = {"constrained": jax.device_put(np.asarray(constrained))}
    state, log = epoch_fn(state, data, ref, hyper, flags, inputs)
    if log is not None:
        log = jax.tree_util.tree_map(lambda a: np.asarray(a)[:steps], log)
    return state, log


def _diverged(state, final=False):
    """First non-finite step of a phase, or None (one host read); ``final`` also checks
    the rest of the state (multipliers, momentum) at the end."""
    bad = int(state["bad"])
    if bad < 0 and final and not bool(_all_finite(state)):
        bad = max(int(state["it"]) - 1, 0)
    return bad if bad >= 0 else None


_all_finite = jax.jit(all_finite)  # one executable per state layout, not one per leaf


def host_flat(params, dtype) -> jax.Array:
    """:func:`ravel_params` of host ``(W, b)`` pairs, built on the host in ``dtype`` and
    placed (no eager device program)."""
    flat = np.concatenate([np.concatenate([np.ravel(W), np.ravel(b)]) for W, b in params])
    return jax.device_put(flat.astype(np.dtype(dtype)))


def host_layers(model, x) -> list:
    """``(W, b)`` per layer of the flat parameters ``x``, as host arrays."""
    return [(W.copy(), b.copy()) for W, b in unravel_params(model, np.asarray(x))]


def initial_parameters(model, rng: np.random.Generator, dtype) -> jax.Array:
    """Flat initial parameters: the draws of :meth:`MLP.init` (the same ``rng`` stream,
    PyTorch's ``nn.Linear`` init), raveled and cast on the host."""
    params = []
    for d_in, d_out in zip(model.sizes[:-1], model.sizes[1:]):
        bound = 1.0 / np.sqrt(d_in)
        W = rng.uniform(-bound, bound, size=(d_in, d_out))
        params.append((W, rng.uniform(-bound, bound, size=(d_out,))))
    return host_flat(params, dtype)


def flat_mask(masks, dtype):
    """Flat 0/1 vector of the weight ``masks`` (biases are never masked)."""
    return host_flat([(m, np.ones(m.shape[1])) for m in masks], dtype)


def layer_sparsity(masks, prunable):
    """Fraction of zeros over the prunable weights and of every weight matrix."""
    layer = np.array([1.0 - m.mean() for m in masks])
    total = sum(m.size for m, p in zip(masks, prunable) if p)
    zeros = sum((m == 0).sum() for m, p in zip(masks, prunable) if p)
    return float(zeros / max(total, 1)), layer


def _reference_zero(shares, num_groups: int, dtype, reference=None) -> dict:
    """The dense reference of the epoch function on device: ``reference``'s statistics
    (zeros before there is one) and the group ``shares``, cast on the host."""
    real = np.dtype(dtype)
    zeros_g = np.zeros(num_groups, real)
    host = {"acc": real.type(0), "acc_g": zeros_g, "loss": real.type(0), "loss_g": zeros_g}
    host.update({key: np.asarray(value, real) for key, value in (reference or {}).items()})
    return jax.device_put({**host, "pi": np.asarray(shares, real)})


def correct_predictions(z, y_codes):
    """1.0 where the logits ``z`` predict ``y_codes``, else 0.0."""
    pred = (z[:, 0] > 0).astype(int) if z.shape[1] == 1 else np.argmax(z, axis=1)
    return (pred == y_codes).astype(np.float64)


def reference_statistics(params, data: PruningData) -> dict:
    """The dense model's (weighted) accuracy and mean loss, overall and per group, on the
    training rows, in float64 on the host (spec 2.6 step 2)."""
    z = numpy_forward(params, data.X)
    correct, loss = correct_predictions(z, data.y_codes), sample_losses(z, data.y_codes)
    sw, G = data.sample_weight, data.num_groups
    return {
        "acc": _mean(correct, sw),
        "acc_g": _group_means(correct, data.groups, sw, G),
        "loss": _mean(loss, sw),
        "loss_g": _group_means(loss, data.groups, sw, G),
    }


def _dense_hyper(dtype, settings):
    """Step hyper-parameters of dense pre-training (its own momentum and L2)."""
    return _hyper(
        dtype,
        settings.dense_momentum,
        settings.dense_alpha,
        settings.tolerance,
        settings.dual_learning_rate,
    )


def pretrain_dense(model, settings, data, x0, sampler, *, owner, progress=None):
    """Dense pre-training (spec 2.6 step 1) from ``x0``, with the divergence refits on
    the same minibatches. Returns ``(x_dense, step_size_factor)``."""
    dtype = x0.dtype
    epoch_fn = _epoch_fn(*_epoch_key(model, data.num_groups, settings))
    hyper = _dense_hyper(dtype, settings)
    device = {**data.device, "mask": jax.device_put(np.ones(x0.shape, x0.dtype))}
    ref = _reference_zero(data.shares, data.num_groups, dtype)
    sampler_start = copy.deepcopy(sampler.rng)

    def attempt(factor):
        sampler.rng = copy.deepcopy(sampler_start)  # the same minibatches
        state = initial_state(x0, data.num_groups, settings.buffer_size, settings.dual_optimizer)
        previous = None
        for epoch in range(settings.dense_n_epochs):
            if previous is not None and _diverged(previous) is not None:
                break  # the previous epoch diverged (read while this one runs)
            lr = factor * _learning_rate_at(
                epoch,
                settings.dense_learning_rate,
                settings.learning_rate_milestones,
                settings.learning_rate_decay,
                settings.dense_n_epochs,
            )
            previous = state
            state, _ = _run_epoch(epoch_fn, state, device, ref, hyper, False, sampler, lr, dtype)
            if progress is not None:
                progress("dense", epoch, lr, state, None)
        return state["x"], _diverged(state, final=True)

    return refit_on_divergence(
        owner,
        attempt,
        remedy="dense_learning_rate",
        X=data.X,
        phase=" of the dense pre-training",
    )


def finetune(
    model, settings, data, x_dense, reference, sampler, *, owner, score=None, progress=None
):
    """Gradual magnitude pruning and constrained fine-tuning (spec 2.6 steps 3-4) from
    the dense ``x_dense``, one primal optimiser state throughout, with the divergence
    refits on the same minibatches. ``score(x)`` (early stopping) rates the epoch-end
    iterates at the final sparsity; the best one is returned. Returns
    ``((state, masks, logs, best), step_size_factor)`` with ``best = (score, x, masks,
    epoch)``."""
    dtype = x_dense.dtype
    epoch_fn = _epoch_fn(*_epoch_key(model, data.num_groups, settings))
    ref = _reference_zero(data.shares, data.num_groups, dtype, reference)
    sampler_start = copy.deepcopy(sampler.rng)
    shapes = [(a, b) for a, b in zip(model.sizes[:-1], model.sizes[1:])]

    def attempt(factor):
        sampler.rng = copy.deepcopy(sampler_start)  # the same minibatches
        masks = [np.ones(shape) for shape in shapes]
        state = initial_state(
            x_dense, data.num_groups, settings.buffer_size, settings.dual_optimizer
        )
        previous = None
        dual_lr = (
            settings.dual_learning_rate if factor == 1.0 else factor * settings.dual_learning_rate
        )
        hyper = _hyper(dtype, settings.momentum, settings.alpha, settings.tolerance, dual_lr)
        logs = []
        best = (-np.inf, None, None, None)  # validation score, x, masks, epoch
        for epoch in range(settings.n_epochs):
            if previous is not None and _diverged(previous) is not None:
                break  # the previous epoch diverged (read while this one runs)
            masks, mask, state, constrained = _epoch_masks(
                epoch, settings, model, state, masks, dtype
            )
            lr = factor * _learning_rate_at(
                epoch,
                settings.learning_rate,
                settings.learning_rate_milestones,
                settings.learning_rate_decay,
                settings.n_epochs,
            )
            previous = state
            state, log = _run_epoch(
                epoch_fn,
                state,
                {**data.device, "mask": mask},
                ref,
                hyper,
                constrained,
                sampler,
                lr,
                dtype,
            )
            if settings.record_every:
                steps = log["objective"].shape[0]
                log["learning_rate"] = np.full(steps, lr)
                log["epoch"] = np.full(steps, epoch)
                log["sparsity"] = np.full(steps, layer_sparsity(masks, settings.prunable)[0])
                logs.append(log)
            if progress is not None:
                progress("finetune", epoch, lr, state, masks)
            if score is not None and epoch >= settings.pruning_epochs:
                value = score(state["x"])
                if value > best[0]:
                    best = (value, state["x"], [m.copy() for m in masks], epoch)
        return (state, masks, logs, best), _diverged(state, final=True)

    return refit_on_divergence(
        owner,
        attempt,
        remedy="learning_rate / dual_learning_rate",
        X=data.X,
        phase=" of the fine-tuning",
    )


def _epoch_key(model, num_groups, settings) -> tuple:
    """The static configuration of the jitted epoch (:func:`_epoch_fn`)."""
    return (
        model,
        num_groups,
        settings.metric,
        bool(settings.use_buffer),
        settings.balanced,
        bool(settings.absolute_gaps),
        settings.dual_optimizer,
        settings.nesterov,
        settings.record_every > 0,
    )


def _as_layers(model, x):
    return host_layers(model, x)


def _epoch_masks(epoch, settings, model, state, masks, dtype):
    """Masks, flat mask, masked state and constraint switch of fine-tuning epoch ``epoch``.

    Until ``pruning_epochs`` the layers are pruned to the gradual-magnitude schedule's
    sparsity; the constraints are on from then (or throughout with
    ``constrain_while_pruning``) when there is a metric.
    """
    if epoch <= settings.pruning_epochs:
        target = gmp_schedule(
            epoch, settings.initial_sparsity, settings.target_sparsity, settings.pruning_epochs
        )
        current = host_layers(model, state["x"])
        masks = [
            prune_layer(np.asarray(W), m, target) if prunable else m
            for (W, _), m, prunable in zip(current, masks, settings.prunable)
        ]
    mask = flat_mask(masks, dtype)
    state = {**state, "x": state["x"] * mask}
    constrained = epoch >= settings.pruning_epochs or settings.constrain_while_pruning
    return masks, mask, state, constrained and settings.metric is not None


def fit_pruned(
    model, settings, data, sampler, *, x_init, x_dense=None, owner, score=None, progress=None
) -> PruningResult:
    """The whole pipeline (spec 2.6): dense pre-training from ``x_init`` (skipped when the
    dense parameters ``x_dense`` are given), reference statistics, pruning and
    constrained fine-tuning. Run under the precision of the arrays (``x_init``'s dtype)."""
    dense_factor = None
    if x_dense is None:
        x_dense, dense_factor = pretrain_dense(
            model, settings, data, x_init, sampler, owner=owner, progress=progress
        )
    dense_params = _as_layers(model, x_dense)
    reference = reference_statistics(dense_params, data)
    (state, masks, logs, best), factor = finetune(
        model,
        settings,
        data,
        x_dense,
        reference,
        sampler,
        owner=owner,
        score=score,
        progress=progress,
    )
    x_final = state["x"]
    if best[1] is not None:
        x_final, masks = best[1], best[2]
    return PruningResult(
        params=_as_layers(model, x_final),
        masks=masks,
        dense_params=dense_params,
        multipliers=np.asarray(state["lam"]),
        reference=reference,
        logs=logs,
        best_epoch=best[3],
        validation_score=None if best[1] is None else float(best[0]),
        n_iter=int(settings.n_epochs * sampler.iters_per_epoch),
        dense_step_size_factor=dense_factor,
        step_size_factor=factor,
    )


def _continue_fitted(estimator, stream, model, settings, dense_calls, dtype):
    """Stream state of a fitted estimator: the next call is fine-tuning epoch
    ``n_epochs`` (past the schedule) from the fitted sparse model, its masks and dense
    reference, with fresh optimiser states and multipliers."""
    with jax.enable_x64(dtype == jnp.float64):
        x = ravel_params(
            [(jnp.asarray(W, dtype), jnp.asarray(b, dtype)) for W, b in estimator.params_]
        )
        state = initial_state(
            x, len(estimator.groups_), settings.buffer_size, settings.dual_optimizer
        )
    stream.solver.update(
        state=jax.tree_util.tree_map(np.asarray, state),
        masks=[m.copy() for m in estimator.masks_],
        dense_params=estimator.dense_params_,
        n_iter=estimator.n_iter_,
    )
    stream.n_calls = dense_calls + max(settings.n_epochs, 1)


def _stream_dense_epoch(model, settings, data, solver, sampler, epoch):
    """Dense pre-training epoch ``epoch`` of a stream (see ``partial_fit``), from the
    stream's state. Returns ``(state, masks, reference=None, fine-tuning iterations=0)``."""
    x_init = jnp.asarray(solver["x_init"])
    dtype = x_init.dtype
    state = solver.get("state")
    if state is None:
        state = initial_state(
            x_init, data.num_groups, settings.buffer_size, settings.dual_optimizer
        )
    state = jax.tree_util.tree_map(jnp.asarray, state)
    epoch_fn = _epoch_fn(*_epoch_key(model, data.num_groups, settings))
    hyper = _dense_hyper(dtype, settings)
    lr = _learning_rate_at(
        epoch,
        settings.dense_learning_rate,
        settings.learning_rate_milestones,
        settings.learning_rate_decay,
        settings.dense_n_epochs,
    )
    device = {**data.device, "mask": jax.device_put(np.ones(x_init.shape, x_init.dtype))}
    ref = _reference_zero(data.shares, data.num_groups, dtype)
    state, _ = _run_epoch(epoch_fn, state, device, ref, hyper, False, sampler, lr, dtype)
    masks = [np.ones((a, b)) for a, b in zip(model.sizes[:-1], model.sizes[1:])]
    return state, masks, None, 0


def _running_reference(solver, dense_params, data: PruningData) -> dict:
    """The dense model's weighted accuracy and loss, overall and per group, as running
    means over the chunks seen since fine-tuning began (this one included)."""
    z = numpy_forward(dense_params, data.X)
    correct, loss = correct_predictions(z, data.y_codes), sample_losses(z, data.y_codes)
    w = np.ones(data.X.shape[0]) if data.sample_weight is None else data.sample_weight
    G = data.num_groups
    sums = np.stack(
        [
            np.bincount(data.groups, w * correct, minlength=G),
            np.bincount(data.groups, w * loss, minlength=G),
            np.bincount(data.groups, w, minlength=G),
        ]
    )
    total = solver["reference_sums"] = solver.get("reference_sums", 0.0) + sums
    per_group = np.divide(total[:2], total[2], out=np.zeros((2, G)), where=total[2] > 0)
    overall = total[:2].sum(axis=1) / total[2].sum()
    return {"acc": overall[0], "acc_g": per_group[0], "loss": overall[1], "loss_g": per_group[1]}


def _stream_finetune_epoch(model, settings, data, solver, sampler, epoch, estimator):
    """Fine-tuning epoch ``epoch`` (pruning included) of a stream (see ``partial_fit``).
    Returns ``(state, masks, reference, iterations)``."""
    dtype = jnp.asarray(solver["x_init"]).dtype
    if epoch == 0:  # the dense model is final: the fine-tuning starts from it
        if estimator.dense_model is not None:
            x_dense = estimator._dense_start(model, dtype)
        else:
            x_dense = jnp.asarray(solver["state"]["x"])
        solver["dense_params"] = _as_layers(model, x_dense)
        solver["state"] = initial_state(
            x_dense, data.num_groups, settings.buffer_size, settings.dual_optimizer
        )
        solver["masks"] = [np.ones((a, b)) for a, b in zip(model.sizes[:-1], model.sizes[1:])]
    reference = _running_reference(solver, solver["dense_params"], data)
    ref = _reference_zero(data.shares, data.num_groups, dtype, reference)
    state = jax.tree_util.tree_map(jnp.asarray, solver["state"])
    masks, mask, state, constrained = _epoch_masks(
        epoch, settings, model, state, solver["masks"], dtype
    )
    lr = _learning_rate_at(
        epoch,
        settings.learning_rate,
        settings.learning_rate_milestones,
        settings.learning_rate_decay,
        settings.n_epochs,
    )
    hyper = _hyper(
        dtype, settings.momentum, settings.alpha, settings.tolerance, settings.dual_learning_rate
    )
    epoch_fn = _epoch_fn(*_epoch_key(model, data.num_groups, settings))
    device = {**data.device, "mask": mask}
    state, _ = _run_epoch(epoch_fn, state, device, ref, hyper, constrained, sampler, lr, dtype)
    return state, masks, reference, sampler.iters_per_epoch


def pruning_history(logs, num_groups: int, every: int) -> dict:
    """``history_``: every ``every``-th fine-tuning iteration, as numpy arrays."""
    G = num_groups
    keys = ("objective", "learning_rate", "epoch", "sparsity", "lam", "psi_hat", "buffer_full")
    if logs:
        merged = {k: np.concatenate([lg[k] for lg in logs]) for k in keys}
    else:
        merged = {
            k: np.zeros((0, G) if k in ("lam", "psi_hat", "buffer_full") else 0) for k in keys
        }
    it = np.arange(merged["objective"].shape[0])
    keep = it % every == 0
    records = {
        "iter": it[keep],
        "epoch": merged["epoch"][keep].astype(int),
        "objective": merged["objective"][keep],
        "learning_rate": merged["learning_rate"][keep],
        "sparsity": merged["sparsity"][keep],
    }
    for g in range(G):
        records[f"lambda_g{g}"] = merged["lam"][keep, g]
        records[f"psi_hat_g{g}"] = merged["psi_hat"][keep, g]
        records[f"buffer_full_g{g}"] = merged["buffer_full"][keep, g].astype(bool)
    return as_history(records)


# ------------------------------------------------------------------------------------------
# estimator
# ------------------------------------------------------------------------------------------


class PrunedFairClassifier(ScoreClassifierMixin, BaseEstimator):
    """Sparse MLP whose accuracy loss from pruning is spread evenly over groups.

    A dense network is trained (or taken from ``dense_model``), pruned by gradual
    magnitude pruning to ``target_sparsity``, then fine-tuned under the constraints
    ``psi_g <= tolerance`` on the excess accuracy gaps
    ``psi_g = (A_dense - A_dense,g) - (A_sparse - A_sparse,g)`` of every group (CEAG,
    ``metric="excess_accuracy_gap"``).
    The constrained problem is solved by alternating dual-then-primal gradient steps on a
    proxy-Lagrangian: the primal player descends the excess *loss* gap surrogate, the dual
    player ascends on the true excess accuracy gaps estimated from per-group replay buffers
    of the ``buffer_size`` most recent training rows; multipliers are projected to >= 0.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=(64, 32)
        Sizes of the ReLU hidden layers, shared by the dense and the sparse network;
        ``()`` is a linear (logistic) model whose single weight matrix is prunable.
    dense_model : fitted estimator or None, default=None
        Estimator exposing ``params_`` of the same architecture (for example a fitted
        ``PrunedFairClassifier`` or ``LossGapConstrainedClassifier``) used as the dense
        reference; ``None`` pretrains a dense network for ``dense_n_epochs`` epochs.
    dense_n_epochs : int, default=50
        Epochs of dense pre-training (SGD with momentum, learning rate scheduled by
        ``learning_rate_milestones`` and ``learning_rate_decay`` over these epochs).
        Ignored when ``dense_model`` is given.
    dense_learning_rate : float, default=0.01
        Initial learning rate of dense pre-training.
    dense_momentum : float, default=0.9
        Momentum of dense pre-training, in [0, 1).
    dense_alpha : float, default=1e-4
        L2 coefficient of dense pre-training, added to the loss as
        ``(dense_alpha / 2) * ||theta||^2`` (weights and biases).
    target_sparsity : float, default=0.9
        Final sparsity ``s_f``: fraction of the entries of every prunable weight matrix
        set to zero, reached at the start of epoch ``pruning_epochs``. In [0, 1].
    initial_sparsity : float, default=0.0
        Sparsity ``s_i`` of the cubic pruning schedule at epoch 0, in [0, 1].
    pruning_epochs : int, default=15
        Last pruning epoch ``T_end``: magnitude pruning events at the start of epochs
        ``0..T_end`` (cubic schedule from ``initial_sparsity`` to ``target_sparsity``).
        The constraints apply from epoch ``T_end`` on unless ``constrain_while_pruning``.
    prune_layers : {"all", "hidden"}, default="all"
        Weight matrices that are pruned: all layers, or ``"hidden"`` keeps the first and
        last layers dense (networks with at most two layers prune every layer). Biases
        are never pruned.
    n_epochs : int, default=60
        Fine-tuning epochs, pruning epochs included.
    metric : str or None, default="excess_accuracy_gap"
        Unfairness constrained in the fine-tuning: ``"excess_accuracy_gap"`` bounds the
        excess accuracy gaps ``psi_g`` (CEAG), ``"excess_loss_gap"`` bounds the excess
        loss gaps, ``"loss_parity"`` imposes equalized loss ``L_g - L = 0`` with
        free-sign multipliers (Tran et al.) and ``None`` is naive fine-tuning (NFT, no
        mitigation).
    tolerance : float, default=0.01
        Bound ``epsilon`` on every excess gap, as a fraction (0.01 is one accuracy
        point); also the feasibility threshold of ``train_disparity_``. Not used in the
        training of ``"loss_parity"`` and ``None``. With ``"excess_accuracy_gap"``, a
        fit whose ``train_unfairness_`` exceeds it warns (``FairnessWarning``, naming the
        groups over it with their row counts: in a group of ``n`` rows one row moves
        its accuracy by ``1 / n``, so groups of a few dozen rows seldom meet 0.01); so
        does a fit whose model predicts one class for nearly every row (any ``metric``).
        ``partial_fit`` does not warn: its attributes describe the last chunk.
    use_buffer : bool, default=True
        Estimate the gaps of the dual step from per-group replay buffers of the
        ``buffer_size`` most recent training rows; ``False`` uses the groups present in
        the current minibatch.
    buffer_size : int, default=40
        Capacity ``k`` (rows) of every group's replay buffer; a group's multiplier only
        moves once its buffer is full.
    buffer_overall : {"balanced", "weighted"}, default="balanced"
        Overall buffered accuracy as the unweighted or population-weighted mean of full
        buffers.
    absolute_gaps : bool, default=True
        Loss parity on absolute gaps ``|L_g - L|`` (released configuration; the
        multipliers never decrease). Only used with ``metric="loss_parity"``.
    dual_learning_rate : float, default=1e-3
        Step size ``eta_lambda`` of the dual ascent on the multipliers.
    dual_optimizer : {"sgd", "adam"}, default="sgd"
        Plain stochastic gradient ascent on the multipliers, or ascent with Adam moments;
        both are followed by the projection to >= 0 (except for loss parity).
    learning_rate : float, default=0.01
        Initial learning rate of the fine-tuning SGD (pruning epochs included).
    momentum : float, default=0.9
        Momentum of the fine-tuning SGD (``v <- momentum * v + grad``, no dampening), in
        [0, 1).
    nesterovs_momentum : bool, default=False
        Use Nesterov momentum, in dense pre-training and in fine-tuning.
    alpha : float, default=1e-4
        L2 coefficient of fine-tuning, added to the loss as
        ``(alpha / 2) * ||theta * mask||^2`` (unmasked weights and biases).
    learning_rate_milestones : tuple of float, default=(0.6, 0.8, 0.9)
        Fractions of the epochs (``dense_n_epochs`` in pre-training, ``n_epochs`` in
        fine-tuning) at which the learning rate is multiplied by
        ``learning_rate_decay``.
    learning_rate_decay : float, default=0.1
        Factor applied to the learning rate at every milestone of
        ``learning_rate_milestones``.
    batch_size : int, default=128
        Minibatch size of dense pre-training and fine-tuning (the last batch of an
        epoch may be shorter).
    constrain_while_pruning : bool, default=False
        Apply the constraints (multipliers and buffers) during the pruning epochs too; by
        default those epochs are plain ERM on the masked weights.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training rows (stratified by group and
        label) and return, among the epoch-end iterates at the final sparsity (epochs
        ``>= pruning_epochs``), the one with the best validation accuracy instead of the
        last iterate. With ``metric=None`` this is the NFT+ES baseline of [1]_, which
        picked the iterate on test accuracy; the held-out split avoids that.
    validation_fraction : float, default=0.1
        Share of the training rows held out when ``early_stopping`` is True.
    dtype : {"float32", "float64"}, default="float32"
        Computation precision (float64 is scoped to the fit).
    random_state : int, Generator or None, default=None
        Seeds the initialisation of the dense network and the minibatch sampler. Pass
        an int for reproducible results.
    verbose : int, default=0
        Log the fit (logger ``fairest.constrained._pruned``, INFO): 1 a summary
        (sparsity, maximum excess accuracy gap, accuracy) after the fit, 2 also one line
        per dense pre-training and fine-tuning epoch.
    record_history : bool or int, default=False
        Store ``history_``: True records every fine-tuning iteration, an int ``k`` every
        ``k``-th (iterations 0, k, 2k, ...).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    groups_ : ndarray of shape (n_groups,)
        Sorted group labels; the per-group attributes follow this order.
    params_ : list of (ndarray, ndarray)
        Sparse ``(W, b)`` per layer (masked entries exactly 0).
    masks_ : list of ndarray
        Binary weight masks (1 = active).
    dense_params_ : list of (ndarray, ndarray)
        ``(W, b)`` per layer of the dense reference model.
    sparsity_ : float
        Fraction of zeros over the prunable weights.
    layer_sparsity_ : ndarray of shape (n_layers,)
        Fraction of zeros of every weight matrix.
    multipliers_ : ndarray of shape (n_groups,)
        Final Lagrange multipliers (all 0 for ``metric=None``).
    dense_accuracy_, dense_loss_ : float
        Training accuracy and mean loss of the dense model (weighted by
        ``sample_weight``).
    dense_group_accuracy_, dense_group_loss_ : ndarray of shape (n_groups,)
        Training accuracy and mean loss of the dense model in every group (weighted by
        ``sample_weight``).
    train_eags_ : pandas.Series
        Excess accuracy gaps ``psi_g`` on the training set (weighted accuracies).
    train_disparity_ : dict
        ``acc``, ``psi_pw``, ``max_eag``, ``delta``, ``is_feasible`` on the training set
        (weighted accuracies).
    train_unfairness_ : float
        The largest excess accuracy gap ``max_g psi_g`` of the returned model on the
        training set (weighted), the quantity ``tolerance`` targets; the solver is
        stochastic, so this measurement, not a bound, is what is promised (compare it with
        ``tolerance``, as ``is_feasible_`` does). The same name as in every estimator.
    is_feasible_ : bool
        Whether ``train_unfairness_ <= tolerance`` (up to ``1e-9``, the rounding of the
        accuracies' sums).
    history_ : dict of ndarray
        One value per recorded fine-tuning iteration (only with ``record_history``):
        ``iter``, ``epoch``, ``objective``, ``learning_rate``, ``sparsity`` and, for every
        group code ``g``, ``lambda_g<g>``, ``psi_hat_g<g>``, ``buffer_full_g<g>``.
    best_epoch_ : int or None
        The fine-tuning epoch whose iterate was returned (``early_stopping`` only).
    validation_score_ : float or None
        Validation accuracy of the returned iterate (``early_stopping`` only).
    n_iter_ : int
        Number of fine-tuning iterations.
    dense_step_size_factor_ : float or None
        Factor applied to ``dense_learning_rate`` by the divergence guard (1.0 unless a
        refit was needed, see Notes); ``None`` with ``dense_model``.
    step_size_factor_ : float
        Factor applied to ``learning_rate`` and ``dual_learning_rate`` of the fine-tuning
        by the divergence guard (1.0 unless a refit was needed, see Notes).

    Notes
    -----
    Divergence guard: every 16 steps at most, the scan checks on device that the
    parameters are finite (one ``isfinite`` reduction, no host synchronisation). When
    the iterates of the dense pre-training or of the fine-tuning become non-finite
    (typically features of very different scales, or a step size too large), that phase
    is run again from its initialisation (the initial or the dense network) on the same
    minibatches with its step sizes halved (``dense_learning_rate``; ``learning_rate`` and
    ``dual_learning_rate``), at most twice, with a ``ConvergenceWarning``; when the last
    refit diverges too, ``fit`` raises a ``ValueError`` naming the phase, the iteration
    and the remedy (scale the features, e.g. with ``StandardScaler``, or lower the step
    sizes). A ``dense_model`` with non-finite parameters is refused. A non-finite model
    is never stored.

    References
    ----------
    .. [1] Hashemizadeh, Ramirez, Sukumaran, Farnadi, Lacoste-Julien, Gallego-Posada.
       "Balancing Act: Constraining Disparate Impact in Sparse Models", ICLR 2024.
    .. [2] Zhu, Gupta. "To prune, or not to prune: exploring the efficacy of pruning for
       model compression", 2017 (gradual magnitude pruning).
    """

    __metadata_request__fit = {"sensitive_features": True}
    _fairness_path = ("tolerance", "refit")  # fairness_path's knob and strategy
    __metadata_request__partial_fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "hidden_layer_sizes": ["array-like"],
        "dense_model": "no_validation",
        "dense_n_epochs": [Interval(Integral, 0, None, closed="left")],
        "dense_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "dense_momentum": [Interval(Real, 0, 1, closed="left")],
        "dense_alpha": [Interval(Real, 0, None, closed="left")],
        "target_sparsity": [Interval(Real, 0, 1, closed="both")],
        "initial_sparsity": [Interval(Real, 0, 1, closed="both")],
        "pruning_epochs": [Interval(Integral, 0, None, closed="left")],
        "prune_layers": [StrOptions({"all", "hidden"})],
        "n_epochs": [Interval(Integral, 0, None, closed="left")],
        "metric": [StrOptions({"excess_accuracy_gap", "excess_loss_gap", "loss_parity"}), None],
        "tolerance": [Interval(Real, 0, None, closed="left")],
        "use_buffer": ["boolean"],
        "buffer_size": [Interval(Integral, 1, None, closed="left")],
        "buffer_overall": [StrOptions({"balanced", "weighted"})],
        "absolute_gaps": ["boolean"],
        "dual_learning_rate": [Interval(Real, 0, None, closed="left")],
        "dual_optimizer": [StrOptions({"sgd", "adam"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "nesterovs_momentum": ["boolean"],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate_milestones": ["array-like"],
        "learning_rate_decay": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "constrain_while_pruning": ["boolean"],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "dtype": [StrOptions({"float32", "float64"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "record_history": ["boolean", Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        hidden_layer_sizes=_defaults.HIDDEN_LAYER_SIZES,
        *,
        dense_model=None,
        dense_n_epochs=_defaults.DENSE_EPOCHS,
        dense_learning_rate=_defaults.PRIMAL_LR,
        dense_momentum=_defaults.MOMENTUM,
        dense_alpha=_defaults.WEIGHT_DECAY,
        target_sparsity=_defaults.TARGET_SPARSITY,
        initial_sparsity=0.0,
        pruning_epochs=_defaults.PRUNING_EPOCHS,
        prune_layers="all",
        n_epochs=_defaults.FINETUNE_EPOCHS,
        metric="excess_accuracy_gap",
        tolerance=_defaults.CEAG_TOLERANCE,
        use_buffer=True,
        buffer_size=_defaults.BUFFER_SIZE,
        buffer_overall="balanced",
        absolute_gaps=True,
        dual_learning_rate=_defaults.DUAL_LR,
        dual_optimizer="sgd",
        learning_rate=_defaults.PRIMAL_LR,
        momentum=_defaults.MOMENTUM,
        nesterovs_momentum=False,
        alpha=_defaults.WEIGHT_DECAY,
        learning_rate_milestones=_defaults.LR_MILESTONES,
        learning_rate_decay=_defaults.LR_GAMMA,
        batch_size=_defaults.PRUNED_BATCH_SIZE,
        constrain_while_pruning=False,
        early_stopping=False,
        validation_fraction=0.1,
        dtype="float32",
        random_state=None,
        verbose=0,
        record_history=False,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.dense_model = dense_model
        self.dense_n_epochs = dense_n_epochs
        self.dense_learning_rate = dense_learning_rate
        self.dense_momentum = dense_momentum
        self.dense_alpha = dense_alpha
        self.target_sparsity = target_sparsity
        self.initial_sparsity = initial_sparsity
        self.pruning_epochs = pruning_epochs
        self.prune_layers = prune_layers
        self.n_epochs = n_epochs
        self.metric = metric
        self.tolerance = tolerance
        self.use_buffer = use_buffer
        self.buffer_size = buffer_size
        self.buffer_overall = buffer_overall
        self.absolute_gaps = absolute_gaps
        self.dual_learning_rate = dual_learning_rate
        self.dual_optimizer = dual_optimizer
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.nesterovs_momentum = nesterovs_momentum
        self.alpha = alpha
        self.learning_rate_milestones = learning_rate_milestones
        self.learning_rate_decay = learning_rate_decay
        self.batch_size = batch_size
        self.constrain_while_pruning = constrain_while_pruning
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose
        self.record_history = record_history

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Train dense, prune, fine-tune under the excess accuracy gap constraints.

        Parameters
        ----------
        X : {array-like, sparse matrix} or DataFrame of shape (n_samples, n_features)
            Training data. Columns named by ``sensitive_features`` are removed from the
            features.
        y : array-like of shape (n_samples,)
            Target labels (two or more classes).
        sensitive_features : array-like, str, list of str or None, default=None
            Group membership, one label per row, or the column name(s) of the DataFrame
            ``X`` holding it (a list of str is read as column names only when every
            entry is a column of ``X``); ``None`` means one group (every ``psi_g`` is 0),
            with a warning.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative row weights. They multiply every row's loss in the dense
            pre-training and fine-tuning minibatch losses (divided by the mean weight,
            which keeps the uniform minibatches unbiased) and weight the group
            accuracies and losses of the excess gaps, the replay buffers and the fitted
            training statistics. ``None`` (or uniform weights) is the unweighted fit.

        Returns
        -------
        self : PrunedFairClassifier
            The fitted estimator.
        """
        hidden = validate_hidden(self.hidden_layer_sizes)
        X, sensitive_features, self.sensitive_columns_ = split_sensitive_columns(
            X, sensitive_features
        )
        fit_data = validate_fit_data(
            self, X, y, sensitive_features, sample_weight, accept_sparse=True
        )
        self.__dict__.pop("_stream_state", None)  # a fit starts a new stream
        _check_milestones(self.learning_rate_milestones)
        X, groups, labels = as_csr(fit_data.X), fit_data.groups, fit_data.group_labels
        classes, y_codes = np.unique(fit_data.y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                "This solver needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {classes[0]!r}."
            )
        y_codes = y_codes.astype(np.int32)
        sw = fit_data.sample_weight
        sw = None if np.all(sw == sw[0]) else sw  # uniform weights: the unweighted fit
        # model init, minibatches, (unused here), (unused here), validation split
        rngs = spawn_rngs(self.random_state, 5)
        validation = None
        if self.early_stopping:
            X, y_codes, groups, sw, validation = self._hold_out(X, y_codes, groups, sw, rngs[4])
        G = labels.size
        if sw is not None:  # also after the early-stopping split
            raise_if_weightless_group(np.bincount(groups, sw, minlength=G), labels)
        model = MLP(X.shape[1], hidden, 1 if classes.size == 2 else classes.size)
        settings = self._settings(len(model.sizes) - 1)
        dtype = jnp.float64 if self.dtype == "float64" else jnp.float32
        score = None
        if validation is not None:

            def score(x):
                return self._accuracy(model, x, *validation)

        with jax.enable_x64(self.dtype == "float64"):
            data = pruning_data(X, y_codes, groups, sw, G, dtype)
            x_dense = None if self.dense_model is None else self._dense_start(model, dtype)
            result = fit_pruned(
                model,
                settings,
                data,
                EpochSampler(X.shape[0], self.batch_size, rngs[1]),
                x_init=None if x_dense is not None else initial_parameters(model, rngs[0], dtype),
                x_dense=x_dense,
                owner=type(self).__name__,
                score=score,
                progress=self._progress,
            )

        self.classes_ = classes
        self.groups_ = labels
        self.params_ = result.params
        self.masks_ = result.masks
        self.dense_params_ = result.dense_params
        self.sparsity_, self.layer_sparsity_ = layer_sparsity(result.masks, settings.prunable)
        self.multipliers_ = result.multipliers
        psi, acc_s, logits = self._store_train_gaps(
            result.reference, X, y_codes, groups, sw, labels
        )
        if settings.record_every:
            self.history_ = pruning_history(result.logs, G, settings.record_every)
        elif hasattr(self, "history_"):
            del self.history_  # a previous fit's record
        self.n_iter_ = result.n_iter
        self.best_epoch_ = result.best_epoch
        self.validation_score_ = result.validation_score
        self.dense_step_size_factor_ = result.dense_step_size_factor
        self.step_size_factor_ = result.step_size_factor
        self._warn_fit(logits, y_codes, groups, sw, labels)
        log_fit(self, "sparsity=%.3f max_eag=%.4f acc=%.4f", self.sparsity_, psi.max(), acc_s)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(
        self, X, y, *, sensitive_features=None, sample_weight=None, classes=None, groups=None
    ):
        """One epoch of the pipeline over the chunk ``(X, y)``, continuing the previous calls.

        The calls are the epochs of :meth:`fit`'s schedule: the first ``dense_n_epochs``
        calls pre-train the dense network (none with ``dense_model``), the following
        ones prune (at the start of fine-tuning calls ``0..pruning_epochs``, cubic
        schedule) and fine-tune under the constraints; the learning-rate milestones are
        fractions of ``dense_n_epochs`` and ``n_epochs`` calls (after the last one the
        final rate is kept). The model, the optimiser states (momentum, Adam moments),
        the multipliers, the replay buffers, the masks and the minibatch stream continue
        from call to call, so ``dense_n_epochs + n_epochs`` calls on the whole data give
        the model of :meth:`fit`.

        Group statistics of a stream: the dense reference (its accuracy and loss, overall
        and per group) is a running estimate over the chunks of the fine-tuning calls,
        all scored by the same dense model (on the whole data in every call: exactly
        ``fit``'s); the group shares of ``buffer_overall="weighted"`` are running
        weighted shares of every chunk so far; the sample-weight scales of the minibatch
        means are normalised by the chunk's own mean weights. The training-set
        attributes (``train_eags_``, ``train_disparity_``, ``train_unfairness_``,
        ``is_feasible_``) are measured on the last chunk; ``history_`` is not recorded.
        ``early_stopping`` (a held-out split of one data set) is refused, and a call
        whose iterates diverge raises ``ValueError`` and leaves the estimator as it was.

        Parameters
        ----------
        X : {array-like, sparse matrix} or DataFrame of shape (n_samples, n_features)
            The chunk's rows.
        y : array-like of shape (n_samples,)
            Their labels, all in ``classes``.
        sensitive_features : array-like, str, list of str or None, default=None
            Their group labels (or column names), all in the stream's vocabulary.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights of the chunk's rows.
        classes : array-like, default=None
            Every class label of the stream; required on the first call.
        groups : array-like, default=None
            Every group label of the stream, on the first call; default: the first
            chunk's labels (a later chunk with another label raises ``ValueError``).

        Returns
        -------
        self : PrunedFairClassifier
            The estimator, updated.
        """
        from fairest.io import (
            chunk_of_a_stream,
            encode_stream_chunk,
            start_or_continue_stream,
        )

        if self.early_stopping:
            raise ValueError(
                "partial_fit: early_stopping holds out rows of one data set; it has no "
                "streaming form. Use fit, or early_stopping=False."
            )
        hidden = validate_hidden(self.hidden_layer_sizes)
        _check_milestones(self.learning_rate_milestones)
        stream, first = start_or_continue_stream(self, classes, groups)
        X, sensitive_features, columns = split_sensitive_columns(X, sensitive_features)
        if not first or stream.warm:
            validate_data(self, X, reset=False, skip_check_array=True)  # features, names
        self.sensitive_columns_ = columns
        with chunk_of_a_stream(sensitive_features):
            fit_data = validate_fit_data(
                self, X, y, sensitive_features, sample_weight, accept_sparse=True
            )
        y_codes, groups_ = encode_stream_chunk(
            stream, fit_data.y, fit_data.groups, fit_data.group_labels, type(self).__name__
        )
        X, labels, G = as_csr(fit_data.X), stream.vocabulary.labels_, stream.vocabulary.labels_.size
        weight = fit_data.sample_weight
        group_weight = stream.running_totals(
            "group_weight", np.bincount(groups_, weight, minlength=G)
        )
        sw = None if np.all(weight == weight[0]) else weight
        model = MLP(X.shape[1], hidden, 1 if stream.classes.size == 2 else stream.classes.size)
        settings = self._settings(len(model.sizes) - 1)
        dtype = jnp.float64 if self.dtype == "float64" else jnp.float32
        dense_calls = 0 if self.dense_model is not None else settings.dense_n_epochs
        if first:
            rngs = spawn_rngs(self.random_state, 5)
            with jax.enable_x64(self.dtype == "float64"):
                x_init = np.asarray(initial_parameters(model, rngs[0], dtype))
            stream.solver = {"rngs": rngs, "x_init": x_init, "n_iter": 0}
            if stream.warm:  # partial_fit after fit: fine-tuning goes on from the fit
                _continue_fitted(self, stream, model, settings, dense_calls, dtype)
        solver = stream.solver
        call = stream.n_calls
        with jax.enable_x64(self.dtype == "float64"):
            data = pruning_data(X, y_codes, groups_, sw, G, dtype)
            data = data._replace(shares=group_weight / group_weight.sum())
            rng = copy.deepcopy(solver["rngs"][1])  # kept only if the call succeeds
            sampler = EpochSampler(X.shape[0], self.batch_size, rng)
            if call < dense_calls:
                outcome = _stream_dense_epoch(model, settings, data, solver, sampler, call)
            else:
                outcome = _stream_finetune_epoch(
                    model, settings, data, solver, sampler, call - dense_calls, self
                )
            state, masks, reference, iterations = outcome
            bad = _diverged(state, final=True)
            if bad is not None:
                raise ValueError(
                    f"{type(self).__name__}.partial_fit: the iterates became non-finite "
                    f"(NaN/inf) by step {bad} of call {call}; the estimator is unchanged. "
                    "Scale the features (e.g. StandardScaler) or lower the learning rates."
                )
            params = _as_layers(model, state["x"])
        solver["state"] = jax.tree_util.tree_map(np.asarray, state)
        solver["masks"] = masks
        solver["rngs"][1] = rng
        solver["n_iter"] += iterations
        stream.n_calls += 1
        self._stream_state = stream
        self.classes_, self.groups_ = stream.classes, labels
        self.params_ = params
        self.masks_ = masks
        self.dense_params_ = solver.get("dense_params", params)
        self.sparsity_, self.layer_sparsity_ = layer_sparsity(masks, settings.prunable)
        self.multipliers_ = np.asarray(state["lam"])
        if reference is None:  # dense phase: the current model is its own reference
            reference = reference_statistics(params, data)
        self._store_train_gaps(reference, X, y_codes, groups_, sw, labels)
        self.__dict__.pop("history_", None)
        self.n_iter_ = solver["n_iter"]
        self.best_epoch_ = self.validation_score_ = None
        self.dense_step_size_factor_ = None if self.dense_model is not None else 1.0
        self.step_size_factor_ = 1.0
        return self

    def _store_train_gaps(self, ref, X, y_codes, groups, sw, labels):
        """The dense reference ``ref`` and the excess accuracy gaps of ``params_`` on
        ``(X, y_codes, groups)`` (weighted by ``sw`` unless None). Returns ``(psi, acc,
        logits)``."""
        self.dense_accuracy_ = float(ref["acc"])
        self.dense_group_accuracy_ = ref["acc_g"]
        self.dense_loss_ = float(ref["loss"])
        self.dense_group_loss_ = ref["loss_g"]
        logits = numpy_forward(self.params_, X)
        correct_s = correct_predictions(logits, y_codes)
        acc_s_g = _group_means(correct_s, groups, sw, labels.size)
        acc_s = _mean(correct_s, sw)
        delta_g = ref["acc_g"] - acc_s_g
        delta = ref["acc"] - acc_s
        psi = delta_g - delta
        self.train_eags_ = pd.Series(
            psi, index=pd.Index(list(labels), tupleize_cols=False), name="excess_accuracy_gap"
        )
        # within the tolerance up to the rounding of the accuracies' sums: a group of 200
        # rows that loses 2 more than the model's share sits at 0.010000000000000009
        feasible = bool(psi.max() <= self.tolerance + _defaults.EAG_ROUNDING)
        self.train_disparity_ = {
            "acc": float(acc_s),
            "psi_pw": float(delta_g.max() - delta_g.min()),
            "max_eag": float(psi.max()),
            "delta": float(delta),
            "is_feasible": feasible,
        }
        self.train_unfairness_ = float(psi.max())
        self.is_feasible_ = feasible
        return psi, acc_s, logits

    def _warn_fit(self, logits, y_codes, groups, sw, labels) -> None:
        """``FairnessWarning`` s of a fit (:func:`~fairest.constrained._feasibility.
        warn_fit`): a missed tolerance (``metric="excess_accuracy_gap"``, whose gaps
        ``train_unfairness_`` measures) and a (nearly) one-class model."""
        rows = np.bincount(groups, minlength=labels.size)
        missed = None
        if self.metric == "excess_accuracy_gap" and not self.is_feasible_:
            psi = self.train_eags_.to_numpy()
            over = np.flatnonzero(psi > self.tolerance)
            over = over[np.argsort(-psi[over])][:12]
            shown = ", ".join(
                f"{plain_label(labels[k])!r}: {psi[k]:.4f} ({rows[k]} rows, one row "
                f"{1 / rows[k]:.3g} of its accuracy)"
                for k in over
            )
            missed = (
                f"the returned model's largest train excess accuracy gap is "
                f"{self.train_unfairness_:.4g}, above tolerance={self.tolerance:g} (groups "
                f"over it: {shown}; sparsity {self.sparsity_:.3f}, train accuracy "
                f"{self.train_disparity_['acc']:.4f} against {self.dense_accuracy_:.4f} dense)"
            )
        pred = (logits[:, 0] > 0).astype(np.int64) if logits.shape[1] == 1 else logits.argmax(1)
        constant = near_constant_figures(
            pred,
            y_codes,
            groups,
            sw,
            [plain_label(label) for label in labels],
            [plain_label(label) for label in self.classes_],
        )
        advice = (
            "raise dual_learning_rate or n_epochs, raise tolerance, or merge small groups "
            f"(the smallest has {rows.min()} rows: a tolerance below one row's share of its "
            "accuracy cannot be met by chance alone)."
        )
        warn_fit(self, missed=missed, constant=constant, advice=advice)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # scipy sparse X is never densified (_sparse)
        return tags

    def _settings(self, n_layers: int) -> PruningSettings:
        """The resolved settings of :func:`fit_pruned`."""
        if self.prune_layers == "all" or n_layers <= 2:
            prunable = (True,) * n_layers
        else:
            prunable = tuple(0 < i < n_layers - 1 for i in range(n_layers))
        shared = {name: getattr(self, name) for name in _SHARED_SETTINGS}
        return PruningSettings(
            **shared,
            prunable=prunable,
            balanced=self.buffer_overall == "balanced",
            nesterov=bool(self.nesterovs_momentum),
            learning_rate_milestones=tuple(np.ravel(self.learning_rate_milestones).tolist()),
            record_every=int(self.record_history),  # True records every iteration
        )

    def _dense_start(self, model, dtype):
        """Flat parameters of ``dense_model``, checked (architecture, finite values)."""
        dense_params = [
            (jnp.asarray(W, dtype), jnp.asarray(b, dtype)) for W, b in self.dense_model.params_
        ]
        shapes = [W.shape for W, _ in dense_params]
        expected = list(zip(model.sizes[:-1], model.sizes[1:]))
        if shapes != expected:
            raise ValueError(
                f"dense_model has layer shapes {shapes}; this estimator needs {expected}."
            )
        x_dense = ravel_params(dense_params)
        if not bool(all_finite(x_dense)):
            raise ValueError(
                "dense_model has non-finite (NaN/inf) parameters; refit "
                "it on scaled features (e.g. StandardScaler)."
            )
        return x_dense

    def _progress(self, phase, epoch, learning_rate, state, masks):
        """Per-epoch log lines (``verbose >= 2``) of :func:`fit_pruned`."""
        if phase == "dense":
            log_fit(
                self,
                "dense epoch %d/%d: learning_rate=%.4g",
                epoch + 1,
                self.dense_n_epochs,
                learning_rate,
                level=2,
            )
        elif self.verbose and self.verbose >= 2:
            sparsity, _ = layer_sparsity(masks, self._settings(len(masks)).prunable)
            log_fit(
                self,
                "epoch %d/%d: sparsity=%.3f learning_rate=%.4g max_multiplier=%.4g",
                epoch + 1,
                self.n_epochs,
                sparsity,
                learning_rate,
                float(jnp.max(state["lam"], initial=0.0)),
                level=2,
            )

    def _hold_out(self, X, y_codes, groups, sample_weight, rng):
        """Training rows and the ``(X, y, sample_weight)`` split of ``early_stopping``."""
        from sklearn.model_selection import train_test_split

        strata = groups.astype(np.int64) * (int(y_codes.max()) + 1) + y_codes
        if np.bincount(strata).min() < 2:
            strata = groups
        seed = int(rng.integers(2**31 - 1))
        train, val = train_test_split(
            np.arange(X.shape[0]),
            test_size=self.validation_fraction,
            stratify=strata,
            random_state=seed,
        )
        if sample_weight is None:
            sw_train = sw_val = None
        else:
            sw_train, sw_val = sample_weight[train], sample_weight[val]
        return (X[train], y_codes[train], groups[train], sw_train, (X[val], y_codes[val], sw_val))

    def _accuracy(self, model, x, X, y_codes, sample_weight=None):
        params = host_layers(model, x)
        return float(_mean(correct_predictions(numpy_forward(params, X), y_codes), sample_weight))

    def decision_function(self, X):
        """Return the logits of the sparse model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples (sensitive feature columns of a DataFrame used in ``fit`` are
            dropped).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Logits of the sparse model: one column (positive class) for two classes,
            one per class otherwise.
        """
        X = prepare_predict(self, X)
        z = numpy_forward(self.params_, X)
        return z[:, 0] if z.shape[1] == 1 else z

    def disparity_report(self, X, y, sensitive_features):
        """Per-group dense and sparse accuracies, ``Delta_g`` and ``psi_g`` on ``(X, y)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Evaluation samples.
        y : array-like of shape (n_samples,)
            True labels of ``X``.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
            Group membership of every row of ``X``.

        Returns
        -------
        report : pandas.DataFrame
            One row per group, plus a ``"summary"`` row with ``Delta``, ``Psi_PW`` and
            ``max psi`` in the ``accuracy_gap`` / ``psi_pw`` / ``max_eag`` columns.
        """
        from fairest.metrics._constrained import excess_accuracy_gaps

        Xv = prepare_predict(self, X)
        z_dense = numpy_forward(self.dense_params_, Xv)
        z_dense = z_dense[:, 0] if z_dense.shape[1] == 1 else z_dense
        dense_pred = self.classes_[
            (z_dense > 0).astype(int) if z_dense.ndim == 1 else np.argmax(z_dense, axis=1)
        ]
        sparse_pred = self.predict(X)
        table = excess_accuracy_gaps(
            np.asarray(y), dense_pred, sparse_pred, sensitive_features=sensitive_features
        )
        y_arr = np.asarray(y)
        summary = pd.DataFrame(
            {
                "accuracy_gap": [np.mean(dense_pred == y_arr) - np.mean(sparse_pred == y_arr)],
                "psi_pw": [table["accuracy_gap"].max() - table["accuracy_gap"].min()],
                "max_eag": [table["excess_accuracy_gap"].max()],
            },
            index=pd.Index(["summary"], name="group"),
        )
        return pd.concat([table, summary])


def _check_milestones(milestones) -> None:
    """``learning_rate_milestones`` must be fractions of the epochs in (0, 1]."""
    try:
        values = np.asarray(milestones, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        values = None
    if values is None or not np.all((values > 0) & (values <= 1)):
        raise ValueError(
            "learning_rate_milestones must be fractions of the epochs in (0, 1], e.g. "
            f"(0.6, 0.8, 0.9); got {milestones!r}."
        )
