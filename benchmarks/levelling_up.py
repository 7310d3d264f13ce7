"""Levelling up on ACSIncome: LevellingUpClassifier beside OxonFair at the same minimum rate.

Data: folktables ACSIncome (2018, all states, the aequitas test split) from the shared
datasets folder, race (``RAC1P``, 9 codes) coarsened to ``k`` groups for ``k`` = 2, 3, 4
and 8: the ``k - 1`` largest races keep their own group, the others form one group (from 5
groups on, OxonFair's fast search visits about ``30 ** 5`` threshold combinations whatever
``k``, so 5 to 7 groups cost it about what 8 does). One
histogram gradient-boosting model is trained on a training split; both post-processors
threshold its scores (``predict_proba[:, 1]``) on a fit split, and are judged on a test
split (disjoint random rows, sizes in the table's notes).

Constraint: every group's recall (true positive rate) on the fit split at least
``--min-rate`` (0.8), objective accuracy; also every group's selection rate at least
``--min-selection`` (0.3). fairest: ``LevellingUpClassifier(rate=..., min_rate=...)``,
exact. OxonFair 0.3: ``FairPredictor(None, DataDict(y, scores, groups)).fit(accuracy,
recall.min, r)`` (its fast grid search, default grid; ``pos_pred_rate.min`` for the
selection rate), run on the same scores in its own virtual environment (this script is
re-run there with ``--oxonfair-worker``): pass its path with ``--oxonfair-venv`` or
``FAIREST_OXONFAIR_VENV``; without one the OxonFair rows are skipped. Seconds are the
threshold search only, on the precomputed scores, for both (wall clock, best of
``--repeats``, one run when a search takes over 10 s; the machine may be shared, see the
load in the JSON).

Run: ``python benchmarks/levelling_up.py [--oxonfair-venv DIR] [--quick]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def oxonfair_worker(problem: str, out: str) -> None:
    """Inside OxonFair's environment: fit on the fit split's scores, predict both splits."""
    from oxonfair import DataDict, FairPredictor
    from oxonfair.utils import group_metrics as gm

    data = np.load(problem)
    metric = {"recall": gm.recall.min, "selection_rate": gm.pos_pred_rate.min}[str(data["rate"])]
    fit_scores = np.stack([1 - data["fit_scores"], data["fit_scores"]], axis=1)
    test_scores = np.stack([1 - data["test_scores"], data["test_scores"]], axis=1)
    best, predictor = np.inf, None
    for _ in range(int(data["repeats"])):
        start = time.perf_counter()
        predictor = FairPredictor(None, DataDict(data["fit_y"], fit_scores, data["fit_groups"]))
        predictor.fit(gm.accuracy, metric, float(data["min_rate"]))
        best = min(best, time.perf_counter() - start)
        if best > 10.0:  # a search of this length is not timed again
            break
    fit_pred = np.asarray(
        predictor.predict(DataDict(data["fit_y"], fit_scores, data["fit_groups"]))
    )
    test_pred = np.asarray(
        predictor.predict(DataDict(data["test_y"], test_scores, data["test_groups"]))
    )
    np.savez(out, seconds=best, fit_pred=fit_pred.astype(int), test_pred=test_pred.astype(int))


if __name__ == "__main__" and "--oxonfair-worker" in sys.argv:
    oxonfair_worker(*sys.argv[sys.argv.index("--oxonfair-worker") + 1 :][:2])
    sys.exit(0)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SHARED_DATASETS, base_parser, write_results  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402

from fairest.datasets import fetch_acs_task  # noqa: E402
from fairest.postprocessing import LevellingUpClassifier  # noqa: E402


class PrecomputedScores(ClassifierMixin, BaseEstimator):
    """``predict_proba`` of scores given as the only column of ``X``: both methods then
    threshold the same precomputed scores, and only their searches are timed."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X):
        s = np.asarray(X)[:, 0]
        return np.stack([1 - s, s], axis=1)


def coarsened_race(race: np.ndarray, k: int, order: np.ndarray) -> np.ndarray:
    """Codes 0..k-1: the k-1 largest races (``order``: races by size), then the rest."""
    codes = np.full(race.shape, k - 1)
    for code, value in enumerate(order[: k - 1]):
        codes[race == value] = code
    return codes


def judged(y, y_pred, groups, k, rate):
    """Accuracy and the worst group's rate of ``y_pred``."""
    rates = []
    for g in range(k):
        mask = groups == g
        eligible = mask & (y == 1) if rate == "recall" else mask
        rates.append(y_pred[eligible].mean() if eligible.any() else 0.0)
    return float(np.mean(y_pred == y)), float(min(rates))


def run_oxonfair(python, split, rate, min_rate, repeats):
    with tempfile.TemporaryDirectory() as folder:
        problem, out = Path(folder) / "problem.npz", Path(folder) / "out.npz"
        np.savez(problem, rate=rate, min_rate=min_rate, repeats=repeats, **split)
        done = subprocess.run(
            [python, __file__, "--oxonfair-worker", str(problem), str(out)],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1][:200]}
        result = np.load(out)
        return {key: result[key] for key in result.files}


def main():
    parser = base_parser(__doc__, name="levelling_up")
    parser.add_argument("--oxonfair-venv", default=os.environ.get("FAIREST_OXONFAIR_VENV"))
    parser.add_argument("--min-rate", type=float, default=0.8, help="recall floor")
    parser.add_argument("--min-selection", type=float, default=0.3, help="selection floor")
    parser.add_argument("--rows", type=int, default=40_000, help="rows per split")
    parser.add_argument("--groups", default="2,3,4,8", help="numbers of groups")
    args = parser.parse_args()
    if not (SHARED_DATASETS / "acs" / "acs_folktables_aequitas").is_dir():
        print("ACSIncome (shared datasets) not found: nothing to run")
        return
    python = None
    if args.oxonfair_venv:
        candidate = Path(args.oxonfair_venv) / "bin" / "python"
        python = str(candidate) if candidate.is_file() else None
    if python is None:
        print("no OxonFair environment (--oxonfair-venv / FAIREST_OXONFAIR_VENV): fairest only")
    rows = 5_000 if args.quick else args.rows
    bunch = fetch_acs_task("ACSIncome", data_home=str(SHARED_DATASETS), as_frame=True)
    X = bunch.data.to_numpy(dtype=float)
    y = np.asarray(bunch.target, dtype=int)
    race = X[:, list(bunch.data.columns).index("RAC1P")].astype(int)
    rng = np.random.default_rng(0)
    picked = rng.permutation(y.size)[: 3 * rows]
    train, fit, test = np.split(picked, 3)
    model = HistGradientBoostingClassifier(random_state=0).fit(X[train], y[train])
    scores = model.predict_proba(X)[:, 1]
    values, counts = np.unique(race[picked], return_counts=True)
    order = values[np.argsort(-counts, kind="stable")]
    constraints = [("recall", args.min_rate), ("selection_rate", args.min_selection)]
    table = []
    for k in [int(v) for v in args.groups.split(",")]:
        groups = coarsened_race(race, k, order)
        split = {
            "fit_scores": scores[fit],
            "fit_y": y[fit],
            "fit_groups": groups[fit],
            "test_scores": scores[test],
            "test_y": y[test],
            "test_groups": groups[test],
        }
        for rate, floor in constraints:
            best, clf = np.inf, None
            for _ in range(args.repeats):
                start = time.perf_counter()
                clf = LevellingUpClassifier(
                    PrecomputedScores().fit(None, None), rate=rate, min_rate=floor, prefit=True
                ).fit(scores[fit, None], y[fit], sensitive_features=groups[fit])
                best = min(best, time.perf_counter() - start)
            ours = {
                "fit_pred": clf.predict(scores[fit, None], sensitive_features=groups[fit]),
                "test_pred": clf.predict(scores[test, None], sensitive_features=groups[test]),
                "seconds": best,
            }
            results = {"fairest": ours}
            if python is not None:
                results["oxonfair"] = run_oxonfair(python, split, rate, floor, args.repeats)
            for method, result in results.items():
                row = {"groups": k, "constraint": f"min {rate} >= {floor:g}", "method": method}
                if "error" in result:
                    table.append({**row, "error": result["error"]})
                    continue
                fit_acc, fit_worst = judged(y[fit], result["fit_pred"], groups[fit], k, rate)
                test_acc, test_worst = judged(y[test], result["test_pred"], groups[test], k, rate)
                table.append(
                    {
                        **row,
                        "fit_accuracy": round(fit_acc, 4),
                        "fit_worst_rate": round(fit_worst, 4),
                        "test_accuracy": round(test_acc, 4),
                        "test_worst_rate": round(test_worst, 4),
                        "seconds": round(float(result["seconds"]), 4),
                    }
                )
            if "oxonfair" in results and "error" not in results["oxonfair"]:
                speedup = float(results["oxonfair"]["seconds"]) / ours["seconds"]
                table[-1]["speedup_vs_fairest"] = round(speedup, 1)
            print(json.dumps(table[-len(results) :]), flush=True)
    columns = [
        "groups",
        "constraint",
        "method",
        "fit_accuracy",
        "fit_worst_rate",
        "test_accuracy",
        "test_worst_rate",
        "seconds",
        "speedup_vs_fairest",
        "error",
    ]
    notes = (
        f"{__doc__.strip()}\n\nRows per split: {rows} (train / fit / test, disjoint). "
        f"Majority-class accuracy on the test split: {max(y[test].mean(), 1 - y[test].mean()):.4f}. "
        "fit_* are on the fit split, where the constraint is imposed; test_* on the test split. "
        "speedup_vs_fairest: OxonFair's seconds over fairest's. " + args.extra_notes
    )
    if args.quick and args.name == "levelling_up":
        print("--quick: results not written")
        return
    write_results(args.name, table, columns, notes)


if __name__ == "__main__":
    main()
