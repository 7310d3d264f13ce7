"""The tuning records: one object per family for the thresholds that choose a code path."""

import dataclasses

import pytest

from fairest.reweighting._defaults import ORACLE_TUNING, OracleTuning
from fairest.utils._tuning import Tuning


def test_override_sets_and_restores_fields_even_on_error():
    before = dataclasses.asdict(ORACLE_TUNING)
    with ORACLE_TUNING.override(inexact_min_rows=0, cache_size=3) as tuning:
        assert tuning is ORACLE_TUNING
        assert ORACLE_TUNING.inexact_min_rows == 0 and ORACLE_TUNING.cache_size == 3
    assert dataclasses.asdict(ORACLE_TUNING) == before
    with pytest.raises(RuntimeError), ORACLE_TUNING.override(reuse_min_rows=1):
        raise RuntimeError("inside")
    assert dataclasses.asdict(ORACLE_TUNING) == before


def test_override_refuses_an_unknown_field_and_names_the_fields():
    with pytest.raises(TypeError, match="inexact_min_rows"), ORACLE_TUNING.override(typo=1):
        pass


def test_the_oracle_reads_its_thresholds_from_the_record(oracle_tuning):
    """The record is what the oracle reads: an override changes the path it picks."""
    from fairest.reweighting._bilevel import cache_size

    assert cache_size(11, 5) == OracleTuning().cache_size
    oracle_tuning(cache_size=2)
    assert cache_size(11, 5) == 2


def test_every_record_is_a_tuning_dataclass():
    assert isinstance(ORACLE_TUNING, Tuning) and dataclasses.is_dataclass(ORACLE_TUNING)
