"""Bundled datasets: content, return conventions, checksums, provenance files."""

import hashlib
import json
import lzma
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from fairest.datasets import _base, load_adult, load_compas, load_german_credit, load_ricci

DATA = resources.files("fairest.datasets").joinpath("data")

# loader, kwargs, rows, n_features, positives, sensitive columns
CASES = [
    (load_adult, {}, 32561, 14, 7841, ["sex", "race"]),
    (load_adult, {"subset": "test"}, 16281, 14, 3846, ["sex", "race"]),
    (load_adult, {"subset": "all"}, 48842, 14, 11687, ["sex", "race"]),
    (load_german_credit, {}, 1000, 20, 700, ["sex", "age_group"]),
    (load_compas, {}, 7214, 11, 3251, ["sex", "race", "age_cat"]),
    (load_compas, {"propublica_filter": True}, 6172, 11, None, ["sex", "race", "age_cat"]),
    (load_ricci, {}, 118, 4, 56, ["race"]),
]
IDS = ["adult", "adult-test", "adult-all", "german", "compas", "compas-pp", "ricci"]
FRAME_IDS = ["adult", "german", "compas", "ricci"]  # the other cases share their code paths


@pytest.mark.parametrize("loader, kwargs, n_rows, n_features, positives, sensitive", CASES, ids=IDS)
def test_bunch_contents(loader, kwargs, n_rows, n_features, positives, sensitive):
    bunch = loader(**kwargs)
    assert bunch.data.shape == (n_rows, n_features)
    assert bunch.data.dtype == np.float64
    assert bunch.target.shape == (n_rows,)
    assert bunch.target.dtype == np.int64
    assert set(np.unique(bunch.target)) == {0, 1}
    if positives is not None:
        assert int(bunch.target.sum()) == positives
    assert len(bunch.target_names) == 2
    assert len(bunch.feature_names) == n_features
    assert bunch.frame is None
    assert isinstance(bunch.sensitive, pd.DataFrame)
    assert list(bunch.sensitive.columns) == sensitive
    assert len(bunch.sensitive) == n_rows
    assert not bunch.sensitive.isna().any().any()
    assert isinstance(bunch.DESCR, str) and len(bunch.DESCR) > 200
    # ordinal codes of categorical columns index into `categories`
    for name, cats in bunch.categories.items():
        codes = bunch.data[:, bunch.feature_names.index(name)]
        codes = codes[~np.isnan(codes)]
        assert codes.min() >= 0 and codes.max() < len(cats)
        assert np.all(codes == np.round(codes))


@pytest.mark.parametrize(
    "loader, kwargs, n_rows, n_features, positives, sensitive",
    [case for case, name in zip(CASES, IDS, strict=True) if name in FRAME_IDS],
    ids=FRAME_IDS,
)
def test_as_frame_matches_array(loader, kwargs, n_rows, n_features, positives, sensitive):
    array_bunch = loader(**kwargs)
    frame_bunch = loader(as_frame=True, **kwargs)
    assert isinstance(frame_bunch.data, pd.DataFrame)
    assert isinstance(frame_bunch.target, pd.Series)
    assert frame_bunch.target.name == frame_bunch.target_column
    assert list(frame_bunch.data.columns) == frame_bunch.feature_names
    assert frame_bunch.categories is None
    np.testing.assert_array_equal(frame_bunch.target.to_numpy(), array_bunch.target)
    np.testing.assert_array_equal(
        frame_bunch.frame[frame_bunch.target_column].to_numpy(), array_bunch.target
    )
    assert set(frame_bunch.feature_names) <= set(frame_bunch.frame.columns)
    for j, name in enumerate(frame_bunch.feature_names):
        column = frame_bunch.data[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            assert list(column.cat.categories) == array_bunch.categories[name]
            expected = column.cat.codes.to_numpy(dtype=float)
            expected[expected < 0] = np.nan
        else:
            expected = column.to_numpy(dtype=float, na_value=np.nan)
        np.testing.assert_array_equal(array_bunch.data[:, j], expected)


@pytest.mark.parametrize("loader", [load_german_credit, load_compas, load_ricci])
def test_return_X_y(loader):
    bunch = loader()
    X, y = loader(return_X_y=True)
    np.testing.assert_array_equal(X, bunch.data)
    np.testing.assert_array_equal(y, bunch.target)
    Xf, yf = loader(return_X_y=True, as_frame=True)
    assert isinstance(Xf, pd.DataFrame) and isinstance(yf, pd.Series)
    np.testing.assert_array_equal(yf.to_numpy(), bunch.target)


def test_adult_labels_cleaned_and_missing_values():
    test = load_adult(subset="test", as_frame=True)
    assert list(test.target_names) == ["<=50K", ">50K"]
    assert test.frame["income"].isin([0, 1]).all()
    # '?' cells become NaN: 963 workclass, 966 occupation, 274 native_country in test
    assert test.data[["workclass", "occupation", "native_country"]].isna().sum().tolist() == [
        963,
        966,
        274,
    ]
    assert "?" not in test.data["workclass"].cat.categories
    assert not any(c.startswith(" ") for c in test.data["workclass"].cat.categories)
    train = load_adult(as_frame=True)
    assert set(train.sensitive["sex"].cat.categories) == {"Female", "Male"}
    both = load_adult(subset="all", as_frame=True)
    assert both.data["age"].iloc[:32561].equals(train.data["age"])


def test_german_decoding_and_sensitive():
    bunch = load_german_credit(as_frame=True)
    assert list(bunch.target_names) == ["bad", "good"]
    assert bunch.data["checking_status"].iloc[0] == "< 0 DM"
    assert not bunch.data.isna().any().any()  # every A-code is decoded
    assert bunch.sensitive["sex"].value_counts().to_dict() == {"male": 690, "female": 310}
    assert bunch.sensitive["age_group"].value_counts().to_dict() == {">=25": 851, "<25": 149}
    assert list(bunch.sensitive["age_group"].cat.categories) == ["<25", ">=25"]
    np.testing.assert_array_equal(bunch.cost_matrix, [[0, 5], [1, 0]])


def test_compas_is_deidentified_subset():
    bunch = load_compas(as_frame=True)
    assert bunch.frame.shape == (7214, 16)
    for column in ("id", "name", "first", "last", "dob", "c_case_number", "compas_screening_date"):
        assert column not in bunch.frame.columns
    assert "is_recid" not in bunch.feature_names  # leaks the target
    assert list(bunch.compas_scores.columns) == ["decile_score", "score_text", "v_decile_score"]
    assert list(bunch.sensitive["age_cat"].cat.categories) == [
        "Less than 25",
        "25 - 45",
        "Greater than 45",
    ]
    assert bunch.sensitive["race"].nunique() == 6
    assert bunch.data["days_b_screening_arrest"].isna().sum() == 307
    filtered = load_compas(propublica_filter=True, as_frame=True)
    assert filtered.data["days_b_screening_arrest"].abs().max() <= 30


def test_ricci_target_rule():
    bunch = load_ricci(as_frame=True)
    np.testing.assert_array_equal(bunch.target, (bunch.frame["Combine"] >= 70).astype(int))
    assert "Combine" not in bunch.feature_names
    assert bunch.sensitive["race"].value_counts().to_dict() == {"W": 68, "B": 27, "H": 23}


def test_sensitive_feeds_encode_groups():
    from fairest.utils import encode_groups

    bunch = load_german_credit()
    codes, groups = encode_groups(bunch.sensitive)  # sex x age_group
    assert codes.shape == (1000,)
    assert len(groups) == 4


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: load_adult(subset="valid"), ValueError),
        (lambda: load_adult(as_frame="yes"), TypeError),
        (lambda: load_ricci(return_X_y=1), TypeError),
        (lambda: load_compas(propublica_filter=None), TypeError),
    ],
)
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call()


def test_checksum_mismatch_is_reported(monkeypatch):
    wrong = dict.fromkeys(_base._bundled_checksums(), "0" * 64)
    monkeypatch.setattr(_base, "_bundled_checksums", lambda: wrong)
    with pytest.raises(OSError, match="Checksum mismatch"):
        load_ricci()


def test_read_verified_xz_errors(tmp_path):
    good = tmp_path / "good.xz"
    good.write_bytes(lzma.compress(b"a,b\n1,2\n"))
    digest = hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    assert _base.read_verified_xz(good, digest) == b"a,b\n1,2\n"
    with pytest.raises(OSError, match="Checksum mismatch"):
        _base.read_verified_xz(good, "f" * 64)
    broken = tmp_path / "broken.xz"
    broken.write_bytes(b"not xz at all")
    with pytest.raises(OSError, match="not a valid xz file"):
        _base.read_verified_xz(broken, digest)
    with pytest.raises(FileNotFoundError):
        _base.read_verified_xz(tmp_path / "absent.xz", digest)


def test_data_folder_provenance_and_size():
    checksums = json.loads(DATA.joinpath("checksums.json").read_text())
    stored = sorted(p.name for p in DATA.iterdir() if p.name.endswith(".xz"))
    assert stored == sorted(checksums)
    notice = DATA.joinpath("NOTICE.md").read_text()
    total = 0
    for name, digest in checksums.items():
        compressed = DATA.joinpath(name).read_bytes()
        total += len(compressed)
        assert hashlib.sha256(lzma.decompress(compressed)).hexdigest() == digest
        assert name in notice and digest in notice
    assert total < 1_000_000  # the bundle stays small
