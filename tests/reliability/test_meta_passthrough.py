"""The meta-estimators hand X to the model they wrap as the user gave it (issue #33).

GroupThresholdClassifier and CertifiedFairClassifier check only what they use themselves
(the number of rows, features and column names); sparse matrices, DataFrames with string
categoricals and missing values, and polars frames reach the wrapped estimator untouched,
and the groups reach every level of a nesting under metadata routing. Also here: the
post-processor's default tolerance mitigates, and a fit names the groups too small for
its tolerance to hold beyond the fit rows.
"""

import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest
import scipy.sparse as sp
from scipy import stats
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_validate
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from fairest import fairness_path
from fairest.certified import CertifiedFairClassifier
from fairest.postprocessing import GroupThresholdClassifier
from fairest.utils import FairnessWarning

SMALL_GROUPS = "ignore:GroupThresholdClassifier has too few rows:fairest.utils.FairnessWarning"
LOOSE = [("demographic_parity_difference", 0.9)]  # certifiable on a few hundred rows


def practitioner_frame(n=1200, seed=0):
    """A DataFrame with a numeric column holding NaN and a string categorical column,
    binary labels and three groups."""
    rng = np.random.default_rng(seed)
    groups = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    income = rng.normal(size=n) + 0.8 * (groups == "a")
    job = rng.choice(["clerk", "nurse", "driver"], size=n)
    y = (income + 0.7 * (job == "nurse") + rng.normal(scale=0.8, size=n) > 0.6).astype(int)
    income[rng.random(n) < 0.1] = np.nan
    X = pd.DataFrame({"income": income, "job": pd.Series(job, dtype="string")})
    return X, y, groups


def by_name_pipeline(last=None):
    """A ColumnTransformer by column names (imputing the numbers, one-hot strings)."""
    encode = ColumnTransformer(
        [
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["income"]),
            ("cat", OneHotEncoder(), ["job"]),
        ]
    )
    return Pipeline([("encode", encode), ("model", last or LogisticRegression())])


class GroupRecorder(ClassifierMixin, BaseEstimator):
    """A logistic regression whose ``fit`` records the groups it was given."""

    __metadata_request__fit = {"sensitive_features": True}

    def fit(self, X, y, sensitive_features=None):
        self.received_ = None if sensitive_features is None else np.asarray(sensitive_features)
        self.model_ = LogisticRegression().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)

    def predict(self, X):
        return self.model_.predict(X)


# ---------------------------------------------------------------------------------------
# X as given


@pytest.mark.filterwarnings(SMALL_GROUPS)
def test_sparse_one_hot_reaches_the_wrapped_logistic_regression():
    X, y, groups = practitioner_frame()
    encode = ColumnTransformer([("cat", OneHotEncoder(), ["job"])], sparse_threshold=1.0)
    X_sparse = sp.hstack([encode.fit_transform(X), sp.csr_matrix(X[["income"]].fillna(0))])
    X_sparse = X_sparse.tocsr()
    clf = GroupThresholdClassifier(LogisticRegression()).fit(X_sparse, y, sensitive_features=groups)
    reference = LogisticRegression().fit(X_sparse, y)
    np.testing.assert_array_equal(clf.estimator_.coef_, reference.coef_)
    assert clf.n_features_in_ == X_sparse.shape[1]
    assert clf.predict(X_sparse, sensitive_features=groups).shape == (len(y),)
    # the certified wrapper takes its rows of the matrix as cross-validation does
    certified = CertifiedFairClassifier(
        GroupThresholdClassifier(LogisticRegression()), constraints=LOOSE, random_state=0
    ).fit(X_sparse.tocoo(), y, sensitive_features=groups)
    assert certified.certified_
    assert certified.predict(X_sparse, sensitive_features=groups).shape == (len(y),)


@pytest.mark.filterwarnings(SMALL_GROUPS)
def test_missing_values_reach_a_nan_aware_model_in_both_wrappers():
    X, y, groups = practitioner_frame()
    X = X.assign(job=(X["job"] == "nurse").astype(float)).to_numpy()
    assert np.isnan(X).any()
    model = HistGradientBoostingClassifier(max_iter=20, random_state=0)
    clf = GroupThresholdClassifier(model).fit(X, y, sensitive_features=groups)
    np.testing.assert_array_equal(
        clf.estimator_.predict_proba(X), clone(model).fit(X, y).predict_proba(X)
    )
    certified = CertifiedFairClassifier(model, constraints=LOOSE, random_state=0).fit(
        X, y, sensitive_features=groups
    )
    assert certified.certified_ and certified.predict(X).shape == (len(y),)
    # a model that refuses NaN is named, shortly, with the fixes
    with pytest.raises(ValueError, match="passes X to LogisticRegression as given") as error:
        GroupThresholdClassifier(LogisticRegression()).fit(X, y, sensitive_features=groups)
    assert len(str(error.value)) < 500 and "SimpleImputer" in str(error.value)


@pytest.mark.filterwarnings(SMALL_GROUPS)
def test_the_guides_nested_layout_keeps_names_strings_and_missing_values():
    X, y, groups = practitioner_frame()
    model = CertifiedFairClassifier(
        GroupThresholdClassifier(by_name_pipeline()),
        constraints=LOOSE,
        selection="fixed_sequence",
        random_state=0,
    ).fit(X, y, sensitive_features=groups)
    assert model.certified_
    np.testing.assert_array_equal(model.feature_names_in_, ["income", "job"])
    inner = model.best_estimator_.estimator_
    np.testing.assert_array_equal(inner["encode"].feature_names_in_, ["income", "job"])
    assert set(inner["encode"].named_transformers_["cat"].categories_[0]) == {
        "clerk",
        "nurse",
        "driver",
    }
    y_pred = model.predict(X, sensitive_features=groups)
    assert set(np.unique(y_pred)) <= {0, 1}
    # the names are checked as scikit-learn checks them
    with pytest.raises(ValueError, match="feature names"):
        model.predict(X[["job", "income"]], sensitive_features=groups)


@pytest.mark.filterwarnings(SMALL_GROUPS)
def test_polars_frame_reaches_the_wrapped_pipeline():
    X, y, groups = practitioner_frame()
    X_polars = pl.from_pandas(X.assign(job=X["job"].astype(str)))
    numbers = X[["income"]].fillna(0.0).to_numpy()
    clf = GroupThresholdClassifier(
        make_pipeline(
            ColumnTransformer([("num", SimpleImputer(), ["income"])]), LogisticRegression()
        )
    ).fit(X_polars, y, sensitive_features=groups)
    np.testing.assert_array_equal(clf.feature_names_in_, ["income", "job"])
    reference = GroupThresholdClassifier(make_pipeline(SimpleImputer(), LogisticRegression())).fit(
        np.where(np.isnan(X[["income"]]), np.nanmean(X["income"]), numbers),
        y,
        sensitive_features=groups,
    )
    np.testing.assert_array_equal(
        clf.predict(X_polars, sensitive_features=groups),
        reference.predict(
            np.where(np.isnan(X[["income"]]), np.nanmean(X["income"]), numbers),
            sensitive_features=groups,
        ),
    )


# ---------------------------------------------------------------------------------------
# the groups at every level


@pytest.mark.filterwarnings(SMALL_GROUPS)
@pytest.mark.parametrize("routing", [True, False], ids=["routing", "legacy"])
def test_groups_reach_every_level_of_the_nesting(routing):
    """Pipeline -> CertifiedFairClassifier -> GroupThresholdClassifier -> Pipeline -> a
    model that takes the groups."""
    X, y, groups = practitioner_frame()
    certified = CertifiedFairClassifier(
        GroupThresholdClassifier(by_name_pipeline(GroupRecorder())),
        constraints=LOOSE,
        random_state=0,
    )
    with config_context(enable_metadata_routing=routing):
        if routing:
            outer = Pipeline([("keep", FunctionTransformer()), ("certified", certified)])
            outer.fit(X, y, sensitive_features=groups)
            fitted = outer["certified"]
            y_pred = outer.predict(X, sensitive_features=groups)
            accuracy = outer.score(X, y, sensitive_features=groups)
            scores = cross_validate(outer, X, y, cv=3, params={"sensitive_features": groups})[
                "test_score"
            ]
            assert np.all(np.isfinite(scores))
        else:
            fitted = certified.fit(X, y, sensitive_features=groups)
            y_pred = fitted.predict(X, sensitive_features=groups)
            accuracy = fitted.score(X, y, sensitive_features=groups)
    assert fitted.certified_
    recorder = fitted.best_estimator_.estimator_["model"]
    n_candidate = fitted.certificate_.n_candidate
    assert recorder.received_ is not None and recorder.received_.shape == (n_candidate,)
    assert set(recorder.received_) == {"a", "b", "c"}
    assert accuracy == pytest.approx(np.mean(y_pred == y))


@pytest.mark.filterwarnings(SMALL_GROUPS)
def test_a_routed_pipeline_ending_with_the_post_processor_gets_its_groups_at_predict():
    X, y, groups = practitioner_frame()
    thresholds = make_pipeline(
        FunctionTransformer(), GroupThresholdClassifier(by_name_pipeline(), tolerance=0.05)
    )
    with config_context(enable_metadata_routing=True):
        model = CertifiedFairClassifier(thresholds, constraints=LOOSE, random_state=0)
        model.fit(X, y, sensitive_features=groups)
        assert model.certified_
        direct = model.best_estimator_.predict(X, sensitive_features=groups)
        np.testing.assert_array_equal(model.predict(X, sensitive_features=groups), direct)


def test_weights_that_cannot_reach_a_routed_pipeline_are_refused():
    X, y, groups = practitioner_frame()
    with config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError, match=r"set_fit_request\(sample_weight=True\)"):
            GroupThresholdClassifier(by_name_pipeline()).fit(
                X, y, sensitive_features=groups, sample_weight=np.ones(len(y))
            )

        # every step that takes weights says whether it wants them: then they reach it
        def unweighted_scaling(last):
            encode = ColumnTransformer(
                [
                    ("num", SimpleImputer(), ["income"]),
                    ("cat", OneHotEncoder(), ["job"]),
                ]
            )
            return Pipeline([("encode", encode), ("model", last)])

        weighted = LogisticRegression().set_fit_request(sample_weight=True)
        weights = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FairnessWarning)
            clf = GroupThresholdClassifier(unweighted_scaling(weighted)).fit(
                X, y, sensitive_features=groups, sample_weight=weights
            )
        reference = unweighted_scaling(clone(weighted)).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(clf.estimator_["model"].coef_, reference["model"].coef_)


@pytest.mark.filterwarnings(SMALL_GROUPS)
def test_fairness_path_takes_a_dataframe_through_both_wrappers():
    X, y, groups = practitioner_frame()
    path = fairness_path(
        GroupThresholdClassifier(by_name_pipeline()),
        X,
        y,
        sensitive_features=groups,
        values=[0.0, 0.05, 0.2],
    )
    assert path.strategy == "shared_scores"
    assert np.all(np.isfinite(path.train_accuracy))
    assert path.train_unfairness[0] <= path.train_unfairness[-1]
    certified_path = fairness_path(
        CertifiedFairClassifier(
            GroupThresholdClassifier(by_name_pipeline()),
            constraints=LOOSE,
            random_state=0,
            on_no_solution="constant",
        ),
        X,
        y,
        sensitive_features=groups,
        param="delta",
        values=[0.05, 0.2],
    )
    assert np.all(np.isfinite(certified_path.train_accuracy))


# ---------------------------------------------------------------------------------------
# the default mitigates


def _unequal_groups(seed=0):
    """Two groups of different sizes (no common exact rate but 0 and 1) and base rates."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(["a", "b"], [9001, 5999])
    X = rng.normal(size=(groups.size, 3)) + 0.8 * (groups == "a")[:, None]
    y = (X[:, 0] + rng.normal(scale=0.7, size=groups.size) > 0.5).astype(int)
    return X, y, groups


def test_the_default_tolerance_is_non_constant_fairer_and_about_as_accurate():
    from fairest.metrics import demographic_parity_difference

    X, y, groups = _unequal_groups()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither near-constant nor too few rows
        clf = GroupThresholdClassifier(LogisticRegression()).fit(X, y, sensitive_features=groups)
    y_pred = clf.predict(X, sensitive_features=groups)
    free = LogisticRegression().fit(X, y).predict(X)
    assert 0.1 < y_pred.mean() < 0.9
    assert clf.train_unfairness_ <= 0.02 + 1e-9
    assert demographic_parity_difference(y, free, sensitive_features=groups) > 0.3
    assert np.mean(y_pred == y) > np.mean(free == y) - 0.08
    # exact parity with one deterministic threshold per group selects nobody (it warns)
    with pytest.warns(FairnessWarning, match="near-constant"):
        exact = GroupThresholdClassifier(LogisticRegression(), tolerance=0.0)
        exact.fit(X, y, sensitive_features=groups)
    assert np.unique(exact.predict(X, sensitive_features=groups)).size == 1


# ---------------------------------------------------------------------------------------
# groups too small for the tolerance


def _with_small_groups(seed=0):
    """Two groups of 4000 rows and two of 60 and 150."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(["big1", "big2", "tiny", "small"], [4000, 4000, 60, 150])
    X = rng.normal(size=(groups.size, 2)) + 0.5 * (groups == "big1")[:, None]
    y = (X[:, 0] + rng.normal(size=groups.size) > 0.3).astype(int)
    return X, y, groups


def test_groups_too_small_for_the_tolerance_are_named_with_their_interval():
    X, y, groups = _with_small_groups()
    with pytest.warns(FairnessWarning, match="too few rows in some groups") as caught:
        clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.05).fit(
            X, y, sensitive_features=groups
        )
    message = str(caught[0].message)
    assert "'tiny' selection rate" in message and "'small' selection rate" in message
    assert "'big1'" not in message and "'big2'" not in message
    table = clf.group_uncertainty_.set_index("group")
    assert list(table.index) == ["big1", "big2", "small", "tiny"]
    assert list(table["exceeds_tolerance"]) == [False, False, True, True]
    # the fitted selection rates, with exact (Clopper-Pearson) intervals at 95 %
    y_pred = clf.predict(X, sensitive_features=groups)
    for label in ("big1", "tiny"):
        selected = int(np.sum(y_pred[groups == label]))
        rows = int(np.sum(groups == label))
        interval = stats.binomtest(selected, rows).proportion_ci(0.95, method="exact")
        assert table.loc[label, "value"] == pytest.approx(selected / rows)
        assert table.loc[label, "lower"] == pytest.approx(interval.low, abs=1e-9)
        assert table.loc[label, "upper"] == pytest.approx(interval.high, abs=1e-9)
        half = (interval.high - interval.low) / 2
        assert table.loc[label, "half_width"] == pytest.approx(half, abs=1e-9)
    assert f"(half-width {table.loc['tiny', 'half_width']:.3g})" in message
    # a tolerance the small groups' rates can hold: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GroupThresholdClassifier(LogisticRegression(), tolerance=0.2).fit(
            X, y, sensitive_features=groups
        )


def test_a_single_group_has_no_difference_to_hold():
    X, y, groups = _with_small_groups()
    tiny = groups == "tiny"
    with pytest.warns(FairnessWarning, match="single group") as caught:
        clf = GroupThresholdClassifier(LogisticRegression(), tolerance=0.01).fit(
            X[tiny], y[tiny], sensitive_features=groups[tiny]
        )
    assert not [w for w in caught if "too few rows in some groups" in str(w.message)]
    assert bool(clf.group_uncertainty_["exceeds_tolerance"].iloc[0])  # still listed


def test_equal_opportunity_judges_each_groups_positives():
    X, y, groups = _with_small_groups()
    with pytest.warns(FairnessWarning, match="too few rows in some groups") as caught:
        clf = GroupThresholdClassifier(
            LogisticRegression(), metric="equalized_odds", tolerance=0.1
        ).fit(X, y, sensitive_features=groups)
    table = clf.group_uncertainty_
    assert set(table["rate"]) == {"tpr", "fpr"}
    tiny_tpr = table[(table.group == "tiny") & (table.rate == "tpr")].iloc[0]
    assert tiny_tpr["rows"] == np.sum(y[groups == "tiny"])
    assert "'tiny' true positive rate" in str(caught[0].message)


def test_the_certified_wrapper_leaves_the_small_groups_to_its_certificate():
    X, y, groups = _with_small_groups()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CertifiedFairClassifier(
            GroupThresholdClassifier(LogisticRegression()), constraints=LOOSE, random_state=0
        ).fit(X, y, sensitive_features=groups)
    assert not [w for w in caught if "too few rows in some groups" in str(w.message)]
