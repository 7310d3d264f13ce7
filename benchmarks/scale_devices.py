"""Strong scaling over 1, 2 and 4 virtual CPU devices (``fairest.config_context(devices=
"all")``): the same fit, the same data, one fresh process per device count.

On a machine with fewer cores than virtual devices this measures the overhead of sharding
(collectives, padding, partitioned compilation), not a speed-up: the devices share the
cores. The model must be the same at every device count (the ``max_coef_diff`` column,
against the 1-device fit).
"""

from __future__ import annotations

import sys

import numpy as np
from _common import base_parser, run_worker, time_calls, write_results, write_worker_result

CASES = ("ermi-full-batch", "ermi-sgda")


def _data(n: int, d: int):
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) + 0.5 * groups[:, None]
    y = (X[:, 0] + 0.7 * groups + rng.normal(size=n) > 0.8).astype(int)
    return X, y, groups


def _estimator(case: str):
    from fairest import ERMIClassifier

    if case == "ermi-full-batch":
        return ERMIClassifier(solver="full-batch", fairness_weight=2.0)
    return ERMIClassifier(solver="sgda", fairness_weight=2.0, n_epochs=5, random_state=0)


def worker(out: str, case: str, n_devices: int, n: int, d: int, repeats: int) -> None:
    import jax

    jax.config.update("jax_num_cpu_devices", n_devices)
    import fairest

    X, y, groups = _data(n, d)
    fitted = {}

    def fit():
        with fairest.config_context(devices="all" if n_devices > 1 else None):
            fitted["model"] = _estimator(case).fit(X, y, sensitive_features=groups)

    timing = time_calls(fit, repeats=repeats)
    write_worker_result(out, {**timing.as_row(), "coef": fitted["model"].coef_.ravel().tolist()})


def main() -> None:
    parser = base_parser(__doc__, name="scale_devices")
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=20)
    args, rest = parser.parse_known_args()
    if args.worker:
        case, n_devices, n, d, repeats = rest
        worker(args.worker, case, int(n_devices), int(n), int(d), int(repeats))
        return
    n = 20_000 if args.quick else args.n
    rows = []
    for case in CASES:
        reference = None
        for n_devices in (1, 2, 4):
            result = run_worker(__file__, [case, n_devices, n, args.d, args.repeats], timeout=1800)
            coef = np.asarray(result.pop("coef"))
            reference = coef if reference is None else reference
            rows.append(
                {
                    "case": case,
                    "n": n,
                    "d": args.d,
                    "devices": n_devices,
                    "cold_s": result["cold_s"],
                    "warm_s": result["warm_s"],
                    "process_wall_s": result["process_wall_s"],
                    "peak_rss_mb": result["peak_rss_mb"],
                    "max_coef_diff": float(np.max(np.abs(coef - reference))),
                    "load": result["load"],
                }
            )
            print(rows[-1], file=sys.stderr)
    columns = list(rows[0])
    if not args.quick or args.name != "scale_devices":
        write_results(args.name, rows, columns, notes=__doc__)


if __name__ == "__main__":
    main()
