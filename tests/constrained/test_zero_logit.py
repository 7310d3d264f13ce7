"""A logit of exactly 0 is class 1 in ``predict`` (``ScoreClassifierMixin``: score >= 0)
and in every figure of the constrained family that counts hard predictions: the train
accuracy and excess accuracy gaps, the one-class warnings, the dense prediction of
``PrunedFairClassifier.disparity_report`` and the batch accuracies of the epoch kernel.

Every model here has zero weights and a zero intercept, so every logit is exactly 0."""

from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest

from fairest._kernels._losses import cross_entropy_stats
from fairest.constrained import LossGapConstrainedClassifier, PrunedFairClassifier
from fairest.constrained._pruned_fit import warn_pruned_fit
from fairest.utils import FairnessWarning


def _data():
    """Two groups of 100 rows, 20 and 40 positives: 30 % positive labels overall."""
    X = np.random.default_rng(0).normal(size=(200, 2))
    groups = np.repeat([0, 1], 100)
    y = np.zeros(200, dtype=np.int32)
    y[:20] = 1
    y[100:140] = 1
    return X, y, groups


def _zero_model(estimator, n_features=2):
    """``estimator`` as fitted with an all-zero network (its dense model too)."""
    estimator.params_ = [(np.zeros((n_features, 1)), np.zeros(1))]
    estimator.dense_params_ = [(np.zeros((n_features, 1)), np.zeros(1))]
    estimator.classes_ = np.array([0, 1])
    estimator.n_features_in_ = n_features
    return estimator


def _accuracies(pred, y, groups):
    """Overall and per-group accuracy of the labels ``pred``."""
    right = (pred == y).astype(np.float64)
    return right.mean(), np.array([right[groups == k].mean() for k in (0, 1)])


def test_predict_takes_a_zero_logit_as_class_1():
    X, _, _ = _data()
    est = _zero_model(PrunedFairClassifier())
    np.testing.assert_array_equal(est.decision_function(X), 0.0)
    np.testing.assert_array_equal(est.predict(X), 1)


def test_pruned_train_accuracy_and_gaps_count_predicts_labels():
    """A reference of ``predict``'s own accuracies: the train accuracy is ``predict``'s
    and every excess accuracy gap is 0 (the model against itself)."""
    X, y, groups = _data()
    est = _zero_model(PrunedFairClassifier(tolerance=0.0))
    acc, acc_g = _accuracies(est.predict(X), y, groups)
    ref = {"acc": acc, "acc_g": acc_g, "loss": 0.0, "loss_g": np.zeros(2)}
    psi, acc_s, _ = est._store_train_gaps(ref, X, y, groups, None, np.array([0, 1]))
    assert acc_s == pytest.approx(acc) == pytest.approx(0.3)
    assert est.train_disparity_["acc"] == pytest.approx(acc)
    np.testing.assert_allclose(psi, 0.0, atol=1e-12)
    assert est.is_feasible_


def test_pruned_disparity_report_predicts_the_dense_model_as_predict_does():
    """Dense and sparse model are the same all-zero network: no accuracy gap anywhere."""
    X, y, groups = _data()
    report = _zero_model(PrunedFairClassifier()).disparity_report(X, y, groups)
    np.testing.assert_allclose(report["accuracy_gap"], 0.0, atol=1e-12)
    groups_only = report.drop(index="summary")
    np.testing.assert_allclose(groups_only["dense_accuracy"], [0.2, 0.4])
    np.testing.assert_allclose(groups_only["sparse_accuracy"], [0.2, 0.4])


def test_pruned_one_class_warning_names_the_class_predict_gives():
    X, y, groups = _data()
    est = _zero_model(PrunedFairClassifier(metric=None))
    logits = np.zeros((X.shape[0], 1))
    with pytest.warns(FairnessWarning, match="predicts one class nearly everywhere") as record:
        warn_pruned_fit(est, logits, y, groups, None, np.array(["a", "b"]))
    (message,) = [str(w.message) for w in record]
    assert f"share predicted {est.predict(X)[0].item()!r} 1.000" in message
    assert "accuracy 0.300" in message and "'a': 1.000 / 0.200" in message


def test_loss_gap_one_class_warning_names_the_class_predict_gives():
    X, y, groups = _data()
    est = _zero_model(LossGapConstrainedClassifier((), solver="sgd"))
    setup = SimpleNamespace(
        groups=groups,
        labels=np.array(["a", "b"]),
        solver="sgd",
        y_codes=y,
        weight=None,
        classes=est.classes_,
    )
    logits = np.zeros((X.shape[0], 1))
    with pytest.warns(FairnessWarning, match="predicts one class nearly everywhere") as record:
        est._warn_fit(setup, logits)
    (message,) = [str(w.message) for w in record]
    assert f"share predicted {est.predict(X)[0].item()!r} 1.000" in message
    assert "accuracy 0.300" in message and "'b': 1.000 / 0.400" in message


def test_epoch_kernel_correctness_takes_a_zero_logit_as_class_1():
    """The per-row correctness of the jitted epochs (batch accuracies, the replay buffer
    of accuracy gaps) is the host figures' rule."""
    _, correct, _ = cross_entropy_stats(jnp.zeros((4, 1)), jnp.array([0, 1, 0, 1]))
    np.testing.assert_array_equal(np.asarray(correct), [0.0, 1.0, 0.0, 1.0])
