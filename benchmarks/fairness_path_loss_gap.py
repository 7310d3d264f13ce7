"""LossGap tolerance path (one vmapped sweep) vs GridSearchCV over the same values and folds.

``LossGapConstrainedClassifier`` (default SSL-ALM solver, 5 epochs, batch 8, seeded) on
bundled Adult (UCI train file, one-hot and standardised, sex as the sensitive feature),
``K`` stratified folds x ``V`` tolerances evenly spaced over [0.005, 0.2]:

* ``GridSearchCV(estimator, {"tolerance": values}, cv=folds, refit=False, n_jobs=1)``
  scored by test accuracy and test loss gap (``fairest.metrics.loss_gap`` of
  ``predict_proba``, groups through metadata routing);
* one cross-validated :func:`fairest.fairness_path` (``cv=folds``, the same folds),
  ``strategy="vmap"``: the solver's epoch loop ``vmap``-ped over the (fold, tolerance)
  pairs in one sweep (``fairest.constrained._path.fit_tolerance_path_folds``), every
  lane on its fold's rows and its refit's draws. The path also scores every point on its
  fold's train part, which the grid search does not.

Each side runs in its own fresh worker process (``run_worker``), timed inside it (CPU
seconds by ``time.process_time``, wall seconds), compilations included, so neither
reuses the other's executables. ``compile_cache``: ``off`` (every process compiles) or
``warm`` (both sides with ``fairest.utils.enable_compilation_cache`` on a fresh folder,
filled by an untimed run of the same side: the grid search's first fold, the whole path,
whose one program holds every fold's lanes, as a second run of a script
finds it: the XLA compilations become cache loads). "Same models": the largest difference of the per-(fold,
value) test accuracy and loss gap between path and grid, and, outside the timings, the
largest absolute parameter difference between every point of a path on the first fold
(``cv=[fold]``) and a refit ``clone(estimator).set_params(tolerance=v).fit`` on that fold.

Run: ``python benchmarks/fairness_path_loss_gap.py`` (``--quick``: 3 folds x 4 values
on 8000 rows; ``--values 8,20``; ``--compile-cache off,warm``; ``--hidden 64,32`` for
the MLP, whose float32 path runs refits: see
``fairest.constrained._path.tolerance_path_supported``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    adult_folds,
    base_parser,
    run_worker,
    split_scores,
    time_grid_search,
    write_results,
    write_worker_result,
)

COLUMNS = [
    "model",
    "strategy",
    "compile_cache",
    "folds",
    "values",
    "grid_wall_s",
    "path_wall_s",
    "wall_ratio",
    "grid_cpu_s",
    "path_cpu_s",
    "cpu_ratio",
    "max_accuracy_diff",
    "max_unfairness_diff",
    "max_param_diff",
    "path_compilations",
    "path_compile_s",
    "load1",
]


def make_estimator(hidden: tuple):
    from fairest import LossGapConstrainedClassifier

    return LossGapConstrainedClassifier(preset="paper", hidden_layer_sizes=hidden, random_state=0)


def tolerances(n_values: int) -> list:
    return [float(v) for v in np.linspace(0.005, 0.2, n_values)]


def loss_gap_scorer():
    from fairest.metrics import loss_gap
    from fairest.model_selection import make_fairness_scorer

    return make_fairness_scorer(loss_gap, response_method="predict_proba")


def run_grid(hidden, values, X, y, A, folds):
    scoring = {"accuracy": "accuracy", "unfairness": loss_gap_scorer()}
    estimator = make_estimator(hidden)
    search = time_grid_search(
        estimator, {"tolerance": values}, X, y, folds, scoring, sensitive_features=A
    )
    accuracy = split_scores(search.result, "accuracy", len(folds))
    unfairness = -split_scores(search.result, "unfairness", len(folds))
    return accuracy, unfairness, "grid"


def run_paths(hidden, values, X, y, A, folds):
    """One cross-validated path over the grid search's folds (``cv=folds``): every
    (fold, tolerance) pair a lane of one sweep."""
    from fairest import fairness_path

    path = fairness_path(
        make_estimator(hidden),
        X,
        y,
        sensitive_features=A,
        param="tolerance",
        values=values,
        cv=folds,
    )
    # (n_values, n_splits) -> (n_splits, n_values), as split_scores gives the grid's
    return path.fold_val_accuracy.T, path.fold_val_unfairness.T, path.strategy


def flat_parameters(model) -> np.ndarray:
    return np.concatenate([np.concatenate([W.ravel(), b.ravel()]) for W, b in model.params_])


def max_parameter_difference(hidden, values, X, y, A, fold) -> float:
    """Path vs one refit per value on ``fold``'s train part: largest parameter gap."""
    from sklearn.base import clone

    from fairest import fairness_path

    train, test = fold
    estimator = make_estimator(hidden)
    path = fairness_path(estimator, X, y, sensitive_features=A, values=values, cv=[fold])
    gaps = []
    for value, (point,) in zip(values, path.estimators):
        refit = clone(estimator).set_params(tolerance=value)
        refit.fit(X[train], y[train], sensitive_features=A[train])
        gaps.append(np.max(np.abs(flat_parameters(point) - flat_parameters(refit))))
    return float(max(gaps))


def worker(args) -> None:
    """One side (``--side grid|path``) timed in this fresh process."""
    warnings.simplefilter("ignore")
    from fairest.utils._compilation_cache import count_compilations, enable_compilation_cache

    if args.cache_dir:
        enable_compilation_cache(args.cache_dir)
    hidden = tuple(int(h) for h in args.hidden.split(",") if h)
    X, y, A, folds = adult_folds(args.quick, args.folds)
    if args.first_fold and args.side == "grid":  # the path's program has every fold's lanes
        folds = folds[:1]
    values = tolerances(args.n_values)
    run = run_grid if args.side == "grid" else run_paths
    load = os.getloadavg()[0]
    with count_compilations() as compiled:
        cpu, wall = time.process_time(), time.perf_counter()
        accuracy, unfairness, strategy = run(hidden, values, X, y, A, folds)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    write_worker_result(
        args.worker,
        {
            "wall_s": wall,
            "cpu_s": cpu,
            "load1": max(load, os.getloadavg()[0]),
            "strategy": strategy,
            "compilations": compiled.count,
            "cache_hits": compiled.cache_hits,
            "compile_s": compiled.seconds,
            "accuracy": accuracy.tolist(),
            "unfairness": unfairness.tolist(),
        },
    )


def main() -> None:
    parser = base_parser(__doc__, "fairness_path_loss_gap")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--values", default="8,20", help="numbers of tolerances, comma-separated")
    parser.add_argument("--hidden", default="", help="hidden layer sizes (default: linear)")
    parser.add_argument(
        "--compile-cache", default="off,warm", help="off and/or warm, comma-separated"
    )
    parser.add_argument("--cache-dir", default=None, help=argparse_hidden())
    parser.add_argument("--first-fold", action="store_true", help=argparse_hidden())
    parser.add_argument("--side", default=None, help=argparse_hidden())
    parser.add_argument("--n-values", type=int, default=8, help=argparse_hidden())
    args = parser.parse_args()
    if args.quick:
        args.folds = 3
    if args.worker:
        return worker(args)
    warnings.simplefilter("ignore")
    hidden = tuple(int(h) for h in args.hidden.split(",") if h)
    rows = []
    common = ["--folds", args.folds, "--hidden", args.hidden] + (["--quick"] if args.quick else [])
    X, y, A, folds = adult_folds(args.quick, args.folds)
    cases = [
        (int(v), cache) for v in args.values.split(",") for cache in args.compile_cache.split(",")
    ]
    param_diffs = {}  # per number of values (the same models with or without a cache)
    for n_values, cache in cases:
        sides = {
            side: run_side(common + ["--side", side, "--n-values", n_values], cache)
            for side in ("path", "grid")
        }
        path, grid = sides["path"], sides["grid"]
        if n_values not in param_diffs:
            param_diffs[n_values] = max_parameter_difference(
                hidden, tolerances(n_values), X, y, A, folds[0]
            )
        row = {
            "model": "linear" if not hidden else f"MLP {hidden}",
            "strategy": path["strategy"],
            "compile_cache": cache,
            "folds": args.folds,
            "values": n_values,
            "grid_wall_s": grid["wall_s"],
            "path_wall_s": path["wall_s"],
            "wall_ratio": grid["wall_s"] / path["wall_s"],
            "grid_cpu_s": grid["cpu_s"],
            "path_cpu_s": path["cpu_s"],
            "cpu_ratio": grid["cpu_s"] / path["cpu_s"],
            "max_accuracy_diff": float(
                np.max(np.abs(np.subtract(path["accuracy"], grid["accuracy"])))
            ),
            "max_unfairness_diff": float(
                np.max(np.abs(np.subtract(path["unfairness"], grid["unfairness"])))
            ),
            "max_param_diff": param_diffs[n_values],
            "path_compilations": f"{path['compilations']} (+{path['cache_hits']} cached)",
            "path_compile_s": path["compile_s"],
            "load1": max(path["load1"], grid["load1"]),
        }
        rows.append(row)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}))
    notes = (
        f"Adult train file (32561 rows{', first 8000' if args.quick else ''}, one-hot, "
        f"standardised), sex; LossGapConstrainedClassifier(preset='paper', hidden_layer_sizes={hidden}, "
        "random_state=0): SSL-ALM, 5 epochs, batch 8, float32; tolerances evenly spaced "
        f"over [0.005, 0.2]; {args.folds} stratified folds. GridSearchCV(refit=False, "
        "n_jobs=1; test accuracy and loss gap) vs one fairness_path(cv=folds) "
        "(strategy='vmap': every (fold, tolerance) pair a lane of one sweep; it also "
        "scores the train parts), each in a fresh process, "
        "compilations included (compile_cache=warm: both sides load them from a persistent "
        "cache filled by an untimed run: the grid search's first fold, the whole path). "
        "Ratios > 1: the path is faster. "
        "Differences: path vs grid "
        "test accuracy / loss gap per (fold, value); max_param_diff: largest parameter gap "
        "of the first fold's path to a refit per value. path_compile_s: wall seconds of the "
        "path's XLA compilations or cache loads (JAX's backend_compile events). "
        "load1: 1-minute load average "
        "(2-core box shared with other jobs: CPU seconds are the steadier figure)."
        + args.extra_notes
    )
    if not args.quick or args.name != "fairness_path_loss_gap":
        print(write_results(args.name, rows, COLUMNS, notes))


def run_side(arguments: list, cache: str) -> dict:
    """One side timed in a fresh process; ``cache="warm"``: with a persistent compilation
    cache in a new folder, filled first by an untimed run (the grid search's first fold,
    the whole path)."""
    if cache == "off":
        return run_worker(__file__, arguments, timeout=3600)
    with tempfile.TemporaryDirectory(prefix="fairest-jax-cache-") as folder:
        cached = [*arguments, "--cache-dir", folder]
        run_worker(__file__, [*cached, "--first-fold"], timeout=3600)
        return run_worker(__file__, cached, timeout=3600)


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
