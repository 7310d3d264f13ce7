"""``PrunedFairClassifier.partial_fit``: one epoch of the pipeline over a chunk of a stream.

The calls are the epochs of ``fit``'s schedule: dense pre-training first, then pruning and
constrained fine-tuning. The stream's classes, group vocabulary and running group totals
live in :class:`fairest.io.StreamState`; what the pipeline carries from call to call is a
:class:`PrunedCarry` in ``stream.solver``. The call reads validate -> build -> solve ->
store as ``fit`` does.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.utils.validation import validate_data

from fairest._kernels._losses import cross_entropy_host
from fairest.constrained import _defaults
from fairest.constrained._common import (
    host_layers,
    ravel_params,
    split_sensitive_columns,
    validate_hidden,
)
from fairest.constrained._engine import MLP, EpochSampler, numpy_forward, spawn_rngs
from fairest.constrained._pruned_epoch import _phase_aux, initial_state, run_epochs
from fairest.constrained._pruned_fit import (
    PruningData,
    _check_milestones,
    _config,
    _dense_hyper,
    _dense_learning_rate,
    _diverged,
    _epoch_masks,
    _finetune_learning_rate,
    _hyper,
    _reference_zero,
    correct_predictions,
    dense_start,
    initial_parameters,
    layer_sparsity,
    pruning_data,
    reference_statistics,
)
from fairest.constrained._sparse import as_csr
from fairest.utils._estimator import validate_fit_data
from fairest.utils._reporting import store_result

__all__ = ["PrunedCarry", "partial_fit_chunk"]


@dataclass
class PrunedCarry:
    """What the pipeline carries from one ``partial_fit`` call to the next (host arrays)."""

    rngs: list  # the stream's generators; ``rngs[1]`` draws the minibatches
    x_init: np.ndarray  # the dense network's initial flat parameters
    n_iter: int = 0  # optimiser steps of fine-tuning so far
    state: object = None  # the epoch state (parameters, optimisers, multipliers, buffers)
    masks: list | None = None  # the pruning masks, one per layer
    dense_params: list | None = None  # the dense model, fine-tuning's reference
    reference_sums: np.ndarray | float = field(default=0.0)  # the reference's running sums


def _check_streamable(estimator) -> None:
    if estimator.early_stopping:
        raise ValueError(
            "partial_fit: early_stopping holds out rows of one data set; it has no "
            "streaming form. Use fit, or early_stopping=False."
        )


def partial_fit_chunk(estimator, X, y, sensitive_features, sample_weight, classes, groups):
    """:meth:`PrunedFairClassifier.partial_fit` on ``estimator``; returns ``estimator``."""
    from fairest.io import chunk_of_a_stream, encode_stream_chunk, start_or_continue_stream

    _check_streamable(estimator)
    hidden = validate_hidden(estimator.hidden_layer_sizes)
    _check_milestones(estimator.learning_rate_milestones)
    # validate: the chunk against the stream's classes, groups and features
    stream, first = start_or_continue_stream(estimator, classes, groups)
    X, sensitive_features, columns = split_sensitive_columns(X, sensitive_features)
    if not first or stream.warm:
        validate_data(estimator, X, reset=False, skip_check_array=True)  # features, names
    estimator.sensitive_columns_ = columns
    with chunk_of_a_stream(sensitive_features):
        fit_data = validate_fit_data(
            estimator, X, y, sensitive_features, sample_weight, accept_sparse=True
        )
    y_codes, groups_ = encode_stream_chunk(
        stream, fit_data.y, fit_data.groups, fit_data.group_labels, type(estimator).__name__
    )
    # build: the network, the schedule's settings and the stream's group shares
    X, labels, G = as_csr(fit_data.X), stream.vocabulary.labels_, stream.vocabulary.labels_.size
    weight = fit_data.sample_weight
    group_weight = stream.running_totals("group_weight", np.bincount(groups_, weight, minlength=G))
    sw = None if np.all(weight == weight[0]) else weight
    model = MLP(X.shape[1], hidden, 1 if stream.classes.size == 2 else stream.classes.size)
    settings = estimator._settings(len(model.sizes) - 1)
    estimator.epochs_ = {name: getattr(settings, name) for name in _defaults.PAPER_PRUNING_EPOCHS}
    dtype = jnp.float64 if estimator.dtype == "float64" else jnp.float32
    dense_calls = 0 if estimator.dense_model is not None else settings.dense_n_epochs
    if first:
        rngs = spawn_rngs(estimator.random_state, 5)
        with jax.enable_x64(estimator.dtype == "float64"):
            x_init = np.asarray(initial_parameters(model, rngs[0], dtype))
        stream.solver = PrunedCarry(rngs, x_init)
        if stream.warm:  # partial_fit after fit: fine-tuning goes on from the fit
            _continue_fitted(estimator, stream, model, settings, dense_calls, dtype)
    carry = stream.solver
    call = stream.n_calls
    # solve: the call's epoch of the schedule
    with jax.enable_x64(estimator.dtype == "float64"):
        data = pruning_data(X, y_codes, groups_, sw, G, dtype)
        data = data._replace(shares=group_weight / group_weight.sum())
        rng = copy.deepcopy(carry.rngs[1])  # kept only if the call succeeds
        sampler = EpochSampler(X.shape[0], estimator.batch_size, rng)
        if call < dense_calls:
            outcome = _stream_dense_epoch(model, settings, data, carry, sampler, call)
        else:
            outcome = _stream_finetune_epoch(
                model, settings, data, carry, sampler, call - dense_calls, estimator
            )
        state, masks, reference, iterations = outcome
        bad = _diverged(state, final=True)
        if bad is not None:
            raise ValueError(
                f"{type(estimator).__name__}.partial_fit: the iterates became non-finite "
                f"(NaN/inf) by step {bad} of call {call}; the estimator is unchanged. "
                "Scale the features (e.g. StandardScaler) or lower the learning rates."
            )
        params = host_layers(model, state.x)
    # store
    carry.state = jax.tree_util.tree_map(np.asarray, state)
    carry.masks = masks
    carry.rngs[1] = rng
    carry.n_iter += iterations
    stream.n_calls += 1
    estimator._stream_state = stream
    estimator.classes_, estimator.groups_ = stream.classes, labels
    estimator.params_ = params
    estimator.masks_ = masks
    estimator.dense_params_ = params if carry.dense_params is None else carry.dense_params
    estimator.sparsity_, estimator.layer_sparsity_ = layer_sparsity(masks, settings.prunable)
    estimator.multipliers_ = np.asarray(state.lam)
    if reference is None:  # dense phase: the current model is its own reference
        reference = reference_statistics(params, data)
    estimator._store_train_gaps(reference, X, y_codes, groups_, sw, labels)
    store_result(estimator, n_iter=carry.n_iter)  # no history_ for a stream
    estimator.best_epoch_ = estimator.validation_score_ = None
    estimator.dense_step_size_factor_ = None if estimator.dense_model is not None else 1.0
    estimator.step_size_factor_ = 1.0
    return estimator


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
    carry = stream.solver
    carry.state = jax.tree_util.tree_map(np.asarray, state)
    carry.masks = [m.copy() for m in estimator.masks_]
    carry.dense_params = estimator.dense_params_
    carry.n_iter = estimator.n_iter_
    stream.n_calls = dense_calls + max(settings.n_epochs, 1)


def _stream_dense_epoch(model, settings, data, carry: PrunedCarry, sampler, epoch):
    """Dense pre-training epoch ``epoch`` of a stream, from the carried state. Returns
    ``(state, masks, reference=None, fine-tuning iterations=0)``."""
    x_init = jnp.asarray(carry.x_init)
    dtype = x_init.dtype
    state = carry.state
    if state is None:
        state = initial_state(
            x_init, data.num_groups, settings.buffer_size, settings.dual_optimizer
        )
    state = jax.tree_util.tree_map(jnp.asarray, state)
    ref = _reference_zero(data.shares, data.num_groups, dtype)
    aux = _phase_aux(ref, jax.device_put(np.ones(x_init.shape, x_init.dtype)), False)
    hyper = _dense_hyper(dtype, settings)
    lr = _dense_learning_rate(epoch, settings)
    state = _stream_epoch(model, settings, data, state, aux, hyper, sampler, lr)
    masks = [np.ones((a, b)) for a, b in zip(model.sizes[:-1], model.sizes[1:])]
    return state, masks, None, 0


def _running_reference(carry: PrunedCarry, dense_params, data: PruningData) -> dict:
    """The dense model's weighted accuracy and loss, overall and per group, as running
    means over the chunks seen since fine-tuning began (this one included)."""
    z = numpy_forward(dense_params, data.X)
    correct, loss = correct_predictions(z, data.y_codes), cross_entropy_host(z, data.y_codes)
    w = np.ones(data.X.shape[0]) if data.sample_weight is None else data.sample_weight
    G = data.num_groups
    sums = np.stack(
        [
            np.bincount(data.groups, w * correct, minlength=G),
            np.bincount(data.groups, w * loss, minlength=G),
            np.bincount(data.groups, w, minlength=G),
        ]
    )
    total = carry.reference_sums = carry.reference_sums + sums
    per_group = np.divide(total[:2], total[2], out=np.zeros((2, G)), where=total[2] > 0)
    overall = total[:2].sum(axis=1) / total[2].sum()
    return {"acc": overall[0], "acc_g": per_group[0], "loss": overall[1], "loss_g": per_group[1]}


def _stream_finetune_epoch(model, settings, data, carry: PrunedCarry, sampler, epoch, estimator):
    """Fine-tuning epoch ``epoch`` (pruning included) of a stream. Returns ``(state,
    masks, reference, iterations)``."""
    dtype = jnp.asarray(carry.x_init).dtype
    if epoch == 0:  # the dense model is final: the fine-tuning starts from it
        if estimator.dense_model is not None:
            x_dense = dense_start(estimator, model, dtype)
        else:
            x_dense = jnp.asarray(carry.state.x)
        carry.dense_params = host_layers(model, x_dense)
        carry.state = initial_state(
            x_dense, data.num_groups, settings.buffer_size, settings.dual_optimizer
        )
        carry.masks = [np.ones((a, b)) for a, b in zip(model.sizes[:-1], model.sizes[1:])]
    reference = _running_reference(carry, carry.dense_params, data)
    ref = _reference_zero(data.shares, data.num_groups, dtype, reference)
    state = jax.tree_util.tree_map(jnp.asarray, carry.state)
    masks, mask, state, constrained = _epoch_masks(
        epoch, settings, model, state, carry.masks, dtype
    )
    hyper = _hyper(
        dtype, settings.momentum, settings.alpha, settings.tolerance, settings.dual_learning_rate
    )
    aux = _phase_aux(ref, mask, constrained)
    lr = _finetune_learning_rate(epoch, settings)
    state = _stream_epoch(model, settings, data, state, aux, hyper, sampler, lr)
    return state, masks, reference, sampler.iters_per_epoch


def _stream_epoch(model, settings, data, state, aux, hyper, sampler, learning_rate: float):
    """One epoch of a stream (a ``partial_fit`` call) on the driver, at ``learning_rate``."""
    return run_epochs(
        _config(model, data.num_groups, settings),
        settings.record_every > 0,
        state,
        data.device,
        aux,
        hyper,
        sampler,
        epochs=range(1),
        learning_rate=lambda epoch: learning_rate,
        before=None,
        after=_ignore_epoch,
    )


def _ignore_epoch(epoch, state, log, learning_rate):
    """``after`` of an epoch whose log and progress nobody reads."""
