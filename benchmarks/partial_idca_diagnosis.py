"""Why IDCA lagged the baselines on law school: convergence traces, the start point, and
SSG against an exact solve of the same convex subproblem.

Three parts, on the law school split of ``partial_frontier.py`` (seed 0, interval
[70 %, 100 %), model (1, x, gamma, gamma x)):

* ``trace``: IDCA from the paper's start ``h = 0`` (``init="zero"``) and from the best
  constant model (``init="intercept"``), for pSP (kappa = 0.1) and pDP (kappa = 0.06),
  under three schedules: the earlier reduced frontier (K = 200, T = 100, eps = 1e-3), the
  paper's budget (K = 400, T = 200, eps = 1e-3) and the one now used by the frontier
  (K = 100, T = 200, eps = 5e-3). Objective, max surrogate violation and training accuracy
  along the outer iterations; test accuracy and fairness of the final iterate.
* ``pdp_trap``: at the pDP stall from ``h = 0``, every group's surrogate positive rate
  (against alpha = 0.7) and how much SSG with 10x / 100x more iterations still gains.
* ``subproblem``: on a 300-sample training subset (Clarabel does not converge on the
  2000-sample subproblems: InsufficientProgress), the convex subproblem (31) at IDCA
  anchors solved by SSG (T = 200 .. 10,000) and by cvxpy + Clarabel (tolerance 1e-8,
  loosened to 1e-7 / 1e-6 where it stalls).

Usage::

    python benchmarks/partial_idca_diagnosis.py [--parts trace pdp_trap subproblem]

Rows of the parts not rerun are kept from the previous results file. Writes
``benchmarks/results/partial_idca_diagnosis.{json,md}``; skips cleanly when the law school
files are absent from ``../shared/datasets``.
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

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_results
from partial_frontier import SHARED, load_split, score
from partial_speed import clarabel_subproblem

from fairest.partial import PartialParityClassifier
from fairest.partial._dc import anchor, evaluate
from fairest.partial._idca import run_idca
from fairest.partial._ssg import ssg

INTERVAL = (0.7, 1.0)
SCHEDULES = {
    "reduced (old frontier)": (200, 100, 1e-3),
    "paper budget": (400, 200, 1e-3),
    "frontier now": (100, 200, 5e-3),
}
RESULTS_JSON = Path(__file__).resolve().parent / "results" / "partial_idca_diagnosis.json"
SNAPSHOTS = (0, 1, 10, 50, 100, 200, 400)
_ssg = jax.jit(ssg, static_argnames="cfg")
_anchor = jax.jit(anchor, static_argnames="cfg")


def problem(kind, kappa, init, X, y, g):
    """(cfg, data, x0) exactly as ``PartialParityClassifier.fit`` builds them."""
    clf = PartialParityClassifier(
        f"partial_{kind}_parity", interval=INTERVAL, tolerance=kappa, init=init
    )
    codes = (g - 1).astype(np.int32)
    return clf._problem(X, y.astype(float), codes, np.ones(len(y)), 2, INTERVAL)


def linear_scores(x, X):
    d = X.shape[1]
    return X @ np.asarray(x)[1 : 1 + d] + float(x[0])


def trace(split, rows):
    (Xtr, ytr, gtr), _, (Xte, yte, gte) = split
    for kind, kappa in (("statistical", 0.1), ("demographic", 0.06)):
        for init in ("zero", "intercept"):
            for label, (K, T, eps) in SCHEDULES.items():
                with jax.enable_x64(True):
                    cfg, data, x0 = problem(kind, kappa, init, Xtr, ytr, gtr)
                    start = time.perf_counter()
                    result = run_idca(jnp.asarray(x0), data, cfg, eps, T, K)
                    jax.block_until_ready(result.x)
                    seconds = time.perf_counter() - start
                    params = np.asarray(result.iterates)
                    f0, viol = np.asarray(result.objective), np.asarray(result.max_violation)
                test = score(linear_scores(params[-1], Xte), yte, gte, INTERVAL)
                for k in (k for k in SNAPSHOTS if k <= K):
                    rows.append(
                        {
                            "part": "trace",
                            "constraint": kind,
                            "kappa": kappa,
                            "init": init,
                            "schedule": f"{label}: K={K} T={T} eps={eps:g}",
                            "k": k,
                            "objective": float(f0[k]),
                            "max_violation": float(viol[k]),
                            "train_accuracy": float(
                                np.mean((linear_scores(params[k], Xtr) > 0) == ytr)
                            ),
                            "test_accuracy": test["accuracy"] if k == K else "",
                            "test_fair_psp": test["fair_psp"] if k == K else "",
                            "test_fair_pdp": test["fair_pdp"] if k == K else "",
                            "seconds": seconds if k == K else "",
                            "load1": os.getloadavg()[0],
                        }
                    )
                print(rows[-1], flush=True)


def pdp_trap(split, rows):
    (Xtr, ytr, gtr), _, _ = split
    eps = 1e-3
    with jax.enable_x64(True):
        cfg, data, x0 = problem("demographic", 0.06, "zero", Xtr, ytr, gtr)
        xk = run_idca(jnp.asarray(x0), data, cfg, eps, 200, 100).x
        anc = _anchor(xk, data, cfg)
        s = linear_scores(xk, Xtr)
        rates = [float(np.clip(s[gtr == k] + 0.5, 0, 1).mean()) for k in (1, 2)]
        for T in (200, 2000, 20000):
            out = _ssg(xk, anc, data, cfg, eps, T)
            rows.append(
                {
                    "part": "pdp_trap",
                    "constraint": "demographic",
                    "kappa": 0.06,
                    "init": "zero",
                    "schedule": f"anchor k=100 (K=100 T=200 eps={eps:g}); SSG T={T}",
                    "k": 100,
                    "objective": float(anc.f0),
                    "max_violation": float(anc.fmax),
                    "ssg_decrease": float(out.g0) - float(anc.f0),
                    "rate_white": rates[0],
                    "rate_nonwhite": rates[1],
                    "alpha": INTERVAL[0],
                }
            )
            print(rows[-1], flush=True)


def subproblem(split, rows, n=300):
    (Xtr, ytr, gtr), _, _ = split
    X, y, g = Xtr[:n], ytr[:n], gtr[:n]
    codes = (g - 1).astype(np.int32)
    eps = 1e-3
    for K in (0, 10, 50):
        with jax.enable_x64(True):
            cfg, data, x0 = problem("statistical", 0.1, "zero", X, y, g)
            xk = run_idca(jnp.asarray(x0), data, cfg, eps, 200, K).x if K else jnp.asarray(x0)
            anc = _anchor(xk, data, cfg)
            results = {}
            for T in (200, 1000, 10000):
                out = _ssg(xk, anc, data, cfg, eps, T)
                results[f"SSG T={T}"] = (float(out.g0), float(out.gmax), "")
            for tol in (1e-8, 1e-7, 1e-6):  # Clarabel stalls (InsufficientProgress) at some
                point, status, _, _ = clarabel_subproblem(  # anchors: loosen and retry
                    np.asarray(xk),
                    X,
                    y.astype(float),
                    codes,
                    np.asarray(data.grid),
                    float(data.slack),
                    tol,
                    300,
                )
                if point is not None:
                    break
            if point is None:
                results["Clarabel"] = (np.nan, np.nan, status)
            else:
                ev = evaluate(jnp.asarray(point), anc, data, cfg)
                results[f"Clarabel tol={tol:g}"] = (float(ev.g0), float(jnp.max(ev.gcon)), status)
        for solver, (g0, gmax, status) in results.items():
            rows.append(
                {
                    "part": "subproblem",
                    "constraint": "statistical",
                    "kappa": 0.1,
                    "init": "zero",
                    "schedule": f"n={n}, anchor after K={K} (T=200, eps={eps:g}); {solver}",
                    "k": K,
                    "objective": float(anc.f0),
                    "subproblem_g0": g0,
                    "subproblem_max_gi": gmax,
                    "status": status,
                }
            )
            print(rows[-1], flush=True)


NOTES = (
    "Law school, seed 0 of partial_frontier.py (n_train = 2000, interval [70 %, 100 %)). "
    "trace: IDCA objective / max surrogate violation / training accuracy at outer iteration "
    "k; test metrics of the final iterate (k = K). pdp_trap: surrogate positive rates of "
    "both groups at the pDP stall from h = 0 and the further decrease SSG finds with more "
    "iterations. subproblem: g_0 of the convex subproblem (31) at an IDCA anchor (300 "
    "training samples), SSG vs cvxpy + Clarabel (Clarabel fails with InsufficientProgress "
    "on the 2000-sample subproblems)."
)
COLUMNS = [
    "part",
    "constraint",
    "kappa",
    "init",
    "schedule",
    "k",
    "objective",
    "max_violation",
    "train_accuracy",
    "test_accuracy",
    "test_fair_psp",
    "test_fair_pdp",
    "ssg_decrease",
    "rate_white",
    "rate_nonwhite",
    "subproblem_g0",
    "subproblem_max_gi",
    "status",
]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", nargs="+", default=["trace", "pdp_trap", "subproblem"])
    args = parser.parse_args(argv)
    if not (SHARED / "law").exists():
        print(f"skipping: {SHARED / 'law'} not found")
        return 0
    from fairest.datasets import seed_data_home

    previous = RESULTS_JSON.exists() and json.loads(RESULTS_JSON.read_text())["rows"]
    rows = [row for row in previous or [] if row["part"] not in args.parts]
    with tempfile.TemporaryDirectory() as home:
        seed_data_home(SHARED, home, datasets=["law_school"], verify=False)
        split = load_split("law", 0, home, 2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for part in args.parts:
            {"trace": trace, "pdp_trap": pdp_trap, "subproblem": subproblem}[part](split, rows)
            table = [{c: row.get(c, "") for c in COLUMNS} for row in rows]
            write_results("partial_idca_diagnosis", table, COLUMNS, NOTES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
