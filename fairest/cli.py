"""The ``fairest`` command line: ``fairest datasets`` and ``fairest compare``."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from fairest._compare_data import (
    BUNDLED,
    DEFAULT_MAX_ROWS,
    FETCHED,
    PRACTITIONER,
    UserError,
    cap_rows,
    load_acs_income,
    load_bundled,
    load_practitioner,
    split,
)
from fairest._compare_data import one_line as _one_line

__all__ = ["main", "UserError"]

_load_bundled = load_bundled  # the profile benchmark's entry to compare's Adult split


MAX_CLASSES = 10  # a whole-number target with at most this many values reads as classes


def _load_csv(
    path: str,
    target: str | None,
    sensitive: list[str] | None,
    test_size: float,
    seed: int,
    *,
    task: str = "auto",
    positive: str | None = None,
):
    if target is None or not sensitive:
        raise UserError("--data needs --target COL and --sensitive COL[,COL].")
    if target in sensitive:
        raise UserError(
            f"--sensitive {target!r} is the target column (--target {target}); the sensitive "
            "columns must be other columns of the file."
        )
    if Path(path).is_dir():
        raise UserError(f"{path} is a directory; --data needs a CSV file.")
    try:
        frame = pd.read_csv(path)
    except FileNotFoundError:
        raise UserError(f"no such file: {path}") from None
    except PermissionError:
        raise UserError(f"cannot read {path}: permission denied.") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise UserError(f"could not read {path} as CSV: {_one_line(error)}") from None
    missing = [c for c in [target, *sensitive] if c not in frame.columns]
    if missing:
        raise UserError(f"column(s) {missing} not in {path}; columns are {list(frame.columns)}.")
    n_missing = int(frame[target].isna().sum())
    if n_missing:  # documented: rows without a target cannot be scored, so they go, counted
        print(f"dropped {n_missing} row(s) with a missing {target!r}", file=sys.stderr)
        frame = frame.dropna(subset=[target])
    y = _plain_target(frame[target])
    n_values = pd.Series(y).nunique()
    if n_values < 2:
        raise UserError(f"target {target!r} has a single value; nothing to learn.")
    task = _task_of(target, y, n_values, task, positive)
    if task == "classification":
        y = _binary_target(target, y, positive)
    if len(frame) < 20:
        raise UserError(f"{path} has {len(frame)} rows with a target; compare needs at least 20.")
    if frame[sensitive].isna().any().any():
        raise UserError(f"sensitive column(s) {sensitive} have missing values; fill them first.")
    X = frame.drop(columns=[target])
    _check_features(X.drop(columns=sensitive, errors="ignore"))
    return split(Path(path).name, X, y, frame[sensitive], test_size, seed, task)


def _task_of(target: str, y: np.ndarray, n_values: int, task: str, positive) -> str:
    """``"classification"`` or ``"regression"``: ``--task`` when given, else a text or
    two-valued target is classes, a whole-number one of at most :data:`MAX_CLASSES`
    values too (class codes: 0, 1, 2), any other number is a regression target."""
    numeric = y.dtype.kind in "iuf"
    if task == "regression":
        if not numeric:
            raise UserError(f"--task regression needs a numeric target; {target!r} is not.")
        if positive is not None:
            raise UserError(
                "--positive binarises a class target; it has no use with --task regression."
            )
        return task
    if task == "classification" or positive is not None or not numeric or n_values <= 2:
        return "classification"
    if y.dtype.kind in "iu" and n_values <= MAX_CLASSES:
        return "classification"
    return "regression"


def _binary_target(target: str, y: np.ndarray, positive) -> np.ndarray:
    """``y`` coded 1 for the positive class and 0 for the others: ``--positive`` when
    given (one class against the rest), else the last of two classes; more than two
    classes without ``--positive`` are refused (the compare methods are binary)."""
    classes = np.unique(y.astype(str))
    if positive is not None:
        if positive not in classes:
            raise UserError(
                f"--positive {positive!r} is not a class of {target!r}; its classes are "
                f"{', '.join(classes[:20])}."
            )
    elif classes.size > 2:
        shown = ", ".join(classes[:10]) + (", ..." if classes.size > 10 else "")
        numeric = y.dtype.kind in "iuf"
        raise UserError(
            f"target {target!r} has {classes.size} classes ({shown}); the compare methods "
            "are binary classifiers. Binarise it with --positive LABEL (that class coded 1, "
            f"the others 0, e.g. --positive {classes[-1]})"
            + (", or read it as a number with --task regression." if numeric else ".")
        )
    positive = classes[-1] if positive is None else positive
    rest = f", the other {classes.size - 1} classes coded 0" if classes.size > 2 else ""
    print(f"positive class of {target!r}: {positive} (coded 1){rest}", file=sys.stderr)
    return (y.astype(str) == positive).astype(int)


def _method_names(text: str | None, task: str, available: list[str]) -> list[str]:
    """The ``--methods`` list, checked: known names for the task, at least one."""
    from fairest._compare import METHODS

    if text is None:
        return list(available)
    names = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    if not names:
        raise UserError(
            f"--methods is empty; name at least one method, e.g. --methods "
            f"{','.join(available[:2])}. Available for {task}: {', '.join(available)} "
            "(--methods list prints them all)."
        )
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise UserError(f"unknown method(s) {unknown}; available: {', '.join(METHODS)}.")
    wrong_task = [n for n in names if METHODS[n].task != task]
    if wrong_task:
        raise UserError(
            f"method(s) {wrong_task} do not handle {task}; available for {task}: "
            f"{', '.join(available)}."
        )
    return names


def _plain_target(column: pd.Series) -> np.ndarray:
    """Target values; a float column of whole numbers (read as float because of a
    missing value) becomes integers, so classes print as ``1``, not ``1.0``."""
    values = column.to_numpy()
    if values.dtype.kind == "f" and np.all(values == np.round(values)):
        return values.astype(np.int64)
    return values


def _check_features(X: pd.DataFrame) -> None:
    numeric = X.select_dtypes(include="number")
    infinite = [c for c in numeric.columns if np.isinf(numeric[c].to_numpy(dtype=float)).any()]
    if infinite:
        raise UserError(
            f"feature column(s) {infinite[:5]} hold infinite values; replace them (missing "
            "values are imputed, infinite ones are not)."
        )


def _check_split(data) -> None:
    """Every group needs 2 training rows and the test split one row, before any fit."""
    if len(data.y_train) < 10 or len(data.y_test) < 1:
        raise UserError(
            f"too few rows to compare methods: {len(data.y_train)} train / "
            f"{len(data.y_test)} test after the split; use at least 20 rows."
        )
    from fairest._compare import group_labels

    counts = pd.Series(group_labels(data.s_train)).value_counts()
    small = counts[counts < 2]
    if len(small):
        shown = ", ".join(f"{label!r} ({n} row)" for label, n in small.head(5).items())
        raise UserError(
            f"every sensitive group needs at least 2 training rows; too small: {shown}. "
            "Merge or drop these groups first."
        )
    if data.task == "classification" and len(np.unique(data.y_train)) < 2:
        raise UserError("the training split holds one class only; use more rows.")


def _check_output(folder: Path) -> None:
    """Fail before any fit when the report folder cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".fairest-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise UserError(
            f"cannot write the report to {folder}: {error.strerror or error}."
        ) from None


def _parse_settings(settings: list[str] | None, names: list[str], seed: int) -> dict:
    """``--set METHOD.PARAM=VALUE`` (repeatable) as ``{method: {param: value}}``, each
    checked on the method's estimator before any fit. VALUE is a Python literal
    (``200``, ``0.05``, ``None``, ``'auto'``) or else a plain string."""
    import ast

    from fairest._compare import METHODS, make_estimator

    params: dict = {}
    for setting in settings or []:
        target, equals, text = setting.partition("=")
        name, dot, param = target.partition(".")
        if not (equals and dot and name and param):
            raise UserError(
                f"--set takes METHOD.PARAM=VALUE, e.g. partial-sp.max_iter=200; got {setting!r}."
            )
        if name not in METHODS:
            raise UserError(f"--set: unknown method {name!r}; available: {', '.join(METHODS)}.")
        if name not in names:
            raise UserError(f"--set: method {name!r} is not in this run; add it to --methods.")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        params.setdefault(name, {})[param] = value
    for name, values in params.items():
        try:
            make_estimator(METHODS[name], seed, values)
        except (ValueError, TypeError) as error:
            raise UserError(f"--set {name}: {_one_line(error)[:300]}") from None
    return params


def _command_compare(args) -> int:
    from fairest._compare import METHODS, run_comparison
    from fairest._report import write_report
    from fairest.utils._reporting import show_progress

    if args.methods == "list":
        for name, method in METHODS.items():
            print(f"{name:20} {method.task:15} {method.label}")
        return 0
    sensitive = args.sensitive.split(",") if args.sensitive else None
    if not 0.0 < args.test_size < 1.0:
        raise UserError(
            f"--test-size must be a fraction strictly between 0 and 1; got {args.test_size:g}."
        )
    if not args.data and (args.task != "auto" or args.positive is not None):
        raise UserError("--task and --positive apply to a CSV file (--data).")
    if args.state is not None and (args.data or args.dataset != "acs_income"):
        raise UserError("--state applies to --dataset acs_income only.")
    max_rows = args.max_rows
    if max_rows is None:  # documented: the large fetched tasks are capped unless asked
        max_rows = DEFAULT_MAX_ROWS if not args.data and args.dataset in PRACTITIONER else 0
    if max_rows < 0:
        raise UserError(f"--max-rows must be 0 (all rows) or positive; got {max_rows}.")
    if args.data:
        data = _load_csv(
            args.data,
            args.target,
            sensitive,
            args.test_size,
            args.seed,
            task=args.task,
            positive=args.positive,
        )
    elif args.dataset == "acs_income":
        data = load_acs_income(args.state, args.data_home, sensitive, args.test_size, args.seed)
    elif args.dataset in PRACTITIONER:
        data = load_practitioner(args.dataset, args.data_home, sensitive, args.test_size, args.seed)
    else:
        if args.dataset not in BUNDLED:
            raise UserError(
                f"unknown dataset {args.dataset!r}; bundled: {', '.join(BUNDLED)}; "
                f"from the data cache: {', '.join(FETCHED)}."
            )
        data = load_bundled(args.dataset, sensitive, args.test_size, args.seed)
    data = cap_rows(data, max_rows, args.seed)
    if args.n_boot < 0:
        raise UserError(f"--n-boot must be 0 (no intervals) or positive; got {args.n_boot}.")
    available = [
        name for name, method in METHODS.items() if method.task == data.task and not method.optional
    ]
    names = _method_names(args.methods, data.task, available)
    if args.certified:
        certified = [n for n, m in METHODS.items() if m.optional and m.task == data.task]
        if not certified:
            raise UserError(f"--certified has no method for {data.task}.")
        names += [n for n in certified if n not in names]
    params = _parse_settings(args.set, names, args.seed)
    _check_split(data)
    _check_output(Path(args.output))
    print(
        f"fairest compare: {data.name} ({len(data.y_train)} train / {len(data.y_test)} test rows, "
        f"sensitive: {', '.join(data.s_train.columns)})",
        file=sys.stderr,
    )
    with show_progress(False if args.no_progress else None) as bar:

        def say(message):
            if bar is not None:
                bar.clear()
            print(message, file=sys.stderr, flush=True)

        comparison = run_comparison(
            data,
            names,
            random_state=args.seed,
            n_boot=args.n_boot,
            progress=say,
            paths=not args.no_paths,
            params=params,
        )
    table = comparison.table
    with pd.option_context("display.width", 250, "display.float_format", "{:.4f}".format):
        print(_terminal_table(table).to_string())
    chosen = table["fitted"][table["fitted"] != ""]
    if len(chosen):
        print("\nwhat the methods chose:")
        for label, text in chosen.items():
            print(f"  {label}: {text}")
    if comparison.settings:
        print("\nsettings (not the estimators' defaults; change them with --set):")
        for label, text in comparison.settings.items():
            print(f"  {label}: {text}")
    noted = table["note"][table["note"] != ""]
    if len(noted):
        print("\nnotes:")
        for label, text in noted.items():
            print(f"  {label}: {text}")
    report = write_report(comparison, data, Path(args.output))
    print(f"\nreport written to {report} and {report.with_suffix('.html').name}", file=sys.stderr)
    return 0


def _terminal_table(table: pd.DataFrame) -> pd.DataFrame:
    """The score table for the terminal: each metric with its interval in one cell."""
    shown = table.drop(columns=["fitted", "note"], errors="ignore")
    for column in [c for c in shown.columns if c.endswith(" CI")]:
        metric = column.rsplit(" ", 2)[0]
        if metric in shown.columns:
            shown[metric] = [f"{v:.4f} {ci}" for v, ci in zip(shown[metric], shown[column])]
            shown = shown.drop(columns=column)
    return shown


def _command_datasets(args) -> int:
    from fairest.datasets import list_datasets

    with pd.option_context("display.width", 200, "display.max_colwidth", 40):
        print(list_datasets(data_home=args.data_home).to_string(index=False))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairest", description="Fairness-aware estimators.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("datasets", help="list bundled, cached and synthetic datasets")
    listing.add_argument(
        "--data-home",
        default=None,
        help="data cache folder (default: FAIREST_DATA or ~/fairest_data)",
    )
    listing.set_defaults(run=_command_datasets)
    compare = commands.add_parser("compare", help="fit the available methods side by side")
    compare.add_argument(
        "--dataset",
        default="adult",
        help=f"bundled dataset ({', '.join(BUNDLED)}); acs_income (with --state) or a "
        f"practitioner task ({', '.join(PRACTITIONER)}), read from --data-home, the data "
        "cache or ../shared/datasets; default adult",
    )
    compare.add_argument("--state", help="two-letter US state of --dataset acs_income, e.g. AL")
    compare.add_argument(
        "--data-home",
        default=None,
        help="folder holding the fetched datasets (default: the data cache, then "
        "../shared/datasets)",
    )
    compare.add_argument(
        "--max-rows",
        type=int,
        default=None,
        metavar="N",
        help="at most about N train rows and N test rows, each a sample stratified by label "
        "and group that keeps every group (at least 2 rows of each label of a group); "
        f"0: all rows (default {DEFAULT_MAX_ROWS} for {', '.join(PRACTITIONER)}; all "
        "rows otherwise)",
    )
    compare.add_argument("--data", help="a CSV file instead of a bundled dataset")
    compare.add_argument("--target", help="target column of the CSV")
    compare.add_argument(
        "--task",
        choices=("auto", "classification", "regression"),
        default="auto",
        help="how to read the CSV's target (default auto: text, two values or whole numbers "
        f"with at most {MAX_CLASSES} values are classes, other numbers a regression target)",
    )
    compare.add_argument(
        "--positive",
        metavar="LABEL",
        help="binarise the CSV's class target: LABEL coded 1, every other class 0 (needed "
        "for more than two classes: the compared methods are binary)",
    )
    compare.add_argument(
        "--sensitive", help="sensitive column(s), comma separated (default: sex for adult)"
    )
    compare.add_argument(
        "--methods",
        help="comma-separated method names (default: all for the task); 'list' prints them",
    )
    compare.add_argument(
        "--test-size",
        type=float,
        default=0.3,
        help="held-out fraction for CSVs and non-Adult data",
    )
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument(
        "--n-boot",
        type=int,
        default=200,
        help="0: no confidence intervals; otherwise intervals that hold at exact parity "
        "(rates: exact per-group intervals; other metrics: this many bootstrap replicates)",
    )
    compare.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line inside long fits (it is only drawn when stderr is a terminal)",
    )
    compare.add_argument(
        "--no-paths",
        action="store_true",
        help="skip the fairness paths (paths.png) of the methods that have one",
    )
    compare.add_argument(
        "--certified",
        action="store_true",
        help="add a certified row: the group-threshold post-processor wrapped in "
        "CertifiedFairClassifier (a high-confidence demographic parity guarantee, or no "
        "solution found)",
    )
    compare.add_argument(
        "--set",
        action="append",
        metavar="METHOD.PARAM=VALUE",
        help="set a parameter of one method's estimator (repeatable), e.g. "
        "--set partial-sp.solver=idca for the paper's solver; see 'Settings' in the report",
    )
    compare.add_argument(
        "--output",
        default="fairest_report",
        help="folder for report.md, report.html, results.csv and the PNGs",
    )
    compare.set_defaults(run=_command_compare)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fairest`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    if not os.environ.get("FAIREST_NO_COMPILATION_CACHE"):
        from fairest.utils import enable_compilation_cache

        enable_compilation_cache()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=FutureWarning)  # third-party noise
            warnings.simplefilter(
                "ignore", category=getattr(pd.errors, "Pandas4Warning", FutureWarning)
            )
            return args.run(args)
    except UserError as error:
        print(f"fairest: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
