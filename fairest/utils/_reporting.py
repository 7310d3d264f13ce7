"""One way for every estimator to report a fit: ``verbose`` and ``record_history``.

``verbose`` logs through :mod:`logging` on the logger of the estimator's module (a child
of the ``"fairest"`` logger), at ``INFO``, as ``[ClassName] message``: level 1 a summary
after the fit, level 2 also one line per epoch / outer iteration. When the application
has configured no logging handler at all, the first verbose message installs one on the
``"fairest"`` logger that writes to stderr, so ``verbose=1`` shows output as in
scikit-learn; an application that configured :mod:`logging` keeps full control.

``history_`` is a dict of numpy arrays, one entry per recorded quantity (one value per
recorded iteration, check or epoch, as each estimator documents), set only when
``record_history`` is true.

Progress inside long fits goes through the same calls: inside :func:`show_progress`
(which the ``fairest`` command line turns on when stderr is a terminal), every level-2
message whose format starts with ``"<unit> %d/%d"`` (``"epoch %d/%d: ..."``,
``"dense epoch %d/%d"``) moves a one-line progress bar on stderr, with the rate and the
time left, whatever the estimator's ``verbose``; an estimator can also call
:func:`report_progress` directly. Nothing is drawn when stderr is not a terminal, nor for
a loop that ends within ``delay`` seconds (e.g. lines logged after a compiled loop).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import sys
import threading
import time
from collections.abc import Mapping

import numpy as np

__all__ = [
    "log_fit",
    "as_history",
    "store_history",
    "store_result",
    "ProgressBar",
    "DeviceReporter",
    "show_progress",
    "report_progress",
    "wants_progress",
    "callback_in_fit_context",
]

ROOT_LOGGER = "fairest"


class DeviceReporter:
    """Progress from inside a jitted loop: ``jax.debug.callback(reporter.report, done,
    total)`` calls the callback of the innermost :meth:`reporting` block on the host (a
    no-op outside one), so that a solver reports without knowing its estimator."""

    def __init__(self):
        self._callbacks: list = []

    @contextlib.contextmanager
    def reporting(self, callback):
        """Within the block, :meth:`report` calls ``callback(done, total)`` (``None``:
        nothing is reported)."""
        if callback is None:
            yield
            return
        self._callbacks.append(callback)
        try:
            yield
        finally:
            self._callbacks.remove(callback)

    def report(self, done, total) -> None:
        """Pass ``done`` of ``total`` to the innermost :meth:`reporting` block."""
        if self._callbacks:
            self._callbacks[-1](int(done), int(total))


_STEP_FORMAT = re.compile(r"^(?P<unit>[A-Za-z][A-Za-z ]*?) %d/%d")


class ProgressBar:
    """One line on a terminal stream, rewritten in place, for the loops of a fit.

    ``[ClassName] epoch 12/50  3.1 epoch/s  12.2 s left``: the rate counts the steps
    since the first update of the loop (a loop starts when the label, unit or total
    changes, or the step goes back). The line is drawn after ``delay`` seconds of a
    loop, at most every ``interval`` seconds, and wiped when the loop ends, so loops
    that finish quickly leave no trace.

    Parameters
    ----------
    stream : file-like
        Where to draw (stderr in :func:`show_progress`).
    delay : float, default=1.0
        Seconds of a loop before its first line.
    interval : float, default=0.1
        Smallest time between two redraws.
    clock : callable, default=time.monotonic
        Source of the time, in seconds.
    """

    def __init__(self, stream, *, delay=1.0, interval=0.1, clock=time.monotonic):
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.clock = clock
        self._loop = None  # (label, unit, total)
        self._start = self._first_step = self._last_step = self._drawn_at = None
        self._width = 0

    def update(self, label: str, unit: str, step: float, total: float | None) -> None:
        """Record that ``label`` reached ``step`` of ``total`` ``unit`` s."""
        now = self.clock()
        loop = (label, unit, total)
        if loop != self._loop or self._last_step is None or step < self._last_step:
            self.clear()
            self._loop, self._start, self._first_step = loop, now, step
        self._last_step = step
        if total is not None and step >= total:
            self.clear()
            self._loop = None
            return
        due = self._drawn_at is None or now - self._drawn_at >= self.interval
        if now - self._start >= self.delay and due:
            self._draw(self._line(label, unit, step, total, now - self._start))
            self._drawn_at = now

    def _line(self, label, unit, step, total, elapsed) -> str:
        shown = _count(step) if total is None else f"{_count(step)}/{_count(total)}"
        text = f"[{label}] {unit} {shown}"
        rate = (step - self._first_step) / elapsed if elapsed > 0 else 0.0
        if rate > 0:
            text += f"  {rate:.3g} {unit}/s"
            if total is not None:
                text += f"  {_duration((total - step) / rate)} left"
        return text + f"  ({_duration(elapsed)} elapsed)"

    def _draw(self, text: str) -> None:
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def clear(self) -> None:
        """Wipe the line, if one is drawn (before other output, or at the end)."""
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        self._width = 0
        self._drawn_at = None


def _count(value: float) -> str:
    """A step count: whole numbers as integers, fractional epochs with one decimal."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _duration(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(round(seconds)), 60)
    return (
        f"{minutes} min {seconds:02d} s"
        if minutes < 60
        else f"{minutes // 60} h {minutes % 60:02d} min"
    )


_ACTIVE_BAR: contextvars.ContextVar[ProgressBar | None] = contextvars.ContextVar(
    "fairest_progress_bar", default=None
)


@contextlib.contextmanager
def show_progress(enabled: bool | None = None, *, stream=None, delay: float = 1.0):
    """Show the progress of the fits run inside the block on ``stream`` (stderr).

    Parameters
    ----------
    enabled : bool, default=None
        ``None``: only when the stream is a terminal (quiet in logs, pipes and CI).
    stream : file-like, default=None
        ``None`` means ``sys.stderr``.
    delay : float, default=1.0
        Seconds of a loop before its first line (see :class:`ProgressBar`).

    Yields
    ------
    bar : ProgressBar or None
        The bar in use, ``None`` when disabled.

    Examples
    --------
    >>> from fairest.utils._reporting import show_progress
    >>> with show_progress():  # doctest: +SKIP
    ...     LossGapConstrainedClassifier().fit(X, y, sensitive_features=s)
    """
    stream = sys.stderr if stream is None else stream
    if enabled is None:
        enabled = bool(getattr(stream, "isatty", lambda: False)())
    bar = ProgressBar(stream, delay=delay) if enabled else None
    token = _ACTIVE_BAR.set(bar)
    try:
        yield bar
    finally:
        _ACTIVE_BAR.reset(token)
        if bar is not None:
            bar.clear()


def callback_in_fit_context(function):
    """``function`` made safe to call from a compiled loop's ``jax.debug.callback``.

    Such a callback may run on another thread (one per device), where the fit's context
    (the progress line of :func:`show_progress`) is not set: every call runs in a copy of
    the context of the fit that made the callback, one call at a time.
    """
    context, lock = contextvars.copy_context(), threading.Lock()

    def call(*args, **kwargs):
        with lock:
            return context.run(function, *args, **kwargs)

    return call


def report_progress(estimator, step, total=None, *, unit: str = "iteration") -> None:
    """Move the progress bar of :func:`show_progress` (a no-op outside of it).

    Parameters
    ----------
    estimator : estimator instance
        The estimator being fitted; its class name labels the line.
    step : int or float
        Steps done (epochs may be fractional).
    total : int or float, default=None
        Steps planned, for the time left; ``None`` when unknown.
    unit : str, default="iteration"
        What a step is (``"epoch"``, ``"outer iteration"``).
    """
    bar = _ACTIVE_BAR.get()
    if bar is not None and np.isfinite(step):  # a NaN step: the loop does not count
        bar.update(
            type(estimator).__name__, unit, float(step), None if total is None else float(total)
        )


def wants_progress(estimator, level: int = 2) -> bool:
    """Whether per-iteration reports of ``estimator`` are seen: its ``verbose`` is at
    least ``level``, or a progress bar is shown (for loops that report only on request)."""
    return bool(estimator.verbose and estimator.verbose >= level) or _ACTIVE_BAR.get() is not None


def _ensure_handler(logger: logging.Logger) -> None:
    """Give the ``fairest`` logger a stderr handler when nothing would show INFO lines."""
    if logger.hasHandlers():
        return
    root = logging.getLogger(ROOT_LOGGER)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root.addHandler(handler)
    if root.getEffectiveLevel() > logging.INFO:
        root.setLevel(logging.INFO)


def log_fit(estimator, message: str, *args, level: int = 1, progress=None) -> None:
    """Log ``message % args`` for ``estimator`` when ``estimator.verbose >= level``.

    Parameters
    ----------
    estimator : estimator instance
        The estimator being fitted; its ``verbose`` decides whether anything is logged
        and its class name prefixes the line.
    message : str
        A ``%``-style format string, as for :meth:`logging.Logger.info`.
    *args
        Arguments of ``message``.
    level : int, default=1
        Smallest ``verbose`` at which the message is logged: 1 for a fit summary, 2 for
        per-iteration or per-epoch progress. A level-2 message whose format starts with
        ``"<unit> %d/%d"`` also moves the progress bar of :func:`show_progress`.
    progress : tuple (step, total, unit), default=None
        Moves the progress bar explicitly, for a message without ``"<unit> %d/%d"``
        (``total`` may be ``None`` when unknown).
    """
    bar = _ACTIVE_BAR.get()
    if estimator.verbose and estimator.verbose >= level:
        if bar is not None:
            bar.clear()  # the log line goes first; the bar is redrawn below it
        logger = logging.getLogger(type(estimator).__module__)
        _ensure_handler(logger)
        logger.info("[%s] " + message, type(estimator).__name__, *args)
    if bar is not None and progress is not None:
        step, total, unit = progress
        report_progress(estimator, step, total, unit=unit)
    elif bar is not None and level >= 2:
        step = _STEP_FORMAT.match(message)
        if step and len(args) >= 2:
            report_progress(estimator, args[0], args[1], unit=step["unit"])


def as_history(records: Mapping) -> dict[str, np.ndarray]:
    """``history_`` in the one public form: a dict of numpy arrays.

    Parameters
    ----------
    records : mapping of str to array-like, or a pandas DataFrame
        Per-iteration records (lists, device arrays or numpy arrays; a DataFrame's
        columns).

    Returns
    -------
    history : dict of str to ndarray
        The same records as numpy arrays.
    """
    return {str(key): np.asarray(value) for key, value in dict(records).items()}


def store_history(estimator, records) -> None:
    """Store a fit's ``history_`` the one way: ``as_history(records)`` when the estimator's
    ``record_history`` is on and there are records, else remove a previous fit's record
    (a refit never keeps a stale ``history_``).

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted (its ``record_history`` parameter is read).
    records : mapping of str to array-like or None
        The fit's per-iteration records.
    """
    if getattr(estimator, "record_history", False) and records is not None:
        estimator.history_ = as_history(records)
    elif hasattr(estimator, "history_"):
        del estimator.history_


def store_result(estimator, *, n_iter, history=None, message=None, args=()) -> None:
    """The last step of every ``fit`` (validate -> build -> solve -> store): the solver's
    iteration count in ``n_iter_``, its per-iteration records in ``history_`` (set or
    cleared by :func:`store_history`), and one summary line through :func:`log_fit`.

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted.
    n_iter : int or array-like
        The solver's iterations (outer steps, epochs or rounds, as the estimator documents
        ``n_iter_``).
    history : mapping of str to array-like or None, default=None
        The fit's per-iteration records (``None``: the solver recorded none).
    message : str or None, default=None
        A %-format summary logged at ``verbose >= 1``, with ``args``.
    args : tuple, default=()
        The arguments of ``message``.
    """
    estimator.n_iter_ = n_iter
    store_history(estimator, history)
    if message is not None:
        log_fit(estimator, message, *args)
