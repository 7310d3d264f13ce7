"""Regression fairness metrics against independent oracles.

The distances are checked against ``scipy.stats.ks_2samp`` / ``wasserstein_distance``
pair by pair and against a brute-force evaluation of the weighted CDFs; the loss gaps
against fairlearn's ``MetricFrame(...).difference()``. The catalogue records make them
usable by name, and an in-processing regressor (BADR) reports them through the catalogue.
"""

from itertools import combinations

import numpy as np
import pytest
from fairlearn.metrics import MetricFrame as FairlearnFrame
from scipy.stats import ks_2samp, wasserstein_distance
from sklearn.metrics import mean_absolute_error, mean_squared_error

from fairest.metrics import (
    MetricFrame,
    _regression,
    catalogue,
    get_metric,
    mean_absolute_error_gap,
    mean_squared_error_gap,
    prediction_ks_distance,
    prediction_w1_distance,
)
from fairest.utils._tuning import HOST_TUNING

NAMES = (
    "prediction_ks_distance",
    "prediction_w1_distance",
    "prediction_w2_unfairness",
    "mean_squared_error_gap",
    "mean_absolute_error_gap",
)


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    n = 900
    groups = rng.choice(["a", "b", "c", "d"], size=n, p=[0.4, 0.3, 0.2, 0.1])
    y = rng.normal(size=n)
    # rounded, so that there are ties within and across groups
    y_pred = np.round(y + 0.4 * (groups == "a") + rng.normal(scale=0.7, size=n), 1)
    weights = rng.uniform(0.2, 3.0, size=n)
    return y, y_pred, groups, weights


def _brute_cdf(values, weights, points):
    return np.array([weights[values <= t].sum() for t in points]) / weights.sum()


def test_ks_equals_scipy_pair_by_pair(data):
    y, y_pred, groups, _ = data
    expected = max(
        ks_2samp(y_pred[groups == a], y_pred[groups == b]).statistic
        for a, b in combinations(np.unique(groups), 2)
    )
    assert prediction_ks_distance(y, y_pred, sensitive_features=groups) == pytest.approx(
        expected, abs=1e-12
    )


def test_w1_equals_scipy_pair_by_pair_with_weights(data):
    y, y_pred, groups, weights = data
    expected = max(
        wasserstein_distance(
            y_pred[groups == a], y_pred[groups == b], weights[groups == a], weights[groups == b]
        )
        for a, b in combinations(np.unique(groups), 2)
    )
    value = prediction_w1_distance(y, y_pred, sensitive_features=groups, sample_weight=weights)
    assert value == pytest.approx(expected, rel=1e-10)
    to_overall = max(
        wasserstein_distance(y_pred[groups == a], y_pred, weights[groups == a], weights)
        for a in np.unique(groups)
    )
    value = prediction_w1_distance(
        y, y_pred, sensitive_features=groups, sample_weight=weights, method="to_overall"
    )
    assert value == pytest.approx(to_overall, rel=1e-10)


@pytest.mark.parametrize("method", ["between_groups", "to_overall"])
def test_weighted_ks_equals_brute_force(data, method):
    y, y_pred, groups, weights = data
    points = np.unique(y_pred)
    cdfs = {
        g: _brute_cdf(y_pred[groups == g], weights[groups == g], points) for g in np.unique(groups)
    }
    if method == "between_groups":
        expected = max(np.abs(cdfs[a] - cdfs[b]).max() for a, b in combinations(cdfs, 2))
    else:
        overall = _brute_cdf(y_pred, weights, points)
        expected = max(np.abs(cdf - overall).max() for cdf in cdfs.values())
    value = prediction_ks_distance(
        y, y_pred, sensitive_features=groups, sample_weight=weights, method=method
    )
    assert value == pytest.approx(expected, abs=1e-12)


def test_integer_weights_equal_repeated_rows(data):
    y, y_pred, groups, _ = data
    counts = np.random.default_rng(0).integers(0, 4, size=y.size)
    counts[:4] = 1  # every group keeps rows
    repeated = np.repeat(np.arange(y.size), counts)
    for function in (prediction_ks_distance, prediction_w1_distance, mean_squared_error_gap):
        weighted = function(y, y_pred, sensitive_features=groups, sample_weight=counts)
        plain = function(y[repeated], y_pred[repeated], sensitive_features=groups[repeated])
        assert weighted == pytest.approx(plain, rel=1e-10, abs=1e-12), function.__name__


def test_blocks_of_the_cdfs_give_the_same_values(data):
    y, y_pred, groups, weights = data
    params = {"sensitive_features": groups, "sample_weight": weights}
    whole = [
        prediction_ks_distance(y, y_pred, **params),
        prediction_w1_distance(y, y_pred, **params),
    ]
    with HOST_TUNING.override(cdf_block_cells=7):  # one value per block
        blocked = [
            prediction_ks_distance(y, y_pred, **params),
            prediction_w1_distance(y, y_pred, **params),
        ]
    np.testing.assert_allclose(blocked, whole, rtol=1e-12)


@pytest.mark.parametrize("method", ["between_groups", "to_overall"])
@pytest.mark.parametrize("weighted", [False, True])
def test_loss_gaps_equal_fairlearns_frame(data, method, weighted):
    y, y_pred, groups, weights = data
    weights = weights if weighted else None
    for ours, loss in (
        (mean_squared_error_gap, mean_squared_error),
        (mean_absolute_error_gap, mean_absolute_error),
    ):
        frame = FairlearnFrame(
            metrics=loss,
            y_true=y,
            y_pred=y_pred,
            sensitive_features=groups,
            sample_params={"sample_weight": weights} if weighted else None,
        )
        value = ours(y, y_pred, sensitive_features=groups, sample_weight=weights, method=method)
        assert value == pytest.approx(frame.difference(method=method), rel=1e-12)


def test_identical_distributions_and_one_group_give_zero():
    values = np.tile([0.5, 1.0, 2.0, 2.0], 3)
    groups = np.repeat(["a", "b", "c"], 4)
    for name in ("prediction_ks_distance", "prediction_w1_distance"):
        assert get_metric(name)(None, values, sensitive_features=groups) == 0.0
        assert get_metric(name)(None, values, sensitive_features=["a"] * values.size) == 0.0
    disjoint = np.array([0.0, 1.0, 5.0, 6.0])
    assert prediction_ks_distance(None, disjoint, sensitive_features=list("aabb")) == 1.0
    assert prediction_w1_distance(None, disjoint, sensitive_features=list("aabb")) == 5.0


def test_bad_inputs_name_the_argument(data):
    y, y_pred, groups, _ = data
    with pytest.raises(ValueError, match="method must be one of"):
        prediction_ks_distance(y, y_pred, sensitive_features=groups, method="pairs")
    bad = y_pred.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="y_pred"):
        prediction_w1_distance(y, bad, sensitive_features=groups)
    with pytest.raises(ValueError, match="length"):
        mean_squared_error_gap(y, y_pred[:-1], sensitive_features=groups)


def test_catalogue_records_of_regression_metrics(data):
    y, y_pred, groups, weights = data
    records = catalogue()
    for name in NAMES:
        record = records[name]
        assert record.kinds == ("regression",) and not record.fairlearn
        assert record(y, y_pred, sensitive_features=groups, sample_weight=weights) == (
            getattr(_regression, name)(y, y_pred, sensitive_features=groups, sample_weight=weights)
        )
    assert records["mean_squared_error_gap"].rate_labels == ("mse",)
    # a frame holds the per-group losses of a loss gap; its difference is the gap
    frame = MetricFrame(
        metrics=["mean_squared_error_gap", "mean_absolute_error_gap"],
        y_true=y,
        y_pred=y_pred,
        sensitive_features=groups,
        sample_params={
            "mean_squared_error_gap": {"sample_weight": weights},
            "mean_absolute_error_gap": {"sample_weight": weights},
        },
    )
    for name in ("mean_squared_error_gap", "mean_absolute_error_gap"):
        expected = records[name](y, y_pred, sensitive_features=groups, sample_weight=weights)
        assert frame.difference()[name] == pytest.approx(expected, rel=1e-12)


def test_badr_regressor_reports_the_regression_metrics_through_the_catalogue():
    """An in-processing regressor needs no metric code of its own: its predictions go to
    the catalogue's records (the loss gaps in a frame, the distances by name), and the
    values are the independent ones."""
    from fairest.reweighting import BADRRegressor

    rng = np.random.default_rng(0)
    n = 600
    groups = rng.choice(["f", "m"], size=n, p=[0.3, 0.7])
    X = rng.normal(size=(n, 3)) + (groups == "f")[:, None] * 0.5
    y = X @ np.array([1.0, -0.5, 0.2]) + rng.normal(scale=0.3 + 0.4 * (groups == "f"), size=n)
    model = BADRRegressor().fit(X, y, sensitive_features=groups)
    y_pred = model.predict(X)
    frame = MetricFrame(
        metrics=["mean_squared_error_gap", "mean_absolute_error_gap"],
        y_true=y,
        y_pred=y_pred,
        sensitive_features=groups,
    )
    reference = FairlearnFrame(
        metrics=mean_squared_error, y_true=y, y_pred=y_pred, sensitive_features=groups
    )
    np.testing.assert_allclose(
        frame.by_group["mean_squared_error_gap"].to_numpy(),
        reference.by_group.to_numpy(),
        rtol=1e-12,
    )
    assert frame.difference()["mean_squared_error_gap"] == pytest.approx(reference.difference())
    ks = get_metric("prediction_ks_distance")(y, y_pred, sensitive_features=groups)
    f, m = y_pred[groups == "f"], y_pred[groups == "m"]
    assert ks == pytest.approx(ks_2samp(f, m).statistic)
    w1 = get_metric("prediction_w1_distance")(y, y_pred, sensitive_features=groups)
    assert w1 == pytest.approx(wasserstein_distance(f, m))


def test_w2_unfairness_equals_the_quantile_integral_by_hand():
    """Groups of 30 and 45 rows: every quantile function is constant on the intervals
    ((j - 1) / 90, j / 90], so the midpoints give the integral exactly."""
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=30), rng.exponential(size=45) + 0.5
    values, groups = np.concatenate([a, b]), np.repeat(["a", "b"], [30, 45])
    u = (np.arange(90) + 0.5) / 90
    qa, qb = np.sort(a)[(u * 30).astype(int)], np.sort(b)[(u * 45).astype(int)]
    shares = np.array([30, 45]) / 75
    bary = shares[0] * qa + shares[1] * qb
    expected = shares[0] * np.mean((qa - bary) ** 2) + shares[1] * np.mean((qb - bary) ** 2)
    value = get_metric("prediction_w2_unfairness")(None, values, sensitive_features=groups)
    assert value == pytest.approx(expected, rel=1e-12)
    # equal shares: a quarter of the squared W2 distance of sorted samples
    c = rng.normal(size=30) * 2
    pair = np.concatenate([a, c])
    w2 = np.mean((np.sort(a) - np.sort(c)) ** 2)
    assert get_metric("prediction_w2_unfairness")(
        None, pair, sensitive_features=["a"] * 30 + ["b"] * 30
    ) == pytest.approx(w2 / 4, rel=1e-12)
