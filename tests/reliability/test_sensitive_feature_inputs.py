"""A dict of sensitive features (fairlearn's ``{"sex": [...], "race": [...]}``, one column
per key) means the DataFrame of those columns wherever sensitive features are accepted:
the encoder, the metrics, the frame and every estimator; a bad dict is refused naming
the key."""

import inspect
import warnings
from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest
from _fast_params import fast_instance
from sklearn.linear_model import LogisticRegression

from fairest import metrics
from fairest.postprocessing import GroupThresholdClassifier
from fairest.utils import check_sensitive_features, encode_groups
from fairest.utils._validation import frame_of_mapping
from fairest.utils.discovery import all_estimators

N = 120


def _columns(n=N):
    rows = np.arange(n)
    return {
        "sex": np.where(rows % 2 == 0, "female", "male"),
        "race": np.where((rows // 2) % 3 == 0, "a", "b"),
    }


def _labels(seed=0, n=N):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, n), rng.integers(0, 2, n), rng.uniform(0.2, 2.0, n)


@pytest.mark.parametrize(
    "columns",
    [
        _columns(),
        {"sex": list(_columns()["sex"])},  # one key, a list
        {"age": np.arange(N) % 4, "member": np.arange(N) % 3 == 0},  # numbers, booleans
        {"sex": pd.Categorical(_columns()["sex"], categories=["male", "female"])},
        OrderedDict(_columns()),  # any Mapping
    ],
    ids=["two-str", "one-list", "numbers", "categorical", "ordered-dict"],
)
def test_dict_encodes_like_its_dataframe(columns):
    codes, groups = encode_groups(columns)
    expected_codes, expected_groups = encode_groups(pd.DataFrame(dict(columns)))
    np.testing.assert_array_equal(codes, expected_codes)
    assert list(groups) == list(expected_groups)
    codes, groups = check_sensitive_features(columns, N)
    np.testing.assert_array_equal(codes, expected_codes)
    pd.testing.assert_frame_equal(frame_of_mapping(columns), pd.DataFrame(dict(columns)))


@pytest.mark.parametrize(
    "metric",
    [
        metrics.demographic_parity_difference,
        metrics.demographic_parity_ratio,
        metrics.equalized_odds_difference,
        metrics.equal_opportunity_difference,
    ],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("weighted", [False, True])
def test_fairness_metrics_take_a_dict(metric, weighted):
    y_true, y_pred, weights = _labels()
    weights = weights if weighted else None
    columns = _columns()
    value = metric(y_true, y_pred, sensitive_features=columns, sample_weight=weights)
    expected = metric(
        y_true, y_pred, sensitive_features=pd.DataFrame(columns), sample_weight=weights
    )
    assert value == expected


def test_frame_of_a_dict_has_the_values_of_its_dataframe():
    y_true, y_pred, weights = _labels(1)
    columns = _columns()
    kwargs = dict(
        metrics={"selection": metrics.selection_rate, "tpr": "true_positive_rate"},
        y_true=y_true,
        y_pred=y_pred,
        sample_weight=weights,
    )
    ours = metrics.MetricFrame(sensitive_features=columns, **kwargs)
    expected = metrics.MetricFrame(sensitive_features=pd.DataFrame(columns), **kwargs)
    np.testing.assert_array_equal(ours.by_group.to_numpy(), expected.by_group.to_numpy())
    assert list(ours.by_group.index) == list(expected.by_group.index)
    pd.testing.assert_series_equal(ours.overall, expected.overall)
    assert ours.difference().equals(expected.difference())


def test_frame_of_a_dict_names_its_index_by_the_keys():
    """The index levels are the keys, as a DataFrame's are its columns (fairlearn)."""
    y_true, y_pred, _ = _labels(2)
    columns = _columns()
    ours = metrics.MetricFrame(
        metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=columns
    )
    assert list(ours.by_group.index.names) == ["sex", "race"]
    single = metrics.MetricFrame(
        metrics="selection_rate",
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features={"sex": columns["sex"]},
    )
    assert single.by_group.index.name == "sex"


ESTIMATORS = [
    cls
    for _, cls in all_estimators()
    if "sensitive_features" in inspect.signature(cls.fit).parameters
]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_every_estimator_fits_a_dict_like_its_dataframe(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    if cls.__name__.endswith("Regressor"):
        y = X[:, 0] + 0.1 * rng.normal(size=N)
    else:
        y = (X[:, 0] + 0.5 * rng.normal(size=N) > 0).astype(int)
    columns = _columns()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of the cheap settings
        ours = fast_instance(cls).fit(X, y, sensitive_features=columns)
        expected = fast_instance(cls).fit(X, y, sensitive_features=pd.DataFrame(columns))
    np.testing.assert_allclose(ours.predict(X), expected.predict(X))


@pytest.mark.filterwarnings("ignore:GroupThresholdClassifier has too few rows")
def test_group_thresholds_fit_and_predict_with_a_dict():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, 3))
    columns = _columns()
    y = (X[:, 0] + 0.5 * (columns["sex"] == "male") + rng.normal(size=N) > 0).astype(int)
    ours = GroupThresholdClassifier(LogisticRegression()).fit(X, y, sensitive_features=columns)
    expected = GroupThresholdClassifier(LogisticRegression()).fit(
        X, y, sensitive_features=pd.DataFrame(columns)
    )
    assert list(ours.groups_) == list(expected.groups_)
    np.testing.assert_array_equal(ours.thresholds_, expected.thresholds_)
    np.testing.assert_array_equal(
        ours.predict(X, sensitive_features=columns),
        expected.predict(X, sensitive_features=pd.DataFrame(columns)),
    )


@pytest.mark.parametrize(
    "columns, match",
    [
        (
            {"sex": ["f", "m", "f"], "race": ["a", "b"]},
            r"\['race'\] has 2 rows but .*\['sex'\] has 3",
        ),
        ({"sex": ["f", "m", "f"], "race": "a"}, r"\['race'\] must be a 1-D column.*scalar 'a'"),
        ({"sex": np.array([["f", "m"], ["f", "m"]])}, r"\['sex'\] must be a 1-D column.*\(2, 2\)"),
        ({"sex": pd.DataFrame({"a": [1, 2]})}, r"\['sex'\] must be a 1-D column"),
        ({"sex": [["f"], ["m", "f"]]}, r"\['sex'\] must be a 1-D column.*ragged"),
        ({"sex": {"nested": [1, 2]}}, r"\['sex'\] must be a 1-D column"),
        ({"sex": ["f", None, "m"]}, r"column 'sex' has missing values"),
        ({}, "no columns"),
    ],
    ids=["lengths", "scalar", "2-d", "dataframe", "ragged", "nested", "missing", "empty"],
)
def test_bad_dicts_are_refused_naming_the_key(columns, match):
    with pytest.raises(ValueError, match=match):
        encode_groups(columns)
    if columns:
        with pytest.raises(ValueError, match=match):
            metrics.demographic_parity_difference([0, 1, 1], [1, 1, 0], sensitive_features=columns)


def test_a_dict_of_the_wrong_length_names_the_reference():
    with pytest.raises(ValueError, match="sensitive_features has 3 rows but X has 4"):
        check_sensitive_features({"sex": ["f", "m", "f"]}, 4)


@pytest.mark.parametrize("make", ["threshold", "loss_gap"])
def test_cross_validated_paths_take_a_dict_like_its_frame(make):
    from sklearn.linear_model import LogisticRegression

    from fairest import GroupThresholdClassifier, LossGapConstrainedClassifier, fairness_path
    from fairest.datasets import make_grouped_classification

    X, y, g = make_grouped_classification(n_samples=400, n_groups=2, random_state=0)
    estimator = (
        GroupThresholdClassifier(LogisticRegression())
        if make == "threshold"
        else LossGapConstrainedClassifier(random_state=0)
    )
    paths = [
        fairness_path(estimator, X, y, sensitive_features=s, values=[0.05, 0.1], cv=3)
        for s in ({"g": g}, pd.DataFrame({"g": g}))
    ]
    pd.testing.assert_frame_equal(paths[0].to_frame(), paths[1].to_frame())
