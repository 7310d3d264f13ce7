"""The table of every dataset fairest knows (for ``fairest datasets``)."""

from __future__ import annotations

import pandas as pd

from fairest.datasets._base import resolve_data_home
from fairest.datasets._fetchers import DATASET_FILES

__all__ = ["list_datasets"]

# name, kind, loader, rows and features of the default call, target, sensitive columns
_CATALOG = [
    ("adult", "bundled", "load_adult", 32561, 14, "income (>50K)", "sex, race"),
    ("german_credit", "bundled", "load_german_credit", 1000, 20, "credit (good)",
     "sex, age_group"),
    ("compas", "bundled", "load_compas", 7214, 11, "two_year_recid", "sex, race, age_cat"),
    ("ricci", "bundled", "load_ricci", 118, 4, "passed (Combine >= 70)", "race"),
    ("bank_marketing", "fetched", "fetch_bank_marketing", 45211, 15, "y (subscribed)",
     "age_group, marital"),
    ("credit_default", "fetched", "fetch_credit_default", 30000, 23,
     "default payment next month", "sex, age_group, education, marriage"),
    ("communities_crime", "fetched", "fetch_communities_crime", 1994, 122,
     "ViolentCrimesPerPop (regression)", "black_community"),
    ("student_performance", "fetched", "fetch_student_performance", 395, 32,
     "G3 (regression)", "sex, age_group, address"),
    ("parkinsons", "fetched", "fetch_parkinsons", 5875, 19, "total_UPDRS (regression)",
     "sex, age_group"),
    ("law_school", "fetched", "fetch_law_school", 20798, 11, "pass_bar", "race, sex"),
    ("kdd_census", "fetched", "fetch_kdd_census", 199523, 40, "income (50000+)", "sex, race"),
    ("acs_income", "fetched", "fetch_acs_income", 898610, 10, "PINCP (>50K)",
     "sex, race, age_group"),
    ("acs_task", "fetched", "fetch_acs_task", 332900, 10, "PINCP / MIG / PUBCOV",
     "sex, race, age_group"),
    ("grouped_classification", "synthetic", "make_grouped_classification", None, 10,
     "y (binary)", "groups"),
    ("grouped_regression", "synthetic", "make_grouped_regression", None, 10,
     "y (regression)", "groups"),
]  # fmt: skip

COLUMNS = ["name", "kind", "loader", "rows", "columns", "target", "sensitive", "available"]


def _availability(name, home) -> str:
    present = [(home / (rel + ".xz")).is_file() for rel in DATASET_FILES[name]]
    if all(present):
        return "yes"
    return "partial" if any(present) else "no"


def list_datasets(data_home=None):
    """List the datasets of :mod:`fairest.datasets` and whether they can be loaded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The cache folder in which to look for the fetched datasets' files (see
        :func:`get_data_home`); it is not created.

    Returns
    -------
    table : pandas.DataFrame
        One row per dataset with the columns

        - ``name``: dataset name (as used by :func:`seed_data_home`).
        - ``kind``: "bundled" (shipped with fairest), "fetched" (read from the data
          cache) or "synthetic" (generated).
        - ``loader``: the function of :mod:`fairest.datasets` that returns it.
        - ``rows``, ``columns``: samples and features of the default call (``<NA>`` rows
          for generators, whose size is a parameter).
        - ``target``: the target column and its positive class or task.
        - ``sensitive``: the columns of the returned ``sensitive`` DataFrame.
        - ``available``: "yes" if it can be loaded now; for fetched datasets "yes" when
          every file the fetcher can read is in the cache, "partial" when only some are
          (some options work), "no" when none is. Checksums are checked at load time.

    Examples
    --------
    >>> from fairest.datasets import list_datasets
    >>> table = list_datasets()
    >>> table.loc[table.kind == "bundled", "name"].tolist()
    ['adult', 'german_credit', 'compas', 'ricci']
    """
    home = resolve_data_home(data_home)
    rows = []
    for name, kind, loader, n_rows, n_cols, target, sensitive in _CATALOG:
        available = _availability(name, home) if kind == "fetched" else "yes"
        rows.append((name, kind, loader, n_rows, n_cols, target, sensitive, available))
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["rows"] = table["rows"].astype("Int64")
    table["columns"] = table["columns"].astype("int64")
    return table
