"""Shared constrained-ERM engine (constrained spec section 1).

Layers (DESIGN section 1):

* models: :class:`MLP` (``hidden=()`` is the linear / logistic model) with PyTorch's
  ``nn.Linear`` default initialisation ``Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for
  weights and biases (kaiming-uniform with ``a = sqrt(5)`` reduces to this bound);
* one per-sample loss / correctness kernel and per-group means through ``segment_sum``;
* host-side samplers (epoch shuffler, group-balanced cyclic streams, with-replacement) that
  pre-draw the indices of a whole chunk of iterations, so a chunk runs as one jitted
  ``lax.scan`` without host synchronisation;
* one solver contract (:class:`Solver`): pure ``init`` / ``step`` / ``parameters`` /
  ``diagnostics`` functions over a state dict holding a flat parameter vector
  (``ravel_pytree`` order: layer order, W before b), registered in one table,
  :data:`SOLVERS`: ``sgd``, ``penalty``, ``ssw``, ``ssl-alm`` / ``alm``, ``gda`` (generic
  proxy GDA) run as jitted scans; Stochastic Ghost (``ghost``) needs a QP per sample and
  runs a host loop over jitted derivative kernels;
* one driver (:func:`run_solver`) for all of them: samplers, guarded scans, finiteness
  checks, history, budget; :func:`solve` adds the refits after a divergence;
  :func:`run_lanes` runs a scan solver ``vmap``-ped over several values of its traced
  problem data (a tolerance path: one host loop and one set of draws for every value).

Problems are objects with ``objective(x, batch, aux) -> scalar`` (mean over the weighted
rows of ``batch``) and ``constraints(x, batch, aux) -> (m,)`` (written ``C(x) <= 0``);
``batch.g`` holds group codes for objective batches and constraint *cells* for constraint
draws. ``aux`` carries traced problem data (bounds, constraint matrices), so changing a
tolerance never recompiles. Sample weights reach a problem as per-row loss scales
``batch.s`` (``None`` when unweighted, which runs the unweighted code unchanged); the
samplers stay uniform. Solver parameters (``hyper``) use the public ``solver_params``
names of ``LossGapConstrainedClassifier``.

Every solver guards against divergence: the scans carry a flag, the iteration by which
the parameters were not finite (one ``isfinite`` reduction every few iterations,
:func:`guarded_scan`; no host synchronisation), and skip the iterations after it; the
host loop stops one chunk later, checks the whole final state, and :func:`run_solver`
reports the iteration as ``RunResult.extras["nonfinite_iter"]``; :func:`solve` (and
:func:`refit_on_divergence` for the phases of ``PrunedFairClassifier``) refits with
smaller steps or raises.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax import lax
from sklearn.exceptions import ConvergenceWarning

from fairest._kernels import bucket_size
from fairest._kernels._buckets import aligned_empty
from fairest.constrained import _defaults
from fairest.constrained._sparse import host_matmul, largest_magnitude, place_with_design
from fairest.utils._compilation_cache import compile_in_background
from fairest.utils._memory import release_free_memory
from fairest.utils._reporting import as_history

__all__ = [
    "Batch",
    "MLP",
    "per_sample_stats",
    "group_means",
    "EpochSampler",
    "GroupSampler",
    "spawn_rngs",
    "GenericProblem",
    "Solver",
    "SOLVERS",
    "run_solver",
    "run_lanes",
    "run_fold_lanes",
    "FoldRun",
    "solve",
    "refit_on_divergence",
    "loss_scales",
    "RunResult",
    "ghost_subproblem",
    "ghost_kappa",
]


# ------------------------------------------------------------------------------------------
# model
# ------------------------------------------------------------------------------------------


class Batch(NamedTuple):
    """Rows of one sample; ``w`` is 0 on padding rows.

    ``s`` (``None`` for unweighted data) scales each row's loss: its sample weight divided
    by the mean weight of the population the row was drawn from (all rows for objective
    batches, its constraint cell for constraint draws), so a uniform draw's mean of the
    scaled losses is an unbiased estimate of the weighted mean loss.
    """

    X: jax.Array
    y: jax.Array
    g: jax.Array  # group codes (objective) or constraint cells (constraint draws)
    w: jax.Array
    s: jax.Array | None = None


@dataclass(frozen=True)
class MLP:
    """Dense ReLU network ``n_features -> hidden... -> n_outputs`` (spec 1.1).

    Parameters are a list of ``(W, b)`` with ``W`` of shape ``(fan_in, fan_out)``.
    """

    n_features: int
    hidden: tuple
    n_outputs: int

    @property
    def sizes(self) -> tuple:
        return (self.n_features, *self.hidden, self.n_outputs)

    def init(self, rng: np.random.Generator, dtype) -> list:
        """PyTorch ``nn.Linear`` default init: W and b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        return [(jnp.asarray(W), jnp.asarray(b)) for W, b in self.init_host(rng, dtype)]

    def init_host(self, rng: np.random.Generator, dtype) -> list:
        """The draws of :meth:`init` as host arrays of ``dtype`` (cast on the host: no
        device program)."""
        real = np.dtype(dtype)
        params = []
        for d_in, d_out in zip(self.sizes[:-1], self.sizes[1:]):
            bound = 1.0 / np.sqrt(d_in)
            W = rng.uniform(-bound, bound, size=(d_in, d_out))
            b = rng.uniform(-bound, bound, size=(d_out,))
            params.append((W.astype(real), b.astype(real)))
        return params

    def init_flat(self, rng: np.random.Generator, dtype) -> np.ndarray:
        """:meth:`init_host` raveled on the host (``ravel_pytree`` order: layer order, W
        row-major before b)."""
        layers = self.init_host(rng, dtype)
        return np.concatenate([np.concatenate([W.ravel(), b.ravel()]) for W, b in layers])

    @staticmethod
    def apply(params, X, masks=None):
        """Logits of shape ``(n, n_outputs)``; weights are multiplied by ``masks`` if given."""
        h = X
        last = len(params) - 1
        for layer, (W, b) in enumerate(params):
            if masks is not None:
                W = W * masks[layer]
            h = h @ W + b
            if layer < last:
                h = jax.nn.relu(h)
        return h


# rows per block of the host forward pass: its hidden activations (n x 64 float64 for the
# default network, with temporaries) are held for one block at a time, not for all of X
FORWARD_BLOCK_ROWS = 65_536


def numpy_forward(params, X) -> np.ndarray:
    """Host forward pass in float64 (prediction is group-blind and needs no JAX); ``X``
    dense or scipy sparse (never densified: the first layer is a sparse product). Dense
    ``X`` is read in blocks of ``FORWARD_BLOCK_ROWS`` rows (only the logits are whole)."""
    n = X.shape[0]
    if sp.issparse(X) or n <= FORWARD_BLOCK_ROWS or len(params) < 2:
        return _forward_rows(params, X)
    blocks = [
        _forward_rows(params, X[start : start + FORWARD_BLOCK_ROWS])
        for start in range(0, n, FORWARD_BLOCK_ROWS)
    ]
    return np.concatenate(blocks)


def _forward_rows(params, X) -> np.ndarray:
    h = X
    last = len(params) - 1
    for layer, (W, b) in enumerate(params):
        h = host_matmul(h, W) + np.asarray(b, dtype=np.float64)
        if layer < last:
            h = np.maximum(h, 0.0)
    return h


def per_sample_stats(logits, y):
    """Per-sample loss, correctness (0/1) and probability of the true class.

    One output column: BCE-with-logits ``softplus(z) - y z`` with ``y`` in {0, 1}; several:
    softmax cross-entropy with integer labels (spec 0).
    """
    if logits.shape[-1] == 1:
        z = logits[:, 0]
        yf = y.astype(z.dtype)
        loss = jnp.logaddexp(0.0, z) - yf * z
        correct = ((z > 0) == (yf > 0.5)).astype(z.dtype)
        p = jax.nn.sigmoid(z)
        p_true = yf * p + (1.0 - yf) * (1.0 - p)
        return loss, correct, p_true
    yi = y.astype(jnp.int32)
    lse = jax.nn.logsumexp(logits, axis=1)
    z_true = jnp.take_along_axis(logits, yi[:, None], axis=1)[:, 0]
    correct = (jnp.argmax(logits, axis=1) == yi).astype(logits.dtype)
    return lse - z_true, correct, jnp.exp(z_true - lse)


def group_means(values, g, w, num_groups: int):
    """Weighted per-group means of ``values`` (n,), the counts and ``present`` (spec 1.2).

    Groups without weight get mean 0 and ``present = False``.
    """
    gid = jnp.clip(g, 0, num_groups - 1)
    counts = jax.ops.segment_sum(w, gid, num_segments=num_groups)
    sums = jax.ops.segment_sum(w * values, gid, num_segments=num_groups)
    present = counts > 0
    return jnp.where(present, sums / jnp.where(present, counts, 1.0), 0.0), counts, present


def weighted_mean(values, w):
    return jnp.sum(w * values) / jnp.maximum(jnp.sum(w), jnp.finfo(values.dtype).tiny)


# ------------------------------------------------------------------------------------------
# samplers (spec 1.3)
# ------------------------------------------------------------------------------------------


def spawn_rngs(random_state, n: int = 4) -> list[np.random.Generator]:
    """Independent generators in the fixed order (model init, objective sampler, constraint
    sampler, solver-internal), spawned from ``random_state`` (spec 1.3)."""
    if isinstance(random_state, np.random.Generator):
        seed = int(random_state.integers(2**63))
    elif isinstance(random_state, np.random.RandomState):
        seed = int(random_state.randint(2**31 - 1))
    else:
        seed = random_state
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


class EpochSampler:
    """Objective minibatches: permute all rows each epoch, cut consecutive batches; the
    last batch of an epoch is short (padded with weight 0). ``batch_size=None`` is
    full-batch mode (one iteration per epoch, no indices)."""

    def __init__(self, n: int, batch_size: int | None, rng: np.random.Generator):
        self.n, self.batch_size, self.rng = n, batch_size, rng
        self.full = batch_size is None
        self.batch_width = n if self.full else min(batch_size, n)
        self.iters_per_epoch = 1 if self.full else -(-n // self.batch_width)

    def epoch(self):
        """Indices (T, b) and weights (T, b) of one epoch; ``None`` in full-batch mode."""
        if self.full:
            return None, None
        b, T = self.batch_width, self.iters_per_epoch
        idx = np.zeros(T * b, dtype=np.int32)
        idx[: self.n] = self.rng.permutation(self.n)
        w = np.zeros(T * b)
        w[: self.n] = 1.0
        return idx.reshape(T, b), w.reshape(T, b)


class GroupSampler:
    """Equal number of rows per cell per draw (spec 1.3).

    ``mode="reshuffle"``: one cyclic permutation stream per cell, reshuffled whenever it is
    exhausted. ``"replay"``: the released code's ``itertools.cycle`` behaviour (the first
    shuffled pass repeats forever, the last batch of a pass is short). ``per_group=None``:
    every draw is all rows of every cell (no indices). Rows with cell code < 0 are never
    drawn.
    """

    def __init__(self, cells, n_cells: int, per_group, rng, mode: str = "reshuffle"):
        self.n_cells, self.per, self.rng, self.mode = n_cells, per_group, rng, mode
        self.full = per_group is None
        self.members = [np.flatnonzero(cells == c).astype(np.int32) for c in range(n_cells)]
        self.width = 0 if self.full else n_cells * per_group
        self._buffers = [np.zeros(0, dtype=np.int32) for _ in range(n_cells)]
        self._replay = [None] * n_cells
        self._pos = [0] * n_cells

    def _stream(self, c: int, count: int) -> np.ndarray:
        members = self.members[c]
        buf = self._buffers[c]
        pieces = [buf]
        total = buf.size
        while total < count:
            perm = members[self.rng.permutation(members.size)]
            pieces.append(perm)
            total += perm.size
        stream = np.concatenate(pieces)
        self._buffers[c] = stream[count:]
        return stream[:count]

    def draw(self, k: int, dtype=np.float64):
        """Indices and weights (0 or 1, in ``dtype``) of ``k`` draws, shape
        ``(k, n_cells * per_group)``."""
        if self.full:
            return None, None
        per = self.per
        idx = np.zeros((k, self.n_cells, per), dtype=np.int32)
        w = np.ones((k, self.n_cells, per), dtype=dtype)
        for c in range(self.n_cells):
            if self.mode == "reshuffle":
                idx[:, c, :] = self._stream(c, k * per).reshape(k, per)
                continue
            if self._replay[c] is None:
                self._replay[c] = self.members[c][self.rng.permutation(self.members[c].size)]
            perm = self._replay[c]
            n_batches = -(-perm.size // per)
            for j in range(k):
                start = (self._pos[c] % n_batches) * per
                rows = perm[start : start + per]
                idx[j, c, : rows.size] = rows
                w[j, c, rows.size :] = 0.0
                self._pos[c] += 1
        return idx.reshape(k, -1), w.reshape(k, -1)


class _ObjectiveStream:
    """Iteration stream of objective batches with epoch / in-epoch indices."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.epoch_no = -1
        self._idx = self._w = None
        self._t = 0
        self.T = sampler.iters_per_epoch

    def take(self, L: int):
        """The next ``L`` iterations' batches ``(idx, w)`` (``None`` in full-batch mode),
        epoch numbers and in-epoch indices: consecutive slices of the epochs' draws (an
        epoch is drawn when the first iteration past the previous one is taken)."""
        idx_out, w_out, epoch, t = [], [], np.zeros(L, np.int64), np.zeros(L, np.int64)
        i = 0
        while i < L:
            if self.epoch_no < 0 or self._t >= self.T:
                self.epoch_no += 1
                self._t = 0
                self._idx, self._w = self.sampler.epoch()
            k = min(L - i, self.T - self._t)
            epoch[i : i + k] = self.epoch_no
            t[i : i + k] = np.arange(self._t, self._t + k)
            if self._idx is not None:
                idx_out.append(self._idx[self._t : self._t + k])
                w_out.append(self._w[self._t : self._t + k])
            self._t += k
            i += k
        if not idx_out:
            return None, None, epoch, t
        return np.concatenate(idx_out), np.concatenate(w_out), epoch, t


class _BalancedEpochSampler:
    """Group-balanced objective batches (penalty baseline, spec 3.8): ``per`` rows of every
    group per batch from reshuffled group streams; an epoch is ``ceil(n / (per G))`` batches."""

    def __init__(self, groups, n_groups, batch_size, rng):
        self.per = max(1, batch_size // n_groups)
        self.inner = GroupSampler(groups, n_groups, self.per, rng)
        self.full = False
        self.batch_width = self.per * n_groups
        self.iters_per_epoch = -(-groups.size // self.batch_width)

    def epoch(self):
        return self.inner.draw(self.iters_per_epoch)


# ------------------------------------------------------------------------------------------
# problems
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GenericProblem:
    """User problem on a flat parameter vector (spec 1.4, generic constraint).

    ``objective(x, batch, aux)`` returns the mean objective on the weighted rows of
    ``batch``; ``constraints(x, batch, aux)`` returns ``(m,)`` values of ``C(x) <= 0``;
    ``surrogate`` (optional) is the differentiable proxy used in the primal step of
    ``gda``. Instances hash by identity, so a problem object reused across fits reuses
    the compiled code.
    """

    objective: Callable
    constraints: Callable
    m: int
    n_cells: int = 1
    surrogate: Callable | None = None

    def surrogate_or_value(self):
        return self.surrogate if self.surrogate is not None else self.constraints


class RunResult(NamedTuple):
    """Output of :func:`run_solver`: ``extras`` holds the solver's diagnostics
    (``Solver.diagnostics``: ``multipliers`` and ``slacks``, ``step_counts``,
    ``n_qp_failures``) and ``nonfinite_iter``, the first iteration whose iterates were not
    finite (``None`` when every iterate was finite)."""

    x: np.ndarray
    state: dict
    history: dict | None  # dict of numpy arrays; None without record_history
    n_iter: int
    n_epochs: float
    extras: dict


def all_finite(tree):
    """On device: whether every floating-point leaf of ``tree`` is finite (a bool scalar)."""
    leaves = [
        jnp.all(jnp.isfinite(leaf))
        for leaf in jax.tree_util.tree_leaves(tree)
        if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact)
    ]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)


def guard_block(length: int) -> int:
    """Iterations between two finiteness checks of :func:`guarded_scan`: the largest
    divisor of ``length`` up to ``_defaults.NONFINITE_CHECK_EVERY``."""
    block = max(1, min(_defaults.NONFINITE_CHECK_EVERY, length))
    while length % block:
        block -= 1
    return block


def guarded_scan(body, state, bad, inputs, *, parameters, iteration):
    """``lax.scan`` of ``body(state, inp, bad) -> (state, out)`` with a divergence guard.

    ``bad`` (an int32 scalar carried on device) is -1 while the parameters were finite at
    every check; the parameters (``parameters(state)``) are checked with one ``isfinite``
    reduction every :func:`guard_block` iterations (on CPU a reduction over a few
    thousand parameters costs a few percent of a small model's step), and on the first
    failure ``bad`` becomes ``iteration(state, inputs of the block)``, the block's last
    iteration.
    ``body`` reads ``bad`` to skip the iterations after it. Nothing leaves the device.
    Returns ``((state, bad), outputs)``, the outputs stacked as by ``lax.scan``.
    """
    n = jax.tree_util.tree_leaves(inputs)[0].shape[0]
    block = guard_block(n)

    def run_block(carry, inputs_block):
        st, bad = carry
        st, out = lax.scan(lambda s, inp: body(s, inp, bad), st, inputs_block)
        diverged = jnp.logical_and(bad < 0, ~all_finite(parameters(st)))
        return (st, jnp.where(diverged, iteration(st, inputs_block), bad)), out

    blocks = jax.tree_util.tree_map(lambda a: a.reshape((n // block, block) + a.shape[1:]), inputs)
    carry, out = lax.scan(run_block, (state, bad), blocks)
    return carry, jax.tree_util.tree_map(lambda a: a.reshape((n,) + a.shape[2:]), out)


# ------------------------------------------------------------------------------------------
# solver steps: pure ``step(state, inp, ctx, **options) -> (state, log)`` functions
# ------------------------------------------------------------------------------------------


def _rows(values, idx):
    """``values[idx]``, or ``None`` when there are no per-row values (unweighted data)."""
    return None if values is None else values[idx]


class _Ctx:
    """Context of a solver: data, problem aux, hyper-parameters, batch access.

    Traced inside a jitted chunk; on the host (``Solver.init``, host-loop steps) it also
    holds the random streams ``rngs`` and the number of data rows ``n_rows``.
    """

    def __init__(self, problem, data, aux, hyper, obj_full, con_full, rngs=None, n_rows=None):
        self.problem, self.data, self.aux, self.hyper = problem, data, aux, hyper
        self.obj_full, self.con_full = obj_full, con_full
        self.rngs, self.n_rows = rngs, n_rows

    def full_obj_batch(self):
        d = self.data
        return Batch(d["X"], d["y"], d["groups"], d["w"], d.get("s"))

    def full_con_batch(self):
        d = self.data
        return Batch(d["X"], d["y"], d["cells"], d["cw"], d.get("cs"))

    def obj_batch(self, inp):
        if self.obj_full:
            return self.full_obj_batch()
        d, idx = self.data, inp["obj_idx"]
        return Batch(
            d["X"][idx], d["y"][idx], d["groups"][idx], inp["obj_w"], _rows(d.get("s"), idx)
        )

    def con_batch(self, inp, k: int):
        if self.con_full:
            return self.full_con_batch()
        d, idx = self.data, inp[f"con_idx{k}"]
        return Batch(
            d["X"][idx], d["y"][idx], d["cells"][idx], inp[f"con_w{k}"], _rows(d.get("cs"), idx)
        )

    def f(self, x, batch):
        return self.problem.objective(x, batch, self.aux)

    def c(self, x, batch):
        return self.problem.constraints(x, batch, self.aux)


def _step_sgd(state, inp, ctx):
    lr = ctx.hyper["learning_rate"]
    f, g = jax.value_and_grad(ctx.f)(state["x"], ctx.obj_batch(inp))
    return {"x": state["x"] - lr * g}, {"objective": f, "step_size": lr}


def _step_penalty(state, inp, ctx):
    lr = ctx.hyper["learning_rate"]
    weight = ctx.hyper["fairness_weight"]
    batch = ctx.obj_batch(inp)

    def loss(x):
        f = ctx.f(x, batch)
        return f + weight * ctx.problem.penalty(x, batch, ctx.aux), f

    (_, f), g = jax.value_and_grad(loss, has_aux=True)(state["x"])
    return {"x": state["x"] - lr * g}, {"objective": f, "step_size": lr}


def _step_ssw(state, inp, ctx, *, f_rule: str, c_rule: str, reset: bool, shared_draw: bool = False):
    """One SSw iteration (spec 3.6); ``shared_draw`` [F] takes the constraint step on the
    draw of the switching test instead of an independent one."""
    h = ctx.hyper
    x = state["x"]
    counter_index = inp["t"] if reset else inp["it"]
    new_epoch = jnp.logical_and(reset, inp["t"] == 0)
    n_f = jnp.where(new_epoch, 0, state["n_f"])
    n_c = jnp.where(new_epoch, 0, state["n_c"])
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
    total = state["w_total"] + weight
    replace = jnp.logical_and(eligible, inp["u"] * total < weight)
    state = {
        "x": x_new,
        "n_f": n_f + jnp.where(take_constraint, 0, 1),
        "n_c": n_c + jnp.where(take_constraint, 1, 0),
        "x_out": jnp.where(replace, x, state["x_out"]),
        "w_total": total,
    }
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
    x, s, y, z_x, z_s = state["x"], state["s"], state["y"], state["z_x"], state["z_s"]
    f, f_grad = jax.value_and_grad(ctx.f)(x, ctx.obj_batch(inp))
    batch1 = ctx.con_batch(inp, 1)
    c1, c_vjp = jax.vjp(lambda z: ctx.c(z, batch1), x)
    y_new = y + h["dual_learning_rate"] * (c1 + s)
    y_new = jnp.where(jnp.linalg.norm(y_new) >= h["dual_radius"], 0.0, y_new)
    h2 = (c1 if shared_draw else ctx.c(x, ctx.con_batch(inp, 2))) + s
    G_x, G_s = _alm_direction(x, s, y_new, z_x, z_s, f_grad, c_vjp, h2, h)
    state = {
        "x": x - h["learning_rate"] * G_x,
        "s": jnp.maximum(s - h["learning_rate"] * G_s, 0.0),
        "y": y_new,
        "z_x": z_x + h["anchor_rate"] * (x - z_x),
        "z_s": z_s + h["anchor_rate"] * (s - z_s),
    }
    log = {"objective": f, "c": c1, "lambda": y_new, "slack": s, "step_size": h["learning_rate"]}
    return state, log


# rows per block of the final full-data step on large data: its network activations and
# their gradients are held for one block at a time, not for all rows at once (XLA's
# temporaries of the step grow with the block's rows)
FULL_STEP_BLOCK_ROWS = 16_384


def _full_step_blocks(ctx) -> int:
    """Row blocks the final full-data step reads ``X`` in; 0 to read it at once (small or
    sparse data, problems that are not sums of per-row losses)."""
    X = ctx.data["X"]
    n = X.shape[0]
    if not getattr(ctx.problem, "row_separable", False) or not isinstance(X, jax.Array):
        return 0
    if X.ndim != 2 or n % FULL_STEP_BLOCK_ROWS or n < 4 * FULL_STEP_BLOCK_ROWS:
        return 0
    return n // FULL_STEP_BLOCK_ROWS


def _block_of(batch: Batch, k) -> Batch:
    start = k * FULL_STEP_BLOCK_ROWS
    return Batch(
        *(
            None if a is None else lax.dynamic_slice_in_dim(a, start, FULL_STEP_BLOCK_ROWS)
            for a in batch
        )
    )


def _blocked_final_direction(state, ctx, n_blocks: int):
    """``(G_x, G_s)`` of :func:`_ssl_alm_final_step` for a problem of per-row losses
    (objective = weighted mean loss, constraints = ``A @ cell means - delta``), summed
    over row blocks: the same values up to float rounding, at one block's memory."""
    h, problem, aux = ctx.hyper, ctx.problem, ctx.aux
    x, s, y = state["x"], state["s"], state["y"]
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
        return total + cell_sums(x, _block_of(con, k))

    sums = lax.fori_loop(0, n_blocks, add_sums, jnp.zeros(n_cells, x.dtype))
    c_full = aux["A"] @ jnp.where(present, sums / safe_counts, 0.0) - aux["delta"]
    w = y + h["penalty_strength"] * (c_full + s)
    cell_coef = jnp.where(present, (w @ aux["A"]) / safe_counts, 0.0)

    def block_value(z, k):
        b_obj, b_con = _block_of(obj, k), _block_of(con, k)
        f_part = jnp.sum(b_obj.w * problem.losses(z, b_obj)) / total_w
        return f_part + cell_coef @ cell_sums(z, b_con)

    def add_grad(k, total):
        return total + jax.grad(block_value)(x, k)

    grad = lax.fori_loop(0, n_blocks, add_grad, jnp.zeros_like(x))
    G_x = grad + h["proximal_strength"] * (x - state["z_x"])
    G_s = w + h["proximal_strength"] * (s - state["z_s"])
    return G_x, G_s


def _ssl_alm_final_step(state, ctx):
    """Final primal step with y, z frozen on the full data (spec 3.5, finalisation); on
    large data of a problem of per-row losses, summed over row blocks."""
    h = ctx.hyper
    x, s = state["x"], state["s"]
    lr = h["learning_rate"]
    n_blocks = _full_step_blocks(ctx)
    if n_blocks:
        G_x, G_s = _blocked_final_direction(state, ctx, n_blocks)
        return {**state, "x": x - lr * G_x, "s": jnp.maximum(s - lr * G_s, 0.0)}
    f_grad = jax.grad(ctx.f)(x, ctx.full_obj_batch())
    full = ctx.full_con_batch()
    c_full, c_vjp = jax.vjp(lambda z: ctx.c(z, full), x)
    G_x, G_s = _alm_direction(
        x, s, state["y"], state["z_x"], state["z_s"], f_grad, c_vjp, c_full + s, h
    )
    return {**state, "x": x - lr * G_x, "s": jnp.maximum(s - lr * G_s, 0.0)}


def _step_gda(state, inp, ctx):
    """Generic alternating proxy GDA (spec 1.5): dual ascent on the true constraint value,
    projected to >= 0, then a primal step on f + lambda^T surrogate with the new lambda."""
    h = ctx.hyper
    x = state["x"]
    batch_c = ctx.con_batch(inp, 1)
    c_val = ctx.c(x, batch_c)
    lam = jnp.maximum(state["lam"] + h["dual_learning_rate"] * c_val, 0.0)
    surrogate = ctx.problem.surrogate_or_value()
    batch_f = ctx.obj_batch(inp)

    def lagrangian(z):
        f = ctx.f(z, batch_f)
        return f + jnp.dot(lam, surrogate(z, batch_c, ctx.aux)), f

    (_, f), g = jax.value_and_grad(lagrangian, has_aux=True)(x)
    lr = h["learning_rate"]
    state = {"x": x - lr * g, "lam": lam}
    return state, {"objective": f, "c": c_val, "lambda": lam, "step_size": lr}


# ------------------------------------------------------------------------------------------
# the solver contract: one record of pure functions per solver, one table
# ------------------------------------------------------------------------------------------


class Solver(NamedTuple):
    """One solver of the engine: pure functions over a state dict (a row of ``SOLVERS``).

    The driver (:func:`run_solver`) owns everything else, once for every solver: sampling,
    the jitted chunks of a guarded ``lax.scan``, the finiteness checks, the history, the
    timing and the budget; :func:`solve` adds the refits after a divergence.

    Attributes
    ----------
    init : callable
        ``init(x0, ctx) -> state``: the initial state at the flat parameters ``x0``
        (``ctx`` is a :class:`_Ctx` holding the untraced ``hyper``).
    step : callable
        ``step(state, inp, ctx, **options) -> (state, log)``: one iteration, pure and
        jittable (``inp`` holds the iteration's draws); with ``host=True`` a host function
        ``step(state, ctx) -> (state, log)``.
    parameters : callable
        ``parameters(state, hyper) -> x``: the returned iterate.
    diagnostics : callable
        ``diagnostics(state, logs, hyper) -> dict``: the solver's own results
        (multipliers, slacks, step counts...), from the final state and the logs.
    options : callable
        ``options(hyper) -> dict``: option strings compiled into ``step`` (keywords).
    constraint_draws : callable
        ``constraint_draws(hyper) -> int``: constraint draws one iteration consumes.
    final_step : callable or None
        ``final_step(state, ctx) -> state``: a last step on the full data, taken when
        ``hyper["final_full_step"]`` is true.
    step_sizes : tuple of str
        The ``hyper`` keys that the refits after a divergence scale.
    choices : dict
        Allowed values of the option strings of ``hyper``.
    device_logs : tuple of str
        Log entries ``diagnostics`` reads when no history is recorded.
    samples : callable
        ``samples(logs, rows_f, rows_c, n_draws)``: rows one iteration reads (a number, or
        one per logged iteration).
    columns : callable
        ``columns(logs) -> dict``: the solver's own history columns.
    host : bool
        Per-iteration work on the host (a Python loop) instead of a jitted scan.
    """

    init: Callable
    step: Callable
    parameters: Callable
    diagnostics: Callable
    options: Callable
    constraint_draws: Callable
    final_step: Callable | None
    step_sizes: tuple
    choices: dict
    device_logs: tuple
    samples: Callable
    columns: Callable
    host: bool


def _iterate(state, hyper):
    return state["x"]


def _no_diagnostics(state, logs, hyper):
    return {}


def _no_options(hyper):
    return {}


def _no_draws(hyper):
    return 0


def _one_draw(hyper):
    return 1


def _draws(hyper):
    """One constraint draw with ``constraint_draw="shared"``, two (independent) otherwise."""
    return 1 if hyper.get("constraint_draw") == "shared" else 2


def _draw_options(hyper):
    return {"shared_draw": True} if hyper.get("constraint_draw") == "shared" else {}


def _every_row(logs, rows_f, rows_c, n_draws):
    return rows_f + n_draws * rows_c


def _no_columns(logs):
    return {}


def solver(init, step, **fields) -> Solver:
    """A :class:`Solver` with the defaults of a plain first-order scan solver."""
    defaults = dict(
        parameters=_iterate,
        diagnostics=_no_diagnostics,
        options=_no_options,
        constraint_draws=_no_draws,
        final_step=None,
        step_sizes=("learning_rate",),
        choices={},
        device_logs=(),
        samples=_every_row,
        columns=_no_columns,
        host=False,
    )
    return Solver(init, step, **{**defaults, **fields})


def _init_primal(x0, ctx):
    return {"x": x0}


# initial states are host arrays (no eager device program; the jitted chunk places them)


def _init_ssw(x0, ctx):
    zero = np.zeros((), np.int32)
    return {"x": x0, "n_f": zero, "n_c": zero, "x_out": x0, "w_total": np.zeros((), x0.dtype)}


def _init_alm(x0, ctx):
    """Slacks 0, or ``max(-C(x0), 0)`` on the full data with ``slack_init="feasible"``."""
    s0 = np.zeros(ctx.problem.m, dtype=x0.dtype)
    if ctx.hyper.get("slack_init", "zero") == "feasible":
        _, c0 = full_values(ctx.problem, x0, ctx.data, ctx.aux)
        s0 = np.maximum(-np.asarray(c0, dtype=x0.dtype), 0.0)
    return {"x": x0, "s": s0, "y": np.zeros(ctx.problem.m, dtype=x0.dtype), "z_x": x0, "z_s": s0}


def _init_gda(x0, ctx):
    return {"x": x0, "lam": np.zeros(ctx.problem.m, dtype=x0.dtype)}


def _ssw_options(hyper):
    return {
        "f_rule": hyper["learning_rate_rule"],
        "c_rule": hyper["constraint_learning_rate_rule"],
        "reset": bool(hyper["reset_each_epoch"]),
        **_draw_options(hyper),
    }


def _ssw_output(state, hyper):
    """The last iterate, or the reservoir draw with ``output="random"`` (spec 3.6 step 6)."""
    if hyper.get("output", "last") == "random" and float(state["w_total"]) > 0:
        return state["x_out"]
    return state["x"]


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
    return {"multipliers": np.asarray(state["y"]), "slacks": np.asarray(state["s"])}


@lru_cache(maxsize=64)
def _chunk_function(
    name: str,
    static: tuple,
    problem,
    obj_full: bool,
    con_full: bool,
    eval_every: int,
    log_keys: tuple | None = None,
    lanes: tuple = (),
    fold_axes: tuple = (),
):
    """Jitted ``scan`` over one chunk of iterations of solver ``name``; cached on the
    static configuration. ``log_keys`` (``None`` = all) are the per-iteration log entries
    the scan returns. ``lanes`` (``(key, axis)`` of every ``aux`` entry, axis 0 or
    ``None``): the chunk ``vmap``-ped over the lanes of the state, the divergence flag and
    the ``aux`` entries of axis 0, every lane on the same data and draws. ``fold_axes``
    (``(key, axis)`` of every ``data`` entry, :func:`run_fold_lanes`): that vmapped chunk
    ``vmap``-ped again over folds, each with its own draws (``inputs``, fold axis 1) and
    the ``data`` entries of axis 0 (its rows' weights).
    """
    step = SOLVERS[name].step
    if static:
        step = partial(step, **dict(static))
    if log_keys is not None:
        full_step = step

        def step(state, inp, ctx):
            state, log = full_step(state, inp, ctx)
            return state, {key: log[key] for key in log_keys}

    def chunk(carry, data, aux, hyper, inputs):
        """``carry = (state, bad)``: ``bad`` is -1 while the parameters were finite, else
        the iteration by which they were not (:func:`guarded_scan`); the iterations after
        it are skipped."""
        ctx = _Ctx(problem, data, aux, hyper, obj_full, con_full)
        first = jax.tree_util.tree_map(lambda a: a[0], inputs)
        log_shape = jax.eval_shape(lambda s, i: step(s, i, ctx)[1], carry[0], first)

        def body(st, inp, bad):
            def skip(s):
                return s, jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), log_shape)

            # skip after a divergence; vmapped lanes only skip the inactive iterations
            # (a per-lane predicate would run both branches; a diverged lane is refitted)
            run = inp["active"] if lanes else jnp.logical_and(inp["active"], bad < 0)
            st, log = lax.cond(run, lambda s: step(s, inp, ctx), skip, st)
            if eval_every:

                def evaluate(x):
                    return (ctx.f(x, ctx.full_obj_batch()), ctx.c(x, ctx.full_con_batch()))

                def no_eval(x):
                    shapes = jax.eval_shape(evaluate, x)
                    return jax.tree_util.tree_map(
                        lambda a: jnp.full(a.shape, jnp.nan, a.dtype), shapes
                    )

                do_eval = jnp.logical_and(inp["active"], (inp["it"] + 1) % eval_every == 0)
                log = {**log, "full": lax.cond(do_eval, evaluate, no_eval, st["x"])}
            return st, log

        # divergence guard on the parameters (the rest of the state follows them within
        # an iteration; the driver checks all of it at the end); reported iteration: the
        # last active one of the block
        return guarded_scan(
            body,
            *carry,
            inputs,
            parameters=lambda st: st["x"],
            iteration=lambda st, inp: jnp.max(jnp.where(inp["active"], inp["it"], 0)),
        )

    def fold_chunk(carry, data, aux, hyper, inputs):
        """One fold's chunk (inside the vmap over folds): a plain scan, the inactive
        iterations (a fold shorter than another's) masked; ``bad`` marks a lane whose
        parameters are not finite at the chunk's end (such a lane is refitted)."""
        ctx = _Ctx(problem, data, aux, hyper, obj_full, con_full)

        def body(st, inp):
            new, log = step(st, inp, ctx)
            keep = inp["active"]
            return jax.tree_util.tree_map(lambda a, b: jnp.where(keep, a, b), new, st), log

        state, bad = carry
        state, logs = lax.scan(body, state, inputs)
        diverged = jnp.logical_and(bad < 0, ~all_finite(state["x"]))
        last = jnp.max(jnp.where(inputs["active"], inputs["it"], 0))
        return (state, jnp.where(diverged, last, bad)), logs

    if fold_axes:
        by_lane = jax.vmap(fold_chunk, in_axes=((0, 0), None, dict(lanes), None, None))
        return jax.jit(jax.vmap(by_lane, in_axes=((0, 0), dict(fold_axes), None, None, 1)))
    if lanes:
        return jax.jit(jax.vmap(chunk, in_axes=((0, 0), None, dict(lanes), None, None)))
    return jax.jit(chunk)


@lru_cache(maxsize=16)
def _final_function(name: str, problem, lanes: tuple = (), fold_axes: tuple = ()):
    def final(state, data, aux, hyper):
        return SOLVERS[name].final_step(state, _Ctx(problem, data, aux, hyper, True, True))

    if fold_axes:
        by_lane = jax.vmap(final, in_axes=(0, None, dict(lanes), None))
        return jax.jit(jax.vmap(by_lane, in_axes=(0, dict(fold_axes), None, None)))
    if lanes:
        return jax.jit(jax.vmap(final, in_axes=(0, None, dict(lanes), None)))
    return jax.jit(final)


@lru_cache(maxsize=16)
def _full_values_function(problem):
    def values(x, data, aux):
        ctx = _Ctx(problem, data, aux, {}, True, True)
        return ctx.f(x, ctx.full_obj_batch()), ctx.c(x, ctx.full_con_batch())

    return jax.jit(values)


def _device_data(X, y, groups, cells, dtype, loss_scale=None, cell_scale=None):
    """Pad rows to a bucket (weight 0) so nearby n share compiled code, and place them
    on the configured devices (:func:`fairest.utils._devices.place_rows`).

    ``loss_scale`` / ``cell_scale`` (``None`` for unweighted data) are the per-row loss
    scales of objective batches and constraint draws (see :class:`Batch`).
    """
    n = X.shape[0]
    n_pad = bucket_size(n)
    pad = n_pad - n

    def padded(a, fill=0):
        if not pad:
            return a
        return np.concatenate([a, np.full((pad,) + a.shape[1:], fill, dtype=a.dtype)])

    real = np.dtype(dtype)
    rows = {
        "y": padded(np.asarray(y).astype(np.int32)),
        "groups": padded(groups.astype(np.int32)),
        "cells": padded(np.maximum(cells, 0).astype(np.int32)),
        "w": padded(np.ones(n, dtype=real)),
        "cw": padded((cells >= 0).astype(real)),
    }
    if loss_scale is not None:
        rows["s"] = padded(np.asarray(loss_scale, dtype=real))
        rows["cs"] = padded(np.asarray(cell_scale, dtype=real))
    # sharded by rows over the configured devices (more zero-weight padding rows, never
    # drawn by the samplers); one default device otherwise. Sparse X stays sparse
    # (fairest.constrained._sparse), its empty padding rows added there.
    if not sp.issparse(X):
        release_free_memory()  # validation's freed pages: not resident beside the copy
        X = padded_design(X, n_pad, real)
    return place_with_design(X, rows, dtype)


def padded_design(X, length: int, dtype) -> np.ndarray:
    """Dense ``X`` in ``dtype`` with zero rows up to ``length`` rows, as ONE array: cast
    and padded straight into a 64-byte aligned buffer (which ``jax.device_put`` on a CPU
    device shares instead of copying), never a cast copy and a padded copy of it. ``X``
    already in ``dtype`` and ``length`` rows long is returned as it is."""
    X = np.asarray(X)
    dtype = np.dtype(dtype)
    n = X.shape[0]
    if n == length and X.dtype == dtype and X.flags.c_contiguous:
        return X
    out = aligned_empty((length,) + X.shape[1:], dtype)
    out[:n] = X  # cast in numpy's buffered chunks: no whole-size temporary
    out[n:] = 0
    return out


def population_totals(sample_weight, population, n_populations: int) -> np.ndarray:
    """Total weight and row count of every population (codes < 0 are in none), shape
    ``(2, n_populations)``; a stream adds them up over its chunks."""
    inside = population >= 0
    codes = population[inside]
    return np.stack(
        [
            np.bincount(codes, sample_weight[inside], minlength=n_populations),
            np.bincount(codes, minlength=n_populations).astype(np.float64),
        ]
    )


def _population_scale(sample_weight, population, n_populations: int, totals=None) -> np.ndarray:
    """``w_i`` divided by the mean weight of row i's population (0 outside any: code < 0);
    the means come from ``totals`` (:func:`population_totals`, e.g. a stream's running
    ones) when given, else from these rows."""
    inside = population >= 0
    codes = np.where(inside, population, 0)
    if totals is None:
        totals = population_totals(sample_weight, population, n_populations)
    total, count = totals
    mean = total / np.maximum(count, 1)
    safe = np.where(mean > 0, mean, 1.0)
    return np.where(inside, sample_weight / safe[codes], 0.0)


def loss_scales(sample_weight, groups, cells, n_cells: int, *, by_group: bool = False, totals=None):
    """Per-row loss scales of objective batches and constraint draws, or ``(None, None)``.

    A row's scale is its weight divided by the mean weight of the population it is drawn
    from uniformly: all rows for the objective (its group when ``by_group``, for the
    group-balanced batches of the penalty baseline), its cell for constraint draws. Unit
    weights (or ``sample_weight=None``) give ``(None, None)``: the unweighted code path.
    ``totals`` (``(objective_totals, cell_totals)`` of :func:`population_totals`) replaces
    the means of these rows by a stream's running means.
    """
    if sample_weight is None:
        return None, None
    sample_weight = np.asarray(sample_weight, dtype=np.float64)
    groups = np.asarray(groups)
    objective_totals, cell_totals = (None, None) if totals is None else totals
    if by_group:
        n_groups = int(groups.max()) + 1 if objective_totals is None else objective_totals.shape[1]
        loss_scale = _population_scale(sample_weight, groups, n_groups, objective_totals)
    else:
        everyone = np.zeros(groups.size, np.int64)
        loss_scale = _population_scale(sample_weight, everyone, 1, objective_totals)
    cell_scale = _population_scale(sample_weight, np.asarray(cells), n_cells, cell_totals)
    in_cell = np.asarray(cells) >= 0
    if np.all(loss_scale == 1.0) and np.all(cell_scale[in_cell] == 1.0):
        return None, None
    return loss_scale, cell_scale


def full_values(problem, x, data, aux):
    """Full-training-set objective and constraint values (one jitted pass)."""
    f, c = _full_values_function(problem)(x, data, aux)
    return float(f), np.asarray(c)


def _record_period(record_history) -> int:
    """Recording period of ``record_history`` (True -> 1, an int k -> k); 0 is off."""
    if record_history is True:
        return 1
    if not record_history:
        return 0
    return int(record_history)


class _RunSettings(NamedTuple):
    """How :func:`run_solver` runs a solver (everything but the problem and the data)."""

    batch_size: int | None
    constraint_batch_size: int | None
    constraint_sampler: str
    n_epochs: float | None
    max_iter: int | None
    max_time: float | None
    period: int
    eval_every: int
    names: list
    dtype: object
    progress: Callable | None
    initial_state: dict | None = None  # resume from this state (partial_fit), not init
    start_iter: int = 0  # iterations run before (the iteration counter continues)
    lanes: tuple = ()  # (key, axis) of every aux entry: vmapped lanes (run_lanes)


def run_solver(
    solver: str,
    problem,
    X,
    y,
    groups,
    cells,
    x0,
    *,
    hyper: dict,
    aux: dict | None = None,
    batch_size: int | None = 8,
    constraint_batch_size: int | None = 8,
    constraint_sampler: str = "reshuffle",
    n_epochs: float | None = 5,
    max_iter: int | None = None,
    max_time: float | None = None,
    rngs: list | None = None,
    record_history: bool | int = True,
    eval_every: int | None = None,
    constraint_names: list | None = None,
    dtype=jnp.float32,
    sample_weight=None,
    progress: Callable | None = None,
    initial_state: dict | None = None,
    start_iter: int = 0,
    weight_totals=None,
    lanes: tuple = (),
) -> RunResult:
    """Run solver ``solver`` (a key of :data:`SOLVERS`) on ``(X, y)`` with objective groups
    ``groups`` and constraint cells ``cells`` (``-1`` = row not in any constraint cell).

    ``x0`` is the flat initial parameter vector; ``hyper`` the solver's parameters (traced
    numbers and static option strings). Stops on the first of ``n_epochs`` (epochs of the
    objective sampler), ``max_iter`` and ``max_time`` (checked between jitted chunks); a
    host-loop solver (``Solver.host``) counts iterations only (``max_iter``, else
    ``hyper["max_iter"]``). ``record_history`` (True, or an int k for every k-th
    iteration) fills ``RunResult.history`` (a dict of numpy arrays; ``None`` when off);
    ``eval_every`` adds full-training-set values to it. ``sample_weight`` scales every
    row's loss (:func:`loss_scales`; the problem reads ``batch.s``); group-balanced
    objective batches when ``hyper["balanced_batches"]``. ``progress(n_iter, n_epochs)``
    is called after every chunk of iterations.

    Streaming (``partial_fit``): ``initial_state`` (a previous run's
    ``extras["resume_state"]``) replaces ``Solver.init``, ``start_iter`` continues the
    iteration counter (schedules that read it), and ``weight_totals`` (see
    :func:`loss_scales`) gives the running population means of the loss scales.

    ``lanes`` (set by :func:`run_lanes`): the scan ``vmap``-ped over lanes; returns a list
    of results, one per lane.
    """
    aux = {} if aux is None else aux
    rngs = spawn_rngs(None) if rngs is None else rngs
    period = _record_period(record_history)
    if eval_every and not period:
        raise ValueError("eval_every adds values to the history: it needs record_history.")
    X = X if sp.issparse(X) else np.asarray(X)
    groups, cells = np.asarray(groups), np.asarray(cells)
    balanced = bool(hyper.get("balanced_batches", False))
    loss_scale, cell_scale = loss_scales(
        sample_weight, groups, cells, problem.n_cells, by_group=balanced, totals=weight_totals
    )
    data = _device_data(X, np.asarray(y), groups, cells, dtype, loss_scale, cell_scale)
    settings = _RunSettings(
        batch_size,
        constraint_batch_size,
        constraint_sampler,
        n_epochs,
        max_iter,
        max_time,
        period,
        int(eval_every or 0),
        constraint_names or [str(i) for i in range(problem.m)],
        dtype,
        progress,
        initial_state,
        int(start_iter),
        lanes,
    )
    run = _run_host if SOLVERS[solver].host else _run_scan
    ctx = _Ctx(problem, data, aux, hyper, True, True, rngs=rngs, n_rows=X.shape[0])
    return run(solver, ctx, np.asarray(x0, dtype=np.dtype(dtype)), groups, cells, settings)


def run_lanes(solver: str, problem, X, *args, aux: dict, lane_keys: tuple, **options) -> list:
    """:func:`run_solver` for several values of the traced problem data at once.

    The ``aux`` entries named in ``lane_keys`` carry a leading axis of lanes (e.g. one
    tolerance per lane); the scan is ``vmap``-ped over them and over the solver state, so
    every lane runs on the same data and the same draws (``rngs``): lane ``k`` computes
    what :func:`run_solver` computes with ``aux`` at index ``k``, to float rounding.
    Scan solvers only, without history or a resumed state. Returns one
    :class:`RunResult` per lane (``extras["nonfinite_iter"]`` per lane; no refits).
    """
    if SOLVERS[solver].host:
        raise ValueError(f"solver {solver!r} runs a host loop: it has no vmapped lanes.")
    if options.get("record_history") or options.get("initial_state") is not None:
        raise ValueError("run_lanes records no history and resumes no state.")
    unknown = set(lane_keys) - set(aux)
    if unknown or not lane_keys:
        raise ValueError(f"lane_keys must name aux entries; got {lane_keys!r}.")
    lanes = tuple((key, 0 if key in lane_keys else None) for key in sorted(aux))
    options["record_history"] = False
    return run_solver(solver, problem, X, *args, aux=aux, lanes=lanes, **options)


class FoldRun(NamedTuple):
    """One fold of :func:`run_fold_lanes`: what a fit on the fold's rows alone reads."""

    rows: np.ndarray  # the fold's rows in the shared data, in the fold's own order
    y: np.ndarray  # class codes of those rows (as the fold's fit has them)
    groups: np.ndarray  # objective group codes of those rows (as the fold's fit has them)
    cells: np.ndarray  # constraint cells of those rows (-1: in none)
    x0: np.ndarray  # the fold fit's initial parameters
    rngs: list  # the fold fit's random streams (spawn_rngs order)
    sample_weight: np.ndarray | None  # the fold's weights; None: unit


def run_fold_lanes(
    solver: str,
    problem,
    X,
    folds: list,
    *,
    hyper: dict,
    aux: dict,
    lane_keys: tuple,
    n_epochs: float | None,
    batch_size: int | None = 8,
    constraint_batch_size: int | None = 8,
    constraint_sampler: str = "reshuffle",
    max_iter: int | None = None,
    dtype=jnp.float32,
) -> list:
    """:func:`run_lanes` for several folds of the same data at once: lanes = (fold, value).

    ``X`` holds every row once; each :class:`FoldRun` names its rows and carries what a
    fit on those rows alone reads and draws from: its class, group and cell codes, its
    weights, its initial parameters and its random streams. Every fold's minibatch,
    constraint and solver draws are made on the host exactly as :func:`run_solver` makes
    them for the fold's rows (same samplers, same chunk lengths, the fold's row count),
    then mapped to the shared rows; a fold that runs fewer iterations than another is
    masked (inactive) in the others' last iterations. The scan is ``vmap``-ped over the
    values (the ``aux`` entries of ``lane_keys``) inside a ``vmap`` over the folds, in one
    host loop and one compiled program, so the fixed cost of a step is paid once for all
    the folds. Lane ``(f, k)`` computes what :func:`run_solver` on fold ``f``'s rows with
    ``aux`` at index ``k`` computes, to float rounding (the final full-data step and full
    batches sum over the shared rows, the fold's weights 0 elsewhere).

    Returns a list (folds) of lists (values) of :class:`RunResult` (no history, no refits).
    """
    spec = SOLVERS[solver]
    if spec.host:
        raise ValueError(f"solver {solver!r} runs a host loop: it has no vmapped lanes.")
    lanes = tuple((key, 0 if key in lane_keys else None) for key in sorted(aux))
    real = np.dtype(dtype)
    balanced = bool(hyper.get("balanced_batches", False))
    n_draws = spec.constraint_draws(hyper) if problem.m > 0 else 0
    settings = (batch_size, constraint_batch_size, constraint_sampler, n_epochs, max_iter)
    draws = [_fold_draws(fold, problem, settings, balanced, n_draws, real, hyper) for fold in folds]
    zeros = np.zeros(X.shape[0], dtype=np.int32)  # replaced by the folds' own entries
    data = _device_data(X, zeros, zeros, zeros, dtype)
    fold_rows = _fold_rows(folds, problem.n_cells, balanced, data["y"].shape[0], real)
    data.update({key: jax.device_put(value) for key, value in fold_rows.items()})
    fold_axes = tuple((key, 0 if key in _FOLD_KEYS else None) for key in sorted(data))
    traced = {
        k: np.asarray(v, dtype=real)
        for k, v in hyper.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    chunk_fn = _chunk_function(
        solver,
        tuple(spec.options(hyper).items()),
        problem,
        draws[0]["obj_full"],
        draws[0]["con_full"],
        0,
        spec.device_logs,
        lanes,
        fold_axes,
    )
    state = _fold_states(spec, problem, folds, {**data, **fold_rows}, aux, hyper, lanes)
    budgets = [d["budget"] for d in draws]
    L = max(d["chunk"] for d in draws)
    n_chunks = -(-max(budgets) // L)
    inputs = _stack_fold_inputs([d["inputs"] for d in draws], n_chunks * L, real)
    n_values = _lane_shape(aux, lanes)[0]
    bad = np.full((len(folds), n_values), -1, np.int32)
    final_fn, final_compiled = None, None  # final_compiled: the thread compiling final_fn
    if _takes_final_step(spec, hyper) and max(budgets):
        final_fn = _final_function(solver, problem, lanes, fold_axes)
    logs, previous_bad = [], None
    for c in range(n_chunks):
        if previous_bad is not None and np.all(np.asarray(previous_bad) >= 0):
            break
        window = {key: value[c * L : (c + 1) * L] for key, value in inputs.items()}
        previous_bad = bad
        (state, bad), log = chunk_fn((state, bad), data, aux, traced, window)
        if c == 0 and final_fn is not None:  # compiled while the chunks run
            final_compiled = compile_in_background(final_fn, (state, data, aux, traced))
        logs.append(log)
    resume = {key: np.asarray(value) for key, value in state.items()}
    final = resume
    if final_fn is not None:
        if final_compiled is not None:
            final_compiled.join()
        final = {key: np.asarray(v) for key, v in final_fn(state, data, aux, traced).items()}
    logs = [{key: np.asarray(value) for key, value in lg.items()} for lg in logs]
    results = []
    for f, d in enumerate(draws):
        fold_logs = [{key: value[f][:, : d["budget"]] for key, value in _joined(logs).items()}]
        results.append(
            _split_lanes(
                spec,
                hyper,
                {key: value[f] for key, value in final.items()},
                {key: value[f] for key, value in resume.items()},
                np.asarray(bad)[f],
                fold_logs if logs and logs[0] else [],
                (d["budget"], d["per_epoch"]),
            )
        )
    return results


def _takes_final_step(spec, hyper) -> bool:
    """Whether a run of solver ``spec`` ends with its final full-data step."""
    return spec.final_step is not None and bool(hyper.get("final_full_step", False))


# per-fold ``data`` entries of run_fold_lanes (axis 0: the fold)
_FOLD_KEYS = ("y", "groups", "cells", "w", "cw", "s", "cs")


def _joined(logs) -> dict:
    """The chunks' logs (fold, lane, iteration, ...) joined along the iterations."""
    if not logs or not logs[0]:
        return {}
    return {key: np.concatenate([lg[key] for lg in logs], axis=2) for key in logs[0]}


def _fold_draws(fold, problem, settings, balanced, n_draws, real, hyper) -> dict:
    """Every iteration's draws of a fit on ``fold``'s rows, made as :func:`_run_scan`
    makes them (its samplers and streams, its chunk length), indices mapped to the shared
    rows; with the fold's iteration budget, chunk length and iterations per epoch."""
    batch_size, constraint_batch_size, constraint_sampler, n_epochs, max_iter = settings
    obj_sampler = _objective_sampler(fold.groups, batch_size, balanced, fold.rngs[1])
    con_sampler = GroupSampler(
        fold.cells, problem.n_cells, constraint_batch_size, fold.rngs[2], constraint_sampler
    )
    T = obj_sampler.iters_per_epoch
    budget = np.inf
    if n_epochs is not None:
        budget = min(budget, int(np.ceil(n_epochs * T)))
    if max_iter is not None:
        budget = min(budget, max_iter)
    if not np.isfinite(budget):
        raise ValueError("one of n_epochs or max_iter must be set.")
    L = bucket_size(max(T, _defaults.MIN_CHUNK))
    stream, rows = _ObjectiveStream(obj_sampler), np.asarray(fold.rows)
    pieces, done = [], 0
    while done < budget:
        n_active = int(min(L, budget - done))
        obj_idx, obj_w, _, t = stream.take(L)
        inputs = {
            "it": np.arange(done, done + L, dtype=np.int32),
            "t": np.asarray(t, dtype=np.int32),
            "active": np.ones(L, dtype=bool),
            "u": fold.rngs[3].random(L).astype(real),
        }
        if obj_idx is not None:
            inputs["obj_idx"] = rows[obj_idx].astype(np.int32)
            inputs["obj_w"] = np.asarray(obj_w, dtype=real)
        if not con_sampler.full:
            for k in range(1, n_draws + 1):
                idx, w = con_sampler.draw(L)
                inputs[f"con_idx{k}"] = rows[idx].astype(np.int32)
                inputs[f"con_w{k}"] = np.asarray(w, dtype=real)
        pieces.append({key: value[:n_active] for key, value in inputs.items()})
        done += n_active
    joined = {key: np.concatenate([p[key] for p in pieces]) for key in pieces[0]}
    return {
        "inputs": joined,
        "budget": int(budget),
        "chunk": L,
        "per_epoch": T,
        "obj_full": obj_sampler.full,
        "con_full": con_sampler.full,
    }


def _stack_fold_inputs(per_fold: list, length: int, real) -> dict:
    """The folds' draws stacked along a fold axis after the iteration axis (shape
    ``(length, n_folds, ...)``: the scan reads them in that order, so the compiled chunk
    holds no transposes of them), each padded to ``length`` iterations with inactive ones
    (row 0, weight 0, the iteration counter continued)."""
    stacked = {}
    for key in per_fold[0]:
        arrays = []
        for inputs in per_fold:
            value = inputs[key]
            pad = np.zeros((length - value.shape[0],) + value.shape[1:], dtype=value.dtype)
            if key == "it":
                pad = np.arange(value.shape[0], length, dtype=value.dtype)
            arrays.append(np.concatenate([value, pad]))
        stacked[key] = np.stack(arrays, axis=1)
    return stacked


def _fold_rows(folds, n_cells: int, balanced: bool, n_pad: int, real) -> dict:
    """Per-fold row entries of the shared data, shape ``(n_folds, n_pad)``: the fold's
    group codes, cells, objective and cell weights (1 on its rows, 0 elsewhere), and the
    loss scales of :func:`loss_scales` from the fold's own weights (1 where unweighted)."""
    entries = {key: [] for key in _FOLD_KEYS}
    weighted = False
    for fold in folds:
        rows, cells = np.asarray(fold.rows), np.asarray(fold.cells)
        loss_scale, cell_scale = loss_scales(
            fold.sample_weight, fold.groups, cells, n_cells, by_group=balanced
        )
        weighted = weighted or loss_scale is not None
        columns = {
            "y": fold.y,
            "groups": fold.groups,
            "cells": np.maximum(cells, 0),
            "w": np.ones(rows.size),
            "cw": (cells >= 0).astype(np.float64),
            "s": np.ones(rows.size) if loss_scale is None else loss_scale,
            "cs": np.ones(rows.size) if cell_scale is None else cell_scale,
        }
        for key, column in columns.items():
            full = np.zeros(n_pad, dtype=np.int32 if key in ("y", "groups", "cells") else real)
            full[rows] = column
            entries[key].append(full)
    if not weighted:  # the unweighted code path, as the folds' own fits run it
        del entries["s"], entries["cs"]
    return {key: np.stack(value) for key, value in entries.items()}


def _fold_states(spec, problem, folds, data, aux, hyper, lanes) -> dict:
    """Every (fold, value) lane's ``Solver.init`` on the fold's rows, stacked as
    ``(n_folds, n_values, ...)`` numpy arrays."""
    per_fold = []
    for f, fold in enumerate(folds):
        fold_data = {key: value[f] if key in _FOLD_KEYS else value for key, value in data.items()}
        ctx = _Ctx(
            problem, fold_data, aux, hyper, True, True, rngs=fold.rngs, n_rows=fold.rows.size
        )
        per_fold.append(_lane_states(spec, fold.x0, ctx, lanes))
    return {key: np.stack([st[key] for st in per_fold]) for key in per_fold[0]}


def _chunk_inputs(stream, con_sampler, solver_rng, L, n_active, first, n_draws, real):
    """The host inputs of one chunk of ``L`` iterations (``n_active`` of them run) whose
    first iteration is ``first``: ``(inputs, epoch, t)``. Its float64 and int64 draws are
    temporaries of this function (cast to ``real`` / int32 here), freed on return."""
    obj_idx, obj_w, epoch, t = stream.take(L)
    inputs = {
        "it": np.arange(first, first + L, dtype=np.int32),
        "t": np.asarray(t, dtype=np.int32),
        "active": np.arange(L) < n_active,
        "u": solver_rng.random(L).astype(real),
    }
    if obj_idx is not None:
        inputs["obj_idx"] = np.asarray(obj_idx, dtype=np.int32)
        inputs["obj_w"] = np.asarray(obj_w, dtype=real)
    if not con_sampler.full:
        for k in range(1, n_draws + 1):
            idx, w = con_sampler.draw(L, real)  # weights 0 / 1: exact in any dtype
            inputs[f"con_idx{k}"] = np.asarray(idx, dtype=np.int32)
            inputs[f"con_w{k}"] = np.asarray(w, dtype=real)
    return inputs, epoch, t


def _objective_sampler(groups, batch_size, balanced: bool, rng):
    n = groups.size
    if balanced:
        return _BalancedEpochSampler(groups, int(np.max(groups)) + 1, batch_size or n, rng)
    return EpochSampler(n, batch_size, rng)


def _run_scan(name, ctx, x0, groups, cells, run: _RunSettings) -> RunResult:
    """The driver of the scan solvers: jitted chunks of a guarded ``lax.scan``."""
    spec, problem, data, aux, hyper = SOLVERS[name], ctx.problem, ctx.data, ctx.aux, ctx.hyper
    dtype = run.dtype
    balanced = bool(hyper.get("balanced_batches", False))
    obj_sampler = _objective_sampler(groups, run.batch_size, balanced, ctx.rngs[1])
    con_sampler = GroupSampler(
        cells, problem.n_cells, run.constraint_batch_size, ctx.rngs[2], run.constraint_sampler
    )
    solver_rng = ctx.rngs[3]
    T = obj_sampler.iters_per_epoch
    budget = np.inf
    if run.n_epochs is not None:
        budget = min(budget, int(np.ceil(run.n_epochs * T)))
    if run.max_iter is not None:
        budget = min(budget, run.max_iter)
    if not np.isfinite(budget) and run.max_time is None:
        raise ValueError("one of n_epochs, max_iter or max_time must be set.")
    L = bucket_size(max(T, _defaults.MIN_CHUNK))

    static = tuple(spec.options(hyper).items())
    n_draws = spec.constraint_draws(hyper) if problem.m > 0 else 0
    real = np.dtype(dtype)  # chunk inputs are cast on the host: no eager device program
    traced = {
        k: np.asarray(v, dtype=real)
        for k, v in hyper.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    # without a history only what the diagnostics read leaves the device
    log_keys = None if run.period else spec.device_logs
    chunk_fn = _chunk_function(
        name,
        static,
        problem,
        obj_sampler.full,
        con_sampler.full,
        run.eval_every,
        log_keys,
        run.lanes,
    )
    if run.initial_state is not None:
        state = {key: np.asarray(value) for key, value in run.initial_state.items()}
    elif run.lanes:
        state = _lane_states(spec, x0, ctx, run.lanes)
    else:
        state = spec.init(x0, ctx)
    stream = _ObjectiveStream(obj_sampler)
    offset = run.start_iter
    final_fn = _final_function(name, problem, run.lanes) if _takes_final_step(spec, hyper) else None
    final_compiled = None  # the thread compiling final_fn, if one was started

    logs, done, start = [], 0, time.perf_counter()
    chunk_start = 0.0
    # first non-finite iteration (-1: none), on device; one per lane
    bad = np.full(_lane_shape(ctx.aux, run.lanes), -1, np.int32)
    keep = (slice(None),) * bool(run.lanes)  # the lane axis of the logs
    previous_bad = None
    while done < budget:
        if run.max_time is not None and time.perf_counter() - start >= run.max_time:
            break
        # stop one chunk after a divergence: the previous chunk's flag is read while the
        # device runs the current one (no extra wait on the device)
        if previous_bad is not None and np.all(np.asarray(previous_bad) >= 0):
            break
        n_active = int(min(L, budget - done))
        inputs, epoch, t = _chunk_inputs(
            stream, con_sampler, solver_rng, L, n_active, offset + done, n_draws, real
        )
        previous_bad = bad
        (state, bad), log = chunk_fn((state, bad), data, aux, traced, inputs)
        if final_fn is not None and not done:  # compiled while the chunks run
            final_compiled = compile_in_background(final_fn, (state, data, aux, traced))
        # the device holds its copy of the draws: the host's are not kept beside the
        # next chunk's (1e6 rows, batch 8: 42 MiB a chunk), and once the first call has
        # compiled the chunk, the compiler's freed pages go back to the system
        del inputs
        if not done:
            release_free_memory()
        if run.period:
            log = jax.tree_util.tree_map(np.asarray, log)  # one host sync per chunk
            now = time.perf_counter() - start
            frac = np.arange(1, n_active + 1) / n_active
            log = jax.tree_util.tree_map(lambda a, k=n_active: a[:k], log)
            log["time"] = chunk_start + frac * (now - chunk_start)
            log["epoch"] = epoch[:n_active] + (t[:n_active] + 1) / T
            log["iter"] = np.arange(done, done + n_active)
            chunk_start = now
        else:  # device arrays, read once after the loop
            log = {key: value[(*keep, slice(n_active))] for key, value in log.items()}
            if run.max_time is not None:  # the clock must see the chunk's work
                jax.block_until_ready(state)
        logs.append(log)
        done += n_active
        if run.progress is not None:
            run.progress(done, done / T)

    if final_compiled is not None:
        final_compiled.join()
    if run.lanes:
        final = final_fn if done > 0 else None
        return _lane_results(name, ctx, state, bad, logs, (done, T), final, traced)
    nonfinite = int(bad)
    resume_state = {k: np.asarray(v) for k, v in state.items()}  # before the final step
    del stream  # its pre-drawn epoch, and the freed draws' pages: not beside the final step
    release_free_memory()  # and the compiler's freed working memory
    if final_fn is not None and done > 0 and nonfinite < 0:
        state = final_fn(state, data, aux, traced)
    x = spec.parameters(state, hyper)
    state_np = {k: np.asarray(v) for k, v in state.items()}
    if nonfinite < 0 and not all(
        np.all(np.isfinite(v)) for v in state_np.values() if np.issubdtype(v.dtype, np.inexact)
    ):
        nonfinite = max(done - 1, 0)  # the multipliers or slacks of the last iteration,
        #                               or the final full step
    extras = {
        **spec.diagnostics(state_np, logs, hyper),
        "nonfinite_iter": nonfinite if nonfinite >= 0 else None,
        "resume_state": resume_state,
    }
    history = None
    if run.period:
        rows_f = obj_sampler.batch_width
        rows_c = (
            con_sampler.width
            if not con_sampler.full
            else sum(mm.size for mm in con_sampler.members)
        )
        history = _history_dict(spec, logs, run.names, run.period, (rows_f, rows_c, n_draws))
    return RunResult(np.asarray(x), state_np, history, done, done / T, extras)


def _lane_shape(aux, lanes) -> tuple:
    """``(n_lanes,)`` of the lanes' ``aux`` entries (axis 0), ``()`` without lanes."""
    return next((aux[key].shape[:1] for key, axis in lanes if axis == 0), ())


def _lane_aux(aux, lanes, lane: int) -> dict:
    return {key: aux[key][lane] if axis == 0 else aux[key] for key, axis in lanes}


def _lane_states(spec, x0, ctx, lanes) -> dict:
    """Every lane's ``Solver.init`` (on the host: an init may read full-data values),
    stacked along a leading lane axis as numpy arrays."""
    states = []
    for lane in range(_lane_shape(ctx.aux, lanes)[0]):
        lane_ctx = copy.copy(ctx)
        lane_ctx.aux = _lane_aux(ctx.aux, lanes, lane)
        states.append(spec.init(x0, lane_ctx))
    return {key: np.stack([np.asarray(st[key]) for st in states]) for key in states[0]}


def _lane_results(name, ctx, state, bad, logs, iterations, final_fn, traced) -> list:
    """One :class:`RunResult` per lane of a vmapped scan (the tail of :func:`_run_scan`
    per lane; no history): the final full step (``final_fn``, ``None``: none) where a
    lane stayed finite. ``iterations``: ``(iterations run, iterations per epoch)``."""
    spec, hyper = SOLVERS[name], ctx.hyper
    resume = {key: np.asarray(value) for key, value in state.items()}
    final = resume
    if final_fn is not None:
        final_state = final_fn(state, ctx.data, ctx.aux, traced)
        final = {key: np.asarray(value) for key, value in final_state.items()}
    logs = [{key: np.asarray(value) for key, value in lg.items()} for lg in logs]
    return _split_lanes(spec, hyper, final, resume, np.asarray(bad), logs, iterations)


def _split_lanes(spec, hyper, final, resume, bad, logs, iterations) -> list:
    """:class:`RunResult` of every lane from the host copies of the lanes' final and
    resume states, divergence flags and logs (lane axis first)."""
    n_iter, per_epoch = iterations
    results = []
    for lane, lane_bad in enumerate(bad.tolist()):
        lane_state = {key: (final if lane_bad < 0 else resume)[key][lane] for key in resume}
        x = np.asarray(spec.parameters(lane_state, hyper))
        if lane_bad < 0 and not all(
            np.all(np.isfinite(v))
            for v in lane_state.values()
            if np.issubdtype(v.dtype, np.inexact)
        ):
            lane_bad = max(n_iter - 1, 0)
        lane_logs = [{key: value[lane] for key, value in lg.items()} for lg in logs]
        extras = {
            **spec.diagnostics(lane_state, lane_logs, hyper),
            "nonfinite_iter": lane_bad if lane_bad >= 0 else None,
            "resume_state": {key: value[lane] for key, value in resume.items()},
        }
        results.append(RunResult(x, lane_state, None, n_iter, n_iter / per_epoch, extras))
    return results


def _history_dict(spec, logs, names, period, rows):
    """``history_`` of a scan solver: every ``period``-th iteration, dict of numpy arrays;
    ``rows``: objective batch rows, constraint draw rows, constraint draws (for
    ``n_samples``)."""
    if not logs:
        return as_history({"iter": np.zeros(0, int)})
    merged = {k: np.concatenate([lg[k] for lg in logs]) for k in logs[0] if k != "full"}
    per_iter = spec.samples(merged, *rows)
    keep = merged["iter"] % period == 0
    cols = {
        "iter": merged["iter"][keep],
        "epoch": merged["epoch"][keep],
        "time": merged["time"][keep],
        "n_samples": np.cumsum(np.broadcast_to(per_iter, merged["iter"].shape))[keep],
        "objective": merged["objective"][keep],
    }
    for key, prefix in (("c", "c_"), ("lambda", "lambda_"), ("slack", "slack_")):
        if key in merged:
            for j, name in enumerate(names):
                cols[prefix + name] = merged[key][keep, j]
    cols["step_size"] = merged["step_size"][keep]
    cols.update({key: value[keep] for key, value in spec.columns(merged).items()})
    if "full" in logs[0]:
        full_f = np.concatenate([lg["full"][0] for lg in logs])[keep]
        full_c = np.concatenate([lg["full"][1] for lg in logs])[keep]
        cols["full_objective"] = full_f
        for j, name in enumerate(names):
            cols["full_c_" + name] = full_c[:, j]
    return as_history(cols)


def _run_host(name, ctx, x0, groups, cells, run: _RunSettings) -> RunResult:
    """The driver of the host-loop solvers (Stochastic Ghost): one ``step`` per iteration
    on the host, a finiteness check after each; ``max_iter`` (else ``hyper["max_iter"]``)
    iterations or ``max_time`` seconds."""
    spec, hyper = SOLVERS[name], ctx.hyper
    iters = hyper["max_iter"] if run.max_iter is None else run.max_iter
    state = spec.init(x0, ctx)
    rows, start, k, nonfinite = [], time.perf_counter(), 0, None
    while k < iters:
        if run.max_time is not None and time.perf_counter() - start >= run.max_time:
            break
        state, log = spec.step(state, ctx)
        if not np.all(np.isfinite(spec.parameters(state, hyper))):
            nonfinite = k  # divergence guard: stop at the first non-finite iterate
            k += 1
            break
        if run.period and k % run.period == 0:
            row = {
                "iter": k,
                "epoch": np.nan,
                "time": time.perf_counter() - start,
                "n_samples": state["n_samples"],
                "objective": float(log["objective"]),
            }
            for j, cname in enumerate(run.names):
                row["c_" + cname] = float(log["c"][j])
            row.update({key: v for key, v in log.items() if key not in ("objective", "c")})
            rows.append(row)
        k += 1
        if run.progress is not None and (k % 100 == 0 or k == iters):
            run.progress(k, np.nan)
    history = None
    if run.period:
        history = as_history(
            {key: [row[key] for row in rows] for key in rows[0]}
            if rows
            else {"iter": np.zeros(0, int)}
        )
    x = spec.parameters(state, hyper)
    x_out = x.astype(np.dtype(run.dtype))
    if nonfinite is None and not np.all(np.isfinite(x_out)):
        nonfinite = max(k - 1, 0)  # finite in float64, beyond the range of dtype
    extras = {**spec.diagnostics(state, rows, hyper), "nonfinite_iter": nonfinite}
    return RunResult(x_out, {"x": x}, history, k, np.nan, extras)


def scaled_step_sizes(name: str, hyper: dict, factor: float) -> dict:
    """``hyper`` with the step sizes of solver ``name`` (``Solver.step_sizes``) times
    ``factor``."""
    if factor == 1.0:
        return dict(hyper)
    return {**hyper, **{key: factor * hyper[key] for key in SOLVERS[name].step_sizes}}


def solve(solver: str, problem, X, *args, hyper: dict, rngs, owner: str, **options):
    """:func:`run_solver` with the divergence refits of :func:`refit_on_divergence`.

    Every refit starts again from the same initialisation and random streams (``rngs``
    is copied) with the solver's step sizes scaled. ``owner`` names the estimator in the
    messages. Returns ``(RunResult, factor)``.
    """

    def attempt(factor):
        result = run_solver(
            solver,
            problem,
            X,
            *args,
            hyper=scaled_step_sizes(solver, hyper, factor),
            rngs=copy.deepcopy(rngs),  # every refit draws the same streams
            **options,
        )
        bad = result.extras.get("nonfinite_iter")
        if bad is None and not np.all(np.isfinite(result.x)):
            bad = result.n_iter  # defensive: never return a non-finite model
        return result, bad

    remedy = " / ".join(f'solver_params["{key}"]' for key in SOLVERS[solver].step_sizes)
    return refit_on_divergence(owner, attempt, remedy=remedy, X=X)


def refit_on_divergence(owner: str, attempt, *, remedy: str, X, phase: str = ""):
    """Run ``attempt(factor) -> (output, nonfinite_iter)`` until its iterates stay finite.

    ``attempt`` runs a solver from its initialisation with every step size multiplied by
    ``factor`` and returns the first iteration whose iterates were not finite, or
    ``None``. The first run uses ``factor=1``; a diverged run is repeated with the factor
    multiplied by ``_defaults.NONFINITE_STEP_FACTOR``, up to
    ``_defaults.NONFINITE_RETRIES`` times (with a :class:`ConvergenceWarning` when a refit
    succeeds); when the last one diverges too, a ``ValueError`` names the cause and the
    remedy (``remedy``: the parameters that set the step sizes). ``owner`` names the
    estimator; ``phase`` is appended to the iteration (e.g. ``" of the dense
    pre-training"``). Returns ``(output, factor)``.
    """
    factor, first = 1.0, None
    for retry in range(_defaults.NONFINITE_RETRIES + 1):
        output, bad = attempt(factor)
        if bad is None:
            if retry:
                warnings.warn(
                    f"{owner}: the iterates became non-finite (NaN/inf) by iteration "
                    f"{first}{phase}; refitted from the initialisation with the step sizes "
                    f"multiplied by {factor:g}. Scale the features (e.g. StandardScaler) or "
                    f"lower {remedy} to fit with the given step sizes.",
                    ConvergenceWarning,
                    stacklevel=4,
                )
            return output, factor
        first = bad if first is None else first
        factor *= _defaults.NONFINITE_STEP_FACTOR
    largest = largest_magnitude(X)
    raise ValueError(
        f"{owner}: the iterates became non-finite (NaN/inf) by iteration {first}{phase}, "
        f"also in {_defaults.NONFINITE_RETRIES} refits with the step sizes halved: scale "
        f"the features (e.g. StandardScaler; the largest feature magnitude is "
        f"{largest:.3g}) or lower {remedy}."
    )


# ------------------------------------------------------------------------------------------
# Stochastic Ghost (spec 3.7)
# ------------------------------------------------------------------------------------------


def ghost_kappa(c, J, kappa_lambda, kappa_box):
    """``kappa = (1 - lambda) max_i [c_i]_+ + lambda t*`` with the LP of spec 3.7.

    Returns ``(kappa, t_star, d_lp)``; ``d_lp`` is the LP's direction. Two cases have a
    closed form and skip the LP solver: one constraint (``t* = [c - rho ||J||_1]_+`` at
    ``d = -rho sign(J)``) and a pair ``J_2 = -J_1`` (the two sides of one loss gap,
    :func:`_kappa_pair`).
    """
    c = np.asarray(c, dtype=np.float64)
    J = np.asarray(J, dtype=np.float64).reshape(c.size, -1)
    if c.size == 1:
        t_star = max(float(c[0] - kappa_box * np.abs(J[0]).sum()), 0.0)
        d_lp = -kappa_box * np.sign(J[0])
    elif c.size == 2 and np.array_equal(J[1], -J[0]):
        t_star, d_lp = _kappa_pair(c, J[0], kappa_box)
    else:
        t_star, d_lp = _kappa_lp(c, J, kappa_box)
    kappa = (1.0 - kappa_lambda) * float(np.maximum(c, 0.0).max()) + kappa_lambda * t_star
    return kappa, t_star, d_lp


def _kappa_pair(c, J1, box):
    """The LP of :func:`ghost_kappa` for ``c_1 + s <= t``, ``c_2 - s <= t`` with ``s = J_1 d``.

    ``s`` ranges over ``[-b, b]``, ``b = box ||J_1||_1``; ``max(c_1 + s, c_2 - s)`` is least
    at ``s* = clip((c_2 - c_1) / 2, -b, b)``, reached by ``d = (s* / b) box sign(J_1)``.
    """
    b = box * np.abs(J1).sum()
    s = float(np.clip((c[1] - c[0]) / 2.0, -b, b))
    d = (s / b) * box * np.sign(J1) if b > 0 else np.zeros_like(J1)
    return max(c[0] + s, c[1] - s, 0.0), d


def _kappa_lp(c, J, box):
    from scipy.optimize import linprog

    m, n = J.shape
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    A = np.hstack([J, -np.ones((m, 1))])
    bounds = [(-box, box)] * n + [(0.0, None)]
    res = linprog(cost, A_ub=A, b_ub=-c, bounds=bounds, method="highs")
    if res.status != 0:
        return float(box), None  # fallback t* := rho_kappa [C]
    return max(float(res.x[-1]), 0.0), res.x[:-1]


_QP_CACHE: dict = {}


def _qp_cvxpy(g, c, J, kappa, tau, box):
    import cvxpy as cp

    m, n = J.shape
    key = (m, n)
    if key not in _QP_CACHE:
        d = cp.Variable(n)
        pg, pc, pJ, pk = cp.Parameter(n), cp.Parameter(m), cp.Parameter((m, n)), cp.Parameter()
        pbox = cp.Parameter(nonneg=True)
        prob = cp.Problem(
            cp.Minimize(pg @ d + (tau_half := cp.Parameter(nonneg=True)) * cp.sum_squares(d)),
            [pc + pJ @ d <= pk, cp.abs(d) <= pbox],
        )
        _QP_CACHE[key] = (prob, d, pg, pc, pJ, pk, pbox, tau_half)
    prob, d, pg, pc, pJ, pk, pbox, tau_half = _QP_CACHE[key]
    pg.value, pc.value, pJ.value = g, c, J
    pk.value, pbox.value, tau_half.value = kappa, box, tau / 2.0
    prob.solve(solver="CLARABEL")
    if prob.status not in ("optimal", "optimal_inaccurate") or d.value is None:
        raise RuntimeError(f"QP status {prob.status}")
    return np.asarray(d.value)


def _qp_dual(g, c, J, kappa, tau, box):
    """Maximise the concave dual over mu >= 0; ``d(mu) = clip(-(g + J^T mu)/tau, +-box)``."""
    from scipy.optimize import minimize

    def primal(mu):
        return np.clip(-(g + J.T @ mu) / tau, -box, box)

    d0 = primal(np.zeros(c.size))
    if np.all(c + J @ d0 <= kappa):
        return d0  # mu = 0 is optimal: the unconstrained (boxed) step is feasible

    def neg_dual(mu):
        d = primal(mu)
        slack = c + J @ d - kappa
        value = g @ d + 0.5 * tau * d @ d + mu @ slack
        return -value, -slack

    res = minimize(
        neg_dual,
        np.zeros(c.size),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * c.size,
        options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 5000, "maxls": 50},
    )
    if not np.all(np.isfinite(res.x)):
        raise RuntimeError("dual QP diverged")
    d = primal(res.x)
    if np.max(c + J @ d - kappa) > 1e-6 * (1.0 + np.abs(c).max()):
        raise RuntimeError("dual QP infeasible")
    return d


def ghost_subproblem(g, c, J, *, tau, box, kappa_lambda, kappa_box, backend="dual"):
    """Direction ``d(X)`` of spec 3.7: ``min g^T d + tau/2 ||d||^2`` s.t.
    ``c + J d <= kappa 1``, ``||d||_inf <= box``. Returns ``(d, kappa, failed)``."""
    g = np.asarray(g, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    J = np.asarray(J, dtype=np.float64).reshape(c.size, g.size)
    kappa, _, _ = ghost_kappa(c, J, kappa_lambda, kappa_box)
    solvers = [_qp_dual, _qp_cvxpy] if backend == "dual" else [_qp_cvxpy, _qp_dual]
    for solve in solvers:
        try:
            return solve(g, c, J, kappa, tau, box), kappa, False
        except Exception:
            continue
    return np.zeros_like(g), kappa, True


@lru_cache(maxsize=16)
def _ghost_derivatives(problem):
    def derivs(x, data, aux, obj_idx, con_idx):
        d = data
        bf = Batch(
            d["X"][obj_idx],
            d["y"][obj_idx],
            d["groups"][obj_idx],
            jnp.ones(obj_idx.shape, x.dtype),
            _rows(d.get("s"), obj_idx),
        )
        bc = Batch(
            d["X"][con_idx],
            d["y"][con_idx],
            d["cells"][con_idx],
            jnp.ones(con_idx.shape, x.dtype),
            _rows(d.get("cs"), con_idx),
        )
        f, g = jax.value_and_grad(problem.objective)(x, bf, aux)
        c = problem.constraints(x, bc, aux)
        J = jax.jacrev(problem.constraints)(x, bc, aux)
        return f, g, c, J

    def full(x, data, aux):
        ctx = _Ctx(problem, data, aux, {}, True, True)
        f, g = jax.value_and_grad(ctx.f)(x, ctx.full_obj_batch())
        c = ctx.c(x, ctx.full_con_batch())
        J = jax.jacrev(ctx.c)(x, ctx.full_con_batch())
        return f, g, c, J

    return jax.jit(derivs), jax.jit(full)


def _init_ghost(x0, ctx):
    """Host state of Stochastic Ghost: the iterate in float64 and the step size."""
    n = ctx.n_rows
    cells = np.asarray(ctx.data["cells"])[:n]
    cw = np.asarray(ctx.data["cw"])[:n]
    members = [np.flatnonzero((cells == c) & (cw > 0)) for c in range(ctx.problem.n_cells)]
    return {
        "x": np.asarray(x0, dtype=np.float64),
        "dtype": x0.dtype,
        "k": 0,
        "gamma": ctx.hyper["learning_rate"],
        "failures": 0,
        "n_samples": 0,
        "members": members,
        "constraint_rows": int(cw.sum()),
    }


def _ghost_direction(state, ctx, f_g_c_J):
    """Direction, relaxation and constraint values of the subproblem at ``f_g_c_J``."""
    h = ctx.hyper
    _, g, c, J = (np.asarray(a, dtype=np.float64) for a in f_g_c_J)
    d, kappa, failed = ghost_subproblem(
        g,
        c,
        J.reshape(c.size, -1),
        backend=h["qp_backend"],
        tau=h["proximal_strength"],
        box=h["trust_radius"],
        kappa_lambda=h["relaxation_weight"],
        kappa_box=h["relaxation_radius"],
    )
    state["failures"] += int(failed)
    return d, kappa, c


def _step_ghost(state, ctx):
    """One Stochastic Ghost iteration (spec 3.7) on the host; ``hyper`` holds the public
    ``solver_params`` names, mapped here to the spec's symbols (p0, gamma_0, zeta_gamma,
    tau, beta, lambda_kappa, rho_kappa). Draw order: the MLMC level ``N`` (solver
    stream), then ``2^(N+1)`` objective rows and rows of every cell, then one of each."""
    h, k = ctx.hyper, state["k"]
    state = dict(state)
    derivs, full = _ghost_derivatives(ctx.problem)
    obj_rng, con_rng, solver_rng = ctx.rngs[1], ctx.rngs[2], ctx.rngs[3]
    xj = jnp.asarray(state["x"], dtype=state["dtype"])
    step0, decay = h["learning_rate"], h["learning_rate_decay_rate"]
    if h["learning_rate_rule"] == "inv_iter":
        state["gamma"] = step0 / (k + 1) ** decay
    elif k > 0:
        state["gamma"] = state["gamma"] * (1.0 - decay * state["gamma"])
    if h["sampling"] == "full":
        f_val, *_ = out = full(xj, ctx.data, ctx.aux)
        d_k, kappa, c_used = _ghost_direction(state, ctx, out)
        N = -1
        state["n_samples"] += ctx.n_rows + state["constraint_rows"]
    else:
        p0, members, n = h["mlmc_probability"], state["members"], ctx.n_rows
        largest = max(mm.size for mm in members)
        N = int(solver_rng.geometric(p0)) - 1
        while 2 ** (N + 1) > largest:
            N = int(solver_rng.geometric(p0)) - 1
        size = 2 ** (N + 1)
        obj_big = obj_rng.integers(n, size=size)
        con_big = np.stack([mm[con_rng.integers(mm.size, size=size)] for mm in members])
        obj_one = obj_rng.integers(n, size=1)
        con_one = np.stack([mm[con_rng.integers(mm.size, size=1)] for mm in members])

        def at(obj, con):
            return derivs(
                xj,
                ctx.data,
                ctx.aux,
                jnp.asarray(obj, jnp.int32),
                jnp.asarray(con.reshape(-1), jnp.int32),
            )

        out1 = at(obj_one, con_one)
        f_val = out1[0]
        d1, kappa, c_used = _ghost_direction(state, ctx, out1)
        d_big, _, _ = _ghost_direction(state, ctx, at(obj_big, con_big))
        d_odd, _, _ = _ghost_direction(state, ctx, at(obj_big[0::2], con_big[:, 0::2]))
        d_even, _, _ = _ghost_direction(state, ctx, at(obj_big[1::2], con_big[:, 1::2]))
        weight = p0 * (1.0 - p0) ** N
        d_k = d1 + (d_big - 0.5 * d_odd - 0.5 * d_even) / weight
        state["n_samples"] += 3 * (1 + size)
    state["x"] = state["x"] + state["gamma"] * d_k
    state["k"] = k + 1
    log = {"objective": f_val, "c": c_used, "step_size": state["gamma"], "kappa": kappa}
    return state, {**log, "N_geom": N}


def _ghost_diagnostics(state, logs, hyper):
    return {"n_qp_failures": state["failures"]}


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
