"""(DP-)SGDA of the FERMI objective on the solver contract of the constrained engine.

A solver is pure functions over a NamedTuple state (:mod:`fairest.constrained._engine.
_contract`): :func:`init` (the state at ``(theta0, W0)``), :func:`step` (one simultaneous
descent-ascent step, :func:`_sgda_step`) and :func:`params` (the
returned iterate: the last, a uniformly drawn one or the tail average). :func:`drive` is
the iteration loop: jitted chunks of whole epochs (:func:`chunk_epochs`; the first one
also prepares the data, one compiled program serves every later chunk of a fit), each a
``lax.scan`` through the engine's
:func:`~fairest._solvers._guard.guarded_scan` (finiteness of ``(theta, W)``
checked on device every few iterations). Between chunks the host reads the previous
chunk's divergence flag (one synchronisation per chunk, while the device runs the next
one), stops after a divergence and reports the epochs done to ``progress``.

The random streams are those of spec 11 and do not depend on the chunking: iteration
``it`` uses ``fold_in(k, it)`` of the batch, theta-noise and W-noise keys, epoch ``e`` of
``batching="shuffle"`` the permutation of ``fold_in(k_batch, e)``; the keys of a chunk's
iterations are derived in one vectorised call before its loop.

The step itself (:func:`_sgda_step`, with its per-sample constants :func:`_batch_constants`
and traced hyper-parameters :class:`SGDAHyper`) is here too; the objective's kernels are
in :mod:`fairest.ermi._kernels`.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest._kernels._sparse import squared_row_norms, take_rows
from fairest._solvers._guard import guarded_scan, refit_on_divergence
from fairest.ermi._defaults import SGDA_TUNING
from fairest.ermi._kernels import Strata, loss_and_logit_grad, probabilities, saddle_logit_grad
from fairest.ermi._sampling import uniform_subset

__all__ = [
    "SGDAHyper",
    "SgdaConfig",
    "SgdaData",
    "SgdaState",
    "chunk_epochs",
    "config",
    "drive",
    "init",
    "project_ball",
    "params",
    "refit",
    "step",
]


class SGDAHyper(NamedTuple):
    """Traced hyper-parameters of SGDA (changing them never recompiles)."""

    lam: jax.Array
    lr_theta: jax.Array
    lr_w: jax.Array
    radius: jax.Array
    clip_sample: jax.Array  # per-sample clipping norm; inf disables
    clip_batch: jax.Array  # clipping norm of the averaged gradient; inf disables
    sigma_theta: jax.Array  # effective noise stds (spec 6.6)
    sigma_w: jax.Array
    alpha: jax.Array  # L2 strength on the coefficients (not the intercept)
    # per-sample clipping norm of the lam-scaled ERMI part of the theta-gradient (the part
    # that depends on s, privacy_unit="sensitive"); inf disables
    clip_fairness: jax.Array = float("inf")


def project_ball(W, radius):
    """Project every block ``W[t]`` on the Frobenius ball of the given radius (spec 5.3.6)."""
    norms = jnp.sqrt(jnp.sum(W * W, axis=(1, 2), keepdims=True))
    return W * jnp.minimum(1.0, radius / jnp.maximum(norms, jnp.finfo(W.dtype).tiny))


def _batch_constants(X, y, s, t, weight, strata: Strata):
    """Per-sample constants of the SGDA step, computed once per fit instead of once per step.

    Returns ``(floats, ints)``: ``floats`` (n, 5) holds the sample weight, the label as a
    float, ``1 + ||x_i||^2`` (for the per-sample gradient norms, spec 3.3),
    ``omega_t / sqrt(p_S|t(s_i))`` and ``omega_t``; ``ints`` (n, 3) holds the label, the
    cell ``t * k + s`` and the stratum. A minibatch then needs one gather of each.
    """
    k = strata.inv_sqrt_p.shape[1]
    row_sq = 1.0 + squared_row_norms(X.astype(weight.dtype))  # O(nnz) for sparse X
    omega = strata.omega[t]
    floats = jnp.stack(
        [weight, y.astype(weight.dtype), row_sq, omega * strata.inv_sqrt_p[t, s], omega], axis=1
    )
    ints = jnp.stack([y, t * k + s, t], axis=1).astype(jnp.int32)
    return floats, ints


def _clip_factor(norms, clip):
    """``min(1, clip / norm)`` per entry (exactly 1.0 below the clip or when it is inf)."""
    return jnp.where(norms > clip, clip / jnp.maximum(norms, 1e-300), 1.0)


def _sgda_step(
    theta, W, idx, valid, keys, X, floats, ints, strata: Strata, hyper: SGDAHyper, binary, record
):
    """One simultaneous DP-SGDA step on the minibatch ``idx`` (rows with ``valid = 0`` ignored).

    ``X`` may be float32: the two minibatch products (logits and the summed theta-gradient)
    then run in float32 while theta, W, the per-sample terms and the noise stay float64.
    ``keys`` are this step's (theta-noise, W-noise) keys.
    """
    n_strata, k, l = W.shape
    k_theta, k_w = keys
    Xb = take_rows(X, idx)  # indices in range: no bounds handling; sparse X gives its rows
    fb, ib = take_rows(floats, idx), take_rows(ints, idx)
    cb = fb[:, 0] * valid
    row_sq, scale, omega = fb[:, 2], fb[:, 3], fb[:, 4]
    yb, cell, tb = ib[:, 0], ib[:, 1], ib[:, 2]
    m_eff = jnp.sum(valid)
    Z = (Xb @ theta[1:].astype(X.dtype)).astype(theta.dtype) + theta[0]
    F = probabilities(Z, binary)
    # c_ij = omega_t (-sum_r W_{t,rj}^2 + 2 W_{t,s_i j} / sqrt(p_S|t(s_i)))   (spec 3.3)
    squares = jnp.sum(W * W, axis=1)  # (n_strata, l)
    coefficients = 2.0 * scale[:, None] * W.reshape(n_strata * k, l)[cell]
    coefficients = coefficients - omega[:, None] * (squares[:1] if n_strata == 1 else squares[tb])
    if binary:
        dloss = (F[:, 1] - fb[:, 1])[:, None]
    else:
        dloss = F - jax.nn.one_hot(yb, l, dtype=F.dtype)
    fair = hyper.lam * saddle_logit_grad(F, coefficients, binary)
    # per-sample clip of the s-dependent part alone (a no-op, factor 1.0, when inf)
    fair_norms = jnp.sqrt(jnp.sum(fair * fair, axis=1) * row_sq)
    fair = fair * _clip_factor(fair_norms, hyper.clip_fairness)[:, None]
    A = cb[:, None] * (dloss + fair)
    # per-sample clipping: ||(1, x_i) a_i^T|| = ||a_i|| ||(1, x_i)|| (spec 3.3)
    norms = jnp.sqrt(jnp.sum(A * A, axis=1) * row_sq)
    A = A * _clip_factor(norms, hyper.clip_sample)[:, None]
    grad_b = jnp.sum(A, axis=0) / m_eff  # intercept row, (q,)
    grad_c = (A.T.astype(X.dtype) @ Xb).T.astype(theta.dtype) / m_eff  # coefficient rows, (d, q)
    grad_norm = jnp.sqrt(jnp.sum(grad_b * grad_b) + jnp.sum(grad_c * grad_c))
    factor = jnp.where(
        grad_norm > hyper.clip_batch, hyper.clip_batch / jnp.maximum(grad_norm, 1e-300), 1.0
    )
    noise_theta = jax.random.normal(k_theta, theta.shape, theta.dtype)
    b_new = theta[0] - hyper.lr_theta * (grad_b * factor + hyper.sigma_theta * noise_theta[0])
    c_new = theta[1:] - hyper.lr_theta * (
        grad_c * factor + hyper.alpha * theta[1:] + hyper.sigma_theta * noise_theta[1:]
    )
    theta_new = jnp.concatenate([b_new[None, :], c_new], axis=0)
    # batch mean of grad_W psi_i: -2 W_t diag(sum omega F) + 2 sum (scale e(s_i)) F_i^T (spec 3.3)
    weighted = cb[:, None] * F
    if n_strata == 1:
        diag_sums = jnp.sum(omega[:, None] * weighted, axis=0)[None, :]
    else:
        diag_sums = jax.ops.segment_sum(omega[:, None] * weighted, tb, num_segments=n_strata)
    lin_sums = jax.ops.segment_sum(scale[:, None] * weighted, cell, num_segments=n_strata * k)
    grad_W = (
        hyper.lam * (-2.0 * W * diag_sums[:, None, :] + 2.0 * lin_sums.reshape(W.shape)) / m_eff
    )
    noise_w = jax.random.normal(k_w, W.shape, W.dtype)
    W_new = (W + hyper.lr_w * (grad_W + hyper.sigma_w * noise_w)) * strata.mask[:, :, None]
    W_new = project_ball(W_new, hyper.radius)
    if not record:
        return theta_new, W_new, None
    loss, _ = loss_and_logit_grad(Z, yb, binary)
    psi = jnp.sum(coefficients * F, axis=1) - omega
    return (
        theta_new,
        W_new,
        (jnp.sum(cb * loss) / m_eff, jnp.sum(cb * psi) / m_eff, jnp.sqrt(jnp.sum(W_new * W_new))),
    )


class SgdaConfig(NamedTuple):
    """Static configuration of SGDA (compiled into the chunk; hashable)."""

    binary: bool
    n: int  # rows batches are drawn from (the first ones of the arrays)
    m: int  # minibatch size
    steps: int  # iterations per epoch, ceil(n / m)
    batching: str  # "uniform" or "shuffle"
    record: bool  # per-iteration records (batch loss, batch Psi, ||W||_F)
    random_iterate: bool
    average: bool

    @property
    def sampled(self) -> bool:
        """Uniform m-subsets drawn in the step (else blocks of a per-epoch permutation)."""
        return self.batching == "uniform" and self.m < self.n


class SgdaData(NamedTuple):
    """What a step reads besides its state (traced): the data, the per-sample constants
    of :func:`_batch_constants`, the hyper-parameters, the stream
    keys, the drawn iterate ``tau`` and the first averaged iteration (of T iterations)."""

    X: object  # dense array, ShiftedRows or SparseRows
    floats: jax.Array
    ints: jax.Array
    strata: Strata
    hyper: SGDAHyper
    k_batch: jax.Array
    k_theta: jax.Array
    k_w: jax.Array
    tau: jax.Array  # random_iterate: theta_tau is returned, tau uniform on 1..T
    average_from: jax.Array  # average: iterations it >= T // 2 are averaged
    n_iter: jax.Array  # T


class SgdaState(NamedTuple):
    """State of SGDA: the iterate, the drawn iterate, the tail sums and the sampler's
    scratch array (``owner``, empty unless uniform m-subsets are drawn)."""

    theta: jax.Array  # (d + 1, q) intercept row first
    W: jax.Array  # (n_strata, n_groups, n_classes)
    chosen: jax.Array  # theta_tau once iteration tau is reached
    sum_theta: jax.Array  # sums of the averaged iterates
    sum_W: jax.Array
    owner: jax.Array  # int32 scratch of uniform_subset, carried between steps


def config(
    binary: bool, n: int, m: int, batching: str, record: bool, random_iterate: bool, average: bool
) -> SgdaConfig:
    """The :class:`SgdaConfig` of minibatches of ``m`` of the first ``n`` rows."""
    return SgdaConfig(binary, n, m, -(-n // m), batching, record, random_iterate, average)


def chunk_epochs(n_epochs: int, steps: int, m: int) -> int:
    """Epochs per chunk: the largest divisor of ``n_epochs`` whose chunk draws at most
    ``SGDA_TUNING.chunk_rows`` rows (``m`` per iteration), at least 1. A divisor, so every
    chunk of a fit has the same length and one compilation serves them all."""
    most = max(1, SGDA_TUNING.chunk_rows // max(1, steps * m))
    return max(e for e in range(1, min(most, n_epochs) + 1) if n_epochs % e == 0)


def _prepare(theta0, W0, X, y, s, t, weight, strata, hyper, key, n_iter, config):
    """The initial state and the step data: the per-sample constants, the stream keys
    (one per purpose, spec 11) and ``tau`` (traced in the first chunk)."""
    k_batch, k_theta, k_w, k_iterate = jax.random.split(key, 4)
    tau = jax.random.randint(k_iterate, (), 1, n_iter + 1)
    floats, ints = _batch_constants(X, y, s, t, weight, strata)
    data = SgdaData(X, floats, ints, strata, hyper, k_batch, k_theta, k_w, tau, n_iter // 2, n_iter)
    return init(theta0, W0, config), data


def init(theta0, W0, config: SgdaConfig) -> SgdaState:
    """The state at ``(theta0, W0)``: sums 0, the sampler's scratch all sentinels."""
    size = config.n if config.sampled else 0
    return SgdaState(
        theta=theta0,
        W=W0,
        chosen=theta0,
        sum_theta=jnp.zeros_like(theta0),
        sum_W=jnp.zeros_like(W0),
        owner=jnp.full(size, jnp.iinfo(jnp.int32).max, jnp.int32),
    )


def step(state: SgdaState, inp: dict, data: SgdaData, config: SgdaConfig):
    """One SGDA iteration ``inp["it"]``: its minibatch (drawn here from ``inp["batch_key"]``
    for uniform m-subsets, else ``inp["idx"]`` / ``inp["valid"]``), the step, the drawn
    iterate and the tail sums. Returns ``(state, record)`` (``record`` None unless
    ``config.record``)."""
    owner = state.owner
    if config.sampled:
        idx, owner = uniform_subset(inp["batch_key"], owner, config.n, config.m, inp["round0"])
        valid = jnp.ones(config.m, data.floats.dtype)
    else:
        idx, valid = inp["idx"], inp["valid"]
    theta, W, record = _sgda_step(
        state.theta,
        state.W,
        idx,
        valid,
        (inp["k_theta"], inp["k_w"]),
        data.X,
        data.floats,
        data.ints,
        data.strata,
        data.hyper,
        config.binary,
        config.record,
    )
    chosen, sum_theta, sum_W = state.chosen, state.sum_theta, state.sum_W
    it = inp["it"]
    if config.random_iterate:
        chosen = jnp.where(it + 1 == data.tau, theta, chosen)
    if config.average:
        use = it >= data.average_from
        sum_theta = sum_theta + jnp.where(use, theta, 0.0)
        sum_W = sum_W + jnp.where(use, W, 0.0)
    return SgdaState(theta, W, chosen, sum_theta, sum_W, owner), record


def params(state: SgdaState, n_iter: int, config: SgdaConfig):
    """The returned ``(theta, W)`` after ``n_iter`` iterations: the tail average
    (``average``: the last ``n_iter - n_iter // 2`` iterates), ``(theta_tau, W_T)``
    (``random_iterate``) or the last iterate."""
    if config.average:
        count = n_iter - n_iter // 2
        return state.sum_theta / count, state.sum_W / count
    return (state.chosen if config.random_iterate else state.theta), state.W


def _chunk_inputs(e0, data: SgdaData, config: SgdaConfig, epochs: int) -> dict:
    """Per-iteration inputs of epochs ``e0 .. e0 + epochs - 1``: the iteration numbers,
    their noise keys and their batches (keys of uniform m-subsets, or the blocks of every
    epoch's permutation, the last partial block padded with invalid rows, spec 5.3.1)."""
    steps, n, m = config.steps, config.n, config.m
    its = e0 * steps + jnp.arange(epochs * steps)
    fold = jax.vmap(jax.random.fold_in, in_axes=(None, 0))
    inputs = {"it": its, "k_theta": fold(data.k_theta, its), "k_w": fold(data.k_w, its)}
    if config.sampled:
        batch_keys = fold(data.k_batch, its)
        inputs["batch_key"] = batch_keys
        inputs["round0"] = jax.vmap(jax.random.fold_in, in_axes=(0, None))(batch_keys, 0)
        return inputs
    padded = steps * m

    def blocks(e):
        if config.batching == "uniform":  # m >= n: every step is the full data set
            perm = jnp.arange(n)
        else:
            perm = jax.random.permutation(jax.random.fold_in(data.k_batch, e), n)
        return jnp.concatenate([perm, jnp.zeros(padded - n, perm.dtype)]).reshape(steps, m)

    # one permutation per epoch, as a loop (not vmapped: rbg bits under vmap may differ)
    idx = jax.lax.map(blocks, e0 + jnp.arange(epochs))
    valid = (jnp.arange(padded) < n).astype(data.floats.dtype).reshape(steps, m)
    inputs["idx"] = idx.reshape(epochs * steps, m)
    inputs["valid"] = jnp.tile(valid, (epochs, 1))
    return inputs


def _chunk_body(carry, e0, data: SgdaData, config: SgdaConfig, epochs: int):
    """``epochs`` epochs from epoch ``e0`` as one guarded ``lax.scan``; ``carry = (state,
    bad)``, ``bad`` -1 while ``(theta, W)`` were finite at every check, else the last
    iteration of the first block after which they were not. Iterations after a
    divergence still run (the run is discarded); nothing leaves the device. Also returns
    :func:`params` of the chunk's last state (the fit's result after its last chunk)."""
    inputs = _chunk_inputs(e0, data, config, epochs)

    def body(state, inp, bad):
        return step(state, inp, data, config)

    carry, record = guarded_scan(
        body,
        *carry,
        inputs,
        parameters=lambda st: (st.theta, st.W),
        iteration=lambda st, inp: inp["it"][-1].astype(jnp.int32),
    )
    return carry, record, params(carry[0], data.n_iter, config)


@partial(jax.jit, static_argnames=("config", "epochs"))
def _chunk(carry, e0, data: SgdaData, *, config: SgdaConfig, epochs: int):
    """A later chunk (:func:`_chunk_body`) of epochs from ``e0``."""
    return _chunk_body(carry, e0, data, config, epochs)


@partial(jax.jit, static_argnames=("config", "epochs"))
def _first_chunk(theta0, W0, X, y, s, t, weight, strata, hyper, key, n_iter, *, config, epochs):
    """:func:`_prepare` and the first chunk in one program (a fit of one chunk, every
    small fit, compiles nothing else). Returns the prepared data without the inputs it
    holds (``X``, ``strata``, ``hyper``: the caller has them), then the chunk's outputs."""
    state, data = _prepare(theta0, W0, X, y, s, t, weight, strata, hyper, key, n_iter, config)
    out = _chunk_body((state, jnp.asarray(-1, jnp.int32)), 0, data, config, epochs)
    return (data._replace(X=None, strata=None, hyper=None), *out)


class Outcome(NamedTuple):
    """Result of :func:`drive` (host arrays)."""

    theta: np.ndarray  # the returned iterate (params)
    W: np.ndarray
    history: tuple | None  # (batch loss, batch Psi, ||W||_F) per iteration, or None
    last: tuple  # (theta_T, W_T), where a stream resumes
    nonfinite: int | None  # the iteration by which the iterates were not finite


def drive(theta0, W0, X, y, s, t, weight, strata, hyper, key, config, n_epochs, progress=None):
    """Run ``n_epochs`` epochs of SGDA (call under ``jax.enable_x64``) in chunks of
    :func:`chunk_epochs` epochs; ``progress(epochs done, n_epochs)`` is called between
    chunks and at the end. Stops one chunk after a divergence. Returns an
    :class:`Outcome`."""
    n_iter = n_epochs * config.steps
    epochs = chunk_epochs(n_epochs, config.steps, config.m)
    computed, (state, bad), record, returned = _first_chunk(
        theta0,
        W0,
        X,
        y,
        s,
        t,
        weight,
        strata,
        hyper,
        key,
        np.int64(n_iter),
        config=config,
        epochs=epochs,
    )
    data = computed._replace(X=X, strata=strata, hyper=hyper)
    records, done, previous = [record], epochs, bad
    while done < n_epochs:
        # the previous chunk's flag is read while the device runs the next one
        (state, bad), record, returned = _chunk(
            (state, bad), np.int64(done), data, config=config, epochs=epochs
        )
        records.append(record)
        if int(previous) >= 0:
            break
        if progress is not None:
            progress(done, n_epochs)
        previous, done = bad, done + epochs
    nonfinite = int(bad)
    if progress is not None and nonfinite < 0:
        progress(n_epochs, n_epochs)
    theta, W = (np.asarray(a) for a in returned)
    if nonfinite < 0 and not (np.all(np.isfinite(theta)) and np.all(np.isfinite(W))):
        nonfinite = n_iter - 1  # the average of finite iterates overflowed
    history = None
    if config.record:
        history = tuple(np.concatenate([np.asarray(a) for a in parts]) for parts in zip(*records))
    last = (np.asarray(state.theta), np.asarray(state.W))
    return Outcome(theta, W, history, last, nonfinite if nonfinite >= 0 else None)


def refit(attempt, *, private: bool, owner: str, X):
    """``attempt(factor) -> Outcome`` (step sizes times ``factor``) until its iterates stay
    finite, by the engine's :func:`refit_on_divergence`. A private fit is not refitted: a
    second run would spend the privacy budget again, so its divergence raises."""

    def run(factor):
        if private and factor != 1.0:
            raise ValueError(
                f"{owner}: the iterates of the private SGDA became non-finite (NaN/inf) "
                "and a refit would spend the privacy budget again: scale the features "
                "(e.g. StandardScaler) or lower learning_rate / dual_learning_rate."
            )
        outcome = attempt(factor)
        return outcome, outcome.nonfinite

    outcome, _ = refit_on_divergence(owner, run, remedy="learning_rate / dual_learning_rate", X=X)
    return outcome
