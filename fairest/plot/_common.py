"""Shared helpers of the plots: lazy matplotlib import and a fresh Axes.

matplotlib is a dependency of fairest. It is imported inside the functions, never at
import time of :mod:`fairest` (which stays quick to import), and the plots never touch
pyplot's global state: without ``ax`` they draw on a new
:class:`matplotlib.figure.Figure`.
"""

from __future__ import annotations

import numpy as np

_INSTALL_HINT = (
    "fairest.plot needs matplotlib, a dependency of fairest that is missing from this "
    "environment; reinstall fairest or run `pip install matplotlib`."
)


def require_matplotlib():
    """Import and return :mod:`matplotlib`, with a clear error when an environment lacks it."""
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError(_INSTALL_HINT) from error
    return matplotlib


def get_axes(ax, figsize=(6.4, 4.8)):
    """``ax`` itself, or the Axes of a new pyplot-free Figure."""
    require_matplotlib()
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, layout="constrained")
    return figure.add_subplot()


def finite_vector(values, name: str) -> np.ndarray:
    """A 1-D float64 array without NaN or infinities."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got an array of shape {array.shape}.")
    if not np.isfinite(array).all():
        first = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(f"{name} contains NaN or infinite values (first at position {first}).")
    return array


def group_colors(n_groups: int):
    """``n_groups`` distinct colours of matplotlib's default qualitative cycle."""
    require_matplotlib()
    from matplotlib import colormaps

    cmap = colormaps["tab10"] if n_groups <= 10 else colormaps["tab20"]
    return [cmap(k % cmap.N) for k in range(n_groups)]
