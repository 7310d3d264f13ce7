"""Exact ERMI (exponential Renyi mutual information) and the DP-FERMI violation metrics.

ERMI between a (randomised) prediction and the sensitive attribute is the chi-square
divergence between their joint law and the product of the marginals,

    ERMI = sum_{j, r} (p(j, r) - p(j) p(r))**2 / (p(j) p(r)),

computed here from empirical (optionally weighted) frequencies. Predictions are either
hard labels (one-hot) or rows of class probabilities (the expected one-hot of the
randomised classifier). Conditional ERMI does the same within every true-label stratum
(equalized odds). The demographic parity and equalized odds violations are the paper's
evaluation measures on hard labels, for any number of classes and groups.
"""

from __future__ import annotations

import numpy as np

from fairest.metrics._checks import (
    check_hard_labels,
    check_labels,
    check_same_length,
    check_sample_weight,
    encode_sensitive_features,
    raise_if_not_finite,
    raise_if_weightless_group,
)

__all__ = [
    "ermi",
    "conditional_ermi",
    "demographic_parity_violation",
    "equalized_odds_violation",
]

# Rows of a probability matrix must sum to one within this absolute tolerance.
_PROBA_SUM_TOL = 1e-6


# --------------------------------------------------------------------------------------
# predictions as a mass matrix
# --------------------------------------------------------------------------------------


def _prediction_matrix(y_pred) -> np.ndarray:
    """Predictions as an (n_samples, n_classes) matrix of class probabilities.

    A 1-D array of labels becomes its one-hot encoding (columns: sorted distinct
    predicted labels); a 2-D array is checked to hold probability rows.
    """
    array = np.asarray(y_pred)
    if array.ndim == 1:
        labels = check_hard_labels(
            array,
            "y_pred",
            hint=" Pass probabilities as a 2-D (n_samples, n_classes) "
            "matrix, e.g. predict_proba(X).",
        )
        _, codes = np.unique(labels, return_inverse=True)
        one_hot = np.zeros((labels.shape[0], int(codes.max(initial=-1)) + 1))
        one_hot[np.arange(labels.shape[0]), codes] = 1.0
        return one_hot
    if array.ndim != 2:
        raise ValueError(
            "y_pred must be 1-D labels or a 2-D (n_samples, n_classes) probability "
            f"matrix; got an array of shape {array.shape}."
        )
    proba = array.astype(np.float64)
    raise_if_not_finite(proba, "y_pred")
    if proba.shape[1] < 2:
        raise ValueError(
            "a probability matrix needs one column per class (at least 2); for a binary "
            "model pass predict_proba(X) with both columns."
        )
    if (proba < 0).any() or np.abs(proba.sum(axis=1) - 1.0).max() > _PROBA_SUM_TOL:
        raise ValueError(
            "the rows of a 2-D y_pred must be class probabilities: non-negative and summing to 1."
        )
    return proba


def _group_class_mass(proba, codes, weights, n_groups) -> np.ndarray:
    """Matrix ``M[r, j] = sum_i w_i F_ij [s_i = r]`` of shape (n_groups, n_classes)."""
    weighted = proba * weights[:, None]
    return np.stack(  # a loop over classes, each a vectorised bincount
        [np.bincount(codes, weights=column, minlength=n_groups) for column in weighted.T],
        axis=1,
    )


def _chi_square_dependence(joint: np.ndarray) -> np.ndarray:
    """ERMI of one or several joint mass tables (last two axes: groups x classes).

    ``joint`` holds non-negative masses; it is normalised per table. Rows or columns of
    zero mass contribute nothing (their terms are 0/0, defined as 0). Returns an array of
    the leading shape (a float for a single table).
    """
    total = joint.sum(axis=(-2, -1), keepdims=True)
    p = np.divide(joint, total, out=np.zeros_like(joint), where=total > 0)
    p_group = p.sum(axis=-1, keepdims=True)
    p_class = p.sum(axis=-2, keepdims=True)
    independent = p_group * p_class
    terms = np.divide(
        (p - independent) ** 2,
        independent,
        out=np.zeros_like(p),
        where=independent > 0,
    )
    return terms.sum(axis=(-2, -1))


def _prepare_soft(y_pred, sensitive_features, sample_weight, y_true=None):
    proba = _prediction_matrix(y_pred)
    n_samples = proba.shape[0]
    check_same_length("y_pred", n_samples, y_true=y_true)
    weights = check_sample_weight(sample_weight, n_samples)
    codes, groups = encode_sensitive_features(sensitive_features, n_samples, reference="y_pred")
    return proba, weights, codes, groups


# --------------------------------------------------------------------------------------
# ERMI
# --------------------------------------------------------------------------------------


def ermi(y_true, y_pred, *, sensitive_features, sample_weight=None):
    r"""Empirical exponential Renyi mutual information between predictions and groups.

    .. math::

        \widehat{\mathrm{ERMI}}(\hat Y; S)
        = \sum_{j, r} \frac{\hat p(j, r)^2}{\hat p(j)\, \hat p(r)} - 1
        = \sum_{j, r} \frac{(\hat p(j, r) - \hat p(j) \hat p(r))^2}
                           {\hat p(j)\, \hat p(r)},

    with :math:`\hat p(j, r) = \frac1n \sum_i F_{ij} [s_i = r]` the joint frequency of
    predicted class :math:`j` and group :math:`r` (:math:`F_{ij}` a one-hot label or a
    predicted probability), :math:`\hat p(j)` and :math:`\hat p(r)` its marginals. The
    second (chi-square) form is the one computed; it is never negative.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        Ignored (demographic-parity ERMI does not use the labels); accepted for a
        fairlearn-like signature. Its length is checked when given.
    y_pred : array-like of shape (n_samples,) or (n_samples, n_classes)
        Hard predicted labels, or rows of predicted class probabilities (e.g.
        ``predict_proba(X)``; every column is a class).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership; several columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the empirical frequencies.

    Returns
    -------
    float
        Value in ``[0, min(n_groups, n_classes) - 1]``; 0 iff every group has the same
        mean prediction vector. Predicted classes of zero mass contribute 0.

    Notes
    -----
    ERMI bounds the demographic parity violation: for every class and group,
    :math:`|\hat p(j \mid r) - \hat p(j)| \le \sqrt{\mathrm{ERMI} / \hat p(r)}`.

    References
    ----------
    .. [1] Lowy, A., Gupta, D. and Razaviyayn, M. "Stochastic Differentially Private and
       Fair Learning", ICLR 2023. Definition 3.1.
    .. [2] Lowy, A., Baharlouei, S., Pavan, R., Razaviyayn, M. and Beirami, A. "A
       Stochastic Optimization Framework for Fair Risk Minimization", TMLR 2022.

    Examples
    --------
    >>> s = [0, 0, 0, 0, 1, 1, 1, 1]
    >>> y_hat = [1, 1, 1, 0, 1, 0, 0, 0]
    >>> round(ermi(None, y_hat, sensitive_features=s), 12)
    0.25
    """
    proba, weights, codes, groups = _prepare_soft(y_pred, sensitive_features, sample_weight, y_true)
    joint = _group_class_mass(proba, codes, weights, len(groups))
    return float(_chi_square_dependence(joint))


def conditional_ermi(
    y_true, y_pred, *, sensitive_features, sample_weight=None, weighting="label_prior"
):
    r"""Empirical ERMI between predictions and groups given the true label.

    .. math::

        \widehat{\mathrm{ERMI}}(\hat Y; S \mid Y)
        = \sum_y \omega_y \, \widehat{\mathrm{ERMI}}_y,

    where :math:`\widehat{\mathrm{ERMI}}_y` is :func:`ermi` on the samples with true
    label :math:`y` (groups absent from a stratum drop out of it). It is zero iff the
    predictions are independent of the group within every label stratum (empirical
    equalized odds).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels defining the strata.
    y_pred : array-like of shape (n_samples,) or (n_samples, n_classes)
        Hard predicted labels or rows of predicted class probabilities.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    weighting : {"label_prior", "uniform"}, default="label_prior"
        ``"label_prior"``: :math:`\omega_y = \hat p(y)`, the paper's definition
        (Appendix B). ``"uniform"``: :math:`\omega_y = 1`, the plain sum of per-label
        values used by the authors' training code.

    Returns
    -------
    float
        Non-negative value.

    References
    ----------
    .. [1] Lowy, A., Gupta, D. and Razaviyayn, M. "Stochastic Differentially Private and
       Fair Learning", ICLR 2023. Appendix B.

    Examples
    --------
    >>> s = [0, 0, 0, 0, 1, 1, 1, 1]
    >>> y = [1, 1, 0, 0, 1, 1, 0, 0]
    >>> y_hat = [1, 1, 1, 0, 1, 0, 0, 0]
    >>> round(conditional_ermi(y, y_hat, sensitive_features=s), 12)
    0.333333333333
    """
    if weighting not in ("label_prior", "uniform"):
        raise ValueError(f"weighting must be 'label_prior' or 'uniform'; got {weighting!r}.")
    if y_true is None:
        raise ValueError("conditional_ermi needs y_true (the conditioning labels).")
    proba, weights, codes, groups = _prepare_soft(y_pred, sensitive_features, sample_weight, y_true)
    _, strata = np.unique(check_labels(y_true, "y_true"), return_inverse=True)
    n_strata, n_groups = int(strata.max()) + 1, len(groups)
    joint = _group_class_mass(proba, strata * n_groups + codes, weights, n_strata * n_groups)
    joint = joint.reshape(n_strata, n_groups, proba.shape[1])
    per_stratum = _chi_square_dependence(joint)
    if weighting == "uniform":
        return float(per_stratum.sum())
    stratum_mass = np.bincount(strata, weights=weights, minlength=n_strata)
    return float(per_stratum @ (stratum_mass / stratum_mass.sum()))


# --------------------------------------------------------------------------------------
# violation measures of the paper's evaluation (Appendix F.1)
# --------------------------------------------------------------------------------------


def _shared_classes(y_true, y_pred):
    """Integer codes of true and predicted labels over their union of classes."""
    true = check_labels(y_true, "y_true")
    pred = check_hard_labels(y_pred, "y_pred")
    check_same_length("y_true", true.shape[0], y_pred=pred)
    classes, codes = np.unique(np.concatenate([true, pred]), return_inverse=True)
    return codes[: true.shape[0]], codes[true.shape[0] :], classes.size


def _confusion_by_group(true, pred, codes, weights, n_groups, n_classes):
    """Weighted counts ``C[r, a, b]`` of group r, true class a, predicted class b."""
    flat = (codes * n_classes + true) * n_classes + pred
    counts = np.bincount(flat, weights=weights, minlength=n_groups * n_classes**2)
    return counts.reshape(n_groups, n_classes, n_classes)


def _range_over_defined(numerator, denominator):
    """Per-column max - min over groups of numerator / denominator.

    Arrays of shape (n_groups, n_terms). A group whose denominator is 0 (empty
    conditioning cell) is left out of that term; a term defined for fewer than two
    groups gets NaN.
    """
    defined = denominator > 0
    rate = np.divide(numerator, denominator, out=np.zeros_like(numerator), where=defined)
    highest = np.where(defined, rate, -np.inf).max(axis=0)
    lowest = np.where(defined, rate, np.inf).min(axis=0)
    enough = defined.sum(axis=0) >= 2
    return np.where(enough, highest - lowest, np.nan)


def _max_or_nan(gaps: np.ndarray, n_groups: int) -> float:
    """Largest defined gap; 0 for one group, NaN when no pair of groups is comparable."""
    if n_groups < 2:
        return 0.0
    if np.isnan(gaps).all():
        return float("nan")
    return float(np.nanmax(gaps))


def _prepare_hard(y_true, y_pred, sensitive_features, sample_weight):
    if np.ndim(y_pred) != 1:
        raise ValueError(
            "y_pred must be 1-D hard labels (e.g. predict(X) or the argmax of the "
            f"probabilities); got shape {np.shape(y_pred)}."
        )
    if y_true is None:
        y_true = y_pred  # labels are only needed to list the classes
    true, pred, n_classes = _shared_classes(y_true, y_pred)
    weights = check_sample_weight(sample_weight, true.shape[0])
    codes, groups = encode_sensitive_features(sensitive_features, true.shape[0])
    counts = _confusion_by_group(true, pred, codes, weights, len(groups), n_classes)
    return counts, groups


def demographic_parity_violation(
    y_true, y_pred, *, sensitive_features, sample_weight=None, reference="pairwise"
):
    r"""Demographic parity violation of hard multi-class predictions.

    ``reference="pairwise"`` (the paper's reported eq. (10)):

    .. math::

        \max_{y'} \max_{s_1, s_2}
        \big| \hat P(\hat y = y' \mid s = s_1) - \hat P(\hat y = y' \mid s = s_2) \big|.

    ``reference="marginal"`` (eq. (2)):
    :math:`\max_{y'} \max_s |\hat P(\hat y = y' \mid s) - \hat P(\hat y = y')|`.

    For binary predictions the pairwise value is the usual positive-rate gap; for
    several classes it is the largest one-vs-rest gap.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or None
        True labels; only used to list the classes (unpredicted classes contribute 0).
    y_pred : array-like of shape (n_samples,)
        Hard predicted labels.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the empirical probabilities.
    reference : {"pairwise", "marginal"}, default="pairwise"
        Compare groups with each other or with the pooled rate.

    Returns
    -------
    float
        Value in ``[0, 1]`` (0 for a single group).

    References
    ----------
    .. [1] Lowy, A., Gupta, D. and Razaviyayn, M. "Stochastic Differentially Private and
       Fair Learning", ICLR 2023. Eq. (2) and Appendix F.1, eq. (10).

    Examples
    --------
    >>> s = [0, 0, 0, 0, 1, 1, 1, 1]
    >>> y_hat = [1, 1, 1, 0, 1, 0, 0, 0]
    >>> demographic_parity_violation(None, y_hat, sensitive_features=s)
    0.5
    """
    if reference not in ("pairwise", "marginal"):
        raise ValueError(f"reference must be 'pairwise' or 'marginal'; got {reference!r}.")
    counts, groups = _prepare_hard(y_true, y_pred, sensitive_features, sample_weight)
    predicted = counts.sum(axis=1)  # (groups, predicted class)
    group_totals = predicted.sum(axis=1)
    raise_if_weightless_group(group_totals, groups)
    rate = predicted / group_totals[:, None]
    if reference == "pairwise":
        return float((rate.max(axis=0) - rate.min(axis=0)).max())
    pooled = predicted.sum(axis=0) / group_totals.sum()
    return float(np.abs(rate - pooled).max())


def equalized_odds_violation(y_true, y_pred, *, sensitive_features, sample_weight=None):
    r"""Equalized odds violation of hard multi-class predictions.

    .. math::

        \max_{y', s_1, s_2} \max\Big(
        \big|\hat P(\hat y = y' \mid s_1, y = y')
             - \hat P(\hat y = y' \mid s_2, y = y')\big|,
        \big|\hat P(\hat y = y' \mid s_1, y \ne y')
             - \hat P(\hat y = y' \mid s_2, y \ne y')\big|
        \Big).

    For binary labels this is ``max(TPR gap, FPR gap)``; for several classes the largest
    one-vs-rest value.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_pred : array-like of shape (n_samples,)
        Hard predicted labels.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns)
        Group membership.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.

    Returns
    -------
    float
        Value in ``[0, 1]``; 0 for a single group. A pair of groups enters a term only
        when both have samples in its conditioning cell (e.g. both have true label
        ``y'``); NaN when no pair of groups is comparable in any term.

    References
    ----------
    .. [1] Lowy, A., Gupta, D. and Razaviyayn, M. "Stochastic Differentially Private and
       Fair Learning", ICLR 2023. Appendix F.1, eq. (11).

    Examples
    --------
    >>> s = [0, 0, 0, 0, 1, 1, 1, 1]
    >>> y = [1, 1, 0, 0, 1, 1, 0, 0]
    >>> y_hat = [1, 1, 1, 0, 1, 0, 0, 0]
    >>> equalized_odds_violation(y, y_hat, sensitive_features=s)
    0.5
    """
    if y_true is None:
        raise ValueError("equalized_odds_violation needs y_true.")
    counts, groups = _prepare_hard(y_true, y_pred, sensitive_features, sample_weight)
    n_classes = counts.shape[1]
    off_diagonal = 1.0 - np.eye(n_classes)
    true_mass = counts.sum(axis=2)  # (groups, true class)
    hits = np.diagonal(counts, axis1=1, axis2=2)  # predicted y' among true y'
    other_mass = true_mass @ off_diagonal  # mass with true label != y', summed exactly
    false_hits = np.einsum("rab,ab->rb", counts, off_diagonal)  # predicted y', true != y'
    true_positive_gap = _range_over_defined(hits, true_mass)
    false_positive_gap = _range_over_defined(false_hits, other_mass)
    gaps = np.concatenate([true_positive_gap, false_positive_gap])
    return _max_or_nan(gaps, len(groups))
