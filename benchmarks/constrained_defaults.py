"""The constrained family at its defaults on practitioner tasks: train and test loss gaps.

Same split and preprocessing as ``benchmarks/practitioner.py`` (its ``split`` and
``preprocessor``), one estimator per fresh process. A row: fit seconds, test accuracy,
the majority rate, test demographic parity, the loss gap (:func:`fairest.metrics.loss_gap`,
largest minus smallest group mean log loss) on the train and the test rows, the
estimator's own ``train_unfairness_`` against its ``tolerance``, and the warnings of the
fit. Logistic regression (scikit-learn, ``max_iter=1000``) is the reference row.

Run one row: ``python benchmarks/constrained_defaults.py --one
acs_public_coverage:LossGapConstrainedClassifier [--params '{"preset": "paper"}']``; all
rows (about 10 minutes on 2 cores): ``python benchmarks/constrained_defaults.py --name
constrained_defaults`` writes ``results/<name>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).parent / "results"
TASKS = ("acs_public_coverage", "kdd_census")
METHODS = (
    ("sklearn-logreg", {}),
    ("LossGapConstrainedClassifier", {}),
    ("LossGapConstrainedClassifier", {"preset": "paper"}),
    ("PrunedFairClassifier", {}),
)


def run_one(task: str, method: str, params: dict, data_home: str, n_train: int, n_test: int):
    """Fit ``method(**params)`` on the task's training rows, score train and test."""
    from practitioner import preprocessor, split
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import fairest
    from fairest.metrics import loss_gap

    (X, y, s), (X_test, y_test, s_test) = split(task, data_home, n_train, n_test)
    if method == "sklearn-logreg":
        model = LogisticRegression(max_iter=1000, **params)
    else:
        model = getattr(fairest, method)(random_state=0, **params)
    pipe = make_pipeline(preprocessor(X), model)
    fit_kwargs = {} if method == "sklearn-logreg" else {"sensitive_features": s.to_numpy()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        if fit_kwargs:
            pipe.fit(X, y, **{f"{pipe.steps[-1][0]}__{k}": v for k, v in fit_kwargs.items()})
        else:
            pipe.fit(X, y)
        seconds = time.perf_counter() - start
    y_pred = pipe.predict(X_test).astype(int)
    rates = [y_pred[s_test.to_numpy() == g].mean() for g in np.unique(s_test)]
    row = {
        "task": task,
        "method": method,
        "params": json.dumps(params),
        "fit s": round(seconds, 2),
        "accuracy": round(float(np.mean(y_pred == y_test)), 4),
        "majority": round(float(max(np.mean(y_test), 1 - np.mean(y_test))), 4),
        "DP": round(float(max(rates) - min(rates)), 4),
        "loss gap train": round(
            loss_gap(y, pipe.predict_proba(X), sensitive_features=s.to_numpy()), 4
        ),
        "loss gap test": round(
            loss_gap(y_test, pipe.predict_proba(X_test), sensitive_features=s_test.to_numpy()), 4
        ),
        "own train metric": round(float(getattr(model, "train_unfairness_", np.nan)), 4),
        "tolerance": getattr(model, "tolerance", None),
        "warnings": " / ".join(
            sorted(
                {
                    f"{w.category.__name__}: {str(w.message)[:200]}"
                    for w in caught
                    if w.category.__name__ in ("FairnessWarning", "ConvergenceWarning")
                }
            )
        ),
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", help="task:method")
    parser.add_argument("--params", default="{}", help="JSON of estimator parameters")
    parser.add_argument("--data-home", default=str(Path.cwd().parent / "shared" / "datasets"))
    parser.add_argument("--train", type=int, default=20_000)
    parser.add_argument("--test", type=int, default=20_000)
    parser.add_argument("--name", default=None)
    args = parser.parse_args()
    if args.one:
        task, method = args.one.split(":")
        row = run_one(task, method, json.loads(args.params), args.data_home, args.train, args.test)
        print(json.dumps(row))
        return
    rows = []
    for task in TASKS:
        for method, params in METHODS:
            command = [
                sys.executable,
                __file__,
                "--one",
                f"{task}:{method}",
                "--params",
                json.dumps(params),
                "--data-home",
                args.data_home,
                "--train",
                str(args.train),
                "--test",
                str(args.test),
            ]
            done = subprocess.run(command, capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            rows.append(
                json.loads(lines[-1])
                if lines
                else {"task": task, "method": method, "warnings": done.stderr[-300:]}
            )
            print(json.dumps(rows[-1]), flush=True)
    if args.name:
        RESULTS.joinpath(f"{args.name}.json").write_text(json.dumps(rows, indent=1) + "\n")
        write_markdown(rows, args.name, args.train, args.test)


def write_markdown(rows: list, name: str, n_train: int, n_test: int) -> None:
    """``results/<name>.md``: the rows as a table (``|`` in a cell escaped)."""
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += [
        "| " + " | ".join(str(r.get(c, "")).replace("|", "\\|") for c in columns) + " |"
        for r in rows
    ]
    header = (
        "# The constrained family at its defaults on practitioner tasks\n\n"
        f"`python benchmarks/constrained_defaults.py --train {n_train} --test {n_test} "
        f"--name {name}`; loss gap: largest minus smallest group mean log loss "
        "(`fairest.metrics.loss_gap`); own train metric: the estimator's "
        "`train_unfairness_` (LossGap: the train loss gap; Pruned: the largest train excess "
        "accuracy gap); warnings cut at 200 characters. The paper preset rows are the "
        'defaults before the `"default"` preset; PrunedFairClassifier\'s defaults are '
        "unchanged (it now warns when it misses its tolerance).\n\n"
    )
    RESULTS.joinpath(f"{name}.md").write_text(header + "\n".join(lines) + "\n" + NOTES)


# measured with --one on all 227,658 ACS training rows (--train 227658), same test rows;
# the PrunedFairClassifier rows re-measured after its epochs became "auto" (its paper
# preset row was 44.87 s before, on a busier machine and a step with two forward passes)
NOTES = """
## All 227,658 ACSPublicCoverage training rows

`python benchmarks/constrained_defaults.py --one acs_public_coverage:METHOD --train 227658`:

| method | fit s | accuracy | DP | loss gap train | loss gap test | warnings |
|---|---|---|---|---|---|---|
| sklearn-logreg | 2.88 | 0.7655 | 0.4909 | 0.2511 | 0.3197 | |
| LossGapConstrainedClassifier (defaults: 2 epochs) | 7.16 | 0.7732 | 0.3792 | 0.0045 | 0.0647 | |
| LossGapConstrainedClassifier (preset="paper") | 44.69 | 0.7704 | 0.3513 | 0.0111 | 0.1444 | missed tolerance |
| PrunedFairClassifier (defaults: 5 + 10 epochs) | 6.72 | 0.7827 | 0.321 | 0.2392 | 0.4098 | (EAG 0.0066) |
| PrunedFairClassifier (preset="paper") | 23.79 | 0.7852 | 0.3379 | 0.2355 | 0.4754 | missed tolerance (EAG 0.0156) |
"""


if __name__ == "__main__":
    main()
