"""The bad-input table: every public estimator x every bad or edge input of
``tests/reliability/test_bad_inputs.py`` -> what happens (the error type and the start of
its message, or a finite model, with the warnings it gave).

The test asserts the outcomes; this script shows them side by side.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
from _common import ROOT, base_parser, write_results

sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "reliability")]

import test_bad_inputs as cases  # noqa: E402
from _fast_params import fast_instance  # noqa: E402


def _edge_cases(cls):
    """The test module's edge inputs that apply to ``cls``."""
    regressor = cls.__name__.endswith("Regressor")
    return {
        name: make
        for name, make in cases.EDGE_INPUTS.items()
        if not (regressor and name in cases.CLASSIFICATION_ONLY)
    }


def _outcome(cls, make, data) -> str:
    args, fit_params = make(*data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            estimator = fast_instance(cls).fit(*args, **fit_params)
        except Exception as error:
            message = str(error).replace("|", "/").replace("\n", " ")
            return f"{type(error).__name__}: {message[:70]}{'...' if len(message) > 70 else ''}"
    X = data[0]
    output = (
        estimator.decision_function(X)
        if hasattr(estimator, "decision_function")
        else estimator.predict(X)
    )
    finite = bool(np.all(np.isfinite(np.asarray(output, dtype=float))))
    kinds = sorted({w.category.__name__ for w in caught})
    return ("finite model" if finite else "NON-FINITE") + (
        f" ({', '.join(kinds)})" if kinds else ""
    )


def main() -> None:
    args = base_parser(__doc__, name="bad_inputs_table").parse_args()
    rows = []
    for cls in cases.ESTIMATORS:
        data = cases._data(cls)
        table = {name: make for name, (make, _, _) in cases.MUST_RAISE.items()}
        table.update(_edge_cases(cls))
        if args.quick:
            table = dict(list(table.items())[:3])
        for case, make in table.items():
            rows.append(
                {"estimator": cls.__name__, "input": case, "outcome": _outcome(cls, make, data)}
            )
            print(rows[-1], file=sys.stderr)
    write_results(args.name, rows, ["estimator", "input", "outcome"], notes=__doc__)
    print(Path(ROOT / "benchmarks" / "results" / f"{args.name}.md"))


if __name__ == "__main__":
    main()
