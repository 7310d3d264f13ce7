"""fairest's loss-gap constrained training at 5, 10 and 20 epochs: when does it reach the
constraint satisfaction that humancompatible-train 0.4.2 reaches in 5 epochs?

Companion of ``constrained_speed.py`` (same data, model, methods and scoring, imported from
it); the reference's 5-epoch numbers are read from ``results/constrained_speed.json``, so run
that script first. Writes ``results/constrained_speed_epochs.{json,md}``.
Usage: ``python benchmarks/constrained_speed_epochs.py``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import constrained_speed as cs  # noqa: E402
from _common import RESULTS, write_results  # noqa: E402

EPOCHS = (5, 10, 20)
SEEDS = (0, 1, 2, 3, 4)


def reference_rows() -> dict:
    payload = json.loads((RESULTS / "constrained_speed.json").read_text())
    return {row["method"]: row for row in payload["rows"]}


def main() -> None:
    data = cs.load_data()
    if data is None:
        print(f"{cs.SHARED} is absent: nothing to run.")
        return
    reference = reference_rows()
    rows = []
    for method in ("ssl-alm", "ssw"):
        cs.run_fairest(method, 1, SEEDS[0], data)  # compile (not timed)
        ref = reference[method]
        ref_epochs = int(ref["epochs"])
        ref_seconds = float(str(ref["reference s/epoch"]).split(" ")[0]) * ref_epochs
        ref_violation = float(str(ref["reference train violation"]).split(" ")[0])
        for epochs in EPOCHS:
            runs = [cs.run_fairest(method, epochs, seed, data) for seed in SEEDS]
            seconds = float(np.mean([r["fit_wall_s"] for r in runs]))
            violation = float(np.mean([r["train_violation"] for r in runs]))
            rows.append({
                "method": method,
                "fairest epochs": epochs,
                "fairest fit s": seconds,
                "fairest train violation": violation,
                "fairest test violation": float(np.mean([r["test_violation"] for r in runs])),
                f"reference fit s ({ref_epochs} epochs)": ref_seconds,
                f"reference train violation ({ref_epochs} epochs)": ref_violation,
                "time ratio (ref / fairest)": ref_seconds / seconds,
                "fairest at least as feasible": violation <= ref_violation,
                "load avg": str(os.getloadavg()),
            })
            print(rows[-1], flush=True)
    notes = (
        f"fairest LossGapConstrainedClassifier at {EPOCHS} epochs, seeds {SEEDS} (mean), against "
        "the reference's mean over its seeds in constrained_speed.json (its reference s/epoch x "
        "epochs). 'time ratio' is the time of the reference's whole run over fairest's: the speed-up "
        "at equal constraint satisfaction is the ratio on the first row whose fairest train violation "
        "is at most the reference's."
    )
    columns = list(rows[0])
    write_results("constrained_speed_epochs", rows, columns, notes)


if __name__ == "__main__":
    main()
