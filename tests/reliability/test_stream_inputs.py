"""Streams as they come: every ``partial_fit`` estimator takes a chunk of a single class
once the stream's classes are known, names an unseen label with the known ``classes_``
(scikit-learn's wording), and ``fit_stream`` refuses a stream with no chunk."""

import numpy as np
import pytest

from fairest import ERMIClassifier, LossGapConstrainedClassifier, PrunedFairClassifier
from fairest.io import fit_stream

STREAMING = {
    "ERMIClassifier": lambda: ERMIClassifier(solver="sgda", batch_size=32, random_state=0),
    "LossGapConstrainedClassifier": lambda: LossGapConstrainedClassifier(
        hidden_layer_sizes=(), batch_size=32, random_state=0
    ),
    "PrunedFairClassifier": lambda: PrunedFairClassifier(
        hidden_layer_sizes=(4,), dense_n_epochs=1, n_epochs=2, batch_size=32, random_state=0
    ),
}


CHUNK = 64  # every chunk has this many rows: one compilation of each solver for the file


def _data(n=4 * CHUNK, seed=0):
    rng = np.random.default_rng(seed)
    s = np.arange(n) % 2
    X = rng.normal(size=(n, 3)) + s[:, None]
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0.5).astype(int)
    return X, y, s


@pytest.mark.parametrize("name", STREAMING)
def test_a_later_chunk_of_one_class_is_accepted(name):
    X, y, s = _data()
    model = STREAMING[name]()
    model.partial_fit(X[:CHUNK], y[:CHUNK], sensitive_features=s[:CHUNK], classes=[0, 1])
    positives = np.flatnonzero(y == 1)[-CHUNK:]
    model.partial_fit(X[positives], y[positives], sensitive_features=s[positives])
    assert model._stream_state.n_calls == 2
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert set(np.unique(model.predict(X))) <= {0, 1}


@pytest.mark.parametrize("name", STREAMING)
def test_a_first_chunk_of_one_class_is_accepted_with_classes(name):
    X, y, s = _data()
    negatives = np.flatnonzero(y == 0)[:CHUNK]
    model = STREAMING[name]()
    model.partial_fit(X[negatives], y[negatives], sensitive_features=s[negatives], classes=[0, 1])
    np.testing.assert_array_equal(model.classes_, [0, 1])
    # the stream goes on with both classes
    model.partial_fit(X[:CHUNK], y[:CHUNK], sensitive_features=s[:CHUNK])
    assert model._stream_state.n_calls == 2


@pytest.mark.parametrize("name", STREAMING)
def test_a_first_chunk_of_one_class_without_classes_is_refused(name):
    X, y, s = _data()
    negatives = np.flatnonzero(y == 0)
    with pytest.raises(ValueError, match="classes must be given on the first call") as info:
        STREAMING[name]().partial_fit(X[negatives], y[negatives], sensitive_features=s[negatives])
    assert "a chunk may hold only some of them" in str(info.value)


@pytest.mark.parametrize("name", STREAMING)
def test_an_unseen_label_is_named_with_the_known_classes(name):
    X, y, s = _data()
    model = STREAMING[name]()
    model.partial_fit(X[:CHUNK], y[:CHUNK], sensitive_features=s[:CHUNK], classes=[0, 1])
    with pytest.raises(ValueError) as info:
        model.partial_fit(X[:10], np.full(10, 2), sensitive_features=s[:10])
    message = str(info.value)
    assert "labels [2] of y are not in classes_=[0, 1]" in message
    assert "should include all valid labels that can be in y" in message
    assert "only one class" not in message and len(message) < 500
    assert model._stream_state.n_calls == 1  # the refused chunk left the stream as it was


def test_the_unseen_label_of_a_stream_after_fit_names_the_fitted_classes():
    X, y, s = _data()
    model = STREAMING["ERMIClassifier"]().fit(X[:CHUNK], y[:CHUNK], sensitive_features=s[:CHUNK])
    with pytest.raises(ValueError, match=r"not in classes_=\[0, 1\] \(the fitted model's\)"):
        model.partial_fit(X[:10], np.full(10, 7), sensitive_features=s[:10])


def test_fit_still_refuses_a_single_class():
    """The stream's exception is for chunks only: ``fit`` on one class still raises."""
    X, y, s = _data()
    with pytest.raises(ValueError, match="only one class: 0"):
        LossGapConstrainedClassifier(hidden_layer_sizes=()).fit(
            X, np.zeros_like(y), sensitive_features=s
        )


@pytest.mark.parametrize("chunks", [[], iter([]), lambda: iter([])])
def test_fit_stream_of_no_chunk_is_refused(chunks):
    model = ERMIClassifier(solver="sgda")
    with pytest.raises(ValueError, match="chunks is empty: no chunk was read"):
        fit_stream(model, chunks, classes=[0, 1])
    assert not hasattr(model, "classes_")


def test_fit_stream_whose_later_epoch_reads_nothing_is_refused():
    X, y, s = _data()
    stream = iter([(X[:CHUNK], y[:CHUNK], s[:CHUNK])])  # one iterator for every epoch
    with pytest.raises(ValueError, match="chunks is empty on epoch 2 of 2"):
        fit_stream(STREAMING["ERMIClassifier"](), lambda: stream, n_epochs=2, classes=[0, 1])
