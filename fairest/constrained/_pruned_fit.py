"""The pipeline of :class:`~fairest.constrained.PrunedFairClassifier` (constrained spec 2.6):
dense pre-training, gradual pruning and constrained fine-tuning as plain functions over
:class:`PruningSettings` and :class:`PruningData`, the history, and the estimator's
fit-time checks, logs and warnings (``partial_fit``'s epochs are in
:mod:`fairest.constrained._pruned_stream`).
"""

from __future__ import annotations

import copy
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._losses import cross_entropy_host
from fairest.constrained import _defaults
from fairest.constrained._common import host_layers, ravel_params
from fairest.constrained._engine import all_finite, numpy_forward, refit_on_divergence
from fairest.constrained._engine._runtime import place_padded_rows
from fairest.constrained._feasibility import near_constant_figures, warn_fit
from fairest.constrained._pruned_epoch import (
    PrunedConfig,
    _learning_rate_at,
    _phase_aux,
    gmp_schedule,
    initial_state,
    prune_layer,
    run_epochs,
)
from fairest.utils._degenerate import plain_label
from fairest.utils._linear import score_codes
from fairest.utils._reporting import as_history, log_fit

__all__ = [
    "PruningSettings",
    "PruningData",
    "PruningResult",
    "fit_pruned",
    "pretrain_dense",
    "finetune",
    "pruning_data",
    "pruning_history",
    "resolve_epochs",
]


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


def resolve_epochs(value, name: str, preset: str, n_samples: int | None) -> int:
    """The epoch count ``name`` (``"dense_n_epochs"``, ``"n_epochs"`` or
    ``"pruning_epochs"``) with ``"auto"`` resolved: the paper's for preset ``"paper"`` or
    unknown rows (``n_samples=None``: ``partial_fit``), else ``ceil(rows / n_samples)``
    between the minimum and the paper's (``_defaults.AUTO_PRUNING_EPOCHS``)."""
    if value != "auto":
        return int(value)
    paper = _defaults.PAPER_PRUNING_EPOCHS[name]
    if preset == "paper" or n_samples is None:
        return paper
    rows, minimum = _defaults.AUTO_PRUNING_EPOCHS[name]
    return min(paper, max(minimum, math.ceil(rows / max(int(n_samples), 1))))


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
    device = place_padded_rows(X, rows, dtype)
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


def _diverged(state, final=False):
    """First non-finite step of a phase, or None (one host read); ``final`` also checks
    the rest of the state (multipliers, momentum) at the end."""
    bad = int(state.bad)
    if bad < 0 and final and not bool(_all_finite(state)):
        bad = max(int(state.it) - 1, 0)
    return bad if bad >= 0 else None


_all_finite = jax.jit(all_finite)  # one executable per state layout, not one per leaf


def host_flat(params, dtype) -> jax.Array:
    """:func:`ravel_params` of host ``(W, b)`` pairs, built on the host in ``dtype`` and
    placed (no eager device program)."""
    flat = np.concatenate([np.concatenate([np.ravel(W), np.ravel(b)]) for W, b in params])
    return jax.device_put(flat.astype(np.dtype(dtype)))


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
    """1.0 where the logits ``z`` predict ``y_codes`` by the rule of ``predict``
    (:func:`~fairest.utils._linear.score_codes`), else 0.0."""
    return (score_codes(z) == y_codes).astype(np.float64)


def reference_statistics(params, data: PruningData) -> dict:
    """The dense model's (weighted) accuracy and mean loss, overall and per group, on the
    training rows, in float64 on the host (spec 2.6 step 2)."""
    z = numpy_forward(params, data.X)
    correct, loss = correct_predictions(z, data.y_codes), cross_entropy_host(z, data.y_codes)
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
    config = _config(model, data.num_groups, settings)
    hyper = _dense_hyper(dtype, settings)
    ref = _reference_zero(data.shares, data.num_groups, dtype)
    aux = _phase_aux(ref, jax.device_put(np.ones(x0.shape, x0.dtype)), False)
    sampler_start = copy.deepcopy(sampler.rng)

    def after(epoch, state, log, lr):
        if progress is not None:
            progress("dense", epoch, lr, state, None)

    def attempt(factor):
        sampler.rng = copy.deepcopy(sampler_start)  # the same minibatches
        state = initial_state(x0, data.num_groups, settings.buffer_size, settings.dual_optimizer)

        def learning_rate(epoch):
            return factor * _dense_learning_rate(epoch, settings)

        state = run_epochs(
            config,
            settings.record_every > 0,
            state,
            data.device,
            aux,
            hyper,
            sampler,
            epochs=range(settings.dense_n_epochs),
            learning_rate=learning_rate,
            before=None,
            after=after,
        )
        return state.x, _diverged(state, final=True)

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
    config = _config(model, data.num_groups, settings)
    ref = _reference_zero(data.shares, data.num_groups, dtype, reference)
    sampler_start = copy.deepcopy(sampler.rng)
    shapes = [(a, b) for a, b in zip(model.sizes[:-1], model.sizes[1:])]

    def attempt(factor):
        sampler.rng = copy.deepcopy(sampler_start)  # the same minibatches
        held = {"masks": [np.ones(shape) for shape in shapes]}
        state = initial_state(
            x_dense, data.num_groups, settings.buffer_size, settings.dual_optimizer
        )
        dual_lr = (
            settings.dual_learning_rate if factor == 1.0 else factor * settings.dual_learning_rate
        )
        hyper = _hyper(dtype, settings.momentum, settings.alpha, settings.tolerance, dual_lr)
        logs = []
        best = [(-np.inf, None, None, None)]  # validation score, x, masks, epoch

        def learning_rate(epoch):
            return factor * _finetune_learning_rate(epoch, settings)

        def before(epoch, state, aux):
            masks, mask, state, constrained = _epoch_masks(
                epoch, settings, model, state, held["masks"], dtype
            )
            held["masks"] = masks
            return state, _phase_aux(ref, mask, constrained)

        def after(epoch, state, log, lr):
            masks = held["masks"]
            if settings.record_every:
                steps = log["objective"].shape[0]
                log["learning_rate"] = np.full(steps, lr)
                log["epoch"] = np.full(steps, epoch)
                log["sparsity"] = np.full(steps, layer_sparsity(masks, settings.prunable)[0])
                logs.append(log)
            if progress is not None:
                progress("finetune", epoch, lr, state, masks)
            if score is not None and epoch >= settings.pruning_epochs:
                value = score(state.x)
                if value > best[0][0]:
                    best[0] = (value, state.x, [m.copy() for m in masks], epoch)

        state = run_epochs(
            config,
            settings.record_every > 0,
            state,
            data.device,
            None,
            hyper,
            sampler,
            epochs=range(settings.n_epochs),
            learning_rate=learning_rate,
            before=before,
            after=after,
        )
        return (state, held["masks"], logs, best[0]), _diverged(state, final=True)

    return refit_on_divergence(
        owner,
        attempt,
        remedy="learning_rate / dual_learning_rate",
        X=data.X,
        phase=" of the fine-tuning",
    )


def _config(model, num_groups, settings) -> PrunedConfig:
    """The static configuration of the pruned solver's step (:class:`PrunedConfig`)."""
    return PrunedConfig(
        model,
        num_groups,
        settings.metric,
        bool(settings.use_buffer),
        settings.balanced,
        bool(settings.absolute_gaps),
        settings.dual_optimizer,
        settings.nesterov,
        settings.buffer_size,
    )


def _dense_learning_rate(epoch: int, settings) -> float:
    """Step size of dense pre-training epoch ``epoch`` (before any refit's factor)."""
    return _learning_rate_at(
        epoch,
        settings.dense_learning_rate,
        settings.learning_rate_milestones,
        settings.learning_rate_decay,
        settings.dense_n_epochs,
    )


def _finetune_learning_rate(epoch: int, settings) -> float:
    """Step size of fine-tuning epoch ``epoch`` (before any refit's factor)."""
    return _learning_rate_at(
        epoch,
        settings.learning_rate,
        settings.learning_rate_milestones,
        settings.learning_rate_decay,
        settings.n_epochs,
    )


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
        current = host_layers(model, state.x)
        masks = [
            prune_layer(np.asarray(W), m, target) if prunable else m
            for (W, _), m, prunable in zip(current, masks, settings.prunable)
        ]
    mask = flat_mask(masks, dtype)
    state = state._replace(x=state.x * mask)
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
    dense_params = host_layers(model, x_dense)
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
    x_final = state.x
    if best[1] is not None:
        x_final, masks = best[1], best[2]
    return PruningResult(
        params=host_layers(model, x_final),
        masks=masks,
        dense_params=dense_params,
        multipliers=np.asarray(state.lam),
        reference=reference,
        logs=logs,
        best_epoch=best[3],
        validation_score=None if best[1] is None else float(best[0]),
        n_iter=int(settings.n_epochs * sampler.iters_per_epoch),
        dense_step_size_factor=dense_factor,
        step_size_factor=factor,
    )


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


def dense_start(estimator, model, dtype):
    """Flat parameters of ``dense_model``, checked (architecture, finite values)."""
    dense_params = [
        (jnp.asarray(W, dtype), jnp.asarray(b, dtype)) for W, b in estimator.dense_model.params_
    ]
    shapes = [W.shape for W, _ in dense_params]
    expected = list(zip(model.sizes[:-1], model.sizes[1:]))
    if shapes != expected:
        raise ValueError(f"dense_model has layer shapes {shapes}; this estimator needs {expected}.")
    x_dense = ravel_params(dense_params)
    if not bool(all_finite(x_dense)):
        raise ValueError(
            "dense_model has non-finite (NaN/inf) parameters; refit "
            "it on scaled features (e.g. StandardScaler)."
        )
    return x_dense


def log_progress(estimator, phase, epoch, learning_rate, state, masks):
    """Per-epoch log lines (``verbose >= 2``) of :func:`fit_pruned`."""
    if phase == "dense":
        log_fit(
            estimator,
            "dense epoch %d/%d: learning_rate=%.4g",
            epoch + 1,
            estimator.dense_n_epochs,
            learning_rate,
            level=2,
        )
    elif estimator.verbose and estimator.verbose >= 2:
        sparsity, _ = layer_sparsity(masks, estimator._settings(len(masks)).prunable)
        log_fit(
            estimator,
            "epoch %d/%d: sparsity=%.3f learning_rate=%.4g max_multiplier=%.4g",
            epoch + 1,
            estimator.n_epochs,
            sparsity,
            learning_rate,
            float(jnp.max(state.lam, initial=0.0)),
            level=2,
        )


def warn_pruned_fit(estimator, logits, y_codes, groups, sw, labels) -> None:
    """``FairnessWarning`` s of a fit (:func:`~fairest.constrained._feasibility.
    warn_fit`): a missed tolerance (``metric="excess_accuracy_gap"``, whose gaps
    ``train_unfairness_`` measures) and a (nearly) one-class model."""
    rows = np.bincount(groups, minlength=labels.size)
    missed = None
    if estimator.metric == "excess_accuracy_gap" and not estimator.is_feasible_:
        psi = estimator.train_eags_.to_numpy()
        over = np.flatnonzero(psi > estimator.tolerance)
        over = over[np.argsort(-psi[over])][:12]
        shown = ", ".join(
            f"{plain_label(labels[k])!r}: {psi[k]:.4f} ({rows[k]} rows, one row "
            f"{1 / rows[k]:.3g} of its accuracy)"
            for k in over
        )
        missed = (
            f"the returned model's largest train excess accuracy gap is "
            f"{estimator.train_unfairness_:.4g}, above tolerance={estimator.tolerance:g} (groups "
            f"over it: {shown}; sparsity {estimator.sparsity_:.3f}, train accuracy "
            f"{estimator.train_disparity_['acc']:.4f} against {estimator.dense_accuracy_:.4f} dense)"
        )
    constant = near_constant_figures(
        score_codes(logits),
        y_codes,
        groups,
        sw,
        [plain_label(label) for label in labels],
        [plain_label(label) for label in estimator.classes_],
    )
    advice = (
        "raise dual_learning_rate or n_epochs, raise tolerance, or merge small groups "
        f"(the smallest has {rows.min()} rows: a tolerance below one row's share of its "
        "accuracy cannot be met by chance alone)."
    )
    warn_fit(estimator, missed=missed, constant=constant, advice=advice)


def hold_out(X, y_codes, groups, sample_weight, fraction: float, rng):
    """Training rows and the ``(X, y, sample_weight)`` split of ``early_stopping``:
    ``fraction`` of the rows, stratified by group and label (by group alone when a
    group-label cell has a single row)."""
    from sklearn.model_selection import train_test_split

    strata = groups.astype(np.int64) * (int(y_codes.max()) + 1) + y_codes
    if np.bincount(strata).min() < 2:
        strata = groups
    seed = int(rng.integers(2**31 - 1))
    train, val = train_test_split(
        np.arange(X.shape[0]), test_size=fraction, stratify=strata, random_state=seed
    )
    if sample_weight is None:
        sw_train = sw_val = None
    else:
        sw_train, sw_val = sample_weight[train], sample_weight[val]
    return (X[train], y_codes[train], groups[train], sw_train, (X[val], y_codes[val], sw_val))


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
