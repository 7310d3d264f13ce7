"""Run the published ``badr`` 0.1.2 toolbox on one saved problem (reference side of a benchmark).

Runs inside the separate virtual environment ``benchmarks/.venvs/badr`` (GPL package, never a
dependency of fairest), started by ``benchmarks/badr_vs_reference.py``. It only imports and
calls the public badr API (``badr.datasets.Dataset``, ``badr.models.LogisticRegression``,
``badr.metrics.*``, ``badr.Badr``) and writes the fitted coefficients, intercept, group weights
and the end-to-end time as JSON. Scoring is done by the caller with fairest's exact metrics.

Usage: ``python badr_reference_runner.py PROBLEM.npz METRIC OUT.json``
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time

import numpy as np


def main(problem_path: str, metric_name: str, out_path: str) -> None:
    data = np.load(problem_path)
    X_train, y_train, g_train = data["X_train"], data["y_train"], data["g_train"]
    X_test, y_test, g_test = data["X_test"], data["y_test"], data["g_test"]
    num_groups = int(data["num_groups"])

    import_start = time.perf_counter()
    import badr
    from badr.datasets import Dataset

    import_seconds = time.perf_counter() - import_start

    metrics = {
        "demographic_parity": badr.metrics.DemographicParity,
        "group_variance": badr.metrics.GroupVariance,
        "equal_opportunity": badr.metrics.EqualOpportunity,
    }
    load_before = os.getloadavg()
    start = time.perf_counter()
    dset = Dataset(
        "synthetic",
        X_train,
        X_test,
        y_train,
        y_test,
        [np.flatnonzero(g_train == g) for g in range(num_groups)],
        [np.flatnonzero(g_test == g) for g in range(num_groups)],
    )
    model = badr.models.LogisticRegression()  # defaults: l2_reg=1e-3, fit_intercept=True
    metric = metrics[metric_name]()  # default rho=1.0 where it applies
    runner = badr.Badr(dset, model, metric)  # defaults: implicit oracle, SLSQP solver
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # Badr.run always prints the weights
        runner.run(verbose=0)
    seconds = time.perf_counter() - start
    load_after = os.getloadavg()

    solver = getattr(runner, "_solver", None)
    result = {
        "seconds": seconds,
        "import_seconds": import_seconds,
        "loadavg_before": list(load_before),
        "loadavg_after": list(load_after),
        "coef": np.asarray(runner.coef_, dtype=float).ravel().tolist(),
        "intercept": float(np.asarray(runner.intercept_, dtype=float).ravel()[0]),
        "group_weights": np.asarray(runner.group_weights, dtype=float).ravel().tolist(),
        "reported_fairness": float(runner.fairness),
        "solver_success": bool(getattr(solver, "success", False)),
        "solver_message": str(getattr(solver, "message", "")),
        "badr_version": badr.__version__,
    }
    with open(out_path, "w") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main(*sys.argv[1:4])
