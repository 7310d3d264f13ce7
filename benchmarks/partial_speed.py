"""IDCA (fairest, SSG or ALM inner solves) vs solving every convex IDCA subproblem with
cvxpy + Clarabel.

Problem: logistic regression under partial statistical parity, problem (15) of He, Huang,
Yao, Lin (2025), ramp surrogate, J = 10 levels, mu = 0. Both sides solve the SAME convex
subproblem (31) at the SAME linearisation points: the anchors ``x^(k)`` are the iterates
of one fairest IDCA run; at each anchor Clarabel solves the subproblem written directly
from the spec's formulas in cvxpy (vectorised: one ``pos`` block per group), while
fairest runs SSG and the ALM inner solver (``inner_solver="alm"``, both jitted) from the
same anchor. Every result is scored by fairest's subproblem oracle: ``g_0`` (the
subproblem objective) and ``max_i g_i`` (its worst constraint). The reference optimum of
an anchor is the lowest ``g_0`` among the points (of any solver) that satisfy every
constraint to 1e-7; on small problems that is Clarabel with tolerances 1e-8.

"Equal accuracy": Clarabel is run with tolerances 1e-3 (SSG's epsilon) and 1e-8, SSG
with T = 200 (the paper's setting) and with more steps, the ALM to convergence; the table
gives each solver's objective gap to the reference and its worst constraint, and the
summary compares the fastest fairest run within 1e-3 of the reference (and 1e-3-feasible)
with Clarabel at each tolerance.

Parts:

* ``adult``: a9a (LIBSVM Adult, ``../shared/datasets/libsvm``), features
  ``(x, gamma, gamma x)`` with gamma = 1 (female) / 2 (male), interval [5 %, 30 %),
  kappa = 0.1. IDCA fit time for K outer iterations vs K Clarabel subproblem solves.
* ``scale-n``: synthetic ``make_grouped_classification`` (d = 10, G = 2), n in
  {1e4, 1e5, 1e6}: IDCA time per outer iteration (T = 200), Clarabel per subproblem
  where it fits the time limit.
* ``scale-groups``: n = 1e4, G in {2, 4, 8}.

* ``defaults`` (issue 19 item 1): full Adult (bundled, one-hot, standardised; sex), pSP
  on the top 20 %, tolerance 0.05: ``PartialParityClassifier`` with its defaults
  (``solver="smooth_alm"``: Gauss-Newton rounds in one jitted loop), optionally
  ``solver="idca"`` (SSG, K = T = 200; ``--old-repeats 0``) and scikit-learn's
  ``LogisticRegression`` in one process: cold and warm fit seconds, objective, exact
  train / test pSP, test accuracy. Rows whose case starts with "before:" are stored
  figures of earlier code (SciPy L-BFGS-B rounds; the IDCA default).
* ``scale-smooth``: one Gauss-Newton step of the default solver (the unit of work of
  ``smooth_alm``) for n in ``--sizes``: linear in n.
* ``penalty`` (issue 19 item 1, the penalty baseline): full Adult as ``defaults``,
  ``PartialParityPenaltyClassifier(interval=(0, 0.2))`` with its defaults (L-BFGS on the
  smoothed objective); with ``--penalty-subgradient`` also the paper's subgradient
  descent (``tol=1e-4``, the previous default, and ``tol=0``: all 80,000 steps, minutes
  each): seconds, steps, loss, exact penalised objective, exact train / test pSP, test
  accuracy.

Rows of parts not run keep their stored values (the results are merged); in the
``defaults`` part only the cases run again are replaced.

Usage::

    python benchmarks/partial_speed.py --parts defaults scale-smooth [--repeats 3]
        [--old-repeats 0]
    python benchmarks/partial_speed.py --parts penalty [--repeats 3] [--penalty-subgradient]
    python benchmarks/partial_speed.py [--parts adult scale-n scale-groups]
        [--outer 20] [--alm-outer 5] [--anchors 2] [--clarabel-max-n 100000]
        [--time-limit 600]

Writes benchmarks/results/partial_speed.json and .md (updated after every case, so an
interrupted run leaves data). The machine is shared: every timing row records
``os.getloadavg()``; fairest and Clarabel are timed alternately on the same anchor.
"""

from __future__ import annotations

import argparse
import io
import lzma
import os
import sys
import time
import warnings
from pathlib import Path

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_results

from fairest.datasets import make_grouped_classification
from fairest.partial import PartialParityClassifier
from fairest.partial._alm import alm, dense_data
from fairest.partial._dc import anchor, evaluate
from fairest.partial._idca import run_idca
from fairest.partial._ssg import ssg

ROOT = Path(__file__).resolve().parents[1]
A9A = ROOT.parent / "shared" / "datasets" / "libsvm" / "a9a.xz"
EPS = 1e-3
INNER = 200
ALM_ITER = 400  # cap on the ALM iterations per subproblem (it stops at convergence)
INNER_ITER = {"ssg": INNER, "alm": ALM_ITER}  # per subproblem, by inner solver
FEASIBLE = 1e-7  # constraint level of the points that define the reference optimum
INTERVAL_ADULT = (0.05, 0.3)
INTERVAL_SYNTH = (0.0, 0.25)
KAPPA = 0.1

_anchor = jax.jit(anchor, static_argnames="cfg")
_ssg = jax.jit(ssg, static_argnames="cfg")
_alm = jax.jit(
    lambda v, anc, data, cfg, eps, T: alm(v, anc, data, cfg, eps, T)[0], static_argnames="cfg"
)


@jax.jit
def _noop(x):
    return x


def _evaluate(cfg):
    @jax.jit
    def fn(v, anc, data):
        ev = evaluate(v, anc, data, cfg)
        return ev.g0, jnp.max(ev.gcon)

    return fn


def load_a9a():
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(io.BytesIO(lzma.open(A9A).read()), n_features=123)
    X = X.toarray()
    gamma = np.where(X[:, 71] > 0, 1.0, 2.0)  # feature 72 of a9a: sex = Female
    F = np.hstack([X, gamma[:, None], gamma[:, None] * X])
    return F, (y > 0).astype(int), (gamma - 1).astype(np.int32)


def load_synthetic(n, G, seed=0):
    X, y, g = make_grouped_classification(n, 10, G, random_state=seed)
    return X, np.asarray(y).astype(int), np.asarray(g).astype(np.int32)


def build(X, y, codes, interval):
    G = int(codes.max()) + 1
    clf = PartialParityClassifier(interval=interval, tolerance=KAPPA)
    with jax.enable_x64(True):
        cfg, data, x0 = clf._problem(X, y.astype(float), codes, np.ones(len(y)), G, interval)
        return cfg, data, jnp.asarray(x0, dtype=jnp.float64)


def clarabel_subproblem(xk, X, y, codes, grid, slack, tol, time_limit):
    """Subproblem (31) of the ramp pSP problem at ``xk`` (mu = 0), from the spec's
    formulas (section 4.9), in cvxpy; returns (point, status, solve seconds, wall seconds)."""
    start = time.perf_counter()
    n, d = X.shape
    J = grid.size
    G = int(codes.max()) + 1
    b, w, theta = cp.Variable(), cp.Variable(d), cp.Variable(J)
    zeta = 2.0 * y - 1.0
    s = X @ w + b
    # sums instead of means (objective times n, group constraints times n_k): the same
    # problem, but Clarabel fails with InsufficientProgress on the mean form for n >= 2000
    objective = cp.sum(cp.logistic(-cp.multiply(zeta, s)))
    s_k = X @ xk[1 : 1 + d] + xk[0]
    theta_k = xk[1 + d :]
    constraints = []
    ones_J = np.ones((1, J))
    for k in range(G):
        idx = np.flatnonzero(codes == k)
        nk = idx.size
        Xk = X[idx]
        z = s_k[idx][:, None] - theta_k[None, :]  # (nk, J) at the anchor
        ind_A, ind_B = (z + 0.5 > 0).astype(float), (z - 0.5 > 0).astype(float)
        A_k, B_k = np.maximum(z + 0.5, 0).mean(0), np.maximum(z - 0.5, 0).mean(0)
        # linearisations: mean_i ind_ij (ds_i - dtheta_j)
        cA_w, cA_b = ind_A.T @ Xk / nk, ind_A.mean(0)
        cB_w, cB_b = ind_B.T @ Xk / nk, ind_B.mean(0)
        dw, db, dth = w - xk[1 : 1 + d], b - xk[0], theta - theta_k
        lin_A = cA_w @ dw + cA_b * db - cp.multiply(cA_b, dth)
        lin_B = cB_w @ dw + cB_b * db - cp.multiply(cB_b, dth)
        S = cp.reshape(Xk @ w + b, (nk, 1), order="C") @ ones_J - np.ones((nk, 1)) @ cp.reshape(
            theta, (1, J), order="C"
        )
        B_v = cp.sum(cp.pos(S - 0.5), axis=0) / nk
        A_v = cp.sum(cp.pos(S + 0.5), axis=0) / nk  # (multiplied back by nk below)
        constraints.append(nk * (B_v - A_k - lin_A + grid) <= 0)
        constraints.append(nk * (A_v - B_k - lin_B - grid - slack) <= 0)
    problem = cp.Problem(cp.Minimize(objective), constraints)
    try:
        problem.solve(
            solver=cp.CLARABEL,
            tol_gap_abs=tol,
            tol_gap_rel=tol,
            tol_feas=tol,
            time_limit=float(time_limit),
        )
    except cp.error.SolverError as error:  # time limit or numerical trouble
        return None, f"error: {error}"[:80], np.nan, time.perf_counter() - start
    wall = time.perf_counter() - start
    if w.value is None:
        return None, problem.status, np.nan, wall
    point = np.concatenate([[float(b.value)], np.asarray(w.value), np.asarray(theta.value)])
    return point, problem.status, float(problem.solver_stats.solve_time or np.nan), wall


def time_inner(solve, x, data, cfg, T, repeats=2):
    """Best time of anchor + inner solve (after one compile run); ``solve`` is ``_ssg``
    or ``_alm`` (then ``data`` must be dense)."""
    with jax.enable_x64(True):
        out = solve(x, _anchor(x, data, cfg), data, cfg, EPS, T)
        jax.block_until_ready(out)
        best = np.inf
        for _ in range(repeats):
            start = time.perf_counter()
            a = _anchor(x, data, cfg)
            out = solve(x, a, data, cfg, EPS, T)
            jax.block_until_ready(out)
            best = min(best, time.perf_counter() - start)
    return out, best


def timed_idca(x0, data, cfg, K, inner):
    """IDCA fit time after compilation (compiled by a run with one inner iteration: the
    inner count is traced)."""
    T = INNER_ITER[inner]
    with jax.enable_x64(True):
        jax.block_until_ready(run_idca(x0, data, cfg, EPS, 1, K, inner=inner).x)
        start = time.perf_counter()
        res = run_idca(x0, data, cfg, EPS, T, K, inner=inner)
        jax.block_until_ready(res.x)
        return res, time.perf_counter() - start


def compare_at_anchors(tag, X, y, codes, cfg, data, anchors, args, rows):
    """At each anchor: Clarabel tight / loose, SSG with T = 200, 1000, 4000, the ALM."""
    ev = _evaluate(cfg)
    grid, slack = np.asarray(data.grid), float(data.slack)
    with jax.enable_x64(True):
        dense = dense_data(data)
    for k, xk in anchors:
        with jax.enable_x64(True):
            anc = _anchor(xk, data, cfg)
        xk_np = np.asarray(xk)
        results = {}
        for T in (INNER, 5 * INNER, 20 * INNER):
            out, seconds = time_inner(_ssg, xk, data, cfg, T)
            results[f"SSG T={T}"] = (out.v, seconds, seconds, "done")
        out, seconds = time_inner(_alm, xk, dense, cfg, ALM_ITER)
        results["ALM"] = (out.v, seconds, seconds, f"done ({int(out.n_feasible)} iterations)")
        for label, tol in (("Clarabel tol=1e-3", EPS), ("Clarabel tol=1e-8", 1e-8)):
            point, status, solve, wall = clarabel_subproblem(
                xk_np, X, y, codes, grid, slack, tol, args.time_limit
            )
            results[label] = (point, wall, solve, status)
        with jax.enable_x64(True):
            scores = {
                label: (np.nan, np.nan)
                if item[0] is None
                else tuple(float(t) for t in ev(jnp.asarray(item[0]), anc, data))
                for label, item in results.items()
            }
        g_ref = min((g0 for g0, gmax in scores.values() if gmax <= FEASIBLE), default=np.nan)
        for label, (_point, wall, solve, status) in results.items():
            g0, gmax = scores[label]
            rows.append(
                {
                    "part": tag,
                    "n": int(len(y)),
                    "groups": int(codes.max()) + 1,
                    "anchor_k": int(k),
                    "solver": label,
                    "status": str(status),
                    "wall_s": float(wall),
                    "solver_s": float(solve),
                    "g0": g0,
                    "gap_to_best": g0 - g_ref,
                    "max_gi": gmax,
                    "load1": os.getloadavg()[0],
                }
            )
            print(rows[-1], flush=True)


def _fit_row(part, n, G, label, res, seconds):
    return {
        "part": part,
        "n": int(n),
        "groups": int(G),
        "anchor_k": -1,
        "solver": label,
        "status": "done",
        "wall_s": seconds,
        "solver_s": seconds,
        "g0": float(res.objective[-1]),
        "gap_to_best": np.nan,
        "max_gi": float(res.max_violation[-1]),
        "load1": os.getloadavg()[0],
    }


def adult(args, rows, extra):
    if not A9A.exists():
        print(f"skipping adult: {A9A} not found")
        return
    X, y, codes = load_a9a()
    cfg, data, x0 = build(X, y, codes, INTERVAL_ADULT)
    fits = {}
    for inner in ("ssg", "alm"):
        K = args.outer if inner == "ssg" else args.alm_outer
        res, fit = timed_idca(x0, data, cfg, K, inner)
        fits[inner] = res
        T = INNER_ITER[inner]
        extra[f"adult_idca_{inner}"] = {
            "n": int(len(y)),
            "D": int(x0.size),
            "K": K,
            "T": T,
            "eps": EPS,
            "fit_s": fit,
            "per_outer_s": fit / K,
            "objective": [float(v) for v in np.asarray(res.objective)],
            "max_violation": [float(v) for v in np.asarray(res.max_violation)],
            "inner_iterations": [int(v) for v in np.asarray(res.n_feasible)],
            "load1": os.getloadavg()[0],
        }
        label = f"IDCA fit K={K}, {inner.upper()} T={T} (after compile)"
        rows.append(_fit_row("adult", len(y), 2, label, res, fit))
        print(rows[-1], flush=True)
    K = args.outer
    picks = [K // 2, 0, K - 1][: args.anchors]
    anchors = [(k, fits["ssg"].iterates[k]) for k in picks]
    compare_at_anchors("adult", X, y, codes, cfg, data, anchors, args, rows)


def scale(args, rows, extra, part):
    cases = (
        [(n, 2) for n in args.sizes]
        if part == "scale-n"
        else [(args.group_n, G) for G in args.group_counts]
    )
    for n, G in cases:
        X, y, codes = load_synthetic(n, G)
        cfg, data, x0 = build(X, y, codes, INTERVAL_SYNTH)
        K = 3
        fits = {}
        for inner in ("ssg", "alm"):
            res, seconds = timed_idca(x0, data, cfg, K, inner)
            fits[inner] = res
            label = f"IDCA per outer iteration ({inner.upper()} T={INNER_ITER[inner]})"
            rows.append(_fit_row(part, n, G, label, res, seconds / K))
            print(rows[-1], flush=True)
        if n <= args.clarabel_max_n:
            compare_at_anchors(
                part, X, y, codes, cfg, data, [(1, fits["ssg"].iterates[1])], args, rows
            )


COLUMNS = [
    "part",
    "n",
    "groups",
    "anchor_k",
    "solver",
    "status",
    "wall_s",
    "solver_s",
    "g0",
    "gap_to_best",
    "max_gi",
    "load1",
]


def _matched(sel):
    """The fastest fairest run within EPS of the reference optimum and EPS-feasible."""
    ok = [
        r
        for r in sel
        if r["solver"].startswith(("SSG", "ALM")) and r["gap_to_best"] <= EPS and r["max_gi"] <= EPS
    ]
    return min(ok, key=lambda r: r["wall_s"]) if ok else None


def summary_notes(rows, extra, args):
    lines = [
        "IDCA (fairest, jitted, float64; SSG or the ALM inner solver) vs cvxpy+Clarabel on the "
        "same convex subproblems (31) of the ramp pSP problem (15), same anchors, all scored "
        "by fairest's subproblem oracle (g0 = subproblem objective, max_gi = worst subproblem "
        f"constraint; SSG's epsilon = {EPS}). gap_to_best = g0 minus the lowest g0 among this "
        f"anchor's points (any solver) with max_gi <= {FEASIBLE}. Clarabel wall_s includes "
        "cvxpy's canonicalisation; solver_s is Clarabel's own time; a Clarabel status other "
        "than optimal means it stopped at its time limit, so a ratio against it is a lower "
        "bound. fairest rows include the anchor computation and exclude the one-off compile.",
        f"Settings: {vars(args)}. Shared 2-core machine, load average in load1 (fairest and "
        "Clarabel run one after the other at each anchor).",
    ]
    keys = sorted(
        {(r["part"], r["n"], r["groups"], r["anchor_k"]) for r in rows if r["anchor_k"] >= 0}
    )
    for key in keys:
        sel = [r for r in rows if (r["part"], r["n"], r["groups"], r["anchor_k"]) == key]
        head = f"- {key[0]} n={key[1]} G={key[2]} anchor k={key[3]}: "
        fast = _matched(sel)
        if fast is None:
            lines.append(head + "no fairest run within the matched accuracy.")
            continue
        parts = []
        for cl in (r for r in sel if r["solver"].startswith("Clarabel")):
            bound = "" if cl["status"].startswith("optimal") else ">= "
            parts.append(
                f"{cl['solver']} {cl['wall_s']:.1f} s (gap {cl['gap_to_best']:+.1e}, "
                f"max_gi {cl['max_gi']:.1e}, {cl['status']}): "
                f"{bound}{cl['wall_s'] / fast['wall_s']:.0f}x"
            )
        lines.append(
            head + f"fastest matched fairest run {fast['solver']} {fast['wall_s']:.2f} s "
            f"(gap {fast['gap_to_best']:+.1e}, max_gi {fast['max_gi']:.1e}) vs "
            + "; ".join(parts)
            + "."
        )
        alm_row = next((r for r in sel if r["solver"] == "ALM"), None)
        if alm_row is not None:
            ratios = [
                f"{cl['solver']} {'' if cl['status'].startswith('optimal') else '>= '}"
                f"{cl['wall_s'] / alm_row['wall_s']:.0f}x"
                for cl in sel
                if cl["solver"].startswith("Clarabel")
            ]
            lines.append(
                f"  ALM {alm_row['wall_s']:.2f} s, {alm_row['status']} (gap "
                f"{alm_row['gap_to_best']:+.1e}, max_gi {alm_row['max_gi']:.1e}): "
                + ", ".join(ratios)
            )
        ssg_best = min(
            (r for r in sel if r["solver"].startswith("SSG")), key=lambda r: r["gap_to_best"]
        )
        lines.append(
            f"  (best SSG run: {ssg_best['solver']}, gap {ssg_best['gap_to_best']:.2g} "
            f"in {ssg_best['wall_s']:.1f} s)"
        )
    for inner in ("ssg", "alm"):
        a = extra.get(f"adult_idca_{inner}")
        if a:
            lines.append(
                f"- Adult IDCA fit, {inner.upper()}: K={a['K']} x T={a['T']} in "
                f"{a['fit_s']:.1f} s ({a['per_outer_s']:.2f} s per outer iteration, "
                f"final objective {a['objective'][-1]:.4f}, load {a['load1']:.1f})."
            )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# defaults: the new default (solver="smooth_alm") vs the old one (IDCA + SSG) vs sklearn
# --------------------------------------------------------------------------------------

DEFAULT_COLUMNS = [
    "part",
    "case",
    "n",
    "cold_s",
    "warm_s",
    "cpu_warm_s",
    "n_iter",
    "solves",
    "first_objective",
    "objective",
    "penalised_objective",
    "train_unfairness",
    "test_unfairness",
    "test_accuracy",
    "load1",
]
TOP = (0.0, 0.2)
DEFAULT_KAPPA = 0.05
NEW_DEFAULT = "default: smooth_alm, Gauss-Newton rounds in one jitted while_loop (float32)"


def _adult_split():
    from _common import adult_numeric

    return adult_numeric("sex")


def _partial_case(label, estimator, data, repeats):
    from _common import time_calls
    from sklearn.base import clone

    from fairest.metrics import partial_statistical_parity

    X, y, A, X_te, y_te, A_te = data
    fitted = []

    def fit():
        model = clone(estimator).fit(X, y, sensitive_features=A)
        fitted.append(model)
        return model

    timing = time_calls(fit, repeats=repeats) if repeats else None
    if timing is None:
        from _common import measure

        first = measure(fit)
    model = fitted[-1]
    scores = model.decision_function(X_te)
    return {
        "part": "defaults",
        "case": label,
        "n": len(y),
        "cold_s": timing.cold_s if timing else first.wall_s,
        "warm_s": timing.warm_s if timing else np.nan,
        "cpu_warm_s": timing.cpu_warm_s if timing else first.cpu_s,
        "n_iter": int(model.n_iter_),
        "solves": int(model.tightening_["objective"].size),
        "first_objective": float(model.tightening_["objective"][0]),
        "objective": float(model.objective_),
        "train_unfairness": float(model.train_unfairness_),
        "test_unfairness": float(
            partial_statistical_parity(None, scores, sensitive_features=A_te, interval=TOP)
        ),
        "test_accuracy": float(model.score(X_te, y_te)),
        "load1": timing.load if timing else first.load,
    }


def defaults(args, rows, extra):
    """Full Adult (one-hot, standardised; sex), pSP on the top 20 %, tolerance 0.05:
    ``PartialParityClassifier`` with the new defaults and with the old ones (IDCA + SSG,
    K = T = 200), and scikit-learn's ``LogisticRegression``, in one process, one after
    the other: cold (first fit, compilation included) and warm (median of the next)."""
    from _common import time_calls
    from sklearn.linear_model import LogisticRegression

    from fairest.metrics import partial_statistical_parity

    data = _adult_split()
    X, y, A, X_te, y_te, A_te = data
    new = PartialParityClassifier(interval=TOP, tolerance=DEFAULT_KAPPA)
    rows.append(_partial_case(NEW_DEFAULT, new, data, args.repeats))
    if args.old_repeats >= 0:
        old = PartialParityClassifier(interval=TOP, tolerance=DEFAULT_KAPPA, solver="idca")
        rows.append(_partial_case("solver='idca' (IDCA + SSG)", old, data, args.old_repeats))
    lr = LogisticRegression(max_iter=1000)
    timing = time_calls(lambda: lr.fit(X, y), repeats=max(args.repeats, 1))
    p = lr.predict_proba(X)[:, 1]
    loss = float(-np.mean(np.where(y == lr.classes_[1], np.log(p), np.log1p(-p))))
    rows.append(
        {
            "part": "defaults",
            "case": "sklearn LogisticRegression (unconstrained)",
            "n": len(y),
            "cold_s": timing.cold_s,
            "warm_s": timing.warm_s,
            "cpu_warm_s": timing.cpu_warm_s,
            "objective": loss,
            "train_unfairness": float(
                partial_statistical_parity(
                    None, lr.decision_function(X), sensitive_features=A, interval=TOP
                )
            ),
            "test_unfairness": float(
                partial_statistical_parity(
                    None, lr.decision_function(X_te), sensitive_features=A_te, interval=TOP
                )
            ),
            "test_accuracy": float(lr.score(X_te, y_te)),
            "load1": timing.load,
        }
    )


def penalty(args, rows, extra):
    """Full Adult, ``PartialParityPenaltyClassifier`` on the top 20 %: the default
    ``solver="lbfgs"`` (smoothed continuation), and with ``--penalty-subgradient`` the
    paper's subgradient descent at ``tol=1e-4`` (the previous default) and ``tol=0`` (all
    80,000 steps)."""
    from _common import measure, time_calls

    from fairest.metrics import partial_statistical_parity
    from fairest.partial import PartialParityPenaltyClassifier

    X, y, A, X_te, y_te, A_te = _adult_split()
    cases = [("default: solver='lbfgs' (smoothed L-BFGS continuation)", {})]
    if args.penalty_subgradient:
        cases += [
            (
                "subgradient: tol=1e-4 (the previous default)",
                {"solver": "subgradient", "tol": 1e-4},
            ),
            (
                "subgradient: tol=0 (all 80,000 steps, the paper's run)",
                {"solver": "subgradient", "tol": 0.0},
            ),
        ]
    for label, params in cases:
        fitted = []

        def fit(params=params, fitted=fitted):
            model = PartialParityPenaltyClassifier(interval=TOP, **params)
            fitted.append(model.fit(X, y, sensitive_features=A))
            return fitted[-1]

        repeats = 0 if params.get("tol") == 0 else args.repeats  # one 80,000-step run
        timing = time_calls(fit, repeats=repeats) if repeats else None
        first = None if timing else measure(fit)
        model = fitted[-1]

        def psp(X_, A_, model=model):
            scores = model.decision_function(X_)
            return float(
                partial_statistical_parity(None, scores, sensitive_features=A_, interval=TOP)
            )

        rows.append(
            {
                "part": "penalty",
                "case": label,
                "n": len(y),
                "cold_s": timing.cold_s if timing else first.wall_s,
                "warm_s": timing.warm_s if timing else np.nan,
                "cpu_warm_s": timing.cpu_warm_s if timing else first.cpu_s,
                "n_iter": int(model.n_iter_),
                "objective": float(model.objective_),
                "penalised_objective": float(
                    model.objective_ + model.fairness_weight * model.penalty_
                ),
                "train_unfairness": psp(X, A),
                "test_unfairness": psp(X_te, A_te),
                "test_accuracy": float(model.score(X_te, y_te)),
                "load1": timing.load if timing else first.load,
            }
        )
        _write_merged(args, rows, extra)


def scale_smooth(args, rows, extra):
    """Time of one damped Gauss-Newton step of the default solver (the unit of work of
    solver="smooth_alm": value, gradient and Gauss-Newton matrix of the smoothed
    augmented Lagrangian in ``SOLVER_DTYPE``, plus one loss Hessian, refreshed every
    ``_REFRESH`` steps) for n in ``--sizes`` (synthetic, d = 10, G = 2)."""
    from _common import time_calls

    from fairest.partial import _fast

    for n in args.sizes:
        X, y, codes = load_synthetic(n, 2)
        cfg, data, x0 = build(X, y, codes, INTERVAL_SYNTH)
        with jax.enable_x64(True):
            data = _fast.solver_data(data)
            x = jnp.asarray(x0, _fast.SOLVER_DTYPE)
            lam = jnp.zeros(_fast.num_constraints(cfg), x.dtype)
            rho, delta = jnp.asarray(10.0, x.dtype), jnp.asarray(0.01, x.dtype)

            blocks = _fast.block_rows(data.X)

            def one_step(x, lam, rho, delta, data, cfg=cfg, blocks=blocks):
                hessian = _fast._loss_hessian(x, data, cfg, blocks)
                return _fast._evaluate(x, lam, rho, delta, hessian, data, cfg, blocks)

            step = jax.jit(one_step, static_argnames=("cfg", "blocks"))
            timing = time_calls(
                lambda: jax.block_until_ready(step(x, lam, rho, delta, data)),  # noqa: B023
                repeats=5,
            )
        rows.append(
            {
                "part": "scale-smooth",
                "case": "Gauss-Newton step (value, gradient, GN matrix, loss Hessian), float32",
                "n": n,
                "cold_s": timing.cold_s,
                "warm_s": timing.warm_s,
                "cpu_warm_s": timing.cpu_warm_s,
                "load1": timing.load,
            }
        )


def _kept(row, parts, rerun) -> bool:
    """A stored row stays unless its part was run; of the defaults part, only the cases
    run again are replaced (a skipped case keeps its stored figures)."""
    if row.get("part") in ("defaults", "penalty"):
        return (row.get("part"), row.get("case")) not in rerun
    return row.get("part") not in parts


def _write_merged(args, rows, extra):
    """Rows of the parts run now, plus the stored rows of the other parts; the defaults
    and scale-smooth rows get their own table above the subproblem table."""
    import json

    path = Path(__file__).resolve().parent / "results" / f"{args.name}.json"
    old_rows, old_extra = [], {}
    if path.exists():
        payload = json.loads(path.read_text())
        rerun = {(r.get("part"), r.get("case")) for r in rows}
        old_rows = [r for r in payload["rows"] if _kept(r, args.parts, rerun)]
        old_extra = payload.get("extra", {})
    merged = old_rows + rows
    new_parts = ("defaults", "scale-smooth", "penalty")
    solver_rows = [r for r in merged if r.get("part") not in new_parts]
    top_rows = [r for r in merged if r.get("part") in new_parts]
    notes = (
        "## Defaults (issue 19 item 1)\n\n"
        + DEFAULTS_NOTES
        + "\n\n"
        + _markdown_table(top_rows, DEFAULT_COLUMNS)
        + "\n\n## IDCA subproblems vs cvxpy + Clarabel\n\n"
        + summary_notes(solver_rows, {**old_extra, **extra}, args)
    )
    write_results(args.name, merged, COLUMNS, notes)
    payload = json.loads(path.read_text())
    payload["extra"] = {**old_extra, **extra}
    path.write_text(json.dumps(payload, indent=2))
    # the markdown: the subproblem table keeps its own columns and rows
    from _common import machine, markdown_table

    path.with_suffix(".md").write_text(
        f"# {args.name}\n\n{notes}\n\nMachine: {machine()}\n\n"
        + markdown_table(solver_rows, COLUMNS)
        + "\n"
    )


DEFAULTS_NOTES = (
    "Full Adult (fairest.datasets Adult train / test, one-hot and standardised on train, "
    "sex), pSP on the top 20 % (interval (0, 0.2)), tolerance 0.05, every other parameter "
    "at its default. cold_s: first fit in the process (compilation included); warm_s: "
    "median of the next fits (n/a: one fit only); cpu_warm_s: CPU seconds of a warm fit "
    "(the box is shared; its load is load1). first_objective: f_0 of the first surrogate "
    "solve (internal tolerance 0.05, the paper's problem); objective / train_unfairness: "
    "the returned model (after tightening rounds); test_unfairness: exact pSP on the test "
    "set's own bands."
)


def _markdown_table(rows, columns):
    from _common import markdown_table

    return markdown_table(rows, columns)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", nargs="+", default=["adult", "scale-n", "scale-groups"])
    parser.add_argument("--outer", type=int, default=20)
    parser.add_argument("--anchors", type=int, default=1)
    parser.add_argument(
        "--alm-outer",
        type=int,
        default=5,
        help="outer iterations of the timed Adult IDCA fit with the ALM",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--group-n", type=int, default=10_000)
    parser.add_argument("--group-counts", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--clarabel-max-n", type=int, default=10_000)
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--name", default="partial_speed")
    parser.add_argument(
        "--penalty-subgradient", action="store_true", help="penalty part: subgradient rows too"
    )
    parser.add_argument("--repeats", type=int, default=2, help="warm fits (defaults part)")
    parser.add_argument(
        "--old-repeats",
        type=int,
        default=-1,
        help="warm fits of solver='idca' (0: one cold fit, ~830 s; -1: skip it)",
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    rows, extra = [], {}
    for part in args.parts:
        if part == "adult":
            adult(args, rows, extra)
        elif part == "defaults":
            defaults(args, rows, extra)
        elif part == "scale-smooth":
            scale_smooth(args, rows, extra)
        elif part == "penalty":
            penalty(args, rows, extra)
        else:
            scale(args, rows, extra, part)
        _write_merged(args, rows, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
