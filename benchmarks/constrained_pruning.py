"""CEAG vs naive fine-tuning vs equalized loss for pruned MLPs (paper A's protocol, tabular).

Hashemizadeh et al. (ICLR 2024) constrain the *excess accuracy gaps*
``psi_g = (A_dense - A_dense,g) - (A_sparse - A_sparse,g) <= epsilon`` of every group while
fine-tuning a magnitude-pruned network (CEAG), and compare with naive fine-tuning (NFT) and
equalized loss with replay buffers (EL+RB). This script reproduces the protocol of their
section 5 / spec ``constrained.md`` 2.6-2.9 on a real tabular task with
:class:`fairest.constrained.PrunedFairClassifier`:

* data: folktables ACSIncome 2018, Oklahoma (paper B's state), 17,917 rows, 9 features
  (race dropped from X), target income > 50k; groups = 5 race groups (White, Black, Asian,
  American Indian / Alaska Native, Other); 80/20 split stratified on race, seed 42;
  StandardScaler fitted on train;
* model: the spec's tabular MLP 9 -> 64 -> 32 -> 1 (ReLU), all layers pruned;
* per seed one dense model (paper recipe: SGD lr 0.01, momentum 0.9, wd 1e-4, 50 epochs,
  lr x0.1 at 60/80/90 %), shared by every method and sparsity of that seed;
* per sparsity in {50, 70, 80, 90, 95} %: GMP (cubic, T_end = 15) + fine-tuning, 60 epochs
  in total, batch 128 (the estimator's paper defaults), for
  NFT (``metric=None``), CEAG (``"excess_accuracy_gap"``, buffers k = 40, dual lr 1e-3)
  and EL+RB (``"loss_parity"``, absolute gaps as in the released configs, dual lr 1e-5 as
  in the paper's table);
* tolerance: paper protocol "run NFT first, read its train max psi, pick epsilon below it":
  epsilon is the largest value of {1, 2, 3, 4, 5} % strictly below NFT's mean train max psi
  at that sparsity, 1 % when NFT is already below 1 %;
* scoring: train and test max_g psi_g and Psi_PW (dense statistics on the same split) from
  ``disparity_report`` (fairest's ``excess_accuracy_gaps``), accuracy, achieved sparsity,
  feasibility (max psi <= epsilon) on train and on test, fine-tuning fit time (dense model
  given; JIT compilation excluded by one warm-up fit per method), ``os.getloadavg()``.

Run: ``python benchmarks/constrained_pruning.py`` (about 10-20 minutes on 2 busy cores);
``--quick`` for a tiny smoke run that writes nothing under results/. The data are read from
``<repo>/../shared/datasets``; the script exits cleanly when that folder is absent. Per-run
rows are written to ``results/constrained_pruning_runs.json`` as they come.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared" / "datasets"
sys.path.insert(0, str(HERE))

from _common import RESULTS, machine, write_results  # noqa: E402

NAME = "constrained_pruning"
METHODS = {  # label -> PrunedFairClassifier overrides
    "NFT": {"metric": None},
    "CEAG": {"metric": "excess_accuracy_gap", "dual_learning_rate": 1e-3},
    "CEAG η=1e-2": {"metric": "excess_accuracy_gap", "dual_learning_rate": 1e-2},
    "EL+RB": {"metric": "loss_parity", "dual_learning_rate": 1e-5},
    # the paper picks NFT's best epoch on TEST accuracy; fairest holds out 10 % of train
    "NFT+ES": {"metric": None, "early_stopping": True, "validation_fraction": 0.1},
}
TOLERANCE_GRID = (0.01, 0.02, 0.03, 0.04, 0.05)
HIDDEN = (64, 32)


def load_data(state: str):
    """ACSIncome of one state: standardised train/test split and race groups, or None."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from fairest.datasets import fetch_acs_income, seed_data_home

    if not SHARED.is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="fairest_acs_") as home:
        seed_data_home(SHARED, home, datasets=["acs_income"], verify=False)
        bunch = fetch_acs_income(states=state, data_home=home)
    keep = [i for i, f in enumerate(bunch.feature_names) if f != "RAC1P"]
    X = bunch.data[:, keep]
    y = bunch.target
    g = bunch.sensitive["race"].astype(str).to_numpy()
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X, y, g, test_size=0.2, stratify=g, random_state=42
    )
    scaler = StandardScaler().fit(Xtr)
    return {
        "X_train": scaler.transform(Xtr),
        "X_test": scaler.transform(Xte),
        "y_train": ytr,
        "y_test": yte,
        "g_train": gtr,
        "g_test": gte,
        "features": [bunch.feature_names[i] for i in keep],
    }


def pick_tolerance(nft_max_psi: float) -> float:
    below = [e for e in TOLERANCE_GRID if e < nft_max_psi]
    return max(below) if below else TOLERANCE_GRID[0]


def summary(model, X, y, g) -> dict:
    report = model.disparity_report(X, y, g)
    row = report.loc["summary"]
    return {
        "acc": float(model.score(X, y)),
        "max_psi": float(row["max_eag"]),
        "psi_pw": float(row["psi_pw"]),
        "delta": float(row["accuracy_gap"]),
    }


def run_one(data, dense, seed, sparsity, method, tolerance, common) -> dict:
    from fairest.constrained import PrunedFairClassifier

    est = PrunedFairClassifier(
        HIDDEN,
        dense_model=dense,
        target_sparsity=sparsity,
        tolerance=tolerance,
        random_state=seed,
        **common,
        **METHODS[method],
    )
    load = os.getloadavg()
    start = time.perf_counter()
    est.fit(data["X_train"], data["y_train"], sensitive_features=data["g_train"])
    fit_time = time.perf_counter() - start
    tr = summary(est, data["X_train"], data["y_train"], data["g_train"])
    te = summary(est, data["X_test"], data["y_test"], data["g_test"])
    return {
        "seed": seed,
        "target_sparsity": sparsity,
        "method": method,
        "tolerance": tolerance,
        "sparsity": float(est.sparsity_),
        **{f"train_{k}": v for k, v in tr.items()},
        **{f"test_{k}": v for k, v in te.items()},
        "train_feasible": bool(tr["max_psi"] <= tolerance),
        "test_feasible": bool(te["max_psi"] <= tolerance),
        "train_max_psi_estimator": float(est.train_disparity_["max_eag"]),
        "max_multiplier": float(np.max(est.multipliers_)),
        "fit_time_s": fit_time,
        "loadavg_before": load,
        "loadavg_after": os.getloadavg(),
    }


def aggregate(runs: list[dict]) -> list[dict]:
    rows = []
    keys = sorted(
        {(r["target_sparsity"], r["method"]) for r in runs},
        key=lambda k: (k[0], list(METHODS).index(k[1])),
    )
    for sp, method in keys:
        sel = [r for r in runs if r["target_sparsity"] == sp and r["method"] == method]

        def ms(field, scale=100.0, sel=sel):
            v = np.array([r[field] for r in sel]) * scale
            return f"{v.mean():.2f} ± {v.std():.2f}"

        rows.append(
            {
                "sparsity %": f"{100 * sp:g}",
                "method": method,
                "seeds": len(sel),
                "eps %": f"{100 * sel[0]['tolerance']:g}",
                "achieved sparsity %": f"{100 * np.mean([r['sparsity'] for r in sel]):.2f}",
                "train acc %": ms("train_acc"),
                "train max psi %": ms("train_max_psi"),
                "train Psi_PW %": ms("train_psi_pw"),
                "feasible train": f"{np.mean([r['train_feasible'] for r in sel]):.2f}",
                "test acc %": ms("test_acc"),
                "test max psi %": ms("test_max_psi"),
                "test Psi_PW %": ms("test_psi_pw"),
                "feasible test": f"{np.mean([r['test_feasible'] for r in sel]):.2f}",
                "fit s": f"{np.mean([r['fit_time_s'] for r in sel]):.1f}",
            }
        )
    return rows


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sparsities = sorted({r["target_sparsity"] for r in runs})
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for method, marker in zip(METHODS, "os^D"):
        for ax, field in zip(axes, ("train_max_psi", "test_max_psi", "test_acc")):
            xs, mean, std = [], [], []
            for sp in sparsities:
                v = [
                    100 * r[field]
                    for r in runs
                    if r["target_sparsity"] == sp and r["method"] == method
                ]
                if v:
                    xs.append(100 * sp)
                    mean.append(np.mean(v))
                    std.append(np.std(v))
            ax.errorbar(xs, mean, yerr=std, marker=marker, capsize=3, label=method)
    eps = [
        (100 * sp, 100 * next(r["tolerance"] for r in runs if r["target_sparsity"] == sp))
        for sp in sparsities
    ]
    for ax in axes[:2]:
        ax.plot(*zip(*eps), "k--", lw=1, label="tolerance ε")
    titles = ("train max ψ_g (%)", "test max ψ_g (%)", "test accuracy (%)")
    for ax, title in zip(axes, titles):
        ax.set_xlabel("sparsity (%)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(
        "Pruned MLP 64-32 on ACSIncome OK, 5 race groups: CEAG vs NFT vs EL+RB "
        "(mean ± std over seeds)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--sparsities", nargs="+", type=float, default=[0.5, 0.7, 0.8, 0.9, 0.95])
    parser.add_argument("--state", default="OK")
    parser.add_argument("--dense-epochs", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=60, help="fine-tuning epochs (GMP incl.)")
    parser.add_argument("--pruning-epochs", type=int, default=15)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny smoke run (2 dense + 4 fine-tuning epochs), no results files",
    )
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.sparsities = [0], [0.9]
        args.dense_epochs, args.epochs, args.pruning_epochs = 2, 4, 2

    data = load_data(args.state)
    if data is None:
        print(f"{SHARED} is absent: nothing to run.")
        return
    from fairest.constrained import PrunedFairClassifier

    print(
        f"ACSIncome {args.state}: train {data['X_train'].shape}, test {data['X_test'].shape}",
        flush=True,
    )
    common = {
        "n_epochs": args.epochs,
        "pruning_epochs": args.pruning_epochs,
        "dense_n_epochs": args.dense_epochs,
    }
    total_start = time.perf_counter()

    dense_models, dense_rows = {}, []
    for seed in args.seeds:
        load = os.getloadavg()
        start = time.perf_counter()
        dense = PrunedFairClassifier(
            HIDDEN,
            target_sparsity=0.0,
            n_epochs=0,
            metric=None,
            dense_n_epochs=args.dense_epochs,
            random_state=seed,
        )
        dense.fit(data["X_train"], data["y_train"], sensitive_features=data["g_train"])
        dense_models[seed] = dense
        dense_rows.append(
            {
                "seed": seed,
                "train_acc": dense.dense_accuracy_,
                "test_acc": float(dense.score(data["X_test"], data["y_test"])),
                "fit_time_s": time.perf_counter() - start,
                "loadavg_before": load,
            }
        )
        print(f"dense seed {seed}: {dense_rows[-1]}", flush=True)

    # warm-up: compile every metric's jitted epoch once (same shapes), not timed
    for method in METHODS:
        run_one(
            data,
            dense_models[args.seeds[0]],
            0,
            0.5,
            method,
            0.01,
            {**common, "n_epochs": 1, "pruning_epochs": 0},
        )

    runs = []
    runs_path = RESULTS / f"{NAME}_runs.json"
    for sp in args.sparsities:
        nft = []
        for seed in args.seeds:
            nft.append(run_one(data, dense_models[seed], seed, sp, "NFT", 0.0, common))
        tol = pick_tolerance(float(np.mean([r["train_max_psi"] for r in nft])))
        for r in nft:  # feasibility of NFT measured against the tolerance CEAG is given
            r["tolerance"] = tol
            r["train_feasible"] = bool(r["train_max_psi"] <= tol)
            r["test_feasible"] = bool(r["test_max_psi"] <= tol)
        runs.extend(nft)
        for method in [m for m in METHODS if m != "NFT"]:
            for seed in args.seeds:
                runs.append(run_one(data, dense_models[seed], seed, sp, method, tol, common))
                r = runs[-1]
                print(
                    f"sp={sp} {method} seed={seed} eps={tol}: train maxpsi "
                    f"{r['train_max_psi']:.4f} test maxpsi {r['test_max_psi']:.4f} "
                    f"acc {r['test_acc']:.4f} {r['fit_time_s']:.1f}s",
                    flush=True,
                )
        for r in nft:
            print(
                f"sp={sp} NFT seed={r['seed']}: train maxpsi {r['train_max_psi']:.4f} "
                f"test maxpsi {r['test_max_psi']:.4f}",
                flush=True,
            )
        if not args.quick:
            runs_path.write_text(
                json.dumps({"machine": machine(), "dense": dense_rows, "runs": runs}, indent=2)
            )
    total = time.perf_counter() - total_start

    rows = aggregate(runs)
    if args.quick:
        for row in rows:
            print(row)
        return
    notes = build_notes(args, data, dense_rows, runs, total)
    columns = list(rows[0])
    write_results(NAME, rows, columns, notes)
    payload = json.loads((RESULTS / f"{NAME}.json").read_text())
    payload.update({"dense": dense_rows, "runs": runs, "total_wall_s": total})
    (RESULTS / f"{NAME}.json").write_text(json.dumps(payload, indent=2))
    plot(runs, RESULTS / f"{NAME}.png")
    print((RESULTS / f"{NAME}.md").read_text())


def build_notes(args, data, dense_rows, runs, total) -> str:
    def mean(method, field, sp=None):
        v = [
            r[field]
            for r in runs
            if r["method"] == method and (sp is None or r["target_sparsity"] == sp)
        ]
        return float(np.mean(v))

    lines = [
        f"Paper A protocol (Hashemizadeh et al. 2024) on ACSIncome 2018 {args.state} "
        f"(train {data['X_train'].shape[0]}, test {data['X_test'].shape[0]} rows, "
        f"{data['X_train'].shape[1]} standardised features, race not a feature), 5 race groups, "
        f"MLP 64-32 with every layer pruned (GMP cubic schedule, T_end = {args.pruning_epochs}), "
        f"{args.epochs} fine-tuning epochs in total, batch 128, SGD lr 0.01 momentum 0.9 "
        f"wd 1e-4, lr x0.1 at 60/80/90 %; dense model {args.dense_epochs} epochs per seed "
        f"(shared by all methods of that seed). Seeds {args.seeds}. CEAG: replay buffers k = 40, "
        "dual lr 1e-3 (the estimator default, within the paper's 1e-5..3e-3 range); "
        "'CEAG η=1e-2' = the same with a 10x larger dual step (sensitivity check); "
        "EL+RB: |L_g - L| with buffers, dual lr 1e-5 (paper table). "
        "NFT+ES: NFT returning its best epoch-end iterate at final sparsity on a held-out 10 % "
        "of the training rows (the paper picked it on test accuracy). "
        "Tolerance per sparsity: largest of {1,2,3,4,5} % below NFT's mean train max psi "
        "(1 % if NFT is below 1 %). Feasible = max psi <= eps on that split; NFT and EL are "
        "scored against the same eps. Percentages in the table; mean ± std over seeds. "
        "fit s = fine-tuning fit with the dense model given (compilation excluded).",
        "Dense models: "
        + "; ".join(
            f"seed {d['seed']} train {100 * d['train_acc']:.2f} % test {100 * d['test_acc']:.2f} %"
            for d in dense_rows
        )
        + ".",
        f"Total wall time {total / 60:.1f} min; load averages (1, 5, 15 min) before each run "
        "are in the JSON (2 cores shared with other jobs).",
    ]
    feas = {m: np.mean([r["train_feasible"] for r in runs if r["method"] == m]) for m in METHODS}
    feas_te = {m: np.mean([r["test_feasible"] for r in runs if r["method"] == m]) for m in METHODS}
    lines.append(
        "Fraction of runs feasible over all sparsities, train / test: "
        + ", ".join(f"{m} {feas[m]:.2f} / {feas_te[m]:.2f}" for m in METHODS)
        + "."
    )
    gen = {m: (mean(m, "train_max_psi"), mean(m, "test_max_psi")) for m in METHODS}
    lines.append(
        "Paper A's claim, checked: CEAG (dual lr 1e-3) meets its train tolerance in "
        f"{feas['CEAG']:.0%} of the runs (NFT {feas['NFT']:.0%}, EL+RB {feas['EL+RB']:.0%}, "
        f"NFT+ES {feas['NFT+ES']:.0%}); "
        "mean train -> test max psi (%), i.e. how the disparity generalises: "
        + ", ".join(f"{m} {100 * a:.2f} -> {100 * b:.2f}" for m, (a, b) in gen.items())
        + ". "
        + (
            "Every method's test max psi exceeds its train value: the train-set "
            "guarantee does not carry over to test (as the paper reports)"
            if all(b > a for a, b in gen.values())
            else "Not every method's test max psi exceeds its train value"
        )
        + f"; CEAG's test max psi is {'below' if gen['CEAG'][1] < gen['NFT'][1] else 'not below'}"
        f" NFT's and {'below' if gen['CEAG'][1] < gen['EL+RB'][1] else 'not below'} EL+RB's "
        "(the smallest test group, Asian, has about 64 rows: one row is 1.6 accuracy points)."
    )
    per_sp = []
    for sp in sorted({r["target_sparsity"] for r in runs}):
        per_sp.append(
            f"{100 * sp:g} %: train "
            + " / ".join(f"{100 * mean(m, 'train_max_psi', sp):.2f}" for m in METHODS)
            + ", test "
            + " / ".join(f"{100 * mean(m, 'test_max_psi', sp):.2f}" for m in METHODS)
        )
    lines.append(
        f"Mean max psi (%) per sparsity, methods in the order {list(METHODS)}: "
        + "; ".join(per_sp)
        + "."
    )
    return "\n\n".join(lines)


if __name__ == "__main__":
    main()
