"""The progress bar of long fits: drawn from log_fit's level-2 lines, with rate and time left."""

import io
import logging

import pytest

from fairest.utils._reporting import (
    ProgressBar,
    log_fit,
    report_progress,
    show_progress,
    wants_progress,
)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Estimator:
    __module__ = "fairest.progress_test"  # logs on a child of the "fairest" logger

    def __init__(self, verbose=0):
        self.verbose = verbose


def last_line(stream: io.StringIO) -> str:
    return stream.getvalue().split("\r")[-1].strip()


def test_bar_shows_rate_and_time_left_after_the_delay():
    stream, clock = io.StringIO(), FakeClock()
    bar = ProgressBar(stream, delay=1.0, interval=0.0, clock=clock)
    bar.update("Model", "epoch", 1, 10)
    clock.now = 0.5
    bar.update("Model", "epoch", 2, 10)
    assert stream.getvalue() == ""  # a loop shorter than the delay draws nothing
    clock.now = 2.0
    bar.update("Model", "epoch", 5, 10)  # 4 epochs in 2 s since the first update
    assert last_line(stream) == "[Model] epoch 5/10  2 epoch/s  2.5 s left  (2.0 s elapsed)"
    clock.now = 4.5
    bar.update("Model", "epoch", 10, 10)  # done: the line is wiped
    assert last_line(stream) == ""


def test_bar_redraws_at_most_every_interval_and_restarts_on_a_new_loop():
    stream, clock = io.StringIO(), FakeClock()
    bar = ProgressBar(stream, delay=0.0, interval=1.0, clock=clock)
    for step in range(1, 6):
        clock.now = step * 0.1
        bar.update("A", "iteration", step, 100)
    assert stream.getvalue().count("[A]") == 1
    clock.now = 1.0
    bar.update("B", "epoch", 1, None)  # another loop: total unknown, no time left
    assert last_line(stream) == "[B] epoch 1  (0.0 s elapsed)"


def test_log_fit_drives_the_bar_without_verbose():
    stream = io.StringIO()
    estimator = Estimator(verbose=0)
    with show_progress(True, stream=stream, delay=0.0) as bar:
        bar.interval = 0.0
        log_fit(estimator, "epoch %d/%d: loss %.3f", 3, 8, 0.5, level=2)
        assert "[Estimator] epoch 3/8" in stream.getvalue()
        log_fit(estimator, "dense epoch %d/%d", 2, 8, level=2)
        assert "[Estimator] dense epoch 2/8" in stream.getvalue()
        log_fit(estimator, "fitted in %d steps", 5, level=2)  # no "unit %d/%d": no bar
        log_fit(estimator, "epoch %d/%d", 1, 8, level=1)  # a summary line: no bar
        assert stream.getvalue().count("[Estimator]") == 2
        log_fit(estimator, "iteration %d, epoch %.2f", 30, 1.5, level=2, progress=(1.5, 4, "epoch"))
        assert "[Estimator] epoch 1.5/4" in stream.getvalue()
    assert stream.getvalue().endswith("\r")  # wiped when the block ends


def test_outside_show_progress_nothing_is_drawn(capsys):
    estimator = Estimator(verbose=0)
    report_progress(estimator, 1, 10)
    log_fit(estimator, "epoch %d/%d", 1, 10, level=2)
    assert capsys.readouterr().err == ""
    assert not wants_progress(estimator)
    assert wants_progress(Estimator(verbose=2))


def test_quiet_when_the_stream_is_not_a_terminal():
    stream = io.StringIO()  # isatty() is False
    with show_progress(stream=stream, delay=0.0) as bar:
        assert bar is None
        report_progress(Estimator(), 1, 2)
        assert not wants_progress(Estimator())
    assert stream.getvalue() == ""

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    with show_progress(stream=Terminal(), delay=0.0) as bar:
        assert isinstance(bar, ProgressBar)
        assert wants_progress(Estimator())


def test_a_log_line_wipes_the_bar_first(caplog):
    stream = io.StringIO()
    estimator = Estimator(verbose=2)
    with caplog.at_level(logging.INFO, logger="fairest"):
        with show_progress(True, stream=stream, delay=0.0) as bar:
            bar.interval = 0.0
            log_fit(estimator, "epoch %d/%d", 1, 4, level=2)
            first = stream.getvalue()
            log_fit(estimator, "epoch %d/%d", 2, 4, level=2)
    assert first.startswith("\r[Estimator] epoch 1/4")
    wipe = "\r" + " " * len(first.strip("\r")) + "\r"
    assert stream.getvalue().startswith(first + wipe + "\r[Estimator] epoch 2/4")
    assert [r.getMessage() for r in caplog.records] == [
        "[Estimator] epoch 1/4",
        "[Estimator] epoch 2/4",
    ]


def test_long_durations_read_in_minutes():
    stream, clock = io.StringIO(), FakeClock()
    bar = ProgressBar(stream, delay=0.0, interval=0.0, clock=clock)
    bar.update("M", "epoch", 0, 1000)
    clock.now = 100.0
    bar.update("M", "epoch", 10, 1000)
    assert "2 h 45 min left" in last_line(stream) and "1 min 40 s elapsed" in last_line(stream)


@pytest.mark.parametrize("verbose", [0, 2])
@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # the cheap fit's miss
def test_a_pruned_fit_moves_the_bar(verbose):
    """End to end: PrunedFairClassifier logs its epochs through log_fit(level=2)."""
    import numpy as np
    from _fast_params import CHECK_PARAMS

    from fairest import PrunedFairClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    s = rng.integers(0, 2, 60)
    params = dict(CHECK_PARAMS["PrunedFairClassifier"], verbose=verbose)
    stream = io.StringIO()
    with show_progress(True, stream=stream, delay=0.0) as bar:
        bar.interval = 0.0
        PrunedFairClassifier(**params).fit(X, y, sensitive_features=s)
    assert "[PrunedFairClassifier] " in stream.getvalue() and " epoch " in stream.getvalue()


def test_a_loss_gap_fit_reports_its_epochs_without_verbose(monkeypatch):
    """LossGapConstrainedClassifier hands its engine a progress callback inside
    show_progress, and the callback moves the bar in epochs of n_epochs."""
    import numpy as np
    from _fast_params import CHECK_PARAMS

    from fairest import LossGapConstrainedClassifier

    updates = []
    monkeypatch.setattr(ProgressBar, "update", lambda self, *args: updates.append(args))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] + rng.normal(size=80) > 0).astype(int)
    s = rng.integers(0, 2, 80)
    params = CHECK_PARAMS["LossGapConstrainedClassifier"]
    with show_progress(True, stream=io.StringIO()):
        LossGapConstrainedClassifier(**params).fit(X, y, sensitive_features=s)
    assert updates, "no progress reported"
    labels, units, steps, totals = zip(*updates)
    assert set(labels) == {"LossGapConstrainedClassifier"} and set(units) == {"epoch"}
    assert set(totals) == {float(params["n_epochs"])}
    assert list(steps) == sorted(steps) and steps[-1] == params["n_epochs"]
    updates.clear()
    LossGapConstrainedClassifier(**params).fit(X, y, sensitive_features=s)  # no bar: no calls
    assert updates == []
