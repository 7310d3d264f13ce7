"""Sparse X for the constrained family: ``LossGapConstrainedClassifier`` and
``PrunedFairClassifier`` fitted on scipy CSR against the same estimator on the dense copy
of the same data, and scikit-learn's ``LogisticRegression`` on the same CSR.

Cases (loaders of ``sparse_speed.py``): ``a9a`` (LIBSVM Adult one-hot, 32,561 x 123,
11 % dense, sex from feature 72) and ``acs_income_PA`` (ACSIncome Pennsylvania through
``make_column_transformer((OneHotEncoder(), categorical), remainder=StandardScaler())``,
hundreds of one-hot columns). Each method of each case runs in a fresh process
(:func:`_common.run_worker`): a cold fit and ``--repeats`` warm ones.

Methods: ``loss_gap`` (SSL-ALM, defaults but ``n_epochs=2``, float64), ``pruned``
(``hidden_layer_sizes=(32,)``, 3 dense + 3 fine-tuning epochs, batch 128, float64), each
on ``sparse`` and ``dense`` X; ``sklearn_lr`` (``LogisticRegression()``, lbfgs, on CSR;
unconstrained, a speed anchor only). ``max_score_diff``: largest difference of the
decision function on the training rows between the sparse and the dense fit (the same
draws and initialisation: equal up to the order of float64 sums). ``peak_above_input``:
peak RSS during the fits minus the RSS once the input exists (``/proc/self/clear_refs``).
``train_unfairness`` is the estimator's exact train loss gap (LossGap) or ``max |psi_g|``
(Pruned).

Run: ``python benchmarks/constrained_sparse.py [--quick] [--cases a9a,acs_income_PA]``.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
from _common import base_parser, run_worker, write_results, write_worker_result
from sparse_speed import _reset_peak, _status_mib, input_mib, load_a9a, load_acs

METHODS = (
    "loss_gap_sparse",
    "loss_gap_dense",
    "pruned_sparse",
    "pruned_dense",
    "sklearn_lr",
)


def load_case(case: str):
    if case == "a9a":
        return load_a9a()
    return load_acs(case.rsplit("_", 1)[1])


def make_estimator(method: str, quick: bool):
    if method == "sklearn_lr":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)
    from fairest import LossGapConstrainedClassifier, PrunedFairClassifier

    if method.startswith("loss_gap"):
        return LossGapConstrainedClassifier(
            n_epochs=1 if quick else 2, dtype="float64", preset="paper", random_state=0
        )
    return PrunedFairClassifier(
        hidden_layer_sizes=(32,),
        dense_n_epochs=1 if quick else 3,
        n_epochs=2 if quick else 3,
        pruning_epochs=1,
        batch_size=128,
        dtype="float64",
        random_state=0,
    )


def train_unfairness(model) -> float:
    if hasattr(model, "train_unfairness_"):
        return float(model.train_unfairness_)
    if hasattr(model, "psi_"):
        return float(np.max(np.abs(model.psi_)))
    return float("nan")


def worker(out: str, case: str, method: str, repeats: int, quick: bool) -> None:
    import jax  # noqa: F401  (the runtime's own memory is not the fit's)
    import sklearn.linear_model  # noqa: F401

    import fairest  # noqa: F401

    X, y, groups = load_case(case)
    if quick:
        X, y, groups = X[:5000], y[:5000], groups[:5000]
    if method.endswith("_dense"):
        X = X.toarray()
    input_rss = _status_mib("VmRSS")
    reset = _reset_peak()
    walls, cpus, loads, model = [], [], [], None
    for _ in range(1 + repeats):
        model = make_estimator(method, quick)
        fit_kw = {} if method == "sklearn_lr" else {"sensitive_features": groups}
        loads.append(__import__("os").getloadavg()[0])
        cpu, start = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y, **fit_kw)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    peak = _status_mib("VmHWM") if reset else float("nan")
    scores = model.decision_function(X)
    write_worker_result(
        out,
        {
            "rows": X.shape[0],
            "cols": X.shape[1],
            "input_mib": input_mib(X) if hasattr(X, "indptr") else X.nbytes / 2**20,
            "cold_s": walls[0],
            "warm_s": float(np.median(walls[1:])) if repeats else float("nan"),
            "cpu_warm_s": float(np.median(cpus[1:])) if repeats else float("nan"),
            "load": max(loads),
            "peak_above_input_mib": peak - input_rss,
            "train_accuracy": float(np.mean(model.predict(X) == y)),
            "train_unfairness": train_unfairness(model),
            "scores": scores.tolist(),
        },
    )


def main() -> None:
    parser = base_parser(__doc__, name="constrained_sparse")
    parser.add_argument("--cases", default="a9a,acs_income_PA")
    args, rest = parser.parse_known_args()
    if args.worker:
        case, method, repeats, quick = rest
        worker(args.worker, case, method, int(repeats), quick == "1")
        return
    rows = []
    for case in args.cases.split(","):
        scores = {}
        for method in METHODS:
            result = run_worker(
                __file__, [case, method, args.repeats, int(args.quick)], timeout=3600
            )
            scores[method] = np.asarray(result.pop("scores"))
            family = method.rsplit("_", 1)[0]
            dense = scores.get(f"{family}_dense")
            sparse = scores.get(f"{family}_sparse")
            diff = (
                float(np.max(np.abs(sparse - dense)))
                if dense is not None and sparse is not None and method.endswith("_dense")
                else None
            )
            rows.append(
                {
                    "case": case,
                    "method": method,
                    "rows": result["rows"],
                    "cols": result["cols"],
                    "input_mib": result["input_mib"],
                    "cold_s": result["cold_s"],
                    "warm_s": result["warm_s"],
                    "cpu_warm_s": result["cpu_warm_s"],
                    "process_wall_s": result["process_wall_s"],
                    "peak_above_input_mib": result["peak_above_input_mib"],
                    "train_accuracy": result["train_accuracy"],
                    "train_unfairness": result["train_unfairness"],
                    "max_score_diff": diff,
                    "load": result["load"],
                }
            )
            print(rows[-1], file=sys.stderr)
    if not args.quick or args.name != "constrained_sparse":
        notes = __doc__ + ("\n" + args.extra_notes if args.extra_notes else "")
        write_results(args.name, rows, list(rows[0]), notes=notes)


if __name__ == "__main__":
    main()
