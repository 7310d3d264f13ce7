"""Sparse X (scipy CSR / CSC / COO) for LossGapConstrainedClassifier and PrunedFairClassifier.

The reference is the same estimator fitted on the dense copy of the same data (same draws,
same initialisation): float64 predictions equal to 1e-8 for every solver and for
``partial_fit``, float32 to 1e-5 (the sparse products sum in another order). The fits
never densify X (``toarray`` / ``todense`` raise inside them) and the device copy holds
the stored entries only. These small X would be placed dense
(``fairest.constrained._sparse.dense_copy_pays``), so every test here but the last turns
that off (``CONSTRAINED_TUNING.densify_max_bytes=0``); the last checks the dense
placement of a small one-hot X against the sparse one."""

import jax
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.compose import make_column_transformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils import get_tags

import fairest.constrained._sparse as sparse_module
from fairest import LossGapConstrainedClassifier, PrunedFairClassifier
from fairest.constrained._defaults import CONSTRAINED_TUNING

FLOAT64_ATOL = 1e-8
FLOAT32_ATOL = 1e-5
# sparse against dense fits on small data, whose fits miss the tolerance (or predict one
# class) and warn alike; the warnings themselves: test_constrained_defaults.py
pytestmark = pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")


@pytest.fixture(autouse=True)
def sparse_placement(request):
    """The sparse placement (a SparseDesign) for every test but the dense-placement one."""
    if request.node.name.startswith("test_small_one_hot_x_is_placed_dense"):
        yield
        return
    with CONSTRAINED_TUNING.override(densify_max_bytes=0):
        yield


def _data(n=300, d=12, density=0.2, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.choice(np.array(["a", "b"]), n, p=[0.6, 0.4])
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    X[:, 0] += s == "b"
    y = (X[:, 0] + X[:, 1] + rng.normal(size=n) > 0.4).astype(int)
    return X, y, s


@pytest.fixture
def no_densifying(monkeypatch):
    """Fits under this fixture raise if they densify a scipy sparse matrix."""

    def refuse(self, *args, **kwargs):
        raise AssertionError("X was densified")

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)


def _loss_gap(solver, dtype="float64", **extra):
    settings = dict(hidden_layer_sizes=(4,), solver=solver, n_epochs=2, random_state=0)
    if solver == "ghost":
        settings.update(max_iter=4, n_epochs=None)
    return LossGapConstrainedClassifier(dtype=dtype, **{**settings, **extra})


def _pruned(dtype="float64", **extra):
    return PrunedFairClassifier(
        hidden_layer_sizes=(8,),
        dense_n_epochs=2,
        n_epochs=3,
        pruning_epochs=1,
        target_sparsity=0.5,
        batch_size=32,
        dtype=dtype,
        random_state=0,
        **extra,
    )


def _same_scores(sparse_fit, dense_fit, X_sparse, X, atol):
    np.testing.assert_allclose(
        sparse_fit.decision_function(X_sparse), dense_fit.decision_function(X), rtol=0, atol=atol
    )
    np.testing.assert_array_equal(sparse_fit.predict(X_sparse), dense_fit.predict(X))


@pytest.mark.parametrize("solver", ["ssl-alm", "alm", "ssw", "sgd", "penalty", "ghost"])
def test_loss_gap_sparse_fit_equals_the_dense_fit(solver, no_densifying):
    X, y, s = _data()
    weight = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    dense = _loss_gap(solver).fit(X, y, sensitive_features=s, sample_weight=weight)
    sparse = _loss_gap(solver).fit(sp.csr_matrix(X), y, sensitive_features=s, sample_weight=weight)
    _same_scores(sparse, dense, sp.csr_matrix(X), X, FLOAT64_ATOL)
    np.testing.assert_allclose(sparse.constraint_values_, dense.constraint_values_, atol=1e-10)


def test_loss_gap_full_batch_and_every_sparse_format(no_densifying):
    X, y, s = _data(seed=3)
    make = lambda: _loss_gap(  # noqa: E731
        "ssw", hidden_layer_sizes=(), batch_size=None, constraint_batch_size=None
    )
    dense = make().fit(X, y, sensitive_features=s)
    for to_format in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        sparse = make().fit(to_format(X), y, sensitive_features=s)
        _same_scores(sparse, dense, to_format(X), X, FLOAT64_ATOL)
        assert sparse.step_counts_ == dense.step_counts_


def test_loss_gap_float32_sparse_fit_within_the_documented_tolerance(no_densifying):
    X, y, s = _data(seed=4)
    dense = _loss_gap("ssl-alm", dtype="float32").fit(X, y, sensitive_features=s)
    sparse = _loss_gap("ssl-alm", dtype="float32").fit(sp.csr_matrix(X), y, sensitive_features=s)
    _same_scores(sparse, dense, sp.csr_matrix(X), X, FLOAT32_ATOL)


@pytest.mark.parametrize("dtype, atol", [("float64", FLOAT64_ATOL), ("float32", FLOAT32_ATOL)])
def test_pruned_sparse_fit_equals_the_dense_fit(dtype, atol, no_densifying):
    X, y, s = _data(seed=5)
    weight = np.random.default_rng(2).uniform(0.5, 2.0, y.size)
    dense = _pruned(dtype).fit(X, y, sensitive_features=s, sample_weight=weight)
    sparse = _pruned(dtype).fit(sp.csc_matrix(X), y, sensitive_features=s, sample_weight=weight)
    _same_scores(sparse, dense, sp.csr_matrix(X), X, atol)
    for mask_sparse, mask_dense in zip(sparse.masks_, dense.masks_):
        np.testing.assert_array_equal(mask_sparse, mask_dense)


def test_pruned_early_stopping_holds_out_sparse_rows(no_densifying):
    X, y, s = _data(seed=6)
    dense = _pruned(early_stopping=True).fit(X, y, sensitive_features=s)
    sparse = _pruned(early_stopping=True).fit(sp.coo_matrix(X), y, sensitive_features=s)
    _same_scores(sparse, dense, sp.csr_matrix(X), X, FLOAT64_ATOL)
    assert sparse.best_epoch_ == dense.best_epoch_


@pytest.mark.parametrize("make", [lambda: _loss_gap("ssl-alm", batch_size=32), _pruned])
def test_sparse_chunk_stream_equals_the_dense_stream(make, no_densifying):
    X, y, s = _data(n=600, seed=7)
    chunks = np.array_split(np.arange(y.size), 3)
    streams = []
    for convert in (np.asarray, sp.csr_matrix):
        model = make()
        for rows in chunks:
            model.partial_fit(convert(X[rows]), y[rows], sensitive_features=s[rows], classes=[0, 1])
        streams.append(model)
    dense, sparse = streams
    _same_scores(sparse, dense, sp.csr_matrix(X), X, FLOAT64_ATOL)


def test_device_copy_holds_the_stored_entries_only(monkeypatch):
    X, y, s = _data(n=400, d=50, density=0.05, seed=8)
    X_sparse = sp.csr_matrix(X)
    designs = []
    place = sparse_module.place_with_design

    def spy(X, rows, dtype):
        placed = place(X, rows, dtype)
        designs.append(placed["X"])
        return placed

    monkeypatch.setattr(sparse_module, "place_with_design", spy)
    import fairest.constrained._engine._runtime as engine

    monkeypatch.setattr(engine, "place_with_design", spy)  # LossGap's and Pruned's placement
    _loss_gap("sgd").fit(X_sparse, y, sensitive_features=s)
    _pruned().fit(X_sparse, y, sensitive_features=s)
    assert len(designs) >= 2
    for design in designs:
        assert isinstance(design, sparse_module.SparseDesign)
        assert design.rows.nnz == X_sparse.nnz  # padding rows add no entries
        assert design.width == np.diff(X_sparse.indptr).max()


def test_one_hot_pipeline_matches_the_dense_pipeline():
    rng = np.random.default_rng(9)
    n = 400
    frame = {
        "job": rng.choice([f"j{k}" for k in range(15)], n),
        "age": rng.normal(40, 10, n),
    }
    import pandas as pd

    frame = pd.DataFrame(frame)
    groups = rng.choice(["f", "m"], n)
    y = ((frame["job"].str[1:].astype(int) % 3 == 0) ^ (rng.random(n) < 0.2)).astype(int)

    def pipeline(sparse_output):
        encode = make_column_transformer(
            (OneHotEncoder(sparse_output=sparse_output), ["job"]),
            remainder=StandardScaler(),
            sparse_threshold=1.0 if sparse_output else 0.0,
        )
        return make_pipeline(encode, _loss_gap("ssl-alm", hidden_layer_sizes=()))

    params = {"lossgapconstrainedclassifier__sensitive_features": groups}
    sparse = pipeline(True).fit(frame, y, **params)
    assert sp.issparse(sparse[0].transform(frame))
    dense = pipeline(False).fit(frame, y, **params)
    np.testing.assert_allclose(
        sparse.decision_function(frame), dense.decision_function(frame), atol=FLOAT64_ATOL
    )


def test_sparse_tags():
    assert get_tags(LossGapConstrainedClassifier()).input_tags.sparse
    assert get_tags(PrunedFairClassifier()).input_tags.sparse


def test_largest_magnitude_of_the_divergence_message_reads_sparse_x():
    X = _data()[0]
    X[3, 5] = -40.0
    for convert in (np.asarray, sp.csr_matrix, sp.coo_matrix):
        assert sparse_module.largest_magnitude(convert(X)) == 40.0
    assert sparse_module.largest_magnitude(sp.csr_matrix((3, 4))) == 0.0


@pytest.mark.parametrize("make", [_loss_gap, _pruned], ids=["loss_gap", "pruned"])
def test_small_one_hot_x_is_placed_dense_with_the_sparse_fits_results(make):
    """A small sparse X with at least densify_min_density of its entries stored is placed
    as a dense array (no SparseDesign in the device data); the fit equals the sparse
    placement's up to float32 rounding. A sparser or a larger X keeps the sparse
    placement."""
    X, y, s = _data(density=0.2)
    X = sp.csr_matrix(X)
    assert sparse_module.dense_copy_pays(X)
    placed = sparse_module.place_with_design(X, {"y": np.zeros(320, np.int32)}, np.float32)
    assert isinstance(placed["X"], jax.Array) and placed["X"].shape == (320, X.shape[1])
    np.testing.assert_array_equal(
        np.asarray(placed["X"])[: X.shape[0]], X.toarray().astype(np.float32)
    )
    assert not np.asarray(placed["X"])[X.shape[0] :].any()
    kwargs = {} if make is _pruned else {"solver": "alm"}
    dense = make(dtype="float32", **kwargs).fit(X, y, sensitive_features=s)
    with CONSTRAINED_TUNING.override(densify_max_bytes=0):
        sparse = make(dtype="float32", **kwargs).fit(X, y, sensitive_features=s)
    np.testing.assert_allclose(dense.predict_proba(X), sparse.predict_proba(X), atol=FLOAT32_ATOL)
    with CONSTRAINED_TUNING.override(densify_min_density=0.5):
        assert not sparse_module.dense_copy_pays(X)
    with CONSTRAINED_TUNING.override(densify_max_bytes=X.shape[0] * X.shape[1] * 8 - 1):
        assert not sparse_module.dense_copy_pays(X)
