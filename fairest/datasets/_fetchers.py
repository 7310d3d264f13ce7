"""Fetchers for the datasets that are not shipped with fairest, read from a local cache.

No download source is built in: the exact files checked here (their sha256 is fixed in
:data:`DATASET_FILES`) are not all available from one stable public URL, and fairest's
CI has no network. The cache (see :func:`~fairest.datasets.get_data_home`) is filled
with :func:`seed_data_home` from a local folder laid out like the cache::

    <data_home>/uci/bank-full.csv.xz
    <data_home>/uci/default_of_credit_card_clients.csv.xz
    <data_home>/acs/acs_income_2018_by_state/AL.csv.xz
    ...

Every file is xz-compressed; the recorded sha256 is that of the *uncompressed* bytes and
is checked on every load.
"""

from __future__ import annotations

import io
import lzma
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from fairest.datasets._base import (
    _sha256,
    age_group,
    as_category,
    get_data_home,
    make_bunch,
    read_verified_xz,
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

# sha256 of the uncompressed bytes, as recorded when the files were assembled (their
# provenance is described in each fetcher's References).
FILE_SHA256 = {
    "uci/bank-full.csv": "d1513ec63b385506f7cfce9f2c5caa9fe99e7ba4e8c3fa264b3aaf0f849ed32d",
    "uci/bank-additional-full.csv": (
        "74adfc578bf77a7ff4bb1ba4a9f8709d9e3c6907342959c2c8416847e0afb4d8"
    ),
    "uci/default_of_credit_card_clients.csv": (
        "0dd31d641b1f0ca0c642a5d1d7c20fce3dd16a116a07a0aba081829e6a021461"
    ),
    "uci/communities.data": "09e0b5c07eae24c1efab19b2edee05e160e7f5743b6f31e31eec3d73624da2ea",
    "uci/communities.names": "80914f24ab37261fb0fbda7e417cad8001335dadda4a8d702c265601ef8434fc",
    "uci/student-mat.csv": "e47f9ee225e1ee6e69b7564e6dac7123e80b8486677fe111f351964cef5dec80",
    "uci/student-por.csv": "a7594a11d7771c0efe1a740824e0e833da9c4cad07c39a9766a874575563fb3f",
    "uci/parkinsons_updrs.data": (
        "f2c7d5025dec4e92e7feae367a5f7ccf58789a10ac6b54bdf15976c599f9dd39"
    ),
    "uci/census-income.data": "3676a81db7d3528f3f8b9f3c699d0f0aa28db45e6e994fa0b8ed38327539ee86",
    "uci/census-income.test": "98402b1ab879573d0a7f38a699a40258080e25e33d3401e7bf9c96d3fa0fab8c",
    "law/law_data.csv": "f3b2e4820c52edcec7c46f1fb5bf38637466f614e0b839facc9b9e16ac0faeff",
    "law/law_school_clean.csv": "23c1b173f3480beb7afc4957b107a9917dfc4a8dc9d87ea6034ec35222152452",
}
ACS_STATE_SHA256 = {
    "AL": "e5be9bb11034859e0b0fe331d0a3ba6e8e1851f13655dc70d64d0009a357e597",
    "CO": "bea7245d8c98b973beb21ff74c1d7a8ef9891597b8e42120f7a425e0a34b2a28",
    "CT": "baa4cd18c36bac402ccf705fe0b4b9b97d2ff9fa6ea8d1dcdbb7f1ba9affcaa3",
    "GA": "d17706303d6563bf14712fefa24b63fc55d111ef745994e95d339aa1cdbde2a7",
    "HI": "50d4c6b40999bbc36656f4a1d5f34284661acf322e61112e9b809710ceb85143",
    "IA": "284b5204669fff5afb433f967e94364e9e7f1ac409cc9ebb7c5112cf2e39ee8f",
    "ID": "92e9cf6867f4f74a0a90bcc9ee92b71d8100b2ecc4560bdf602e62c842cc60fe",
    "IL": "31418d802aae5b3e94225035bda1d4493085a0daaca52a2cf8989b9a19533aff",
    "IN": "22d6378b2bfd73d59ec6f87c1e969a94acf0e69e29301a20f8badc630e40d6c7",
    "KS": "a0c7f3a74a12370e746970f83fb8ec61293a39368c7785da049798c179a06d82",
    "KY": "111f7d9511c09c5e28978e00b6cdbda05566307ab156b411d6d37a37ccc56d36",
    "MA": "e72f1f056011bfa062391e803510d6575a2bbc8117ab801e7aa2096ffaeb085f",
    "MD": "b1f7b683ff1aa6b87a15a5bf665b419a8f7fadafbe20467362d4f4f71b0ce783",
    "ME": "007c84661c12f89d3289d2d38b91d177d43168d0d05682b7b7063e055ae48330",
    "MI": "08a1cdf8e84c8818814013a6896963b4410b06373da5241efdf2e01763a7cfa9",
    "MO": "22e8935f722dff2ec289e05a75206858f392e70ddc77390fb8c6a8095e294f9a",
    "MT": "54bb2305a98c55889f2c90c59dc40a5dfbecd10547c60e0a2a3051cdd934063a",
    "NC": "bf7c2b295742ddd5db6620dc5c59712d28ac029380784c7ddf4230c9758a017f",
    "ND": "648067caa2a4e08f6ab83e09ee367e9bd46cbe14b53e159315d896470737d92e",
    "NH": "765bb1d3179fd3441f7e2ea1fd98e48c2c053551a1bae4ac610cd7f1fbc4cfae",
    "NJ": "53a01cbc61b134ffa67bafe0670a02bc5335853b5bba94727b0ff6e2cbc9ec9a",
    "NM": "e7d8f86cb86e64a22d1b3bd774f79f369f937f2cc2e8d0d7fe116018510b0d6c",
    "NV": "baf1f926d2bcf9a6a02642188aca651b448090361d4dc3527503f6b82eeb0ec7",
    "OK": "6c8277305fc105c137bc9969f27da9331ae0bd07ad5f1777a68d92dbd7caeba5",
    "PA": "3147fe2be64273faf1eade2aee542a7165d290c097c5c2ff2631fbf2d4571388",
    "RI": "99e562ea752e26091b3be2cedbe38193433c478d27d9bc2be90d7bf148dca926",
    "SC": "5da5efa82cb9c5d6a41aef79b003e454c1a139f8ee28b3fb4ae9289dc5e11439",
    "SD": "48f03157d648bd6db270f2c24374fa047c8d83b8991eaa900cfcaaedde8f38c2",
    "TN": "e7f859b0e1065c4e9c061f99cfc5f0b4819773ad7f949ad80f56fcc518746aad",
    "UT": "9c7bbc1da3be3537b8338bcb19f8d83e6b342ae46a03064249ce9276ef2586de",
    "VA": "030094d305647d0d433d8a07c06d3842fdd867b5382204698d8af7dd394be9d9",
    "VT": "99a2ce26592dd8414a3c1f078899fed42fffb9bdf9e5d6d65c82720534f143ee",
    "WA": "d8cef5de8976c90a6cb905cba52c1f24f8e4a7111f4e91ed58e8ce10db4cb5fc",
    "WI": "c4c54ed6a7d7e184e1723c91f5721ddbcf55a78cfaad760425ac3cc809aa9381",
    "WY": "8174eb37127a5ba2a9b0270595a957fd0b0aaa17d1756b95b4344654a8d5c0ac",
}
ACS_STATES = tuple(sorted(ACS_STATE_SHA256))
for _state, _digest in ACS_STATE_SHA256.items():
    FILE_SHA256[f"acs/acs_income_2018_by_state/{_state}.csv"] = _digest
ACS_TASK_SHA256 = {
    ("ACSIncome", "test"): "65b4185d32725e509350fb62173da5f3b96e0653380dfef0d184a69de411f9bf",
    ("ACSIncome", "validation"): (
        "409788bc17d55198c6afab6f3b9bb83d900b0952f9e1db4ab7238f480a310da1"
    ),
    ("ACSMobility", "test"): "83cf9d930d5cb66905bfa2e816fd7fa4c0afec9451f72ad322a4eea5ffef4282",
    ("ACSMobility", "validation"): (
        "9db64a196e780cb2ce0f552f4850cd08ef1bab591a1afc729e692886287b5ef5"
    ),
    ("ACSPublicCoverage", "test"): (
        "a005d3daf0f3790e823571346f2b3ea4ec18c1b3b21ad35ce9bbc97268a25953"
    ),
    ("ACSPublicCoverage", "validation"): (
        "da394a8c142ab7087ffb8840cc91a345d4e8c01dac1fcd846c654ee0fbd0da8f"
    ),
}
for (_task, _split), _digest in ACS_TASK_SHA256.items():
    FILE_SHA256[f"acs/acs_folktables_aequitas/{_task}.{_split}.csv"] = _digest

#: Files (paths in the cache, without the ``.xz`` suffix) used by each fetcher.
DATASET_FILES = {
    "bank_marketing": ["uci/bank-full.csv", "uci/bank-additional-full.csv"],
    "credit_default": ["uci/default_of_credit_card_clients.csv"],
    "communities_crime": ["uci/communities.data", "uci/communities.names"],
    "student_performance": ["uci/student-mat.csv", "uci/student-por.csv"],
    "parkinsons": ["uci/parkinsons_updrs.data"],
    "law_school": ["law/law_school_clean.csv", "law/law_data.csv"],
    "kdd_census": ["uci/census-income.data", "uci/census-income.test"],
    "acs_income": [f"acs/acs_income_2018_by_state/{s}.csv" for s in ACS_STATES],
    "acs_task": [f"acs/acs_folktables_aequitas/{t}.{s}.csv" for t, s in ACS_TASK_SHA256],
}

_SEED_HINT = (
    "fairest has no download source for it: fill the cache once with "
    "fairest.datasets.seed_data_home(source_dir, data_home) from a folder that holds "
    "{rel}.xz (or the uncompressed {rel}, or either file directly in source_dir), or "
    "point data_home / the FAIREST_DATA environment variable at a folder that already "
    "holds it."
)


def _cache_path(relpath: str, data_home) -> Path:
    return Path(get_data_home(data_home)) / (relpath + ".xz")


def _read_cached(dataset: str, relpath: str, data_home, download_if_missing) -> bytes:
    """Verified uncompressed bytes of one cached file, or a clear error."""
    path = _cache_path(relpath, data_home)
    if not path.is_file():
        lead = (
            f"Data not found and download_if_missing is False: {path}"
            if not download_if_missing
            else f"Dataset {dataset!r} needs {path}, which is not in the data cache"
        )
        raise FileNotFoundError(f"{lead}. " + _SEED_HINT.format(rel=relpath))
    return read_verified_xz(path, FILE_SHA256[relpath])


def _csv(raw: bytes, **kwargs) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(raw), **kwargs)


def _check_flags(**flags):
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool; got {value!r}.")


def _choice(name, value, options):
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}; got {value!r}.")
    return value


# ------------------------------------------------------------------------------ seeding
def _find_source(source_dir: Path, relpath: str):
    """Candidate source file for ``relpath``: (path, is_compressed) or None."""
    name = relpath.rsplit("/", 1)[-1]
    for candidate, compressed in (
        (source_dir / (relpath + ".xz"), True),
        (source_dir / (name + ".xz"), True),
        (source_dir / relpath, False),
        (source_dir / name, False),
    ):
        if candidate.is_file():
            return candidate, compressed
    return None


def seed_data_home(source_dir, data_home=None, *, datasets=None, overwrite=False, verify=True):
    """Copy dataset files from a local folder into the fairest data cache.

    The fetchers never download; they read the cache. This function fills it from a
    folder that holds the files either in the cache's own layout (``uci/bank-full.csv.xz``,
    ``acs/acs_income_2018_by_state/AL.csv.xz``, ...) or side by side in the folder, each
    either xz-compressed (``bank-full.csv.xz``, copied as is) or uncompressed
    (``bank-full.csv``, for instance as downloaded from the UCI repository; it is
    compressed on the way).

    Parameters
    ----------
    source_dir : str or path-like
        Folder to copy from.
    data_home : str or path-like, default=None
        The cache folder, resolved as in :func:`get_data_home`.
    datasets : str or list of str, default=None
        Names of the datasets to seed (keys of :data:`DATASET_FILES`, e.g.
        ``"bank_marketing"``, ``"acs_income"``). ``None`` means every known file that is
        found in ``source_dir``; missing ones are skipped.
    overwrite : bool, default=False
        Replace files that are already in the cache. Otherwise they are kept.
    verify : bool, default=True
        Check the sha256 of each copied file (of its uncompressed bytes) before it is
        written; uncompressed sources are always checked.

    Returns
    -------
    copied : list of str
        Paths (relative to the cache, with ``.xz``) of the files written.

    Raises
    ------
    FileNotFoundError
        If ``source_dir`` does not exist, or if a file of a dataset named in
        ``datasets`` is in neither the cache nor ``source_dir``.
    OSError
        If a file's checksum does not match.

    Examples
    --------
    >>> from fairest.datasets import seed_data_home, fetch_bank_marketing
    >>> seed_data_home("path/to/datasets", datasets="bank_marketing")  # doctest: +SKIP
    >>> X, y = fetch_bank_marketing(return_X_y=True)  # doctest: +SKIP
    """
    source = Path(os.path.expanduser(os.fspath(source_dir)))
    if not source.is_dir():
        raise FileNotFoundError(f"source_dir {source} is not a folder.")
    if datasets is None:
        names, strict = list(DATASET_FILES), False
    else:
        names = [datasets] if isinstance(datasets, str) else list(datasets)
        for name in names:
            _choice("datasets", name, DATASET_FILES)
        strict = True
    home = Path(get_data_home(data_home))
    copied = []
    for name in names:
        for relpath in DATASET_FILES[name]:
            target = home / (relpath + ".xz")
            if target.is_file() and not overwrite:
                continue
            found = _find_source(source, relpath)
            if found is None:
                if strict:
                    raise FileNotFoundError(
                        f"{relpath}(.xz) of dataset {name!r} is neither in the cache "
                        f"{home} nor in {source}."
                    )
                continue
            path, compressed = found
            expected = FILE_SHA256[relpath]
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".part")
            if compressed:
                if verify:
                    read_verified_xz(path, expected)
                shutil.copyfile(path, tmp)
            else:
                data = path.read_bytes()
                if _sha256(data) != expected:
                    raise OSError(
                        f"Checksum mismatch for {path}: this is not the version of "
                        f"{relpath} that fairest expects (sha256 {expected})."
                    )
                tmp.write_bytes(lzma.compress(data, preset=6))
            os.replace(tmp, target)
            copied.append(relpath + ".xz")
    return copied


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
