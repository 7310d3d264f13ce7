"""Property-based checks (hypothesis) of the stream, path and command-line inputs: any
chunking of a stream with a chunk of one class fits; every fold of a path's integer
``cv`` holds every group and label; a parquet file's row order changes nothing that
``iter_parquet`` reads; ``--methods`` is judged whatever its commas and spaces."""

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from fairest import GroupThresholdClassifier, LossGapConstrainedClassifier, fairness_path
from fairest.io import fit_stream, iter_parquet
from fairest.model_selection import GroupStratifiedKFold
from fairest.utils import FairnessWarning

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------------------------
# streams


def _stream_rows(n_per_cell=24, seed=0):
    """Two groups x two labels, ``n_per_cell`` rows each."""
    rng = np.random.default_rng(seed)
    index = np.arange(4 * n_per_cell)
    s, y = index % 2, (index // 2) % 2
    X = rng.normal(size=(index.size, 3)) + 0.8 * y[:, None] + 0.3 * s[:, None]
    return X, y, s


@st.composite
def chunkings(draw):
    """Chunk sizes (16 or 32 rows, 96 in all), the chunk of one class and its class, and a
    shuffling seed: the rows of each chunk alternate between the two groups (a loss-gap
    chunk needs rows of every group)."""
    sizes = draw(
        st.permutations(
            draw(st.sampled_from([[16] * 6, [32, 16, 16, 16, 16], [32, 32, 16, 16], [32, 32, 32]]))
        )
    )
    return (
        sizes,
        draw(st.integers(0, len(sizes) - 1)),
        draw(st.integers(0, 1)),
        draw(st.integers(0, 2**16)),
    )


def _chunks(X, y, s, sizes, single, label, seed):
    rng = np.random.default_rng(seed)
    rows = {g: list(rng.permutation(np.flatnonzero(s == g))) for g in (0, 1)}
    chunks = []
    for j in sorted(range(len(sizes)), key=lambda j: j != single):  # the one-class chunk first
        size = sizes[j]
        taken = []
        for _ in range(size // 2):
            for g in (0, 1):
                pool = rows[g]
                pick = next(i for i, r in enumerate(pool) if j != single or y[r] == label)
                taken.append(pool.pop(pick))
        chunks.append((j, np.array(taken)))
    chunks.sort(key=lambda item: item[0])
    return [(X[r], y[r], s[r]) for _, r in chunks]


@SETTINGS
@given(chunkings())
def test_any_chunking_with_a_chunk_of_one_class_fits_the_stream(chunking):
    sizes, single, label, seed = chunking
    X, y, s = _stream_rows()
    chunks = _chunks(X, y, s, sizes, single, label, seed)
    assert sorted(np.unique(chunks[single][1]).tolist()) == [label]
    assert sum(len(c[1]) for c in chunks) == len(y)
    model = LossGapConstrainedClassifier(hidden_layer_sizes=(), batch_size=16, random_state=0)
    fit_stream(model, chunks, classes=[0, 1])
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert model._stream_state.n_calls == len(sizes)
    assert np.all(np.isfinite(model.coef_)) and set(np.unique(model.predict(X))) <= {0, 1}


# ------------------------------------------------------------------------------------------
# paths


@st.composite
def grouped_labels(draw):
    """``(y, groups, k)``: 2 to 4 folds, 2 to 4 groups large enough for them; the
    first group alternates its labels over its first ``2k`` rows, so each label has a
    (label, group) cell of ``k`` rows."""
    k = draw(st.integers(2, 4))
    least = 4 if k == 2 else k  # a row in every test fold, two in every training fold
    sizes = draw(st.lists(st.integers(least, least + 15), min_size=2, max_size=4))
    sizes[0] = max(sizes[0], 2 * k)
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.array(["a", "b", "c", "d"][: len(sizes)]), sizes)
    y = rng.integers(0, 2, groups.size)
    y[: 2 * k] = np.arange(2 * k) % 2
    order = rng.permutation(groups.size)
    return y[order], groups[order], k


@SETTINGS
@given(grouped_labels())
def test_every_fold_of_an_integer_cv_holds_every_group_and_label(case):
    y, groups, k = case
    X = np.random.default_rng(0).normal(size=(y.size, 2)) + y[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # thin (label, group) cells
        folds = list(GroupStratifiedKFold(k).split(X, y, sensitive_features=groups))
    for train, test in folds:
        assert set(groups[train]) == set(groups[test]) == set(groups)
        assert set(y[train]) == {0, 1}
    estimator = GroupThresholdClassifier(LogisticRegression())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)  # tiny groups: degenerate thresholds
        path = fairness_path(estimator, X, y, sensitive_features=groups, values=[0.1], cv=k)
    assert path.n_splits == k and np.all(np.isfinite(path.fold_val_accuracy))
    assert all(list(point.groups_) == sorted(set(groups)) for point in path.estimators[0])


@SETTINGS
@given(grouped_labels(), st.integers(1, 3))
def test_a_group_smaller_than_the_folds_is_named_before_any_fit(case, small):
    y, groups, k = case
    small = min(small, k - 1)  # fewer rows than folds
    groups, y = np.concatenate([groups, ["z"] * small]), np.concatenate([y, [0] * small])
    X = np.zeros((y.size, 1))
    with pytest.raises(ValueError, match=rf"cv={k}: group 'z' \({small} rows?\) is too small"):
        fairness_path(
            GroupThresholdClassifier(LogisticRegression()),
            X,
            y,
            sensitive_features=groups,
            values=[0.1],
            cv=k,
        )


# ------------------------------------------------------------------------------------------
# parquet


@SETTINGS
@given(
    st.integers(1, 150),
    st.integers(1, 3),
    st.integers(1, 64),
    st.integers(0, 2**16),
)
def test_parquet_row_order_changes_neither_rows_nor_columns(n, n_features, batch_size, seed):
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        rng.normal(size=(n, n_features)), columns=[f"x{i}" for i in range(n_features)]
    )
    frame["group"] = rng.choice(["a", "b", "c"], n)
    frame["label"] = rng.integers(0, 2, n)
    shuffled = frame.iloc[rng.permutation(n)]  # its index (ints) is stored too: not a feature
    read = []
    with tempfile.TemporaryDirectory() as folder:
        for name, data in (("plain", frame), ("shuffled", shuffled)):
            path = Path(folder) / f"{name}.parquet"
            data.to_parquet(path)
            chunks = list(
                iter_parquet(path, target="label", sensitive="group", batch_size=batch_size)
            )
            assert all(len(chunk.y) <= batch_size for chunk in chunks)
            rows = np.column_stack(
                [np.concatenate([c.X for c in chunks]), np.concatenate([c.y for c in chunks])]
            )
            groups = np.concatenate([c.sensitive_features for c in chunks])
            read.append((rows, groups))
    (plain, plain_groups), (other, other_groups) = read
    assert plain.shape == other.shape == (n, n_features + 1)
    order_plain, order_other = np.lexsort(plain.T[::-1]), np.lexsort(other.T[::-1])
    np.testing.assert_array_equal(plain[order_plain], other[order_other])
    np.testing.assert_array_equal(plain_groups[order_plain], other_groups[order_other])


# ------------------------------------------------------------------------------------------
# command line


@SETTINGS
@given(
    st.lists(st.sampled_from(["erm", "erm-balanced", "threshold-erm", "", " ", "  "]), max_size=8)
)
def test_methods_list_is_the_named_methods_once_each_or_refused(entries):
    from fairest.cli import UserError, _method_names

    available = ["erm", "erm-balanced", "threshold-erm"]
    text = ",".join(f" {entry}" if i % 2 else entry for i, entry in enumerate(entries))
    named = [entry.strip() for entry in entries if entry.strip()]
    if not named:
        with pytest.raises(UserError, match="--methods is empty; name at least one method"):
            _method_names(text, "classification", available)
        return
    assert _method_names(text, "classification", available) == list(dict.fromkeys(named))
