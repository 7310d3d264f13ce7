"""Every public estimator x a table of bad and edge inputs: a clear error (the right type,
a message naming the problem, under 500 characters) or a finite, usable model."""

import inspect
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _fast_params import fast_instance

from fairest.utils import FairnessWarning
from fairest.utils.discovery import all_estimators

ESTIMATORS = [
    cls
    for _, cls in all_estimators()
    if "sensitive_features" in inspect.signature(cls.fit).parameters
]
IDS = [cls.__name__ for cls in ESTIMATORS]


def _is_regressor(cls) -> bool:
    return cls.__name__.endswith("Regressor")


def _data(cls, n=120, d=3, n_groups=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    groups = np.arange(n) % n_groups
    if _is_regressor(cls):
        y = X[:, 0] + 0.3 * groups + 0.1 * rng.normal(size=n)
    else:
        y = ((X[:, 0] + 0.5 * groups + 0.5 * rng.normal(size=n)) > 0.25).astype(int)
        for g in range(n_groups):  # both classes in every group
            rows = np.flatnonzero(groups == g)
            y[rows[0]], y[rows[1]] = 0, 1
    return X, y, groups


def _assert_clear(error, *words):
    message = str(error.value)
    assert len(message) < 500, f"{len(message)} characters: {message[:200]}..."
    lowered = message.lower()
    assert any(word.lower() in lowered for word in words), message


def _assert_finite_model(estimator, X):
    output = (
        estimator.decision_function(X)
        if hasattr(estimator, "decision_function")
        else estimator.predict(X)
    )
    assert np.all(np.isfinite(np.asarray(output, dtype=float)))
    for name in ("coef_", "intercept_"):
        if hasattr(estimator, name):
            assert np.all(np.isfinite(np.asarray(getattr(estimator, name), dtype=float)))


def _fit(cls, X, y, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the cheap settings
        return fast_instance(cls).fit(X, y, **fit_params)


# ------------------------------------------------------------------------------------
# inputs that must raise
# ------------------------------------------------------------------------------------


def _nan_X(X, y, A):
    X = X.copy()
    X[3, 1] = np.nan
    return (X, y), {"sensitive_features": A}


def _inf_X(X, y, A):
    X = X.copy()
    X[5, 0] = np.inf
    return (X, y), {"sensitive_features": A}


def _short_y(X, y, A):
    return (X, y[:-7]), {"sensitive_features": A}


def _short_groups(X, y, A):
    return (X, y), {"sensitive_features": A[:-7]}


def _one_sample_group(X, y, A):
    A = A.copy()
    A[0] = 7
    return (X, y), {"sensitive_features": A}


def _zero_weight_group(X, y, A):
    return (X, y), {"sensitive_features": A, "sample_weight": np.where(A == 0, 0.0, 1.0)}


def _negative_weights(X, y, A):
    weights = np.ones(len(y))
    weights[4] = -1.0
    return (X, y), {"sensitive_features": A, "sample_weight": weights}


def _one_row(X, y, A):
    return (X[:1], y[:1]), {"sensitive_features": A[:1]}


def _mixed_label_types(X, y, A):
    mixed = np.empty(len(A), dtype=object)
    mixed[:] = [1 if a == 0 else "1" for a in A]
    return (X, y), {"sensitive_features": mixed}


MUST_RAISE = {
    "nan in X": (_nan_X, ValueError, ("nan",)),
    "inf in X": (_inf_X, ValueError, ("infinity", "inf")),
    "y shorter than X": (_short_y, ValueError, ("inconsistent", "samples")),
    "groups shorter than X": (_short_groups, ValueError, ("sensitive_features has",)),
    "one-sample group": (_one_sample_group, ValueError, ("at least 2 samples",)),
    "zero-weight group": (_zero_weight_group, ValueError, ("zero total weight",)),
    "negative weights": (_negative_weights, ValueError, ("negative",)),
    "one row": (_one_row, ValueError, ("sample", "class")),
    "labels 1 and '1'": (_mixed_label_types, ValueError, ("mixes types",)),
}


@pytest.mark.parametrize("case", list(MUST_RAISE), ids=list(MUST_RAISE))
@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_bad_input_is_a_clear_error(cls, case):
    make, error_type, words = MUST_RAISE[case]
    args, fit_params = make(*_data(cls))
    with pytest.raises(error_type) as error:
        fast_instance(cls).fit(*args, **fit_params)
    _assert_clear(error, *words)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_wrong_number_of_features_at_predict(cls):
    X, y, A = _data(cls)
    estimator = _fit(cls, X, y, sensitive_features=A)
    with pytest.raises(ValueError) as error:
        estimator.predict(X[:, :2])
    _assert_clear(error, "features")


@pytest.mark.parametrize(
    "cls", [c for c in ESTIMATORS if not _is_regressor(c)], ids=lambda c: c.__name__
)
def test_multiclass_target_is_handled_or_refused_clearly(cls):
    X, _, _ = data = _data(cls)
    args, fit_params = _three_classes(*data)
    try:
        estimator = _fit(cls, *args, **fit_params)
    except ValueError as error:
        assert len(str(error)) < 500 and ("binary" in str(error).lower() or "class" in str(error))
    else:
        assert set(estimator.classes_) == {0, 1, 2}
        _assert_finite_model(estimator, X)


def _three_classes(X, y, A):
    return (X, np.arange(len(y)) % 3), {"sensitive_features": A}


def _single_explicit_group(X, y, A):
    return (X, y), {"sensitive_features": np.array(["F"] * len(y))}


def _one_class_group(X, y, A):
    y = y.copy()
    y[A == 1] = 1
    return (X, y), {"sensitive_features": A}


def _huge_feature_scale(X, y, A):
    X = X.copy()
    X[:, 2] *= 1e10
    return (X, y), {"sensitive_features": A}


def _sparse_X(X, y, A):
    return (sp.csr_matrix(X), y), {"sensitive_features": A}


def _zero_weight_rows(X, y, A):
    weights = np.ones(len(y))
    weights[::7] = 0.0
    return (X, y), {"sensitive_features": A, "sample_weight": weights}


# edge inputs (a clear error or a finite model), also tabulated by benchmarks/bad_inputs_table.py
EDGE_INPUTS = {
    "3 classes": _three_classes,
    "one explicit group": _single_explicit_group,
    "one-class group": _one_class_group,
    "feature x 1e10": _huge_feature_scale,
    "sparse X": _sparse_X,
    "zero-weight rows": _zero_weight_rows,
}
CLASSIFICATION_ONLY = {"3 classes", "one-class group"}


# ------------------------------------------------------------------------------------
# edge inputs: a clear error or a finite model
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_single_explicit_group_warns_and_fits(cls):
    X, _, _ = data = _data(cls)
    args, fit_params = _single_explicit_group(*data)
    with pytest.warns(FairnessWarning, match="single group"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            warnings.simplefilter("always", category=FairnessWarning)
            estimator = fast_instance(cls).fit(*args, **fit_params)
    _assert_finite_model(estimator, X)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_one_class_group_fits_finite_or_refuses_clearly(cls):
    if _is_regressor(cls):
        pytest.skip("classes do not apply")
    X, _, _ = data = _data(cls)
    args, fit_params = _one_class_group(*data)
    try:
        estimator = _fit(cls, *args, **fit_params)
    except ValueError as error:
        assert len(str(error)) < 500 and "class" in str(error)
    else:
        _assert_finite_model(estimator, X)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_many_groups_fit_finite_or_refuse_clearly(cls):
    X, y, A = _data(cls, n=1200, n_groups=100)
    try:
        estimator = _fit(cls, X, y, sensitive_features=A)
    except ValueError as error:
        assert len(str(error)) < 500
    else:
        _assert_finite_model(estimator, X)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_huge_feature_scale_fits_finite_or_refuses_clearly(cls):
    args, fit_params = _huge_feature_scale(*_data(cls))
    X = args[0]
    try:
        estimator = _fit(cls, *args, **fit_params)
    except (ValueError, FloatingPointError) as error:
        assert len(str(error)) < 500 and "scale" in str(error).lower()
    else:
        _assert_finite_model(estimator, X)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_sparse_X_fits_or_refuses_clearly(cls):
    X, _, _ = data = _data(cls)
    args, fit_params = _sparse_X(*data)
    try:
        estimator = _fit(cls, *args, **fit_params)
    except TypeError as error:
        assert len(str(error)) < 500 and "sparse" in str(error).lower()
    else:
        _assert_finite_model(estimator, X)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_zero_weights_on_some_rows_give_a_finite_model(cls):
    X, _, _ = data = _data(cls)
    args, fit_params = _zero_weight_rows(*data)
    estimator = _fit(cls, *args, **fit_params)
    _assert_finite_model(estimator, X)
