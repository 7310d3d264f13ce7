"""Degenerate inputs of the estimators: a sensible model or a clear message, never a silent
constant classifier or an extrapolation (the family tests hold the details:
tests/reweighting/test_badr_degenerate.py, tests/partial/test_partial_degenerate.py)."""

import warnings

import numpy as np
import pandas as pd
import pytest

from fairest.partial import GroupInteractionFeatures, PartialParityClassifier
from fairest.reweighting import BADRClassifier, GroupWeightedClassifier
from fairest.utils import FairnessWarning


def _two_groups(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = (rng.random(n) < 0.3).astype(int)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y, g


def test_badr_single_class_group_is_not_a_constant_classifier():
    """Every label of group 1 is 1: BADR warns naming the group and returns the uniform
    baseline's model, not the constant "predict 1" its vertex leads to."""
    X, y, g = _two_groups()
    y[g == 1] = 1
    with pytest.warns(FairnessWarning, match="every label of group 1 is 1"):
        badr = BADRClassifier(
            metric="demographic_parity_deviation", metric_params={"temperature": 1.0}
        ).fit(X, y, sensitive_features=g)
    baseline = GroupWeightedClassifier(weights="uniform").fit(X, y, sensitive_features=g)
    np.testing.assert_allclose(badr.coef_, baseline.coef_, rtol=1e-6, atol=1e-8)
    assert np.mean(badr.predict(X) == y) == pytest.approx(np.mean(baseline.predict(X) == y))


def test_partial_two_column_frame_is_its_intersection():
    """A two-column sensitive frame gives the model of its one-column intersection labels,
    and that model is a classifier (not the constant start)."""
    rng = np.random.default_rng(1)
    g, h = rng.integers(0, 2, 600), rng.integers(0, 2, 600)
    X = rng.normal(size=(600, 3)) + 0.8 * (g + h)[:, None]
    y = (X[:, 0] + rng.normal(size=600) > 0.8).astype(int)
    frame = pd.DataFrame({"a": g, "b": h})
    labels = np.array([f"{u}|{v}" for u, v in zip(g, h)])
    make = lambda: PartialParityClassifier(interval=(0.0, 0.5), tolerance=0.2)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)  # the exact-metric miss, if any
        two = make().fit(X, y, sensitive_features=frame)
        one = make().fit(X, y, sensitive_features=labels)
    np.testing.assert_array_equal(two.coef_, one.coef_)
    assert 0.05 < np.mean(two.predict(X)) < 0.95


def test_partial_constant_result_warns():
    """A cell of 12 rows far below the others and pDP on the whole range at tolerance
    0.02: only a constant model is that fair, and the fit says that it returns one."""
    rng = np.random.default_rng(0)
    g = np.concatenate([rng.integers(0, 2, 600), np.full(12, 2)])
    X = rng.normal(size=(612, 3)) + np.array([0.0, 0.8, -3.0])[g][:, None]
    y = ((X[:, 0] + rng.normal(size=612) > 0.8) & (g < 2)).astype(int)
    with pytest.warns(FairnessWarning, match="predicts one class nearly everywhere"):
        PartialParityClassifier(
            "partial_demographic_parity", interval=(0.0, 1.0), tolerance=0.02
        ).fit(X, y, sensitive_features=g)


def test_group_interaction_features_unseen_code_is_refused():
    X = np.array([[0.5, 1.0], [1.5, 2.0]])
    features = GroupInteractionFeatures().fit(X)
    with pytest.raises(ValueError, match="not seen in fit: 3"):
        features.transform(np.array([[0.5, 3.0]]))
