"""Certified fairness across US states: the i.i.d. certificate against the certificate under
demographic shift (#36 item 4), on ACSIncome 2018.

A logistic regression is fitted on 40 % of one source state's rows (all features but sex)
and certified on the other 60 % (never used to fit it): demographic parity difference by
sex at most ``--tolerance`` with delta = 0.05, once as an i.i.d. certificate (a promise
about the source state) and once under a demographic shift for each target state: ``T``
is race (RAC1P, 5 groups), the age band (<25, 25-59, >=60) or both (15 cells), and the
declared set of deployed distributions is the box of the target's published margins of
``T`` plus or minus ``--width`` (absolute shares; a value absent from the target gets
``[0, width]``). The model is then deployed to every other state: the "true" metric is
the demographic parity difference on all the target's rows (a census-size sample of
the target; its own sampling error is small beside the bounds).

Per target and certificate: the verdict at the tolerance, the certified upper bound and
the interval width, whether the *bound held* (true <= upper bound) and whether the
*promise held* (not certified-and-violating: a certificate that did not pass promises
nothing). The shift-aware certificate also gives its plug-in estimate (the source's
per-(T, S) rates reweighted to the target's margins): where it misses the true metric,
``P(X, Y, S | T)`` differs between the states, and the assumption, not the bound, fails.

Run ``python benchmarks/shift_certificates.py`` (about a minute on 2 cores); the data are
read from ``FAIREST_SHARED_DATASETS`` (default ``../shared/datasets``); without them the
script says so and writes nothing.
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
from _common import SHARED_DATASETS, base_parser, markdown_table, write_results
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairest.certified import DemographicShift, certify_fairness
from fairest.datasets import fetch_acs_income, seed_data_home
from fairest.metrics import demographic_parity_difference

DELTA = 0.05
METRIC = "demographic_parity_difference"
ATTRIBUTES = ("race", "age", "race_age")


def load():
    """The 35 states' ACSIncome rows, or None without the shared data."""
    if not (SHARED_DATASETS / "acs").is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="fairest_acs_") as home:
        seed_data_home(SHARED_DATASETS, home, datasets=["acs_income"], verify=False)
        bunch = fetch_acs_income(data_home=home)
    keep = [i for i, f in enumerate(bunch.feature_names) if f != "SEX"]
    race = bunch.sensitive["race"].astype(str).to_numpy()
    age = bunch.sensitive["age_group"].astype(str).to_numpy()
    attributes = {
        "race": race,
        "age": age,
        "race_age": np.char.add(np.char.add(race.astype(str), " | "), age.astype(str)),
    }
    return {
        "X": bunch.data[:, keep],
        "y": bunch.target,
        "sex": bunch.sensitive["sex"].astype(str).to_numpy(),
        "state": np.asarray(bunch.state, dtype=str),
        "attributes": attributes,
    }


def margins(values, universe):
    """Shares of each value of ``universe`` among ``values``."""
    counts = pd.Series(values).value_counts()
    return {value: float(counts.get(value, 0)) / len(values) for value in universe}


def run(data, source, tolerance, width, attributes):
    X, y, sex, state = data["X"], data["y"], data["sex"], data["state"]
    in_source = np.flatnonzero(state == source)
    fit_rows, cert_rows = train_test_split(in_source, test_size=0.6, random_state=0)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(X[fit_rows], y[fit_rows])
    constraints = [(METRIC, tolerance)]
    iid = certify_fairness(
        model,
        X[cert_rows],
        y[cert_rows],
        sensitive_features=sex[cert_rows],
        constraints=constraints,
        delta=DELTA,
    )
    iid_result = iid.constraints[0]
    prediction = model.predict(X)
    rows = []
    for target in sorted(set(state) - {source}):
        rows_t = np.flatnonzero(state == target)
        true = float(
            demographic_parity_difference(
                y[rows_t], prediction[rows_t], sensitive_features=sex[rows_t]
            )
        )
        row = {
            "source": source,
            "target": target,
            "n_target": rows_t.size,
            "accuracy": round(float(accuracy_score(y[rows_t], prediction[rows_t])), 4),
            "true_dp": round(true, 4),
            "iid_passed": iid.passed,
            "iid_upper": round(iid_result.upper_bound, 4),
            "iid_width": round(iid_result.upper_bound - iid_result.lower_bound, 4),
            "iid_bound_held": true <= iid_result.upper_bound,
            "iid_promise_held": not (iid.passed and true > tolerance),
        }
        for name in attributes:
            values = data["attributes"][name]
            universe = sorted(set(values))
            shift = DemographicShift.around(margins(values[rows_t], universe), width)
            certificate = certify_fairness(
                model,
                X[cert_rows],
                y[cert_rows],
                sensitive_features=sex[cert_rows],
                constraints=constraints,
                delta=DELTA,
                shift=shift,
                shift_features=values[cert_rows],
            )
            result = certificate.constraints[0]
            row.update(
                {
                    f"{name}_passed": certificate.passed,
                    f"{name}_estimate": round(result.estimate, 4),
                    f"{name}_upper": round(result.upper_bound, 4),
                    f"{name}_width": round(result.upper_bound - result.lower_bound, 4),
                    f"{name}_bound_held": true <= result.upper_bound,
                    f"{name}_promise_held": not (certificate.passed and true > tolerance),
                    f"{name}_nsf_reason": certificate.reason or "",
                }
            )
        rows.append(row)
    source_row = {
        "source": source,
        "n_certification": cert_rows.size,
        "source_dp_estimate": round(iid_result.estimate, 4),
        "iid_upper": round(iid_result.upper_bound, 4),
    }
    return rows, source_row


def summary(rows, attributes, tolerance):
    """Per certificate: targets where the promise and the bound held, NSF rate, widths."""
    frame = pd.DataFrame(rows)
    out = []
    for source, part in frame.groupby("source"):
        violating = part["true_dp"] > tolerance
        for name in ("iid", *attributes):
            label = "i.i.d. (shift ignored)" if name == "iid" else f"shift-aware, T = {name}"
            passed = part[f"{name}_passed"]
            out.append(
                {
                    "source": source,
                    "certificate": label,
                    "targets": len(part),
                    "targets violating the tolerance": int(violating.sum()),
                    "certified": int(passed.sum()),
                    "NSF rate": round(1 - passed.mean(), 3),
                    "certified and violating": int((passed & violating).sum()),
                    "promise held (share)": round(part[f"{name}_promise_held"].mean(), 3),
                    "bound held (share)": round(part[f"{name}_bound_held"].mean(), 3),
                    "median width": round(float(part[f"{name}_width"].median()), 4),
                    "median upper bound": round(float(part[f"{name}_upper"].median()), 4),
                }
            )
    return out


def main():
    parser = base_parser(__doc__, "shift_certificates")
    parser.add_argument("--sources", default="PA,GA", help="source states, comma-separated")
    parser.add_argument("--tolerance", type=float, default=0.12)
    parser.add_argument("--width", type=float, default=0.02, help="half-width of the box")
    args = parser.parse_args()
    data = load()
    if data is None:
        print(f"no ACS data under {SHARED_DATASETS}; nothing written", file=sys.stderr)
        return
    attributes = ATTRIBUTES
    sources = args.sources.split(",")
    if args.quick:
        sources, attributes = sources[:1], ATTRIBUTES[:1]
    start = time.perf_counter()
    rows, source_rows = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for source in sources:
            found, source_row = run(data, source, args.tolerance, args.width, attributes)
            rows += found
            source_rows.append(source_row)
    seconds = time.perf_counter() - start
    table = summary(rows, attributes, args.tolerance)
    print(pd.DataFrame(table).to_string())
    print(pd.DataFrame(source_rows).to_string())
    print(f"{seconds:.1f} s")
    if args.quick and args.name == "shift_certificates":
        return
    notes = (
        __doc__ + f"\nSettings: delta = {DELTA}, tolerance = {args.tolerance}, box half-width = "
        f"{args.width}, sources {', '.join(sources)}; run time {seconds:.0f} s.\n\n"
        + "Sources:\n\n"
        + markdown_table(source_rows, list(source_rows[0]))
        + "\n\nSummary per source and certificate:\n\n"
        + markdown_table(table, list(table[0]))
        + "\n\nPer target (the table below):"
        + args.extra_notes
    )
    columns = [c for c in rows[0] if not c.endswith("_nsf_reason")]
    write_results(args.name, rows, columns, notes=notes)


if __name__ == "__main__":
    main()
