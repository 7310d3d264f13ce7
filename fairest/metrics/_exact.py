"""Exact BADR unfairness metrics of decision scores (spec badr.md section 3), in numpy.

These metrics take SCORES ``s = b + w^T x`` (decision-function values, intercept
included), not hard predictions. Where a metric needs hard predictions it uses
``y_hat = 1[s >= threshold]`` (default threshold 0, the rule of ``predict``).

Relation to the fairlearn-compatible metrics of :mod:`fairest.metrics`:

* :func:`demographic_parity_deviation` compares each group's rate with the MEAN OF THE
  GROUP RATES, ``max_g |p_g - mean_h p_h|``; fairlearn's
  :func:`~fairest.metrics.demographic_parity_difference` uses max minus min
  (``"between_groups"``) or the overall, sample-weighted rate (``"to_overall"``).
* :func:`equal_opportunity_range` equals
  :func:`~fairest.metrics.equal_opportunity_difference` on ``1[s >= 0]`` when every group
  has positives; groups without positives are left out (with a warning) instead of
  counting with rate 0.
* :func:`equalized_odds_range` is ``(range TPR + range FPR) / 2``, i.e.
  :func:`~fairest.metrics.equalized_odds_difference` with ``agg="mean"``, under the same
  proviso.

Sample weights generalise every group mean to a weighted mean; they act as frequency
weights (integer weights equal repeated rows). Groups count equally in every
across-group mean or variance, whatever their size or weight.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning

from fairest._kernels import LOSSES, cross_entropy_host
from fairest.metrics._checks import as_binary_labels, check_metric_inputs, check_option
from fairest.metrics._defaults import DEFAULT_THRESHOLD
from fairest.metrics._group_stats import GroupRates, group_rates, group_totals
from fairest.metrics._individual import cross_group_energy, cross_group_pair_weight

__all__ = [
    "demographic_parity_deviation",
    "equal_opportunity_range",
    "equalized_odds_range",
    "group_loss_variance",
    "individual_fairness",
    "disparate_mistreatment",
    "hsic_linear",
    "pointwise_loss",
]

TASKS = ("classification", "regression")
ENCODINGS = ("index", "onehot")


# ---------------------------------------------------------------------------------------
# helpers


def pointwise_loss(loss: str, y_true: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Per-sample model loss ``l(s, y)`` in numpy (spec badr.md section 2).

    ``"logistic"``: ``softplus(s) - y s``; ``"squared_hinge"``:
    ``max(0, 1 - (2y - 1) s)**2``; ``"squared_error"``: ``(s - y)**2``. The two
    classification losses take labels coded {0, 1} or {-1, 1}; the logistic loss is
    fairest's one cross-entropy (:func:`fairest._kernels.cross_entropy_host`).
    """
    check_option(loss, "loss", LOSSES)
    if loss == "squared_error":
        return (scores - y_true) ** 2
    labels = as_binary_labels(y_true, "y_true")
    if loss == "logistic":
        return cross_entropy_host(np.asarray(scores)[:, None], labels)
    return np.maximum(0.0, 1.0 - (2.0 * labels - 1.0) * scores) ** 2


def _range_over_defined(rates: GroupRates, groups, rate_name: str, condition: str) -> float:
    """``max - min`` of the rates of the groups where they are defined (with a warning)."""
    if not rates.defined.any():
        raise ValueError(
            f"{rate_name} is undefined: no group has a {condition} sample (with positive weight)."
        )
    if not rates.defined.all():
        names = ", ".join(repr(groups[g]) for g in np.flatnonzero(~rates.defined))
        warnings.warn(
            f"{rate_name} is undefined for group(s) {names} with no {condition} sample; "
            "they are left out of the maximum and minimum.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    kept = rates.rates[rates.defined]
    return float(kept.max() - kept.min())


def _error_rates_of_scores(y_true, scores, sensitive_features, sample_weight, threshold):
    inputs = check_metric_inputs(
        y_true, scores, sensitive_features, sample_weight, pred_name="scores"
    )
    labels = as_binary_labels(inputs.y_true, "y_true")
    predicted = (inputs.y_pred >= threshold).astype(np.float64)
    tpr = group_rates(inputs.codes, inputs.num_groups, predicted, inputs.weights, labels)
    fpr = group_rates(inputs.codes, inputs.num_groups, predicted, inputs.weights, 1.0 - labels)
    return tpr, fpr, inputs.groups


def _group_score_covariances(inputs, encoding: str) -> np.ndarray:
    """Weighted covariances between the encoded group variable and the scores.

    ``"index"``: one covariance with ``z_i = code_i`` (0..G-1, in the order of the sorted
    group labels). ``"onehot"``: one covariance per group with ``z_i = 1[a_i = g]``.
    """
    check_option(encoding, "encoding", ENCODINGS)
    weights, scores = inputs.weights, inputs.y_pred
    total = weights.sum()
    centred = scores - np.dot(weights, scores) / total
    per_group = group_totals(inputs.codes, weights * centred, inputs.num_groups) / total
    if encoding == "onehot":
        return per_group
    return np.array([np.dot(np.arange(inputs.num_groups), per_group)])


# ---------------------------------------------------------------------------------------
# parity metrics on scores


def demographic_parity_deviation(
    y_true,
    scores,
    *,
    sensitive_features,
    sample_weight=None,
    task="classification",
    threshold=DEFAULT_THRESHOLD,
) -> float:
    """Exact BADR demographic parity: largest deviation from the mean group rate.

    ``DP = max_g |p_g - (1/G) sum_h p_h|`` where ``p_g`` is the (weighted) share of
    ``1[s >= threshold]`` in group g for classification, and the mean score of group g for
    regression (spec badr.md 3.3). The reference point is the unweighted mean of the group
    rates, not the overall rate. Limit of :func:`smooth_demographic_parity` as
    ``temperature -> inf`` (up to the 1e-3 offset of its square root).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets (only checked for length and finiteness; DP does not use them).
    scores : array-like of shape (n_samples,)
        Decision-function values (classification) or predictions (regression).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    task : {"classification", "regression"}, default="classification"
        Rates of hard predictions, or mean predictions.
    threshold : float, default=0.0
        Classification threshold on the scores.

    Returns
    -------
    float
        The deviation, >= 0 (in [0, 1) for classification).

    See Also
    --------
    demographic_parity_difference : fairlearn's version on hard predictions.

    References
    ----------
    .. [1] S. Tanji, S. Vaiter, Y. Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework". Definitions as in the ``badr`` 0.1.2 toolbox,
       documented in this project's spec ``badr.md`` section 3.
    """
    check_option(task, "task", TASKS)
    inputs = check_metric_inputs(
        y_true, scores, sensitive_features, sample_weight, pred_name="scores"
    )
    if task == "classification":
        per_sample = (inputs.y_pred >= threshold).astype(np.float64)
    else:
        per_sample = inputs.y_pred
    rates = group_rates(inputs.codes, inputs.num_groups, per_sample, inputs.weights).rates
    return float(np.max(np.abs(rates - rates.mean())))


def equal_opportunity_range(
    y_true, scores, *, sensitive_features, sample_weight=None, threshold=DEFAULT_THRESHOLD
) -> float:
    """Exact BADR equal opportunity: range of the group true positive rates.

    ``EO = max_g TPR_g - min_g TPR_g`` with ``TPR_g`` the (weighted) share of
    ``1[s >= threshold]`` among the positives of group g (spec badr.md 3.5). Groups
    without positives are left out, with an
    :class:`~sklearn.exceptions.UndefinedMetricWarning`. Limit of
    :func:`smooth_equal_opportunity` as ``temperature -> inf``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, coded {0, 1} or {-1, 1}; 1 is positive.
    scores : array-like of shape (n_samples,)
        Decision-function values.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    threshold : float, default=0.0
        Classification threshold on the scores.

    Returns
    -------
    float
        The range, in [0, 1].

    Raises
    ------
    ValueError
        If there is no positive sample at all.

    See Also
    --------
    equal_opportunity_difference : fairlearn's version on hard predictions.

    References
    ----------
    .. [1] S. Tanji, S. Vaiter, Y. Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework". Definitions as in the ``badr`` 0.1.2 toolbox,
       documented in this project's spec ``badr.md`` section 3.
    .. [2] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    """
    tpr, _, groups = _error_rates_of_scores(
        y_true, scores, sensitive_features, sample_weight, threshold
    )
    return _range_over_defined(tpr, groups, "the true positive rate", "positive")


def equalized_odds_range(
    y_true, scores, *, sensitive_features, sample_weight=None, threshold=DEFAULT_THRESHOLD
) -> float:
    """Exact BADR equalized odds: mean of the TPR range and the FPR range.

    ``EOdds = ((max - min)_g TPR_g + (max - min)_g FPR_g) / 2`` with hard predictions
    ``1[s >= threshold]`` (spec badr.md 3.6). Groups without positives (negatives) are left
    out of the TPR (FPR) range, with a warning. Limit of :func:`smooth_equalized_odds` as
    ``temperature -> inf``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, coded {0, 1} or {-1, 1}; 1 is positive.
    scores : array-like of shape (n_samples,)
        Decision-function values.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    threshold : float, default=0.0
        Classification threshold on the scores.

    Returns
    -------
    float
        The mean range, in [0, 1].

    Raises
    ------
    ValueError
        If there is no positive or no negative sample at all.

    See Also
    --------
    equalized_odds_difference : fairlearn's version (``agg="mean"`` matches this one).

    References
    ----------
    .. [1] S. Tanji, S. Vaiter, Y. Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework". Definitions as in the ``badr`` 0.1.2 toolbox,
       documented in this project's spec ``badr.md`` section 3.
    .. [2] M. Hardt, E. Price, N. Srebro. "Equality of Opportunity in Supervised
       Learning". NeurIPS 2016.
    """
    tpr, fpr, groups = _error_rates_of_scores(
        y_true, scores, sensitive_features, sample_weight, threshold
    )
    tpr_range = _range_over_defined(tpr, groups, "the true positive rate", "positive")
    fpr_range = _range_over_defined(fpr, groups, "the false positive rate", "negative")
    return 0.5 * (tpr_range + fpr_range)


# ---------------------------------------------------------------------------------------
# loss-based and score-based metrics


def group_loss_variance(
    y_true, scores, *, sensitive_features, sample_weight=None, loss="logistic"
) -> float:
    """Variance across groups of the mean model loss (BADR "group variance").

    ``GV = (1/G) sum_g (L_g - mean_h L_h)**2`` with ``L_g`` the (weighted) mean loss of
    group g at the given scores (spec badr.md 3.1): population variance, every group
    counting equally.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels: {0, 1} or {-1, 1} for the classification losses, real for
        ``"squared_error"``.
    scores : array-like of shape (n_samples,)
        Decision-function values (intercept included) or regression predictions.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    loss : {"logistic", "squared_hinge", "squared_error"}, default="logistic"
        Per-sample loss: ``softplus(s) - y s``, ``max(0, 1 - (2y - 1) s)**2`` or
        ``(s - y)**2``.

    Returns
    -------
    float
        The variance of the group losses, >= 0.

    References
    ----------
    .. [1] S. Tanji, S. Vaiter, Y. Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework". Definitions as in the ``badr`` 0.1.2 toolbox,
       documented in this project's spec ``badr.md`` section 3.
    """
    check_option(loss, "loss", LOSSES)
    inputs = check_metric_inputs(
        y_true, scores, sensitive_features, sample_weight, pred_name="scores"
    )
    losses = pointwise_loss(loss, inputs.y_true, inputs.y_pred)
    group_losses = group_rates(inputs.codes, inputs.num_groups, losses, inputs.weights).rates
    return float(np.var(group_losses))


def individual_fairness(y_true, scores, *, sensitive_features, sample_weight=None) -> float:
    """Exact BADR individual fairness (a cross-group Lipschitz penalty).

    ``IF = (1/Z) sum_{g<h} sum_{i in g, j in h} K(y_i, y_j) (s_i - s_j)**2`` with the
    Laplace kernel ``K(y, y') = exp(-|y - y'|)`` and ``Z = n**2 - sum_g n_g**2`` the number
    of ordered cross-group pairs (spec badr.md 3.2; the numerator runs over unordered pairs,
    so for two groups IF is half the cross-group mean). For labels in {0, 1}, ``K`` is 1
    for equal labels and ``exp(-1)`` otherwise. With weights, pairs count
    ``w_i w_j`` and ``Z = W**2 - sum_g W_g**2``.

    Computed exactly without pairwise matrices (spec badr.md 3.9): O(n) for labels with
    few distinct values (per (group, label) cell sums), O(n log n) for real labels
    (recursions on label-sorted rows).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels, used as real numbers in the kernel (code binary labels as 0/1).
    scores : array-like of shape (n_samples,)
        Decision-function values or regression predictions (the intercept cancels).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership, at least two groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    float
        The individual unfairness, >= 0.

    References
    ----------
    .. [1] S. Tanji, S. Vaiter, Y. Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework". Definitions as in the ``badr`` 0.1.2 toolbox,
       documented in this project's spec ``badr.md`` section 3.
    .. [2] R. Berk, H. Heidari, S. Jabbari, M. Joseph, M. Kearns, J. Morgenstern,
       S. Neel, A. Roth. "A Convex Framework for Fair Regression". FAT/ML 2017.
    """
    inputs = check_metric_inputs(
        y_true, scores, sensitive_features, sample_weight, pred_name="scores", min_groups=2
    )
    numerator = cross_group_energy(
        inputs.y_true, inputs.y_pred, inputs.weights, inputs.codes, inputs.num_groups
    )
    return numerator / cross_group_pair_weight(inputs.weights, inputs.codes, inputs.num_groups)


def disparate_mistreatment(
    y_true, scores, *, sensitive_features, sample_weight=None, encoding="index"
) -> float:
    """Squared covariance between the group variable and the scores (BADR "DM").

    ``DM = ((1/n) sum_i (z_i - z_mean)(s_i - s_mean))**2`` with ``z_i`` the group index
    0..G-1 (``encoding="index"``, groups in the sorted order of their labels), or
    ``sum_g ((1/n) sum_i (1[a_i = g] - n_g/n)(s_i - s_mean))**2`` (``"onehot"``,
    independent of the group numbering) (spec badr.md 3.4). This is the squared
    decision-boundary covariance proxy of Zafar et al.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets (only checked for length and finiteness).
    scores : array-like of shape (n_samples,)
        Decision-function values (the intercept cancels).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights (weighted means and covariance).
    encoding : {"index", "onehot"}, default="index"
        Real-valued encoding of the group variable; ``"index"`` depends on the group
        numbering when G > 2.

    Returns
    -------
    float
        The squared covariance, >= 0.

    References
    ----------
    .. [1] S. Tanji, S. Vaiter, Y. Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework". Definitions as in the ``badr`` 0.1.2 toolbox,
       documented in this project's spec ``badr.md`` section 3.
    .. [2] M. B. Zafar, I. Valera, M. Gomez Rodriguez, K. P. Gummadi. "Fairness Beyond
       Disparate Treatment & Disparate Impact: Learning Classification without Disparate
       Mistreatment". WWW 2017.
    """
    inputs = check_metric_inputs(
        y_true, scores, sensitive_features, sample_weight, pred_name="scores"
    )
    return float(np.sum(_group_score_covariances(inputs, encoding) ** 2))


def hsic_linear(
    y_true, scores, *, sensitive_features, sample_weight=None, encoding="index"
) -> float:
    """HSIC between the group variable and the scores, with linear kernels.

    ``HSIC = ((1/(n-1)) sum_i (z_i - z_mean)(s_i - s_mean))**2 = (n/(n-1))**2 DM``:
    the squared Hilbert-Schmidt norm of the unbiased empirical cross-covariance of the
    encoded group variable (index or one-hot, as in :func:`disparate_mistreatment`) and
    the scores (spec badr.md 3.7). With weights, ``n`` is the total weight ``W`` (frequency
    weights), which must exceed 1.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets (only checked for length and finiteness).
    scores : array-like of shape (n_samples,)
        Predictions or decision-function values (the intercept cancels).
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Group membership; ``k`` columns define intersectional groups.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative frequency weights.
    encoding : {"index", "onehot"}, default="index"
        Feature map of the group variable.

    Returns
    -------
    float
        The HSIC value, >= 0.

    References
    ----------
    .. [1] S. Tanji, S. Vaiter, Y. Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework". Definitions as in the ``badr`` 0.1.2 toolbox,
       documented in this project's spec ``badr.md`` section 3.
    .. [2] A. Gretton, O. Bousquet, A. Smola, B. Schoelkopf. "Measuring Statistical
       Dependence with Hilbert-Schmidt Norms". ALT 2005.
    """
    inputs = check_metric_inputs(
        y_true, scores, sensitive_features, sample_weight, pred_name="scores"
    )
    total = inputs.weights.sum()
    if total <= 1.0:
        raise ValueError(
            "hsic_linear needs a total sample weight above 1 (its unbiased normaliser is "
            f"1/(W - 1), with frequency weights); got W = {total:g}."
        )
    covariances = _group_score_covariances(inputs, encoding) * (total / (total - 1.0))
    return float(np.sum(covariances**2))
