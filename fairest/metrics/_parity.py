"""Group-parity metrics of hard predictions, compatible with fairlearn.

Same signatures, same values and the same ``method`` / ``agg`` semantics as the functions
of the same name in :mod:`fairlearn.metrics` (checked against fairlearn in the tests), but
computed with one vectorised pass (``np.bincount``) instead of a ``MetricFrame``.

Rates follow scikit-learn's confusion-matrix convention, as fairlearn does: a group with
no positive (negative) sample has a true (false) positive rate of 0, without a warning
(fairlearn gives none; ``MetricFrame(metrics="true_positive_rate", ...)`` shows such a
group as NaN).
"""

from __future__ import annotations

import numpy as np

from fairest.metrics._checks import as_binary_labels, check_metric_inputs, check_option
from fairest.metrics._group_stats import GroupRates, group_rates

__all__ = [
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equal_opportunity_difference",
    "equal_opportunity_ratio",
    "equalized_odds_difference",
    "equalized_odds_ratio",
]

METHODS = ("between_groups", "to_overall")
AGGREGATIONS = ("worst_case", "mean")


# ---------------------------------------------------------------------------------------
# aggregation of group rates


def rate_difference(rates: GroupRates, method: str) -> float:
    """``max_g r_g - min_g r_g`` or ``max_g |r_g - r_overall|``."""
    check_option(method, "method", METHODS)
    if method == "between_groups":
        return float(rates.rates.max() - rates.rates.min())
    return float(np.max(np.abs(rates.rates - rates.overall)))


def rate_ratio(rates: GroupRates, method: str) -> float:
    """``min_g r_g / max_g r_g`` or ``min_g min(r_g / r, r / r_g)`` with ``r`` overall.

    ``nan`` when every rate is 0 (the ratio 0/0), as in fairlearn.
    """
    check_option(method, "method", METHODS)
    if method == "between_groups":
        largest = rates.rates.max()
        return float(rates.rates.min() / largest) if largest > 0 else float("nan")
    if rates.overall == 0:
        return float("nan")
    quotient = rates.rates / rates.overall
    safe = np.where(quotient > 1, quotient, 1.0)
    return float(np.min(np.where(quotient > 1, 1.0 / safe, quotient)))


# ---------------------------------------------------------------------------------------
# group rates of hard predictions


def selection_rates(y_true, y_pred, sensitive_features, sample_weight) -> GroupRates:
    """Weighted share of ``y_pred == 1`` per group."""
    inputs = check_metric_inputs(y_true, y_pred, sensitive_features, sample_weight)
    predicted = as_binary_labels(inputs.y_pred, "y_pred")
    return group_rates(inputs.codes, inputs.num_groups, predicted, inputs.weights)


def error_rates(y_true, y_pred, sensitive_features, sample_weight):
    """Per-group true positive rates and false positive rates (both ``GroupRates``)."""
    inputs = check_metric_inputs(y_true, y_pred, sensitive_features, sample_weight)
    labels = as_binary_labels(inputs.y_true, "y_true")
    predicted = as_binary_labels(inputs.y_pred, "y_pred")
    tpr = group_rates(inputs.codes, inputs.num_groups, predicted, inputs.weights, labels)
    fpr = group_rates(inputs.codes, inputs.num_groups, predicted, inputs.weights, 1.0 - labels)
    return tpr, fpr


# ---------------------------------------------------------------------------------------
# public metrics


def demographic_parity_difference(
    y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
) -> float:
    """Demographic parity difference of hard predictions.

    The largest difference between group selection rates ``P(h(X) = 1 | A = a)``
    (``method="between_groups"``: max minus min), or the largest absolute difference
    between a group's selection rate and the overall one (``method="to_overall"``).
    0 means every group has the same selection rate. Same value as
    :func:`fairlearn.metrics.demographic_parity_difference`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Ground-truth labels (only checked for length and finiteness).
    y_pred : array-like of shape (n_samples,)
        Predicted labels, coded {0, 1} or {-1, 1}; 1 is "selected".
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    method : {"between_groups", "to_overall"}, default="between_groups"
        How group rates are compared.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    float
        The demographic parity difference, in [0, 1].

    See Also
    --------
    demographic_parity_deviation : BADR's variant on scores, relative to the mean of the
        group rates.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``fairlearn.metrics``).
    .. [2] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    """
    rates = selection_rates(y_true, y_pred, sensitive_features, sample_weight)
    return rate_difference(rates, method)


def demographic_parity_ratio(
    y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
) -> float:
    """Demographic parity ratio of hard predictions.

    The smallest ratio between group selection rates (``"between_groups"``: min over max),
    or between a group's selection rate and the overall one, taken below 1
    (``"to_overall"``). 1 means every group has the same selection rate; ``nan`` when
    nobody is selected. Same value as :func:`fairlearn.metrics.demographic_parity_ratio`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Ground-truth labels (only checked for length and finiteness).
    y_pred : array-like of shape (n_samples,)
        Predicted labels, coded {0, 1} or {-1, 1}; 1 is "selected".
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    method : {"between_groups", "to_overall"}, default="between_groups"
        How group rates are compared.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    float
        The demographic parity ratio, in [0, 1] (or ``nan``).

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``fairlearn.metrics``).
    .. [2] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    """
    rates = selection_rates(y_true, y_pred, sensitive_features, sample_weight)
    return rate_ratio(rates, method)


def equal_opportunity_difference(
    y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
) -> float:
    """Equal opportunity difference: the spread of the group true positive rates.

    ``max_g TPR_g - min_g TPR_g`` (``"between_groups"``) or ``max_g |TPR_g - TPR|``
    (``"to_overall"``), with ``TPR_g = P(h(X) = 1 | A = g, Y = 1)``. Same value as
    :func:`fairlearn.metrics.equal_opportunity_difference`; a group without positives
    counts with rate 0 (and a warning).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, coded {0, 1} or {-1, 1}; 1 is positive.
    y_pred : array-like of shape (n_samples,)
        Predicted labels, coded {0, 1} or {-1, 1}.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    method : {"between_groups", "to_overall"}, default="between_groups"
        How group rates are compared.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    float
        The equal opportunity difference, in [0, 1].

    See Also
    --------
    equal_opportunity_range : BADR's variant on scores; leaves groups without positives
        out.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``fairlearn.metrics``).
    .. [2] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    """
    tpr, _ = error_rates(y_true, y_pred, sensitive_features, sample_weight)
    return rate_difference(tpr, method)


def equal_opportunity_ratio(
    y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None
) -> float:
    """Equal opportunity ratio: the smallest ratio between group true positive rates.

    ``min_g TPR_g / max_g TPR_g`` (``"between_groups"``) or the smallest of
    ``min(TPR_g / TPR, TPR / TPR_g)`` (``"to_overall"``). Same value as
    :func:`fairlearn.metrics.equal_opportunity_ratio`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, coded {0, 1} or {-1, 1}; 1 is positive.
    y_pred : array-like of shape (n_samples,)
        Predicted labels, coded {0, 1} or {-1, 1}.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    method : {"between_groups", "to_overall"}, default="between_groups"
        How group rates are compared.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    float
        The equal opportunity ratio, in [0, 1] (or ``nan`` when every rate is 0).

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``fairlearn.metrics``).
    .. [2] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    """
    tpr, _ = error_rates(y_true, y_pred, sensitive_features, sample_weight)
    return rate_ratio(tpr, method)


def equalized_odds_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method="between_groups",
    sample_weight=None,
    agg="worst_case",
) -> float:
    """Equalized odds difference: spread of the group true and false positive rates.

    With ``agg="worst_case"`` the larger of the true positive rate difference and the
    false positive rate difference; with ``agg="mean"`` their mean. Differences as in
    :func:`equal_opportunity_difference`. Same value as
    :func:`fairlearn.metrics.equalized_odds_difference`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, coded {0, 1} or {-1, 1}; 1 is positive.
    y_pred : array-like of shape (n_samples,)
        Predicted labels, coded {0, 1} or {-1, 1}.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    method : {"between_groups", "to_overall"}, default="between_groups"
        How group rates are compared.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    agg : {"worst_case", "mean"}, default="worst_case"
        How the two differences are combined.

    Returns
    -------
    float
        The equalized odds difference, in [0, 1].

    See Also
    --------
    equalized_odds_range : BADR's variant on scores, equal to ``agg="mean"`` when every
        group has positives and negatives.

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``fairlearn.metrics``).
    .. [2] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    """
    check_option(agg, "agg", AGGREGATIONS)
    tpr, fpr = error_rates(y_true, y_pred, sensitive_features, sample_weight)
    differences = [rate_difference(tpr, method), rate_difference(fpr, method)]
    return float(max(differences) if agg == "worst_case" else np.mean(differences))


def equalized_odds_ratio(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method="between_groups",
    sample_weight=None,
    agg="worst_case",
) -> float:
    """Equalized odds ratio: smallest ratio of group true and false positive rates.

    With ``agg="worst_case"`` the smaller of the true positive rate ratio and the false
    positive rate ratio; with ``agg="mean"`` their mean. Ratios as in
    :func:`equal_opportunity_ratio`. Same value as
    :func:`fairlearn.metrics.equalized_odds_ratio`, including its handling of a ``nan``
    ratio (0/0, when a rate is 0 in every group): ``"mean"`` skips it, and
    ``"worst_case"`` returns ``nan`` when the true positive rate ratio is ``nan`` but skips
    a ``nan`` false positive rate ratio (fairlearn takes Python's ``min`` of the two).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, coded {0, 1} or {-1, 1}; 1 is positive.
    y_pred : array-like of shape (n_samples,)
        Predicted labels, coded {0, 1} or {-1, 1}.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    method : {"between_groups", "to_overall"}, default="between_groups"
        How group rates are compared.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    agg : {"worst_case", "mean"}, default="worst_case"
        How the two ratios are combined.

    Returns
    -------
    float
        The equalized odds ratio, in [0, 1] (or ``nan``).

    References
    ----------
    .. [1] S. Bird, M. Dudik, R. Edgar, B. Horn, R. Lutz, V. Milan, M. Sameki,
       H. Wallach, K. Walker. "Fairlearn: A toolkit for assessing and improving fairness
       in AI". Microsoft Tech. Rep. MSR-TR-2020-32, 2020 (``fairlearn.metrics``).
    .. [2] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    """
    check_option(agg, "agg", AGGREGATIONS)
    tpr, fpr = error_rates(y_true, y_pred, sensitive_features, sample_weight)
    ratios = [rate_ratio(tpr, method), rate_ratio(fpr, method)]
    if agg == "worst_case":
        return float(min(ratios))  # Python's min, as in fairlearn (see the docstring)
    defined = [ratio for ratio in ratios if not np.isnan(ratio)]
    return float(np.mean(defined)) if defined else float("nan")
