"""Memory of a partial-fairness fit (issue 19.3): the smoothed ALM's run is compiled
before the float32 copy of X is made (the compiler's working memory is not resident beside
it), the later run reuses that compilation, and the fit is the one without the early
compilation, bit for bit."""

import jax
import numpy as np
import pytest
import scipy.sparse as sp
from _partial_helpers import PDP, PSP, make_data

from fairest.partial import _common, _fit, _runtime
from fairest.partial._common import ell_slots
from fairest.partial._estimator import PartialParityClassifier
from fairest.utils._memory import release_free_memory

_HYPER = ("grid", "slack", "lo", "hi", "threshold", "alpha", "mu", "rho", "width")


def _fit_model(metric, n=600, d=10):
    X, y, g = make_data(n=n, d=d, seed=3)
    return PartialParityClassifier(metric, tolerance=0.2).fit(X, y, sensitive_features=g)


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_run_compiled_before_the_copy_and_reused(monkeypatch, metric, compilations):
    events = []
    compile_run, padded_dense = _runtime.compile_run, _common.padded_dense

    def recorded_compile(*args, **kwargs):
        events.append("compile")
        return compile_run(*args, **kwargs)

    def recorded_copy(X, dtype=np.float64):
        events.append(("copy", X.shape, np.dtype(dtype).name))
        return padded_dense(X, dtype)

    monkeypatch.setattr(_runtime, "compile_run", recorded_compile)
    monkeypatch.setattr(_runtime, "padded_dense", recorded_copy)
    monkeypatch.setattr(_common, "padded_dense", recorded_copy)
    jax.clear_caches()
    compiled = [m for m in compilations(lambda: _fit_model(metric)) if m == "Compiling jit(_run)"]
    copies = [e for e in events if e != "compile" and e[1] == (600, 10)]
    assert copies == [("copy", (600, 10), "float32")]  # the one copy of X, float32
    assert events.index("compile") < events.index(copies[0])
    assert ("copy", (600, 0), "float32") in events[: events.index("compile")]  # rows first
    assert len(compiled) == 1  # the run found the early compilation


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_rows_then_dense_is_the_data_of_build_data(metric):
    """The solver's data built rows first and X last equals ``build_data``'s, array for
    array (values, dtypes, shapes)."""
    X, y, g = make_data(n=300, d=9, seed=4)
    settings = _fit.Settings(metric=metric, tolerance=0.2, interval=(0.1, 0.6))
    w = np.ones(len(y))
    with jax.enable_x64(True):
        cfg, data, _ = _fit.build_problem(settings, X, y, g, w, 2, (0.1, 0.6), lean=True)
        plain = _common.build_data(
            X, y, g, w, 2, x_dtype=np.float32, **{k: getattr(data, k) for k in _HYPER}
        )
    assert data.X.shape == (plain.X.shape[0], 9)
    for a, b in zip(jax.tree_util.tree_leaves(data), jax.tree_util.tree_leaves(plain)):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("metric", [PSP, PDP])
def test_compile_first_fit_equals_the_plain_fit(monkeypatch, metric):
    first = _fit_model(metric)
    monkeypatch.setattr(_fit, "dense_on_one_device", lambda X, dense_cost=0.0: False)
    plain = _fit_model(metric)
    np.testing.assert_array_equal(first.coef_, plain.coef_)
    np.testing.assert_array_equal(first.intercept_, plain.intercept_)


def test_dense_on_one_device_is_the_ell_rule():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(200, 12))
    one_hot = np.where(rng.random((200, 40)) < 0.05, 1.0, 0.0)
    narrow = np.where(rng.random((200, 5)) < 0.1, 1.0, 0.0)
    for X in (dense, one_hot, narrow, np.zeros((50, 12))):
        assert _runtime.dense_on_one_device(X) == (ell_slots(X) is None)
        for cost in (0.0, _fit.smooth_dense_cost()):  # the smoothed solver's rule too
            expected = ell_slots(X, dense_cost=cost) is None
            assert _runtime.dense_on_one_device(X, cost) == expected
    assert _runtime.dense_on_one_device(one_hot, _fit.smooth_dense_cost())  # 8 slots of 40
    assert not _runtime.dense_on_one_device(sp.csr_matrix(dense))


def test_release_free_memory_is_safe():
    assert release_free_memory() in (True, False)
