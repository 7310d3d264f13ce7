"""Speed table: fairest's ERM and BADR against scikit-learn's LogisticRegression.

One fresh worker process per (method, n, d) (:func:`_common.run_worker`) fits the same
synthetic problem: Gaussian features, a noisy linear label, 4 groups, L2 logistic loss
with ``alpha = 1e-3`` and uniform group weights (each group's mean loss weighted 1/4).

- ``sklearn``: ``LogisticRegression(C=1/alpha)`` (lbfgs, tol 1e-4) with the sample
  weights ``c_i = (1/4) / n_g`` (sum one): the same objective as fairest's ERM.
- ``erm``: ``GroupWeightedClassifier(weights="uniform")`` (default tol 1e-10), and
  ``erm tol=1e-4`` at scikit-learn's tolerance (both stop on the gradient's inf-norm).
- ``badr``: ``BADRClassifier(metric="demographic_parity")`` (SLSQP, safeguard on).

Columns: ``cold (s)`` is the first fit in a fresh process including the imports of the
estimator's library (data generation excluded); ``warm (s)`` the median of the later fits;
``ratio`` = scikit-learn / method (> 1: faster than scikit-learn); ``peak above input
(MiB)`` the process's peak RSS minus its RSS once the data exists (input MiB: X, float64);
``compiled`` the XLA executables compiled by the first fit (``warm compiled``: by the
later ones); ``objective`` the ERM objective of the fitted model (BADR: the train
demographic-parity gap), ``rel. gap`` its relative distance to the best ERM objective of
the row's (n, d).

Run: ``nice -n 10 python benchmarks/speed_table.py`` (small and medium n),
``--large`` adds n = 1e6 (d = 20 and 100; about 5 GB of memory at d = 100),
``--sizes 1e4x500,...`` picks the cases (``--append`` keeps the other sizes' rows of
the results file); ``--quick`` is a smoke run.
"""

from __future__ import annotations

import contextlib
import os
import resource
import statistics
import time
import types

import numpy as np
from _common import base_parser, run_worker, write_results, write_worker_result

ALPHA = 1e-3
NUM_GROUPS = 4
METHODS = ("sklearn", "erm", "erm tol=1e-4", "badr")
DEFAULT_SIZES = [(10_000, 20), (10_000, 100), (100_000, 20), (100_000, 100)]
LARGE_SIZES = [(1_000_000, 20), (1_000_000, 100)]
QUICK_SIZES = [(5_000, 20)]


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_problem(n: int, d: int, seed: int = 0):
    """Features, labels, groups and the ERM sample weights (uniform group weights)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    groups = rng.integers(0, NUM_GROUPS, n)
    score = X @ (rng.standard_normal(d) / np.sqrt(d)) + 0.3 * (groups - 1.5)
    y = (score + 0.5 * rng.standard_normal(n) > 0).astype(np.int64)
    totals = np.bincount(groups, minlength=NUM_GROUPS).astype(np.float64)
    c = (1.0 / NUM_GROUPS / totals)[groups]
    return X, y, groups, c


def erm_objective(theta: np.ndarray, X, y, c) -> float:
    """``sum_i c_i log-loss_i + alpha / 2 ||w||^2`` (intercept first in ``theta``)."""
    s = X @ theta[1:] + theta[0]
    return float(np.sum(c * (np.logaddexp(0.0, s) - y * s)) + 0.5 * ALPHA * theta[1:] @ theta[1:])


def _estimator(method: str):
    if method == "sklearn":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=1.0 / ALPHA, max_iter=10_000)
    from fairest.reweighting import BADRClassifier, GroupWeightedClassifier

    if method == "badr":
        return BADRClassifier(metric="demographic_parity", alpha=ALPHA)
    tol = 1e-4 if method == "erm tol=1e-4" else 1e-10
    return GroupWeightedClassifier(weights="uniform", alpha=ALPHA, tol=tol)


def _fit(method, model, X, y, groups, c):
    if method == "sklearn":
        return model.fit(X, y, sample_weight=c)
    return model.fit(X, y, sensitive_features=groups)


@contextlib.contextmanager
def _no_counter():
    yield types.SimpleNamespace(count=0)


def worker(out: str, method: str, n: int, d: int, repeats: int) -> None:
    """One (method, n, d) case in this fresh process."""
    start = time.perf_counter()
    model = _estimator(method)  # imports the library: part of the cold time
    if method == "sklearn":  # fairest (hence JAX) is not imported in scikit-learn's process
        count_compilations = _no_counter
    else:
        from fairest.utils._compilation_cache import count_compilations
    imports = time.perf_counter() - start
    X, y, groups, c = make_problem(n, d)
    input_rss = _rss_mb()
    with count_compilations() as compiled:
        fit_start = time.perf_counter()
        _fit(method, model, X, y, groups, c)
        first_fit = time.perf_counter() - fit_start
        cold_count = compiled.count
        warm = []
        for _ in range(repeats):
            fit_start = time.perf_counter()
            _fit(method, model, X, y, groups, c)
            warm.append(time.perf_counter() - fit_start)
        warm_count = compiled.count - cold_count
    theta = np.r_[np.ravel(model.intercept_), np.ravel(model.coef_)]
    result = {
        "method": method,
        "n": n,
        "d": d,
        "cold_s": imports + first_fit,
        "imports_s": imports,
        "first_fit_s": first_fit,
        "warm_s": statistics.median(warm) if warm else None,
        "compiled": cold_count if method != "sklearn" else None,
        "warm_compiled": warm_count if method != "sklearn" else None,
        "load": os.getloadavg()[0],
        "objective": erm_objective(theta, X, y, c),
        "input_mb": X.nbytes / 2**20,
        "peak_above_input_mb": _peak_mb() - input_rss,
        "n_iter": np.ravel(getattr(model, "n_iter_", [np.nan]))[0],
    }
    if method == "badr":
        from fairest.metrics import demographic_parity_difference

        result["unfairness"] = float(
            demographic_parity_difference(y, model.predict(X), sensitive_features=groups)
        )
        result["n_evaluations"] = getattr(model, "n_evaluations_", None)
    write_worker_result(out, result)


def run(sizes, repeats: int, timeout: float) -> list[dict]:
    rows = []
    for n, d in sizes:
        cases = {}
        for method in METHODS:
            reps = repeats if n < 1_000_000 else max(1, repeats - 1)
            cases[method] = run_worker(__file__, [method, n, d, reps], timeout=timeout)
            print(cases[method], flush=True)
        best = min(r["objective"] for m, r in cases.items() if m != "badr" and "objective" in r)
        anchor = cases["sklearn"]
        for method, r in cases.items():
            if "timeout_s" in r:
                rows.append({"n": n, "d": d, "method": method, "note": f"timeout {timeout} s"})
                continue
            row = {
                "n": n,
                "d": d,
                "method": method,
                "cold (s)": r["cold_s"],
                "warm (s)": r["warm_s"],
                "cold ratio": anchor["cold_s"] / r["cold_s"],
                "warm ratio": anchor["warm_s"] / r["warm_s"],
                "input (MiB)": r["input_mb"],
                "peak above input (MiB)": r["peak_above_input_mb"],
                "compiled": r["compiled"],
                "warm compiled": r["warm_compiled"],
                "objective": r["objective"],
                "rel. gap": (r["objective"] - best) / abs(best) if method != "badr" else None,
                "iterations": r["n_iter"],
                "load": r["load"],
            }
            if method == "badr":
                row["DP gap"] = r["unfairness"]
                row["badr / erm warm"] = r["warm_s"] / cases["erm"]["warm_s"]
            rows.append(row)
    return rows


COLUMNS = [
    "n",
    "d",
    "method",
    "cold (s)",
    "warm (s)",
    "cold ratio",
    "warm ratio",
    "input (MiB)",
    "peak above input (MiB)",
    "compiled",
    "warm compiled",
    "objective",
    "rel. gap",
    "iterations",
    "badr / erm warm",
    "DP gap",
    "load",
]


def _merge(name: str, rows: list[dict], sizes) -> list[dict]:
    """The rows of ``results/<name>.json`` for other sizes, then ``rows``, sorted by size."""
    import json

    from _common import RESULTS

    path = RESULTS / f"{name}.json"
    kept = json.loads(path.read_text())["rows"] if path.exists() else []
    kept = [r for r in kept if (r["n"], r["d"]) not in set(sizes)]
    order = {m: i for i, m in enumerate(METHODS)}
    return sorted(kept + rows, key=lambda r: (r["n"], r["d"], order.get(r["method"], 99)))


def _parse_sizes(text: str) -> list[tuple[int, int]]:
    pairs = [item.lower().split("x") for item in text.split(",") if item]
    return [(int(float(n)), int(d)) for n, d in pairs]


def main() -> None:
    parser = base_parser(__doc__, name="speed_table")
    parser.add_argument("--large", action="store_true", help="add n = 1e6 (d = 20, 100)")
    parser.add_argument("--sizes", default=None, help="cases as NxD, comma separated")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker")
    parser.add_argument(
        "--append", action="store_true", help="keep the other sizes' rows of the results file"
    )
    args, rest = parser.parse_known_args()
    if args.worker:
        method = " ".join(rest[:-3])
        n, d, repeats = (int(v) for v in rest[-3:])
        worker(args.worker, method, n, d, repeats)
        return
    if args.sizes:
        sizes = _parse_sizes(args.sizes)
    elif args.quick:
        sizes = QUICK_SIZES
    else:
        sizes = DEFAULT_SIZES + (LARGE_SIZES if args.large else [])
    rows = run(sizes, args.repeats, args.timeout)
    if args.append:
        rows = _merge(args.name, rows, sizes)
    name = args.name if not args.quick or args.name != "speed_table" else "speed_table_quick"
    notes = (__doc__ or "").strip() + ("\n\n" + args.extra_notes if args.extra_notes else "")
    print(write_results(name, rows, COLUMNS, notes))


if __name__ == "__main__":
    main()
