"""Estimators on scipy sparse X: the same model as the dense fit on the same data
(float64, predictions within 1e-8), scikit-learn's LogisticRegression on the same sparse
input as the independent reference, and a clear TypeError from estimators that refuse it."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils import get_tags

from fairest._solvers import _driver
from fairest._solvers._defaults import SOLVER_TUNING
from fairest.reweighting import GroupWeightedClassifier, GroupWeightedRegressor
from fairest.utils._estimator import validate_fit_data


def _data(n=300, d=25, density=0.2, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    groups = rng.integers(0, 3, n)
    w = rng.normal(size=d)
    score = X @ w + 0.5 * (groups == 1) + 0.3 * rng.normal(size=n)
    return X, (score > np.median(score)).astype(int), score, groups


WEIGHTS = ["pooled", "uniform", "balanced", "minimax", "best_single_group"]


@pytest.mark.parametrize(
    ("weights", "fmt"), [(w, "csr") for w in WEIGHTS] + [("pooled", "csc"), ("balanced", "coo")]
)
def test_classifier_sparse_equals_dense(weights, fmt):
    X, y, _, groups = _data()
    params = {"weights": weights, "minimax_solver": "dual"}
    sparse = GroupWeightedClassifier(**params).fit(X.asformat(fmt), y, sensitive_features=groups)
    dense = GroupWeightedClassifier(**params).fit(X.toarray(), y, sensitive_features=groups)
    np.testing.assert_allclose(sparse.group_weights_, dense.group_weights_, atol=1e-8)
    np.testing.assert_allclose(
        sparse.decision_function(X.asformat(fmt)), dense.decision_function(X.toarray()), atol=1e-8
    )
    np.testing.assert_allclose(sparse.predict_proba(X), dense.predict_proba(X.toarray()), atol=1e-8)


@pytest.mark.parametrize("weights", ["pooled", "balanced", "minimax"])
def test_regressor_sparse_equals_dense(weights):
    X, _, score, groups = _data(seed=1)
    params = {"weights": weights, "minimax_solver": "dual"}
    sparse = GroupWeightedRegressor(**params).fit(X.tocsc(), score, sensitive_features=groups)
    dense = GroupWeightedRegressor(**params).fit(X.toarray(), score, sensitive_features=groups)
    np.testing.assert_allclose(sparse.predict(X), dense.predict(X.toarray()), atol=1e-8)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared_error"])
def test_lbfgs_path_on_sparse_equals_dense_newton(loss):
    """The large-data route of sparse X (L-BFGS, then Newton-CG) reaches the optimum of
    the dense Newton solve."""
    X, y, score, groups = _data(n=400, d=40, seed=2)
    target = score if loss == "squared_error" else y.astype(float)
    c = np.full(X.shape[0], 1.0 / X.shape[0])
    with SOLVER_TUNING.override(sparse_newton_max_work=0):
        sparse = _driver.solve_weighted_glm(loss, X, target, c, 1e-3)
    dense = _driver.solve_weighted_glm(loss, X.toarray(), target, c, 1e-3, solver="newton")
    assert sparse.solver == "lbfgs" and sparse.converged
    np.testing.assert_allclose(X @ sparse.theta[1:], X @ dense.theta[1:], atol=1e-8)
    np.testing.assert_allclose(sparse.theta[0], dense.theta[0], atol=1e-8)


def test_matches_sklearn_logistic_regression_on_sparse_input():
    X, y, _, groups = _data(n=500, d=30, seed=3)
    alpha = 1e-2
    ours = GroupWeightedClassifier(alpha=alpha).fit(X, y, sensitive_features=groups)
    # pooled weights: c_i = 1/n, so C = 1 / (alpha * sum(c)) = 1 / alpha with weights 1/n
    reference = LogisticRegression(C=1.0 / alpha, tol=1e-12, max_iter=10_000).fit(
        X, y, sample_weight=np.full(X.shape[0], 1.0 / X.shape[0])
    )
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, atol=1e-6)


def test_column_transformer_pipeline_keeps_sparse_and_matches_dense():
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame(
        {
            "job": rng.integers(0, 60, n).astype(str),
            "place": rng.integers(0, 40, n).astype(str),
            "age": rng.normal(40, 10, n),
        }
    )
    groups = rng.integers(0, 2, n)
    y = (frame["age"] + 5 * (frame["job"].astype(int) % 3) + rng.normal(0, 5, n) > 45).astype(int)

    def pipeline(sparse_output):
        encode = make_column_transformer(
            (OneHotEncoder(sparse_output=sparse_output), ["job", "place"]),
            remainder=StandardScaler(),
            sparse_threshold=1.0 if sparse_output else 0.0,
        )
        return make_pipeline(encode, GroupWeightedClassifier(weights="balanced"))

    sparse = pipeline(True).fit(frame, y, groupweightedclassifier__sensitive_features=groups)
    assert sp.issparse(sparse[0].transform(frame))
    dense = pipeline(False).fit(frame, y, groupweightedclassifier__sensitive_features=groups)
    np.testing.assert_allclose(
        sparse.decision_function(frame), dense.decision_function(frame), atol=1e-8
    )


def test_sparse_tag_and_nonfinite_stored_value():
    assert get_tags(GroupWeightedClassifier()).input_tags.sparse
    X, y, _, groups = _data()
    X = X.copy()
    X.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        GroupWeightedClassifier().fit(X, y, sensitive_features=groups)


class _DenseOnly(BaseEstimator):
    """An estimator validating its input without ``accept_sparse`` (the default)."""

    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        validate_fit_data(self, X, y, sensitive_features, sample_weight)
        return self


def test_estimator_without_sparse_support_names_itself():
    X, y, _, groups = _data()
    assert not get_tags(_DenseOnly()).input_tags.sparse
    with pytest.raises(TypeError, match="_DenseOnly") as info:
        _DenseOnly().fit(X, y, sensitive_features=groups)
    assert "sparse" in str(info.value) and len(str(info.value)) < 500
