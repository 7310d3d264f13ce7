"""The one driver of the constrained engine: the iteration loop of every solver.

:func:`run_solver` places the data, draws the iterations' inputs on the host and runs the
jitted chunks of a guarded ``lax.scan`` (:func:`guarded_scan`: the divergence flag stays on
the device), within the budget (epochs, iterations, seconds), with the history, the final
full-data step and the lanes of :mod:`._lanes`; host-loop solvers run :func:`_run_host`.
:func:`solve` and :func:`refit_on_divergence` refit a diverged run with smaller steps.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from functools import lru_cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax import lax

from fairest._solvers._guard import all_finite, guard_block, guarded_scan, refit_on_divergence
from fairest.constrained._defaults import CONSTRAINED_TUNING
from fairest.constrained._engine._contract import RunResult, _Ctx
from fairest.constrained._engine._runtime import (
    HOOKS,
    chunk_length,
    device_data,
    padded_design,
)
from fairest.constrained._engine._sampling import (
    GroupSampler,
    _chunk_inputs,
    _objective_sampler,
    _ObjectiveStream,
    iteration_budget,
    loss_scales,
    spawn_rngs,
    traced_hyper,
)
from fairest.constrained._engine._solvers import SOLVERS
from fairest.utils._reporting import as_history

__all__ = [
    "ChunkHooks",
    "all_finite",
    "chunk_function",
    "drive_chunks",
    "guard_block",
    "guarded_scan",
    "padded_design",
    "run_solver",
    "solve",
    "refit_on_divergence",
    "scaled_step_sizes",
]


def _host(state):
    """Host (numpy) copy of a solver state."""
    return jax.tree_util.tree_map(np.asarray, state)


def _at(state, index):
    """Entry ``index`` of every array of a host state (one lane, one fold)."""
    return jax.tree_util.tree_map(lambda a: a[index], state)


def _stacked(states):
    """Host states stacked along a new leading axis (lanes, folds)."""
    return jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(v) for v in a]), *states)


def _host_finite(state) -> bool:
    """Whether every floating-point array of a host state is finite."""
    return all(
        np.all(np.isfinite(v))
        for v in jax.tree_util.tree_leaves(state)
        if np.issubdtype(np.asarray(v).dtype, np.inexact)
    )


@lru_cache(maxsize=64)
def _chunk_function(
    step: Callable,
    static: tuple,
    problem,
    obj_full: bool,
    con_full: bool,
    eval_every: int,
    log_keys: tuple | None = None,
    lanes: tuple = (),
    fold_axes: tuple = (),
):
    """Jitted ``scan`` over one chunk of iterations of a solver's ``step`` (``Solver.step``,
    called with the ``static`` options as keywords); cached on the static configuration
    (``problem`` included: any hashable object its step reads as ``ctx.problem``).
    ``log_keys`` (``None`` = all) are the per-iteration log entries
    the scan returns. ``lanes`` (``(key, axis)`` of every ``aux`` entry, axis 0 or
    ``None``): the chunk ``vmap``-ped over the lanes of the state, the divergence flag and
    the ``aux`` entries of axis 0, every lane on the same data and draws. ``fold_axes``
    (``(key, axis)`` of every ``data`` entry, :func:`run_fold_lanes`): that vmapped chunk
    ``vmap``-ped again over folds, each with its own draws (``inputs``, fold axis 1) and
    the ``data`` entries of axis 0 (its rows' weights).
    """
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
                log = {**log, "full": lax.cond(do_eval, evaluate, no_eval, st.x)}
            return st, log

        # divergence guard on the parameters (the rest of the state follows them within
        # an iteration; the driver checks all of it at the end); reported iteration: the
        # last active one of the block
        return guarded_scan(
            body,
            *carry,
            inputs,
            parameters=lambda st: st.x,
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
        diverged = jnp.logical_and(bad < 0, ~all_finite(state.x))
        last = jnp.max(jnp.where(inputs["active"], inputs["it"], 0))
        return (state, jnp.where(diverged, last, bad)), logs

    if fold_axes:
        by_lane = jax.vmap(fold_chunk, in_axes=((0, 0), None, dict(lanes), None, None))
        return jax.jit(jax.vmap(by_lane, in_axes=((0, 0), dict(fold_axes), None, None, 1)))
    if lanes:
        return jax.jit(jax.vmap(chunk, in_axes=((0, 0), None, dict(lanes), None, None)))
    return jax.jit(chunk)


def chunk_function(spec, problem, static: tuple = (), *, record: bool = True):
    """The driver's jitted chunk for a scan solver record ``spec`` (a :class:`Solver`,
    e.g. one outside :data:`SOLVERS` whose caller draws its inputs):
    ``chunk((state, bad), data, aux, hyper, inputs) -> ((state, bad), log)``, a guarded
    scan (:func:`guarded_scan`) of ``spec.step`` over the iterations of ``inputs`` (each
    with ``active`` and ``it``), the inactive ones and those after a divergence skipped.
    ``problem`` (hashable) is the step's ``ctx.problem``; ``record``: the log holds every
    entry of the step's, else those of ``spec.device_logs``."""
    log_keys = None if record else spec.device_logs
    return _chunk_function(spec.step, static, problem, False, False, 0, log_keys)


@lru_cache(maxsize=16)
def _final_function(
    name: str, problem, lanes: tuple = (), fold_axes: tuple = (), block_rows: int | None = None
):
    """Jitted final full-data step of solver ``name`` (vmapped over ``lanes`` / folds as
    :func:`_chunk_function`); ``block_rows`` (a key of the cache, so that an override of
    ``CONSTRAINED_TUNING.full_step_block_rows`` takes effect) is read by the caller."""

    def final(state, data, aux, hyper):
        ctx = _Ctx(problem, data, aux, hyper, True, True)
        return SOLVERS[name].final_step(state, ctx, block_rows)

    if fold_axes:
        by_lane = jax.vmap(final, in_axes=(0, None, dict(lanes), None))
        return jax.jit(jax.vmap(by_lane, in_axes=(0, dict(fold_axes), None, None)))
    if lanes:
        return jax.jit(jax.vmap(final, in_axes=(0, None, dict(lanes), None)))
    return jax.jit(final)


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
    initial_state: tuple | None = None  # resume from this state (partial_fit), not init
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
    initial_state: tuple | None = None,
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
    data = device_data(X, np.asarray(y), groups, cells, dtype, loss_scale, cell_scale)
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


def _takes_final_step(spec, hyper) -> bool:
    """Whether a run of solver ``spec`` ends with its final full-data step."""
    return spec.final_step is not None and bool(hyper.get("final_full_step", False))


class ChunkHooks(NamedTuple):
    """What a run does around the chunks of :func:`drive_chunks` (host functions).

    ``draw(done) -> (inputs, n_active, meta)``: the inputs of the next chunk, whose first
    iteration is ``done`` and whose first ``n_active`` iterations count (the rest is
    padding); ``meta`` goes to ``run`` and ``record``. ``run(state, bad, inputs, meta) ->
    (state, bad, log)``: the chunk (a jitted guarded scan, :func:`guarded_scan`; ``bad``
    as there), after what the chunk needs from the host (e.g. the masks of an epoch).
    ``record(state, log, n_active, meta, done, now)``: after the chunk (its first
    iteration ``done``, ``now`` seconds after the run began): keep its log, update what
    the next chunk reads (masks, schedules, best iterates), report progress.
    """

    draw: Callable
    run: Callable
    record: Callable


def drive_chunks(state, bad, hooks: ChunkHooks, *, budget: float, max_time: float | None):
    """The one iteration loop of the engine: chunks until ``budget`` iterations have run,
    ``max_time`` seconds have passed (checked between chunks) or the parameters diverged.

    ``bad`` (-1, or the first non-finite iteration; one per lane) stays on the device: the
    loop stops one chunk after the chunk in which every lane diverged, reading the previous
    chunk's flag while the device runs the current one (no extra wait). The host's copy of
    a chunk's inputs is dropped once the device holds it, and after the first chunk (its
    compilation) the freed memory goes back to the system (:data:`HOOKS`). Returns
    ``(state, bad, iterations run)``.
    """
    done, start, previous_bad = 0, time.perf_counter(), None
    while done < budget:
        if max_time is not None and time.perf_counter() - start >= max_time:
            break
        if previous_bad is not None and np.all(np.asarray(previous_bad) >= 0):
            break
        inputs, n_active, meta = hooks.draw(done)
        previous_bad = bad
        state, bad, log = hooks.run(state, bad, inputs, meta)
        del inputs
        if not done:
            HOOKS.release_memory()
        hooks.record(state, log, n_active, meta, done, time.perf_counter() - start)
        done += n_active
    return state, bad, done


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
    budget = iteration_budget(run.n_epochs, run.max_iter, T)
    if not np.isfinite(budget) and run.max_time is None:
        raise ValueError("one of n_epochs, max_iter or max_time must be set.")
    L = chunk_length(T)

    static = tuple(spec.options(hyper).items())
    n_draws = spec.constraint_draws(hyper) if problem.m > 0 else 0
    real = np.dtype(dtype)  # chunk inputs are cast on the host: no eager device program
    traced = traced_hyper(hyper, real)
    # without a history only what the diagnostics read leaves the device
    log_keys = None if run.period else spec.device_logs
    chunk_fn = _chunk_function(
        spec.step,
        static,
        problem,
        obj_sampler.full,
        con_sampler.full,
        run.eval_every,
        log_keys,
        run.lanes,
    )
    if run.initial_state is not None:
        state = _host(run.initial_state)
    elif run.lanes:
        state = _lane_states(spec, x0, ctx, run.lanes)
    else:
        state = spec.init(x0, ctx)
    streams = [_ObjectiveStream(obj_sampler)]  # emptied before the final step
    offset = run.start_iter
    final_fn = None
    if _takes_final_step(spec, hyper):
        block_rows = CONSTRAINED_TUNING.full_step_block_rows
        final_fn = _final_function(name, problem, run.lanes, block_rows=block_rows)

    logs, clock = [], [0.0]  # clock: the end of the previous chunk, in seconds
    # first non-finite iteration (-1: none), on device; one per lane
    bad = np.full(_lane_shape(ctx.aux, run.lanes), -1, np.int32)
    keep = (slice(None),) * bool(run.lanes)  # the lane axis of the logs
    compiling = []  # the thread compiling final_fn (None: none), once asked for

    def draw(done):
        n_active = int(min(L, budget - done))
        inputs, epoch, t = _chunk_inputs(
            streams[0], con_sampler, solver_rng, L, n_active, offset + done, n_draws, real
        )
        return inputs, n_active, (epoch, t)

    def run_chunk(state, bad, inputs, meta):
        (state, bad), log = chunk_fn((state, bad), data, aux, traced, inputs)
        if final_fn is not None and not compiling:  # compiled while the chunks run
            compiling.append(HOOKS.precompile(final_fn, (state, data, aux, traced)))
        return state, bad, log

    def record(state, log, n_active, meta, done, now):
        if run.period:
            epoch, t = meta
            log = _recorded_log(log, n_active, done, (epoch, t, T), (clock[0], now))
            clock[0] = now
        else:  # device arrays, read once after the loop
            log = {key: value[(*keep, slice(n_active))] for key, value in log.items()}
            if run.max_time is not None:  # the clock must see the chunk's work
                jax.block_until_ready(state)
        logs.append(log)
        if run.progress is not None:
            run.progress(done + n_active, (done + n_active) / T)

    hooks = ChunkHooks(draw, run_chunk, record)
    state, bad, done = drive_chunks(state, bad, hooks, budget=budget, max_time=run.max_time)
    if compiling and compiling[0] is not None:
        compiling[0].join()
    if run.lanes:
        final = final_fn if done > 0 else None
        return _lane_results(name, ctx, state, bad, logs, (done, T), final, traced)
    streams.clear()  # its pre-drawn epoch, and the freed draws' pages: not beside the final step
    rows = (obj_sampler, con_sampler, n_draws)
    return _scan_result(spec, ctx, state, int(bad), logs, (done, T), final_fn, traced, run, rows)


def _recorded_log(log, n_active: int, done: int, epochs, clock) -> dict:
    """Host copy of a chunk's log for the history (one host sync per chunk): its
    ``n_active`` iterations from ``done`` on, with their epoch (``epochs``: the chunk's
    epoch numbers, in-epoch indices and iterations per epoch) and their times spread
    evenly over the chunk's interval ``clock``."""
    epoch, t, per_epoch = epochs
    chunk_start, now = clock
    log = jax.tree_util.tree_map(lambda a: np.asarray(a)[:n_active], log)
    frac = np.arange(1, n_active + 1) / n_active
    log["time"] = chunk_start + frac * (now - chunk_start)
    log["epoch"] = epoch[:n_active] + (t[:n_active] + 1) / per_epoch
    log["iter"] = np.arange(done, done + n_active)
    return log


def _scan_result(spec, ctx, state, nonfinite, logs, iterations, final_fn, traced, run, rows):
    """The :class:`RunResult` of a scan run (no lanes): the state to resume from, the
    final full-data step where the run stayed finite, the finiteness check of the whole
    state, the solver's diagnostics and the history."""
    hyper, (done, T) = ctx.hyper, iterations
    obj_sampler, con_sampler, n_draws = rows
    resume_state = _host(state)  # before the final step
    HOOKS.release_memory()  # the chunks' freed draws and the compiler's working memory
    if final_fn is not None and done > 0 and nonfinite < 0:
        state = final_fn(state, ctx.data, ctx.aux, traced)
    x = spec.parameters(state, hyper)
    state_np = _host(state)
    if nonfinite < 0 and not _host_finite(state_np):
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
    return _stacked(states)


def _lane_results(name, ctx, state, bad, logs, iterations, final_fn, traced) -> list:
    """One :class:`RunResult` per lane of a vmapped scan (the tail of :func:`_run_scan`
    per lane; no history): the final full step (``final_fn``, ``None``: none) where a
    lane stayed finite. ``iterations``: ``(iterations run, iterations per epoch)``."""
    spec, hyper = SOLVERS[name], ctx.hyper
    resume = _host(state)
    final = resume
    if final_fn is not None:
        final = _host(final_fn(state, ctx.data, ctx.aux, traced))
    logs = [{key: np.asarray(value) for key, value in lg.items()} for lg in logs]
    return _split_lanes(spec, hyper, final, resume, np.asarray(bad), logs, iterations)


def _split_lanes(spec, hyper, final, resume, bad, logs, iterations) -> list:
    """:class:`RunResult` of every lane from the host copies of the lanes' final and
    resume states, divergence flags and logs (lane axis first)."""
    n_iter, per_epoch = iterations
    results = []
    for lane, lane_bad in enumerate(bad.tolist()):
        lane_state = _at(final if lane_bad < 0 else resume, lane)
        x = np.asarray(spec.parameters(lane_state, hyper))
        if lane_bad < 0 and not _host_finite(lane_state):
            lane_bad = max(n_iter - 1, 0)
        lane_logs = [{key: value[lane] for key, value in lg.items()} for lg in logs]
        extras = {
            **spec.diagnostics(lane_state, lane_logs, hyper),
            "nonfinite_iter": lane_bad if lane_bad >= 0 else None,
            "resume_state": _at(resume, lane),
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
                "n_samples": state.n_samples,
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
    return RunResult(x_out, state, history, k, np.nan, extras)


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
