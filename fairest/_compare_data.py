"""The datasets of ``fairest compare --dataset``: bundled ones, ACSIncome of one state and
the practitioner tasks of ``benchmarks/practitioner.py``, split into train and test rows.

The practitioner tasks (:data:`PRACTITIONER`) are read as that benchmark reads them: the
same fetcher, sensitive feature and feature types (integer codes of categories become
string categories, so compare's preprocessing one-hot encodes them). Their large training
splits are capped by a sample stratified by label and group (:func:`cap_rows`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

BUNDLED = ("adult", "german_credit", "compas", "ricci")
#: The four real tasks of ``benchmarks/practitioner.py``.
PRACTITIONER = ("acs_public_coverage", "kdd_census", "bank_marketing", "credit_default")
#: Read from ``--data-home``, the data cache or ``../shared/datasets``.
FETCHED = ("acs_income", *PRACTITIONER)
#: ``--max-rows`` of the practitioner tasks when not given: the benchmark's training size.
DEFAULT_MAX_ROWS = 20_000
ACS_NOMINAL = ["COW", "MAR", "OCCP", "POBP", "RELP", "SEX", "RAC1P"]  # codes, not amounts


class UserError(Exception):
    """A problem with the user's input: printed as one line, exit status 2."""


def one_line(error) -> str:
    return " ".join(str(error).split())


def data_homes(data_home) -> list:
    """Folders to look in: ``--data-home``, else the data cache and ``../shared/datasets``."""
    if data_home is not None:
        return [data_home]
    return [None, str(Path.cwd().parent / "shared" / "datasets")]


def fetch_from_homes(fetch, data_home, what: str, relpaths: list[str]):
    """``fetch(data_home=home)`` of the first folder of :func:`data_homes` holding the
    data; a :class:`UserError` naming ``relpaths`` (paths in the cache, ``.xz`` added)
    and ``--data-home`` when none does."""
    from fairest.datasets import get_data_home

    looked = []
    for home in data_homes(data_home):
        try:
            return fetch(data_home=home)
        except FileNotFoundError:
            looked.append(get_data_home(home) if home is None else str(home))
        except OSError as error:  # a file that fails its checksum
            raise UserError(one_line(error)) from None
    files = " and ".join(f"{path}.xz" for path in relpaths)
    raise UserError(
        f"{what} not found (looked in {', '.join(looked)}); pass --data-home with a folder "
        f"holding {files}, or fill the cache with fairest.datasets.seed_data_home."
    )


def sensitive_columns(frame: pd.DataFrame, requested, default) -> list[str]:
    columns = requested or [default]
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise UserError(
            f"unknown sensitive column(s) {missing}; this dataset has {list(frame.columns)}."
        )
    return columns


def split(name, X, y, sensitive, test_size: float, seed: int, task="classification"):
    """A :class:`~fairest._compare.CompareData` of a train/test split, stratified by label
    and group for classification when every (label, group) cell holds 2 rows."""
    from sklearn.model_selection import train_test_split

    from fairest._compare import CompareData

    strata = None
    if task == "classification":
        cells = (
            pd.Series(y).astype(str).to_numpy()
            + "|"
            + sensitive.astype(str).agg("|".join, axis=1).to_numpy()
        )
        strata = cells if pd.Series(cells).value_counts().min() >= 2 else None
    parts = train_test_split(
        X, y, sensitive, test_size=test_size, random_state=seed, stratify=strata
    )
    X_train, X_test, y_train, y_test, s_train, s_test = parts
    return CompareData(name, X_train, y_train, s_train, X_test, y_test, s_test, task)


def load_bundled(name: str, sensitive: list[str] | None, test_size: float, seed: int):
    from fairest import datasets
    from fairest._compare import CompareData

    if name == "adult":
        train = datasets.load_adult(subset="train", as_frame=True)
        test = datasets.load_adult(subset="test", as_frame=True)
        columns = sensitive_columns(train.sensitive, sensitive, default="sex")
        return CompareData(
            name,
            train.data,
            train.target.to_numpy(),
            train.sensitive[columns],
            test.data,
            test.target.to_numpy(),
            test.sensitive[columns],
            "classification",
        )
    bunch = getattr(datasets, f"load_{name}")(as_frame=True)
    columns = sensitive_columns(bunch.sensitive, sensitive, default=bunch.sensitive.columns[0])
    y = bunch.target.to_numpy()
    return split(name, bunch.data, y, bunch.sensitive[columns], test_size, seed)


def load_acs_income(state, data_home, sensitive, test_size: float, seed: int):
    from fairest.datasets import fetch_acs_income
    from fairest.datasets._fetchers import ACS_STATES

    if state is None:
        raise UserError(f"--dataset acs_income needs --state, one of {', '.join(ACS_STATES)}.")
    state = state.upper()
    if state not in ACS_STATES:
        raise UserError(f"no ACS data for state {state!r}; available: {', '.join(ACS_STATES)}.")
    bunch = fetch_from_homes(
        lambda data_home: fetch_acs_income(states=state, data_home=data_home, as_frame=True),
        data_home,
        f"ACSIncome data for {state}",
        [f"acs/acs_income_2018_by_state/{state}"],
    )
    X = bunch.data.copy()
    X[ACS_NOMINAL] = X[ACS_NOMINAL].astype("int64").astype(str)  # one-hot, not scaled
    columns = sensitive_columns(bunch.sensitive, sensitive, default="sex")
    y = bunch.target.to_numpy()
    return split(f"acs_income ({state})", X, y, bunch.sensitive[columns], test_size, seed)


def _as_categories(X: pd.DataFrame, columns) -> pd.DataFrame:
    """``columns`` of ``X`` as string categories (codes of categories, not amounts)."""
    X = X.copy()
    for column in columns:
        X[column] = X[column].astype(str).astype("category")
    return X


def read_practitioner(name: str, data_home):
    """``(X, y, sensitive, default)`` of a practitioner task, as ``load_task`` of
    ``benchmarks/practitioner.py`` reads it: features, 0/1 labels and the fetcher's
    sensitive columns, in which ``default`` is the benchmark's sensitive feature (the
    same groups, with the fetcher's labels: ACS race names the 9 ``RAC1P`` codes)."""
    from fairest import datasets
    from fairest.datasets._fetchers import DATASET_FILES, KDD_FILES

    def fetch(function, files, *args):
        return fetch_from_homes(
            lambda data_home: function(
                *args, data_home=data_home, download_if_missing=False, as_frame=True
            ),
            data_home,
            f"{name} data",
            files,
        )

    if name == "acs_public_coverage":
        files = ["acs/acs_folktables_aequitas/ACSPublicCoverage.test.csv"]
        bunch = fetch(datasets.fetch_acs_task, files, "ACSPublicCoverage")
        X = _as_categories(bunch.data, bunch.data.columns.difference(["AGEP", "PINCP"]))
        default = "race"
    elif name == "kdd_census":
        bunch = fetch(datasets.fetch_kdd_census, [KDD_FILES["train"]])
        X = bunch.data  # string categories with missing values, as given
        default = "race"
    elif name == "bank_marketing":
        bunch = fetch(datasets.fetch_bank_marketing, DATASET_FILES["bank_marketing"][:1])
        X = bunch.data
        band = pd.cut(X["age"], [0, 29, 59, 200], labels=["under 30", "30-59", "60+"])
        default = "age band"
    elif name == "credit_default":
        bunch = fetch(datasets.fetch_credit_default, DATASET_FILES["credit_default"])
        X = _as_categories(bunch.data, ["SEX", "EDUCATION", "MARRIAGE"])
        default = "sex"
    else:
        raise UserError(f"unknown practitioner task {name!r}; tasks: {', '.join(PRACTITIONER)}.")
    sensitive = bunch.sensitive.astype(str)
    if name == "bank_marketing":  # the benchmark's bands, not the fetcher's age_group
        sensitive.insert(0, default, band.astype(str).to_numpy())
    return X, np.asarray(bunch.target).astype(int), sensitive, default


def load_practitioner(name: str, data_home, sensitive, test_size: float, seed: int):
    X, y, frame, default = read_practitioner(name, data_home)
    columns = sensitive_columns(frame, sensitive, default=default)
    return split(name, X, y, frame[columns], test_size, seed)


def _stratified_rows(cells: np.ndarray, n_rows: int, rng) -> np.ndarray:
    """Sorted positions of ``n_rows`` rows, each cell in proportion to its size and
    keeping ``min(size, 2)`` rows of each (more than ``n_rows`` only when these minimums
    alone pass it)."""
    labels, inverse, sizes = np.unique(cells, return_inverse=True, return_counts=True)
    exact = sizes * (n_rows / len(cells))
    floor = np.minimum(sizes, 2)
    quota = np.maximum(np.floor(exact).astype(int), floor)
    short = n_rows - int(quota.sum())
    if short > 0:  # the rounding's remainder, to the largest fractional parts with room
        order = [c for c in np.argsort(-(exact - np.floor(exact))) if quota[c] < sizes[c]]
        quota[order[:short]] += 1
    while short < 0 and (quota > floor).any():  # the minimums' rows, from the largest cells
        quota[np.argmax(np.where(quota > floor, quota, -1))] -= 1
        short += 1
    chosen = [
        rng.choice(np.flatnonzero(inverse == c), size=quota[c], replace=False)
        for c in range(len(labels))
    ]
    return np.sort(np.concatenate(chosen))


def cap_rows(data, max_rows: int, seed: int):
    """``data`` with at most ``max_rows`` train rows and as many test rows, each side a
    sample stratified by group (and label for classification) that keeps every group;
    unchanged when both sides fit. The name says the sample."""
    import dataclasses

    from fairest._compare import group_labels

    n_train, n_test = len(data.y_train), len(data.y_test)
    if max_rows <= 0 or max(n_train, n_test) <= max_rows:
        return data
    rng = np.random.default_rng(seed)
    sides = {}
    for side, X, y, s in (
        ("train", data.X_train, data.y_train, data.s_train),
        ("test", data.X_test, data.y_test, data.s_test),
    ):
        if len(y) <= max_rows:
            sides[side] = (X, y, s)
            continue
        cells = group_labels(s)
        if data.task == "classification":
            cells = pd.Series(y).astype(str).to_numpy() + "|" + cells
        rows = _stratified_rows(cells, max_rows, rng)
        sides[side] = (X.iloc[rows], np.asarray(y)[rows], s.iloc[rows])
    (X_train, y_train, s_train), (X_test, y_test, s_test) = sides["train"], sides["test"]
    by = "label and group" if data.task == "classification" else "group"
    name = (
        f"{data.name}, sampled by {by} from {n_train} train / {n_test} test rows "
        f"(--max-rows {max_rows})"
    )
    return dataclasses.replace(
        data,
        name=name,
        X_train=X_train,
        y_train=y_train,
        s_train=s_train,
        X_test=X_test,
        y_test=y_test,
        s_test=s_test,
    )
