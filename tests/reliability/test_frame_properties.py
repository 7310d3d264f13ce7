"""Invariants of MetricFrame, property-based: row order, group relabelling, control levels,
and the intervals' containment of their own estimates."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import confusion_matrix

from fairest.metrics import MetricFrame

pytestmark = pytest.mark.filterwarnings("ignore::fairest.metrics._intervals.IntervalWarning")

METRICS = {"selection": "selection_rate", "tpr": "true_positive_rate", "accuracy": "accuracy"}


@st.composite
def samples(draw):
    n = draw(st.integers(8, 60))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    groups = rng.choice(list("abcd")[: draw(st.integers(1, 4))], n)
    return rng.integers(0, 2, n), rng.integers(0, 2, n), groups, rng


FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(samples())
def test_row_order_changes_nothing(sample):
    y_true, y_pred, groups, rng = sample
    order = rng.permutation(len(y_true))
    frames = [
        MetricFrame(metrics=METRICS, y_true=y_true[o], y_pred=y_pred[o], sensitive_features=g)
        for o, g in ((slice(None), groups), (order, groups[order]))
    ]
    pd.testing.assert_frame_equal(frames[0].by_group, frames[1].by_group)
    pd.testing.assert_series_equal(frames[0].difference(), frames[1].difference())
    pd.testing.assert_frame_equal(frames[0].difference_ci(), frames[1].difference_ci())


@FAST
@given(samples())
def test_relabelling_groups_relabels_rows_only(sample):
    y_true, y_pred, groups, _ = sample
    renamed = {"a": "zeta", "b": "alpha", "c": "mu", "d": "beta"}
    frame = MetricFrame(metrics=METRICS, y_true=y_true, y_pred=y_pred, sensitive_features=groups)
    other = MetricFrame(
        metrics=METRICS,
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=np.array([renamed[g] for g in groups]),
    )
    relabelled = frame.by_group.rename(index=renamed).sort_index()
    pd.testing.assert_frame_equal(relabelled, other.by_group, check_names=False)
    pd.testing.assert_series_equal(frame.difference(), other.difference())
    pd.testing.assert_series_equal(frame.ratio("to_overall"), other.ratio("to_overall"))
    pd.testing.assert_frame_equal(frame.difference_ci(), other.difference_ci())


@FAST
@given(samples())
def test_intervals_contain_their_estimates(sample):
    y_true, y_pred, groups, _ = sample
    frame = MetricFrame(metrics=METRICS, y_true=y_true, y_pred=y_pred, sensitive_features=groups)
    for method in ("between_groups", "to_overall"):
        for kind in ("difference", "ratio"):
            value = getattr(frame, kind)(method)
            interval = getattr(frame, f"{kind}_ci")(method)
            defined = value.notna()
            assert (interval["lower"][defined] <= value[defined] + 1e-12).all()
            assert (value[defined] <= interval["upper"][defined] + 1e-12).all()
    low, high = frame.by_group_ci
    inside = (low <= frame.by_group + 1e-12) & (frame.by_group <= high + 1e-12)
    assert inside[frame.by_group.notna()].fillna(True).all().all()


@FAST
@given(samples())
def test_a_control_level_is_the_frame_of_its_rows(sample):
    y_true, y_pred, groups, rng = sample
    control = rng.choice(["x", "y"], len(y_true))
    frame = MetricFrame(
        metrics=METRICS,
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features={"g": groups},
        control_features={"c": control},
    )
    for level in np.unique(control):
        rows = control == level
        alone = MetricFrame(
            metrics=METRICS,
            y_true=y_true[rows],
            y_pred=y_pred[rows],
            sensitive_features={"g": groups[rows]},
        )
        pd.testing.assert_series_equal(
            frame.difference().loc[level], alone.difference(), check_names=False
        )
        pd.testing.assert_frame_equal(
            frame.by_group.xs(level, level="c"), alone.by_group, check_names=False
        )


def test_non_scalar_metrics_are_kept_and_coerced_like_fairlearn():
    fairlearn_metrics = pytest.importorskip("fairlearn.metrics")
    rng = np.random.default_rng(0)
    y_true, y_pred, groups = (
        rng.integers(0, 2, 50),
        rng.integers(0, 2, 50),
        rng.choice(list("ab"), 50),
    )
    kwargs = dict(y_true=y_true, y_pred=y_pred, sensitive_features=groups)
    ours = MetricFrame(metrics=confusion_matrix, **kwargs)
    theirs = fairlearn_metrics.MetricFrame(metrics=confusion_matrix, **kwargs)
    for mine, reference in zip(ours.by_group, theirs.by_group):
        np.testing.assert_array_equal(mine, reference)
    np.testing.assert_array_equal(ours.overall, theirs.overall)
    assert np.isnan(ours.difference()) and np.isnan(theirs.difference())
    with pytest.raises(ValueError, match="non-scalar"):
        ours.group_min(errors="raise")


def test_single_metric_gives_numbers_like_fairlearn():
    fairlearn_metrics = pytest.importorskip("fairlearn.metrics")
    rng = np.random.default_rng(1)
    kwargs = dict(
        y_true=rng.integers(0, 2, 80),
        y_pred=rng.integers(0, 2, 80),
        sensitive_features=rng.choice(list("abc"), 80),
        control_features=rng.choice(list("xy"), 80),
    )
    ours = MetricFrame(metrics=fairlearn_metrics.selection_rate, **kwargs)
    theirs = fairlearn_metrics.MetricFrame(metrics=fairlearn_metrics.selection_rate, **kwargs)
    for name in ("overall", "by_group"):
        pd.testing.assert_series_equal(getattr(ours, name), getattr(theirs, name))
    for name in ("difference", "ratio", "group_min", "group_max"):
        pd.testing.assert_series_equal(getattr(ours, name)(), getattr(theirs, name)())
    assert ours.control_levels == theirs.control_levels
    assert ours.sensitive_levels == theirs.sensitive_levels
    single = MetricFrame(
        metrics=fairlearn_metrics.selection_rate,
        **{k: v for k, v in kwargs.items() if k != "control_features"},
    )
    assert isinstance(single.difference(), float)
    assert (single.difference() == 0.1) in (True, False)  # a number, not a Series


def test_probabilities_are_not_read_as_labels():
    scores = np.linspace(0.05, 0.95, 20)
    kwargs = dict(
        y_true=np.r_[np.zeros(10), np.ones(10)], y_pred=scores, sensitive_features=[0, 1] * 10
    )
    with pytest.raises(ValueError, match="probabilities"):
        MetricFrame(metrics="selection_rate", **kwargs)
    fairlearn_metrics = pytest.importorskip("fairlearn.metrics")
    with pytest.warns(UserWarning, match="probabilities"):
        frame = MetricFrame(metrics=fairlearn_metrics.selection_rate, **kwargs)
    assert frame.overall == 0.0  # fairlearn's value, with the warning saying why
    assert MetricFrame(metrics="mean_prediction", **kwargs).overall == pytest.approx(0.5)


def test_sample_params_split_with_the_rows_like_fairlearn():
    fairlearn_metrics = pytest.importorskip("fairlearn.metrics")
    from sklearn.metrics import fbeta_score

    rng = np.random.default_rng(2)
    n = 90
    kwargs = dict(
        y_true=rng.integers(0, 2, n),
        y_pred=rng.integers(0, 2, n),
        sensitive_features=rng.choice(list("ab"), n),
    )
    params = {"f": {"sample_weight": rng.uniform(0.5, 2, n)}}
    metric = {
        "f": lambda y, p, sample_weight: fbeta_score(y, p, beta=2, sample_weight=sample_weight)
    }
    ours = MetricFrame(metrics=metric, sample_params=params, **kwargs)
    theirs = fairlearn_metrics.MetricFrame(metrics=metric, sample_params=params, **kwargs)
    pd.testing.assert_frame_equal(ours.by_group, theirs.by_group, check_names=False)
    np.testing.assert_allclose(ours.overall.to_numpy(), theirs.overall.to_numpy())
