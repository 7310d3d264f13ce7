"""Compile once in a grid search: ``GridSearchCV(n_jobs=1)`` vs ``n_jobs=2``, first vs
second search, for every JAX family at 20,000 rows (issue #19 item 4).

Data: ``fairest.datasets.make_grouped_classification`` (20,000 rows, 20 features, 2
groups, seed 0). Search: 5-fold ``GridSearchCV`` over 4 values of one parameter
(``refit=False``, the estimator's ``score``), ``sensitive_features`` routed to ``fit``.
Settings: defaults, except LossGap ``n_epochs=2`` and Pruned a small network (16 units,
2 + 3 epochs, batch 512); PartialParityPenalty at its defaults (smoothed L-BFGS; the
earlier rows ran ``max_iter=2000`` subgradient steps, its default then took 190 s a fit).
``GroupThresholdClassifier``, ``CertifiedFairClassifier`` and the pairwise / AUC partial
baselines compile nothing (scikit-learn base models, NumPy / SciPy solvers;
``tests/kernels/test_compile_count.py``), so they are not in this table.

Each (family, n_jobs) runs in a fresh worker process (:func:`_common.run_worker`) that
turns on the persistent compilation cache (:func:`fairest.utils.enable_compilation_cache`)
in an EMPTY folder, then times

* ``first (s)``: the first search (every process compiles: the parent with ``n_jobs=1``,
  both fresh loky workers with ``n_jobs=2``; the cache is written);
* ``second (s)``: the same search again in that process (``n_jobs=2``: loky reuses its
  two workers, which keep their in-memory executables);

then a second fresh process on the SAME (now full) cache folder times

* ``new process, disk cache (s)``: a first search whose compilations are persistent-cache
  hits (in the parent and, through ``JAX_COMPILATION_CACHE_DIR`` which
  ``enable_compilation_cache`` exports, in the new loky workers).

``first / second`` is the target ratio (<= 1.5), ``n_jobs=1 / n_jobs=2`` the parallel
speed-up of the first search (> 1: ``n_jobs=2`` wins). ``compiled`` counts the XLA
executables the parent compiled in the first search (``n_jobs=1`` only; a loky worker's
are not visible). ``cpu (s)`` is the parent's CPU time of the first search (the loky
workers' is not included), ``load`` the 1-minute load average before it; the box is
shared, so wall seconds carry the load: re-run on a quiet box with

``nice -n 10 python benchmarks/gridsearch_compile.py`` (``--families erm,badr`` picks
families; ``--quick``: 4,000 rows, writes ``gridsearch_compile_quick``).
``compile (s)`` is the parent's XLA compilation seconds of the first search (``n_jobs=1``).

What a first ``n_jobs=2`` search pays besides compiling: ``--imports`` writes
``gridsearch_imports``: the CPU and wall seconds (median of ``--repeats`` fresh
processes, default 5) of ``import fairest`` and of importing each family's estimator (what
a loky worker does to unpickle it), with ``import sklearn.linear_model`` beside them, and
the seconds a fresh process takes to start two loky workers that import the family
(``loky start (s)``: ``joblib.Parallel(n_jobs=2)`` of two tasks that import the
estimator's module). ``--python-path DIR`` measures another source tree of fairest (e.g.
``git archive HEAD fairest | tar -x -C DIR``, the code before a change).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

from _common import base_parser, run_worker, write_results, write_worker_result

N_ROWS = 20_000
N_FEATURES = 20
CV = 5


def _families():
    """family -> (estimator factory, grid parameter, 4 values)."""
    from sklearn.linear_model import LogisticRegression

    import fairest

    return {
        "sklearn LogisticRegression": (
            lambda: LogisticRegression(max_iter=1000),
            "C",
            [0.01, 0.1, 1.0, 10.0],
        ),
        "erm (GroupWeighted)": (
            lambda: fairest.GroupWeightedClassifier(weights="uniform"),
            "alpha",
            [1e-4, 1e-3, 1e-2, 1e-1],
        ),
        "badr": (
            lambda: fairest.BADRClassifier(metric="demographic_parity_deviation"),
            "alpha",
            [1e-4, 1e-3, 1e-2, 1e-1],
        ),
        "ermi": (
            lambda: fairest.ERMIClassifier(random_state=0),
            "fairness_weight",
            [0.1, 0.5, 1.0, 2.0],
        ),
        "loss_gap": (
            lambda: fairest.LossGapConstrainedClassifier(
                preset="paper", n_epochs=2, random_state=0
            ),
            "tolerance",
            [0.005, 0.01, 0.02, 0.05],
        ),
        "pruned": (
            lambda: fairest.PrunedFairClassifier(
                hidden_layer_sizes=(16,),
                dense_n_epochs=2,
                n_epochs=3,
                pruning_epochs=1,
                batch_size=512,
                random_state=0,
            ),
            "tolerance",
            [0.01, 0.02, 0.05, 0.1],
        ),
        "partial": (
            lambda: fairest.PartialParityClassifier(),
            "tolerance",
            [0.05, 0.1, 0.15, 0.2],
        ),
        "partial_penalty": (
            lambda: fairest.PartialParityPenaltyClassifier(),
            "fairness_weight",
            [0.1, 0.3, 1.0, 3.0],
        ),
    }


FAMILIES = (
    "sklearn LogisticRegression",
    "erm (GroupWeighted)",
    "badr",
    "ermi",
    "loss_gap",
    "pruned",
    "partial",
    "partial_penalty",
)


def _search(family: str, n_jobs: int, X, y, groups) -> float:
    from sklearn.model_selection import GridSearchCV

    make, name, values = _families()[family]
    search = GridSearchCV(make(), {name: values}, cv=CV, refit=False, n_jobs=n_jobs)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if family.startswith("sklearn"):
            search.fit(X, y)
        else:
            search.fit(X, y, sensitive_features=groups)
    return time.perf_counter() - start


def worker(out: str, family: str, n_jobs: int, n_rows: int, cache: str, phase: str) -> None:
    """Searches of one (family, n_jobs) in this fresh process on cache folder ``cache``."""
    from fairest.datasets import make_grouped_classification
    from fairest.utils import enable_compilation_cache
    from fairest.utils._compilation_cache import count_compilations

    enable_compilation_cache(cache)
    X, y, groups = make_grouped_classification(
        n_samples=n_rows, n_features=N_FEATURES, n_groups=2, random_state=0
    )
    load, cpu = os.getloadavg()[0], time.process_time()
    with count_compilations() as compiled:
        first = _search(family, n_jobs, X, y, groups)
    result = {
        "first_s": first,
        "cpu_s": time.process_time() - cpu,
        "load": load,
        "compiled": compiled.count,
        "compile_s": compiled.seconds,
    }
    if phase == "fresh":
        result["second_s"] = _search(family, n_jobs, X, y, groups)
    write_worker_result(out, result)


def run(families, n_rows: int, timeout: float) -> list[dict]:
    rows = []
    for family in families:
        for n_jobs in (1, 2):
            with tempfile.TemporaryDirectory(prefix="fairest-jax-cache-") as cache:
                args = [n_jobs, n_rows, cache]
                fresh = run_worker(__file__, [family, *args, "fresh"], timeout=timeout)
                disk = run_worker(__file__, [family, *args, "disk"], timeout=timeout)
            row = {"family": family, "n_jobs": n_jobs, "rows": n_rows}
            if "timeout_s" in fresh or "timeout_s" in disk:
                row["note"] = f"timeout {timeout} s"
            else:
                row.update(
                    {
                        "first (s)": fresh["first_s"],
                        "second (s)": fresh["second_s"],
                        "first / second": fresh["first_s"] / fresh["second_s"],
                        "new process, disk cache (s)": disk["first_s"],
                        "compiled": fresh["compiled"] if n_jobs == 1 else None,
                        "compile (s)": fresh["compile_s"] if n_jobs == 1 else None,
                        "cpu (s)": fresh["cpu_s"],
                        "load": fresh["load"],
                    }
                )
            print(row, flush=True)
            rows.append(row)
        one, two = rows[-2], rows[-1]
        if "first (s)" in one and "first (s)" in two:
            two["n_jobs=1 / n_jobs=2"] = one["first (s)"] / two["first (s)"]
            two["second: n_jobs=1 / n_jobs=2"] = one["second (s)"] / two["second (s)"]
    return rows


COLUMNS = [
    "family",
    "n_jobs",
    "rows",
    "first (s)",
    "second (s)",
    "first / second",
    "new process, disk cache (s)",
    "n_jobs=1 / n_jobs=2",
    "second: n_jobs=1 / n_jobs=2",
    "compiled",
    "compile (s)",
    "cpu (s)",
    "load",
    "note",
]


# ------------------------------------------------------------------------------------------
# --imports: what a fresh process / loky worker pays before its first fit
# ------------------------------------------------------------------------------------------

#: family -> the public name whose import a loky worker pays to unpickle the estimator
IMPORTED = {
    "erm (GroupWeighted)": "GroupWeightedClassifier",
    "badr": "BADRClassifier",
    "ermi": "ERMIClassifier",
    "loss_gap": "LossGapConstrainedClassifier",
    "pruned": "PrunedFairClassifier",
    "partial": "PartialParityClassifier",
    "partial_penalty": "PartialParityPenaltyClassifier",
}


def _import_statements() -> dict[str, str]:
    statements = {
        "import sklearn.linear_model": "import sklearn.linear_model",
        "import jax.numpy": "import jax.numpy",
        "import fairest": "import fairest",
        "import fairest; every public name": (
            "import fairest\nfor name in fairest.__all__: getattr(fairest, name)"
        ),
    }
    for family, name in IMPORTED.items():
        statements[f"{family}: fairest.{name}"] = f"import fairest; fairest.{name}"
    return statements


def _process_seconds(code: str, env: dict) -> tuple[float, float]:
    """CPU (user + system) and wall seconds of a fresh ``python -c code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=env["NEUTRAL_CWD"])
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return cpu, wall


_LOKY_START = """
import time
start = time.perf_counter()
import joblib
def load(name):
    import importlib, time
    t = time.process_time()
    importlib.import_module(name)
    return time.process_time() - t
cpu = joblib.Parallel(n_jobs=2, backend="loky")(joblib.delayed(load)(m) for m in {modules!r})
print(time.perf_counter() - start, max(cpu))
"""


def _loky_start(module: str, env: dict) -> tuple[float, float]:
    """Wall seconds for a fresh process to start two loky workers that each import
    ``module``, and the workers' import CPU seconds (the larger of the two)."""
    code = _LOKY_START.format(modules=[module, module])
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env=env,
        capture_output=True,
        text=True,
        cwd=env["NEUTRAL_CWD"],
    )
    wall, cpu = map(float, done.stdout.split()[-2:])
    return wall, cpu


def import_costs(repeats: int, python_path: str | None) -> list[dict]:
    """Median import seconds of fresh processes (see the module notes, ``--imports``)."""
    # run from a folder without a fairest/ (the working directory comes first on
    # sys.path, before PYTHONPATH)
    env = {**os.environ, "NEUTRAL_CWD": tempfile.gettempdir()}
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [python_path, env.get("PYTHONPATH")]))
    rows = []
    for label, code in _import_statements().items():
        load = os.getloadavg()[0]
        cpu, wall = zip(*(_process_seconds(code, env) for _ in range(repeats)))
        row = {
            "import": label,
            "cpu (s)": statistics.median(cpu),
            "wall (s)": statistics.median(wall),
            "cpu min (s)": min(cpu),
            "load": load,
        }
        family = label.split(":")[0]
        if family in IMPORTED:
            module = f"import fairest; print(fairest.{IMPORTED[family]}.__module__)"
            module = subprocess.run(
                [sys.executable, "-c", module],
                env=env,
                capture_output=True,
                text=True,
                cwd=env["NEUTRAL_CWD"],
            ).stdout.strip()
            starts = [_loky_start(module, env) for _ in range(repeats)]
            row["loky start (s)"] = statistics.median(w for w, _ in starts)
            row["worker import cpu (s)"] = statistics.median(c for _, c in starts)
        print(row, flush=True)
        rows.append(row)
    return rows


IMPORT_COLUMNS = [
    "import",
    "cpu (s)",
    "wall (s)",
    "cpu min (s)",
    "loky start (s)",
    "worker import cpu (s)",
    "load",
]


def _merge(name: str, rows: list[dict], families) -> list[dict]:
    """The rows of ``results/<name>.json`` for other families, then ``rows``, in order."""
    import json

    from _common import RESULTS

    path = RESULTS / f"{name}.json"
    kept = json.loads(path.read_text())["rows"] if path.exists() else []
    kept = [r for r in kept if r["family"] not in families]
    order = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(kept + rows, key=lambda r: (order.get(r["family"], 99), r["n_jobs"]))


def main() -> None:
    parser = base_parser(__doc__, name="gridsearch_compile")
    parser.add_argument("--families", default=None, help="comma separated, from FAMILIES")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker")
    parser.add_argument(
        "--append", action="store_true", help="keep the other families' rows of the results"
    )
    parser.add_argument("--imports", action="store_true", help="import and loky start seconds only")
    parser.add_argument("--python-path", default=None, help="--imports: another fairest tree")
    args, rest = parser.parse_known_args()
    if args.imports:
        name = args.name if args.name != "gridsearch_compile" else "gridsearch_imports"
        rows = import_costs(max(args.repeats, 5), args.python_path)
        notes = (__doc__ or "").strip() + ("\n\n" + args.extra_notes if args.extra_notes else "")
        print(write_results(name, rows, IMPORT_COLUMNS, notes))
        return
    if args.worker:
        *family, n_jobs, n_rows, cache, phase = rest
        worker(args.worker, " ".join(family), int(n_jobs), int(n_rows), cache, phase)
        return
    families = FAMILIES
    if args.families:
        aliases = {f.split()[0]: f for f in FAMILIES}
        families = [aliases.get(f, f) for f in args.families.split(",")]
    n_rows = 4_000 if args.quick else N_ROWS
    rows = run(families, n_rows, args.timeout)
    if args.append:
        rows = _merge(args.name, rows, families)
    name = (
        args.name
        if not args.quick or args.name != "gridsearch_compile"
        else ("gridsearch_compile_quick")
    )
    notes = (__doc__ or "").strip() + ("\n\n" + args.extra_notes if args.extra_notes else "")
    print(write_results(name, rows, COLUMNS, notes))


if __name__ == "__main__":
    main()
