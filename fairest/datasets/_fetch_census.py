"""Fetchers of US Census Bureau surveys: KDD census income (the 1994 and 1995 Current
Population Surveys) and the American Community Survey's folktables tasks.

Each reads its files from the data cache (:mod:`fairest.datasets._cache`), checksum
verified, and returns a scikit-learn :class:`~sklearn.utils.Bunch`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairest.datasets._base import (
    _check_flags,
    age_group,
    as_category,
    make_bunch,
)
from fairest.datasets._cache import (
    ACS_STATES,
    _choice,
    _csv,
    _read_cached,
)

__all__ = ["fetch_kdd_census", "fetch_acs_income", "fetch_acs_task"]


# ---------------------------------------------------------------------------- KDD census
KDD_COLUMNS = [
    "age", "class_of_worker", "detailed_industry_recode", "detailed_occupation_recode",
    "education", "wage_per_hour", "enroll_in_edu_inst_last_wk", "marital_stat",
    "major_industry_code", "major_occupation_code", "race", "hispanic_origin", "sex",
    "member_of_a_labor_union", "reason_for_unemployment",
    "full_or_part_time_employment_stat", "capital_gains", "capital_losses",
    "dividends_from_stocks", "tax_filer_stat", "region_of_previous_residence",
    "state_of_previous_residence", "detailed_household_and_family_stat",
    "detailed_household_summary_in_household", "instance_weight",
    "migration_code_change_in_msa", "migration_code_change_in_reg",
    "migration_code_move_within_reg", "live_in_this_house_1_year_ago",
    "migration_prev_res_in_sunbelt", "num_persons_worked_for_employer",
    "family_members_under_18", "country_of_birth_father", "country_of_birth_mother",
    "country_of_birth_self", "citizenship", "own_business_or_self_employed",
    "fill_inc_questionnaire_for_veterans_admin", "veterans_benefits",
    "weeks_worked_in_year", "year", "income",
]  # fmt: skip
KDD_FILES = {"train": "uci/census-income.data", "test": "uci/census-income.test"}
KDD_DESCR = """\
Census-Income (KDD) dataset (UCI)
=================================

Weighted census data from the 1994 and 1995 Current Population Surveys (Lane & Kohavi
2000): 199,523 training and 99,762 test rows, 40 attributes.

Target coding (column ``income``): 1 = income above 50,000 USD ("50000+.", 6.2 %),
0 = "- 50000.".

Features (40): every attribute except ``instance_weight`` (the CPS weight, returned in
``sample_weight``; not a feature) and the label. Integer-coded attributes (industry and
occupation recodes, own_business_or_self_employed, veterans_benefits, year) stay numeric
as published. "?" is NaN; "Not in universe" is kept as a category.

Sensitive attributes (``sensitive``): ``sex`` and ``race`` (5 groups).

Licence: CC BY 4.0 (UCI Machine Learning Repository).
"""


def _read_kdd(subset, data_home, download_if_missing):
    raw = _read_cached("kdd_census", KDD_FILES[subset], data_home, download_if_missing)
    return _csv(
        raw,
        header=None,
        names=KDD_COLUMNS,
        skipinitialspace=True,
        na_values="?",
        keep_default_na=False,
    )


def fetch_kdd_census(
    *,
    subset="train",
    data_home=None,
    download_if_missing=True,
    as_frame=False,
    return_X_y=False,
):
    """Load the UCI Census-Income (KDD) dataset from the data cache.

    =================   =================================================
    Samples             199,523 (train), 99,762 (test), 299,285 (all)
    Features            40 (12 numeric, 28 categorical)
    Target              ``income``: 1 = above 50,000 USD
    Sensitive           ``sex``, ``race``
    =================   =================================================

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Which UCI split to load; ``"all"`` stacks train and test.
    data_home, download_if_missing, as_frame, return_X_y
        As in :func:`fetch_bank_marketing`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["-50000", "50000+"]``), ``target_column``, ``sensitive``, ``sample_weight``
        (the CPS instance weights), ``categories`` and ``DESCR``.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] T. Lane and R. Kohavi, "Census-Income (KDD)", UCI Machine Learning
       Repository, 2000. https://doi.org/10.24432/C5N30T
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    _choice("subset", subset, ("train", "test", "all"))
    if subset == "all":
        frame = pd.concat(
            [_read_kdd(s, data_home, download_if_missing) for s in ("train", "test")],
            ignore_index=True,
        )
    else:
        frame = _read_kdd(subset, data_home, download_if_missing)
    label = frame["income"].str.strip().str.rstrip(".")
    target = (label == "50000+").to_numpy(dtype=np.int64)
    for column in KDD_COLUMNS:
        if column != "income" and not pd.api.types.is_numeric_dtype(frame[column]):
            frame[column] = as_category(frame[column])
    features = [c for c in KDD_COLUMNS if c not in ("instance_weight", "income")]
    return make_bunch(
        frame,
        feature_names=features,
        target_column="income",
        target=target,
        target_names=np.array(["-50000", "50000+"]),
        sensitive=frame[["sex", "race"]].copy(),
        descr=KDD_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
        sample_weight=frame["instance_weight"].to_numpy(dtype=np.float64),
    )


# ------------------------------------------------------------------------------ ACS
ACS_SEX = {1: "male", 2: "female"}
ACS_RACE_5 = {
    1: "White",
    2: "Black",
    3: "Asian",
    4: "American Indian / Alaska Native",
    5: "Other (NHPI, other, two or more)",
}
ACS_RACE_9_ZERO_BASED = {
    0: "White alone",
    1: "Black or African American alone",
    2: "American Indian alone",
    3: "Alaska Native alone",
    4: "American Indian and Alaska Native tribes specified",
    5: "Asian alone",
    6: "Native Hawaiian and Other Pacific Islander alone",
    7: "Some Other Race alone",
    8: "Two or More Races",
}
ACS_AGE = ([25, 60], ["<25", "25-59", ">=60"])

ACS_INCOME_DESCR = """\
ACSIncome 2018 (folktables), one file per state
===============================================

The folktables ACSIncome task (Ding, Hardt, Miller & Schmidt 2021) built from the 2018
1-Year American Community Survey person records (US Census Bureau; public domain), for
the 35 states released unchanged by FeDa4Fair (Heilmann et al. 2025): all the task's
rows of each state (AGEP > 16, PINCP > 100, WKHP > 0, PWGTP >= 1).

Target coding (column ``PINCP``): 1 = personal income above 50,000 USD (37.0 %).

Features (10): AGEP, COW, SCHL, MAR, OCCP, POBP, RELP, WKHP, SEX, RAC1P, as numeric PUMS
codes, except that MAR is coarsened (1 = married, 2 = not) and RAC1P to 5 groups
(1 White, 2 Black, 3 Asian, 4 American Indian / Alaska Native, 5 other, NHPI or two or
more races). ``ST`` (the state) is only in ``frame``.

Sensitive attributes (``sensitive``): ``sex``, ``race`` (5 groups) and ``age_group``
("<25", "25-59", ">=60").

Licence: ACS PUMS microdata are public domain (17 U.S.C. 105).
"""


def fetch_acs_income(
    *,
    states=None,
    data_home=None,
    download_if_missing=True,
    as_frame=False,
    return_X_y=False,
):
    """Load the folktables ACSIncome task (2018, 1-Year) for some US states.

    =================   =================================================
    Samples             898,610 for the 35 states (e.g. AL 22,268, WY 3,064)
    Features            10 (numeric PUMS codes)
    Target              ``PINCP``: 1 = income > 50,000 USD
    Sensitive           ``sex``, ``race`` (5 groups), ``age_group``
    =================   =================================================

    Parameters
    ----------
    states : str or list of str, default=None
        Two-letter state codes, in the order to stack them. ``None`` loads all 35
        available states: AL, CO, CT, GA, HI, IA, ID, IL, IN, KS, KY, MA, MD, ME, MI,
        MO, MT, NC, ND, NH, NJ, NM, NV, OK, PA, RI, SC, SD, TN, UT, VA, VT, WA, WI, WY.
    data_home, download_if_missing, as_frame, return_X_y
        As in :func:`fetch_bank_marketing`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame`` (with an ``ST`` column), ``feature_names``,
        ``target_names`` (``["<=50K", ">50K"]``), ``target_column``, ``sensitive``,
        ``state`` (ndarray of state codes), ``categories`` and ``DESCR``.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] F. Ding, M. Hardt, J. Miller and L. Schmidt, "Retiring Adult: new datasets for
       fair machine learning", Proc. NeurIPS, 2021.
    .. [2] X. Heilmann, L. M. Corbucci, A. Monreale and M. Cerrato, "FeDa4Fair: client-level
       federated datasets for fairness evaluation", 2025.
    .. [3] US Census Bureau, American Community Survey 2018 1-Year Public Use Microdata
       Sample.
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    if states is None:
        states = list(ACS_STATES)
    elif isinstance(states, str):
        states = [states]
    else:
        states = list(states)
    if not states:
        raise ValueError("states must name at least one state.")
    for state in states:
        _choice("states", state, ACS_STATES)
    parts = []
    for state in states:
        raw = _read_cached(
            "acs_income",
            f"acs/acs_income_2018_by_state/{state}.csv",
            data_home,
            download_if_missing,
        )
        part = _csv(raw)
        part["ST"] = state
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    target = frame["PINCP"].astype(bool).to_numpy(dtype=np.int64)
    features = ["AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX", "RAC1P"]
    sensitive = pd.DataFrame(
        {
            "sex": as_category(frame["SEX"].map(ACS_SEX), ["female", "male"]),
            "race": as_category(frame["RAC1P"].map(ACS_RACE_5), ACS_RACE_5.values()),
            "age_group": age_group(frame["AGEP"], *ACS_AGE),
        }
    )
    return make_bunch(
        frame,
        feature_names=features,
        target_column="PINCP",
        target=target,
        target_names=np.array(["<=50K", ">50K"]),
        sensitive=sensitive,
        descr=ACS_INCOME_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
        state=frame["ST"].to_numpy(dtype=object),
    )


ACS_TASK_LABELS = {
    "ACSIncome": ("PINCP", ["<=50K", ">50K"]),
    "ACSMobility": ("MIG", ["moved", "same house"]),
    "ACSPublicCoverage": ("PUBCOV", ["no public coverage", "public coverage"]),
}
ACS_TASK_DESCR = """\
folktables ACS tasks, 2018 1-Year, all states (aequitas release)
================================================================

The folktables tasks ACSIncome, ACSMobility and ACSPublicCoverage (Ding et al. 2021) on
the 2018 1-Year ACS person records of all 50 states and Puerto Rico, as released by the
aequitas project (dssg/aequitas, MIT licence): the ``test`` and ``validation`` splits,
each a disjoint random 20 % of the task's rows (the train split is not available).

Target coding: ACSIncome ``PINCP`` (1 = income > 50,000 USD, 36.9 %); ACSMobility
``MIG`` (1 = same house one year ago, 73.5 %); ACSPublicCoverage ``PUBCOV`` (1 = has
public health coverage, 29.8 %).

Features: every other column except ``index`` (the row's position in folktables'
all-states table; only in ``frame``), as numeric PUMS codes. RAC1P is 0-based here
(PUMS RAC1P - 1); 0 in some categorical columns means "not applicable".

Sensitive attributes (``sensitive``): ``sex``, ``race`` (9 groups) and ``age_group``
("<25", "25-59", ">=60").

Licence: ACS PUMS microdata are public domain (17 U.S.C. 105).
"""


def fetch_acs_task(
    task="ACSIncome",
    *,
    split="test",
    data_home=None,
    download_if_missing=True,
    as_frame=False,
    return_X_y=False,
):
    """Load a folktables ACS task (2018, all states, 40 % of rows) from the data cache.

    =================   =================================================
    Samples             ACSIncome 332,900 per split; ACSMobility ~124,188;
                        ACSPublicCoverage 227,658 (``split="all"``: both)
    Features            10 (Income), 21 (Mobility), 18 (PublicCoverage)
    Target              ``PINCP`` / ``MIG`` / ``PUBCOV`` (0/1)
    Sensitive           ``sex``, ``race`` (9 groups), ``age_group``
    =================   =================================================

    Parameters
    ----------
    task : {"ACSIncome", "ACSMobility", "ACSPublicCoverage"}, default="ACSIncome"
        The folktables prediction task.
    split : {"test", "validation", "all"}, default="test"
        The aequitas split; ``"all"`` stacks test and validation.
    data_home, download_if_missing, as_frame, return_X_y
        As in :func:`fetch_bank_marketing`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``,
        ``target_column``, ``sensitive``, ``categories`` and ``DESCR``.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] F. Ding, M. Hardt, J. Miller and L. Schmidt, "Retiring Adult: new datasets for
       fair machine learning", Proc. NeurIPS, 2021.
    .. [2] P. Saleiro et al., "Aequitas: a bias and fairness audit toolkit",
       arXiv:1811.05577, 2018. https://github.com/dssg/aequitas
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    _choice("task", task, tuple(ACS_TASK_LABELS))
    _choice("split", split, ("test", "validation", "all"))
    splits = ["test", "validation"] if split == "all" else [split]
    parts = [
        _csv(
            _read_cached(
                "acs_task",
                f"acs/acs_folktables_aequitas/{task}.{s}.csv",
                data_home,
                download_if_missing,
            )
        )
        for s in splits
    ]
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    target_column, target_names = ACS_TASK_LABELS[task]
    features = [c for c in frame.columns if c not in ("index", target_column)]
    sensitive = pd.DataFrame(
        {
            "sex": as_category(frame["SEX"].map(ACS_SEX), ["female", "male"]),
            "race": as_category(
                frame["RAC1P"].map(ACS_RACE_9_ZERO_BASED), ACS_RACE_9_ZERO_BASED.values()
            ),
            "age_group": age_group(frame["AGEP"], *ACS_AGE),
        }
    )
    return make_bunch(
        frame,
        feature_names=features,
        target_column=target_column,
        target=frame[target_column].to_numpy(dtype=np.int64),
        target_names=np.array(target_names),
        sensitive=sensitive,
        descr=ACS_TASK_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
    )
