"""Weighted L2 logistic regression: fairest's ERM driver vs scikit-learn.

For each (n, d) this times, in the same process and on the same weighted problem:
- fairest ``solve_weighted_glm`` (float64; Newton, or L-BFGS with a Newton finish, chosen
  by shape: the ``fairest solver`` column), cold (first call, JIT compile included) and
  warm (same bucket, what a grid search or CV fold pays);
- scikit-learn ``LogisticRegression(solver="lbfgs")`` at its default tol (1e-4) and at a
  tight tol (1e-8), and ``solver="newton-cholesky"`` (tol 1e-8).
Speed ratio = scikit-learn time / fairest warm time (> 1: fairest is faster). The
relative objective gap of every solution to the best one found says what each run
bought. Run: ``python benchmarks/erm_vs_sklearn.py [--quick]``; ``--no-split`` runs
fairest's passes on one thread (no row split over the cores), for an A/B. The
estimator-level table (fresh processes, peak memory, compiled executables, BADR) is
``speed_table.py``.
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import nullcontext

import numpy as np
from _common import measure, write_results
from sklearn.linear_model import LogisticRegression

from fairest._solvers._defaults import SOLVER_TUNING
from fairest._solvers._driver import solve_weighted_glm

ALPHA = 1e-3


def _problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w_true = rng.normal(size=d) / np.sqrt(d)
    y = (X @ w_true + 0.5 * rng.normal(size=n) > 0).astype(np.float64)
    groups = rng.integers(0, 4, n)
    totals = np.bincount(groups, minlength=4).astype(float)
    c = (0.25 / totals)[groups]  # uniform group weights, sample weights sum to one
    return X, y, c


def _objective(theta, X, y, c):
    s = X @ theta[1:] + theta[0]
    return float(np.sum(c * (np.logaddexp(0, s) - y * s)) + 0.5 * ALPHA * np.sum(theta[1:] ** 2))


def _sklearn(X, y, c, solver, tol):
    model = LogisticRegression(C=1.0 / ALPHA, solver=solver, tol=tol, max_iter=10_000)
    model.fit(X, y, sample_weight=c)
    return np.r_[model.intercept_, model.coef_.ravel()]


def best_time(function, repeats):
    """Best wall and CPU seconds of ``function()`` over ``repeats`` calls."""
    runs = [measure(function) for _ in range(repeats)]
    return min(m.wall_s for m in runs), min(m.cpu_s for m in runs)


def run(sizes, repeats):
    rows = []
    for n, d in sizes:
        X, y, c = _problem(n, d)
        start = time.perf_counter()
        ours = solve_weighted_glm("logistic", X, y, c, ALPHA)
        cold = time.perf_counter() - start
        X_other = X[: n - n // 50]  # another row count in the same bucket: no recompilation
        solve_weighted_glm("logistic", X_other, y[: len(X_other)], c[: len(X_other)], ALPHA)
        warm, warm_cpu = best_time(
            lambda X=X, y=y, c=c: solve_weighted_glm("logistic", X, y, c, ALPHA), repeats
        )
        loose = solve_weighted_glm("logistic", X, y, c, ALPHA, tol=1e-4)  # sklearn's tol
        loose_s, loose_cpu = best_time(
            lambda X=X, y=y, c=c: solve_weighted_glm("logistic", X, y, c, ALPHA, tol=1e-4),
            repeats,
        )
        thetas = {"fairest": ours.theta, "fairest tol=1e-4": loose.theta}
        times = {}
        for label, solver, tol in [
            ("sklearn lbfgs tol=1e-4", "lbfgs", 1e-4),
            ("sklearn lbfgs tol=1e-8", "lbfgs", 1e-8),
            ("sklearn newton-cholesky tol=1e-8", "newton-cholesky", 1e-8),
        ]:
            thetas[label] = _sklearn(X, y, c, solver, tol)
            times[label] = best_time(
                lambda X=X, y=y, c=c, solver=solver, tol=tol: _sklearn(X, y, c, solver, tol),
                repeats,
            )
        objectives = {k: _objective(t, X, y, c) for k, t in thetas.items()}
        best = min(objectives.values())
        row = {
            "n": n,
            "d": d,
            "fairest cold (s)": cold,
            "fairest warm (s)": warm,
            "fairest warm CPU (s)": warm_cpu,
            "fairest solver": ours.solver,
            "fairest iters": ours.n_iter,
            "fairest rel. gap": (objectives["fairest"] - best) / abs(best),
            "fairest tol=1e-4 warm (s)": loose_s,
            "fairest tol=1e-4 CPU (s)": loose_cpu,
            "fairest tol=1e-4 solver": loose.solver,
            "fairest tol=1e-4 rel. gap": (objectives["fairest tol=1e-4"] - best) / abs(best),
            "load": os.getloadavg()[0],
        }
        for label, (seconds, cpu) in times.items():
            row[f"{label} (s)"] = seconds
            row[f"{label} CPU (s)"] = cpu
            row[f"{label} ratio"] = seconds / warm
            row[f"{label} rel. gap"] = (objectives[label] - best) / abs(best)
        sk_seconds, sk_cpu = times["sklearn lbfgs tol=1e-4"]
        row["tol=1e-4 ratio"] = sk_seconds / loose_s
        row["tol=1e-4 CPU ratio"] = sk_cpu / loose_cpu
        rows.append(row)
        print(row, flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke test)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--sizes", default="", help="comma separated n x d, e.g. 10000x500,100000x500"
    )
    parser.add_argument("--name", default="erm_vs_sklearn", help="results file stem")
    parser.add_argument(
        "--no-split",
        action="store_true",
        help="run every pass on one thread (A/B of fairest._solvers._row_split)",
    )
    args = parser.parse_args()
    if args.sizes:
        sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
    elif args.quick:
        sizes = [(10_000, 20), (10_000, 100)]
    else:
        sizes = [
            (10_000, 20),
            (10_000, 100),
            (100_000, 20),
            (100_000, 100),
            (1_000_000, 20),
            (1_000_000, 100),
        ]
    one_thread = SOLVER_TUNING.override(max_split_threads=1) if args.no_split else nullcontext()
    with one_thread:
        rows = run(sizes, args.repeats)
    columns = [
        "n",
        "d",
        "fairest cold (s)",
        "fairest warm (s)",
        "fairest warm CPU (s)",
        "fairest solver",
        "fairest iters",
        "sklearn lbfgs tol=1e-4 ratio",
        "sklearn lbfgs tol=1e-4 rel. gap",
        "sklearn lbfgs tol=1e-8 ratio",
        "sklearn newton-cholesky tol=1e-8 ratio",
        "fairest tol=1e-4 warm (s)",
        "fairest tol=1e-4 solver",
        "fairest tol=1e-4 rel. gap",
        "fairest tol=1e-4 CPU (s)",
        "sklearn lbfgs tol=1e-4 (s)",
        "sklearn lbfgs tol=1e-4 CPU (s)",
        "tol=1e-4 ratio",
        "tol=1e-4 CPU ratio",
        "load",
    ]
    notes = (
        "Weighted L2 logistic regression (alpha=1e-3, 4 groups, uniform group weights). "
        "ratio = scikit-learn seconds / fairest warm seconds (> 1 means fairest is faster); "
        "rel. gap = (objective - best objective) / best objective. `fairest` runs at its "
        "default tol 1e-10; `fairest tol=1e-4` at scikit-learn's default tol, compared with "
        "scikit-learn lbfgs at tol 1e-4 (`tol=1e-4 ratio`, wall; `tol=1e-4 CPU ratio`, CPU "
        "seconds, the steadier figure on a loaded box). `load` = 1-minute load average "
        "after the case (2 shared cores)."
    )
    print(write_results(args.name + ("_quick" if args.quick else ""), rows, columns, notes))


if __name__ == "__main__":
    main()
