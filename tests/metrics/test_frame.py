"""MetricFrame against fairlearn's MetricFrame on the same inputs.

Values must agree exactly (same callables on the same rows); bootstrap intervals must
agree exactly for the same ``random_state`` (fairlearn's seed semantics are reproduced),
on both evaluation paths (rate metrics through segment sums, any callable per replicate).
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    mean_absolute_error,
    mean_squared_error,
    precision_score,
    recall_score,
)

from fairest.metrics import MetricFrame

fairlearn_metrics = pytest.importorskip("fairlearn.metrics")


def _data(n=400, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    sensitive = pd.DataFrame(
        {"sex": rng.choice(["f", "m"], n, p=[0.3, 0.7]), "race": rng.choice(["a", "b", "c"], n)}
    )
    y_true = rng.integers(0, 2, n)
    y_pred = np.where(rng.random(n) < 0.8, y_true, 1 - y_true)
    weights = rng.uniform(0.2, 3.0, n) if weighted else None
    return y_true, y_pred, sensitive, weights


CLASSIFICATION = {
    "accuracy": accuracy_score,  # fast path
    "recall": recall_score,  # fast path
    "precision": precision_score,  # fast path
    "selection": fairlearn_metrics.selection_rate,  # fast path
    "f1": f1_score,  # general path
    "balanced": balanced_accuracy_score,  # general path
}


def _fairlearn(metrics, y_true, y_pred, sensitive, weights, **kwargs):
    params = None if weights is None else {k: {"sample_weight": weights} for k in metrics}
    return fairlearn_metrics.MetricFrame(
        metrics=metrics,
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=sensitive,
        sample_params=params,
        **kwargs,
    )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("columns", [["sex"], ["sex", "race"]])
def test_values_equal_fairlearn(weighted, columns):
    y_true, y_pred, sensitive, weights = _data(weighted=weighted)
    ours = MetricFrame(
        metrics=CLASSIFICATION,
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=sensitive[columns],
        sample_weight=weights,
    )
    theirs = _fairlearn(CLASSIFICATION, y_true, y_pred, sensitive[columns], weights)
    pd.testing.assert_frame_equal(ours.by_group, theirs.by_group, check_names=False)
    assert list(ours.by_group.index.names) == list(theirs.by_group.index.names)
    np.testing.assert_array_equal(ours.overall.to_numpy(), theirs.overall.to_numpy())
    for method in ("between_groups", "to_overall"):
        np.testing.assert_allclose(ours.difference(method), theirs.difference(method), atol=1e-15)
        np.testing.assert_allclose(ours.ratio(method), theirs.ratio(method), atol=1e-15)
    np.testing.assert_array_equal(ours.group_min(), theirs.group_min())
    np.testing.assert_array_equal(ours.group_max(), theirs.group_max())
    assert ours.group_sizes["count"].sum() == len(y_true)


def test_regression_metrics_equal_fairlearn():
    rng = np.random.default_rng(1)
    n = 300
    y_true, y_pred = rng.normal(size=n), rng.normal(size=n)
    groups = rng.choice(["x", "y", "z"], n)
    metrics = {"mse": mean_squared_error, "mae": mean_absolute_error}
    ours = MetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=groups)
    theirs = _fairlearn(metrics, y_true, y_pred, groups, None)
    np.testing.assert_allclose(ours.by_group.to_numpy(), theirs.by_group.to_numpy(), rtol=1e-15)


@pytest.mark.parametrize("weighted, random_state", [(True, 7), (False, "RandomState")])
def test_bootstrap_intervals_equal_fairlearn_for_the_same_seed(weighted, random_state):
    y_true, y_pred, sensitive, weights = _data(n=300, weighted=weighted)
    metrics = {"accuracy": accuracy_score, "f1": f1_score}  # fast and general paths

    def seed():
        return np.random.RandomState(3) if random_state == "RandomState" else random_state

    kwargs = dict(n_boot=15, random_state=seed())
    ours = MetricFrame(
        metrics=metrics,
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=sensitive,
        sample_weight=weights,
        ci_quantiles=[0.05, 0.5, 0.95],
        **kwargs,
    )
    kwargs["random_state"] = seed()
    theirs = _fairlearn(
        metrics, y_true, y_pred, sensitive, weights, ci_quantiles=[0.05, 0.5, 0.95], **kwargs
    )
    pairs = [(ours.overall_ci, theirs.overall_ci), (ours.by_group_ci, theirs.by_group_ci)]
    pairs += [(ours.group_min_ci(), theirs.group_min_ci())]
    pairs += [(ours.group_max_ci(), theirs.group_max_ci())]
    for method in ("between_groups", "to_overall"):
        pairs += [(ours.difference_ci(method), theirs.difference_ci(method))]
        pairs += [(ours.ratio_ci(method), theirs.ratio_ci(method))]
    for ours_ci, theirs_ci in pairs:  # fairlearn's return types: a list, one per quantile
        assert isinstance(ours_ci, list) and len(ours_ci) == 3
        for mine, reference in zip(ours_ci, theirs_ci):
            assert type(mine) is type(reference)
            np.testing.assert_allclose(
                np.asarray(mine, dtype=float), np.asarray(reference, dtype=float), rtol=1e-12
            )


@pytest.mark.parametrize("stratify", [False, True])
def test_fast_path_equals_calling_the_metric_on_every_replicate(stratify):
    """The same replicates through segment sums and through the callable itself."""
    y_true, y_pred, sensitive, weights = _data(n=250, weighted=True)
    fast = {"accuracy": accuracy_score, "recall": recall_score, "tpr": "true_positive_rate"}
    general = {  # the same functions, hidden from the fast path
        "accuracy": lambda y, p, sample_weight=None: accuracy_score(
            y, p, sample_weight=sample_weight
        ),
        "recall": lambda y, p, sample_weight=None: recall_score(y, p, sample_weight=sample_weight),
        "tpr": lambda y, p, sample_weight=None: (
            MetricFrame(
                metrics="true_positive_rate",
                y_true=y,
                y_pred=p,
                sensitive_features=np.zeros(len(y)),
                sample_weight=sample_weight,
            ).overall
        ),
    }
    frames = [
        MetricFrame(
            metrics=metrics,
            y_true=y_true,
            y_pred=y_pred,
            sensitive_features=sensitive,
            sample_weight=weights,
            n_boot=25,
            random_state=0,
            stratify=stratify,
        )
        for metrics in (fast, general)
    ]
    for kind in ("overall", "difference", "ratio"):
        np.testing.assert_allclose(
            frames[0].bootstrap_distribution(kind).to_numpy(),
            frames[1].bootstrap_distribution(kind).to_numpy(),
            rtol=1e-12,
        )


def test_stratified_replicates_keep_group_sizes():
    y_true, y_pred, sensitive, _ = _data(n=200)
    frame = MetricFrame(
        metrics={"rows": lambda y, p: float(len(y))},
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=sensitive["race"],
        n_boot=20,
        random_state=0,
        stratify=True,
        ci_method="percentile",
    )
    low, high = frame.by_group_ci
    counts = frame.group_sizes["count"].to_numpy()
    np.testing.assert_array_equal(low["rows"].to_numpy(), counts)
    np.testing.assert_array_equal(high["rows"].to_numpy(), counts)


@pytest.mark.parametrize("stratify", [False, True])
def test_percentile_interval_covers_the_true_rate_about_as_often_as_its_level(stratify):
    """Coverage of the 90 % percentile interval of a selection rate over 60 simulated
    samples (binomial standard error of the coverage 0.04)."""
    rng = np.random.default_rng(5)
    truth, covered = 0.3, 0
    for trial in range(60):
        y_pred = (rng.random(400) < truth).astype(int)
        frame = MetricFrame(
            metrics="selection_rate",
            y_true=np.zeros(400, dtype=int),
            y_pred=y_pred,
            sensitive_features=rng.choice(["a", "b"], 400),
            n_boot=100,
            ci=0.9,
            random_state=trial,
            stratify=stratify,
            ci_method="percentile",
        )
        low, high = frame.overall_ci[["lower", "upper"]]
        covered += low <= truth <= high
    assert 0.78 <= covered / 60 <= 0.99


def test_builtin_rates_are_nan_where_undefined():
    frame = MetricFrame(
        metrics=["true_positive_rate", "selection_rate"],
        y_true=[0, 0, 1, 1],
        y_pred=[1, 0, 1, 0],
        sensitive_features=["a", "a", "b", "b"],
    )
    assert np.isnan(frame.by_group.loc["a", "true_positive_rate"])
    assert frame.difference()["true_positive_rate"] == 0.0  # NaN skipped, one group left
    assert frame.overall["true_positive_rate"] == 0.5


def test_a_group_missing_from_a_replicate_is_left_out_like_fairlearn():
    rng = np.random.default_rng(2)
    n = 60
    groups = np.where(np.arange(n) < 2, "tiny", "big")  # "tiny" often missing
    y_true, y_pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    ours = MetricFrame(
        metrics={"acc": accuracy_score},
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
        n_boot=30,
        random_state=4,
        ci_quantiles=[0.025, 0.975],
    )
    theirs = _fairlearn(
        {"acc": accuracy_score},
        y_true,
        y_pred,
        groups,
        None,
        n_boot=30,
        ci_quantiles=[0.025, 0.975],
        random_state=4,
    )
    np.testing.assert_allclose(ours.by_group_ci[0].to_numpy(), theirs.by_group_ci[0].to_numpy())
    np.testing.assert_allclose(ours.difference_ci()[1], theirs.difference_ci()[1])


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(n_boot=0), ValueError, "n_boot"),
        (dict(n_boot=5, ci=95), ValueError, "ci must be"),
        (dict(metrics=3), TypeError, "metrics must be"),
        (dict(metrics="nope"), ValueError, "metric name"),
        (dict(metrics=[]), ValueError, "empty"),
        (
            dict(metrics={"m": lambda y, p: 1.0}, sample_weight=[1.0] * 4),
            TypeError,
            "sample_weight",
        ),
        (dict(n_boot=5, random_state="x"), TypeError, "random_state"),
        (dict(n_boot=5, ci_method="bca"), ValueError, "ci_method"),
        (dict(ci_quantiles=[0.1, 0.9]), ValueError, "needs n_boot"),
        (dict(n_boot=5, ci_quantiles=[0.1, 1.5]), ValueError, "ci_quantiles"),
        (dict(sample_params={"w": [1.0] * 3}), ValueError, "one value per row"),
        (dict(metrics={"a": "accuracy"}, sample_params={"b": {}}), ValueError, "unknown"),
        (dict(y_pred=[1, 0]), ValueError, "same length"),
    ],
)
def test_bad_inputs_raise_clear_errors(kwargs, error, message):
    arguments = dict(
        metrics="accuracy", y_true=[0, 1, 1, 0], y_pred=[0, 1, 0, 0], sensitive_features="aabb"
    )
    arguments["sensitive_features"] = list("aabb")
    arguments.update(kwargs)
    with pytest.raises(error, match=message) as raised:
        MetricFrame(**arguments)
    assert len(str(raised.value)) < 500


def test_bootstrap_intervals_need_n_boot():
    """Rates have exact intervals; any other metric's interval needs replicates."""
    frame = MetricFrame(
        metrics=f1_score, y_true=[0, 1, 1, 0], y_pred=[0, 1, 1, 1], sensitive_features=[0, 0, 1, 1]
    )
    with pytest.raises(AttributeError, match="n_boot"):
        _ = frame.overall_ci
    with pytest.raises(AttributeError, match="n_boot"):
        frame.bootstrap_distribution()
