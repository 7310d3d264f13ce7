"""One BLAS thread while a jitted loop factors matrices (``fairest.utils._threads``)."""

import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from fairest.partial import PartialParityClassifier, _runtime
from fairest.utils._threads import one_blas_thread


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_one_blas_thread_limits_then_restores():
    before = _blas_threads()
    if not before:
        pytest.skip("no BLAS library that threadpoolctl can see is loaded")
    with one_blas_thread():
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before


def test_partial_gauss_newton_runs_on_one_blas_thread(monkeypatch):
    """The smoothed solver's jitted run (a Cholesky factor every Gauss-Newton step) runs
    inside :func:`one_blas_thread` and waits for its results there."""
    if not _blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can see is loaded")
    seen = []
    real = _runtime.run_fast_alm

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)  # returns numpy: the run has finished
        seen.append(set(_blas_threads()))
        return result

    monkeypatch.setattr(_runtime, "run_fast_alm", spy)
    rng = np.random.default_rng(0)
    g = rng.integers(0, 2, 300)
    X = rng.normal(size=(300, 3)) + g[:, None]
    y = (X[:, 0] + rng.normal(size=300) > 0.5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        PartialParityClassifier(interval=(0.0, 0.5)).fit(X, y, sensitive_features=g)
    assert seen and all(threads == {1} for threads in seen)
