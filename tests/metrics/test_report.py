"""group_report: per-group table, summaries in attrs, regression mode, errors."""

import numpy as np
import pandas as pd
import pytest

import fairest.metrics as fm

fairlearn_metrics = pytest.importorskip("fairlearn.metrics")


def _classification(seed=0, n=200):
    rng = np.random.default_rng(seed)
    groups = rng.choice(["a", "b", "c"], n)
    y_true = rng.integers(0, 2, n)
    scores = rng.normal(size=n) + (groups == "a")
    weights = rng.uniform(0.5, 2.0, n)
    return y_true, scores, groups, weights


def test_classification_report_matches_fairlearn_metric_frame():
    y_true, scores, groups, weights = _classification()
    y_pred = (scores >= 0).astype(int)
    report = fm.group_report(
        y_true, y_pred, sensitive_features=pd.Series(groups, name="race"), sample_weight=weights
    )
    assert list(report.index) == ["a", "b", "c"] and report.index.name == "race"
    assert list(report.columns) == [
        "count",
        "weight",
        "base_rate",
        "selection_rate",
        "true_positive_rate",
        "false_positive_rate",
        "accuracy",
    ]
    frame = fairlearn_metrics.MetricFrame(
        metrics={
            "selection_rate": fairlearn_metrics.selection_rate,
            "true_positive_rate": fairlearn_metrics.true_positive_rate,
            "false_positive_rate": fairlearn_metrics.false_positive_rate,
        },
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
        sample_params={
            name: {"sample_weight": weights}
            for name in ("selection_rate", "true_positive_rate", "false_positive_rate")
        },
    )
    for name in ("selection_rate", "true_positive_rate", "false_positive_rate"):
        np.testing.assert_allclose(report[name].to_numpy(), frame.by_group[name].to_numpy())
        assert report.attrs["overall"][name] == pytest.approx(frame.overall[name])
    np.testing.assert_array_equal(report["count"], [np.sum(groups == g) for g in "abc"])
    np.testing.assert_allclose(report["weight"], [weights[groups == g].sum() for g in "abc"])
    correct = y_true == y_pred
    accuracy = [np.average(correct[groups == g], weights=weights[groups == g]) for g in "abc"]
    np.testing.assert_allclose(report["accuracy"], accuracy)
    assert report.attrs["difference"]["selection_rate"] == pytest.approx(
        fm.demographic_parity_difference(
            y_true, y_pred, sensitive_features=groups, sample_weight=weights
        )
    )
    assert "count" not in report.attrs["difference"]
    assert report.attrs["overall"]["count"] == 200


def test_predictions_from_scores_and_loss_column():
    y_true, scores, groups, _ = _classification(1)
    report = fm.group_report(y_true, sensitive_features=groups, scores=scores, loss="logistic")
    explicit = fm.group_report(y_true, (scores >= 0) * 1, sensitive_features=groups)
    pd.testing.assert_frame_equal(report.drop(columns="mean_loss"), explicit)
    losses = np.logaddexp(0, scores) - y_true * scores
    np.testing.assert_allclose(report["mean_loss"], [losses[groups == g].mean() for g in "abc"])
    # the variance of the loss column is the group loss variance
    assert np.var(report["mean_loss"].to_numpy()) == pytest.approx(
        fm.group_loss_variance(y_true, scores, sensitive_features=groups)
    )
    custom = fm.group_report(
        y_true, sensitive_features=groups, scores=scores, loss=lambda y, s: np.abs(s - y)
    )
    np.testing.assert_allclose(
        custom["mean_loss"], [np.abs(scores - y_true)[groups == g].mean() for g in "abc"]
    )


def test_regression_report():
    rng = np.random.default_rng(2)
    y_true = rng.normal(size=60)
    y_pred = y_true + rng.normal(scale=0.3, size=60)
    groups = np.repeat([1, 2], 30)
    report = fm.group_report(y_true, y_pred, sensitive_features=groups)
    assert list(report.columns) == [
        "count",
        "weight",
        "mean_target",
        "mean_prediction",
        "mean_squared_error",
        "mean_absolute_error",
    ]
    np.testing.assert_allclose(
        report["mean_squared_error"], [np.mean((y_pred - y_true)[groups == g] ** 2) for g in (1, 2)]
    )
    assert report.index.name == "group"
    assert report.attrs["overall"]["mean_target"] == pytest.approx(y_true.mean())


def test_intersectional_groups_polars_and_undefined_rates():
    pl = pytest.importorskip("polars")
    features = pl.DataFrame({"sex": ["F", "F", "M", "M", "M"], "age": [1, 2, 1, 1, 1]})
    y_true = np.array([1, 0, 0, 0, 1])
    y_pred = np.array([1, 1, 0, 1, 1])
    report = fm.group_report(y_true, y_pred, sensitive_features=features)
    assert isinstance(report.index, pd.MultiIndex)
    assert report.index.names == ["sex", "age"]
    assert list(report.index) == [("F", 1), ("F", 2), ("M", 1)]
    assert np.isnan(report.loc[("F", 1), "false_positive_rate"])  # no negatives there
    assert np.isnan(report.loc[("F", 2), "true_positive_rate"])  # no positives there
    assert report.attrs["difference"]["true_positive_rate"] == 0.0  # nan ignored


def test_report_errors():
    y_true, scores, groups, _ = _classification(3, n=20)
    with pytest.raises(ValueError, match="y_pred, scores"):
        fm.group_report(y_true, sensitive_features=groups)
    with pytest.raises(ValueError, match="loss needs scores"):
        fm.group_report(y_true, (scores > 0) * 1, sensitive_features=groups, loss="logistic")
    with pytest.raises(ValueError, match="same length"):
        fm.group_report(y_true, (scores > 0) * 1, sensitive_features=groups, scores=scores[:5])
    with pytest.raises(ValueError, match="loss must be one of"):
        fm.group_report(y_true, sensitive_features=groups, scores=scores, loss="hinge")
