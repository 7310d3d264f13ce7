"""Fairness metrics: exact numpy metrics, smooth JAX surrogates and a per-group report.

* fairlearn's base metrics (same names, signatures and values as
  :mod:`fairlearn.metrics`): ``selection_rate``, ``count``, ``true_positive_rate``,
  ``false_positive_rate``, ``false_negative_rate``, ``true_negative_rate``,
  ``mean_prediction``; the frame evaluates the rates for all groups at once.
* fairlearn-compatible metrics of hard predictions (same signatures and values as
  :mod:`fairlearn.metrics`): ``demographic_parity_*``, ``equal_opportunity_*``,
  ``equalized_odds_*`` (``_difference`` / ``_ratio``).
* BADR metrics of decision scores (spec badr.md section 3): ``demographic_parity_deviation``,
  ``equal_opportunity_range``, ``equalized_odds_range``, ``group_loss_variance``,
  ``individual_fairness``, ``disparate_mistreatment``, ``hsic_linear``.
* Smooth JAX surrogates of the BADR metrics, ``smooth_*``, jitted functions of
  ``(scores, y, group_codes, num_groups)``.
* The metric catalogue (``catalogue``, ``get_metric``, ``register_metric``,
  ``rate_metric``): one record per fairness metric (its exact function, the group rates it
  compares, its smooth surrogate, the kinds of predictions it takes), read by the frame,
  the scorers, ``fairness_path``, the certified bounds and the post-processor.
* ``MetricFrame``: any metrics per group and overall, differences and ratios, bootstrap
  confidence intervals (fairlearn-compatible).
* ``group_report``: per-group table of counts, rates and losses (a view of the frame).
* Family metrics: partial statistical / demographic parity on percentile intervals
  (``partial_*``), ERMI and the DP-FERMI violations (``ermi``, ``conditional_ermi``,
  ``*_violation``), pruning excess accuracy gaps, independence / separation /
  sufficiency gaps, group loss gap and ``prediction_wasserstein``.
* Regression metrics: distances between the groups' prediction distributions
  (``prediction_ks_distance``, ``prediction_w1_distance``,
  ``prediction_w2_unfairness``) and group loss gaps
  (``mean_squared_error_gap``, ``mean_absolute_error_gap``; bounded group loss).
"""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_base": [
            "count",
            "false_negative_rate",
            "false_positive_rate",
            "mean_prediction",
            "selection_rate",
            "true_negative_rate",
            "true_positive_rate",
        ],
        "_catalogue": [
            "FairnessMetric",
            "catalogue",
            "get_metric",
            "rate_metric",
            "register_metric",
            "unregister_metric",
        ],
        "_constrained": [
            "excess_accuracy_gaps",
            "independence_gap",
            "loss_gap",
            "max_excess_accuracy_gap",
            "pairwise_disparity",
            "prediction_wasserstein",
            "separation_gap",
            "sufficiency_gap",
        ],
        "_ermi": [
            "conditional_ermi",
            "demographic_parity_violation",
            "equalized_odds_violation",
            "ermi",
        ],
        "_exact": [
            "demographic_parity_deviation",
            "disparate_mistreatment",
            "equal_opportunity_range",
            "equalized_odds_range",
            "group_loss_variance",
            "hsic_linear",
            "individual_fairness",
        ],
        "_frame": ["MetricFrame"],
        "_parity": [
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "equal_opportunity_difference",
            "equal_opportunity_ratio",
            "equalized_odds_difference",
            "equalized_odds_ratio",
        ],
        "_partial": [
            "partial_demographic_parity",
            "partial_fairness_score",
            "partial_parity_matrix",
            "partial_statistical_parity",
            "rank_curve",
            "suggest_interval",
        ],
        "_regression": [
            "mean_absolute_error_gap",
            "mean_squared_error_gap",
            "prediction_ks_distance",
            "prediction_w1_distance",
            "prediction_w2_unfairness",
        ],
        "_report": ["group_report"],
        "_smooth": [
            "smooth_demographic_parity",
            "smooth_disparate_mistreatment",
            "smooth_equal_opportunity",
            "smooth_equalized_odds",
            "smooth_group_loss_variance",
            "smooth_hsic_linear",
            "smooth_individual_fairness",
            "smooth_max",
            "smooth_min",
        ],
    },
)
