"""Regression parity: fairest's WassersteinParityRegressor beside fairlearn and equipy.

One linear regression is fitted on the training split (the sensitive column is dropped
from X), then on three real data sets (shared data):

* LSAC law school (Kusner et al.): first-year average ``ZFYA`` from LSAT, UGPA and sex,
  groups: ``race`` (8 values);
* UCI Communities and Crime: ``ViolentCrimesPerPop`` from the 100 complete numeric
  columns, groups: ``racepctblack > 0.06`` (the manifest's threshold);
* ACSPublicCoverage (folktables 2018, all states): ``log(PINCP)`` of the rows with a
  positive income, from the other census columns (one-hot), groups: ``RAC1P`` (9 values),
  at most ``--max-rows`` rows;

the methods are

* ``linear``: the unconstrained regression (the unfair floor);
* ``fairest``: :class:`~fairest.postprocessing.WassersteinParityRegressor` around it
  (prefit) at ``tolerance`` 0 (demographic parity) and 0.25 (a quarter of the W2
  unfairness, ``t = 1 - sqrt(0.25) = 0.5`` along the geodesic);
* ``equipy``: ``equipy.fairness.FairWasserstein`` on the same training predictions
  (calibration) at ``epsilon`` 0 and 0.5, its equivalent of the two tolerances
  (``(1 - epsilon) fair + epsilon f``), run with the Python of ``--equipy-python`` or
  ``$EQUIPY_PYTHON`` (its own virtual environment), skipped when absent;
* ``fairlearn-bgl``: fairlearn's ``ExponentiatedGradient(LinearRegression(),
  BoundedGroupLoss(SquareLoss, upper_bound=train MSE of the linear model))``, the
  randomized reduction for bounded group loss (it does not target parity of the
  prediction distributions).

Test-split columns: KS and W1 gaps between the groups' predictions (largest over pairs;
``test_ks_100`` over the groups with at least 100 test rows, since the KS gap of tiny groups
is mostly sampling noise),
the W2 unfairness, MSE and the gap of the group MSEs; seconds of each method's own work
(post-processing fit + predict, or the whole in-processing fit + predict). Run
``python benchmarks/regression_parity.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def _equipy_worker(inputs: str, outputs: str) -> None:
    """Run in equipy's own environment: map the test predictions, time it."""
    from equipy.fairness import FairWasserstein

    data = np.load(inputs, allow_pickle=False)
    results = {}
    for epsilon in data["epsilons"]:
        start = time.perf_counter()
        model = FairWasserstein(seed=0)
        model.fit(data["train_pred"], data["train_groups"])
        fair = model.transform(data["test_pred"], data["test_groups"], epsilon=float(epsilon))
        results[f"pred_{epsilon:g}"] = np.asarray(fair, dtype=np.float64)
        results[f"seconds_{epsilon:g}"] = np.array(time.perf_counter() - start)
    np.savez(outputs, **results)


# --------------------------------------------------------------------------------------
# data


def _law(datasets: Path, max_rows: int, seed: int):
    import pandas as pd

    path = datasets / "law" / "law_data.csv.xz"
    if not path.exists():
        return None
    frame = pd.read_csv(path, index_col=0)
    X = np.column_stack([frame["LSAT"], frame["UGPA"], frame["sex"] == 2]).astype(float)
    return X, frame["ZFYA"].to_numpy(float), frame["race"].astype(str).to_numpy()


def _communities(datasets: Path, max_rows: int, seed: int):
    import pandas as pd

    path = datasets / "uci" / "communities.data.xz"
    if not path.exists():
        return None
    frame = pd.read_csv(path, header=None, na_values="?")
    y = frame.iloc[:, -1].to_numpy(float)
    groups = np.where(frame.iloc[:, 7] > 0.06, "black>6%", "black<=6%")
    features = frame.iloc[:, 5:-1].drop(columns=[7]).dropna(axis=1)
    return features.to_numpy(float), y, groups


def _public_coverage(datasets: Path, max_rows: int, seed: int):
    import pandas as pd

    path = datasets / "acs" / "acs_folktables_aequitas" / "ACSPublicCoverage.test.csv.xz"
    if not path.exists():
        return None
    frame = pd.read_csv(path)
    frame = frame[frame["PINCP"] > 0]
    if len(frame) > max_rows:
        frame = frame.sample(n=max_rows, random_state=seed)
    y = np.log(frame["PINCP"].to_numpy(float))
    groups = ("RAC1P=" + frame["RAC1P"].astype(str)).to_numpy()
    numeric = ["AGEP", "SCHL"]
    categorical = [
        c for c in frame.columns if c not in {"index", "PUBCOV", "PINCP", "RAC1P", *numeric}
    ]
    dummies = pd.get_dummies(frame[categorical].astype(str), drop_first=True, dtype=float)
    X = np.column_stack([frame[numeric].to_numpy(float), dummies.to_numpy()])
    return X, y, groups


DATASETS = {
    "law (race)": _law,
    "communities (racepctblack)": _communities,
    "ACSPublicCoverage log PINCP (RAC1P)": _public_coverage,
}


# --------------------------------------------------------------------------------------
# methods


MIN_TEST_ROWS = 100  # the groups of test_ks_100


def _ks_of_large_groups(pred, groups):
    """The KS gap over the groups with at least MIN_TEST_ROWS test rows: that of tiny
    groups is mostly sampling noise (two groups of 30 rows differ by 0.35 at 95 %)."""
    from fairest.metrics import prediction_ks_distance

    labels, counts = np.unique(groups, return_counts=True)
    keep = np.isin(groups, labels[counts >= MIN_TEST_ROWS])
    if len(np.unique(groups[keep])) < 2:
        return float("nan")
    return prediction_ks_distance(None, pred[keep], sensitive_features=groups[keep])


def _scores(name, method, tolerance, y, pred, groups, seconds, train_pred=None, A_tr=None):
    from fairest.metrics import (
        mean_squared_error_gap,
        prediction_ks_distance,
        prediction_w1_distance,
        prediction_w2_unfairness,
    )

    row = {
        "data": name,
        "method": method,
        "tolerance": tolerance,
        "test_ks": prediction_ks_distance(y, pred, sensitive_features=groups),
        "test_ks_100": _ks_of_large_groups(pred, groups),
        "test_w1": prediction_w1_distance(y, pred, sensitive_features=groups),
        "test_w2_unfairness": prediction_w2_unfairness(y, pred, sensitive_features=groups),
        "test_mse": float(np.mean((y - pred) ** 2)),
        "test_mse_gap": mean_squared_error_gap(y, pred, sensitive_features=groups),
        "seconds": seconds,
    }
    if train_pred is not None:
        row["train_ks"] = prediction_ks_distance(None, train_pred, sensitive_features=A_tr)
    return row


def _equipy(python, train_pred, A_tr, test_pred, A_te, epsilons):
    """equipy's predictions and seconds per epsilon, or None when its Python is absent."""
    if not python or not Path(python).exists():
        return None
    with tempfile.TemporaryDirectory() as folder:
        inputs, outputs = Path(folder) / "in.npz", Path(folder) / "out.npz"
        codes = {label: code for code, label in enumerate(np.unique(A_tr))}
        np.savez(
            inputs,
            train_pred=train_pred,
            train_groups=np.array([codes[a] for a in A_tr]),
            test_pred=test_pred,
            test_groups=np.array([codes[a] for a in A_te]),
            epsilons=np.asarray(epsilons, dtype=float),
        )
        done = subprocess.run(
            [python, __file__, "--equipy-worker", str(inputs), str(outputs)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            print(f"equipy failed: {done.stderr.strip().splitlines()[-1:]}")
            return None
        out = np.load(outputs)
        return {e: (out[f"pred_{e:g}"], float(out[f"seconds_{e:g}"])) for e in epsilons}


def _fairlearn_bgl(X_tr, y_tr, A_tr, X_te, upper_bound):
    from fairlearn.reductions import BoundedGroupLoss, ExponentiatedGradient, SquareLoss
    from sklearn.linear_model import LinearRegression

    start = time.perf_counter()
    loss = SquareLoss(float(y_tr.min()), float(y_tr.max()))
    model = ExponentiatedGradient(
        LinearRegression(), constraints=BoundedGroupLoss(loss, upper_bound=upper_bound)
    )
    model.fit(X_tr, y_tr, sensitive_features=A_tr)
    pred = model.predict(X_te, random_state=0)
    return pred, time.perf_counter() - start


def run(name, X, y, groups, args) -> list[dict]:
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import train_test_split

    from fairest.postprocessing import WassersteinParityRegressor

    X_tr, X_te, y_tr, y_te, A_tr, A_te = train_test_split(
        X, y, groups, test_size=0.3, random_state=args.seed, stratify=groups
    )
    start = time.perf_counter()
    base = LinearRegression().fit(X_tr, y_tr)
    train_pred, test_pred = base.predict(X_tr), base.predict(X_te)
    base_seconds = time.perf_counter() - start
    rows = [_scores(name, "linear", 1.0, y_te, test_pred, A_te, base_seconds, train_pred, A_tr)]
    for tolerance in (0.0, 0.25):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # small groups warn; the table shows the gaps
            post = WassersteinParityRegressor(base, tolerance=tolerance, prefit=True)
            post.fit(X_tr, y_tr, sensitive_features=A_tr)
        pred = post.predict(X_te, sensitive_features=A_te)
        seconds = time.perf_counter() - start
        fitted = post.predict(X_tr, sensitive_features=A_tr)
        rows.append(_scores(name, "fairest", tolerance, y_te, pred, A_te, seconds, fitted, A_tr))
    mapped = _equipy(args.equipy_python, train_pred, A_tr, test_pred, A_te, [0.0, 0.5])
    if mapped is None:
        print("skipped equipy: set --equipy-python or EQUIPY_PYTHON to its environment's python")
    else:
        for epsilon, (pred, seconds) in mapped.items():
            tolerance = epsilon**2  # (1 - eps) fair + eps f is t = 1 - eps: tolerance eps^2
            rows.append(_scores(name, "equipy", tolerance, y_te, pred, A_te, seconds))
    if not args.skip_fairlearn:
        bound = float(np.mean((y_tr - train_pred) ** 2))
        pred, seconds = _fairlearn_bgl(X_tr, y_tr, A_tr, X_te, bound)
        rows.append(_scores(name, "fairlearn-bgl", None, y_te, pred, A_te, seconds))
    for row in rows:
        row["rows"] = len(y)
        row["groups"] = len(np.unique(groups))
    return rows


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import SHARED_DATASETS, base_parser, write_results

    parser = base_parser(__doc__, name="regression_parity")
    parser.add_argument("--max-rows", type=int, default=40000, help="cap of the ACS rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--equipy-python",
        default=os.environ.get("EQUIPY_PYTHON"),
        help="python of a virtual environment with equipy (default $EQUIPY_PYTHON)",
    )
    parser.add_argument("--skip-fairlearn", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.max_rows = 5000
    rows = []
    for name, load in DATASETS.items():
        data = load(SHARED_DATASETS, args.max_rows, args.seed)
        if data is None:
            print(f"skipped {name}: shared dataset not found (looked in {SHARED_DATASETS.name}/)")
            continue
        print(f"{name}: {len(data[1])} rows", flush=True)
        rows.extend(run(name, *data, args))
    if not rows:
        return
    columns = [
        "data",
        "method",
        "tolerance",
        "test_ks",
        "test_ks_100",
        "test_w1",
        "test_w2_unfairness",
        "test_mse",
        "test_mse_gap",
        "train_ks",
        "seconds",
        "rows",
        "groups",
    ]
    if args.quick and args.name == "regression_parity":
        from _common import markdown_table

        print(markdown_table(rows, columns))
        return
    path = write_results(args.name, rows, columns, notes=__doc__ + args.extra_notes)
    print(f"wrote {path}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--equipy-worker":
        _equipy_worker(sys.argv[2], sys.argv[3])
    else:
        main()
