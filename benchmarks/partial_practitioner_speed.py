"""PartialParityClassifier at its defaults on the practitioner tasks where it was slow
(issue #33 item 2): KDD census by race (5 groups, ~337 one-hot columns) and
ACSPublicCoverage by race (9 groups), 20,000 training and 20,000 test rows, split and
preprocessed by ``benchmarks/practitioner.py`` (its ``split`` and ``preprocessor``).

Each case runs in a fresh process: scikit-learn's ``LogisticRegression(max_iter=1000)``
is timed in the same process, just before the partial-parity fits (a cold fit, compiling
included, then ``--repeats`` warm fits). ``--code NAME=PATH`` (repeatable) times another
source tree of ``fairest`` (e.g. an earlier commit unpacked with ``git archive``) beside
the working tree, the variants alternating case by case, so that both see the same load.

A row: fit seconds (cold, warm median), logistic regression's seconds and the ratio of the
warm fit to it, the surrogate solves, the exact train pSP over the judged groups (those not
in ``small_groups_``), test pSP over the judged groups for the fit and for logistic
regression (on the fit's ``interval_``) and test accuracy.

Writes ``benchmarks/results/partial_practitioner_speed.md`` and ``.json``. Run:
``nice -n 10 python benchmarks/partial_practitioner_speed.py --code before=/tmp/before``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS = ("kdd_census", "acs_public_coverage")


def run_one(task: str, data_home: str, repeats: int, by_group: bool = False) -> dict:
    """Fit logistic regression and PartialParityClassifier on ``task`` in this process
    (``by_group``: with ``PARTIAL_TUNING.products_by_group`` on)."""
    sys.path.insert(0, str(HERE))
    import numpy as np
    from practitioner import preprocessor, split
    from sklearn.linear_model import LogisticRegression

    import fairest
    from fairest.metrics import partial_statistical_parity

    (X, y, s), (X_test, y_test, s_test) = split(task, data_home, 20_000, 20_000)
    encode = preprocessor(X).fit(X)
    A, B = encode.transform(X), encode.transform(X_test)
    groups, groups_test = s.to_numpy(), s_test.to_numpy()
    start = time.perf_counter()
    reference = LogisticRegression(max_iter=1000).fit(A, y)
    logreg_s = time.perf_counter() - start
    seconds = []
    tuning = contextlib.nullcontext  # a fresh context manager a fit
    if by_group:
        from fairest.partial._defaults import PARTIAL_TUNING

        tuning = partial(PARTIAL_TUNING.override, products_by_group=True)
    for _ in range(1 + repeats):
        model = fairest.PartialParityClassifier()
        start = time.perf_counter()
        with warnings.catch_warnings(), tuning():
            warnings.simplefilter("ignore")
            model.fit(A, y, sensitive_features=groups)
        seconds.append(time.perf_counter() - start)
    small = list(model.small_groups_)
    interval = tuple(float(v) for v in model.interval_)

    def judged_psp(estimator, rows, labels, codes):
        judged = ~np.isin(codes, small)
        scores = estimator.predict_proba(rows)[judged, 1]
        return float(
            partial_statistical_parity(
                labels[judged], scores, sensitive_features=codes[judged], interval=interval
            )
        )

    warm = statistics.median(seconds[1:]) if repeats else seconds[0]
    return {
        "task": task,
        "fit s (cold)": round(seconds[0], 2),
        "fit s (warm)": round(warm, 2),
        "logreg s": round(logreg_s, 2),
        "warm / logreg": round(warm / logreg_s, 1),
        "solves": int(len(model.tightening_["effective_tolerance"])),
        "interval": str(interval),
        "small groups": ", ".join(map(str, small)),
        "train pSP (judged)": round(judged_psp(model, A, y, groups), 4),
        "train pSP (all)": round(float(model.train_unfairness_), 4),
        "test pSP (judged)": round(judged_psp(model, B, y_test, groups_test), 4),
        "logreg test pSP (judged)": round(judged_psp(reference, B, y_test, groups_test), 4),
        "accuracy": round(float(np.mean(model.predict(B) == y_test)), 4),
        "logreg accuracy": round(float(np.mean(reference.predict(B) == y_test)), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--data-home", default=str(HERE.parents[1] / "shared" / "datasets"))
    parser.add_argument("--repeats", type=int, default=1, help="warm fits after the cold one")
    parser.add_argument("--code", action="append", default=[], help="NAME=PATH of a source tree")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the variants")
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument(
        "--products-by-group",
        action="store_true",
        help="this tree with PARTIAL_TUNING.products_by_group on",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--output", default=str(HERE / "results" / "partial_practitioner_speed"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.data_home, args.repeats, args.products_by_group)))
        return
    variants = [("this tree", None)] + [tuple(item.split("=", 1)) for item in args.code]
    rows = []
    for round_ in range(args.rounds):
        for task in args.tasks.split(","):
            for name, root in variants[::-1] if round_ % 2 else variants:
                env = dict(os.environ)
                if root:
                    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
                command = [sys.executable, __file__, "--one", task, "--data-home", args.data_home]
                command += ["--repeats", str(args.repeats)]
                if root is None and args.products_by_group:
                    command.append("--products-by-group")
                try:
                    done = subprocess.run(
                        command, capture_output=True, text=True, timeout=args.timeout, env=env
                    )
                    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
                    row = (
                        json.loads(lines[-1])
                        if lines
                        else {"task": task, "error": done.stderr[-300:]}
                    )
                except subprocess.TimeoutExpired:
                    row = {"task": task, "fit s (cold)": f">{args.timeout}"}
                row = {"code": name, "round": round_, **row, "load": round(os.getloadavg()[0], 1)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows]
    header = f"# PartialParityClassifier on the practitioner tasks\n\n`{' '.join(sys.argv)}`\n\n"
    Path(f"{args.output}.md").write_text(header + __doc__ + "\n" + "\n".join(lines) + "\n")
    Path(f"{args.output}.json").write_text(json.dumps(rows, indent=2))
    print(f"wrote {args.output}.md")


if __name__ == "__main__":
    main()
