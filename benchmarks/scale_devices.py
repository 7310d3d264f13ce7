"""Strong scaling over 1, 2 and 4 virtual CPU devices (``fairest.config_context(devices=
"all")``): the same fit, the same data, one fresh process per device count.

On a machine with fewer cores than virtual devices this measures the overhead of sharding
(collectives, padding, partitioned compilation), not a speed-up: the devices share the
cores. The model must be the same at every device count (the ``max_coef_diff`` column,
against the 1-device fit; for the networks the flattened ``params_``).

Constrained family (``--cases constrained``, results in ``scale_devices_constrained``):
LossGap SSL-ALM (minibatch 64, 2 epochs), LossGap Stochastic Ghost (30 iterations, a host
loop: one QP per iteration on the host, the derivative kernels on the mesh), LossGap
``partial_fit`` over 4 chunks (each placed on the mesh), PrunedFairClassifier (minibatch
256), all float64, hidden layer (16,) and LossGap on sparse X (a 5 %-dense CSR copy of
the data: entries replicated on every device, rows sharded).

Partial family (``--cases partial``, results in ``scale_devices_partial``):
PartialParityClassifier with its defaults (``smooth_alm``, float32 Gauss-Newton rounds),
with ``solver="idca"`` (SSG inner solves, K = 20, T = 200, float64) and
PartialParityPenaltyClassifier (``solver="subgradient"``, float64, ``tol=1e-4``: the
window stop the stored results ran with), pSP on the top 20 %,
tolerance 0.05. Their row sums are reduced in a fixed order (``fairest.partial._rows``):
the float64 paths give the same model at every device count (``max_coef_diff`` 0).

Run: ``python benchmarks/scale_devices.py`` (ERMI), ``python benchmarks/scale_devices.py
--cases constrained --n 50000 --name scale_devices_constrained`` and ``python
benchmarks/scale_devices.py --cases partial --n 50000 --name scale_devices_partial``.
"""

from __future__ import annotations

import sys

import numpy as np
from _common import base_parser, run_worker, time_calls, write_results, write_worker_result

CASES = ("ermi-full-batch", "ermi-sgda")
PARTIAL_CASES = ("partial-smooth-alm", "partial-idca", "partial-penalty")
CONSTRAINED_CASES = (
    "loss-gap-ssl-alm",
    "loss-gap-ghost",
    "loss-gap-partial-fit",
    "loss-gap-sparse-x",
    "pruned",
)


def _data(n: int, d: int):
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) + 0.5 * groups[:, None]
    y = (X[:, 0] + 0.7 * groups + rng.normal(size=n) > 0.8).astype(int)
    return X, y, groups


def _constrained_estimator(case: str):
    from fairest import LossGapConstrainedClassifier, PrunedFairClassifier

    common = dict(hidden_layer_sizes=(16,), dtype="float64", random_state=0)
    if case == "pruned":
        return PrunedFairClassifier(
            dense_n_epochs=2, n_epochs=3, pruning_epochs=1, batch_size=256, **common
        )
    if case == "loss-gap-ghost":
        return LossGapConstrainedClassifier(preset="paper", solver="ghost", max_iter=30, **common)
    return LossGapConstrainedClassifier(preset="paper", n_epochs=2, batch_size=64, **common)


def _partial_estimator(case: str):
    from fairest import PartialParityClassifier, PartialParityPenaltyClassifier

    if case == "partial-penalty":
        return PartialParityPenaltyClassifier(interval=(0.0, 0.2), solver="subgradient", tol=1e-4)
    common = dict(interval=(0.0, 0.2), tolerance=0.05)
    if case == "partial-idca":
        return PartialParityClassifier(solver="idca", max_iter=20, **common)
    return PartialParityClassifier(**common)


def _flat_parameters(model) -> list:
    if hasattr(model, "params_"):
        return np.concatenate([np.r_[W.ravel(), b.ravel()] for W, b in model.params_]).tolist()
    return model.coef_.ravel().tolist()


def _fit_function(case: str, X, y, groups):
    """``fit() -> model`` of ``case`` (``partial_fit`` over 4 chunks for the stream)."""
    if case.startswith("ermi"):
        return lambda: _estimator(case).fit(X, y, sensitive_features=groups)
    if case.startswith("partial-"):
        return lambda: _partial_estimator(case).fit(X, y, sensitive_features=groups)
    if case == "loss-gap-sparse-x":
        import scipy.sparse as sp

        X = sp.csr_matrix(np.where(np.abs(X) > 1.96, X, 0.0))  # about 5 % stored
    if case != "loss-gap-partial-fit":
        return lambda: _constrained_estimator(case).fit(X, y, sensitive_features=groups)

    def stream():
        model = _constrained_estimator(case)
        for rows in np.array_split(np.arange(y.size), 4):
            model.partial_fit(X[rows], y[rows], sensitive_features=groups[rows], classes=[0, 1])
        return model

    return stream


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
    fitted, fit_case = {}, _fit_function(case, X, y, groups)

    def fit():
        with fairest.config_context(devices="all" if n_devices > 1 else None):
            fitted["model"] = fit_case()

    timing = time_calls(fit, repeats=repeats)
    write_worker_result(out, {**timing.as_row(), "coef": _flat_parameters(fitted["model"])})


def main() -> None:
    parser = base_parser(__doc__, name="scale_devices")
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument(
        "--cases", default="ermi", choices=("ermi", "constrained", "partial"), help="which family"
    )
    parser.add_argument("--only", default=None, help="comma-separated cases of the family")
    args, rest = parser.parse_known_args()
    if args.worker:
        case, n_devices, n, d, repeats = rest
        worker(args.worker, case, int(n_devices), int(n), int(d), int(repeats))
        return
    n = 20_000 if args.quick else args.n
    rows = []
    cases = {"ermi": CASES, "constrained": CONSTRAINED_CASES, "partial": PARTIAL_CASES}[args.cases]
    for case in cases if args.only is None else args.only.split(","):
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
                    "cpu_warm_s": result["cpu_warm_s"],
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
