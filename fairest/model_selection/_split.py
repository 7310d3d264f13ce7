"""Cross-validation splitters that keep every (label, group) cell in every fold."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import BaseCrossValidator, StratifiedKFold
from sklearn.utils.validation import check_array

from fairest.utils._degenerate import plain_label
from fairest.utils._validation import encode_groups

__all__ = ["GroupStratifiedKFold"]


class GroupStratifiedKFold(BaseCrossValidator):
    """K-fold splitter stratified on the label x sensitive-group cells.

    Each fold keeps approximately the proportion of every (label, group) cell, so small
    groups and their positives appear in every training and test fold: a group of at
    least ``n_splits`` rows is in every test fold, and so is a cell of at least
    ``n_splits`` rows. It requests
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
        codes, groups = encode_groups(sensitive, n_samples=len(y))
        classes, labels = np.unique(y, return_inverse=True)
        cells = codes.astype(np.int64) * len(classes) + labels
        # StratifiedKFold deals every cell's rows round robin over the folds, the cells in
        # the order they first appear; fed in group-major order, a group's cells are
        # consecutive, so its rows go round robin too and a group of at least n_splits
        # rows is in every test fold (and every training fold), whatever its cells' sizes
        order = np.argsort(cells, kind="stable")
        splitter = StratifiedKFold(
            self.n_splits, shuffle=self.shuffle, random_state=self.random_state
        )
        with warnings.catch_warnings():  # scikit-learn's says "class"; ours names the cell
            warnings.filterwarnings("ignore", message="The least populated class in y")
            splits = list(splitter.split(np.zeros(len(y)), cells[order]))
        counts = np.bincount(cells)
        thin = np.flatnonzero((counts > 0) & (counts < self.n_splits))
        if thin.size:
            cell = thin[np.argmin(counts[thin])]
            label, group = classes[cell % len(classes)], groups[cell // len(classes)]
            warnings.warn(
                f"the (label, group) cell ({plain_label(label)!r}, {plain_label(group)!r}) has only "
                f"{counts[cell]} rows, fewer than n_splits={self.n_splits}: some folds have "
                f"no row of it ({thin.size} cell(s) so).",
                UserWarning,
                stacklevel=2,
            )
        for train, test in splits:
            yield np.sort(order[train]), np.sort(order[test])


def group_stratified_splits(n_splits: int, y, groups) -> list:
    """``cv=n_splits`` folds stratified on the (group, label) cells. A group needs a row
    in every test fold and two in every training fold (a per-group fit needs two), a
    label a row in every fold; one with too few rows raises ``ValueError`` naming it,
    its size and the fix."""
    if n_splits < 2:
        raise ValueError(f"cv={n_splits}: cross-validation needs at least 2 folds.")
    codes, labels = encode_groups(groups, n_samples=len(y))
    for kind, names, counts, need in (
        ("group", labels, np.bincount(codes, minlength=len(labels)), _min_group_rows),
        ("label", *np.unique(y, return_counts=True), lambda k: k),
    ):
        small = np.flatnonzero(counts < need(n_splits))
        if small.size:
            shown = ", ".join(
                f"{plain_label(names[i])!r} ({counts[i]} row{'' if counts[i] == 1 else 's'})"
                for i in small[:5]
            )
            usable = [k for k in range(2, counts.min() + 1) if need(k) <= counts.min()]
            fixes = [f"use cv={usable[-1]}"] if usable else []
            if kind == "group":
                fixes.append("merge the small group into another")
            fixes.append("pass your own (train, test) splits as cv")
            raise ValueError(
                f"cv={n_splits}: {kind} {shown} is too small for {n_splits} folds: every "
                f"fold's test rows need a row of every {kind}"
                + (" and its training rows two" if kind == "group" else "")
                + f" ({need(n_splits)} rows at least): "
                + ", ".join(fixes[:-1])
                + (" or " if len(fixes) > 1 else "")
                + f"{fixes[-1]}."
            )
    with warnings.catch_warnings():  # a thin (label, group) cell: the checks above hold
        warnings.filterwarnings("ignore", message=r"the \(label, group\) cell")
        splits = list(GroupStratifiedKFold(n_splits).split(y, y, sensitive_features=groups))
    for j, (train, _) in enumerate(splits):
        missing = np.setdiff1d(np.unique(y), y[train])
        if missing.size:  # only labels spread one row per group can end up here
            raise ValueError(
                f"cv={n_splits}: fold {j}'s training rows hold no row of label(s) "
                f"{missing.tolist()}; use fewer folds or pass your own (train, test) splits."
            )
    return splits


def _min_group_rows(n_splits: int) -> int:
    """Fewest rows of a group whose rows are dealt round robin over ``n_splits`` folds for
    a row in every test fold and two in every training fold (2 folds: 4 rows)."""
    rows = n_splits
    while rows - -(-rows // n_splits) < 2:
        rows += 1
    return rows
