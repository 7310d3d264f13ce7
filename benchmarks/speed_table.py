"""Speed table: fairest's ERM and BADR against scikit-learn's LogisticRegression.

One fresh worker process per (method, n, d) (:func:`_common.run_worker`) fits the same
synthetic problem: Gaussian features, a noisy linear label, 4 groups, L2 logistic loss
with ``alpha = 1e-3`` and uniform group weights (each group's mean loss weighted 1/4).

- ``sklearn``: ``LogisticRegression(C=1/alpha)`` (lbfgs, tol 1e-4) with the sample
  weights ``c_i = (1/4) / n_g`` (sum one): the same objective as fairest's ERM.
- ``erm``: ``GroupWeightedClassifier(weights="uniform")`` (default tol 1e-10), and
  ``erm tol=1e-4`` at scikit-learn's tolerance (both stop on the gradient's inf-norm).
- ``badr``: ``BADRClassifier(metric="demographic_parity_deviation")`` (SLSQP, safeguard on).

Columns: ``cold (s)`` is the first fit in a fresh process including the imports of the
estimator's library (data generation excluded); ``warm (s)`` the median of the later fits
(at least ``--repeats``, and as many as take 1 s, up to 50: steady state for small fits);
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

``--families all`` (or a comma-separated subset of erm, badr, ermi, loss_gap, partial,
postprocessing) runs instead every family against its anchor (scikit-learn, ``badr``
0.1.2, opacus, humancompatible-train, cvxpy + Clarabel, fairlearn) at small and medium n
(``--large`` adds the large size), one worker process per (family, method, size), into
``results/speed_table_families.md`` and its one-row-per-family digest
``results/speed_table_families_compact.md`` (the README's table); see ``FAMILY_NOTES``.
The reference libraries run from their own venvs (``FAIREST_BADR_VENV``,
``FAIREST_OPACUS_VENV``, ``FAIREST_HCT_VENV``; default ``/tmp/venv-badr``,
``/tmp/venv-opacus``, ``/tmp/venv-torch``); fairlearn and cvxpy from the main one.
"""

from __future__ import annotations

import contextlib
import os
import resource
import statistics
import time
import types
from pathlib import Path

import numpy as np
from _common import base_parser, run_worker, write_results, write_worker_result

ALPHA = 1e-3
SKLEARN_TOL = 1e-4  # scikit-learn LogisticRegression's default tolerance
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
    return X, y, groups, _uniform_group_weights(groups)


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
        return BADRClassifier(metric="demographic_parity_deviation", alpha=ALPHA)
    tol = 1e-4 if method == "erm tol=1e-4" else 1e-10
    return GroupWeightedClassifier(weights="uniform", alpha=ALPHA, tol=tol)


def _fit(method, model, X, y, groups, c):
    if method == "sklearn":
        return model.fit(X, y, sample_weight=c)
    return model.fit(X, y, sensitive_features=groups)


@contextlib.contextmanager
def _no_counter():
    yield types.SimpleNamespace(count=0)


# Warm fits: at least ``--repeats``, and more (up to WARM_MAX_FITS) until they took
# WARM_MIN_SECONDS: a millisecond fit's median over 3 fits is the box's noise and the
# process's first-fit effects (allocator, caches), not its steady state.
WARM_MIN_SECONDS = 1.0
WARM_MAX_FITS = 50


def _more_warm_fits(warm: list, repeats: int) -> bool:
    """Whether another warm fit is timed after the ``warm`` seconds so far."""
    if len(warm) < repeats:
        return True
    return sum(warm) < WARM_MIN_SECONDS and len(warm) < WARM_MAX_FITS


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
        while _more_warm_fits(warm, repeats):
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


# --------------------------------------------------------------------------------------
# every family against its anchor (``--families``)
# --------------------------------------------------------------------------------------

FAMILY_SIZES = {"small": 2_500, "medium": 25_000, "large": 250_000}  # rows before the split
FAMILY_FEATURES = 20
CLARABEL_SIZES = ("small",)  # cvxpy + Clarabel is run at the small size only
ERMI_EPOCHS = 5
ERMI_BATCH = 1024
LOSS_GAP_EPOCHS = 2
PARTIAL_INTERVAL = (0.0, 0.2)
PARTIAL_TOLERANCE = 0.05
EXPGRAD_BOUND = 0.01
VENVS = {
    "badr": Path(os.environ.get("FAIREST_BADR_VENV", "/tmp/venv-badr")),
    "hct": Path(os.environ.get("FAIREST_HCT_VENV", "/tmp/venv-torch")),
    "opacus": Path(os.environ.get("FAIREST_OPACUS_VENV", "/tmp/venv-opacus")),
}
FAMILIES = {  # family: (fairest method, anchor methods)
    "erm": ("GroupWeightedClassifier", ("sklearn LogisticRegression",)),
    "badr": ("BADRClassifier", ("badr 0.1.2",)),
    "ermi": ("ERMIClassifier DP-FERMI", ("opacus DP-SGD",)),
    "loss_gap": ("LossGapConstrainedClassifier", ("humancompatible-train 0.4.2",)),
    "partial": ("PartialParityClassifier", ("cvxpy + Clarabel, one subproblem",)),
    "postprocessing": (
        "GroupThresholdClassifier",
        ("fairlearn ThresholdOptimizer", "fairlearn ExponentiatedGradient"),
    ),
}


def family_problem(n_rows: int) -> dict:
    """The shared synthetic problem: 20 features, 2 groups, 80/20 split by group."""
    from sklearn.model_selection import train_test_split

    from fairest.datasets import make_grouped_classification

    X, y, g = make_grouped_classification(
        n_samples=n_rows, n_features=FAMILY_FEATURES, n_groups=2, random_state=0
    )
    y, g = np.asarray(y).astype(np.int64), np.asarray(g).astype(np.int64)
    split = train_test_split(X, y, g, test_size=0.2, stratify=g, random_state=0)
    keys = ("X_train", "X_test", "y_train", "y_test", "g_train", "g_test")
    return dict(zip(keys, split, strict=True))


def _dp_gap(y, y_pred, groups) -> float:
    from fairest.metrics import demographic_parity_difference

    return float(demographic_parity_difference(y, y_pred, sensitive_features=groups))


def _timed(fit, repeats: int, count: bool) -> dict:
    """Cold (first) and warm (median of at least ``repeats``, :func:`_more_warm_fits`)
    seconds of ``fit()``, the warm CPU
    seconds, and the executables compiled by the first and the later calls."""
    counter = _no_counter
    if count:
        from fairest.utils._compilation_cache import count_compilations as counter
    import warnings

    with warnings.catch_warnings(), counter() as compiled:
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = fit()
        cold = time.perf_counter() - start
        cold_count = compiled.count
        walls, cpus = [], []
        while _more_warm_fits(walls, repeats):
            cpu, start = time.process_time(), time.perf_counter()
            model = fit()
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
    return {
        "model": model,
        "cold_s": cold,
        "warm_s": statistics.median(walls) if walls else None,
        "cpu_warm_s": statistics.median(cpus) if cpus else None,
        "compiled": cold_count if count else None,
        "warm_compiled": compiled.count - cold_count if count else None,
    }


def _fairest_fit(family: str, data: dict):
    """The fit of ``family``'s fairest estimator on the train split, and its measure."""
    X, y, g = data["X_train"], data["y_train"], data["g_train"]
    if family == "erm":
        from fairest.reweighting import GroupWeightedClassifier

        model = GroupWeightedClassifier(weights="uniform", alpha=ALPHA, tol=SKLEARN_TOL)
        return lambda: model.fit(X, y, sensitive_features=g)
    if family == "badr":
        from fairest.reweighting import BADRClassifier

        return lambda: BADRClassifier(metric="demographic_parity_deviation").fit(
            X, y, sensitive_features=g
        )
    if family == "ermi":
        from ermi_speed import _model

        return lambda: _model(ERMI_EPOCHS, ERMI_BATCH, 1.0, "sensitive").fit(
            X, y, sensitive_features=g
        )
    if family == "loss_gap":
        from constrained_speed import fairest_estimator

        X32 = X.astype(np.float32)
        return lambda: fairest_estimator("ssl-alm", LOSS_GAP_EPOCHS, 0).fit(
            X32, y, sensitive_features=g
        )
    if family == "partial":
        from fairest.partial import PartialParityClassifier

        model = PartialParityClassifier(interval=PARTIAL_INTERVAL, tolerance=PARTIAL_TOLERANCE)
        return lambda: clone_fit(model, X, y, g)
    if family == "postprocessing":
        from sklearn.linear_model import LogisticRegression

        from fairest.postprocessing import GroupThresholdClassifier

        model = GroupThresholdClassifier(LogisticRegression(max_iter=1000), tolerance=0.0)
        return lambda: clone_fit(model, X, y, g)
    raise ValueError(f"unknown family {family!r}")


def clone_fit(model, X, y, g):
    from sklearn.base import clone

    return clone(model).fit(X, y, sensitive_features=g)


def _uniform_group_weights(groups) -> np.ndarray:
    """Sample weights ``(1 / G) / n_g``: each group's mean loss weighted ``1 / G``."""
    _, codes, counts = np.unique(groups, return_inverse=True, return_counts=True)
    return (1.0 / len(counts) / counts)[codes]


def _erm_achieved(model, data: dict) -> dict:
    """The ERM objective (uniform group weights, ``ALPHA``) a fitted linear model reached."""
    X, y, g = data["X_train"], data["y_train"], data["g_train"]
    theta = np.r_[np.ravel(model.intercept_), np.ravel(model.coef_)]
    return {
        "measure": "ERM objective",
        "achieved": erm_objective(theta, X, y, _uniform_group_weights(g)),
    }


def _achieved(family: str, model, data: dict) -> dict:
    """What the fit reached: the train DP gap, or the family's own measure."""
    X, y, g = data["X_train"], data["y_train"], data["g_train"]
    if family == "erm":
        return _erm_achieved(model, data)
    if family == "partial":
        return {
            "measure": "objective (train pSP)",
            "achieved": float(model.objective_),
            "unfairness": float(model.train_unfairness_),
        }
    if family == "loss_gap":
        from constrained_speed import score

        scored = score(model.params_, {**data, "X_test": data["X_test"].astype(np.float32)})
        return {"measure": "train loss gap", "achieved": scored["train_loss_gap"]}
    if family == "postprocessing":
        predicted = model.predict(X, sensitive_features=g)
        return {"measure": "train DP gap", "achieved": _dp_gap(y, predicted, g)}
    return {"measure": "train DP gap", "achieved": _dp_gap(y, model.predict(X), g)}


def family_worker(out: str, family: str, method: str, n_rows: int, repeats: int) -> None:
    """One (family, method, size) in this fresh process: cold and warm fits."""
    start = time.perf_counter()
    data = family_problem(n_rows)
    data_s = time.perf_counter() - start
    input_rss = _rss_mb()
    load = os.getloadavg()[0]
    if method == FAMILIES[family][0]:
        timing = _timed(_fairest_fit(family, data), repeats, count=True)
        extra = _achieved(family, timing["model"], data)
        if family == "ermi":
            extra["sigma_theta"] = float(timing["model"].sigma_theta_)
    else:
        timing, extra = _anchor_in_process(family, method, data, repeats)
    timing.pop("model", None)
    result = {
        **timing,
        **extra,
        "n_train": len(data["y_train"]),
        "data_s": data_s,
        "load": load,
        "peak_rss_mb": _peak_mb(),
        "peak_above_input_mb": _peak_mb() - input_rss,
    }
    write_worker_result(out, result)


def _anchor_in_process(family: str, method: str, data: dict, repeats: int):
    """Anchors that run in the main environment (scikit-learn, fairlearn, cvxpy)."""
    X, y, g = data["X_train"], data["y_train"], data["g_train"]
    if method == "sklearn LogisticRegression":
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=1.0 / ALPHA, tol=SKLEARN_TOL, max_iter=10_000)
        c = _uniform_group_weights(g)
        timing = _timed(lambda: model.fit(X, y, sample_weight=c), repeats, False)
        return timing, _erm_achieved(timing["model"], data)
    if method == "fairlearn ThresholdOptimizer":
        from fairlearn.postprocessing import ThresholdOptimizer
        from sklearn.linear_model import LogisticRegression

        def fit():
            return ThresholdOptimizer(
                estimator=LogisticRegression(max_iter=1000),
                constraints="demographic_parity",
                predict_method="predict_proba",
            ).fit(X, y, sensitive_features=g)

        timing = _timed(fit, repeats, False)
        predicted = timing["model"].predict(X, sensitive_features=g, random_state=0)
        return timing, {"measure": "train DP gap", "achieved": _dp_gap(y, predicted, g)}
    if method == "fairlearn ExponentiatedGradient":
        from fairlearn.reductions import DemographicParity, ExponentiatedGradient
        from sklearn.linear_model import LogisticRegression

        def fit():
            return ExponentiatedGradient(
                LogisticRegression(max_iter=1000),
                DemographicParity(difference_bound=EXPGRAD_BOUND),
            ).fit(X, y, sensitive_features=g)

        timing = _timed(fit, repeats, False)
        predicted = timing["model"].predict(X, random_state=0)
        return timing, {"measure": "train DP gap", "achieved": _dp_gap(y, predicted, g)}
    if method.startswith("cvxpy + Clarabel"):
        return _clarabel_subproblem(data)
    raise ValueError(f"unknown anchor {method!r}")


def _clarabel_subproblem(data: dict):
    """Clarabel on the first convex subproblem of the partial problem (at the initial
    point of fairest's solver): the unit of work of an exact DCA, which needs several."""
    import jax
    from partial_speed import clarabel_subproblem

    from fairest.partial import PartialParityClassifier

    X, y, g = data["X_train"], data["y_train"], data["g_train"].astype(np.int32)
    model = PartialParityClassifier(interval=PARTIAL_INTERVAL, tolerance=PARTIAL_TOLERANCE)
    with jax.enable_x64(True):
        _, problem, x0 = model._problem(X, y.astype(float), g, np.ones(len(y)), 2, PARTIAL_INTERVAL)
        x0, grid = np.asarray(x0, np.float64), np.asarray(problem.grid, np.float64)
        slack = float(problem.slack)
    point, status, _, wall = clarabel_subproblem(x0, X, y, g, grid, slack, 1e-3, 600.0)
    achieved = np.nan
    if point is not None:
        s = X @ point[1 : 1 + X.shape[1]] + point[0]
        achieved = float(np.mean(np.logaddexp(0.0, s) - y * s))
    timing = {"cold_s": wall, "warm_s": wall, "cpu_warm_s": None, "compiled": None}
    return timing, {"measure": "objective (subproblem)", "achieved": achieved, "status": status}


def _reference_subprocess(command: list[str], timeout: float) -> tuple[float, float | None]:
    """Wall seconds and peak RSS (MiB, when this child set the maximum) of ``command``."""
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command[1]} failed:\n{done.stderr[-3000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, (peak / 1024 if peak > before else None)


def _badr_reference(data: dict, timeout: float) -> dict:
    """badr 0.1.2 in its own (GPL) venv through ``badr_reference_runner.py``."""
    import json
    import tempfile

    python = VENVS["badr"] / "bin" / "python"
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="speed_table_badr_") as tmp:
        problem, out = Path(tmp) / "problem.npz", Path(tmp) / "out.json"
        np.savez(problem, **data, num_groups=2)
        wall, peak = _reference_subprocess(
            [
                str(python),
                str(here / "badr_reference_runner.py"),
                str(problem),
                "demographic_parity",
                str(out),
            ],
            timeout,
        )
        result = json.loads(out.read_text())
    s = data["X_train"] @ np.asarray(result["coef"]) + result["intercept"]
    predicted = (s > 0).astype(int)
    return {
        "cold_s": wall,
        "warm_s": None,
        "fit_s": result["seconds"],
        "peak_rss_mb": peak,
        "measure": "train DP gap",
        "achieved": _dp_gap(data["y_train"], predicted, data["g_train"]),
        "load": result["loadavg_before"][0],
    }


def _opacus_reference(data: dict, sigma_theta: float) -> dict:
    """opacus DP-SGD logistic regression (same batch, clipping and gradient noise)."""
    import ermi_speed

    ermi_speed.set_venv(VENVS["opacus"])
    n = len(data["y_train"])
    noise = sigma_theta * min(ERMI_BATCH, n) / ermi_speed.CLIP
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    load, start = os.getloadavg()[0], time.perf_counter()
    X, y = data["X_train"], data["y_train"]
    result = ermi_speed.time_opacus(X, y, ERMI_BATCH, noise, ERMI_EPOCHS, 1)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    epoch = min(v for k, v in result.items() if k.startswith("opacus_"))
    return {
        "cold_s": None,
        "warm_s": epoch * ERMI_EPOCHS,
        "process_s": wall,
        "peak_rss_mb": peak / 1024 if peak > before else None,
        "measure": "train DP gap",
        "achieved": None,
        "load": load,
    }


def _hct_reference(data: dict, timeout: float) -> dict:
    """humancompatible-train 0.4.2 SSL-ALM (``constrained_speed.run_reference``)."""
    import tempfile

    import constrained_speed

    data32 = {
        **data,
        "X_train": data["X_train"].astype(np.float32),
        "X_test": data["X_test"].astype(np.float32),
    }
    python = VENVS["hct"] / "bin" / "python"
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with tempfile.TemporaryDirectory(prefix="speed_table_hct_") as tmp:
        path = Path(tmp) / "train.npz"
        np.savez(path, X=data32["X_train"], y=data["y_train"], g=data["g_train"])
        load, start = os.getloadavg()[0], time.perf_counter()
        result = constrained_speed.run_reference(
            python, "ssl-alm", LOSS_GAP_EPOCHS, 0, path, tmp, data32
        )
        wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "cold_s": wall,
        "warm_s": result["s_per_epoch"] * LOSS_GAP_EPOCHS,
        "peak_rss_mb": peak / 1024 if peak > before else None,
        "measure": "train loss gap",
        "achieved": result["train_loss_gap"],
        "load": load,
    }


def _anchor_run(family: str, method: str, n_rows: int, repeats, timeout, fairest) -> dict:
    if family in ("erm", "postprocessing") or method.startswith("cvxpy"):
        return run_worker(__file__, ["family", family, method, n_rows, repeats], timeout=timeout)
    data = family_problem(n_rows)
    if family == "badr":
        return _badr_reference(data, timeout)
    if family == "ermi":
        return _opacus_reference(data, fairest["sigma_theta"])
    if family == "loss_gap":
        return _hct_reference(data, timeout)
    raise ValueError(family)


def run_families(families, sizes, repeats: int, timeout: float) -> list[dict]:
    rows = []
    for family in families:
        ours, anchors = FAMILIES[family]
        for size in sizes:
            n_rows = FAMILY_SIZES[size]
            args = ["family", family, ours, n_rows, repeats]
            try:
                fairest = run_worker(__file__, args, timeout=timeout)
            except RuntimeError as error:  # a failed worker is recorded, not fatal
                fairest = {"error": str(error)[-300:]}
            print(family, size, ours, fairest, flush=True)
            rows.append(_family_row(family, size, ours, fairest))
            for anchor in anchors:
                if anchor.startswith("cvxpy") and size not in CLARABEL_SIZES:
                    continue
                try:
                    result = _anchor_run(family, anchor, n_rows, repeats, timeout, fairest)
                except Exception as error:  # a reference that fails is recorded, not fatal
                    result = {"error": str(error)[-300:]}
                print(family, size, anchor, result, flush=True)
                rows.append(_family_row(family, size, anchor, result, fairest))
    return rows


def _ratio(anchor, ours):
    return anchor / ours if anchor and ours else None


def _family_row(family, size, method, result, fairest=None) -> dict:
    row = {"family": family, "size": size, "n train": result.get("n_train"), "method": method}
    if "timeout_s" in result or "error" in result:
        row["note"] = result.get("error") or f"timeout {result['timeout_s']} s"
        return row
    row.update(
        {
            "cold (s)": result.get("cold_s"),
            "warm (s)": result.get("warm_s"),
            "warm cpu (s)": result.get("cpu_warm_s"),
            "peak RSS (MiB)": result.get("peak_rss_mb") or result.get("process_peak_rss_mb"),
            "compiled": result.get("compiled"),
            "warm compiled": result.get("warm_compiled"),
            "measure": result.get("measure"),
            "achieved": result.get("achieved"),
            "load": result.get("load"),
        }
    )
    if fairest is not None and "cold_s" in fairest:
        row["n train"] = fairest.get("n_train")
        row["cold ratio"] = _ratio(result.get("cold_s"), fairest["cold_s"])
        row["warm ratio"] = _ratio(result.get("warm_s"), fairest["warm_s"])
    if "fit_s" in result:
        row["note"] = f"one fit in the reference process: {result['fit_s']:.3g} s"
    if "process_s" in result:
        row["note"] = f"warm = best epoch x {ERMI_EPOCHS}; process {result['process_s']:.3g} s"
    if "status" in result:
        row["note"] = f"Clarabel {result['status']}, tol 1e-3, one subproblem"
    if "unfairness" in result:
        row["note"] = f"train pSP {result['unfairness']:.3g} (tolerance {PARTIAL_TOLERANCE})"
    return row


FAMILY_COLUMNS = [
    "family",
    "size",
    "n train",
    "method",
    "cold (s)",
    "warm (s)",
    "cold ratio",
    "warm ratio",
    "warm cpu (s)",
    "peak RSS (MiB)",
    "compiled",
    "warm compiled",
    "measure",
    "achieved",
    "load",
    "note",
]


def compact_rows(rows: list[dict], size: str = "medium") -> list[dict]:
    """One row per (family, anchor) at ``size`` (or the largest size the anchor ran at):
    the README's table."""
    order = list(FAMILY_SIZES)
    out = []
    for family, (ours, anchors) in FAMILIES.items():
        for anchor in anchors:
            pairs = {}
            for r in rows:
                if r["family"] == family and r["method"] in (ours, anchor):
                    pairs.setdefault(r["size"], {})[r["method"]] = r
            ran = [z for z in order if anchor in pairs.get(z, {}) and ours in pairs[z]]
            if not ran:
                continue
            at = (
                size
                if size in ran
                else ran[-1]
                if order.index(ran[-1]) < order.index(size)
                else ran[0]
            )
            a, o = pairs[at][anchor], pairs[at][ours]
            out.append(
                {
                    "family": family,
                    "rows": o.get("n train"),
                    "fairest": ours,
                    "anchor": anchor,
                    "fairest warm (s)": o.get("warm (s)"),
                    "anchor warm (s)": a.get("warm (s)"),
                    "warm ratio": a.get("warm ratio"),
                    "fairest cold (s)": o.get("cold (s)"),
                    "anchor cold (s)": a.get("cold (s)"),
                    "cold ratio": a.get("cold ratio"),
                    "compiled": o.get("compiled"),
                    "measure": o.get("measure"),
                    "fairest achieved": o.get("achieved"),
                    "anchor achieved": a.get("achieved"),
                }
            )
    return out


COMPACT_COLUMNS = [
    "family",
    "rows",
    "fairest",
    "anchor",
    "fairest warm (s)",
    "anchor warm (s)",
    "warm ratio",
    "fairest cold (s)",
    "anchor cold (s)",
    "cold ratio",
    "compiled",
    "measure",
    "fairest achieved",
    "anchor achieved",
]


def run_families_main(args) -> None:
    families = list(FAMILIES) if args.families == "all" else args.families.split(",")
    sizes = ["small"] if args.quick else ["small", "medium"] + (["large"] if args.large else [])
    rows = run_families(families, sizes, args.repeats, args.timeout)
    name = "speed_table_families" if args.name == "speed_table" else args.name
    if args.quick and args.name == "speed_table":
        name = "speed_table_families_quick"
    if args.append:
        rows = _merge_families(name, rows, families, sizes)
    notes = (FAMILY_NOTES + ("\n\n" + args.extra_notes if args.extra_notes else "")).strip()
    print(write_results(name, rows, FAMILY_COLUMNS, notes))
    compact = "The medium rows of `" + name + ".md` (see its notes), one per family and anchor."
    print(write_results(name + "_compact", compact_rows(rows), COMPACT_COLUMNS, compact))


def _merge_families(name, rows, families, sizes) -> list[dict]:
    """Rows of ``results/<name>.json`` for other (family, size) pairs, then ``rows``."""
    import json

    from _common import RESULTS

    path = RESULTS / f"{name}.json"
    kept = json.loads(path.read_text())["rows"] if path.exists() else []
    kept = [r for r in kept if not (r["family"] in families and r["size"] in sizes)]
    order = {f: i for i, f in enumerate(FAMILIES)}
    size_order = {s: i for i, s in enumerate(FAMILY_SIZES)}
    return sorted(kept + rows, key=lambda r: (order[r["family"]], size_order[r["size"]]))


FAMILY_NOTES = """
Every family against its anchor (``python benchmarks/speed_table.py --families all``).

One fresh worker process per (family, method, size) fits the same synthetic problem:
``make_grouped_classification`` with 20 features and 2 groups, 2,500 / 25,000 / 250,000
rows (small / medium / large, ``--large``), an 80/20 split stratified by group (seed 0);
every measure is on the train split (2,000 / 20,000 / 200,000 rows).

- erm: ``GroupWeightedClassifier(weights="uniform", alpha=1e-3, tol=1e-4)`` vs scikit-learn's
  ``LogisticRegression(C=1 / alpha, tol=1e-4)`` fitted with the sample weights
  ``(1 / G) / n_g``: the same objective (achieved: its value) at scikit-learn's default
  tolerance; fairest's default tol 1e-10 and larger shapes are in ``speed_table.md``.
- badr: ``BADRClassifier(metric="demographic_parity_deviation")`` vs ``badr`` 0.1.2 (GPL, in its own
  venv through ``badr_reference_runner.py``; its cold is the whole process, one fit, its
  JAX compilation included; no warm figure: one fit per process).
- ermi: ``ERMIClassifier`` DP-FERMI (``ermi_speed._model``: lambda 1, epsilon 1, SGDA,
  batch 1024, 5 epochs) vs opacus DP-SGD logistic regression with the same batch,
  clipping and gradient-noise std (``ermi_speed.time_opacus``): opacus' warm is its best
  epoch (DataLoader or tensor batches, default or one thread) x 5, no cold figure.
- loss_gap: ``LossGapConstrainedClassifier(solver="ssl-alm")`` with the paper settings of
  ``constrained_speed.py`` (MLP 64-32, delta 0.005, 2 epochs) vs humancompatible-train
  0.4.2 (``constrained_speed.run_reference``: warm = its seconds per epoch x 2 after its
  warm-up; cold = its whole process).
- partial: ``PartialParityClassifier(interval=(0, 0.2), tolerance=0.05)`` (defaults
  otherwise) vs cvxpy + Clarabel solving ONE convex DCA subproblem (at fairest's initial
  point, tolerance 1e-3; ``partial_speed.clarabel_subproblem``), small size only: an
  exact DCA needs several such solves, so the ratio is a lower bound of the speed-up.
  Achieved: fairest's surrogate objective (train pSP in the note); Clarabel: the logistic
  loss of its subproblem solution.
- postprocessing: ``GroupThresholdClassifier(LogisticRegression(), tolerance=0)`` vs
  fairlearn's ``ThresholdOptimizer`` (demographic parity) and ``ExponentiatedGradient``
  (``DemographicParity(difference_bound=0.01)``), each fitting its base model.

Columns: ``cold (s)`` the first fit in a fresh process (data generation and imports
excluded, except where the note says "process"), ``warm (s)`` the median of the next
fits; ``cold ratio`` / ``warm ratio`` = anchor / fairest (> 1: fairest faster); ``warm
cpu (s)`` CPU seconds of a warm fit (the box is shared: compare it with wall seconds);
``peak RSS (MiB)`` of the whole process; ``compiled`` the XLA executables of the first
fit (``warm compiled``: of the later ones); ``achieved`` the measure named in
``measure``; ``load`` the 1-minute load average before the fits.
"""


def main() -> None:
    parser = base_parser(__doc__, name="speed_table")
    parser.add_argument("--large", action="store_true", help="add n = 1e6 (d = 20, 100)")
    parser.add_argument("--sizes", default=None, help="cases as NxD, comma separated")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker")
    parser.add_argument(
        "--append", action="store_true", help="keep the other sizes' rows of the results file"
    )
    parser.add_argument(
        "--families",
        default=None,
        help="every family against its anchor instead: 'all' or comma separated "
        f"({', '.join(FAMILIES)}); sizes small and medium (--large adds large)",
    )
    args, rest = parser.parse_known_args()
    if args.worker and rest[0] == "family":
        family, *method, n_rows, repeats = rest[1:]
        family_worker(args.worker, family, " ".join(method), int(n_rows), int(repeats))
        return
    if args.families:
        run_families_main(args)
        return
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
