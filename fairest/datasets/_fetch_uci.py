"""Fetchers of the UCI repository's tables and of the LSAC law school survey.

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
    _choice,
    _csv,
    _read_cached,
)

__all__ = [
    "fetch_bank_marketing",
    "fetch_credit_default",
    "fetch_communities_crime",
    "fetch_student_performance",
    "fetch_parkinsons",
    "fetch_law_school",
]


# ------------------------------------------------------------------------ bank marketing
BANK_DESCR = """\
Bank Marketing dataset (UCI)
============================

Direct phone marketing campaigns of a Portuguese bank, 2008-2010 (Moro, Cortez & Rita
2014). ``version="full"``: bank-full.csv (45,211 rows, 16 attributes);
``version="additional"``: bank-additional-full.csv (41,188 rows, 20 attributes, with 5
social and economic context attributes).

Target coding (column ``y``): 1 = the client subscribed a term deposit ("yes",
11.7 % / 11.3 %), 0 = "no".

Features: all attributes except ``duration`` (the call's length, known only after the
call: it leaks the target; kept in ``frame``). Missing categorical values are the
literal category "unknown"; pdays = -1 (full) or 999 (additional) means never contacted.

Sensitive attributes (``sensitive``): ``age_group`` ("<25", "25-59", ">=60") and
``marital``.

Licence: CC BY 4.0 (UCI Machine Learning Repository).
"""


def fetch_bank_marketing(
    *,
    version="full",
    data_home=None,
    download_if_missing=True,
    as_frame=False,
    return_X_y=False,
):
    """Load the UCI Bank Marketing dataset from the data cache.

    =================   =================================================
    Samples             45,211 (full), 41,188 (additional)
    Features            15 (full) or 19 (additional); ``duration`` excluded
    Target              ``y``: 1 = subscribed a term deposit
    Sensitive           ``age_group`` ("<25", "25-59", ">=60"), ``marital``
    =================   =================================================

    Parameters
    ----------
    version : {"full", "additional"}, default="full"
        ``bank-full.csv`` (2012) or ``bank-additional-full.csv`` (2014).
    data_home : str or path-like, default=None
        The cache folder, see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Kept for scikit-learn compatibility. fairest has no download source, so a
        missing file always raises; the flag only changes the message.
    as_frame : bool, default=False
        If True, ``data`` is a DataFrame, ``target`` a Series and ``frame`` the whole
        table. If False, ``data`` is a float64 array with ordinal codes for categorical
        columns (see ``categories``).
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["no", "yes"]``), ``target_column``, ``sensitive``, ``categories`` and
        ``DESCR``, laid out as in :func:`~fairest.datasets.load_adult`.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    Raises
    ------
    FileNotFoundError
        If the file is not in the cache (see :func:`seed_data_home`).
    OSError
        If the cached file's checksum does not match.

    References
    ----------
    .. [1] S. Moro, P. Cortez and P. Rita, "A data-driven approach to predict the success
       of bank telemarketing", Decision Support Systems 62, 2014.
    .. [2] S. Moro, P. Rita and P. Cortez, "Bank Marketing", UCI Machine Learning
       Repository, 2012. https://doi.org/10.24432/C5K306
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    _choice("version", version, ("full", "additional"))
    relpath = "uci/bank-full.csv" if version == "full" else "uci/bank-additional-full.csv"
    raw = _read_cached("bank_marketing", relpath, data_home, download_if_missing)
    frame = _csv(raw, sep=";")
    categorical = [
        c for c in frame.columns if c != "y" and not pd.api.types.is_numeric_dtype(frame[c])
    ]
    for column in categorical:
        frame[column] = as_category(frame[column])
    target = (frame["y"] == "yes").to_numpy(dtype=np.int64)
    features = [c for c in frame.columns if c not in ("y", "duration")]
    sensitive = pd.DataFrame(
        {
            "age_group": age_group(frame["age"], [25, 60], ["<25", "25-59", ">=60"]),
            "marital": frame["marital"],
        }
    )
    return make_bunch(
        frame,
        feature_names=features,
        target_column="y",
        target=target,
        target_names=np.array(["no", "yes"]),
        sensitive=sensitive,
        descr=BANK_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
    )


# ------------------------------------------------------------------------ credit default
CREDIT_TARGET = "default payment next month"
CREDIT_DESCR = """\
Default of Credit Card Clients dataset (UCI, Taiwan)
====================================================

30,000 credit card clients of a Taiwanese bank, April-September 2005 (Yeh & Lien 2009),
as a CSV export of the UCI Excel file.

Target coding (column ``default payment next month``): 1 = default (22.1 %), 0 = no.

Features (23): LIMIT_BAL, SEX (1 = male, 2 = female), EDUCATION (1 graduate school,
2 university, 3 high school, 4 others; 0, 5, 6 undocumented), MARRIAGE (1 married,
2 single, 3 others; 0 undocumented), AGE, PAY_0, PAY_2..PAY_6 (repayment status),
BILL_AMT1..6, PAY_AMT1..6, all numeric codes as published. ``ID`` is only in ``frame``.

Sensitive attributes (``sensitive``): ``sex``, ``age_group`` ("<25", "25-59", ">=60"),
``education`` and ``marriage`` (labels; undocumented codes become "unknown").

Licence: CC BY 4.0 (UCI Machine Learning Repository).
"""


def fetch_credit_default(
    *, data_home=None, download_if_missing=True, as_frame=False, return_X_y=False
):
    """Load the UCI Default of Credit Card Clients (Taiwan) dataset from the data cache.

    =================   =================================================
    Samples             30,000
    Features            23 (numeric codes as published)
    Target              ``default payment next month``: 1 = default
    Sensitive           ``sex``, ``age_group``, ``education``, ``marriage``
    =================   =================================================

    Parameters
    ----------
    data_home, download_if_missing, as_frame, return_X_y
        As in :func:`fetch_bank_marketing`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["no default", "default"]``), ``target_column``, ``sensitive``,
        ``categories`` and ``DESCR``.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] I.-C. Yeh and C.-H. Lien, "The comparisons of data mining techniques for the
       predictive accuracy of probability of default of credit card clients", Expert
       Systems with Applications 36(2), 2009.
    .. [2] I.-C. Yeh, "Default of Credit Card Clients", UCI Machine Learning Repository,
       2009. https://doi.org/10.24432/C55S3H
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    raw = _read_cached(
        "credit_default", "uci/default_of_credit_card_clients.csv", data_home, download_if_missing
    )
    frame = _csv(raw)
    target = frame[CREDIT_TARGET].to_numpy(dtype=np.int64)
    features = [c for c in frame.columns if c not in ("ID", CREDIT_TARGET)]
    education = frame["EDUCATION"].map(
        {1: "graduate school", 2: "university", 3: "high school", 4: "others"}
    )
    marriage = frame["MARRIAGE"].map({1: "married", 2: "single", 3: "others"})
    sensitive = pd.DataFrame(
        {
            "sex": as_category(frame["SEX"].map({1: "male", 2: "female"}), ["female", "male"]),
            "age_group": age_group(frame["AGE"], [25, 60], ["<25", "25-59", ">=60"]),
            "education": as_category(
                education.fillna("unknown"),
                ["graduate school", "university", "high school", "others", "unknown"],
            ),
            "marriage": as_category(
                marriage.fillna("unknown"), ["married", "single", "others", "unknown"]
            ),
        }
    )
    return make_bunch(
        frame,
        feature_names=features,
        target_column=CREDIT_TARGET,
        target=target,
        target_names=np.array(["no default", "default"]),
        sensitive=sensitive,
        descr=CREDIT_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
    )


# --------------------------------------------------------------------- communities crime
COMMUNITIES_DESCR = """\
Communities and Crime dataset (UCI)
===================================

1,994 US communities: socio-economic data of the 1990 US Census, law enforcement data
of the 1990 LEMAS survey and crime data of the 1995 FBI UCR (Redmond & Baveja 2002).
All numeric attributes are normalised to [0, 1].

Target (column ``ViolentCrimesPerPop``): violent crimes per 100K population, normalised
to [0, 1] (regression). Fairness papers often binarise it (e.g. ``y > 0.7`` or the top
30 %).

Features (122): the 128 attributes minus ``state, county, community, communityname,
fold`` (not predictive; kept in ``frame``) and the target. Missing values ("?", mostly in
the police statistics) are NaN.

Sensitive attribute (``sensitive``): ``black_community`` = racepctblack > 0.06 (the
share of Black residents, the usual split of Kamiran et al.).

Licence: CC BY 4.0 (UCI Machine Learning Repository).
"""


def _communities_names(raw: bytes) -> list[str]:
    names = []
    for line in raw.decode("latin-1").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].lower() == "@attribute":
            names.append(parts[1])
    return names


def fetch_communities_crime(
    *, data_home=None, download_if_missing=True, as_frame=False, return_X_y=False
):
    """Load the UCI Communities and Crime dataset from the data cache.

    =================   =================================================
    Samples             1,994
    Features            122 (numeric, in [0, 1], some NaN)
    Target              ``ViolentCrimesPerPop`` (float in [0, 1])
    Sensitive           ``black_community`` (racepctblack > 0.06)
    =================   =================================================

    Parameters
    ----------
    data_home, download_if_missing, as_frame, return_X_y
        As in :func:`fetch_bank_marketing`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["ViolentCrimesPerPop"]``), ``target_column``, ``sensitive``, ``categories``
        and ``DESCR``.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] M. Redmond and A. Baveja, "A data-driven software tool for enabling
       cooperative information sharing among police departments", European Journal of
       Operational Research 141, 2002.
    .. [2] M. Redmond, "Communities and Crime", UCI Machine Learning Repository, 2009.
       https://doi.org/10.24432/C53W3X
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    names = _communities_names(
        _read_cached("communities_crime", "uci/communities.names", data_home, download_if_missing)
    )
    raw = _read_cached("communities_crime", "uci/communities.data", data_home, download_if_missing)
    frame = _csv(raw, header=None, names=names, na_values="?", keep_default_na=False)
    target_column = names[-1]
    skip = {"state", "county", "community", "communityname", "fold", target_column}
    features = [c for c in names if c not in skip]
    sensitive = pd.DataFrame({"black_community": frame["racepctblack"] > 0.06})
    return make_bunch(
        frame,
        feature_names=features,
        target_column=target_column,
        target=frame[target_column].to_numpy(dtype=np.float64),
        target_names=[target_column],
        sensitive=sensitive,
        descr=COMMUNITIES_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
    )


# ------------------------------------------------------------------- student performance
STUDENT_DESCR = """\
Student Performance dataset (UCI)
=================================

Students of two Portuguese secondary schools, 2005-2006 (Cortez & Silva 2008):
``subject="mat"`` (mathematics, 395 students) or ``"por"`` (Portuguese, 649).

Target (column ``G3``): final grade, 0-20 (regression). The usual binarisation is
``G3 >= 10`` (pass: 67.1 % mat, 84.6 % por).

Features (32): the other attributes, including the period grades G1 and G2 (strongly
predictive of G3; drop them for the harder task). 17 are categorical.

Sensitive attributes (``sensitive``): ``sex`` (F / M), ``age_group`` ("<18" / ">=18")
and ``address`` (U = urban, R = rural).

Licence: CC BY 4.0 (UCI Machine Learning Repository).
"""


def fetch_student_performance(
    *,
    subject="mat",
    data_home=None,
    download_if_missing=True,
    as_frame=False,
    return_X_y=False,
):
    """Load the UCI Student Performance dataset from the data cache.

    =================   =================================================
    Samples             395 (mat), 649 (por)
    Features            32 (15 numeric, 17 categorical)
    Target              ``G3``: final grade 0-20 (float)
    Sensitive           ``sex``, ``age_group`` ("<18" / ">=18"), ``address``
    =================   =================================================

    Parameters
    ----------
    subject : {"mat", "por"}, default="mat"
        Mathematics or Portuguese language course.
    data_home, download_if_missing, as_frame, return_X_y
        As in :func:`fetch_bank_marketing`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["G3"]``), ``target_column``, ``sensitive``, ``categories`` and ``DESCR``.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] P. Cortez and A. Silva, "Using data mining to predict secondary school student
       performance", Proc. FUBUTEC, 2008.
    .. [2] P. Cortez, "Student Performance", UCI Machine Learning Repository, 2008.
       https://doi.org/10.24432/C5TG7T
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    _choice("subject", subject, ("mat", "por"))
    raw = _read_cached(
        "student_performance", f"uci/student-{subject}.csv", data_home, download_if_missing
    )
    frame = _csv(raw, sep=";")
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):
            frame[column] = as_category(frame[column])
    sensitive = pd.DataFrame(
        {
            "sex": frame["sex"],
            "age_group": age_group(frame["age"], [18], ["<18", ">=18"]),
            "address": frame["address"],
        }
    )
    return make_bunch(
        frame,
        feature_names=[c for c in frame.columns if c != "G3"],
        target_column="G3",
        target=frame["G3"].to_numpy(dtype=np.float64),
        target_names=["G3"],
        sensitive=sensitive,
        descr=STUDENT_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
    )


# ---------------------------------------------------------------------------- Parkinsons
PARKINSONS_DESCR = """\
Parkinsons Telemonitoring dataset (UCI)
=======================================

5,875 voice recordings of 42 people with early-stage Parkinson's disease, over six
months (Tsanas, Little, McSharry & Ramig 2010).

Target (regression): ``total_UPDRS`` (default) or ``motor_UPDRS``, the clinician's
Unified Parkinson's Disease Rating Scale scores. The other one is kept in ``frame``.

Features (19): age, sex (0 = male, 1 = female), test_time and 16 voice measures.
``subject#`` is only in ``frame`` and in ``subject``: rows of one subject are repeated
measurements, so split by subject (e.g. ``GroupKFold(groups=bunch.subject)``).

Sensitive attributes (``sensitive``): ``sex`` (male 4,008 rows / female 1,867) and
``age_group`` ("<65" / ">=65").

Licence: CC BY 4.0 (UCI Machine Learning Repository).
"""


def fetch_parkinsons(
    *,
    target="total_UPDRS",
    data_home=None,
    download_if_missing=True,
    as_frame=False,
    return_X_y=False,
):
    """Load the UCI Parkinsons Telemonitoring dataset from the data cache.

    =================   =================================================
    Samples             5,875 (42 subjects)
    Features            19 (numeric)
    Target              ``total_UPDRS`` or ``motor_UPDRS`` (float)
    Sensitive           ``sex``, ``age_group`` ("<65" / ">=65")
    =================   =================================================

    Parameters
    ----------
    target : {"total_UPDRS", "motor_UPDRS"}, default="total_UPDRS"
        Which UPDRS score is the target.
    data_home, download_if_missing, as_frame, return_X_y
        As in :func:`fetch_bank_marketing`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``,
        ``target_column``, ``sensitive``, ``subject`` (ndarray of subject ids, for
        group-aware splitting), ``categories`` and ``DESCR``.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] A. Tsanas, M. A. Little, P. E. McSharry and L. O. Ramig, "Accurate
       telemonitoring of Parkinson's disease progression by non-invasive speech tests",
       IEEE Transactions on Biomedical Engineering 57(4), 2010.
    .. [2] A. Tsanas and M. Little, "Parkinsons Telemonitoring", UCI Machine Learning
       Repository, 2009. https://doi.org/10.24432/C5ZS3N
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    _choice("target", target, ("total_UPDRS", "motor_UPDRS"))
    raw = _read_cached("parkinsons", "uci/parkinsons_updrs.data", data_home, download_if_missing)
    frame = _csv(raw)
    skip = {"subject#", "motor_UPDRS", "total_UPDRS"}
    sensitive = pd.DataFrame(
        {
            "sex": as_category(frame["sex"].map({0: "male", 1: "female"}), ["female", "male"]),
            "age_group": age_group(frame["age"], [65], ["<65", ">=65"]),
        }
    )
    return make_bunch(
        frame,
        feature_names=[c for c in frame.columns if c not in skip],
        target_column=target,
        target=frame[target].to_numpy(dtype=np.float64),
        target_names=[target],
        sensitive=sensitive,
        descr=PARKINSONS_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
        subject=frame["subject#"].to_numpy(),
    )


# ---------------------------------------------------------------------------- law school
LAW_DESCR = """\
LSAC law school dataset
=======================

From the LSAC National Longitudinal Bar Passage Study (Wightman 1998).

``version="bar_passage"`` (law_school_clean.csv, Le Quy et al. 2022): 20,798 students;
target ``pass_bar`` (1 = passed the bar exam, 89.0 %); features decile1b, decile3, lsat,
ugpa, zfygpa, zgpa, fulltime, fam_inc, male, tier, race; sensitive ``race`` (White /
Non-White) and ``sex`` (from ``male``).

``version="kusner"`` (law_data.csv, Kusner et al. 2017): 21,791 students; target ``ZFYA``
(standardised first-year average, regression); features race, sex, LSAT, UGPA,
region_first (``sander_index`` and ``first_pf`` are only in ``frame``); sensitive
``race`` (8 groups) and ``sex`` (codes 1 / 2, undocumented in the source).

Licence: the LSAC never released these extracts under an open licence. They are widely
redistributed in fairness research, but use them for research only and do not
redistribute them.
"""


def fetch_law_school(
    *,
    version="bar_passage",
    data_home=None,
    download_if_missing=True,
    as_frame=False,
    return_X_y=False,
):
    """Load the LSAC law school dataset from the data cache.

    =================   =================================================
    Samples             20,798 (bar_passage), 21,791 (kusner)
    Features            11 (bar_passage), 5 (kusner)
    Target              ``pass_bar`` (0/1) or ``ZFYA`` (float)
    Sensitive           ``race``, ``sex``
    =================   =================================================

    .. warning:: The LSAC data has no open licence: use it for research only and do
       not redistribute it.

    Parameters
    ----------
    version : {"bar_passage", "kusner"}, default="bar_passage"
        The cleaned bar-passage table of Le Quy et al. (classification) or the
        counterfactual-fairness table of Kusner et al. (regression).
    data_home, download_if_missing, as_frame, return_X_y
        As in :func:`fetch_bank_marketing`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["fail", "pass"]`` or ``["ZFYA"]``), ``target_column``, ``sensitive``,
        ``categories`` and ``DESCR``.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] L. F. Wightman, "LSAC National Longitudinal Bar Passage Study", LSAC Research
       Report Series, 1998.
    .. [2] M. J. Kusner, J. Loftus, C. Russell and R. Silva, "Counterfactual fairness",
       Proc. NeurIPS, 2017.
    .. [3] T. Le Quy, A. Roy, V. Iosifidis, W. Zhang and E. Ntoutsi, "A survey on datasets
       for fairness-aware machine learning", WIREs Data Mining and Knowledge Discovery
       12(3), 2022.
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    _choice("version", version, ("bar_passage", "kusner"))
    if version == "bar_passage":
        raw = _read_cached("law_school", "law/law_school_clean.csv", data_home, download_if_missing)
        frame = _csv(raw)
        frame["race"] = as_category(frame["race"])
        target_column, target_names = "pass_bar", np.array(["fail", "pass"])
        target = frame["pass_bar"].to_numpy(dtype=np.int64)
        features = [c for c in frame.columns if c != "pass_bar"]
        sex = as_category(frame["male"].map({1.0: "male", 0.0: "female"}), ["female", "male"])
    else:
        raw = _read_cached("law_school", "law/law_data.csv", data_home, download_if_missing)
        frame = _csv(raw, index_col=0)
        frame["race"] = as_category(frame["race"])
        frame["region_first"] = as_category(frame["region_first"])
        target_column, target_names = "ZFYA", ["ZFYA"]
        target = frame["ZFYA"].to_numpy(dtype=np.float64)
        features = ["race", "sex", "LSAT", "UGPA", "region_first"]
        sex = frame["sex"]
    sensitive = pd.DataFrame({"race": frame["race"], "sex": sex})
    return make_bunch(
        frame,
        feature_names=features,
        target_column=target_column,
        target=target,
        target_names=target_names,
        sensitive=sensitive,
        descr=LAW_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
    )
