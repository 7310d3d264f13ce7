"""Streaming epoch over a synthetic parquet file larger than a chunk: partial_fit samples/s and peak RSS.

A synthetic parquet file (10 float32 features, an int8 label, an int8 group of 3; row
groups of ``--chunk-rows``) is written chunk by chunk with pyarrow, then every estimator
reads it once in a fresh process through ``fairest.io.iter_parquet`` (one record batch
in memory at a time) and calls ``partial_fit`` once per chunk: one streaming epoch.
Reported per estimator: rows, chunks, the epoch's wall seconds end to end (parquet read,
validation, transfer and solver), the seconds inside ``partial_fit``, samples/s (rows
over the end-to-end seconds, and over the steady state: every chunk after the first,
which compiles), and the worker process's peak RSS (the bound is 4 GB). The file is
deleted afterwards unless ``--keep``. Settings: LossGap is the linear model with SSL-ALM
(batch 1024, 256 rows per group per constraint draw, float32); ERMI is SGDA (batch 1024,
float32 products). With ``--rows`` smaller than the target, ``--extrapolate-to`` adds the
time an epoch over that many rows would take at the measured steady-state rate (marked
as extrapolated, not measured).
"""

from __future__ import annotations

import resource
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from _common import base_parser, run_worker, write_results, write_worker_result

N_FEATURES, N_GROUPS = 10, 3


def write_parquet(path: Path, n_rows: int, chunk_rows: int, seed: int = 0) -> float:
    """The synthetic file, written one row group at a time; returns the seconds taken."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    coef = rng.normal(size=N_FEATURES).astype(np.float32)
    schema = pa.schema(
        [(f"x{j}", pa.float32()) for j in range(N_FEATURES)]
        + [("label", pa.int8()), ("group", pa.int8())]
    )
    start = time.perf_counter()
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for first in range(0, n_rows, chunk_rows):
            rows = min(chunk_rows, n_rows - first)
            group = rng.integers(0, N_GROUPS, rows, dtype=np.int8)
            X = rng.standard_normal((rows, N_FEATURES), dtype=np.float32)
            X[:, 0] += 0.5 * group
            noise = rng.standard_normal(rows, dtype=np.float32)
            label = (X @ coef + 0.5 * group + noise > 0).astype(np.int8)
            columns = [pa.array(X[:, j]) for j in range(N_FEATURES)]
            table = pa.Table.from_arrays(
                columns + [pa.array(label), pa.array(group)], schema=schema
            )
            writer.write_table(table, row_group_size=chunk_rows)
    return time.perf_counter() - start


def make_estimator(name: str):
    from fairest import ERMIClassifier, LossGapConstrainedClassifier

    if name == "loss_gap":
        return LossGapConstrainedClassifier(
            preset="paper",
            hidden_layer_sizes=(),
            solver="ssl-alm",
            batch_size=1024,
            constraint_batch_size=256,
            dtype="float32",
            random_state=0,
        )
    if name == "ermi":
        return ERMIClassifier(
            solver="sgda", fairness_weight=2.0, batch_size=1024, dtype="float32", random_state=0
        )
    raise ValueError(name)


def worker(out: str, name: str, path: str, chunk_rows: int) -> None:
    """One streaming epoch of estimator ``name`` over ``path`` (in a fresh process)."""
    from fairest.io import iter_parquet

    estimator = make_estimator(name)
    dtype = np.float32 if name == "loss_gap" else np.float64
    chunks = iter_parquet(
        path, target="label", sensitive="group", batch_size=chunk_rows, dtype=dtype
    )
    fit_seconds, rows, first_chunk = [], [], None
    start = time.perf_counter()
    for chunk in chunks:
        t0 = time.perf_counter()
        estimator.partial_fit(
            chunk.X,
            chunk.y,
            sensitive_features=chunk.sensitive_features,
            classes=[0, 1],
            groups=list(range(N_GROUPS)),
        )
        fit_seconds.append(time.perf_counter() - t0)
        rows.append(chunk.X.shape[0])
        if first_chunk is None:
            first_chunk = time.perf_counter() - start
    wall = time.perf_counter() - start
    steady_rows, steady_wall = sum(rows[1:]), wall - first_chunk
    write_worker_result(
        out,
        {
            "estimator": name,
            "rows": int(sum(rows)),
            "chunks": len(rows),
            "epoch_wall_s": wall,
            "partial_fit_s": float(np.sum(fit_seconds)),
            "first_chunk_s": first_chunk,
            "samples_per_s": sum(rows) / wall,
            "steady_samples_per_s": steady_rows / steady_wall if steady_rows else float("nan"),
            "worker_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "n_iter": int(estimator.n_iter_),
            "last_chunk_unfairness": float(getattr(estimator, "train_unfairness_", np.nan)),
        },
    )


def main() -> None:
    parser = base_parser(__doc__, name="scale_streaming")
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--chunk-rows", type=int, default=1_000_000)
    parser.add_argument("--estimators", default="loss_gap,ermi")
    parser.add_argument("--path", default="/tmp/fairest_scale_streaming.parquet")
    parser.add_argument("--keep", action="store_true", help="keep the parquet file")
    parser.add_argument("--extrapolate-to", type=float, default=None)
    parser.add_argument("--timeout", type=float, default=7200)
    args, rest = parser.parse_known_args()
    if args.worker:
        name, path, chunk_rows = rest
        worker(args.worker, name, path, int(chunk_rows))
        return
    n_rows = 20_000 if args.quick else int(args.rows)
    chunk_rows = min(args.chunk_rows, 5_000) if args.quick else args.chunk_rows
    path = Path(args.path)
    need = n_rows * (4 * N_FEATURES + 2) * 1.1
    free = shutil.disk_usage(path.parent).free
    if need > 0.8 * free:
        sys.exit(f"{path.parent}: {free / 1e9:.1f} GB free, the file needs about {need / 1e9:.1f}")
    write_s = write_parquet(path, n_rows, chunk_rows)
    file_gb = path.stat().st_size / 1e9
    print(f"wrote {n_rows:,} rows ({file_gb:.2f} GB) in {write_s:.0f} s", flush=True)
    rows = []
    try:
        for name in args.estimators.split(","):
            result = run_worker(__file__, [name, str(path), chunk_rows], timeout=args.timeout)
            result.update(file_gb=file_gb, write_s=write_s, chunk_rows=chunk_rows)
            result["rss_under_4gb"] = result.get("worker_peak_rss_mb", np.inf) < 4096
            if args.extrapolate_to and "steady_samples_per_s" in result:
                result["extrapolated_rows"] = int(args.extrapolate_to)
                result["extrapolated_epoch_s"] = (
                    args.extrapolate_to / result["steady_samples_per_s"]
                )
            print(result, flush=True)
            rows.append(result)
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    if args.quick and args.name == "scale_streaming":
        return
    columns = [
        "estimator",
        "rows",
        "chunks",
        "epoch_wall_s",
        "partial_fit_s",
        "first_chunk_s",
        "samples_per_s",
        "steady_samples_per_s",
        "worker_peak_rss_mb",
        "rss_under_4gb",
        "file_gb",
    ]
    if args.extrapolate_to:
        columns += ["extrapolated_rows", "extrapolated_epoch_s"]
    write_results(args.name, rows, columns, notes=__doc__ + args.extra_notes)


if __name__ == "__main__":
    main()
