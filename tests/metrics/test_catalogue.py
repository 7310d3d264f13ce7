"""The metric catalogue is the one place a fairness metric is known by name.

A metric registered there (here a made-up difference of false negative rates) is usable
by name in a MetricFrame, a scorer, ``fairness_path``, the certified bounds and the
post-processor; every catalogue name that fairlearn defines gives fairlearn's value.
"""

import numpy as np
import pytest
from fairlearn import metrics as fairlearn_metrics
from sklearn import config_context
from sklearn.linear_model import LogisticRegression

from fairest import fairness_path
from fairest.certified import certify_fairness, fairness_interval
from fairest.metrics import (
    FairnessMetric,
    MetricFrame,
    catalogue,
    equal_opportunity_difference,
    get_metric,
    rate_metric,
    register_metric,
    unregister_metric,
)
from fairest.model_selection import make_fairness_scorer
from fairest.postprocessing import GroupThresholdClassifier

NEW = "false_negative_rate_gap"


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n = 3000
    groups = rng.choice(["a", "b", "c"], size=n)
    X = rng.normal(size=(n, 3)) + (groups == "a")[:, None] * 0.7
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0.4).astype(int)
    y_pred = (X[:, 0] + rng.normal(size=n) > 0.3).astype(int)
    return X, y, y_pred, groups


@pytest.fixture
def fnr_gap():
    record = register_metric(rate_metric(NEW, ["false_negative_rate"]))
    yield record
    unregister_metric(NEW)


def _fnr_by_hand(y, y_pred, groups):
    rates = [np.mean(y_pred[(groups == g) & (y == 1)] == 0) for g in np.unique(groups)]
    return max(rates) - min(rates)


def test_a_registered_metric_is_usable_everywhere_by_name(data, fnr_gap):
    X, y, y_pred, groups = data
    expected = _fnr_by_hand(y, y_pred, groups)
    assert fnr_gap(y, y_pred, sensitive_features=groups) == pytest.approx(expected)
    assert get_metric(NEW) is fnr_gap and NEW in catalogue()

    # MetricFrame: the column holds the metric's rate per group, difference() the metric
    frame = MetricFrame(metrics=NEW, y_true=y, y_pred=y_pred, sensitive_features=groups)
    assert float(frame.difference()) == pytest.approx(expected)
    certified = frame.difference_certified()
    assert certified.loc[NEW, "certified_metric"] == NEW
    assert certified.loc[NEW, "lower"] <= expected <= certified.loc[NEW, "upper"]

    # a scorer (model_selection's make-scorer path), negated as scikit-learn wants
    model = LogisticRegression().fit(X, y)
    scorer = make_fairness_scorer(NEW)
    with config_context(enable_metadata_routing=True):
        value = scorer(model, X, y, sensitive_features=groups)
    assert value == pytest.approx(-_fnr_by_hand(y, model.predict(X), groups))

    # certified bounds: an interval and a certificate of the new metric
    interval = fairness_interval(NEW, y, y_pred, sensitive_features=groups, delta=0.05)
    assert interval.lower <= expected <= interval.upper
    assert interval.rate_names == ("fnr",)
    certificate = certify_fairness(
        model, X, y, sensitive_features=groups, constraints=[(NEW, 0.9)], delta=0.05
    )
    assert certificate.constraints[0].metric == NEW
    assert certificate.constraints[0].estimate == pytest.approx(
        _fnr_by_hand(y, model.predict(X), groups)
    )

    # the post-processor: a difference of false negative rates moves with the TPRs
    post = GroupThresholdClassifier(LogisticRegression(), metric=NEW, tolerance=0.1)
    post.fit(X, y, sensitive_features=groups)
    achieved = _fnr_by_hand(y, post.predict(X, sensitive_features=groups), groups)
    assert post.train_unfairness_ == pytest.approx(achieved)
    assert achieved <= 0.1 + 1e-9

    # fairness_path: by name, and as the post-processor's own metric
    path = fairness_path(
        GroupThresholdClassifier(LogisticRegression()),
        X,
        y,
        sensitive_features=groups,
        values=[0.1, 0.3],
        metric=NEW,
    )
    assert path.unfairness == NEW
    for point, value in zip(path.estimators, path.train_unfairness):
        predicted = point.predict(X, sensitive_features=groups)
        assert value == pytest.approx(_fnr_by_hand(y, predicted, groups))
    own = fairness_path(post, X, y, sensitive_features=groups, values=[0.1, 0.3])
    assert own.unfairness == NEW
    assert np.all(own.train_unfairness <= own.values + 1e-9)


def test_an_unregistered_name_is_refused_with_the_known_names(data):
    X, y, y_pred, groups = data
    with pytest.raises(ValueError, match="the catalogue knows .*demographic_parity_difference"):
        get_metric(NEW)
    with pytest.raises(ValueError, match="unknown fairness metric"):
        make_fairness_scorer(NEW)
    with pytest.raises(ValueError, match="a metric name must be one of"):
        MetricFrame(metrics=NEW, y_true=y, y_pred=y_pred, sensitive_features=groups)
    with pytest.raises(ValueError, match="metric must be one of"):
        fairness_interval(NEW, y, y_pred, sensitive_features=groups)
    with pytest.raises(ValueError, match="cannot take metric="):
        GroupThresholdClassifier(LogisticRegression(), metric=NEW).fit(
            X, y, sensitive_features=groups
        )


def test_the_post_processor_refuses_kinds_it_cannot_hold(data):
    """Thresholds hold differences of label rates they move; a ratio, a metric of scores
    or a regression metric is refused at fit, with the metrics it takes."""
    X, y, _, groups = data
    mean_gap = register_metric(
        rate_metric("mean_prediction_gap", ["mean_prediction"], kinds=("regression",))
    )
    try:
        for name in ("demographic_parity_ratio", "demographic_parity_deviation", mean_gap.name):
            clf = GroupThresholdClassifier(LogisticRegression(), metric=name)
            with pytest.raises(ValueError, match=f"cannot take metric='{name}'") as error:
                clf.fit(X, y, sensitive_features=groups)
            assert "equalized_odds_difference" in str(error.value)
    finally:
        unregister_metric(mean_gap.name)


def test_a_metric_of_several_rates_in_a_frame_names_its_rates(data):
    _, y, y_pred, groups = data
    with pytest.raises(ValueError, match="true_positive_rate.*false_positive_rate"):
        MetricFrame(
            metrics="equalized_odds_difference", y_true=y, y_pred=y_pred, sensitive_features=groups
        )


def test_registration_refuses_a_taken_name_and_bad_records():
    with pytest.raises(ValueError, match="replace=True"):
        register_metric(rate_metric("demographic_parity_difference", ["selection_rate"]))
    with pytest.raises(TypeError, match="FairnessMetric"):
        register_metric(equal_opportunity_difference)
    with pytest.raises(ValueError, match="kinds"):
        FairnessMetric("x", equal_opportunity_difference, "", ("hard",))
    with pytest.raises(ValueError, match="rates and aggregate together"):
        FairnessMetric("x", equal_opportunity_difference, "", ("labels",), aggregate="ratio")
    with pytest.raises(ValueError, match="names of built-in rates"):
        rate_metric("x", ["no_such_rate"])


FAIRLEARN_NAMES = [name for name, record in catalogue().items() if record.fairlearn]


def test_fairlearn_defines_the_names_flagged_as_fairlearns():
    assert FAIRLEARN_NAMES == [
        "demographic_parity_difference",
        "demographic_parity_ratio",
        "equal_opportunity_difference",
        "equal_opportunity_ratio",
        "equalized_odds_difference",
        "equalized_odds_ratio",
    ]
    for name, record in catalogue().items():
        assert record.fairlearn == hasattr(fairlearn_metrics, name), name


@pytest.mark.parametrize("name", FAIRLEARN_NAMES)
@pytest.mark.parametrize("method", ["between_groups", "to_overall"])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_fairlearn_name_gives_fairlearns_value(name, method, weighted, data):
    _, y, y_pred, groups = data
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=y.size) if weighted else None
    ours = get_metric(name)(
        y, y_pred, sensitive_features=groups, method=method, sample_weight=weights
    )
    theirs = getattr(fairlearn_metrics, name)(
        y, y_pred, sensitive_features=groups, method=method, sample_weight=weights
    )
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", FAIRLEARN_NAMES)
def test_rate_metric_rebuilds_every_fairlearn_comparison(name, data):
    """The generic function of a comparison of rates gives the hand-written one's value:
    the record's rates and aggregate are what the metric is."""
    _, y, y_pred, groups = data
    record = get_metric(name)
    rebuilt = rate_metric("rebuilt", record.rates, aggregate=record.aggregate)
    for method in ("between_groups", "to_overall"):
        expected = record(y, y_pred, sensitive_features=groups, method=method)
        assert rebuilt(y, y_pred, sensitive_features=groups, method=method) == pytest.approx(
            expected, rel=1e-12, abs=1e-12
        )


def test_rate_differences_match_fairlearns_frame(data):
    """The 0-1 loss gap and a difference of false negative rates, against fairlearn's
    MetricFrame of scikit-learn's / fairlearn's per-group metrics."""
    from sklearn.metrics import zero_one_loss

    _, y, y_pred, groups = data
    for name, function in (
        ("zero_one_loss_gap", zero_one_loss),
        (NEW, fairlearn_metrics.false_negative_rate),
    ):
        record = (
            get_metric(name) if name in catalogue() else rate_metric(name, ["false_negative_rate"])
        )
        reference = fairlearn_metrics.MetricFrame(
            metrics=function, y_true=y, y_pred=y_pred, sensitive_features=groups
        ).difference()
        assert record(y, y_pred, sensitive_features=groups) == pytest.approx(reference)


def test_surrogates_are_referenced_lazily():
    """Importing the catalogue imports no JAX; a record names its surrogate."""
    import subprocess
    import sys

    code = (
        "import sys; from fairest.metrics import catalogue; "
        "c = catalogue(); assert c['equal_opportunity_range'].surrogate; "
        "print('jax' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    smooth = catalogue()["equal_opportunity_range"].smooth
    from fairest.metrics import smooth_equal_opportunity

    assert smooth is smooth_equal_opportunity
    assert catalogue()["demographic_parity_difference"].smooth is None


def test_ermi_multiclass_metrics_have_their_own_names():
    """ERMI's multi-class parity (the paper's pairwise maximum over classes) is not
    fairlearn's binary demographic parity difference: it is its own catalogue record,
    whose exact function is fairest.metrics.demographic_parity_violation."""
    from fairest import metrics

    rng = np.random.default_rng(0)
    y, pred, g = rng.integers(0, 3, 300), rng.integers(0, 3, 300), rng.integers(0, 4, 300)
    for name in ("demographic_parity_violation", "equalized_odds_violation", "ermi"):
        record = get_metric(name)
        assert "labels" in record.kinds and record.rates == ()
        assert record(y, pred, sensitive_features=g) == getattr(metrics, name)(
            y, pred, sensitive_features=g
        )
    assert get_metric("demographic_parity_violation").meaning.startswith("ERMI")


def test_exposure_metrics_are_catalogue_records():
    from fairest.selection import exposure_difference, exposure_ratio

    rng = np.random.default_rng(1)
    scores, g = rng.normal(size=50), rng.integers(0, 3, 50)
    assert get_metric("exposure_difference")(None, scores, sensitive_features=g) == (
        exposure_difference(None, scores, sensitive_features=g)
    )
    assert get_metric("exposure_ratio")(None, scores, sensitive_features=g) == (
        exposure_ratio(None, scores, sensitive_features=g)
    )
