"""scipy.sparse X for PartialParityClassifier and PartialParityPenaltyClassifier: the
rows go to the solver's ELL form straight from CSR (never densified) and every fit
equals the fit on the same data as a numpy array (issue #19 item 5)."""

import warnings

import jax
import numpy as np
import pytest
import scipy.sparse as sp

import fairest
from fairest._kernels._sparse import SparseRows
from fairest.partial import (
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
    PartialParityClassifier,
    PartialParityPenaltyClassifier,
)
from fairest.partial._common import (
    build_data,
    csr_ell_slots,
    ell_slots,
    padded_ell,
    squared_row_norms,
)

FORMATS = ["csr", "csc", "coo"]


def one_hot_data(n=600, seed=0, levels=(4, 10, 12)):
    """Two numeric columns and three one-hot blocks (4 + 10 + 12 levels): 5 non-zeros
    in 28 columns per row (18 %, stored as ELL), the group driving the labels."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    numeric = rng.normal(size=(n, 2)) + 0.5 * g[:, None]
    blocks = [np.eye(size)[rng.integers(0, size, n)] for size in levels]
    X = np.hstack([numeric, *blocks])
    logit = numeric[:, 0] + blocks[0] @ rng.normal(size=4) + 0.8 * g - 0.3
    y = (logit + rng.logistic(size=n) > 0).astype(int)
    return X, y, g


@pytest.fixture
def no_densify(monkeypatch):
    """Any densification of a scipy sparse matrix raises."""

    def refuse(self, *args, **kwargs):
        raise AssertionError(f"a sparse {self.format} X was densified")

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    yield


def test_csr_rows_equals_dense_ell_with_explicit_zeros_and_duplicates():
    """The ELL of a COO with explicit zeros, duplicate entries and unsorted indices is
    the one the dense builder gives for its numpy form."""
    X, _, _ = one_hot_data(50)
    coo = sp.coo_matrix(X)
    rows = np.concatenate([coo.row, coo.row[:7], [3, 4]])
    cols = np.concatenate([coo.col, coo.col[:7], [20, 21]])
    # duplicates split a value in two halves; (3, 20), (4, 21) explicit zeros if absent
    data = np.concatenate([coo.data, np.zeros(7), [0.0, 0.0]])
    data[:7] *= 0.5
    data[coo.nnz : coo.nnz + 7] = coo.data[:7] * 0.5
    order = np.random.default_rng(3).permutation(rows.size)
    messy = sp.coo_matrix((data[order], (rows[order], cols[order])), shape=X.shape)
    expected = ell_slots(messy.toarray())
    index, value = csr_ell_slots(messy)
    np.testing.assert_array_equal(index, expected[0])
    np.testing.assert_array_equal(value, expected[1])
    assert index.shape[1] % 8 == 0 and index.dtype == np.int32


def test_csr_rows_rule_matches_dense_rule():
    """Too dense (a row more than 25 % full) or too narrow (d < 8): None, as dense."""
    rng = np.random.default_rng(0)
    wide = (rng.uniform(size=(40, 16)) < 0.1) * 1.0
    wide[5, :5] = 1.0  # one row 5/16 > 25 % full
    narrow = (rng.uniform(size=(40, 6)) < 0.1) * 1.0
    for X in (wide, narrow):
        assert ell_slots(X) is None and csr_ell_slots(sp.csr_matrix(X)) is None
    wide[5, :5] = 0.0
    assert csr_ell_slots(sp.csr_matrix(wide)) is not None and ell_slots(wide) is not None
    assert padded_ell(sp.csr_matrix(wide), 40)[0].shape[0] >= 40


def test_squared_row_norms_sparse_equals_dense():
    X, _, _ = one_hot_data(80)
    np.testing.assert_allclose(squared_row_norms(sp.csc_matrix(X)), squared_row_norms(X))


@pytest.mark.usefixtures("no_densify")
def test_build_data_from_sparse_equals_dense_and_keeps_device_placement():
    """build_data on CSR gives the dense X's SparseRows, placed on the configured
    device (the rows are placed on devices; keep that)."""
    X, y, g = one_hot_data(300)
    w = np.random.default_rng(2).uniform(0.5, 2.0, 300)
    hyper = dict.fromkeys(("slack", "lo", "threshold", "alpha", "mu", "rho"), 0.0)
    common = dict(grid=np.zeros(0), hi=1.0, width=1.0, **hyper)
    device = jax.devices()[-1]
    with fairest.config_context(devices=[device]), jax.enable_x64(True):
        dense = build_data(X, y.astype(float), g, w, 2, **common)
        sparse = build_data(sp.csr_matrix(X), y.astype(float), g, w, 2, **common)
    assert isinstance(dense.X, SparseRows) and isinstance(sparse.X, SparseRows)
    assert sparse.X.ell and dense.X.ell  # the shared class, in its ELL form
    assert sparse.X.shape[1] == dense.X.shape[1] == X.shape[1]
    for a, b in zip(sparse.X.slots(), dense.X.slots()):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert sparse.X.data.devices() == {device} and sparse.membership.devices() == {device}
    assert sparse.X.row_ids.devices() == {device}


def _assert_same_fit(sparse_model, dense_model, X, atol):
    np.testing.assert_allclose(sparse_model.coef_, dense_model.coef_, rtol=0, atol=atol)
    np.testing.assert_allclose(sparse_model.intercept_, dense_model.intercept_, atol=atol)
    np.testing.assert_allclose(
        sparse_model.predict_proba(sp.csr_matrix(X)), dense_model.predict_proba(X), atol=atol
    )
    np.testing.assert_array_equal(sparse_model.predict(sp.coo_matrix(X)), dense_model.predict(X))


@pytest.mark.parametrize("fmt", FORMATS)
def test_partial_parity_classifier_sparse_equals_dense_default_solver(fmt, no_densify):
    """Default solver (smooth_alm, float32 on the data) with interval="auto" (the
    unconstrained model on sparse X): the same model as on the numpy X. 5 non-zeros
    (8 ELL slots) in 96 columns: ELL pays for that solver (100 * 8^2 < 96^2), so the
    sparse X is never densified."""
    X, y, g = one_hot_data(levels=(4, 10, 80))
    params = dict(tolerance=0.25, max_iter=20, alpha=1e-3)
    dense = PartialParityClassifier(**params).fit(X, y, sensitive_features=g)
    sparse = PartialParityClassifier(**params).fit(
        sp.csr_matrix(X).asformat(fmt), y, sensitive_features=g
    )
    assert sparse.interval_ == dense.interval_
    assert sparse.train_unfairness_ == pytest.approx(dense.train_unfairness_, abs=1e-6)
    _assert_same_fit(sparse, dense, X, atol=1e-6)


@pytest.mark.parametrize("metric", ["partial_statistical_parity", "partial_demographic_parity"])
def test_partial_parity_classifier_sparse_equals_dense_idca(metric, no_densify):
    """IDCA (float64) with the sigmoid surrogate (its constant from the row norms of
    sparse X)."""
    X, y, g = one_hot_data(seed=1)
    params = dict(
        metric=metric,
        interval=(0.0, 0.5),
        tolerance=0.3,
        solver="idca",
        surrogate="sigmoid",
        max_iter=3,
        inner_max_iter=30,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: the result is compared, not judged
        dense = PartialParityClassifier(**params).fit(X, y, sensitive_features=g)
        sparse = PartialParityClassifier(**params).fit(sp.csc_matrix(X), y, sensitive_features=g)
    _assert_same_fit(sparse, dense, X, atol=1e-8)
    np.testing.assert_allclose(sparse.thresholds_, dense.thresholds_, atol=1e-8)


@pytest.mark.parametrize("solver", ["lbfgs", "subgradient"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_penalty_classifier_sparse_equals_dense(fmt, solver, no_densify):
    X, y, g = one_hot_data(seed=2)
    params = dict(interval=(0.0, 0.5), fairness_weight=1.0, max_iter=200, solver=solver)
    dense = PartialParityPenaltyClassifier(**params).fit(X, y, sensitive_features=g)
    sparse = PartialParityPenaltyClassifier(**params).fit(
        sp.csr_matrix(X).asformat(fmt), y, sensitive_features=g
    )
    _assert_same_fit(sparse, dense, X, atol=1e-8)
    assert sparse.penalty_ == pytest.approx(dense.penalty_, abs=1e-10)


def test_sparse_too_dense_for_ell_is_densified_and_fits_the_same():
    """Rows more than 25 % full: the documented rule densifies (as numpy X goes dense)."""
    rng = np.random.default_rng(4)
    g = rng.integers(0, 2, 300)
    X = rng.normal(size=(300, 10)) * (rng.uniform(size=(300, 10)) < 0.6) + g[:, None]
    y = (X[:, 0] + rng.normal(size=300) > 0.5).astype(int)
    params = dict(interval=(0.0, 0.5), tolerance=0.2, max_iter=10)
    dense = PartialParityClassifier(**params).fit(X, y, sensitive_features=g)
    sparse = PartialParityClassifier(**params).fit(sp.csr_matrix(X), y, sensitive_features=g)
    _assert_same_fit(sparse, dense, X, atol=1e-6)


def test_tags_say_sparse():
    assert PartialParityClassifier().__sklearn_tags__().input_tags.sparse
    assert PartialParityPenaltyClassifier().__sklearn_tags__().input_tags.sparse


@pytest.mark.parametrize(
    "cls",
    [
        GroupAUCConstrainedClassifier,
        InterGroupPairwiseConstrainedClassifier,
        IntraGroupPairwiseConstrainedClassifier,
    ],
)
def test_pairwise_baselines_refuse_sparse(cls):
    X, y, g = one_hot_data(60)
    with pytest.raises(TypeError, match=f"{cls.__name__} does not accept sparse X"):
        cls().fit(sp.csr_matrix(X), y, sensitive_features=g)
    assert not cls().__sklearn_tags__().input_tags.sparse


def test_smoothed_solver_stores_narrow_one_hot_rows_dense():
    """The smoothed ALM stores rows dense (float32) where ELL's scattered adds cost more
    than dense products (``smooth_dense_cost() k^2 >= d^2``: 8 slots in 28 columns), ELL
    where they do not (96 columns); IDCA keeps the ELL rule of the density alone. The
    sparse input fits the model of the numpy one either way."""
    from fairest.partial._fit import Settings, build_problem

    for levels, ell in (((4, 10, 12), False), ((4, 10, 80), True)):
        X, y, g = one_hot_data(300, levels=levels)
        args = (sp.csr_matrix(X), y.astype(float), g, np.ones(300), 2, (0.0, 0.5))
        with jax.enable_x64(True):
            _, smooth, _ = build_problem(Settings(), *args, lean=True)
            _, idca, _ = build_problem(Settings(solver="idca"), *args, lean=True)
        assert isinstance(smooth.X, SparseRows) == ell
        assert isinstance(idca.X, SparseRows)
        assert ell or smooth.X.dtype == np.float32
    X, y, g = one_hot_data()
    params = dict(tolerance=0.25, max_iter=20, alpha=1e-3)
    dense = PartialParityClassifier(**params).fit(X, y, sensitive_features=g)
    sparse = PartialParityClassifier(**params).fit(sp.csr_matrix(X), y, sensitive_features=g)
    _assert_same_fit(sparse, dense, X, atol=1e-6)
