"""Fairness paths vs GridSearchCV: the same values and folds, the same models.

For every family, ``K`` folds x ``V`` values of its knob on bundled Adult (UCI train file,
one-hot and standardised, sex as the sensitive feature):

* ``GridSearchCV(estimator, {param: values}, cv=folds, refit=False)`` with an accuracy
  and a demographic-parity scorer (groups through metadata routing), ``n_jobs=1``;
* one cross-validated :func:`fairest.fairness_path` over the same folds (``cv=folds``:
  every (fold, value) model fitted on the fold's train part and scored on its test part;
  ERMI's continuation and the post-processor's shared scores run one path per fold inside
  it, the loss-gap lanes every (fold, value) pair in one sweep).

``--values 8,20`` (default): one row per family and number of values; 8 are the family's
values below, any other ``N`` evenly spaced ones over the same range. Every row runs in a
fresh worker process (:func:`_common.run_worker`), so its cold figures include every
compilation it needs. The post-processor's path fits its classifier once per fold where the grid search
fits it once per (fold, value), so its ratio grows with the number of values and stays
below it (about ``V`` times the fit's share of a grid cell).

Both are timed once each in the row's process, wall and CPU seconds, each including its own
compilations (the path runs first, so GridSearchCV reuses nothing the path compiled that
a plain refit would not compile anyway: the path's template fit compiles the refit's own
objective and W* kernels, so the grid search gets those for free and the ratio is, if
anything, understated). The paths are then timed a second time (``path_warm_cpu_s``,
everything compiled, as the grid search ran): ``warm_cpu_ratio`` is the steady-state
ratio, the cold one minus the path's one-off compilations; ``path_cached_cpu_s``: the paths
alone in a second fresh process with JAX's persistent compilation cache filled by the
first (``fairest.utils.enable_compilation_cache``; imports are done before every timing).
"Same models" is checked on
the scores: the largest difference between
the path's and the grid search's per-(fold, value) test accuracy and unfairness, and on
the parameters, outside the timings: every value of the first fold refitted alone
(``clone(estimator).set_params(param=value).fit``), the largest absolute difference of
the coefficients (ERMI: ``coef_`` and ``intercept_``; post-processor: the wrapped
model's ``coef_`` and the group ``thresholds_``).

Families: ERMI ``fairness_weight`` (full batch, ``strategy="continuation"``: Newton continued
along the sorted weights, exact Hessian) and the
post-processor's ``tolerance`` around a logistic regression (``"shared_scores"``);
``--families loss_gap`` adds LossGapConstrainedClassifier's ``tolerance`` (``"vmap"``;
``benchmarks/fairness_path_loss_gap.py`` is its own benchmark, side by side in fresh
processes).

Run: ``python benchmarks/fairness_path.py`` (both families at 8 and 20 values;
``--quick``: 3 folds x 4 values on 8000 rows).
"""

from __future__ import annotations

import argparse
import shutil
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

FAMILIES = {
    "ermi": ("fairness_weight", [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]),
    "threshold": ("tolerance", [0.0, 0.01, 0.02, 0.04, 0.06, 0.1, 0.15, 0.2]),
    "loss_gap": ("tolerance", [0.005, 0.01, 0.02, 0.04, 0.06, 0.1, 0.15, 0.2]),
}
COLUMNS = [
    "family",
    "strategy",
    "folds",
    "values",
    "grid_wall_s",
    "path_wall_s",
    "wall_ratio",
    "grid_cpu_s",
    "path_cpu_s",
    "cpu_ratio",
    "path_warm_cpu_s",
    "warm_cpu_ratio",
    "path_cached_cpu_s",
    "cached_cpu_ratio",
    "max_accuracy_diff",
    "max_unfairness_diff",
    "max_param_diff",
    "load",
]


def make_estimator(family: str):
    from sklearn.linear_model import LogisticRegression

    from fairest import ERMIClassifier, GroupThresholdClassifier, LossGapConstrainedClassifier

    if family == "ermi":
        return ERMIClassifier()
    if family == "threshold":
        return GroupThresholdClassifier(LogisticRegression(max_iter=1000))
    return LossGapConstrainedClassifier(preset="paper", hidden_layer_sizes=(), random_state=0)


def scorers(family: str):
    from sklearn.metrics import accuracy_score

    from fairest.metrics import demographic_parity_difference
    from fairest.model_selection import make_fairness_scorer
    from fairest.postprocessing import make_group_scorer

    if family == "threshold":  # predict needs the groups
        return {
            "accuracy": make_group_scorer(accuracy_score),
            "unfairness": make_group_scorer(demographic_parity_difference, greater_is_better=False),
        }
    return {
        "accuracy": "accuracy",
        "unfairness": make_fairness_scorer("demographic_parity_difference"),
    }


def run_grid(family, param, values, X, y, A, folds):
    """GridSearchCV over the values and folds: per-(fold, value) test accuracy and
    unfairness, and the :class:`_common.Measurement` of the search."""
    timing = time_grid_search(
        make_estimator(family), {param: values}, X, y, folds, scorers(family), sensitive_features=A
    )
    accuracy = split_scores(timing.result, "accuracy", len(folds))
    unfairness = -split_scores(timing.result, "unfairness", len(folds))
    return accuracy, unfairness, timing


def run_paths(family, param, values, X, y, A):
    """One cross-validated path over the grid search's folds (``cv=folds``): the
    (n_splits, n_values) test accuracy and unfairness, as ``split_scores`` gives the
    grid's, and the strategy."""
    from fairest import fairness_path

    def run(folds):
        path = fairness_path(
            make_estimator(family),
            X,
            y,
            sensitive_features=A,
            param=param,
            values=values,
            cv=folds,
        )
        return path.fold_val_accuracy.T, path.fold_val_unfairness.T, path.strategy

    return run


def fitted_parameters(model) -> np.ndarray:
    """The fitted numbers that define ``model``'s predictions, flattened."""
    if hasattr(model, "thresholds_"):
        inner = model.estimator_
        return np.concatenate(
            [np.ravel(inner.coef_), np.ravel(inner.intercept_), np.ravel(model.thresholds_)]
        )
    return np.concatenate([np.ravel(model.coef_), np.ravel(model.intercept_)])


def max_parameter_difference(family, param, values, X, y, A, fold) -> float:
    """Path vs one refit per value on ``fold``'s train part: largest coefficient gap."""
    from sklearn.base import clone

    from fairest import fairness_path

    train, _ = fold
    estimator = make_estimator(family)
    path = fairness_path(
        estimator, X, y, sensitive_features=A, param=param, values=values, cv=[fold]
    )
    gaps = []
    for value, (point,) in zip(values, path.estimators):
        refit = clone(estimator).set_params(**{param: value})
        refit.fit(X[train], y[train], sensitive_features=A[train])
        a, b = fitted_parameters(point), fitted_parameters(refit)
        gaps.append(np.max(np.where(a == b, 0.0, np.abs(a - b))))  # equal infinities: 0
    return float(max(gaps))


def timed(function, *args):
    cpu, wall = time.process_time(), time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def family_values(family: str, count: int | None) -> tuple[str, list]:
    """The family's knob and its values: the 8 of FAMILIES, or ``count`` evenly spaced."""
    param, values = FAMILIES[family]
    if count and count != len(values):
        values = [float(v) for v in np.linspace(min(values), max(values), count)]
    return param, values


def prepare(family: str, count: int | None, quick: bool, n_folds: int, cache_dir: str | None):
    """The row's data, folds, knob and values; imports (fairest, the estimator, JAX's
    backend) done before any timing, and JAX's persistent compilation cache turned on
    in ``cache_dir`` when given."""
    import jax

    from fairest import fairness_path  # noqa: F401  (imported here, not timed)
    from fairest.utils import enable_compilation_cache

    if cache_dir:
        enable_compilation_cache(cache_dir)
    make_estimator(family)
    jax.devices()
    X, y, A, folds = adult_folds(quick, n_folds)
    param, values = family_values(family, count)
    return X, y, A, folds, param, values[:4] if quick else values


def measure_cached_path(family, count, quick, n_folds, cache_dir) -> dict:
    """The paths alone in a fresh process whose compilation cache is already filled."""
    X, y, A, folds, param, values = prepare(family, count, quick, n_folds, cache_dir)
    _, wall, cpu = timed(run_paths(family, param, values, X, y, A), folds)
    return {"path_cached_wall_s": wall, "path_cached_cpu_s": cpu}


def measure_row(family, count, quick, n_folds, cache_dir=None) -> dict:
    """One row, in this process: the paths (cold), the grid search, the paths again
    (warm) and the parameter check."""
    import os

    X, y, A, folds, param, values = prepare(family, count, quick, n_folds, cache_dir)
    load = os.getloadavg()[0]
    (path_acc, path_unf, strategy), path_wall, path_cpu = timed(
        run_paths(family, param, values, X, y, A), folds
    )
    grid_acc, grid_unf, grid = run_grid(family, param, values, X, y, A, folds)
    _, _, path_warm_cpu = timed(run_paths(family, param, values, X, y, A), folds)
    return {
        "family": f"{family} ({param})",
        "strategy": strategy,
        "folds": len(folds),
        "values": len(values),
        "grid_wall_s": grid.wall_s,
        "path_wall_s": path_wall,
        "wall_ratio": grid.wall_s / path_wall,
        "grid_cpu_s": grid.cpu_s,
        "path_cpu_s": path_cpu,
        "cpu_ratio": grid.cpu_s / path_cpu,
        "path_warm_cpu_s": path_warm_cpu,
        "warm_cpu_ratio": grid.cpu_s / path_warm_cpu,
        "max_accuracy_diff": float(np.max(np.abs(path_acc - grid_acc))),
        "max_unfairness_diff": float(np.max(np.abs(path_unf - grid_unf))),
        "max_param_diff": max_parameter_difference(family, param, values, X, y, A, folds[0]),
        "load": max(load, grid.load, os.getloadavg()[0]),
    }


def main() -> None:
    parser = base_parser(__doc__, "fairness_path")
    parser.add_argument("--families", default="ermi,threshold")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--values", default="8,20", help="numbers of values per family, comma separated"
    )
    parser.add_argument("--row", default=None, help=argparse.SUPPRESS)  # worker: family,count
    parser.add_argument("--cache-dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--path-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    n_folds = 3 if args.quick else args.folds
    if args.worker:
        family, count = args.row.split(",")
        measure = measure_cached_path if args.path_only else measure_row
        result = measure(family, int(count), args.quick, n_folds, args.cache_dir)
        write_worker_result(args.worker, result)
        return
    rows = []
    for family in args.families.split(","):
        for count in args.values.split(","):
            cache_dir = tempfile.mkdtemp(prefix="fairness-path-cache-")  # empty: cold
            options = ["--row", f"{family},{count}", "--folds", str(args.folds)]
            options += ["--cache-dir", cache_dir] + (["--quick"] if args.quick else [])
            row = run_worker(__file__, options, 7200)
            row.update(run_worker(__file__, options + ["--path-only"], 7200))
            shutil.rmtree(cache_dir, ignore_errors=True)
            row = {key: value for key, value in row.items() if not key.startswith("process_")}
            row["cached_cpu_ratio"] = row["grid_cpu_s"] / row["path_cached_cpu_s"]
            rows.append(row)
            print({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items()})
    X, y, *_ = adult_folds(args.quick, n_folds)
    notes = (
        f"Adult train file ({len(y)} rows, {X.shape[1]} features), sex; {n_folds} stratified "
        "folds; GridSearchCV(refit=False, n_jobs=1) vs one fairness_path(cv=folds), each "
        "timed once in the row's own fresh process (compilations included: cold). "
        "path_warm_cpu_s: the paths again in that process (everything compiled). "
        "path_cached_cpu_s: the paths alone in a second fresh process whose JAX persistent "
        "compilation cache (fairest.utils.enable_compilation_cache, a fresh directory per "
        "row, filled by the first process) holds the row's programs. Ratios > "
        "1: the path is faster. Differences: path vs grid search test accuracy / "
        "demographic parity difference per (fold, value); max_param_diff: largest "
        "coefficient (and threshold) gap to a refit per value on the first fold. values: 8 "
        "= the family's listed values, 20 = evenly spaced over the same range. load: "
        "1-minute load average (2-core box shared with other jobs: CPU seconds are the "
        "steadier figure)." + args.extra_notes
    )
    if not args.quick or args.name != "fairness_path":
        print(write_results(args.name, rows, COLUMNS, notes))


if __name__ == "__main__":
    main()
