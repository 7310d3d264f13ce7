"""BADR at its defaults on the practitioner benchmark's KDD census task, against logistic
regression timed in the same run.

The task of ``benchmarks/practitioner.py`` (UCI Census-Income (KDD) by race, 5 groups,
20,000 training and 20,000 test rows, string categoricals one-hot encoded, numbers
standardised): ``BADRClassifier()`` and scikit-learn's ``LogisticRegression(max_iter=1000)``
each fitted in a fresh process (cold: imports done, compilation included, as in
practitioner.py), then fitted again in that process (warm). Rounds alternate the methods
back to back so that both see the same machine load; ``--before DIR`` adds a BADR row
run on another copy of the ``fairest`` package (``DIR/fairest``, e.g. ``git archive
<commit> fairest | tar -x -C DIR``), so that before / after figures come from one run.
The test accuracy and demographic parity difference show the result is unchanged.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import SHARED_DATASETS, base_parser, run_worker, write_results, write_worker_result

TASK = "kdd_census"


def fit_once(method: str) -> dict:
    """Fit ``method`` twice on the task (cold, warm); its test accuracy and DP."""
    from practitioner import _demographic_parity, make_method, split
    from sklearn import config_context
    from sklearn.metrics import accuracy_score

    (X, y, s), (X_test, y_test, s_test) = split(TASK, str(SHARED_DATASETS), 20_000, 20_000)
    times = []
    for _ in range(2):
        estimator, route = make_method(method, X)
        kwargs = {"sensitive_features": s.to_numpy()} if route == "routed" else {}
        with warnings.catch_warnings(), config_context(enable_metadata_routing=bool(kwargs)):
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            estimator.fit(X, y, **kwargs)
            times.append(time.perf_counter() - start)
    y_pred = estimator.predict(X_test).astype(int)
    import fairest

    return {
        "cold_s": times[0],
        "warm_s": times[1],
        "accuracy": float(accuracy_score(y_test, y_pred)),
        "DP": _demographic_parity(y_pred, s_test),
        "fairest": str(Path(fairest.__file__).parent),
        "load": os.getloadavg()[0],
    }


def main() -> None:
    parser = base_parser(__doc__, name="badr_practitioner_speed")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per method")
    parser.add_argument("--before", default=None, help="folder holding the 'before' fairest")
    parser.add_argument("--method", default="BADRClassifier", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        write_worker_result(args.worker, fit_once(args.method))
        return
    variants = [("sklearn-logreg", None), ("BADRClassifier", None)]
    if args.before:
        variants.append(("BADRClassifier", args.before))
    runs = {variant: [] for variant in variants}
    for _ in range(1 if args.quick else args.rounds):
        for method, source in variants:
            env = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = source or ""
            try:
                result = run_worker(__file__, ["--method", method], timeout=900)
            finally:
                os.environ["PYTHONPATH"] = env or ""
            runs[(method, source)].append(result)
            print(method, source or "", result, flush=True)
    anchor = runs[("sklearn-logreg", None)]
    rows = []
    for (method, source), results in runs.items():
        row = {
            "method": method + (" (before)" if source else ""),
            "cold_s": [round(r["cold_s"], 2) for r in results],
            "warm_s": [round(r["warm_s"], 2) for r in results],
            "cold_ratio": [round(r["cold_s"] / a["cold_s"], 2) for r, a in zip(results, anchor)],
            "median_cold_ratio": statistics.median(
                r["cold_s"] / a["cold_s"] for r, a in zip(results, anchor)
            ),
            "accuracy": round(results[0]["accuracy"], 4),
            "DP": round(results[0]["DP"], 4),
            "load": [round(r["load"], 1) for r in results],
        }
        rows.append(row)
    if args.quick and args.name == "badr_practitioner_speed":
        return
    notes = (__doc__ or "") + (
        "\ncold_ratio: BADR's cold fit over logistic regression's in the same round "
        "(the practitioner benchmark's check asks for at most 10); load: the 1-minute "
        "load average when the worker ended.\n" + args.extra_notes
    )
    write_results(args.name, rows, columns=list(rows[0]), notes=notes)


if __name__ == "__main__":
    main()
