"""Anytime-valid fairness monitoring: false alarms, detection delay, throughput, boundaries.

1. Weekly monitoring of a demographic parity gap over a year (52 weeks of ``--week``
   predictions, two groups of equal size, tolerance 0.02, ``delta`` = 0.05), over
   ``--streams`` simulated streams (sufficient statistics: per week and group, rows and
   selected rows; the nonparametric bootstrap of a week's rows is drawn exactly as a
   multinomial over its four (group, prediction) cells). Methods, each checked weekly:

   * ``FairnessMonitor``: alarm when the confidence sequence's lower bound of the gap
     (all data so far) exceeds the tolerance; valid over the unbounded stream.
   * ``FairnessMonitor(restarts=True)``: also the windows after earlier weeks, each with
     its share of ``delta`` (computed from the monitor's own functions).
   * ``weekly bootstrap``: one-sided percentile bootstrap (``--n-boot`` resamples) of the
     gap on the week's rows at level ``delta``; alarm when its ``delta``-quantile exceeds
     the tolerance (what a weekly dashboard runs).
   * ``weekly bootstrap, Bonferroni``: the same at ``delta / 52`` (a horizon fixed ahead).
   * ``repeated normal test``: one-sided z-test of ``gap > tolerance`` on all rows so
     far, re-run every week at level ``delta``.

   Null streams: the true gap equals the tolerance all year (the hardest compliant case);
   false-alarm rate = share of streams with any alarm in the year. Change streams: gap 0
   for 10 weeks, then 0.05 (a 0.05 jump); detection delay in weeks after the change, and
   the share detected within the year.
2. Throughput of ``FairnessMonitor.update`` (one check per batch) in predictions per
   second: batches of ``--batch`` rows, 2 to 50 groups, integer group codes, string
   labels and pandas categoricals, one process, best of ``--repeats``.
3. Boundaries beside ``confseq`` (``bernoulli_confidence_interval``, its beta-binomial
   sub-Bernoulli mixture tuned at ``t_opt = 1e5``), at ``alpha = 0.01``: widths at several
   sample sizes, and simultaneous coverage over null streams of a 0.3 rate checked after
   every batch of 1e4 (100 checks). It
   runs in its own virtual environment (this script is re-run there with
   ``--confseq-worker``; the worker needs only numpy and confseq): pass its python with
   ``--confseq-python`` or ``FAIREST_CONFSEQ_PYTHON``; without one the rows are skipped.

Run: ``python benchmarks/monitoring.py [--confseq-python PATH] [--quick]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_WEEKS = 52
CHANGE_WEEK = 10
TOLERANCE = 0.02
DELTA = 0.05
BASE_RATE = 0.30


def confseq_worker(problem: str, out: str) -> None:
    """Inside confseq's environment: its intervals for every (successes, trials, alpha)."""
    from confseq.boundaries import bernoulli_confidence_interval

    data = np.load(problem)
    successes, trials = data["successes"].ravel(), data["trials"].ravel()
    start = time.perf_counter()
    ends = [
        bernoulli_confidence_interval(float(s), int(n), float(data["alpha"]), float(data["t_opt"]))
        for s, n in zip(successes, trials)
    ]
    seconds = time.perf_counter() - start
    lower, upper = (np.array(side).reshape(data["trials"].shape) for side in zip(*ends))
    np.savez(out, lower=lower, upper=upper, seconds=seconds)


def weekly_streams(rng, n_streams, week, gaps):
    """Per stream, week and group: rows and selected rows; ``gaps`` per week."""
    rows = rng.binomial(week, 0.5, size=(n_streams, N_WEEKS))
    rows = np.stack([rows, week - rows], -1)
    rates = np.stack([np.full(N_WEEKS, BASE_RATE), BASE_RATE + gaps], -1)
    return rng.binomial(rows, rates), rows


def monitor_alarms(selected, rows):
    from fairest.monitoring import FairnessMonitor, bernoulli_confidence_sequence

    # the monitor's share of delta with rates=(): 2 groups x 1 rate
    alpha = FairnessMonitor(tolerance=TOLERANCE, delta=DELTA, groups=[0, 1], rates=())._alpha
    lower, upper = bernoulli_confidence_sequence(selected.cumsum(1), rows.cumsum(1), alpha)
    gap_lower = np.maximum(lower[..., 1] - upper[..., 0], lower[..., 0] - upper[..., 1])
    return gap_lower > TOLERANCE


def monitor_restart_alarms(selected, rows):
    """``FairnessMonitor(restarts=True)``: its cumulative sequences at ``delta / 2`` and
    every retained window after week ``k`` at ``window_alpha(k)`` (the monitor's pieces)."""
    from fairest.monitoring import bernoulli_confidence_sequence
    from fairest.monitoring._monitor import retained_starts, window_alpha

    successes, trials = selected.cumsum(1), rows.cumsum(1)
    lower, upper = bernoulli_confidence_sequence(successes, trials, DELTA / 2 / 2)
    alarms = np.maximum(lower[..., 1] - upper[..., 0], lower[..., 0] - upper[..., 1]) > TOLERANCE
    starts = np.zeros(0, np.int64)
    for t in range(1, N_WEEKS + 1):
        if starts.size:
            window = successes[:, [t - 1]] - successes[:, starts - 1]
            count = trials[:, [t - 1]] - trials[:, starts - 1]
            alpha = window_alpha(starts, DELTA, 2)[None, :, None]
            lower, upper = bernoulli_confidence_sequence(window, count, alpha)
            gap = np.maximum(lower[..., 1] - upper[..., 0], lower[..., 0] - upper[..., 1])
            alarms[:, t - 1] |= (gap > TOLERANCE).any(1)
        starts = retained_starts(np.r_[starts, t], t + 1)
    return alarms


def bootstrap_alarms(rng, selected, rows, level, n_boot):
    """Percentile bootstrap of each week's gap, one-sided at ``level``."""
    cells = np.stack([selected, rows - selected], -1).reshape(*rows.shape[:2], 4)
    n = rows.sum(-1)
    alarms = np.zeros(rows.shape[:2], bool)
    for week in range(rows.shape[1]):
        # resampling a week's rows = a multinomial draw over its (group, selected) cells
        draws = rng.multinomial(
            np.repeat(n[:, week, None], n_boot, 1), (cells[:, week] / n[:, week, None])[:, None]
        )
        draws = draws.reshape(-1, n_boot, 2, 2)  # (stream, resample, group, selected / not)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = draws[..., 0] / draws.sum(-1)
        gap = np.abs(rate[..., 1] - rate[..., 0])
        alarms[:, week] = np.quantile(gap, level, axis=1) > TOLERANCE
    return alarms


def normal_alarms(selected, rows, level):
    from scipy.stats import norm

    successes, trials = selected.cumsum(1), rows.cumsum(1)
    rate = successes / trials
    se = np.sqrt((rate * (1 - rate) / trials).sum(-1))
    z = (np.abs(rate[..., 1] - rate[..., 0]) - TOLERANCE) / se
    return z > norm.ppf(1 - level)


def alarm_rows(args, rng):
    n_boot = 100 if args.quick else args.n_boot
    null_gaps = np.full(N_WEEKS, TOLERANCE)
    jump = np.where(np.arange(N_WEEKS) < CHANGE_WEEK, 0.0, 0.05)
    streams = {
        "null": weekly_streams(rng, args.streams, args.week, null_gaps),
        "change": weekly_streams(rng, args.streams, args.week, jump),
    }
    methods = {
        "FairnessMonitor (anytime, delta=0.05)": lambda s, r: monitor_alarms(s, r),
        "FairnessMonitor (restarts=True)": lambda s, r: monitor_restart_alarms(s, r),
        "weekly bootstrap (level 0.05)": lambda s, r: bootstrap_alarms(rng, s, r, DELTA, n_boot),
        "weekly bootstrap (Bonferroni 0.05/52)": lambda s, r: bootstrap_alarms(
            rng, s, r, DELTA / N_WEEKS, n_boot
        ),
        "repeated normal test (all data, 0.05)": lambda s, r: normal_alarms(s, r, DELTA),
    }
    rows = []
    for method, alarms_of in methods.items():
        null = alarms_of(*streams["null"])
        change = alarms_of(*streams["change"])
        after = change[:, CHANGE_WEEK:]
        detected = after.any(1)
        delay = after.argmax(1)[detected] + 1  # weeks after the change (1 = its first week)
        rows.append(
            {
                "method": method,
                "false_alarm_rate_null_year": float(null.any(1).mean()),
                "alarm_before_change": float(change[:, :CHANGE_WEEK].any(1).mean()),
                "detected_in_year": float(detected.mean()),
                "delay_weeks_median": float(np.median(delay)) if delay.size else None,
                "delay_weeks_p90": float(np.quantile(delay, 0.9)) if delay.size else None,
            }
        )
    return rows


def throughput_rows(args, rng):
    import pandas as pd

    from fairest.monitoring import FairnessMonitor

    rows = []
    for n_groups in (2, 10, 50):
        for labels in ("integer codes", "strings", "pandas categorical"):
            codes = rng.integers(0, n_groups, args.batch)
            names = np.array([f"group_{k:02d}" for k in range(n_groups)])
            groups = {
                "integer codes": codes,
                "strings": names[codes],
                "pandas categorical": pd.Series(pd.Categorical(names[codes])),
            }[labels]
            y_pred = (rng.random(args.batch) < 0.3).astype(np.int8)
            y_true = (rng.random(args.batch) < 0.5).astype(np.int8)
            for with_labels, restarts in ((False, False), (True, False), (False, True)):
                if restarts and labels != "integer codes":
                    continue
                monitor = FairnessMonitor(
                    tolerance=0.1, groups=np.unique(groups), restarts=restarts
                )
                n_batches = 20 if args.quick else 100
                best = np.inf
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    for _ in range(n_batches):
                        monitor.update(y_pred, groups, y_true=y_true if with_labels else None)
                    best = min(best, time.perf_counter() - start)
                rows.append(
                    {
                        "groups": n_groups,
                        "group labels": labels,
                        "labels": "with y_true" if with_labels else "predictions only",
                        "restarts": restarts,
                        "batch": args.batch,
                        "predictions_per_s": n_batches * args.batch / best,
                        "ms_per_update": 1e3 * best / n_batches,
                    }
                )
    return rows


def confseq_rows(args, rng, python):
    from fairest.monitoring import bernoulli_confidence_sequence

    alpha, t_opt = 0.01, 1e5
    grid_n = np.array([1e3, 1e4, 1e5, 1e6])
    grid = {p: (np.round(p * grid_n), grid_n) for p in (0.05, 0.3)}
    n_streams = 50 if args.quick else 200
    selected = rng.binomial(10_000, BASE_RATE, size=(n_streams, 100)).cumsum(1)
    trials = np.broadcast_to(10_000 * np.arange(1, 101), selected.shape)

    def run(successes, counts):
        with tempfile.TemporaryDirectory() as folder:
            problem, out = Path(folder) / "problem.npz", Path(folder) / "out.npz"
            np.savez(problem, successes=successes, trials=counts, alpha=alpha, t_opt=t_opt)
            command = [python, __file__, "--confseq-worker", str(problem), str(out)]
            subprocess.run(command, check=True, capture_output=True, text=True, timeout=3600)
            result = np.load(out)
            return result["lower"], result["upper"], float(result["seconds"])

    rows = []
    for p, (successes, counts) in grid.items():
        theirs = run(successes, counts)
        ours = {
            boundary: bernoulli_confidence_sequence(successes, counts, alpha, boundary=boundary)
            for boundary in ("beta-binomial", "normal-mixture")
        }
        for k, n in enumerate(grid_n):
            rows.append(
                {
                    "rate": p,
                    "n": int(n),
                    "fairest beta-binomial width": float(
                        np.diff(ours["beta-binomial"], axis=0)[0][k]
                    ),
                    "fairest normal-mixture width": float(
                        np.diff(ours["normal-mixture"], axis=0)[0][k]
                    ),
                    "confseq width": float(theirs[1][k] - theirs[0][k]),
                }
            )
    lower, upper, seconds = run(selected, trials)
    start = time.perf_counter()
    ours_lower, ours_upper = bernoulli_confidence_sequence(selected, trials, alpha)
    ours_seconds = time.perf_counter() - start
    coverage = []
    for method, (low, high, spent) in {
        "fairest beta-binomial (vectorised)": (ours_lower, ours_upper, ours_seconds),
        "confseq bernoulli_confidence_interval (one call per interval)": (lower, upper, seconds),
    }.items():
        coverage.append(
            {
                "method": method,
                "streams": n_streams,
                "checks per stream": selected.shape[1],
                "alpha": alpha,
                "streams with a miss": float(
                    np.mean(((low > BASE_RATE) | (high < BASE_RATE)).any(1))
                ),
                "mean width at 1e6": float(np.mean(high[:, -1] - low[:, -1])),
                "seconds for all intervals": spent,
            }
        )
    return rows, coverage


def main():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import RESULTS, base_parser, machine, markdown_table

    parser = base_parser(__doc__, name="monitoring")
    parser.add_argument("--streams", type=int, default=500, help="simulated streams per case")
    parser.add_argument("--week", type=int, default=100_000, help="predictions per week")
    parser.add_argument("--n-boot", type=int, default=500, help="bootstrap resamples")
    parser.add_argument("--batch", type=int, default=100_000, help="rows per update")
    parser.add_argument("--confseq-python", default=os.environ.get("FAIREST_CONFSEQ_PYTHON"))
    args = parser.parse_args()
    if args.quick:
        args.streams, args.repeats = 50, 1
    rng = np.random.default_rng(0)
    sections = {"alarms": alarm_rows(args, rng), "throughput": throughput_rows(args, rng)}
    if args.confseq_python:
        sections["confseq widths"], sections["confseq coverage"] = confseq_rows(
            args, rng, args.confseq_python
        )
    else:
        print("confseq: no --confseq-python / FAIREST_CONFSEQ_PYTHON, rows skipped")
    for name, rows in sections.items():
        print(f"\n{name}\n" + markdown_table(rows, list(rows[0])))
    if args.quick and args.name == "monitoring":
        return
    payload = {"machine": machine(), "args": vars(args) | {"confseq_python": None}, **sections}
    payload["notes"] = __doc__
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(payload, indent=2, default=str))
    text = [f"# {args.name}\n", __doc__, f"Machine: {payload['machine']}\n"]
    for name, rows in sections.items():
        columns = list(dict.fromkeys(key for row in rows for key in row))
        text += [f"## {name}\n", markdown_table(rows, columns) + "\n"]
    (RESULTS / f"{args.name}.md").write_text("\n".join(text))


if __name__ == "__main__":
    if "--confseq-worker" in sys.argv:
        position = sys.argv.index("--confseq-worker")
        confseq_worker(sys.argv[position + 1], sys.argv[position + 2])
    else:
        main()
