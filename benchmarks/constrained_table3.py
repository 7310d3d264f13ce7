"""Paper B, Table 3: fairness-constrained MLPs on ACSIncome Oklahoma (constrained spec 3).

Kliachkin et al., "Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained
Training of Deep Neural Networks": the loss-parity problem

    min_theta L(theta)  s.t.  -delta <= L_white(theta) - L_nonwhite(theta) <= delta,

delta = 0.005, trained with ``fairest.constrained.LossGapConstrainedClassifier`` for every
solver of the paper (``sgd``, ``penalty`` (SGD-Fairret), ``ssw``, ``ssl-alm``, ``alm``,
``ghost``), 10 seeds (run index = ``random_state``), scored on the train and test splits by
``fairest.metrics``:

* Ind = ``independence_gap``, Sp = ``separation_gap``, Sf = ``sufficiency_gap`` of the hard
  predictions ``1[sigma(z) > 0.5]``; Ina = misclassification rate;
* Wd = ``prediction_wasserstein`` (50-bin squared W2 of sigma(z), white group's bins);
* max violation = true full-split ``|L_white - L_nonwhite| - delta`` (``loss_gap``);
* fit time, iterations and epochs of every fit, with ``os.getloadavg()``.

Protocol (spec 3.2-3.9): folktables ACSIncome 2018 1-Year, Oklahoma (17,917 rows), the 9
features AGEP, COW, SCHL, MAR, OCCP, POBP, RELP, WKHP, SEX as raw numeric codes, race
(RAC1P) dropped from X and binarised (white = RAC1P 1 vs non-white), 80/20 split stratified
on the binary race with ``random_state=42``, StandardScaler fitted on train; MLP 9-64-32-1;
``preset="paper"`` step sizes; objective batch 8 (16 for SSw), 8 rows per group per
constraint draw; budget 30 s wall clock per run (epochs unlimited), SGD and SGD-Fairret
additionally capped at 10 epochs. Seeds run in the outer loop and the six methods
interleaved inside it, so the machine's load hits all methods alike.

Usage::

    python benchmarks/constrained_table3.py [--seeds 10] [--max-time 30] [--methods ...]

Writes benchmarks/results/constrained_table3.{json,md,png} (rewritten after every run, so an
interrupted run leaves data). Skips when ``../shared/datasets`` is absent.
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
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, write_results

from fairest.constrained import LossGapConstrainedClassifier
from fairest.datasets import fetch_acs_income, seed_data_home
from fairest.metrics import (
    independence_gap,
    loss_gap,
    prediction_wasserstein,
    separation_gap,
    sufficiency_gap,
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
NAME = "constrained_table3"
FEATURES = ["AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX"]
DELTA = 0.005  # spec 3.1 [C]
METHODS = ["sgd", "penalty", "ssw", "ssl-alm", "alm", "ghost"]
LABEL = {
    "sgd": "SGD",
    "penalty": "SGD-Fairret",
    "ssw": "SSw",
    "ssl-alm": "SSL-ALM",
    "alm": "ALM",
    "ghost": "StGh",
}
METRICS = ["Ind", "Sp", "Sf", "Ina", "Wd", "viol"]

# Paper B, Table 3 (mean, std over 10 runs), from the paper text (spec 3.10).
PAPER = {
    "sgd": {
        "train": {
            "Ind": (0.094443, 0.004259),
            "Sp": (0.132486, 0.006998),
            "Ina": (0.200677, 0.001461),
            "Sf": (0.114701, 0.006428),
            "Wd": (0.007532, 0.000458),
        },
        "test": {
            "Ind": (0.096775, 0.005544),
            "Sp": (0.176032, 0.016177),
            "Ina": (0.214565, 0.001823),
            "Sf": (0.171057, 0.008797),
            "Wd": (0.008435, 0.000438),
        },
    },
    "ghost": {
        "train": {
            "Ind": (0.047964, 0.025665),
            "Sp": (0.049369, 0.028012),
            "Ina": (0.273076, 0.024253),
            "Sf": (0.200477, 0.037679),
            "Wd": (0.002160, 0.001485),
        },
        "test": {
            "Ind": (0.049311, 0.028819),
            "Sp": (0.095833, 0.038848),
            "Ina": (0.275698, 0.021965),
            "Sf": (0.211302, 0.032551),
            "Wd": (0.002811, 0.002232),
        },
    },
    "alm": {
        "train": {
            "Ind": (0.058148, 0.006806),
            "Sp": (0.061222, 0.015689),
            "Ina": (0.239594, 0.012417),
            "Sf": (0.196727, 0.011451),
            "Wd": (0.002603, 0.000449),
        },
        "test": {
            "Ind": (0.057785, 0.011813),
            "Sp": (0.113852, 0.014183),
            "Ina": (0.243527, 0.007427),
            "Sf": (0.221226, 0.016810),
            "Wd": (0.003345, 0.000567),
        },
    },
    "ssl-alm": {
        "train": {
            "Ind": (0.065700, 0.008725),
            "Sp": (0.071423, 0.015466),
            "Ina": (0.233350, 0.017184),
            "Sf": (0.186114, 0.013367),
            "Wd": (0.003141, 0.000789),
        },
        "test": {
            "Ind": (0.066243, 0.011337),
            "Sp": (0.117294, 0.022977),
            "Ina": (0.240095, 0.011787),
            "Sf": (0.215484, 0.021818),
            "Wd": (0.003987, 0.000941),
        },
    },
    "ssw": {
        "train": {
            "Ind": (0.077298, 0.028892),
            "Sp": (0.114662, 0.028553),
            "Ina": (0.223959, 0.017304),
            "Sf": (0.132848, 0.014592),
            "Wd": (0.001401, 0.000800),
        },
        "test": {
            "Ind": (0.080345, 0.029126),
            "Sp": (0.144289, 0.050398),
            "Ina": (0.228739, 0.012889),
            "Sf": (0.175419, 0.030738),
            "Wd": (0.001724, 0.001001),
        },
    },
    "penalty": {
        "train": {
            "Ind": (0.090960, 0.012313),
            "Sp": (0.120788, 0.017138),
            "Ina": (0.201242, 0.001937),
            "Sf": (0.106497, 0.010259),
            "Wd": (0.004973, 0.000744),
        },
        "test": {
            "Ind": (0.093657, 0.009546),
            "Sp": (0.174371, 0.018708),
            "Ina": (0.213142, 0.002398),
            "Sf": (0.180496, 0.022141),
            "Wd": (0.005847, 0.000829),
        },
    },
}


def load_split(data_home):
    """ACSIncome OK, spec 3.2: 9 raw features, binary race (0 white, 1 non-white)."""
    bunch = fetch_acs_income(states="OK", data_home=data_home, as_frame=True)
    frame = bunch.frame
    X = frame[FEATURES].to_numpy(dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    race = (frame["RAC1P"].to_numpy() != 1).astype(np.int64)  # 0 = white sorts first (Wd bins)
    Xtr, Xte, ytr, yte, str_, ste = train_test_split(
        X, y, race, test_size=0.2, stratify=race, random_state=42
    )
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), ytr, str_, scaler.transform(Xte), yte, ste


def make_estimator(
    method, seed, max_time, sgd_epochs, ghost_backend, epochs=None, ghost_iters=None
):
    """The paper's budget (``max_time`` s, SGD baselines also <= ``sgd_epochs``), or a
    deterministic one (``epochs`` for every method but Ghost, ``ghost_iters`` for Ghost)."""
    kw = dict(
        solver=method,
        tolerance=DELTA,
        preset="paper",
        random_state=seed,
        max_time=max_time,
        n_epochs=None,
        record_history=True,
    )  # rows_seen
    if method in ("sgd", "penalty"):
        kw["n_epochs"] = sgd_epochs  # spec 3.8: <= 10 epochs within the 30 s
    if method == "ghost":
        kw["max_iter"] = 10**8  # time budget only (spec 3.4)
        kw["solver_params"] = {"qp_backend": ghost_backend}
    if epochs is not None:
        kw.update(max_time=None, n_epochs=epochs)
        if method == "ghost":
            kw["max_iter"] = ghost_iters
    return LossGapConstrainedClassifier(**kw)


def scores(est, X, y, s):
    z = est.decision_function(X)
    proba = 1.0 / (1.0 + np.exp(-z))
    pred = (proba > 0.5).astype(int)  # spec 3.9: 1[sigma(z) > 0.5]
    return {
        "Ind": independence_gap(y, pred, sensitive_features=s),
        "Sp": separation_gap(y, pred, sensitive_features=s),
        "Sf": sufficiency_gap(y, pred, sensitive_features=s),
        "Ina": float(np.mean(pred != y)),
        "Wd": prediction_wasserstein(y, proba, sensitive_features=s),
        "gap": loss_gap(y, proba, sensitive_features=s),
        "viol": loss_gap(y, proba, sensitive_features=s) - DELTA,
    }


def warm_up(methods, data, ghost_backend):
    """Compile every jitted path once (seed 10**6, not a benchmark seed)."""
    Xtr, ytr, str_ = data[:3]
    for method in methods:
        est = make_estimator(method, 10**6, 0.5, 0.01, ghost_backend)
        if method == "ghost":
            est.set_params(max_iter=2, max_time=None)
        est.fit(Xtr, ytr, sensitive_features=str_)
    if "ghost" in methods:  # Ghost's derivative kernel compiles once per sample size 2^(N+1)
        try:
            import jax.numpy as jnp

            from fairest.constrained._common import ModelProblem, ravel_params
            from fairest.constrained._engine import MLP
            from fairest.constrained._engine._ghost_solver import ghost_derivatives
            from fairest.constrained._engine._runtime import device_data

            model = MLP(Xtr.shape[1], (64, 32), 1)
            problem = ModelProblem(model, 2, 2, 2)
            derivs, _ = ghost_derivatives(problem)
            dt = jnp.float32
            payload = device_data(Xtr, ytr, str_, str_.astype(np.int32), dt)
            x0 = ravel_params(model.init(np.random.default_rng(0), dt))
            aux = {
                "A": jnp.asarray([[1.0, -1.0], [-1.0, 1.0]], dt),
                "delta": jnp.asarray(DELTA, dt),
            }
            largest = int(np.bincount(str_).max())
            size = 1
            while size <= largest:
                obj = jnp.zeros(size, jnp.int32)
                derivs(x0, payload, aux, obj, jnp.zeros(2 * size, jnp.int32))
                size *= 2
        except Exception as exc:
            print(f"ghost warm-up skipped: {exc!r}", flush=True)


def fmt(values, digits=3):
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return ""
    std = values.std(ddof=1) if values.size > 1 else 0.0
    if digits == "e":
        return f"{values.mean():.2e} ± {std:.1e}"
    return f"{values.mean():.{digits}f} ± {std:.{digits}f}"


def aggregate(runs, methods):
    rows = []
    for method in methods:
        mine = [r for r in runs if r["method"] == method]
        if not mine:
            continue
        row = {"method": LABEL[method], "solver": method, "runs": len(mine)}
        for split in ("train", "test"):
            for key in METRICS + ["gap"]:
                vals = np.array([r[split][key] for r in mine])
                row[f"{split}_{key}_mean"] = float(vals.mean())
                row[f"{split}_{key}_std"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
                row[f"{split} {key}"] = fmt(vals, "e" if key == "Wd" else 3)
        row["feasible (train viol <= 1e-3)"] = (
            f"{sum(r['train']['viol'] <= 1e-3 for r in mine)}/{len(mine)}"
        )
        row["fit s"] = fmt([r["fit_time"] for r in mine], 1)
        row["iters"] = f"{np.mean([r['n_iter'] for r in mine]):.0f}"
        row["epochs"] = (
            fmt([r["epochs"] for r in mine], 1)
            if method != "ghost"
            else f"{np.mean([r['rows_seen'] for r in mine]) / mine[0]['n_train']:.2f} (rows/n)"
        )
        row["per_run"] = mine
        rows.append(row)
    return rows


def paper_table(rows):
    lines = [
        "| method | split | Ind (paper / ours) | Sp | Sf | Ina | Wd |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        paper = PAPER.get(row["solver"])
        for split in ("train", "test"):
            cells = []
            for key in ("Ind", "Sp", "Sf", "Ina", "Wd"):
                p_mean, p_std = paper[split][key]
                d = 4 if key == "Wd" else 3
                cells.append(
                    f"{p_mean:.{d}f}±{p_std:.{d}f} / {row[f'{split}_{key}_mean']:.{d}f}"
                    f"±{row[f'{split}_{key}_std']:.{d}f}"
                )
            lines.append(f"| {row['method']} | {split} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ordering_notes(rows):
    by = {r["solver"]: r for r in rows}
    if not {"alm", "ssl-alm", "sgd"} <= set(by):
        return "Ordering: not all of ALM, SSL-ALM, SGD were run."
    viol = {k: r["train_viol_mean"] for k, r in by.items()}
    ina = {k: r["test_Ina_mean"] for k, r in by.items()}
    order = sorted(viol, key=lambda k: abs(viol[k]) if viol[k] > 0 else 0.0)
    text = [
        "Ordering check (computed from the runs above). Mean train max violation, "
        "closest to feasible first: " + ", ".join(f"{LABEL[k]} {viol[k]:+.4f}" for k in order) + "."
    ]
    text.append(
        "Mean test inaccuracy: "
        + ", ".join(f"{LABEL[k]} {ina[k]:.3f}" for k in sorted(ina, key=lambda k: ina[k]))
        + "."
    )
    constrained = [k for k in ("ssl-alm", "alm", "ssw", "ghost") if k in by]
    ranked = sorted(constrained, key=lambda k: max(viol[k], 0.0))
    alm_first = set(ranked[:2]) == {"alm", "ssl-alm"}
    loss = {k: ina[k] - ina["sgd"] for k in constrained}
    moderate = None
    if "ghost" in by:
        moderate = all(loss[k] <= 0.05 and loss[k] < loss["ghost"] for k in ("alm", "ssl-alm"))
    text.append(
        f"Paper's ordering, part 1 (ALM and SSL-ALM closest to feasibility among the "
        f"constrained methods, by mean positive train violation): "
        f"{'holds' if alm_first else 'does not hold'} (order: "
        + ", ".join(LABEL[k] for k in ranked)
        + ")."
    )
    text.append(
        "Part 2 (moderate accuracy loss: test inaccuracy minus SGD's is "
        + ", ".join(f"{LABEL[k]} {loss[k]:+.3f}" for k in constrained)
        + " (paper: SSL-ALM +0.026, ALM +0.029, SSw +0.014, StGh +0.061); criterion: ALM and "
        "SSL-ALM lose at most 0.05 and less than StGh): "
        + {True: "holds", False: "does not hold", None: "n/a"}[moderate]
        + "."
    )
    return " ".join(text)


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    colors = dict(zip(METHODS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, split in zip(axes, ("train", "test")):
        for row in rows:
            runs = row["per_run"]
            v = [r[split]["viol"] for r in runs]
            a = [r[split]["Ina"] for r in runs]
            c = colors[row["solver"]]
            ax.scatter(v, a, s=14, alpha=0.45, color=c)
            ax.errorbar(
                np.mean(v),
                np.mean(a),
                xerr=np.std(v, ddof=1) if len(v) > 1 else 0,
                yerr=np.std(a, ddof=1) if len(a) > 1 else 0,
                fmt="o",
                ms=8,
                color=c,
                mec="k",
                label=row["method"],
                capsize=3,
            )
            p = PAPER[row["solver"]][split]["Ina"][0]
            ax.axhline(p, color=c, lw=0.8, ls=":")
        ax.axvline(0.0, color="k", lw=0.8, ls="--")
        ax.set_xlabel(f"{split}: |L_white - L_nonwhite| - delta")
        ax.set_ylabel(f"{split} inaccuracy")
        ax.set_title(f"ACSIncome OK, {split} (dots: seeds; dotted: paper Ina)")
    axes[1].legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--max-time", type=float, default=30.0)
    parser.add_argument("--sgd-epochs", type=float, default=10.0)
    parser.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    parser.add_argument("--ghost-backend", default="dual", choices=["dual", "cvxpy"])
    parser.add_argument(
        "--epochs",
        type=float,
        default=None,
        help="deterministic budget: this many epochs for every method but "
        "StGh (no time limit); replaces --max-time/--sgd-epochs",
    )
    parser.add_argument(
        "--ghost-iters", type=int, default=150, help="StGh iterations with --epochs"
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite the .md/.png from the per-run data in the existing .json",
    )
    parser.add_argument(
        "--name",
        default=None,
        help="results name (default constrained_table3, or "
        "constrained_table3_epochs with --epochs)",
    )
    args = parser.parse_args(argv)
    if args.name is None:
        args.name = NAME if args.epochs is None else NAME + "_epochs"
    if args.render_only:
        payload = json.loads((RESULTS / f"{args.name}.json").read_text())
        write([run for row in payload["rows"] for run in row["per_run"]], args)
        return 0
    if not SHARED.is_dir():
        print(f"skipping: {SHARED} is absent")
        return 0
    warnings.filterwarnings("ignore", category=UserWarning)
    with tempfile.TemporaryDirectory() as home:
        seed_data_home(SHARED, home, datasets=["acs_income"], verify=False)
        data = load_split(home)
    Xtr, ytr, str_, Xte, yte, ste = data
    print(
        f"train {len(ytr)} test {len(yte)}; positive share white/non-white "
        f"{ytr[str_ == 0].mean():.3f}/{ytr[str_ == 1].mean():.3f}",
        flush=True,
    )
    t0 = time.perf_counter()
    warm_up(args.methods, data, args.ghost_backend)
    print(f"warm-up {time.perf_counter() - t0:.1f} s", flush=True)
    runs = []
    for seed in range(args.seeds):
        for method in args.methods:
            est = make_estimator(
                method,
                seed,
                args.max_time,
                args.sgd_epochs,
                args.ghost_backend,
                args.epochs,
                args.ghost_iters,
            )
            load = os.getloadavg()
            start = time.perf_counter()
            est.fit(Xtr, ytr, sensitive_features=str_)
            fit_time = time.perf_counter() - start
            hist = est.history_
            rows_seen = float(hist["n_samples"][-1]) if len(hist["iter"]) else 0.0
            run = {
                "method": method,
                "seed": seed,
                "fit_time": fit_time,
                "loadavg_before": load,
                "loadavg_after": os.getloadavg(),
                "n_iter": int(est.n_iter_),
                "epochs": float(est.n_epochs_done_),
                "rows_seen": rows_seen,
                "n_train": int(len(ytr)),
                "train_constraint_values": est.constraint_values_.tolist(),
                "train": scores(est, Xtr, ytr, str_),
                "test": scores(est, Xte, yte, ste),
            }
            if method == "ghost":
                run["n_qp_failures"] = int(est.n_qp_failures_)
            if method == "ssw":
                run["step_counts"] = {k: int(v) for k, v in est.step_counts_.items()}
            runs.append(run)
            print(
                f"seed {seed} {method:8s} {fit_time:6.1f}s it={est.n_iter_} "
                f"ep={est.n_epochs_done_:.2f} train viol={run['train']['viol']:+.4f} "
                f"test viol={run['test']['viol']:+.4f} test Ina={run['test']['Ina']:.3f} "
                f"load={load[0]:.1f}",
                flush=True,
            )
            np.testing.assert_allclose(
                run["train"]["viol"], est.constraint_values_.max(), atol=1e-6
            )
        write(runs, args)
    return 0


def write(runs, args):
    methods = [m for m in METHODS if m in args.methods]
    rows = aggregate(runs, methods)
    seeds = sorted({r["seed"] for r in runs})
    png = plot(rows, RESULTS / f"{args.name}.png")
    if args.epochs is None:
        budget = BUDGET_TIME.format(max_time=args.max_time, sgd_epochs=args.sgd_epochs)
    else:
        budget = BUDGET_EPOCHS.format(epochs=args.epochs, ghost_iters=args.ghost_iters)
    notes = NOTES.format(
        n_seeds=len(seeds),
        n_seeds_minus=max(seeds),
        budget=budget,
        backend=args.ghost_backend,
        comparison=paper_table(rows),
        ordering=ordering_notes(rows),
        png=png.name if png else "(matplotlib missing)",
        load=f"{np.mean([r['loadavg_before'][0] for r in runs]):.1f}",
    )
    columns = (
        ["method", "runs"]
        + [f"{s} {k}" for s in ("train", "test") for k in METRICS]
        + ["feasible (train viol <= 1e-3)", "fit s", "iters", "epochs"]
    )
    write_results(args.name, rows, columns, notes)


BUDGET_TIME = """\
Budget (the paper's protocol, spec 3.4): {max_time:g} s wall clock per run, epochs
unlimited; SGD and SGD-Fairret also capped at {sgd_epochs:g} epochs (spec 3.8); StGh without
an iteration cap. The wall-clock budget makes the number of iterations, and so the results,
depend on the machine's load. fairest's jitted solvers do many more iterations in 30 s than
the PyTorch code of the paper did (SGD there: <= 10 epochs in 30 s), so the constrained
methods here are trained for far more epochs than in the paper (see the epochs column)."""

BUDGET_EPOCHS = """\
Budget (deterministic variant, not the paper's 30 s wall clock): exactly {epochs:g} epochs
of the objective sampler for every method but StGh (the paper's SGD budget, spec 3.8,
applied to all), StGh {ghost_iters} iterations; no time limit, so every run is
bit-reproducible from its seed."""

NOTES = """\
Paper B (Kliachkin et al.) Table 3 protocol with `LossGapConstrainedClassifier`, ACSIncome
2018 Oklahoma (17,917 rows; 14,333 train / 3,584 test, stratified on white vs non-white,
`random_state=42`; positive share 30.8 % white / 20.7 % non-white as in the paper), 9 raw
features standardised, race removed from X; MLP 9-64-32-1 (2,753 parameters), float32,
loss-parity constraint `|L_white - L_nonwhite| <= delta`, delta = 0.005, `preset="paper"`
(paper-text step sizes: SSL-ALM tau 0.01, eta 0.05, rho 1, mu 2, beta 0.5, M_y 10; ALM
mu = 0; SSw 0.5 / 0.05, eps 1e-4 decaying 0.97 from in-epoch step 500; StGh p0 0.4,
alpha0 0.05, alpha-hat 0.05, rho 0.8, lambda 0.5, tau 1, beta 10; SGD lr 0.005;
SGD-Fairret lr 0.05, weight 0.5, 4+4 balanced batches); objective batch 8 (SSw 16),
constraint draws 8 rows per group. Seeds 0..{n_seeds_minus} ({n_seeds} runs per method;
`random_state` = run index).

{budget} StGh QP backend
`{backend}` (the spec's recommended backend for m <= 4 constraints; it agrees with the
cvxpy/Clarabel QP to 1e-6, oracle 21, and is about 5x faster per iteration here). Jitted
code was compiled before the timed fits (one warm-up fit per method, seed 10**6; StGh's
derivative kernel for every sample size 2^(N+1)). Mean 1-min load average {load} on 2
shared cores; per-run `n_iter`, epochs, fit times and load averages are in the JSON.
Differences from the released code, kept as fairest defaults:
constraint group streams reshuffle instead of replaying their first pass; the SSL-ALM final
full step uses each group once instead of bootstrap resamples.

Metrics (fairest.metrics, spec 3.9), hard predictions 1[sigma(z) > 0.5]: Ind =
`independence_gap`, Sp = `separation_gap`, Sf = `sufficiency_gap`, Ina = misclassification
rate, Wd = `prediction_wasserstein` (50 bins of sigma(z), the white group's bins, squared
W2), viol = `loss_gap` (true full-split |L_white - L_nonwhite|) - delta, i.e. the max
constraint violation (<= 0 is feasible; the train value equals `max(constraint_values_)`).
Mean ± std (ddof = 1) over seeds. Plot: {png} (test/train inaccuracy vs max violation,
one dot per seed, the paper's mean inaccuracy as dotted lines).

Paper Table 3 (mean±std, 10 runs) beside ours:

{comparison}

{ordering}
"""


if __name__ == "__main__":
    sys.exit(main())
