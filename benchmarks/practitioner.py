"""Every fairest classifier at its defaults on a practitioner's data, beside scikit-learn
and fairlearn.

Four real tasks beyond Adult, each with its own sensitive feature and group count, read
from the shared datasets (``--data-home``, default ``../shared/datasets``):

* ``acs_public_coverage``: folktables ACSPublicCoverage 2018 (all states), race (RAC1P,
  9 groups), integer-coded categoricals one-hot encoded (sparse);
* ``kdd_census``: UCI Census-Income (KDD), race (5 groups), string categoricals with
  missing values;
* ``bank_marketing``: UCI Bank Marketing, age band (under 30, 30-59, 60 and over);
* ``credit_default``: UCI Default of Credit Card Clients, sex (2 groups).

Each (task, method) runs in a fresh process with a time limit: the same stratified split
(``--train`` rows for training, ``--test`` for testing), the same preprocessing
(median-imputed scaled numbers, one-hot categories; ordinal codes for the trees), the
sensitive feature routed to ``fit`` only. A row records fit seconds (for fairest's
estimators also the seconds of XLA compilation within that first fit of the process,
``compile s``, and the seconds of the same fit again in the process, its programs
compiled, ``refit s``), test accuracy, the
majority rate, test demographic parity and equalized odds differences, the fairness
warnings of the fit, and three checks: a first fit slower than 10x logistic regression
(10x of at least 0.5 s: a fit of a fraction of a second is timer and import noise), below the
majority rate, not fairer than logistic regression on the metric the method's docs name
(demographic parity for the baselines). The reference of that metric is logistic
regression's value (``own (logreg)``), except for ``PrunedFairClassifier``, whose metric
(the train excess accuracy gap of pruning) compares it with the same pruning run without
its constraint (``metric=None``); a train metric within the method's stated tolerance
passes that check even where the reference is within it too.

Writes ``benchmarks/results/practitioner.md`` and ``.csv``. Run:
``nice -n 10 python benchmarks/practitioner.py [--tasks a,b] [--methods x,y]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

TASKS = ("acs_public_coverage", "kdd_census", "bank_marketing", "credit_default")
BASELINES = ("sklearn-logreg", "sklearn-hgb", "fairlearn-eg", "fairlearn-threshold")
FAIREST = (
    "GroupThresholdClassifier",
    "BADRClassifier",
    "ERMIClassifier",
    "PartialParityClassifier",
    "LossGapConstrainedClassifier",
    "PrunedFairClassifier",
    "CertifiedFairClassifier",
)
GROUPS_AT_PREDICT = ("GroupThresholdClassifier", "CertifiedFairClassifier")
RESULTS = Path(__file__).parent / "results"


# --------------------------------------------------------------------------- data
def load_task(name: str, data_home: str):
    """``(X, y, sensitive)`` of a task: a DataFrame, 0/1 labels and a group Series."""
    from fairest import datasets

    common = dict(data_home=data_home, download_if_missing=False, as_frame=True)
    if name == "acs_public_coverage":
        bunch = datasets.fetch_acs_task("ACSPublicCoverage", **common)
        X = bunch.data.copy()
        numeric = ["AGEP", "PINCP"]
        for column in X.columns.difference(numeric):
            X[column] = X[column].astype(str).astype("category")
        return X, np.asarray(bunch.target).astype(int), X["RAC1P"].astype(str).rename("race")
    if name == "kdd_census":
        bunch = datasets.fetch_kdd_census(**common)
        X = bunch.data
        return X, np.asarray(bunch.target).astype(int), X["race"].astype(str).rename("race")
    if name == "bank_marketing":
        bunch = datasets.fetch_bank_marketing(**common)
        X = bunch.data
        band = pd.cut(X["age"], [0, 29, 59, 200], labels=["under 30", "30-59", "60+"])
        return X, np.asarray(bunch.target).astype(int), band.astype(str).rename("age band")
    if name == "credit_default":
        bunch = datasets.fetch_credit_default(**common)
        X = bunch.data.copy()
        for column in ("SEX", "EDUCATION", "MARRIAGE"):
            X[column] = X[column].astype(str).astype("category")
        sex = X["SEX"].map({"1": "male", "2": "female"}).astype(str).rename("sex")
        return X, np.asarray(bunch.target).astype(int), sex
    raise ValueError(f"unknown task {name!r}; tasks: {', '.join(TASKS)}")


def split(name: str, data_home: str, n_train: int, n_test: int, seed: int = 0):
    from sklearn.model_selection import train_test_split

    X, y, s = load_task(name, data_home)
    strata = s.astype(str) + "|" + pd.Series(y, index=s.index).astype(str)
    n_train = min(n_train, int(0.6 * len(y)))
    n_test = min(n_test, len(y) - n_train)
    train, test = train_test_split(
        np.arange(len(y)), train_size=n_train, test_size=n_test, stratify=strata, random_state=seed
    )
    return (X.iloc[train], y[train], s.iloc[train]), (X.iloc[test], y[test], s.iloc[test])


def preprocessor(X: pd.DataFrame, trees: bool = False, dense: bool = False):
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

    numbers = make_column_selector(dtype_include="number")
    categories = make_column_selector(dtype_exclude="number")
    if trees:
        codes = OrdinalEncoder(
            handle_unknown="use_encoded_value", unknown_value=-2, encoded_missing_value=-1
        )
        return ColumnTransformer([("num", "passthrough", numbers), ("cat", codes, categories)])
    onehot = OneHotEncoder(
        handle_unknown="infrequent_if_exist", min_frequency=20, sparse_output=not dense
    )
    scaled = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
    return ColumnTransformer([("num", scaled, numbers), ("cat", onehot, categories)])


# --------------------------------------------------------------------------- methods
def make_method(name: str, X):
    """``(estimator, fit_kwargs_of_groups)``: the estimator on preprocessed X and how the
    groups reach its fit."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    import fairest

    def logreg():
        return LogisticRegression(max_iter=1000)

    if name == "sklearn-logreg":
        return make_pipeline(preprocessor(X), logreg()), None
    if name == "sklearn-hgb":
        return make_pipeline(preprocessor(X, True), HistGradientBoostingClassifier()), None
    if name == "fairlearn-eg":
        from fairlearn.reductions import DemographicParity, ExponentiatedGradient

        return make_pipeline(
            preprocessor(X, dense=True), ExponentiatedGradient(logreg(), DemographicParity())
        ), "exponentiatedgradient__sensitive_features"
    if name == "fairlearn-threshold":
        from fairlearn.postprocessing import ThresholdOptimizer

        model = ThresholdOptimizer(
            estimator=HistGradientBoostingClassifier(),
            constraints="demographic_parity",
            predict_method="predict_proba",
        )
        return make_pipeline(preprocessor(X, True), model), "thresholdoptimizer__sensitive_features"
    if name in ("GroupThresholdClassifier",):
        return make_pipeline(preprocessor(X), fairest.GroupThresholdClassifier(logreg())), "routed"
    if name == "CertifiedFairClassifier":
        model = fairest.CertifiedFairClassifier(fairest.GroupThresholdClassifier(logreg()))
        return make_pipeline(preprocessor(X), model), "routed"
    return make_pipeline(preprocessor(X), getattr(fairest, name)()), "routed"


def _demographic_parity(y_pred, groups) -> float:
    rates = pd.Series(y_pred).groupby(np.asarray(groups)).mean()
    return float(rates.max() - rates.min())


def _own_metric(method, estimator, X_test, y_test, s_test, reference) -> tuple[str, float, float]:
    """``(name, value, logistic regression's value)`` of the metric the method's docs name,
    on the test rows; ``reference`` is a fitted logistic regression pipeline."""
    from fairest import metrics

    groups = s_test.to_numpy()
    model = estimator[-1]
    if method == "LossGapConstrainedClassifier":
        values = [
            metrics.loss_gap(y_test, m.predict_proba(X_test), sensitive_features=groups)
            for m in (estimator, reference)
        ]
        return "loss gap", *values
    if method == "PartialParityClassifier":  # over the groups large enough to judge
        interval = tuple(model.interval_)
        small = set(getattr(model, "small_groups_", ()))
        judged = ~np.isin(groups, list(small)) if small else np.ones(groups.size, bool)
        values = [
            metrics.partial_statistical_parity(
                y_test[judged],
                m.predict_proba(X_test)[judged, 1],
                sensitive_features=groups[judged],
                interval=interval,
            )
            for m in (estimator, reference)
        ]
        return f"pSP on {interval}" + (f" without {sorted(small)}" if small else ""), *values
    if method == "PrunedFairClassifier":  # the reference is the same pruning unconstrained
        return f"train max EAG (tolerance {model.tolerance})", model.train_unfairness_, np.nan
    if method in GROUPS_AT_PREDICT:
        from sklearn import config_context

        with config_context(enable_metadata_routing=True):
            own = estimator.predict(X_test, sensitive_features=groups)
    else:
        own = estimator.predict(X_test)
    return (
        "DP",
        _demographic_parity(own, s_test),
        _demographic_parity(reference.predict(X_test), s_test),
    )


def run_one(task: str, method: str, data_home: str, n_train: int, n_test: int) -> dict:
    """Fit and score one method on one task (in this process)."""
    from sklearn import config_context
    from sklearn.metrics import accuracy_score
    from sklearn.pipeline import make_pipeline

    from fairest.metrics import equalized_odds_difference

    (X, y, s), (X_test, y_test, s_test) = split(task, data_home, n_train, n_test)
    estimator, route = make_method(method, X)
    kwargs = {}
    if route == "routed":
        kwargs["sensitive_features"] = s.to_numpy()
    elif route is not None:
        kwargs[route] = s.to_numpy()
    counting = contextlib.nullcontext(None)
    if method in FAIREST:
        from fairest.utils._compilation_cache import count_compilations

        counting = count_compilations()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        with config_context(enable_metadata_routing=route == "routed"), counting as compiled:
            estimator.fit(X, y, **kwargs)
        seconds = time.perf_counter() - start
        if method == "fairlearn-threshold":
            y_pred = estimator.predict(X_test, sensitive_features=s_test.to_numpy(), random_state=0)
        elif method in GROUPS_AT_PREDICT:  # per-group thresholds read the groups
            with config_context(enable_metadata_routing=True):
                y_pred = estimator.predict(X_test, sensitive_features=s_test.to_numpy())
        else:
            y_pred = estimator.predict(X_test)
    noted = sorted(
        {
            f"{w.category.__name__}: {str(w.message).split(';')[0][:160]}"
            for w in caught
            if w.category.__name__ in ("FairnessWarning", "ConvergenceWarning")
        }
    )
    y_pred = np.asarray(y_pred).astype(int)
    own = ("DP", np.nan, np.nan)
    refit_seconds = np.nan
    if method in FAIREST:  # the same fit again in this process: its programs compiled
        from sklearn.base import clone

        again = clone(estimator)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            with config_context(enable_metadata_routing=True):
                again.fit(X, y, **kwargs)
            refit_seconds = time.perf_counter() - start
        reference, _ = make_method("sklearn-logreg", X)
        reference.fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            own = _own_metric(method, estimator, X_test, y_test, s_test, reference)
            if method == "PrunedFairClassifier":
                import fairest

                unconstrained = make_pipeline(
                    preprocessor(X), fairest.PrunedFairClassifier(metric=None)
                )
                unconstrained.fit(X, y, prunedfairclassifier__sensitive_features=s.to_numpy())
                own = (own[0], own[1], unconstrained[-1].train_unfairness_)
    return {
        "task": task,
        "groups": int(s.nunique()),
        "smallest group (train)": int(s.value_counts().min()),
        "method": method,
        "fit s": round(seconds, 2),
        "compile s": round(compiled.seconds, 2) if compiled is not None else np.nan,
        "refit s": round(refit_seconds, 2),
        "accuracy": round(accuracy_score(y_test, y_pred), 4),
        "majority rate": round(max(np.mean(y_test), 1 - np.mean(y_test)), 4),
        "DP": round(_demographic_parity(y_pred, s_test), 4),
        "EO": round(float(equalized_odds_difference(y_test, y_pred, sensitive_features=s_test)), 4),
        "own metric": own[0],
        "own": round(float(own[1]), 4),
        "own (logreg)": round(float(own[2]), 4),
        "warnings": " | ".join(noted),
    }


def _in_subprocess(args, task, method) -> dict:
    command = [
        sys.executable,
        __file__,
        "--one",
        f"{task}:{method}",
        "--data-home",
        args.data_home,
        "--train",
        str(args.train),
        "--test",
        str(args.test),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {
            "task": task,
            "method": method,
            "fit s": f">{args.timeout}",
            "warnings": "timed out",
        }
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1][:200]
        return {"task": task, "method": method, "warnings": f"error: {tail}"}
    return json.loads(lines[-1])


def _median_row(runs: list[dict]) -> dict:
    """One row from the same row run in several fresh processes: the first run's
    figures, with the median of the seconds (``fit s``, ``compile s``, ``refit s``) and
    every run's ``fit s``; a run that failed or timed out is the row."""
    seconds = [pd.to_numeric(run.get("fit s"), errors="coerce") for run in runs]
    if len(runs) == 1 or any(pd.isna(value) for value in seconds):
        return next((run for run, value in zip(runs, seconds) if pd.isna(value)), runs[0])
    row = dict(runs[0])
    for key in ("fit s", "compile s", "refit s"):
        values = pd.to_numeric(pd.Series([run.get(key) for run in runs]), errors="coerce")
        row[key] = round(float(values.median()), 2) if values.notna().all() else row.get(key)
    row["fit s (runs)"] = " / ".join(str(value) for value in seconds)
    return row


def _within_tolerance(name, value) -> bool:
    """Whether a train metric whose name states its tolerance (``"... (tolerance t)"``)
    meets it: a constrained fit that keeps its promise where the reference already does
    too is not a fit that failed to mitigate."""
    if not isinstance(name, str) or "(tolerance " not in name or pd.isna(value):
        return False
    tolerance = float(name.split("(tolerance ")[1].rstrip(")"))
    return float(value) <= tolerance


def _checks(table: pd.DataFrame) -> pd.DataFrame:
    """The three conditions of a row, against the task's logistic regression."""
    flags = []
    for _, row in table.iterrows():
        base = table[(table.task == row.task) & (table.method == "sklearn-logreg")]
        problems = []
        seconds = pd.to_numeric(row.get("fit s"), errors="coerce")  # ">300": timed out
        if pd.isna(seconds) or pd.isna(row.get("accuracy")):
            problems.append("did not finish")
        elif not base.empty:
            base = base.iloc[0]
            if seconds > 10 * max(float(base["fit s"]), 0.5):
                problems.append("slower than 10x logreg")
            if row["accuracy"] < row["majority rate"]:
                problems.append("below majority rate")
            own, own_reference = row.get("own"), row.get("own (logreg)")
            within = _within_tolerance(row.get("own metric"), own)
            if row.method in FAIREST and pd.notna(own) and pd.notna(own_reference):
                if own >= own_reference and not within:
                    problems.append(f"not fairer ({row['own metric']}) than logreg")
            elif row.method not in BASELINES[:2] and row["DP"] >= base["DP"]:
                problems.append("not fairer (DP) than logreg")
        flags.append("; ".join(problems) or "ok")
    return table.assign(check=flags)


def _markdown(table: pd.DataFrame) -> str:
    cells = table.astype(object).where(table.notna(), "")
    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * table.shape[1]]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in cells.to_numpy()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--methods", default=",".join(BASELINES + FAIREST))
    parser.add_argument("--data-home", default=str(Path.cwd().parent / "shared" / "datasets"))
    parser.add_argument("--train", type=int, default=20_000)
    parser.add_argument("--test", type=int, default=20_000)
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="fresh processes a row; its seconds are their median (a loaded or noisy machine)",
    )
    parser.add_argument(
        "--reuse",
        help="a previous results CSV: its rows for (task, method) pairs not run now are kept "
        "(e.g. re-run the fairest rows only; the split and the baselines are deterministic)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--output", default=str(RESULTS / "practitioner"))
    args = parser.parse_args()
    if args.one:
        task, method = args.one.split(":")
        print(json.dumps(run_one(task, method, args.data_home, args.train, args.test)))
        return
    rows = []
    for task in args.tasks.split(","):
        for method in args.methods.split(","):
            runs = [_in_subprocess(args, task, method) for _ in range(max(args.repeats, 1))]
            rows.append(_median_row(runs))
            print(json.dumps(rows[-1]), flush=True)
    table = pd.DataFrame(rows)
    if args.reuse:
        previous = pd.read_csv(args.reuse).drop(columns="check", errors="ignore")
        run = set(zip(table.task, table.method))
        kept = previous[[pair not in run for pair in zip(previous.task, previous.method)]]
        order = {name: k for k, name in enumerate(BASELINES + FAIREST)}
        table = pd.concat([kept, table], ignore_index=True)
        table = table.sort_values(
            ["task", "method"], key=lambda c: c.map(order) if c.name == "method" else c
        )
        table = table.reset_index(drop=True)
    table = _checks(table)
    table.to_csv(f"{args.output}.csv", index=False)
    header = (
        "# Every classifier at its defaults on four practitioner tasks\n\n"
        f"`python benchmarks/practitioner.py --train {args.train} --test {args.test}`; "
        "one fresh process per row; DP / EO: test demographic parity / equalized odds "
        "differences over the task's groups; check: slower than 10x logistic regression, "
        "below the majority rate, not fairer than logistic regression on the metric the "
        "method's docs name (own; DP for the baselines).\n\n"
    )
    Path(f"{args.output}.md").write_text(header + _markdown(table) + "\n")
    print(f"wrote {args.output}.md")


if __name__ == "__main__":
    main()
