"""fairest.fairness_path: every point equals the plain refit at its value."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import InvalidParameterError

from fairest import (
    ERMIClassifier,
    GroupThresholdClassifier,
    LossGapConstrainedClassifier,
    fairness_path,
)
from fairest.metrics import demographic_parity_difference, equalized_odds_difference
from fairest.model_selection import GroupStratifiedKFold
from fairest.paths import FairnessPath

# the small synthetic groups are too small for the tolerances swept: every point would say so
pytestmark = pytest.mark.filterwarnings("ignore:GroupThresholdClassifier has too few rows")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 600
    groups = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, 4)) + (groups == "a")[:, None] * [1.0, 0.5, 0.0, 0.0]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.6).astype(int)
    weight = rng.uniform(0.5, 2.0, size=n)
    return X[:450], y[:450], groups[:450], weight[:450], X[450:], y[450:], groups[450:]


def refit(estimator, param, value, X, y, groups, weight=None):
    """The reference: a plain clone().set_params().fit()."""
    fitted = clone(estimator).set_params(**{param: value})
    return fitted.fit(X, y, sensitive_features=groups, sample_weight=weight)


def test_ermi_path_points_equal_refits_to_solver_tolerance(data):
    X, y, groups, weight, X_val, y_val, groups_val = data
    values = [0.0, 1.0, 4.0, 16.0]
    path = fairness_path(
        ERMIClassifier(),
        X,
        y,
        sensitive_features=groups,
        values=values,
        sample_weight=weight,
        X_val=X_val,
        y_val=y_val,
        sensitive_features_val=groups_val,
    )
    assert path.strategy == "continuation" and path.param == "fairness_weight"
    assert path.unfairness == "demographic_parity_difference"
    for value, point in zip(values, path.estimators):
        reference = refit(ERMIClassifier(), "fairness_weight", value, X, y, groups, weight)
        assert point.fairness_weight == value
        # both stop at ||grad||_inf <= tol = 1e-8 (or no relative decrease left)
        np.testing.assert_allclose(point.coef_, reference.coef_, atol=1e-5)
        np.testing.assert_allclose(point.intercept_, reference.intercept_, atol=1e-5)
        np.testing.assert_allclose(point.objective_, reference.objective_, rtol=1e-10)
        np.testing.assert_allclose(point.W_, reference.W_, atol=1e-5)
        np.testing.assert_array_equal(point.predict(X_val), reference.predict(X_val))
    # the recorded scores are the fairest.metrics values of the points' predictions
    last = path.estimators[-1]
    expected = demographic_parity_difference(
        y, last.predict(X), sensitive_features=groups, sample_weight=weight
    )
    assert path.train_unfairness[-1] == pytest.approx(expected)
    assert path.val_accuracy[-1] == pytest.approx(np.mean(last.predict(X_val) == y_val))
    # the knob does what it says on this data: less unfair at 16 than at 0
    assert path.train_unfairness[-1] < 0.75 * path.train_unfairness[0]


def test_ermi_path_multiclass_equalized_odds_equals_refits(data):
    """Softmax (three classes, the intercept row's null direction) and conditional ERMI:
    unsorted weights, each point the refit's minimiser and objective to the tolerance."""
    X, y, groups, *_ = data
    y3 = y + (X[:, 1] > 0.8)
    estimator = ERMIClassifier(metric="equalized_odds")
    values = [8.0, 0.0, 2.0]
    path = fairness_path(estimator, X, y3, sensitive_features=groups, values=values)
    assert path.strategy == "continuation" and path.unfairness == "equalized_odds_difference"
    for value, point in zip(values, path.estimators):
        reference = refit(estimator, "fairness_weight", value, X, y3, groups)
        assert point.coef_.shape == (3, X.shape[1])
        np.testing.assert_allclose(point.coef_, reference.coef_, atol=1e-5)
        np.testing.assert_allclose(point.intercept_, reference.intercept_, atol=1e-5)
        np.testing.assert_allclose(point.objective_, reference.objective_, rtol=1e-10)
        np.testing.assert_allclose(point.W_, reference.W_, atol=1e-5)


@pytest.mark.parametrize(
    "params",
    [
        {"metric": "demographic_parity"},
        {"metric": "equalized_odds"},
        {"metric": "equal_opportunity", "randomized": True, "random_state": 0},
    ],
    ids=["dp", "eodds", "eopp-randomized"],
)
# tolerance 0 fits a near-constant classifier here: the path's point warns as its refit does
@pytest.mark.filterwarnings("ignore:GroupThresholdClassifier. the fitted thresholds give a near")
def test_threshold_path_points_equal_refits(data, params):
    X, y, groups, weight, X_val, y_val, groups_val = data
    estimator = GroupThresholdClassifier(LogisticRegression(), **params)
    values = [0.0, 0.02, 0.05, 0.2]
    path = fairness_path(estimator, X, y, sensitive_features=groups, values=values)
    assert path.strategy == "shared_scores"
    for value, point, unfairness in zip(values, path.estimators, path.train_unfairness):
        reference = refit(estimator, "tolerance", value, X, y, groups)
        np.testing.assert_array_equal(point.thresholds_, reference.thresholds_)
        assert point.train_unfairness_ == reference.train_unfairness_
        assert point.tolerance == value
        np.testing.assert_array_equal(
            point.predict(X_val, sensitive_features=groups_val),
            reference.predict(X_val, sensitive_features=groups_val),
        )
        if not params.get("randomized"):  # the metric of the hard train predictions
            assert unfairness == pytest.approx(reference.train_unfairness_, abs=1e-12)
    if params["metric"] == "equalized_odds":
        assert path.unfairness == equalized_odds_difference.__name__


def test_threshold_path_with_sample_weight(data):
    X, y, groups, weight, *_ = data
    estimator = GroupThresholdClassifier(LogisticRegression(), metric="demographic_parity")
    path = fairness_path(
        estimator, X, y, sensitive_features=groups, values=[0.01, 0.1], sample_weight=weight
    )
    for value, point in zip(path.values, path.estimators):
        reference = refit(estimator, "tolerance", value, X, y, groups, weight)
        np.testing.assert_array_equal(point.thresholds_, reference.thresholds_)
        assert point.train_unfairness_ <= value + 1e-9


def test_threshold_path_around_a_prefit_classifier(data):
    X, y, groups, *_ = data
    classifier = LogisticRegression(C=0.1).fit(X[:200], y[:200])
    estimator = GroupThresholdClassifier(classifier, prefit=True)
    path = fairness_path(estimator, X, y, sensitive_features=groups, values=[0.01, 0.1])
    for value, point in zip(path.values, path.estimators):
        reference = GroupThresholdClassifier(classifier, prefit=True, tolerance=value)
        reference.fit(X, y, sensitive_features=groups)
        assert point.estimator_ is classifier
        np.testing.assert_array_equal(point.thresholds_, reference.thresholds_)


def test_loss_gap_tolerance_path_gives_the_refits_models(data):
    X, y, groups, *_ = data
    estimator = LossGapConstrainedClassifier(hidden_layer_sizes=(), n_epochs=2, random_state=0)
    path = fairness_path(estimator, X, y, sensitive_features=groups, values=[0.02, 0.2])
    assert path.strategy == "vmap" and path.unfairness == "loss_gap"
    for value, point in zip(path.values, path.estimators):
        reference = refit(estimator, "tolerance", value, X, y, groups)
        np.testing.assert_allclose(  # vmapped float32 lanes: the refit to float rounding
            point.decision_function(X), reference.decision_function(X), rtol=0, atol=1e-6
        )
        # the path's loss gap is the constrained family's own train unfairness
        assert path.train_unfairness[list(path.values).index(value)] == pytest.approx(
            reference.train_unfairness_, rel=1e-4
        )


def test_any_other_parameter_falls_back_to_refits(data):
    X, y, groups, *_ = data
    path = fairness_path(
        LogisticRegression(), X, y, sensitive_features=groups, param="C", values=[0.01, 1.0]
    )
    assert path.strategy == "refit"
    for value, point in zip(path.values, path.estimators):
        reference = LogisticRegression(C=value).fit(X, y)
        np.testing.assert_allclose(point.coef_, reference.coef_)


def test_integer_parameter_values_stay_integers(data):
    X, y, groups, *_ = data
    path = fairness_path(
        LogisticRegression(), X, y, sensitive_features=groups, param="max_iter", values=[100, 300]
    )
    assert [point.max_iter for point in path.estimators] == [100, 300]


def test_to_frame_and_columns(data):
    X, y, groups, _, X_val, y_val, groups_val = data
    estimator = GroupThresholdClassifier(LogisticRegression())
    train_only = fairness_path(estimator, X, y, sensitive_features=groups, values=[0.05, 0.1])
    assert isinstance(train_only, FairnessPath)
    frame = train_only.to_frame()
    assert list(frame.columns) == [
        "method",
        "tolerance",
        "train_accuracy",
        "train_unfairness",
        "accuracy",
        "unfairness",
    ]
    np.testing.assert_array_equal(frame["accuracy"], frame["train_accuracy"])
    with_val = fairness_path(
        estimator,
        X,
        y,
        sensitive_features=groups,
        values=[0.05, 0.1],
        X_val=X_val,
        y_val=y_val,
        sensitive_features_val=groups_val,
    ).to_frame()
    np.testing.assert_array_equal(with_val["unfairness"], with_val["val_unfairness"])
    assert (with_val["method"] == "GroupThresholdClassifier").all()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"param": "fairness"}, ValueError, "param='fairness' is not a parameter"),
        ({"values": []}, ValueError, "non-empty 1-D"),
        ({"values": [[0.1, 0.2]]}, ValueError, "non-empty 1-D"),
        ({"values": ["low"]}, ValueError, "values must be numbers"),
        ({"values": [0.1, np.nan]}, ValueError, "finite"),
        ({"values": [-0.1]}, InvalidParameterError, "tolerance"),
        ({"X_val": "given"}, ValueError, "X_val, y_val and sensitive_features_val together"),
    ],
)
def test_bad_inputs_raise_clear_errors(data, kwargs, error, match):
    X, y, groups, *_ = data
    arguments = {"values": [0.1], **kwargs}
    if "X_val" in arguments:
        arguments["X_val"] = X
    with pytest.raises(error, match=match) as info:
        fairness_path(
            GroupThresholdClassifier(LogisticRegression()),
            X,
            y,
            sensitive_features=groups,
            **arguments,
        )
    assert len(str(info.value)) < 500


def test_no_default_parameter_and_not_an_estimator(data):
    X, y, groups, *_ = data
    with pytest.raises(ValueError, match="no default path parameter for LogisticRegression"):
        fairness_path(LogisticRegression(), X, y, sensitive_features=groups, values=[1.0])
    with pytest.raises(TypeError, match="scikit-learn estimator"):
        fairness_path(object(), X, y, sensitive_features=groups, values=[1.0])


def test_path_does_not_touch_the_given_estimator(data):
    X, y, groups, *_ = data
    estimator = GroupThresholdClassifier(LogisticRegression(), tolerance=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fairness_path(estimator, X, y, sensitive_features=groups, values=[0.02, 0.1])
    assert estimator.tolerance == 0.3 and not hasattr(estimator, "estimator_")


def test_stacked_parity_scores_equal_the_metrics():
    """The paths' vectorised scorer (all points at once) against sklearn's accuracy_score
    and fairest's demographic_parity_difference per point: weights (zeros included),
    three groups, string labels; a group without weight is left to the metric (which
    refuses it)."""
    from sklearn.metrics import accuracy_score

    from fairest.paths import _group_codes, _stacked_parity_scores

    rng = np.random.default_rng(5)
    n = 300
    groups = rng.choice(["a", "b", "c"], size=n)
    y = rng.choice(["no", "yes"], size=n)
    weight = rng.uniform(0.0, 2.0, size=n) * (rng.uniform(size=n) > 0.2)
    predictions = [rng.choice(["no", "yes"], size=n, p=[p, 1 - p]) for p in (0.2, 0.5, 0.9)]
    for w in (None, weight):
        scores = _stacked_parity_scores(predictions, "yes", y, _group_codes(groups), w)
        for (accuracy, unfairness), y_pred in zip(scores, predictions):
            assert accuracy == pytest.approx(accuracy_score(y, y_pred, sample_weight=w), abs=1e-15)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = demographic_parity_difference(
                    (y == "yes").astype(int),
                    (y_pred == "yes").astype(int),
                    sensitive_features=groups,
                    sample_weight=w,
                )
            assert unfairness == pytest.approx(expected, abs=1e-15)
    no_weight_in_c = np.where(groups == "c", 0.0, weight)
    assert (
        _stacked_parity_scores(predictions, "yes", y, _group_codes(groups), no_weight_in_c) is None
    )


def test_cross_validated_path_equals_refits_on_every_fold(data):
    """``cv=``: every (value, fold) model is the refit on the fold's training rows (groups
    and weights split along), scored on its training rows (weighted) and test rows."""
    from sklearn.model_selection import StratifiedKFold

    X, y, groups, weight, *_ = data
    estimator = GroupThresholdClassifier(LogisticRegression(), metric="equalized_odds")
    values = [0.02, 0.1, 0.3]
    splits = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    path = fairness_path(
        estimator,
        X,
        y,
        sensitive_features=groups,
        values=values,
        sample_weight=weight,
        cv=iter(splits),  # any iterable of (train, test) pairs
    )
    assert path.n_splits == 3 and path.strategy == "shared_scores"
    assert len(path.estimators) == 3 and all(len(row) == 3 for row in path.estimators)
    for i, value in enumerate(values):
        for j, (train, test) in enumerate(splits):
            model = refit(
                estimator, "tolerance", value, X[train], y[train], groups[train], weight[train]
            )
            np.testing.assert_allclose(
                path.estimators[i][j].thresholds_, model.thresholds_, atol=1e-12
            )
            predicted = model.predict(X[test], sensitive_features=groups[test])
            assert path.fold_val_accuracy[i, j] == pytest.approx(np.mean(predicted == y[test]))
            gap = equalized_odds_difference(y[test], predicted, sensitive_features=groups[test])
            assert path.fold_val_unfairness[i, j] == pytest.approx(gap)
            trained = model.predict(X[train], sensitive_features=groups[train])
            accuracy = np.average(trained == y[train], weights=weight[train])
            assert path.fold_train_accuracy[i, j] == pytest.approx(accuracy)
    np.testing.assert_allclose(path.val_unfairness, path.fold_val_unfairness.mean(axis=1))
    frame = path.to_frame()
    for column in ("train_accuracy_std", "train_unfairness_std", "val_accuracy_std"):
        assert column in frame
    np.testing.assert_allclose(frame["unfairness"], path.val_unfairness)
    np.testing.assert_allclose(frame["val_unfairness_std"], path.fold_val_unfairness.std(axis=1))


def test_cv_int_is_stratified_and_cv_with_validation_data_is_refused(data):
    X, y, groups, _, X_val, y_val, groups_val = data
    estimator = GroupThresholdClassifier(LogisticRegression())
    path = fairness_path(estimator, X, y, sensitive_features=groups, values=[0.05], cv=4)
    train, test = next(GroupStratifiedKFold(4).split(X, y, sensitive_features=groups))
    model = refit(estimator, "tolerance", 0.05, X[train], y[train], groups[train])
    assert path.fold_val_accuracy.shape == (1, 4)
    assert path.fold_val_accuracy[0, 0] == pytest.approx(
        model.score(X[test], y[test], sensitive_features=groups[test])
    )
    with pytest.raises(ValueError, match="cv and X_val") as info:
        fairness_path(
            estimator,
            X,
            y,
            sensitive_features=groups,
            values=[0.05],
            cv=3,
            X_val=X_val,
            y_val=y_val,
            sensitive_features_val=groups_val,
        )
    assert len(str(info.value)) < 500


def _small_group_data(n_small):
    """300 rows: group "a" and a small group "b" of ``n_small`` rows."""
    rng = np.random.default_rng(5)
    groups = np.array(["a"] * (300 - n_small) + ["b"] * n_small)
    X = rng.normal(size=(300, 2)) + (groups == "b")[:, None]
    y = (X[:, 0] + rng.normal(size=300) > 0.5).astype(int)
    return X, y, groups


def test_cv_int_keeps_a_small_group_in_every_fold():
    """A group of 6 rows in 300 with ``cv=3``: plain label-stratified folds left all of it
    in one test fold and the thresholds' predict failed on an unseen group; the folds are
    now stratified on groups and labels, every fold holds the group."""
    X, y, groups = _small_group_data(6)
    estimator = GroupThresholdClassifier(LogisticRegression())
    path = fairness_path(estimator, X, y, sensitive_features=groups, values=[0.0, 0.2], cv=3)
    assert np.all(np.isfinite(path.fold_val_unfairness))
    for row in path.estimators:
        assert all(list(point.groups_) == ["a", "b"] for point in row)
    with pytest.warns(UserWarning, match=r"the \(label, group\) cell \(\d, 'b'\) has only"):
        folds = list(GroupStratifiedKFold(3).split(X, y, sensitive_features=groups))
    for train, test in folds:
        assert set(groups[test]) == set(groups[train]) == {"a", "b"}
        assert set(y[test]) == set(y[train]) == {0, 1}


def test_cv_int_with_sensitive_column_names_of_a_frame():
    pd = pytest.importorskip("pandas")
    X, y, groups = _small_group_data(6)
    frame = pd.DataFrame(X, columns=["x0", "x1"]).assign(group=(groups == "b").astype(int))
    estimator = LossGapConstrainedClassifier((), n_epochs=1, random_state=0)
    path = fairness_path(estimator, frame, y, sensitive_features="group", values=[0.1], cv=3)
    assert path.n_splits == 3 and np.all(np.isfinite(path.fold_val_unfairness))
    assert all(list(point.groups_) == [0, 1] for point in path.estimators[0])


@pytest.mark.parametrize(
    "n_small, cv, match",
    [
        (
            2,
            3,
            r"cv=3: group 'b' \(2 rows\) is too small for 3 folds: .*\(3 rows at least\): merge",
        ),
        (1, 2, r"cv=2: group 'b' \(1 row\) is too small for 2 folds: .*: merge"),
        # 2 folds of 3 rows leave one training row (a per-group fit needs two); 3 folds work
        (3, 2, r"cv=2: group 'b' \(3 rows\) .*training rows two \(4 rows at least\): use cv=3,"),
    ],
)
def test_cv_int_refuses_a_group_smaller_than_the_folds_up_front(n_small, cv, match):
    X, y, groups = _small_group_data(n_small)
    with pytest.raises(ValueError, match=match) as info:
        fairness_path(
            GroupThresholdClassifier(LogisticRegression()),
            X,
            y,
            sensitive_features=groups,
            values=[0.0],
            cv=cv,
        )
    assert "use cv=1" not in str(info.value) and len(str(info.value)) < 500
    if n_small < 3:
        assert "use cv=" not in str(info.value)


def test_cv_int_refuses_a_label_smaller_than_the_folds():
    X, y, groups = _small_group_data(60)
    y = y.copy()
    y[:] = 0
    y[[0, 150]] = 1
    with pytest.raises(ValueError, match=r"cv=3: label 1 \(2 rows\) is too small .*use cv=2"):
        fairness_path(ERMIClassifier(), X, y, sensitive_features=groups, values=[0.0], cv=3)


def test_a_class_named_like_a_fairest_estimator_gets_no_fairest_strategy():
    """Dispatch is on fairest's own classes: a user class of the same name is refitted
    and needs ``param``."""
    from sklearn.linear_model import LogisticRegression as Base

    class GroupThresholdClassifier(Base):  # the name of a fairest class, not its type
        pass

    X, y, groups = _small_group_data(60)
    with pytest.raises(ValueError, match="no default path parameter"):
        fairness_path(GroupThresholdClassifier(), X, y, sensitive_features=groups, values=[1.0])
    path = fairness_path(
        GroupThresholdClassifier(), X, y, sensitive_features=groups, param="C", values=[1.0]
    )
    assert path.strategy == "refit"


def test_the_path_protocol_is_a_class_attribute_not_a_class_name():
    """A class declares its knob and strategy in ``_fairness_path``; the name of the class
    plays no part (a subclass of a fairest estimator keeps its fast strategy; a user class
    declaring a knob gets it as the default ``param``)."""
    from sklearn.linear_model import LogisticRegression as Base

    class Declared(Base):
        _fairness_path = ("C", "refit")

    class Renamed(GroupThresholdClassifier):
        pass

    X, y, groups = _small_group_data(60)
    path = fairness_path(Declared(), X, y, sensitive_features=groups, values=[0.5, 1.0])
    assert path.param == "C" and path.strategy == "refit"
    path = fairness_path(
        Renamed(LogisticRegression()), X, y, sensitive_features=groups, values=[0.1, 0.5]
    )
    assert path.param == "tolerance" and path.strategy == "shared_scores"

    class Unknown(Base):
        _fairness_path = ("C", "warp")

    with pytest.raises(ValueError, match="strategy 'warp'.*one of"):
        fairness_path(Unknown(), X, y, sensitive_features=groups, values=[1.0])


def test_path_metric_by_catalogue_name(data):
    """``metric=`` scores the points by any catalogue metric: labels through
    ``predict``, scores through ``decision_function``; the estimator's own metric
    otherwise."""
    from fairest.metrics import demographic_parity_deviation, equal_opportunity_difference

    X, y, groups, *_ = data
    estimator = GroupThresholdClassifier(LogisticRegression(), metric="equalized_odds")
    own = fairness_path(estimator, X, y, sensitive_features=groups, values=[0.1, 0.3])
    assert own.unfairness == "equalized_odds_difference"
    path = fairness_path(
        estimator,
        X,
        y,
        sensitive_features=groups,
        values=[0.1, 0.3],
        metric="equal_opportunity_difference",
    )
    assert path.unfairness == "equal_opportunity_difference"
    for point, value in zip(path.estimators, path.train_unfairness):
        predicted = point.predict(X, sensitive_features=groups)
        expected = equal_opportunity_difference(y, predicted, sensitive_features=groups)
        assert value == pytest.approx(expected)
    lr = fairness_path(
        LogisticRegression(),
        X,
        y,
        sensitive_features=groups,
        param="C",
        values=[0.1, 1.0],
        metric="demographic_parity_deviation",
    )
    for point, value in zip(lr.estimators, lr.train_unfairness):
        scores = point.decision_function(X)
        assert value == pytest.approx(
            demographic_parity_deviation(y, scores, sensitive_features=groups)
        )
    with pytest.raises(ValueError, match="unknown fairness metric 'nope'"):
        fairness_path(estimator, X, y, sensitive_features=groups, values=[0.1], metric="nope")
