"""Discovery of fairest's public estimators and API (for common tests, docs and the CLI)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from sklearn.base import BaseEstimator

__all__ = ["all_estimators", "public_api"]

# public by its path, but a command-line entry point rather than an API
_SKIPPED_MODULES = {"fairest.cli"}


def _public_module_names() -> list[str]:
    """``fairest`` and its public submodules (no ``_`` in the dotted path)."""
    import fairest

    names = ["fairest"]
    for info in pkgutil.walk_packages(fairest.__path__, prefix="fairest."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        if info.name not in _SKIPPED_MODULES:
            names.append(info.name)
    return sorted(names)


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
    found = {}
    for module_name in _public_module_names()[1:]:
        module = importlib.import_module(module_name)
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(obj, BaseEstimator)
                and obj.__module__.startswith("fairest.")
                and not name.startswith("_")
                and not inspect.isabstract(obj)
            ):
                found[name] = obj
    return sorted(found.items())


def public_api() -> dict[str, list[tuple[str, object]]]:
    """The public classes and functions of fairest, by the module that documents them.

    The public API is ``fairest.__all__`` plus the ``__all__`` of every public submodule
    (no ``_`` in its dotted path; the module of the ``fairest`` command is left out).
    An object exported by several modules is listed once, under the most specific one:
    ``BADRClassifier`` under ``fairest.reweighting``, not under ``fairest``, which keeps
    only what no submodule exports. The API reference of the documentation and the
    docstring tests walk this.

    Returns
    -------
    api : dict of str to list of (str, object) tuples
        For every public module with an ``__all__``, in alphabetical order of the module
        names, the ``(dotted name, object)`` pairs of the classes it documents
        (alphabetically, case-insensitive) followed by its functions. A module whose
        names are all documented elsewhere maps to an empty list.

    Examples
    --------
    >>> from fairest.utils.discovery import public_api
    >>> api = public_api()
    >>> [name for name, _ in api["fairest.reweighting"]][:2]
    ['fairest.reweighting.BADRClassifier', 'fairest.reweighting.BADRRegressor']
    """
    modules = [importlib.import_module(name) for name in _public_module_names()]
    modules = [module for module in modules if hasattr(module, "__all__")]
    canonical: dict[int, tuple[str, str, object]] = {}
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("__") or not (inspect.isclass(obj) or callable(obj)):
                continue
            depth = module.__name__.count(".")
            previous = canonical.get(id(obj))
            if previous is None or depth > previous[0].count("."):
                canonical[id(obj)] = (module.__name__, name, obj)
    api: dict[str, list[tuple[str, object]]] = {module.__name__: [] for module in modules}
    for module_name, name, obj in canonical.values():
        api[module_name].append((f"{module_name}.{name}", obj))
    for entries in api.values():
        entries.sort(key=lambda e: (not inspect.isclass(e[1]), e[0].rsplit(".", 1)[1].lower()))
    return api
