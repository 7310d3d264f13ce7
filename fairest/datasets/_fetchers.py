"""Fetchers for the datasets that are not shipped with fairest, read from a local cache.

No download source is built in: the exact files checked here (their sha256 is fixed in
:data:`~fairest.datasets._cache.FILE_SHA256`) are not all available from one stable
public URL, and fairest's CI has no network. The cache (see
:func:`~fairest.datasets.get_data_home`) is filled with :func:`seed_data_home` from a
local folder laid out like the cache::

    <data_home>/uci/bank-full.csv.xz
    <data_home>/uci/default_of_credit_card_clients.csv.xz
    <data_home>/acs/acs_income_2018_by_state/AL.csv.xz
    ...

Every file is xz-compressed; the recorded sha256 is that of the *uncompressed* bytes and
is checked on every load.

This module gathers the fetchers and the cache's tables under one import path: the
cache, checksums and seeding live in :mod:`fairest.datasets._cache`, the UCI and law
school fetchers in :mod:`fairest.datasets._fetch_uci`, the census survey fetchers (KDD
census, ACS) in :mod:`fairest.datasets._fetch_census`.
"""

from __future__ import annotations

# the cache tables and constants below are re-exported for the modules and tests that
# read them from here (fairest._compare_data, fairest.datasets._catalog, tests)
from fairest.datasets._cache import (  # noqa: F401
    ACS_STATES,
    DATASET_FILES,
    FILE_SHA256,
    seed_data_home,
)
from fairest.datasets._fetch_census import (  # noqa: F401
    KDD_COLUMNS,
    KDD_FILES,
    fetch_acs_income,
    fetch_acs_task,
    fetch_kdd_census,
)
from fairest.datasets._fetch_uci import (  # noqa: F401
    CREDIT_TARGET,
    fetch_bank_marketing,
    fetch_communities_crime,
    fetch_credit_default,
    fetch_law_school,
    fetch_parkinsons,
    fetch_student_performance,
)

__all__ = [
    "seed_data_home",
    "fetch_bank_marketing",
    "fetch_credit_default",
    "fetch_communities_crime",
    "fetch_student_performance",
    "fetch_parkinsons",
    "fetch_law_school",
    "fetch_kdd_census",
    "fetch_acs_income",
    "fetch_acs_task",
]
