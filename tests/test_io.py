"""fairest.io: aligned chunks from iterables and parquet, group vocabulary of a stream."""

import numpy as np
import pytest

from fairest.io import Chunk, GroupVocabulary, fit_stream, iter_chunks, iter_parquet


def _frame(n=1000, seed=0):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x0": rng.normal(size=n),
            "x1": rng.normal(size=n),
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["a", "b", "c"], n),
            "w": rng.uniform(0.5, 2.0, n),
            "label": rng.integers(0, 2, n),
        }
    )


def test_iter_chunks_accepts_tuples_mappings_and_chunks():
    X, y, a, w = np.ones((4, 2)), np.zeros(4), np.array(list("abab")), np.ones(4)
    chunks = list(
        iter_chunks([(X, y), (X, y, a), {"X": X, "y": y, "sample_weight": w}, Chunk(X, y, a, w)])
    )
    assert [chunk.sensitive_features is None for chunk in chunks] == [True, False, True, False]
    assert all(chunk.X.shape == (4, 2) for chunk in chunks)


@pytest.mark.parametrize(
    "item, match",
    [
        ((np.ones((4, 2)), np.zeros(3)), "y has 3 rows but X has 4"),
        ((np.ones((4, 2)), np.zeros(4), np.zeros(5)), "sensitive_features has 5 rows"),
        ((np.ones(4), np.zeros(4)), "X must be 2-D"),
        ({"X": np.ones((4, 2)), "y": np.zeros(4), "groups": np.zeros(4)}, "unknown keys"),
    ],
)
def test_misaligned_chunks_are_refused_by_index(item, match):
    with pytest.raises(ValueError, match=match) as error:
        list(iter_chunks([(np.ones((2, 2)), np.zeros(2)), item]))
    assert "chunk 1" in str(error.value)


def test_a_chunk_of_the_wrong_kind_is_refused():
    with pytest.raises(TypeError, match="chunk 0: expected"):
        list(iter_chunks([np.ones((4, 2))]))


def test_parquet_stream_keeps_rows_aligned(tmp_path):
    pytest.importorskip("pyarrow")
    frame = _frame()
    path = tmp_path / "data.parquet"
    frame.to_parquet(path, row_group_size=300)
    chunks = list(
        iter_parquet(path, target="label", sensitive=["sex", "race"], weight="w", batch_size=256)
    )
    assert max(len(chunk.y) for chunk in chunks) <= 256
    X = np.concatenate([chunk.X for chunk in chunks])
    np.testing.assert_array_equal(X, frame[["x0", "x1"]].to_numpy())
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), frame["label"])
    np.testing.assert_array_equal(np.concatenate([c.sample_weight for c in chunks]), frame["w"])
    groups = np.concatenate([c.sensitive_features for c in chunks])
    np.testing.assert_array_equal(groups, frame[["sex", "race"]].to_numpy())


def test_parquet_missing_column_is_named(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "data.parquet"
    _frame(10).to_parquet(path)
    with pytest.raises(ValueError, match=r"\['gender'\]"):
        next(iter_parquet(path, target="label", sensitive="gender"))


def test_vocabulary_learnt_from_the_first_chunk_refuses_new_labels():
    vocabulary = GroupVocabulary()
    np.testing.assert_array_equal(vocabulary.codes(np.array(["M", "F", "M"])), [1, 0, 1])
    with pytest.raises(ValueError, match=r"\['X'\] were not in the groups known.*groups="):
        vocabulary.codes(np.array(["F", "X"]))


def test_vocabulary_given_up_front_accepts_a_group_absent_from_the_first_chunk():
    vocabulary = GroupVocabulary(groups=["F", "M", "X"])
    np.testing.assert_array_equal(vocabulary.codes(np.array(["M"])), [1])
    np.testing.assert_array_equal(vocabulary.codes(np.array(["X", "F"])), [2, 0])


def test_vocabulary_of_a_single_unordered_label():
    vocabulary = GroupVocabulary(groups=[None])  # the label of "no groups"
    np.testing.assert_array_equal(vocabulary.codes(np.array([None, None], dtype=object)), [0, 0])


class _Recorder:
    """A stand-in estimator: records what every partial_fit call received."""

    def __init__(self):
        self.calls = []

    def partial_fit(self, X, y, *, sensitive_features=None, sample_weight=None, **labels):
        self.calls.append((X[:, 0].copy(), y.copy(), sensitive_features, sample_weight, labels))
        return self


def test_fit_stream_rereads_a_parquet_file_every_epoch_with_rows_aligned(tmp_path):
    pytest.importorskip("pyarrow")
    frame = _frame(600)
    path = tmp_path / "data.parquet"
    frame.to_parquet(path, row_group_size=200)
    recorder = fit_stream(
        _Recorder(),
        lambda: iter_parquet(
            path, target="label", sensitive="sex", weight="w", features=["x0"], batch_size=200
        ),
        n_epochs=2,
        classes=[0, 1],
        groups=["F", "M"],
    )
    assert len(recorder.calls) == 6
    for epoch in range(2):
        calls = recorder.calls[3 * epoch : 3 * epoch + 3]
        np.testing.assert_array_equal(np.concatenate([c[0] for c in calls]), frame["x0"])
        np.testing.assert_array_equal(np.concatenate([c[2] for c in calls]), frame["sex"])
        np.testing.assert_array_equal(np.concatenate([c[3] for c in calls]), frame["w"])
    assert recorder.calls[0][4] == {"classes": [0, 1], "groups": ["F", "M"]}


def test_fit_stream_refuses_what_it_cannot_read_again_or_feed():
    chunks = iter([(np.ones((4, 2)), np.zeros(4))])
    with pytest.raises(ValueError, match="one-shot iterator cannot be read n_epochs > 1"):
        fit_stream(_Recorder(), chunks, n_epochs=2)
    with pytest.raises(TypeError, match="has no partial_fit"):
        fit_stream(object(), [(np.ones((4, 2)), np.zeros(4))])
    with pytest.raises(ValueError, match="n_epochs must be a positive integer"):
        fit_stream(_Recorder(), [], n_epochs=0)


def test_parquet_default_features_leave_out_target_groups_weight_and_index(tmp_path):
    """A pandas index saved in the file (``__index_level_0__``, strings here) is not a
    feature; nor are the target, sensitive and weight columns."""
    pytest.importorskip("pyarrow")
    frame = _frame(50)
    frame.index = [f"row{i}" for i in range(50)]
    path = tmp_path / "indexed.parquet"
    frame.to_parquet(path)
    chunks = list(iter_parquet(path, target="label", sensitive=["sex", "race"], weight="w"))
    np.testing.assert_array_equal(chunks[0].X, frame[["x0", "x1"]].to_numpy())


@pytest.mark.parametrize(
    "keywords, where",
    [
        (dict(sensitive="sex"), "the default features"),  # race: a string left as a feature
        (dict(sensitive=["sex", "race"], features=["x0", "race"]), "features="),
    ],
)
def test_parquet_non_numeric_feature_is_named_with_the_fix(tmp_path, keywords, where):
    pytest.importorskip("pyarrow")
    path = tmp_path / "data.parquet"
    _frame(20).to_parquet(path)
    with pytest.raises(ValueError) as info:
        next(iter_parquet(path, target="label", **keywords))
    message = str(info.value)
    assert "feature column(s) 'race'" in message and where in message
    assert "Pass features= with the numeric columns (e.g. features=['x0'" in message
    assert "could not convert" not in message and len(message) < 500


def test_fit_stream_of_no_chunk_raises_and_fits_nothing():
    recorder = _Recorder()
    with pytest.raises(ValueError, match="chunks is empty: no chunk was read, so nothing"):
        fit_stream(recorder, [], classes=[0, 1])
    assert recorder.calls == []
