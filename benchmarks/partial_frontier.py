"""Accuracy vs partial-fairness frontiers (paper Fig. 1): IDCA vs every baseline.

Datasets, intervals and groups as in the paper (spec section 7.1):

* ``a9a``: LIBSVM Adult (``../shared/datasets/libsvm``), the original train split 90/10
  into train / validation per seed, the original test split kept; interval [5 %, 30 %);
  gamma = 1 female / 2 male;
* ``bank``: UCI bank marketing, additional version (41,188 rows; ``duration`` dropped),
  60/20/20; interval [0 %, 25 %); gamma = 1 for ages 25-60, 2 otherwise;
* ``law``: LSAC bar passage (20,798 rows), 56.25/18.75/25; interval [70 %, 100 %);
  gamma = 1 white / 2 non-white.

Model ``(1, x, gamma, gamma x)`` on standardised numeric and one-hot categorical
features (the paper does not describe its preprocessing). Methods: IDCA on (15) (pSP) and
(21) (pDP) over the paper's kappa grids; the penalty method (114) / (119) over its lambda
grids; GroupAUC (102), Inter (105), Intra (107) over their kappa grids (these constrain
full, not partial, metrics: one fit is scored by both pSP and pDP); the unconstrained
model (L-BFGS). Reported: test accuracy and test fairness ``1 - max pSP`` / ``1 - max
pDP`` (fairest's exact metrics), mean and 95 % t-interval over seeds.

Tuning (paper G.2.2 / G.3-G.4, spec 5.3), REDUCED where the flags say so:

* IDCA: ``K`` chosen by validation accuracy among ``K_max * {2, ..., 8} / 8`` from the
  snapshots of one run (exactly the paper's K selection when ``--outer 400``); ``T`` and
  ``epsilon`` fixed (``--inner``, ``--eps``) unless ``--tune-eps``, which runs the paper's
  first stage (epsilon in {5e-4, 1e-3, 2e-3, 5e-3} after ``--outer // 8`` iterations).
* penalty: step chosen by validation accuracy among ``--penalty-steps``; iterations =
  ``outer * inner`` (the paper: "as many as our method").
* GAUC / Inter / Intra: projected gradient descent with ``--pgd-iter`` steps and step
  chosen by validation accuracy among ``--pgd-steps``; every projection exact through its
  Lagrange dual (``--projection exact``, the default: 0.2 s per 100-step fit on bank,
  0.5-0.8 s on a9a) or by cvxpy + Clarabel at tolerance 1e-6 (``--projection clarabel``,
  the spec's reference path: 5-6 s on bank, 80-90 s on a9a; partial_frontier_projection_*).

Usage (the full protocol is hours on a 2-core machine; the defaults are reduced)::

    python benchmarks/partial_frontier.py [--datasets law bank a9a] [--seeds 5]
        [--n-train 2000] [--outer 40] [--inner 100] [--pgd-iter 100]

``--compare-projections`` instead times one GAUC / Inter / Intra fit per class on seed 0
with both projections, interleaved (``--projection-reps`` rounds; kappa, step and
iterations as in the frontier), and writes
``benchmarks/results/partial_frontier_projection_<dataset>.json`` / ``.md``: seconds per
fit, load average, the largest coefficient difference, train objective, test accuracy and
fairness of both.

Results (updated after every fit; a rerun resumes from them): for each dataset
``benchmarks/results/partial_frontier_<dataset>.json`` (every run), ``.md`` (summary
tables, the dominance check, settings) and ``.png`` (pSP and pDP frontiers);
``--tag NAME`` appends ``_NAME`` to these names (a second setting next to the default
one). Skips a dataset whose files are absent from ``../shared/datasets``.
"""

from __future__ import annotations

import argparse
import io
import json
import lzma
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from fairest.metrics import partial_demographic_parity, partial_statistical_parity
from fairest.partial import (
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
    PartialParityClassifier,
    PartialParityPenaltyClassifier,
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "benchmarks" / "results"

INTERVALS = {"a9a": (0.05, 0.3), "bank": (0.0, 0.25), "law": (0.7, 1.0)}
# spec section 7.2 (IDCA kappa), 8.5 (baseline kappa), 8.6 (penalty lambda)
KAPPA = {
    "a9a": {"psp": [0.01, 0.05, 0.1, 0.2, 0.28], "pdp": [0.005, 0.03, 0.05, 0.1, 0.15]},
    "bank": {"psp": [0.01, 0.08, 0.22, 0.3], "pdp": [0.01, 0.03, 0.05, 0.07, 0.1]},
    "law": {"psp": [0.005, 0.08, 0.1, 0.15, 0.2], "pdp": [0.005, 0.04, 0.06, 0.1, 0.15]},
}
PENALTY = {
    "a9a": {"psp": [0.2, 0.3, 0.37, 1], "pdp": [0.13, 0.17, 0.2, 0.23, 1]},
    "bank": {"psp": [0.4, 0.405, 0.41, 1, 1.5], "pdp": [0.005, 0.015, 0.018, 0.1, 2]},
    "law": {"psp": [0.39, 0.4, 0.5, 0.8, 1.5], "pdp": [0.001, 0.01, 1]},
}
BASELINE_KAPPA = {
    "GAUC (102)": {
        "a9a": {"psp": [0.7, 1, 2, 3.5], "pdp": [0.3, 0.4, 0.5, 0.7, 1]},
        "bank": {"psp": [0.1, 0.3, 0.56, 0.7, 1], "pdp": [0.06, 0.5, 2.35, 2.62, 3.28, 4]},
        "law": {"psp": [0.5, 0.75, 1.15, 1.8, 2.7], "pdp": [1, 3, 4, 5, 6, 10]},
    },
    "Inter (105)": {
        "a9a": {"psp": [1.5, 3, 3.5, 6], "pdp": [0.9, 1.2, 1.5, 2, 2.7]},
        "bank": {"psp": [1.5, 1.8, 2, 3], "pdp": [0.3, 1, 5, 5.4, 6]},
        "law": {"psp": [0.4, 1.6, 2.4, 4], "pdp": [2, 6.5, 8, 9, 10, 15]},
    },
    "Intra (107)": {
        "a9a": {"psp": [3, 5, 8], "pdp": [0.7, 1, 1.3, 1.7, 2.2]},
        "bank": {"psp": [2, 3, 4], "pdp": [0.1, 0.3, 0.42, 0.5, 1, 2.5]},
        "law": {"psp": [3, 5, 10], "pdp": [0.1, 0.8, 2, 3.5, 10]},
    },
}
BASELINE_CLASSES = {
    "GAUC (102)": GroupAUCConstrainedClassifier,
    "Inter (105)": InterGroupPairwiseConstrainedClassifier,
    "Intra (107)": IntraGroupPairwiseConstrainedClassifier,
}


# ----------------------------------------------------------------------------- data


def _design(frame_train, frames, categorical):
    """Standardise numeric columns (train statistics), one-hot categorical ones."""
    numeric = [c for c in frame_train.columns if c not in categorical]
    mean = frame_train[numeric].mean()
    std = frame_train[numeric].std().replace(0, 1)
    cats = {c: sorted(frame_train[c].astype(str).unique()) for c in categorical}
    out = []
    for f in frames:
        parts = [((f[numeric] - mean) / std).to_numpy(float)]
        for c in categorical:
            values = f[c].astype(str).to_numpy()
            parts.append((values[:, None] == np.array(cats[c])[None, :]).astype(float))
        out.append(np.hstack(parts))
    return out


def _with_group(X, gamma):
    return np.hstack([X, gamma[:, None], gamma[:, None] * X])  # (x, gamma, gamma x)


def _subsample(X, y, g, n, seed):
    if n and n < len(y):
        keep = np.random.default_rng(seed).choice(len(y), n, replace=False)
        return X[keep], y[keep], g[keep]
    return X, y, g


def load_split(name, seed, home, n_train):
    """((Xtr, ytr, gtr), (Xva, yva, gva), (Xte, yte, gte)) with the group code in {1, 2}."""
    if name == "a9a":
        from sklearn.datasets import load_svmlight_file

        def read(fname):
            X, y = load_svmlight_file(
                io.BytesIO(lzma.open(SHARED / "libsvm" / fname).read()), n_features=123
            )
            X = X.toarray()
            return X, (y > 0).astype(int), np.where(X[:, 71] > 0, 1.0, 2.0)  # 72: Female

        X, y, g = read("a9a.xz")
        Xte, yte, gte = read("a9a.t.xz")
        Xtr, Xva, ytr, yva, gtr, gva = train_test_split(
            X, y, g, test_size=0.1, random_state=seed, stratify=g
        )
        Xtr, ytr, gtr = _subsample(Xtr, ytr, gtr, n_train, seed)
        return [
            (_with_group(a, c), b, c)
            for a, b, c in ((Xtr, ytr, gtr), (Xva, yva, gva), (Xte, yte, gte))
        ]
    from fairest.datasets import fetch_bank_marketing, fetch_law_school

    if name == "bank":
        b = fetch_bank_marketing(version="additional", data_home=home, as_frame=True)
        frame = b.frame.drop(columns=["duration"], errors="ignore")
        y = frame.pop("y").to_numpy().astype(int)
        age = frame["age"].to_numpy()
        g = np.where((age >= 25) & (age <= 60), 1.0, 2.0)
        categorical = [
            c
            for c in frame.columns
            if frame[c].dtype == object or str(frame[c].dtype) in ("category", "str", "string")
        ]
        sizes = (0.6, 0.2)
    else:
        b = fetch_law_school(version="bar_passage", data_home=home, as_frame=True)
        frame = b.frame.copy()
        g = np.where(frame.pop("race").astype(str).to_numpy() == "White", 1.0, 2.0)
        y = frame.pop("pass_bar").to_numpy().astype(int)
        categorical = []
        sizes = (0.5625, 0.1875)
    idx = np.arange(len(y))
    tr, rest = train_test_split(idx, train_size=sizes[0], random_state=seed, stratify=g)
    va, te = train_test_split(
        rest, train_size=sizes[1] / (1 - sizes[0]), random_state=seed, stratify=g[rest]
    )
    tr = _subsample(tr, tr, tr, n_train, seed)[0]
    Xtr, Xva, Xte = _design(frame.iloc[tr], [frame.iloc[i] for i in (tr, va, te)], categorical)
    return [(_with_group(X, g[i]), y[i], g[i]) for X, i in ((Xtr, tr), (Xva, va), (Xte, te))]


# ----------------------------------------------------------------------------- scoring


# the estimators' ``metric`` of each fairness notion of the frontier
METRIC = {"psp": "partial_statistical_parity", "pdp": "partial_demographic_parity"}


def score(scores, y, g, interval):
    return {
        "accuracy": float(np.mean((scores > 0).astype(int) == y)),
        "fair_psp": 1.0
        - float(partial_statistical_parity(None, scores, sensitive_features=g, interval=interval)),
        "fair_pdp": 1.0
        - float(partial_demographic_parity(None, scores, sensitive_features=g, interval=interval)),
    }


def fit_quiet(model, X, y, g):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X, y, sensitive_features=g)
        return time.perf_counter() - start


def run_idca(kind, kappa, split, interval, args):
    (Xtr, ytr, gtr), (Xva, yva, gva), (Xte, yte, gte) = split
    metric = METRIC[kind]
    eps_grid = [5e-4, 1e-3, 2e-3, 5e-3] if args.tune_eps else [args.eps]
    seconds = 0.0
    if len(eps_grid) > 1:  # paper stage 1: best validation accuracy after K_max / 8
        best = (-1.0, args.eps)
        for eps in eps_grid:
            m = PartialParityClassifier(
                metric,
                interval=interval,
                tolerance=kappa,
                init=args.init,
                max_iter=max(args.outer // 8, 1),
                inner_max_iter=args.inner,
                inner_tol=eps,
            )
            seconds += fit_quiet(m, Xtr, ytr, gtr)
            acc = float(np.mean(m.predict(Xva) == yva))
            best = max(best, (acc, eps))
        eps = best[1]
    else:
        eps = args.eps
    m = PartialParityClassifier(
        metric,
        interval=interval,
        tolerance=kappa,
        init=args.init,
        max_iter=args.outer,
        inner_max_iter=args.inner,
        inner_tol=eps,
        inner_solver=args.inner_solver,
        record_history=True,
    )
    seconds += fit_quiet(m, Xtr, ytr, gtr)
    params = m.history_["params"]
    d = Xtr.shape[1]
    best = None
    for K in [args.outer * f // 8 for f in range(2, 9)]:
        b, w = params[K][0], params[K][1 : 1 + d]
        acc = float(np.mean(((Xva @ w + b) > 0).astype(int) == yva))
        if best is None or acc >= best[0]:
            best = (acc, K, b, w)
    acc, K, b, w = best
    return (
        Xte @ w + b,
        acc,
        seconds,
        {"eps": eps, "K": K, "train_violation": float(m.constraint_violation_)},
    )


def run_penalty(kind, lam, split, interval, args):
    (Xtr, ytr, gtr), (Xva, yva, gva), (Xte, yte, gte) = split
    best, seconds = None, 0.0
    for step in args.penalty_steps:
        m = PartialParityPenaltyClassifier(
            METRIC[kind],
            interval=interval,
            fairness_weight=lam,
            solver="subgradient",  # the paper's method and step selection (G.4.2)
            learning_rate=step,
            max_iter=args.outer * args.inner,
            tol=1e-4,  # the window test these results were run with
        )
        try:
            seconds += fit_quiet(m, Xtr, ytr, gtr)
        except FloatingPointError:
            continue
        acc = float(np.mean(m.predict(Xva) == yva))
        if best is None or acc > best[0]:
            best = (acc, step, m)
    acc, step, m = best
    return m.decision_function(Xte), acc, seconds, {"step": step}


def run_pgd(name, kappa, split, interval, args):
    (Xtr, ytr, gtr), (Xva, yva, gva), (Xte, yte, gte) = split
    best, seconds = None, 0.0
    for step in args.pgd_steps:
        m = BASELINE_CLASSES[name](
            kappa, learning_rate=step, max_iter=args.pgd_iter, projection=args.projection
        )
        try:
            seconds += fit_quiet(m, Xtr, ytr, gtr)
        except Exception as error:  # a failed projection: skip this step size
            print(f"  {name} kappa={kappa} step={step}: {error}")
            continue
        acc = float(np.mean(m.predict(Xva) == yva))
        if best is None or acc > best[0]:
            best = (acc, step, m)
    if best is None:
        return None
    acc, step, m = best
    return m.decision_function(Xte), acc, seconds, {"step": step, "n_iter": int(m.n_iter_)}


def jobs(dataset, args):
    out = [("unconstrained", "-", None)]
    for kind in args.metrics:
        extra = [k for k in getattr(args, f"extra_kappa_{kind}") if k not in KAPPA[dataset][kind]]
        out += [
            (f"IDCA {kind} ({'15' if kind == 'psp' else '21'})", k, ("idca", kind))
            for k in KAPPA[dataset][kind] + extra
        ]
        out += [
            (f"penalty {kind} ({'114' if kind == 'psp' else '119'})", lam, ("pen", kind))
            for lam in PENALTY[dataset][kind]
        ]
    for name, grids in BASELINE_KAPPA.items():
        levels = sorted({k for kind in args.metrics for k in grids[dataset][kind]})
        out += [(name, k, ("pgd", name)) for k in levels]
    return out


# ----------------------------------------------------------------------------- projection


PROJECTION_CASES = {
    "bank": {"GAUC (102)": 0.3, "Inter (105)": 1.5, "Intra (107)": 0.3},
    "a9a": {"GAUC (102)": 0.7, "Inter (105)": 1.5, "Intra (107)": 0.7},
    "law": {"GAUC (102)": 0.75, "Inter (105)": 2.0, "Intra (107)": 0.8},
}


def compare_projections(dataset, split, interval, args):
    """Exact vs cvxpy + Clarabel projection: one fit each, interleaved, same split."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _common import write_results

    (Xtr, ytr, gtr), _, (Xte, yte, gte) = split
    rows = []
    for rep in range(args.projection_reps):
        for name, kappa in PROJECTION_CASES[dataset].items():
            fitted = {}
            for projection in ("clarabel", "exact"):
                model = BASELINE_CLASSES[name](
                    kappa,
                    learning_rate=args.pgd_steps[0],
                    max_iter=args.pgd_iter,
                    projection=projection,
                )
                load = os.getloadavg()[0]
                seconds = fit_quiet(model, Xtr, ytr, gtr)
                fitted[projection] = model
                row = {
                    "method": name,
                    "kappa": kappa,
                    "projection": projection,
                    "rep": rep,
                    "seconds": seconds,
                    "load1": load,
                    "n_iter": int(model.n_iter_),
                    "train_objective": model.objective_,
                    **score(model.decision_function(Xte), yte, gte, interval),
                }
                rows.append(row)
                print(dataset, row, flush=True)
            diff = float(np.abs(fitted["exact"].coef_ - fitted["clarabel"].coef_).max())
            rows[-1]["coef_max_diff"] = rows[-2]["coef_max_diff"] = diff
    columns = [
        "method",
        "kappa",
        "projection",
        "rep",
        "seconds",
        "load1",
        "n_iter",
        "train_objective",
        "accuracy",
        "fair_psp",
        "fair_pdp",
        "coef_max_diff",
    ]
    notes = (
        f"{dataset}, seed-0 split, n_train={args.n_train}, PGD {args.pgd_iter} steps "
        f"of size {args.pgd_steps[0]}; each fit builds the constraints once and projects "
        f"after every step: 'exact' = projected Newton on the Lagrange dual "
        f"(fairest/partial/_qcqp.py), 'clarabel' = cvxpy + Clarabel at tolerance 1e-6 "
        f"(spec 8.5). Fits interleaved (clarabel, exact) per class so both see the same "
        f"load; load1 = os.getloadavg()[0] before the fit."
    )
    write_results(f"partial_frontier_projection_{dataset}", rows, columns, notes)


# ----------------------------------------------------------------------------- summary


def summarise(rows, seeds):
    frame = pd.DataFrame(rows)
    frame["level"] = frame["level"].astype(str)
    agg = (
        frame.groupby(["method", "level"], sort=False)
        .agg(
            n=("seed", "count"),
            accuracy=("accuracy", "mean"),
            accuracy_sd=("accuracy", "std"),
            fair_psp=("fair_psp", "mean"),
            fair_psp_sd=("fair_psp", "std"),
            fair_pdp=("fair_pdp", "mean"),
            fair_pdp_sd=("fair_pdp", "std"),
            fit_seconds=("fit_seconds", "mean"),
        )
        .reset_index()
    )
    for col in ("accuracy", "fair_psp", "fair_pdp"):
        sd = agg.pop(col + "_sd").fillna(0.0)
        t = stats.t.ppf(0.975, np.maximum(agg["n"] - 1, 1))
        agg[col + "_ci95"] = t * sd / np.sqrt(agg["n"])
    return agg


def dominance(agg, kind):
    """Does IDCA's frontier lie above every baseline point? For each baseline point
    (mean fairness f, mean accuracy a), interpolate IDCA's upper frontier (including the
    unconstrained start) at f; the point is 'beaten' when IDCA's accuracy there is
    higher, and out of range when f exceeds IDCA's best fairness."""
    fair = f"fair_{kind}"
    mine = agg[agg["method"].str.startswith(f"IDCA {kind}") | (agg["method"] == "unconstrained")]
    pts = sorted(zip(mine[fair], mine["accuracy"]))

    # upper frontier: best accuracy at fairness >= f
    def idca_at(f):
        better = [a for x, a in pts if x >= f - 1e-12]
        return max(better) if better else None

    verdicts = []
    others = agg[~agg["method"].str.startswith("IDCA") & (agg["method"] != "unconstrained")]
    if kind == "psp":
        others = others[~others["method"].str.startswith("penalty pdp")]
    else:
        others = others[~others["method"].str.startswith("penalty psp")]
    for row in others.itertuples(index=False):
        f, a = getattr(row, fair), row.accuracy
        ref = idca_at(f)
        if ref is None:
            verdicts.append((row.method, row.level, f, a, None, "beyond IDCA's fairness range"))
        else:
            verdicts.append(
                (
                    row.method,
                    row.level,
                    f,
                    a,
                    ref,
                    "IDCA better" if ref > a else ("tie" if ref == a else "baseline better"),
                )
            )
    return verdicts


def write_outputs(dataset, rows, args, interval):
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {
        "dataset": dataset,
        "interval": interval,
        "settings": {k: v for k, v in vars(args).items() if k != "datasets"},
        "loadavg_end": os.getloadavg(),
    }
    base = RESULTS / f"partial_frontier_{dataset}{'_' + args.tag if args.tag else ''}"
    base.with_suffix(".json").write_text(
        json.dumps({"meta": meta, "runs": rows}, indent=1, default=str)
    )
    if not rows:
        return
    agg = summarise(rows, args.seeds)
    lines = [
        f"# Partial-fairness frontier: {dataset}, interval [{interval[0]:.0%}, {interval[1]:.0%})",
        "",
        NOTES.format(**vars(args)),
        "",
        f"Settings: {meta['settings']}",
        "",
    ]
    cols = [
        "method",
        "level",
        "n",
        "accuracy",
        "accuracy_ci95",
        "fair_psp",
        "fair_psp_ci95",
        "fair_pdp",
        "fair_pdp_ci95",
        "fit_seconds",
    ]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for row in agg[cols].itertuples(index=False):
        lines.append(
            "| " + " | ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in row) + " |"
        )
    for kind in args.metrics:
        verdicts = dominance(agg, kind)
        beaten = sum(v[5] == "IDCA better" for v in verdicts)
        lost = [v for v in verdicts if v[5] == "baseline better"]
        beyond = [v for v in verdicts if v[5].startswith("beyond")]
        holds = not lost and not beyond
        lines += [
            "",
            f"## Does IDCA dominate at every {kind.upper()} fairness level? "
            f"{'YES' if holds else 'NO'}",
            "",
            f"Baseline points (seed means) compared with IDCA's upper frontier at the "
            f"same or higher test fairness: IDCA better for {beaten}, baseline better "
            f"for {len(lost)}, baseline beyond IDCA's fairness range for {len(beyond)}.",
            "",
        ]
        for v in lost + beyond:
            ref = "-" if v[4] is None else f"{v[4]:.4f}"
            lines.append(
                f"- {v[0]} level {v[1]}: fairness {v[2]:.4f}, accuracy {v[3]:.4f}; "
                f"IDCA accuracy at that fairness {ref} ({v[5]})"
            )
    base.with_suffix(".md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(args.metrics), figsize=(6 * len(args.metrics), 4.5))
    axes = np.atleast_1d(axes)
    for ax, kind in zip(axes, args.metrics):
        fair = f"fair_{kind}"
        other = "pdp" if kind == "psp" else "psp"
        for name, part in agg.groupby("method", sort=False):
            if name.startswith(f"IDCA {other}") or name.startswith(f"penalty {other}"):
                continue
            style = "-o" if name.startswith("IDCA") else "--s" if name != "unconstrained" else "k*"
            part = part.sort_values(fair)
            ax.errorbar(
                part[fair],
                part["accuracy"],
                xerr=part[fair + "_ci95"],
                yerr=part["accuracy_ci95"],
                fmt=style,
                label=name,
                capsize=2,
                markersize=4,
                lw=1,
            )
        ax.set_xlabel(f"test fairness 1 - {kind.upper()} on [{interval[0]:.0%}, {interval[1]:.0%})")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{dataset}: {kind.upper()} (mean, 95% CI, {args.seeds} seeds)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(base.with_suffix(".png"), dpi=110)
    plt.close(fig)


NOTES = (
    "REDUCED protocol (see benchmarks/partial_frontier.py): training subsample "
    "n_train={n_train} (None = full; the paper trains on the full training split), IDCA "
    "K_max={outer} outer x T={inner} inner "
    "iterations, start init={init} (the paper: w = 0, i.e. 'zero'; 'auto' = the "
    "best constant model for pDP, w = 0 for pSP), epsilon={eps} (tune-eps={tune_eps}; "
    "when on, among 5e-4..5e-3 after K_max/8 iterations), IDCA kappa beyond the paper's grid: "
    "pSP {extra_kappa_psp}, pDP {extra_kappa_pdp}, K chosen by validation accuracy among "
    "K_max*{{2..8}}/8 from one run's snapshots (the paper: K_max=400, T in {{150,200}}, "
    "epsilon in {{5e-4..5e-3}} tuned after 50 iterations); penalty method with "
    "K_max*T full-batch subgradient steps, step tuned on validation among {penalty_steps}; "
    "GAUC/Inter/Intra by PGD with {pgd_iter} steps (paper 500-1000), step tuned among "
    "{pgd_steps}, projections by {projection} (exact = projected Newton on the dual, "
    "clarabel = cvxpy + Clarabel at 1e-6; the paper: fmincon at 1e-6); seeds={seeds} "
    "(the paper: 5); 95 % CI = t(0.975, n-1) sd / sqrt(n). Fairness = 1 - max "
    "pSP (or pDP) on the test set, fairest's exact metrics; accuracy = test accuracy at "
    "threshold 0. GAUC/Inter/Intra constrain full-metric surrogates, so one fit per kappa "
    "is scored by both metrics (their pSP and pDP kappa grids are pooled). IDCA "
    "subproblems solved by {inner_solver} (ssg = the paper's Algorithm 2 with T steps; "
    "alm = augmented Lagrangian with Newton steps, to about 1e-7, T = cap on its "
    "iterations); non-IDCA runs taken from the results of tag {baselines_from!r} "
    "(None = fitted here)."
)


def borrowed_baselines(dataset, args, rows):
    """Non-IDCA runs of the results file of tag ``args.baselines_from`` (seeds below
    ``args.seeds``) not already in ``rows``, marked with their origin."""
    tag = f"_{args.baselines_from}" if args.baselines_from else ""
    source = json.loads((RESULTS / f"partial_frontier_{dataset}{tag}.json").read_text())
    settings = source["meta"]["settings"]
    for key in ("n_train", "seeds"):
        if settings[key] != getattr(args, key):
            raise SystemExit(
                f"--baselines-from {args.baselines_from!r}: {key} differs "
                f"({settings[key]} vs {getattr(args, key)})"
            )
    have = {(r["method"], str(r["level"]), r["seed"]) for r in rows}
    return [
        {**r, "borrowed_from": f"partial_frontier_{dataset}{tag}"}
        for r in source["runs"]
        if not r["method"].startswith("IDCA")
        and r["seed"] < args.seeds
        and (r["method"], str(r["level"]), r["seed"]) not in have
    ]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", nargs="+", default=["law", "bank", "a9a"])
    parser.add_argument("--metrics", nargs="+", default=["psp", "pdp"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--outer", type=int, default=40)
    parser.add_argument("--inner", type=int, default=100)
    parser.add_argument("--eps", type=float, default=1e-3)
    parser.add_argument("--tune-eps", action="store_true")
    for kind in ("psp", "pdp"):
        parser.add_argument(
            f"--extra-kappa-{kind}",
            type=float,
            nargs="*",
            default=[],
            help=f"IDCA {kind} kappa values beyond the paper's grid (fills "
            "the frontier where the paper's grid leaves no point); adding "
            "them to a finished run only fits the new levels",
        )
    parser.add_argument(
        "--init",
        default="auto",
        choices=["auto", "zero", "intercept"],
        help="IDCA starting model (PartialParityClassifier(init=...)); the paper's is 'zero'",
    )
    parser.add_argument("--penalty-steps", type=float, nargs="+", default=[0.005, 0.05])
    parser.add_argument("--pgd-iter", type=int, default=100)
    parser.add_argument("--pgd-steps", type=float, nargs="+", default=[0.5, 2.0])
    parser.add_argument(
        "--projection",
        default="exact",
        choices=["exact", "clarabel"],
        help="projection of the GAUC/Inter/Intra baselines",
    )
    parser.add_argument("--fresh", action="store_true", help="ignore earlier runs")
    parser.add_argument(
        "--compare-projections",
        action="store_true",
        help="only time exact vs Clarabel projections (see the docstring)",
    )
    parser.add_argument("--projection-reps", type=int, default=1)
    parser.add_argument(
        "--tag",
        default="",
        help="suffix of the results files (a second setting next to the default one)",
    )
    parser.add_argument(
        "--inner-solver",
        default="ssg",
        choices=["ssg", "alm"],
        help="IDCA's subproblem solver (PartialParityClassifier(inner_solver="
        "...)); with 'alm', --inner caps its iterations per subproblem",
    )
    parser.add_argument(
        "--baselines-from",
        default=None,
        metavar="TAG",
        help="take every non-IDCA run (same seeds) from the results of tag "
        "TAG ('' for the untagged file) instead of refitting it",
    )
    args = parser.parse_args(argv)
    home = None
    tmp = tempfile.TemporaryDirectory()
    if SHARED.is_dir():
        from fairest.datasets import seed_data_home

        home = tmp.name
        seed_data_home(SHARED, home, datasets=["bank_marketing", "law_school"], verify=False)
    for dataset in args.datasets:
        needed = {
            "a9a": SHARED / "libsvm" / "a9a.xz",
            "bank": SHARED / "uci",
            "law": SHARED / "law",
        }[dataset]
        if not needed.exists():
            print(f"skipping {dataset}: {needed} not found")
            continue
        interval = INTERVALS[dataset]
        if args.compare_projections:
            compare_projections(dataset, load_split(dataset, 0, home, args.n_train), interval, args)
            continue
        tag = f"_{args.tag}" if args.tag else ""
        path = RESULTS / f"partial_frontier_{dataset}{tag}.json"
        rows = []
        if path.exists() and not args.fresh:
            old = json.loads(path.read_text())
            additive = (
                "datasets",
                "fresh",
                "extra_kappa_psp",
                "extra_kappa_pdp",
                "compare_projections",
                "projection_reps",
                "tag",
                "baselines_from",
            )
            settings = {"inner_solver": "ssg", **old["meta"]["settings"]}  # older files
            same = {k: v for k, v in settings.items() if k not in additive}
            if same == {k: v for k, v in vars(args).items() if k not in additive}:
                rows = old["runs"]
        if args.baselines_from is not None:
            rows += borrowed_baselines(dataset, args, rows)
        done = {(r["method"], str(r["level"]), r["seed"]) for r in rows}
        for seed in range(args.seeds):
            split = load_split(dataset, seed, home, args.n_train)
            for method, level, spec in jobs(dataset, args):
                if (method, str(level), seed) in done:
                    continue
                start = time.perf_counter()
                if spec is None:
                    Xtr, ytr, _ = split[0]
                    lr = LogisticRegression(C=np.inf, max_iter=5000, tol=1e-10).fit(Xtr, ytr)
                    out = (
                        lr.decision_function(split[2][0]),
                        float(lr.score(split[1][0], split[1][1])),
                        time.perf_counter() - start,
                        {},
                    )
                elif spec[0] == "idca":
                    out = run_idca(spec[1], level, split, interval, args)
                elif spec[0] == "pen":
                    out = run_penalty(spec[1], level, split, interval, args)
                else:
                    out = run_pgd(spec[1], level, split, interval, args)
                if out is None:
                    continue
                scores, val_acc, seconds, chosen = out
                row = {
                    "method": method,
                    "level": level,
                    "seed": seed,
                    "fit_seconds": seconds,
                    "val_accuracy": val_acc,
                    "chosen": chosen,
                    "load1": os.getloadavg()[0],
                    **score(scores, split[2][1], split[2][2], interval),
                }
                rows.append(row)
                print(
                    dataset,
                    {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()},
                    flush=True,
                )
                write_outputs(dataset, rows, args, interval)
        write_outputs(dataset, rows, args, interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
