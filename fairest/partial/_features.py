"""Feature map of the paper's linear experiments, as a scikit-learn transformer."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["GroupInteractionFeatures"]


class GroupInteractionFeatures(TransformerMixin, BaseEstimator):
    r"""Append the products of the features with a numeric group column.

    With the group code :math:`\gamma` stored in column ``group_column`` of ``X``, the
    output is ``[X, gamma * X_rest]`` where ``X_rest`` is ``X`` without that column; a
    linear model on it (with its intercept) is the paper's
    :math:`h_w(\xi) = \langle w, (1, \xi, \gamma, \gamma \xi)\rangle` (section 7.1 of the
    reference, with :math:`\gamma` coded 1 / 2). The group is then an ordinary input
    feature, so prediction needs no ``sensitive_features``.

    Parameters
    ----------
    group_column : int, default=-1
        Index of the group-code column in ``X``.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Section 7.1.
    """

    _parameter_constraints: dict = {"group_column": [Integral]}

    def __init__(self, group_column=-1):
        self.group_column = group_column

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check ``X`` and the column index.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, with the numeric group code in column ``group_column``.
        y : None
            Ignored.

        Returns
        -------
        self : GroupInteractionFeatures
            The fitted transformer.
        """
        X = validate_data(self, X, dtype=np.float64)
        self._column(X.shape[1])
        return self

    def _column(self, n_features):
        if not -n_features <= self.group_column < n_features:
            raise ValueError(
                f"group_column={self.group_column} is out of range for {n_features} features."
            )
        return self.group_column % n_features

    def transform(self, X):
        """``[X, gamma * X_rest]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to transform, with the numeric group code in column ``group_column``.

        Returns
        -------
        X_out : ndarray of shape (n_samples, 2 * n_features - 1)
            ``X`` followed by the products of the group code with the other
            ``n_features - 1`` columns.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        j = self._column(X.shape[1])
        rest = np.delete(X, j, axis=1)
        return np.hstack([X, X[:, [j]] * rest])
