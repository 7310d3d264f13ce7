"""The public API walked by the docstring tests, as the site's API reference shows it.

The objects come from :func:`fairest.utils.discovery.public_api` (``fairest.__all__``
and the ``__all__`` of every public submodule, each object once under its most specific
module); classes add their public methods and properties defined in fairest, which are
the members their API page documents (scikit-learn's inherited ``get_params`` or the
generated ``set_fit_request`` are left to scikit-learn).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from fairest.utils.discovery import public_api


@dataclass
class ApiObject:
    """One documented object: its canonical dotted name, the object and its members."""

    name: str  # e.g. "fairest.reweighting.BADRClassifier"
    obj: object
    kind: str  # "class" or "function"
    members: list[tuple[str, object]] = field(default_factory=list)  # (attribute, member)

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[1]


def public_members(cls: type) -> list[tuple[str, object]]:
    """Public methods and properties of ``cls`` defined in fairest, alphabetically."""
    members = []
    for name in sorted(dir(cls)):
        if name.startswith("_") or (name.startswith("set_") and name.endswith("_request")):
            continue
        owner = next((base for base in cls.__mro__ if name in vars(base)), None)
        if owner is None or not owner.__module__.startswith("fairest"):
            continue
        raw = vars(owner)[name]
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        if isinstance(raw, property) or callable(raw):
            members.append((name, getattr(cls, name)))
    return members


def api_objects() -> list[ApiObject]:
    """Every documented class and function, with the members of the classes."""
    objects = []
    for entries in public_api().values():
        for name, obj in entries:
            kind = "class" if inspect.isclass(obj) else "function"
            objects.append(
                ApiObject(name, obj, kind, public_members(obj) if kind == "class" else [])
            )
    return objects


def all_targets() -> list[str]:
    """Dotted names of every documented object and member (for numpydoc validation)."""
    targets = []
    for item in api_objects():
        targets.append(item.name)
        targets.extend(f"{item.name}.{member}" for member, _ in item.members)
    return targets
