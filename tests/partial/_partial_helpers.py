"""Shared small problems of the partial-fairness tests (imported by the test modules)."""

import jax
import numpy as np
import pytest

from fairest.partial._estimator import PartialParityClassifier


def make_data(n=120, d=3, seed=0, shift=0.8, n_groups=2):
    """Two (or more) groups whose scores differ: group g shifts every feature by g*shift."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, n_groups, n)
    X = rng.normal(size=(n, d)) + shift * g[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, g


def make_problem(constraint="statistical", surrogate="ramp", pdp_dc="minimal", tolerance=0.2,
                 interval=(0.0, 0.5), n=120, d=3, n_grid=4, mu=0.0, seed=0, n_groups=2,
                 sample_weight=None, alpha=0.0):
    """(cfg, data, x0, X, y, g) of a small problem, built the way the estimator builds it.

    Call inside ``jax.enable_x64(True)``."""
    X, y, g = make_data(n, d, seed, n_groups=n_groups)
    clf = PartialParityClassifier(
        constraint, interval=interval, tolerance=tolerance, surrogate=surrogate,
        pdp_dc=pdp_dc, n_grid=n_grid, mu=mu, alpha=alpha,
    )
    weights = np.ones(n) if sample_weight is None else sample_weight
    codes = g.astype(np.int32)
    cfg, data, x0 = clf._problem(X, y.astype(float), codes, weights, n_groups, interval)
    return cfg, data, x0, X, y, g


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield
