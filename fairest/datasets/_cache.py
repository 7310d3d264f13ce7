"""The local data cache of the fetched datasets: checksums, seeding, verified reads.

No download source is built in: the exact files checked here (their sha256 is fixed in
:data:`FILE_SHA256`) are not all available from one stable public URL, and fairest's
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

import pandas as pd

from fairest.datasets._base import (
    _sha256,
    get_data_home,
    read_verified_xz,
)

__all__ = ["seed_data_home"]


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
