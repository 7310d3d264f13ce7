"""The benchmark harness: timing (cold / warm, CPU time, load, peak memory), workers in
fresh processes, shared data loaders and splits, ratio rows against an anchor, and the
JSON + markdown result files. Every script in ``benchmarks/`` builds on it.

A script typically reads::

    from _common import Timing, base_parser, ratio_row, time_calls, write_results

    args = base_parser(__doc__, name="my_benchmark").parse_args()
    ours = time_calls(lambda: make_ours().fit(X, y, sensitive_features=A), repeats=3)
    anchor = time_calls(lambda: make_anchor().fit(X, y), repeats=3)
    rows = [ratio_row("n=1e5", ours, anchor)]
    write_results(args.name, rows, columns=list(rows[0]), notes=__doc__)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
SHARED_DATASETS = Path(
    os.environ.get("FAIREST_SHARED_DATASETS", ROOT.parent / "shared" / "datasets")
)


# --------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------


@dataclass
class Measurement:
    """One timed call: wall and CPU seconds, the 1-minute load before it, its result."""

    wall_s: float
    cpu_s: float
    load: float
    result: object = field(default=None, repr=False)


def measure(function) -> Measurement:
    """Call ``function()`` once and measure it."""
    load = os.getloadavg()[0]
    cpu, start = time.process_time(), time.perf_counter()
    result = function()
    return Measurement(time.perf_counter() - start, time.process_time() - cpu, load, result)


@dataclass
class Timing:
    """Cold (first call in this process) and warm (median of the others) wall seconds."""

    cold_s: float
    warm_s: float
    warm_min_s: float
    cpu_warm_s: float
    repeats: int
    load: float
    peak_rss_mb: float

    def as_row(self, prefix: str = "") -> dict:
        return {f"{prefix}{key}": value for key, value in asdict(self).items()}


def time_calls(function, repeats: int = 3) -> Timing:
    """Time ``function()``: the first call is cold, the next ``repeats`` calls are warm.

    Compilation caches, JIT and imports make the first call slower; the warm figures are
    the median and the minimum of the later calls. ``peak_rss_mb`` is the process's peak
    resident memory so far (see :func:`peak_rss_mb`; run a case in a :func:`run_worker`
    process to measure it alone).
    """
    first = measure(function)
    warm = [measure(function) for _ in range(max(repeats, 1))]
    walls = [m.wall_s for m in warm]
    return Timing(
        cold_s=first.wall_s,
        warm_s=statistics.median(walls),
        warm_min_s=min(walls),
        cpu_warm_s=statistics.median(m.cpu_s for m in warm),
        repeats=len(warm),
        load=max(m.load for m in [first, *warm]),
        peak_rss_mb=peak_rss_mb(),
    )


def best_time(function, repeats: int = 3) -> float:
    """Best wall-clock time of ``function()`` over ``repeats`` runs, in seconds."""
    return min(measure(function).wall_s for _ in range(repeats))


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (``ru_maxrss``, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ratio_row(case: str, ours: Timing, anchor: Timing, **extra) -> dict:
    """A result row: both timings and the anchor / fairest ratios (> 1: fairest faster)."""
    return {
        "case": case,
        **ours.as_row("fairest_"),
        **anchor.as_row("anchor_"),
        "warm_ratio": anchor.warm_s / ours.warm_s,
        "cold_ratio": anchor.cold_s / ours.cold_s,
        **extra,
    }


def time_grid_search(estimator, param_grid, X, y, folds, scoring, **fit_params) -> Measurement:
    """``GridSearchCV(estimator, param_grid, cv=folds, scoring=scoring, refit=False,
    n_jobs=1).fit(X, y, **fit_params)`` under metadata routing (``fit_params`` such as
    ``sensitive_features`` reach the estimator and the scorers that request them), timed
    once: wall and CPU seconds, load before. ``result``: the search's ``cv_results_``.
    The anchor of every "path vs grid search" benchmark (same values, same folds)."""
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(estimator, param_grid, cv=folds, scoring=scoring, refit=False, n_jobs=1)

    def run():
        with config_context(enable_metadata_routing=True):
            return search.fit(X, y, **fit_params).cv_results_

    return measure(run)


def split_scores(cv_results: dict, name: str, n_splits: int):
    """``cv_results_[f"split{k}_test_{name}"]`` stacked: shape (n_splits, n_candidates)."""
    import numpy as np

    return np.array([cv_results[f"split{k}_test_{name}"] for k in range(n_splits)])


# --------------------------------------------------------------------------------------
# workers in fresh processes (cold starts, peak memory of one case, timeouts)
# --------------------------------------------------------------------------------------


def run_worker(
    script: str | Path, args: list[str], timeout: float, python: str | None = None
) -> dict:
    """Run ``python script --worker OUT args...`` in a fresh process and return its JSON.

    The worker writes a JSON object to the path after ``--worker`` (use
    :func:`write_worker_result`). The returned dict gains ``process_wall_s`` (the whole
    process: interpreter start, imports, compilation) and ``process_peak_rss_mb``; a
    timeout returns ``{"timeout_s": timeout}``; a failure raises with the worker's stderr.
    """
    out = RESULTS / ".worker" / f"{Path(script).stem}-{os.getpid()}-{time.monotonic_ns()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [python or sys.executable, str(script), "--worker", str(out), *map(str, args)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout_s": timeout}
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"worker {' '.join(command)} failed:\n{done.stderr[-4000:]}")
    result = json.loads(out.read_text())
    out.unlink()
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result["process_wall_s"] = wall
    # ru_maxrss of children is the largest child so far: exact when this child set it
    result["process_peak_rss_mb"] = peak / 1024 if peak > before else None
    return result


def write_worker_result(path: str | Path, result: dict) -> None:
    """What a worker hands back to :func:`run_worker`."""
    Path(path).write_text(json.dumps(result, default=_jsonable))


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------


def shared_dataset(relative: str) -> Path:
    """A file or folder of ``../shared/datasets``; exits cleanly (status 0) when absent."""
    path = SHARED_DATASETS / relative
    if not path.exists():
        print(f"skipped: shared dataset {relative} not found (looked in {SHARED_DATASETS.name}/)")
        sys.exit(0)
    return path


def adult_numeric(sensitive: str = "sex"):
    """Bundled Adult (UCI train and test files), one-hot encoded and standardised on the
    training split: ``X_train, y_train, A_train, X_test, y_test, A_test`` (numpy)."""
    import numpy as np
    import pandas as pd
    from sklearn.preprocessing import StandardScaler

    from fairest.datasets import load_adult

    train = load_adult(subset="train", as_frame=True)
    test = load_adult(subset="test", as_frame=True)
    both = pd.get_dummies(pd.concat([train.data, test.data]), dtype=float)
    X_train, X_test = both.iloc[: len(train.data)], both.iloc[len(train.data) :]
    scaler = StandardScaler().fit(X_train)
    return (
        scaler.transform(X_train),
        np.asarray(train.target),
        train.sensitive[sensitive].to_numpy(),
        scaler.transform(X_test),
        np.asarray(test.target),
        test.sensitive[sensitive].to_numpy(),
    )


def adult_folds(quick: bool, n_folds: int):
    """Adult's training file (its first 8000 rows with ``quick``) from :func:`adult_numeric`,
    labels 0 / 1, and ``n_folds`` folds stratified by label and group (seed 0): ``X, y, A,
    folds``. The data of the "path vs grid search" benchmarks."""
    import numpy as np
    from sklearn.model_selection import StratifiedKFold

    X, y, A, *_ = adult_numeric()
    y = (y == np.unique(y)[-1]).astype(int)
    if quick:
        X, y, A = X[:8000], y[:8000], A[:8000]
    strata = np.char.add(y.astype(str), A.astype(str))
    folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=0).split(X, strata))
    return X, y, A, folds


def stratified_split(X, y, groups, test_size: float = 0.25, seed: int = 0):
    """Train / test split stratified by (label, group): ``X_tr, X_te, y_tr, y_te, A_tr, A_te``."""
    import numpy as np
    from sklearn.model_selection import train_test_split

    strata = np.char.add(np.asarray(y).astype(str), np.asarray(groups).astype(str))
    return train_test_split(X, y, groups, test_size=test_size, random_state=seed, stratify=strata)


# --------------------------------------------------------------------------------------
# command line and result files
# --------------------------------------------------------------------------------------


def base_parser(doc: str | None, name: str) -> argparse.ArgumentParser:
    """The options every script shares: ``--name`` (result file stem), ``--quick`` (a
    small smoke run that writes nothing unless ``--name`` is given), ``--repeats``,
    ``--extra-notes`` and the hidden ``--worker OUT`` of :func:`run_worker`."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().split("\n")[0])
    parser.add_argument("--name", default=name, help=f"results file stem (default {name})")
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--repeats", type=int, default=3, help="warm repetitions per timing")
    parser.add_argument("--extra-notes", default="", help="appended to the notes of the results")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return parser


def machine() -> dict:
    """What the numbers were measured on."""
    import jax
    import sklearn

    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jax_backend": jax.default_backend(),
        "scikit-learn": sklearn.__version__,
        "loadavg_at_write": os.getloadavg()[0],
    }


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    """A markdown table of ``rows`` (floats to 4 significant digits)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = [
            f"{row.get(c):.4g}" if isinstance(row.get(c), float) else str(row.get(c, ""))
            for c in columns
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_results(name: str, rows: list[dict], columns: list[str], notes: str = "") -> Path:
    """Write ``results/<name>.json`` and a markdown table ``results/<name>.md``."""
    RESULTS.mkdir(exist_ok=True)
    payload = {"machine": machine(), "rows": rows, "notes": notes}
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, default=_jsonable))
    text = (
        f"# {name}\n\n{notes}\n\nMachine: {payload['machine']}\n\n"
        + markdown_table(rows, columns)
        + "\n"
    )
    path = RESULTS / f"{name}.md"
    path.write_text(text)
    return path
