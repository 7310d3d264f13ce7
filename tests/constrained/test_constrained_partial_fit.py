"""partial_fit of LossGapConstrainedClassifier and PrunedFairClassifier.

LossGap: one call on the whole data is ``fit`` with ``n_epochs=1`` (same initialisation and
random streams: bitwise, every scan solver, weighted or not); a shuffled chunk stream of
the unconstrained solver converges to scikit-learn's logistic regression optimum.
Pruned: ``dense_n_epochs + n_epochs`` calls on the whole data are ``fit`` (bitwise); a
shuffled chunk stream reaches the fit's sparsity and accuracy. Both: pickling mid-stream,
partial_fit after fit, and the error cases."""

import pickle

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from fairest import LossGapConstrainedClassifier, PrunedFairClassifier

# streams of a few hundred rows and one epoch, whose fits often miss the tolerance (or
# predict one class) and warn; the warnings themselves: test_constrained_defaults.py
pytestmark = pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")

CHUNK = 400


def _data(n=2 * CHUNK, seed=0, groups=("a", "b")):
    rng = np.random.default_rng(seed)
    s = rng.choice(np.array(groups), n, p=[0.7, 0.3] if len(groups) == 2 else None)
    shift = (s == groups[1]).astype(float)
    X = rng.normal(size=(n, 4)) + shift[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, s


def _layers_equal(a, b):
    for (Wa, ba), (Wb, bb) in zip(a.params_, b.params_):
        np.testing.assert_array_equal(Wa, Wb)
        np.testing.assert_array_equal(ba, bb)


# ------------------------------------------------------------------------------------------
# LossGapConstrainedClassifier
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solver, weighted", [("ssl-alm", True), ("ssw", False), ("penalty", True), ("sgd", False)]
)
def test_loss_gap_one_call_on_the_whole_data_is_fit_with_one_epoch(solver, weighted):
    X, y, s = _data(n=CHUNK)
    weight = np.random.default_rng(1).uniform(0.5, 2.0, CHUNK) if weighted else None
    settings = dict(hidden_layer_sizes=(4,), solver=solver, batch_size=32, random_state=0)
    fitted = LossGapConstrainedClassifier(n_epochs=1, **settings).fit(
        X, y, sensitive_features=s, sample_weight=weight
    )
    streamed = LossGapConstrainedClassifier(**settings).partial_fit(
        X, y, sensitive_features=s, sample_weight=weight, classes=[0, 1]
    )
    _layers_equal(streamed, fitted)
    assert streamed.n_iter_ == fitted.n_iter_
    np.testing.assert_array_equal(streamed.constraint_values_, fitted.constraint_values_)
    if solver == "ssl-alm":
        np.testing.assert_array_equal(streamed.multipliers_, fitted.multipliers_)


def test_loss_gap_chunk_stream_converges_to_the_logistic_regression_optimum():
    X, y, s = _data(n=4 * CHUNK, seed=2)
    optimum = LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000).fit(X, y)
    model = LossGapConstrainedClassifier(
        hidden_layer_sizes=(),
        solver="sgd",
        batch_size=32,
        solver_params={"learning_rate": 0.1},
        dtype="float64",
        random_state=0,
    )
    rng = np.random.default_rng(1)
    for _ in range(6):
        for rows in np.array_split(rng.permutation(X.shape[0]), 4):
            model.partial_fit(X[rows], y[rows], sensitive_features=s[rows], classes=[0, 1])
    theta = np.r_[model.intercept_, model.coef_.ravel()]
    reference = np.r_[optimum.intercept_, optimum.coef_.ravel()]
    # from the initialisation (|theta0| < 1.2) to within 10% of |optimum| (about 2.3)
    assert np.linalg.norm(theta - reference) < 0.1 * np.linalg.norm(reference)
    assert model.n_iter_ == 6 * 4 * (CHUNK // 32 + 1)


def test_loss_gap_running_weight_means_scale_the_losses_of_later_chunks():
    X, y, s = _data()
    weight = np.r_[np.ones(CHUNK), np.full(CHUNK, 3.0)]
    model = LossGapConstrainedClassifier(hidden_layer_sizes=(), batch_size=32, random_state=0)
    model.partial_fit(X[:CHUNK], y[:CHUNK], sensitive_features=s[:CHUNK], classes=[0, 1])
    model.partial_fit(
        X[CHUNK:], y[CHUNK:], sensitive_features=s[CHUNK:], sample_weight=weight[CHUNK:]
    )
    # running mean weight over both chunks: (400 * 1 + 400 * 3) / 800 = 2
    total, count = model._stream_state.objective_totals
    assert total[0] / count[0] == pytest.approx(2.0)


def test_loss_gap_pickled_mid_stream_continues_identically():
    X, y, s = _data()
    model = LossGapConstrainedClassifier(hidden_layer_sizes=(4,), batch_size=32, random_state=0)
    model.partial_fit(X[:CHUNK], y[:CHUNK], sensitive_features=s[:CHUNK], classes=[0, 1])
    restored = pickle.loads(pickle.dumps(model))
    for estimator in (model, restored):
        estimator.partial_fit(X[CHUNK:], y[CHUNK:], sensitive_features=s[CHUNK:])
    _layers_equal(restored, model)
    np.testing.assert_array_equal(restored.multipliers_, model.multipliers_)


def test_loss_gap_partial_fit_after_fit_starts_from_the_fitted_model():
    X, y, s = _data(n=CHUNK)
    model = LossGapConstrainedClassifier(
        hidden_layer_sizes=(), solver="sgd", n_epochs=1, batch_size=32, random_state=0
    ).fit(X, y, sensitive_features=s)
    before = model.coef_.copy()
    model.partial_fit(X, y, sensitive_features=s)
    assert model.n_iter_ == 2 * (CHUNK // 32 + 1)
    # a second epoch from the fitted model: it moved, but little (one epoch of small steps)
    assert 0 < np.abs(model.coef_ - before).max() < 0.5


def test_loss_gap_errors():
    X, y, s = _data()
    with pytest.raises(ValueError, match="solver='ghost'"):
        LossGapConstrainedClassifier(solver="ghost").partial_fit(
            X, y, sensitive_features=s, classes=[0, 1]
        )
    with pytest.raises(ValueError, match="classes must be given on the first call"):
        LossGapConstrainedClassifier().partial_fit(X, y, sensitive_features=s)
    model = LossGapConstrainedClassifier(hidden_layer_sizes=(), batch_size=32, random_state=0)
    with pytest.raises(ValueError, match="Every chunk needs rows of every group"):
        only_a = s == "a"
        model.partial_fit(
            X[only_a], y[only_a], sensitive_features=s[only_a], classes=[0, 1], groups=["a", "b"]
        )
    model.partial_fit(X, y, sensitive_features=s, classes=[0, 1])
    with pytest.raises(ValueError, match=r"group labels \['c'\] were not in the groups"):
        model.partial_fit(X, y, sensitive_features=np.where(s == "a", "c", s))
    only_b = s == "b"
    with pytest.raises(ValueError, match="Every chunk needs rows of every group"):
        model.partial_fit(X[only_b], y[only_b], sensitive_features=s[only_b])
    # a refused chunk leaves the stream as it was: its weights are not in the totals
    assert model._stream_state.n_calls == 1
    assert model._stream_state.cell_totals[1].sum() == X.shape[0]


def test_loss_gap_partial_fit_requests_the_groups():
    requests = LossGapConstrainedClassifier().get_metadata_routing().partial_fit.requests
    assert requests["sensitive_features"] is True


# ------------------------------------------------------------------------------------------
# PrunedFairClassifier
# ------------------------------------------------------------------------------------------

PRUNED = dict(
    hidden_layer_sizes=(8,),
    dense_n_epochs=3,
    n_epochs=4,
    pruning_epochs=2,
    target_sparsity=0.5,
    batch_size=64,
    random_state=0,
)


@pytest.mark.parametrize(
    "metric, weighted", [("excess_accuracy_gap", False), ("loss_parity", True)]
)
def test_pruned_schedule_of_calls_on_the_whole_data_is_fit(metric, weighted):
    X, y, s = _data(groups=("a", "b", "c"))
    weight = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0]) if weighted else None
    settings = {**PRUNED, "metric": metric, "buffer_overall": "weighted"}
    fitted = PrunedFairClassifier(**settings).fit(X, y, sensitive_features=s, sample_weight=weight)
    streamed = PrunedFairClassifier(**settings)
    for _ in range(PRUNED["dense_n_epochs"] + PRUNED["n_epochs"]):
        streamed.partial_fit(X, y, sensitive_features=s, sample_weight=weight, classes=[0, 1])
    _layers_equal(streamed, fitted)
    np.testing.assert_array_equal(streamed.multipliers_, fitted.multipliers_)
    for mask_s, mask_f in zip(streamed.masks_, fitted.masks_):
        np.testing.assert_array_equal(mask_s, mask_f)
    assert streamed.n_iter_ == fitted.n_iter_
    assert streamed.dense_accuracy_ == pytest.approx(fitted.dense_accuracy_, rel=1e-12)


def test_pruned_chunk_stream_reaches_the_fit_sparsity_and_accuracy():
    X, y, s = _data(n=4 * CHUNK, seed=3)
    fitted = PrunedFairClassifier(**PRUNED).fit(X, y, sensitive_features=s)
    per_epoch = 4  # chunks per pass: the schedule counts calls, so it is 4x as long
    settings = {
        **PRUNED,
        "dense_n_epochs": per_epoch * PRUNED["dense_n_epochs"],
        "n_epochs": per_epoch * PRUNED["n_epochs"],
        "pruning_epochs": per_epoch * PRUNED["pruning_epochs"],
    }
    streamed = PrunedFairClassifier(**settings)
    rng = np.random.default_rng(1)
    for _ in range(PRUNED["dense_n_epochs"] + PRUNED["n_epochs"]):
        for rows in np.array_split(rng.permutation(X.shape[0]), per_epoch):
            streamed.partial_fit(X[rows], y[rows], sensitive_features=s[rows], classes=[0, 1])
    assert streamed.sparsity_ == fitted.sparsity_ == pytest.approx(0.5)
    accuracy = streamed.score(X, y)
    assert accuracy > 0.7  # the labels are 1.5 noise standard deviations apart
    assert abs(accuracy - fitted.score(X, y)) < 0.05


def test_pruned_pickled_mid_stream_continues_identically():
    X, y, s = _data()
    model = PrunedFairClassifier(**PRUNED)
    for _ in range(PRUNED["dense_n_epochs"] + 1):  # into the fine-tuning
        model.partial_fit(X[:CHUNK], y[:CHUNK], sensitive_features=s[:CHUNK], classes=[0, 1])
    restored = pickle.loads(pickle.dumps(model))
    for estimator in (model, restored):
        estimator.partial_fit(X[CHUNK:], y[CHUNK:], sensitive_features=s[CHUNK:])
    _layers_equal(restored, model)


def test_pruned_errors_leave_the_estimator_unchanged():
    X, y, s = _data()
    with pytest.raises(ValueError, match="early_stopping"):
        PrunedFairClassifier(early_stopping=True).partial_fit(
            X, y, sensitive_features=s, classes=[0, 1]
        )
    model = PrunedFairClassifier(**{**PRUNED, "dense_learning_rate": 1e6})
    with pytest.raises(ValueError, match="non-finite.*the estimator is unchanged"):
        model.partial_fit(1e3 * X, y, sensitive_features=s, classes=[0, 1])
    assert not hasattr(model, "params_")
