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


def test_kernel_override_changes_the_traced_path_and_restores_it(monkeypatch):
    """KERNEL_TUNING's fields are read at trace time: an override makes the next call of a
    jitted kernel trace again under it (value_and_grad takes the fused row-block pass),
    and its end makes the next call trace again under the defaults (two products)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from fairest._kernels import _glm
    from fairest._kernels._defaults import KERNEL_TUNING, KernelTuning

    traces, fused = [], []  # one entry per trace of value_and_grad / of the fused pass
    fused_pass, block_pass = _glm._fused_pass, _glm.row_block_pass
    monkeypatch.setattr(_glm, "_fused_pass", lambda X: traces.append(1) or fused_pass(X))
    monkeypatch.setattr(
        _glm, "row_block_pass", lambda *a, **k: fused.append(1) or block_pass(*a, **k)
    )
    rng = np.random.default_rng(0)
    n, d = 1000, 4
    data = (rng.normal(size=(n, d)), rng.integers(0, 2, n).astype(float), np.full(n, 1.0 / n))

    def call():
        with jax.enable_x64(True):
            args = (jnp.zeros(d + 1), *map(jnp.asarray, data), 0.1, 0.0)
            return np.asarray(_glm.value_and_grad("logistic", *args)[1])

    before = call()
    assert fused == []  # 32 KB of X: one block, two products
    with KERNEL_TUNING.override(pass_block_bytes=8 * d * 256, fused_gradient_min_bytes=0):
        count = len(traces)
        inside = call()
        assert len(traces) > count and fused == [1]  # traced again, down the fused pass
    assert dataclasses.asdict(KERNEL_TUNING) == dataclasses.asdict(KernelTuning())
    count = len(traces)
    after = call()
    assert len(traces) > count and fused == [1]  # traced again, two products again
    np.testing.assert_allclose(inside, before, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(after, before, rtol=0, atol=0)


def test_solver_override_changes_the_chosen_solver_and_restores_it():
    from fairest._solvers._defaults import SOLVER_TUNING
    from fairest._solvers._driver import choose_solver

    assert choose_solver("logistic", 1000, 10) == "newton"
    with SOLVER_TUNING.override(newton_cg_min_params=5):
        assert choose_solver("logistic", 1000, 10) == "newton-cg"
    assert choose_solver("logistic", 1000, 10) == "newton"
    assert SOLVER_TUNING.newton_cg_min_params == 2000


def test_host_override_changes_the_block_size_of_the_cdfs(monkeypatch):
    """HOST_TUNING (numpy-only code): the CDFs are summed over more blocks under an
    override, to the same distance."""
    import numpy as np

    from fairest.metrics import _regression, prediction_ks_distance
    from fairest.utils._tuning import HOST_TUNING

    rng = np.random.default_rng(1)
    y_pred, groups = rng.normal(size=50), np.arange(50) % 3
    blocks = []
    searchsorted = np.searchsorted
    monkeypatch.setattr(
        _regression.np, "searchsorted", lambda *a, **k: blocks.append(1) or searchsorted(*a, **k)
    )

    def distance():
        blocks.clear()
        value = prediction_ks_distance(y_pred, y_pred, sensitive_features=groups)
        return value, len(blocks)

    whole, whole_blocks = distance()
    with HOST_TUNING.override(cdf_block_cells=4):  # one value per block
        blocked, many_blocks = distance()
    assert distance() == (whole, whole_blocks)
    assert many_blocks > whole_blocks and blocked == pytest.approx(whole, rel=1e-12)


def test_the_layer_records_are_tuning_dataclasses():
    from fairest._kernels._defaults import KERNEL_TUNING
    from fairest._solvers._defaults import SOLVER_TUNING
    from fairest.utils._tuning import HOST_TUNING

    for record in (KERNEL_TUNING, SOLVER_TUNING, HOST_TUNING):
        assert isinstance(record, Tuning) and dataclasses.is_dataclass(record)
