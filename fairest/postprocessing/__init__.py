"""Post-processing: group thresholds for any classifier, barycenter maps for any regressor.

:class:`GroupThresholdClassifier` wraps any scikit-learn classifier and picks one
threshold per group (or a seeded randomized mixture) that maximises accuracy subject to
demographic parity, equal opportunity or equalized odds within a ``tolerance``, exactly and
in time polynomial in the number of groups. :class:`WassersteinParityRegressor` wraps
any regressor and moves each group's predictions onto the Wasserstein barycenter of the
groups' prediction distributions (demographic parity for regression), with the exact
risk-fairness trade-off of a ``tolerance``. :class:`LevellingUpClassifier` raises every
group's selection rate, recall or precision to a floor (levelling up) instead of
equalising them. :func:`make_group_scorer` routes the groups to
``predict`` inside a model selection.
"""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_estimator": ["GroupThresholdClassifier"],
        "_levelling": ["LevellingUpClassifier"],
        "_regression": ["WassersteinParityRegressor"],
        "_scoring": ["make_group_scorer"],
    },
)
