"""list_datasets and the public namespace of fairest.datasets."""

import lzma

import pandas as pd

import fairest.datasets as fd


def test_list_datasets_table(tmp_path):
    table = fd.list_datasets(tmp_path / "empty_cache")
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == [
        "name", "kind", "loader", "rows", "columns", "target", "sensitive", "available"
    ]  # fmt: skip
    assert set(table.kind) == {"bundled", "fetched", "synthetic"}
    assert table.name.is_unique
    for loader in table.loader:
        assert callable(getattr(fd, loader))
    assert (table.loc[table.kind != "fetched", "available"] == "yes").all()
    assert (table.loc[table.kind == "fetched", "available"] == "no").all()
    assert not (tmp_path / "empty_cache").exists()  # listing does not create the cache
    bundled = table[table.kind == "bundled"].set_index("name")
    assert bundled.loc["adult", "rows"] == 32561 and bundled.loc["compas", "columns"] == 11


def test_list_datasets_partial(tmp_path):
    path = tmp_path / "uci" / "student-mat.csv.xz"
    path.parent.mkdir(parents=True)
    path.write_bytes(lzma.compress(b""))
    table = fd.list_datasets(tmp_path).set_index("name")
    assert table.loc["student_performance", "available"] == "partial"
    assert table.loc["parkinsons", "available"] == "no"


def test_catalog_matches_bundled_loaders():
    table = fd.list_datasets().set_index("name")
    for name in ("adult", "german_credit", "compas", "ricci"):
        X, _ = getattr(fd, table.loc[name, "loader"])(return_X_y=True)
        assert X.shape == (table.loc[name, "rows"], table.loc[name, "columns"])


def test_public_names():
    for name in fd.__all__:
        assert hasattr(fd, name)
        assert getattr(fd, name).__doc__
    assert sorted(fd.__all__) == fd.__all__
