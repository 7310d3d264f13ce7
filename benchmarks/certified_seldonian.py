"""fairest.certified beside seldonian-engine 0.8.x and fair-seldonian 3.1: the Science
paper's protocol on Adult.

Thomas et al. (Science 2019), figure 3: the x axis is the amount of training data; for each
amount, several runs report the probability of no solution found (NSF), the probability
that a returned model violates the constraint on held-out data, its accuracy, and here the
seconds per run. Same data, constraint and splits as ``benchmarks/certified_adult.py``:
training subsets of the UCI Adult train file (run ``r`` draws its rows with
``default_rng(r)``), sex groups, demographic parity difference <= 0.05 at delta = 0.05,
judged on the UCI test file (16,281 rows). Every run's candidate / safety split is the
one ``CertifiedFairClassifier(random_state=r)`` makes (60 % of every sex-label stratum in
the safety part), computed here and handed to both libraries.

* **seldonian-engine** (the released quasi-Seldonian algorithm of the paper's authors):
  binary logistic regression trained by KKT gradient descent on the Lagrangian of the
  loss and the constraint ``abs((PR | [M]) - (PR | [F])) - 0.05`` (``PR``: the mean
  predicted *probability* of a group, the only positive rate the engine bounds for a
  classifier), Student-t bounds (its default), candidate bound inflated as in the
  paper. It runs in its own venv through ``certified_seldonian_runner.py`` (a fresh
  process per run, data through an ``.npz`` file): it is never imported into fairest's
  environment, and none of its code is copied.
* **fair-seldonian 3.1** (``fair_seldonian.QSA``, its own venv ``/tmp/venv-fairsel``:
  torch from ``/tmp/venv-torch`` through a ``.pth`` file, the package and its other
  dependencies pip-installed) through ``certified_fairseldonian_runner.py``: its built-in
  ``demographic_parity(0.05)`` constraint (the gap of the groups' mean predicted
  probabilities), its Student-t inequality, ``seldonian_type="base"`` (Powell search
  from a scikit-learn logistic regression), on exactly the same split (candidate rows
  first, ``candidate_ratio`` set to the split's share).
* **fairest**: ``CertifiedFairClassifier(LogisticRegression, class_weight sweep)`` as in
  ``certified_adult.py``, with the Student-t bound (the engine's) and the exact
  Clopper-Pearson bound, on the hard-prediction demographic parity difference.

Test violations are reported on hard predictions (threshold 0.5: what a user deploys and
what fairlearn reports) and, for the engine, also on its own soft quantity (the gap of
mean predicted probabilities), which is what its certificate is about. Seconds per run:
the wall (and CPU) time of ``SeldonianAlgorithm(spec).run()`` / ``QSA(...)`` inside the
worker (interpreter start and imports excluded) and of ``CertifiedFairClassifier.fit``.

Threads: every side runs single-threaded (``SINGLE_THREAD_ENV``: ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` = 1 and ``XLA_FLAGS`` without the
multi-threaded Eigen, set before any worker starts and before JAX's backend starts;
``threadpoolctl`` limits fairest's BLAS to 1 thread too), so the ratios compare one core
with one core. Each row also records the median CPU seconds and the mean 1-minute load
average during its runs (the box is shared).

``--dataset acs_income`` runs the same protocol on the shared ACSIncome data of one state
(``--state``, default IL; ``certified_adult.load_acs``: sex groups, standardised features,
a 60 / 40 train / test split with ``random_state=0``): training subsets of the train part,
judged on the test part (``--name certified_seldonian_acs`` keeps the Adult results).

Usage: ``python benchmarks/certified_seldonian.py [--quick] [--runs 5] [--num-iters 1000]
[--methods seldonian-engine fair-seldonian fairest] [--dataset adult|acs_income]
[--state IL]``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _common import (
    RESULTS,
    adult_numeric,
    base_parser,
    markdown_table,
    run_worker,
    write_results,
)
from certified_adult import DELTA, ESTIMATORS, METRIC, TOLERANCE, load_acs, test_scores
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from fairest.certified import CertifiedFairClassifier
from fairest.certified._selection import stratified_safety_split

SELDONIAN_PYTHON = Path("/tmp/venv-seldonian/bin/python")
RUNNER = Path(__file__).resolve().parent / "certified_seldonian_runner.py"
FAIRSEL_PYTHON = Path("/tmp/venv-fairsel/bin/python")
FAIRSEL_RUNNER = Path(__file__).resolve().parent / "certified_fairseldonian_runner.py"
# method: (python of its venv, worker script, how to make the venv)
REFERENCES = {
    "seldonian-engine": (
        SELDONIAN_PYTHON,
        RUNNER,
        "python3.10 -m venv /tmp/venv-seldonian && "
        "/tmp/venv-seldonian/bin/pip install seldonian-engine==0.8.11 'numpy<2'",
    ),
    "fair-seldonian": (
        FAIRSEL_PYTHON,
        FAIRSEL_RUNNER,
        "python3.11 -m venv /tmp/venv-fairsel && echo /tmp/venv-torch/lib/python3.11/"
        "site-packages > /tmp/venv-fairsel/lib/python3.11/site-packages/torch.pth && "
        "/tmp/venv-fairsel/bin/pip install fair-seldonian==3.1.0",
    ),
}
SAFETY_FRACTION = 0.6
SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}


def load_data(dataset: str, state: str):
    """``(X_train, y_train, g_train, X_test, y_test, g_test)`` with sex groups and a short
    description of the data for the notes; exits cleanly when the shared data is absent."""
    if dataset == "adult":
        return adult_numeric("sex"), "judged on the UCI Adult test file"
    data = load_acs(state)
    if data is None:
        raise SystemExit("ACSIncome not found under ../shared/datasets/acs: skipped")
    description = (
        f"data: ACSIncome {state} (shared copy, sex groups, standardised, 60 / 40 train / "
        "test split with random_state=0), training subsets of the train part, judged on "
        f"the test part ({len(data[4])} rows)"
    )
    return data, description


def fairest_split(y, groups, run: int) -> np.ndarray:
    """The safety mask ``CertifiedFairClassifier(random_state=run)`` draws (strata: group
    code * 2 + label code, group and label codes in sorted order)."""
    _, group_codes = np.unique(groups, return_inverse=True)
    _, label_codes = np.unique(y, return_inverse=True)
    return stratified_safety_split(group_codes * 2 + label_codes, SAFETY_FRACTION, run)


def export_job(path: Path, X, y, groups, safety, num_iters: int) -> None:
    """The split as the engine's worker reads it: one-hot sex columns, labels 0/1."""
    names = np.unique(groups)
    onehot = (groups[:, None] == names[None, :]).astype(np.int64)
    y01 = (y == np.max(y)).astype(np.int64)
    left, right = (f"(PR | [{name}])" for name in names)
    np.savez(
        path,
        X_candidate=X[~safety],
        y_candidate=y01[~safety],
        s_candidate=onehot[~safety],
        X_safety=X[safety],
        y_safety=y01[safety],
        s_safety=onehot[safety],
        group_names=names.astype(str),
        constraint=f"abs({left} - {right}) - {TOLERANCE}",
        delta=DELTA,
        num_iters=num_iters,
    )


def seldonian_scores(theta, X_test, y_test, g_test):
    """Hard-prediction DP gap, soft (mean probability) gap and accuracy of the engine's
    logistic model ``sigmoid(theta[0] + X theta[1:])``."""
    theta = np.asarray(theta, dtype=np.float64).ravel()
    proba = 1.0 / (1.0 + np.exp(-(theta[0] + X_test @ theta[1:])))
    predicted = proba >= 0.5
    positive = y_test == np.max(y_test)
    names = np.unique(g_test)
    hard = [predicted[g_test == name].mean() for name in names]
    soft = [proba[g_test == name].mean() for name in names]
    return float(np.ptp(hard)), float(np.ptp(soft)), float(np.mean(predicted == positive))


def run_reference(
    method: str, data, n: int, run: int, num_iters: int, workdir: Path, timeout: float
) -> dict:
    """One run of a Seldonian library (``REFERENCES``) in its own venv, on the split
    ``CertifiedFairClassifier(random_state=run)`` makes."""
    python, runner, _ = REFERENCES[method]
    X_train, y_train, g_train, X_test, y_test, g_test = data
    rows = np.random.default_rng(run).choice(len(y_train), n, replace=False)
    X, y, g = X_train[rows], y_train[rows], g_train[rows]
    job = workdir / f"job_{n}_{run}.npz"
    export_job(job, X, y, g, fairest_split(y, g, run), num_iters)
    load = os.getloadavg()[0]
    result = run_worker(runner, [job], timeout=timeout, python=str(python))
    job.unlink()
    if "timeout_s" in result:
        return {"passed": False, "timeout": True, "seconds": result["timeout_s"], "load": load}
    result["load"] = load
    if result["passed"]:
        result["hard_gap"], result["soft_gap"], result["accuracy"] = seldonian_scores(
            result["theta"], X_test, y_test, g_test
        )
    return result


def run_fairest(data, n: int, run: int, bound: str) -> dict:
    X_train, y_train, g_train, X_test, y_test, g_test = data
    rows = np.random.default_rng(run).choice(len(y_train), n, replace=False)
    X, y, g = X_train[rows], y_train[rows], g_train[rows]
    estimator, grid = ESTIMATORS["logistic"]
    load = os.getloadavg()[0]
    start, cpu_start = time.perf_counter(), time.process_time()
    model = CertifiedFairClassifier(
        estimator,
        constraints=[(METRIC, TOLERANCE)],
        delta=DELTA,
        bound=bound,
        param_grid=grid,
        safety_fraction=SAFETY_FRACTION,
        random_state=run,
    ).fit(X, y, sensitive_features=g)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    # the split handed to the engine is the wrapper's own
    assert model.certificate_.n_certification == int(fairest_split(y, g, run).sum())
    result = {
        "passed": bool(model.certified_),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "load": load,
    }
    if model.certified_:
        result["hard_gap"], result["accuracy"] = test_scores(model, X_test, y_test, g_test)
    return result


def summarise(method: str, bound: str, fraction: float, n: int, results: list[dict]) -> dict:
    certified = [r for r in results if r["passed"]]
    hard = [r["hard_gap"] > TOLERANCE for r in certified]
    soft = [r["soft_gap"] > TOLERANCE for r in certified if "soft_gap" in r]
    return {
        "method": method,
        "bound": bound,
        "fraction": fraction,
        "n_train": n,
        "runs": len(results),
        "nsf_rate": 1.0 - len(certified) / len(results),
        "certified": len(certified),
        "test_violation_rate": float(np.mean(hard)) if hard else float("nan"),
        "test_violation_rate_soft": float(np.mean(soft)) if soft else float("nan"),
        "test_accuracy": float(np.mean([r["accuracy"] for r in certified]))
        if certified
        else float("nan"),
        "seconds_per_run": float(np.median([r["seconds"] for r in results])),
        "cpu_seconds_per_run": float(np.median([r.get("cpu_seconds", np.nan) for r in results])),
        "load1": float(np.mean([r.get("load", np.nan) for r in results])),
        "timeouts": sum(bool(r.get("timeout")) for r in results),
    }


def speed_rows(rows: list[dict]) -> list[dict]:
    """Per fraction and reference library: its seconds per run over fairest's (wall and
    CPU), beside the violation, NSF and accuracy of both."""
    out = []
    for fraction in sorted({row["fraction"] for row in rows}):
        at = {(r["method"], r["bound"]): r for r in rows if r["fraction"] == fraction}
        for method in REFERENCES:
            reference = at.get((method, "student-t"))
            for bound in ("student-t", "clopper-pearson"):
                ours = at.get(("fairest", bound))
                if reference and ours:
                    out.append(
                        {
                            "fraction": fraction,
                            "reference": method,
                            "fairest_bound": bound,
                            "speedup": reference["seconds_per_run"] / ours["seconds_per_run"],
                            "speedup_cpu": reference.get("cpu_seconds_per_run", np.nan)
                            / ours.get("cpu_seconds_per_run", np.nan),
                            "violation_fairest": ours["test_violation_rate"],
                            "violation_reference": reference["test_violation_rate"],
                            "nsf_fairest": ours["nsf_rate"],
                            "nsf_reference": reference["nsf_rate"],
                            "accuracy_fairest": ours["test_accuracy"],
                            "accuracy_reference": reference["test_accuracy"],
                        }
                    )
    return out


def main():
    parser = base_parser(__doc__, "certified_seldonian")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--num-iters", type=int, default=1000)
    parser.add_argument(
        "--fractions", type=float, nargs="+", default=[0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=[*REFERENCES, "fairest"],
        choices=[*REFERENCES, "fairest"],
    )
    parser.add_argument(
        "--timeout", type=float, default=3600, help="seconds per reference-library run"
    )
    parser.add_argument("--dataset", choices=["adult", "acs_income"], default="adult")
    parser.add_argument("--state", default="IL", help="ACSIncome state (--dataset acs_income)")
    parser.add_argument(
        "--append",
        action="store_true",
        help="merge into the existing results (rows of the same method, bound and fraction "
        "replaced), e.g. a long full-data run done separately",
    )
    args = parser.parse_args()
    os.environ.update(SINGLE_THREAD_ENV)  # inherited by the workers; before JAX starts
    warnings.simplefilter("ignore", ConvergenceWarning)
    threadpool_limits(1)
    for method in set(args.methods) & set(REFERENCES):
        python, _, recipe = REFERENCES[method]
        if not python.exists():
            raise SystemExit(f"{python} not found ({method}): {recipe}")
    runs = 1 if args.quick else args.runs
    fractions = (0.05,) if args.quick else tuple(args.fractions)
    data, args.data_description = load_data(args.dataset, args.state)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fairest_seldonian_") as workdir:
        for fraction in fractions:
            n = int(round(fraction * len(data[1])))
            for method in [m for m in REFERENCES if m in args.methods]:
                results = [
                    run_reference(method, data, n, run, args.num_iters, Path(workdir), args.timeout)
                    for run in range(runs)
                ]
                rows.append(summarise(method, "student-t", fraction, n, results))
                print(rows[-1], flush=True)
            for bound in ("student-t", "clopper-pearson") if "fairest" in args.methods else ():
                ours = [run_fairest(data, n, run, bound) for run in range(runs)]
                rows.append(summarise("fairest", bound, fraction, n, ours))
                print(rows[-1], flush=True)
            if not args.quick or args.name != "certified_seldonian":
                write(args, rows)  # after every fraction: a long run leaves usable results


def merged(name: str, rows: list[dict]) -> list[dict]:
    """The rows already in ``results/<name>.json`` that ``rows`` do not replace, plus rows."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return rows
    keys = {(r["method"], r["bound"], r["fraction"]) for r in rows}
    kept = [
        r
        for r in json.loads(path.read_text())["rows"]
        if (r["method"], r["bound"], r["fraction"]) not in keys
    ]
    order = {"seldonian-engine": 0, "fair-seldonian": 1, "fairest": 2}
    return sorted(kept + rows, key=lambda r: (r["fraction"], order[r["method"]], r["bound"]))


def write(args, rows: list[dict]) -> None:
    rows = merged(args.name, rows) if args.append else rows
    speed = speed_rows(rows)
    notes = (
        f"{METRIC} <= {TOLERANCE}, delta {DELTA}, safety_fraction {SAFETY_FRACTION}; the "
        "same candidate / safety split per run for every library (CertifiedFairClassifier's "
        f"stratified split); {args.data_description}. seldonian-engine 0.8.11 "
        f"(own venv, python 3.10, {args.num_iters} gradient-descent iterations, Student-t "
        "bound on the mean-probability gap (PR | [group]), its only positive rate for a "
        "classifier); fair-seldonian 3.1.0 (own venv, python 3.11, torch 2.13 CPU; QSA "
        "seldonian_type='base', Student-t inequality, its demographic_parity(0.05): the "
        "mean-probability gap, Powell search); fairest: CertifiedFairClassifier("
        "LogisticRegression, 10 class-weight candidates) on the hard-prediction gap. "
        "test_violation_rate: share of certified models whose TEST hard-prediction DP gap "
        "exceeds the tolerance; test_violation_rate_soft: the same for the soft gap (what "
        "the Seldonian libraries certify). seconds_per_run / cpu_seconds_per_run: median "
        "wall / CPU seconds of one run (SeldonianAlgorithm.run() or QSA() inside its worker, "
        "imports excluded; fairest: CertifiedFairClassifier.fit); load1: mean 1-minute load "
        "average at the start of the runs (2 cores shared by several users). Single thread "
        "on every side: OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1, XLA_FLAGS="
        "'--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1', threadpoolctl "
        "limit 1 in fairest's process." + (f" {args.extra_notes}" if args.extra_notes else "")
    )
    path = write_results(args.name, rows, list(rows[0]), notes=notes)
    if speed:  # the speed-up table: appended to the markdown, a key of the JSON
        with path.open("a") as handle:
            handle.write("\n## Speed-up (reference seconds per run / fairest seconds per run)\n\n")
            handle.write(markdown_table(speed, list(speed[0])) + "\n")
        payload_path = path.with_suffix(".json")
        payload = json.loads(payload_path.read_text())
        payload["speedup"] = speed
        payload_path.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
