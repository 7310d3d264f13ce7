"""Where the time of the default ``fairest compare`` on Adult goes: wall and CPU per step.

Runs what ``fairest compare`` runs (bundled Adult, sensitive sex, every default
classification method, 200 bootstrap replicates, the fairness paths, the report) in this
process, with the JAX compilation cache of the CLI, and records for every step (fit, path,
report) its wall seconds, CPU seconds (``time.process_time``, all threads) and the 1-minute
load average. The first run of a fresh cache folder includes the compilations ("cold");
run it twice for the warm figures. The whole command, fresh process included, is what
``benchmarks/results/compare_capture.md`` times with GNU time.

Run: ``python benchmarks/compare_profile.py`` (``--name compare_profile_cold`` etc.).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import base_parser, write_results

COLUMNS = ["step", "wall_s", "cpu_s", "load"]


def main() -> None:
    args = base_parser(__doc__, "compare_profile").parse_args()
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    rows, last = [], [start_wall, start_cpu]

    def mark(step: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        rows.append(
            {
                "step": step,
                "wall_s": wall - last[0],
                "cpu_s": cpu - last[1],
                "load": os.getloadavg()[0],
            }
        )
        last[:] = [wall, cpu]
        print(rows[-1], file=sys.stderr, flush=True)

    from fairest import cli
    from fairest._compare import METHODS, run_comparison
    from fairest._report import write_report
    from fairest.utils import enable_compilation_cache

    enable_compilation_cache()
    mark("import")
    data = cli._load_bundled("adult", None, 0.3, 0)
    names = [n for n, m in METHODS.items() if m.task == data.task and not m.optional]
    mark("load Adult")
    steps = []

    def progress(message: str) -> None:  # each message ends the step before it
        if steps:
            mark(steps[-1])
        steps.append(message.split(" ", 1)[1].removesuffix(" ..."))

    comparison = run_comparison(data, names, random_state=0, n_boot=200, progress=progress)
    mark(steps[-1])
    with tempfile.TemporaryDirectory() as folder:
        write_report(comparison, data, Path(folder))
    mark("report")
    rows.append(
        {
            "step": "total",
            "wall_s": time.perf_counter() - start_wall,
            "cpu_s": time.process_time() - start_cpu,
            "load": os.getloadavg()[0],
        }
    )
    notes = (
        "Default `fairest compare` on bundled Adult in one process, step by step (a method's "
        "fit includes scoring it with 200 bootstrap replicates). CPU: time.process_time (all "
        "threads). load: 1-minute load average at the end of the step (2-core box shared "
        "with other jobs)." + args.extra_notes
    )
    if not args.quick:
        print(write_results(args.name, rows, COLUMNS, notes))


if __name__ == "__main__":
    main()
