"""BADR and ERMI on scipy sparse X: the fit on CSR / CSC / COO equals the dense fit on the
same data (float64, predictions within 1e-8) for every solver, without densifying X (the
device copy is a SparseRows), and the sparse kernels' row gathers / row norms equal
numpy's on the densified matrix."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils import get_tags

from fairest._kernels._sparse import sparse_rows, squared_row_norms, take_rows
from fairest.ermi import ERMIClassifier
from fairest.reweighting import BADRClassifier, BADRRegressor, _runtime


def _data(n=240, d=20, density=0.2, num_groups=3, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    groups = rng.integers(0, num_groups, n)
    score = X @ rng.normal(size=d) + 0.5 * (groups == 1) + 0.3 * rng.normal(size=n)
    return X, (score > np.median(score)).astype(int), score, groups


def _fit_both(make, X, y, groups, fmt="csr"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few iterations: convergence warnings expected
        sparse = make().fit(X.asformat(fmt), y, sensitive_features=groups)
        dense = make().fit(X.toarray(), y, sensitive_features=groups)
    return sparse, dense


def _assert_same_scores(sparse, dense, X, atol=1e-8):
    method = "predict" if not hasattr(sparse, "decision_function") else "decision_function"
    np.testing.assert_allclose(
        getattr(sparse, method)(X), getattr(dense, method)(X.toarray()), atol=atol
    )


def test_sparse_rows_take_rows_and_row_norms_match_numpy():
    X, *_ = _data(n=60, d=9, density=0.3)
    X = X.tolil()
    X[5] = 0  # an empty row
    X = X.tocsr()
    X.eliminate_zeros()
    dense = X.toarray()
    rows = np.array([5, 0, 59, 17, 5, 33])
    with jax.enable_x64(True):
        device = jax.device_put(sparse_rows(X))
        taken = jax.jit(take_rows)(device, jnp.asarray(rows))
        np.testing.assert_array_equal(taken.toarray(), dense[rows])
        w = jnp.asarray(np.random.default_rng(1).normal(size=9))
        np.testing.assert_allclose(np.asarray(taken @ w), dense[rows] @ np.asarray(w), atol=1e-12)
        norms = np.asarray(jax.jit(squared_row_norms)(device))
    np.testing.assert_allclose(norms, np.sum(dense**2, axis=1), atol=1e-12)
    np.testing.assert_allclose(squared_row_norms(X), np.sum(dense**2, axis=1), atol=1e-12)
    np.testing.assert_allclose(squared_row_norms(dense), np.sum(dense**2, axis=1), atol=1e-12)


def test_sparse_tags():
    for estimator in (BADRClassifier(), BADRRegressor(), ERMIClassifier()):
        assert get_tags(estimator).input_tags.sparse


@pytest.mark.parametrize(
    ("solver", "fmt"),
    [
        ("slsqp", "csr"),
        ("frank-wolfe", "csc"),
        ("trust-constr", "coo"),
        ("gd", "csr"),
        ("sgd", "csr"),
    ],
)
def test_badr_classifier_sparse_equals_dense(solver, fmt):
    X, y, _, groups = _data()
    params = {"solver": solver, "max_iter": 4, "random_state": 0}
    if solver in ("gd", "sgd"):
        params["check_every"] = 5
    if solver == "sgd":
        params["batch_size"] = 48  # minibatches: SparseRows.take_rows
    sparse, dense = _fit_both(lambda: BADRClassifier(**params), X, y, groups, fmt)
    np.testing.assert_allclose(sparse.group_weights_, dense.group_weights_, atol=1e-8)
    _assert_same_scores(sparse, dense, X)
    assert sparse.unfairness_exact_ == pytest.approx(dense.unfairness_exact_, abs=1e-12)


def test_badr_regressor_sparse_equals_dense():
    X, _, score, groups = _data(seed=1)
    sparse, dense = _fit_both(lambda: BADRRegressor(max_iter=20), X, score, groups, "csc")
    np.testing.assert_allclose(sparse.group_weights_, dense.group_weights_, atol=1e-8)
    _assert_same_scores(sparse, dense, X)


def test_badr_one_group_vertices_on_their_rows_sparse(monkeypatch, oracle_tuning):
    """The one-group vertex solves on the group's gathered rows (large-data path, forced
    here) give the dense fit's weights and model on sparse X too."""
    oracle_tuning(group_rows_min_rows=0)
    X, y, _, groups = _data(n=300, num_groups=6, seed=2)
    with jax.enable_x64(True):
        problem_rows = _runtime.group_row_blocks(groups, 6, X.shape[0])
    assert problem_rows is not None
    sparse, dense = _fit_both(lambda: BADRClassifier(max_iter=3), X, y, groups)
    np.testing.assert_allclose(sparse.group_weights_, dense.group_weights_, atol=1e-8)
    _assert_same_scores(sparse, dense, X)


ERMI_CASES = {
    "full-batch": ({"solver": "full-batch"}, 2),
    "full-batch-eo-3-classes": ({"solver": "full-batch", "metric": "equalized_odds"}, 3),
    "sgda": ({"solver": "sgda", "n_epochs": 2, "batch_size": 32}, 2),
    "dp-sgda-per-sample-clipping": (
        {"solver": "sgda", "n_epochs": 2, "batch_size": 32, "dp_epsilon": 5.0},
        3,
    ),
}


@pytest.mark.parametrize("case", list(ERMI_CASES))
def test_ermi_sparse_equals_dense(case):
    params, n_classes = ERMI_CASES[case]
    X, y, score, groups = _data(seed=3)
    if n_classes == 3:
        y = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    make = lambda: ERMIClassifier(random_state=0, **params)  # noqa: E731
    sparse, dense = _fit_both(make, X, y, groups)
    _assert_same_scores(sparse, dense, X)
    if "dp_epsilon" in params:  # the Lipschitz bound uses sparse row norms
        assert sparse.sigma_theta_ == pytest.approx(dense.sigma_theta_, rel=1e-12)


def test_ermi_float32_products_and_partial_fit_on_sparse():
    X, y, _, groups = _data(seed=4)
    make = lambda: ERMIClassifier(solver="sgda", batch_size=32, random_state=0, dtype="float32")  # noqa: E731
    sparse, dense = _fit_both(make, X, y, groups)
    _assert_same_scores(sparse, dense, X, atol=1e-5)  # float32 sums in another order
    streams = [ERMIClassifier(solver="sgda", batch_size=32, random_state=0) for _ in range(2)]
    for rows in np.array_split(np.arange(X.shape[0]), 2):
        kw = {"sensitive_features": groups[rows], "classes": [0, 1], "groups": [0, 1, 2]}
        streams[0].partial_fit(X[rows], y[rows], **kw)
        streams[1].partial_fit(X[rows].toarray(), y[rows], **kw)
    _assert_same_scores(*streams, X)
