"""Group-blind inference shared by every linear fairest classifier and regressor.

Fitted attributes follow scikit-learn's linear models: a classifier stores ``coef_`` of
shape (1, n_features) for two classes or (n_classes, n_features) otherwise and
``intercept_`` of shape (1,) or (n_classes,); a regressor stores ``coef_`` of shape
(n_features,) and a float ``intercept_``. Class 1 is predicted where the score is >= 0
(badr spec section 2), which is also the rule of the exact metrics.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = [
    "LinearClassifierMixin",
    "LinearRegressorMixin",
    "ScoreClassifierMixin",
    "linear_classifier_attributes",
    "positive_scores",
    "score_codes",
]


def positive_scores(scores):
    """Where a two-class score predicts ``classes_[1]``: ``scores >= 0`` (NumPy or JAX).

    The one rule of :meth:`ScoreClassifierMixin.predict` and of every figure (train
    accuracy, accuracy gaps, one-class warnings) that counts a fitted model's hard
    predictions, so that a score of exactly 0 is class 1 in all of them.
    """
    return scores >= 0


def score_codes(scores) -> np.ndarray:
    """Class codes that ``predict`` gives for ``scores``: :func:`positive_scores` for one
    score a row (shape (n,) or (n, 1)), else the arg-max of shape (n, n_classes)."""
    scores = np.asarray(scores)
    if scores.ndim == 1 or scores.shape[1] == 1:
        return positive_scores(scores.reshape(-1)).astype(np.int64)
    return np.argmax(scores, axis=1)


def linear_classifier_attributes(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(coef_, intercept_)`` from parameters with the intercept first.

    ``theta`` of shape (p,) (one score) gives coef_ (1, d); shape (p, K) gives (K, d).
    """
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim == 1:
        theta = theta[:, None]
    return theta[1:].T.copy(), theta[0].copy()


def _linear_scores(estimator, X) -> np.ndarray:
    check_is_fitted(estimator)
    # scipy sparse X is kept sparse (X @ coef) by estimators that take it
    sparse = ["csr", "csc", "coo"] if get_tags(estimator).input_tags.sparse else False
    X = validate_data(estimator, X, dtype=np.float64, reset=False, accept_sparse=sparse)
    return np.asarray(X @ np.asarray(estimator.coef_).T) + estimator.intercept_


def _is_probabilistic(estimator) -> bool:
    return estimator._has_probabilities()


class ScoreClassifierMixin(ClassifierMixin):
    """``predict`` and (when probabilistic) ``predict_proba`` from ``decision_function``.

    Scores are log-odds (two classes, shape (n,)) or logits (shape (n, n_classes)).
    Subclasses define ``decision_function`` and set ``classes_``; they may override
    ``_has_probabilities`` (default: True) and ``_positive`` (the two-class rule).
    """

    def _has_probabilities(self) -> bool:
        return True

    def predict(self, X):
        """Predicted class labels: score >= 0 for two classes, else the arg-max score.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to score; no sensitive features (prediction is group-blind).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels, taken from ``classes_``.
        """
        scores = self.decision_function(X)
        codes = (
            self._positive(scores).astype(int) if scores.ndim == 1 else np.argmax(scores, axis=1)
        )
        return self.classes_[codes]

    def _positive(self, scores):
        """Where a two-class score predicts ``classes_[1]`` (override for a threshold)."""
        return positive_scores(scores)

    @available_if(_is_probabilistic)
    def predict_proba(self, X):
        """Class probabilities: sigmoid (two classes) or softmax of the scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to score; no sensitive features (prediction is group-blind).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class, in the order of ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            positive = expit(scores)
            return np.column_stack([1.0 - positive, positive])
        return softmax(scores, axis=1)

    @available_if(_is_probabilistic)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to score; no sensitive features (prediction is group-blind).

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probability of each class, in the order of ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([log_expit(-scores), log_expit(scores)])
        return log_softmax(scores, axis=1)


class LinearClassifierMixin(ScoreClassifierMixin):
    """Linear scores ``X coef_^T + intercept_`` with the inference of
    :class:`ScoreClassifierMixin`; ``fit`` calls ``_set_linear_parameters``."""

    def _set_linear_parameters(self, theta) -> None:
        """Set ``coef_`` (k, d) and ``intercept_`` (k,) from ``theta`` (intercept first)."""
        self.coef_, self.intercept_ = linear_classifier_attributes(theta)

    def decision_function(self, X):
        """Return the scores of the linear model (group-blind).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to score; no sensitive features (prediction is group-blind).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive scores favour ``classes_[1]``.
        """
        scores = _linear_scores(self, X)
        return scores[:, 0] if scores.shape[1] == 1 else scores


class LinearRegressorMixin(RegressorMixin):
    """``predict`` of a fitted linear regressor (``coef_`` (d,), float ``intercept_``)."""

    def _set_linear_parameters(self, theta) -> None:
        """Set ``coef_`` (d,) and the float ``intercept_`` from ``theta`` (intercept first)."""
        theta = np.asarray(theta, dtype=np.float64)
        self.intercept_ = float(theta[0])
        self.coef_ = theta[1:].copy()

    def predict(self, X):
        """Predicted values ``intercept_ + X coef_`` (group-blind).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to score; no sensitive features (prediction is group-blind).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted targets.
        """
        return _linear_scores(self, X)
