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
    group_codes_ : ndarray of shape (n_codes,)
        The distinct group codes of the fitted data, sorted. ``transform`` refuses a code
        outside them (a ``ValueError`` naming it), as scikit-learn's ``OneHotEncoder``
        does with ``handle_unknown="error"``: the cross terms of an unseen code are an
        extrapolation of the fitted model along the group axis, not a group it was
        trained on.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    References
    ----------
    .. [1] He, Y., Huang, Y., Yao, Y. and Lin, Q. "Enforcing Fair Predicted Scores on
       Intervals of Percentiles by Difference-of-Convex Constraints", arXiv:2505.12530,
       2025. Section 7.1.

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.partial import GroupInteractionFeatures
    >>> X = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 2.0]])
    >>> GroupInteractionFeatures(group_column=2).fit_transform(X)
    array([[1., 2., 1., 1., 2.],
           [3., 4., 2., 6., 8.]])
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
        self.group_codes_ = np.unique(X[:, self._column(X.shape[1])])
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

        Raises
        ------
        ValueError
            If column ``group_column`` holds a code not seen in ``fit``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        j = self._column(X.shape[1])
        unseen = np.setdiff1d(X[:, j], self.group_codes_)
        if unseen.size:
            shown = ", ".join(f"{code:g}" for code in unseen[:10])
            more = f" and {unseen.size - 10} more" if unseen.size > 10 else ""
            known = ", ".join(f"{code:g}" for code in self.group_codes_[:10])
            raise ValueError(
                f"GroupInteractionFeatures: column {self.group_column} (group_column) holds "
                f"group codes not seen in fit: {shown}{more} (fitted codes: {known}"
                f"{', ...' if self.group_codes_.size > 10 else ''}). Fit the transformer on "
                "data that holds every group, or map these rows to a fitted code."
            )
        rest = np.delete(X, j, axis=1)
        return np.hstack([X, X[:, [j]] * rest])
