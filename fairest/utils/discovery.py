"""Discovery of fairest's public estimators (for common tests, docs and the CLI)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from sklearn.base import BaseEstimator

__all__ = ["all_estimators"]


def all_estimators() -> list[tuple[str, type]]:
    """All public estimator classes of fairest, sorted by name.

    Walks every public module of the package (no private ``_`` path component) and
    collects the ``BaseEstimator`` subclasses defined in fairest whose name has no
    leading underscore.

    Returns
    -------
    estimators : list of (name, class) tuples
        The public estimator classes, sorted by name.
    """
    import fairest

    found = {}
    for info in pkgutil.walk_packages(fairest.__path__, prefix="fairest."):
        if any(part.startswith("_") for part in info.name.split(".")) or info.name == "fairest.cli":
            continue
        module = importlib.import_module(info.name)
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(obj, BaseEstimator)
                and obj.__module__.startswith("fairest.")
                and not name.startswith("_")
                and not inspect.isabstract(obj)
            ):
                found[name] = obj
    return sorted(found.items())
