"""Seconds per epoch: fairest's loss-gap constrained training vs humancompatible-train 0.4.2.

Paper B (Kliachkin et al.) benchmarks stochastic approximation methods for
``min L(theta) s.t. -delta <= L_white(theta) - L_nonwhite(theta) <= delta``. Its authors'
package, ``humancompatible-train`` (PyTorch), is the reference. Both sides here solve that
problem on the same data with the same model, batch sizes and number of epochs:

* data: folktables ACSIncome 2018, Oklahoma (paper B's task, spec constrained.md 3.2),
  9 features (race dropped), groups white (RAC1P = 1) vs non-white, 80/20 split stratified
  on the binary race with seed 42 (14,333 train rows), StandardScaler fitted on train;
* model: MLP 9 -> 64 -> 32 -> 1 (ReLU), BCE-with-logits, float32;
* constraints: ``c = (D - delta, -D - delta)``, ``D = L_white - L_nonwhite`` estimated on a
  group-balanced draw of 8 rows per group, ``delta = 0.005``;
* SSL-ALM: objective batch 8, primal step 0.01, dual step 0.05, rho = 1, mu = 2,
  beta = 0.5, dual bound 10. fairest: ``LossGapConstrainedClassifier(solver="ssl-alm")``
  (paper algorithm: slacks, two independent constraint draws per iteration, final
  full-batch step). Reference: ``dual_optim.ALM(m=2, lr=0.05, penalty=1,
  augmentation="quadratic", is_ineq=True, dual_range=(0, 10))`` with
  ``MoreauEnvelope(SGD(lr=0.01), mu=2, beta=0.5)`` (0.4.x API: one constraint draw per
  iteration, penalty on that same draw, no slacks);
* SSw: objective batch 16, objective step 0.5, constraint step 0.05, tolerance 1e-4.
  fairest: ``solver="ssw"`` (paper defaults; a second independent draw for the
  constraint step, tolerance decay after 500 in-epoch iterations). Reference:
  ``dual_optim.SSG(m=2, constraint_tol=1e-4, constraint_scale=0.1)`` with ``SGD(lr=0.5)``
  (the scale gives the constraint branch step 0.05 for plain SGD, as its docstring says);
* reference data pipeline: pre-built float32 tensors, a ``torch.randperm`` per epoch for
  the objective batches (last short batch kept, as in fairest), the package's
  ``BalancedBatchSampler(extend_groups=True)`` for the constraint draws; one forward pass
  over the concatenated objective + constraint rows per iteration (its cheapest use).
  Timed with one torch thread by default (``--reference-threads 0 1`` adds torch's default
  count; the fastest counts): on a loaded 2-core machine the default threads are far slower.

Timing: seconds per epoch. fairest: wall time of a whole ``fit(n_epochs=E)`` divided by
E in a process where one warm-up fit already compiled the jitted code (the fit's input
validation and final training-set statistics included). Reference: per-epoch wall time
in a fresh process of its own venv after 20 warm-up iterations on a throwaway model (the
runner also saves every epoch-end iterate, outside the timed loop, for
``constrained_speed_epochs.py``). The
two sides are run interleaved (fairest, reference, fairest, ...), with
``os.getloadavg()`` recorded next to every timing. Constraint satisfaction: both final
models are scored on the train (and test) split by fairest's ``loss_gap`` metric
(``|L_white - L_nonwhite|``), violation = loss gap - delta.

The reference is never imported here: this file is re-run inside the reference venv
(``--reference-runner``), which ``ensure_reference_venv`` creates in ``benchmarks/.venvs/hct`` with
``pip install torch==2.13.0 humancompatible-train==0.4.2`` when missing (override with
``--reference-venv`` or the ``FAIREST_HCT_VENV`` environment variable). Data are read from
``<repo>/../shared/datasets`` (:func:`_common.shared_dataset`); the script exits cleanly
when they are absent. Built on the harness ``benchmarks/_common.py`` (options, shared
data, timing, result files).

Run: ``python benchmarks/constrained_speed.py`` (a few minutes), ``--quick`` for a smoke run
(1 epoch, 1 seed; writes nothing unless ``--name`` is given).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
NAME = "constrained_speed"
REFERENCE = ("torch==2.13.0", "humancompatible-train==0.4.2")
DEFAULT_VENV = Path(os.environ.get("FAIREST_HCT_VENV", HERE / ".venvs" / "hct"))  # git-ignored
DELTA = 0.005
HIDDEN = (64, 32)
CONSTRAINT_BATCH = 8  # rows per group
SETTINGS = {  # method -> shared settings (spec 4.2 "paper" preset)
    "ssl-alm": {
        "batch_size": 8,
        "lr": 0.01,
        "dual_lr": 0.05,
        "rho": 1.0,
        "mu": 2.0,
        "beta": 0.5,
        "dual_bound": 10.0,
    },
    "ssw": {"batch_size": 16, "f_lr": 0.5, "c_lr": 0.05, "ctol": 1e-4},
}


# ------------------------------------------------------------------------------------------
# reference side (runs inside the reference venv: torch + humancompatible-train only)
# ------------------------------------------------------------------------------------------


def reference_runner(argv: list[str]) -> None:
    import torch
    from humancompatible.train.dual_optim import ALM, SSG, MoreauEnvelope
    from humancompatible.train.fairness.utils import BalancedBatchSampler

    data_path, out_path, method, epochs, seed, threads, *rest = argv
    epochs, seed, threads = int(epochs), int(seed), int(threads)
    device = torch_device(rest[0] if rest else "cpu", torch)
    if threads > 0:
        torch.set_num_threads(threads)
    cfg = SETTINGS[method]
    data = np.load(data_path)
    X = torch.from_numpy(np.ascontiguousarray(data["X"], dtype=np.float32)).to(device)
    y = torch.from_numpy(np.ascontiguousarray(data["y"], dtype=np.float32)).to(device)
    g = torch.from_numpy(data["g"].astype(np.int64))  # 0 = white, 1 = non-white
    g_host, g = g, g.to(device)
    n = X.shape[0]
    b = cfg["batch_size"]

    def build():
        torch.manual_seed(seed)
        sizes = (X.shape[1], *HIDDEN, 1)
        layers = []
        for i, (a, c) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(torch.nn.Linear(a, c))
            if i < len(sizes) - 2:
                layers.append(torch.nn.ReLU())
        model = torch.nn.Sequential(*layers).to(device)
        if method == "ssl-alm":
            dual = ALM(
                m=2,
                lr=cfg["dual_lr"],
                penalty=cfg["rho"],
                augmentation="quadratic",
                is_ineq=True,
                dual_range=(0.0, cfg["dual_bound"]),
                device=device,
            )
            primal = MoreauEnvelope(
                torch.optim.SGD(model.parameters(), lr=cfg["lr"]), mu=cfg["mu"], beta=cfg["beta"]
            )
        else:
            dual = SSG(m=2, constraint_tol=cfg["ctol"], constraint_scale=cfg["c_lr"] / cfg["f_lr"])
            primal = torch.optim.SGD(model.parameters(), lr=cfg["f_lr"])
        return model, dual, primal

    gen = torch.Generator().manual_seed(seed)
    sampler = BalancedBatchSampler(
        group_indices=[torch.nonzero(g_host == k).squeeze(1).tolist() for k in (0, 1)],
        batch_size=2 * CONSTRAINT_BATCH,
        drop_last=True,
        extend_groups=True,
        generator=gen,
    )
    draws = iter(sampler)

    def constraint_draw():
        nonlocal draws
        try:
            return next(draws)
        except StopIteration:
            draws = iter(sampler)
            return next(draws)

    bce = torch.nn.functional.binary_cross_entropy_with_logits
    step_counts = {"constraint": 0, "objective": 0}

    def step(model, dual, primal, obj_idx):
        c_idx = torch.as_tensor(constraint_draw(), device=device)
        idx = torch.cat([obj_idx, c_idx])
        logits = model(X[idx]).squeeze(-1)
        k = obj_idx.shape[0]
        loss = bce(logits[:k], y[obj_idx])
        per = bce(logits[k:], y[c_idx], reduction="none")
        white = g[c_idx] == 0
        gap = per[white].mean() - per[~white].mean()
        constraints = torch.stack([gap - DELTA, -gap - DELTA])
        primal.zero_grad()
        lagrangian = dual.forward_update(loss, constraints)
        lagrangian.backward()
        primal.step()
        if method == "ssw":
            key = "constraint" if dual.last_switched_to_constraints else "objective"
            step_counts[key] += 1

    # warm-up on a throwaway model (allocator, first-call overheads)
    model, dual, primal = build()
    perm = torch.randperm(n, generator=gen).to(device)  # drawn on the host: same order
    for it in range(20):
        step(model, dual, primal, perm[it * b : (it + 1) * b])
    step_counts = {"constraint": 0, "objective": 0}

    model, dual, primal = build()
    linear = [m for m in model if isinstance(m, torch.nn.Linear)]
    epoch_times, loads, snapshots = [], [], []
    for _ in range(epochs):
        loads.append(os.getloadavg())
        start = time.perf_counter()
        perm = torch.randperm(n, generator=gen).to(device)
        for k in range(0, n, b):
            step(model, dual, primal, perm[k : k + b])
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # the epoch's kernels are done
        epoch_times.append(time.perf_counter() - start)
        snapshots.append(
            [
                (m.weight.detach().cpu().numpy().T.copy(), m.bias.detach().cpu().numpy().copy())
                for m in linear
            ]
        )  # end-of-epoch iterate (not timed)
    arrays = {}
    for i in range(len(linear)):  # W{i}, b{i}: final model; *_epochs: every epoch end
        arrays[f"W{i}"], arrays[f"b{i}"] = snapshots[-1][i]
        arrays[f"W{i}_epochs"] = np.stack([snap[i][0] for snap in snapshots])
        arrays[f"b{i}_epochs"] = np.stack([snap[i][1] for snap in snapshots])
    np.savez(out_path, **arrays)
    print(
        json.dumps(
            {
                "epoch_times": epoch_times,
                "loadavg": loads,
                "threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "torch_device": str(device),
                "duals": dual.duals.tolist(),
                "step_counts": step_counts,
            }
        )
    )


def torch_device(name: str, torch):
    """The torch device of the reference runner: ``"cpu"``, ``"cuda"`` (an error when
    torch sees no GPU) or ``"auto"`` (``"cuda"`` when available, else ``"cpu"``)."""
    if name not in ("cpu", "cuda", "auto"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'auto'; got {name!r}.")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' but this torch sees no CUDA device.")
    return torch.device(name)


# ------------------------------------------------------------------------------------------
# fairest side
# ------------------------------------------------------------------------------------------


def ensure_reference_venv(venv_dir: Path) -> Path:
    python = venv_dir / "bin" / "python"
    probe = (
        "import importlib.metadata as m, torch; "
        "print(m.version('humancompatible-train'), torch.__version__)"
    )
    if python.exists():
        check = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
        if check.returncode == 0 and check.stdout.startswith("0.4.2"):
            return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv_dir)], check=True)
    subprocess.run([str(venv_dir / "bin" / "pip"), "install", "-q", *REFERENCE], check=True)
    return python


def load_data():
    from _common import SHARED_DATASETS, shared_dataset
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from fairest.datasets import fetch_acs_income, seed_data_home

    shared_dataset("acs")  # exits cleanly when absent
    with tempfile.TemporaryDirectory(prefix="fairest_acs_") as home:
        seed_data_home(SHARED_DATASETS, home, datasets=["acs_income"], verify=False)
        bunch = fetch_acs_income(states="OK", data_home=home)
    keep = [i for i, f in enumerate(bunch.feature_names) if f != "RAC1P"]
    X = bunch.data[:, keep]
    g = np.where(bunch.sensitive["race"].astype(str).to_numpy() == "White", 0, 1)
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X, bunch.target, g, test_size=0.2, stratify=g, random_state=42
    )
    scaler = StandardScaler().fit(Xtr)
    return {
        "X_train": scaler.transform(Xtr).astype(np.float32),
        "X_test": scaler.transform(Xte).astype(np.float32),
        "y_train": ytr,
        "y_test": yte,
        "g_train": gtr,
        "g_test": gte,
    }


def fairest_estimator(method: str, epochs: int, seed: int):
    from fairest.constrained import LossGapConstrainedClassifier

    cfg = SETTINGS[method]
    if method == "ssl-alm":
        params = {
            "learning_rate": cfg["lr"],
            "dual_learning_rate": cfg["dual_lr"],
            "penalty_strength": cfg["rho"],
            "proximal_strength": cfg["mu"],
            "anchor_rate": cfg["beta"],
            "dual_radius": cfg["dual_bound"],
        }
    else:
        params = {
            "learning_rate": cfg["f_lr"],
            "constraint_learning_rate": cfg["c_lr"],
            "constraint_tol": cfg["ctol"],
        }
    # record_history: run_fairest reads the per-iteration clock of history_
    return LossGapConstrainedClassifier(
        HIDDEN,
        solver=method,
        tolerance=DELTA,
        batch_size=cfg["batch_size"],
        constraint_batch_size=CONSTRAINT_BATCH,
        n_epochs=epochs,
        solver_params=params,
        preset="paper",  # the paper's estimators: independent draws, no feasibility phase
        random_state=seed,
        record_history=True,
    )


def forward(params, X):
    z = np.asarray(X, dtype=np.float64)
    for i, (W, b) in enumerate(params):
        z = z @ np.asarray(W, np.float64) + np.asarray(b, np.float64)
        if i < len(params) - 1:
            z = np.maximum(z, 0.0)
    return z[:, 0]


def score(params, data) -> dict:
    from fairest.metrics import loss_gap

    out = {}
    for split in ("train", "test"):
        z = forward(params, data[f"X_{split}"])
        proba = 1.0 / (1.0 + np.exp(-z))
        y = data[f"y_{split}"]
        gap = loss_gap(y, proba, sensitive_features=data[f"g_{split}"])
        out[f"{split}_loss_gap"] = float(gap)
        out[f"{split}_violation"] = float(gap - DELTA)
        out[f"{split}_loss"] = float(np.mean(np.logaddexp(0.0, z) - y * z))
        out[f"{split}_acc"] = float(np.mean((z > 0) == (y == 1)))
    return out


def run_fairest(method, epochs, seed, data) -> dict:
    from _common import measure

    est = fairest_estimator(method, epochs, seed)
    load = os.getloadavg()
    fit = measure(
        lambda: est.fit(data["X_train"], data["y_train"], sensitive_features=data["g_train"])
    )
    wall = fit.wall_s
    hist = est.history_
    return {
        "side": "fairest",
        "method": method,
        "seed": seed,
        "epochs": epochs,
        "s_per_epoch": wall / epochs,
        "fit_wall_s": wall,
        "fit_cpu_s": fit.cpu_s,
        "history_s_per_epoch": float(hist["time"][-1]) / epochs,
        "loadavg": load,
        "loadavg_after": os.getloadavg(),
        "n_iter": int(est.n_iter_),
        "step_counts": est.step_counts_,
        **score(est.params_, data),
    }


def run_reference(
    python, method, epochs, seed, data_path, workdir, data, thread_counts=(1,), device="cpu"
) -> dict:
    """humancompatible-train's epochs in the reference venv's ``python``, on the torch
    ``device`` (``"cpu"``, ``"cuda"`` or ``"auto"``; recorded as ``torch_device``)."""
    out = {"side": "humancompatible-train 0.4.2", "method": method, "seed": seed, "epochs": epochs}
    best = None
    for threads in thread_counts:  # 0 = torch's default thread count
        params_path = Path(workdir) / f"ref_{method}_{seed}_{threads}.npz"
        load = os.getloadavg()
        proc = subprocess.run(
            [
                str(python),
                str(Path(__file__).resolve()),
                "--reference-runner",
                str(data_path),
                str(params_path),
                method,
                str(epochs),
                str(seed),
                str(threads),
                device,
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"reference run failed:\n{proc.stderr[-3000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        per_epoch = float(np.mean(res["epoch_times"]))
        tag = "default_threads" if threads == 0 else f"{threads}thread"
        out[f"s_per_epoch_{tag}"] = per_epoch
        out[f"epoch_times_{tag}"] = res["epoch_times"]
        out[f"threads_{tag}"] = res["threads"]
        out[f"loadavg_{tag}"] = [load, *res["loadavg"]]
        out.setdefault("loadavg_reference", out[f"loadavg_{tag}"])
        if threads == thread_counts[0]:
            npz = np.load(params_path)
            params = [(npz[f"W{i}"], npz[f"b{i}"]) for i in range(len(HIDDEN) + 1)]
            out.update(score(params, data))
            out["duals"] = res["duals"]
            out["step_counts"] = res["step_counts"]
            out["torch"] = res["torch"]
            out["torch_device"] = res["torch_device"]
        best = per_epoch if best is None else min(best, per_epoch)
    out["s_per_epoch"] = best
    return out


def main():
    from _common import RESULTS, base_parser, machine, measure, write_results

    parser = base_parser(__doc__, name=NAME)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=["ssl-alm", "ssw"])
    parser.add_argument("--reference-venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument(
        "--reference-threads",
        nargs="+",
        type=int,
        default=[1],
        help="torch thread counts to time the reference with (0 = torch's "
        "default); the fastest counts",
    )
    parser.add_argument(
        "--reference-device",
        default="cpu",
        choices=("cpu", "cuda", "auto"),
        help="torch device of the reference (auto: cuda when available)",
    )
    args = parser.parse_args()
    if args.quick:
        args.epochs, args.seeds = 1, [0]

    data = load_data()
    python = ensure_reference_venv(args.reference_venv)
    workdir = tempfile.mkdtemp(prefix="fairest_hct_")
    atexit.register(shutil.rmtree, workdir, True)
    data_path = Path(workdir) / "train.npz"
    np.savez(data_path, X=data["X_train"], y=data["y_train"], g=data["g_train"])
    print(f"train {data['X_train'].shape}, groups {np.bincount(data['g_train'])}", flush=True)

    for method in args.methods:  # compile once per method (not timed)
        run_fairest(method, 1, args.seeds[0], data)

    runs = []

    def run_all():
        for seed in args.seeds:
            for method in args.methods:
                for side in ("fairest", "reference"):
                    if side == "fairest":
                        r = run_fairest(method, args.epochs, seed, data)
                    else:
                        r = run_reference(
                            python,
                            method,
                            args.epochs,
                            seed,
                            data_path,
                            workdir,
                            data,
                            tuple(args.reference_threads),
                            args.reference_device,
                        )
                    runs.append(r)
                    load = r["loadavg"] if side == "fairest" else r["loadavg_reference"][0]
                    print(
                        f"{method} seed {seed} {r['side']}: {r['s_per_epoch']:.3f} s/epoch, "
                        f"train violation {r['train_violation']:+.4f}, load {load[0]:.1f}",
                        flush=True,
                    )

    total = measure(run_all).wall_s

    rows = []
    for method in args.methods:
        f = [r for r in runs if r["method"] == method and r["side"] == "fairest"]
        ref = [r for r in runs if r["method"] == method and r["side"] != "fairest"]
        ratios = [rr["s_per_epoch"] / ff["s_per_epoch"] for ff, rr in zip(f, ref)]

        def ms(sel, key, fmt="{:.3f}"):
            v = np.array([r[key] for r in sel])
            return (fmt + " ± " + fmt).format(v.mean(), v.std())

        rows.append(
            {
                "method": method,
                "epochs": args.epochs,
                "seeds": len(f),
                "fairest s/epoch": ms(f, "s_per_epoch"),
                "reference s/epoch": ms(ref, "s_per_epoch"),
                "speed-up (ref/fairest)": f"{np.mean(ratios):.1f}× (min {np.min(ratios):.1f}×)",
                "fairest train violation": ms(f, "train_violation", "{:+.4f}"),
                "reference train violation": ms(ref, "train_violation", "{:+.4f}"),
                "fairest feasible (train)": f"{np.mean([r['train_violation'] <= 1e-3 for r in f]):.2f}",
                "reference feasible (train)": f"{np.mean([r['train_violation'] <= 1e-3 for r in ref]):.2f}",
                "fairest test loss / acc": f"{np.mean([r['test_loss'] for r in f]):.4f} / "
                f"{np.mean([r['test_acc'] for r in f]):.4f}",
                "reference test loss / acc": f"{np.mean([r['test_loss'] for r in ref]):.4f} / "
                f"{np.mean([r['test_acc'] for r in ref]):.4f}",
            }
        )
        print(rows[-1], flush=True)
    if args.quick and args.name == NAME:
        return
    notes = build_notes(args, runs, rows, total) + ("\n\n" + args.extra_notes).rstrip()
    write_results(args.name, rows, list(rows[0]), notes)
    payload = json.loads((RESULTS / f"{args.name}.json").read_text())
    payload.update(
        {
            "runs": runs,
            "total_wall_s": total,
            "reference": list(REFERENCE),
            "fairest_machine": machine(),
        }
    )
    (RESULTS / f"{args.name}.json").write_text(json.dumps(payload, indent=2, default=float))
    print((RESULTS / f"{args.name}.md").read_text())


def build_notes(args, runs, rows, total) -> str:
    loads = [r["loadavg"][0] for r in runs if r["side"] == "fairest"]
    loads += [r["loadavg_reference"][0][0] for r in runs if r["side"] != "fairest"]
    goal, sat = [], []
    for method in args.methods:
        f = [r for r in runs if r["method"] == method and r["side"] == "fairest"]
        ref = [r for r in runs if r["method"] == method and r["side"] != "fairest"]
        ratio = np.mean([rr["s_per_epoch"] / ff["s_per_epoch"] for ff, rr in zip(f, ref)])
        goal.append(f"{method}: {ratio:.1f}× ({'met' if ratio >= 5 else 'MISSED'})")
        fv = np.mean([r["train_violation"] for r in f])
        rv = np.mean([r["train_violation"] for r in ref])
        nf = sum(r["train_violation"] <= 1e-3 for r in f)
        nr = sum(r["train_violation"] <= 1e-3 for r in ref)
        sat.append(
            f"{method}: mean train violation fairest {fv:+.4f} vs reference {rv:+.4f}, "
            f"feasible runs {nf}/{len(f)} vs {nr}/{len(ref)} "
            f"({'fairest not worse' if fv <= rv + 1e-3 else 'fairest WORSE'})"
        )
    return "\n\n".join(
        [
            "fairest LossGapConstrainedClassifier vs humancompatible-train 0.4.2 (torch "
            f"2.13.0 CPU) on ACSIncome 2018 OK (14,333 train rows, white vs non-white), MLP "
            f"9-64-32-1, delta = {DELTA}, constraint draws of {CONSTRAINT_BATCH} rows per group, "
            f"{args.epochs} epochs per run, seeds {args.seeds}; both sides interleaved in one run. "
            "See the module docstring for the exact settings of each side.",
            "s/epoch: fairest = whole warm fit / epochs (compilation excluded by a warm-up fit, "
            "input validation and final statistics included); reference = mean epoch wall time "
            f"with torch thread count(s) {args.reference_threads} (0 = torch default; the fastest "
            "counts). During development torch's default (2 threads) was far slower on this "
            "oversubscribed machine (a 1-epoch SSL-ALM smoke run took about 3 min), so this run "
            "times the reference with one thread, its best case here. Train violation = "
            "fairest.metrics.loss_gap(|L_white - L_nonwhite|) on the full train split minus "
            "delta (feasible if <= 1e-3, fairest's feasibility tolerance), both models scored "
            "by the same code.",
            "Goal >= 5× faster: " + "; ".join(goal) + ".",
            f"Constraint satisfaction after {args.epochs} epochs (same fairest metric on both "
            "models): " + "; ".join(sat) + ".",
            "The algorithms are not identical: the reference 0.4.x SSL-ALM uses one constraint "
            "draw per iteration (Jacobian and penalty on the same draw), no slack variables, and "
            "projected inequality multipliers; fairest follows the paper (two independent draws, "
            "slacks, reset safeguard, final full-batch step), so fairest does MORE work per "
            "iteration. The reference SSG keeps a fixed tolerance and takes the constraint step "
            "on the same draw that triggered it; fairest's SSw uses a second draw and the "
            "paper's tolerance decay.",
            f"Load average (1 min) at the timings: min {min(loads):.1f}, max {max(loads):.1f} "
            f"on a {os.cpu_count()}-core machine shared with other jobs; total wall time "
            f"{total / 60:.1f} min.",
        ]
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--reference-runner":
        reference_runner(sys.argv[2:])
    else:
        main()
