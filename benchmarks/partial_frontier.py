"""Accuracy vs partial-SP fairness frontier on law school (paper Fig. 1, top right).

IDCA on (15) against the paper's baselines (penalty (114), group AUC (102), inter- and
intra-group pairwise (105)/(107)) on the law-school bar-passage data, interval
[70 %, 100 %) (the bottom 30 % of every group), groups white (gamma = 1) / non-white
(gamma = 2), model (1, x, gamma, gamma x) on standardised features (the paper does not
describe its preprocessing). Fairness = 1 - pSP on the test set, accuracy on the test set.

This is the SMALL version: a training subsample, fixed hyper-parameters instead of the
paper's validation grid search (G.2.2), few seeds. Usage::

    python benchmarks/partial_frontier.py [--n-train 4000] [--seeds 2] [--outer 40]

Writes benchmarks/results/partial_frontier.json and .md (and a PNG when matplotlib is
installed). Skips when ../shared/datasets is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from fairest.metrics import partial_statistical_parity
from fairest.partial import (
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
    PartialParityClassifier,
    PartialParityPenaltyClassifier,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "datasets" / "law" / "law_school_clean.csv.xz"
RESULTS = ROOT / "benchmarks" / "results"
INTERVAL = (0.7, 1.0)


def load(seed, n_train):
    df = pd.read_csv(DATA)
    gamma = np.where(df.pop("race").to_numpy() == "White", 1.0, 2.0)
    y = df.pop("pass_bar").to_numpy().astype(int)
    X = df.to_numpy(dtype=float)
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X, y, gamma, test_size=0.25, random_state=seed, stratify=gamma
    )
    if n_train and n_train < len(ytr):
        keep = np.random.default_rng(seed).choice(len(ytr), n_train, replace=False)
        Xtr, ytr, gtr = Xtr[keep], ytr[keep], gtr[keep]
    scaler = StandardScaler().fit(Xtr)

    def features(X, g):
        Z = scaler.transform(X)
        return np.hstack([Z, g[:, None], g[:, None] * Z])  # (x, gamma, gamma x)

    return features(Xtr, gtr), ytr, gtr, features(Xte, gte), yte, gte


def methods(outer, inner):
    idca = dict(interval=INTERVAL, max_iter=outer, inner_max_iter=inner, inner_tol=1e-3)
    out = [("unconstrained", None, PartialParityClassifier(tolerance=1.0, **idca))]
    out += [("IDCA pSP (15)", k, PartialParityClassifier(tolerance=k, **idca))
            for k in (0.2, 0.1, 0.05)]
    out += [("penalty (114)", lam, PartialParityPenaltyClassifier(
        interval=INTERVAL, fairness_weight=lam, learning_rate=0.05, max_iter=outer * inner))
        for lam in (0.4, 0.8, 1.5)]
    out += [("GAUC (102)", k, GroupAUCConstrainedClassifier(k, learning_rate=1.0, max_iter=200))
            for k in (0.05, 0.2, 0.5)]
    out += [("Inter (105)", k, InterGroupPairwiseConstrainedClassifier(
        k, learning_rate=1.0, max_iter=200)) for k in (0.05, 0.2, 0.5)]
    out += [("Intra (107)", k, IntraGroupPairwiseConstrainedClassifier(
        k, learning_rate=1.0, max_iter=200)) for k in (0.05, 0.2, 0.5)]
    return out


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-train", type=int, default=4000)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--outer", type=int, default=40)
    parser.add_argument("--inner", type=int, default=150)
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"skipping: {DATA} not found")
        return 0
    rows = []
    for seed in range(args.seeds):
        Xtr, ytr, gtr, Xte, yte, gte = load(seed, args.n_train)
        for name, level, model in methods(args.outer, args.inner):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(Xtr, ytr, sensitive_features=gtr)
            seconds = time.perf_counter() - start
            s = model.decision_function(Xte)
            rows.append({
                "method": name, "level": level, "seed": seed, "fit_seconds": seconds,
                "test_accuracy": float(np.mean((s > 0).astype(int) == yte)),
                "test_fairness": 1.0 - partial_statistical_parity(
                    None, s, sensitive_features=gte, interval=INTERVAL),
                "train_psp": partial_statistical_parity(
                    None, model.decision_function(Xtr), sensitive_features=gtr,
                    interval=INTERVAL),
            })
            print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    frame["level"] = frame["level"].astype(object).where(frame["level"].notna(), "-")
    summary = frame.groupby(["method", "level"], sort=False).agg(
        accuracy=("test_accuracy", "mean"), accuracy_sd=("test_accuracy", "std"),
        fairness=("test_fairness", "mean"), fairness_sd=("test_fairness", "std"),
        train_psp=("train_psp", "mean"), fit_seconds=("fit_seconds", "mean"),
    ).reset_index()
    t = stats.t.ppf(0.975, max(args.seeds - 1, 1))
    for col in ("accuracy", "fairness"):
        summary[col + "_ci95"] = t * summary.pop(col + "_sd") / np.sqrt(args.seeds)
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {"dataset": "law_school_clean", "interval": INTERVAL, **vars(args)}
    (RESULTS / "partial_frontier.json").write_text(
        json.dumps({"meta": meta, "runs": rows}, indent=1, default=str))
    with open(RESULTS / "partial_frontier.md", "w") as fh:
        fh.write(f"# Law school, interval {INTERVAL}, settings {meta}\n\n")
        fh.write("| " + " | ".join(summary.columns) + " |\n")
        fh.write("|" + "---|" * len(summary.columns) + "\n")
        for row in summary.itertuples(index=False):
            cells = [f"{v:.4f}" if isinstance(v, float) else str(v) for v in row]
            fh.write("| " + " | ".join(cells) + " |\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for name, part in summary.groupby("method", sort=False):
            ax.errorbar(part["fairness"], part["accuracy"], xerr=part["fairness_ci95"],
                        yerr=part["accuracy_ci95"], marker="o", label=name, capsize=2)
        ax.set_xlabel("test fairness 1 - pSP on [70%, 100%)")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(RESULTS / "partial_frontier.png", dpi=110)
    except ImportError:
        pass
    print(summary.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
