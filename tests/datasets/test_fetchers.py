"""Fetchers: the data cache, seeding it, and loading the shared real datasets.

Tests marked ``shared_data`` seed a temporary cache from ``../shared/datasets`` (relative
to the repository root) and skip when that folder is absent.
"""

import lzma
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairest import datasets as fd
from fairest.datasets import _fetchers

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = REPO_ROOT.parent / "shared" / "datasets"

needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared datasets folder {SHARED} is absent"
)

SEEDED = [
    "bank_marketing",
    "credit_default",
    "communities_crime",
    "student_performance",
    "parkinsons",
    "law_school",
    "kdd_census",
    "acs_income",
    "acs_task",
]


@pytest.fixture(scope="module")
def seeded_home(tmp_path_factory):
    if not SHARED.is_dir():
        pytest.skip(f"shared datasets folder {SHARED} is absent")
    home = tmp_path_factory.mktemp("fairest_data")
    # checksums are verified by every fetch; skip the extra pass here
    fd.seed_data_home(SHARED, home, datasets=SEEDED, verify=False)
    return home


# fetcher, kwargs, shape of data, check of the target, sensitive columns
FETCH_CASES = [
    (fd.fetch_bank_marketing, {}, (45211, 15), ("sum", 5289), ["age_group", "marital"]),
    (
        fd.fetch_bank_marketing,
        {"version": "additional"},
        (41188, 19),
        ("sum", 4640),
        ["age_group", "marital"],
    ),
    (
        fd.fetch_credit_default,
        {},
        (30000, 23),
        ("sum", 6636),
        ["sex", "age_group", "education", "marriage"],
    ),
    (fd.fetch_communities_crime, {}, (1994, 122), ("range", 0, 1), ["black_community"]),
    (
        fd.fetch_student_performance,
        {},
        (395, 32),
        ("pass", 0.671),
        ["sex", "age_group", "address"],
    ),
    (
        fd.fetch_student_performance,
        {"subject": "por"},
        (649, 32),
        ("pass", 0.846),
        ["sex", "age_group", "address"],
    ),
    (fd.fetch_parkinsons, {}, (5875, 19), ("range", 5, 55), ["sex", "age_group"]),
    (fd.fetch_law_school, {}, (20798, 11), ("mean", 0.890), ["race", "sex"]),
    (fd.fetch_law_school, {"version": "kusner"}, (21791, 5), ("range", -4, 4), ["race", "sex"]),
    (
        fd.fetch_acs_income,
        {"states": ["WY", "VT"]},
        (6831, 10),
        ("mean", 0.35),
        ["sex", "race", "age_group"],
    ),
    (fd.fetch_acs_task, {}, (332900, 10), ("mean", 0.369), ["sex", "race", "age_group"]),
]
FETCH_IDS = [
    "bank",
    "bank-additional",
    "credit",
    "communities",
    "student-mat",
    "student-por",
    "parkinsons",
    "law-bar",
    "law-kusner",
    "acs-income",
    "acs-task",
]


@pytest.mark.shared_data
@needs_shared
@pytest.mark.parametrize("fetch, kwargs, shape, check, sensitive", FETCH_CASES, ids=FETCH_IDS)
def test_fetchers(seeded_home, fetch, kwargs, shape, check, sensitive):
    bunch = fetch(data_home=seeded_home, **kwargs)
    assert bunch.data.shape == shape
    assert bunch.data.dtype == np.float64
    assert bunch.target.shape == (shape[0],)
    assert len(bunch.feature_names) == shape[1]
    assert bunch.target_column not in bunch.feature_names
    assert list(bunch.sensitive.columns) == sensitive
    assert len(bunch.sensitive) == shape[0]
    assert not bunch.sensitive.isna().any().any()
    assert bunch.DESCR
    kind, *values = check
    y = bunch.target
    if kind == "sum":
        assert set(np.unique(y)) == {0, 1} and int(y.sum()) == values[0]
    elif kind == "mean":
        assert set(np.unique(y)) == {0, 1} and abs(y.mean() - values[0]) < 0.01
    elif kind == "pass":
        assert abs((y >= 10).mean() - values[0]) < 0.001
    else:
        assert y.dtype == np.float64 and values[0] <= y.min() <= y.max() <= values[1]


@pytest.mark.shared_data
@needs_shared
def test_fetch_kdd_census_test_subset(seeded_home):
    # the largest parse of the suite (52 MB of text): loaded once, checked here
    kdd = fd.fetch_kdd_census(data_home=seeded_home, subset="test", as_frame=True)
    assert kdd.data.shape == (99762, 40)
    assert abs(kdd.target.mean() - 0.062) < 0.001
    assert kdd.sample_weight.shape == (99762,)
    assert "instance_weight" not in kdd.feature_names
    assert list(kdd.target_names) == ["-50000", "50000+"]
    assert set(kdd.sensitive["sex"].cat.categories) == {"Female", "Male"}
    assert kdd.sensitive["race"].nunique() == 5
    assert not kdd.sensitive.isna().any().any()


@pytest.mark.shared_data
@needs_shared
def test_fetch_as_frame_and_return_X_y(seeded_home):
    bunch = fd.fetch_student_performance(data_home=seeded_home)
    frame_bunch = fd.fetch_student_performance(data_home=seeded_home, as_frame=True)
    assert isinstance(frame_bunch.data, pd.DataFrame)
    assert list(frame_bunch.data.columns) == bunch.feature_names
    assert frame_bunch.frame.shape == (395, 33)
    np.testing.assert_array_equal(frame_bunch.target.to_numpy(), bunch.target)
    assert bunch.categories["sex"] == ["F", "M"]
    X, y = fd.fetch_student_performance(data_home=seeded_home, return_X_y=True)
    np.testing.assert_array_equal(X, bunch.data)


@pytest.mark.shared_data
@needs_shared
def test_fetch_extras(seeded_home):
    park = fd.fetch_parkinsons(data_home=seeded_home, target="motor_UPDRS")
    assert park.target_names == ["motor_UPDRS"]
    assert len(np.unique(park.subject)) == 42
    acs = fd.fetch_acs_income(data_home=seeded_home, states="WY", as_frame=True)
    assert acs.data.shape == (3064, 10)
    assert set(acs.state) == {"WY"} and (acs.frame["ST"] == "WY").all()
    bank = fd.fetch_bank_marketing(data_home=seeded_home, as_frame=True)
    assert "duration" in bank.frame.columns and "duration" not in bank.feature_names
    assert list(bank.sensitive["age_group"].cat.categories) == ["<25", "25-59", ">=60"]


@pytest.mark.shared_data
@needs_shared
def test_seed_from_uncompressed_and_flat_folder(tmp_path):
    source = tmp_path / "downloads"
    source.mkdir()
    # UCI-style uncompressed file and a flat .xz file, side by side
    (source / "student-mat.csv").write_bytes(
        lzma.open(SHARED / "uci" / "student-mat.csv.xz").read()
    )
    shutil.copyfile(SHARED / "uci" / "student-por.csv.xz", source / "student-por.csv.xz")
    home = tmp_path / "cache"
    copied = fd.seed_data_home(source, home, datasets="student_performance")
    assert copied == ["uci/student-mat.csv.xz", "uci/student-por.csv.xz"]
    assert fd.fetch_student_performance(data_home=home, subject="mat").data.shape == (395, 32)
    # already cached: kept unless overwrite=True
    assert fd.seed_data_home(source, home, datasets="student_performance") == []
    assert (
        len(fd.seed_data_home(source, home, datasets=["student_performance"], overwrite=True)) == 2
    )


@pytest.mark.shared_data
@needs_shared
def test_list_datasets_sees_the_cache(seeded_home):
    table = fd.list_datasets(seeded_home)
    fetched = table[table.kind == "fetched"]
    assert (fetched.available == "yes").all()


# ---------------------------------------------------------------- no shared data needed
def test_missing_file_explains_seeding(tmp_path):
    with pytest.raises(FileNotFoundError, match="seed_data_home") as info:
        fd.fetch_bank_marketing(data_home=tmp_path)
    assert "bank-full.csv" in str(info.value)
    with pytest.raises(OSError, match="download_if_missing is False"):
        fd.fetch_parkinsons(data_home=tmp_path, download_if_missing=False)


def test_corrupted_cache_file(tmp_path):
    path = tmp_path / "uci" / "parkinsons_updrs.data.xz"
    path.parent.mkdir()
    path.write_bytes(lzma.compress(b"subject#,age\n1,72\n"))
    with pytest.raises(OSError, match="Checksum mismatch"):
        fd.fetch_parkinsons(data_home=tmp_path)


def test_seed_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        fd.seed_data_home(tmp_path / "nope", tmp_path / "cache")
    with pytest.raises(ValueError, match="datasets"):
        fd.seed_data_home(tmp_path, tmp_path / "cache", datasets="adult")
    with pytest.raises(FileNotFoundError, match="parkinsons"):
        fd.seed_data_home(tmp_path, tmp_path / "cache", datasets="parkinsons")
    assert fd.seed_data_home(tmp_path, tmp_path / "cache") == []  # nothing found, no error
    (tmp_path / "parkinsons_updrs.data").write_bytes(b"not the real file")
    with pytest.raises(OSError, match="Checksum mismatch"):
        fd.seed_data_home(tmp_path, tmp_path / "cache", datasets="parkinsons")
    assert not (tmp_path / "cache" / "uci" / "parkinsons_updrs.data.xz").exists()


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda h: fd.fetch_bank_marketing(data_home=h, version="small"), ValueError),
        (lambda h: fd.fetch_student_performance(data_home=h, subject="bio"), ValueError),
        (lambda h: fd.fetch_acs_income(data_home=h, states=["CA"]), ValueError),
        (lambda h: fd.fetch_acs_income(data_home=h, states=[]), ValueError),
        (lambda h: fd.fetch_acs_task("ACSEmployment", data_home=h), ValueError),
        (lambda h: fd.fetch_kdd_census(data_home=h, subset="dev"), ValueError),
        (lambda h: fd.fetch_law_school(data_home=h, version="x"), ValueError),
        (lambda h: fd.fetch_parkinsons(data_home=h, target="UPDRS"), ValueError),
        (lambda h: fd.fetch_credit_default(data_home=h, as_frame=None), TypeError),
    ],
)
def test_fetch_bad_arguments(tmp_path, call, error):
    with pytest.raises(error):
        call(tmp_path)


def test_data_home_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIREST_DATA", str(tmp_path / "from_env"))
    assert fd.get_data_home() == str((tmp_path / "from_env").resolve())
    assert (tmp_path / "from_env").is_dir()
    explicit = fd.get_data_home(tmp_path / "explicit")
    assert explicit == str((tmp_path / "explicit").resolve())
    monkeypatch.delenv("FAIREST_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert fd.get_data_home() == os.path.join(str((tmp_path / "home").resolve()), "fairest_data")
    fd.clear_data_home(explicit)
    assert not (tmp_path / "explicit").exists()


def test_checksum_table_is_complete():
    for name, files in _fetchers.DATASET_FILES.items():
        for relpath in files:
            digest = _fetchers.FILE_SHA256[relpath]
            assert len(digest) == 64 and int(digest, 16) >= 0, (name, relpath)
