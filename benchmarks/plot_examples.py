"""Render the example figures of ``fairest.plot`` for the documentation.

Writes ``docs/_static/plot_pareto_frontier.png``, ``plot_group_score_cdfs.png`` and
``plot_simplex_unfairness.png`` from the bundled Adult data (a subsample, so the script
runs in about a minute on two cores). Uses pyplot-free Figures; run from the repository
root::

    python benchmarks/plot_examples.py            # all three
    python benchmarks/plot_examples.py simplex    # or some of pareto, cdfs, simplex
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from sklearn import config_context
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from fairest.datasets import load_adult
from fairest.ermi import ERMIClassifier
from fairest.metrics import demographic_parity_difference
from fairest.plot import (
    make_simplex_evaluator,
    plot_group_score_cdfs,
    plot_pareto_frontier,
    plot_simplex_unfairness,
)
from fairest.reweighting import BADRClassifier, GroupWeightedClassifier

OUT = Path(__file__).resolve().parents[1] / "docs" / "_static"
N_ROWS = 4000
SEEDS = (0, 1, 2)


def _encoder():
    return ColumnTransformer(
        [
            ("num", StandardScaler(), make_column_selector(dtype_include="number")),
            (
                "cat",
                OneHotEncoder(handle_unknown="ignore", sparse_output=False, min_frequency=20),
                make_column_selector(dtype_exclude="number"),
            ),
        ]
    )


def _adult(seed):
    bunch = load_adult(as_frame=True)
    X = bunch.data.drop(columns=["sex", "race", "fnlwgt"])
    rows = np.random.default_rng(seed).choice(len(X), size=N_ROWS, replace=False)
    X, y, s = X.iloc[rows], bunch.target.to_numpy()[rows], bunch.sensitive.iloc[rows]
    return train_test_split(X, y, s, test_size=0.5, random_state=seed, stratify=y)


def pareto_table() -> pd.DataFrame:
    """Test accuracy and demographic parity of two methods over a grid and 3 splits."""
    candidates = [
        ("group-weighted LR", f"w={w:g}", GroupWeightedClassifier(weights=[w, 1 - w]))
        for w in (0.1, 0.3, 0.5, 0.7, 0.9)  # w: weight of the group 'Female'
    ]
    candidates += [
        ("FERMI", f"λ={lam:g}", ERMIClassifier(fairness_weight=lam, random_state=0))
        for lam in (0.0, 0.3, 1.0, 3.0, 10.0)
    ]
    rows = []
    for seed in SEEDS:
        X_tr, X_te, y_tr, y_te, s_tr, s_te = _adult(seed)
        encoder = _encoder().fit(X_tr)
        Z_tr, Z_te = encoder.transform(X_tr), encoder.transform(X_te)
        for method, setting, estimator in candidates:
            model = estimator.fit(Z_tr, y_tr, sensitive_features=s_tr["sex"])
            pred = model.predict(Z_te)
            rows.append(
                {
                    "method": method,
                    "setting": setting,
                    "seed": seed,
                    "accuracy": accuracy_score(y_te, pred),
                    "demographic parity difference": demographic_parity_difference(
                        y_te, pred, sensitive_features=s_te["sex"]
                    ),
                }
            )
    return pd.DataFrame(rows)


def pareto_example():
    start = time.perf_counter()
    table = pareto_table()
    ax = plot_pareto_frontier(
        table,
        x="demographic parity difference",
        config="setting",
        annotate="setting",
        title="Adult (sex), test split: mean and 95% CI over 3 splits",
    )
    ax.figure.savefig(OUT / "plot_pareto_frontier.png", dpi=110)
    print(f"pareto: {time.perf_counter() - start:.1f} s")


def cdfs_example():
    X_tr, X_te, y_tr, y_te, s_tr, s_te = _adult(0)
    encoder = _encoder().fit(X_tr)
    Z_tr, Z_te = encoder.transform(X_tr), encoder.transform(X_te)
    model = GroupWeightedClassifier().fit(Z_tr, y_tr, sensitive_features=s_tr["sex"])
    ax = plot_group_score_cdfs(
        model.decision_function(Z_te),
        sensitive_features=s_te["sex"],
        interval=(0.0, 0.25),
        threshold=0.0,
        title="Adult test scores of logistic regression, top 25 % band shaded",
    )
    ax.figure.savefig(OUT / "plot_group_score_cdfs.png", dpi=110)


def simplex_example():
    start = time.perf_counter()
    X_tr, _, y_tr, _, s_tr, _ = _adult(0)
    Z_tr = _encoder().fit_transform(X_tr)
    figure = Figure(figsize=(12.5, 5.2), layout="constrained")
    left, right = figure.subplots(1, 2, width_ratios=[1, 1.15])
    race = s_tr["race"].astype(str).to_numpy()
    race = np.where(np.isin(race, ["White", "Black"]), race, "Other")
    n_fits = 0
    for ax, groups, resolution, title in (
        (left, s_tr["sex"].astype(str).to_numpy(), 101, "two groups (sex)"),
        (right, race, 20, "three groups (race)"),
    ):
        evaluate = make_simplex_evaluator(
            GroupWeightedClassifier(),
            Z_tr,
            y_tr,
            sensitive_features=groups,
            metric="individual_fairness",
        )
        badr = BADRClassifier(metric="individual_fairness").fit(
            Z_tr, y_tr, sensitive_features=groups
        )
        shares = np.array([np.mean(groups == g) for g in evaluate.groups])
        plot_simplex_unfairness(
            evaluate,
            chosen_weights=badr.group_weights_,
            resolution=resolution,
            ax=ax,
            metric_label="individual fairness (train)",
            reference_weights={"pooled (ERM)": shares},
            title=title,
        )
        n_fits += evaluate.n_evaluations
    figure.suptitle(
        "BADR on Adult: unfairness of the weighted fit over the group weights (star: BADR)"
    )
    figure.savefig(OUT / "plot_simplex_unfairness.png", dpi=110)
    print(f"simplex: {time.perf_counter() - start:.1f} s ({n_fits} fits)")


EXAMPLES = {"pareto": pareto_example, "cdfs": cdfs_example, "simplex": simplex_example}


def main(names):
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names or EXAMPLES:
        EXAMPLES[name]()


if __name__ == "__main__":
    with config_context(enable_metadata_routing=False):
        main(sys.argv[1:])
