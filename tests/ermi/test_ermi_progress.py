"""ERMI's SGDA on the solver contract (issue 34): chunks of epochs through the constrained
engine's guarded scan, the same model whatever the chunking, the progress bar between
chunks (issue 33), and the refit after a divergence."""

import io
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from fairest import ERMIClassifier
from fairest.ermi._defaults import SGDA_TUNING
from fairest.ermi._dp import PrivacyWarning
from fairest.ermi._sgda import chunk_epochs
from fairest.utils._reporting import ProgressBar, show_progress


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 0.5 * s[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, s


def _updates(monkeypatch):
    updates = []
    monkeypatch.setattr(ProgressBar, "update", lambda self, *args: updates.append(args))
    return updates


def test_chunk_epochs_divides_the_epochs_within_the_row_budget():
    with SGDA_TUNING.override(chunk_rows=1000):
        assert chunk_epochs(12, 10, 20) == 4  # 5 epochs fit in 1000 rows; 4 divides 12
        assert chunk_epochs(7, 10, 20) == 1  # 7 is prime
        assert chunk_epochs(3, 100, 20) == 1  # one epoch over the budget: one per chunk
    assert chunk_epochs(4, 10, 64) == 4  # small fits: one chunk


@pytest.mark.parametrize("batching", ["uniform", "shuffle"])
@pytest.mark.parametrize("return_iterate", ["average", "random"])
def test_the_chunking_does_not_change_the_model(batching, return_iterate):
    """One chunk per epoch draws the same keys, batches and iterates as one chunk for the
    whole fit: the same model to the last bit, and the same history."""
    X, y, s = _data()
    params = dict(
        solver="sgda",
        fairness_weight=1.0,
        batch_size=32,
        n_epochs=4,
        random_state=0,
        batching=batching,
        return_iterate=return_iterate,
        record_history=True,
    )
    whole = ERMIClassifier(**params).fit(X, y, sensitive_features=s)
    with SGDA_TUNING.override(chunk_rows=1):
        chunked = ERMIClassifier(**params).fit(X, y, sensitive_features=s)
    np.testing.assert_array_equal(chunked.coef_, whole.coef_)
    np.testing.assert_array_equal(chunked.intercept_, whole.intercept_)
    np.testing.assert_array_equal(chunked.W_, whole.W_)
    assert chunked.history_.keys() == whole.history_.keys()
    for key, values in whole.history_.items():
        np.testing.assert_array_equal(chunked.history_[key], values)


def test_an_sgda_fit_moves_the_bar_by_epochs(monkeypatch):
    """Inside show_progress (verbose 0) the bar moves between the chunks, in epochs of
    n_epochs, up to n_epochs; the model is the one fitted without the bar."""
    X, y, s = _data()
    params = dict(solver="sgda", fairness_weight=1.0, batch_size=32, n_epochs=4, random_state=0)
    with SGDA_TUNING.override(chunk_rows=1):  # one chunk per epoch
        plain = ERMIClassifier(**params).fit(X, y, sensitive_features=s)
        updates = _updates(monkeypatch)
        with show_progress(True, stream=io.StringIO()):
            shown = ERMIClassifier(**params).fit(X, y, sensitive_features=s)
    labels, units, steps, totals = zip(*updates)
    assert set(labels) == {"ERMIClassifier"} and set(units) == {"epoch"}
    assert set(totals) == {4.0}
    assert list(steps) == [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(shown.coef_, plain.coef_)


def test_the_bar_is_drawn_on_the_stream():
    X, y, s = _data()
    stream = io.StringIO()
    with SGDA_TUNING.override(chunk_rows=1):
        with show_progress(True, stream=stream, delay=0.0) as bar:
            bar.interval = 0.0
            ERMIClassifier(solver="sgda", fairness_weight=1.0, batch_size=32, n_epochs=3).fit(
                X, y, sensitive_features=s
            )
    assert "[ERMIClassifier] epoch 1/3" in stream.getvalue()
    assert "[ERMIClassifier] epoch 2/3" in stream.getvalue()
    assert stream.getvalue().endswith("\r")  # wiped at the end


def test_the_auto_search_moves_the_bar_by_solves(monkeypatch):
    """fairness_weight="auto": one step per full-batch solve of the search (its length
    is not known ahead), then the SGDA epochs."""
    X, y, s = _data()
    updates = _updates(monkeypatch)
    with show_progress(True, stream=io.StringIO()):
        clf = ERMIClassifier(solver="sgda", batch_size=64, n_epochs=2).fit(
            X, y, sensitive_features=s
        )
    solves = [step for _, unit, step, total in updates if unit == "solve"]
    assert solves == list(map(float, range(1, len(clf.auto_gaps_) + 1)))
    assert {total for _, unit, _, total in updates if unit == "solve"} == {None}
    assert [step for _, unit, step, _ in updates if unit == "epoch"][-1] == 2.0


def test_outside_show_progress_no_progress_is_reported(monkeypatch):
    X, y, s = _data()
    updates = _updates(monkeypatch)
    ERMIClassifier(solver="sgda", fairness_weight=1.0, batch_size=32, n_epochs=2).fit(
        X, y, sensitive_features=s
    )
    assert updates == []


# alpha * learning_rate = 3.5: the coefficients grow by 2.5 per step and overflow within
# 1000 steps; halved (1.75) the ridge contracts them and the run stays finite
_DIVERGING = dict(
    solver="sgda",
    fairness_weight=1.0,
    alpha=1.0,
    learning_rate=3.5,
    batch_size=20,
    n_epochs=100,
    random_state=0,
)


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # the strong ridge
def test_a_diverged_run_is_refitted_with_halved_steps():
    X, y, s = _data()
    with pytest.warns(ConvergenceWarning, match="multiplied by 0.5"):
        refitted = ERMIClassifier(**_DIVERGING).fit(X, y, sensitive_features=s)
    assert np.all(np.isfinite(refitted.coef_))
    # the refit is the fit with both step sizes halved (dual "auto": 0.5 / lam)
    halved = dict(_DIVERGING, learning_rate=1.75, dual_learning_rate=0.25)
    direct = ERMIClassifier(**halved).fit(X, y, sensitive_features=s)
    np.testing.assert_array_equal(refitted.coef_, direct.coef_)
    np.testing.assert_array_equal(refitted.W_, direct.W_)


def test_a_diverged_private_run_is_not_refitted():
    """A refit would run the mechanism twice (twice the privacy spent): it raises."""
    X, y, s = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        with pytest.raises(ValueError, match="spend the privacy budget again"):
            ERMIClassifier(**_DIVERGING, dp_epsilon=2.0).fit(X, y, sensitive_features=s)
