"""Cross-validation splitters that keep every (label, group) cell in every fold."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import BaseCrossValidator, StratifiedKFold
from sklearn.utils.validation import check_array

from fairest.utils._validation import encode_groups

__all__ = ["GroupStratifiedKFold"]


class GroupStratifiedKFold(BaseCrossValidator):
    """K-fold splitter stratified on the label x sensitive-group cells.

    Each fold keeps approximately the proportion of every (label, group) cell, so small
    groups and their positives appear in every training and test fold. It requests
    ``sensitive_features`` through metadata routing by default, so
    ``GridSearchCV(..., cv=GroupStratifiedKFold()).fit(X, y, sensitive_features=s)``
    stratifies on ``s`` once ``sklearn.set_config(enable_metadata_routing=True)``. Without
    routing, pass the sensitive features as ``groups`` (the legacy path of scikit-learn's
    search and cross-validation functions).

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds (at least 2).
    shuffle : bool, default=False
        Whether to shuffle each cell before splitting.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffling (only when ``shuffle=True``).

    See Also
    --------
    sklearn.model_selection.StratifiedKFold : stratification on the label only.

    References
    ----------
    .. [1] Kohavi, R. "A study of cross-validation and bootstrap for accuracy estimation
       and model selection", IJCAI 1995 (stratified cross-validation).

    Examples
    --------
    >>> import numpy as np
    >>> from fairest.model_selection import GroupStratifiedKFold
    >>> y = np.array([0, 1] * 10)
    >>> s = np.array(["a"] * 16 + ["b"] * 4)
    >>> cv = GroupStratifiedKFold(n_splits=2)
    >>> [sorted(set(s[test].tolist())) for _, test in cv.split(np.zeros((20, 1)), y, sensitive_features=s)]
    [['a', 'b'], ['a', 'b']]
    """

    __metadata_request__split = {"sensitive_features": True}

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None):
        self.n_splits = n_splits
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None, *, sensitive_features=None):
        """Number of splitting iterations.

        Parameters
        ----------
        X, y, groups, sensitive_features : object
            Ignored, for API compatibility.

        Returns
        -------
        n_splits : int
            The number of folds, ``n_splits``.
        """
        return self.n_splits

    def split(self, X, y, groups=None, *, sensitive_features=None):
        """Generate train/test indices.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; only its length is used.
        y : array-like of shape (n_samples,)
            Class labels.
        groups : array-like of shape (n_samples,) or (n_samples, k), default=None
            Sensitive features, when passed through the legacy ``groups`` argument.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Sensitive features (takes precedence over ``groups``).

        Yields
        ------
        train : ndarray
            Indices of the training rows of the fold.
        test : ndarray
            Indices of the test rows of the fold.
        """
        sensitive = sensitive_features if sensitive_features is not None else groups
        if sensitive is None:
            raise ValueError(
                "GroupStratifiedKFold needs the sensitive features: pass "
                "sensitive_features=... with metadata routing enabled, or groups=... "
                "without it."
            )
        y = check_array(y, ensure_2d=False, dtype=None)
        codes, _ = encode_groups(sensitive, n_samples=len(y))
        _, labels = np.unique(y, return_inverse=True)
        cells = labels.astype(np.int64) * (codes.max() + 1) + codes
        splitter = StratifiedKFold(
            self.n_splits, shuffle=self.shuffle, random_state=self.random_state
        )
        yield from splitter.split(np.zeros(len(y)), cells)
