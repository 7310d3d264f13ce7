"""Memory near the data size (issue 19.3): peak RSS of one fit above its input.

Each case runs in a fresh process (:func:`_common.run_worker`): the data is built, JAX and
fairest are imported, the process's peak RSS is reset (``/proc/self/clear_refs``), one
fit runs (cold: compilation included) and ``peak above input`` = peak RSS during the fit
minus the RSS before it. ``ratio`` = that / the input's size (target: at most 1).
A second, warm fit follows: ``runtime MiB`` is the RSS the cold fit leaves behind (JAX /
XLA's client, thread pools, compiled programs: a fixed cost, whatever the data's size),
``warm peak MiB`` / ``warm ratio`` the warm fit's peak above the RSS before it (the
data-proportional part), alone and over the input's size.

Cases: dense float64 C-contiguous ``--rows`` x ``--cols`` (default 1e6 x 100, 763 MiB)
for ``GroupWeightedClassifier`` and ``BADRClassifier`` (``max_iter=3``), with X

* ``aligned``: 64-byte aligned, as XLA's CPU client needs to share a host buffer:
  ``jax.device_put`` then aliases X (no copy);
* ``numpy``: as numpy allocates it (16 bytes off 64 for large arrays): the ERM driver
  (``GroupWeightedClassifier``) shares it too since ``fairest._kernels._placement``
  (``ShiftedRows``); ``BADRClassifier`` still copies it once. Every estimator, both
  layouts: ``benchmarks/memory_table.py``;

and sparse CSR (``--sparse-cols`` at ``--density``) for ``GroupWeightedClassifier``,
``BADRClassifier`` and ``ERMIClassifier`` (full batch): the device copy is O(nnz) (input
MiB: data + indices + indptr). ``--cases Estimator:layout,...`` runs a subset.

Run: ``python benchmarks/sparse_memory.py [--quick] [--cases ...]``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from _common import base_parser, machine, run_worker, write_results, write_worker_result

CASES = (
    ("GroupWeightedClassifier", "aligned"),
    ("GroupWeightedClassifier", "numpy"),
    ("BADRClassifier", "aligned"),
    ("BADRClassifier", "numpy"),
    ("GroupWeightedClassifier", "sparse"),
    ("BADRClassifier", "sparse"),
    ("ERMIClassifier", "sparse"),
)


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def aligned_empty(shape, dtype=np.float64, alignment: int = 64) -> np.ndarray:
    """An uninitialised array whose data starts on an ``alignment``-byte boundary."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffer = np.empty(nbytes + alignment, dtype=np.uint8)
    offset = (-buffer.ctypes.data) % alignment
    return buffer[offset : offset + nbytes].view(dtype).reshape(shape)


def make_data(layout: str, args):
    rng = np.random.default_rng(0)
    n = args.rows
    if layout == "sparse":
        from sparse_speed import synthetic

        X, y, groups = synthetic(n, args.sparse_cols, args.density)
        return X, y, groups, (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    X = aligned_empty((n, args.cols)) if layout == "aligned" else None
    if X is None:
        X = np.empty((n, args.cols))
    for start in range(0, n, 100_000):  # filled in place: no second array
        X[start : start + 100_000] = rng.normal(size=X[start : start + 100_000].shape)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    return X, y, rng.integers(0, 2, n), X.nbytes / 2**20


def worker(out, estimator_name, layout, args) -> None:
    import warnings

    import jax  # noqa: F401  (the runtime's own memory is not the fit's)

    import fairest.ermi
    import fairest.reweighting

    X, y, groups, input_mib = make_data(layout, args)
    params = {"max_iter": 3} if estimator_name == "BADRClassifier" else {}
    family = fairest.ermi if estimator_name == "ERMIClassifier" else fairest.reweighting
    model = getattr(family, estimator_name)(**params)
    before = _status_mib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, sensitive_features=groups)
    seconds = time.perf_counter() - start
    above = _status_mib("VmHWM") - before
    runtime = _status_mib("VmRSS")  # the cold fit's arrays freed: the fixed cost stays
    Path("/proc/self/clear_refs").write_text("5")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(family, estimator_name)(**params).fit(X, y, sensitive_features=groups)
    warm_peak = _status_mib("VmHWM") - runtime
    write_worker_result(
        out,
        {
            "estimator": estimator_name,
            "X": layout,
            "shape": f"{X.shape[0]} x {X.shape[1]}",
            "input_mib": input_mib,
            "fit_s": seconds,
            "peak_above_input_mib": above,
            "ratio": above / input_mib,
            "runtime_mib": runtime - before,
            "warm_peak_mib": warm_peak,
            "warm_ratio": warm_peak / input_mib,
        },
    )


def main() -> None:
    parser = base_parser(__doc__, "sparse_memory")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=100)
    parser.add_argument("--sparse-cols", type=int, default=100_000)
    parser.add_argument("--density", type=float, default=1e-4)
    parser.add_argument(
        "--cases", default="", help="comma-separated estimator:layout subset (default: all)"
    )
    parser.add_argument("worker_args", nargs="*", help="estimator layout (worker only)")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, *args.worker_args, args)
        return
    if args.quick:
        args.rows = 100_000
    rows = []
    chosen = {tuple(case.split(":")) for case in args.cases.split(",") if case}
    for estimator_name, layout in CASES:
        if chosen and (estimator_name, layout) not in chosen:
            continue
        options = ["--rows", args.rows, "--cols", args.cols, "--sparse-cols", args.sparse_cols]
        options += ["--density", args.density, estimator_name, layout]
        result = run_worker(Path(__file__), options, timeout=1800)
        result.pop("process_peak_rss_mb", None)
        rows.append(result)
        print(result, flush=True)
    if args.quick and args.name == "sparse_memory":
        print("quick run: nothing written")
        return
    columns = ["estimator", "X", "shape", "input_mib", "fit_s", "peak_above_input_mib", "ratio"]
    columns += ["runtime_mib", "warm_peak_mib", "warm_ratio"]
    notes = f"machine: {machine()}. {args.extra_notes}"
    write_results(args.name, rows, columns, notes)


if __name__ == "__main__":
    main()
