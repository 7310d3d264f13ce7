"""Plots of fairness trade-offs (matplotlib, a dependency of fairest, imported lazily).

* :func:`plot_pareto_frontier`: accuracy against unfairness across methods and
  hyper-parameters, each method's Pareto frontier marked (:func:`pareto_front_mask`,
  :func:`pareto_frame_from_cv_results` for ``GridSearchCV.cv_results_``).
* :func:`plot_group_score_cdfs`: per-group empirical CDFs of the scores, with a
  partial-fairness percentile interval shaded (:func:`group_percentile_bands`).
* :func:`plot_simplex_unfairness`: BADR's unfairness over the simplex of group weights
  (a curve for two groups, a ternary heat map for three), from any
  ``evaluate(lambda)``; :func:`make_simplex_evaluator` builds one from an estimator with
  a ``weights`` parameter.

matplotlib is imported inside the functions, never when :mod:`fairest` is imported, and
pyplot's global state is never used: every function draws on the given ``ax`` or on a
new :class:`matplotlib.figure.Figure` and returns the Axes.
"""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_cdf": ["group_percentile_bands", "plot_group_score_cdfs"],
        "_pareto": ["pareto_frame_from_cv_results", "pareto_front_mask", "plot_pareto_frontier"],
        "_simplex": ["make_simplex_evaluator", "plot_simplex_unfairness", "simplex_grid"],
    },
)
