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

A few rules that do change what a fit returns, and that tests set to small values (partial
parity's tightening rounds: ``fairest.partial._defaults.PARTIAL_RULES``), use the same
record and :meth:`Tuning.override`, in a record of their own.

Values are read when the code path is chosen (at a call or at trace time), so an override
must enclose the fit that should see it. A record whose fields are read while JAX traces
(the kernels' and the solvers') empties JAX's compiled caches when an override begins and
ends (:meth:`Tuning._changed`), so no function compiled under other values is reused.

This module imports no JAX: :data:`HOST_TUNING` serves the numpy-only code (input
validation, the exact metrics).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["HOST_TUNING", "HostTuning", "Tuning"]


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
        self._changed()
        try:
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)
            self._changed()

    def _changed(self) -> None:
        """Called after :meth:`override` sets or restores fields: a record read at trace
        time drops what was compiled under the previous values here (default: nothing)."""


@dataclasses.dataclass
class HostTuning(Tuning):
    """Thresholds that choose how the numpy-only code (validation, exact metrics) walks its
    data, never its result.

    Change them in tests with ``HOST_TUNING.override(...)`` (:class:`Tuning`).
    """

    # bytes of one row block of the finiteness check of fit inputs
    # (fairest.utils._estimator._check_finite): blocks avoid an (n, d) boolean temporary
    check_block_bytes: int = 16 * 2**20
    # (groups x distinct values) cells of one block of the groups' CDFs
    # (fairest.metrics._regression.group_cdfs): bounds memory for many groups and values
    cdf_block_cells: int = 2**22
    # rows x replicates of one chunk of bootstrap resamples
    # (fairest.metrics._bootstrap.replicate_chunks): bounds the index array's memory
    bootstrap_chunk_entries: int = 4_000_000
    # rows of one chunk when the synthetic generators add group offsets
    # (fairest.datasets.make_grouped_classification): bounds temporary memory
    synthetic_chunk_rows: int = 1 << 18


HOST_TUNING = HostTuning()
