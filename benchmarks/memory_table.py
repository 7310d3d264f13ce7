"""Memory near the data size for every public estimator (issue 19.3): peak RSS of one fit
above its input, dense float64 C-contiguous X.

Each case runs in a fresh process (:func:`_common.run_worker`): the data is built, JAX and
fairest are imported, the peak RSS is reset (``/proc/self/clear_refs``), ONE fit runs with
the estimator's default settings (cold: compilation included; meta-estimators wrap
scikit-learn's ``LogisticRegression``) and

* ``rss_before_mib``: RSS after the data is built, before the fit;
* ``peak_above_mib``: peak RSS during the fit minus ``rss_before_mib``;
* ``ratio``: ``peak_above_mib`` / the input's size (X, y, groups). Target: at most 1.

X is either ``numpy`` (as ``np.empty`` allocates it: large buffers start 16 bytes past a
64-byte boundary) or ``aligned`` (64 bytes, the alignment at which XLA's CPU client
shares a host buffer instead of copying it). Every estimator is discovered through
``fairest.utils.discovery``, so a new one is measured without editing this file.

Row counts: ``--rows`` (default 1e6) x ``--cols`` (default 100: 763 MiB). A family whose
fit cannot reasonably run at that size on the 2-core box (``--budget`` seconds) runs at
the largest n of the ladder 3e4, 1e5, 3e5, 1e6 reached by climbing (:func:`climb`: the
next n runs while the last fit's time scaled linearly to it stays within the budget);
the table says why it stopped (``n_reason``). ``--no-probe`` runs ``--rows`` directly.
Wall seconds, CPU seconds (``ru_utime + ru_stime`` of the worker) and the
1-minute load are recorded: the box is shared.

Run: ``python benchmarks/memory_table.py [--quick] [--estimators A,B] [--layouts numpy]``.
``--quick`` is a CI-size smoke run (2,000 x 10, nothing written). ``--combine A,B`` writes
the table from earlier runs' JSON results ``A`` and ``B`` (e.g. families run separately).
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import numpy as np
from _common import base_parser, machine, run_worker, write_results, write_worker_result

LAYOUTS = ("numpy", "aligned")
ROW_LADDER = (1_000_000, 300_000, 100_000, 30_000, 10_000)
REGRESSORS = ("BADRRegressor", "GroupWeightedRegressor")
TRANSFORMERS = ("GroupInteractionFeatures",)  # fit(X): only its output is (n, d G)


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_data(n: int, d: int, layout: str, regression: bool):
    """``X`` filled in place (no second array), ``y`` and two groups."""
    from fairest._kernels._buckets import aligned_empty

    rng = np.random.default_rng(0)
    X = aligned_empty((n, d), np.float64) if layout == "aligned" else np.empty((n, d))
    for start in range(0, n, 50_000):
        X[start : start + 50_000] = rng.normal(size=X[start : start + 50_000].shape)
    groups = rng.integers(0, 2, n)
    signal = X[:, 0] + 0.5 * groups + rng.normal(size=n)
    y = signal if regression else (signal > 0.25).astype(np.int64)
    return X, y, groups


def make_estimator(name: str):
    """Default settings; meta-estimators wrap scikit-learn's ``LogisticRegression``."""
    from sklearn.linear_model import LogisticRegression

    from fairest.utils.discovery import all_estimators

    cls = dict(all_estimators())[name]
    if name in ("GroupThresholdClassifier", "CertifiedFairClassifier", "LevellingUpClassifier"):
        return cls(LogisticRegression())
    return cls()


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def worker(out, name, layout, n, d) -> None:
    import warnings

    import jax  # noqa: F401  (the runtime's own memory is not the fit's)

    import fairest  # noqa: F401

    X, y, groups = make_data(int(n), int(d), layout, name in REGRESSORS)
    transformer = name in TRANSFORMERS
    if transformer:  # the group codes are X's last column
        X[:, -1] = groups
    input_mib = (X.nbytes + y.nbytes + groups.nbytes) / 2**20
    model = make_estimator(name)
    before = _status_mib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM)
    load, cpu, start = os.getloadavg()[0], _cpu_seconds(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X) if transformer else model.fit(X, y, sensitive_features=groups)
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    above = _status_mib("VmHWM") - before
    write_worker_result(
        out,
        {
            "estimator": name,
            "X": layout,
            "n": int(n),
            "d": int(d),
            "input_mib": input_mib,
            "rss_before_mib": before,
            "peak_above_mib": above,
            "ratio": above / input_mib,
            "fit_s": seconds,
            "cpu_s": cpu,
            "load1": load,
        },
    )


def run_case(name, layout, n, d, timeout=None) -> dict:
    timeout = 2400 if timeout is None else timeout
    try:
        result = run_worker(Path(__file__), [name, layout, n, d], timeout=timeout)
    except RuntimeError as error:  # recorded, the table goes on
        result = {"error": str(error).strip().splitlines()[-1][:200]}
    result.pop("process_peak_rss_mb", None)
    if "fit_s" not in result:
        result.update(estimator=name, X=layout, n=n, d=d)
    return result


def climb(name, args) -> tuple[dict, str]:
    """The numpy-layout case at the largest ladder n (at most ``--rows``) reached by
    climbing: from ``--probe-rows`` up, the next n runs while the last fit's time scaled
    linearly to it stays within ``--budget`` (an overestimate: compilation does not
    scale). Returns that case and why its n was chosen."""
    ladder = sorted(r for r in (*ROW_LADDER, args.rows) if args.probe_rows <= r <= args.rows)
    result = run_case(name, "numpy", ladder[0], args.cols, 4 * args.budget + 120)
    for smaller, n in zip(ladder, ladder[1:]):
        if "fit_s" not in result:
            return result, f"failed at n={smaller}"
        predicted = result["fit_s"] * n / smaller
        if predicted > args.budget:
            return result, f"n={n} predicted {predicted:.0f} s > budget {args.budget:.0f} s"
        result = run_case(name, "numpy", n, args.cols, 4 * args.budget + 120)
    return result, "requested"


def main() -> None:
    parser = base_parser(__doc__, "memory_table")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=100)
    parser.add_argument("--budget", type=float, default=300.0, help="fit seconds per case")
    parser.add_argument("--probe-rows", type=int, default=30_000)
    parser.add_argument("--no-probe", action="store_true", help="every estimator at --rows")
    parser.add_argument("--estimators", default="", help="comma-separated subset")
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--combine", default="", help="comma-separated result stems to merge")
    parser.add_argument("worker_args", nargs="*", help="estimator layout n d (worker only)")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, *args.worker_args)
        return
    if args.combine:
        combine(args)
        return
    if args.quick:
        args.rows, args.cols, args.no_probe = 2_000, 10, True
    from fairest.utils.discovery import all_estimators

    names = [name for name, _ in all_estimators()]
    if args.estimators:
        names = [name for name in names if name in args.estimators.split(",")]
    rows = []
    for name in names:
        if args.no_probe:
            first, reason = run_case(name, "numpy", args.rows, args.cols, None), "requested"
        else:
            first, reason = climb(name, args)
        for layout in args.layouts.split(","):
            n = first["n"]
            result = first if layout == "numpy" else run_case(name, layout, n, args.cols, None)
            result["n_reason"] = reason
            rows.append(result)
            print(result, flush=True)
    if args.quick and args.name == "memory_table":
        print("quick run: nothing written")
        return
    write_table(args.name, rows, args.extra_notes)


COLUMNS = ["estimator", "X", "n", "d", "input_mib", "rss_before_mib", "peak_above_mib"]
COLUMNS += ["ratio", "fit_s", "cpu_s", "load1", "n_reason"]


def write_table(name, rows, extra_notes) -> None:
    notes = (__doc__ or "").split("\n\n")[0] + f"\n\nmachine: {machine()}. {extra_notes}"
    write_results(name, sorted(rows, key=lambda row: row["estimator"]), COLUMNS, notes)


def combine(args) -> None:
    import json

    from _common import RESULTS

    rows = {}  # a later stem's case replaces an earlier one's
    for stem in args.combine.split(","):
        for row in json.loads((RESULTS / f"{stem}.json").read_text())["rows"]:
            rows[row["estimator"], row["X"]] = row
    write_table(args.name, list(rows.values()), args.extra_notes)


if __name__ == "__main__":
    main()
