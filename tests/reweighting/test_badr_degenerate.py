"""BADR on degenerate groups: a group whose labels are all one class, and fits whose
smallest train unfairness is a (nearly) constant classifier."""

import warnings

import numpy as np
import pytest

from fairest.reweighting import BADRClassifier, GroupWeightedClassifier
from fairest.utils import FairnessWarning


def one_class_group_data(n=1000, seed=0, negatives_left=0):
    """Two groups; every label of group 1 (30 % of the rows) is 1, except
    ``negatives_left`` of them."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = (rng.random(n) < 0.3).astype(int)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    y[g == 1] = 1
    y[np.flatnonzero(g == 1)[:negatives_left]] = 0
    return X, y, g


def accuracy(model, X, y):
    return float(np.mean(model.predict(X) == y))


@pytest.mark.parametrize(
    "metric", ["demographic_parity_deviation", "individual_fairness", "equal_opportunity_range"]
)
def test_one_class_group_returns_the_uniform_baseline_with_a_warning(metric):
    """Group 1's loss is minimised by the constant model "predict 1", which is trivially
    fair: the search goes to its vertex and used to return that model (every row
    predicted 1, accuracy 0.635 against the uniform baseline's 0.707). It is replaced by
    the fairest baseline that gives group 1 at most the uniform weight: here uniform, the
    model of GroupWeightedClassifier(weights="uniform") on the same data. On the whole
    simplex (max_weight_ratio=None, the paper's search)."""
    X, y, g = one_class_group_data()
    with pytest.warns(FairnessWarning, match=r"every label of group 1 is 1") as record:
        badr = BADRClassifier(metric=metric, max_weight_ratio=None).fit(X, y, sensitive_features=g)
    message = str(next(w.message for w in record if w.category is FairnessWarning))
    # the achieved figures of both models and the fix are named
    assert "share predicted 1 1.000" in message and "'uniform'" in message
    assert "Drop or merge group 1" in message
    baseline = GroupWeightedClassifier(weights="uniform").fit(X, y, sensitive_features=g)
    assert badr.selected_ == "uniform"
    np.testing.assert_allclose(badr.group_weights_, [0.5, 0.5])
    np.testing.assert_allclose(badr.coef_, baseline.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(badr.intercept_, baseline.intercept_, rtol=1e-6, atol=1e-8)
    assert accuracy(badr, X, y) == pytest.approx(accuracy(baseline, X, y))
    assert 0.05 < 1.0 - np.mean(badr.predict(X))  # not the constant model


def test_one_class_group_under_a_cap_returns_the_pooled_model_with_a_warning():
    """At a weight cap of 3 times a group's share (group 1, 30 % of the rows, at
    most 0.9) the search still ends next to the constant model; the safeguard's pooled
    weights (plain ERM, the fairest non-constant baseline within the caps) are returned,
    more accurate than the uniform ones the whole simplex falls back to."""
    X, y, g = one_class_group_data()
    with pytest.warns(FairnessWarning, match=r"every label of group 1 is 1") as record:
        badr = BADRClassifier(max_weight_ratio=3.0).fit(X, y, sensitive_features=g)
    message = str(next(w.message for w in record if w.category is FairnessWarning))
    assert "weight 0.9 on 1" in message and "'pooled'" in message
    assert badr.selected_ == "pooled"
    np.testing.assert_allclose(badr.group_weights_, np.bincount(g) / g.size)
    pooled = GroupWeightedClassifier().fit(X, y, sensitive_features=g)
    np.testing.assert_allclose(badr.coef_, pooled.coef_, rtol=1e-6, atol=1e-8)
    uniform = GroupWeightedClassifier(weights="uniform").fit(X, y, sensitive_features=g)
    assert accuracy(badr, X, y) > accuracy(uniform, X, y) + 0.02


def test_one_class_group_search_away_from_its_vertex_is_kept():
    """Group variance is not zeroed by a constant model (group 1's loss vanishes there,
    group 0's does not): the search ends inside the simplex, its model separates the
    classes and is returned without a warning; it beats the uniform baseline."""
    X, y, g = one_class_group_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FairnessWarning)
        badr = BADRClassifier(metric="group_loss_variance").fit(X, y, sensitive_features=g)
    assert badr.selected_ == "slsqp"
    assert np.all(badr.group_weights_ > 0.1)
    baseline = GroupWeightedClassifier(weights="uniform").fit(X, y, sensitive_features=g)
    assert accuracy(badr, X, y) >= accuracy(baseline, X, y)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
@pytest.mark.parametrize("safeguard", [True, False])
def test_one_class_group_of_three_is_steered_off_for_every_loss(loss, safeguard):
    """Three groups, group 2 of one class: with the squared hinge (penalised intercept,
    so the vertex has a minimiser, a constant one) the search reaches the vertex too.
    The model returned is never constant and gives group 2 at most the uniform weight;
    without the safeguard the replacement is uniform. The paper's search (whole simplex,
    temperature 1)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 3))
    g = rng.integers(0, 3, 1200)
    y = (X[:, 0] + 0.5 * rng.normal(size=1200) > 0).astype(int)
    y[g == 2] = 1
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        badr = BADRClassifier(
            loss,
            metric="demographic_parity_deviation",
            safeguard=safeguard,
            max_weight_ratio=None,
            metric_params={"temperature": 1.0},
        ).fit(X, y, sensitive_features=g)
    predicted = badr.predict(X)
    assert 0.05 < np.mean(predicted) < 0.95
    steered = [w for w in record if "every label of group 2 is 1" in str(w.message)]
    if steered:
        assert badr.group_weights_[2] <= 1 / 3 + 1e-12
        if not safeguard:
            assert badr.selected_ == "uniform"
    if loss == "squared_hinge":
        assert steered  # its vertex is a constant model the search reaches


def test_nearly_constant_result_warns_with_the_figures():
    """Two negatives left in group 1: its vertex has a minimiser, the search ends next to
    it at a model that predicts 1 for every row, and the fit says so (accuracy, share
    predicted per group, the group of largest weight). On the whole simplex (the default
    cap keeps group 1 at 0.9 and the model off the constant one)."""
    X, y, g = one_class_group_data(negatives_left=2)
    with pytest.warns(FairnessWarning, match="predicts one class nearly everywhere") as record:
        badr = BADRClassifier(metric="demographic_parity_deviation", max_weight_ratio=None).fit(
            X, y, sensitive_features=g
        )
    message = str(next(w.message for w in record if w.category is FairnessWarning))
    assert "on group 1" in message and "share predicted 1 1.000" in message
    assert "0: 1.000 / " in message  # group 0's share predicted 1 / accuracy
    assert badr.group_weights_[1] > 0.9


def test_balanced_data_does_not_warn():
    """Two-class groups and a model that separates the classes: no FairnessWarning."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    g = rng.integers(0, 2, 400)
    y = (X[:, 0] + 0.3 * g + rng.normal(size=400) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FairnessWarning)
        BADRClassifier(metric="demographic_parity_deviation").fit(X, y, sensitive_features=g)
