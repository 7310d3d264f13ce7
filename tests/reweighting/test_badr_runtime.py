"""The reweighting runtime's placement (fairest/reweighting/_runtime.py): sparse X whose
Newton Hessian would be built from densified row blocks is held dense when that pays, and
the fit equals the one on the sparse form (issue 33: the practitioner KDD task)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from fairest.reweighting import BADRClassifier
from fairest.reweighting._defaults import ORACLE_TUNING
from fairest.reweighting._runtime import densify_pays


def _one_hot(n=2000, columns=10, levels=8, seed=0):
    """One-hot codes of ``columns`` categorical columns of ``levels`` levels each (as
    scikit-learn's OneHotEncoder gives): ``columns`` entries a row of ``columns * levels``."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, levels, size=(n, columns))
    indices = (codes + levels * np.arange(columns)).ravel()
    indptr = np.arange(0, n * columns + 1, columns)
    X = sp.csr_matrix((np.ones(n * columns), indices, indptr), shape=(n, columns * levels))
    groups = codes[:, 0] % 3
    score = X @ rng.normal(size=columns * levels) + 0.5 * groups + rng.normal(size=n)
    return X, (score > np.median(score)).astype(int), groups


def test_densify_pays_only_for_large_enough_data_within_the_budget():
    X, _, _ = _one_hot()
    assert densify_pays(X)  # n d^2 = 12.8e6: float32 Hessian blocks, 1.3 MB copy
    assert not densify_pays(X[:200])  # too small for float32 blocks: stays sparse
    with ORACLE_TUNING.override(densify_max_bytes=X.shape[0] * X.shape[1] * 8 - 1):
        assert not densify_pays(X)  # the copy would exceed the budget
    wide = sp.random(2000, 400, density=0.005, format="csr", random_state=0)
    assert not densify_pays(wide)  # two entries a row of 400: the outer-product gram


@pytest.mark.parametrize("solver", ["slsqp", "frank-wolfe"])
def test_densified_fit_equals_the_sparse_one(solver):
    X, y, groups = _one_hot()
    params = {"solver": solver, "max_iter": 20 if solver == "frank-wolfe" else None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few Frank-Wolfe iterations: not converged
        dense = BADRClassifier(**params).fit(X, y, sensitive_features=groups)
        with ORACLE_TUNING.override(densify_max_bytes=0):  # the SparseRows path
            sparse = BADRClassifier(**params).fit(X, y, sensitive_features=groups)
    np.testing.assert_allclose(dense.group_weights_, sparse.group_weights_, atol=1e-6)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, atol=1e-6)
    assert dense.unfairness_ == pytest.approx(sparse.unfairness_, abs=1e-9)
    np.testing.assert_array_equal(dense.predict(X), sparse.predict(X))
