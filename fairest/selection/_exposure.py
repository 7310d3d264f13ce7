"""Exposure of the groups in a ranking and the utility a ranking gives up (nDCG loss).

Position ``j`` (1-based) of a ranking gets the attention ``1 / log2(1 + j)``, the discount
of DCG (Singh and Joachims 2018), and positions past ``k`` none. A candidate's exposure is
its position's attention; candidates tied in score share their positions' attention
equally, as scikit-learn's ``ndcg_score`` shares their gains, so the value does not depend
on how ties are ordered.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from fairest.selection._topk import _as_scores
from fairest.utils._degenerate import plain_label
from fairest.utils._validation import encode_groups

__all__ = ["exposure_difference", "exposure_ratio", "group_exposure", "ndcg_loss"]


def _check_k(k, n: int) -> int:
    if k is None:
        return n
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be a positive int (the ranking's cut-off) or None; got {k!r}.")
    return min(int(k), n)


def _attention(values: np.ndarray, k: int) -> np.ndarray:
    """Every row's exposure in the ranking by decreasing ``values``, ties sharing."""
    n = values.shape[0]
    order = np.argsort(-values, kind="stable")
    discount = 1.0 / np.log2(np.arange(2, n + 2))
    discount[k:] = 0.0
    ranked = values[order]
    starts = np.concatenate(([0], np.flatnonzero(ranked[1:] != ranked[:-1]) + 1))
    lengths = np.diff(np.append(starts, n))
    shared = np.add.reduceat(discount, starts) / lengths
    out = np.empty(n)
    out[order] = np.repeat(shared, lengths)
    return out


def _weights(sample_weight, n: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n,) or not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(
            f"sample_weight must hold {n} finite non-negative weights; got shape {weights.shape}."
        )
    return weights


def group_exposure(y_true, y_pred, *, sensitive_features, k=None, sample_weight=None):
    """Mean position-weighted exposure of every group in the ranking by score.

    Rows are ranked by decreasing ``y_pred``; position ``j`` gets the exposure
    ``1 / log2(1 + j)`` up to the cut-off ``k`` and 0 after it; tied scores share their
    positions' exposure. A group's value is the (weighted) mean exposure of its rows.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored (fairlearn's signature).
    y_pred : array-like of shape (n_samples,)
        Scores that order the ranking (larger first). To measure a ranking given as row
        indices ``r``, pass scores that decrease along it, e.g. ``s[r] = -arange(len(r))``
        with every other row below, and ``k=len(r)``.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    k : int, default=None
        Cut-off of the ranking: positions after ``k`` get no exposure (``None``: none cut).
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows in their group's mean.

    Returns
    -------
    pandas.Series
        The mean exposure of every group, indexed by the group labels.

    References
    ----------
    .. [1] A. Singh, T. Joachims. "Fairness of Exposure in Rankings". KDD 2018.

    Examples
    --------
    >>> from fairest.selection import group_exposure
    >>> group_exposure(None, [4, 3, 2, 1], sensitive_features=["a", "b", "a", "b"]).round(3).tolist()
    [0.75, 0.531]
    """
    values = _as_scores(y_pred)
    n = values.shape[0]
    codes, groups = encode_groups(sensitive_features, n_samples=n, reference="y_pred")
    weights = _weights(sample_weight, n)
    exposure = _attention(values, _check_k(k, n))
    mass = np.bincount(codes, weights=weights, minlength=len(groups))
    total = np.bincount(codes, weights=weights * exposure, minlength=len(groups))
    if np.any(mass <= 0):
        empty = [plain_label(groups[g]) for g in np.flatnonzero(mass <= 0)]
        raise ValueError(
            f"groups {empty!r} have zero total sample_weight; give them weight or drop their rows."
        )
    index = pd.Index([plain_label(g) for g in groups], name="group", tupleize_cols=False)
    return pd.Series(total / mass, index=index, name="exposure")


def exposure_difference(y_true, y_pred, *, sensitive_features, k=None, sample_weight=None):
    """Largest difference of the groups' mean exposures in the ranking by score.

    ``max_g E_g - min_g E_g`` for the mean exposures ``E_g`` of :func:`group_exposure`;
    0 when every group gets the same mean attention.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored (fairlearn's signature).
    y_pred : array-like of shape (n_samples,)
        Scores that order the ranking (larger first).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    k : int, default=None
        Cut-off of the ranking (``None``: none).
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows in their group's mean.

    Returns
    -------
    float
        The difference, in [0, 1]; 0 with one group.

    References
    ----------
    .. [1] A. Singh, T. Joachims. "Fairness of Exposure in Rankings". KDD 2018.

    Examples
    --------
    >>> from fairest.selection import exposure_difference
    >>> round(exposure_difference(None, [4, 3, 2, 1], sensitive_features=["a", "b", "a", "b"]), 4)
    0.2192
    """
    exposure = group_exposure(
        y_true, y_pred, sensitive_features=sensitive_features, k=k, sample_weight=sample_weight
    )
    return float(exposure.max() - exposure.min())


def exposure_ratio(y_true, y_pred, *, sensitive_features, k=None, sample_weight=None):
    """Smallest ratio of the groups' mean exposures in the ranking by score.

    ``min_g E_g / max_g E_g`` for the mean exposures ``E_g`` of :func:`group_exposure`;
    1 when every group gets the same mean attention (also when none gets any).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored (fairlearn's signature).
    y_pred : array-like of shape (n_samples,)
        Scores that order the ranking (larger first).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    k : int, default=None
        Cut-off of the ranking (``None``: none).
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows in their group's mean.

    Returns
    -------
    float
        The ratio, in [0, 1]; 1 with one group.

    References
    ----------
    .. [1] A. Singh, T. Joachims. "Fairness of Exposure in Rankings". KDD 2018.

    Examples
    --------
    >>> from fairest.selection import exposure_ratio
    >>> round(exposure_ratio(None, [4, 3, 2, 1], sensitive_features=["a", "b", "a", "b"]), 4)
    0.7077
    """
    exposure = group_exposure(
        y_true, y_pred, sensitive_features=sensitive_features, k=k, sample_weight=sample_weight
    )
    largest = float(exposure.max())
    return 1.0 if largest == 0.0 else float(exposure.min()) / largest


def ndcg_loss(y_true, y_pred, *, k=None):
    """Share of the best ranking's discounted gain that the ranking by score loses.

    ``1 - DCG@k(y_pred) / DCG@k(ideal)`` with the gains ``y_true`` and the discount
    ``1 / log2(1 + j)``, the ideal ranking ordering by ``y_true`` itself: with ``y_true``
    the candidates' scores, the utility that a fair ranking (``y_pred`` ordering it) gives
    up against the score-sorted one. Ties in ``y_pred`` share their gains, as in
    scikit-learn's ``ndcg_score`` (``1 - ndcg_score([y_true], [y_pred], k=k)``).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Non-negative gains (relevances, or the scores of the candidates).
    y_pred : array-like of shape (n_samples,)
        Scores that order the ranking (larger first).
    k : int, default=None
        Cut-off of both rankings (``None``: none).

    Returns
    -------
    float
        The loss, in [0, 1]; 0 when all gains are 0.

    References
    ----------
    .. [1] K. Jarvelin, J. Kekalainen. "Cumulated gain-based evaluation of IR
       techniques". ACM TOIS 20(4), 2002.

    Examples
    --------
    >>> from fairest.selection import ndcg_loss
    >>> round(ndcg_loss([3, 2, 1, 0], [1, 2, 3, 4]), 4)
    0.3862
    """
    gains = _as_scores(y_true)
    values = _as_scores(y_pred)
    if gains.shape != values.shape:
        raise ValueError(
            f"y_true and y_pred must have the same shape; got {gains.shape} and {values.shape}."
        )
    if np.any(gains < 0):
        raise ValueError("y_true must be non-negative gains; shift or rescale the scores first.")
    k = _check_k(k, gains.shape[0])
    dcg = float(gains @ _attention(values, k))
    ideal = np.sort(gains)[::-1][:k] @ (1.0 / np.log2(np.arange(2, k + 2)))
    return 0.0 if ideal == 0.0 else float(max(0.0, 1.0 - dcg / ideal))
