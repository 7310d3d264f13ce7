"""Row-blocked passes of the default partial-fairness solver (issue 19 item 3): the
model, its exact train metric and the fit time before and after a change of
``fairest/partial/_fast.py``, on the speed table's partial problems and the memory
table's synthetic data.

Cases (``PartialParityClassifier``):

* ``small`` / ``medium``: the speed table's partial family
  (``speed_table.family_problem``: 2,500 / 25,000 rows before the 80/20 split, 20
  features; ``interval=(0, 0.2), tolerance=0.05``);
* ``adult``: bundled Adult (one-hot, standardised, sex) with the same settings;
* ``synthetic-1e4``: the memory table's ``make_data(10_000, 100)`` with defaults;
* ``synthetic-1e6``: ``make_data(1_000_000, 100)`` (763 MiB, 16 row blocks), defaults;
  not in the default ``--cases`` (a few minutes: ``--cases synthetic-1e6 --repeats 1``).

Each case runs in fresh workers, back to back: the code of ``--before`` (a git revision
of ``fairest/partial/_fast.py``, loaded in place of the current module) and the current
code, each a cold fit and ``--repeats`` warm ones (wall and CPU seconds, load1). The
table gives both models' objective, exact train metric and the largest coefficient
difference of the current model to the before one (relative to the largest |coef|).

Run: ``nice -n 10 python benchmarks/partial_blocks.py --before c115f3b`` (the commit
before the row-blocked passes); ``--cases synthetic-1e6 --repeats 1 --name
partial_blocks_1e6`` and ``--cases small --repeats 10 --name partial_blocks_small`` give
the two other result files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    adult_numeric,
    base_parser,
    run_worker,
    time_calls,
    write_results,
    write_worker_result,
)

CASES = ("small", "medium", "adult", "synthetic-1e4")


def _problem(case: str):
    """``(X, y, groups, estimator)`` of a case."""
    from fairest.partial import PartialParityClassifier

    if case in ("small", "medium"):
        from speed_table import FAMILY_SIZES, PARTIAL_INTERVAL, PARTIAL_TOLERANCE, family_problem

        data = family_problem(FAMILY_SIZES[case])
        model = PartialParityClassifier(interval=PARTIAL_INTERVAL, tolerance=PARTIAL_TOLERANCE)
        return data["X_train"], data["y_train"], data["g_train"], model
    if case == "adult":
        X, y, g, *_ = adult_numeric()
        return X, y, g, PartialParityClassifier(interval=(0.0, 0.2), tolerance=0.05)
    from memory_table import make_data

    X, y, g = make_data(10_000 if case == "synthetic-1e4" else 1_000_000, 100, "numpy", False)
    return X, y, g, PartialParityClassifier()


def _use_fast_module_of(revision: str) -> None:
    """Run the fits with ``fairest/partial/_fast.py`` as of git ``revision``."""
    import subprocess
    import types

    import fairest.partial._fit as fit_module

    source = subprocess.run(
        ["git", "show", f"{revision}:fairest/partial/_fast.py"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout
    module = types.ModuleType("fairest.partial._fast_before")
    sys.modules[module.__name__] = module
    exec(compile(source, f"_fast@{revision}.py", "exec"), module.__dict__)
    fit_module.run_fast_alm, fit_module.solver_data = module.run_fast_alm, module.solver_data


def worker(out: str, case: str, repeats: str, revision: str) -> None:
    from sklearn.base import clone

    if revision != "current":
        _use_fast_module_of(revision)
    X, y, g, model = _problem(case)
    fitted = []

    def fit():
        fitted.append(clone(model).fit(X, y, sensitive_features=g))

    timing = time_calls(fit, int(repeats))
    last = fitted[-1]
    write_worker_result(
        out,
        {
            "case": case,
            "code": revision,
            "n": X.shape[0],
            "d": X.shape[1],
            **timing.as_row(),
            "objective": float(last.objective_),
            "train_unfairness": float(last.train_unfairness_),
            "n_iter": int(last.n_iter_),
            "coef": np.ravel(last.coef_).tolist(),
            "intercept": float(np.ravel(last.intercept_)[0]),
        },
    )


def main() -> None:
    parser = base_parser(__doc__, "partial_blocks")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--before", default="c115f3b", help="git revision of the old code")
    parser.add_argument("worker_args", nargs="*", help="case repeats code (worker only)")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, *args.worker_args)
        return
    rows = []
    for case in args.cases.split(","):
        results = {}
        for code in (args.before, "current"):
            results[code] = run_worker(__file__, [case, args.repeats, code], timeout=1800)
        old = np.append(results[args.before].pop("coef"), results[args.before]["intercept"])
        new = np.append(results["current"].pop("coef"), results["current"]["intercept"])
        results["current"]["coef_diff_rel"] = float(
            np.max(np.abs(new - old)) / max(np.max(np.abs(old)), 1e-12)
        )
        for result in results.values():
            print(result, flush=True)
            rows.append(result)
    columns = [
        "case", "code", "n", "d", "cold_s", "warm_s", "warm_min_s", "cpu_warm_s", "load",
        "peak_rss_mb", "objective", "train_unfairness", "n_iter", "coef_diff_rel",
    ]  # fmt: skip
    write_results(args.name, rows, columns, __doc__ or "")


if __name__ == "__main__":
    main()
