"""Lazy public names of a package (PEP 562): a name is imported on its first access.

``import fairest`` (and of each subpackage) then costs only what the names a program uses
need: a loky worker that unpickles one estimator imports that estimator's modules, not
every family, pandas-heavy report code, matplotlib or optax.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping


def lazy_exports(
    package: str,
    exports: Mapping[str, Iterable[str]],
    submodules: Iterable[str] = (),
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """Module ``__getattr__``, ``__dir__`` and ``__all__`` of a package whose names load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to iterable of str
        For every private module (dotted path relative to ``package``, e.g.
        ``"_estimator"``) the public names it defines.
    submodules : iterable of str, default=()
        Subpackages or modules of ``package`` that are attributes of it once accessed
        (``fairest.metrics`` after ``import fairest``).

    Returns
    -------
    getattr : callable
        The module-level ``__getattr__``: imports the defining module, stores the value in
        the package's namespace (later accesses are plain lookups) and returns it.
    dir : callable
        The module-level ``__dir__``: the package's namespace plus the lazy names, so that
        ``dir``, ``inspect.getmembers`` and tab completion see every public name.
    all : list of str
        The package's ``__all__``: the public names of ``exports``, sorted (each name is
        written once, in ``exports``).
    """
    where = {name: module for module, names in exports.items() for name in names}
    submodules = frozenset(submodules)

    def __getattr__(name: str):
        namespace = vars(importlib.import_module(package))
        if name in where:
            value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        namespace = vars(importlib.import_module(package))
        return sorted(set(namespace) | set(where) | submodules)

    return __getattr__, __dir__, sorted(where)
