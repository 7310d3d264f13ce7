"""BADR experiment 3 (paper Table 2, spec badr.md 7.5) on the datasets fairest can load.

Protocol (spec badr.md 7.5, adapted to the data at hand):

* Two groups per dataset, "partition by gender" as in the paper: ``sex`` everywhere except
  Communities & Crime, which has no sex column; there the group is fairest's
  ``black_community`` (racepctblack > 0.06) (the reference groups it by race as well).
* 70/30 ``train_test_split`` stratified by group, ``random_state`` = split index
  (0..n_splits-1; the paper used 10 splits for regression).
* Classification (Adult, COMPAS, German credit, Credit default): L2 logistic regression,
  ``alpha = 1e-2``, unfairness = individual fairness (IF, spec 3.2, exact, no smoothing),
  performance = accuracy.
* Regression (Law school, Student performance, Communities & Crime, Parkinsons): ridge,
  ``alpha = 1e-1``, unfairness = demographic parity (regression form, spec 3.3),
  BADR minimising the smooth ``temperature = 1`` version as in the paper; performance = RMSE in
  target units (targets are not rescaled).
* Preprocessing: categorical columns one-hot encoded (missing values get their own
  column), every feature standardised with train mean and std (constant train columns
  dropped). Sensitive attributes stay in the features (as in the reference). Target
  leakage of the reference loaders is fixed (spec 7.1): Law school predicts ``zgpa``
  without ``zgpa`` (and without ``pass_bar``, an outcome after the GPA); Student performance
  predicts ``G3`` without ``G3`` (``G1``/``G2`` kept); Parkinsons without ``subject#``.
* Methods: ``BADRClassifier`` / ``BADRRegressor`` (SLSQP, defaults otherwise: safeguard
  on) against ``GroupWeighted*`` with ``weights`` = uniform, balanced, minimax,
  best_single_group (the paper's five strategies), plus two extra rows: pooled ERM, and
  ``grid`` = the paper's own experiment-3 "badr" (a search over the simplex, here a
  101-point grid on lambda_0 for G = 2 keeping the lowest EXACT train unfairness). The grid
  is the independent check that SLSQP found the global train optimum.
* Every model is scored by fairest's EXACT metric (``fairest.metrics.individual_fairness``,
  ``demographic_parity_deviation(task="regression")``) on decision scores / predictions on
  both splits; for regression the smooth temperature = 1 DP (``smooth_demographic_parity``, the
  paper's reported quantity, = exact + log 2 for G = 2 up to the 1e-6 inside the root) is
  stored as well.

Run: ``python benchmarks/badr_reproduction.py`` (all datasets, 10 splits), or
``--datasets adult compas --splits 3``. Per-dataset results are merged into
``results/badr_reproduction.json`` as they finish (an interrupted run keeps what it did);
``--report`` rebuilds the markdown from the JSON. Datasets from ``<repo>/../shared/datasets``
are skipped when that folder is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import RESULTS, machine  # noqa: E402

SHARED = ROOT.parent / "shared" / "datasets"
NAME = "badr_reproduction"
TEST_SIZE = 0.3
ALPHA = {"classification": 1e-2, "regression": 1e-1}
METRIC = {"classification": "individual_fairness", "regression": "demographic_parity"}
TEMPERATURE = 1.0
GRID = 101
GRID_ALL_SPLITS_MAX_ND = 500_000  # larger n * d: the grid runs on the first GRID_SPLITS splits
GRID_SPLITS = 3
SMOOTH_TIE = (
    1e-8  # regression: smooth temperature=1 DP values this close count as a tie (see report)
)
METHODS = (
    "badr",
    "uniform",
    "balanced",
    "minimax",
    "best_single_group",
    "pooled",
    "grid",
    "badr_tight",
)
TIGHT_TOL = 1e-16  # badr_tight: SLSQP ftol (default 1e-10), see the report's check section
PAPER_METHODS = ("badr", "uniform", "balanced", "minimax", "best_single_group")
# experiment 3's small ACS states (spec 7.4-7.5) that ../shared/datasets has, as ACSIncome
# (the paper's ACSEmployment / ACSTravelTime tables are not available there)
ACS_SMALL_STATES = ("WY", "VT", "ND", "SD", "MT", "ME", "ID")
ACS = tuple(f"acs_income_{state.lower()}" for state in ACS_SMALL_STATES)
CLASSIFICATION = ("adult", "compas", "german", "credit_default", *ACS)
REGRESSION = ("law_school", "student", "communities", "parkinsons")
FETCHED = {
    "credit_default": "credit_default",
    "law_school": "law_school",
    "student": "student_performance",
    "communities": "communities_crime",
    "parkinsons": "parkinsons",
    **dict.fromkeys(ACS, "acs_income"),
}


# ---------------------------------------------------------------------------------------
# data: (features DataFrame, target, group labels, task)


def _adult(home):
    from fairest.datasets import load_adult

    b = load_adult(subset="train", as_frame=True)  # 32,561 rows as in the paper
    return b.frame[b.feature_names], b.target, b.frame["sex"].astype(str).to_numpy()


def _compas(home):
    from fairest.datasets import load_compas

    b = load_compas(propublica_filter=True, as_frame=True)  # 6,172 rows as in the paper
    cols = [
        "sex",
        "age",
        "age_cat",
        "race",
        "juv_fel_count",
        "juv_misd_count",
        "juv_other_count",
        "priors_count",
        "c_charge_degree",
    ]  # the paper's d = 9
    return b.frame[cols], b.target, b.frame["sex"].astype(str).to_numpy()


def _german(home):
    from fairest.datasets import load_german_credit

    b = load_german_credit(as_frame=True)
    return b.frame[b.feature_names], b.target, b.sensitive["sex"].astype(str).to_numpy()


def _credit(home):
    from fairest.datasets import fetch_credit_default

    b = fetch_credit_default(data_home=home, as_frame=True)
    X = b.frame[b.feature_names].copy()
    for c in ("EDUCATION", "MARRIAGE"):
        X[c] = X[c].astype(str).astype("category")
    return X, b.target, b.sensitive["sex"].astype(str).to_numpy()


def _law(home):
    from fairest.datasets import fetch_law_school

    b = fetch_law_school(version="bar_passage", data_home=home, as_frame=True)
    X = b.frame.drop(columns=["zgpa", "pass_bar"])  # target and a later outcome (spec 7.1)
    y = b.frame["zgpa"].to_numpy(np.float64)
    return X, y, b.sensitive["sex"].astype(str).to_numpy()


def _student(home):
    from fairest.datasets import fetch_student_performance

    b = fetch_student_performance(subject="mat", data_home=home, as_frame=True)  # 395 rows
    return b.frame[b.feature_names], b.target, b.sensitive["sex"].astype(str).to_numpy()


def _communities(home):
    from fairest.datasets import fetch_communities_crime

    b = fetch_communities_crime(data_home=home, as_frame=True)
    X = b.frame[b.feature_names]
    X = X.loc[:, X.notna().all()]  # 99 complete columns (paper: d = 97)
    return X, b.target, b.sensitive["black_community"].astype(str).to_numpy()


def _parkinsons(home):
    from fairest.datasets import fetch_parkinsons

    b = fetch_parkinsons(data_home=home, as_frame=True)  # subject# is not a feature
    return b.frame[b.feature_names], b.target, b.sensitive["sex"].astype(str).to_numpy()


def _acs_income(state):
    """ACSIncome of one state: occupation coarsened to its two leading digits (about 100
    codes), place of birth to its hundreds (US state vs continent); categoricals one-hot."""

    def load(home):
        from fairest.datasets import fetch_acs_income

        b = fetch_acs_income(states=state, data_home=home, as_frame=True)
        X = b.frame[b.feature_names].copy()
        X["OCCP"] = X["OCCP"] // 100
        X["POBP"] = X["POBP"] // 100
        for c in ("COW", "MAR", "OCCP", "POBP", "RELP", "SEX", "RAC1P"):
            X[c] = X[c].astype(int).astype(str)
        return X, b.target, b.sensitive["sex"].astype(str).to_numpy()

    return load


LOADERS = {
    "adult": _adult,
    "compas": _compas,
    "german": _german,
    "credit_default": _credit,
    "law_school": _law,
    "student": _student,
    "communities": _communities,
    "parkinsons": _parkinsons,
    **{name: _acs_income(state) for name, state in zip(ACS, ACS_SMALL_STATES)},
}


def encode(X: pd.DataFrame) -> pd.DataFrame:
    """One-hot categoricals (NaN -> own column), numeric as float."""
    cat = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    num = [c for c in X.columns if c not in cat]
    parts = [X[num].astype(np.float64)]
    if cat:
        parts.append(pd.get_dummies(X[cat].astype(object), dummy_na=True, dtype=np.float64))
    out = pd.concat(parts, axis=1)
    return out.loc[:, out.nunique() > 1]


def split(X: np.ndarray, y, groups, seed: int):
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    tr, te = train_test_split(idx, test_size=TEST_SIZE, stratify=groups, random_state=seed)
    mean = X[tr].mean(axis=0)
    std = X[tr].std(axis=0)
    keep = std > 1e-12
    Xs = (X[:, keep] - mean[keep]) / std[keep]
    return Xs[tr], Xs[te], y[tr], y[te], groups[tr], groups[te]


# ---------------------------------------------------------------------------------------
# one split


def unfairness(task, y, scores, groups) -> float:
    from fairest.metrics import demographic_parity_deviation, individual_fairness

    if task == "classification":
        return individual_fairness(y, scores, sensitive_features=groups)
    return demographic_parity_deviation(y, scores, sensitive_features=groups, task="regression")


def smooth_dp(scores, groups) -> float:
    import jax

    from fairest.metrics import smooth_demographic_parity

    labels, codes = np.unique(groups, return_inverse=True)
    with jax.enable_x64(True):
        return float(
            smooth_demographic_parity(
                np.asarray(scores, np.float64),
                np.zeros(len(scores)),
                codes.astype(np.int32),
                len(labels),
                temperature=TEMPERATURE,
                task="regression",
            )
        )


def outputs(task, model, X):
    return model.decision_function(X) if task == "classification" else model.predict(X)


def performance(task, y, model, X) -> float:
    if task == "classification":
        return float(np.mean(model.predict(X) == y))
    return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


def make_model(task, method, weights=None):
    from fairest.reweighting import (
        BADRClassifier,
        BADRRegressor,
        GroupWeightedClassifier,
        GroupWeightedRegressor,
    )

    common = {"alpha": ALPHA[task], "metric": METRIC[task]}
    if task == "regression":
        common["metric_params"] = {"temperature": TEMPERATURE}
    if method in ("badr", "badr_tight"):
        cls = BADRClassifier if task == "classification" else BADRRegressor
        return cls(
            solver="slsqp",
            tol=TIGHT_TOL if method == "badr_tight" else None,
            max_weight_ratio=None,  # the paper's search: the whole simplex
            **common,
        )
    cls = GroupWeightedClassifier if task == "classification" else GroupWeightedRegressor
    return cls(weights=method if weights is None else weights, **common)


def run_split(task, Xtr, Xte, ytr, yte, gtr, gte, grid_points, methods=METHODS):
    rows = {}
    for method in methods:
        if method == "grid":
            continue
        start = time.perf_counter()
        load = os.getloadavg()[0]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = make_model(task, method).fit(Xtr, ytr, sensitive_features=gtr)
        seconds = time.perf_counter() - start
        s_tr, s_te = outputs(task, model, Xtr), outputs(task, model, Xte)
        row = {
            "train_U": unfairness(task, ytr, s_tr, gtr),
            "test_U": unfairness(task, yte, s_te, gte),
            "train_perf": performance(task, ytr, model, Xtr),
            "test_perf": performance(task, yte, model, Xte),
            "lambda": [float(v) for v in model.group_weights_],
            "groups": [str(v) for v in model.groups_],
            "seconds": seconds,
            "loadavg": load,
            "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught}),
        }
        if task == "regression":
            row["train_U_smooth"] = smooth_dp(s_tr, gtr)
            row["test_U_smooth"] = smooth_dp(s_te, gte)
        if method in ("badr", "badr_tight"):
            row.update(
                selected=model.selected_,
                converged=bool(model.converged_),
                n_iter=int(model.n_iter_),
                n_evaluations=int(model.n_evaluations_),
                objective_smooth=float(model.unfairness_),
                objective_exact=float(model.unfairness_exact_),
                baseline_smooth={k: float(v) for k, v in model.baseline_unfairness_.items()},
            )
        rows[method] = row
    if grid_points and "grid" in methods:
        rows["grid"] = grid_search(task, Xtr, Xte, ytr, yte, gtr, gte, grid_points)
    return rows


def grid_search(task, Xtr, Xte, ytr, yte, gtr, gte, points):
    """The paper's experiment-3 'badr': best EXACT train unfairness over a lambda grid."""
    start = time.perf_counter()
    load = os.getloadavg()[0]
    best = None
    curve = []
    for t in np.linspace(0.0, 1.0, points):
        lam = np.array([t, 1.0 - t])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make_model(task, "grid", weights=lam).fit(Xtr, ytr, sensitive_features=gtr)
        value = unfairness(task, ytr, outputs(task, model, Xtr), gtr)
        curve.append(value)
        if best is None or value < best[0]:
            best = (value, model)
    value, model = best
    s_te = outputs(task, model, Xte)
    row = {
        "train_U": value,
        "test_U": unfairness(task, yte, s_te, gte),
        "train_perf": performance(task, ytr, model, Xtr),
        "test_perf": performance(task, yte, model, Xte),
        "lambda": [float(v) for v in model.group_weights_],
        "groups": [str(v) for v in model.groups_],
        "seconds": time.perf_counter() - start,
        "loadavg": load,
        "curve_train_U": curve,
    }
    if task == "regression":
        row["train_U_smooth"] = smooth_dp(outputs(task, model, Xtr), gtr)
        row["test_U_smooth"] = smooth_dp(s_te, gte)
    return row


def run_dataset(name, home, n_splits, grid_points, grid_splits, methods=METHODS, previous=None):
    task = "classification" if name in CLASSIFICATION else "regression"
    X, y, groups = LOADERS[name](home)
    Xenc = encode(X)
    y = np.asarray(y)
    if task == "classification":
        y = np.asarray(pd.factorize(y, sort=True)[0], np.float64)
    Xa = Xenc.to_numpy(np.float64)
    info = {
        "task": task,
        "n": int(len(y)),
        "d": int(Xa.shape[1]),
        "group_sizes": {str(k): int(v) for k, v in zip(*np.unique(groups, return_counts=True))},
        "alpha": ALPHA[task],
        "metric": METRIC[task],
        "splits": [],
    }
    print(f"{name}: n={info['n']} d={info['d']} groups={info['group_sizes']}", flush=True)
    for seed in range(n_splits):
        start = time.perf_counter()
        parts = split(Xa, y, groups, seed)
        cheap = Xa.size <= GRID_ALL_SPLITS_MAX_ND
        use_grid = grid_points if (cheap or seed < grid_splits) else 0
        rows = run_split(task, *parts, use_grid, methods)
        if previous is not None:  # --only: add these methods to the stored splits
            merged = dict(previous["splits"][seed]["methods"])
            merged.update(rows)
            rows = merged
        info["splits"].append({"seed": seed, "methods": rows})
        b = rows["badr"]
        print(
            f"  split {seed}: {time.perf_counter() - start:.1f}s  badr train U {b['train_U']:.6g}"
            f" ({b['selected']}, lambda {np.round(b['lambda'], 4).tolist()})  "
            + "  ".join(f"{m} {r['train_U']:.6g}" for m, r in rows.items() if m != "badr"),
            flush=True,
        )
    return info


# ---------------------------------------------------------------------------------------
# report


def check_badr(info, target="badr"):
    """Splits where a non-BADR method has a lower exact train unfairness than ``target``."""
    misses = []
    for sp in info["splits"]:
        m = sp["methods"]
        if target not in m:
            continue
        mine = m[target]
        b = mine["train_U"]
        for method, row in m.items():
            if method in ("badr", "badr_tight"):
                continue
            gap = b - row["train_U"]
            if gap > 1e-9 * max(1.0, abs(b)):
                smooth_gap = None
                if info["task"] == "regression":
                    smooth_gap = mine["train_U_smooth"] - row["train_U_smooth"]
                if smooth_gap is not None and smooth_gap < SMOOTH_TIE:
                    kind = "smoothing floor"
                elif gap < 1e-6 * abs(row["train_U"]):
                    kind = "tolerance"
                else:
                    kind = "material"
                misses.append(
                    {
                        "kind": kind,
                        "seed": sp["seed"],
                        "beaten_by": method,
                        "badr": b,
                        "other": row["train_U"],
                        "relative_gap": gap / max(abs(row["train_U"]), 1e-300),
                        "smooth_gap": smooth_gap,
                        "badr_lambda": mine["lambda"],
                        "other_lambda": row["lambda"],
                        "badr_selected": mine["selected"],
                        "badr_n_iter": mine["n_iter"],
                    }
                )
    return misses


def fmt(values, digits=4):
    v = np.asarray(values, dtype=np.float64)
    return f"{v.mean():.{digits}g} ± {v.std():.2g}"


def report(payload) -> str:
    datasets = payload["datasets"]
    lines = [f"# {NAME}", "", payload["notes"], ""]
    lines += ["## Results (mean ± std over splits)", ""]
    head = [
        "dataset",
        "method",
        "train U",
        "test U",
        "train acc/RMSE",
        "test acc/RMSE",
        "lambda (mean)",
        "sec/fit",
    ]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for name, info in datasets.items():
        for method in METHODS:
            rows = [sp["methods"][method] for sp in info["splits"] if method in sp["methods"]]
            if not rows:
                continue
            lam = np.mean([r["lambda"] for r in rows], axis=0)
            lam_txt = ", ".join(f"{g}={v:.3f}" for g, v in zip(rows[0]["groups"], lam))
            perf = "acc" if info["task"] == "classification" else "RMSE"
            label = method + (" (extra)" if method not in PAPER_METHODS else "")
            lines.append(
                f"| {name} ({perf}, n_splits={len(rows)}) | {label} | "
                f"{fmt([r['train_U'] for r in rows])} | {fmt([r['test_U'] for r in rows])} | "
                f"{fmt([r['train_perf'] for r in rows])} | {fmt([r['test_perf'] for r in rows])} | "
                f"{lam_txt} | {np.mean([r['seconds'] for r in rows]):.2g} |"
            )
    lines += [
        "",
        "## Check: BADR has the lowest exact TRAIN unfairness",
        "",
        "badr = BADR defaults (SLSQP ftol 1e-10); badr_tight = the same with "
        f"tol={TIGHT_TOL:g} (diagnostic). Compared with every non-BADR row of the same "
        "split (the four paper baselines, pooled ERM, and the 101-point grid where run).",
        "",
    ]
    lines += [
        "| dataset | variant | splits | lowest vs the 4 paper baselines | "
        "≤ grid (101 points) | no material miss | selection (solver / safeguard) | "
        "SLSQP iterations (mean, min) | worst relative gap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, info in datasets.items():
        for target in ("badr", "badr_tight"):
            splits = [sp for sp in info["splits"] if target in sp["methods"]]
            if not splits:
                continue
            misses = check_badr(info, target)
            n = len(splits)
            vs_paper = {m["seed"] for m in misses if m["beaten_by"] in PAPER_METHODS}
            vs_grid = {m["seed"] for m in misses if m["beaten_by"] == "grid"}
            material = {m["seed"] for m in misses if m["kind"] == "material"}
            n_grid = sum("grid" in sp["methods"] for sp in splits)
            sel = {}
            for sp in splits:
                s = sp["methods"][target]["selected"]
                sel[s] = sel.get(s, 0) + 1
            iters = [sp["methods"][target]["n_iter"] for sp in splits]
            worst = max((m["relative_gap"] for m in misses), default=0.0)
            lines.append(
                f"| {name} | {target} | {n} | {n - len(vs_paper)}/{n} | "
                f"{n_grid - len(vs_grid)}/{n_grid} | {n - len(material)}/{n} | "
                f"{', '.join(f'{k}: {v}' for k, v in sel.items())} | "
                f"{np.mean(iters):.1f}, {min(iters)} | {worst:.2g} |"
            )
    lines += ["", DIAGNOSIS]
    all_misses = [
        (name, t, m)
        for name, info in datasets.items()
        for t in ("badr", "badr_tight")
        for m in check_badr(info, t)
    ]
    if all_misses:
        lines += ["", "Every split where another method has a lower exact train U than BADR:", ""]
        lines += [
            "Kinds: 'smoothing floor' = regression, the smooth temperature = 1 DP values that BADR "
            f"minimises differ by less than {SMOOTH_TIE:g} (for G = 2 the smooth DP is "
            "log 2 + sqrt(delta^2 + 1e-6), flat, ~ 500 delta^2, once |delta| << 1e-3), so "
            "the exact values differ below the objective's resolution; "
            "'tolerance' = relative gap below 1e-6; 'material' = anything else.",
            "",
        ]
        lines += [
            "| dataset | variant | seed | kind | beaten by | BADR train U | other train U | "
            "rel. gap | BADR lambda | other lambda | BADR selected | SLSQP iter |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, t, m in all_misses:
            lines.append(
                f"| {name} | {t} | {m['seed']} | {m['kind']} | {m['beaten_by']} | "
                f"{m['badr']:.6g} | {m['other']:.6g} | "
                f"{m['relative_gap']:.2g} | {np.round(m['badr_lambda'], 4).tolist()} | "
                f"{np.round(m['other_lambda'], 4).tolist()} | {m['badr_selected']} | "
                f"{m['badr_n_iter']} |"
            )
    lines += [
        "",
        "## Lowest TEST unfairness (count of splits, among the paper's five methods)",
        "",
        "Ties (relative 1e-6, e.g. BADR on the same vertex as best_single_group) count "
        "for every tied method, so a row can sum to more than the number of splits.",
        "",
    ]
    lines += [
        "| dataset | " + " | ".join(PAPER_METHODS) + " |",
        "|---|" + "|".join("---" for _ in PAPER_METHODS) + "|",
    ]
    for name, info in datasets.items():
        wins = dict.fromkeys(PAPER_METHODS, 0)
        for sp in info["splits"]:
            low = min(sp["methods"][k]["test_U"] for k in PAPER_METHODS)
            for k in PAPER_METHODS:
                if sp["methods"][k]["test_U"] <= low + 1e-6 * abs(low):
                    wins[k] += 1
        lines.append(f"| {name} | " + " | ".join(str(wins[m]) for m in PAPER_METHODS) + " |")
    reg = [n for n, i in datasets.items() if i["task"] == "regression"]
    if reg:
        lines += [
            "",
            "## Regression, pooled over datasets and splits (paper Table 2 layout)",
            "",
            "Test DP as the paper reports it (smooth temperature = 1, includes + log 2 for G = 2) "
            "and exact; test RMSE in target units.",
            "",
            "| method | test RMSE | test DP smooth (temperature=1) | test DP exact | "
            "paper: test RMSE | paper: test DP |",
            "|---|---|---|---|---|---|",
        ]
        paper = payload.get("paper_table2_regression", {})
        for method in PAPER_METHODS:
            rows = [sp["methods"][method] for n in reg for sp in datasets[n]["splits"]]
            p = paper.get(method, ["", ""])
            lines.append(
                f"| {method} | {fmt([r['test_perf'] for r in rows])} | "
                f"{fmt([r['test_U_smooth'] for r in rows])} | {fmt([r['test_U'] for r in rows])} | "
                f"{p[0]} | {p[1]} |"
            )
    cls = [n for n, i in datasets.items() if i["task"] == "classification"]
    if cls:
        lines += [
            "",
            "## Classification, pooled over datasets and splits (paper Table 2 layout; "
            "the paper's runs are ACS states, not these datasets)",
            "",
            "| method | test accuracy | test IF | paper: test accuracy | paper: test IF |",
            "|---|---|---|---|---|",
        ]
        paper = payload.get("paper_table2_classification", {})
        for method in PAPER_METHODS:
            rows = [sp["methods"][method] for n in cls for sp in datasets[n]["splits"]]
            p = paper.get(method, ["", ""])
            lines.append(
                f"| {method} | {fmt([r['test_perf'] for r in rows])} | "
                f"{fmt([r['test_U'] for r in rows])} | {p[0]} | {p[1]} |"
            )
    lines += [
        "",
        "## Datasets",
        "",
        "| dataset | task | n | d (after encoding) | groups |",
        "|---|---|---|---|---|",
    ]
    for name, info in datasets.items():
        lines.append(
            f"| {name} | {info['task']} | {info['n']} | {info['d']} | {info['group_sizes']} |"
        )
    lines += ["", f"Machine: {payload['machine']}", ""]
    return "\n".join(lines)


PAPER_REG = {  # spec badr.md 7.5 (recorded outputs; "badr" there is a 200-point random search)
    "badr": ["2.5554 ± 4.1021", "0.8666 ± 0.1188"],
    "uniform": ["2.5085 ± 4.0420", "1.0974 ± 0.3672"],
    "balanced": ["2.5168 ± 4.0550", "1.0935 ± 0.3596"],
    "minimax": ["2.5314 ± 4.0855", "1.0728 ± 0.3453"],
    "best_single_group": ["2.6800 ± 4.3114", "1.0239 ± 0.2766"],
}
PAPER_CLS = {
    "badr": ["0.7628 ± 0.1231", "0.2947 ± 0.1031"],
    "uniform": ["0.7637 ± 0.1219", "0.3432 ± 0.1089"],
    "balanced": ["0.7634 ± 0.1221", "0.3470 ± 0.1102"],
    "minimax": ["0.7633 ± 0.1223", "0.3372 ± 0.1077"],
    "best_single_group": ["0.7585 ± 0.1282", "0.3180 ± 0.1152"],
}

NOTES = (
    "Paper experiment 3 (Table 2; spec badr.md 7.5) with fairest. Two groups per dataset "
    "(sex; Communities & Crime: black_community = racepctblack > 0.06, it has no sex column). "
    "70/30 split stratified by group, random_state = split index. Classification: logistic "
    "alpha = 1e-2, metric individual fairness (exact, no smoothing), accuracy. Regression: "
    "ridge alpha = 1e-1, metric demographic parity (regression form; BADR minimises the smooth "
    "temperature = 1 version as in the paper, all rows are scored by the EXACT max_g |delta_g|, and the "
    "smooth value is in the JSON and the pooled table), RMSE in target units. One-hot "
    "categoricals, standardised features (train statistics), sensitive attributes kept as "
    "features; reference target leaks fixed (Law school: target zgpa, zgpa and pass_bar dropped; "
    "Student: G3 not a feature; Parkinsons: subject# not a feature; random row splits, so "
    "Parkinsons subjects appear in train and test as in the paper). BADR = BADRClassifier / "
    "BADRRegressor(solver='slsqp'), safeguard on, other parameters default. Baselines = "
    "GroupWeighted*(weights=uniform|balanced|minimax|best_single_group) with the same alpha. "
    "Extra rows: pooled ERM, and grid = best exact train U over 101 lambda on the 2-simplex "
    "(what the paper's 'badr' column actually is: a search, spec 7.5), on every split when "
    "n * d <= 500,000 and on the first 3 splits otherwise (Adult, Credit default), to fit "
    "the CPU budget. Differences from the "
    "paper: the classification datasets are Adult/COMPAS/German/Credit default plus ACSIncome "
    "2018 of the seven small states of the paper's ACS list that ../shared/datasets has (WY, VT, "
    "ND, SD, MT, ME, ID; the paper used ACSEmployment / ACSTravelTime, not available here, and "
    "the reference's bucket grouping, here sex; ACS occupation coarsened to its two leading "
    "digits, place of birth to its hundreds; 3 splits per state with --splits 3; WY, VT and ND "
    "ran at load 10-16, SD, MT, ME and ID on a quiet machine), law school is the "
    "bar-passage table (20,798 rows) without the target leak, "
    "so the paper's numbers are a qualitative reference only. Extra diagnostic row badr_tight = "
    "BADR with SLSQP tol=1e-16 instead of the default 1e-10 (see the check section). Timings "
    "(sec/fit) were taken on 2 cores shared with other jobs (load average 10-15, recorded per fit "
    "in the JSON): they are indicative only and include JIT compilation on the first split."
)

DIAGNOSIS = """Law school, history of a fixed miss. The first run of this benchmark (SLSQP from uniform
weights, absolute ftol 1e-10) missed the grid on 3 of 10 Law school splits by 31-320x: uniform
is close to a stationary point there (a local MAXIMUM of the train DP along the simplex, tangent
hypergradient ~1e-5, correct against finite differences), so SLSQP's absolute stopping test
passed after one iteration, and the safeguard's best baseline (balanced) was returned. fairest
now (1) divides Phi by its starting value before SLSQP, so ftol is relative, and (2) when a
two-loop solver ends no better than the safeguard's baselines, restarts it from the best
non-uniform baseline and then from the best vertex. The rows above are from the fixed code:
BADR is at or below the grid on every split. badr_tight (tol=1e-16) remains as a diagnostic.
Misses at the 'smoothing floor' (both exact DPs ~1e-6, where the temperature = 1 smooth objective
sqrt(delta^2 + 1e-6) cannot tell them apart) would not be material.
"""


def write(payload):
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{NAME}.json").write_text(json.dumps(payload, indent=1))
    (RESULTS / f"{NAME}.md").write_text(report(payload))


def load_payload():
    path = RESULTS / f"{NAME}.json"
    if path.exists():
        return json.loads(path.read_text())
    return {"datasets": {}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--datasets", nargs="+", default=list(CLASSIFICATION + REGRESSION), choices=list(LOADERS)
    )
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--grid", type=int, default=GRID, help="grid points (0: no grid row)")
    parser.add_argument(
        "--grid-splits",
        type=int,
        default=GRID_SPLITS,
        help=f"splits with a grid row when n * d > {GRID_ALL_SPLITS_MAX_ND}",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=METHODS,
        default=None,
        help="run only these methods and merge them into the stored splits",
    )
    parser.add_argument("--report", action="store_true", help="only rebuild the markdown")
    parser.add_argument("--fresh", action="store_true", help="drop previous results")
    args = parser.parse_args()

    payload = {"datasets": {}} if args.fresh else load_payload()
    payload.update(
        machine=machine(),
        notes=NOTES,
        paper_table2_regression=PAPER_REG,
        paper_table2_classification=PAPER_CLS,
    )
    if args.report:
        write(payload)
        return
    tmp = tempfile.TemporaryDirectory()
    home = None
    if SHARED.is_dir():
        from fairest.datasets import seed_data_home

        home = tmp.name
        seed_data_home(SHARED, home, datasets=sorted(set(FETCHED.values())), verify=False)
    for name in args.datasets:
        if name in FETCHED and home is None:
            print(f"skipping {name}: {SHARED} is absent")
            continue
        start = time.perf_counter()
        previous = None
        if args.only:
            previous = payload["datasets"][name]
            assert len(previous["splits"]) == args.splits, "--only needs the same --splits"
        info = run_dataset(
            name,
            home,
            args.splits,
            args.grid,
            args.grid_splits,
            tuple(args.only) if args.only else METHODS,
            previous,
        )
        info["wall_seconds"] = time.perf_counter() - start
        if previous is not None:
            info["wall_seconds_only"] = {" ".join(args.only): info["wall_seconds"]}
            info["wall_seconds"] = previous.get("wall_seconds")
        info["loadavg_end"] = os.getloadavg()
        payload["datasets"][name] = info
        order = [n for n in LOADERS if n in payload["datasets"]]
        payload["datasets"] = {n: payload["datasets"][n] for n in order}
        write(payload)
        print(f"{name}: {info['wall_seconds']:.1f}s", flush=True)


if __name__ == "__main__":
    main()
