"""Tuning records: the thresholds that choose a code path, in one object per family.

A family keeps the constants that pick *how* a result is computed (cache sizes, row counts
from which a blocked or inexact path pays, block sizes) in one :class:`Tuning` dataclass
instance in its ``_defaults.py``, each field with one line of why. They never change *what*
is computed beyond floating-point rounding and the stated solver tolerances: a test that
drives a small problem down the large-data path says so with :meth:`Tuning.override`,
not by patching module attributes::

    from fairest.reweighting._defaults import ORACLE_TUNING

    with ORACLE_TUNING.override(inexact_min_rows=0):
        ...  # small data, solved as large data would be

Values are read when the code path is chosen (at a call or at trace time), so an override
must enclose the fit that should see it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Tuning"]


@dataclasses.dataclass
class Tuning:
    """Base of a family's tuning record (a mutable dataclass of path-choosing constants)."""

    @contextmanager
    def override(self, **changes) -> Iterator[Tuning]:
        """Set some fields for a ``with`` block, restoring them after it.

        Parameters
        ----------
        **changes
            ``field=value`` for fields of this record.

        Yields
        ------
        self : Tuning
            This record, with the changes applied.

        Raises
        ------
        TypeError
            If a name is not a field of this record (the message lists the fields).
        """
        fields = {field.name for field in dataclasses.fields(self)}
        unknown = sorted(set(changes) - fields)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}.override: unknown field(s) {unknown}; "
                f"the fields are {sorted(fields)}."
            )
        saved = {name: getattr(self, name) for name in changes}
        for name, value in changes.items():
            setattr(self, name, value)
        try:
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)
