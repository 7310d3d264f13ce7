"""Host-side sampling of the constrained engine (spec 1.3): independent random streams, the
epoch shuffler, group-balanced cyclic streams, the objective stream sliced into chunks,
the per-row loss scales of weighted data, and the host inputs of one chunk of iterations
(pre-drawn, so a chunk runs as one jitted ``lax.scan`` without host synchronisation)."""

from __future__ import annotations

import numpy as np

__all__ = [
    "iteration_budget",
    "traced_hyper",
    "spawn_rngs",
    "EpochSampler",
    "GroupSampler",
    "population_totals",
    "loss_scales",
]


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


def iteration_budget(n_epochs, max_iter, per_epoch: int) -> float:
    """Iterations a run may take: the first of ``n_epochs`` epochs of ``per_epoch``
    iterations and ``max_iter`` (``None``: no bound from it); ``inf`` when neither is set."""
    budget = np.inf
    if n_epochs is not None:
        budget = min(budget, int(np.ceil(n_epochs * per_epoch)))
    if max_iter is not None:
        budget = min(budget, max_iter)
    return budget


def traced_hyper(hyper: dict, real) -> dict:
    """The numeric entries of ``hyper`` as host scalars of dtype ``real`` (traced by the
    jitted chunks; the strings and booleans are static options)."""
    return {
        k: np.asarray(v, dtype=real)
        for k, v in hyper.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
