"""Common tests over every public estimator, discovered (never a hand-kept list)."""

import inspect
import pickle

import numpy as np
import pandas as pd
import polars as pl
import pytest
from _fast_params import fast_instance
from sklearn import config_context
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from fairest.utils.discovery import all_estimators

ALL_ESTIMATORS = [cls for _, cls in all_estimators()]
# Fairness-aware estimators: their fit takes sensitive_features (transformers do not).
ESTIMATORS = [
    cls for cls in ALL_ESTIMATORS if "sensitive_features" in inspect.signature(cls.fit).parameters
]
IDS = [cls.__name__ for cls in ESTIMATORS]


def test_discovery_finds_every_exported_estimator():
    from sklearn.base import BaseEstimator

    import fairest

    exported = {  # classes that are estimators (FairnessMonitor, a stream monitor, is not)
        name
        for name in fairest.__all__
        if isinstance(getattr(fairest, name), type)
        and issubclass(getattr(fairest, name), BaseEstimator)
    }
    assert exported <= {cls.__name__ for cls in ALL_ESTIMATORS}
    assert {"GroupWeightedClassifier", "GroupWeightedRegressor"} <= set(IDS)


EXPECTED_FAILED_CHECKS = {
    "GroupInteractionFeatures": {
        "check_fit_idempotent": (
            "transform refuses group codes unseen in fit (as OneHotEncoder with "
            "handle_unknown='error'); the check transforms fresh continuous values"
        ),
    },
    "CertifiedFairClassifier": {
        "check_sample_weight_equivalence_on_dense_data": (
            "the candidate / safety split is over rows: a repeated row can land in both "
            "parts, a weighted row in one, so the candidate fits differ (the weights go to "
            "the candidate fit only; the safety test counts rows)"
        ),
        "check_sample_weight_equivalence_on_sparse_data": "as on dense data (same split)",
    },
    "PartialParityClassifier": {
        "check_sample_weight_equivalence_on_dense_data": (
            "a fixed budget of switching-subgradient steps is not bitwise invariant to "
            "reordered sums: weighted and repeated data agree to ~4e-7 relative, the check "
            "asks for 1e-7"
        ),
        "check_sample_weight_equivalence_on_sparse_data": "as on dense data (same sums)",
    },
    "PartialParityPenaltyClassifier": {
        "check_sample_weight_equivalence_on_dense_data": (
            "a non-convex objective minimised by float32 L-BFGS passes: the paths on "
            "weighted and repeated data differ by rounding and may end at different "
            "stationary points; the weights' meaning is checked on the objective "
            "(tests/partial: test_lbfgs_integer_weights_equal_repeated_rows)"
        ),
        "check_sample_weight_equivalence_on_sparse_data": "as on dense data (same sums)",
    },
    "LossGapConstrainedClassifier": {
        "check_sample_weight_equivalence_on_dense_data": (
            "uniform minibatch draws over the rows: repeated rows change the permutations "
            "and minibatches, so weights equal repetitions in expectation only (exactly in "
            "full-batch mode, see tests/constrained)"
        ),
        "check_sample_weight_equivalence_on_sparse_data": "as on dense data (same draws)",
    },
    "PrunedFairClassifier": {
        "check_sample_weight_equivalence_on_dense_data": (
            "minibatch SGD over the rows: repeating rows changes the number of rows, so the "
            "epochs' permutations and minibatches; weights equal repetitions in expectation "
            "only"
        ),
        "check_sample_weight_equivalence_on_sparse_data": "as on dense data (same draws)",
    },
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(
    [fast_instance(cls) for cls in ALL_ESTIMATORS], expected_failed_checks=_expected_failed_checks
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _data(estimator, n=240, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.choice(["f", "m", "x"], size=n, p=[0.4, 0.4, 0.2])
    X = rng.normal(size=(n, 4)) + (groups == "f")[:, None] * 0.5
    signal = X @ np.array([1.0, -0.5, 0.25, 0.0]) + rng.normal(scale=0.5, size=n)
    if is_classifier(estimator):
        y = np.where(signal > 0.1, "yes", "no")  # string labels
    else:
        y = signal
    return X, y, groups


def _grid_parameter(estimator):
    for name in ("tolerance", "fairness_weight", "alpha"):
        if name in estimator.get_params():
            value = estimator.get_params()[name]
            if isinstance(value, float):
                return name, [value, value * 2]
    pytest.skip("no continuous hyper-parameter to search over")


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
@pytest.mark.parametrize("routing", [True, False], ids=["routing", "legacy"])
@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_sensitive_features_through_pipeline_and_search(cls, routing):
    estimator = fast_instance(cls)
    X, y, groups = _data(estimator)
    with config_context(enable_metadata_routing=routing):
        pipe = make_pipeline(StandardScaler(), clone(estimator))
        step = pipe.steps[-1][0]
        fit_params = (
            {"sensitive_features": groups} if routing else {f"{step}__sensitive_features": groups}
        )
        pipe.fit(X, y, **fit_params)
        assert len(pipe[-1].groups_) == 3
        name, values = _grid_parameter(estimator)
        search = GridSearchCV(clone(estimator), {name: values}, cv=3)
        search.fit(X, y, sensitive_features=groups)
        assert len(search.cv_results_["params"]) == 2
        result = cross_validate(clone(estimator), X, y, cv=3, params={"sensitive_features": groups})
        assert np.all(np.isfinite(result["test_score"]))


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_pickle_clone_and_group_blind_predict(cls):
    estimator = fast_instance(cls)
    X, y, groups = _data(estimator)
    fitted = clone(estimator).fit(X, y, sensitive_features=groups)
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))
    for attribute in ("coef_", "intercept_", "groups_"):
        if hasattr(fitted, attribute):
            assert isinstance(getattr(fitted, attribute), (np.ndarray, float, np.floating))
    refit = clone(fitted).fit(X, y, sensitive_features=groups)  # deterministic
    np.testing.assert_array_equal(refit.predict(X), fitted.predict(X))
    if is_classifier(estimator):
        assert set(np.unique(fitted.predict(X))) <= {"no", "yes"}


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
@pytest.mark.parametrize("frame", ["pandas", "polars"])
@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_dataframe_input(cls, frame):
    estimator = fast_instance(cls)
    X, y, groups = _data(estimator)
    columns = [f"feature_{j}" for j in range(X.shape[1])]
    if frame == "pandas":
        X_frame, s_frame = pd.DataFrame(X, columns=columns), pd.Series(groups, name="sex")
    else:
        X_frame, s_frame = pl.DataFrame(X, schema=columns), pl.Series("sex", groups)
    fitted = clone(estimator).fit(X_frame, y, sensitive_features=s_frame)
    np.testing.assert_array_equal(fitted.feature_names_in_, columns)
    reference = clone(estimator).fit(X, y, sensitive_features=groups)
    np.testing.assert_allclose(
        _scores(fitted, X_frame), _scores(reference, X), rtol=1e-8, atol=1e-10
    )


def _scores(estimator, X):
    method = getattr(estimator, "decision_function", None) or estimator.predict
    return method(X)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_bad_sensitive_features_raise(cls):
    estimator = fast_instance(cls)
    X, y, groups = _data(estimator)
    with pytest.raises(ValueError, match="same length"):
        clone(estimator).fit(X, y, sensitive_features=groups[:-1])
    broken = groups.astype(object)
    broken[3] = None
    with pytest.raises(ValueError, match="missing"):
        clone(estimator).fit(X, y, sensitive_features=broken)
    lonely = groups.copy()
    lonely[0] = "solo"
    with pytest.raises(ValueError, match="at least 2 samples"):
        clone(estimator).fit(X, y, sensitive_features=lonely)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clone(estimator).fit(X_nan, y, sensitive_features=groups)


def test_pipeline_import_is_sklearn():
    assert Pipeline is make_pipeline(StandardScaler()).__class__


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_grid_search_does_not_recompile(cls, count_compilations):
    """After a warm-up fit, CV folds of nearby sizes and new grid values compile nothing."""
    estimator = fast_instance(cls)
    X, y, groups = _data(estimator, n=300)
    name, values = _grid_parameter(estimator)
    clone(estimator).set_params(**{name: values[0]}).fit(
        X[:200], y[:200], sensitive_features=groups[:200]
    )
    search = GridSearchCV(clone(estimator), {name: values}, cv=3, refit=False)
    assert count_compilations(lambda: search.fit(X, y, sensitive_features=groups)) == 0
