"""Memory near the data size (issue 19.3): the oracle's kernels are compiled in the
background without being run (a run on placeholder arguments held its XLA temporaries
beside the main thread's first solve), and the later calls find them compiled."""

import jax
import jax.numpy as jnp
import numpy as np
from _badr_helpers import dense_problem, grouped_classification

from fairest.reweighting._badr_metrics import MetricSpec
from fairest.reweighting._defaults import ORACLE_TUNING
from fairest.reweighting._oracle import ImplicitOracle
from fairest.utils import _compilation_cache

SPEC = MetricSpec("demographic_parity_deviation", "classification", "logistic")


def _named(messages, names) -> list:
    return [m for m in messages if any(m == f"Compiling jit({name})" for name in names)]


def test_background_kernels_are_compiled_once(monkeypatch, compilations):
    """Large data (the value-only pass and the blocked adjoint): each kernel compiled in
    the background is compiled once, not again by its first call."""
    X, y, groups = grouped_classification(ORACLE_TUNING.reuse_min_rows + 100, 2, 0)
    monkeypatch.setattr(_compilation_cache, "_STARTED", set())
    jax.clear_caches()
    names = ["_upper_blocked", "_upper_from_result", "_value_from_result"]

    def evaluate():
        with jax.enable_x64(True):
            problem = dense_problem(X[:, :3], y, groups)
            orc = ImplicitOracle("logistic", SPEC, 2, problem, jnp.zeros(4), groups)
            orc.compile_in_background(vertices=False)
            compiling = orc.runtime.compiling
            assert {k for k, t in compiling.items() if t is not None} == {"adjoint", "value"}
            orc.evaluate(np.array([0.5, 0.5]), with_grad=False)
            orc.evaluate(np.array([0.5, 0.5]))  # the adjoint at the cached solution
            orc.evaluate(np.array([0.3, 0.7]))

    compiled = _named(compilations(evaluate), names)
    assert len(compiled) == len(set(compiled)) == 2


def test_vertex_kernel_is_compiled_once(monkeypatch, compilations, oracle_tuning):
    """The one-group vertex solve on its group's rows, compiled in the background, is
    not compiled again by the vertex's evaluation."""
    X, y, groups = grouped_classification(512, 4, 0)
    oracle_tuning(group_rows_min_rows=0)
    monkeypatch.setattr(_compilation_cache, "_STARTED", set())
    jax.clear_caches()

    def evaluate():
        with jax.enable_x64(True):
            orc = ImplicitOracle(
                "logistic", SPEC, 4, dense_problem(X, y, groups), jnp.zeros(4), groups
            )
            assert orc.runtime.group_rows is not None
            orc.compile_in_background()
            assert orc.runtime.compiling.get("rows") is not None
            orc.evaluate(np.eye(4)[1])
            orc.evaluate(np.eye(4)[2])

    assert len(_named(compilations(evaluate), ["_lower_on_rows"])) == 1
