"""Worker of ``benchmarks/certified_seldonian.py`` for fair-seldonian 3.1: runs its
quasi-Seldonian algorithm (``fair_seldonian.QSA``) in ITS OWN virtual environment
(``/tmp/venv-fairsel``), never in fairest's.

Usage (from ``certified_seldonian.py`` through ``_common.run_worker``)::

    /tmp/venv-fairsel/bin/python benchmarks/certified_fairseldonian_runner.py \\
        --worker OUT.json JOB.npz

``JOB.npz`` is the job file of ``certified_seldonian_runner.py`` (one candidate / safety
split, one-hot group columns, delta). fair-seldonian takes the candidate part as the first
``candidate_ratio`` share of the rows (no shuffling), so the candidate rows are put first
and ``candidate_ratio`` is set to give exactly the split handed over. The constraint is
its built-in ``demographic_parity(epsilon, groups)`` (the gap of the groups' mean
predicted probabilities, ``TP(g) + FP(g)``), the bound its Student-t inequality
(``Inequality.T_TEST``, as the seldonian-engine rows), ``seldonian_type="base"`` (the
Science paper's algorithm: candidate bound predicted at the safety size, doubled, Powell
search from a scikit-learn logistic regression). The worker writes ``passed``, ``theta``
(intercept first) and the wall and CPU seconds of ``QSA(...)``.

Only the library's public API is called; none of its code is copied.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def run(job_path: str) -> dict:
    from fair_seldonian import QSA, SeldonianConfig, demographic_parity
    from fair_seldonian.constraints import Inequality

    job = np.load(job_path, allow_pickle=False)
    names = [str(name) for name in job["group_names"]]
    X = np.concatenate([job["X_candidate"], job["X_safety"]]).astype(np.float64)
    y = np.concatenate([job["y_candidate"], job["y_safety"]]).astype(np.int64)
    onehot = np.concatenate([job["s_candidate"], job["s_safety"]])
    groups = np.asarray(names)[np.argmax(onehot, axis=1)]
    n_candidate = job["y_candidate"].shape[0]
    tolerance = float(str(job["constraint"]).rsplit("-", 1)[1])
    config = SeldonianConfig(
        delta=float(job["delta"]),
        inequality=Inequality.T_TEST,
        constraint=demographic_parity(epsilon=tolerance, groups=(names[1], names[0])),
        # QSA keeps the first int(candidate_ratio * n) rows (and train_test_split the
        # first n - ceil((1 - ratio) n)): half a row of slack gives exactly n_candidate
        candidate_ratio=(n_candidate + 0.5) / y.shape[0],
    )
    start, cpu_start = time.perf_counter(), time.process_time()
    theta, intercept, passed = QSA(X, y, groups, "base", None, None, config)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    coefficients = np.concatenate(
        [np.asarray(intercept.detach(), dtype=float).ravel(), np.asarray(theta.detach()).ravel()]
    )
    return {
        "passed": bool(passed),
        "theta": coefficients.tolist(),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
    }


def main() -> None:
    out, job_path = sys.argv[sys.argv.index("--worker") + 1], sys.argv[-1]
    with open(out, "w") as handle:
        json.dump(run(job_path), handle)


if __name__ == "__main__":
    main()
