"""Lanes of the constrained engine: one run of a scan solver ``vmap``-ped over several values
of its traced problem data (:func:`run_lanes`, a tolerance path), and over several folds
of the same data at once (:func:`run_fold_lanes`, a cross-validated path)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fairest.constrained._defaults import CONSTRAINED_TUNING
from fairest.constrained._engine._contract import _Ctx
from fairest.constrained._engine._driver import (
    ChunkHooks,
    _at,
    _chunk_function,
    _final_function,
    _host,
    _lane_shape,
    _lane_states,
    _split_lanes,
    _stacked,
    _takes_final_step,
    drive_chunks,
    run_solver,
)
from fairest.constrained._engine._runtime import HOOKS, chunk_length, device_data
from fairest.constrained._engine._sampling import (
    GroupSampler,
    _objective_sampler,
    _ObjectiveStream,
    iteration_budget,
    loss_scales,
    traced_hyper,
)
from fairest.constrained._engine._solvers import SOLVERS

__all__ = ["FoldRun", "run_lanes", "run_fold_lanes"]


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
    data = device_data(X, zeros, zeros, zeros, dtype)
    fold_rows = _fold_rows(folds, problem.n_cells, balanced, data["y"].shape[0], real)
    data.update({key: jax.device_put(value) for key, value in fold_rows.items()})
    fold_axes = tuple((key, 0 if key in _FOLD_KEYS else None) for key in sorted(data))
    traced = traced_hyper(hyper, real)
    chunk_fn = _chunk_function(
        spec.step,
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
    final_fn = None
    if _takes_final_step(spec, hyper) and max(budgets):
        block_rows = CONSTRAINED_TUNING.full_step_block_rows
        final_fn = _final_function(solver, problem, lanes, fold_axes, block_rows)
    logs, compiling = [], []  # compiling: the thread compiling final_fn (None: none)

    def draw(done):  # every fold's draws of iterations done .. done + L (padded: all count)
        return {key: value[done : done + L] for key, value in inputs.items()}, L, None

    def run_chunk(state, bad, window, meta):
        (state, bad), log = chunk_fn((state, bad), data, aux, traced, window)
        if final_fn is not None and not compiling:  # compiled while the chunks run
            compiling.append(HOOKS.precompile(final_fn, (state, data, aux, traced)))
        return state, bad, log

    def record(state, log, n_active, meta, done, now):
        logs.append(log)

    hooks = ChunkHooks(draw, run_chunk, record)
    state, bad, _ = drive_chunks(state, bad, hooks, budget=n_chunks * L, max_time=None)
    resume = _host(state)
    final = resume
    if final_fn is not None:
        if compiling and compiling[0] is not None:
            compiling[0].join()
        final = _host(final_fn(state, data, aux, traced))
    logs = [{key: np.asarray(value) for key, value in lg.items()} for lg in logs]
    results = []
    for f, d in enumerate(draws):
        fold_logs = [{key: value[f][:, : d["budget"]] for key, value in _joined(logs).items()}]
        results.append(
            _split_lanes(
                spec,
                hyper,
                _at(final, f),
                _at(resume, f),
                np.asarray(bad)[f],
                fold_logs if logs and logs[0] else [],
                (d["budget"], d["per_epoch"]),
            )
        )
    return results


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
    budget = iteration_budget(n_epochs, max_iter, T)
    if not np.isfinite(budget):
        raise ValueError("one of n_epochs or max_iter must be set.")
    L = chunk_length(T)
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
    return _stacked(per_fold)
