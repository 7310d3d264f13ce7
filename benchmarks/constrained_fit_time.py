"""Fit time of the default constrained estimators on Adult, against a baseline checkout.

The constrained family's estimators with their default settings, on the bundled Adult
training split (32,561 rows, one-hot encoded and standardised, groups = sex):

* ``LossGapConstrainedClassifier(preset="paper", random_state=0)``: SSL-ALM, MLP (64,
  32), 5 epochs of batches of 8, constraint draws of 8 rows per group (the paper's
  configuration, which a baseline checkout before the ``"default"`` preset also runs;
  the defaults on practitioners' data: ``benchmarks/constrained_defaults.py``);
* ``PrunedFairClassifier(random_state=0)`` with the paper's epochs (the counts of
  ``preset="paper"``, passed as numbers): dense pre-training (50 epochs) then gradual
  magnitude pruning to 90 % and constrained fine-tuning (60 epochs), batches of 128.

Every (estimator, tree) case runs in a fresh worker process (:func:`_common.run_worker`):
one cold fit (imports excluded, compilation included), then ``--repeats`` warm fits,
timed by :func:`_common.time_calls`, with the worker's peak memory. ``--baseline PATH``
also runs every case on the ``fairest`` package found in ``PATH`` (for example an
export of the previous commit: ``git archive HEAD fairest | tar -x -C /tmp/base``), the
two trees interleaved, and reports the ratio baseline / current (> 1: current faster)
and whether the two trees fit the same parameters (a checksum of ``params_``).

Run: ``python benchmarks/constrained_fit_time.py --baseline /tmp/base`` (about 15 min on
2 busy cores); ``--quick`` fits 1 epoch of each phase and writes nothing unless
``--name`` is given.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Timing,
    adult_numeric,
    base_parser,
    ratio_row,
    run_worker,
    time_calls,
    write_results,
    write_worker_result,
)

ESTIMATORS = ("LossGapConstrainedClassifier", "PrunedFairClassifier")
QUICK = {
    "LossGapConstrainedClassifier": {"n_epochs": 1},
    "PrunedFairClassifier": {"dense_n_epochs": 1, "n_epochs": 2, "pruning_epochs": 1},
}


def worker(out: str, estimator: str, repeats: int, quick: bool) -> None:
    """Time the default ``estimator`` on Adult in this fresh process."""
    import fairest.constrained

    X, y, groups, *_ = adult_numeric("sex")
    # the papers' settings, which a baseline tree before either preset also runs
    paper = {
        "LossGapConstrainedClassifier": {"preset": "paper"},
        "PrunedFairClassifier": {"dense_n_epochs": 50, "n_epochs": 60, "pruning_epochs": 15},
    }[estimator]
    params = {"random_state": 0, **paper, **(QUICK[estimator] if quick else {})}
    model = getattr(fairest.constrained, estimator)(**params)
    timing = time_calls(lambda: model.fit(X, y, sensitive_features=groups), repeats=repeats)
    leaves = [np.asarray(a, dtype=np.float64) for layer in model.params_ for a in layer]
    write_worker_result(
        out,
        {
            "timing": timing.as_row(),
            "checksum": float(
                sum(np.sum(a * np.arange(1, a.size + 1).reshape(a.shape)) for a in leaves)
            ),
            "n_iter": int(model.n_iter_),
            "fairest_path": str(Path(fairest.__file__).parent),
        },
    )


@contextmanager
def python_path(path: str | None):
    """``PYTHONPATH`` of the workers started inside: ``path`` first (None: unchanged)."""
    saved = os.environ.get("PYTHONPATH")
    if path is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [path, saved]))
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def run_case(estimator: str, tree: str | None, args) -> dict:
    extra = ["--quick"] if args.quick else []
    with python_path(tree):
        result = run_worker(
            __file__, [*extra, "--repeats", args.repeats, estimator], timeout=args.timeout
        )
    if "timeout_s" in result:
        raise RuntimeError(f"{estimator} on {tree or 'the current tree'} timed out")
    print(estimator, "baseline" if tree else "current", result, flush=True)
    return result


def main() -> None:
    parser = base_parser(__doc__, name="constrained_fit_time")
    parser.add_argument("--baseline", default=None, help="folder holding a baseline fairest")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per worker")
    args, rest = parser.parse_known_args()
    if args.worker:
        worker(args.worker, rest[-1], args.repeats, args.quick)
        return
    rows = []
    for estimator in ESTIMATORS:
        current = run_case(estimator, None, args)
        ours = Timing(**current["timing"])
        extra = {
            "n_iter": current["n_iter"],
            "process_peak_rss_mb": current["process_peak_rss_mb"],
        }
        if args.baseline:
            base = run_case(estimator, str(Path(args.baseline).resolve()), args)
            if base["fairest_path"] == current["fairest_path"]:
                raise RuntimeError(f"the baseline worker imported {base['fairest_path']}")
            extra["same_params"] = base["checksum"] == current["checksum"]
            rows.append(ratio_row(estimator, ours, Timing(**base["timing"]), **extra))
        else:
            rows.append({"case": estimator, **ours.as_row("fairest_"), **extra})
    if args.quick and args.name == "constrained_fit_time":
        return
    notes = __doc__ + (
        "\n\nanchor_* = the baseline tree, fairest_* = the current tree; warm_ratio = "
        "anchor / fairest warm median (> 1: the current tree is faster).\n" + args.extra_notes
    )
    print(write_results(args.name, rows, columns=list(rows[0]), notes=notes).read_text())


if __name__ == "__main__":
    main()
