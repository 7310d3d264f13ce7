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
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping

import numpy as np

__all__ = ["log_fit", "as_history"]

ROOT_LOGGER = "fairest"


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


def log_fit(estimator, message: str, *args, level: int = 1) -> None:
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
        per-iteration or per-epoch progress.
    """
    if not estimator.verbose or estimator.verbose < level:
        return
    logger = logging.getLogger(type(estimator).__module__)
    _ensure_handler(logger)
    logger.info("[%s] " + message, type(estimator).__name__, *args)


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
