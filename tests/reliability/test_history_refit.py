"""A refit stores ``history_`` the one way (``fairest.utils._reporting.store_history``):
with ``record_history=True`` the new fit's record, without it none, never the previous
fit's (issue #34: BADR and partial parity kept a stale record while LossGap and Pruned
cleared theirs)."""

import inspect
import warnings

import numpy as np
import pytest
from _fast_params import fast_instance
from sklearn.base import BaseEstimator

import fairest
from fairest.utils._reporting import store_history

RECORDING = sorted(  # estimators only: FairnessMonitor records a stream, it is not refitted
    name
    for name in fairest.__all__
    if inspect.isclass(getattr(fairest, name))
    and issubclass(getattr(fairest, name), BaseEstimator)
    and "record_history" in inspect.signature(getattr(fairest, name)).parameters
)


def _data(regression: bool):
    rng = np.random.default_rng(0)
    g = rng.integers(0, 2, 240)
    X = rng.normal(size=(240, 3)) + 0.5 * g[:, None]
    score = X[:, 0] + 0.5 * rng.normal(size=240)
    return X, (score if regression else (score > 0.3).astype(int)), g


def test_every_recording_family_is_covered():
    assert {"BADRClassifier", "PartialParityClassifier", "LossGapConstrainedClassifier"} <= set(
        RECORDING
    )


@pytest.mark.parametrize("name", RECORDING)
def test_a_refit_without_record_history_keeps_no_stale_record(name):
    cls = getattr(fairest, name)
    X, y, g = _data("Regressor" in name)
    estimator = fast_instance(cls).set_params(record_history=True)
    if name == "ERMIClassifier":  # the stochastic solver records its epochs, full batch none
        estimator.set_params(solver="sgda", n_epochs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cheap settings' convergence and fairness notes
        estimator.fit(X, y, sensitive_features=g)
        assert isinstance(estimator.history_, dict) and estimator.history_
        estimator.set_params(record_history=False).fit(X, y, sensitive_features=g)
    assert not hasattr(estimator, "history_")


def test_store_history_sets_or_clears():
    class Stub:
        record_history = True

    stub = Stub()
    store_history(stub, {"loss": [3.0, 2.0]})
    np.testing.assert_array_equal(stub.history_["loss"], [3.0, 2.0])
    stub.record_history = False
    store_history(stub, {"loss": [1.0]})
    assert not hasattr(stub, "history_")
    stub.record_history = True
    store_history(stub, None)  # a fit that recorded nothing
    assert not hasattr(stub, "history_")


STREAMING = [name for name in RECORDING if hasattr(getattr(fairest, name), "partial_fit")]


def _streaming_instance(name):
    estimator = fast_instance(getattr(fairest, name))
    if name == "ERMIClassifier":
        estimator.set_params(solver="sgda", n_epochs=2)
    return estimator


def test_every_streaming_family_is_covered():
    assert {"ERMIClassifier", "LossGapConstrainedClassifier", "PrunedFairClassifier"} <= set(
        STREAMING
    )


@pytest.mark.parametrize("name", STREAMING)
def test_a_partial_fit_without_record_history_keeps_no_stale_record(name):
    """A ``partial_fit`` after a recorded fit, with ``record_history=False``, leaves no
    ``history_`` (ERMI kept the stream's earlier record, LossGap the fit's)."""
    X, y, g = _data(False)
    estimator = _streaming_instance(name).set_params(record_history=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, y, sensitive_features=g)
        if name != "PrunedFairClassifier":  # Pruned records fits only
            assert isinstance(estimator.history_, dict) and estimator.history_
        estimator.set_params(record_history=False)
        estimator.partial_fit(X[:120], y[:120], sensitive_features=g[:120])
    assert not hasattr(estimator, "history_")


def test_loss_gap_partial_fit_records_its_call():
    """With ``record_history``, ``LossGapConstrainedClassifier.partial_fit``'s
    ``history_`` is the last call's record (as its docstring says): one entry per
    iteration of that call, counted from 0."""
    X, y, g = _data(False)
    estimator = _streaming_instance("LossGapConstrainedClassifier").set_params(record_history=True)
    classes, groups = np.unique(y), np.unique(g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.partial_fit(
            X[:120], y[:120], sensitive_features=g[:120], classes=classes, groups=groups
        )
        first = estimator.history_["iter"].copy()
        done = estimator.n_iter_
        estimator.partial_fit(X[120:], y[120:], sensitive_features=g[120:])
    second = estimator.history_["iter"]
    assert first.size == done
    np.testing.assert_array_equal(second, np.arange(estimator.n_iter_ - done))


def test_ermi_partial_fit_records_the_stream():
    """ERMI's ``partial_fit`` records the stream's epochs so far: each call appends its
    own."""
    X, y, g = _data(False)
    estimator = _streaming_instance("ERMIClassifier").set_params(record_history=True)
    classes, groups = np.unique(y), np.unique(g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.partial_fit(X, y, sensitive_features=g, classes=classes, groups=groups)
        one = {key: value.copy() for key, value in estimator.history_.items()}
        estimator.partial_fit(X, y, sensitive_features=g)
    for key, value in estimator.history_.items():
        assert value.shape[0] == 2 * one[key].shape[0]
        np.testing.assert_array_equal(value[: one[key].shape[0]], one[key])


@pytest.mark.parametrize("name", STREAMING)
@pytest.mark.parametrize("after_fit", [False, True])
def test_the_stream_carries_a_typed_record_between_calls(name, after_fit):
    """What a solver carries from one ``partial_fit`` call to the next is one typed
    record with named fields (``docs/contributing.md``, "Add an estimator"), never a dict,
    and it survives the pickling of a stream in mid-course."""
    import dataclasses
    import pickle

    X, y, g = _data(False)
    estimator = _streaming_instance(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if after_fit:
            estimator.fit(X, y, sensitive_features=g)
            estimator.partial_fit(X[:120], y[:120], sensitive_features=g[:120])
        else:
            estimator.partial_fit(
                X[:120], y[:120], sensitive_features=g[:120], classes=[0, 1], groups=[0, 1]
            )
        estimator.partial_fit(X[120:], y[120:], sensitive_features=g[120:])
    carry = estimator._stream_state.solver
    fields = getattr(carry, "_fields", None) or [field.name for field in dataclasses.fields(carry)]
    assert not isinstance(carry, dict) and fields
    assert type(pickle.loads(pickle.dumps(carry))) is type(carry)
