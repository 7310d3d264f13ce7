"""Worker of ``benchmarks/certified_seldonian.py``: runs seldonian-engine 0.8.x in ITS OWN
virtual environment (``/tmp/venv-seldonian``), never in fairest's.

Usage (from ``certified_seldonian.py`` through ``_common.run_worker``)::

    /tmp/venv-seldonian/bin/python benchmarks/certified_seldonian_runner.py \\
        --worker OUT.json JOB.npz

``JOB.npz`` holds one candidate / safety split (``X_candidate``, ``y_candidate``,
``s_candidate`` and the ``_safety`` arrays; ``s_*`` one-hot group columns), the constraint
string, delta and the number of gradient-descent iterations. The worker runs the
engine's quasi-Seldonian algorithm as its fairness tutorials do (binary logistic
regression, logistic loss, KKT gradient descent with Adam on the Lagrangian, the
candidate bound predicted with the Student-t inflation, the Student-t safety test) on
exactly that split and writes ``passed``, ``theta`` (intercept first) and the wall and
CPU seconds of ``SeldonianAlgorithm(spec).run()``.

Only the engine's public API is called; none of its code is copied.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def run(job_path: str) -> dict:
    from seldonian.dataset import SupervisedDataSet, SupervisedMetaData
    from seldonian.models import objectives
    from seldonian.models.models import BinaryLogisticRegressionModel
    from seldonian.parse_tree.parse_tree import make_parse_trees_from_constraints
    from seldonian.seldonian_algorithm import SeldonianAlgorithm
    from seldonian.spec import SupervisedSpec
    from seldonian.utils.stats_utils import default_supervised_initial_solution_fn

    job = np.load(job_path, allow_pickle=False)
    group_names = [str(name) for name in job["group_names"]]
    n_features = job["X_candidate"].shape[1]
    feature_names = [f"x{i}" for i in range(n_features)]
    meta = SupervisedMetaData(
        sub_regime="classification",
        all_col_names=feature_names + group_names + ["label"],
        feature_col_names=feature_names,
        label_col_names=["label"],
        sensitive_col_names=group_names,
    )

    def dataset(part):
        labels = job[f"y_{part}"].astype(np.float64)
        return SupervisedDataSet(
            features=job[f"X_{part}"],
            labels=labels,
            sensitive_attrs=job[f"s_{part}"].astype(np.int64),
            num_datapoints=labels.shape[0],
            meta=meta,
        )

    candidate, safety = dataset("candidate"), dataset("safety")
    constraint = str(job["constraint"])
    parse_trees = make_parse_trees_from_constraints(
        [constraint],
        [float(job["delta"])],
        regime="supervised_learning",
        sub_regime="classification",
        columns=group_names,
        delta_weight_method="equal",
    )
    model = BinaryLogisticRegressionModel()
    spec = SupervisedSpec(
        dataset=candidate + safety,
        candidate_dataset=candidate,
        safety_dataset=safety,
        model=model,
        parse_trees=parse_trees,
        sub_regime="classification",
        primary_objective=objectives.binary_logistic_loss,
        initial_solution_fn=default_supervised_initial_solution_fn,
        use_builtin_primary_gradient_fn=True,
        optimization_technique="gradient_descent",
        optimizer="adam",
        optimization_hyperparams={
            "lambda_init": np.array([0.5]),
            "alpha_theta": 0.01,
            "alpha_lamb": 0.01,
            "beta_velocity": 0.9,
            "beta_rmsprop": 0.95,
            "use_batches": False,
            "num_iters": int(job["num_iters"]),
            "gradient_library": "autograd",
            "hyper_search": None,
            "verbose": False,
        },
        verbose=False,
    )
    start, cpu_start = time.perf_counter(), time.process_time()
    passed, solution = SeldonianAlgorithm(spec).run()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    theta = None if isinstance(solution, str) else np.asarray(solution, dtype=float).tolist()
    return {"passed": bool(passed), "theta": theta, "seconds": seconds, "cpu_seconds": cpu_seconds}


def main() -> None:
    out, job_path = sys.argv[sys.argv.index("--worker") + 1], sys.argv[-1]
    with open(out, "w") as handle:
        json.dump(run(job_path), handle)


if __name__ == "__main__":
    main()
